//! Text embeddings for semantic retrieval.
//!
//! memtide embeds text with all-MiniLM-L6-v2 (int8 ONNX weights, 384
//! dimensions, at most 256 tokens). The model is an asset the host passes in;
//! `scripts/fetch-model.sh` fetches it and its `tokenizer.json` for
//! development. [`wordpiece`] turns text into the model's token ids;
//! `minilm` (feature `semantic`) runs the model, loaded through the ONNX
//! framework of `onnx` (its operators, graph rewrites and int8 products).
//! Everything that embeds goes through the [`Embedder`] trait.

#[cfg(feature = "semantic")]
mod minilm;
#[cfg(feature = "semantic")]
mod onnx;
mod vocabulary;
mod wordpiece;

#[cfg(feature = "semantic")]
pub use minilm::MiniLm;
#[cfg(feature = "semantic")]
pub use onnx::stream::OnnxFile;
pub use wordpiece::WordPiece;

/// A text embedding model with its tokenizer.
///
/// Implementations are shared between stores and threads (`Arc<dyn Embedder>`).
pub trait Embedder: Send + Sync {
    /// Identifies the model and its preprocessing (stored beside vectors; a
    /// store never mixes models), e.g.
    /// `all-MiniLM-L6-v2-int8/8199be6f699a395f/mean/256`.
    fn model_id(&self) -> &str;

    /// Length of every embedding.
    fn dimensions(&self) -> usize;

    /// L2-normalized embeddings, one per text, in order.
    fn embed_batch(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>>;

    /// Prompt tokens of `text` by the model's tokenizer (no special tokens,
    /// no truncation).
    fn count_tokens(&self, text: &str) -> usize;
}

/// Counts prompt tokens with an embedder's own tokenizer.
pub struct ModelTokens<'a>(pub &'a dyn Embedder);

impl crate::text::tokens::TokenCounter for ModelTokens<'_> {
    fn count(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }

    fn is_estimate(&self) -> bool {
        false
    }
}
