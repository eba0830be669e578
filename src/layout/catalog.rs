//! The catalog part of a segment (`docs/format.md`, section 2.2): the
//! segment's memories as binary rows, so that opening a store fills the
//! engine's catalog without decoding JSON. A memory whose row the segment
//! holds has an empty record in the segment's frame (the record's place
//! and key); its row is the next one of the part.
//!
//! The part is made of the varints and strings of `super::varint`:
//!
//! - the dictionary: a varint `S`, then `S` strings, each used by the rows
//!   below by index (scope fields, source references, speakers, tags);
//! - the rows: a varint `R`, then `R` rows (see `encode::put_row`).
//!
//! Every byte of the part must be used.
//!
//! A row holds each field of [`MemoryItem`] that retrieval filters or ranks
//! on, in binary; the fields it does not hold in binary (merges, history,
//! metadata, and any field added to [`MemoryItem`] later) go to the row's
//! *rest*, a JSON object of them, present only when one is set. Adding a
//! field that retrieval filters on is therefore correct without a change
//! here, and fast once [`HANDLED`], `put_row` and [`read_row`] learn it
//! (`docs/design.md`, "Where each kind of change goes"). A writer keeps a
//! memory as a JSON record instead of a row whenever the row would not give
//! back the same memory ([`CatalogWriter::push`]).
//!
//! Writing a part is `encode.rs`, reading one `decode.rs`; a row's fields
//! as either sees them are a [`RowView`].

use super::held::HeldRow;
use crate::engine::HeldMemory;
use crate::item::{Kind, LineRange, MemoryItem, Privacy, Role, Scope, SourceKind, Status, Timestamp};
use crate::json_len::MemoryFields;

mod decode;
mod encode;

pub(crate) use decode::decode_catalog;
pub(super) use decode::{parse_row, read_row};
pub(crate) use encode::CatalogWriter;
#[cfg(test)]
pub(crate) use encode::{encode_catalog, row_len};

/// The JSON fields of a memory a row holds in binary; the others go to
/// its rest.
const HANDLED: [&str; 20] = [
    "id",
    "text",
    "kind",
    "scope",
    "status",
    "pinned",
    "source",
    "contentHash",
    "role",
    "speaker",
    "tags",
    "privacy",
    "createdAt",
    "updatedAt",
    "lastUsedAt",
    "usageCount",
    "follows",
    "deletedAt",
    "sourceLines",
    "key",
];

// The bits of a row's flags.
pub(super) const PINNED: u64 = 1;
pub(super) const PII: u64 = 1 << 1;
pub(super) const PRIVATE: u64 = 1 << 2;
pub(super) const RETENTION: u64 = 1 << 3;
const LAST_USED: u64 = 1 << 4;
pub(super) const DELETED: u64 = 1 << 5;
const FOLLOWS: u64 = 1 << 6;
const SOURCE_LINES: u64 = 1 << 7;
const KEY: u64 = 1 << 8;
const PROJECT: u64 = 1 << 9;
const CARD: u64 = 1 << 10;
const SESSION: u64 = 1 << 11;
const URI: u64 = 1 << 12;
const SPEAKER: u64 = 1 << 13;
/// The content hash is 64 lowercase hex digits, stored as its 32 bytes.
pub(super) const HASH_BYTES: u64 = 1 << 14;
const REST: u64 = 1 << 15;
/// `follows` is the id of the part's row before this one, not written
/// again (format 7).
const FOLLOWS_PREVIOUS: u64 = 1 << 16;
/// `updatedAt` is `createdAt`, not written (format 7).
const UPDATED_AT_CREATION: u64 = 1 << 17;
/// The bits a row of format 6 may set.
const FORMAT_6_FLAGS: u64 = (1 << 16) - 1;
/// The bits a row may set.
pub(super) const ALL_FLAGS: u64 = (1 << 18) - 1;

const STATUSES: [Status; 3] = [Status::Approved, Status::Pending, Status::Rejected];
const SOURCE_KINDS: [SourceKind; 5] = [
    SourceKind::Message,
    SourceKind::File,
    SourceKind::Tool,
    SourceKind::Import,
    SourceKind::Manual,
];
const ROLES: [Role; 3] = [Role::User, Role::Assistant, Role::System];

/// A row of a catalog part as a segment's reader gives it: the memory
/// decoded, or its row held in the part's bytes ([`HeldRow`]).
pub(crate) enum CatalogRow {
    Decoded(Box<MemoryItem>),
    Held(HeldRow),
}

impl CatalogRow {
    /// The memory's id as bytes, for checking it against its key (a held
    /// row's not read as UTF-8 again).
    pub(crate) fn id_bytes(&self) -> &[u8] {
        match self {
            CatalogRow::Decoded(item) => item.id.as_bytes(),
            CatalogRow::Held(row) => row.id_bytes(),
        }
    }

    /// The memory.
    #[cfg(test)]
    pub(crate) fn to_item(&self) -> MemoryItem {
        match self {
            CatalogRow::Decoded(item) => (**item).clone(),
            CatalogRow::Held(row) => row.decode(),
        }
    }
}

/// A row as read, its strings borrowed from the part: what a row holds,
/// checked (see [`put_row`] for the layout), not yet a memory.
pub(super) struct RowView<'a> {
    id: &'a str,
    text: &'a str,
    pub(super) kind: Kind,
    pub(super) status: Status,
    pub(super) source_kind: SourceKind,
    pub(super) role: Option<Role>,
    pub(super) flags: u64,
    /// The dictionary indexes of the scope's five fields (`u32::MAX`: not
    /// set), which tell the part's scopes apart without comparing strings.
    scope_indexes: [u32; 5],
    scope_parts: [Option<&'a str>; 5],
    reference: &'a str,
    uri: Option<&'a str>,
    content_hash: Result<[u8; 32], &'a str>,
    /// Where the hash starts in the part.
    pub(super) hash_at: usize,
    speaker: Option<&'a str>,
    pub(super) speaker_index: Option<u32>,
    pub(super) tags: Vec<&'a str>,
    pub(super) retention_days: Option<u32>,
    pub(super) created_at: Timestamp,
    updated_at: Timestamp,
    last_used_at: Option<Timestamp>,
    usage_count: u64,
    pub(super) follows: Option<&'a str>,
    /// Where `follows` starts in the part.
    pub(super) follows_at: usize,
    deleted_at: Option<Timestamp>,
    source_lines: Option<LineRange>,
    key: Option<&'a str>,
    rest: Option<&'a str>,
}

impl RowView<'_> {
    /// True when the memory has no field that the engine's keys of a held
    /// row do not read: its binary fields, and a rest only if it holds the
    /// duplicates merged into it and nothing else (which no key reads:
    /// a memory ingested again gains them); no caller key, not a chunk of
    /// a file ([`HeldRow`]). A rest that is held reads: it was read here.
    fn holdable(&self) -> bool {
        // The rest, read only once the cheap checks pass: a row that is
        // not held reads it again as it is decoded.
        self.key.is_none()
            && !(self.source_kind == SourceKind::File && self.source_lines.is_some())
            && self.rest.is_none_or(|rest| decode::merges_only(rest).is_some())
    }

    fn scope(&self) -> Scope {
        let [user_id, workspace_id, project_id, card_id, session_id] = self.scope_parts;
        let owned = |s: Option<&str>| s.map(str::to_string);
        Scope {
            user_id: owned(user_id).unwrap_or_default(),
            workspace_id: owned(workspace_id).unwrap_or_default(),
            project_id: owned(project_id),
            card_id: owned(card_id),
            session_id: owned(session_id),
        }
    }
}

impl MemoryFields for RowView<'_> {
    fn id(&self) -> &str {
        self.id
    }

    fn text(&self) -> &str {
        self.text
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn scope(&self) -> [Option<&str>; 5] {
        self.scope_parts
    }

    fn status(&self) -> Status {
        self.status
    }

    fn pinned(&self) -> bool {
        self.flags & PINNED != 0
    }

    fn source_kind(&self) -> SourceKind {
        self.source_kind
    }

    fn source_ref(&self) -> &str {
        self.reference
    }

    fn source_uri(&self) -> Option<&str> {
        self.uri
    }

    fn content_hash(&self) -> Result<&[u8], &str> {
        self.content_hash.as_ref().map(|bytes| &bytes[..]).map_err(|text| *text)
    }

    fn role(&self) -> Option<Role> {
        self.role
    }

    fn speaker(&self) -> Option<&str> {
        self.speaker
    }

    fn tags(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().copied()
    }

    fn privacy(&self) -> Privacy {
        Privacy {
            pii: self.flags & PII != 0,
            private: self.flags & PRIVATE != 0,
            retention_days: self.retention_days,
        }
    }

    fn has_last_used(&self) -> bool {
        self.last_used_at.is_some()
    }

    fn usage_count(&self) -> u64 {
        self.usage_count
    }

    fn follows(&self) -> Option<&str> {
        self.follows
    }

    fn is_deleted(&self) -> bool {
        self.deleted_at.is_some()
    }

    fn source_lines(&self) -> Option<LineRange> {
        self.source_lines
    }

    fn key(&self) -> Option<&str> {
        self.key
    }

    /// A row's nested fields are in its rest.
    fn nested(&self) -> bool {
        self.rest.is_some()
    }
}

#[cfg(test)]
mod tests;
