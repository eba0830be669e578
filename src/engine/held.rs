//! A memory a store holds undecoded: its row in its segment's catalog
//! part (`crate::layout`), which the engine's catalog keeps instead of the
//! decoded memory until the memory is read (`docs/speed.md`, "The
//! open"). The catalog's keys, retrieval's policy and ranking read the
//! fields below without decoding it; everything else reads the memory.

use crate::item::MemoryItem;
use crate::rank::Rankable;

/// A memory held undecoded. Such a memory has no caller key, no field of a
/// row's rest (merges, history, metadata, supersession, a summary's
/// sources, the `withdrawn` mark) and is not a chunk of a file: its
/// memory is the fields it reads (these, ranking's and the policy's) with
/// those unset.
pub(crate) trait HeldMemory: Rankable + Send + Sync {
    /// The id's bytes: read to check it against its key, not as UTF-8
    /// again (the row's reader checked it when the row was read). The
    /// catalog's keys share the key's copy of the id.
    fn id_bytes(&self) -> &[u8];
    fn pinned(&self) -> bool;
    /// The content hash: its 32 bytes, or the text of a hash that is not
    /// 64 lowercase hex digits.
    fn content_hash(&self) -> Result<[u8; 32], &str>;
    /// The memory.
    fn decode(&self) -> MemoryItem;
    /// Bytes of the memory's JSON (`serde_json::to_vec` of
    /// [`HeldMemory::decode`]), counted without decoding it.
    fn json_len(&self) -> usize;
    /// Itself, for the layout that made it to read it as its own type
    /// (the engine does not know that type).
    fn as_any(&self) -> &dyn std::any::Any;
}
