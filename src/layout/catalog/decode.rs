//! Reading a catalog part: every row checked, held in place or decoded.

use std::sync::Arc;

use serde::Deserialize;

use super::{
    CatalogRow, RowView, ALL_FLAGS, CARD, DELETED, FOLLOWS, FOLLOWS_PREVIOUS, FORMAT_6_FLAGS, HANDLED,
    HASH_BYTES, KEY, LAST_USED, PINNED, PROJECT, REST, RETENTION, ROLES, SESSION, SOURCE_KINDS, SOURCE_LINES,
    SPEAKER, STATUSES, UPDATED_AT_CREATION, URI,
};
use crate::codec::CodecError;
use crate::fast_hash::FastMap;
use crate::item::{Kind, LineRange, MemoryItem, MergeRecord, Scope, Source, Timestamp};
use crate::json_len::MemoryFields;
use crate::layout::format::CATALOG_VERSION;
use crate::layout::held::{HeldPart, HeldRow};
use crate::layout::varint::Reader;
use crate::text::hex;

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

impl RowView<'_> {
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
pub(super) fn merges_only(rest: &str) -> Option<Vec<MergeRecord>> {
    serde_json::from_str::<MergesOnly>(rest).ok().map(|rest| rest.merged_from)
}

/// The memory of the row `reader` is at; `previous` as [`parse_row`]'s,
/// any flag allowed (a part's reader checked them).
pub(in crate::layout) fn read_row<S: AsRef<str>>(
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
pub(in crate::layout) fn parse_row<'a, 'r: 'a, S: AsRef<str>>(
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
pub(super) fn with_rest(item: MemoryItem, rest: &str) -> Result<MemoryItem, String> {
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
