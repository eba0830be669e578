//! Target `lexical`: opening a store whose segment carries an arbitrary
//! lexical part (`docs/format.md`, section 2.2; `src/layout/lexical.rs`).
//!
//! A store of a few memories, one soft-deleted, is written once with its
//! memories in one segment of format 6; `data` replaces that segment's
//! lexical part, and the manifest is made to name the new segment (its
//! length and CRC-32), so the part's decoder and the engine's checks of it
//! run on every input.
//!
//! Opening returns a store or `CORRUPT`, never a panic. A store that opens
//! answers a query, erases a memory (which rewrites the segment with the
//! terms the engine holds) and then reopens to the same memories.

use std::sync::OnceLock;

use memtide::codec::{self, RecordType};
use memtide::env::FixedEnvironment;
use memtide::storage::{Batch, MemoryStorage, Storage};
use memtide::{Memory, MemoryInput, RetrieveQuery, Scope};

use super::{assert_code, NOW};

const MANIFEST: &str = "meta/manifest";
const CATALOG_VERSION: u16 = 6;

/// The store of the `lexical` and `catalog` targets, the key of its one
/// segment, and that segment's payload cut into its parts.
pub(super) struct Base {
    pub(super) storage: MemoryStorage,
    pub(super) key: String,
    /// The frame with its length.
    pub(super) head: Vec<u8>,
    pub(super) lexical: Vec<u8>,
    pub(super) catalog: Vec<u8>,
}

/// See [`Base`]: memories with tags, a role, a speaker, a key, metadata,
/// privacy markers, a pin, and a soft delete, so the catalog part holds
/// every kind of row.
pub(super) fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let env = FixedEnvironment::new(NOW);
        let mut mem = Memory::open(MemoryStorage::new(), env, Default::default())
            .expect("an empty store opens");
        let scope = Scope::workspace("alice", "home");
        // Enough bytes in one ingest to go straight to a segment.
        let inputs: Vec<MemoryInput> = (0..24)
            .map(|i| {
                let text = format!(
                    "note {i}: the {} café opens at {} on weekdays; {} 東京都 {}",
                    ["harbour", "station", "museum"][i % 3],
                    7 + i % 5,
                    "the the and",
                    "x".repeat(400)
                );
                let mut input = MemoryInput::new(text, scope.clone().with_project("p"));
                if i % 4 == 1 {
                    input.tags = Some(vec!["house".into(), format!("t{}", i % 3)]);
                    input.pinned = Some(true);
                    input.speaker = Some("Caroline".into());
                    input.role = Some(memtide::Role::User);
                }
                if i % 4 == 2 {
                    input.key = Some(format!("key-{i}"));
                    let metadata = serde_json::json!({"topic": "cafe", "n": i});
                    input.metadata = metadata.as_object().cloned();
                }
                input
            })
            .collect();
        let ids: Vec<String> = mem
            .ingest(inputs)
            .expect("the base store takes its memories")
            .into_iter()
            .filter_map(|r| r.id)
            .collect();
        mem.ingest(vec![MemoryInput::new("the the and", scope.clone())])
            .expect("a text without terms is stored");
        mem.delete(&ids[4], false).expect("a soft delete");
        let storage = mem.storage().clone();
        let segment = storage
            .scan("seg/")
            .expect("a memory store scans")
            .into_iter()
            .next()
            .expect("the memories fill a segment");
        let (_, payload) = codec::decode(&segment.1).expect("the segment decodes");
        let u32_at = |at: usize| {
            u32::from_le_bytes(payload[at..at + 4].try_into().unwrap_or([0; 4])) as usize
        };
        let frame_end = 4 + u32_at(0);
        let lexical_end = frame_end + 4 + u32_at(frame_end);
        Base {
            storage,
            key: segment.0,
            head: payload[..frame_end].to_vec(),
            lexical: payload[frame_end + 4..lexical_end].to_vec(),
            catalog: payload[lexical_end..].to_vec(),
        }
    })
}

/// The manifest `manifest` naming segment `key` as `segment`.
fn renamed(manifest: &[u8], key: &str, segment: &[u8]) -> Vec<u8> {
    let (_, payload) = codec::decode(manifest).expect("the base manifest decodes");
    let header_len = u32::from_le_bytes(payload[..4].try_into().unwrap_or([0; 4])) as usize;
    let mut header: serde_json::Value =
        serde_json::from_slice(&payload[4..4 + header_len]).expect("the header is JSON");
    let number: u64 = key["seg/".len()..].parse().expect("a segment number");
    let crc = u32::from_le_bytes(segment[segment.len() - 4..].try_into().unwrap_or([0; 4]));
    for info in header["segments"].as_array_mut().into_iter().flatten() {
        if info["number"] == number {
            info["bytes"] = segment.len().into();
            info["crc32"] = crc.into();
        }
    }
    let json = header.to_string().into_bytes();
    let mut out = (json.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out.extend_from_slice(&payload[4 + header_len..]);
    codec::encode(RecordType::Manifest, CATALOG_VERSION, &out)
}

/// Opens the base store with its segment made of `lexical` and `catalog`,
/// and checks what the module documentation says.
pub(super) fn open_with(lexical: &[u8], catalog: &[u8]) {
    let base = base();
    let mut payload = base.head.clone();
    payload.extend_from_slice(&(lexical.len() as u32).to_le_bytes());
    payload.extend_from_slice(lexical);
    payload.extend_from_slice(catalog);
    let segment = codec::encode(RecordType::Segment, CATALOG_VERSION, &payload);
    let manifest = base
        .storage
        .get(MANIFEST)
        .ok()
        .flatten()
        .expect("the base has a manifest");
    let mut storage = base.storage.clone();
    let mut batch = Batch::new();
    batch.put(MANIFEST, renamed(&manifest, &base.key, &segment));
    batch.put(base.key.clone(), segment);
    storage.commit(&batch).expect("a memory store commits");
    let open = |storage: MemoryStorage| {
        Memory::open(storage, FixedEnvironment::new(NOW), Default::default())
    };
    let mut mem = match open(storage) {
        Ok(mem) => mem,
        Err(e) => {
            assert_code(&e, &["CORRUPT"], "open");
            return;
        }
    };
    let scope = Scope::workspace("alice", "home").with_project("p");
    for query in ["harbour café", "東京", "weekdays 9"] {
        mem.retrieve(&RetrieveQuery::new(query, scope.clone()))
            .expect("a store that opened answers");
    }
    let victim = mem
        .list(&Default::default())
        .expect("a store that opened lists")
        .items
        .first()
        .map(|item| item.id.clone());
    if let Some(id) = victim {
        mem.delete(&id, true).expect("a store that opened erases");
    }
    let export = mem.export();
    let again = open(mem.storage().clone()).expect("a store written after opening reopens");
    assert_eq!(again.export(), export, "a reopen changed the store");
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    open_with(data, &base().catalog);
}
