//! Progress and cancellation of the long operations of [`crate::AsyncMemory`]:
//! ingest, import and the embedding backfill of a model.
//!
//! The engine runs without I/O, so it cannot notice a cancellation while it
//! computes; the long part of each operation (embedding) is therefore cut
//! into batches, and between two batches the host is given a
//! [`Progress::checkpoint`]: it may run other tasks there (a browser's
//! event loop delivers an `AbortSignal`'s abort) and stop the operation by
//! returning [`crate::Error::Aborted`]. What a stop leaves is stated by each
//! operation: ingest and import commit once, at the end, so a stop leaves
//! the store as before the call; the backfill commits batch by batch, so a
//! stop leaves whole batches embedded and the next attach embeds the rest.

use std::future::Future;

use crate::error::Result;

/// Observes one long operation.
pub trait Progress {
    /// `done` of `total` units are finished (memories ingested, imported or
    /// embedded). `done` never decreases, and the last report of an
    /// operation that succeeds is `done == total`.
    fn report(&mut self, done: usize, total: usize);

    /// Called before each batch of work: the host may run other tasks, and
    /// stops the operation by returning an error (`Error::Aborted`), which
    /// the operation returns after undoing its uncommitted work.
    fn checkpoint(&mut self) -> impl Future<Output = Result<()>>;
}

/// No observer: nothing is reported and nothing stops the operation.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unobserved;

impl Progress for Unobserved {
    fn report(&mut self, _done: usize, _total: usize) {}

    async fn checkpoint(&mut self) -> Result<()> {
        Ok(())
    }
}
