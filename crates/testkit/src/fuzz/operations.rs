//! Target `operations`: a model's reply read by `parse_operations` and
//! applied by `Memory::apply_operations` to the seeded store, in
//! `alice/home`, with every seeded id shown to the "model" (those of other
//! scopes, another user and the soft-deleted one included).
//!
//! Invariants:
//! * reading and applying succeed or fail with `INVALID_OPERATIONS`, never
//!   a panic;
//! * on failure nothing changed: same export, same stored bytes;
//! * on success every memory it superseded names its successor, which names
//!   it back, every memory it deleted is soft-deleted, and the stored state
//!   reopens to the same export.

use memtide::storage::{MemoryStorage, Storage};
use memtide::{parse_operations, Memory, OperationsRequest, Scope};

use super::{assert_code, env, seeded_memory};

/// See the module documentation.
pub fn check(data: &[u8]) {
    let reply = String::from_utf8_lossy(data);
    let mut mem = seeded_memory();
    let before = mem.export();
    let stored_before = stored(mem.storage());
    let allowed: Vec<String> = (1..=10).map(|n| format!("m{n:06}")).collect();
    let limit = mem.config().limits.max_operations_bytes;
    let applied = parse_operations(&reply, limit).and_then(|operations| {
        mem.apply_operations(OperationsRequest {
            scope: Scope::workspace("alice", "home"),
            allowed,
            operations,
        })
    });
    match applied {
        Ok(result) => {
            for supersession in &result.superseded {
                let old = mem.get(&supersession.id).expect("a superseded memory stays");
                assert_eq!(old.superseded_by.as_deref(), Some(supersession.by.as_str()));
                let new = mem.get(&supersession.by).expect("its successor is stored");
                assert!(new.supersedes.contains(&supersession.id));
                assert!(!new.is_superseded());
            }
            for id in &result.deleted {
                assert!(mem.get(id).expect("a deleted memory stays").is_deleted());
            }
            let after = mem.export();
            let reopened = Memory::open(mem.storage().clone(), env(), Default::default())
                .expect("the store reopens");
            assert_eq!(reopened.export(), after, "the reopened store differs");
        }
        Err(error) => {
            assert_code(&error, &["INVALID_OPERATIONS"], "apply_operations");
            assert_eq!(mem.export(), before, "refused operations changed the store");
            assert_eq!(stored(mem.storage()), stored_before, "refused operations wrote");
        }
    }
}

fn stored(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    storage.scan("").expect("an in-memory scan")
}
