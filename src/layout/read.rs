//! Reading a store of the segmented layout: the segments a manifest names
//! and its log, loaded into the engine ([`read`]), and, after another
//! writer's commits, only what changed ([`Layout::catch_up`]).
//!
//! Both read in two passes. The first lists the keys each segment and the
//! log hold ([`Layout::add_keys`]): where each record's versions are, and
//! so which version is its newest (a later segment's, or the log's).
//! The second decodes the segments one at a time and gives the newest
//! versions each holds to the caller ([`Layout::newest_records`]), which
//! an open loads into the engine at once ([`Loader`]): the decoded
//! records of all segments are never held together beside the engine
//! being built (WebAssembly memory never shrinks: that sum would stay as
//! the store's footprint).

use super::format::{self, decode_manifest, decode_segment, records_of, segment_key, segment_parts, Header, SegmentRef};
use super::{KeyState, Layout, Opened, Read, Segment};
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
    frames: Vec<&'a [u8]>,
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
    layout.add_keys(&segments, &frames)?;
    Ok(Read::Done(Layers {
        header,
        layout,
        segments,
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
        frames,
    } = match read_layers(storage, &bytes).await? {
        Read::Done(layers) => layers,
        Read::Missing(key) => return Ok(Read::Missing(key)),
    };
    // Each key listed has one newest version, which `newest_records`
    // gives: these memories, this many embeddings.
    let mut memory_keys: Vec<&str> = Vec::new();
    let mut embeddings = 0;
    for key in layout.keys.keys() {
        if key.starts_with(ITEM_PREFIX) {
            memory_keys.push(key);
        } else if key.starts_with(VECTOR_PREFIX) {
            embeddings += 1;
        }
    }
    // A memory's doc number is its place in key order (`Loader::put`).
    memory_keys.sort_unstable();
    let mut loader = Loader::new(config, header.model_id.clone(), memory_keys.len(), embeddings)?;
    layout.newest_records(segments, frames, |key, stored, counted| {
        let doc = memory_keys.binary_search(&key).ok();
        loader.put(key, stored, counted, doc.and_then(|d| u32::try_from(d).ok()))
    })?;
    // Freed before the embeddings go in, where the open peaks.
    drop(memory_keys);
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
            .newest_records(layers.segments, layers.frames, |key, stored, _| {
                let bytes = match stored {
                    Stored::Bytes(bytes) => bytes,
                    Stored::Item(item) => crate::codec::encode_item(&item),
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
        layout.add_keys(&segments, &frames)?;
        let mut changes: Vec<(String, Option<Stored>, Counted)> = Vec::new();
        layout.newest_records(segments, frames, |key, stored, counted| {
            changes.push((key.to_string(), Some(stored), counted));
            Ok(())
        })?;
        for key in self.keys.keys() {
            if !layout.keys.contains_key(key) {
                changes.push((key.clone(), None, None));
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
    fn add_keys(&mut self, segments: &[(SegmentRef, Vec<u8>)], frames: &[&[u8]]) -> Result<()> {
        // The map grows to about this many keys: reserved at once rather
        // than rehashed as it doubles (a record takes a byte at least,
        // whatever a damaged manifest says).
        let records: usize = segments
            .iter()
            .map(|(info, value)| (info.records as usize).min(value.len()))
            .sum();
        self.keys.reserve(records);
        for (info, value) in segments {
            let parts = segment_parts(value).map_err(|e| corrupt_at(info.number, e))?;
            if parts.records.len() != info.records as usize {
                return Err(corrupt_at(
                    info.number,
                    CodecError::Payload("record count differs from the manifest".into()),
                ));
            }
            for (key, _) in &parts.records {
                self.keys.entry(key.to_string()).or_default().push(info.number);
            }
            let segment = Segment {
                info: *info,
                live: 0,
                current: parts.version == format::CATALOG_VERSION,
            };
            self.segments.insert(info.number, segment);
        }
        for frame in frames {
            for (key, _) in records_of(frame)? {
                self.keys.entry(key.to_string()).or_default().in_log = true;
                self.log_keys.insert(key.to_string());
            }
            self.log.push(frame.to_vec());
        }
        self.count_live();
        Ok(())
    }

    /// Decodes `segments` one at a time, then the log `frames` (both as
    /// [`Layout::add_keys`] added them), and gives `put` each record whose
    /// newest version they hold, that version, with the terms its lexical
    /// part counts. Each segment's bytes are freed once its records are
    /// given: what it holds is copied out (its memories' catalog rows and
    /// embeddings decoded, other records' bytes copied).
    fn newest_records(
        &self,
        segments: Vec<(SegmentRef, Vec<u8>)>,
        frames: Vec<&[u8]>,
        mut put: impl FnMut(&str, Stored, Counted) -> Result<()>,
    ) -> Result<()> {
        for (info, value) in segments {
            let contents = decode_segment(&value).map_err(|e| corrupt_at(info.number, e))?;
            let indexed = contents.lexical.is_some();
            let mut docs = contents.lexical.map(|l| l.docs).unwrap_or_default().into_iter().peekable();
            let mut rows = contents.rows.into_iter().peekable();
            for (index, (key, record)) in contents.records.into_iter().enumerate() {
                // An empty record is the next catalog row (checked by
                // `decode_segment`).
                let row = rows.next_if(|_| record.is_empty());
                let doc = docs.next_if(|(i, _)| *i as usize == index).map(|(_, terms)| terms);
                if self.keys.get(key).and_then(KeyState::live_segment) != Some(info.number) {
                    // A newer segment or the log holds its newest version.
                    continue;
                }
                let version = match row {
                    Some(item) => Stored::Item(Box::new(item)),
                    None => owned(key, record)?,
                };
                let counted = (indexed && key.starts_with(ITEM_PREFIX)).then_some(doc);
                put(key, version, counted)?;
            }
        }
        // The newest version a log holds is in the last frame holding it.
        let mut given: FastSet<&str> = FastSet::default();
        for frame in frames.iter().rev() {
            for (key, record) in records_of(frame)?.into_iter().rev() {
                if given.insert(key) {
                    put(key, owned(key, record)?, None)?;
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
        for state in self.keys.values() {
            if let Some(n) = state.live_segment() {
                if let Some(segment) = self.segments.get_mut(&n) {
                    segment.live += 1;
                }
            }
        }
    }
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
