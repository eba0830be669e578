//! A query's BM25 matches, best first, taken from its scores a batch at a
//! time ([`Ranked`]).
//!
//! Why: a query of common words reaches most docs, and sorting every match
//! took a list of them all (8 bytes each: 0.8 MB at 100,000), which the
//! first answer after an open left in linear memory for good
//! (`docs/speed.md`, "Sixteenth session"). Retrieval reads the first few
//! hundred it can show. A batch is the best [`BATCH`] matches after the
//! last one given, chosen in one pass over the scores with a heap of that
//! many, so the memory a query takes beyond its scores is one batch.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::scores::Scores;

/// Matches in a batch.
const BATCH: usize = 1024;

/// A match: its doc and score, ordered so that a greater one comes first
/// (a higher score, then a smaller doc).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Match(u32, f32);

impl Eq for Match {}

impl Ord for Match {
    fn cmp(&self, other: &Self) -> Ordering {
        self.1.total_cmp(&other.1).then(other.0.cmp(&self.0))
    }
}

impl PartialOrd for Match {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Every doc a query matched, scored, best first (ties: smaller doc
/// first): an iterator over [`super::Bm25Index::search`]'s answer.
pub struct Ranked<'a> {
    scores: Scores,
    /// The doc of each slot.
    doc_of: Box<dyn Fn(u32) -> u32 + 'a>,
    /// The next matches, the best last.
    batch: Vec<Match>,
    /// The last match given: the next batch comes after it.
    last: Option<Match>,
    /// No match is left after the batch.
    done: bool,
}

impl<'a> Ranked<'a> {
    /// The matches of `scores` (by slot), each slot's doc by `doc_of`.
    pub(super) fn new(scores: Scores, doc_of: impl Fn(u32) -> u32 + 'a) -> Self {
        Ranked {
            scores,
            doc_of: Box::new(doc_of),
            batch: Vec::new(),
            last: None,
            done: false,
        }
    }

    /// The best [`BATCH`] matches after `last`, the best last.
    fn refill(&mut self) {
        let mut best: BinaryHeap<Reverse<Match>> = BinaryHeap::with_capacity(BATCH + 1);
        let (last, doc_of) = (self.last, &self.doc_of);
        self.scores.each(|slot, score| {
            let found = Match(doc_of(slot), score as f32);
            if last.is_some_and(|last| found >= last) {
                return;
            }
            if best.len() < BATCH {
                best.push(Reverse(found));
            } else if best.peek().is_some_and(|worst| found > worst.0) {
                best.pop();
                best.push(Reverse(found));
            }
        });
        self.done = best.len() < BATCH;
        // Sorted ascending by `Reverse`, so the best first: reversed, the
        // best is last, where `next` pops.
        self.batch = best.into_sorted_vec().into_iter().rev().map(|Reverse(found)| found).collect();
    }
}

/// No match at all.
impl Default for Ranked<'_> {
    fn default() -> Self {
        Ranked {
            scores: Scores::reached(0),
            doc_of: Box::new(|slot| slot),
            batch: Vec::new(),
            last: None,
            done: true,
        }
    }
}

impl Iterator for Ranked<'_> {
    type Item = (u32, f32);

    fn next(&mut self) -> Option<(u32, f32)> {
        if self.batch.is_empty() && !self.done {
            self.refill();
        }
        let found = self.batch.pop()?;
        self.last = Some(found);
        Some((found.0, found.1))
    }
}
