//! Export and import: the store (or the scopes a filter selects) as one
//! versioned, checksummed JSON document, and that document applied back
//! atomically.
//!
//! ```text
//! {
//!   "format": "mnemo-export",
//!   "version": 2,                  // 1 without files, 3 with keyed memories
//!                                  // or memories that record who said them
//!   "exportedAt": "2026-11-24T10:00:00.000Z",
//!   "filter": {"userId": "alice"}, // only when the export was filtered
//!   "itemCount": 3,
//!   "checksum": "<sha256 hex of the bytes of `items`>",
//!   "items": [<memory>, …],        // by id
//!   "fileCount": 1,                // versions 2 and 3, as the next two
//!   "filesChecksum": "<sha256 hex of the bytes of `files`>",
//!   "files": [<stored file>, …]    // by scope, then path
//! }
//! ```
//!
//! Version 1 (no files) is what builds before stored files wrote; this build
//! still writes it for a store without files, so older builds can read
//! such exports. Version 3 is written when a memory has a `key`,
//! `metadata`, `history`, a `role` or a `speaker`, so builds before them refuse the export with
//! [`Error::VersionMismatch`] instead of a memory's unknown fields; its
//! `files` part is there when it holds files. A version newer than [`EXPORT_VERSION`] is refused with
//! [`Error::VersionMismatch`], a checksum that does not match with
//! [`Error::Corrupt`], anything else malformed with [`Error::InvalidInput`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::catalog::Entry;
use super::duplicate::DuplicateKey;
use super::files::FileKey;
use super::{text_to_store, Captured, Engine, IngestReason, Txn};
use crate::dedupe::Duplicate;
use crate::error::{Error, Result};
use crate::files::StoredFile;
use crate::item::{validate_id, validate_item_id, MemoryItem, Scope, ScopeFilter, Timestamp};
use crate::text;

/// Export file format name.
pub const EXPORT_FORMAT: &str = "mnemo-export";
/// Newest export format version this build writes and reads: memories
/// with keys, metadata, history, roles or speakers.
pub const EXPORT_VERSION: u32 = 3;
/// The version of exports with files (and no keyed memories).
const VERSION_WITH_FILES: u32 = 2;
/// The version of exports without files.
const VERSION_WITHOUT_FILES: u32 = 1;

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportResult {
    /// New memories.
    pub added: usize,
    /// Memories whose id already existed, replaced by the imported version.
    pub replaced: usize,
    /// Memories merged into an existing memory with the same text and scope.
    pub merged: usize,
    /// Files written (new, or replacing the file at the same scope and
    /// path, whose chunks the export does not hold are erased).
    pub files: usize,
}

impl Engine {
    /// Serializes the memories (soft-deleted ones included) and the files
    /// of the scopes `filter` selects (every scope when it is empty); see
    /// the module documentation.
    pub fn export(&self, filter: &ScopeFilter, now: Timestamp) -> String {
        // The memories are chosen from their entries' fields and written
        // one at a time into an output sized in advance: a held memory is
        // decoded for its own line only (`Entry::item`), and no list of
        // decoded memories nor second copy of their JSON sits beside the
        // output (linear memory never shrinks).
        let mut items: Vec<(&str, &Entry)> = self
            .entries
            .iter()
            .filter(|(_, e)| filter.matches_parts(e.scope(), e.metadata()))
            .collect();
        items.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let files: Vec<&StoredFile> = self
            .files
            .values()
            .filter(|f| filter.matches_files_of(&f.scope))
            .collect();
        let keyed = items.iter().any(|(_, e)| e.uses_v5_fields());
        let version = if keyed {
            EXPORT_VERSION
        } else if files.is_empty() {
            VERSION_WITHOUT_FILES
        } else {
            VERSION_WITH_FILES
        };
        let items_len = 2 + items.len() + items.iter().map(|(_, e)| e.json_len()).sum::<usize>();
        let mut out = Vec::with_capacity(items_len + 512);
        out.extend_from_slice(format!("{{\"format\":\"{EXPORT_FORMAT}\",").as_bytes());
        out.extend_from_slice(format!("\"version\":{version},\"exportedAt\":\"{now}\",").as_bytes());
        if !filter.is_empty() {
            out.extend_from_slice(format!("\"filter\":{},", to_json(filter, "{}")).as_bytes());
        }
        write_checksummed_part(&mut out, "item", items.len(), "checksum", |out| {
            let start = out.len();
            out.push(b'[');
            for (i, (_, entry)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if serde_json::to_writer(&mut *out, &*entry.item()).is_err() {
                    // As a whole list that fails to serialize was written.
                    out.truncate(start);
                    out.push(b'[');
                    break;
                }
            }
            out.push(b']');
        });
        // Version 3 holds a files part only when it has files.
        if !files.is_empty() {
            out.push(b',');
            write_checksummed_part(&mut out, "file", files.len(), "filesChecksum", |out| {
                out.extend_from_slice(to_json(&files, "[]").as_bytes());
            });
        }
        out.push(b'}');
        // Every part written is JSON, so UTF-8.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Imports an export: every memory and file is validated first, then
    /// all are applied at once. A memory with an id already stored replaces
    /// it; one with the same text and scope as another memory merges into
    /// it; others are added. A file replaces the file at its scope and
    /// path, and the chunks of that file the export does not hold are
    /// erased, so no stale chunk survives.
    pub fn import(&mut self, data: &str, now: Timestamp, txn: &mut Txn) -> Result<ImportResult> {
        let Export { items, files } = parse_export(data)?;
        // The imported ids (a file's chunks among them are not stale).
        let mut imported_ids = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            self.validate_imported(item)
                .map_err(|e| e.at(&format!("items[{i}]")))?;
            if !imported_ids.insert(item.id.as_str()) {
                return Err(Error::invalid(format!(
                    "items[{i}]: duplicate id `{}`",
                    item.id
                )));
            }
        }
        self.validate_imported_files(&files)?;
        let mut result = ImportResult {
            added: 0,
            replaced: 0,
            merged: 0,
            files: files.len(),
        };
        for file in files {
            let key: FileKey = (file.scope.clone(), file.path.clone());
            let stale: BTreeSet<String> = self
                .file_chunks
                .get(&key)
                .into_iter()
                .flatten()
                .filter(|id| !imported_ids.contains(id.as_str()))
                .cloned()
                .collect();
            self.erase_chunks(&stale, txn);
            self.write_file(txn, &key, Some(file));
        }
        // Memories whose text is new to this store: they need an embedding.
        let mut new_texts: Vec<(String, String)> = Vec::new();
        let summaries: Vec<(String, Scope, Vec<String>)> = items
            .iter()
            .filter(|i| !i.summary_of.is_empty())
            .map(|i| (i.id.clone(), i.scope.clone(), i.summary_of.clone()))
            .collect();
        for item in items {
            // A superseded memory gave its key to its successor: it holds none.
            if let Some(key) = item.key.as_ref().filter(|_| !item.is_superseded()) {
                if let Some(holder) = self.holder_of_key(&item.scope, key) {
                    if holder != item.id {
                        return Err(Error::invalid(format!(
                            "memory `{}` has key `{key}`, which memory `{holder}` holds in its scope",
                            item.id
                        )));
                    }
                }
            }
            if !item.summary_of.is_empty() {
                self.check_imported_summary_scope(&item)?;
            }
            let hash_key = DuplicateKey::of(self.scope_key(&item.scope), &item);
            // Chunks belong to their file and never merge; a superseded
            // memory is an old version, imported as it is.
            let existing_same_text = self
                .duplicate_of(&hash_key)
                .filter(|other| {
                    ***other != *item.id
                        && !item.is_file_chunk()
                        && item.key.is_none()
                        && !item.is_superseded()
                        && item.summary_of.is_empty()
                })
                .cloned();
            if self.entries.contains_key(&item.id) {
                if let Some(other) = existing_same_text {
                    return Err(Error::invalid(format!(
                        "memory `{}` would become identical to memory `{other}`",
                        item.id
                    )));
                }
                result.replaced += 1;
                let old = self.get(&item.id)?;
                if old.text != item.text || old.speaker != item.speaker {
                    let said = text::said_text(&item.text, item.speaker.as_deref());
                    new_texts.push((item.id.clone(), said.into_owned()));
                }
                self.write(txn, &item.id.clone(), Some(item));
            } else if let Some(other) = existing_same_text {
                let duplicate = Duplicate {
                    source: item.source,
                    created_at: item.created_at,
                    tags: item.tags,
                    pinned: item.pinned,
                    privacy: item.privacy,
                    text: None,
                };
                self.merge_duplicate(&other, duplicate, IngestReason::Duplicate, now, txn);
                result.merged += 1;
            } else {
                result.added += 1;
                let said = text::said_text(&item.text, item.speaker.as_deref());
                new_texts.push((item.id.clone(), said.into_owned()));
                self.write(txn, &item.id.clone(), Some(item));
            }
        }
        self.check_imported_summaries(&summaries)?;
        let texts: Vec<&str> = new_texts.iter().map(|(_, t)| t.as_str()).collect();
        let mut vectors = self.embed(&texts)?.map(Vec::into_iter);
        for (id, _) in &new_texts {
            let vector = vectors.as_mut().and_then(Iterator::next);
            if vector.is_some() || self.has_embedding(id) {
                self.write_vector(txn, id, vector);
            }
        }
        Ok(result)
    }

    /// The text [`Engine::import`] would embed for each memory of an export:
    /// `None` without a model, and for a memory whose text the store already
    /// holds in its scope.
    pub(crate) fn import_texts(&self, data: &str) -> Result<Vec<Option<String>>> {
        let Export { items, .. } = parse_export(data)?;
        Ok(items
            .into_iter()
            .map(|item| {
                let held = DuplicateKey::of(self.scope_key(&item.scope), &item);
                let embed = self.embedder().is_some() && self.duplicate_of(&held).is_none();
                embed.then_some(item.text)
            })
            .collect())
    }

    fn validate_imported(&self, item: &MemoryItem) -> Result<()> {
        validate_item_id(&item.id)?;
        item.scope.validate()?;
        self.check_text_size("text", &item.text)?;
        match text_to_store(&item.text, self.config.secrets)? {
            Captured::Text(t) if t == item.text => {}
            _ => {
                return Err(Error::invalid(
                    "text is not in stored form (normalized, without <private>, <no-memory> or credentials)",
                ))
            }
        }
        if text::content_hash(&item.text) != item.content_hash {
            return Err(Error::Corrupt(format!(
                "memory `{}` has a wrong contentHash",
                item.id
            )));
        }
        if self.clean_tags(item.tags.clone())? != item.tags {
            return Err(Error::invalid("tags must be trimmed and distinct"));
        }
        if let Some(key) = &item.key {
            validate_id("key", key)?;
        }
        if let Some(metadata) = &item.metadata {
            self.check_metadata(metadata)?;
        }
        if item.withdrawn && (!item.is_deleted() || item.summary_of.is_empty()) {
            return Err(Error::invalid(format!(
                "memory `{}` is withdrawn but not a soft-deleted summary",
                item.id
            )));
        }
        self.validate_source(&item.source)
    }

    /// Checks each file as [`Engine::sync_file`] would accept its content,
    /// and that the files, with the store's files they do not replace, keep
    /// every path of a scope either a file or a directory.
    fn validate_imported_files(&self, files: &[StoredFile]) -> Result<()> {
        let mut paths: BTreeSet<FileKey> = self.files.keys().cloned().collect();
        let mut imported: BTreeSet<(&_, &str)> = BTreeSet::new();
        for (i, file) in files.iter().enumerate() {
            self.validate_imported_file(file)
                .map_err(|e| e.at(&format!("files[{i}]")))?;
            paths.insert((file.scope.clone(), file.path.clone()));
            if !imported.insert((&file.scope, file.path.as_str())) {
                return Err(Error::invalid(format!(
                    "files[{i}]: duplicate path `{}`",
                    file.path
                )));
            }
        }
        for (scope, path) in &paths {
            let inside = format!("{path}/");
            let below = paths
                .range((scope.clone(), inside.clone())..)
                .next()
                .is_some_and(|(s, p)| s == scope && p.starts_with(&inside));
            if below {
                return Err(Error::invalid(format!(
                    "`{path}` would be both a file and a directory"
                )));
            }
        }
        Ok(())
    }

    fn validate_imported_file(&self, file: &StoredFile) -> Result<()> {
        self.check_file_input(&file.scope, &file.path, &file.content)?;
        if text::remove_private_keeping_lines(&file.content) != file.content {
            return Err(Error::invalid(
                "content is not in stored form (it holds a <private> span)",
            ));
        }
        let hash = file.content_hash.as_bytes();
        if hash.len() != 64 || !hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(Error::invalid(
                "contentHash must be 64 lowercase hexadecimal digits",
            ));
        }
        Ok(())
    }
}

/// `value` as JSON, or `fallback` (serializing memtide's own types does not
/// fail).
fn to_json<T: Serialize + ?Sized>(value: &T, fallback: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| fallback.to_string())
}

/// Writes `"<noun>Count":n,"<checksum_key>":"<sha256 of json>","<noun>s":<json>`
/// to `out`, `write_json` writing the JSON: in place, its checksum filled
/// in once it is written, so the JSON is never copied.
fn write_checksummed_part(
    out: &mut Vec<u8>,
    noun: &str,
    count: usize,
    checksum_key: &str,
    write_json: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(format!("\"{noun}Count\":{count},\"{checksum_key}\":\"").as_bytes());
    let checksum_at = out.len();
    out.extend_from_slice(&[b'0'; 64]);
    out.extend_from_slice(format!("\",\"{noun}s\":").as_bytes());
    let json_at = out.len();
    write_json(out);
    let digest = text::hex(&Sha256::digest(&out[json_at..]));
    out[checksum_at..checksum_at + 64].copy_from_slice(digest.as_bytes());
}

/// The parts of an export document parsing needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExportHeader<'a> {
    format: String,
    version: u32,
    #[serde(default)]
    item_count: Option<u64>,
    #[serde(default)]
    checksum: Option<String>,
    #[serde(borrow)]
    items: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    file_count: Option<u64>,
    #[serde(default)]
    files_checksum: Option<String>,
    #[serde(borrow)]
    files: Option<&'a serde_json::value::RawValue>,
}

/// The content of an export.
struct Export {
    items: Vec<MemoryItem>,
    files: Vec<StoredFile>,
}

fn parse_export(data: &str) -> Result<Export> {
    let header: ExportHeader<'_> = serde_json::from_str(data)
        .map_err(|e| Error::Corrupt(format!("not a memtide export: {e}")))?;
    if header.format != EXPORT_FORMAT {
        return Err(Error::invalid(format!(
            "format is `{}`, expected `{EXPORT_FORMAT}`",
            header.format
        )));
    }
    if header.version == 0 {
        return Err(Error::Corrupt("export version 0 does not exist".into()));
    }
    if header.version > EXPORT_VERSION {
        return Err(Error::VersionMismatch {
            found: header.version,
            supported: EXPORT_VERSION,
        });
    }
    let items = checked_part(header.items, header.checksum, header.item_count, "items")?;
    let files = match (header.version, header.files) {
        (VERSION_WITHOUT_FILES, Some(_)) => {
            return Err(Error::invalid("a version 1 export holds no files"))
        }
        (VERSION_WITHOUT_FILES, None) => Vec::new(),
        // Version 3 holds a files part only when it has files.
        (EXPORT_VERSION, None) if header.files_checksum.is_none() && header.file_count.is_none() => {
            Vec::new()
        }
        (_, files) => checked_part(files, header.files_checksum, header.file_count, "files")?,
    };
    Ok(Export { items, files })
}

/// Parses the part `name` of an export after checking its checksum, and
/// its length against the header's count when there is one.
fn checked_part<T: for<'de> Deserialize<'de>>(
    raw: Option<&serde_json::value::RawValue>,
    checksum: Option<String>,
    count: Option<u64>,
    name: &str,
) -> Result<Vec<T>> {
    let raw = raw.ok_or_else(|| Error::Corrupt(format!("export has no {name}")))?;
    let expected =
        checksum.ok_or_else(|| Error::Corrupt(format!("export has no checksum of its {name}")))?;
    if text::hex(&Sha256::digest(raw.get().as_bytes())) != expected {
        return Err(Error::Corrupt(format!(
            "export checksum does not match its {name}"
        )));
    }
    let part: Vec<T> =
        serde_json::from_str(raw.get()).map_err(|e| Error::invalid(format!("{name}: {e}")))?;
    match count {
        Some(count) if count != part.len() as u64 => Err(Error::Corrupt(format!(
            "export says it holds {count} {name} but holds {}",
            part.len()
        ))),
        _ => Ok(part),
    }
}
