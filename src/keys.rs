//! The storage keys (`docs/format.md`, section 1): every record memtide
//! writes lives under one of these, so the whole key layout of a store is
//! read here, and a new kind of record takes its key from here.

/// Prefix of item records: `item/<id>`.
pub const ITEM_PREFIX: &str = "item/";
/// Prefix of embedding records: `vec/<id>`, the embedding of memory `<id>`.
pub const VECTOR_PREFIX: &str = "vec/";
/// Prefix of file records: `file/<hash>` (see
/// [`file_storage_key`](crate::files::file_storage_key)).
pub const FILE_PREFIX: &str = "file/";
/// Key of the manifest record.
pub const MANIFEST_KEY: &str = "meta/manifest";
/// Prefix of the journal's keys (`docs/format.md`, section 4), written only
/// on stores without atomic batches; memtide never stores data under it.
pub const JOURNAL_PREFIX: &str = "journal/";
/// Key of the journal's commit record.
pub(crate) const JOURNAL_COMMIT_KEY: &str = "journal/commit";
/// Prefix of the journal's op frames: `journal/op/<n>`.
pub(crate) const JOURNAL_FRAME_PREFIX: &str = "journal/op/";
/// Prefix of the segments of the segmented layout (format 4):
/// `seg/<number>`, the number in ten decimal digits.
pub const SEGMENT_PREFIX: &str = "seg/";
