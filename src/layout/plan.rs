//! Preparing a commit of the segmented layout ([`Layout::plan`]): the
//! records a write changed go to the log or to new segments, with this
//! commit's share of compaction; [`Layout::apply`] makes a committed plan
//! the layout's state.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::format::{self, encode_manifest, encode_records, encode_segment, records_of, segment_key, Header, SegmentRef};
use super::catalog::{CatalogRow, CatalogWriter};
use super::held::HeldRow;
use super::keys::{KeyMap, KeyText};
use super::{
    catalog, Layout, Segment, DIRECT_BYTES, LOG_BYTES, LOG_FRAMES, MERGE_FANIN,
    SEGMENT_BYTES, TIER_BASE,
};
use crate::codec;
use crate::engine::{Change, Changes, Engine, HeldMemory};
use crate::fast_hash::{FastMap, FastSet};
use crate::index::bm25::TermCounts;
use crate::item::MemoryItem;
use crate::keys::{ITEM_PREFIX, MANIFEST_KEY};
use crate::storage::Batch;

/// A commit prepared by [`Layout::plan`]: the batch to commit, the
/// manifest it writes, and how the layout changes once it has committed.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) batch: Batch,
    pub(crate) manifest: Vec<u8>,
    update: Update,
}

#[derive(Debug, Default)]
struct Update {
    removed: Vec<u64>,
    added: Vec<(SegmentRef, Vec<String>)>,
    log: Vec<Vec<u8>>,
    log_keys: FastSet<String>,
    erased: Vec<String>,
    next_segment: u64,
}

impl Plan {
    /// Once this plan is committed: the memories its new segments hold as
    /// rows become held by those rows in `engine` ([`Engine::hold`]), in
    /// place of the decoded memories the writes left.
    pub(crate) fn hold_rows(&self, engine: &mut Engine) {
        for (info, _) in &self.update.added {
            let key = segment_key(info.number);
            let value = self.batch.ops().find(|(k, _)| *k == key).and_then(|(_, value)| value);
            // The plan encoded the segment: it decodes.
            let Some(rows) = value.and_then(|bytes| format::written_rows(bytes).ok()) else {
                continue;
            };
            for (key, row) in rows {
                let id = key.strip_prefix(ITEM_PREFIX.as_bytes()).and_then(|id| std::str::from_utf8(id).ok());
                if let (Some(id), CatalogRow::Held(row)) = (id, row) {
                    engine.hold(id, Box::new(row));
                }
            }
        }
    }
}

impl Layout {
    /// The commit that stores every record of `engine` afresh (a migrated
    /// store).
    pub(super) fn plan_all(&self, engine: &Engine) -> Plan {
        let held = Changes::held(engine);
        self.plan(&Changes::all(engine, &held), engine)
    }

    /// Prepares the commit of `changed` (the records a write changed, from
    /// [`Engine::batch_for`]; `engine` holds the state after it), with this
    /// commit's share of compaction. See the module documentation.
    pub(crate) fn plan(&self, changed: &Changes<'_>, engine: &Engine) -> Plan {
        let mut touched: FastSet<&str> = FastSet::default();
        let mut puts: Vec<(&str, Input)> = Vec::new();
        let mut rewrite: BTreeSet<u64> = BTreeSet::new();
        let mut erased = Vec::new();
        for (key, change) in changed.iter() {
            touched.insert(key);
            // A deleted record, and a replaced text with its embedding, are
            // erased: the segments holding an earlier version are rewritten
            // without it (the log's are dropped below).
            let erases = matches!(change, Change::Delete) || changed.replaces_text(key);
            let stored = if erases { self.keys.get(key) } else { None };
            if let Some(id) = stored {
                rewrite.extend(self.keys.segments(id));
            }
            match change {
                Change::Memory(item, terms) => puts.push((key, Input::Memory(Stored::Decoded(item), *terms))),
                Change::Record(record) => puts.push((key, Input::Record(record))),
                Change::Delete if stored.is_some() => erased.push(key.to_string()),
                Change::Delete => {}
            }
        }
        // The log without the versions this commit supersedes or erases.
        // A commit that names no key of the log (most single ingests)
        // keeps every frame as it is, without reading them.
        let touches_log = touched.iter().any(|key| self.log_keys.contains(*key));
        let mut log: Vec<Vec<u8>> = Vec::with_capacity(self.log.len() + 1);
        for frame in &self.log {
            if !touches_log {
                log.push(frame.clone());
                continue;
            }
            let records = records_of(frame).unwrap_or_default();
            let kept: Vec<(&str, &[u8])> = records
                .iter()
                .copied()
                .filter(|(k, _)| !touched.contains(k))
                .collect();
            if kept.len() == records.len() {
                log.push(frame.clone());
            } else if !kept.is_empty() {
                log.push(encode_records(&kept));
            }
        }
        if let Some(merge) = self.merge_candidate(&touched, &rewrite) {
            rewrite.extend(merge);
        }
        // The keys of the live records of the segments rewritten, written
        // out (`KeyText`) before `fresh` borrows them.
        let rewritten: Vec<KeyText> = if rewrite.is_empty() {
            Vec::new()
        } else {
            self.keys
                .iter()
                .filter(|&(id, ref key)| {
                    self.keys.live_segment(id).is_some_and(|n| rewrite.contains(&n)) && !touched.contains(&**key)
                })
                .map(|(_, key)| key)
                .collect()
        };
        // Their memories, before `fresh` borrows them: a memory held as a
        // row is written again from the row, undecoded
        // (`CatalogWriter::push_held`); another is the engine's, borrowed
        // (or decoded for this plan, not kept: `Entry::item`) and boxed:
        // the list, sized once, holds a key and a pointer per memory (a
        // merge of segments at 100,000 memories grew a list of memories
        // held inline to 4.8 MiB; `docs/speed.md`, "Fourteenth session").
        let memory_keys = rewritten.iter().filter(|key| key.starts_with(ITEM_PREFIX));
        let mut rewritten_memories: Vec<(&str, Rewritten<'_>)> = Vec::with_capacity(memory_keys.clone().count());
        rewritten_memories.extend(memory_keys.filter_map(|key| {
            let key: &str = key;
            let id = key.strip_prefix(ITEM_PREFIX)?;
            let held = engine.held_row(id).and_then(|row| row.as_any().downcast_ref::<HeldRow>());
            let memory = match held {
                Some(row) => Rewritten::Held(row),
                None => Rewritten::Decoded(Box::new(engine.get(id).ok()?)),
            };
            Some((key, memory))
        }));
        // New segments' records, sorted by key once all are in (below). A
        // memory's JSON record is made only for the log, or if its catalog
        // row does not give it back.
        let mut fresh: Vec<(&str, Input)> = Vec::new();
        // A write's bytes are counted until they pass the threshold: one
        // past it goes to segments whatever its size.
        let mut put_bytes = 0;
        let direct = puts.iter().any(|(key, input)| {
            put_bytes += input.frame_len(key);
            put_bytes > DIRECT_BYTES
        });
        let mut logged: Vec<&str> = Vec::new();
        if direct {
            fresh.extend(puts);
        } else if !puts.is_empty() {
            logged.extend(puts.iter().map(|(key, _)| *key));
            let encoded: Vec<(&str, Cow<[u8]>)> =
                puts.iter().map(|(key, input)| (*key, input.bytes())).collect();
            let records: Vec<(&str, &[u8])> = encoded.iter().map(|(k, v)| (*k, &**v)).collect();
            log.push(encode_records(&records));
        }
        let log_bytes: usize = log.iter().map(Vec::len).sum();
        let folded: Vec<Vec<u8>> = if log_bytes > LOG_BYTES || log.len() > LOG_FRAMES {
            std::mem::take(&mut log)
        } else {
            Vec::new()
        };
        for frame in &folded {
            for (key, record) in records_of(frame).unwrap_or_default() {
                fresh.push((key, Input::Record(record)));
            }
        }
        // The keys of the log: those it held that this commit did not
        // name, and this commit's own, unless it was folded (every frame
        // is a checked one: read by the open, or encoded here).
        let mut log_keys = FastSet::default();
        if !log.is_empty() {
            log_keys.extend(
                self.log_keys
                    .iter()
                    .filter(|key| !touched.contains(key.as_str()))
                    .cloned(),
            );
            log_keys.extend(logged.iter().map(|key| key.to_string()));
        }
        // The live records of the segments rewritten, as the engine holds
        // them (the newest version of a key live in a segment is the
        // engine's).
        for (key, memory) in &rewritten_memories {
            let input = match memory {
                Rewritten::Held(row) => Input::Memory(Stored::Held(row), None),
                Rewritten::Decoded(item) => Input::Memory(Stored::Decoded(item), None),
            };
            fresh.push((key, input));
        }
        for key in &rewritten {
            let key: &str = key;
            if !key.starts_with(ITEM_PREFIX) {
                if let Some(record) = engine.record(key) {
                    fresh.push((key, Input::Encoded(record)));
                }
            }
        }
        let mut batch = Batch::new();
        // A deleted record or a replaced text may live in a value this
        // commit only overwrites (the manifest's log, a segment written
        // anew): the backend must not keep the old bytes.
        if changed.erases() {
            batch.mark_erasing();
        }
        let mut update = Update {
            removed: rewrite.iter().copied().collect(),
            log_keys,
            erased,
            next_segment: self.next_segment,
            ..Update::default()
        };
        // In key order, each key once (a segment's frame holds a key
        // once): its last version added, the newest. The sources above
        // hold disjoint keys (a key of the log is live in no segment, and
        // a rewritten segment's keys leave out those this commit names);
        // the sort is stable, and most of the list comes in sorted runs.
        fresh.sort_by_key(|(key, _)| *key);
        fresh.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        // The memories of records given as bytes (a folded log's), as
        // the engine holds them, for their catalog rows: boxed, as few
        // records are (a slot per record holding a memory inline took
        // 2.9 MiB for a merge at 100,000, nearly all of it empty).
        let recorded: Vec<Option<Box<Cow<'_, MemoryItem>>>> = fresh
            .iter()
            .map(|(key, input)| match input {
                Input::Record(_) => key
                    .strip_prefix(ITEM_PREFIX)
                    .and_then(|id| engine.get(id).ok())
                    .map(Box::new),
                _ => None,
            })
            .collect();
        let mut segment = SegmentWriter::default();
        for ((key, input), memory) in fresh.into_iter().zip(&recorded) {
            let fresh = Fresh::new(key, input, memory.as_deref().map(|memory| &**memory), engine);
            if let Some(full) = segment.add(fresh) {
                full.write(&mut batch, &mut update);
            }
        }
        if !segment.records.is_empty() {
            segment.write(&mut batch, &mut update);
        }
        for number in &update.removed {
            batch.delete(segment_key(*number));
        }
        let mut segments: Vec<SegmentRef> = self
            .segments
            .values()
            .filter(|s| !rewrite.contains(&s.info.number))
            .map(|s| s.info)
            .collect();
        segments.extend(update.added.iter().map(|(info, _)| *info));
        let header = Header::new(engine.summary(), update.next_segment, segments);
        let manifest = encode_manifest(&header, &log);
        batch.put(MANIFEST_KEY, manifest.clone());
        update.log = log;
        Plan {
            batch,
            manifest,
            update,
        }
    }

    /// The segments this commit merges, if any: the one with the most
    /// shadowed versions when they outnumber its live records, else the
    /// oldest [`MERGE_FANIN`] small segments of the smallest tier that has
    /// that many. Segments already rewritten are left out.
    fn merge_candidate(&self, touched: &FastSet<&str>, rewrite: &BTreeSet<u64>) -> Option<Vec<u64>> {
        // Live records this commit takes out of each segment.
        let mut leaving: FastMap<u64, u32> = FastMap::default();
        for key in touched {
            if let Some(n) = self.keys.live_segment_of(key) {
                *leaving.entry(n).or_default() += 1;
            }
        }
        let candidates = self
            .segments
            .values()
            .filter(|s| !rewrite.contains(&s.info.number));
        let mut most_dead: Option<(u32, u64)> = None;
        let mut tiers: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for segment in candidates {
            let n = segment.info.number;
            let live = segment.live.saturating_sub(leaving.get(&n).copied().unwrap_or(0));
            let dead = segment.info.records.saturating_sub(live);
            if dead > live && most_dead.is_none_or(|(d, _)| dead > d) {
                most_dead = Some((dead, n));
            }
            if segment.info.bytes < (SEGMENT_BYTES / 2) as u64 {
                tiers.entry(tier(segment.info.bytes)).or_default().push(n);
            }
        }
        if let Some((_, n)) = most_dead {
            return Some(vec![n]);
        }
        let merge = tiers
            .into_values()
            .find(|numbers| numbers.len() >= MERGE_FANIN)
            .map(|numbers| numbers[..MERGE_FANIN].to_vec());
        // Else the oldest segment of an older format: a store written
        // before lexical or catalog parts gains them a segment per commit.
        merge.or_else(|| {
            self.segments
                .values()
                .find(|s| !s.current && !rewrite.contains(&s.info.number))
                .map(|s| vec![s.info.number])
        })
    }

    /// Makes a committed plan the layout's state.
    pub(crate) fn apply(&mut self, plan: Plan) {
        let update = plan.update;
        let removed: FastSet<u64> = update.removed.iter().copied().collect();
        // Keys whose newest version may move, with where it was.
        let mut moved: FastMap<String, Option<u64>> = FastMap::default();
        let mut note = |keys: &KeyMap, key: &str| {
            if !moved.contains_key(key) {
                let was = keys.live_segment_of(key);
                moved.insert(key.to_string(), was);
            }
        };
        for key in update.erased.iter().chain(&self.log_keys).chain(&update.log_keys) {
            note(&self.keys, key);
        }
        for (_, keys) in &update.added {
            for key in keys {
                note(&self.keys, key);
            }
        }
        if !removed.is_empty() {
            self.keys.retain_segments(|n| !removed.contains(&n));
            for n in &removed {
                self.segments.remove(n);
            }
        }
        for key in &update.erased {
            self.keys.remove(key);
        }
        for key in self.log_keys.drain() {
            if let Some(id) = self.keys.get(&key) {
                self.keys.set_in_log(id, false);
            }
        }
        for key in &update.log_keys {
            let id = self.keys.entry(key);
            self.keys.set_in_log(id, true);
        }
        for (info, keys) in &update.added {
            let segment = Segment {
                info: *info,
                live: 0,
                current: true,
            };
            self.segments.insert(info.number, segment);
            for key in keys {
                let id = self.keys.entry(key);
                self.keys.push(id, info.number);
            }
        }
        for (key, was) in moved {
            let now = self.keys.live_segment_of(&key);
            // Without a segment removed, only a key this commit names can
            // have lost its last version (erased, or out of the log).
            if removed.is_empty() {
                self.keys.release_if_unheld(&key);
            }
            if was == now {
                continue;
            }
            if let Some(segment) = was.and_then(|n| self.segments.get_mut(&n)) {
                segment.live = segment.live.saturating_sub(1);
            }
            if let Some(segment) = now.and_then(|n| self.segments.get_mut(&n)) {
                segment.live += 1;
            }
        }
        if !removed.is_empty() {
            self.keys.retain_held();
        }
        self.log = update.log;
        self.log_keys = update.log_keys;
        self.next_segment = update.next_segment;
    }
}

/// The size tier of a small segment.
fn tier(bytes: u64) -> u32 {
    let mut tier = 0;
    let mut bound = TIER_BASE;
    while bytes >= bound {
        tier += 1;
        bound = bound.saturating_mul(4);
    }
    tier
}

/// A record a commit writes to a new segment, with what its memory (if it
/// is one that `engine` holds) puts in the segment's parts: its catalog
/// row and its terms as the lexical index holds them (the engine holds
/// every record a commit writes, as the commit leaves it).
struct Fresh<'a> {
    key: &'a str,
    record: Body<'a>,
    memory: Option<Stored<'a>>,
    terms: Option<Vec<(&'a str, u32)>>,
}

impl<'a> Fresh<'a> {
    /// The record of `key`, from `input`. A memory's terms are those
    /// ingest counted when it did, else those the lexical index holds.
    /// `memory` is the engine's memory of a record given as bytes.
    fn new(key: &'a str, input: Input<'a>, memory: Option<&'a MemoryItem>, engine: &'a Engine) -> Self {
        let id = key.strip_prefix(ITEM_PREFIX);
        let (record, memory, counted) = match input {
            Input::Memory(memory, counted) => (Body::Memory(memory), Some(memory), counted),
            Input::Record(bytes) => (Body::Record(Cow::Borrowed(bytes)), memory.map(Stored::Decoded), None),
            Input::Encoded(bytes) => (Body::Record(Cow::Owned(bytes)), None, None),
        };
        let terms = match counted {
            // The lexical index keeps a frequency in 16 bits
            // (`Bm25Index::insert_counts`): the part holds what it holds.
            Some(counts) => {
                let mut terms = Vec::with_capacity(counts.len());
                terms.extend(
                    counts
                        .iter()
                        .map(|(term, frequency)| (term, frequency.min(u32::from(u16::MAX)))),
                );
                Some(terms)
            }
            None => memory.and(id).and_then(|id| engine.term_counts(id)),
        };
        Fresh {
            key,
            record,
            memory,
            terms,
        }
    }

    /// Bytes its doc takes in a lexical part, at most: each term its
    /// bytes and length in the dictionary (written as if alone: terms it
    /// shares with other docs are counted whole), its index step and
    /// frequency in the doc (varints of at most five bytes each, two or
    /// three in practice).
    fn terms_len(&self) -> usize {
        self.terms
            .as_ref()
            .map(|terms| terms.iter().map(|(term, _)| term.len() + 1 + 4).sum::<usize>() + 8)
            .unwrap_or(0)
    }
}

/// A record a commit stores, as the plan finds it.
enum Input<'a> {
    /// A memory the engine holds (decoded, or as its row in a segment
    /// being rewritten), with its terms as ingest counted them when this
    /// commit's write did.
    Memory(Stored<'a>, Option<&'a TermCounts>),
    /// A record as a change or the log holds it.
    Record(&'a [u8]),
    /// A record the engine encoded for this plan (an embedding or a file
    /// of a segment rewritten).
    Encoded(Vec<u8>),
}

impl Input<'_> {
    /// Bytes it takes in a frame of records, a memory's JSON record
    /// counted without making it.
    fn frame_len(&self, key: &str) -> usize {
        let len = match self {
            Input::Memory(memory, _) => memory.record_len(),
            Input::Record(bytes) => bytes.len(),
            Input::Encoded(bytes) => bytes.len(),
        };
        record_len(key, len)
    }

    /// Its record's bytes.
    fn bytes(&self) -> Cow<'_, [u8]> {
        match self {
            Input::Memory(memory, _) => Cow::Owned(memory.record()),
            Input::Record(bytes) => Cow::Borrowed(bytes),
            Input::Encoded(bytes) => Cow::Borrowed(bytes),
        }
    }
}

/// The record a new segment holds for a key, unless a catalog row stands
/// for it.
enum Body<'a> {
    Record(Cow<'a, [u8]>),
    /// A memory the engine holds, whose JSON record is made only if its
    /// row does not give it back.
    Memory(Stored<'a>),
}

impl<'a> Body<'a> {
    /// The record's bytes.
    fn into_bytes(self) -> Cow<'a, [u8]> {
        match self {
            Body::Record(bytes) => bytes,
            Body::Memory(memory) => Cow::Owned(memory.record()),
        }
    }
}

/// A memory of a segment being rewritten, as the engine holds it.
enum Rewritten<'a> {
    /// Its row, written again as it is.
    Held(&'a HeldRow),
    /// The memory, the engine's or decoded for this plan.
    Decoded(Box<Cow<'a, MemoryItem>>),
}

/// A memory a new segment holds, as the engine holds it.
#[derive(Clone, Copy)]
enum Stored<'a> {
    Decoded(&'a MemoryItem),
    /// Its row in a segment this commit rewrites.
    Held(&'a HeldRow),
}

impl<'a> Stored<'a> {
    /// Its row added to `catalog` ([`CatalogWriter::push`]).
    fn push(self, catalog: &mut CatalogWriter<'a>) -> Option<usize> {
        match self {
            Stored::Decoded(item) => catalog.push(item),
            Stored::Held(row) => catalog.push_held(row),
        }
    }

    /// Bytes of its JSON record, counted without making it.
    fn record_len(self) -> usize {
        match self {
            Stored::Decoded(item) => codec::item_record_len(item),
            Stored::Held(row) => codec::json_record_len(row.json_len()),
        }
    }

    /// Its JSON record.
    fn record(self) -> Vec<u8> {
        match self {
            Stored::Decoded(item) => codec::encode_item(item),
            Stored::Held(row) => codec::encode_item(&row.decode()),
        }
    }
}

/// A new segment being filled, in key order: its records (a memory whose
/// row gives it back exactly has an empty record and a row; the others
/// keep their JSON record), its lexical part (each memory's terms) and its
/// catalog part.
#[derive(Default)]
struct SegmentWriter<'a> {
    records: Vec<(&'a str, Cow<'a, [u8]>)>,
    lexical: Vec<(u32, Vec<(&'a str, u32)>)>,
    catalog: catalog::CatalogWriter<'a>,
    /// The bytes its records take, as [`SegmentWriter::add`] counts them.
    bytes: usize,
}

impl<'a> SegmentWriter<'a> {
    /// Adds `fresh`, after the records added so far; when the segment
    /// cannot take it within [`SEGMENT_BYTES`] (and holds a record), it
    /// goes to a new segment this writer becomes, and the full one is
    /// returned. A record counts what it adds to a segment, at most: a
    /// memory with a row its empty record, its row and its doc in the
    /// lexical part, each as if alone (strings and terms it shares with
    /// other memories are counted whole); any other record itself. The
    /// segments a commit writes must be filled by what they take, or the
    /// size tiers of compaction would merge them again and again, and
    /// values must stay within the backends' limits.
    fn add(&mut self, fresh: Fresh<'a>) -> Option<Self> {
        let terms_len = fresh.terms_len();
        let Fresh {
            key,
            record: body,
            memory,
            terms,
        } = fresh;
        let mut body = Some(body);
        let mut bytes = || body.take().map(Body::into_bytes).unwrap_or_default();
        let mut row = memory.and_then(|memory| memory.push(&mut self.catalog));
        let mut record = match row {
            Some(_) => Cow::Borrowed(&[][..]),
            None => bytes(),
        };
        let len = record_len(key, record.len()) + row.unwrap_or(0) + terms_len;
        let mut full = None;
        if !self.records.is_empty() && self.bytes + len > SEGMENT_BYTES {
            if row.is_some() {
                self.catalog.pop();
                full = Some(std::mem::take(self));
                // The same row, numbered in the new segment's dictionary
                // (whether a row gives its memory back does not depend on
                // the segment, but its record follows what happened).
                row = memory.and_then(|memory| memory.push(&mut self.catalog));
                if row.is_none() {
                    record = bytes();
                }
            } else {
                full = Some(std::mem::take(self));
            }
        }
        if let Some(terms) = terms {
            self.lexical.push((self.records.len() as u32, terms));
        }
        self.records.push((key, record));
        self.bytes += len;
        full
    }

    /// Puts the segment in `batch` as the next segment of `update`.
    fn write(self, batch: &mut Batch, update: &mut Update) {
        let number = update.next_segment;
        update.next_segment += 1;
        let keys: Vec<String> = self.records.iter().map(|(key, _)| key.to_string()).collect();
        let records: Vec<(&str, &[u8])> = self.records.iter().map(|(k, v)| (*k, &**v)).collect();
        let record = encode_segment(&records, &self.lexical, &self.catalog.finish());
        let info = SegmentRef {
            number,
            records: records.len() as u32,
            bytes: record.len() as u64,
            crc32: format::record_crc(&record),
        };
        batch.put(segment_key(number), record);
        update.added.push((info, keys));
    }
}

/// Bytes a record of `len` bytes takes in a frame.
fn record_len(key: &str, len: usize) -> usize {
    9 + key.len() + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Config, MemoryInput, Txn};
    use crate::env::{Environment, FixedEnvironment};
    use crate::item::{Scope, Timestamp};

    /// The terms ingest counted, handed to the segment write, give the
    /// segments the terms fetched back from the lexical index give (the
    /// oracle: `plan_all`, which hands none): for texts with repeated
    /// words, a speaker, bigrams, duplicates merged in the batch, and a
    /// memory whose text a later write of the same commit changed (its
    /// counted terms no longer stand for it).
    #[test]
    fn counted_terms_give_the_segments_the_index_gives() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scope = Scope::workspace("alice", "home");
        let mut inputs: Vec<MemoryInput> = (0..400)
            .map(|i| {
                let text = match i % 4 {
                    0 => format!("note {i}: apples and apples and more apples {}", i * 7),
                    1 => format!("東京の天気 {i} は晴れ"),
                    2 => format!("the garden {} grows", i / 8),
                    _ => format!("note {i} from the kitchen"),
                };
                let mut input = MemoryInput::new(text, scope.clone());
                if i % 3 == 0 {
                    input.speaker = Some("Caroline".to_string());
                }
                input
            })
            .collect();
        // Exact duplicates, merged into the memories they repeat.
        inputs.push(MemoryInput::new("note 3 from the kitchen", scope.clone()));
        let mut txn = Txn::default();
        let results = engine.ingest(inputs, &mut env, &mut txn).unwrap();
        let edited = results[5].id.clone().unwrap();
        let patch = crate::engine::MemoryPatch {
            text: Some("an entirely new text about pears".to_string()),
            ..Default::default()
        };
        engine.update(&edited, patch, Timestamp(1_700_000_000_001), &mut txn).unwrap();
        let changes = engine.batch_for(&txn);
        let counted = changes
            .iter()
            .filter(|(_, change)| matches!(change, Change::Memory(_, Some(_))))
            .count();
        assert!(counted > 300, "{counted}");
        let edited_key = format!("{ITEM_PREFIX}{edited}");
        let (_, change) = changes.iter().find(|(key, _)| *key == edited_key).unwrap();
        assert!(matches!(change, Change::Memory(_, None)));
        let planned = Layout::default().plan(&changes, &engine);
        let oracle = Layout::default().plan_all(&engine);
        assert_eq!(planned.batch, oracle.batch);
        assert_eq!(planned.manifest, oracle.manifest);
    }

    /// A segment rewritten (merged, or a memory erased from it) writes
    /// each memory held as its row again from the row, undecoded: the
    /// commit is byte for byte the one made from the decoded memories (the
    /// oracle: the same writes to an engine whose memories were never held
    /// as rows). Memories with merged duplicates (a rest), tags, a speaker,
    /// a session, pinned, private, with retention, soft-deleted, marked
    /// used, following the memory before them and one further back.
    #[test]
    fn merges_write_held_rows_as_their_memories() {
        let mut held = Engine::new(Config::default());
        let mut decoded = Engine::new(Config::default());
        let (mut held_layout, mut decoded_layout) = (Layout::default(), Layout::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let mut rng = memtide_testkit::rng::Rng(11);
        let mut ids: Vec<String> = Vec::new();
        let (mut rewritten, mut from_rows) = (0, 0);
        for round in 0..14u64 {
            let mut inputs: Vec<MemoryInput> = (0..150)
                .map(|i| {
                    let mut scope = Scope::workspace("alice", "home");
                    if i % 5 == 0 {
                        scope.session_id = Some(format!("s{}", round % 3));
                    }
                    let words: Vec<String> = (0..8).map(|j| format!("w{}", rng.next_u64() % 4000 + j)).collect();
                    let mut input = MemoryInput::new(format!("round {round} note {i}: {}", words.join(" ")), scope);
                    input.speaker = (i % 3 == 0).then(|| ["Caroline", "Melanie"][i % 2].to_string());
                    input.tags = (i % 7 == 0).then(|| vec![format!("t{}", i % 4), "shared".to_string()]);
                    input.pinned = (i % 11 == 0).then_some(true);
                    input.privacy = (i % 13 == 0).then_some(crate::item::Privacy {
                        pii: false,
                        private: true,
                        retention_days: Some(30),
                    });
                    input
                })
                .collect();
            // Duplicates of memories of earlier rounds: merged into them,
            // which gives those a rest.
            for _ in 0..(round.min(6)) {
                let earlier = rng.next_u64() % round.max(1);
                inputs.push(MemoryInput::new(format!("round {earlier} note 1: again"), Scope::workspace("alice", "home")));
            }
            let mut txns = [Txn::default(), Txn::default()];
            decoded.ingest(inputs.clone(), &mut env.clone(), &mut txns[1]).unwrap();
            let results = held.ingest(inputs, &mut env, &mut txns[0]).unwrap();
            ids.extend(results.into_iter().filter_map(|r| r.id));
            ids.sort();
            ids.dedup();
            // Soft deletes, usage marks and an erase of earlier memories.
            if round > 0 {
                for step in 0..4 {
                    let id = ids[(rng.next_u64() % ids.len() as u64) as usize].clone();
                    for (engine, txn) in [&mut held, &mut decoded].into_iter().zip(&mut txns) {
                        match step {
                            0 => engine.delete(&id, true, env.now(), txn).unwrap(),
                            1 => engine.delete(&id, false, env.now(), txn).unwrap(),
                            // Marks what it finds used.
                            _ => {
                                let query = crate::engine::RetrieveQuery::new(format!("note {step} w{round}"), Scope::workspace("alice", "home"));
                                engine.retrieve(&query, env.now(), txn).unwrap();
                            }
                        }
                    }
                    if step == 0 {
                        ids.retain(|i| *i != id);
                    }
                }
            }
            let mut plans = Vec::new();
            for ((engine, layout), txn) in [(&held, &held_layout), (&decoded, &decoded_layout)].into_iter().zip(&txns) {
                plans.push(layout.plan(&engine.batch_for(txn), engine));
            }
            let [held_plan, decoded_plan] = <[Plan; 2]>::try_from(plans).unwrap();
            assert_eq!(held_plan.batch, decoded_plan.batch, "round {round}");
            assert_eq!(held_plan.manifest, decoded_plan.manifest, "round {round}");
            let removed = &held_plan.update.removed;
            rewritten += removed.len();
            from_rows += held_layout
                .keys
                .iter()
                .filter(|&(id, _)| held_layout.keys.live_segment(id).is_some_and(|n| removed.contains(&n)))
                .filter_map(|(_, key)| key.strip_prefix(ITEM_PREFIX).map(str::to_string))
                .filter(|id| held.held_row(id).is_some())
                .count();
            held_plan.hold_rows(&mut held);
            held_layout.apply(held_plan);
            decoded_layout.apply(decoded_plan);
            env.advance_ms(1_000);
        }
        assert!(rewritten >= 3 && from_rows >= 300, "{rewritten} segments rewritten, {from_rows} rows");
    }

    /// A commit that removes no segment drops only the keys it names
    /// that lost their last version; the layout's key map then holds what
    /// a scan of every key (`KeyMap::retain_held`, which a commit that
    /// removes a segment still runs) would leave: no key without a version.
    /// And the log's keys, derived from the last commit's and this one's
    /// without reading the frames, are those the frames hold. Over single
    /// ingests and batches, edits, soft and hard deletes, log folds and
    /// merges.
    #[test]
    fn commits_leave_no_key_without_a_version() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scope = Scope::workspace("alice", "home");
        let mut layout = Layout::default();
        let mut ids: Vec<String> = Vec::new();
        let (mut merges, mut erased) = (0, 0);
        let mut rng = memtide_testkit::rng::Rng(7);
        for round in 0..900u64 {
            let mut txn = Txn::default();
            match rng.next_u64() % 10 {
                0 if !ids.is_empty() => {
                    let id = ids.swap_remove((rng.next_u64() % ids.len() as u64) as usize);
                    engine.delete(&id, true, env.now(), &mut txn).unwrap();
                    erased += 1;
                }
                1 if !ids.is_empty() => {
                    let id = &ids[(rng.next_u64() % ids.len() as u64) as usize];
                    engine.delete(id, false, env.now(), &mut txn).unwrap();
                }
                2 if !ids.is_empty() => {
                    let id = ids[(rng.next_u64() % ids.len() as u64) as usize].clone();
                    let patch = crate::engine::MemoryPatch {
                        tags: Some(vec![format!("t{round}")]),
                        ..Default::default()
                    };
                    engine.update(&id, patch, env.now(), &mut txn).unwrap();
                }
                n => {
                    let count = if n == 3 { 60 } else { 1 };
                    let inputs = (0..count)
                        .map(|i| MemoryInput::new(format!("note {round} {i} about topic{} in place{}", round % 37, i * 13), scope.clone()))
                        .collect();
                    let results = engine.ingest(inputs, &mut env, &mut txn).unwrap();
                    ids.extend(results.into_iter().filter_map(|r| r.id));
                    ids.sort();
                    ids.dedup();
                }
            }
            env.advance_ms(1);
            let plan = layout.plan(&engine.batch_for(&txn), &engine);
            merges += usize::from(plan.batch.ops().any(|(key, value)| key.starts_with(crate::keys::SEGMENT_PREFIX) && value.is_none()));
            layout.apply(plan);
            assert!(layout.keys.all_held(), "round {round}");
            // The log's keys, as the commit derived them, are those its
            // frames hold.
            let mut in_frames = FastSet::default();
            for frame in &layout.log {
                in_frames.extend(records_of(frame).unwrap().into_iter().map(|(key, _)| key.to_string()));
            }
            assert_eq!(layout.log_keys, in_frames, "round {round}");
        }
        assert!(merges >= 5 && erased >= 30, "{merges} merges, {erased} erased");
    }

    /// A commit straight to segments makes no JSON record of a memory
    /// whose row gives it back, and keeps the JSON record of one whose row
    /// would not; a commit to the log makes one per memory.
    #[test]
    fn json_records_are_made_only_where_they_are_stored() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scope = Scope::workspace("alice", "home");
        let inputs: Vec<MemoryInput> = (0..300)
            .map(|i| MemoryInput::new(format!("note {i} about topic{i} and place{}", i * 13), scope.clone()))
            .collect();
        let mut txn = Txn::default();
        engine.ingest(inputs, &mut env, &mut txn).unwrap();
        // A clock a Rust caller gave, past year 9999: the row of a memory
        // stored then would not read its time back.
        env.advance_ms(253_402_300_800_000 - 1_700_000_000_000);
        let far = MemoryInput::new("a note from the far future", scope.clone());
        let far = engine.ingest(vec![far], &mut env, &mut txn).unwrap()[0].id.clone().unwrap();
        let before = codec::encoded_items();
        let plan = Layout::default().plan(&engine.batch_for(&txn), &engine);
        assert_eq!(codec::encoded_items() - before, 1);
        let mut json = Vec::new();
        for (key, value) in plan.batch.ops() {
            let (true, Some(value)) = (key.starts_with(crate::keys::SEGMENT_PREFIX), value) else {
                continue;
            };
            let contents = format::decode_segment(value).unwrap();
            json.extend(contents.records.iter().filter(|(_, record)| !record.is_empty()).map(|(k, r)| (k.to_string(), r.to_vec())));
        }
        let far_item = engine.get(&far).unwrap();
        assert_eq!(json, [(format!("{ITEM_PREFIX}{far}"), codec::encode_item(&far_item))]);
        let mut layout = Layout::default();
        layout.apply(plan);
        env.advance_ms(1_700_000_000_000 - 253_402_300_800_000);
        let mut txn = Txn::default();
        let small = ["one more note", "and another one"].map(|t| MemoryInput::new(t, scope.clone()));
        engine.ingest(small.to_vec(), &mut env, &mut txn).unwrap();
        let before = codec::encoded_items();
        let plan = layout.plan(&engine.batch_for(&txn), &engine);
        assert_eq!(codec::encoded_items() - before, 2);
        assert!(!plan.batch.ops().any(|(key, _)| key.starts_with(crate::keys::SEGMENT_PREFIX)));
    }

    /// Segments are filled by the bytes they take (rows, not the JSON
    /// records rows replace): a segment written full is above the size of
    /// the small tiers that compaction merges, so it is not merged again.
    #[test]
    fn segments_are_filled_by_what_their_rows_take() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scope = Scope::workspace("alice", "home");
        let inputs: Vec<MemoryInput> = (0..2400)
            .map(|i| {
                let words: Vec<String> = (0..70)
                    .map(|j| format!("w{}", (i * 131 + j * 17) % 7919))
                    .collect();
                MemoryInput::new(format!("note {i}: {}", words.join(" ")), scope.clone())
            })
            .collect();
        engine.ingest(inputs, &mut env, &mut Txn::default()).unwrap();
        let plan = Layout::default().plan_all(&engine);
        let sizes: Vec<usize> = plan
            .batch
            .ops()
            .filter(|(key, _)| key.starts_with(crate::keys::SEGMENT_PREFIX))
            .filter_map(|(_, value)| value.map(<[u8]>::len))
            .collect();
        assert!(sizes.len() >= 2, "{sizes:?}");
        let (last, full) = sizes.split_last().unwrap();
        assert!(*last <= SEGMENT_BYTES, "{sizes:?}");
        for &size in full {
            // Above the small tiers of compaction (half of it), within
            // it plus the record's own framing.
            assert!(size > SEGMENT_BYTES / 2 + SEGMENT_BYTES / 8, "{sizes:?}");
            assert!(size <= SEGMENT_BYTES + 64, "{sizes:?}");
        }
        // Each segment gives back its memories, those whose rows moved to
        // the next segment when the previous one was full among them.
        let mut memories = 0;
        for (key, value) in plan.batch.ops() {
            let (true, Some(value)) = (key.starts_with(crate::keys::SEGMENT_PREFIX), value) else {
                continue;
            };
            let contents = format::decode_segment(value).unwrap();
            assert_eq!(contents.rows.len(), contents.records.len());
            for ((key, record), row) in contents.records.iter().zip(&contents.rows) {
                assert!(record.is_empty());
                assert_eq!(*engine.get(key.strip_prefix(ITEM_PREFIX).unwrap()).unwrap(), row.to_item());
            }
            memories += contents.rows.len();
        }
        assert_eq!(memories as u64, engine.summary().items);
    }
}
