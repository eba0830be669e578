//! Writing a catalog part: a row at a time, each from a memory or from a
//! row held in another part.

use super::decode::read_row;
use super::{
    RowView, CARD, DELETED, FOLLOWS, FOLLOWS_PREVIOUS, HANDLED, HASH_BYTES, KEY, LAST_USED, PII, PINNED,
    PRIVATE, PROJECT, REST, RETENTION, ROLES, SESSION, SOURCE_KINDS, SOURCE_LINES, SPEAKER, STATUSES,
    UPDATED_AT_CREATION, URI,
};
use crate::fast_hash::FastMap;
use crate::item::{Kind, LineRange, MemoryItem, Privacy, Scope, Source, Timestamp};
use crate::layout::held::HeldRow;
use crate::layout::varint::{put_str, put_varint, varint_len, Reader};
use crate::text::hex_bytes;

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
    /// A writer whose first row takes `previous` for the row before it:
    /// a part no writer makes, for the reader's check of one.
    #[cfg(test)]
    pub(crate) fn after(previous: &'a str) -> Self {
        CatalogWriter {
            previous: Some(previous),
            ..CatalogWriter::default()
        }
    }

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
