//! `SortedKeys` against `BTreeSet`, the tree it replaces, as the oracle.

use std::collections::BTreeSet;
use std::ops::{Bound, RangeBounds};

use proptest::prelude::*;

use super::{sort_in_place, SortedKeys, FOLD_AT_LEAST};

#[derive(Debug, Clone)]
enum Op {
    Insert(u16),
    Remove(u16),
    /// Keys the set does not hold yet, added at once (as an open does).
    ExtendNew(Vec<u16>),
    /// This many keys, each after every key the set holds, inserted one
    /// by one (as a conversation's turns are), every third number (so
    /// that `InsertBelowLargest` has room).
    Append(u16),
    /// The key this far below the set's largest (an older turn arriving
    /// late; 0: the largest, again).
    InsertBelowLargest(u16),
    /// The set's largest key removed this many times (the newest memories
    /// erased, a write rolled back).
    RemoveLargest(u8),
    Range(Bound<u16>, Bound<u16>),
}

fn bound() -> impl Strategy<Value = Bound<u16>> {
    prop_oneof![
        (0u16..3000).prop_map(Bound::Included),
        (0u16..3000).prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u16..3000).prop_map(Op::Insert),
        4 => (0u16..3000).prop_map(Op::Remove),
        1 => prop::collection::vec(0u16..3000, 0..400).prop_map(Op::ExtendNew),
        1 => (0u16..40).prop_map(Op::Append),
        1 => (0u8..12).prop_map(Op::RemoveLargest),
        1 => (0u16..8).prop_map(Op::InsertBelowLargest),
        2 => (bound(), bound()).prop_map(|(a, b)| Op::Range(a, b)),
    ]
}

fn expect_equal(set: &SortedKeys<u16>, oracle: &BTreeSet<u16>) {
    assert_eq!(set.len(), oracle.len());
    let got: Vec<u16> = set.iter_rev().copied().collect();
    let want: Vec<u16> = oracle.iter().rev().copied().collect();
    assert_eq!(got, want);
}

fn range_of(oracle: &BTreeSet<u16>, start: Bound<u16>, end: Bound<u16>) -> Vec<u16> {
    oracle
        .iter()
        .rev()
        .filter(|k| (start, end).contains(*k))
        .copied()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every answer equals the tree's, across folds (thousands of changes
    /// pass `FOLD_AT_LEAST`), removals of listed and of added keys, keys
    /// removed and added again, and ranges of every kind of bound, empty
    /// and reversed ones too.
    #[test]
    fn answers_as_a_tree(ops in prop::collection::vec(op(), 1..2500)) {
        let mut set = SortedKeys::default();
        let mut oracle = BTreeSet::new();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert(k) => prop_assert_eq!(set.insert(k), oracle.insert(k)),
                Op::Remove(k) => prop_assert_eq!(set.remove(k), oracle.remove(&k)),
                Op::ExtendNew(keys) => {
                    let new: BTreeSet<u16> = keys.into_iter().filter(|k| !oracle.contains(k)).collect();
                    let mut new: Vec<u16> = new.into_iter().collect();
                    new.reverse();
                    oracle.extend(new.iter().copied());
                    set.extend_new(new);
                }
                Op::Append(count) => {
                    let after = oracle.last().map_or(0, |&last| last + 1);
                    for k in (0..count).map(|i| after.saturating_add(3 * i)) {
                        prop_assert_eq!(set.insert(k), oracle.insert(k));
                    }
                }
                Op::InsertBelowLargest(offset) => {
                    let k = oracle.last().map_or(0, |&last| last.saturating_sub(offset));
                    prop_assert_eq!(set.insert(k), oracle.insert(k));
                }
                Op::RemoveLargest(count) => {
                    for _ in 0..count {
                        let Some(&largest) = oracle.last() else { break };
                        prop_assert_eq!(set.remove(largest), oracle.remove(&largest));
                    }
                }
                Op::Range(start, end) => {
                    let got: Vec<u16> = set.range_rev((start, end)).copied().collect();
                    prop_assert_eq!(got, range_of(&oracle, start, end));
                }
            }
            if i % 7 == 0 {
                expect_equal(&set, &oracle);
            }
        }
        expect_equal(&set, &oracle);
    }
}

proptest! {
    /// Unique keys come out sorted, whatever their order: runs in order
    /// (an open's segments), shuffled, or one key.
    #[test]
    fn keys_are_sorted_in_place(
        keys in prop::collection::btree_set(any::<u32>(), 0..3000),
        runs in 1usize..12,
        shuffle in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let sorted: Vec<u32> = keys.into_iter().collect();
        let mut keys = Vec::with_capacity(sorted.len());
        for run in 0..runs {
            keys.extend(sorted.iter().skip(run).step_by(runs).copied());
        }
        if shuffle {
            let mut state = seed | 1;
            for i in (1..keys.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                keys.swap(i, (state % (i as u64 + 1)) as usize);
            }
        }
        sort_in_place(&mut keys);
        prop_assert_eq!(keys, sorted);
    }
}

/// An open's keys into an empty set become the list itself, sorted in
/// place: no tree holds them and the list has no room to spare.
#[test]
fn an_opens_keys_become_the_list() {
    let mut set = SortedKeys::default();
    // Two runs, as two segments give them.
    let keys: Vec<u32> = (2500..5000).chain(0..2500).collect();
    set.extend_new(keys);
    assert_eq!(set.sorted.len(), 5000);
    assert_eq!(set.sorted.capacity(), 5000);
    assert!(set.added.is_empty() && set.removed.is_empty());
    assert!(set.sorted.windows(2).all(|w| w[0] < w[1]));
}

/// Changes fold into the list once they pass their share of it, so the
/// trees stay small whatever the number of changes.
#[test]
fn changes_fold_into_the_list() {
    let mut set = SortedKeys::default();
    for k in 0..(3 * FOLD_AT_LEAST as u32) {
        set.insert(k);
        assert!(set.added.len() + set.removed.len() <= FOLD_AT_LEAST.max(set.sorted.len() / 8));
    }
    for k in (0..(3 * FOLD_AT_LEAST as u32)).step_by(2) {
        assert!(set.remove(k));
        assert!(set.added.len() + set.removed.len() <= FOLD_AT_LEAST.max(set.sorted.len() / 8));
    }
    assert_eq!(set.len(), 3 * FOLD_AT_LEAST / 2);
    assert!(set.sorted.len() > FOLD_AT_LEAST, "the changes were folded");
    assert!(set.iter_rev().all(|k| k % 2 == 1));
}
