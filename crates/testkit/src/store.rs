//! The store the API tests start from: empty, in memory, with a fixed clock
//! at [`T0`] and the default configuration.

use std::collections::BTreeMap;

use memtide::env::FixedEnvironment;
use memtide::storage::{KvStorage, MemoryStorage};
use memtide::{block_on, AsyncMemory, Memory, Scope, Timestamp};

use crate::faults::MapKv;

/// The fixed clock of the tests, in Unix milliseconds (November 2023).
pub const T0: i64 = 1_700_000_000_000;

/// A memory store over [`MemoryStorage`] with a fixed clock.
pub type Mem = Memory<MemoryStorage, FixedEnvironment>;

/// An empty store at [`T0`] with the default configuration.
pub fn open() -> Mem {
    Memory::open(
        MemoryStorage::new(),
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    )
    .expect("an empty store opens")
}

/// `mem`'s storage opened again, at [`T0`] with the default configuration:
/// what a reopened store reads back.
pub fn reopen(mem: Mem) -> Mem {
    Memory::open(
        mem.into_storage(),
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    )
    .expect("the store reopens")
}

/// A store over a key-value backend, opened asynchronously (as a host
/// with an async backend opens it), with a fixed clock.
pub type KvMem = AsyncMemory<KvStorage<MapKv>, FixedEnvironment>;

/// The store `kv` holds, opened at [`T0`] with the default configuration.
pub fn open_kv(kv: &MapKv) -> KvMem {
    let storage = block_on(KvStorage::open(kv.clone()))
        .expect("the backend answers")
        .expect("the store opens");
    block_on(AsyncMemory::open(
        storage,
        FixedEnvironment::new(Timestamp(T0)),
        Default::default(),
    ))
    .expect("the backend answers")
    .expect("the store opens")
}

/// The one scope of the tests that need only one.
pub fn scope() -> Scope {
    Scope::workspace("alice", "home")
}

/// Every record `storage` holds (`item/…`, `vec/…`, `file/…`), by key,
/// wherever the layout keeps it: what the tests compare and search.
pub fn records(storage: &impl memtide::storage::Storage) -> BTreeMap<String, Vec<u8>> {
    memtide::block_on(memtide::layout::stored_records(storage))
        .expect("a synchronous store answers at once")
        .expect("the store's records read")
}

/// Every byte `storage` holds, keys and values, as stored (segments, the
/// log, records): where an erasure test looks for a text.
pub fn stored_bytes(storage: &MemoryStorage) -> Vec<u8> {
    storage
        .entries()
        .flat_map(|(k, v)| k.bytes().chain(v.iter().copied()))
        .collect()
}

/// Whether a value `storage` holds, as stored, contains `needle`.
pub fn holds(storage: &MemoryStorage, needle: &[u8]) -> bool {
    storage
        .entries()
        .any(|(_, value)| value.windows(needle.len()).any(|w| w == needle))
}

/// The keys and bytes of every record `storage` holds ([`records`]).
pub fn record_bytes(storage: &impl memtide::storage::Storage) -> Vec<u8> {
    records(storage)
        .into_iter()
        .flat_map(|(k, v)| k.into_bytes().into_iter().chain(v))
        .collect()
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A store of formats 1 to 3 holding `records` under keys of their own,
/// with the manifest those builds wrote (counts and digest): what builds
/// before the segmented layout left behind.
pub fn legacy_store(records: &BTreeMap<String, Vec<u8>>, model_id: Option<&str>) -> MemoryStorage {
    let mut digest = memtide::codec::SetDigest::default();
    let mut batch = memtide::storage::Batch::new();
    let count = |prefix: &str| records.keys().filter(|k| k.starts_with(prefix)).count() as u64;
    for (key, record) in records {
        digest.toggle(record);
        batch.put(key.clone(), record.clone());
    }
    let manifest = memtide::codec::Manifest {
        format_version: if count("file/") > 0 { 2 } else { 1 },
        item_count: count("item/"),
        vector_count: count("vec/"),
        items_digest: digest.to_hex(),
        model_id: model_id.map(str::to_string),
        file_count: count("file/"),
    };
    batch.put("meta/manifest", memtide::codec::encode_manifest(&manifest));
    let mut storage = MemoryStorage::new();
    memtide::storage::Storage::commit(&mut storage, &batch).expect("a memory store commits");
    storage
}
