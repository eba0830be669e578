//! Target `layout`: opening a store of the segmented layout (format 4,
//! `docs/format.md` section 2.2) whose manifest or segment holds arbitrary
//! bytes.
//!
//! The first byte picks what the rest becomes:
//! * 0 mod 3: the manifest's value itself;
//! * 1 mod 3: the payload of a manifest record of format 4 (so the header
//!   and log decoders run past the record's checksum);
//! * 2 mod 3: four u16 (the segment's record count and the store's item,
//!   embedding and file counts), then the payload of a segment record that
//!   a well-formed manifest names with those counts.
//!
//! Opening returns a store or a typed error, never a panic; a store that
//! opens reopens to the same memories, and takes a write that a reopen finds.

use memtide::codec::{self, RecordType};
use memtide::storage::{Batch, MemoryStorage, Storage};
use memtide::{Memory, MemoryInput, Scope};

use super::{assert_code, NOW};
use memtide::env::FixedEnvironment;

const MANIFEST: &str = "meta/manifest";
const LAYOUT_VERSION: u16 = 4;

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut batch = Batch::new();
    match mode % 3 {
        0 => batch.put(MANIFEST, rest.to_vec()),
        1 => batch.put(
            MANIFEST,
            codec::encode(RecordType::Manifest, LAYOUT_VERSION, rest),
        ),
        _ => {
            let Some((counts, payload)) = rest.split_first_chunk::<8>() else {
                return;
            };
            let count = |i: usize| u16::from_le_bytes([counts[2 * i], counts[2 * i + 1]]);
            let segment = codec::encode(RecordType::Segment, LAYOUT_VERSION, payload);
            let crc = u32::from_le_bytes(segment[segment.len() - 4..].try_into().unwrap_or([0; 4]));
            let header = serde_json::json!({
                "formatVersion": LAYOUT_VERSION,
                "itemCount": count(1),
                "vectorCount": count(2),
                "fileCount": count(3),
                "nextSegment": 1,
                "segments": [{"number": 0, "records": count(0), "bytes": segment.len(), "crc32": crc}],
            });
            let json = header.to_string().into_bytes();
            let mut manifest = (json.len() as u32).to_le_bytes().to_vec();
            manifest.extend_from_slice(&json);
            batch.put(
                MANIFEST,
                codec::encode(RecordType::Manifest, LAYOUT_VERSION, &manifest),
            );
            batch.put("seg/0000000000", segment);
        }
    }
    let mut storage = MemoryStorage::new();
    storage.commit(&batch).expect("a memory store commits");
    let open = |storage: MemoryStorage| {
        Memory::open(storage, FixedEnvironment::new(NOW), Default::default())
    };
    let mut mem = match open(storage) {
        Ok(mem) => mem,
        Err(e) => {
            assert_code(&e, &["CORRUPT", "VERSION_MISMATCH"], "open");
            return;
        }
    };
    let export = mem.export();
    let again = open(mem.storage().clone()).expect("a store that opened reopens");
    assert_eq!(again.export(), export, "a reopen changed the store");
    let input = MemoryInput::new("fuzzed stores take writes", Scope::workspace("f", "z"));
    match mem.ingest(vec![input]) {
        Ok(results) => {
            let id = results[0].id.clone().expect("an ingest stores or merges");
            let after = open(mem.storage().clone()).expect("the store reopens after a write");
            assert!(after.get(&id).is_ok(), "the write was lost");
        }
        Err(e) => assert_code(&e, &["INVALID_INPUT", "TOO_LARGE"], "ingest"),
    }
}
