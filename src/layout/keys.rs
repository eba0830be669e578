//! The layout's key map: every record key the segments and the log hold,
//! with where its versions are.
//!
//! A store of 100,000 memories with embeddings has 200,000 keys, held for
//! as long as the store is open. Each key's bytes sit in one of a few large
//! shared buffers ([`KEY_CHUNK`] bytes each, never moved: no allocation
//! per key, and no buffer of every key doubling while a store opens), and
//! its state in a slot of three `u32`s: where its bytes are, their length
//! with two flags, and the segment of its newest version, named by its
//! place in a small segment table rather than by its number; the rare
//! older versions of a key sit in a side map; the hash table holds key
//! ids (`docs/speed.md`, "Heap per memory"). The bytes of a key no longer
//! held stay until they outweigh the keys held, then the buffers are
//! written anew.
//!
//! Most keys are a memory's or an embedding's: `item/` or `vec/` and a
//! ULID of 26 characters. Such a key, when its ULID is the one
//! [`parse_ulid`] reads and [`write_ulid`] writes back (uppercase, at
//! most 128 bits), is held as its prefix (a kind in the slot) and the
//! ULID's 16 bytes, and written out again when asked for ([`KeyText`]);
//! any other key is held as its bytes. Keys are hashed and compared as
//! text, so a key finds itself whichever way it is held. An embedding's
//! key shares the 16 bytes of its memory's key when that is held already
//! (as an open adds them: in key order, `item/` before `vec/`).
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

/// A key's number in its map, stable while the key is in it.
pub(crate) type KeyId = u32;

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

/// In a slot's `len`: the newest version is in the log.
const IN_LOG: u32 = 1 << 31;
/// In a slot's `len`: older versions are in other segments, which `older`
/// lists.
const HAS_OLDER: u32 = 1 << 30;
/// In a slot's `len`: the kind of key, 0 for a key held as its bytes, else
/// one more than the place in [`ULID_PREFIXES`] of its prefix.
const KIND: u32 = 3 << KIND_SHIFT;
const KIND_SHIFT: u32 = 28;
/// In a slot's `len`: the key's ULID is also the one of the key of the
/// same ULID and the other kind, whose slot says so too.
const SHARED: u32 = 1 << 27;
/// In a slot's `len`: the length of a key held as its bytes.
const LEN: u32 = SHARED - 1;

/// The prefixes of the keys held by their ULID's value.
const ULID_PREFIXES: [&str; 2] = [ITEM_PREFIX, VECTOR_PREFIX];
/// The kinds of a memory's key and of its embedding's.
const ITEM_KIND: u32 = 1;
const VECTOR_KIND: u32 = 2;

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

/// The kind (see [`KIND`]) and ULID value of a key held by its ULID's
/// value, or `None` for a key held as its bytes.
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
    /// The key of kind `kind` (see [`KIND`], not 0) whose ULID is `ulid`
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
    /// bits) and where they start in it (low 16 bits); for a key held by
    /// its ULID, the ULID's place; or [`NOT_IN_CHUNKS`].
    at: u32,
    /// The key's length ([`LEN`]) with the flags [`IN_LOG`] and
    /// [`HAS_OLDER`].
    len: u32,
    /// The place in the segment table of the segment holding the newest
    /// version a segment holds, or [`NO_SEGMENT`].
    last: u32,
}

impl Slot {
    const FREE: Slot = Slot {
        at: NOT_IN_CHUNKS,
        len: 0,
        last: NO_SEGMENT,
    };

    /// Whether a version of its key is in the log or a segment.
    fn held(&self) -> bool {
        self.in_log() || self.last != NO_SEGMENT
    }

    fn in_log(&self) -> bool {
        self.len & IN_LOG != 0
    }

    fn has_older(&self) -> bool {
        self.len & HAS_OLDER != 0
    }

    /// See [`KIND`].
    fn kind(&self) -> u32 {
        (self.len & KIND) >> KIND_SHIFT
    }

    fn set_flag(&mut self, flag: u32, on: bool) {
        if on {
            self.len |= flag;
        } else {
            self.len &= !flag;
        }
    }
}

/// The keys' bytes: buffers of [`KEY_CHUNK`] bytes filled in turn, never
/// grown past it (so never moved), and the keys they cannot hold; the
/// ULIDs of the keys held by their value, in blocks of [`ULID_BLOCK`].
#[derive(Debug, Clone, Default)]
struct KeyBytes {
    chunks: Vec<String>,
    /// Keys held outside the buffers (see [`NOT_IN_CHUNKS`]), by id.
    long: FastMap<KeyId, Box<str>>,
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
    /// The key `slot` of `id` names.
    fn get(&self, id: KeyId, slot: &Slot) -> KeyText<'_> {
        if slot.at == NOT_IN_CHUNKS {
            return KeyText::Held(self.long.get(&id).map_or("", |key| key));
        }
        match slot.kind() {
            0 => {
                let start = (slot.at & 0xffff) as usize;
                let end = start + (slot.len & LEN) as usize;
                let key = self.chunks.get((slot.at >> 16) as usize).and_then(|chunk| chunk.get(start..end));
                KeyText::Held(key.unwrap_or_default())
            }
            kind => KeyText::write(kind, &self.ulid(slot.at)),
        }
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

    /// Whether the key `slot` of `id` names is `key`, compared without
    /// writing the held key out.
    fn is(&self, id: KeyId, slot: &Slot, key: &str) -> bool {
        match ULID_PREFIXES.get((slot.kind() as usize).wrapping_sub(1)) {
            _ if slot.at == NOT_IN_CHUNKS => self.long.get(&id).is_some_and(|held| **held == *key),
            None => *self.get(id, slot) == *key,
            Some(prefix) => key
                .strip_prefix(prefix)
                .and_then(parse_ulid)
                .is_some_and(|value| self.ulid(slot.at) == value.to_be_bytes()),
        }
    }

    /// Stores `key` of `id`, whose [`ulid_form`] is `form`; returns the
    /// slot's `at` and `len` (no flag but the kind).
    fn put(&mut self, id: KeyId, key: &str, form: Option<(u32, u128)>) -> (u32, u32) {
        if let Some((kind, value)) = form {
            if let Some(at) = self.put_ulid(value.to_be_bytes()) {
                return (at, kind << KIND_SHIFT);
            }
        }
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
        let index = self.chunks.len().wrapping_sub(1);
        match self.chunks.last_mut() {
            Some(chunk) if fits(chunk) && index < 1 << 16 => {
                if chunk.capacity() - chunk.len() < len {
                    let wanted = (2 * chunk.capacity()).clamp(chunk.len() + len, KEY_CHUNK);
                    chunk.reserve_exact(wanted - chunk.len());
                }
                let start = chunk.len();
                chunk.push_str(key);
                self.used += len;
                ((index << 16 | start) as u32, len as u32)
            }
            _ => {
                self.long.insert(id, key.into());
                (NOT_IN_CHUNKS, 0)
            }
        }
    }

    /// Puts `ulid` at a free place, if there is one below
    /// [`NOT_IN_CHUNKS`]; returns it.
    fn put_ulid(&mut self, ulid: [u8; 16]) -> Option<u32> {
        if let Some(at) = self.free_ulids.pop() {
            let at = at as usize;
            if let Some(place) = self.ulids.get_mut(at / ULID_BLOCK).and_then(|block| block.get_mut(at % ULID_BLOCK)) {
                *place = ulid;
            }
            return u32::try_from(at).ok();
        }
        if self.ulids.last().is_none_or(|block| block.len() == ULID_BLOCK) {
            // As the buffers of keys: the first block grows, the next
            // are allocated whole.
            let capacity = if self.ulids.is_empty() { 0 } else { ULID_BLOCK };
            self.ulids.push(Vec::with_capacity(capacity));
        }
        let blocks = self.ulids.len() - 1;
        let block = self.ulids.last_mut()?;
        let at = u32::try_from(blocks * ULID_BLOCK + block.len()).ok().filter(|&at| at != NOT_IN_CHUNKS)?;
        if block.len() == block.capacity() {
            let wanted = (2 * block.capacity()).clamp(block.len() + 1, ULID_BLOCK);
            block.reserve_exact(wanted - block.len());
        }
        block.push(ulid);
        Some(at)
    }

    /// Forgets the key `slot` of `id` names (whose bytes no other key
    /// shares).
    fn free(&mut self, id: KeyId, slot: &Slot) {
        if slot.at == NOT_IN_CHUNKS {
            self.long.remove(&id);
        } else if slot.kind() != 0 {
            self.free_ulids.push(slot.at);
        } else {
            self.garbage += (slot.len & LEN) as usize;
        }
    }
}

/// Every record key with where its versions are; see the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyMap {
    /// By key id.
    slots: Vec<Slot>,
    /// The keys' bytes.
    bytes: KeyBytes,
    /// The ids of the keys held, found by their key's hash.
    table: HashTable<KeyId>,
    hasher: foldhash::fast::RandomState,
    /// Free slots, reused first.
    free: Vec<KeyId>,
    /// The segments holding an older version of a key, ascending by
    /// number, for the keys whose slot says so (most keys have one
    /// version).
    older: FastMap<KeyId, Vec<u32>>,
    /// The segment table: the number of the segment at each place, or
    /// `None` for a free place.
    segments: Vec<Option<u64>>,
    /// The place of each segment number in `segments`.
    places: FastMap<u64, u32>,
}

/// The key of slot `id` (empty for a free slot or an id past them).
fn key_of<'a>(slots: &[Slot], bytes: &'a KeyBytes, id: KeyId) -> KeyText<'a> {
    slots.get(id as usize).map_or(KeyText::Held(""), |slot| bytes.get(id, slot))
}

/// Whether slot `id` holds `key`.
fn is_key(slots: &[Slot], bytes: &KeyBytes, id: KeyId, key: &str) -> bool {
    slots.get(id as usize).is_some_and(|slot| bytes.is(id, slot, key))
}

/// The hash of the key of slot `id`, as [`KeyMap::get`] hashes a key.
fn hash_of(hasher: &foldhash::fast::RandomState, slots: &[Slot], bytes: &KeyBytes, id: KeyId) -> u64 {
    hasher.hash_one(&*key_of(slots, bytes, id))
}

impl KeyMap {
    /// Keys held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }

    /// Room for `additional` more keys without growing.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let Self {
            slots,
            bytes,
            table,
            hasher,
            ..
        } = self;
        table.reserve(additional, |&id| hash_of(hasher, slots, bytes, id));
        slots.reserve(additional.saturating_sub(self.free.len()));
    }

    /// The id of `key`, if held.
    pub(crate) fn get(&self, key: &str) -> Option<KeyId> {
        let hash = self.hasher.hash_one(key);
        self.table
            .find(hash, |&id| is_key(&self.slots, &self.bytes, id, key))
            .copied()
    }

    /// The key of `id` (empty for an id not held).
    pub(crate) fn key(&self, id: KeyId) -> KeyText<'_> {
        key_of(&self.slots, &self.bytes, id)
    }

    /// The ids of the keys held (in no particular order), with their keys.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (KeyId, KeyText<'_>)> + '_ {
        self.table.iter().map(|&id| (id, self.key(id)))
    }

    /// The ids of the keys held (in no particular order).
    pub(crate) fn ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.table.iter().copied()
    }

    /// The id of `key`, held from now on if it was not (with no version
    /// anywhere yet).
    pub(crate) fn entry(&mut self, key: &str) -> KeyId {
        let hash = self.hasher.hash_one(key);
        if let Some(&id) = self.table.find(hash, |&id| is_key(&self.slots, &self.bytes, id, key)) {
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            // A map of 2^32 keys would need far more memory than a
            // store of memories can take (each key is a record).
            None => KeyId::try_from(self.slots.len()).unwrap_or(KeyId::MAX),
        };
        let form = ulid_form(key);
        let memory = match form {
            Some((VECTOR_KIND, value)) => self.by_value(ITEM_KIND, value),
            _ => None,
        };
        let (at, len) = match memory.and_then(|memory| self.slots.get_mut(memory as usize)) {
            Some(memory) => {
                memory.len |= SHARED;
                (memory.at, VECTOR_KIND << KIND_SHIFT | SHARED)
            }
            None => self.bytes.put(id, key, form),
        };
        let slot = Slot {
            at,
            len,
            last: NO_SEGMENT,
        };
        match self.slots.get_mut(id as usize) {
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
        table.insert_unique(hash, id, |&id| hash_of(hasher, slots, bytes, id));
        id
    }

    /// The id of the key held by its ULID's value, of kind `kind` and
    /// ULID `value`, if held.
    fn by_value(&self, kind: u32, value: u128) -> Option<KeyId> {
        let ulid = value.to_be_bytes();
        let hash = self.hasher.hash_one(&*KeyText::write(kind, &ulid));
        let is = |id: KeyId| {
            self.slots
                .get(id as usize)
                .is_some_and(|slot| slot.at != NOT_IN_CHUNKS && slot.kind() == kind && self.bytes.ulid(slot.at) == ulid)
        };
        self.table.find(hash, |&id| is(id)).copied()
    }

    /// Stops holding `key` (and where its versions were).
    pub(crate) fn remove(&mut self, key: &str) {
        if let Some(id) = self.get(key) {
            // Released while its partner (if it shares bytes) is found.
            self.release(id);
            let hash = self.hasher.hash_one(key);
            if let Ok(entry) = self.table.find_entry(hash, |&held| held == id) {
                entry.remove();
            }
        }
        self.compact_if_mostly_garbage();
    }

    /// Frees slot `id`, still in the table; a key sharing its bytes keeps
    /// them alone.
    fn release(&mut self, id: KeyId) {
        let Some(&slot) = self.slots.get(id as usize) else {
            return;
        };
        let partner = (slot.len & SHARED != 0)
            .then(|| {
                let value = u128::from_be_bytes(self.bytes.ulid(slot.at));
                self.by_value(ITEM_KIND + VECTOR_KIND - slot.kind(), value)
            })
            .flatten()
            .and_then(|partner| self.slots.get_mut(partner as usize))
            .filter(|partner| partner.at == slot.at && partner.len & SHARED != 0);
        match partner {
            Some(partner) => partner.len &= !SHARED,
            None => self.bytes.free(id, &slot),
        }
        if let Some(slot) = self.slots.get_mut(id as usize) {
            *slot = Slot::FREE;
        }
        self.older.remove(&id);
        self.free.push(id);
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
        for (id, slot) in self.slots.iter_mut().enumerate() {
            if slot.at == NOT_IN_CHUNKS || slot.kind() != 0 {
                continue;
            }
            let id = id as KeyId;
            let (at, len) = bytes.put(id, &self.bytes.get(id, slot), None);
            slot.at = at;
            slot.len = slot.len & !LEN | len;
        }
        self.bytes = bytes;
    }

    /// Whether every key held has a version in the log or a segment (as
    /// [`KeyMap::retain_held`] leaves the map).
    #[cfg(test)]
    pub(crate) fn all_held(&self) -> bool {
        self.table.iter().all(|&id| self.slots[id as usize].held())
    }

    /// Whether the newest version of `id` is in the log.
    #[cfg(test)]
    fn in_log(&self, id: KeyId) -> bool {
        self.slots.get(id as usize).is_some_and(Slot::in_log)
    }

    /// Marks whether the newest version of `id` is in the log.
    pub(crate) fn set_in_log(&mut self, id: KeyId, in_log: bool) {
        if let Some(slot) = self.slots.get_mut(id as usize) {
            slot.set_flag(IN_LOG, in_log);
        }
    }

    /// The segment holding the newest version of `id`, unless the log
    /// holds it.
    pub(crate) fn live_segment(&self, id: KeyId) -> Option<u64> {
        let slot = self.slots.get(id as usize)?;
        if slot.in_log() {
            None
        } else {
            self.number(slot.last)
        }
    }

    /// [`KeyMap::live_segment`] of `key`, if held.
    pub(crate) fn live_segment_of(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|id| self.live_segment(id))
    }

    /// The segments holding a version of `id`, ascending.
    pub(crate) fn segments(&self, id: KeyId) -> impl Iterator<Item = u64> + '_ {
        let slot = self.slots.get(id as usize);
        let older = slot
            .filter(|slot| slot.has_older())
            .and_then(|_| self.older.get(&id))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let last = slot.map_or(NO_SEGMENT, |slot| slot.last);
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
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return;
        };
        let previous = std::mem::replace(&mut slot.last, place);
        if previous != NO_SEGMENT {
            slot.set_flag(HAS_OLDER, true);
            self.older.entry(id).or_default().push(previous);
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
        for (id, slot) in self.slots.iter_mut().enumerate() {
            if slot.last == NO_SEGMENT || is_kept(slot.last) && !slot.has_older() {
                continue;
            }
            let id = id as KeyId;
            let mut older = if slot.has_older() {
                self.older.remove(&id).unwrap_or_default()
            } else {
                Vec::new()
            };
            older.retain(|&place| is_kept(place));
            if !is_kept(slot.last) {
                slot.last = older.pop().unwrap_or(NO_SEGMENT);
            }
            slot.set_flag(HAS_OLDER, !older.is_empty());
            if !older.is_empty() {
                self.older.insert(id, older);
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
        let slots = &self.slots;
        let gone: Vec<KeyId> = self.table.iter().copied().filter(|&id| !slots[id as usize].held()).collect();
        // Released while in the table, so that each finds its partner (a
        // freed slot is not held).
        for id in gone {
            self.release(id);
        }
        let slots = &self.slots;
        self.table.retain(|&mut id| slots[id as usize].held());
        self.compact_if_mostly_garbage();
    }

    /// [`KeyMap::retain_held`] for `key` alone: a commit that removes no
    /// segment can leave unheld only the keys it names, and a scan of
    /// every key at each commit grew with the store.
    pub(crate) fn release_if_unheld(&mut self, key: &str) {
        let unheld = self
            .get(key)
            .and_then(|id| self.slots.get(id as usize))
            .is_some_and(|slot| !slot.held());
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
        let place = u32::try_from(place).unwrap_or(NO_SEGMENT - 1);
        self.places.insert(number, place);
        place
    }

    fn number(&self, place: u32) -> Option<u64> {
        self.segments.get(place as usize).copied().flatten()
    }
}

#[cfg(test)]
mod tests;
