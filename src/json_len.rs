//! The length of a memory's JSON, counted from its fields without writing
//! it: `stats` sums the record lengths of every memory, counted once each
//! (`docs/speed.md`, "The open"); writing each memory's JSON (even to a
//! byte counter) was a tenth of the CPU time of `memtide stats` on a large
//! store, and decoding each catalog row held undecoded only to count it
//! was more again. The fields are read through [`MemoryFields`], which a
//! decoded memory and a catalog row read in place both implement: one
//! counter for both.
//!
//! The count follows `serde_json`'s compact output of [`MemoryItem`]'s
//! `Serialize`: the fields it always writes, those it skips when unset, and
//! the escapes of strings. A memory that sets a field a catalog row keeps
//! as its rest (merges, metadata, history, supersession, summary sources,
//! the withdrawn mark: rare, and nested) is counted by writing its JSON to
//! a counter, the brute-force way; the tests compare both ways with
//! `serde_json`'s output.

use serde::Serialize;

use crate::item::{Kind, LineRange, MemoryItem, Privacy, Role, Scope, SourceKind, Status};

/// The fields of a memory whose JSON [`flat_json_len`] counts, read where
/// they are: a decoded [`MemoryItem`], or a catalog row in its segment's
/// bytes (`crate::layout`), so that `stats` counts a held row without
/// decoding it into a memory it would drop.
pub(crate) trait MemoryFields {
    fn id(&self) -> &str;
    fn text(&self) -> &str;
    fn kind(&self) -> Kind;
    /// The user, workspace, project, card and session (the first two
    /// always set).
    fn scope(&self) -> [Option<&str>; 5];
    fn status(&self) -> Status;
    fn pinned(&self) -> bool;
    fn source_kind(&self) -> SourceKind;
    fn source_ref(&self) -> &str;
    fn source_uri(&self) -> Option<&str>;
    /// The content hash: bytes written as lowercase hex digits, or its text.
    fn content_hash(&self) -> Result<&[u8], &str>;
    fn role(&self) -> Option<Role>;
    fn speaker(&self) -> Option<&str>;
    fn tags(&self) -> impl Iterator<Item = &str>;
    fn privacy(&self) -> Privacy;
    fn has_last_used(&self) -> bool;
    fn usage_count(&self) -> u64;
    fn follows(&self) -> Option<&str>;
    fn is_deleted(&self) -> bool;
    fn source_lines(&self) -> Option<LineRange>;
    fn key(&self) -> Option<&str>;
    /// True when the memory sets a field counted only by writing it (the
    /// rare, nested ones: merges, metadata, history, supersession, summary
    /// sources, the withdrawn mark).
    fn nested(&self) -> bool;
}

/// Bytes of `serde_json::to_vec(item)`.
pub(crate) fn item_json_len(item: &MemoryItem) -> usize {
    flat_json_len(item).unwrap_or_else(|| written_len(item))
}

/// Bytes of the JSON of the memory whose fields `memory` reads, counted
/// field by field; `None` when it sets a nested field
/// ([`MemoryFields::nested`]), which only writing it counts.
pub(crate) fn flat_json_len(memory: &impl MemoryFields) -> Option<usize> {
    if memory.nested() {
        return None;
    }
    let mut object = Object::default();
    object.field("id", string_len(memory.id()));
    object.field("text", string_len(memory.text()));
    object.field("kind", string_len(memory.kind().as_str()));
    object.field("scope", scope_len(memory.scope()));
    object.field("status", status_len(memory.status()));
    object.field("pinned", bool_len(memory.pinned()));
    object.field("source", source_len(memory.source_kind(), memory.source_ref(), memory.source_uri()));
    let hash = match memory.content_hash() {
        Ok(bytes) => 2 + 2 * bytes.len(),
        Err(text) => string_len(text),
    };
    object.field("contentHash", hash);
    if let Some(role) = memory.role() {
        object.field("role", string_len(role.as_str()));
    }
    if let Some(speaker) = memory.speaker() {
        object.field("speaker", string_len(speaker));
    }
    let (tag_count, tag_bytes) = memory.tags().fold((0usize, 0), |(n, bytes), t| (n + 1, bytes + string_len(t)));
    object.field("tags", 2 + tag_bytes + tag_count.saturating_sub(1));
    object.field("privacy", privacy_len(&memory.privacy()));
    object.field("createdAt", TIMESTAMP_LEN);
    object.field("updatedAt", TIMESTAMP_LEN);
    if memory.has_last_used() {
        object.field("lastUsedAt", TIMESTAMP_LEN);
    }
    object.field("usageCount", digits(memory.usage_count()));
    if let Some(follows) = memory.follows() {
        object.field("follows", string_len(follows));
    }
    if memory.is_deleted() {
        object.field("deletedAt", TIMESTAMP_LEN);
    }
    if let Some(lines) = memory.source_lines() {
        let mut range = Object::default();
        range.field("start", digits(u64::from(lines.start)));
        range.field("end", digits(u64::from(lines.end)));
        object.field("sourceLines", range.len());
    }
    if let Some(key) = memory.key() {
        object.field("key", string_len(key));
    }
    Some(object.len())
}

impl MemoryFields for MemoryItem {
    fn id(&self) -> &str {
        &self.id
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn scope(&self) -> [Option<&str>; 5] {
        let Scope {
            user_id,
            workspace_id,
            project_id,
            card_id,
            session_id,
        } = &self.scope;
        [
            Some(user_id),
            Some(workspace_id),
            project_id.as_deref(),
            card_id.as_deref(),
            session_id.as_deref(),
        ]
    }

    fn status(&self) -> Status {
        self.status
    }

    fn pinned(&self) -> bool {
        self.pinned
    }

    fn source_kind(&self) -> SourceKind {
        self.source.kind
    }

    fn source_ref(&self) -> &str {
        &self.source.reference
    }

    fn source_uri(&self) -> Option<&str> {
        self.source.uri.as_deref()
    }

    fn content_hash(&self) -> Result<&[u8], &str> {
        Err(&self.content_hash)
    }

    fn role(&self) -> Option<Role> {
        self.role
    }

    fn speaker(&self) -> Option<&str> {
        self.speaker.as_deref()
    }

    fn tags(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(String::as_str)
    }

    fn privacy(&self) -> Privacy {
        self.privacy
    }

    fn has_last_used(&self) -> bool {
        self.last_used_at.is_some()
    }

    fn usage_count(&self) -> u64 {
        self.usage_count
    }

    fn follows(&self) -> Option<&str> {
        self.follows.as_deref()
    }

    fn is_deleted(&self) -> bool {
        self.deleted_at.is_some()
    }

    fn source_lines(&self) -> Option<LineRange> {
        self.source_lines
    }

    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    fn nested(&self) -> bool {
        // Every field is named, without `..`: a field added to
        // `MemoryItem` does not compile here until it is counted (by a
        // method above, bound to `_` here) or counted by writing (the
        // fields `MemoryItem::has_rare_fields` reads, and `withdrawn`).
        let MemoryItem {
            id: _,
            text: _,
            kind: _,
            scope: _,
            status: _,
            pinned: _,
            source: _,
            content_hash: _,
            role: _,
            speaker: _,
            tags: _,
            privacy: _,
            created_at: _,
            updated_at: _,
            last_used_at: _,
            usage_count: _,
            merged_from: _,
            follows: _,
            deleted_at: _,
            source_lines: _,
            key: _,
            metadata: _,
            history: _,
            superseded_at: _,
            superseded_by: _,
            supersedes: _,
            summary_of: _,
            withdrawn,
        } = self;
        self.has_rare_fields() || *withdrawn
    }
}

/// A timestamp is written as a string of 24 characters
/// (`Timestamp::to_rfc3339`: four-digit years only).
const TIMESTAMP_LEN: usize = 2 + 24;

/// The bytes of a JSON object being counted field by field.
#[derive(Default)]
struct Object {
    fields: usize,
    bytes: usize,
}

impl Object {
    /// A field `"name":value` whose value takes `value` bytes.
    fn field(&mut self, name: &str, value: usize) {
        // The name's quotes, the colon, and the comma before every field
        // but the first.
        self.bytes += name.len() + 3 + value + usize::from(self.fields > 0);
        self.fields += 1;
    }

    /// The braces and the fields.
    fn len(&self) -> usize {
        2 + self.bytes
    }
}

fn scope_len([user_id, workspace_id, project_id, card_id, session_id]: [Option<&str>; 5]) -> usize {
    let mut object = Object::default();
    object.field("userId", string_len(user_id.unwrap_or_default()));
    object.field("workspaceId", string_len(workspace_id.unwrap_or_default()));
    for (name, part) in [
        ("projectId", project_id),
        ("cardId", card_id),
        ("sessionId", session_id),
    ] {
        if let Some(part) = part {
            object.field(name, string_len(part));
        }
    }
    object.len()
}

fn source_len(kind: SourceKind, reference: &str, uri: Option<&str>) -> usize {
    let mut object = Object::default();
    object.field("kind", source_kind_len(kind));
    object.field("ref", string_len(reference));
    if let Some(uri) = uri {
        object.field("uri", string_len(uri));
    }
    object.len()
}

fn privacy_len(privacy: &Privacy) -> usize {
    let mut object = Object::default();
    object.field("pii", bool_len(privacy.pii));
    object.field("private", bool_len(privacy.private));
    if let Some(days) = privacy.retention_days {
        object.field("retentionDays", digits(u64::from(days)));
    }
    object.len()
}

/// `s` as a JSON string: its quotes, its bytes, and what `serde_json`
/// adds to escape `"`, `\` and the control characters (two-byte escapes
/// for backspace, form feed, newline, carriage return and tab, `\u00XX`
/// for the others).
fn string_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    // Most strings escape nothing. A pass without an early exit, over
    // every byte, is one the compiler vectorizes: many bytes per
    // instruction, where stopping at the first escape went byte by byte.
    let escapes = bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if !escapes {
        return 2 + bytes.len();
    }
    2 + bytes.len() + bytes.iter().map(|&b| escape_len(b)).sum::<usize>()
}

/// Bytes `serde_json` adds to escape byte `b` of a string.
fn escape_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 1,
        0..=0x1f => 5,
        _ => 0,
    }
}

/// The JSON of a status: its name in quotes (the test checks each against
/// `serde_json`; a new status does not compile here until it is counted).
fn status_len(status: Status) -> usize {
    2 + match status {
        Status::Approved => "approved".len(),
        Status::Pending => "pending".len(),
        Status::Rejected => "rejected".len(),
    }
}

/// The JSON of a source's kind, as [`status_len`].
fn source_kind_len(kind: SourceKind) -> usize {
    2 + match kind {
        SourceKind::Message => "message".len(),
        SourceKind::File => "file".len(),
        SourceKind::Tool => "tool".len(),
        SourceKind::Import => "import".len(),
        SourceKind::Manual => "manual".len(),
    }
}

fn bool_len(b: bool) -> usize {
    if b {
        4
    } else {
        5
    }
}

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Bytes of `value`'s JSON, written to a counter: for the small enums
/// (whose names serde holds) and the memories this module does not count
/// field by field.
fn written_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    // Writing our own plain data types to a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// A writer that keeps only the number of bytes written.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Kind, LineRange, Role, SourceKind, Status, Timestamp};
    use proptest::prelude::*;

    fn plain() -> MemoryItem {
        MemoryItem::stored_example()
    }

    fn check(item: &MemoryItem) {
        let json = serde_json::to_vec(item).unwrap();
        assert_eq!(item_json_len(item), json.len(), "{}", String::from_utf8_lossy(&json));
    }

    #[test]
    fn nested_fields_are_counted_by_writing_them() {
        let mut item = plain();
        item.supersedes = vec!["m0".into()];
        item.metadata = Some(serde_json::from_value(serde_json::json!({"a": [1, "é\n"]})).unwrap());
        check(&item);
        check(&plain());
    }

    /// Strings of every escape serde_json writes, and other characters.
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('/'),
                (0u8..0x20).prop_map(char::from),
                Just('\u{7f}'),
                Just('é'),
                Just('東'),
                Just('😀'),
                prop::char::range('a', 'z'),
            ],
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    fn time() -> impl Strategy<Value = Timestamp> {
        // Years 1 to 9999, the range a timestamp holds.
        (-62_135_596_800_000i64..253_402_300_799_999).prop_map(Timestamp)
    }

    prop_compose! {
        fn item()(
            strings in prop::collection::vec(text(), 12),
            kind in 0..Kind::ALL.len(),
            status in prop_oneof![Just(Status::Approved), Just(Status::Pending), Just(Status::Rejected)],
            source_kind in prop_oneof![Just(SourceKind::Message), Just(SourceKind::File), Just(SourceKind::Tool), Just(SourceKind::Import), Just(SourceKind::Manual)],
            role in prop::option::of(prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::System)]),
            flags in prop::collection::vec(any::<bool>(), 13),
            tags in prop::collection::vec(text(), 0..4),
            numbers in (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>()),
            times in prop::collection::vec(time(), 4),
        ) -> MemoryItem {
            let mut item = plain();
            let pick = |on: bool, s: &String| on.then(|| s.clone());
            item.id = strings[0].clone();
            item.text = strings[1].clone();
            item.kind = Kind::ALL[kind];
            item.scope.user_id = strings[2].clone();
            item.scope.workspace_id = strings[3].clone();
            item.scope.project_id = pick(flags[0], &strings[4]);
            item.scope.card_id = pick(flags[1], &strings[5]);
            item.scope.session_id = pick(flags[2], &strings[6]);
            item.status = status;
            item.pinned = flags[3];
            item.source.kind = source_kind;
            item.source.reference = strings[7].clone();
            item.source.uri = pick(flags[4], &strings[8]);
            item.content_hash = strings[9].clone();
            item.role = role;
            item.speaker = pick(flags[5], &strings[10]);
            item.tags = tags;
            item.privacy.pii = flags[6];
            item.privacy.private = flags[7];
            item.privacy.retention_days = flags[8].then_some(numbers.1);
            item.created_at = times[0];
            item.updated_at = times[1];
            item.last_used_at = flags[9].then_some(times[2]);
            item.usage_count = numbers.0;
            item.follows = pick(flags[10], &strings[11]);
            item.deleted_at = flags[11].then_some(times[3]);
            let (start, end) = (numbers.2.min(numbers.3), numbers.2.max(numbers.3));
            item.source_lines = flags[0].then_some(LineRange { start, end });
            item.key = pick(flags[1], &strings[0]);
            item.withdrawn = flags[12];
            item
        }
    }

    #[test]
    fn each_byte_at_each_place_is_counted_as_serde_json_writes_it() {
        // Lengths around the widths a vectorized pass takes at once.
        for len in [1, 7, 8, 15, 16, 17, 31, 32, 33, 64, 65] {
            for at in [0, len / 2, len - 1] {
                for b in 0..=127u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let s = String::from_utf8(bytes).unwrap();
                    assert_eq!(string_len(&s), serde_json::to_string(&s).unwrap().len(), "{b:#x} at {at} of {len}");
                }
            }
        }
        assert_eq!(string_len(""), 2);
        assert_eq!(string_len("東京 é 😀"), serde_json::to_string("東京 é 😀").unwrap().len());
    }

    #[test]
    fn statuses_and_source_kinds_are_counted_as_serde_json_writes_them() {
        for status in [Status::Approved, Status::Pending, Status::Rejected] {
            assert_eq!(status_len(status), written_len(&status));
        }
        for kind in [SourceKind::Message, SourceKind::File, SourceKind::Tool, SourceKind::Import, SourceKind::Manual] {
            assert_eq!(source_kind_len(kind), written_len(&kind));
        }
    }

    proptest! {
        #[test]
        fn the_count_is_the_length_of_the_json(item in item()) {
            check(&item);
        }
    }
}
