//! Claude's memory tool (`memory_20250818`, named `memory`), with memtide as
//! its storage and index.
//!
//! [`run`] takes the `input` of a `tool_use` block the model sent and
//! returns the tool result to send back. It keeps the semantics and result
//! strings the tool's documentation gives
//! (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool>,
//! "Tool commands"; where it is silent, those of Anthropic's reference
//! implementation, `BetaLocalFilesystemMemoryTool` in the Python SDK):
//!
//! | command | input | result |
//! |---|---|---|
//! | `view` | `path`, `view_range?` | a directory listing two levels deep, or the file with numbered lines |
//! | `create` | `path`, `file_text` | `File created successfully at: {path}` |
//! | `str_replace` | `path`, `old_str`, `new_str` | `The memory file has been edited.` and a numbered snippet |
//! | `insert` | `path`, `insert_line`, `insert_text` | `The file {path} has been edited.` |
//! | `delete` | `path` | `Successfully deleted {path}` |
//! | `rename` | `old_path`, `new_path` | `Successfully renamed {old_path} to {new_path}` |
//!
//! `create` refuses an existing file (`Error: File {path} already exists`),
//! as the documentation says; the model edits a file with `str_replace` or
//! `insert`, or deletes it first.
//!
//! The files are [`crate::files`] of the scope the host passes: one
//! `/memories` tree per scope, invisible to every other. Every write goes
//! through [`Engine::sync_file`] (or its move and removal), so the file and
//! its chunks change in the same commit and retrieval finds what the model
//! wrote.
//!
//! # Errors
//!
//! What the model got wrong comes back as a tool result with
//! [`MemoryToolResult::is_error`] set, for the model to read and correct: an
//! unknown command, a missing or mistyped field, a path outside `/memories`
//! or against the path rules, a missing file, a non-unique `old_str`, a bad
//! line number, a file over `maxFileBytes`. What the host must handle is a
//! Rust [`Error`]: an invalid scope, a failed embedding, and (from
//! [`crate::Memory::memory_tool`]) a failed commit.
//!
//! # Paths
//!
//! A path is `/memories` or `/memories/…` and passes
//! [`crate::files::validate_path`]: no `.` or `..` segment, no empty segment
//! (`//`), no backslash, no NUL or other control character, no
//! percent-escape (`%2e%2e%2f` is refused as a whole, decoded or not), at
//! most 1024 bytes and 255 per segment. One trailing `/` is tolerated
//! (`/memories/` is `/memories`). Paths are never resolved or decoded, so
//! what passes is the path used. Names starting with `.` are allowed but,
//! like `node_modules`, left out of directory listings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::{Engine, Txn};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::files::{self, PathError};
use crate::item::Scope;
use crate::text::tokens::TokenCounter;

/// The root every memory tool path lies under.
pub const MEMORIES_ROOT: &str = "/memories";
/// Most lines a file may have for `view`.
const MAX_VIEW_LINES: usize = 999_999;
/// Width of the line numbers of `view` and snippets.
const LINE_NUMBER_WIDTH: usize = 6;
/// Lines of context around an edit in the `str_replace` snippet.
const SNIPPET_CONTEXT: usize = 2;

/// The tool result for the model: `content` goes in the `tool_result`
/// block, `is_error` in its `is_error` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryToolResult {
    /// The result text.
    pub content: String,
    /// True when the command failed (the text says why) and changed
    /// nothing.
    pub is_error: bool,
}

impl MemoryToolResult {
    fn ok(content: impl Into<String>) -> Self {
        MemoryToolResult {
            content: content.into(),
            is_error: false,
        }
    }

    fn error(content: impl Into<String>) -> Self {
        MemoryToolResult {
            content: content.into(),
            is_error: true,
        }
    }
}

/// One command of the tool's input.
#[derive(Debug, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
enum Command {
    View {
        path: String,
        #[serde(default)]
        view_range: Option<Vec<i64>>,
    },
    Create {
        path: String,
        file_text: String,
    },
    StrReplace {
        path: String,
        old_str: String,
        #[serde(default)]
        new_str: String,
    },
    Insert {
        path: String,
        insert_line: i64,
        insert_text: String,
    },
    Delete {
        path: String,
    },
    Rename {
        old_path: String,
        new_path: String,
    },
}

/// The commands, as the model names them.
const COMMANDS: [&str; 6] = [
    "view",
    "create",
    "str_replace",
    "insert",
    "delete",
    "rename",
];

/// Runs one memory tool call on the files of `scope`; see the module
/// documentation. Writes land in `txn` (nothing is written for a tool
/// error); `counter` counts tokens for chunking.
pub fn run(
    engine: &mut Engine,
    scope: &Scope,
    input: &serde_json::Value,
    counter: &dyn TokenCounter,
    env: &mut dyn Environment,
    txn: &mut Txn,
) -> Result<MemoryToolResult> {
    scope.validate()?;
    let command = match parse(input) {
        Ok(command) => command,
        Err(message) => return Ok(MemoryToolResult::error(message)),
    };
    let mut tool = Tool {
        engine,
        scope,
        counter,
        env,
        txn,
    };
    let outcome = match command {
        Command::View { path, view_range } => tool.view(&path, view_range.as_deref()),
        Command::Create { path, file_text } => tool.create(&path, &file_text),
        Command::StrReplace {
            path,
            old_str,
            new_str,
        } => tool.str_replace(&path, &old_str, &new_str),
        Command::Insert {
            path,
            insert_line,
            insert_text,
        } => tool.insert(&path, insert_line, &insert_text),
        Command::Delete { path } => tool.delete(&path),
        Command::Rename { old_path, new_path } => tool.rename(&old_path, &new_path),
    };
    match outcome {
        Ok(content) => Ok(MemoryToolResult::ok(content)),
        Err(Failure::Tool(message)) => Ok(MemoryToolResult::error(message)),
        Err(Failure::Host(error)) => Err(error),
    }
}

/// Reads the command, or says what is wrong with the input.
fn parse(input: &serde_json::Value) -> std::result::Result<Command, String> {
    let name = match input.get("command") {
        Some(serde_json::Value::String(name)) => name.as_str(),
        Some(_) => return Err("Error: `command` must be a string".into()),
        None => return Err("Error: the input has no `command`".into()),
    };
    if !COMMANDS.contains(&name) {
        return Err(format!(
            "Error: Unknown command `{}`. The commands are: {}",
            name.escape_debug(),
            COMMANDS.join(", ")
        ));
    }
    serde_json::from_value(input.clone())
        .map_err(|e| format!("Error: Invalid input for the `{name}` command: {e}"))
}

/// Why a command did not succeed.
enum Failure {
    /// The model's input was wrong: a tool result with `is_error`.
    Tool(String),
    /// The host's problem: a Rust error.
    Host(Error),
}

impl From<Error> for Failure {
    /// Input errors of the engine (a file too large, a path taken) are the
    /// model's; the rest the host's.
    fn from(error: Error) -> Self {
        match error {
            Error::InvalidInput(_) | Error::TooLarge { .. } => {
                Failure::Tool(format!("Error: {error}"))
            }
            other => Failure::Host(other),
        }
    }
}

type Outcome = std::result::Result<String, Failure>;

/// A path the model gave, checked: `shown` as given (for messages), `path`
/// the stored form.
struct MemoryPath<'a> {
    shown: &'a str,
    path: &'a str,
}

impl<'a> MemoryPath<'a> {
    fn parse(shown: &'a str) -> std::result::Result<Self, Failure> {
        let path = match shown.strip_suffix('/') {
            Some(trimmed) if !trimmed.is_empty() => trimmed,
            _ => shown,
        };
        check_memory_path(path).map_err(|e| {
            Failure::Tool(format!(
                "Error: The path {} is not allowed: {e}",
                shown.escape_debug()
            ))
        })?;
        Ok(MemoryPath { shown, path })
    }

    fn is_root(&self) -> bool {
        self.path == MEMORIES_ROOT
    }
}

/// Checks a memory tool path (see the module documentation).
pub fn check_memory_path(path: &str) -> std::result::Result<(), PathError> {
    files::validate_path(path)?;
    let under_root = path
        .strip_prefix(MEMORIES_ROOT)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    if under_root {
        Ok(())
    } else {
        Err(PathError::OutsideMemories)
    }
}

/// One call's context.
struct Tool<'a> {
    engine: &'a mut Engine,
    scope: &'a Scope,
    counter: &'a dyn TokenCounter,
    env: &'a mut dyn Environment,
    txn: &'a mut Txn,
}

impl Tool<'_> {
    /// True when `path` is a directory: the root, or a prefix of files.
    fn is_directory(&self, path: &MemoryPath<'_>) -> bool {
        path.is_root() || self.engine.is_directory(self.scope, path.path)
    }

    /// The content of the file at `path`, if it is one.
    fn content(&self, path: &MemoryPath<'_>) -> Option<String> {
        self.engine
            .file(self.scope, path.path)
            .map(|file| file.content.clone())
    }

    /// The content of an existing file to edit, or the documented errors.
    fn file_to_edit(
        &self,
        path: &MemoryPath<'_>,
        missing: &str,
    ) -> std::result::Result<String, Failure> {
        match self.content(path) {
            Some(content) => Ok(content),
            None if self.is_directory(path) => Err(Failure::Tool(format!(
                "Error: The path {} is not a file.",
                path.shown
            ))),
            None => Err(Failure::Tool(missing.to_string())),
        }
    }

    /// Writes `content` as the file at `path` (chunks re-synced).
    fn write(&mut self, path: &MemoryPath<'_>, content: &str) -> std::result::Result<(), Failure> {
        self.engine.sync_file(
            self.scope,
            path.path,
            content,
            self.counter,
            self.env,
            self.txn,
        )?;
        Ok(())
    }

    fn view(&mut self, shown: &str, view_range: Option<&[i64]>) -> Outcome {
        let path = MemoryPath::parse(shown)?;
        if let Some(content) = self.content(&path) {
            return view_file(&path, &content, view_range);
        }
        if !self.is_directory(&path) {
            return Err(Failure::Tool(format!(
                "The path {} does not exist. Please provide a valid path.",
                path.shown
            )));
        }
        if view_range.is_some() {
            return Err(Failure::Tool(
                "Error: The `view_range` parameter is not allowed when `path` points to a directory."
                    .into(),
            ));
        }
        Ok(self.listing(&path))
    }

    /// The directory listing of `view`: the directory's own line, then
    /// every file and directory one or two levels down in path order,
    /// directories marked by a trailing `/`, names starting with `.` and
    /// `node_modules` left out (with everything under them). A directory's
    /// size is the total of the files under it, at any depth.
    fn listing(&self, path: &MemoryPath<'_>) -> String {
        let inside = format!("{}/", path.path);
        let mut total = 0;
        let mut entries: BTreeMap<String, usize> = BTreeMap::new();
        for file in self.engine.files_with_prefix(self.scope, &inside) {
            let size = file.content.len();
            total += size;
            let relative = &file.path[inside.len()..];
            let segments: Vec<&str> = relative.split('/').collect();
            for depth in 1..=segments.len().min(2) {
                let name = segments[depth - 1];
                if name.starts_with('.') || name == "node_modules" {
                    break;
                }
                let mut entry = format!("{inside}{}", segments[..depth].join("/"));
                if depth < segments.len() {
                    entry.push('/');
                }
                *entries.entry(entry).or_default() += size;
            }
        }
        let mut out = format!(
            "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:\n{}\t{}",
            path.shown,
            human_size(total),
            path.path
        );
        for (entry, size) in entries {
            out.push_str(&format!("\n{}\t{entry}", human_size(size)));
        }
        out
    }

    fn create(&mut self, shown: &str, file_text: &str) -> Outcome {
        let path = MemoryPath::parse(shown)?;
        if self.content(&path).is_some() {
            return Err(Failure::Tool(format!(
                "Error: File {} already exists",
                path.shown
            )));
        }
        if self.is_directory(&path) {
            return Err(Failure::Tool(format!(
                "Error: The path {} is a directory",
                path.shown
            )));
        }
        self.check_parent(&path)?;
        self.write(&path, file_text)?;
        Ok(format!("File created successfully at: {}", path.shown))
    }

    /// Fails when an ancestor directory of `path` is a file.
    fn check_parent(&self, path: &MemoryPath<'_>) -> std::result::Result<(), Failure> {
        match self.engine.ancestor_file(self.scope, path.path) {
            Some(file) => Err(Failure::Tool(format!(
                "Error: The path {file} is a file, not a directory"
            ))),
            None => Ok(()),
        }
    }

    fn str_replace(&mut self, shown: &str, old_str: &str, new_str: &str) -> Outcome {
        let path = MemoryPath::parse(shown)?;
        let missing = format!(
            "Error: The path {} does not exist. Please provide a valid path.",
            path.shown
        );
        let content = self.file_to_edit(&path, &missing)?;
        if old_str.is_empty() {
            return Err(Failure::Tool(
                "Error: `old_str` must not be empty".to_string(),
            ));
        }
        let positions: Vec<usize> = content.match_indices(old_str).map(|(at, _)| at).collect();
        let line_of = |at: usize| content[..at].matches('\n').count() + 1;
        let at = match positions.as_slice() {
            [] => {
                return Err(Failure::Tool(format!(
                "No replacement was performed, old_str `{old_str}` did not appear verbatim in {}.",
                path.shown
            )))
            }
            [at] => *at,
            many => {
                let lines: Vec<String> = many.iter().map(|&at| line_of(at).to_string()).collect();
                return Err(Failure::Tool(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: {}. Please ensure it is unique",
                    lines.join(", ")
                )));
            }
        };
        let edited = format!(
            "{}{new_str}{}",
            &content[..at],
            &content[at + old_str.len()..]
        );
        self.write(&path, &edited)?;
        let first_line = line_of(at);
        let lines: Vec<&str> = edited.split('\n').collect();
        let from = first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
        let to = (first_line + new_str.matches('\n').count() + SNIPPET_CONTEXT).min(lines.len());
        Ok(format!(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
            numbered(&lines[from - 1..to], from)
        ))
    }

    fn insert(&mut self, shown: &str, insert_line: i64, insert_text: &str) -> Outcome {
        let path = MemoryPath::parse(shown)?;
        let missing = format!("Error: The path {} does not exist", path.shown);
        let content = self.file_to_edit(&path, &missing)?;
        let mut lines: Vec<&str> = content.lines().collect();
        let at = usize::try_from(insert_line)
            .ok()
            .filter(|&at| at <= lines.len())
            .ok_or_else(|| {
                Failure::Tool(format!(
                    "Error: Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of the file: [0, {}]",
                    lines.len()
                ))
            })?;
        lines.insert(at, insert_text.trim_end_matches('\n'));
        let mut edited = lines.join("\n");
        edited.push('\n');
        self.write(&path, &edited)?;
        Ok(format!("The file {} has been edited.", path.shown))
    }

    fn delete(&mut self, shown: &str) -> Outcome {
        let path = MemoryPath::parse(shown)?;
        if path.is_root() {
            return Err(Failure::Tool(format!(
                "Error: Cannot delete the {MEMORIES_ROOT} directory itself"
            )));
        }
        if !self.engine.remove_file(self.scope, path.path, self.txn) {
            let inside = format!("{}/", path.path);
            let under: Vec<String> = self
                .engine
                .files_with_prefix(self.scope, &inside)
                .map(|file| file.path.clone())
                .collect();
            if under.is_empty() {
                return Err(Failure::Tool(format!(
                    "Error: The path {} does not exist",
                    path.shown
                )));
            }
            for file in under {
                self.engine.remove_file(self.scope, &file, self.txn);
            }
        }
        Ok(format!("Successfully deleted {}", path.shown))
    }

    fn rename(&mut self, old_shown: &str, new_shown: &str) -> Outcome {
        let old = MemoryPath::parse(old_shown)?;
        let new = MemoryPath::parse(new_shown)?;
        if old.is_root() {
            return Err(Failure::Tool(format!(
                "Error: Cannot rename the {MEMORIES_ROOT} directory itself"
            )));
        }
        let old_is_file = self.content(&old).is_some();
        if !old_is_file && !self.is_directory(&old) {
            return Err(Failure::Tool(format!(
                "Error: The path {} does not exist",
                old.shown
            )));
        }
        if self.content(&new).is_some() || self.is_directory(&new) {
            return Err(Failure::Tool(format!(
                "Error: The destination {} already exists",
                new.shown
            )));
        }
        if new.path.starts_with(&format!("{}/", old.path)) {
            return Err(Failure::Tool(format!(
                "Error: Cannot move {} into itself",
                old.shown
            )));
        }
        self.check_parent(&new)?;
        let moves: Vec<(String, String)> = if old_is_file {
            vec![(old.path.to_string(), new.path.to_string())]
        } else {
            let inside = format!("{}/", old.path);
            self.engine
                .files_with_prefix(self.scope, &inside)
                .map(|file| {
                    let target = format!("{}/{}", new.path, &file.path[inside.len()..]);
                    (file.path.clone(), target)
                })
                .collect()
        };
        for (from, to) in moves {
            self.engine
                .rename_file(self.scope, &from, &to, self.env, self.txn)?;
        }
        Ok(format!(
            "Successfully renamed {} to {}",
            old.shown, new.shown
        ))
    }
}

/// `view` of a file: every line numbered, or the lines `view_range` names.
fn view_file(path: &MemoryPath<'_>, content: &str, view_range: Option<&[i64]>) -> Outcome {
    let lines: Vec<&str> = content.split('\n').collect();
    if lines.len() > MAX_VIEW_LINES {
        return Err(Failure::Tool(format!(
            "File {} exceeds maximum line limit of 999,999 lines.",
            path.shown
        )));
    }
    let count = lines.len();
    let (from, to) = match view_range {
        None => (1, count),
        Some(&[start, end]) => {
            let range = format!("[{start}, {end}]");
            let start_ok = usize::try_from(start)
                .ok()
                .filter(|s| (1..=count).contains(s));
            let Some(from) = start_ok else {
                return Err(Failure::Tool(format!(
                    "Invalid `view_range`: {range}. Its first element `{start}` should be within the range of lines of the file: [1, {count}]"
                )));
            };
            let to = if end == -1 {
                count
            } else {
                match usize::try_from(end) {
                    Ok(to) if to > count => {
                        return Err(Failure::Tool(format!(
                            "Invalid `view_range`: {range}. Its second element `{end}` should be smaller than the number of lines in the file: `{count}`"
                        )))
                    }
                    Ok(to) if to >= from => to,
                    _ => {
                        return Err(Failure::Tool(format!(
                            "Invalid `view_range`: {range}. Its second element `{end}` should be larger or equal than its first `{start}`"
                        )))
                    }
                }
            };
            (from, to)
        }
        Some(_) => {
            return Err(Failure::Tool(
                "Invalid `view_range`. It should be a list of two integers.".into(),
            ))
        }
    };
    Ok(format!(
        "Here's the content of {} with line numbers:\n{}",
        path.shown,
        numbered(&lines[from - 1..to], from)
    ))
}

/// Lines numbered from `first`: the number right-aligned in six columns, a
/// tab, the line.
fn numbered(lines: &[&str], first: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| format!("{:>LINE_NUMBER_WIDTH$}\t{line}", first + i))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A size as `du -h` shows it: bytes below 1 KiB (`512B`), else K, M or G
/// rounded up, with one decimal below 10 (`1.5K`, `4.0K`, `12K`).
pub fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 'K';
    for next in ['M', 'G', 'T'] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    let tenths = (value * 10.0).ceil() / 10.0;
    if tenths < 10.0 {
        format!("{tenths:.1}{unit}")
    } else {
        format!("{}{unit}", value.ceil())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_du() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1024), "1.0K");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(1537), "1.6K");
        assert_eq!(human_size(4096), "4.0K");
        assert_eq!(human_size(10 * 1024 - 1), "10K");
        assert_eq!(human_size(12 * 1024 + 1), "13K");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0M");
    }

    #[test]
    fn line_numbers_are_six_wide_and_tab_separated() {
        assert_eq!(numbered(&["a", "b"], 9), "     9\ta\n    10\tb");
    }
}
