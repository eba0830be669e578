//! The store a command works on, closed the way a process about to exit
//! closes it.

use std::ops::{Deref, DerefMut};

use memtide::env::Environment;
use memtide::storage::FsStorage;
use memtide::Memory;

/// An open store. Dropping it releases the storage (its log file and the
/// directory's `LOCK`, which `FsStorage` removes on drop) but not the
/// engine: every command drops its store just before the process exits,
/// and freeing an engine of 100,000 memories one allocation at a time took
/// about a third of a command's CPU time (`docs/speed.md`, "The open").
/// The operating system takes the memory back at exit.
pub struct OpenStore<E: Environment> {
    /// Always `Some` until `drop` takes it.
    memory: Option<Memory<FsStorage, E>>,
}

impl<E: Environment> OpenStore<E> {
    pub fn new(memory: Memory<FsStorage, E>) -> Self {
        OpenStore {
            memory: Some(memory),
        }
    }
}

impl<E: Environment> Deref for OpenStore<E> {
    type Target = Memory<FsStorage, E>;

    fn deref(&self) -> &Self::Target {
        match &self.memory {
            Some(memory) => memory,
            None => unreachable!("only `drop` takes the store"),
        }
    }
}

impl<E: Environment> DerefMut for OpenStore<E> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match &mut self.memory {
            Some(memory) => memory,
            None => unreachable!("only `drop` takes the store"),
        }
    }
}

impl<E: Environment> Drop for OpenStore<E> {
    fn drop(&mut self) {
        if let Some(memory) = self.memory.take() {
            let (storage, engine) = memory.into_parts();
            drop(storage);
            std::mem::forget(engine);
        }
    }
}
