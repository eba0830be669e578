//! The engine's files: storing, syncing, moving and removing them, with
//! their chunks kept in step (see [`crate::files`]).

use std::borrow::Cow;
use std::collections::BTreeSet;

use super::txn::{Txn, Undo};
use super::ingest::detects_pii;
use super::{text_to_store, Captured, Engine};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::files::{self, FileSync, FileSyncOutcome, StoredFile};
use crate::item::{Kind, LineRange, MemoryItem, Privacy, Scope, Source, SourceKind, Status};
use crate::text::tokens::TokenCounter;
use crate::text::{self, markdown};

/// A file's identity: its scope and path.
pub(crate) type FileKey = (Scope, String);

impl Engine {
    // ----- the file mutation primitive -----------------------------------

    /// Replaces (or removes, with `None`) the file under `key`. Returns the
    /// previous file.
    pub(super) fn set_file(
        &mut self,
        key: &FileKey,
        new: Option<StoredFile>,
    ) -> Option<StoredFile> {
        let old = self.files.remove(key);
        if let Some(file) = new {
            self.files.insert(key.clone(), file);
        }
        old
    }

    /// [`Engine::set_file`] that records the undo step.
    pub(super) fn write_file(&mut self, txn: &mut Txn, key: &FileKey, new: Option<StoredFile>) {
        let previous = self.set_file(key, new);
        txn.undo
            .push(Undo::File(key.clone(), previous.map(Box::new)));
    }

    /// Adds or removes `item` in the chunk index of its file, if it is a
    /// chunk.
    pub(super) fn index_file_chunk(&mut self, item: &MemoryItem, present: bool) {
        let Some((path, _)) = item.file_location() else {
            return;
        };
        let key = (item.scope.clone(), path.to_string());
        if present {
            self.file_chunks
                .entry(key)
                .or_default()
                .insert(item.id.clone());
        } else if let Some(ids) = self.file_chunks.get_mut(&key) {
            ids.remove(&item.id);
            if ids.is_empty() {
                self.file_chunks.remove(&key);
            }
        }
    }

    // ----- reading ---------------------------------------------------------

    /// The file at `path` in exactly `scope`.
    pub fn file(&self, scope: &Scope, path: &str) -> Option<&StoredFile> {
        self.files.get(&(scope.clone(), path.to_string()))
    }

    /// The files of exactly `scope` whose path starts with `prefix`, in path
    /// order.
    pub fn files_with_prefix<'a>(
        &'a self,
        scope: &'a Scope,
        prefix: &'a str,
    ) -> impl Iterator<Item = &'a StoredFile> + 'a {
        self.files
            .range((scope.clone(), prefix.to_string())..)
            .take_while(move |((s, path), _)| s == scope && path.starts_with(prefix))
            .map(|(_, file)| file)
    }

    /// True when files of `scope` lie under the directory `path`.
    pub fn is_directory(&self, scope: &Scope, path: &str) -> bool {
        let inside = format!("{path}/");
        let found = self.files_with_prefix(scope, &inside).next().is_some();
        found
    }

    /// The first ancestor directory of `path` that is a file of `scope`
    /// instead (so nothing can lie under it).
    pub fn ancestor_file<'p>(&self, scope: &Scope, path: &'p str) -> Option<&'p str> {
        path.match_indices('/')
            .map(|(at, _)| &path[..at])
            .find(|ancestor| self.file(scope, ancestor).is_some())
    }

    /// The chunks of the file at `path` in `scope` (chunks whose file is
    /// not stored included), in line order.
    pub fn chunks_of_file(&self, scope: &Scope, path: &str) -> Vec<Cow<'_, MemoryItem>> {
        let mut chunks: Vec<Cow<'_, MemoryItem>> = self
            .file_chunks
            .get(&(scope.clone(), path.to_string()))
            .into_iter()
            .flatten()
            .filter_map(|id| self.entries.get(id).map(|e| e.item()))
            .collect();
        chunks.sort_by_key(|item| (item.source_lines.map(|l| l.start), item.id.clone()));
        chunks
    }

    // ----- writing ---------------------------------------------------------

    /// Stores `content` as the file at `path` in `scope` and indexes it.
    ///
    /// When the content's sha256 is the stored file's, nothing changes
    /// ([`FileSyncOutcome::Unchanged`]). Otherwise the file record is
    /// written with `<private>` spans removed, every old chunk of the file
    /// is erased (with its embedding) and the content is chunked anew with
    /// `counter` and [`crate::Config::chunking`]; chunks holding
    /// `<no-memory>`, or nothing but private text, are not indexed. Fails
    /// for a bad scope or path, content over `maxFileBytes`, or a path that
    /// is a directory of the scope or lies under one of its files.
    pub fn sync_file(
        &mut self,
        scope: &Scope,
        path: &str,
        content: &str,
        counter: &dyn TokenCounter,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<FileSync> {
        self.check_file_input(scope, path, content)?;
        let key: FileKey = (scope.clone(), path.to_string());
        let content_hash = text::content_hash(content);
        let outcome = match self.files.get(&key) {
            Some(file) if file.content_hash == content_hash => {
                let chunks = self.chunks_of_file(scope, path);
                return Ok(FileSync {
                    path: path.to_string(),
                    outcome: FileSyncOutcome::Unchanged,
                    chunks: chunks.iter().map(|c| c.id.clone()).collect(),
                    removed: 0,
                });
            }
            Some(_) => FileSyncOutcome::Updated,
            None => {
                self.check_path_is_free(scope, path)?;
                FileSyncOutcome::Created
            }
        };
        let now = env.now();
        let stored = StoredFile {
            scope: scope.clone(),
            path: path.to_string(),
            content: self.file_content(content),
            content_hash,
            updated_at: now,
        };
        // The old chunks go after the new ones got their ids, so no id of an
        // old chunk is given to a new one.
        let old_chunks: BTreeSet<String> = self.file_chunks.get(&key).cloned().unwrap_or_default();

        let mut chunks: Vec<(LineRange, String)> = Vec::new();
        for chunk in markdown::chunk_markdown(&stored.content, self.config.chunking, counter) {
            if let Ok(Captured::Text(text)) = text_to_store(&chunk.text, self.config.secrets) {
                let lines = LineRange {
                    start: chunk.start_line,
                    end: chunk.end_line,
                };
                chunks.push((lines, text));
            }
        }
        let texts: Vec<&str> = chunks.iter().map(|(_, text)| text.as_str()).collect();
        let mut vectors = self.embed(&texts)?.map(Vec::into_iter);
        let mut ids = Vec::with_capacity(chunks.len());
        for (lines, text) in chunks {
            let id = self.fresh_id(env);
            let pii = detects_pii(&text, self.config.secrets);
            let item = MemoryItem {
                id: id.clone(),
                content_hash: text::content_hash(&text),
                role: None,
                speaker: None,
                text,
                kind: Kind::Document,
                scope: scope.clone(),
                status: Status::Approved,
                pinned: false,
                source: Source {
                    kind: SourceKind::File,
                    reference: path.to_string(),
                    uri: None,
                },
                tags: Vec::new(),
                privacy: Privacy {
                    pii,
                    ..Privacy::default()
                },
                created_at: now,
                updated_at: now,
                last_used_at: None,
                usage_count: 0,
                merged_from: Vec::new(),
                follows: None,
                deleted_at: None,
                source_lines: Some(lines),
                key: None,
                metadata: None,
                history: Vec::new(),
                superseded_at: None,
                superseded_by: None,
                supersedes: Vec::new(),
                summary_of: Vec::new(),
                withdrawn: false,
            };
            self.write(txn, &id, Some(item));
            if let Some(vector) = vectors.as_mut().and_then(Iterator::next) {
                self.write_vector(txn, &id, Some(vector));
            }
            ids.push(id);
        }
        self.erase_chunks(&old_chunks, txn);
        self.write_file(txn, &key, Some(stored));
        Ok(FileSync {
            path: path.to_string(),
            outcome,
            chunks: ids,
            removed: old_chunks.len(),
        })
    }

    /// Removes the file at `path` in `scope` and erases its chunks; returns
    /// whether there was a file.
    pub fn remove_file(&mut self, scope: &Scope, path: &str, txn: &mut Txn) -> bool {
        let key: FileKey = (scope.clone(), path.to_string());
        let chunks = self.file_chunks.get(&key).cloned().unwrap_or_default();
        self.erase_chunks(&chunks, txn);
        let existed = self.files.contains_key(&key);
        if existed {
            self.write_file(txn, &key, None);
        }
        existed
    }

    /// Moves the file at `from` to `to` in `scope`, its chunks with it
    /// (same ids and embeddings, `source.ref` rewritten). Fails when there
    /// is no file at `from`, or `to` is not free (see
    /// [`Engine::sync_file`]).
    pub fn rename_file(
        &mut self,
        scope: &Scope,
        from: &str,
        to: &str,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<()> {
        files::validate_path(to).map_err(|e| Error::invalid(e.to_string()))?;
        let from_key: FileKey = (scope.clone(), from.to_string());
        let Some(mut file) = self.files.get(&from_key).cloned() else {
            return Err(Error::NotFound(format!("file `{from}`")));
        };
        self.check_path_is_free(scope, to)?;
        self.write_file(txn, &from_key, None);
        let now = env.now();
        let chunk_ids: Vec<String> = self
            .chunks_of_file(scope, from)
            .iter()
            .map(|c| c.id.clone())
            .collect();
        for id in chunk_ids {
            if let Some(entry) = self.entries.get(&id) {
                let mut moved = entry.item().into_owned();
                moved.source.reference = to.to_string();
                moved.updated_at = now;
                self.write(txn, &id, Some(moved));
            }
        }
        file.path = to.to_string();
        file.updated_at = now;
        self.write_file(txn, &(scope.clone(), to.to_string()), Some(file));
        Ok(())
    }

    /// Removes every file of the scopes `matches` selects, with its chunks.
    pub(super) fn remove_files_where(&mut self, matches: impl Fn(&Scope) -> bool, txn: &mut Txn) {
        let keys: Vec<FileKey> = self
            .files
            .keys()
            .filter(|(scope, _)| matches(scope))
            .cloned()
            .collect();
        for (scope, path) in keys {
            self.remove_file(&scope, &path, txn);
        }
    }

    /// Erases the chunks `ids`, with their embeddings.
    pub(super) fn erase_chunks(&mut self, ids: &BTreeSet<String>, txn: &mut Txn) {
        for id in ids {
            self.write_erased(txn, id);
        }
    }

    /// Checks a file given to memtide (synced or imported): a valid scope and
    /// path, and content within `maxFileBytes`.
    /// What a file keeps of its content: its lines without `<private>`
    /// spans and, unless `secrets.redact` is off, without credentials.
    fn file_content(&self, content: &str) -> String {
        let kept = text::remove_private_keeping_lines(content);
        if self.config.secrets.redact {
            text::scrub_keeping_lines(&kept).text
        } else {
            kept
        }
    }

    pub(super) fn check_file_input(&self, scope: &Scope, path: &str, content: &str) -> Result<()> {
        scope.validate()?;
        files::validate_path(path).map_err(|e| Error::invalid(e.to_string()))?;
        let limit = self.config.limits.max_file_bytes;
        if content.len() > limit {
            return Err(Error::TooLarge {
                what: format!("file `{path}`"),
                size: content.len(),
                limit,
            });
        }
        Ok(())
    }

    /// Fails unless `path` can be a new file of `scope`: not a file, not a
    /// directory (a prefix of files), and no ancestor is a file.
    fn check_path_is_free(&self, scope: &Scope, path: &str) -> Result<()> {
        if self.file(scope, path).is_some() || self.is_directory(scope, path) {
            return Err(Error::invalid(format!("`{path}` already exists")));
        }
        match self.ancestor_file(scope, path) {
            Some(ancestor) => Err(Error::invalid(format!(
                "`{ancestor}` is a file, so `{path}` cannot lie under it"
            ))),
            None => Ok(()),
        }
    }
}
