//! A memory kept as its row in its segment's catalog part instead of
//! decoded (`docs/speed.md`, "The open"): the part's bytes shared by the
//! rows held in it, and what the engine's keys read of a row without
//! decoding it. The catalog's reader ([`super::catalog::decode_catalog`])
//! makes them.

use std::sync::Arc;

use super::catalog::{parse_row, read_row, RowView, ALL_FLAGS, DELETED, HASH_BYTES, PII, PINNED, PRIVATE, RETENTION};
use super::varint::Reader;
use crate::engine::HeldMemory;
use crate::item::{Kind, MemoryItem, Role, Scope, SourceKind, Status, Timestamp};
use crate::metadata::Metadata;
use crate::policy::Policed;
use crate::rank::Rankable;
use crate::json_len::{flat_json_len, item_json_len};

/// A segment's catalog part, kept for the rows the engine holds undecoded
/// ([`HeldRow`]): its bytes and its dictionary. Freed with the last row
/// held in it.
pub(crate) struct HeldPart {
    bytes: Box<[u8]>,
    strings: Box<[Box<str>]>,
}

impl HeldPart {
    pub(super) fn new(bytes: Box<[u8]>, strings: Box<[Box<str>]>) -> HeldPart {
        HeldPart { bytes, strings }
    }
}

/// A memory kept as its row in its segment's catalog part, read whole
/// when the part was decoded
/// ([`super::catalog::decode_catalog`]): where the row is, and
/// what the engine's catalog keys and filters read without decoding the
/// memory (`docs/speed.md`, "The open"). Only a row with no
/// rest, no caller key and not a chunk of a file is held: its memory is
/// its binary fields alone.
pub(crate) struct HeldRow {
    part: Arc<HeldPart>,
    /// Where the row starts in the part.
    offset: u32,
    scope: Arc<Scope>,
    created_at: Timestamp,
    /// Where the content hash's 32 bytes start, when it is held as bytes
    /// (else its string).
    hash_at: u32,
    /// Where `follows` starts (0: none; no row starts a part): in this
    /// row, or the id of the row before it, which starts that row.
    follows_at: u32,
    /// The speaker's dictionary index (`u32::MAX`: none).
    speaker: u32,
    /// The row's flags this reads (pinned, deleted, the hash's form: all
    /// below bit 16).
    flags: u16,
    kind: Kind,
    status: Status,
    role: Option<Role>,
    source_kind: SourceKind,
}

impl HeldRow {
    /// The row at `offset` of `part`, read as `view`. A part is at most
    /// a segment's value, far below 4 GiB.
    pub(super) fn new(part: Arc<HeldPart>, offset: usize, scope: Arc<Scope>, view: &RowView<'_>) -> HeldRow {
        HeldRow {
            part,
            offset: offset as u32,
            scope,
            created_at: view.created_at,
            hash_at: view.hash_at as u32,
            follows_at: if view.follows.is_some() { view.follows_at as u32 } else { 0 },
            speaker: view.speaker_index.unwrap_or(u32::MAX),
            flags: (view.flags & u64::from(u16::MAX)) as u16,
            kind: view.kind,
            status: view.status,
            role: view.role,
            source_kind: view.source_kind,
        }
    }

    fn reader_at(&self, at: u32) -> Reader<'_> {
        let bytes = self.part.bytes.get(at as usize..).unwrap_or_default();
        Reader::new(bytes, "catalog part")
    }

    /// A string the part holds at `at` (read when the part was decoded,
    /// so it reads).
    fn str_at(&self, at: u32) -> &str {
        self.reader_at(at).str().unwrap_or_default()
    }

    /// What the row's reader takes as the row before it: the memory it
    /// follows, when it follows one, which is that row's id when a flag
    /// says so (`follows_at` points there).
    fn previous(&self) -> Option<(&str, usize)> {
        (self.follows_at != 0).then(|| (self.str_at(self.follows_at), self.follows_at as usize))
    }

    /// The row's fields read in place (it read when its part was decoded,
    /// so this is `None` only for bytes that changed since, which a part's
    /// bytes never do).
    pub(super) fn view(&self) -> Option<RowView<'_>> {
        let mut reader = self.reader_at(self.offset);
        parse_row(&mut reader, &self.part.strings, self.previous(), ALL_FLAGS).ok()
    }

    fn has_flag(&self, flag: u64) -> bool {
        u64::from(self.flags) & flag != 0
    }
}

impl HeldMemory for HeldRow {
    /// The row was read whole from these same bytes when its part was
    /// decoded, its rest too if it has one (only merged duplicates, read
    /// as such when it was found holdable: the one part of a row whose
    /// reading can fail after its fields read), so it reads again.
    fn decode(&self) -> MemoryItem {
        let mut reader = self.reader_at(self.offset);
        match read_row(&mut reader, &self.part.strings, self.previous()) {
            Ok(item) => item,
            Err(e) => unreachable!("a held row was read when its part was: {e}"),
        }
    }

    /// Counted from the row's fields read in place: nothing decoded or
    /// allocated (but a list of its tags, when it has some). A row with a
    /// rest (merged duplicates: nested fields, which only writing counts)
    /// is decoded and counted.
    fn json_len(&self) -> usize {
        let counted = self.view().and_then(|view| flat_json_len(&view));
        counted.unwrap_or_else(|| item_json_len(&self.decode()))
    }

    fn id_bytes(&self) -> &[u8] {
        self.reader_at(self.offset).str_bytes().unwrap_or_default()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn pinned(&self) -> bool {
        self.has_flag(PINNED)
    }

    fn content_hash(&self) -> Result<[u8; 32], &str> {
        if self.has_flag(HASH_BYTES) {
            let mut reader = self.reader_at(self.hash_at);
            let bytes = reader.take(32).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
            return Ok(bytes.unwrap_or_default());
        }
        Err(self.str_at(self.hash_at))
    }
}

/// Ranking's reads, from the row in place.
impl Rankable for HeldRow {
    /// Read as UTF-8 when the row was read.
    fn id(&self) -> &str {
        std::str::from_utf8(self.id_bytes()).unwrap_or_default()
    }

    fn text(&self) -> &str {
        let mut reader = self.reader_at(self.offset);
        let _id = reader.str_bytes();
        reader.str().unwrap_or_default()
    }

    fn follows(&self) -> Option<&str> {
        (self.follows_at != 0).then(|| self.str_at(self.follows_at))
    }

    fn speaker(&self) -> Option<&str> {
        self.part.strings.get(self.speaker as usize).map(|s| &**s)
    }

    fn source_kind(&self) -> SourceKind {
        self.source_kind
    }
}

/// The policy's reads, from the fields held beside the row; the row is
/// read only for its own retention (when a flag says it has one) and its
/// tags (when a query filters by them). A held row is never superseded,
/// never a chunk of a file and has no metadata: those are fields of a
/// row's rest or make a row that is not held.
impl Policed for HeldRow {
    fn scope(&self) -> &Scope {
        &self.scope
    }

    fn is_deleted(&self) -> bool {
        self.has_flag(DELETED)
    }

    fn is_superseded(&self) -> bool {
        false
    }

    fn status(&self) -> Status {
        self.status
    }

    fn is_private(&self) -> bool {
        self.has_flag(PRIVATE)
    }

    fn has_pii(&self) -> bool {
        self.has_flag(PII)
    }

    fn retention_days(&self) -> Option<u32> {
        if !self.has_flag(RETENTION) {
            return None;
        }
        self.view().and_then(|view| view.retention_days)
    }

    fn is_file_chunk(&self) -> bool {
        false
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn role(&self) -> Option<Role> {
        self.role
    }

    fn has_any_tag(&self, tags: &[String]) -> bool {
        self.view()
            .is_some_and(|view| view.tags.iter().any(|t| tags.iter().any(|q| q == t)))
    }

    fn created_at(&self) -> Timestamp {
        self.created_at
    }

    fn metadata(&self) -> Option<&Metadata> {
        None
    }
}
