//! Reading a store of the segmented layout: the segments a manifest names
//! and its log, loaded into the engine ([`read`]), and, after another
//! writer's commits, only what changed ([`Layout::catch_up`]).
//!
//! Both read in two passes. The first lists the keys each segment and the
//! log hold ([`Layout::add_keys`]), merging the segments' sorted key lists
//! once: where each record's versions are, and so which version is its
//! newest (a later segment's, or the log's), and each memory's doc number,
//! its place among the memory keys in key order. The second decodes the
//! segments one at a time and gives the newest versions each holds, each
//! with the key the first pass listed (its bytes are not read as a key
//! again), to the caller ([`Layout::newest_records`]), which
//! an open loads into the engine at once ([`Loader`]): the decoded
//! records of all segments are never held together beside the engine
//! being built (WebAssembly memory never shrinks: that sum would stay as
//! the store's footprint).

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use super::format::{self, decode_listed_segment, decode_manifest, records_of, segment_key, segment_parts, Header, SegmentRef};
use super::catalog::CatalogRow;
use super::keys::KeyId;
use super::{Layout, Opened, Read, Segment};
use crate::codec::{self, CodecError};
use crate::engine::{Config, Counted, Loader, Stored};
use crate::error::{Error, Result};
use crate::fast_hash::FastSet;
use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};
use crate::storage::AsyncStorage;

/// A store of the segmented layout as its first pass leaves it: the
/// manifest's header, where each record is, the segments read but not
/// decoded, and the log's frames.
struct Layers<'a> {
    header: Header,
    layout: Layout,
    segments: Vec<(SegmentRef, Vec<u8>)>,
    listed: Listed,
    frames: Vec<&'a [u8]>,
}

/// What the first pass ([`Layout::add_keys`]) found in the records it
/// listed, for the second.
struct Listed {
    /// The key of each record of each segment, in the segment's order.
    ids: Vec<Vec<KeyId>>,
    /// By key id: a memory's doc number (its place among the memory keys
    /// listed, in key order), or [`NO_DOC`] for another key.
    docs: Vec<u32>,
    /// The memory keys listed.
    memories: usize,
    /// The embedding keys listed.
    embeddings: usize,
}

/// Not a memory's key ([`Listed::docs`]).
const NO_DOC: u32 = u32::MAX;

impl Listed {
    /// The doc number of the memory of key `id`, if it is one.
    fn doc(&self, id: KeyId) -> Option<u32> {
        self.docs.get(id as usize).copied().filter(|&doc| doc != NO_DOC)
    }
}

/// Reads the segments of `header` whose numbers are in `wanted`, checking
/// that the manifest names its segments in order and that each value is the
/// segment it names.
async fn fetch_segments<S: AsyncStorage>(
    storage: &S,
    header: &Header,
    wanted: &[u64],
) -> Result<Read<Vec<(SegmentRef, Vec<u8>)>>> {
    let mut infos = Vec::with_capacity(wanted.len());
    let mut previous = None;
    for info in &header.segments {
        if previous.is_some_and(|p| p >= info.number) || info.number >= header.next_segment {
            return Err(Error::Corrupt(format!(
                "the manifest names segment {} out of order",
                info.number
            )));
        }
        previous = Some(info.number);
        if wanted.contains(&info.number) {
            infos.push(*info);
        }
    }
    // All in one request: IndexedDB reads them in one transaction.
    let keys: Vec<String> = infos.iter().map(|info| segment_key(info.number)).collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let values = storage.get_many(&key_refs).await?;
    if values.len() != keys.len() {
        return Err(Error::Storage(format!(
            "the storage returned {} values for {} segment keys",
            values.len(),
            keys.len()
        )));
    }
    let mut segments = Vec::with_capacity(infos.len());
    for ((info, key), value) in infos.into_iter().zip(keys).zip(values) {
        let Some(value) = value else {
            return Ok(Read::Missing(key));
        };
        if value.len() as u64 != info.bytes || format::record_crc(&value) != info.crc32 {
            return Err(Error::Corrupt(format!(
                "`{key}` is not the segment the manifest names"
            )));
        }
        segments.push((info, value));
    }
    Ok(Read::Done(segments))
}

/// Reads the manifest `bytes` names and lists the keys of its segments
/// and its log (the first pass).
async fn read_layers<'a, S: AsyncStorage>(storage: &S, bytes: &'a [u8]) -> Result<Read<Layers<'a>>> {
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
    let listed = layout.add_keys(&segments, &frames)?;
    Ok(Read::Done(Layers {
        header,
        layout,
        segments,
        listed,
        frames,
    }))
}

/// Opens a store of the segmented layout whose manifest is `bytes`.
pub(super) async fn read<S: AsyncStorage>(
    storage: &S,
    config: Config,
    bytes: Vec<u8>,
) -> Result<Read<Opened>> {
    let Layers {
        header,
        layout,
        segments,
        listed,
        frames,
    } = match read_layers(storage, &bytes).await? {
        Read::Done(layers) => layers,
        Read::Missing(key) => return Ok(Read::Missing(key)),
    };
    // Each key listed has one newest version, which `newest_records`
    // gives: these memories, with the doc numbers of a load in key order
    // (`Loader::put`), and this many embeddings.
    let mut listed = listed;
    let ids = std::mem::take(&mut listed.ids);
    let mut loader = Loader::new(config, header.model_id.clone(), listed.memories, listed.embeddings)?;
    layout.newest_records(segments, ids, frames, |key, id, stored, counted| {
        loader.put(key, stored, counted, listed.doc(id))
    })?;
    // Freed before the embeddings go in, where the open peaks.
    drop(listed);
    let engine = loader.finish()?;
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
        layout,
        manifest: Some(bytes),
    }))
}

/// Every record a store holds, by key, wherever it is (segments, log, or
/// keys of their own in formats 1 to 3): what the tests compare.
#[cfg(any(test, feature = "testing"))]
pub async fn stored_records<S: AsyncStorage>(
    storage: &S,
) -> Result<std::collections::BTreeMap<String, Vec<u8>>> {
    use super::{is_layout, legacy};
    use crate::keys::MANIFEST_KEY;
    if let Some(bytes) = storage.get(MANIFEST_KEY).await?.filter(|m| is_layout(m)) {
        let layers = match read_layers(storage, &bytes).await? {
            Read::Done(layers) => layers,
            Read::Missing(key) => return Err(Error::Corrupt(format!("`{key}` is missing"))),
        };
        let mut records = std::collections::BTreeMap::new();
        layers
            .layout
            .newest_records(layers.segments, layers.listed.ids, layers.frames, |key, _, stored, _| {
                let bytes = match stored {
                    Stored::Bytes(bytes) => bytes,
                    Stored::Item(item) => crate::codec::encode_item(&item),
                    Stored::Row(row) => crate::codec::encode_item(&row.decode()),
                    Stored::Vector(vector) => crate::codec::encode_vector(&vector),
                };
                records.insert(key.to_string(), bytes);
                Ok(())
            })?;
        return Ok(records);
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
    /// `None` when it was deleted, and the terms of its memory that a new
    /// segment counts.
    pub(crate) changes: Vec<(String, Option<Stored>, Counted)>,
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
            keys: self.keys.clone(),
            ..Layout::default()
        };
        for key in &self.log_keys {
            if let Some(id) = layout.keys.get(key) {
                layout.keys.set_in_log(id, false);
            }
        }
        layout.keys.retain_segments(|n| named.contains(&n));
        layout.keys.retain_held();
        for (number, segment) in &self.segments {
            if named.contains(number) {
                layout.segments.insert(*number, Segment { live: 0, ..*segment });
            }
        }
        // The newest version of every record the new segments or the log
        // hold: new segments are newer than every segment held, the log
        // newer than them all.
        let listed = layout.add_keys(&segments, &frames)?;
        let mut changes: Vec<(String, Option<Stored>, Counted)> = Vec::new();
        layout.newest_records(segments, listed.ids, frames, |key, _, stored, counted| {
            changes.push((key.to_string(), Some(stored), counted));
            Ok(())
        })?;
        for (_, key) in self.keys.iter() {
            if layout.keys.get(&key).is_none() {
                changes.push((key.to_string(), None, None));
            }
        }
        Ok(Some(Read::Done(CatchUp {
            changes,
            model_id: header.model_id,
            counts: [header.item_count, header.vector_count, header.file_count],
            layout,
        })))
    }

    /// Adds the keys of `segments` (newer than every segment held) and
    /// then of the log `frames` to the layout: where each version of each
    /// record is, and so which version is the newest. A segment's frame
    /// and record count are checked here, its other parts when
    /// [`Layout::newest_records`] decodes it.
    ///
    /// Each segment's keys are sorted (checked here): the segments' lists
    /// and the log's keys, sorted, are merged once, so each key comes up
    /// once with all its versions (oldest first), and the memory keys in
    /// key order, which numbers their docs. No list of all keys is sorted
    /// and no key looked up by its string but to enter it in the map.
    fn add_keys(&mut self, segments: &[(SegmentRef, Vec<u8>)], frames: &[&[u8]]) -> Result<Listed> {
        let mut lists: Vec<Vec<&str>> = Vec::with_capacity(segments.len() + 1);
        for (info, value) in segments {
            let parts = segment_parts(value).map_err(|e| corrupt_at(info.number, e))?;
            if parts.records.len() != info.records as usize {
                return Err(corrupt_at(
                    info.number,
                    CodecError::Payload("record count differs from the manifest".into()),
                ));
            }
            lists.push(parts.records.iter().map(|(key, _)| *key).collect());
            let segment = Segment {
                info: *info,
                live: 0,
                current: parts.version == format::COMPACT_ROWS_VERSION,
            };
            self.segments.insert(info.number, segment);
        }
        // The map grows to about this many keys, a memory's and its
        // embedding's in one slot: reserved at once rather than grown as
        // it doubles (a record takes a byte at least, whatever a damaged
        // manifest says). A segment's keys are sorted, so each prefix's
        // are a run of them.
        let records: usize = segments
            .iter()
            .map(|(info, value)| (info.records as usize).min(value.len()))
            .sum();
        let pairs: usize = lists
            .iter()
            .map(|keys| prefixed(keys, ITEM_PREFIX).min(prefixed(keys, VECTOR_PREFIX)))
            .sum();
        self.keys.reserve(records, pairs);
        // The log, newer than every segment: its keys once each, sorted.
        let mut log: Vec<&str> = Vec::new();
        for frame in frames {
            log.extend(records_of(frame)?.into_iter().map(|(key, _)| key));
            self.log.push(frame.to_vec());
        }
        log.sort_unstable();
        log.dedup();
        for key in &log {
            self.log_keys.insert((*key).to_string());
        }
        let log_list = lists.len();
        lists.push(log);
        let mut listed = Listed {
            ids: lists[..log_list].iter().map(|keys| Vec::with_capacity(keys.len())).collect(),
            docs: Vec::new(),
            memories: 0,
            embeddings: 0,
        };
        // The next key of each list, smallest first, and of equal keys the
        // older list's first.
        let mut next: BinaryHeap<Reverse<(&str, usize)>> = lists
            .iter()
            .enumerate()
            .filter_map(|(list, keys)| keys.first().map(|key| Reverse((*key, list))))
            .collect();
        let mut at = vec![0usize; lists.len()];
        let mut current: Option<(&str, KeyId)> = None;
        while let Some(mut top) = next.peek_mut() {
            let Reverse((key, list)) = *top;
            let id = match current {
                Some((held, id)) if held == key => id,
                _ => {
                    let id = self.keys.entry(key);
                    if key.starts_with(ITEM_PREFIX) {
                        let slot = id as usize;
                        if listed.docs.len() <= slot {
                            listed.docs.resize(slot + 1, NO_DOC);
                        }
                        // At most one doc per record listed: below `u32::MAX`
                        // records a store.
                        listed.docs[slot] = u32::try_from(listed.memories).unwrap_or(NO_DOC);
                        listed.memories += 1;
                    } else if key.starts_with(VECTOR_PREFIX) {
                        listed.embeddings += 1;
                    }
                    current = Some((key, id));
                    id
                }
            };
            match segments.get(list) {
                Some((info, _)) => {
                    self.keys.push(id, info.number);
                    listed.ids[list].push(id);
                }
                None => self.keys.set_in_log(id, true),
            }
            at[list] += 1;
            match lists[list].get(at[list]) {
                Some(key) => *top = Reverse((*key, list)),
                None => {
                    PeekMut::pop(top);
                }
            }
        }
        self.count_live();
        Ok(listed)
    }

    /// Decodes `segments` one at a time, then the log `frames` (both as
    /// [`Layout::add_keys`] added them, which listed the segments' keys as
    /// `ids`), and gives `put` each record whose newest version they hold:
    /// its key and key id, that version, and the terms its lexical part
    /// counts. Each segment's bytes are freed once its records are given:
    /// what it holds is copied out (its memories' catalog rows and
    /// embeddings decoded, other records' bytes copied).
    fn newest_records(
        &self,
        segments: Vec<(SegmentRef, Vec<u8>)>,
        ids: Vec<Vec<KeyId>>,
        frames: Vec<&[u8]>,
        mut put: impl FnMut(&str, KeyId, Stored, Counted) -> Result<()>,
    ) -> Result<()> {
        for ((info, value), ids) in segments.into_iter().zip(ids) {
            let contents = decode_listed_segment(&value).map_err(|e| corrupt_at(info.number, e))?;
            if contents.records.len() != ids.len() {
                return Err(corrupt_at(
                    info.number,
                    CodecError::Payload("the segment changed between its two reads".into()),
                ));
            }
            let indexed = contents.lexical.is_some();
            let mut docs = contents.lexical.map(|l| l.docs).unwrap_or_default().into_iter().peekable();
            let mut rows = contents.rows.into_iter().peekable();
            for (index, ((_, record), id)) in contents.records.into_iter().zip(ids).enumerate() {
                // An empty record is the next catalog row (checked by
                // `decode_listed_segment`).
                let row = rows.next_if(|_| record.is_empty());
                let doc = docs.next_if(|(i, _)| *i as usize == index).map(|(_, terms)| terms);
                if self.keys.live_segment(id) != Some(info.number) {
                    // A newer segment or the log holds its newest version.
                    continue;
                }
                let key = self.keys.key(id);
                let key = &*key;
                let version = match row {
                    Some(CatalogRow::Decoded(item)) => Stored::Item(item),
                    Some(CatalogRow::Held(row)) => Stored::Row(Box::new(row)),
                    None => owned(key, record)?,
                };
                let counted = (indexed && key.starts_with(ITEM_PREFIX)).then_some(doc);
                put(key, id, version, counted)?;
            }
        }
        // The newest version a log holds is in the last frame holding it.
        let mut given: FastSet<&str> = FastSet::default();
        for frame in frames.iter().rev() {
            for (key, record) in records_of(frame)?.into_iter().rev() {
                if given.insert(key) {
                    let id = self
                        .keys
                        .get(key)
                        .ok_or_else(|| Error::Corrupt(format!("the log's `{key}` was not listed")))?;
                    put(key, id, owned(key, record)?, None)?;
                }
            }
        }
        Ok(())
    }

    /// Counts each segment's live records afresh.
    fn count_live(&mut self) {
        for segment in self.segments.values_mut() {
            segment.live = 0;
        }
        for id in self.keys.ids() {
            if let Some(n) = self.keys.live_segment(id) {
                if let Some(segment) = self.segments.get_mut(&n) {
                    segment.live += 1;
                }
            }
        }
    }
}

/// How many of the sorted `keys` start with `prefix`.
fn prefixed(keys: &[&str], prefix: &str) -> usize {
    let start = keys.partition_point(|key| *key < prefix);
    keys.get(start..).map_or(0, |rest| rest.partition_point(|key| key.starts_with(prefix)))
}

/// A record of a segment or the log, owned: an embedding of int8 codes
/// decoded (the engine keeps exactly that, so its bytes are never copied),
/// any other record's bytes copied (an `f32` embedding of an older build
/// too: the engine decodes it, and the tests' `stored_records` see its
/// bytes as stored).
fn owned(key: &str, record: &[u8]) -> Result<Stored> {
    if key.starts_with(VECTOR_PREFIX) {
        let decoded = codec::decode_vector(record).map_err(|e| e.in_record(key))?;
        if !decoded.legacy {
            return Ok(Stored::Vector(decoded.vector));
        }
    }
    Ok(Stored::Bytes(record.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Int8Vector;
    use crate::layout::catalog::encode_catalog;
    use format::{encode_records, encode_segment};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A record key of the pool: memories, embeddings and files.
    fn key(n: u8) -> String {
        let kind = ["item/", "vec/", "file/"][usize::from(n % 3)];
        format!("{kind}k{:02}", n / 3)
    }

    /// A record of `key`, `version` telling versions apart.
    fn record(key: &str, version: usize) -> Vec<u8> {
        if key.starts_with(VECTOR_PREFIX) {
            codec::encode_vector(&Int8Vector::quantize(&[version as f32 + 1.0, -1.0, 0.5]))
        } else {
            format!("{key} v{version}").into_bytes()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Segments (oldest first) of keys drawn from one pool, so that
        /// later segments and the log override earlier versions and keys
        /// drawn nowhere are deleted ones: the merged first pass gives each
        /// memory the doc number sorting every memory key and searching
        /// for it gives, finds each key's newest version where the newest
        /// segment or log frame holding it is, and the second pass gives
        /// each key once, that version, under the key listed.
        #[test]
        fn merged_numbering_is_sort_then_search_numbering(
            segment_keys in prop::collection::vec(prop::collection::btree_set(0u8..90, 1..25), 0..7),
            log_keys in prop::collection::vec(prop::collection::vec(0u8..90, 1..6), 0..4),
            gaps in prop::collection::vec(1u64..4, 7),
        ) {
            let mut number = 0;
            let mut values = Vec::new();
            let mut newest: BTreeMap<String, (Option<u64>, Vec<u8>)> = BTreeMap::new();
            let mut held: BTreeMap<String, Vec<u64>> = BTreeMap::new();
            for (s, keys) in segment_keys.iter().enumerate() {
                number += gaps[s];
                // A segment's records in key order.
                let records: BTreeMap<String, Vec<u8>> = keys
                    .iter()
                    .map(|&n| (key(n), record(&key(n), s)))
                    .collect();
                for (k, v) in &records {
                    newest.insert(k.clone(), (Some(number), v.clone()));
                    held.entry(k.clone()).or_default().push(number);
                }
                let refs: Vec<(&str, &[u8])> = records.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
                let value = encode_segment(&refs, &[], &encode_catalog(&[]));
                let info = SegmentRef {
                    number,
                    records: refs.len() as u32,
                    bytes: value.len() as u64,
                    crc32: format::record_crc(&value),
                };
                values.push((info, value));
            }
            let mut frames = Vec::new();
            for (f, keys) in log_keys.iter().enumerate() {
                let records: Vec<(String, Vec<u8>)> = keys
                    .iter()
                    .map(|&n| (key(n), record(&key(n), 100 + f)))
                    .collect();
                for (k, v) in &records {
                    newest.insert(k.clone(), (None, v.clone()));
                }
                let refs: Vec<(&str, &[u8])> = records.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
                frames.push(encode_records(&refs));
            }
            let frame_refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let mut layout = Layout::default();
            let listed = layout.add_keys(&values, &frame_refs).unwrap();

            // The oracle: every memory key sorted, each doc found by search.
            let mut memory_keys: Vec<&str> = newest.keys().map(String::as_str).filter(|k| k.starts_with(ITEM_PREFIX)).collect();
            memory_keys.sort_unstable();
            prop_assert_eq!(listed.memories, memory_keys.len());
            prop_assert_eq!(listed.embeddings, newest.keys().filter(|k| k.starts_with(VECTOR_PREFIX)).count());
            for (k, (segment, _)) in &newest {
                let id = layout.keys.get(k).unwrap();
                prop_assert_eq!(&*layout.keys.key(id), k.as_str());
                let doc = memory_keys.binary_search(&k.as_str()).ok().map(|d| d as u32);
                prop_assert_eq!(listed.doc(id), doc, "{}", k);
                prop_assert_eq!(layout.keys.live_segment(id), *segment, "{}", k);
                let segments: Vec<u64> = layout.keys.segments(id).collect();
                prop_assert_eq!(segments, held.get(k).cloned().unwrap_or_default(), "{}", k);
            }
            prop_assert_eq!(layout.keys.iter().count(), newest.len());
            for ((info, _), ids) in values.iter().zip(&listed.ids) {
                let live = newest.values().filter(|(s, _)| *s == Some(info.number)).count() as u32;
                prop_assert_eq!(layout.segments[&info.number].live, live);
                prop_assert_eq!(ids.len(), info.records as usize);
            }
            for ((_, value), ids) in values.iter().zip(&listed.ids) {
                let parts = segment_parts(value).unwrap();
                let keys: Vec<String> = ids.iter().map(|&id| layout.keys.key(id).to_string()).collect();
                let listed_keys: Vec<&str> = parts.records.iter().map(|(k, _)| *k).collect();
                prop_assert_eq!(keys, listed_keys);
            }

            // The second pass: each key once, its newest version.
            let mut given: BTreeMap<String, Vec<u8>> = BTreeMap::new();
            layout
                .newest_records(values, listed.ids, frame_refs, |key, id, stored, _| {
                    assert_eq!(&*layout.keys.key(id), key);
                    let bytes = match stored {
                        Stored::Bytes(bytes) => bytes,
                        Stored::Vector(vector) => codec::encode_vector(&vector),
                        Stored::Item(_) | Stored::Row(_) => panic!("no rows here"),
                    };
                    assert!(given.insert(key.to_string(), bytes).is_none(), "{key} twice");
                    Ok(())
                })
                .unwrap();
            let expected: BTreeMap<String, Vec<u8>> = newest.into_iter().map(|(k, (_, v))| (k, v)).collect();
            prop_assert_eq!(given, expected);
        }
    }
}
