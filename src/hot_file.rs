//! The hot memory file: a scope's pinned (curated) memories as an
//! auto-managed block inside a Markdown file, as CoWork keeps them in its
//! `USER.md` and `MEMORY.md`, and human edits of that block read back into
//! the store, so file and store converge.
//!
//! ```text
//! # Notes written by hand (never touched)
//!
//! <!-- mnemo:begin pinned -->
//! - I take my coffee black <!-- mnemo:id=m000001 -->
//! - Deploys happen on Tuesdays, <!-- mnemo:id=m000002 -->
//!   never on Fridays
//! <!-- mnemo:end pinned -->
//! ```
//!
//! [`render`] lists the pinned memories of exactly the scope (not deleted,
//! not rejected), one bullet each, in the order the document's block
//! already lists them (a human may reorder the bullets; a bullet lists the
//! memory whose text it holds, else the one its id marker names), the
//! others after them, oldest first. Each bullet holds the text's first line
//! after `- ` with the memory's id marker at its end, further lines indented
//! by two spaces (blank lines kept empty). It replaces the block (the lines
//! from the one that is exactly the begin marker through the next one that
//! is exactly the end marker, trailing whitespace ignored) and leaves every
//! other byte of the document as it was; a document without a block gets
//! it appended after a blank line.
//!
//! [`read_back`] reads the block and applies it to the store:
//!
//! * A bullet whose id marker names a live memory of the scope keeps it
//!   pinned, with the bullet's text if that changed (normalized and
//!   redacted like ingested text). When the new text equals another memory
//!   of the scope, that one is pinned instead.
//! * A bullet without a (usable) id marker is ingested as a new pinned
//!   `fact` whose source is the file; an existing memory with the same text
//!   (or a near-duplicate) is pinned instead, as ingest merges.
//! * A pinned memory of the scope with no bullet is **unpinned**, not
//!   deleted: removing a line from the hot file takes the memory out of the
//!   always-injected set, it does not erase what was learned (deleting is
//!   [`crate::Memory::delete`]'s job). A bullet whose text is empty, only
//!   private or `<no-memory>` counts as removed.
//!
//! Every line of the block is part of a bullet: lines starting with `- `,
//! `* ` or `+ ` (or any other unindented line) start one, indented lines
//! continue it. Markers are recognized only as whole lines and a memory's
//! lines are always indented or behind `- `, so no memory text can end the
//! block or start another. Rendering after a read-back gives a block whose
//! read-back changes nothing: render → edit → read back → render converges.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::engine::{
    text_to_store, Captured, Engine, IngestOutcome, IngestResult, MemoryInput, MemoryPatch, Txn,
};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::files;
use crate::item::{validate_item_id, Kind, MemoryItem, Scope, Source, SourceKind, Status};

/// The line that opens the block.
pub const BLOCK_BEGIN: &str = "<!-- mnemo:begin pinned -->";
/// The line that closes the block.
pub const BLOCK_END: &str = "<!-- mnemo:end pinned -->";
/// Start of a bullet's id marker, `<!-- mnemo:id=ID -->`.
const ID_OPEN: &str = "<!-- mnemo:id=";
/// End of an id marker.
const ID_CLOSE: &str = "-->";

/// What [`read_back`] changed. Every list holds memory ids.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HotFileSync {
    /// Memories ingested from new bullets (or the existing memories they
    /// merged into), now pinned.
    pub added: Vec<String>,
    /// Memories whose text the block changed.
    pub updated: Vec<String>,
    /// Memories pinned again because the block lists them.
    pub pinned: Vec<String>,
    /// Memories unpinned because the block no longer lists them.
    pub unpinned: Vec<String>,
}

impl HotFileSync {
    /// True when the read-back changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.updated.is_empty()
            && self.pinned.is_empty()
            && self.unpinned.is_empty()
    }
}

/// The pinned memories of exactly `scope` that a block lists, oldest
/// first.
fn pinned_of<'a>(engine: &'a Engine, scope: &Scope) -> Vec<Cow<'a, MemoryItem>> {
    let mut pinned: Vec<Cow<'a, MemoryItem>> = engine
        .pinned_items()
        .filter(|item| is_listed(item, scope) && item.pinned)
        .collect();
    pinned.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    pinned
}

/// True for a memory a block of `scope` may list: of exactly that scope,
/// live (neither deleted nor superseded), not rejected, not a chunk of a
/// file.
fn is_listed(item: &MemoryItem, scope: &Scope) -> bool {
    &item.scope == scope
        && !item.is_deleted()
        && !item.is_superseded()
        && item.status != Status::Rejected
        && !item.is_file_chunk()
}

/// `document` with its block listing the pinned memories of `scope`; see
/// the module documentation. Fails when the document opens a block it
/// never closes.
pub fn render(engine: &Engine, scope: &Scope, document: &str) -> Result<String> {
    scope.validate()?;
    let positions = listed_positions(engine, scope, document)?;
    let mut pinned = pinned_of(engine, scope);
    // Stable: memories the block does not list stay oldest first.
    pinned.sort_by_key(|item| positions.get(&item.id).copied().unwrap_or(usize::MAX));
    let mut block = format!("{BLOCK_BEGIN}\n");
    for item in pinned {
        let mut lines = item.text.split('\n');
        let first = lines.next().unwrap_or_default();
        block.push_str(&format!("- {first} {ID_OPEN}{} {ID_CLOSE}\n", item.id));
        for line in lines {
            if !line.is_empty() {
                block.push_str("  ");
                block.push_str(line);
            }
            block.push('\n');
        }
    }
    block.push_str(BLOCK_END);
    block.push('\n');
    Ok(match find_block(document)? {
        Some((start, end)) => format!("{}{block}{}", &document[..start], &document[end..]),
        None if document.trim().is_empty() => block,
        None => {
            let separator = if document.ends_with("\n\n") {
                ""
            } else if document.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{document}{separator}{block}")
        }
    })
}

/// For each memory of `scope` a bullet of `document`'s block lists, the
/// position of its first bullet: the memory holding the bullet's text, else
/// the one its id marker names (as [`read_back`] applies the bullet).
fn listed_positions(
    engine: &Engine,
    scope: &Scope,
    document: &str,
) -> Result<HashMap<String, usize>> {
    let mut positions = HashMap::new();
    for (position, bullet) in bullets(document)?.into_iter().flatten().enumerate() {
        let by_text = match text_to_store(&bullet.text, engine.config().secrets) {
            // A bullet names nobody: it is the text the user wrote.
            Ok(Captured::Text(text)) => engine
                .find_text(scope, None, None, &text)
                .map(|item| item.id.clone()),
            _ => None,
        };
        let listed = by_text
            .or(bullet.id)
            .filter(|id| engine.get(id).is_ok_and(|item| is_listed(&item, scope)));
        if let Some(id) = listed {
            positions.entry(id).or_insert(position);
        }
    }
    Ok(positions)
}

/// The byte range of the block in `document`, from the start of its begin
/// line to the end of its end line (its line break included).
fn find_block(document: &str) -> Result<Option<(usize, usize)>> {
    let mut begin = None;
    let mut offset = 0;
    for line in document.split_inclusive('\n') {
        let marker = line.trim_end();
        match begin {
            None if marker == BLOCK_BEGIN => begin = Some(offset),
            Some(start) if marker == BLOCK_END => return Ok(Some((start, offset + line.len()))),
            _ => {}
        }
        offset += line.len();
    }
    match begin {
        Some(_) => Err(Error::invalid(format!(
            "the file opens the pinned block with `{BLOCK_BEGIN}` but never closes it with `{BLOCK_END}`"
        ))),
        None => Ok(None),
    }
}

/// One bullet of a block: the id its marker names, if any, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bullet {
    id: Option<String>,
    text: String,
}

/// The bullets of the block of `document`; `None` without a block.
fn bullets(document: &str) -> Result<Option<Vec<Bullet>>> {
    let Some((start, end)) = find_block(document)? else {
        return Ok(None);
    };
    let inner: Vec<&str> = document[start..end].lines().collect();
    let body = inner
        .get(1..inner.len().saturating_sub(1))
        .unwrap_or_default();
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut blank_pending = false;
    for raw in body {
        let line = raw.trim_end();
        if line.is_empty() {
            blank_pending = true;
            continue;
        }
        let continuation = line.starts_with(' ') || line.starts_with('\t');
        match lines.last_mut() {
            Some(current) if continuation => {
                if blank_pending {
                    current.push(String::new());
                }
                let text = line.strip_prefix("  ").unwrap_or_else(|| line.trim_start());
                current.push(text.to_string());
            }
            _ => {
                let first = ["- ", "* ", "+ "]
                    .iter()
                    .find_map(|bullet| line.strip_prefix(bullet))
                    .or_else(|| (line == "-").then_some(""))
                    .unwrap_or(line.trim_start());
                lines.push(vec![first.to_string()]);
            }
        }
        blank_pending = false;
    }
    Ok(Some(
        lines
            .into_iter()
            .map(|mut bullet_lines| {
                let (first, id) = split_id_marker(&bullet_lines[0]);
                bullet_lines[0] = first;
                Bullet {
                    id,
                    text: bullet_lines.join("\n"),
                }
            })
            .collect(),
    ))
}

/// A bullet's first line without the id marker at its end, and the id.
fn split_id_marker(line: &str) -> (String, Option<String>) {
    let parsed = line.rfind(ID_OPEN).and_then(|at| {
        let rest = line[at + ID_OPEN.len()..].trim_end();
        let id = rest.strip_suffix(ID_CLOSE)?.trim();
        validate_item_id(id).ok()?;
        Some((line[..at].trim_end().to_string(), id.to_string()))
    });
    match parsed {
        Some((text, id)) => (text, Some(id)),
        None => (line.to_string(), None),
    }
}

/// Applies the block of `document` (the file at `path`) to the pinned
/// memories of exactly `scope`; see the module documentation. A document
/// without a block changes nothing.
pub fn read_back(
    engine: &mut Engine,
    scope: &Scope,
    path: &str,
    document: &str,
    env: &mut dyn Environment,
    txn: &mut Txn,
) -> Result<HotFileSync> {
    scope.validate()?;
    files::validate_path(path).map_err(|e| Error::invalid(e.to_string()))?;
    let Some(bullets) = bullets(document)? else {
        return Ok(HotFileSync::default());
    };
    let now = env.now();
    let mut sync = HotFileSync::default();
    let mut listed: BTreeSet<String> = BTreeSet::new();
    for bullet in bullets {
        let Ok(Captured::Text(text)) = text_to_store(&bullet.text, engine.config().secrets) else {
            continue;
        };
        let known = bullet.id.filter(|id| {
            !listed.contains(id) && engine.get(id).is_ok_and(|item| is_listed(&item, scope))
        });
        let target = match known {
            Some(id) => {
                let item = engine.get(&id)?;
                let same_text = item.text == text;
                let was_pinned = item.pinned;
                let other = engine
                    .find_text(scope, item.role, item.speaker.as_deref(), &text)
                    .filter(|other| other.id != id)
                    .map(|other| other.id.clone());
                match other {
                    // The new text is another memory's: that one is listed.
                    Some(other) if !same_text => {
                        pin(engine, &other, now, txn, &mut sync.pinned)?;
                        other
                    }
                    _ => {
                        let patch = MemoryPatch {
                            text: (!same_text).then_some(text),
                            pinned: (!was_pinned).then_some(true),
                            ..MemoryPatch::default()
                        };
                        if patch.text.is_some() {
                            sync.updated.push(id.clone());
                        } else if patch.pinned.is_some() {
                            sync.pinned.push(id.clone());
                        }
                        if patch != MemoryPatch::default() {
                            engine.update(&id, patch, now, txn)?;
                        }
                        id
                    }
                }
            }
            None => {
                let input = MemoryInput {
                    kind: Some(Kind::Fact),
                    pinned: Some(true),
                    source: Some(Source {
                        kind: SourceKind::File,
                        reference: path.to_string(),
                        uri: None,
                    }),
                    ..MemoryInput::new(text, scope.clone())
                };
                let result = engine.ingest(vec![input], env, txn)?.pop();
                // Added pinned, or merged into a memory that merging pins;
                // a suppressed (deleted) text stays out.
                match result.filter(|r| r.outcome != IngestOutcome::Skipped) {
                    Some(IngestResult { id: Some(id), .. }) => {
                        sync.added.push(id.clone());
                        id
                    }
                    _ => continue,
                }
            }
        };
        listed.insert(target);
    }
    let dropped: Vec<String> = pinned_of(engine, scope)
        .into_iter()
        .filter(|item| !listed.contains(&item.id))
        .map(|item| item.id.clone())
        .collect();
    for id in dropped {
        let unpin = MemoryPatch {
            pinned: Some(false),
            ..MemoryPatch::default()
        };
        engine.update(&id, unpin, now, txn)?;
        sync.unpinned.push(id);
    }
    Ok(sync)
}

/// Pins memory `id` unless it already is; records it in `changed` when it
/// was not.
fn pin(
    engine: &mut Engine,
    id: &str,
    now: crate::item::Timestamp,
    txn: &mut Txn,
    changed: &mut Vec<String>,
) -> Result<()> {
    if !engine.get(id)?.pinned {
        let patch = MemoryPatch {
            pinned: Some(true),
            ..MemoryPatch::default()
        };
        engine.update(id, patch, now, txn)?;
        changed.push(id.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_parse_markers_continuations_and_stray_lines() {
        let doc = format!(
            "# Mine\n{BLOCK_BEGIN}\n- first <!-- mnemo:id=m1 -->\n  more\n\n  after blank\n* star\nplain line\n-\n- fake <!-- mnemo:id=bad id -->\n{BLOCK_END}\ntail\n"
        );
        let parsed = bullets(&doc).unwrap().unwrap();
        let expected = [
            (Some("m1"), "first\nmore\n\nafter blank"),
            (None, "star"),
            (None, "plain line"),
            (None, ""),
            (None, "fake <!-- mnemo:id=bad id -->"),
        ];
        assert_eq!(parsed.len(), expected.len());
        for (bullet, (id, text)) in parsed.iter().zip(expected) {
            assert_eq!(bullet.id.as_deref(), id);
            assert_eq!(bullet.text, text);
        }
    }

    #[test]
    fn an_unclosed_block_is_refused_and_markers_must_be_whole_lines() {
        assert!(find_block(&format!("a\n{BLOCK_BEGIN}\n- x\n")).is_err());
        assert_eq!(find_block(&format!("  {BLOCK_BEGIN}\n")).unwrap(), None);
        let doc = format!("x\n{BLOCK_BEGIN}  \r\n  {BLOCK_END}\n{BLOCK_END}\ny");
        let (start, end) = find_block(&doc).unwrap().unwrap();
        assert_eq!(&doc[..start], "x\n");
        assert_eq!(&doc[end..], "y");
    }
}
