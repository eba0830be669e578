//! Awaiting several futures together, without an executor of our own: the
//! reads a backend can serve at once (`KvStorage::get_many`, the segments
//! an open reads). A Workers KV or Deno KV adapter's read travels to the
//! store, so reading a manifest's segments one after another would pay
//! the round trip once per segment.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

/// The outputs of `futures`, in their order. Each call to poll polls every
/// future not yet done, so all of them are started on the first poll and
/// run together on whatever executor awaits this one.
pub(crate) async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut running: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = running.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (future, output) in running.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
