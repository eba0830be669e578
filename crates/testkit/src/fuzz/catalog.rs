//! Target `catalog`: opening a store whose segment carries an arbitrary
//! catalog part (`docs/format.md`, section 2.2; `src/layout/catalog.rs`).
//!
//! The store of the `lexical` target (memories with tags, a role, a
//! speaker, caller keys, metadata, a pin, a soft delete, in one segment of
//! format 6); `data` replaces that segment's catalog part, and the
//! manifest is made to name the new segment, so the rows' decoder and the
//! engine's checks of the memories it gives run on every input.
//!
//! Opening returns a store or `CORRUPT`, never a panic. A store that opens
//! answers a query, erases a memory (which rewrites the segment with the
//! rows of the memories the engine holds) and then reopens to the same
//! memories.

use super::lexical::{base, open_with};

/// See the module documentation.
pub fn check(data: &[u8]) {
    open_with(&base().lexical, data);
}

