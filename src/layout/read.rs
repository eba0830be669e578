//! Reading a store of the segmented layout: the segments a manifest names
//! and its log, into the engine's records with the terms their lexical
//! parts count ([`read`]), and, after another writer's commits, only what
//! changed ([`Layout::catch_up`]).

use super::format::{self, decode_manifest, decode_segment, records_of, segment_key, Header, SegmentRef};
use super::{KeyState, Layout, Opened, Read, Segment};
use crate::codec::{self, CodecError};
use crate::engine::{Config, Counted, Engine, Stored};
use crate::error::{Error, Result};
use crate::fast_hash::{FastMap, FastSet};
use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};
use crate::storage::AsyncStorage;

/// What a store of the segmented layout holds: its header, where each
/// record is, and every record.
struct Contents {
    header: Header,
    layout: Layout,
    /// With their memories' terms as the segments' lexical parts count
    /// them.
    records: Vec<(String, Stored, Counted)>,
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
    let mut current = Newest::default();
    layout.add_layers(segments, &frames, &mut current)?;
    let records = current.into_records().collect();
    Ok(Read::Done(Contents {
        header,
        layout,
        records,
    }))
}

/// Opens a store of the segmented layout whose manifest is `bytes`.
pub(super) async fn read<S: AsyncStorage>(
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
) -> Result<std::collections::BTreeMap<String, Vec<u8>>> {
    use super::{is_layout, legacy};
    use crate::keys::MANIFEST_KEY;
    if let Some(bytes) = storage.get(MANIFEST_KEY).await?.filter(|m| is_layout(m)) {
        {
            return match read_contents(storage, &bytes).await? {
                Read::Done(contents) => Ok(contents
                    .records
                    .into_iter()
                    .map(|(key, stored, _)| match stored {
                        Stored::Bytes(bytes) => (key, bytes),
                        Stored::Item(item) => (key, crate::codec::encode_item(&item)),
                        Stored::Vector(vector) => (key, crate::codec::encode_vector(&vector)),
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
        let mut newest = Newest::default();
        layout.add_layers(segments, &frames, &mut newest)?;
        let mut changes: Vec<(String, Option<Stored>, Counted)> = newest
            .into_records()
            .map(|(k, v, counted)| (k, Some(v), counted))
            .collect();
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

    /// Adds `segments` (newer than every segment held) and then the log
    /// `frames` to the layout, and their records to `newest`, a later
    /// version replacing an earlier one, each with the terms its lexical
    /// part counts.
    ///
    /// Each segment's bytes are freed as soon as it is decoded: what it
    /// holds is copied out (its memories' catalog rows and embeddings
    /// decoded, other records' bytes copied), so the bytes of all segments
    /// and all their decoded records are never held at once (WebAssembly
    /// memory never shrinks: that sum would stay as the store's footprint).
    fn add_layers(
        &mut self,
        segments: Vec<(SegmentRef, Vec<u8>)>,
        frames: &[&[u8]],
        newest: &mut Newest,
    ) -> Result<()> {
        // The maps grow to about this many keys: reserved at once rather
        // than rehashed as they double.
        let records: usize = segments.iter().map(|(info, _)| info.records as usize).sum();
        newest.reserve(records);
        self.keys.reserve(records);
        for (info, value) in segments {
            let contents = decode_segment(&value).map_err(|e| corrupt_at(info.number, e))?;
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
                    Some(item) => Stored::Item(Box::new(item)),
                    None => owned(key, record)?,
                };
                let doc = docs.next_if(|(i, _)| *i as usize == index).map(|(_, terms)| terms);
                let counted = (indexed && key.starts_with(ITEM_PREFIX)).then_some(doc);
                newest.put(key, version, counted);
                let state = self.keys.entry(key.to_string()).or_default();
                state.push(info.number);
            }
            let segment = Segment {
                info,
                live: 0,
                current,
            };
            self.segments.insert(info.number, segment);
        }
        for frame in frames {
            for (key, record) in records_of(frame)? {
                newest.put(key, owned(key, record)?, None);
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

/// The newest version of each record while segments and the log are
/// read, with its memory's counted terms, in the order the keys were first
/// read. A segment holds its records in key order and a commit writes its
/// segments in ascending key ranges, so this order is mostly the keys'
/// order already: the engine's sort of the records (`Engine::apply_counted`)
/// merges a few sorted runs rather than sorting keys that a hash map gave
/// in no order. It owns what it holds, so a segment's bytes can go as soon
/// as the segment is read.
#[derive(Default)]
struct Newest {
    /// Each key with where its newest version is in `versions`.
    at: FastMap<String, usize>,
    versions: Vec<(Stored, Counted)>,
}

impl Newest {
    fn reserve(&mut self, records: usize) {
        self.at.reserve(records);
        self.versions.reserve(records);
    }

    /// `version` is the newest of `key` (a later layer than any before).
    fn put(&mut self, key: &str, version: Stored, counted: Counted) {
        match self.at.get(key) {
            Some(&at) => self.versions[at] = (version, counted),
            None => {
                self.at.insert(key.to_string(), self.versions.len());
                self.versions.push((version, counted));
            }
        }
    }

    /// The records in the order their keys were first read.
    fn into_records(self) -> impl Iterator<Item = (String, Stored, Counted)> {
        let mut keys: Vec<Option<String>> = vec![None; self.versions.len()];
        for (key, at) in self.at {
            keys[at] = Some(key);
        }
        keys.into_iter()
            .zip(self.versions)
            .filter_map(|(key, (version, counted))| Some((key?, version, counted)))
    }
}
