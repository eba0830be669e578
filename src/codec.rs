//! The versioned, checksummed record format memtide persists.
//!
//! Every value memtide writes to a [`crate::storage::Storage`] is one record:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 4 | magic `MNMO` (`4D 4E 4D 4F`) |
//! | 4 | 2 | format version, u16 little-endian (1 to 5, see below) |
//! | 6 | 1 | record type: 1 = memory item, 2 = manifest, 3 = vector, 4 = file, 5 = segment |
//! | 7 | 1 | flags, reserved, 0 |
//! | 8 | 4 | payload length `N`, u32 little-endian |
//! | 12 | N | payload: UTF-8 JSON of the record (see below) |
//! | 12+N | 4 | CRC-32 (IEEE) of bytes `0..12+N`, u32 little-endian |
//!
//! Payloads: a memory item is the JSON of [`MemoryItem`] (the same camelCase
//! JSON as the API); the manifest is the JSON of [`Manifest`]; a vector (the
//! embedding of one item) is, in version 3, its dimension count as a u32
//! little-endian, its scale as an f32 little-endian and that many int8
//! codes ([`Int8Vector`]); in versions 1 and 2, its dimension count followed
//! by that many f32 little-endian components; a file is the JSON of
//! [`StoredFile`]. Manifests of versions 4 and 5 and segments hold the segmented
//! layout of `crate::layout` (binary payloads described there).
//!
//! Each record is written in the oldest version that can hold it: version 5
//! for items with a `key`, `metadata` or `history`, or that record who
//! said them (`role`, `speaker`); version 3
//! for vector records; version 2 for file records, for chunks of files
//! (items with `sourceLines`) and for a manifest that counts files; version
//! 1 for everything else. A store without files or embeddings is therefore
//! byte-for-byte what the first builds wrote, and older builds refuse a
//! store holding records they cannot read with `VERSION_MISMATCH` rather
//! than misread it. `f32` vector records of older builds are read and
//! quantized. A reader rejects
//! a record whose magic, length or checksum is wrong ([`CodecError`] →
//! `CORRUPT`) and one whose version is newer than [`FORMAT_VERSION`]
//! (`VERSION_MISMATCH`). `docs/format.md` describes the keys these records
//! live under.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::files::StoredFile;
use crate::index::{Int8Ref, Int8Vector};
use crate::item::MemoryItem;

/// The newest record format version this build writes and reads: the
/// segmented layout's manifest and segments with lexical and catalog parts
/// whose rows name the row before them (item records with a key,
/// metadata, history, role or speaker are of version 5).
pub const FORMAT_VERSION: u16 = 7;
/// The version of item records with a key, metadata, history, role or
/// speaker.
const KEYED_FORMAT_VERSION: u16 = 5;
/// The version of records that hold nothing of files or embeddings (see
/// the module documentation).
const BASE_FORMAT_VERSION: u16 = 1;
/// The version of records that hold something of files.
const FILES_FORMAT_VERSION: u16 = 2;
/// The version of vector records: int8 codes.
const INT8_VECTOR_VERSION: u16 = 3;

const MAGIC: [u8; 4] = *b"MNMO";
const HEADER_LEN: usize = 12;
const TRAILER_LEN: usize = 4;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// A [`MemoryItem`].
    Item = 1,
    /// The store's [`Manifest`].
    Manifest = 2,
    /// An item's embedding.
    Vector = 3,
    /// A [`StoredFile`].
    File = 4,
    /// A segment of the segmented layout: many records.
    Segment = 5,
}

/// Why a record failed to decode.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    /// Fewer bytes than the header or the declared payload needs.
    #[error("record is truncated ({0} bytes)")]
    Truncated(usize),
    /// The first four bytes are not `MNMO`.
    #[error("record does not start with the MNMO magic")]
    BadMagic,
    /// The CRC-32 does not match the bytes.
    #[error("record checksum mismatch")]
    BadChecksum,
    /// Written by a newer format.
    #[error("record format version {0} is newer than this build reads")]
    UnsupportedVersion(u16),
    /// The record type byte is unknown.
    #[error("unknown record type {0}")]
    UnknownType(u8),
    /// Wrong record type for the caller.
    #[error("expected a {expected:?} record, found {found:?}")]
    WrongType {
        /// What the caller asked for.
        expected: RecordType,
        /// What the record holds.
        found: RecordType,
    },
    /// The payload is not the expected JSON.
    #[error("record payload does not decode: {0}")]
    Payload(String),
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::UnsupportedVersion(v) => Error::VersionMismatch {
                found: u32::from(v),
                supported: u32::from(FORMAT_VERSION),
            },
            other => Error::Corrupt(other.to_string()),
        }
    }
}

impl CodecError {
    /// The error for the record stored under `key` that did not decode:
    /// damage names the key; a version this build cannot read stays a
    /// version mismatch.
    pub(crate) fn in_record(self, key: &str) -> Error {
        match Error::from(self) {
            Error::Corrupt(m) => Error::Corrupt(format!("record `{key}`: {m}")),
            other => other,
        }
    }
}

/// Wraps a payload in a record of the given format version.
pub fn encode(record_type: RecordType, version: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.push(record_type as u8);
    out.push(0);
    // Payloads are bounded far below 4 GiB by the ingest limits.
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a record and returns its type and payload.
pub fn decode(bytes: &[u8]) -> Result<(RecordType, &[u8]), CodecError> {
    decode_record(bytes, true)
}

/// [`decode`] of a record that [`decode`] has accepted before, these same
/// bytes: its checksum is not computed again (the layout reader reads each
/// segment twice, listing its keys and then decoding it).
pub(crate) fn decode_accepted(bytes: &[u8]) -> Result<(RecordType, &[u8]), CodecError> {
    decode_record(bytes, false)
}

fn decode_record(bytes: &[u8], check_crc: bool) -> Result<(RecordType, &[u8]), CodecError> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(CodecError::Truncated(bytes.len()));
    }
    if bytes[0..4] != MAGIC {
        return Err(CodecError::BadMagic);
    }
    let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    let end = HEADER_LEN
        .checked_add(len)
        .filter(|end| end + TRAILER_LEN == bytes.len())
        .ok_or(CodecError::Truncated(bytes.len()))?;
    let stored_crc =
        u32::from_le_bytes([bytes[end], bytes[end + 1], bytes[end + 2], bytes[end + 3]]);
    if check_crc && crc32fast::hash(&bytes[..end]) != stored_crc {
        return Err(CodecError::BadChecksum);
    }
    let version = record_version(bytes);
    if version > FORMAT_VERSION {
        return Err(CodecError::UnsupportedVersion(version));
    }
    let record_type = match bytes[6] {
        1 => RecordType::Item,
        2 => RecordType::Manifest,
        3 => RecordType::Vector,
        4 => RecordType::File,
        5 => RecordType::Segment,
        other => return Err(CodecError::UnknownType(other)),
    };
    Ok((record_type, &bytes[HEADER_LEN..end]))
}

fn decode_json<T: for<'de> Deserialize<'de>>(
    bytes: &[u8],
    expected: RecordType,
) -> Result<T, CodecError> {
    let (found, payload) = decode(bytes)?;
    if found != expected {
        return Err(CodecError::WrongType { expected, found });
    }
    serde_json::from_slice(payload).map_err(|e| CodecError::Payload(e.to_string()))
}

fn encode_json<T: Serialize>(record_type: RecordType, version: u16, value: &T) -> Vec<u8> {
    // Serializing our own plain data types to JSON cannot fail.
    let payload = serde_json::to_vec(value).unwrap_or_default();
    encode(record_type, version, &payload)
}

/// The version of a record: 2 when it holds something of files (`uses_files`),
/// else 1.
pub fn version_for(uses_files: bool) -> u16 {
    if uses_files {
        FILES_FORMAT_VERSION
    } else {
        BASE_FORMAT_VERSION
    }
}

/// Encodes a memory item record: version 5 when it has a field of that
/// version ([`MemoryItem::uses_v5_fields`]), else 2 for a chunk of a file,
/// else 1.
pub fn encode_item(item: &MemoryItem) -> Vec<u8> {
    #[cfg(any(test, feature = "testing"))]
    ENCODED_ITEMS.with(|count| count.set(count.get() + 1));
    let version = if item.uses_v5_fields() {
        KEYED_FORMAT_VERSION
    } else {
        version_for(item.source_lines.is_some())
    };
    encode_json(RecordType::Item, version, item)
}

/// The length of [`encode_item`]'s record for `item`, without making it
/// (`stats` sums it over every memory): the JSON's length is counted from
/// the fields (`crate::json_len`).
pub fn item_record_len(item: &MemoryItem) -> usize {
    json_record_len(crate::json_len::item_json_len(item))
}

/// Bytes of the record of a memory whose JSON takes `json_len` bytes.
pub(crate) fn json_record_len(json_len: usize) -> usize {
    HEADER_LEN + json_len + TRAILER_LEN
}

/// Decodes a memory item record.
pub fn decode_item(bytes: &[u8]) -> Result<MemoryItem, CodecError> {
    #[cfg(any(test, feature = "testing"))]
    DECODED_ITEMS.with(|count| count.set(count.get() + 1));
    decode_json(bytes, RecordType::Item)
}

#[cfg(any(test, feature = "testing"))]
thread_local! {
    static DECODED_ITEMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static ENCODED_ITEMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many item records [`encode_item`] made on this thread so far: the
/// tests check that a commit makes no JSON of a memory that a segment's
/// catalog part holds.
#[cfg(any(test, feature = "testing"))]
pub fn encoded_items() -> usize {
    ENCODED_ITEMS.with(std::cell::Cell::get)
}

/// How many item records [`decode_item`] decoded on this thread so far:
/// the tests check that opening a store decodes no memory's JSON that a
/// segment's catalog part holds.
#[cfg(any(test, feature = "testing"))]
pub fn decoded_items() -> usize {
    DECODED_ITEMS.with(std::cell::Cell::get)
}

/// Encodes an embedding record: version 3, int8 codes and their scale.
pub fn encode_vector<'a>(vector: impl Into<Int8Ref<'a>>) -> Vec<u8> {
    let vector = vector.into();
    let mut payload = Vec::with_capacity(8 + vector.len());
    let dims = u32::try_from(vector.len()).unwrap_or(u32::MAX);
    payload.extend_from_slice(&dims.to_le_bytes());
    payload.extend_from_slice(&vector.scale().to_le_bytes());
    payload.extend(vector.codes().iter().map(|&code| code.to_le_bytes()[0]));
    encode(RecordType::Vector, INT8_VECTOR_VERSION, &payload)
}

/// The length of [`encode_vector`]'s record for an embedding of
/// `dimensions` components, without making it (`stats` sums it over every
/// embedding): the header, the length and the scale (4 bytes each), one
/// byte per code, the trailer.
pub fn vector_record_len(dimensions: usize) -> usize {
    HEADER_LEN + 8 + dimensions + TRAILER_LEN
}

/// A decoded embedding record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedVector {
    /// The embedding (an `f32` record quantized).
    pub vector: Int8Vector,
    /// Whether the record holds `f32` components (versions 1 and 2).
    pub legacy: bool,
}

/// Decodes an embedding record: int8 codes (version 3) or `f32`
/// components (versions 1 and 2, quantized here); every component and the
/// scale must be finite.
pub fn decode_vector(bytes: &[u8]) -> Result<DecodedVector, CodecError> {
    let (found, payload) = decode(bytes)?;
    if found != RecordType::Vector {
        return Err(CodecError::WrongType {
            expected: RecordType::Vector,
            found,
        });
    }
    let bad = |m: &str| CodecError::Payload(m.to_string());
    let (dims, rest) = payload
        .split_first_chunk::<4>()
        .ok_or_else(|| bad("vector without length"))?;
    let dims = u32::from_le_bytes(*dims) as usize;
    if record_version(bytes) >= INT8_VECTOR_VERSION {
        let (scale, codes) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("vector without scale"))?;
        if codes.len() != dims {
            return Err(bad("vector length does not match its codes"));
        }
        let codes = codes.iter().map(|&b| i8::from_le_bytes([b])).collect();
        let vector = Int8Vector::from_parts(codes, f32::from_le_bytes(*scale))
            .ok_or_else(|| bad("vector scale is negative or not finite"))?;
        return Ok(DecodedVector {
            vector,
            legacy: false,
        });
    }
    if rest.len() != dims.saturating_mul(4) {
        return Err(bad("vector length does not match its components"));
    }
    let components: Vec<f32> = rest
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if components.iter().all(|x| x.is_finite()) {
        Ok(DecodedVector {
            vector: Int8Vector::quantize(&components),
            legacy: true,
        })
    } else {
        Err(bad("vector has a non-finite component"))
    }
}

/// The format version of a record that [`decode`] accepted.
pub fn record_version(bytes: &[u8]) -> u16 {
    u16::from_le_bytes([bytes[4], bytes[5]])
}

/// The manifest of formats 1 to 3, where each record had a key of its own:
/// read to check such a store before it is migrated (`crate::layout`). On
/// open, the records found must match it exactly; a mismatch means a backend
/// broke the all-or-nothing contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Record format version of the manifest: 1, or 2 when the store holds
    /// files.
    pub format_version: u16,
    /// Number of item records.
    pub item_count: u64,
    /// Number of vector records.
    #[serde(default)]
    pub vector_count: u64,
    /// XOR of the sha256 of every item and vector record's bytes, lowercase
    /// hex: order independent and updatable one record at a time.
    pub items_digest: String,
    /// The embedding model every vector record comes from, when there are
    /// vectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// Number of file records (absent: 0). Their records count in
    /// `items_digest` too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub file_count: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Encodes a manifest of format 1 or 2 (version 2 when it counts files):
/// tests write stores of the older formats with it.
#[cfg(any(test, feature = "testing"))]
pub fn encode_manifest(manifest: &Manifest) -> Vec<u8> {
    encode_json(
        RecordType::Manifest,
        version_for(manifest.file_count > 0),
        manifest,
    )
}

/// Decodes a manifest record of format 1 or 2.
pub fn decode_manifest(bytes: &[u8]) -> Result<Manifest, CodecError> {
    decode_json(bytes, RecordType::Manifest)
}

/// Encodes a file record (always version 2).
pub fn encode_file(file: &StoredFile) -> Vec<u8> {
    encode_json(RecordType::File, FILES_FORMAT_VERSION, file)
}

/// Decodes a file record.
pub fn decode_file(bytes: &[u8]) -> Result<StoredFile, CodecError> {
    decode_json(bytes, RecordType::File)
}

/// An order-independent digest of a set of records (XOR of their sha256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetDigest([u8; 32]);

impl SetDigest {
    /// Adds or removes one record (XOR is its own inverse).
    pub fn toggle(&mut self, record: &[u8]) {
        self.toggle_hash(&Self::hash(record));
    }

    /// Adds or removes the record whose [`SetDigest::hash`] is `hash`.
    pub fn toggle_hash(&mut self, hash: &[u8; 32]) {
        for (acc, byte) in self.0.iter_mut().zip(hash) {
            *acc ^= byte;
        }
    }

    /// The sha256 of a record: what [`SetDigest::toggle`] folds in.
    pub fn hash(record: &[u8]) -> [u8; 32] {
        Sha256::digest(record).into()
    }

    /// Lowercase hex.
    pub fn to_hex(self) -> String {
        crate::text::hex(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_damage() {
        let rec = encode(RecordType::Manifest, FORMAT_VERSION, b"{\"x\":1}");
        assert_eq!(
            decode(&rec).unwrap(),
            (RecordType::Manifest, &b"{\"x\":1}"[..])
        );
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad).is_err(), "flip at byte {i} went unnoticed");
        }
        for cut in 0..rec.len() {
            assert!(
                decode(&rec[..cut]).is_err(),
                "truncation at {cut} went unnoticed"
            );
        }
    }

    #[test]
    fn newer_versions_are_refused_with_version_mismatch() {
        let newer = FORMAT_VERSION + 1;
        let mut rec = encode(RecordType::Item, FORMAT_VERSION, b"{}");
        rec[4..6].copy_from_slice(&newer.to_le_bytes());
        let end = rec.len() - 4;
        let crc = crc32fast::hash(&rec[..end]).to_le_bytes();
        rec[end..].copy_from_slice(&crc);
        assert_eq!(decode(&rec), Err(CodecError::UnsupportedVersion(newer)));
        assert_eq!(
            Error::from(CodecError::UnsupportedVersion(newer)).code(),
            "VERSION_MISMATCH"
        );
    }

    #[test]
    fn vectors_round_trip_and_reject_bad_lengths_scales_and_non_finite_values() {
        let v = Int8Vector::quantize(&[0.5, -0.25, 1e-7]);
        let record = encode_vector(&v);
        assert_eq!(
            decode_vector(&record).unwrap(),
            DecodedVector {
                vector: v.clone(),
                legacy: false
            }
        );
        // Header, dimension count, scale, one byte per code, checksum.
        assert_eq!(record.len(), 12 + 4 + 4 + 3 + 4);
        assert_eq!(record[12..16], 3u32.to_le_bytes());
        assert_eq!(record[16..20], (0.5f32 / 127.0).to_le_bytes());
        assert_eq!(record[20..23], [127, (-64i8).to_le_bytes()[0], 0]);
        let v3 = |payload: &[u8]| encode(RecordType::Vector, 3, payload);
        assert!(
            decode_vector(&v3(&[2, 0, 0, 0, 0, 0, 0, 0, 1])).is_err(),
            "length says 2, holds 1"
        );
        assert!(decode_vector(&v3(&[1, 0, 0, 0])).is_err(), "no scale");
        let negative = (-1.0f32).to_le_bytes();
        let nan = f32::NAN.to_le_bytes();
        for scale in [negative, nan] {
            let payload = [&[1, 0, 0, 0][..], &scale, &[1]].concat();
            assert!(decode_vector(&v3(&payload)).is_err());
        }
        assert!(decode_vector(&encode_manifest(&Manifest::default())).is_err());
    }

    #[test]
    fn a_vector_record_length_follows_from_the_dimensions() {
        // Every dimension up to twice MiniLM's, each kind of embedding a
        // store holds: all zero (scale 0), quantized, and read from an
        // `f32` record of a legacy store (written back as int8).
        for dimensions in 0..=768 {
            let ramp: Vec<f32> = (0..dimensions).map(|i| i as f32 - 100.0).collect();
            let legacy = decode_vector(&legacy_vector_record(&ramp)).unwrap().vector;
            for vector in [
                Int8Vector::quantize(&vec![0.0; dimensions]),
                Int8Vector::quantize(&ramp),
                legacy,
            ] {
                assert_eq!(
                    vector_record_len(dimensions),
                    encode_vector(&vector).len(),
                    "{dimensions} dimensions"
                );
            }
        }
    }

    /// A vector record as builds before int8 records wrote it: version 1,
    /// the dimension count and `f32` components.
    fn legacy_vector_record(components: &[f32]) -> Vec<u8> {
        let mut payload = (components.len() as u32).to_le_bytes().to_vec();
        for x in components {
            payload.extend_from_slice(&x.to_le_bytes());
        }
        encode(RecordType::Vector, 1, &payload)
    }

    #[test]
    fn legacy_f32_vector_records_are_read_and_quantized() {
        let components = [0.5f32, -0.25, 1e-7];
        let decoded = decode_vector(&legacy_vector_record(&components)).unwrap();
        assert!(decoded.legacy);
        assert_eq!(decoded.vector, Int8Vector::quantize(&components));
        let mut bad = encode(RecordType::Vector, 1, &[2, 0, 0, 0, 0, 0, 0, 0]);
        assert!(decode_vector(&bad).is_err(), "length says 2, holds 1");
        bad = legacy_vector_record(&[f32::NAN]);
        assert!(decode_vector(&bad).is_err());
    }

    #[test]
    fn records_use_version_2_only_for_what_holds_files() {
        let version = |record: &[u8]| u16::from_le_bytes([record[4], record[5]]);
        let plain = Manifest {
            format_version: version_for(false),
            ..Manifest::default()
        };
        assert_eq!(version(&encode_manifest(&plain)), 1);
        assert_eq!(plain.format_version, 1);
        let with_files = Manifest {
            file_count: 1,
            ..Manifest::default()
        };
        let record = encode_manifest(&with_files);
        assert_eq!(version(&record), 2);
        assert_eq!(decode_manifest(&record).unwrap(), with_files);
        assert!(!String::from_utf8_lossy(&encode_manifest(&plain)).contains("fileCount"));
        assert_eq!(version(&encode_vector(&Int8Vector::quantize(&[1.0]))), 3);
        let file = StoredFile {
            scope: crate::item::Scope::workspace("u", "w"),
            path: "MEMORY.md".into(),
            content: "# Notes\n".into(),
            content_hash: "h".into(),
            updated_at: crate::item::Timestamp(0),
        };
        let record = encode_file(&file);
        assert_eq!(version(&record), 2);
        assert_eq!(decode_file(&record).unwrap(), file);
        assert!(decode_file(&encode_manifest(&plain)).is_err());
    }

    #[test]
    fn items_that_record_a_speaker_are_version_5_and_others_keep_theirs() {
        let version = |record: &[u8]| u16::from_le_bytes([record[4], record[5]]);
        let item: MemoryItem = serde_json::from_str(
            r#"{"id":"m1","text":"I adopted a cat","kind":"episodic",
                "scope":{"userId":"u","workspaceId":"w"},"status":"approved",
                "source":{"kind":"message","ref":""},"contentHash":"h",
                "createdAt":"2024-01-01T00:00:00Z","updatedAt":"2024-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(version(&encode_item(&item)), 1);
        for (role, speaker) in [
            (Some(crate::item::Role::User), None),
            (None, Some("Caroline".to_string())),
        ] {
            let said = MemoryItem {
                role,
                speaker,
                ..item.clone()
            };
            let record = encode_item(&said);
            assert_eq!(version(&record), 5);
            assert_eq!(decode_item(&record).unwrap(), said);
        }
    }

    #[test]
    fn set_digest_is_order_independent_and_invertible() {
        let mut a = SetDigest::default();
        a.toggle(b"one");
        a.toggle(b"two");
        let mut b = SetDigest::default();
        b.toggle(b"two");
        b.toggle(b"one");
        assert_eq!(a, b);
        b.toggle(b"two");
        b.toggle(b"one");
        assert_eq!(b, SetDigest::default());
    }
}
