// The English stopwords memtide's BM25 drops (src/text/terms.rs), given to
// the lexical peers too (Orama and MiniSearch have none by default), so a
// query's "the" or "what" does not make every memory a match on one side only.
export const STOPWORDS = (
  "a about above after again against all also am an and any are as at be because been before being " +
  "below between both but by can could did do does doing down during each few for from further had " +
  "has have having he her here hers herself him himself his how i if im in into is it its itself " +
  "ive just may me might more most must my myself no nor not of off on once only or other our ours " +
  "ourselves out over own same shall she should so some such than that the their theirs them " +
  "themselves then there these they theyre theyve this those through to too under until up very was " +
  "we were weve what when where which while who whom why will with would you youd youll your youre " +
  "yours yourself yourselves youve "
).trim().split(" ");
