//! Text embeddings for semantic retrieval.
//!
//! mnemo embeds text with all-MiniLM-L6-v2 (int8 ONNX weights, 384
//! dimensions, at most 256 tokens). The model is an asset the host passes in;
//! `scripts/fetch-model.sh` fetches it and its `tokenizer.json` for
//! development. [`wordpiece`] turns text into the model's token ids.

pub mod wordpiece;

pub use wordpiece::WordPiece;
