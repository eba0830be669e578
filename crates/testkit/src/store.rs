//! The store the API tests start from: empty, in memory, with a fixed clock
//! at [`T0`] and the default configuration.

use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{Memory, Scope, Timestamp};

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

/// The one scope of the tests that need only one.
pub fn scope() -> Scope {
    Scope::workspace("alice", "home")
}
