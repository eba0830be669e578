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
//! - the rows: a varint `R`, then `R` rows (see [`put_row`]).
//!
//! Every byte of the part must be used.
//!
//! A row holds each field of [`MemoryItem`] that retrieval filters or ranks
//! on, in binary; the fields it does not hold in binary (merges, history,
//! metadata, and any field added to [`MemoryItem`] later) go to the row's
//! *rest*, a JSON object of them, present only when one is set. Adding a
//! field that retrieval filters on is therefore correct without a change
//! here, and fast once [`HANDLED`], [`put_row`] and [`read_row`] learn it
//! (`docs/design.md`, "Where each kind of change goes"). A writer keeps a
//! memory as a JSON record instead of a row whenever the row would not give
//! back the same memory ([`CatalogWriter::push`]).

use std::sync::Arc;

use serde::Deserialize;

use super::format::CATALOG_VERSION;
use super::held::{HeldPart, HeldRow};
use super::varint::{put_str, put_varint, varint_len, Reader};
use crate::engine::HeldMemory;
use crate::fast_hash::FastMap;
use crate::json_len::MemoryFields;
use crate::codec::CodecError;
use crate::text::{hex, hex_bytes};
use crate::item::{
    Kind, LineRange, MemoryItem, MergeRecord, Privacy, Role, Scope, Source, SourceKind, Status,
    Timestamp,
};

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

/// The catalog part holding `items`, in the order of their records.
#[cfg(test)]
pub(crate) fn encode_catalog(items: &[&MemoryItem]) -> Vec<u8> {
    let mut writer = CatalogWriter::default();
    for item in items {
        writer.put_item(item);
    }
    writer.finish()
}

/// Bytes the row of `item` takes in a catalog part of its own (with the
/// dictionary strings only it uses): the oracle of what
/// [`CatalogWriter::push`] returns.
#[cfg(test)]
pub(crate) fn row_len(item: &MemoryItem) -> usize {
    encode_catalog(&[item]).len()
}

/// A catalog part written a row at a time ([`CatalogWriter::push`]); the
/// last row can be taken back ([`CatalogWriter::pop`]), so a segment
/// write can size each row as it encodes it and move the row that does
/// not fit to the next segment.
#[derive(Default)]
pub(crate) struct CatalogWriter<'a> {
    dictionary: Dictionary<'a>,
    rows: Vec<u8>,
    count: u64,
    /// Where the last row's bytes start and how many dictionary strings
    /// there were before it.
    last: Option<(usize, usize)>,
    /// The ids of the last row and of the one before it: a row that
    /// follows the row before it names it by a flag.
    previous: Option<&'a str>,
    before_last: Option<&'a str>,
}

impl<'a> CatalogWriter<'a> {
    /// Adds the row of `item` if it gives the memory back exactly, and
    /// returns the bytes it takes in a catalog part of its own (with the
    /// dictionary strings only it uses: what a segment counts for it,
    /// whichever segment it goes to). `None` adds nothing: the memory stays
    /// a JSON record.
    pub(crate) fn push(&mut self, item: &'a MemoryItem) -> Option<usize> {
        let (alone, row) = self.put_item(item);
        let exact = match row {
            Row::Exact => true,
            Row::Lossy => false,
            // Read back and compared: only the rest's JSON can differ.
            Row::WithRest => {
                let start = self.last.map_or(0, |(start, _)| start);
                let mut reader = Reader::new(&self.rows[start..], "catalog part");
                let previous = self.before_last.map(|id| (id, 0));
                let back = read_row(&mut reader, &self.dictionary.strings, previous);
                back.ok().as_ref() == Some(item) && reader.done()
            }
        };
        if exact {
            Some(alone)
        } else {
            self.pop();
            None
        }
    }

    /// [`CatalogWriter::push`] for a memory held as its row in another
    /// part: the row is written again from its fields as read in place,
    /// its rest (merged duplicates) as it is, without decoding the memory.
    /// Read from a part, it gives its memory back; `None` only for a row
    /// that no longer reads, which a part's bytes never do.
    pub(crate) fn push_held(&mut self, row: &'a HeldRow) -> Option<usize> {
        let view = row.view()?;
        Some(self.put(&view, view.rest))
    }

    /// Adds the row of `item` as it is; returns [`CatalogWriter::push`]'s
    /// length and whether the row gives the memory back.
    fn put_item(&mut self, item: &'a MemoryItem) -> (usize, Row) {
        let (view, rest, row) = item_row(item);
        (self.put(&view, rest.as_deref()), row)
    }

    /// Adds the row of `view` (with `rest`, the JSON of its other
    /// fields) as it is; returns [`CatalogWriter::push`]'s length.
    fn put(&mut self, view: &RowView<'a>, rest: Option<&str>) -> usize {
        let start = self.rows.len();
        self.last = Some((start, self.dictionary.strings.len()));
        self.dictionary.row.clear();
        self.dictionary.row_index_bytes = 0;
        self.dictionary.row_alone_bytes = 0;
        let flags = put_row(&mut self.rows, view, rest, &mut self.dictionary, self.previous);
        self.before_last = self.previous.replace(view.id);
        self.count += 1;
        // Alone, a row has no row before it: it writes whom it follows,
        // and says so by another flag.
        let (follows_alone, flags_here) = match view.follows {
            Some(follows) if flags & FOLLOWS_PREVIOUS != 0 => (
                varint_len(follows.len() as u64) + follows.len() + varint_len(flags ^ FOLLOWS_PREVIOUS | FOLLOWS),
                varint_len(flags),
            ),
            _ => (0, 0),
        };
        // Alone, the row's strings are numbered from 0 in the order it
        // first uses them: the dictionary of those, a row count of 1, and
        // the row with its indexes written in that numbering.
        let dictionary = &self.dictionary;
        let strings: usize = dictionary
            .row
            .iter()
            .map(|&index| {
                let len = dictionary.strings[index as usize].len();
                varint_len(len as u64) + len
            })
            .sum();
        let bytes =
            self.rows.len() - start - dictionary.row_index_bytes - flags_here + dictionary.row_alone_bytes + follows_alone;
        varint_len(dictionary.row.len() as u64) + strings + varint_len(1) + bytes
    }

    /// Takes back the row added last (nothing if it was taken back already).
    pub(crate) fn pop(&mut self) {
        let Some((start, strings)) = self.last.take() else {
            return;
        };
        self.rows.truncate(start);
        self.count -= 1;
        self.previous = self.before_last.take();
        let dictionary = &mut self.dictionary;
        for s in dictionary.strings.drain(strings..) {
            dictionary.index.remove(s);
            dictionary.bytes -= s.len() + 2;
        }
    }

    /// The part's bytes.
    pub(crate) fn finish(self) -> Vec<u8> {
        let dictionary = self.dictionary;
        let mut out = Vec::with_capacity(self.rows.len() + dictionary.bytes + 10);
        put_varint(&mut out, dictionary.strings.len() as u64);
        for s in &dictionary.strings {
            put_str(&mut out, s);
        }
        put_varint(&mut out, self.count);
        out.extend_from_slice(&self.rows);
        out
    }
}

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

/// Decodes a catalog part of a segment of format `version` that must hold
/// `rows` rows. Every row is read
/// whole (a damaged row is refused here); a row whose fields the engine's
/// keys read all of (binary fields, and a rest only of merged duplicates;
/// not a chunk of a file, no caller key: what most memories are) is held
/// in a copy of the part's bytes instead of decoded, the others decoded.
pub(crate) fn decode_catalog(bytes: &[u8], rows: usize, version: u16) -> Result<Vec<CatalogRow>, CodecError> {
    let allowed = if version > CATALOG_VERSION { ALL_FLAGS } else { FORMAT_6_FLAGS };
    let mut reader = Reader::new(bytes, "catalog part");
    let count = reader.varint64()?;
    // Each string takes at least one byte.
    if count > reader.remaining() as u64 {
        return Err(reader.bad("more strings than bytes"));
    }
    let mut strings = Vec::with_capacity(count as usize);
    for _ in 0..count {
        strings.push(reader.str()?);
    }
    if reader.varint64()? != rows as u64 {
        return Err(reader.bad("its row count differs from the segment's"));
    }
    let mut out = Vec::with_capacity(rows.min(reader.remaining()));
    let mut part: Option<Arc<HeldPart>> = None;
    let mut scopes: FastMap<[u32; 5], Arc<Scope>> = FastMap::default();
    let mut previous = None;
    for _ in 0..rows {
        let offset = reader.position();
        let view = parse_row(&mut reader, &strings, previous, allowed)?;
        // A row's id is its first field: where the row starts.
        previous = Some((view.id, offset));
        if !view.holdable() {
            out.push(CatalogRow::Decoded(Box::new(view.into_item().map_err(|m| reader.bad(&m))?)));
            continue;
        }
        let part = part.get_or_insert_with(|| {
            Arc::new(HeldPart::new(
                bytes.into(),
                strings.iter().map(|s| Box::from(*s)).collect(),
            ))
        });
        let scope = scopes
            .entry(view.scope_indexes)
            .or_insert_with(|| Arc::new(view.scope()))
            .clone();
        out.push(CatalogRow::Held(HeldRow::new(part.clone(), offset, scope, &view)));
    }
    if !reader.done() {
        return Err(reader.bad("bytes after the rows"));
    }
    Ok(out)
}

#[derive(Default)]
struct Dictionary<'a> {
    strings: Vec<&'a str>,
    index: FastMap<&'a str, u64>,
    bytes: usize,
    /// The indexes of the strings the row being written uses, in the order
    /// it first uses them.
    row: Vec<u64>,
    /// Bytes its indexes take, and would take in a part of its own.
    row_index_bytes: usize,
    row_alone_bytes: usize,
}

impl<'a> Dictionary<'a> {
    fn put(&mut self, out: &mut Vec<u8>, s: &'a str) {
        let next = self.strings.len() as u64;
        let index = *self.index.entry(s).or_insert(next);
        if index == next {
            self.strings.push(s);
            self.bytes += s.len() + 2;
        }
        put_varint(out, index);
        let alone = match self.row.iter().position(|&i| i == index) {
            Some(alone) => alone,
            None => {
                self.row.push(index);
                self.row.len() - 1
            }
        };
        self.row_index_bytes += varint_len(index);
        self.row_alone_bytes += varint_len(alone as u64);
    }
}

/// One row:
///
/// - `id` and `text` (strings);
/// - four bytes: the kind (its index in [`Kind::ALL`]), the status
///   (approved, pending, rejected), the source kind (message, file, tool,
///   import, manual), the role (0 none, then user, assistant, system);
/// - a varint of flags (the bits above; any other bit is an error);
/// - the scope: dictionary indexes of the user, the workspace, and the
///   project, card and session when their flags say so;
/// - the source: the dictionary index of its reference, and of its URI
///   (flag);
/// - the content hash: 32 bytes (flag `HASH_BYTES`) or a string;
/// - the speaker's dictionary index (flag); the tags: a varint count and
///   their dictionary indexes; the retention days (flag, varint);
/// - `createdAt` and `updatedAt`, 8 bytes each (milliseconds, signed,
///   little-endian), `updatedAt` left out when it is `createdAt` (flag);
///   `lastUsedAt` (flag, 8 bytes); `usageCount` (varint);
/// - `follows` (flag, string), or a flag alone when it is `previous`, the
///   id of the row before this one; `deletedAt` (flag, 8 bytes); the source
///   lines (flag, two varints); the caller key (flag, string);
/// - the rest (flag): a string holding a JSON object of the other fields.
///
/// Returns the row's flags.
fn put_row<'a>(
    out: &mut Vec<u8>,
    row: &RowView<'a>,
    rest: Option<&str>,
    dictionary: &mut Dictionary<'a>,
    previous: Option<&str>,
) -> u64 {
    let [user_id, workspace_id, project_id, card_id, session_id] = row.scope_parts;
    put_str(out, row.id);
    put_str(out, row.text);
    let position = |found: Option<usize>| found.unwrap_or(0) as u8;
    out.push(position(Kind::ALL.iter().position(|k| *k == row.kind)));
    out.push(position(STATUSES.iter().position(|s| *s == row.status)));
    out.push(position(SOURCE_KINDS.iter().position(|k| *k == row.source_kind)));
    out.push(row.role.map_or(0, |r| position(ROLES.iter().position(|x| *x == r)) + 1));
    let follows_previous = row.follows.is_some() && row.follows == previous;
    let set = |on: bool, bit: u64| if on { bit } else { 0 };
    let flags = row.flags & (PINNED | PII | PRIVATE)
        | set(row.retention_days.is_some(), RETENTION)
        | set(row.last_used_at.is_some(), LAST_USED)
        | set(row.deleted_at.is_some(), DELETED)
        | set(row.follows.is_some() && !follows_previous, FOLLOWS)
        | set(follows_previous, FOLLOWS_PREVIOUS)
        | set(row.updated_at == row.created_at, UPDATED_AT_CREATION)
        | set(row.source_lines.is_some(), SOURCE_LINES)
        | set(row.key.is_some(), KEY)
        | set(project_id.is_some(), PROJECT)
        | set(card_id.is_some(), CARD)
        | set(session_id.is_some(), SESSION)
        | set(row.uri.is_some(), URI)
        | set(row.speaker.is_some(), SPEAKER)
        | set(row.content_hash.is_ok(), HASH_BYTES)
        | set(rest.is_some(), REST);
    put_varint(out, flags);
    for part in [user_id, workspace_id, project_id, card_id, session_id].into_iter().flatten() {
        dictionary.put(out, part);
    }
    dictionary.put(out, row.reference);
    if let Some(uri) = row.uri {
        dictionary.put(out, uri);
    }
    match row.content_hash {
        Ok(bytes) => out.extend_from_slice(&bytes),
        Err(text) => put_str(out, text),
    }
    if let Some(speaker) = row.speaker {
        dictionary.put(out, speaker);
    }
    put_varint(out, row.tags.len() as u64);
    for tag in &row.tags {
        dictionary.put(out, tag);
    }
    if let Some(days) = row.retention_days {
        put_varint(out, u64::from(days));
    }
    put_time(out, row.created_at);
    if row.updated_at != row.created_at {
        put_time(out, row.updated_at);
    }
    if let Some(t) = row.last_used_at {
        put_time(out, t);
    }
    put_varint(out, row.usage_count);
    if let Some(f) = row.follows.filter(|_| !follows_previous) {
        put_str(out, f);
    }
    if let Some(t) = row.deleted_at {
        put_time(out, t);
    }
    if let Some(LineRange { start, end }) = row.source_lines {
        put_varint(out, u64::from(start));
        put_varint(out, u64::from(end));
    }
    if let Some(k) = row.key {
        put_str(out, k);
    }
    if let Some(rest) = rest {
        put_str(out, rest);
    }
    flags
}

/// The row [`put_row`] writes for `item`: its fields as a view (with no
/// places in a part), the JSON of the fields it holds outside binary
/// (its rest, when it sets any), and whether the row gives it back.
fn item_row(item: &MemoryItem) -> (RowView<'_>, Option<String>, Row) {
    // Every field by name, with no `..`: a field added to a memory (or to
    // its scope, source or privacy) does not compile here until it is
    // written in binary or counted among the rest's (the fields bound to
    // `_`, which `MemoryItem::has_rare_fields` reads).
    let MemoryItem {
        id,
        text,
        kind,
        scope,
        status,
        pinned,
        source,
        content_hash,
        role,
        speaker,
        tags,
        privacy,
        created_at,
        updated_at,
        last_used_at,
        usage_count,
        merged_from: _,
        follows,
        deleted_at,
        source_lines,
        key,
        metadata: _,
        history: _,
        superseded_at: _,
        superseded_by: _,
        supersedes: _,
        summary_of: _,
        withdrawn,
    } = item;
    let Scope {
        user_id,
        workspace_id,
        project_id,
        card_id,
        session_id,
    } = scope;
    let Source {
        kind: source_kind,
        reference,
        uri,
    } = source;
    let Privacy {
        pii,
        private,
        retention_days,
    } = privacy;
    // The fields the rest holds (as JSON, with any field this build does
    // not know): most memories set none, and then need no JSON.
    let rest_set = item.has_rare_fields();
    let rest = if rest_set { rest_of(item) } else { None };
    // The `withdrawn` mark is kept by the rest alone: a memory with it and
    // no other rest field keeps its JSON record. A time outside years
    // 1..=9999, or a value the row's tables lack, would not read back.
    let in_range = |t: &Timestamp| Timestamp::from_millis(t.0).is_ok();
    let exact = (!*withdrawn || rest_set)
        && Kind::ALL.contains(kind)
        && STATUSES.contains(status)
        && SOURCE_KINDS.contains(source_kind)
        && role.is_none_or(|r| ROLES.contains(&r))
        && [Some(created_at), Some(updated_at), last_used_at.as_ref(), deleted_at.as_ref()]
            .into_iter()
            .flatten()
            .all(in_range);
    let set = |on: bool, bit: u64| if on { bit } else { 0 };
    let view = RowView {
        id,
        text,
        kind: *kind,
        status: *status,
        source_kind: *source_kind,
        role: *role,
        flags: set(*pinned, PINNED) | set(*pii, PII) | set(*private, PRIVATE),
        scope_indexes: [u32::MAX; 5],
        scope_parts: [
            Some(user_id.as_str()),
            Some(workspace_id.as_str()),
            project_id.as_deref(),
            card_id.as_deref(),
            session_id.as_deref(),
        ],
        reference,
        uri: uri.as_deref(),
        content_hash: hex_bytes(content_hash).ok_or(content_hash.as_str()),
        hash_at: 0,
        speaker: speaker.as_deref(),
        speaker_index: None,
        tags: tags.iter().map(String::as_str).collect(),
        retention_days: *retention_days,
        created_at: *created_at,
        updated_at: *updated_at,
        last_used_at: *last_used_at,
        usage_count: *usage_count,
        follows: follows.as_deref(),
        follows_at: 0,
        deleted_at: *deleted_at,
        source_lines: *source_lines,
        key: key.as_deref(),
        rest: None,
    };
    let row = match &rest {
        Some(_) if exact => Row::WithRest,
        Some(_) => Row::Lossy,
        // A rest that could not be made leaves its fields out.
        None if rest_set => Row::Lossy,
        None if exact => Row::Exact,
        None => Row::Lossy,
    };
    (view, rest, row)
}

/// Appends a time.
fn put_time(out: &mut Vec<u8>, t: Timestamp) {
    out.extend_from_slice(&t.0.to_le_bytes());
}

/// Whether a row [`put_row`] wrote gives its memory back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// Exactly: every field is in binary, and read back as written.
    Exact,
    /// If its rest does: the JSON of the other fields may not read back
    /// as it was (a float of the metadata), which only reading it tells.
    WithRest,
    /// Not: a memory whose row it is stays a JSON record.
    Lossy,
}

/// The fields of `item` a row does not hold in binary, as a JSON object,
/// when it has any.
fn rest_of(item: &MemoryItem) -> Option<String> {
    let serde_json::Value::Object(mut fields) = serde_json::to_value(item).ok()? else {
        return None;
    };
    for name in HANDLED {
        fields.remove(name);
    }
    (!fields.is_empty()).then(|| serde_json::Value::Object(fields).to_string())
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
            && self.rest.is_none_or(|rest| merges_only(rest).is_some())
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

    /// The memory, with the fields of its rest.
    fn into_item(self) -> Result<MemoryItem, String> {
        let owned = |s: Option<&str>| s.map(str::to_string);
        let item = MemoryItem {
            id: self.id.to_string(),
            text: self.text.to_string(),
            kind: self.kind,
            scope: self.scope(),
            status: self.status,
            pinned: self.flags & PINNED != 0,
            source: Source {
                kind: self.source_kind,
                reference: self.reference.to_string(),
                uri: owned(self.uri),
            },
            content_hash: match self.content_hash {
                Ok(bytes) => hex(&bytes),
                Err(text) => text.to_string(),
            },
            role: self.role,
            speaker: owned(self.speaker),
            tags: self.tags.iter().map(|t| t.to_string()).collect(),
            privacy: MemoryFields::privacy(&self),
            created_at: self.created_at,
            updated_at: self.updated_at,
            last_used_at: self.last_used_at,
            usage_count: self.usage_count,
            merged_from: Vec::new(),
            follows: owned(self.follows),
            deleted_at: self.deleted_at,
            source_lines: self.source_lines,
            key: owned(self.key),
            metadata: None,
            history: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            supersedes: Vec::new(),
            summary_of: Vec::new(),
            withdrawn: false,
        };
        match self.rest {
            None => Ok(item),
            Some(rest) => match merges_only(rest) {
                Some(merged_from) => Ok(MemoryItem { merged_from, ..item }),
                None => with_rest(item, rest),
            },
        }
    }
}

/// A rest that holds the duplicates merged into a memory and nothing else
/// (the rest of most memories that have one), read as its one field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MergesOnly {
    merged_from: Vec<MergeRecord>,
}

/// The duplicates merged into a memory, when `rest` holds them alone:
/// read directly, as [`with_rest`] would give them, without the memory's
/// round trip through a JSON value.
fn merges_only(rest: &str) -> Option<Vec<MergeRecord>> {
    serde_json::from_str::<MergesOnly>(rest).ok().map(|rest| rest.merged_from)
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

/// The memory of the row `reader` is at; `previous` as [`parse_row`]'s,
/// any flag allowed (a part's reader checked them).
pub(super) fn read_row<S: AsRef<str>>(
    reader: &mut Reader<'_>,
    strings: &[S],
    previous: Option<(&str, usize)>,
) -> Result<MemoryItem, CodecError> {
    let view = parse_row(reader, strings, previous, ALL_FLAGS)?;
    view.into_item().map_err(|m| reader.bad(&m))
}

/// Reads a row, every field checked, nothing allocated but its tags' list.
/// `previous` is the id of the part's row before it and where that row
/// starts (the row follows it when a flag says so); `allowed`, the flags
/// its part's format allows.
pub(super) fn parse_row<'a, 'r: 'a, S: AsRef<str>>(
    reader: &mut Reader<'r>,
    strings: &'a [S],
    previous: Option<(&'a str, usize)>,
    allowed: u64,
) -> Result<RowView<'a>, CodecError> {
    let id = reader.str()?;
    let text = reader.str()?;
    let mut pick = |what: &str, count: usize| -> Result<usize, CodecError> {
        let b = reader.byte()? as usize;
        if b < count {
            Ok(b)
        } else {
            Err(CodecError::Payload(format!("catalog part: a bad {what}")))
        }
    };
    let kind = Kind::ALL[pick("kind", Kind::ALL.len())?];
    let status = STATUSES[pick("status", STATUSES.len())?];
    let source_kind = SOURCE_KINDS[pick("source kind", SOURCE_KINDS.len())?];
    let role = match pick("role", ROLES.len() + 1)? {
        0 => None,
        r => Some(ROLES[r - 1]),
    };
    let flags = reader.varint64()?;
    if flags & !allowed != 0 {
        return Err(reader.bad("unknown flags"));
    }
    let has = |bit: u64| flags & bit != 0;
    if has(FOLLOWS) && has(FOLLOWS_PREVIOUS) {
        return Err(reader.bad("a row that follows two memories"));
    }
    let word = |reader: &mut Reader<'r>| -> Result<(u32, &'a str), CodecError> {
        let index = reader.varint64()?;
        let s = usize::try_from(index).ok().and_then(|i| strings.get(i));
        match (s, u32::try_from(index)) {
            (Some(s), Ok(index)) if index != u32::MAX => Ok((index, s.as_ref())),
            _ => Err(reader.bad("a string index past the dictionary")),
        }
    };
    let optional_word = |reader: &mut Reader<'r>, bit: u64| -> Result<Option<(u32, &'a str)>, CodecError> {
        if has(bit) {
            word(reader).map(Some)
        } else {
            Ok(None)
        }
    };
    let mut scope_indexes = [u32::MAX; 5];
    let mut scope_parts = [None; 5];
    let scope_fields = [
        word(reader).map(Some)?,
        word(reader).map(Some)?,
        optional_word(reader, PROJECT)?,
        optional_word(reader, CARD)?,
        optional_word(reader, SESSION)?,
    ];
    for (n, field) in scope_fields.into_iter().enumerate() {
        if let Some((index, s)) = field {
            scope_indexes[n] = index;
            scope_parts[n] = Some(s);
        }
    }
    let reference = word(reader)?.1;
    let uri = optional_word(reader, URI)?.map(|(_, s)| s);
    let hash_at = reader.position();
    let content_hash = if has(HASH_BYTES) {
        let bytes = reader.take(32)?;
        Ok(bytes.try_into().map_err(|_| reader.bad("truncated"))?)
    } else {
        Err(reader.str()?)
    };
    let speaker = optional_word(reader, SPEAKER)?;
    let tag_count = reader.varint64()?;
    if tag_count > reader.remaining() as u64 {
        return Err(reader.bad("more tags than bytes"));
    }
    let mut tags = Vec::with_capacity(tag_count as usize);
    for _ in 0..tag_count {
        tags.push(word(reader)?.1);
    }
    let retention_days = if has(RETENTION) {
        Some(reader.varint()?)
    } else {
        None
    };
    let created_at = time(reader)?;
    let updated_at = if has(UPDATED_AT_CREATION) {
        created_at
    } else {
        time(reader)?
    };
    let last_used_at = if has(LAST_USED) {
        Some(time(reader)?)
    } else {
        None
    };
    let usage_count = reader.varint64()?;
    let (follows, follows_at) = if has(FOLLOWS) {
        let at = reader.position();
        (Some(reader.str()?), at)
    } else if has(FOLLOWS_PREVIOUS) {
        let (id, at) = previous.ok_or_else(|| reader.bad("the first row follows the row before it"))?;
        (Some(id), at)
    } else {
        (None, 0)
    };
    let deleted_at = if has(DELETED) {
        Some(time(reader)?)
    } else {
        None
    };
    let source_lines = if has(SOURCE_LINES) {
        let start = reader.varint()?;
        let end = reader.varint()?;
        Some(LineRange { start, end })
    } else {
        None
    };
    let key = if has(KEY) { Some(reader.str()?) } else { None };
    let rest = if has(REST) { Some(reader.str()?) } else { None };
    Ok(RowView {
        id,
        text,
        kind,
        status,
        source_kind,
        role,
        flags,
        scope_indexes,
        scope_parts,
        reference,
        uri,
        content_hash,
        hash_at,
        speaker: speaker.map(|(_, s)| s),
        speaker_index: speaker.map(|(index, _)| index),
        tags,
        retention_days,
        created_at,
        updated_at,
        last_used_at,
        usage_count,
        follows,
        follows_at,
        deleted_at,
        source_lines,
        key,
        rest,
    })
}

/// `item` with the fields of `rest`, a JSON object of fields a row does
/// not hold in binary.
fn with_rest(item: MemoryItem, rest: &str) -> Result<MemoryItem, String> {
    let rest: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(rest).map_err(|e| format!("its rest: {e}"))?;
    let serde_json::Value::Object(mut fields) =
        serde_json::to_value(&item).map_err(|e| e.to_string())?
    else {
        return Err("a memory is not a JSON object".into());
    };
    for (name, value) in rest {
        if HANDLED.contains(&name.as_str()) {
            return Err(format!("its rest holds `{name}`"));
        }
        fields.insert(name, value);
    }
    serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| format!("its rest: {e}"))
}

fn time(reader: &mut Reader<'_>) -> Result<Timestamp, CodecError> {
    let bytes: [u8; 8] = reader
        .take(8)?
        .try_into()
        .map_err(|_| reader.bad("truncated"))?;
    Timestamp::from_millis(i64::from_le_bytes(bytes))
        .map_err(|_| reader.bad("a time outside years 1..=9999"))
}

#[cfg(test)]
mod tests;
