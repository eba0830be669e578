//! An incremental inverted index scored with Okapi BM25.
//!
//! The index interns every term to an id; each term id owns a posting list of
//! `(doc slot, term frequency)` sorted by slot. Each doc holds a slot of the
//! index's own (doc numbers are the engine's, shared by every tenant's
//! index, so they are sparse in any one index; slots are dense) that
//! remembers its doc number, its length (its number of terms, repeats
//! included) and its distinct term ids, so removing a doc deletes exactly
//! its postings; the total length is kept incrementally for the average doc
//! length. A term whose last posting goes is dropped from the dictionary,
//! and a freed slot or term id is reused. Inserts and removals never
//! rebuild anything.
//!
//! The layout is chosen for heap per memory (`docs/speed.md`, "Heap per
//! memory"): a posting is 6 bytes (a `u32` slot and a `u16` frequency), a
//! doc's length is kept once in its slot rather than in every posting, a
//! doc's term ids are LEB128 deltas, a term's text is allocated once, in
//! its slot (the dictionary is a table of term ids hashed by those texts),
//! and a term held by one doc keeps its posting inline in its slot: most
//! of a store's terms (ids, numbers, rare words) are in one doc, and a list
//! of its own cost each of them an allocation.
//!
//! A term frequency saturates at `u16::MAX`, and a doc's length is the sum
//! of its saturated frequencies, so that a doc rebuilt from
//! [`Bm25Index::doc_terms`] scores exactly as the doc it was read from.
//! (The analyser caps a memory's text far below that many repeats.)
//!
//! # Scoring
//!
//! With `N` docs, `n_t` docs holding term `t`, `tf` the frequency of `t` in
//! doc `d`, `dl` the length of `d` and `avgdl` the average doc length:
//!
//! ```text
//! idf(t)   = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))          (Lucene's IDF, never negative)
//! score(d) = Σ idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl))
//! ```
//!
//! summed over the *distinct* query terms present in `d`.

use std::cell::{Cell, OnceCell};
use std::cmp::Ordering;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, Weak};

use hashbrown::HashTable;
use serde::{Deserialize, Serialize};

use super::chunked::Chunked;
use super::doc_table::DocTable;
use super::signatures::{Signatures, PARTS};
pub use ranked::Ranked;
use scores::Scores;
use crate::str_list::StrList;

/// The BM25 free parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Bm25Params {
    /// Term-frequency saturation: how quickly repeats of a term stop adding
    /// to the score (default 1.2).
    pub k1: f32,
    /// Length normalization, from 0 (none) to 1 (full) (default 0.75).
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// Largest doc range, per posting walked, that [`Bm25Index::docs_sharing`]
/// counts in a dense array (a byte per doc) rather than by sorting.
const DENSE_RANGE_PER_POSTING: usize = 32;

/// One doc in a term's posting list. Packed to 6 bytes: there is one per
/// distinct term of every doc, the index's largest part.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(2))]
struct Posting {
    /// The doc's slot in [`Bm25Index`]'s `docs`.
    slot: u32,
    term_frequency: u16,
}

/// A term of the dictionary with its posting list (sorted by slot). A free
/// slot has an empty term and no postings.
#[derive(Debug, Clone, Default)]
struct TermSlot {
    /// The text the dictionary's table finds the term's id by.
    term: Box<str>,
    postings: Postings,
}

/// A term's postings, sorted by slot: the one posting of a term held by a
/// single doc inline, more in a list. The list's capacity is where the
/// inline posting goes, so a slot is no larger than with a list alone.
#[derive(Debug, Clone)]
enum Postings {
    One(Posting),
    /// Two or more, or none (a free slot, or a term just interned).
    Many(Vec<Posting>),
}

impl Default for Postings {
    fn default() -> Self {
        Postings::Many(Vec::new())
    }
}

impl Postings {
    fn as_slice(&self) -> &[Posting] {
        match self {
            Postings::One(posting) => std::slice::from_ref(posting),
            Postings::Many(postings) => postings,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// Adds the posting of a doc slot not listed yet.
    fn insert(&mut self, posting: Posting) {
        let slot = posting.slot;
        match self {
            Postings::Many(postings) if postings.is_empty() => *self = Postings::One(posting),
            Postings::One(first) => {
                let first = *first;
                *self = Postings::Many(if first.slot < slot {
                    vec![first, posting]
                } else {
                    vec![posting, first]
                });
            }
            Postings::Many(postings) => {
                // Slots are handed out in ascending order while nothing is
                // removed (as when a store opens): then this is a push,
                // without the search.
                if postings.last().is_none_or(|last| last.slot < slot) {
                    postings.push(posting);
                } else {
                    let at = postings.partition_point(|posting| posting.slot < slot);
                    postings.insert(at, posting);
                }
            }
        }
    }

    /// Removes the posting of doc slot `slot`, if listed; a list left
    /// with one posting gives it back inline.
    fn remove(&mut self, slot: u32) {
        match self {
            Postings::One(posting) if posting.slot == slot => *self = Postings::default(),
            Postings::One(_) => {}
            Postings::Many(postings) => {
                if let Ok(at) = postings.binary_search_by_key(&slot, |posting| posting.slot) {
                    postings.remove(at);
                }
                if let [last] = postings[..] {
                    *self = Postings::One(last);
                }
            }
        }
    }
}

/// What the index remembers about a doc, in the doc's slot. A free slot
/// is unreachable: no posting and no doc number leads to it.
#[derive(Debug, Clone, Default)]
struct DocEntry {
    doc: u32,
    len: u32,
    /// Its distinct terms' ids, ascending, as unsigned LEB128 deltas (the
    /// first id, then each id minus the one before): [`term_ids`] reads
    /// them. Ids are allocated densely, so most take one or two bytes
    /// rather than four.
    term_ids: Box<[u8]>,
}

/// The distinct terms of a text as ids of one [`Bm25Index`] (see
/// [`Bm25Index::term_set`]); valid until the index changes.
#[derive(Debug, Clone)]
pub struct TermSet {
    /// Ids of the terms the index holds, sorted.
    known: Vec<u32>,
    /// Number of distinct terms, held or not.
    distinct: usize,
}

impl TermSet {
    /// Number of distinct terms, held by the index or not.
    pub fn len(&self) -> usize {
        self.distinct
    }

#[cfg(any(test, feature = "testing"))]
    /// Whether the text had no term.
    pub fn is_empty(&self) -> bool {
        self.distinct == 0
    }
}

/// A query's distinct terms as weights of one [`Bm25Index`] (see
/// [`Bm25Index::query_weights`]); valid until the index changes.
#[derive(Debug, Clone, Default)]
pub struct QueryWeights {
    /// The ids of the terms the index holds with their idf, ascending.
    known: Vec<(u32, f64)>,
    /// The idf of every distinct query term, held or not.
    total: f64,
}

/// A doc's distinct terms with their frequencies, in ascending byte order
/// as [`Bm25Index::insert_counts`] takes them: indexes into a dictionary,
/// either the one a stored index part's docs share (`crate::layout`) or
/// the terms of one ingested text.
#[derive(Debug, Clone, Default)]
pub struct TermCounts {
    dictionary: Dictionary,
    terms: Vec<(u32, u32)>,
}

/// The strings a [`TermCounts`]' indexes name.
#[derive(Debug, Clone)]
enum Dictionary {
    /// A stored part's, shared by its docs, each term once.
    Shared(Arc<[Box<str>]>),
    /// An ingested text's terms as analysis wrote them, repeats included,
    /// in one buffer: no string of its own per term.
    Own(StrList),
}

impl Default for Dictionary {
    fn default() -> Self {
        Dictionary::Own(StrList::default())
    }
}

impl TermCounts {
    /// The doc of `terms`: pairs of an index into `dictionary` (strictly
    /// ascending, in range) and a frequency, as the decoder checked them.
    pub(crate) fn new(dictionary: Arc<[Box<str>]>, terms: Vec<(u32, u32)>) -> Self {
        TermCounts {
            dictionary: Dictionary::Shared(dictionary),
            terms,
        }
    }

    /// The doc of `terms`: pairs of an index into `list` (of any one of a
    /// term's repeats) and a frequency, each term once, in ascending byte
    /// order of the terms.
    pub(crate) fn of_list(list: StrList, terms: Vec<(u32, u32)>) -> Self {
        TermCounts {
            dictionary: Dictionary::Own(list),
            terms,
        }
    }

    /// How many distinct terms.
    pub(crate) fn len(&self) -> usize {
        self.terms.len()
    }

    /// The terms and their frequencies, in ascending byte order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.terms.iter().filter_map(|&(index, frequency)| {
            let term = match &self.dictionary {
                Dictionary::Shared(dictionary) => dictionary.get(index as usize).map(|term| &**term),
                Dictionary::Own(list) => list.get(index as usize),
            };
            Some((term?, frequency))
        })
    }
}

/// A [`TermCounts`] dictionary resolved to one index's term ids, so the
/// docs that share it (a segment's, or an ingest's) are inserted by id:
/// each of its terms is looked up in the index's dictionary once, not
/// once per doc holding it, which was most of the hashing of opening a
/// store (`docs/speed.md`, "The open").
#[derive(Debug, Clone)]
struct Resolved {
    /// Which dictionary: a weak handle, so the cache does not keep its
    /// terms alive, and so no other dictionary can take its address while
    /// the cache names it.
    dictionary: Weak<[Box<str>]>,
    /// The id of each of its terms, [`UNRESOLVED`] until a doc holds it.
    ids: Vec<u32>,
}

/// An entry of [`Resolved::ids`] not looked up yet.
const UNRESOLVED: u32 = u32::MAX;

/// An incremental BM25 inverted index over `u32` doc ids.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    /// The id of every term held, found by its slot's text: no key of
    /// its own beside the slot.
    term_ids: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// By id; in chunks, so the list never doubles (`super::chunked`).
    terms: Chunked<TermSlot>,
    free_terms: Vec<u32>,
    /// The slot in `docs` of each doc the index holds.
    slots: DocTable<u32>,
    /// By slot, in chunks as `terms`.
    docs: Chunked<DocEntry>,
    free_slots: Vec<u32>,
    total_len: u64,
    /// The dictionary of the last [`TermCounts`] inserted, resolved to
    /// this index's term ids (see [`Bm25Index::insert_counted`]).
    resolved: Option<Resolved>,
    /// The near-duplicate search's index of term sets, once
    /// [`Bm25Index::docs_sharing`] has walked enough postings to pay for
    /// it: inserts and removals keep it up to date after that. Opening a
    /// store does not build it.
    signatures: OnceCell<Signatures>,
    /// Postings walked by searches the signatures could have served,
    /// while they are not built.
    walked_without_signatures: Cell<u64>,
}

/// The signature index is built once the searches it could have served
/// have walked this many postings per doc. Building it costs about as much
/// as walking 450 postings per doc, natively (`docs/speed.md`, "Seventeenth
/// session"): building when the walks have cost about that much keeps
/// either way within about twice the better choice, so a few ingests
/// after an open do not pay for an index over the whole store, and a bulk
/// build pays for it while the store is still small.
const SIGNATURES_PAID_PER_DOC: u64 = 256;

impl Bm25Index {
    /// An empty index scoring with `params`.
    pub fn new(params: Bm25Params) -> Self {
        Bm25Index {
            params,
            ..Bm25Index::default()
        }
    }

    /// Indexes `doc` with its terms; replaces the doc if already present.
    pub fn insert(&mut self, doc: u32, terms: &[String]) {
        // Sorted, so equal terms are adjacent and term ids are assigned in a
        // deterministic order.
        let mut sorted: Vec<&str> = terms.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let counts = sorted
            .chunk_by(|x, y| x == y)
            .map(|run| (run[0], u32::try_from(run.len()).unwrap_or(u32::MAX)));
        self.insert_counts(doc, counts);
    }

    /// Indexes `doc` with its distinct terms and their frequencies, each
    /// term once, in any order (as [`Bm25Index::doc_terms`] returns
    /// them): the same index as
    /// [`Bm25Index::insert`] with the terms they count, without the terms
    /// themselves. Replaces the doc if already present.
    pub fn insert_counts<'a>(
        &mut self,
        doc: u32,
        counts: impl IntoIterator<Item = (&'a str, u32)>,
    ) {
        // Removed before its terms are interned: removing it may free the
        // id of a term only it held.
        self.remove(doc);
        let counts = counts.into_iter();
        // Sized by the upper bound: the iterators given here are exact,
        // or filter none of their terms out in practice
        // ([`TermCounts::iter`]), and a list grown term by term was
        // copied about three times per doc.
        let mut terms = Vec::with_capacity(counts.size_hint().1.unwrap_or(0));
        terms.extend(counts.map(|(term, frequency)| (self.intern(term), frequency)));
        self.insert_ids(doc, terms);
    }

    /// [`Bm25Index::insert_counts`] with the terms `counts` holds, looking
    /// each term of its dictionary up once for all the docs that share it
    /// ([`Resolved`]) rather than once per doc.
    pub(crate) fn insert_counted(&mut self, doc: u32, counts: &TermCounts) {
        // A dictionary no other doc holds (an ingested memory's own) would
        // be resolved for nothing.
        let dictionary = match &counts.dictionary {
            Dictionary::Shared(dictionary) if Arc::strong_count(dictionary) > 1 => dictionary,
            _ => return self.insert_counts(doc, counts.iter()),
        };
        self.remove(doc);
        let mut resolved = match self.resolved.take() {
            // Equal addresses are the same dictionary: the weak handle
            // keeps its allocation from being reused.
            Some(r) if std::ptr::addr_eq(r.dictionary.as_ptr(), Arc::as_ptr(dictionary)) => r,
            _ => Resolved {
                dictionary: Arc::downgrade(dictionary),
                ids: vec![UNRESOLVED; dictionary.len()],
            },
        };
        let mut terms = Vec::with_capacity(counts.terms.len());
        for &(index, frequency) in &counts.terms {
            // The decoder checked every index against the dictionary.
            let (Some(term), Some(id)) = (dictionary.get(index as usize), resolved.ids.get_mut(index as usize)) else {
                continue;
            };
            if *id == UNRESOLVED {
                *id = self.intern(term);
            }
            terms.push((*id, frequency));
        }
        self.resolved = Some(resolved);
        self.insert_ids(doc, terms);
    }

    /// Forgets the dictionary [`Bm25Index::insert_counted`] resolved last:
    /// once a store's records are applied, no other doc will share it.
    pub(crate) fn forget_resolved(&mut self) {
        self.resolved = None;
    }

    /// Indexes `doc` (not held) with its distinct terms' ids, each once,
    /// and their frequencies.
    fn insert_ids(&mut self, doc: u32, mut terms: Vec<(u32, u32)>) {
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(DocEntry::default());
                // Slots stay below the doc numbers' range: one per doc.
                u32::try_from(self.docs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        // The doc keeps its ids ascending: the pairs are sorted in place
        // (no list of ids beside them), and only when they are not in
        // order already.
        if !terms.is_sorted_by_key(|&(id, _)| id) {
            terms.sort_unstable_by_key(|&(id, _)| id);
        }
        let mut len = 0u32;
        for &(id, term_frequency) in &terms {
            let term_frequency = u16::try_from(term_frequency).unwrap_or(u16::MAX);
            len = len.saturating_add(u32::from(term_frequency));
            self.terms[id as usize].postings.insert(Posting {
                slot,
                term_frequency,
            });
        }
        let term_ids = terms.iter().map(|&(id, _)| id);
        if let Some(signatures) = self.signatures.get_mut() {
            signatures.insert(slot, &Signatures::keys(term_ids.clone()));
        }
        self.total_len += u64::from(len);
        self.docs[slot as usize] = DocEntry {
            doc,
            len,
            term_ids: encode_ids(term_ids),
        };
        self.slots.insert(doc, slot);
    }

    /// The entry of `doc`, if indexed, with its slot.
    fn entry(&self, doc: u32) -> Option<(u32, &DocEntry)> {
        let slot = self.slots.get(doc)?;
        Some((slot, self.docs.get(slot as usize)?))
    }

    /// The distinct terms of `doc` with their frequencies, in ascending
    /// order of their ids (not of their bytes: a segment's lexical part
    /// sorts its docs' terms as integers once it has numbered them);
    /// `None` when `doc` is not indexed.
    pub fn doc_terms(&self, doc: u32) -> Option<Vec<(&str, u32)>> {
        let (slot, entry) = self.entry(doc)?;
        let mut terms: Vec<(&str, u32)> = Vec::with_capacity(id_count(&entry.term_ids));
        terms.extend(term_ids(&entry.term_ids).filter_map(|id| {
                let term = &self.terms[id as usize];
                let postings = term.postings.as_slice();
                // A doc just inserted (whose terms a segment write asks
                // for) has the largest slot of most of its postings.
                let at = match postings.last() {
                    Some(last) if last.slot == slot => postings.len() - 1,
                    _ => postings
                        .binary_search_by_key(&slot, |posting| posting.slot)
                        .ok()?,
                };
                Some((&*term.term, u32::from(postings[at].term_frequency)))
            }));
        Some(terms)
    }

    /// Removes a doc and every posting of it; returns whether it was present.
    pub fn remove(&mut self, doc: u32) -> bool {
        let Some(slot) = self.slots.remove(doc) else {
            return false;
        };
        let entry = std::mem::take(&mut self.docs[slot as usize]);
        if let Some(signatures) = self.signatures.get_mut() {
            signatures.remove(slot, &Signatures::keys(term_ids(&entry.term_ids)));
        }
        self.free_slots.push(slot);
        self.total_len -= u64::from(entry.len);
        for id in term_ids(&entry.term_ids) {
            let term = &mut self.terms[id as usize];
            term.postings.remove(slot);
            if term.postings.is_empty() {
                let hash = self.hasher.hash_one(&*term.term);
                *term = TermSlot::default();
                if let Ok(held) = self.term_ids.find_entry(hash, |&held| held == id) {
                    held.remove();
                }
                self.free_terms.push(id);
                // The id may name another term next.
                self.resolved = None;
            }
        }
        true
    }

    /// Every doc matching at least one query term, scored, best first (ties:
    /// smaller doc id first), as it is read ([`Ranked`]). A term repeated
    /// in the query counts once.
    pub fn search(&self, query_terms: &[String]) -> Ranked<'_> {
        self.rank(query_terms, Scores::new)
    }

    /// [`Bm25Index::search`], its scores summed in what `scores` makes of
    /// the postings the query reaches and the index's doc slots (the
    /// tests make each kind of [`Scores`]).
    fn rank(&self, query_terms: &[String], scores: impl FnOnce(usize, usize) -> Scores) -> Ranked<'_> {
        if self.slots.is_empty() {
            return Ranked::default();
        }
        let k1 = f64::from(self.params.k1);
        let b = f64::from(self.params.b);
        let doc_count = self.slots.len() as f64;
        // Only docs with postings are scored, and those have a length of at
        // least one, so `avg_len` is positive whenever it is used.
        let avg_len = self.total_len as f64 / doc_count;
        let mut seen = HashSet::new();
        let postings: Vec<&[Posting]> = query_terms
            .iter()
            .filter(|term| seen.insert(term.as_str()))
            .filter_map(|term| Some(self.terms[self.term_id(term)? as usize].postings.as_slice()))
            .collect();
        let reached = postings.iter().map(|list| list.len()).sum();
        let mut scores = scores(reached, self.docs.len());
        for postings in postings {
            let doc_frequency = postings.len() as f64;
            let idf = (1.0 + (doc_count - doc_frequency + 0.5) / (doc_frequency + 0.5)).ln();
            for posting in postings {
                let slot = posting.slot;
                let tf = f64::from(posting.term_frequency);
                let doc_len = self.docs[slot as usize].len;
                let length_norm = k1 * (1.0 - b + b * f64::from(doc_len) / avg_len);
                scores.add(slot, idf * tf * (k1 + 1.0) / (tf + length_norm));
            }
        }
        // Docs are distinct, so the order is total.
        Ranked::new(scores, |slot| self.docs[slot as usize].doc)
    }

    /// The distinct terms of a text, for [`Bm25Index::overlap`].
    pub fn term_set<'a>(&self, terms: impl IntoIterator<Item = &'a str>) -> TermSet {
        // Ingest asks this of every new memory: one lookup per term, the
        // ids (and the few terms the index lacks) deduplicated by sorting,
        // not a hash set of the terms built first and looked up again.
        let terms = terms.into_iter();
        let mut known = Vec::with_capacity(terms.size_hint().1.unwrap_or(0));
        let mut unknown: Vec<&str> = Vec::new();
        for term in terms {
            match self.term_id(term) {
                Some(id) => known.push(id),
                None => unknown.push(term),
            }
        }
        known.sort_unstable();
        known.dedup();
        unknown.sort_unstable();
        unknown.dedup();
        TermSet {
            distinct: known.len() + unknown.len(),
            known,
        }
    }

    /// The Jaccard overlap of `doc`'s distinct terms with `set`, the value
    /// [`crate::text::term_overlap`] gives for their term lists, without
    /// analysing the doc's text again; `None` when `doc` is not indexed.
    pub fn overlap(&self, doc: u32, set: &TermSet) -> Option<f32> {
        let (_, entry) = self.entry(doc)?;
        let shared = common_count(term_ids(&entry.term_ids), &set.known);
        let union = set.distinct + id_count(&entry.term_ids) - shared;
        Some(if union == 0 {
            0.0
        } else {
            shared as f32 / union as f32
        })
    }

    /// The docs that may hold at least `min_shared` of `set`'s distinct
    /// terms and differ from them in at most `max_differing` terms (the
    /// size of the symmetric difference of the two sets; no bound when
    /// `None`), in ascending order: every doc that does is listed, and a
    /// listed doc may not (check it with [`Bm25Index::overlap`]).
    /// `None` when `min_shared` is 0, which every doc meets.
    ///
    /// Two filters, each listing every such doc; the one that walks fewer
    /// slots is used:
    ///
    /// - **Postings.** A doc holding `min_shared` of the `m` known terms
    ///   holds at least `min_shared − (m − k)` of any `k` of them. The
    ///   postings of the `k` rarest terms are counted per doc, `k` being
    ///   the fewest that make this requirement positive, grown while the
    ///   next term's postings are no longer than those already counted:
    ///   each extra term at most doubles the work and raises the
    ///   requirement by one, so common terms (held by most docs) are
    ///   never walked.
    /// - **Signatures** (`crate::index::signatures`), when the difference
    ///   is bounded below the partitions' count: a doc within the bound
    ///   has the text's signature in enough partitions, and the buckets
    ///   hold only docs with exactly the same terms in a partition, so
    ///   they stay short where every term is common. Built once the
    ///   postings walked by the calls it could have served would have
    ///   paid for it (opening a store, and the few writes that may follow,
    ///   do not), kept up to date by inserts and removals after that.
    pub fn docs_sharing(
        &self,
        set: &TermSet,
        min_shared: usize,
        max_differing: Option<usize>,
    ) -> Option<Vec<u32>> {
        let (slots, _) = self.slots_sharing(set, min_shared, max_differing)?;
        let mut docs: Vec<u32> = slots
            .into_iter()
            .map(|slot| self.docs[slot as usize].doc)
            .collect();
        docs.sort_unstable();
        Some(docs)
    }

    /// The slots of [`Bm25Index::docs_sharing`]'s docs, in no order, with
    /// the number of postings or bucket entries walked to find them.
    fn slots_sharing(
        &self,
        set: &TermSet,
        min_shared: usize,
        max_differing: Option<usize>,
    ) -> Option<(Vec<u32>, usize)> {
        if min_shared == 0 {
            return None;
        }
        let known = set.known.len();
        if min_shared > known {
            return Some((Vec::new(), 0));
        }
        let postings: Vec<&[Posting]> = set
            .known
            .iter()
            .map(|&id| self.terms[id as usize].postings.as_slice())
            .collect();
        let (postings, required, walked) = fewest_to_walk(postings, min_shared);
        // The text's terms the index lacks differ from every doc.
        let unknown = set.distinct.saturating_sub(known);
        let known_differing = match max_differing.map(|d| d.checked_sub(unknown)) {
            Some(None) => return Some((Vec::new(), 0)),
            Some(Some(d)) if d < PARTS => Some(d),
            _ => None,
        };
        let by_signature = known_differing.and_then(|d| {
            let signatures = self.signatures_paid_for(walked)?;
            let keys = Signatures::keys(set.known.iter().copied());
            let buckets = keys.iter().map(|&key| signatures.bucket(key)).collect();
            Some(fewest_to_walk(buckets, PARTS - d))
        });
        Some(match by_signature {
            Some((buckets, required, cost)) if cost < walked => (
                slots_in_at_least(&buckets, required, |&slot| slot),
                cost,
            ),
            _ => (
                slots_in_at_least(&postings, required, |posting| posting.slot),
                walked,
            ),
        })
    }

    /// The signature index, when built or paid for by the postings walked
    /// without it, `walked` more included (see
    /// [`SIGNATURES_PAID_PER_DOC`]); counts `walked` otherwise.
    fn signatures_paid_for(&self, walked: usize) -> Option<&Signatures> {
        if let Some(signatures) = self.signatures.get() {
            return Some(signatures);
        }
        let total = self
            .walked_without_signatures
            .get()
            .saturating_add(walked as u64);
        if total >= (self.doc_count() as u64).saturating_mul(SIGNATURES_PAID_PER_DOC) {
            Some(self.signatures())
        } else {
            self.walked_without_signatures.set(total);
            None
        }
    }

    /// The signature index, built from every doc on the first call.
    fn signatures(&self) -> &Signatures {
        self.signatures.get_or_init(|| {
            let mut signatures = Signatures::default();
            for (slot, entry) in (0u32..).zip(&self.docs) {
                // A free slot is no doc's.
                if self.slots.get(entry.doc) == Some(slot) {
                    signatures.insert(slot, &Signatures::keys(term_ids(&entry.term_ids)));
                }
            }
            signatures.fit();
            signatures
        })
    }

    /// The query's distinct terms weighted by their idf, for
    /// [`Bm25Index::coverage`]. A term no doc holds weighs as a term one doc
    /// holds: as rare as a term can be here (nothing speaks of it, which is
    /// evidence too), without the `n_t = 0` idf, which in a store of a few
    /// memories outweighs every held term several times over.
    pub fn query_weights(&self, query_terms: &[String]) -> QueryWeights {
        let doc_count = self.slots.len() as f64;
        let idf = |n: f64| (1.0 + (doc_count - n + 0.5) / (n + 0.5)).ln();
        let distinct: HashSet<&str> = query_terms.iter().map(String::as_str).collect();
        let mut known = Vec::new();
        let mut total = 0.0;
        for term in distinct {
            let (id, n) = match self.term_id(term) {
                Some(id) => (Some(id), self.terms[id as usize].postings.len() as f64),
                None => (None, 1.0),
            };
            let weight = idf(n);
            total += weight;
            if let Some(id) = id {
                known.push((id, weight));
            }
        }
        known.sort_unstable_by_key(|&(id, _)| id);
        QueryWeights { known, total }
    }

    /// The idf-weighted share of the query's distinct terms that `doc`
    /// holds, in `0..=1` (0 for a doc not indexed or a query without terms).
    /// Unlike the BM25 score it is not relative to the query's best match,
    /// so it can be compared across queries.
    pub fn coverage(&self, doc: u32, weights: &QueryWeights) -> f32 {
        let Some((_, entry)) = self.entry(doc) else {
            return 0.0;
        };
        if weights.total <= 0.0 {
            return 0.0;
        }
        // Both ascending: a merge.
        let mut ids = term_ids(&entry.term_ids).peekable();
        let held: f64 = weights
            .known
            .iter()
            .filter(|(id, _)| {
                while ids.next_if(|held| held < id).is_some() {}
                ids.next_if_eq(id).is_some()
            })
            .map(|(_, weight)| weight)
            .sum();
        (held / weights.total).clamp(0.0, 1.0) as f32
    }

    /// Number of indexed docs.
    pub fn doc_count(&self) -> usize {
        self.slots.len()
    }

#[cfg(any(test, feature = "testing"))]
    /// Whether `doc` is indexed.
    pub fn contains(&self, doc: u32) -> bool {
        self.slots.contains(doc)
    }

    /// Number of distinct terms with at least one posting.
    pub fn term_count(&self) -> usize {
        self.term_ids.len()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether any doc holds this (already analysed) term.
    pub fn has_term(&self, term: &str) -> bool {
        self.term_id(term).is_some()
    }

    /// The id of `term`, if a doc holds it.
    fn term_id(&self, term: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(term);
        self.term_ids
            .find(hash, |&id| term_of(&self.terms, id) == term)
            .copied()
    }

    /// The id of `term`, adding it to the dictionary (reusing a free id) if
    /// it is new.
    fn intern(&mut self, term: &str) -> u32 {
        let hash = self.hasher.hash_one(term);
        if let Some(&id) = self.term_ids.find(hash, |&id| term_of(&self.terms, id) == term) {
            return id;
        }
        // No postings yet: the doc it is interned for puts its posting
        // inline.
        let slot = TermSlot {
            term: Box::from(term),
            postings: Postings::default(),
        };
        let id = match self.free_terms.pop() {
            Some(id) => {
                self.terms[id as usize] = slot;
                id
            }
            None => {
                self.terms.push(slot);
                // Fewer terms than postings, and postings are counted in
                // `u32` by the doc lengths.
                u32::try_from(self.terms.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let Self {
            term_ids,
            hasher,
            terms,
            ..
        } = self;
        term_ids.insert_unique(hash, id, |&id| hasher.hash_one(term_of(terms, id)));
        id
    }
}

/// The text of term `id` (empty for a free slot or an id past them).
fn term_of(terms: &Chunked<TermSlot>, id: u32) -> &str {
    terms.get(id as usize).map_or("", |slot| &slot.term)
}

/// How many values two ascending lists have in common (a merge).
fn common_count(a: impl Iterator<Item = u32>, b: &[u32]) -> usize {
    let mut a = a.peekable();
    let (mut j, mut common) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.peek(), b.get(j)) {
        match x.cmp(&y) {
            Ordering::Less => {
                a.next();
            }
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                common += 1;
                a.next();
                j += 1;
            }
        }
    }
    common
}

/// Ascending ids as a doc keeps them: unsigned LEB128 deltas.
fn encode_ids(ids: impl Iterator<Item = u32> + Clone) -> Box<[u8]> {
    // Sized first: most deltas of a large index take two or three bytes,
    // and a list grown as they came was moved twice (grown, then fitted).
    let mut previous = 0;
    let len: usize = ids
        .clone()
        .map(|id| {
            let delta = id - previous;
            previous = id;
            (32 - (delta | 1).leading_zeros() as usize).div_ceil(7)
        })
        .sum();
    let mut out = Vec::with_capacity(len);
    let mut previous = 0;
    for id in ids {
        let mut delta = id - previous;
        previous = id;
        while delta >= 0x80 {
            out.push((delta & 0x7f) as u8 | 0x80);
            delta >>= 7;
        }
        out.push(delta as u8);
    }
    out.into_boxed_slice()
}

/// The ids [`encode_ids`] encoded, ascending.
fn term_ids(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0;
    let mut previous = 0u32;
    std::iter::from_fn(move || {
        let (mut delta, mut shift) = (0u32, 0u32);
        loop {
            let byte = *bytes.get(at)?;
            at += 1;
            delta |= u32::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte < 0x80 {
                break;
            }
            shift += 7;
        }
        previous = previous.wrapping_add(delta);
        Some(previous)
    })
}

/// How many ids [`encode_ids`] encoded: one byte of each has its high bit
/// clear.
fn id_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&byte| byte < 0x80).count()
}

/// Of `lists` (slot lists, any order), the fewest shortest to count for
/// the slots held by at least `in_at_least` (≥ 1) of all of them, with
/// how many of those counted such a slot is in, and the slots they hold.
/// A slot in `in_at_least` of the `m` lists is in at least
/// `in_at_least − (m − k)` of any `k`: `k` starts at the fewest that make
/// this positive and grows while the next list is no longer than those
/// already counted (each extra list at most doubles the walk and raises
/// the requirement by one).
fn fewest_to_walk<T>(mut lists: Vec<&[T]>, in_at_least: usize) -> (Vec<&[T]>, usize, usize) {
    let all = lists.len();
    lists.sort_by_key(|list| list.len());
    let mut counted = (all + 1).saturating_sub(in_at_least).min(all);
    let mut walked: usize = lists[..counted].iter().map(|list| list.len()).sum();
    while counted < all && lists[counted].len() <= walked {
        walked += lists[counted].len();
        counted += 1;
    }
    let required = in_at_least.saturating_sub(all - counted);
    lists.truncate(counted);
    (lists, required, walked)
}

/// The slots listed in at least `required` (≥ 1) of `lists` (each sorted
/// by slot, `slot` giving an element's), in no particular order. Counts
/// in a dense array over the slots' range when that range is small next
/// to the elements walked (slots are allocated densely), otherwise by
/// sorting the walked slots.
fn slots_in_at_least<T>(lists: &[&[T]], required: usize, slot: impl Fn(&T) -> u32) -> Vec<u32> {
    let walked: usize = lists.iter().map(|list| list.len()).sum();
    let Some(end) = lists.iter().filter_map(|list| list.last()).map(&slot).max() else {
        return Vec::new();
    };
    // Counts saturate; a requirement past the counter's range is clamped,
    // which can only list more docs.
    let required = u8::try_from(required.max(1)).unwrap_or(u8::MAX);
    let range = end as usize + 1;
    let mut slots = Vec::new();
    if range <= walked.saturating_mul(DENSE_RANGE_PER_POSTING) {
        let mut counts = vec![0u8; range];
        for at in lists.iter().flat_map(|list| list.iter()).map(&slot) {
            let count = &mut counts[at as usize];
            *count = count.saturating_add(1);
            if *count == required {
                slots.push(at);
            }
        }
    } else {
        slots.extend(lists.iter().flat_map(|list| list.iter()).map(&slot));
        slots.sort_unstable();
        slots = slots
            .chunk_by(|a, b| a == b)
            .filter(|run| run.len() >= usize::from(required))
            .map(|run| run[0])
            .collect();
    }
    slots
}

mod ranked;
mod scores;
#[cfg(test)]
mod tests;
