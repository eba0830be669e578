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
//! doc's term ids are LEB128 deltas, and a term's text is allocated once,
//! shared by the dictionary's map and its slot.
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

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::signatures::{Signatures, PARTS};

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
    /// The same allocation as the dictionary map's key.
    term: Arc<str>,
    postings: Vec<Posting>,
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

/// A doc's distinct terms with their frequencies, as a stored index part
/// holds them (`crate::layout`): indexes into a dictionary that the docs of
/// one part share, ascending, so the terms are in ascending byte order as
/// [`Bm25Index::insert_counts`] takes them.
#[derive(Debug, Clone, Default)]
pub struct TermCounts {
    dictionary: Arc<[Box<str>]>,
    terms: Vec<(u32, u32)>,
}

impl TermCounts {
    /// The doc of `terms`: pairs of an index into `dictionary` (strictly
    /// ascending, in range) and a frequency, as the decoder checked them.
    pub(crate) fn new(dictionary: Arc<[Box<str>]>, terms: Vec<(u32, u32)>) -> Self {
        TermCounts { dictionary, terms }
    }

    /// The terms and their frequencies, in ascending byte order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.terms.iter().filter_map(|&(index, frequency)| {
            let term = self.dictionary.get(index as usize)?;
            Some((&**term, frequency))
        })
    }
}

/// An incremental BM25 inverted index over `u32` doc ids.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    term_ids: crate::fast_hash::FastMap<Arc<str>, u32>,
    terms: Vec<TermSlot>,
    free_terms: Vec<u32>,
    /// The slot in `docs` of each doc the index holds.
    slots: HashMap<u32, u32>,
    docs: Vec<DocEntry>,
    free_slots: Vec<u32>,
    total_len: u64,
    /// The near-duplicate search's index of term sets, once
    /// [`Bm25Index::docs_sharing`] has needed it: inserts and removals
    /// keep it up to date after that. Opening a store does not build it.
    signatures: OnceCell<Signatures>,
}

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

    /// Indexes `doc` with its distinct terms and their frequencies, the
    /// terms in ascending byte order and each once (what
    /// [`Bm25Index::doc_terms`] returns): the same index as
    /// [`Bm25Index::insert`] with the terms they count, without the terms
    /// themselves. Replaces the doc if already present.
    pub fn insert_counts<'a>(
        &mut self,
        doc: u32,
        counts: impl IntoIterator<Item = (&'a str, u32)>,
    ) {
        self.remove(doc);
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(DocEntry::default());
                // Slots stay below the doc numbers' range: one per doc.
                u32::try_from(self.docs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let mut len = 0u32;
        let mut term_ids = Vec::new();
        for (term, term_frequency) in counts {
            let term_frequency = u16::try_from(term_frequency).unwrap_or(u16::MAX);
            len = len.saturating_add(u32::from(term_frequency));
            let id = self.intern(term);
            let postings = &mut self.terms[id as usize].postings;
            let posting = Posting {
                slot,
                term_frequency,
            };
            // Slots are handed out in ascending order while nothing is
            // removed (as when a store opens): then this is a push, without
            // the search.
            if postings.last().is_none_or(|last| last.slot < slot) {
                postings.push(posting);
            } else {
                let at = postings.partition_point(|posting| posting.slot < slot);
                postings.insert(at, posting);
            }
            term_ids.push(id);
        }
        term_ids.sort_unstable();
        if let Some(signatures) = self.signatures.get_mut() {
            signatures.insert(slot, &Signatures::keys(term_ids.iter().copied()));
        }
        self.total_len += u64::from(len);
        self.docs[slot as usize] = DocEntry {
            doc,
            len,
            term_ids: encode_ids(&term_ids),
        };
        self.slots.insert(doc, slot);
    }

    /// The entry of `doc`, if indexed, with its slot.
    fn entry(&self, doc: u32) -> Option<(u32, &DocEntry)> {
        let slot = *self.slots.get(&doc)?;
        Some((slot, self.docs.get(slot as usize)?))
    }

    /// The distinct terms of `doc` with their frequencies, in ascending
    /// byte order; `None` when `doc` is not indexed.
    pub fn doc_terms(&self, doc: u32) -> Option<Vec<(&str, u32)>> {
        let (slot, entry) = self.entry(doc)?;
        let mut terms: Vec<(&str, u32)> = term_ids(&entry.term_ids)
            .filter_map(|id| {
                let term = &self.terms[id as usize];
                // A doc just inserted (whose terms a segment write asks
                // for) has the largest slot of most of its postings.
                let at = match term.postings.last() {
                    Some(last) if last.slot == slot => term.postings.len() - 1,
                    _ => term
                        .postings
                        .binary_search_by_key(&slot, |posting| posting.slot)
                        .ok()?,
                };
                Some((&*term.term, u32::from(term.postings[at].term_frequency)))
            })
            .collect();
        terms.sort_unstable();
        Some(terms)
    }

    /// Removes a doc and every posting of it; returns whether it was present.
    pub fn remove(&mut self, doc: u32) -> bool {
        let Some(slot) = self.slots.remove(&doc) else {
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
            if let Ok(at) = term
                .postings
                .binary_search_by_key(&slot, |posting| posting.slot)
            {
                term.postings.remove(at);
            }
            if term.postings.is_empty() {
                self.term_ids.remove(&term.term);
                *term = TermSlot::default();
                self.free_terms.push(id);
            }
        }
        true
    }

    /// Every doc matching at least one query term, scored, best first (ties:
    /// smaller doc id first). A term repeated in the query counts once.
    pub fn search(&self, query_terms: &[String]) -> Vec<(u32, f32)> {
        if self.slots.is_empty() {
            return Vec::new();
        }
        let k1 = f64::from(self.params.k1);
        let b = f64::from(self.params.b);
        let doc_count = self.slots.len() as f64;
        // Only docs with postings are scored, and those have a length of at
        // least one, so `avg_len` is positive whenever it is used.
        let avg_len = self.total_len as f64 / doc_count;
        let mut seen = HashSet::new();
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for term in query_terms {
            if !seen.insert(term.as_str()) {
                continue;
            }
            let Some(&id) = self.term_ids.get(term.as_str()) else {
                continue;
            };
            let postings = &self.terms[id as usize].postings;
            let doc_frequency = postings.len() as f64;
            let idf = (1.0 + (doc_count - doc_frequency + 0.5) / (doc_frequency + 0.5)).ln();
            for posting in postings {
                let slot = posting.slot;
                let tf = f64::from(posting.term_frequency);
                let doc_len = self.docs[slot as usize].len;
                let length_norm = k1 * (1.0 - b + b * f64::from(doc_len) / avg_len);
                *scores.entry(slot).or_insert(0.0) += idf * tf * (k1 + 1.0) / (tf + length_norm);
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores
            .into_iter()
            .map(|(slot, score)| (self.docs[slot as usize].doc, score as f32))
            .collect();
        ranked.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        ranked
    }

    /// The distinct terms of a text, for [`Bm25Index::overlap`].
    pub fn term_set(&self, terms: &[String]) -> TermSet {
        let distinct: HashSet<&str> = terms.iter().map(String::as_str).collect();
        let mut known: Vec<u32> = distinct
            .iter()
            .filter_map(|term| self.term_ids.get(*term).copied())
            .collect();
        known.sort_unstable();
        TermSet {
            known,
            distinct: distinct.len(),
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
    ///   they stay short where every term is common. Built on the first
    ///   call (opening a store does not pay for it), kept up to date by
    ///   inserts and removals after that.
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
        let by_signature = known_differing.map(|d| {
            let signatures = self.signatures();
            let keys = Signatures::keys(set.known.iter().copied());
            let buckets = keys.iter().map(|&key| signatures.bucket(key)).collect();
            fewest_to_walk(buckets, PARTS - d)
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

    /// The signature index, built from every doc on the first call.
    fn signatures(&self) -> &Signatures {
        self.signatures.get_or_init(|| {
            let mut signatures = Signatures::default();
            for (slot, entry) in (0u32..).zip(&self.docs) {
                // A free slot is no doc's.
                if self.slots.get(&entry.doc) == Some(&slot) {
                    signatures.insert(slot, &Signatures::keys(term_ids(&entry.term_ids)));
                }
            }
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
            let (id, n) = match self.term_ids.get(term) {
                Some(&id) => (Some(id), self.terms[id as usize].postings.len() as f64),
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
        self.slots.contains_key(&doc)
    }

    /// Number of distinct terms with at least one posting.
    pub fn term_count(&self) -> usize {
        self.term_ids.len()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether any doc holds this (already analysed) term.
    pub fn has_term(&self, term: &str) -> bool {
        self.term_ids.contains_key(term)
    }

    /// The id of `term`, adding it to the dictionary (reusing a free id) if
    /// it is new.
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(term) {
            return id;
        }
        let slot = TermSlot {
            term: Arc::from(term),
            postings: Vec::new(),
        };
        let key = slot.term.clone();
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
        self.term_ids.insert(key, id);
        id
    }
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
fn encode_ids(ids: &[u32]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(ids.len());
    let mut previous = 0;
    for &id in ids {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// d1 = [apple banana apple] (dl 3), d2 = [banana cherry] (dl 2),
    /// d3 = [cherry cherry cherry date] (dl 4): N = 3, avgdl = 9 / 3 = 3.
    fn tiny_corpus(params: Bm25Params) -> Bm25Index {
        let mut index = Bm25Index::new(params);
        index.insert(1, &strings(&["apple", "banana", "apple"]));
        index.insert(2, &strings(&["banana", "cherry"]));
        index.insert(3, &strings(&["cherry", "cherry", "cherry", "date"]));
        index
    }

    fn assert_scores(actual: &[(u32, f32)], expected: &[(u32, f32)]) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (&(doc, score), &(want_doc, want_score)) in actual.iter().zip(expected) {
            assert_eq!(doc, want_doc, "{actual:?} vs {expected:?}");
            assert!(
                (score - want_score).abs() < 1e-5,
                "doc {doc}: {score} vs {want_score}"
            );
        }
    }

    #[test]
    fn coverage_is_the_idf_weighted_share_of_query_terms_held() {
        let index = tiny_corpus(Bm25Params::default());
        // apple 0.980829, banana 0.470004, and kiwi, held by no doc, as if
        // one held it (as apple): 0.980829.
        let weights = index.query_weights(&strings(&["apple", "banana", "apple", "kiwi"]));
        let total = 0.980_829 + 0.470_004 + 0.980_829;
        let near = |a: f32, b: f64| (f64::from(a) - b).abs() < 1e-5;
        assert!(near(index.coverage(1, &weights), (0.980_829 + 0.470_004) / total));
        assert!(near(index.coverage(2, &weights), 0.470_004 / total));
        assert_eq!(index.coverage(3, &weights), 0.0);
        assert_eq!(index.coverage(9, &weights), 0.0, "not indexed");
        let all = index.query_weights(&strings(&["cherry", "date"]));
        assert!(near(index.coverage(3, &all), 1.0));
        assert_eq!(index.coverage(1, &index.query_weights(&[])), 0.0);
    }

    #[test]
    fn scores_match_hand_computation() {
        let index = tiny_corpus(Bm25Params::default());
        // apple: n = 1, idf = ln(1 + (3 - 1 + 0.5) / 1.5) = ln(2.6667) = 0.980829.
        // d1: tf 2, dl 3: norm = 1.2 · (0.25 + 0.75 · 3/3) = 1.2;
        //     2 · 2.2 / (2 + 1.2) = 1.375; score = 0.980829 · 1.375 = 1.348640.
        assert_scores(&index.search(&strings(&["apple"])), &[(1, 1.348_64)]);

        // banana, cherry: n = 2 each, idf = ln(1 + 1.5 / 2.5) = ln(1.6) = 0.470004.
        // d2: dl 2: norm = 1.2 · (0.25 + 0.75 · 2/3) = 0.9; each term 2.2 / 1.9
        //     = 1.157895; score = 0.470004 · 2 · 1.157895 = 1.088429.
        // d3: cherry tf 3, dl 4: norm = 1.2 · (0.25 + 0.75 · 4/3) = 1.5;
        //     3 · 2.2 / 4.5 = 1.466667; score = 0.470004 · 1.466667 = 0.689339.
        // d1: banana tf 1, dl 3: norm 1.2; 2.2 / 2.2 = 1; score = 0.470004.
        assert_scores(
            &index.search(&strings(&["banana", "cherry"])),
            &[(2, 1.088_429), (3, 0.689_339), (1, 0.470_004)],
        );
    }

    #[test]
    fn params_are_used() {
        let index = tiny_corpus(Bm25Params { k1: 2.0, b: 0.0 });
        // k1 = 2, b = 0 (no length normalization), cherry: idf = ln(1.6) = 0.470004.
        // d3: tf 3: 3 · 3 / (3 + 2) = 1.8; score = 0.470004 · 1.8 = 0.846007.
        // d2: tf 1: 1 · 3 / (1 + 2) = 1; score = 0.470004.
        assert_scores(
            &index.search(&strings(&["cherry"])),
            &[(3, 0.846_007), (2, 0.470_004)],
        );
    }

    #[test]
    fn repeated_query_terms_count_once() {
        let index = tiny_corpus(Bm25Params::default());
        assert_eq!(
            index.search(&strings(&["apple", "apple", "banana", "apple"])),
            index.search(&strings(&["apple", "banana"]))
        );
    }

    #[test]
    fn empty_query_or_index_finds_nothing() {
        let index = tiny_corpus(Bm25Params::default());
        assert!(index.search(&[]).is_empty());
        assert!(index.search(&strings(&["unknown"])).is_empty());
        assert!(Bm25Index::default().search(&strings(&["apple"])).is_empty());
        let mut empty_docs = Bm25Index::default();
        empty_docs.insert(7, &[]);
        assert!(empty_docs.contains(7));
        assert!(empty_docs.search(&strings(&["apple"])).is_empty());
    }

    #[test]
    fn removing_the_last_holder_drops_the_term() {
        let mut index = tiny_corpus(Bm25Params::default());
        assert_eq!(index.term_count(), 4);
        assert!(index.remove(3));
        assert!(!index.remove(3));
        assert!(!index.has_term("date"));
        assert!(index.has_term("cherry"));
        assert_eq!(index.term_count(), 3);
        assert_eq!(index.doc_count(), 2);
        assert!(!index.contains(3));
        assert!(index.search(&strings(&["date"])).is_empty());
        // The freed slot is reused by a new term.
        index.insert(4, &strings(&["elder"]));
        assert_eq!(index.term_count(), 4);
        assert_eq!(index.search(&strings(&["elder"]))[0].0, 4);
    }

    #[test]
    fn insert_replaces_a_present_doc() {
        let mut index = tiny_corpus(Bm25Params::default());
        index.insert(1, &strings(&["fig"]));
        assert_eq!(index.doc_count(), 3);
        assert!(!index.has_term("apple"));
        assert_eq!(index.search(&strings(&["banana"])).len(), 1);
        assert_eq!(index.search(&strings(&["fig"]))[0].0, 1);
    }

    #[test]
    fn doc_terms_rebuild_the_same_index_without_the_terms() {
        let index = tiny_corpus(Bm25Params::default());
        assert_eq!(index.doc_terms(1), Some(vec![("apple", 2), ("banana", 1)]));
        assert_eq!(index.doc_terms(9), None);
        let mut rebuilt = Bm25Index::new(Bm25Params::default());
        for doc in [1, 2, 3] {
            rebuilt.insert_counts(doc, index.doc_terms(doc).unwrap());
        }
        for query in [&["cherry"][..], &["apple", "date"], &["banana", "fig"]] {
            let query = strings(query);
            assert_eq!(rebuilt.search(&query), index.search(&query));
        }
        assert_eq!(rebuilt.term_count(), index.term_count());
    }

    #[test]
    fn term_ids_round_trip_as_deltas() {
        let ids = [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 21, u32::MAX];
        let bytes = encode_ids(&ids);
        assert_eq!(term_ids(&bytes).collect::<Vec<_>>(), ids);
        assert_eq!(id_count(&bytes), ids.len());
        // Dense ids take a byte each.
        assert_eq!(encode_ids(&[3, 4, 9, 100]).len(), 4);
        assert_eq!(term_ids(&[]).count(), 0);
    }

    #[test]
    fn a_posting_is_six_bytes() {
        // The index's largest part: one per distinct term of every doc.
        assert_eq!(std::mem::size_of::<Posting>(), 6);
    }

    #[test]
    fn frequencies_saturate_and_a_rebuilt_doc_scores_the_same() {
        let mut index = Bm25Index::default();
        index.insert_counts(4, [("many", 70_000), ("one", 1)]);
        index.insert(9, &strings(&["many", "two", "two"]));
        assert_eq!(index.doc_terms(4), Some(vec![("many", 65_535), ("one", 1)]));
        let mut rebuilt = Bm25Index::default();
        for doc in [4, 9] {
            rebuilt.insert_counts(doc, index.doc_terms(doc).unwrap());
        }
        for query in [&["many"][..], &["one", "two"]] {
            let query = strings(query);
            assert_eq!(rebuilt.search(&query), index.search(&query));
        }
        // The length is the saturated one: 65,535 + 1 against 3.
        let avg = (65_536.0 + 3.0) / 2.0;
        let idf = (1.0f64 + 1.5 / 1.5).ln();
        let norm = 1.2 * (0.25 + 0.75 * 65_536.0 / avg);
        let want = idf * 2.2 / (1.0 + norm);
        let got = index.search(&strings(&["one"]));
        assert_eq!(got.len(), 1);
        assert!((f64::from(got[0].1) - want).abs() < 1e-6, "{got:?} vs {want}");
    }

    #[test]
    fn sparse_doc_numbers_reuse_dense_slots() {
        let mut index = Bm25Index::default();
        index.insert(4_000_000_000, &strings(&["apple"]));
        index.insert(7, &strings(&["apple", "banana"]));
        assert!(index.remove(4_000_000_000));
        index.insert(123_456, &strings(&["banana"]));
        // The freed slot went to the new doc: two slots for two docs.
        assert_eq!(index.docs.len(), 2);
        assert_eq!(
            index.search(&strings(&["banana"])).iter().map(|r| r.0).collect::<Vec<_>>(),
            // The shorter doc first.
            vec![123_456, 7]
        );
        let set = index.term_set(&strings(&["banana"]));
        assert_eq!(index.docs_sharing(&set, 1, None), Some(vec![7, 123_456]));
        assert_eq!(index.overlap(123_456, &set), Some(1.0));
        assert_eq!(index.overlap(4_000_000_000, &set), None);
    }

    #[test]
    fn docs_sharing_never_walks_common_terms_it_does_not_need() {
        let mut index = Bm25Index::default();
        for doc in 0..100 {
            index.insert(doc, &strings(&["common", &format!("unique{doc}")]));
        }
        index.insert(100, &strings(&["common", "rare", "scarce"]));
        index.insert(101, &strings(&["rare"]));
        let set = index.term_set(&strings(&["rare", "scarce", "common"]));
        // Two of three: one of the two rarest lists; `common` (101 docs)
        // is not walked, so the 100 docs holding only it are not listed.
        assert_eq!(index.docs_sharing(&set, 2, None), Some(vec![100, 101]));
        // Three of three: only the rarest list.
        assert_eq!(index.docs_sharing(&set, 3, None), Some(vec![100]));
        assert_eq!(index.docs_sharing(&set, 4, None), Some(vec![]));
        // One of three needs every list.
        assert_eq!(index.docs_sharing(&set, 1, None).map(|d| d.len()), Some(102));
        // Unknown query terms count in no list.
        let unknown = index.term_set(&strings(&["rare", "absent"]));
        assert_eq!(index.docs_sharing(&unknown, 2, None), Some(vec![]));
        assert_eq!(index.docs_sharing(&unknown, 1, None), Some(vec![100, 101]));
    }

    #[test]
    fn signatures_list_few_docs_where_every_term_is_common() {
        // Every term is held by a fifth to a thirteenth of the docs, and
        // "note" by all; each doc's combination is its own.
        let terms_of = |i: u32| {
            let mut terms = strings(&["note"]);
            for (family, period) in ["a", "b", "c", "d", "e", "f"].into_iter().zip([5, 6, 7, 11, 13, 17]) {
                terms.push(format!("{family}{}", i % period));
            }
            terms
        };
        let mut index = Bm25Index::default();
        for i in 0..2_000 {
            index.insert(i, &terms_of(i));
        }
        let mut query = terms_of(123);
        query.push("unheard".into());
        let set = index.term_set(&query);
        // 8 terms, 7 known: sharing 6 of them, or differing in 1 besides
        // the unknown term. The postings counted are those of every term
        // but "note": 118 + 154 + 182 + 286 + 333 + 400. The signatures walk the buckets of 2 of the 6
        // partitions (a doc within the bound has the query's signature in
        // 5), which hold only docs with the same terms there.
        let (by_postings, postings_walked) = index.slots_sharing(&set, 6, None).unwrap();
        let (by_signatures, entries_walked) = index.slots_sharing(&set, 6, Some(2)).unwrap();
        assert_eq!(postings_walked, 1_473);
        assert!(entries_walked < 200, "{entries_walked} walked");
        assert_eq!(by_postings, [123]);
        assert!(by_signatures.contains(&123), "{by_signatures:?}");
        // The index's cost: a map entry per partition of each doc, most
        // buckets holding one doc.
        let bytes = index.signatures().heap_bytes();
        assert!(bytes / 2_000 <= 16 * PARTS, "{bytes} bytes for 2,000 docs");
        // More difference than the unknown terms allow: nothing.
        let far = index.term_set(&strings(&["unheard", "unseen", "note"]));
        assert_eq!(index.docs_sharing(&far, 1, Some(1)), Some(vec![]));
    }

    #[test]
    fn params_serialize_as_camel_case_json() {
        let json = serde_json::to_string(&Bm25Params::default()).unwrap();
        assert_eq!(json, r#"{"k1":1.2,"b":0.75}"#);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32, Vec<String>),
        Remove(u32),
    }

    const VOCABULARY: [&str; 6] = ["ant", "bee", "cat", "dog", "eel", "fox"];

    fn term() -> impl Strategy<Value = String> {
        prop::sample::select(VOCABULARY.to_vec()).prop_map(String::from)
    }

    /// Doc numbers: mostly dense, some far apart (so `docs_sharing`
    /// counts both ways).
    fn doc() -> impl Strategy<Value = u32> {
        prop_oneof![3 => 0u32..8, 1 => 5_000u32..5_003]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (doc(), prop::collection::vec(term(), 0..6))
                .prop_map(|(doc, terms)| Op::Insert(doc, terms)),
            1 => doc().prop_map(Op::Remove),
        ]
    }

    proptest! {
        #[test]
        fn incremental_updates_match_a_fresh_build(
            ops in prop::collection::vec(op(), 0..40),
            query in prop::collection::vec(term(), 0..5),
            early in any::<bool>(),
        ) {
            let mut index = Bm25Index::default();
            if early {
                index.signatures();
            }
            let mut surviving: BTreeMap<u32, Vec<String>> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(doc, terms) => {
                        index.insert(doc, &terms);
                        surviving.insert(doc, terms);
                    }
                    Op::Remove(doc) => {
                        prop_assert_eq!(index.remove(doc), surviving.remove(&doc).is_some());
                    }
                }
            }
            let mut fresh = Bm25Index::default();
            for (&doc, terms) in &surviving {
                fresh.insert(doc, terms);
            }
            prop_assert_eq!(index.doc_count(), fresh.doc_count());
            prop_assert_eq!(index.term_count(), fresh.term_count());
            // The counted terms of each doc rebuild the index (what a
            // segment's lexical part stores).
            let mut counted = Bm25Index::default();
            for &doc in surviving.keys() {
                let terms = index.doc_terms(doc);
                prop_assert!(terms.is_some());
                counted.insert_counts(doc, terms.unwrap_or_default());
            }
            prop_assert_eq!(counted.search(&query), fresh.search(&query));
            prop_assert_eq!(counted.term_count(), fresh.term_count());
            for word in VOCABULARY {
                prop_assert_eq!(index.has_term(word), fresh.has_term(word));
            }
            // The overlap from the index's term lists is the overlap of the
            // term lists themselves, for any query, held terms or not.
            let set = index.term_set(&query);
            for (&doc, terms) in &surviving {
                prop_assert_eq!(
                    index.overlap(doc, &set),
                    Some(crate::text::term_overlap(&query, terms))
                );
            }
            prop_assert_eq!(index.overlap(u32::MAX, &set), None);
            // `docs_sharing` lists, in order, every doc holding enough of
            // the query's terms.
            let query_terms: std::collections::HashSet<&String> = query.iter().collect();
            let shared = |terms: &Vec<String>| {
                let held: std::collections::HashSet<&String> = terms.iter().collect();
                held.intersection(&query_terms).count()
            };
            prop_assert_eq!(index.docs_sharing(&set, 0, None), None);
            // With a bound on the difference too (the signatures, built
            // here after the updates or, when `early`, before them and kept
            // up to date by them): every doc within both is listed.
            let differing = |terms: &Vec<String>| {
                let held: std::collections::HashSet<&String> = terms.iter().collect();
                held.symmetric_difference(&query_terms).count()
            };
            for min_shared in 1..=query_terms.len() + 1 {
                for max_differing in [None].into_iter().chain((0..=PARTS + 1).map(Some)) {
                    let listed = index.docs_sharing(&set, min_shared, max_differing).unwrap();
                    prop_assert!(listed.windows(2).all(|w| w[0] < w[1]), "{:?}", listed);
                    for (&doc, terms) in &surviving {
                        if shared(terms) >= min_shared
                            && max_differing.is_none_or(|d| differing(terms) <= d)
                        {
                            prop_assert!(listed.contains(&doc), "doc {} missing from {:?}", doc, listed);
                        }
                    }
                    prop_assert!(listed.iter().all(|doc| surviving.contains_key(doc)));
                }
            }
            let queries = VOCABULARY.iter().map(|word| vec![word.to_string()]).chain([query]);
            for query in queries {
                let got = index.search(&query);
                let want = fresh.search(&query);
                prop_assert_eq!(got.len(), want.len());
                for (&(doc, score), &(want_doc, want_score)) in got.iter().zip(&want) {
                    prop_assert_eq!(doc, want_doc);
                    prop_assert!((score - want_score).abs() < 1e-4);
                }
            }
        }
    }
}
