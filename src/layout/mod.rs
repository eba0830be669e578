//! Where the engine's records live in storage: the segmented layout of
//! format 4 (`docs/format.md`, section 2.2).
//!
//! The engine's records (`item/…`, `vec/…`, `file/…`) do not get a storage
//! key each. Most sit in immutable *segments* (`seg/<n>`), many to a value;
//! recent changes sit in the *log*, which the manifest record carries after
//! its header. Opening a store reads the manifest and the segments it names
//! — one key per MiB of records, not one per record — and a small write
//! rewrites the manifest alone. A commit is one batch: the new segments,
//! the manifest naming them, and the deletes of the segments they replace;
//! the manifest is the commit point, and a reader that finds a segment
//! missing read a manifest that a newer commit replaced, and reads again.
//!
//! Compaction happens inside commits, with bounded work per call:
//! - a commit's records go to the log, or straight to a new segment when
//!   they are many ([`DIRECT_BYTES`]);
//! - the log folds into a new segment when it grows past [`LOG_BYTES`] or
//!   [`LOG_FRAMES`];
//! - at most one merge per commit: a segment holding more shadowed versions
//!   than live ones is rewritten, or [`MERGE_FANIN`] small segments of one
//!   size tier become one;
//! - a deleted record is erased in the same commit: every segment holding
//!   any version of it is rewritten without it, and the log drops it, so no
//!   byte of it stays in storage.

pub(crate) mod catalog;
mod format;
mod legacy;
mod lexical;
mod varint;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::codec::{self, CodecError};
use crate::engine::{Config, Engine, Stored};
use crate::item::MemoryItem;
use crate::error::{Error, Result};
use crate::fast_hash::{FastMap, FastSet};
use crate::index::bm25::TermCounts;
use crate::keys::{ITEM_PREFIX, MANIFEST_KEY};
use crate::storage::{AsyncStorage, Batch, Expect, StorageError, SNAPSHOT_ATTEMPTS};
pub(crate) use format::{
    decode_manifest, decode_segment, encode_manifest, encode_records, encode_segment, records_of,
    segment_key, Header, SegmentRef, LAYOUT_VERSION,
};

/// Bytes of records a segment is filled to (a record larger than this gets
/// a segment alone). Every backend's value limit is above it: Durable
/// Objects take 2 MiB, Workers KV 25 MiB; the Deno KV adapter chunks.
pub(crate) const SEGMENT_BYTES: usize = 1 << 20;
/// The log folds into a segment past this many bytes: the manifest, which
/// every commit rewrites, stays small.
pub(crate) const LOG_BYTES: usize = 64 << 10;
/// … or past this many frames (commits).
pub(crate) const LOG_FRAMES: usize = 64;
/// A commit whose records take more bytes than this writes them straight
/// to a segment instead of the log.
pub(crate) const DIRECT_BYTES: usize = 16 << 10;
/// How many small segments of one size tier merge into one.
pub(crate) const MERGE_FANIN: usize = 4;
/// Size tiers of small segments: below this, then ×4 each tier.
const TIER_BASE: u64 = 16 << 10;

/// Where each record is, as of the last load or commit; see the module
/// documentation.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// The live segments by number (oldest first).
    segments: BTreeMap<u64, Segment>,
    /// Every record key with where its versions are.
    keys: FastMap<String, KeyState>,
    /// The log's frames, oldest first: frames of puts.
    log: Vec<Vec<u8>>,
    /// The keys with a version in the log.
    log_keys: FastSet<String>,
    /// The number the next segment takes.
    next_segment: u64,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    info: SegmentRef,
    /// How many of its records are the newest version of their key.
    live: u32,
    /// It is of the format this build writes (6: lexical and catalog
    /// parts); a segment of an older format is rewritten in it when a
    /// commit has no other merge.
    current: bool,
}

/// Where the versions of one record are.
#[derive(Debug, Default, Clone)]
struct KeyState {
    /// The segments holding an older version, ascending. Most records
    /// have one version, so this is empty and allocates nothing.
    older: Vec<u64>,
    /// The segment holding the newest version a segment holds.
    last: Option<u64>,
    /// The newest version is in the log.
    in_log: bool,
}

impl KeyState {
    fn live_segment(&self) -> Option<u64> {
        if self.in_log {
            None
        } else {
            self.last
        }
    }

    /// The segments holding a version, ascending.
    fn segments(&self) -> impl Iterator<Item = u64> + '_ {
        self.older.iter().copied().chain(self.last)
    }

    /// Adds segment `number`, newer than every segment held.
    fn push(&mut self, number: u64) {
        if let Some(previous) = self.last.replace(number) {
            self.older.push(previous);
        }
    }

    /// Keeps the segments `keep` accepts.
    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        self.older.retain(|&n| keep(n));
        if self.last.is_some_and(|n| !keep(n)) {
            self.last = self.older.pop();
        }
    }

    fn has_segments(&self) -> bool {
        self.last.is_some()
    }
}

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

/// What [`open`] returns: the engine, where its records are, and the
/// manifest storage holds (the expectation of the next commit).
pub(crate) struct Opened {
    pub(crate) engine: Engine,
    pub(crate) layout: Layout,
    pub(crate) manifest: Option<Vec<u8>>,
}

/// Opens the store `storage` holds: reads the manifest and its segments,
/// or a store of formats 1 to 3, which it migrates to the segmented layout
/// in one commit first.
pub(crate) async fn open<S: AsyncStorage>(storage: &mut S, config: Config) -> Result<Opened> {
    config.validate()?;
    // The segment found missing under the same manifest at every attempt.
    let mut missing: Option<(Vec<u8>, String)> = None;
    let mut always_missing = true;
    for _ in 0..SNAPSHOT_ATTEMPTS {
        let manifest = storage.get(MANIFEST_KEY).await?;
        if let Some(bytes) = manifest.filter(|m| is_layout(m)) {
            match read(storage, config.clone(), bytes.clone()).await? {
                Read::Done(opened) => return Ok(opened),
                Read::Missing(key) => {
                    let same = missing.as_ref().is_none_or(|m| m == &(bytes.clone(), key.clone()));
                    always_missing &= same;
                    missing = Some((bytes, key));
                    continue;
                }
            }
        }
        always_missing = false;
        let Some(old) = legacy::read(storage).await? else {
            continue;
        };
        let keys: Vec<String> = old.records.iter().map(|(k, _)| k.clone()).collect();
        let engine = Engine::load(config.clone(), old.records, old.model_id)?;
        if keys.is_empty() {
            return Ok(Opened {
                engine,
                layout: Layout::default(),
                manifest: old.manifest,
            });
        }
        let mut plan = Layout::default().plan_all(&engine);
        for key in keys {
            plan.batch.delete(key);
        }
        let expect = Expect {
            key: MANIFEST_KEY,
            value: old.manifest.as_deref(),
        };
        match storage.commit(&plan.batch, Some(expect)).await {
            Ok(()) => {
                let mut layout = Layout::default();
                let manifest = plan.manifest.clone();
                layout.apply(plan);
                return Ok(Opened {
                    engine,
                    layout,
                    manifest: Some(manifest),
                });
            }
            Err(StorageError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    match missing {
        // Not a newer commit's doing: the store lost a segment.
        Some((_, key)) if always_missing => Err(Error::Corrupt(format!(
            "`{key}`, which the manifest names, is missing"
        ))),
        _ => Err(Error::Storage(format!(
            "other writers changed the store during each of {SNAPSHOT_ATTEMPTS} attempts to open it"
        ))),
    }
}

/// True when `manifest` is a record of the segmented layout (else a
/// manifest of formats 1 to 3, or damage the legacy reader reports).
pub(crate) fn is_layout(manifest: &[u8]) -> bool {
    codec::decode(manifest).is_ok() && codec::record_version(manifest) >= LAYOUT_VERSION
}

/// What a store of the segmented layout holds: its header, where each
/// record is, and every record.
struct Contents {
    header: Header,
    layout: Layout,
    records: Vec<(String, Stored)>,
    /// The memories' terms as the segments' lexical parts count them.
    counts: Counts,
}

/// By memory record key, its terms as the lexical part of the segment
/// holding its newest version counts them: `None` when that part has no
/// doc for it (a soft-deleted memory). Memories the log holds, or a
/// segment of format 4, are absent: their texts are analysed on load.
pub(crate) type Counts = FastMap<String, Option<TermCounts>>;

/// How reading the segments a manifest names ended.
pub(crate) enum Read<T> {
    Done(T),
    /// This segment was not found: a newer commit replaced it, or the
    /// store lost it.
    Missing(String),
}

/// Reads the segments of `header` whose numbers are in `wanted`, checking
/// that the manifest names its segments in order and that each value is the
/// segment it names.
async fn fetch_segments<S: AsyncStorage>(
    storage: &S,
    header: &Header,
    wanted: &[u64],
) -> Result<Read<Vec<(SegmentRef, Vec<u8>)>>> {
    let mut segments = Vec::with_capacity(wanted.len());
    let mut previous = None;
    for info in &header.segments {
        if previous.is_some_and(|p| p >= info.number) || info.number >= header.next_segment {
            return Err(Error::Corrupt(format!(
                "the manifest names segment {} out of order",
                info.number
            )));
        }
        previous = Some(info.number);
        if !wanted.contains(&info.number) {
            continue;
        }
        let key = segment_key(info.number);
        let Some(value) = storage.get(&key).await? else {
            return Ok(Read::Missing(key));
        };
        if value.len() as u64 != info.bytes || format::record_crc(&value) != info.crc32 {
            return Err(Error::Corrupt(format!(
                "`{key}` is not the segment the manifest names"
            )));
        }
        segments.push((*info, value));
    }
    Ok(Read::Done(segments))
}

/// Reads the segments and the log of the store whose manifest is `bytes`.
async fn read_contents<S: AsyncStorage>(storage: &S, bytes: &[u8]) -> Result<Read<Contents>> {
    let (header, frames) = decode_manifest(bytes)?;
    let numbers: Vec<u64> = header.segments.iter().map(|s| s.number).collect();
    let segments = match fetch_segments(storage, &header, &numbers).await? {
        Read::Done(segments) => segments,
        Read::Missing(key) => return Ok(Read::Missing(key)),
    };
    let mut layout = Layout {
        next_segment: header.next_segment,
        ..Layout::default()
    };
    let mut current: FastMap<&str, Newest<'_>> = FastMap::default();
    let mut counts = Counts::default();
    layout.add_layers(&segments, &frames, &mut current, &mut counts)?;
    let records = current
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_stored()))
        .collect();
    Ok(Read::Done(Contents {
        header,
        layout,
        records,
        counts,
    }))
}

/// Opens a store of the segmented layout whose manifest is `bytes`.
async fn read<S: AsyncStorage>(
    storage: &S,
    config: Config,
    bytes: Vec<u8>,
) -> Result<Read<Opened>> {
    let contents = match read_contents(storage, &bytes).await? {
        Read::Done(contents) => contents,
        Read::Missing(key) => return Ok(Read::Missing(key)),
    };
    let header = contents.header;
    let engine = Engine::load_counted(
        config,
        contents.records,
        header.model_id.clone(),
        &contents.counts,
    )?;
    let summary = engine.summary();
    if [summary.items, summary.vectors, summary.files]
        != [header.item_count, header.vector_count, header.file_count]
    {
        return Err(Error::Corrupt(format!(
            "the manifest counts {} memories, {} embeddings and {} files; the segments and the log hold {}, {} and {}",
            header.item_count, header.vector_count, header.file_count,
            summary.items, summary.vectors, summary.files
        )));
    }
    Ok(Read::Done(Opened {
        engine,
        layout: contents.layout,
        manifest: Some(bytes),
    }))
}

/// Every record a store holds, by key, wherever it is (segments, log, or
/// keys of their own in formats 1 to 3): what the tests compare.
#[cfg(any(test, feature = "testing"))]
pub async fn stored_records<S: AsyncStorage>(
    storage: &S,
) -> Result<BTreeMap<String, Vec<u8>>> {
    if let Some(bytes) = storage.get(MANIFEST_KEY).await?.filter(|m| is_layout(m)) {
        {
            return match read_contents(storage, &bytes).await? {
                Read::Done(contents) => Ok(contents
                    .records
                    .into_iter()
                    .map(|(key, stored)| match stored {
                        Stored::Bytes(bytes) => (key, bytes),
                        Stored::Item(item) => (key, crate::codec::encode_item(&item)),
                    })
                    .collect()),
                Read::Missing(key) => Err(Error::Corrupt(format!("`{key}` is missing"))),
            };
        }
    }
    let old = legacy::read(storage).await?;
    Ok(old.map(|o| o.records.into_iter().collect()).unwrap_or_default())
}

fn corrupt_at(number: u64, e: CodecError) -> Error {
    Error::Corrupt(format!("`{}`: {e}", segment_key(number)))
}

/// What another writer changed, as [`Layout::catch_up`] finds it.
pub(crate) struct CatchUp {
    /// The layout after the changes.
    pub(crate) layout: Layout,
    /// Each record key whose newest version changed, with its record, or
    /// `None` when it was deleted.
    pub(crate) changes: Vec<(String, Option<Stored>)>,
    /// The terms of the changed memories that new segments count.
    pub(crate) term_counts: Counts,
    /// The model of the store's embeddings.
    pub(crate) model_id: Option<String>,
    /// The counts the manifest states, to check the engine against.
    pub(crate) counts: [u64; 3],
}

impl Layout {
    /// What changed since this layout's manifest when storage now holds
    /// the manifest `bytes` of the segmented layout: only the segments it
    /// names that this layout lacks are read (segments never change under
    /// their key), and the log comes with the manifest. `None` when the
    /// two manifests do not descend from one another as commits do (a
    /// segment this layout holds now named with other contents): the
    /// caller reads the whole store instead.
    pub(crate) async fn catch_up<S: AsyncStorage>(
        &self,
        storage: &S,
        bytes: &[u8],
    ) -> Result<Option<Read<CatchUp>>> {
        let (header, frames) = decode_manifest(bytes)?;
        if header.next_segment < self.next_segment {
            // An older manifest than this layout's (a lagging read).
            return Ok(None);
        }
        let mut fresh = Vec::new();
        for info in &header.segments {
            match self.segments.get(&info.number) {
                Some(held) if held.info == *info => {}
                Some(_) => return Ok(None),
                None if info.number < self.next_segment => return Ok(None),
                None => fresh.push(info.number),
            }
        }
        let segments = match fetch_segments(storage, &header, &fresh).await? {
            Read::Done(segments) => segments,
            Read::Missing(key) => return Ok(Some(Read::Missing(key))),
        };
        let named: FastSet<u64> = header.segments.iter().map(|s| s.number).collect();
        let mut layout = Layout {
            next_segment: header.next_segment,
            ..Layout::default()
        };
        for (key, state) in &self.keys {
            let mut kept = KeyState {
                in_log: false,
                ..state.clone()
            };
            kept.retain(|n| named.contains(&n));
            if kept.has_segments() {
                layout.keys.insert(key.clone(), kept);
            }
        }
        for (number, segment) in &self.segments {
            if named.contains(number) {
                layout.segments.insert(*number, Segment { live: 0, ..*segment });
            }
        }
        // The newest version of every record the new segments or the log
        // hold: new segments are newer than every segment held, the log
        // newer than them all.
        let mut newest: FastMap<&str, Newest<'_>> = FastMap::default();
        let mut term_counts = Counts::default();
        layout.add_layers(&segments, &frames, &mut newest, &mut term_counts)?;
        let mut changes: Vec<(String, Option<Stored>)> = newest
            .into_iter()
            .map(|(k, v)| (k.to_string(), Some(v.into_stored())))
            .collect();
        for key in self.keys.keys() {
            if !layout.keys.contains_key(key) {
                changes.push((key.clone(), None));
            }
        }
        Ok(Some(Read::Done(CatchUp {
            changes,
            term_counts,
            model_id: header.model_id,
            counts: [header.item_count, header.vector_count, header.file_count],
            layout,
        })))
    }


    /// Adds `segments` (newer than every segment held) and then the log
    /// `frames` to the layout, and their records to `newest`, a later
    /// version replacing an earlier one, with the terms the newest
    /// version's lexical part counts in `counts`.
    fn add_layers<'a>(
        &mut self,
        segments: &'a [(SegmentRef, Vec<u8>)],
        frames: &[&'a [u8]],
        newest: &mut FastMap<&'a str, Newest<'a>>,
        counts: &mut Counts,
    ) -> Result<()> {
        // The maps grow to about this many keys: reserved at once rather
        // than rehashed as they double.
        let records: usize = segments.iter().map(|(info, _)| info.records as usize).sum();
        newest.reserve(records);
        self.keys.reserve(records);
        counts.reserve(records);
        for (info, value) in segments {
            let contents = decode_segment(value).map_err(|e| corrupt_at(info.number, e))?;
            if contents.records.len() != info.records as usize {
                return Err(corrupt_at(
                    info.number,
                    CodecError::Payload("record count differs from the manifest".into()),
                ));
            }
            let indexed = contents.lexical.is_some();
            let current = contents.version == format::CATALOG_VERSION;
            let mut docs = contents.lexical.map(|l| l.docs).unwrap_or_default().into_iter().peekable();
            let mut rows = contents.rows.into_iter().peekable();
            for (index, (key, record)) in contents.records.into_iter().enumerate() {
                // An empty record is the next catalog row (checked by
                // `decode_segment`).
                let version = match rows.next_if(|_| record.is_empty()) {
                    Some(item) => Newest::Item(Box::new(item)),
                    None => Newest::Bytes(record),
                };
                newest.insert(key, version);
                let state = self.keys.entry(key.to_string()).or_default();
                state.push(info.number);
                let doc = docs.next_if(|(i, _)| *i as usize == index).map(|(_, terms)| terms);
                if indexed && key.starts_with(ITEM_PREFIX) {
                    counts.insert(key.to_string(), doc);
                } else {
                    counts.remove(key);
                }
            }
            let segment = Segment {
                info: *info,
                live: 0,
                current,
            };
            self.segments.insert(info.number, segment);
        }
        for frame in frames {
            for (key, record) in records_of(frame)? {
                counts.remove(key);
                newest.insert(key, Newest::Bytes(record));
                self.keys.entry(key.to_string()).or_default().in_log = true;
                self.log_keys.insert(key.to_string());
            }
            self.log.push(frame.to_vec());
        }
        self.count_live();
        Ok(())
    }

    /// Counts each segment's live records afresh.
    fn count_live(&mut self) {
        for segment in self.segments.values_mut() {
            segment.live = 0;
        }
        for state in self.keys.values() {
            if let Some(n) = state.live_segment() {
                if let Some(segment) = self.segments.get_mut(&n) {
                    segment.live += 1;
                }
            }
        }
    }
}

impl Layout {
    /// The commit that stores every record of `engine` afresh (a migrated
    /// store).
    fn plan_all(&self, engine: &Engine) -> Plan {
        let mut batch = Batch::new();
        for key in engine.record_keys() {
            if let Some(record) = engine.record(&key) {
                batch.put(key, record);
            }
        }
        self.plan(&batch, engine)
    }

    /// Prepares the commit of `changed` (the records a write changed, from
    /// [`Engine::batch_for`]; `engine` holds the state after it), with this
    /// commit's share of compaction. See the module documentation.
    pub(crate) fn plan(&self, changed: &Batch, engine: &Engine) -> Plan {
        let mut touched: FastSet<&str> = FastSet::default();
        let mut puts: Vec<(&str, &[u8])> = Vec::new();
        let mut rewrite: BTreeSet<u64> = BTreeSet::new();
        let mut erased = Vec::new();
        for (key, value) in changed.ops() {
            touched.insert(key);
            match value {
                Some(record) => puts.push((key, record)),
                None => {
                    if let Some(state) = self.keys.get(key) {
                        rewrite.extend(state.segments());
                        erased.push(key.to_string());
                    }
                }
            }
        }
        // The log without the versions this commit supersedes or erases.
        let mut log: Vec<Vec<u8>> = Vec::with_capacity(self.log.len() + 1);
        for frame in &self.log {
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
        // New segments' records, by key; `None` for a memory the engine
        // holds, whose JSON record is made only if its catalog row does not
        // give it back.
        let mut fresh: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
        let put_bytes: usize = puts.iter().map(|(k, v)| record_len(k, v)).sum();
        if put_bytes > DIRECT_BYTES {
            for (key, record) in &puts {
                fresh.insert(key.to_string(), Some(record.to_vec()));
            }
        } else if !puts.is_empty() {
            log.push(encode_records(&puts));
        }
        let log_bytes: usize = log.iter().map(Vec::len).sum();
        if log_bytes > LOG_BYTES || log.len() > LOG_FRAMES {
            for frame in log.drain(..) {
                for (key, record) in records_of(&frame).unwrap_or_default() {
                    fresh.insert(key.to_string(), Some(record.to_vec()));
                }
            }
        }
        let mut log_keys = FastSet::default();
        for frame in &log {
            for (key, _) in records_of(frame).unwrap_or_default() {
                log_keys.insert(key.to_string());
            }
        }
        if let Some(merge) = self.merge_candidate(&touched, &rewrite) {
            rewrite.extend(merge);
        }
        // The live records of the segments rewritten, as the engine holds
        // them (the newest version of a key live in a segment is the
        // engine's).
        if !rewrite.is_empty() {
            for (key, state) in &self.keys {
                let live_here = state.live_segment().is_some_and(|n| rewrite.contains(&n));
                if !live_here || touched.contains(key.as_str()) {
                    continue;
                }
                let held = key.strip_prefix(ITEM_PREFIX).is_some_and(|id| engine.get(id).is_ok());
                if held {
                    fresh.insert(key.clone(), None);
                } else if let Some(record) = engine.record(key) {
                    fresh.insert(key.clone(), Some(record));
                }
            }
        }
        let mut batch = Batch::new();
        // A deleted record may live in a value this commit only overwrites
        // (the manifest's log, a segment written anew): the backend must not
        // keep the old bytes.
        if changed.has_deletes() {
            batch.mark_erasing();
        }
        let mut update = Update {
            removed: rewrite.iter().copied().collect(),
            log_keys,
            erased,
            next_segment: self.next_segment,
            ..Update::default()
        };
        let written: Vec<Fresh> = fresh
            .iter()
            .filter_map(|(key, record)| Fresh::new(key, record.as_deref(), engine))
            .collect();
        for chunk in chunks(written) {
            let number = update.next_segment;
            update.next_segment += 1;
            let keys: Vec<String> = chunk.iter().map(|f| f.key.to_string()).collect();
            let (records, lexical, catalog) = segment_parts(chunk);
            let records: Vec<(&str, &[u8])> = records.iter().map(|(k, v)| (*k, &**v)).collect();
            let record = encode_segment(&records, &lexical, &catalog);
            let info = SegmentRef {
                number,
                records: records.len() as u32,
                bytes: record.len() as u64,
                crc32: format::record_crc(&record),
            };
            batch.put(segment_key(number), record);
            update.added.push((info, keys));
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
            if let Some(n) = self.keys.get(*key).and_then(KeyState::live_segment) {
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
        let mut note = |keys: &FastMap<String, KeyState>, key: &str| {
            if !moved.contains_key(key) {
                let was = keys.get(key).and_then(KeyState::live_segment);
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
            for state in self.keys.values_mut() {
                state.retain(|n| !removed.contains(&n));
            }
            for n in &removed {
                self.segments.remove(n);
            }
        }
        for key in &update.erased {
            self.keys.remove(key);
        }
        for key in self.log_keys.drain() {
            if let Some(state) = self.keys.get_mut(&key) {
                state.in_log = false;
            }
        }
        for key in &update.log_keys {
            self.keys.entry(key.clone()).or_default().in_log = true;
        }
        for (info, keys) in &update.added {
            let segment = Segment {
                info: *info,
                live: 0,
                current: true,
            };
            self.segments.insert(info.number, segment);
            for key in keys {
                self.keys.entry(key.clone()).or_default().push(info.number);
            }
        }
        for (key, was) in moved {
            let now = self.keys.get(&key).and_then(KeyState::live_segment);
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
        self.keys
            .retain(|_, state| state.in_log || state.has_segments());
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
    item: Option<&'a MemoryItem>,
    terms: Option<Vec<(&'a str, u32)>>,
    /// Bytes it takes in the segment, at most ([`Fresh::new`]).
    len: usize,
}

impl<'a> Fresh<'a> {
    /// The record of `key`. Its length is at most what it adds to a
    /// segment: a memory's empty record, its catalog row and its doc in
    /// the lexical part (each written as if alone: strings and terms it
    /// shares with other memories are counted whole), else its record.
    /// The segments a commit writes must be filled by what they take, or
    /// the size tiers of compaction would merge them again and again, and
    /// values must stay within the backends' limits.
    /// `None` when `record` is `None` (the engine's memory of `key`) and
    /// the engine holds no such memory.
    fn new(key: &'a str, record: Option<&'a [u8]>, engine: &'a Engine) -> Option<Self> {
        let id = key.strip_prefix(ITEM_PREFIX);
        let item = id.and_then(|id| engine.get(id).ok());
        let terms = id.and_then(|id| engine.term_counts(id));
        let record = match (record, item) {
            (Some(record), _) => Body::Record(record),
            (None, Some(item)) => Body::Item(item),
            (None, None) => return None,
        };
        let len = match item {
            // A term: its bytes and length in the dictionary, its index
            // step and frequency in the doc (varints of at most five bytes
            // each, two or three in practice).
            Some(item) => {
                let terms: usize = terms
                    .as_ref()
                    .map(|terms| terms.iter().map(|(term, _)| term.len() + 1 + 4).sum::<usize>() + 8)
                    .unwrap_or(0);
                record_len(key, &[]) + catalog::row_len(item) + terms
            }
            None => match record {
                Body::Record(bytes) => record_len(key, bytes),
                Body::Item(_) => record_len(key, &[]),
            },
        };
        Some(Fresh {
            key,
            record,
            item,
            terms,
            len,
        })
    }
}

/// The record a new segment holds for a key, unless a catalog row stands
/// for it.
enum Body<'a> {
    Record(&'a [u8]),
    /// A memory the engine holds, whose JSON record is made only if its
    /// row does not give it back.
    Item(&'a MemoryItem),
}

/// The parts of a new segment of `chunk`: its records, its lexical part
/// (each memory's terms) and its catalog part. Each memory whose row
/// gives it back exactly has an empty record and a row; the others keep
/// their JSON record (`catalog::rows_for`).
#[allow(clippy::type_complexity)]
fn segment_parts<'a>(
    chunk: Vec<Fresh<'a>>,
) -> (Vec<(&'a str, Cow<'a, [u8]>)>, Vec<(u32, Vec<(&'a str, u32)>)>, Vec<u8>) {
    let mut lexical = Vec::new();
    let mut items: Vec<&MemoryItem> = Vec::new();
    for (index, fresh) in chunk.iter().enumerate() {
        if let Some(item) = fresh.item {
            items.push(item);
        }
        if let Some(terms) = &fresh.terms {
            lexical.push((index as u32, terms.clone()));
        }
    }
    let (fits, part) = catalog::rows_for(&items);
    let mut fits = fits.into_iter();
    let records = chunk
        .into_iter()
        .map(|fresh| {
            let fit = fresh.item.is_some() && fits.next().unwrap_or(false);
            let record = match fresh.record {
                _ if fit => Cow::Borrowed(&[][..]),
                Body::Record(bytes) => Cow::Borrowed(bytes),
                Body::Item(item) => Cow::Owned(codec::encode_item(item)),
            };
            (fresh.key, record)
        })
        .collect();
    (records, lexical, part)
}

/// The newest version of a record while segments and the log are read:
/// its bytes in a segment or the log, or the memory of a catalog row.
enum Newest<'a> {
    Bytes(&'a [u8]),
    Item(Box<MemoryItem>),
}

impl Newest<'_> {
    fn into_stored(self) -> Stored {
        match self {
            Newest::Bytes(bytes) => Stored::Bytes(bytes.to_vec()),
            Newest::Item(item) => Stored::Item(item),
        }
    }
}

/// Bytes a record takes in a frame.
fn record_len(key: &str, record: &[u8]) -> usize {
    9 + key.len() + record.len()
}

/// `records` in key order, cut into segments of at most [`SEGMENT_BYTES`]
/// as [`Fresh::new`] measures a record (one record larger than that
/// alone).
fn chunks(records: Vec<Fresh<'_>>) -> Vec<Vec<Fresh<'_>>> {
    let mut out: Vec<Vec<Fresh>> = Vec::new();
    let mut bytes = 0;
    for fresh in records {
        let len = fresh.len;
        match out.last_mut() {
            Some(chunk) if bytes + len <= SEGMENT_BYTES => chunk.push(fresh),
            _ => {
                out.push(vec![fresh]);
                bytes = 0;
            }
        }
        bytes += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{MemoryInput, Txn};
    use crate::env::FixedEnvironment;
    use crate::item::{Scope, Timestamp};

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
    }
}
