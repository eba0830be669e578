//! Target `memory_tool`: Claude's memory tool (`Memory::memory_tool`) on a
//! small store: the ten seeded memories, `/memories/notes.md` and
//! `/memories/projects/garden.md` in `alice/home` (the scope the tool
//! works on), a file outside `/memories` in the same scope and a
//! `/memories` file of `bob/work`.
//!
//! The first byte picks a mode:
//! * even: the rest is JSON; an array is up to eight tool inputs, anything
//!   else one;
//! * odd: the rest is read (with `arbitrary`) as up to eight commands —
//!   `view`, `create`, `str_replace`, `insert`, `delete`, `rename` and
//!   inputs with a wrong command or a mistyped field — whose paths are
//!   mostly taken from the store's and whose `old_str` may be cut from the
//!   file it edits, so edits succeed too.
//!
//! Invariants after every call:
//! * never a Rust error: what the model gets wrong is a result with
//!   `is_error`, and such a result (like every `view`) changes nothing;
//! * the store reopens to the same memories and files;
//! * the only file of the scope outside `/memories` is the one put there,
//!   unchanged, and `bob/work`'s file is unchanged; every path of the scope
//!   passes `check_memory_path`;
//! * the index is in sync: the chunks of each file are exactly those of its
//!   content (same lines, same captured text), and every chunk's file
//!   exists.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use memtide::EstimatedTokens;
use memtide::memory_tool::check_memory_path;
use memtide::storage::MemoryStorage;
use memtide::text::markdown::chunk_markdown;
use memtide::text::{self, Capture};
use memtide::{Memory, Scope, StoredFile};
use serde_json::{json, Value};

use super::TestMemory;

/// Most commands one input runs.
const MAX_CALLS: usize = 8;

/// The file of the scope that lies outside `/memories`.
const OUTSIDE: &str = "/notes/MEMORY.md";

/// Paths the structured mode picks from.
const PATHS: [&str; 12] = [
    "/memories",
    "/memories/",
    "/memories/notes.md",
    "/memories/projects",
    "/memories/projects/garden.md",
    "/memories/projects/new.md",
    "/memories/new.md",
    "/memories/notes.md/inside.md",
    "/memories/.hidden/x.md",
    "/notes/MEMORY.md",
    "/memories/../notes/MEMORY.md",
    "/memories/a/b/c/d.md",
];

#[derive(Debug, Arbitrary)]
enum PathChoice {
    Known(u8),
    Any(String),
}

#[derive(Debug, Arbitrary)]
enum TextChoice {
    Any(String),
    /// Bytes `from..from + len` of the file's line `line`, on char
    /// boundaries.
    FromFile { line: u8, from: u8, len: u8 },
}

#[derive(Debug, Arbitrary)]
enum Command {
    View {
        path: PathChoice,
        range: Option<(i8, i8)>,
    },
    Create {
        path: PathChoice,
        text: String,
    },
    StrReplace {
        path: PathChoice,
        old: TextChoice,
        new: String,
    },
    Insert {
        path: PathChoice,
        line: i8,
        text: String,
    },
    Delete {
        path: PathChoice,
    },
    Rename {
        from: PathChoice,
        to: PathChoice,
    },
    /// A command name and one field set to a value of some JSON type.
    Mistyped {
        command: PathChoice,
        field: PathChoice,
        value: u8,
    },
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut mem = store();
    let scope = Scope::workspace("alice", "home");
    if mode % 2 == 0 {
        let inputs = match serde_json::from_slice::<Value>(rest) {
            Ok(Value::Array(inputs)) => inputs,
            Ok(input) => vec![input],
            Err(_) => return,
        };
        for input in inputs.iter().take(MAX_CALLS) {
            call(&mut mem, &scope, input);
        }
        return;
    }
    let mut u = Unstructured::new(rest);
    for _ in 0..MAX_CALLS {
        let Ok(command) = Command::arbitrary(&mut u) else {
            break;
        };
        let input = to_input(&mem, &scope, command);
        call(&mut mem, &scope, &input);
    }
}

/// The store every input starts from (see the module documentation).
fn store() -> TestMemory {
    static STORAGE: OnceLock<MemoryStorage> = OnceLock::new();
    let storage = STORAGE.get_or_init(|| seed_files().into_storage()).clone();
    Memory::open(storage, super::env(), Default::default()).expect("the store opens")
}

/// The seeded store with the files added.
fn seed_files() -> TestMemory {
    let mut mem = super::seeded_memory();
    let home = Scope::workspace("alice", "home");
    let bob = Scope::workspace("bob", "work");
    let files = [
        (&home, "/memories/notes.md", "# Notes\n\n- coffee: cortado\n- roses: prune in March\n"),
        (&home, "/memories/projects/garden.md", "Garden\n```\nwater <private>at 6</private>\n```\ndone"),
        (&home, OUTSIDE, "# Hand-written\nkeep me\n"),
        (&bob, "/memories/notes.md", "bob's own notes\n"),
    ];
    for (scope, path, content) in files {
        mem.sync_file(scope, path, content).expect("a seed file syncs");
    }
    mem
}

fn path_of(choice: &PathChoice) -> String {
    match choice {
        PathChoice::Known(i) => PATHS[usize::from(*i) % PATHS.len()].to_string(),
        PathChoice::Any(path) => path.clone(),
    }
}

/// The tool input for `command`.
fn to_input(mem: &TestMemory, scope: &Scope, command: Command) -> Value {
    match command {
        Command::View { path, range } => {
            let mut input = json!({"command": "view", "path": path_of(&path)});
            if let Some((from, to)) = range {
                input["view_range"] = json!([from, to]);
            }
            input
        }
        Command::Create { path, text } => {
            json!({"command": "create", "path": path_of(&path), "file_text": text})
        }
        Command::StrReplace { path, old, new } => {
            let path = path_of(&path);
            let old = match old {
                TextChoice::Any(text) => text,
                TextChoice::FromFile { line, from, len } => {
                    let content = mem.file(scope, path.trim_end_matches('/'));
                    let content = content.map(|file| file.content).unwrap_or_default();
                    let lines: Vec<&str> = content.split('\n').collect();
                    let line = lines[usize::from(line) % lines.len()];
                    let from = floor_char(line, usize::from(from));
                    let to = floor_char(line, from + usize::from(len));
                    line[from..to].to_string()
                }
            };
            json!({"command": "str_replace", "path": path, "old_str": old, "new_str": new})
        }
        Command::Insert { path, line, text } => json!({
            "command": "insert", "path": path_of(&path), "insert_line": line, "insert_text": text
        }),
        Command::Delete { path } => json!({"command": "delete", "path": path_of(&path)}),
        Command::Rename { from, to } => json!({
            "command": "rename", "old_path": path_of(&from), "new_path": path_of(&to)
        }),
        Command::Mistyped {
            command,
            field,
            value,
        } => {
            let names = ["view", "create", "str_replace", "insert", "delete", "rename"];
            let fields = ["path", "file_text", "old_str", "new_str", "insert_line", "view_range"];
            let name = match command {
                PathChoice::Known(i) => names[usize::from(i) % names.len()].to_string(),
                PathChoice::Any(name) => name,
            };
            let field = match field {
                PathChoice::Known(i) => fields[usize::from(i) % fields.len()].to_string(),
                PathChoice::Any(field) => field,
            };
            let values = [json!(null), json!(7), json!(-1), json!("x"), json!([1]), json!({})];
            let mut input = json!({"command": name, "path": "/memories/notes.md"});
            input[field] = values[usize::from(value) % values.len()].clone();
            input
        }
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Runs one tool call and checks the invariants.
fn call(mem: &mut TestMemory, scope: &Scope, input: &Value) {
    let before = snapshot(mem);
    let result = match mem.memory_tool(scope, input) {
        Ok(result) => result,
        Err(error) => panic!("a Rust error for {input}: {} ({error})", error.code()),
    };
    let after = snapshot(mem);
    let is_view = input.get("command") == Some(&json!("view"));
    if result.is_error || is_view {
        assert!(
            before == after,
            "{input} changed the store (result: {result:?})"
        );
    }
    let reopened = Memory::open(mem.storage().clone(), super::env(), Default::default())
        .expect("the store reopens");
    assert!(snapshot(&reopened) == after, "the store reopens differently after {input}");
    check_files(mem, scope, &before, &after);
}

/// The export, and every file of the two scopes.
#[derive(PartialEq)]
struct Snapshot {
    export: String,
    files: Vec<StoredFile>,
}

fn snapshot(mem: &TestMemory) -> Snapshot {
    let engine = mem.engine();
    let home = Scope::workspace("alice", "home");
    let bob = Scope::workspace("bob", "work");
    let files = [home, bob]
        .iter()
        .flat_map(|scope| engine.files_with_prefix(scope, "").cloned().collect::<Vec<_>>())
        .collect();
    Snapshot {
        export: mem.export(),
        files,
    }
}

/// Paths stay in `/memories`, other files stay as they were, chunks match.
fn check_files(mem: &TestMemory, scope: &Scope, before: &Snapshot, after: &Snapshot) {
    let outside = |snapshot: &Snapshot| -> Vec<StoredFile> {
        snapshot
            .files
            .iter()
            .filter(|file| &file.scope != scope || file.path == OUTSIDE)
            .cloned()
            .collect()
    };
    assert!(outside(before) == outside(after), "a file the tool may not touch changed");
    let engine = mem.engine();
    let chunking = engine.config().chunking;
    for file in &after.files {
        if &file.scope == scope && file.path != OUTSIDE {
            assert!(
                file.path.starts_with("/memories/") && check_memory_path(&file.path).is_ok(),
                "the tool wrote {:?}",
                file.path
            );
        }
        let lines: Vec<&str> = file.content.lines().collect();
        let expected: Vec<((u32, u32), String)> =
            chunk_markdown(&file.content, chunking, &EstimatedTokens)
                .into_iter()
                .filter_map(|chunk| match text::capture(&chunk.text) {
                    Capture::Text { text, .. } if !text.is_empty() => {
                        Some(((chunk.start_line, chunk.end_line), text))
                    }
                    _ => None,
                })
                .collect();
        let chunks: Vec<((u32, u32), String)> = engine
            .chunks_of_file(&file.scope, &file.path)
            .iter()
            .map(|item| {
                let (_, lines) = item.file_location().expect("a chunk");
                ((lines.start, lines.end), item.text.clone())
            })
            .collect();
        assert_eq!(chunks, expected, "the chunks of {} are stale", file.path);
        for ((_, end), _) in &chunks {
            assert!((*end as usize) <= lines.len());
        }
    }
    for item in engine.items().filter(|item| item.is_file_chunk()) {
        let (path, _) = item.file_location().expect("a chunk");
        assert!(
            engine.file(&item.scope, path).is_some(),
            "chunk {} of the missing file {path}",
            item.id
        );
    }
}
