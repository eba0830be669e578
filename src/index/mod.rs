//! Search indexes over memory items, keyed by a dense `u32` document id the
//! engine assigns.
//!
//! [`Bm25Index`] is the lexical index: an incremental inverted index over the
//! terms of [`crate::text::terms`], scored with Okapi BM25.
//!
//! [`VectorIndex`] is the semantic index: cosine similarity over int8
//! vectors, an exactly scanned tail plus HNSW segments.

pub mod bm25;
mod chunked;
mod doc_table;
mod int8;
mod rows;
mod signatures;
pub mod vector;

pub use bm25::{Bm25Index, Bm25Params};
pub use int8::{Int8Ref, Int8Vector};
pub use vector::{VectorIndex, VectorParams};
