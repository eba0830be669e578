//! A query's BM25 scores as they are summed, by doc slot: a list of every
//! slot when the query's postings reach many of the index's docs, a map of
//! the slots reached otherwise.
//!
//! A query of common words reaches most docs: at 100,000 a map of every
//! slot took about 2 MiB and doubled four times on the way (some 5 MiB of
//! allocations for one query, `docs/speed.md`, "Fourteenth session"),
//! and hashed each posting. A list by slot is 8 bytes a doc, allocated
//! once. A query of rare words reaches a few docs, for which a list of
//! every slot would cost more than it saves.

use crate::fast_hash::FastMap;

/// The share of the docs a query's postings must reach, at most, for the
/// map: one in eight (a map's entry with its slack is about eight times a
/// list's slot per doc it holds).
const SPARSE_SHARE: usize = 8;

/// Each reached slot's score so far; see the module documentation.
pub(super) enum Scores {
    /// A score per slot.
    BySlot(Vec<f64>),
    Reached(FastMap<u32, f64>),
}

impl Scores {
    /// Room for the scores of a query whose postings hold `postings`
    /// entries, over an index of `slots` doc slots.
    pub(super) fn new(postings: usize, slots: usize) -> Self {
        if postings.saturating_mul(SPARSE_SHARE) >= slots {
            Scores::by_slot(slots)
        } else {
            Scores::reached(postings)
        }
    }

    /// A score for each of `slots` slots.
    pub(super) fn by_slot(slots: usize) -> Self {
        Scores::BySlot(vec![0.0; slots])
    }

    /// Scores of the slots reached only, room for `postings` of them.
    pub(super) fn reached(postings: usize) -> Self {
        let mut reached = FastMap::default();
        reached.reserve(postings);
        Scores::Reached(reached)
    }

    /// Adds `score` to slot `slot`'s.
    pub(super) fn add(&mut self, slot: u32, score: f64) {
        match self {
            Scores::BySlot(scores) => {
                if let Some(sum) = scores.get_mut(slot as usize) {
                    *sum += score;
                }
            }
            Scores::Reached(reached) => *reached.entry(slot).or_insert(0.0) += score,
        }
    }

    /// `each` of every reached slot and its score. A reached slot's score
    /// is positive (each term adds a positive score), so a slot of the
    /// list still at zero was not reached.
    pub(super) fn each(&self, mut each: impl FnMut(u32, f64)) {
        match self {
            Scores::BySlot(scores) => {
                for (slot, &score) in (0u32..).zip(scores) {
                    if score > 0.0 {
                        each(slot, score);
                    }
                }
            }
            Scores::Reached(reached) => reached.iter().for_each(|(&slot, &score)| each(slot, score)),
        }
    }
}
