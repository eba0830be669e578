//! Partition signatures of term sets: the near-duplicate search's index
//! (`docs/speed.md`, "Building a store").
//!
//! The term ids of a [`crate::index::Bm25Index`] are split into [`PARTS`]
//! fixed partitions by a hash of the id. A doc's signature in partition
//! `j` is a hash of the ids it holds in `j` (of the empty set too), and
//! the index maps each (partition, signature) to the slots of the docs
//! that have it. Two term sets that differ in at most `d` terms (their
//! symmetric difference) differ in at most `d` partitions, so they have
//! the same signature in at least `PARTS − d` of them (pigeonhole). A
//! query with a bound on that difference looks up its own `PARTS`
//! signatures and lists the slots found under enough of them: never
//! fewer than the docs within the bound (a hash collision only adds
//! slots, which the caller's exact check drops).
//!
//! Unlike a posting list, a bucket holds only the docs with exactly the
//! same ids in its partition, so the docs a short memory's buckets hold
//! are few even when every one of its terms is common.
//!
//! Ids are stable while a doc holds them (the index frees an id only when
//! no doc holds its term), so a doc's signatures are recomputed from its
//! ids to remove it.

use super::chunked::Chunked;

/// Number of partitions. More partitions tolerate larger differences
/// (longer texts) but make each signature less selective; each doc costs
/// one map entry per partition.
pub(crate) const PARTS: usize = 4;

/// A bucket value's high bit: the rest indexes `lists`, otherwise the
/// value is the bucket's only slot.
const LIST: u32 = 1 << 31;

/// The signature buckets of every doc of one lexical index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signatures {
    /// (partition, signature) key → a slot, or `LIST | i` for `lists[i]`.
    /// Most buckets hold one doc, so that costs no allocation.
    buckets: Buckets,
    /// The buckets of several slots (or of a slot with the high bit set),
    /// each sorted ascending; in chunks, as the buckets are in shards
    /// (see [`Buckets`]).
    lists: Chunked<Vec<u32>>,
    free_lists: Vec<u32>,
}

/// Most shards of the buckets: 2^[`MAX_SHARD_BITS`].
const MAX_SHARD_BITS: u32 = 12;
/// Entries a shard holds on average before the shards split in two.
const SHARD_ENTRIES: usize = 256;

/// The buckets' keys and values, sorted by key, in shards by the key's
/// top bits (keys are hashes, so they spread evenly): one shard while the
/// index is small, split in two by the next bit whenever they hold more
/// than [`SHARD_ENTRIES`] each on average (a sorted shard splits at one
/// place), up to 2^[`MAX_SHARD_BITS`].
///
/// Why: the index is built whole by the first write after an open, four
/// entries a doc. As one hash map it took 4.5 MiB at 100,000 (a slot of
/// 9 bytes for each entry and the slack of a power of two), doubling on
/// the way, and went on top of the memory the open left: in WebAssembly
/// linear memory never shrinks (+4.1 MiB). Sorted shards hold 8 bytes an
/// entry, fitted once the index is built, in pieces of a few KiB that fit
/// the holes an open leaves (`docs/speed.md`, "Sixteenth session"); an
/// insert moves at most a shard's bytes.
#[derive(Debug, Clone, Default)]
struct Buckets {
    shards: Vec<Vec<(u32, u32)>>,
    /// The shards are 2^`bits`.
    bits: u32,
    len: usize,
}

impl Buckets {
    fn shard(&self, key: u32) -> usize {
        key.checked_shr(u32::BITS - self.bits).unwrap_or(0) as usize
    }

    fn get(&self, key: &u32) -> Option<&u32> {
        let shard = self.shards.get(self.shard(*key))?;
        let at = shard.binary_search_by_key(key, |&(k, _)| k).ok()?;
        shard.get(at).map(|(_, value)| value)
    }

    fn insert(&mut self, key: u32, value: u32) {
        if self.shards.is_empty() {
            self.shards.push(Vec::new());
        }
        let at = self.shard(key);
        if let Some(shard) = self.shards.get_mut(at) {
            match shard.binary_search_by_key(&key, |&(k, _)| k) {
                Ok(at) => shard[at].1 = value,
                Err(at) => {
                    shard.insert(at, (key, value));
                    self.len += 1;
                }
            }
        }
        if self.len > self.shards.len() * SHARD_ENTRIES && self.bits < MAX_SHARD_BITS {
            self.split();
        }
    }

    /// Each shard in two: its keys whose next bit is 0, then those whose
    /// next bit is 1 (sorted, so the first run and the rest).
    fn split(&mut self) {
        let bit = 1u32 << (u32::BITS - self.bits - 1);
        let mut shards = Vec::with_capacity(self.shards.len() * 2);
        for mut low in std::mem::take(&mut self.shards) {
            let at = low.partition_point(|&(key, _)| key & bit == 0);
            let high = low.split_off(at);
            low.shrink_to_fit();
            shards.push(low);
            shards.push(high);
        }
        self.shards = shards;
        self.bits += 1;
    }

    fn remove(&mut self, key: &u32) {
        let at = self.shard(*key);
        if let Some(shard) = self.shards.get_mut(at) {
            if let Ok(at) = shard.binary_search_by_key(key, |&(k, _)| k) {
                shard.remove(at);
                self.len -= 1;
            }
        }
    }

    /// Gives back each shard's room.
    fn fit(&mut self) {
        self.shards.iter_mut().for_each(Vec::shrink_to_fit);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.shards.iter().map(Vec::capacity).sum()
    }
}

impl Signatures {
    /// The keys of a term set (its ids, ascending) in each partition.
    pub(crate) fn keys(ids: impl Iterator<Item = u32>) -> [u32; PARTS] {
        // FNV-1a-like accumulation per partition, then a final mix: the
        // ids come ascending, so the same set always gives the same key.
        let mut state: [u64; PARTS] = std::array::from_fn(|j| 0x9E37_79B9_7F4A_7C15 ^ j as u64);
        for id in ids {
            let part = partition(id);
            state[part] = (state[part] ^ u64::from(id)).wrapping_mul(0x0000_0100_0000_01B3);
        }
        state.map(|s| {
            let mixed = mix(s);
            (mixed ^ (mixed >> 32)) as u32
        })
    }

    /// Gives back the room the lists grew into: for an index just built
    /// whole.
    pub(crate) fn fit(&mut self) {
        self.buckets.fit();
    }

    /// Adds `slot` under each of `keys`.
    pub(crate) fn insert(&mut self, slot: u32, keys: &[u32; PARTS]) {
        for (i, &key) in keys.iter().enumerate() {
            // Two partitions' keys may collide: the slot goes in once.
            if keys[..i].contains(&key) {
                continue;
            }
            match self.buckets.get(&key).copied() {
                None if slot & LIST == 0 => {
                    self.buckets.insert(key, slot);
                }
                None => {
                    let list = self.new_list(vec![slot]);
                    self.buckets.insert(key, list);
                }
                Some(value) if value & LIST == 0 => {
                    if value == slot {
                        continue;
                    }
                    let mut pair = vec![value, slot];
                    pair.sort_unstable();
                    let list = self.new_list(pair);
                    self.buckets.insert(key, list);
                }
                Some(value) => {
                    if let Some(list) = self.lists.get_mut((value & !LIST) as usize) {
                        if let Err(at) = list.binary_search(&slot) {
                            list.insert(at, slot);
                        }
                    }
                }
            }
        }
    }

    /// Removes `slot` from each of `keys` (the keys it was inserted with).
    pub(crate) fn remove(&mut self, slot: u32, keys: &[u32; PARTS]) {
        for (i, &key) in keys.iter().enumerate() {
            if keys[..i].contains(&key) {
                continue;
            }
            let Some(value) = self.buckets.get(&key).copied() else {
                continue;
            };
            if value & LIST == 0 {
                if value == slot {
                    self.buckets.remove(&key);
                }
                continue;
            }
            let index = value & !LIST;
            let Some(list) = self.lists.get_mut(index as usize) else {
                continue;
            };
            if let Ok(at) = list.binary_search(&slot) {
                list.remove(at);
            }
            match list.as_slice() {
                [] => {
                    self.buckets.remove(&key);
                    self.lists[index as usize] = Vec::new();
                    self.free_lists.push(index);
                }
                // Back to a bucket without a list.
                &[only] if only & LIST == 0 => {
                    self.buckets.insert(key, only);
                    self.lists[index as usize] = Vec::new();
                    self.free_lists.push(index);
                }
                _ => {}
            }
        }
    }

    /// The slots (ascending) of the docs with signature `key`.
    pub(crate) fn bucket(&self, key: u32) -> &[u32] {
        match self.buckets.get(&key) {
            None => &[],
            Some(value) if value & LIST == 0 => std::slice::from_ref(value),
            Some(value) => self
                .lists
                .get((value & !LIST) as usize)
                .map_or(&[], Vec::as_slice),
        }
    }

    /// The `LIST` value of a new list holding `slots`.
    fn new_list(&mut self, slots: Vec<u32>) -> u32 {
        match self.free_lists.pop() {
            Some(index) => {
                self.lists[index as usize] = slots;
                index | LIST
            }
            None => {
                self.lists.push(slots);
                // An index takes 31 bits: 2³¹ lists would be 48 GiB of
                // list headers alone, far past any wasm32 or native store.
                u32::try_from(self.lists.len() - 1).unwrap_or(0) | LIST
            }
        }
    }

    /// Approximate heap bytes: the map's entries and control bytes, and
    /// the lists.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(u32, u32)>()
            + self
                .lists
                .into_iter()
                .map(|list| list.capacity() * 4 + std::mem::size_of::<Vec<u32>>())
                .sum::<usize>()
    }
}

/// The partition of term id `id`.
fn partition(id: u32) -> usize {
    (mix(u64::from(id)) % PARTS as u64) as usize
}

/// A 64-bit finalizer (splitmix64's).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn sets_differing_in_d_terms_share_parts_minus_d_keys() {
        let a: Vec<u32> = (0..20).collect();
        let mut b = a.clone();
        b.retain(|&id| id != 7);
        b.push(40);
        b.sort_unstable();
        let (ka, kb) = (Signatures::keys(a.into_iter()), Signatures::keys(b.into_iter()));
        let same = ka.iter().zip(&kb).filter(|(x, y)| x == y).count();
        assert!(same >= PARTS - 2, "{same} of {PARTS}");
    }

    /// Many buckets: the shards split as they fill, each holding the keys
    /// of its top bits in order, and every bucket holds the slots a plain
    /// map of them holds, through removals too.
    #[test]
    fn shards_split_and_keep_every_bucket() {
        let mut signatures = Signatures::default();
        let mut expected: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut held = Vec::new();
        for slot in 0..6_000u32 {
            // Ids of a range that many slots share a bucket in (the empty
            // partitions' above all) and most buckets are one slot's.
            let ids: std::collections::BTreeSet<u32> = (0..1 + next() % 4).map(|_| (next() % 5_000) as u32).collect();
            let keys = Signatures::keys(ids.iter().copied());
            signatures.insert(slot, &keys);
            held.push((slot, keys));
            if slot % 7 == 3 {
                let (gone, keys) = held.swap_remove((next() % held.len() as u64) as usize);
                signatures.remove(gone, &keys);
            }
        }
        signatures.fit();
        for (slot, keys) in &held {
            for (i, key) in keys.iter().enumerate() {
                if !keys[..i].contains(key) {
                    expected.entry(*key).or_default().push(*slot);
                }
            }
        }
        let buckets = &signatures.buckets;
        assert!(buckets.bits >= 4, "{} bits", buckets.bits);
        assert_eq!(buckets.shards.len(), 1 << buckets.bits);
        for (n, shard) in buckets.shards.iter().enumerate() {
            assert!(shard.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(shard.iter().all(|&(key, _)| buckets.shard(key) == n));
        }
        assert_eq!(buckets.len(), expected.len());
        for (key, mut slots) in expected {
            slots.sort_unstable();
            assert_eq!(signatures.bucket(key), slots.as_slice());
        }
    }

    proptest! {
        /// After any inserts and removals, each bucket holds exactly the
        /// slots inserted under its key and not removed, ascending.
        #[test]
        fn buckets_hold_exactly_the_live_slots(
            ops in prop::collection::vec(
                (0u32..12, prop::collection::btree_set(0u32..10, 0..5), any::<bool>()),
                0..60,
            ),
            high in any::<bool>(),
        ) {
            let mut signatures = Signatures::default();
            let mut live: BTreeMap<u32, [u32; PARTS]> = BTreeMap::new();
            for (slot, ids, insert) in ops {
                // Slots with the high bit set go through lists.
                let slot = if high { slot | LIST } else { slot };
                if let Some(keys) = live.remove(&slot) {
                    signatures.remove(slot, &keys);
                }
                if insert {
                    let keys = Signatures::keys(ids.into_iter());
                    signatures.insert(slot, &keys);
                    live.insert(slot, keys);
                }
            }
            let mut expected: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for (&slot, keys) in &live {
                for &key in keys {
                    expected.entry(key).or_default().push(slot);
                }
            }
            for (key, mut slots) in expected {
                slots.sort_unstable();
                slots.dedup();
                prop_assert_eq!(signatures.bucket(key), slots.as_slice());
            }
            prop_assert_eq!(
                signatures.buckets.len(),
                live.values().flatten().collect::<std::collections::HashSet<_>>().len()
            );
        }
    }
}
