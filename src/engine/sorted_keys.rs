//! An ordered set of unique keys held as one sorted list, plus the keys
//! added and removed since the list was last made: the engine's time keys
//! (`by_created`, `by_scope_time`). An open builds the list from the keys
//! it collected, sorted in place, so it allocates nothing more; a tree
//! built from the same keys took another copy of them and a sort's
//! scratch as large, on top of the open's high-water mark (`docs/speed.md`,
//! "Heap per memory"). Later changes go to two small trees, folded into
//! the list once they grow past a share of it, so each change costs a
//! tree's insert and, spread over the changes, a few moves; a key after
//! every key joins the end of the list instead, while a fold's room
//! lasts.

use std::collections::BTreeSet;
use std::iter::Peekable;
use std::ops::{Bound, RangeBounds};

/// Changes held in the trees before they are folded into the list: at
/// least this many, or an eighth of the list.
const FOLD_AT_LEAST: usize = 1024;

/// See the module documentation. Invariants: `sorted` is strictly
/// ascending; `added` holds no key of `sorted`; `removed` holds only keys
/// of `sorted`.
pub(super) struct SortedKeys<T> {
    sorted: Vec<T>,
    added: BTreeSet<T>,
    removed: BTreeSet<T>,
}

impl<T> Default for SortedKeys<T> {
    fn default() -> Self {
        SortedKeys {
            sorted: Vec::new(),
            added: BTreeSet::new(),
            removed: BTreeSet::new(),
        }
    }
}

impl<T: Ord> SortedKeys<T> {
    pub(super) fn len(&self) -> usize {
        self.sorted.len() - self.removed.len() + self.added.len()
    }

    /// Adds `key`; false if the set held it.
    pub(super) fn insert(&mut self, key: T) -> bool {
        // A key after every key the set holds (a conversation or a bulk
        // ingest: times and ids grow) joins the end of the list while the
        // list has room: no search and no tree's insert, whose string
        // comparisons took 6 % of a lexical build in WebAssembly
        // (`docs/speed.md`, "Eighteenth session"). The list never grows
        // here: an open's list has no room, so the writes after an open
        // go to the tree as before, and the list stays the size the open
        // made it.
        let after_all = self.sorted.len() < self.sorted.capacity()
            && self.sorted.last().is_none_or(|last| *last < key)
            && self.added.last().is_none_or(|last| *last < key);
        if after_all {
            self.sorted.push(key);
            return true;
        }
        let added = if self.removed.remove(&key) {
            true
        } else if self.sorted.binary_search(&key).is_ok() {
            false
        } else {
            self.added.insert(key)
        };
        self.fold_if_grown();
        added
    }

    /// Removes `key`; false if the set did not hold it.
    pub(super) fn remove(&mut self, key: T) -> bool {
        let removed = if self.added.remove(&key) {
            true
        } else if self.sorted.last() == Some(&key) && !self.removed.contains(&key) {
            // The list's last key, most often one just inserted (it joined
            // the end): dropped now rather than held as removed until a
            // fold, so an erased memory's keys go with it.
            self.sorted.pop();
            self.drop_removed_end();
            true
        } else if self.sorted.binary_search(&key).is_ok() {
            self.removed.insert(key)
        } else {
            false
        };
        self.fold_if_grown();
        removed
    }

    /// Adds `keys`, none of which the set holds and no two equal (an
    /// open's keys, one per memory). Into an empty set they become the
    /// list, sorted in place; a few are inserted one by one; otherwise
    /// they are merged into a new list.
    pub(super) fn extend_new(&mut self, mut keys: Vec<T>) {
        if keys.len() < self.len() / 16 {
            for key in keys {
                self.insert(key);
            }
            return;
        }
        sort_in_place(&mut keys);
        if self.len() == 0 {
            self.sorted = keys;
            self.added.clear();
            self.removed.clear();
        } else {
            self.fold(keys);
        }
    }

    /// The keys within `range`, last first.
    pub(super) fn range_rev<R: RangeBounds<T>>(&self, range: R) -> impl Iterator<Item = &T> {
        let start = match range.start_bound() {
            Bound::Included(k) => self.sorted.partition_point(|x| x < k),
            Bound::Excluded(k) => self.sorted.partition_point(|x| x <= k),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(k) => self.sorted.partition_point(|x| x <= k),
            Bound::Excluded(k) => self.sorted.partition_point(|x| x < k),
            Bound::Unbounded => self.sorted.len(),
        };
        let removed = &self.removed;
        let listed = self
            .sorted
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .rev()
            .filter(move |k| removed.is_empty() || !removed.contains(*k));
        // `BTreeSet::range` panics on a range that ends before it starts;
        // such a range holds nothing.
        let added = if ends_before_start(&range) {
            None
        } else {
            Some(self.added.range(range).rev())
        };
        Merged {
            a: listed.peekable(),
            b: added.into_iter().flatten().peekable(),
        }
    }

    /// Every key, last first.
    pub(super) fn iter_rev(&self) -> impl Iterator<Item = &T> {
        self.range_rev(..)
    }

    /// After the list's last key went: drops the removed keys now at the
    /// list's end too.
    fn drop_removed_end(&mut self) {
        while let Some(last) = self.sorted.last() {
            if !self.removed.remove(last) {
                break;
            }
            self.sorted.pop();
        }
    }

    fn fold_if_grown(&mut self) {
        if self.added.len() + self.removed.len() > FOLD_AT_LEAST.max(self.sorted.len() / 8) {
            self.fold(Vec::new());
        }
    }

    /// Makes the list anew from the set and `more` (sorted, none in the
    /// set), emptying the trees. The list keeps room for as many keys
    /// as the trees hold before the next fold, for keys that come in
    /// order (`insert`).
    fn fold(&mut self, more: Vec<T>) {
        let len = self.len() + more.len();
        let mut list = Vec::with_capacity(len + FOLD_AT_LEAST.max(len / 8));
        let mut removed = std::mem::take(&mut self.removed).into_iter().peekable();
        let kept = std::mem::take(&mut self.sorted).into_iter().filter(|k| {
            while removed.next_if(|r| r < k).is_some() {}
            removed.next_if(|r| r == k).is_none()
        });
        let added = std::mem::take(&mut self.added).into_iter();
        list.extend(Ascending {
            a: Ascending {
                a: kept.peekable(),
                b: added.peekable(),
            }
            .peekable(),
            b: more.into_iter().peekable(),
        });
        self.sorted = list;
    }
}

impl<T: Ord> PartialEq for SortedKeys<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter_rev().eq(other.iter_rev())
    }
}

impl<T: Ord + std::fmt::Debug> std::fmt::Debug for SortedKeys<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter_rev()).finish()
    }
}

/// Sorts `keys` (unique) with little room besides them. An open's keys
/// come as runs already in order (a segment's rows are in key order), so
/// a sort that finds runs is cheap where a quicksort compares every key
/// again and again; but the standard stable sort takes scratch room for
/// as many keys as it sorts. So the positions are sorted (4 bytes each,
/// the stable sort's scratch as many) by the keys they point at, and the
/// keys are then moved into place along the permutation's cycles.
fn sort_in_place<T: Ord>(keys: &mut [T]) {
    if keys.is_sorted() {
        return;
    }
    let Ok(len) = u32::try_from(keys.len()) else {
        keys.sort_unstable();
        return;
    };
    let mut order: Vec<u32> = (0..len).collect();
    // Positions below `len`, made just above.
    order.sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
    // Position `i` takes the key at `order[i]`; a position done is marked
    // by pointing at itself.
    for start in 0..keys.len() {
        let mut at = start;
        loop {
            let from = order[at] as usize;
            order[at] = at as u32;
            if from == start {
                break;
            }
            keys.swap(at, from);
            at = from;
        }
    }
}

/// Whether `range` ends before it starts, or is empty with both ends
/// excluded at one key.
fn ends_before_start<T: Ord, R: RangeBounds<T>>(range: &R) -> bool {
    use Bound::{Excluded, Included};
    match (range.start_bound(), range.end_bound()) {
        (Included(s), Included(e)) | (Included(s), Excluded(e)) | (Excluded(s), Included(e)) => s > e,
        (Excluded(s), Excluded(e)) => s >= e,
        _ => false,
    }
}

/// Two descending iterators of disjoint keys merged, largest first.
struct Merged<A: Iterator, B: Iterator> {
    a: Peekable<A>,
    b: Peekable<B>,
}

impl<'t, T: Ord + 't, A: Iterator<Item = &'t T>, B: Iterator<Item = &'t T>> Iterator for Merged<A, B> {
    type Item = &'t T;

    fn next(&mut self) -> Option<&'t T> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y > x => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

/// Two ascending iterators of disjoint keys merged, smallest first.
struct Ascending<A: Iterator, B: Iterator> {
    a: Peekable<A>,
    b: Peekable<B>,
}

impl<T: Ord, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for Ascending<A, B> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y < x => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

#[cfg(test)]
mod tests;
