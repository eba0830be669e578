//! The layout's key map: every record key the segments and the log hold,
//! with where its versions are.
//!
//! A store of 100,000 memories with embeddings has 200,000 keys, held for
//! as long as the store is open. Each key's bytes sit in one of a few large
//! shared buffers ([`KEY_CHUNK`] bytes each, never moved: no allocation
//! per key, and no buffer of every key doubling while a store opens), and
//! its state in a slot of three `u32`s: where its bytes are, their length
//! with two flags, and the segment of its newest version, named by its
//! place in a small segment table rather than by its number; the older
//! versions of a key sit in a side map (one inline, more in a list:
//! `older.rs`); the hash table holds key ids (`docs/speed.md`, "Heap per
//! memory"). The bytes of a key no longer held stay until they outweigh
//! the keys held, then the buffers are written anew.
//!
//! Most keys are a memory's or an embedding's: `item/` or `vec/` and a
//! ULID of 26 characters. Such a key, when its ULID is the one
//! [`parse_ulid`] reads and [`write_ulid`] writes back (uppercase, at
//! most 128 bits), is held by the ULID's 16 bytes, and written out again
//! when asked for ([`KeyText`]); any other key is held as its bytes. The
//! two keys of one ULID, a memory's and its embedding's, share one slot
//! (a bit per kind, and the embedding's flags and newest segment in the
//! bits a key held as its bytes gives its length) and one entry of the
//! table: a ULID key is hashed and compared by the ULID's value, any
//! other key by its text. The encoding is injective because only
//! canonical ULIDs take it.
//!
//! Keys have numbers ([`KeyId`]) stable while they are in the map, which
//! the reader uses to give each record its key without reading the key's
//! bytes again (`super::read`).

use std::hash::BuildHasher;
use std::ops::Deref;

use hashbrown::HashTable;

use crate::env::{parse_ulid, write_ulid, ULID_LEN};
use crate::fast_hash::FastMap;
use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};
use crate::room;

mod older;

use older::Older;

/// A key's number in its map, stable while the key is in it: its slot's
/// place, with [`VECTOR_ID`] for an embedding's key held by its ULID.
pub(crate) type KeyId = u32;

/// In a [`KeyId`]: the key is the embedding's of its slot's ULID (the
/// slot's place is the rest, so a memory's key and any other key are
/// named by their slot's place alone).
const VECTOR_ID: KeyId = 1 << 31;

/// No segment (a slot's `last`).
const NO_SEGMENT: u32 = u32::MAX;

/// Bytes of each buffer of keys: a key starts at a byte offset that a
/// `u16` holds.
const KEY_CHUNK: usize = 1 << 16;

/// ULIDs in each block of them (64 KiB).
const ULID_BLOCK: usize = 1 << 12;

/// A slot's `at` when its key is not in the buffers or the ULIDs: a free
/// slot, or a key the buffers cannot hold (longer than a buffer's offsets
/// reach, or past the buffers' count), which `long` holds.
const NOT_IN_CHUNKS: u32 = u32::MAX;

/// In a slot's `len`: the newest version of the key held as its bytes, or
/// of the memory's key, is in the log.
const IN_LOG: u32 = 1 << 31;
/// In a slot's `len`: older versions of that key are in other segments,
/// which `older` lists.
const HAS_OLDER: u32 = 1 << 30;
/// In a slot's `len`: which keys of its ULID the slot holds, a bit per
/// kind ([`kind_bit`]); none for a key held as its bytes.
const KINDS: u32 = 3 << 28;
/// In a slot's `len`: [`IN_LOG`] and [`HAS_OLDER`] of the embedding's key.
const VECTOR_IN_LOG: u32 = 1 << 27;
const VECTOR_HAS_OLDER: u32 = 1 << 26;
/// In a slot's `len`: the length of a key held as its bytes, or for a
/// ULID, one more than the place in the segment table of the embedding's
/// newest segment (0 for none).
const LEN: u32 = VECTOR_HAS_OLDER - 1;
/// Places a segment table gives: each names a segment in a slot's
/// [`LEN`] bits.
const PLACES: u32 = LEN - 1;

/// The prefixes of the keys held by their ULID's value.
const ULID_PREFIXES: [&str; 2] = [ITEM_PREFIX, VECTOR_PREFIX];
/// The kinds of a memory's key and of its embedding's.
const ITEM_KIND: u32 = 1;
const VECTOR_KIND: u32 = 2;

/// The bit in a slot's [`KINDS`] of `kind`.
fn kind_bit(kind: u32) -> u32 {
    1 << (27 + kind)
}

/// The length of the longest key held by its ULID's value.
const WRITTEN_MAX: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < ULID_PREFIXES.len() {
        if ULID_PREFIXES[i].len() > longest {
            longest = ULID_PREFIXES[i].len();
        }
        i += 1;
    }
    longest + ULID_LEN
};

/// The kind ([`ITEM_KIND`] or [`VECTOR_KIND`]) and ULID value of a key
/// held by its ULID's value, or `None` for a key held as its bytes.
fn ulid_form(key: &str) -> Option<(u32, u128)> {
    ULID_PREFIXES
        .iter()
        .zip(1..)
        .find_map(|(prefix, kind)| Some((kind, parse_ulid(key.strip_prefix(prefix)?)?)))
}

/// The text of a key held: its bytes in the map, or written out from its
/// ULID's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyText<'a> {
    Held(&'a str),
    Written { bytes: [u8; WRITTEN_MAX], len: u8 },
}

impl KeyText<'_> {
    /// The key of kind `kind` ([`ITEM_KIND`] or [`VECTOR_KIND`]) whose ULID is `ulid`
    /// (big-endian).
    fn write(kind: u32, ulid: &[u8; 16]) -> Self {
        let prefix = ULID_PREFIXES.get((kind as usize).wrapping_sub(1)).copied().unwrap_or_default();
        let mut bytes = [0; WRITTEN_MAX];
        let len = prefix.len() + ULID_LEN;
        // Two copies, not a byte at a time: an open writes out every key.
        if let Some((head, tail)) = bytes.get_mut(..len).map(|text| text.split_at_mut(prefix.len())) {
            head.copy_from_slice(prefix.as_bytes());
            tail.copy_from_slice(&write_ulid(u128::from_be_bytes(*ulid)));
        }
        KeyText::Written { bytes, len: len as u8 }
    }
}

impl Deref for KeyText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            KeyText::Held(key) => key,
            // Always a prefix and Crockford digits.
            KeyText::Written { bytes, len } => bytes
                .get(..usize::from(*len))
                .and_then(|text| std::str::from_utf8(text).ok())
                .unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// For a key held as its bytes, the buffer holding them (high 16
    /// bits) and where they start in it (low 16 bits); for keys held by
    /// their ULID, the ULID's place; or [`NOT_IN_CHUNKS`].
    at: u32,
    /// Flags ([`IN_LOG`], [`HAS_OLDER`], [`KINDS`], [`VECTOR_IN_LOG`],
    /// [`VECTOR_HAS_OLDER`]) and [`LEN`].
    len: u32,
    /// The place in the segment table of the segment holding the newest
    /// version a segment holds of the key held as its bytes, or of the
    /// memory's key, or [`NO_SEGMENT`].
    last: u32,
}

impl Slot {
    const FREE: Slot = Slot {
        at: NOT_IN_CHUNKS,
        len: 0,
        last: NO_SEGMENT,
    };

    /// Whether its keys are held by their ULID.
    fn by_ulid(&self) -> bool {
        self.len & KINDS != 0
    }

    /// Whether it holds the key of kind `kind` of its ULID.
    fn has(&self, kind: u32) -> bool {
        self.len & kind_bit(kind) != 0
    }

    /// The flags `in_log` and `has_older` of its embedding's key if
    /// `vector`, else of its other key.
    fn flags(vector: bool) -> (u32, u32) {
        if vector {
            (VECTOR_IN_LOG, VECTOR_HAS_OLDER)
        } else {
            (IN_LOG, HAS_OLDER)
        }
    }

    fn in_log(&self, vector: bool) -> bool {
        self.len & Slot::flags(vector).0 != 0
    }

    fn has_older(&self, vector: bool) -> bool {
        self.len & Slot::flags(vector).1 != 0
    }

    /// The place of the newest segment of the key (see [`Slot::flags`]).
    fn last(&self, vector: bool) -> u32 {
        if vector {
            (self.len & LEN).checked_sub(1).unwrap_or(NO_SEGMENT)
        } else {
            self.last
        }
    }

    fn set_last(&mut self, vector: bool, place: u32) {
        if vector {
            let field = if place == NO_SEGMENT { 0 } else { place.min(PLACES - 1) + 1 };
            self.len = self.len & !LEN | field;
        } else {
            self.last = place;
        }
    }

    /// Whether a version of the key is in the log or a segment.
    fn held(&self, vector: bool) -> bool {
        self.in_log(vector) || self.last(vector) != NO_SEGMENT
    }

    fn set_flag(&mut self, flag: u32, on: bool) {
        if on {
            self.len |= flag;
        } else {
            self.len &= !flag;
        }
    }

    /// Forgets the key of kind `kind` of its ULID and where its versions
    /// were.
    fn clear(&mut self, kind: u32) {
        let vector = kind == VECTOR_KIND;
        let (in_log, has_older) = Slot::flags(vector);
        self.len &= !(in_log | has_older | kind_bit(kind));
        self.set_last(vector, NO_SEGMENT);
    }
}

/// The keys' bytes: buffers of [`KEY_CHUNK`] bytes filled in turn, never
/// grown past it (so never moved), and the keys they cannot hold; the
/// ULIDs of the keys held by their value, in blocks of [`ULID_BLOCK`].
#[derive(Debug, Clone, Default)]
struct KeyBytes {
    chunks: Vec<String>,
    /// Keys held outside the buffers (see [`NOT_IN_CHUNKS`]), by slot.
    long: FastMap<u32, Box<str>>,
    /// Bytes written in the buffers.
    used: usize,
    /// Of those, bytes of keys no longer held.
    garbage: usize,
    /// ULIDs (big-endian), named by place: block and place in it. A block
    /// is never grown past [`ULID_BLOCK`] (so never moved).
    ulids: Vec<Vec<[u8; 16]>>,
    /// Places in `ulids` of no key, taken first.
    free_ulids: Vec<u32>,
}

impl KeyBytes {
    /// The key held as its bytes by slot `index`.
    fn text(&self, index: u32, slot: &Slot) -> &str {
        if slot.at == NOT_IN_CHUNKS {
            return self.long.get(&index).map_or("", |key| key);
        }
        let start = (slot.at & 0xffff) as usize;
        let end = start + (slot.len & LEN) as usize;
        let key = self.chunks.get((slot.at >> 16) as usize).and_then(|chunk| chunk.get(start..end));
        key.unwrap_or_default()
    }

    /// The ULID at place `at` (zero for a place past them).
    fn ulid(&self, at: u32) -> [u8; 16] {
        let at = at as usize;
        self.ulids
            .get(at / ULID_BLOCK)
            .and_then(|block| block.get(at % ULID_BLOCK))
            .copied()
            .unwrap_or_default()
    }

    /// Stores `key`, held as its bytes by slot `index`; returns the slot's
    /// `at` and `len`.
    fn put(&mut self, index: u32, key: &str) -> (u32, u32) {
        let len = key.len();
        // A key starts below `KEY_CHUNK`, which the offset's 16 bits hold.
        let fits = |chunk: &String| chunk.len() < KEY_CHUNK && chunk.len() + len <= KEY_CHUNK;
        if self.chunks.last().is_none_or(|chunk| !fits(chunk)) && len <= KEY_CHUNK && self.chunks.len() < 1 << 16 {
            // The first buffer grows as keys come (a small store's keys
            // take little room; a buffer may move, as its keys are named
            // by offsets); once one is full, the store is large, and each
            // next one is allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { KEY_CHUNK };
            self.chunks.push(String::with_capacity(capacity));
        }
        let chunk_index = self.chunks.len().wrapping_sub(1);
        match self.chunks.last_mut() {
            Some(chunk) if fits(chunk) && chunk_index < 1 << 16 => {
                if chunk.capacity() - chunk.len() < len {
                    let wanted = (2 * chunk.capacity()).clamp(chunk.len() + len, KEY_CHUNK);
                    chunk.reserve_exact(wanted - chunk.len());
                }
                let start = chunk.len();
                chunk.push_str(key);
                self.used += len;
                ((chunk_index << 16 | start) as u32, len as u32)
            }
            _ => {
                self.long.insert(index, key.into());
                (NOT_IN_CHUNKS, 0)
            }
        }
    }

    /// Puts `ulid` at a free place; returns it. There are never more
    /// places in use than slots, which are fewer than [`VECTOR_ID`]: a
    /// place is always found.
    fn put_ulid(&mut self, ulid: [u8; 16]) -> u32 {
        if let Some(at) = self.free_ulids.pop() {
            let place = at as usize;
            if let Some(place) = self.ulids.get_mut(place / ULID_BLOCK).and_then(|block| block.get_mut(place % ULID_BLOCK)) {
                *place = ulid;
            }
            return at;
        }
        if self.ulids.last().is_none_or(|block| block.len() == ULID_BLOCK) {
            // As the buffers of keys: the first block grows, the next
            // are allocated whole.
            let capacity = if self.ulids.is_empty() { 0 } else { ULID_BLOCK };
            self.ulids.push(Vec::with_capacity(capacity));
        }
        let blocks = self.ulids.len() - 1;
        let Some(block) = self.ulids.last_mut() else {
            return NOT_IN_CHUNKS;
        };
        let at = u32::try_from(blocks * ULID_BLOCK + block.len()).unwrap_or(NOT_IN_CHUNKS);
        if block.len() == block.capacity() {
            let wanted = (2 * block.capacity()).clamp(block.len() + 1, ULID_BLOCK);
            block.reserve_exact(wanted - block.len());
        }
        block.push(ulid);
        at
    }

    /// Forgets the keys slot `index` holds.
    fn free(&mut self, index: u32, slot: &Slot) {
        if slot.by_ulid() {
            self.free_ulids.push(slot.at);
        } else if slot.at == NOT_IN_CHUNKS {
            self.long.remove(&index);
        } else {
            self.garbage += (slot.len & LEN) as usize;
        }
    }
}

/// A key as the map looks it up: by its ULID's value (and kind), or by
/// its bytes.
#[derive(Clone, Copy)]
enum Probe<'a> {
    Ulid(u32, u128),
    Text(&'a str),
}

impl<'a> Probe<'a> {
    fn of(key: &'a str) -> Self {
        match ulid_form(key) {
            Some((kind, value)) => Probe::Ulid(kind, value),
            None => Probe::Text(key),
        }
    }

    /// The id of this key in slot `index`, if the slot holds it.
    fn id(self, slot: &Slot, index: u32) -> Option<KeyId> {
        match self {
            Probe::Text(_) => Some(index),
            Probe::Ulid(kind, _) if slot.has(kind) => Some(if kind == VECTOR_KIND { index | VECTOR_ID } else { index }),
            Probe::Ulid(..) => None,
        }
    }
}

/// Every record key with where its versions are; see the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyMap {
    /// By slot place ([`KeyId`] without [`VECTOR_ID`]).
    slots: Vec<Slot>,
    /// The keys' bytes.
    bytes: KeyBytes,
    /// The places of the slots in use, found by their ULID's value, or
    /// their key's hash.
    table: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Free slots, reused first.
    free: Vec<u32>,
    /// The segments holding an older version of a key, ascending by
    /// number, for the keys whose slot says so (most keys have one
    /// version).
    older: FastMap<KeyId, Older>,
    /// The segment table: the number of the segment at each place, or
    /// `None` for a free place.
    segments: Vec<Option<u64>>,
    /// The place of each segment number in `segments`.
    places: FastMap<u64, u32>,
}

/// The slot place and whether it is the embedding's key, of `id`.
fn split(id: KeyId) -> (u32, bool) {
    (id & !VECTOR_ID, id & VECTOR_ID != 0)
}

/// The hash the table keeps slot `index` by, as [`KeyMap::hash`] hashes a
/// probe.
fn hash_of(hasher: &foldhash::fast::RandomState, slots: &[Slot], bytes: &KeyBytes, index: u32) -> u64 {
    match slots.get(index as usize) {
        Some(slot) if slot.by_ulid() => hasher.hash_one(u128::from_be_bytes(bytes.ulid(slot.at))),
        Some(slot) => hasher.hash_one(bytes.text(index, slot)),
        None => 0,
    }
}

/// Whether slot `index` holds the keys `probe` looks for (those of its
/// ULID, of either kind; or its bytes).
fn is_slot_of(slots: &[Slot], bytes: &KeyBytes, index: u32, probe: Probe<'_>) -> bool {
    slots.get(index as usize).is_some_and(|slot| match probe {
        Probe::Ulid(_, value) => slot.by_ulid() && bytes.ulid(slot.at) == value.to_be_bytes(),
        Probe::Text(key) => !slot.by_ulid() && bytes.text(index, slot) == key,
    })
}

impl KeyMap {
    /// Keys held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids().count()
    }

    /// Room for `additional` more keys of which `pairs` are the memory's
    /// and the embedding's keys of one ULID (one slot for both) without
    /// growing.
    pub(crate) fn reserve(&mut self, additional: usize, pairs: usize) {
        let additional = additional.saturating_sub(pairs);
        let Self {
            slots,
            bytes,
            table,
            hasher,
            ..
        } = self;
        table.reserve(additional, |&index| hash_of(hasher, slots, bytes, index));
        // With room for the writes after the open (`crate::room`).
        room::make_room(slots, slots.len() + additional.saturating_sub(self.free.len()));
    }

    fn hash(&self, probe: Probe<'_>) -> u64 {
        match probe {
            Probe::Ulid(_, value) => self.hasher.hash_one(value),
            Probe::Text(key) => self.hasher.hash_one(key),
        }
    }

    /// The place of the slot holding the keys `probe` looks for, if one
    /// does.
    fn find(&self, hash: u64, probe: Probe<'_>) -> Option<u32> {
        self.table
            .find(hash, |&index| is_slot_of(&self.slots, &self.bytes, index, probe))
            .copied()
    }

    /// The id of `key`, if held.
    pub(crate) fn get(&self, key: &str) -> Option<KeyId> {
        let probe = Probe::of(key);
        let index = self.find(self.hash(probe), probe)?;
        probe.id(self.slots.get(index as usize)?, index)
    }

    /// The key of `id` (empty for an id not held).
    pub(crate) fn key(&self, id: KeyId) -> KeyText<'_> {
        let (index, vector) = split(id);
        let kind = if vector { VECTOR_KIND } else { ITEM_KIND };
        match self.slots.get(index as usize) {
            Some(slot) if slot.by_ulid() && slot.has(kind) => KeyText::write(kind, &self.bytes.ulid(slot.at)),
            Some(slot) if !slot.by_ulid() && !vector => KeyText::Held(self.bytes.text(index, slot)),
            _ => KeyText::Held(""),
        }
    }

    /// The ids of the keys held (in no particular order), with their keys.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (KeyId, KeyText<'_>)> + '_ {
        self.ids().map(|id| (id, self.key(id)))
    }

    /// The ids of the keys held (in no particular order).
    pub(crate) fn ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.table.iter().flat_map(|&index| {
            let slot = self.slots.get(index as usize).copied().unwrap_or(Slot::FREE);
            let first = (!slot.by_ulid() || slot.has(ITEM_KIND)).then_some(index);
            let vector = slot.has(VECTOR_KIND).then_some(index | VECTOR_ID);
            first.into_iter().chain(vector)
        })
    }

    /// The id of `key`, held from now on if it was not (with no version
    /// anywhere yet).
    pub(crate) fn entry(&mut self, key: &str) -> KeyId {
        let probe = Probe::of(key);
        let hash = self.hash(probe);
        if let Some(index) = self.find(hash, probe) {
            let Some(slot) = self.slots.get_mut(index as usize) else {
                return index;
            };
            if let Probe::Ulid(kind, _) = probe {
                // The other key of its ULID is held: this one joins it,
                // with no version yet (as its fields were left cleared).
                slot.len |= kind_bit(kind);
            }
            return probe.id(slot, index).unwrap_or(index);
        }
        let index = match self.free.pop() {
            Some(index) => index,
            // A map of 2^31 slots would need far more memory than a
            // store of memories can take (each key is a record).
            None => u32::try_from(self.slots.len()).unwrap_or(VECTOR_ID - 1).min(VECTOR_ID - 1),
        };
        let (at, len) = match probe {
            Probe::Ulid(kind, value) => (self.bytes.put_ulid(value.to_be_bytes()), kind_bit(kind)),
            Probe::Text(key) => self.bytes.put(index, key),
        };
        let slot = Slot {
            at,
            len,
            last: NO_SEGMENT,
        };
        match self.slots.get_mut(index as usize) {
            Some(free) => *free = slot,
            None => self.slots.push(slot),
        }
        let Self {
            slots,
            bytes,
            table,
            hasher,
            ..
        } = self;
        table.insert_unique(hash, index, |&index| hash_of(hasher, slots, bytes, index));
        probe.id(&slot, index).unwrap_or(index)
    }

    /// Stops holding `key` (and where its versions were).
    pub(crate) fn remove(&mut self, key: &str) {
        let probe = Probe::of(key);
        let hash = self.hash(probe);
        let Some(index) = self.find(hash, probe) else {
            return;
        };
        let Some(slot) = self.slots.get_mut(index as usize) else {
            return;
        };
        let Some(id) = probe.id(slot, index) else {
            return;
        };
        if let Probe::Ulid(kind, _) = probe {
            slot.clear(kind);
        }
        self.older.remove(&id);
        if !slot.by_ulid() {
            // Its last key: the slot is freed.
            let mut freed = *slot;
            if let Probe::Ulid(kind, _) = probe {
                freed.len |= kind_bit(kind);
            }
            *slot = Slot::FREE;
            self.bytes.free(index, &freed);
            self.free.push(index);
            if let Ok(entry) = self.table.find_entry(hash, |&held| held == index) {
                entry.remove();
            }
        }
        self.compact_if_mostly_garbage();
    }

    /// Writes the keys held into new buffers once the bytes of keys no
    /// longer held outweigh them (and a buffer): the buffers stay within
    /// twice the keys' bytes, and each write is paid for by as many bytes
    /// freed.
    fn compact_if_mostly_garbage(&mut self) {
        let KeyBytes { used, garbage, .. } = self.bytes;
        if garbage <= KEY_CHUNK || garbage * 2 <= used {
            return;
        }
        let mut bytes = KeyBytes {
            long: std::mem::take(&mut self.bytes.long),
            ulids: std::mem::take(&mut self.bytes.ulids),
            free_ulids: std::mem::take(&mut self.bytes.free_ulids),
            ..KeyBytes::default()
        };
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.at == NOT_IN_CHUNKS || slot.by_ulid() {
                continue;
            }
            let index = index as u32;
            let (at, len) = bytes.put(index, self.bytes.text(index, slot));
            slot.at = at;
            slot.len = slot.len & !LEN | len;
        }
        self.bytes = bytes;
    }

    /// Whether every key held has a version in the log or a segment (as
    /// [`KeyMap::retain_held`] leaves the map).
    #[cfg(test)]
    pub(crate) fn all_held(&self) -> bool {
        self.ids().all(|id| self.part(id).is_some_and(|(slot, vector)| slot.held(vector)))
    }

    /// The slot of `id` and whether `id` is its embedding's key.
    fn part(&self, id: KeyId) -> Option<(&Slot, bool)> {
        let (index, vector) = split(id);
        self.slots.get(index as usize).map(|slot| (slot, vector))
    }

    /// Whether the newest version of `id` is in the log.
    #[cfg(test)]
    fn in_log(&self, id: KeyId) -> bool {
        self.part(id).is_some_and(|(slot, vector)| slot.in_log(vector))
    }

    /// Marks whether the newest version of `id` is in the log.
    pub(crate) fn set_in_log(&mut self, id: KeyId, in_log: bool) {
        let (index, vector) = split(id);
        if let Some(slot) = self.slots.get_mut(index as usize) {
            slot.set_flag(Slot::flags(vector).0, in_log);
        }
    }

    /// The segment holding the newest version of `id`, unless the log
    /// holds it.
    pub(crate) fn live_segment(&self, id: KeyId) -> Option<u64> {
        let (slot, vector) = self.part(id)?;
        if slot.in_log(vector) {
            None
        } else {
            self.number(slot.last(vector))
        }
    }

    /// [`KeyMap::live_segment`] of `key`, if held.
    pub(crate) fn live_segment_of(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|id| self.live_segment(id))
    }

    /// The segments holding a version of `id`, ascending.
    pub(crate) fn segments(&self, id: KeyId) -> impl Iterator<Item = u64> + '_ {
        let part = self.part(id);
        let older = part
            .filter(|(slot, vector)| slot.has_older(*vector))
            .and_then(|_| self.older.get(&id))
            .map(Older::as_slice)
            .unwrap_or_default();
        let last = part.map_or(NO_SEGMENT, |(slot, vector)| slot.last(vector));
        older
            .iter()
            .copied()
            .chain(Some(last))
            .filter_map(|place| self.number(place))
    }

    /// Adds segment `number`, newer than every segment holding `id`, as
    /// holding a version of it.
    pub(crate) fn push(&mut self, id: KeyId, number: u64) {
        let place = self.place(number);
        let (index, vector) = split(id);
        let Some(slot) = self.slots.get_mut(index as usize) else {
            return;
        };
        let previous = slot.last(vector);
        slot.set_last(vector, place);
        if previous != NO_SEGMENT {
            slot.set_flag(Slot::flags(vector).1, true);
            let held = self.older.remove(&id);
            self.older.insert(id, Older::with(held, previous));
        }
    }

    /// Keeps only the segments `keep` accepts, in every key (a key left
    /// with none is still held: see [`KeyMap::retain_held`]).
    pub(crate) fn retain_segments(&mut self, keep: impl Fn(u64) -> bool) {
        let kept: Vec<bool> = self.segments.iter().map(|n| n.is_some_and(&keep)).collect();
        if kept.iter().zip(&self.segments).all(|(k, n)| *k || n.is_none()) {
            return;
        }
        let is_kept = |place: u32| kept.get(place as usize).copied().unwrap_or(false);
        for (index, slot) in self.slots.iter_mut().enumerate() {
            // A key held as its bytes has no embedding's part: its `len`
            // is its length.
            for vector in [false, true].into_iter().take(1 + usize::from(slot.has(VECTOR_KIND))) {
                let last = slot.last(vector);
                if last == NO_SEGMENT || is_kept(last) && !slot.has_older(vector) {
                    continue;
                }
                let id = if vector { index as KeyId | VECTOR_ID } else { index as KeyId };
                let mut older = if slot.has_older(vector) {
                    self.older.remove(&id).map(Older::into_vec).unwrap_or_default()
                } else {
                    Vec::new()
                };
                older.retain(|&place| is_kept(place));
                if !is_kept(last) {
                    slot.set_last(vector, older.pop().unwrap_or(NO_SEGMENT));
                }
                slot.set_flag(Slot::flags(vector).1, !older.is_empty());
                if let Some(older) = Older::from_vec(older) {
                    self.older.insert(id, older);
                }
            }
        }
        for (place, kept) in kept.into_iter().enumerate() {
            if let (false, Some(number)) = (kept, self.segments[place]) {
                self.places.remove(&number);
                self.segments[place] = None;
            }
        }
    }

    /// Stops holding the keys with no version in the log or a segment.
    pub(crate) fn retain_held(&mut self) {
        let Self {
            slots,
            bytes,
            table,
            free,
            older,
            ..
        } = self;
        table.retain(|&mut index| {
            let Some(slot) = slots.get_mut(index as usize) else {
                return false;
            };
            let before = *slot;
            if slot.by_ulid() {
                for kind in [ITEM_KIND, VECTOR_KIND] {
                    let vector = kind == VECTOR_KIND;
                    if slot.has(kind) && !slot.held(vector) {
                        slot.clear(kind);
                        older.remove(&if vector { index | VECTOR_ID } else { index });
                    }
                }
                if slot.by_ulid() {
                    return true;
                }
            } else if slot.held(false) {
                return true;
            } else {
                older.remove(&index);
            }
            bytes.free(index, &before);
            *slot = Slot::FREE;
            free.push(index);
            false
        });
        self.compact_if_mostly_garbage();
    }

    /// [`KeyMap::retain_held`] for `key` alone: a commit that removes no
    /// segment can leave unheld only the keys it names, and a scan of
    /// every key at each commit grew with the store.
    pub(crate) fn release_if_unheld(&mut self, key: &str) {
        let unheld = self
            .get(key)
            .and_then(|id| self.part(id))
            .is_some_and(|(slot, vector)| !slot.held(vector));
        if unheld {
            self.remove(key);
        }
    }

    /// The place of segment `number` in the segment table, given one if it
    /// has none.
    fn place(&mut self, number: u64) -> u32 {
        if let Some(&place) = self.places.get(&number) {
            return place;
        }
        let place = match self.segments.iter().position(Option::is_none) {
            Some(free) => {
                self.segments[free] = Some(number);
                free
            }
            None => {
                self.segments.push(Some(number));
                self.segments.len() - 1
            }
        };
        // Fewer places than segments a store can name at once (each is
        // at least a record).
        let place = u32::try_from(place).unwrap_or(PLACES - 1).min(PLACES - 1);
        self.places.insert(number, place);
        place
    }

    fn number(&self, place: u32) -> Option<u64> {
        self.segments.get(place as usize).copied().flatten()
    }
}

#[cfg(test)]
mod tests;
