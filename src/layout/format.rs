//! The records of the segmented layout (`docs/format.md`, section 2.2): the
//! manifest, which carries the log, and the segments. Both are
//! records of [`crate::codec`] (magic, version, type, length, CRC-32); their
//! payloads reuse the frame of `docs/format.md` section 3.1 for lists of
//! records.

use serde::{Deserialize, Serialize};

use super::catalog::{decode_catalog, CatalogRow};
use super::lexical::{decode_lexical, encode_lexical, LexicalPart};
use crate::codec::{self, CodecError, RecordType};
use crate::engine::Summary;
use crate::keys::{ITEM_PREFIX, SEGMENT_PREFIX};
use crate::storage::frame::{declared_frame_len, encode_frame, intact_frame_len, parse_frame, parse_frame_bytes, read_u32, Op};

/// The format version of the segmented layout's first records (format 4):
/// segments of records alone.
pub(crate) const LAYOUT_VERSION: u16 = 4;
/// Format 5: segments carry the lexical part of their memories.
pub(crate) const INDEXED_VERSION: u16 = 5;
/// Format 6: segments also carry the catalog part, their memories as
/// binary rows.
pub(crate) const CATALOG_VERSION: u16 = 6;
/// The format version this build writes (format 7): a catalog row names
/// the row before it, rather than writing its id again, as the memory it
/// follows, and leaves out an update time equal to its creation time.
pub(crate) const COMPACT_ROWS_VERSION: u16 = 7;

/// A segment as the manifest names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SegmentRef {
    /// Its number: the key is `seg/<number>`, and a larger number is newer.
    pub(crate) number: u64,
    /// How many records it holds.
    pub(crate) records: u32,
    /// Bytes of its record.
    pub(crate) bytes: u64,
    /// The CRC-32 its record ends with: a segment read under the key must
    /// be this one.
    pub(crate) crc32: u32,
}

/// The JSON header of a manifest of format 4.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Header {
    /// The manifest record's version: [`LAYOUT_VERSION`] to
    /// [`COMPACT_ROWS_VERSION`].
    pub(crate) format_version: u16,
    /// Number of `item/…` records in the store.
    pub(crate) item_count: u64,
    /// Number of `vec/…` records.
    pub(crate) vector_count: u64,
    /// Number of `file/…` records.
    pub(crate) file_count: u64,
    /// The model of every embedding, when there are embeddings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_id: Option<String>,
    /// The number the next new segment takes.
    pub(crate) next_segment: u64,
    /// The live segments, oldest first.
    pub(crate) segments: Vec<SegmentRef>,
}

impl Header {
    /// The header of a store holding what `summary` counts.
    pub(crate) fn new(summary: Summary, next_segment: u64, segments: Vec<SegmentRef>) -> Self {
        Header {
            format_version: COMPACT_ROWS_VERSION,
            item_count: summary.items,
            vector_count: summary.vectors,
            file_count: summary.files,
            model_id: summary.model_id,
            next_segment,
            segments,
        }
    }
}

/// The storage key of segment `number`.
pub(crate) fn segment_key(number: u64) -> String {
    format!("{SEGMENT_PREFIX}{number:010}")
}

/// A manifest record: the header, then the log's frames.
pub(crate) fn encode_manifest(header: &Header, log: &[Vec<u8>]) -> Vec<u8> {
    // Serializing our own plain data to JSON cannot fail.
    let json = serde_json::to_vec(header).unwrap_or_default();
    let log_bytes: usize = log.iter().map(Vec::len).sum();
    let mut payload = Vec::with_capacity(4 + json.len() + log_bytes);
    // The header is a few kilobytes at most: its length fits a u32.
    payload.extend_from_slice(&(json.len() as u32).to_le_bytes());
    payload.extend_from_slice(&json);
    for frame in log {
        payload.extend_from_slice(frame);
    }
    codec::encode(RecordType::Manifest, header.format_version, &payload)
}

/// The header and the log frames of a manifest record.
pub(crate) fn decode_manifest(bytes: &[u8]) -> Result<(Header, Vec<&[u8]>), CodecError> {
    let (version, payload) = payload_of(bytes, RecordType::Manifest, true)?;
    let bad = |m: String| CodecError::Payload(m);
    let json_len = read_u32(payload, 0).ok_or_else(|| bad("manifest without header".into()))?;
    let json_end = 4usize
        .checked_add(json_len as usize)
        .filter(|&end| end <= payload.len())
        .ok_or_else(|| bad("manifest header runs past the record".into()))?;
    let header: Header = serde_json::from_slice(&payload[4..json_end])
        .map_err(|e| bad(format!("manifest header: {e}")))?;
    if header.format_version != version {
        return Err(bad(format!(
            "manifest header of format {} in a record of format {version}",
            header.format_version
        )));
    }
    let mut frames = Vec::new();
    let mut rest = &payload[json_end..];
    while !rest.is_empty() {
        let len = intact_frame_len(rest)
            .ok_or_else(|| bad(format!("log frame {} is damaged", frames.len())))?;
        frames.push(&rest[..len]);
        rest = &rest[len..];
    }
    Ok((header, frames))
}

/// The records of one log frame or segment: puts only, as the writer made
/// them.
pub(crate) fn records_of(frame: &[u8]) -> Result<Vec<(&str, &[u8])>, CodecError> {
    puts(parse_frame(frame).map_err(CodecError::Payload)?)
}

/// The puts of a record list's ops, keys as the frame was parsed (`&str`,
/// or bytes by [`parse_frame_bytes`]): a record list deletes nothing.
fn puts<K: AsRef<[u8]>>(ops: Vec<(K, Option<&[u8]>)>) -> Result<Vec<(K, &[u8])>, CodecError> {
    ops.into_iter()
        .map(|(key, value)| match value {
            Some(value) => Ok((key, value)),
            None => Err(CodecError::Payload(format!(
                "`{}` is deleted in a record list",
                String::from_utf8_lossy(key.as_ref())
            ))),
        })
        .collect()
}

/// A frame of puts (a log frame, or a segment's payload).
pub(crate) fn encode_records(records: &[(&str, &[u8])]) -> Vec<u8> {
    let ops: Vec<Op<'_>> = records.iter().map(|&(k, v)| (k, Some(v))).collect();
    // Records are bounded by the ingest limits, far below the 4 GiB a
    // frame can hold.
    encode_frame(&ops).unwrap_or_default()
}

/// A segment record (format 6) holding `records`, sorted by key, the
/// lexical part of its memories (see [`encode_lexical`]) and its catalog
/// part (`super::catalog`): a memory whose record is empty here is the
/// next row of `catalog`.
pub(crate) fn encode_segment(
    records: &[(&str, &[u8])],
    lexical: &[(u32, Vec<(&str, u32)>)],
    catalog: &[u8],
) -> Vec<u8> {
    let frame = encode_records(records);
    let part = encode_lexical(lexical);
    let mut payload = Vec::with_capacity(8 + frame.len() + part.len() + catalog.len());
    // A frame is below 4 GiB (`encode_frame`), and so is a part of its
    // records.
    payload.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    payload.extend_from_slice(&frame);
    payload.extend_from_slice(&(part.len() as u32).to_le_bytes());
    payload.extend_from_slice(&part);
    payload.extend_from_slice(catalog);
    codec::encode(RecordType::Segment, COMPACT_ROWS_VERSION, &payload)
}

/// What a segment record holds; its keys as `K`: `&str`, or their bytes
/// when another read of the same record has checked them
/// ([`decode_listed_segment`]).
pub(crate) struct SegmentContents<'a, K = &'a str> {
    /// Its records, keys strictly ascending; a memory's record is empty
    /// when its row is in `rows`.
    pub(crate) records: Vec<(K, &'a [u8])>,
    /// The lexical part of its memories; `None` in a segment of format 4.
    pub(crate) lexical: Option<LexicalPart>,
    /// The memories of its empty records, in their order (format 6).
    pub(crate) rows: Vec<CatalogRow>,
}

/// Cuts `bytes` into a part of the u32 length it starts with and the rest.
fn length_prefixed<'a>(bytes: &'a [u8], what: &str) -> Result<(&'a [u8], &'a [u8]), CodecError> {
    let len = read_u32(bytes, 0)
        .ok_or_else(|| CodecError::Payload(format!("segment without a {what} length")))?;
    let end = 4usize
        .checked_add(len as usize)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| CodecError::Payload(format!("segment {what} runs past the record")))?;
    Ok((&bytes[4..end], &bytes[end..]))
}

/// A segment record's records and its other parts, not decoded: which
/// keys it holds. Keys as in [`SegmentContents`].
pub(crate) struct SegmentParts<'a, K = &'a str> {
    pub(crate) records: Vec<(K, &'a [u8])>,
    lexical: Option<&'a [u8]>,
    catalog: Option<&'a [u8]>,
    /// The record's format version.
    pub(crate) version: u16,
}

/// The records of a segment record (keys checked: keys, strictly
/// ascending), with its lexical part (format 5 on) and its catalog part
/// (format 6) not decoded.
pub(crate) fn segment_parts(bytes: &[u8]) -> Result<SegmentParts<'_>, CodecError> {
    let (version, frame, lexical, catalog) = cut_segment(bytes, true)?;
    let records = records_of(frame)?;
    if records.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(CodecError::Payload(
            "segment keys are not strictly ascending".into(),
        ));
    }
    Ok(SegmentParts {
        records,
        lexical,
        catalog,
        version,
    })
}

/// A segment record's version, its frame of records (whole and intact),
/// its lexical part (format 5 on) and its catalog part (format 6).
type Cut<'a> = (u16, &'a [u8], Option<&'a [u8]>, Option<&'a [u8]>);

/// Cuts a segment record into its [`Cut`]; with `checked` false, for a
/// record [`segment_parts`] has read before, its checksums (the record's
/// and its frame's) are not computed again.
fn cut_segment(bytes: &[u8], checked: bool) -> Result<Cut<'_>, CodecError> {
    let (version, payload) = payload_of(bytes, RecordType::Segment, checked)?;
    let (frame, lexical, catalog) = match version {
        LAYOUT_VERSION => (payload, None, None),
        INDEXED_VERSION => {
            let (frame, part) = length_prefixed(payload, "frame")?;
            (frame, Some(part), None)
        }
        _ => {
            let (frame, rest) = length_prefixed(payload, "frame")?;
            let (part, catalog) = length_prefixed(rest, "lexical part")?;
            (frame, Some(part), Some(catalog))
        }
    };
    if frame.is_empty() {
        return Err(CodecError::Payload("an empty segment".into()));
    }
    let len = if checked {
        intact_frame_len(frame)
    } else {
        declared_frame_len(frame)
    };
    if len != Some(frame.len()) {
        return Err(CodecError::Payload("segment frame is damaged".into()));
    }
    Ok((version, frame, lexical, catalog))
}

/// The records of a segment record, its lexical part (format 5 on) and
/// its catalog part (format 6).
#[cfg(test)]
pub(crate) fn decode_segment(bytes: &[u8]) -> Result<SegmentContents<'_>, CodecError> {
    decode_parts(segment_parts(bytes)?)
}

/// The memories a segment record this build has just encoded holds as
/// catalog rows, each with its key: its checksums not computed again and
/// its lexical part not read (`Plan::hold_rows`).
pub(crate) fn written_rows(bytes: &[u8]) -> Result<Vec<(&[u8], CatalogRow)>, CodecError> {
    let (version, frame, _, catalog) = cut_segment(bytes, false)?;
    let records = puts(parse_frame_bytes(frame).map_err(CodecError::Payload)?)?;
    let keys: Vec<&[u8]> = records.iter().filter(|(_, v)| v.is_empty()).map(|(k, _)| *k).collect();
    let rows = match catalog {
        Some(part) => decode_catalog(part, keys.len(), version)?,
        None => Vec::new(),
    };
    Ok(keys.into_iter().zip(rows).collect())
}

/// The contents of a segment record (as `decode_segment` gives them)
/// that [`segment_parts`] has read (and so checked) before: its keys are
/// left as bytes and its checksums not computed again (the layout reader
/// gives each record the key it listed).
pub(crate) fn decode_listed_segment(bytes: &[u8]) -> Result<SegmentContents<'_, &[u8]>, CodecError> {
    let (version, frame, lexical, catalog) = cut_segment(bytes, false)?;
    let records = puts(parse_frame_bytes(frame).map_err(CodecError::Payload)?)?;
    decode_parts(SegmentParts {
        records,
        lexical,
        catalog,
        version,
    })
}

/// Decodes the lexical and catalog parts of a segment's parts, checked
/// against its records.
fn decode_parts<K: AsRef<[u8]>>(parts: SegmentParts<'_, K>) -> Result<SegmentContents<'_, K>, CodecError> {
    let SegmentParts {
        records,
        lexical,
        catalog,
        ..
    } = parts;
    let memory = |key: &K| key.as_ref().starts_with(ITEM_PREFIX.as_bytes());
    let lexical = match lexical {
        None => None,
        Some(part) => {
            let lexical = decode_lexical(part, records.len())?;
            let not_memory = lexical
                .docs
                .iter()
                .any(|(index, _)| !memory(&records[*index as usize].0));
            if not_memory {
                return Err(CodecError::Payload(
                    "lexical part: a doc that is not a memory record".into(),
                ));
            }
            Some(lexical)
        }
    };
    let empty = records.iter().filter(|(_, v)| v.is_empty()).count();
    let rows = match catalog {
        Some(part) => decode_catalog(part, empty, parts.version)?,
        None => Vec::new(),
    };
    let row_keys = records.iter().filter(|(_, v)| v.is_empty());
    for ((key, _), item) in row_keys.zip(&rows) {
        let key = key.as_ref();
        if key.strip_prefix(ITEM_PREFIX.as_bytes()) != Some(item.id_bytes()) {
            return Err(CodecError::Payload(format!(
                "catalog part: the row of `{}` holds memory `{}`",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(item.id_bytes())
            )));
        }
    }
    if rows.len() != empty {
        return Err(CodecError::Payload(
            "an empty record that no catalog row fills".into(),
        ));
    }
    Ok(SegmentContents {
        records,
        lexical,
        rows,
    })
}

/// The CRC-32 a record ends with (a record [`codec::decode`] accepted).
pub(crate) fn record_crc(bytes: &[u8]) -> u32 {
    let at = bytes.len().saturating_sub(4);
    read_u32(bytes, at).unwrap_or(0)
}

/// The version (4 to 6) and payload of a record of the segmented layout.
/// With `checked` false, for a record accepted before: its checksum is not
/// computed again.
fn payload_of(bytes: &[u8], expected: RecordType, checked: bool) -> Result<(u16, &[u8]), CodecError> {
    let (found, payload) = if checked {
        codec::decode(bytes)?
    } else {
        codec::decode_accepted(bytes)?
    };
    if found != expected {
        return Err(CodecError::WrongType { expected, found });
    }
    let version = codec::record_version(bytes);
    if !(LAYOUT_VERSION..=COMPACT_ROWS_VERSION).contains(&version) {
        return Err(CodecError::Payload(format!(
            "a {expected:?} record of format {version}, expected {LAYOUT_VERSION} to {COMPACT_ROWS_VERSION}"
        )));
    }
    Ok((version, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::MemoryItem;
    use crate::layout::catalog::encode_catalog;

    fn header() -> Header {
        Header::new(
            Summary {
                items: 2,
                vectors: 1,
                files: 0,
                model_id: Some("m".into()),
            },
            7,
            vec![SegmentRef {
                number: 3,
                records: 2,
                bytes: 99,
                crc32: 5,
            }],
        )
    }

    #[test]
    fn manifests_round_trip_with_their_log() {
        let log = vec![
            encode_records(&[("item/a", b"1")]),
            encode_records(&[("item/b", b"2"), ("vec/b", b"3")]),
        ];
        let record = encode_manifest(&header(), &log);
        assert_eq!(&record[..4], b"MNMO");
        assert_eq!(codec::record_version(&record), COMPACT_ROWS_VERSION);
        assert_eq!(record[6], 2);
        let (decoded, frames) = decode_manifest(&record).unwrap();
        assert_eq!(decoded, header());
        assert_eq!(frames, [&log[0][..], &log[1][..]]);
        assert_eq!(records_of(frames[1]).unwrap()[1], ("vec/b", &b"3"[..]));
        let empty = encode_manifest(&header(), &[]);
        assert!(decode_manifest(&empty).unwrap().1.is_empty());
    }

    #[test]
    fn segments_round_trip_and_refuse_disorder_and_damage() {
        let records = [("item/a", &b"one"[..]), ("item/b", &b"two"[..])];
        let lexical = [(1, vec![("two", 1)])];
        let record = encode_segment(&records, &lexical, &encode_catalog(&[]));
        assert_eq!(record[6], 5);
        assert_eq!(codec::record_version(&record), COMPACT_ROWS_VERSION);
        let decoded = decode_segment(&record).unwrap();
        assert_eq!(decoded.records, records);
        let docs = decoded.lexical.unwrap().docs;
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].0, 1);
        assert_eq!(docs[0].1.iter().collect::<Vec<_>>(), [("two", 1)]);
        let unsorted = encode_segment(&[records[1], records[0]], &[], &encode_catalog(&[]));
        assert!(decode_segment(&unsorted).is_err());
        assert!(decode_segment(&encode_segment(&[], &[], &encode_catalog(&[]))).is_err());
        // A doc must be a memory record.
        let file = [("file/x", &b"f"[..])];
        assert!(decode_segment(&encode_segment(&file, &[(0, vec![])], &encode_catalog(&[]))).is_err());
        // A segment of format 4 is the frame alone, without a part.
        let old = codec::encode(RecordType::Segment, LAYOUT_VERSION, &encode_records(&records));
        let decoded = decode_segment(&old).unwrap();
        assert_eq!(decoded.records, records);
        assert!(decoded.lexical.is_none());
        for i in 0..record.len() {
            let mut bad = record.clone();
            bad[i] ^= 0x04;
            assert!(decode_segment(&bad).is_err(), "flip at byte {i} went unnoticed");
        }
        // A manifest is not a segment, nor the other way round.
        assert!(decode_segment(&encode_manifest(&header(), &[])).is_err());
        assert!(decode_manifest(&record).is_err());
    }

    #[test]
    fn empty_memory_records_are_the_catalog_rows_in_order() {
        let item = |id: &str| -> MemoryItem {
            serde_json::from_value(serde_json::json!({
                "id": id, "text": "t", "kind": "episodic",
                "scope": {"userId": "u", "workspaceId": "w"}, "status": "approved",
                "source": {"kind": "manual", "ref": ""}, "contentHash": "h",
                "createdAt": "2023-11-14T22:13:20.000Z",
                "updatedAt": "2023-11-14T22:13:20.000Z"
            }))
            .unwrap()
        };
        let (a, c) = (item("a"), item("c"));
        let records = [
            ("item/a", &b""[..]),
            ("item/b", &b"json"[..]),
            ("item/c", &b""[..]),
            ("vec/a", &b"v"[..]),
        ];
        let record = encode_segment(&records, &[], &encode_catalog(&[&a, &c]));
        assert_eq!(segment_parts(&record).unwrap().version, COMPACT_ROWS_VERSION);
        let decoded = decode_segment(&record).unwrap();
        assert_eq!(decoded.records, records);
        let items = |rows: &[CatalogRow]| rows.iter().map(CatalogRow::to_item).collect::<Vec<_>>();
        assert_eq!(items(&decoded.rows), [a.clone(), c.clone()]);
        // Read again once listed: the same records, keys as bytes.
        let listed = decode_listed_segment(&record).unwrap();
        let as_bytes: Vec<(&[u8], &[u8])> = records.iter().map(|(k, v)| (k.as_bytes(), *v)).collect();
        assert_eq!(listed.records, as_bytes);
        assert_eq!(items(&listed.rows), items(&decoded.rows));
        // Rows out of order, one missing, one too many, an empty record
        // that is not a memory's.
        for catalog in [
            encode_catalog(&[&c, &a]),
            encode_catalog(&[&a]),
            encode_catalog(&[&a, &c, &c]),
        ] {
            assert!(decode_segment(&encode_segment(&records, &[], &catalog)).is_err());
        }
        let vector = [("item/a", &b""[..]), ("vec/a", &b""[..])];
        let catalog = encode_catalog(&[&a, &a]);
        assert!(decode_segment(&encode_segment(&vector, &[], &catalog)).is_err());
        // Before version 6 an empty record is not a row.
        let old = codec::encode(RecordType::Segment, INDEXED_VERSION, &{
            let frame = encode_records(&records);
            let mut payload = (frame.len() as u32).to_le_bytes().to_vec();
            payload.extend_from_slice(&frame);
            payload.extend_from_slice(&encode_lexical(&[]));
            payload
        });
        assert!(decode_segment(&old).is_err());
    }

    #[test]
    fn a_log_frame_may_not_delete() {
        let frame = encode_frame(&[("item/a", None)]).unwrap();
        assert!(records_of(&frame).is_err());
        let mut payload = Vec::new();
        let json = serde_json::to_vec(&header()).unwrap();
        payload.extend_from_slice(&(json.len() as u32).to_le_bytes());
        payload.extend_from_slice(&json);
        payload.extend_from_slice(&frame[..frame.len() - 1]);
        let torn = codec::encode(RecordType::Manifest, LAYOUT_VERSION, &payload);
        assert!(decode_manifest(&torn).is_err());
    }
}
