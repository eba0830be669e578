//! Search indexes over memory items, keyed by a dense `u32` document id the
//! engine assigns.
//!
//! [`Bm25Index`] is the lexical index: an incremental inverted index over the
//! terms of [`crate::text::terms`], scored with Okapi BM25.

pub mod bm25;

pub use bm25::{Bm25Index, Bm25Params};
