//! Target `import`: `Memory::import` of untrusted data into a store with
//! content.
//!
//! The first byte picks a mode (its value modulo 3): 0, the rest is the
//! document as given; 1, the rest is the `items` array of an export whose
//! envelope and checksum the check writes; 2, its `files` array (so the
//! validation of items and files runs past the checksums). Invariants:
//! * the import succeeds or fails with `INVALID_INPUT`, `CORRUPT`,
//!   `VERSION_MISMATCH` or `TOO_LARGE`, never a panic;
//! * on failure nothing changed: same export, same stored bytes;
//! * on success the stored state reopens to the same export, and the
//!   store's own export imports into it again without changing it.

use memtide::storage::{MemoryStorage, Storage};
use memtide::Memory;

use super::{assert_code, env, seeded_memory};

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let document = match mode % 3 {
        0 => text.into_owned(),
        1 => export_document(&text),
        _ => files_export_document(&text),
    };
    let mut mem = seeded_memory();
    let before = mem.export();
    let stored_before = stored(mem.storage());
    match mem.import(&document) {
        Ok(_) => {
            let after = mem.export();
            let reopened = Memory::open(mem.storage().clone(), env(), Default::default())
                .expect("an imported store reopens");
            assert_eq!(reopened.export(), after, "the reopened store differs");
            mem.import(&after)
                .expect("a store's own export imports into it");
            assert_eq!(mem.export(), after, "re-importing the export changed the store");
        }
        Err(error) => {
            assert_code(
                &error,
                &["INVALID_INPUT", "CORRUPT", "VERSION_MISMATCH", "TOO_LARGE"],
                "import",
            );
            assert_eq!(mem.export(), before, "a failed import changed the store");
            assert_eq!(stored(mem.storage()), stored_before, "a failed import wrote");
        }
    }
}

/// An export document around `items` (raw JSON) with the right checksum:
/// the sha256 of the items' text, which is what `content_hash` computes.
pub fn export_document(items: &str) -> String {
    let items = items.trim_matches([' ', '\t', '\n', '\r']);
    let checksum = memtide::text::content_hash(items);
    format!("{{\"format\":\"mnemo-export\",\"version\":1,\"checksum\":\"{checksum}\",\"items\":{items}}}")
}

/// A version 2 export document of no memories and the files `files` (raw
/// JSON), with the right checksums.
pub fn files_export_document(files: &str) -> String {
    let files = files.trim_matches([' ', '\t', '\n', '\r']);
    let checksum = memtide::text::content_hash(files);
    let no_items = memtide::text::content_hash("[]");
    format!(
        "{{\"format\":\"mnemo-export\",\"version\":2,\"checksum\":\"{no_items}\",\"items\":[],\"filesChecksum\":\"{checksum}\",\"files\":{files}}}"
    )
}

fn stored(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    storage.scan("").expect("an in-memory scan")
}
