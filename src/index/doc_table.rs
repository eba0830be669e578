//! A map from the engine's doc numbers to a small value, held as a list
//! indexed by doc number while the docs it holds are dense enough, as a
//! hash table otherwise.
//!
//! An index is per tenant and doc numbers are the engine's, shared by
//! every tenant: a list per index would grow with every tenant's docs.
//! But one tenant holding most of a store's docs is the common case (one
//! user per store), and there a slot per doc costs a fraction of a hash
//! table's slot, control byte and slack per key (`docs/speed.md`, "Heap
//! per memory"). So the table starts as a list, turns into a hash table
//! when a doc would make the list more than twice as long as the docs it
//! holds or is expected to hold, and back into a list once its docs fill
//! two thirds of the numbers up to the largest (with a value of 4 or 8
//! bytes a list of twice the docs costs about what a hash table does;
//! the gap between the two thresholds keeps a table from turning back
//! and forth, each turn a pass over the docs).

use crate::fast_hash::FastMap;
use crate::room;

/// A value a [`DocTable`] holds, with one value of its type that no doc
/// ever holds: it marks the list's empty slots.
pub(crate) trait Vacant: Copy + Eq {
    const VACANT: Self;
}

impl Vacant for u32 {
    // A BM25 slot: there are fewer slots than doc numbers.
    const VACANT: u32 = u32::MAX;
}

/// Slots a list may hold beyond twice the docs, so that a table of few
/// docs need not start as a hash table.
const LIST_SLACK: usize = 64;

#[derive(Debug, Clone)]
enum Held<V> {
    List(Vec<V>),
    /// With a bound on its docs' numbers: the largest inserted.
    Table(FastMap<u32, V>, u32),
}

/// Values by doc number; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct DocTable<V> {
    held: Held<V>,
    /// The docs holding a value.
    len: usize,
    /// The docs the table was told to expect ([`DocTable::reserve`]).
    expected: usize,
}

impl<V> Default for DocTable<V> {
    fn default() -> Self {
        DocTable {
            held: Held::List(Vec::new()),
            len: 0,
            expected: 0,
        }
    }
}

impl<V: Vacant> DocTable<V> {
    /// Makes room for `additional` more docs.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.expected = self.expected.max(self.len.saturating_add(additional));
        match &mut self.held {
            // A list makes room when its docs come: their numbers are not
            // known yet.
            Held::List(_) => {}
            Held::Table(table, _) => table.reserve(additional),
        }
    }

    /// Frees unused room, but for the writes after an open
    /// ([`crate::room`]).
    pub(crate) fn leave_room(&mut self) {
        match &mut self.held {
            Held::List(list) => room::leave_room(list),
            Held::Table(table, _) => table.shrink_to_fit(),
        }
    }

    /// How many docs hold a value.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn get(&self, doc: u32) -> Option<V> {
        let value = match &self.held {
            Held::List(list) => *list.get(doc as usize)?,
            Held::Table(table, _) => *table.get(&doc)?,
        };
        (value != V::VACANT).then_some(value)
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn contains(&self, doc: u32) -> bool {
        self.get(doc).is_some()
    }

    /// Sets the value of `doc` (`value` must not be [`Vacant::VACANT`]),
    /// returning the one it replaces.
    pub(crate) fn insert(&mut self, doc: u32, value: V) -> Option<V> {
        let at = doc as usize;
        match &mut self.held {
            Held::List(list) if at >= list.len() => {
                let dense_up_to = self.expected.max(self.len + 1).saturating_mul(2).saturating_add(LIST_SLACK);
                if at < dense_up_to {
                    if at >= list.capacity() && at < self.expected {
                        room::make_room(list, self.expected);
                    }
                    list.resize(at + 1, V::VACANT);
                } else {
                    self.held = Held::Table(into_table(list, self.len, self.expected), doc);
                }
            }
            Held::Table(table, largest) => {
                *largest = doc.max(*largest);
                let docs = self.len + 1;
                if (*largest as usize) < docs + docs / 2 {
                    self.held = Held::List(into_list(table, *largest));
                }
            }
            Held::List(_) => {}
        }
        let old = match &mut self.held {
            Held::List(list) => list.get_mut(at).map(|slot| std::mem::replace(slot, value)),
            Held::Table(table, _) => table.insert(doc, value),
        }
        .filter(|&old| old != V::VACANT);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub(crate) fn remove(&mut self, doc: u32) -> Option<V> {
        let old = match &mut self.held {
            Held::List(list) => list.get_mut(doc as usize).map(|slot| std::mem::replace(slot, V::VACANT)),
            Held::Table(table, _) => table.remove(&doc),
        }
        .filter(|&old| old != V::VACANT);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    #[cfg(any(test, feature = "testing"))]
    /// Approximate heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.held {
            Held::List(list) => list.capacity() * size_of::<V>(),
            Held::Table(table, _) => table.capacity() * (size_of::<(u32, V)>() + 1),
        }
    }

    #[cfg(test)]
    pub(crate) fn is_list(&self) -> bool {
        matches!(self.held, Held::List(_))
    }
}

/// The values of `list` (holding `len` docs) in a hash table with room for
/// `expected` docs.
fn into_table<V: Vacant>(list: &mut Vec<V>, len: usize, expected: usize) -> FastMap<u32, V> {
    let mut table = FastMap::default();
    table.reserve(len.max(expected));
    table.extend(
        (0u32..)
            .zip(std::mem::take(list))
            .filter(|&(_, value)| value != V::VACANT),
    );
    table
}

/// The values of `table` in a list of the docs up to `largest`.
fn into_list<V: Vacant>(table: &mut FastMap<u32, V>, largest: u32) -> Vec<V> {
    let mut list = vec![V::VACANT; largest as usize + 1];
    for (doc, value) in table.drain() {
        if let Some(slot) = list.get_mut(doc as usize) {
            *slot = value;
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtide_testkit::rng::Rng;
    use std::collections::BTreeMap;

    /// Random inserts, replacements and removals checked against a
    /// `BTreeMap` after each, over docs dense at first, then sparse.
    #[test]
    fn a_table_holds_what_a_map_holds_as_a_list_and_as_a_hash_table() {
        let mut rng = Rng(21);
        let mut table = DocTable::<u32>::default();
        table.reserve(100);
        let mut want = BTreeMap::new();
        let mut was_list = false;
        for step in 0..20_000u32 {
            let span = if step < 10_000 { 200 } else { 1_000_000 };
            let doc = (rng.next_u64() % span) as u32;
            if rng.next_u64().is_multiple_of(3) {
                assert_eq!(table.remove(doc), want.remove(&doc), "step {step}: remove {doc}");
            } else {
                let value = step;
                assert_eq!(table.insert(doc, value), want.insert(doc, value), "step {step}: insert {doc}");
            }
            assert_eq!(table.len(), want.len(), "step {step}");
            if step == 9_999 {
                was_list = table.is_list();
            }
            for probe in [doc, doc.wrapping_add(1), doc / 2] {
                assert_eq!(table.get(probe), want.get(&probe).copied(), "step {step}: get {probe}");
            }
        }
        assert!(was_list, "dense docs are held in a list");
        assert!(!table.is_list(), "sparse docs are held in a hash table");
        for (&doc, &value) in &want {
            assert_eq!(table.get(doc), Some(value));
        }
    }

    #[test]
    fn a_list_grows_to_the_expected_docs_at_once() {
        let mut table = DocTable::<u32>::default();
        table.reserve(1000);
        table.insert(0, 7);
        table.insert(999, 8);
        assert!(table.is_list());
        // With room for the docs written after an open.
        assert_eq!(table.heap_bytes(), room::with_room(1000) * size_of::<u32>());
        table.insert(1000, 10);
        assert_eq!(table.heap_bytes(), room::with_room(1000) * size_of::<u32>());
        // Past twice the expected docs (and the slack), a hash table.
        table.insert(2 * 1000 + LIST_SLACK as u32, 9);
        assert!(!table.is_list());
        assert_eq!((table.get(0), table.get(999), table.get(2064), table.len()), (Some(7), Some(8), Some(9), 4));
    }

    #[test]
    fn a_hash_table_turns_back_into_a_list_once_its_docs_are_dense() {
        let mut table = DocTable::<u32>::default();
        table.insert(1000, 1);
        assert!(!table.is_list());
        for doc in 0..666 {
            table.insert(doc, doc + 2);
        }
        assert!(!table.is_list(), "667 docs up to 1000 are not two thirds");
        table.insert(666, 668);
        assert!(table.is_list());
        assert_eq!(table.heap_bytes(), 1001 * size_of::<u32>());
        assert_eq!((table.get(1000), table.get(999), table.len()), (Some(1), None, 668));
        for doc in 0..=666 {
            assert_eq!(table.get(doc), Some(doc + 2));
        }
    }
}
