//! Files memtide stores and indexes: Markdown documents synced by path (a
//! `MEMORY.md`) and the files Claude's memory tool keeps under `/memories`
//! (see [`crate::memory_tool`]).
//!
//! A file belongs to exactly one [`Scope`]: files of one scope are invisible
//! to every other, and two scopes may hold different files at the same
//! path. memtide keeps each file's content (with `<private>` spans removed,
//! lines kept) and the sha256 of the content as last synced, and indexes it
//! as chunks ([`crate::text::markdown`]): memories of kind `document` whose
//! `source` is `{kind: "file", ref: <path>}` and whose `sourceLines` say
//! which lines they hold. Syncing content whose hash is the file's changes
//! nothing; any other content replaces every old chunk of the file in the
//! same commit that writes the file, so file and chunks never disagree.
//!
//! Directories are implicit, as in an object store: a directory exists
//! while a file lies under it. A path cannot be a file and a directory at
//! once.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::item::{Scope, Timestamp};
use crate::keys::FILE_PREFIX;
use crate::text::hex;

/// Longest accepted path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest accepted path segment (file or directory name), in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Why a path is refused. Every rule holds for every file path; the memory
/// tool adds [`PathError::OutsideMemories`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Nothing was given.
    #[error("the path is empty")]
    Empty,
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("the path is {0} bytes long; the limit is {MAX_PATH_BYTES}")]
    TooLong(usize),
    /// A segment longer than [`MAX_SEGMENT_BYTES`].
    #[error("a path segment is {0} bytes long; the limit is {MAX_SEGMENT_BYTES}")]
    SegmentTooLong(usize),
    /// A `.` or `..` segment: paths are never resolved, so these are refused
    /// rather than given a meaning.
    #[error("`.` and `..` path segments are not allowed")]
    DotSegment,
    /// Two slashes in a row, or a slash at the end.
    #[error("empty path segments (`//` or a trailing `/`) are not allowed")]
    EmptySegment,
    /// A backslash, a path separator elsewhere.
    #[error("backslashes are not allowed in paths")]
    Backslash,
    /// NUL or another control character.
    #[error("control characters are not allowed in paths")]
    ControlCharacter,
    /// A percent-escape (`%` and two hex digits, such as `%2e`): no layer
    /// decodes them, and refusing them all means no decoding layer anywhere
    /// can turn one into `.`, `/` or `\`.
    #[error("percent-encoded sequences (such as `%2e`) are not allowed in paths")]
    PercentEscape,
    /// A memory tool path that is not `/memories` or under it.
    #[error("the path must be /memories or lie under /memories")]
    OutsideMemories,
}

/// Checks a file path: 1 to [`MAX_PATH_BYTES`] bytes of `/`-separated
/// segments, optionally starting with `/`; no empty, `.` or `..` segment,
/// none longer than [`MAX_SEGMENT_BYTES`]; no backslash, no control
/// character (NUL included) and no percent-escape (`%` followed by two hex
/// digits; a `%` otherwise is allowed).
pub fn validate_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong(path.len()));
    }
    if path.chars().any(char::is_control) {
        return Err(PathError::ControlCharacter);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    if has_percent_escape(path) {
        return Err(PathError::PercentEscape);
    }
    let relative = path.strip_prefix('/').unwrap_or(path);
    for segment in relative.split('/') {
        match segment {
            "" => return Err(PathError::EmptySegment),
            "." | ".." => return Err(PathError::DotSegment),
            s if s.len() > MAX_SEGMENT_BYTES => return Err(PathError::SegmentTooLong(s.len())),
            _ => {}
        }
    }
    Ok(())
}

/// True when `path` holds `%` followed by two hex digits.
fn has_percent_escape(path: &str) -> bool {
    path.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// One stored file: the record under `file/<key>` (see `docs/format.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredFile {
    /// The scope the file belongs to.
    pub scope: Scope,
    /// Its path (see [`validate_path`]).
    pub path: String,
    /// The content, with `<private>` spans removed (each replaced by a
    /// space and the line breaks it held, so line numbers are kept).
    pub content: String,
    /// sha256 (lowercase hex) of the content as last synced, before
    /// `<private>` spans were removed: syncing the same content again is a
    /// no-op.
    pub content_hash: String,
    /// When the content last changed.
    pub updated_at: Timestamp,
}

impl StoredFile {
    /// The storage key of this file.
    pub fn storage_key(&self) -> String {
        file_storage_key(&self.scope, &self.path)
    }
}

/// The storage key of the file at `path` in `scope`:
/// `file/` + sha256 hex of the scope's JSON, a NUL byte and the path. Keys
/// stay short however long the scope ids and path are.
pub fn file_storage_key(scope: &Scope, path: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(scope).unwrap_or_default());
    hasher.update([0]);
    hasher.update(path.as_bytes());
    format!("{FILE_PREFIX}{}", hex(&hasher.finalize()))
}

/// What syncing a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileSyncOutcome {
    /// Same content as stored: nothing was written.
    Unchanged,
    /// A new file.
    Created,
    /// The file's content changed and its chunks were replaced.
    Updated,
}

/// The result of syncing one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSync {
    /// The file's path.
    pub path: String,
    /// What happened.
    pub outcome: FileSyncOutcome,
    /// Ids of the file's chunks after the sync, in line order.
    pub chunks: Vec<String>,
    /// How many old chunks the sync removed.
    pub removed: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_are_accepted() {
        for ok in [
            "MEMORY.md",
            ".cowork/USER.md",
            "/memories",
            "/memories/notes/2024 plans.md",
            "50% done.md",
            "%zz",
            "a/b/c/d.md",
            "日本語/メモ.md",
        ] {
            assert_eq!(validate_path(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn each_rule_refuses_its_paths() {
        let long_segment = "x".repeat(MAX_SEGMENT_BYTES + 1);
        let long_path = "a/".repeat(MAX_PATH_BYTES / 2) + "b";
        let cases: [(&str, PathError); 13] = [
            ("", PathError::Empty),
            ("a//b", PathError::EmptySegment),
            ("/", PathError::EmptySegment),
            ("a/", PathError::EmptySegment),
            ("a/../b", PathError::DotSegment),
            ("./a", PathError::DotSegment),
            ("a\\b", PathError::Backslash),
            ("a\0b", PathError::ControlCharacter),
            ("a\nb", PathError::ControlCharacter),
            ("%2e%2e%2fetc", PathError::PercentEscape),
            ("a%2Fb", PathError::PercentEscape),
            (
                &long_segment,
                PathError::SegmentTooLong(MAX_SEGMENT_BYTES + 1),
            ),
            (&long_path, PathError::TooLong(long_path.len())),
        ];
        for (path, error) in cases {
            assert_eq!(validate_path(path), Err(error), "{path:?}");
        }
    }

    #[test]
    fn storage_keys_separate_scopes_and_paths() {
        let a = Scope::workspace("u", "w");
        let b = Scope::workspace("u", "w2");
        let key = file_storage_key(&a, "x.md");
        assert!(key.starts_with(FILE_PREFIX));
        assert_eq!(key.len(), FILE_PREFIX.len() + 64);
        assert_ne!(key, file_storage_key(&b, "x.md"));
        assert_ne!(key, file_storage_key(&a, "y.md"));
        assert_eq!(key, file_storage_key(&a, "x.md"));
    }
}
