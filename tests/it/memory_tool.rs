//! Claude's memory tool over memtide (issue 6, item 2): every command's
//! result and error strings as the tool's documentation gives them, every
//! path the rules refuse, files private to their scope, and the index kept
//! in step with every write.

use serde_json::{json, Value};

use memtide::memory_tool::MemoryToolResult;
use memtide::storage::MemoryStorage;
use memtide::{Config, RetrieveQuery, Scope};
use memtide_testkit::store::{open, scope, Mem};

fn call(mem: &mut Mem, input: Value) -> MemoryToolResult {
    mem.memory_tool(&scope(), &input).unwrap()
}

/// A call that must succeed; returns its text.
fn ok(mem: &mut Mem, input: Value) -> String {
    let result = call(mem, input.clone());
    assert!(!result.is_error, "{input} failed: {}", result.content);
    result.content
}

/// A call that must fail with `expected`, changing nothing.
fn fails(mem: &mut Mem, input: Value, expected: &str) {
    let before = mem.storage().clone();
    let result = call(mem, input.clone());
    assert!(result.is_error, "{input} succeeded: {}", result.content);
    assert_eq!(result.content, expected, "{input}");
    let entries = |s: &MemoryStorage| {
        s.entries()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(entries(mem.storage()), entries(&before), "{input} wrote");
}

fn create(mem: &mut Mem, path: &str, text: &str) {
    ok(
        mem,
        json!({"command": "create", "path": path, "file_text": text}),
    );
}

fn view(mem: &mut Mem, path: &str) -> String {
    ok(mem, json!({"command": "view", "path": path}))
}

#[test]
fn view_lists_directories_two_levels_deep_with_sizes() {
    let mut mem = open();
    assert_eq!(
        view(&mut mem, "/memories"),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"
    );
    create(
        &mut mem,
        "/memories/customer_service_guidelines.xml",
        &"g".repeat(1536),
    );
    create(&mut mem, "/memories/refund_policies.xml", &"r".repeat(2048));
    create(&mut mem, "/memories/projects/alpha/deep/notes.md", "deep");
    create(&mut mem, "/memories/projects/beta.md", "beta");
    create(&mut mem, "/memories/.hidden/secret.md", "hidden");
    create(&mut mem, "/memories/node_modules/x.js", "x");
    assert_eq!(
        view(&mut mem, "/memories"),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n\
         3.6K\t/memories\n\
         1.5K\t/memories/customer_service_guidelines.xml\n\
         8B\t/memories/projects/\n\
         4B\t/memories/projects/alpha/\n\
         4B\t/memories/projects/beta.md\n\
         2.0K\t/memories/refund_policies.xml"
    );
    assert_eq!(
        view(&mut mem, "/memories/projects/"),
        "Here're the files and directories up to 2 levels deep in /memories/projects/, excluding hidden items and node_modules:\n\
         8B\t/memories/projects\n\
         4B\t/memories/projects/alpha/\n\
         4B\t/memories/projects/alpha/deep/\n\
         4B\t/memories/projects/beta.md"
    );
}

#[test]
fn view_numbers_lines_and_honours_view_range() {
    let mut mem = open();
    create(&mut mem, "/memories/notes.md", "one\ntwo\nthree\nfour");
    assert_eq!(
        view(&mut mem, "/memories/notes.md"),
        "Here's the content of /memories/notes.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    );
    let range = |start: i64, end: i64| json!({"command": "view", "path": "/memories/notes.md", "view_range": [start, end]});
    assert_eq!(
        ok(&mut mem, range(2, 3)),
        "Here's the content of /memories/notes.md with line numbers:\n     2\ttwo\n     3\tthree"
    );
    assert_eq!(
        ok(&mut mem, range(3, -1)),
        "Here's the content of /memories/notes.md with line numbers:\n     3\tthree\n     4\tfour"
    );
    fails(
        &mut mem,
        range(0, 2),
        "Invalid `view_range`: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 4]",
    );
    fails(
        &mut mem,
        range(2, 9),
        "Invalid `view_range`: [2, 9]. Its second element `9` should be smaller than the number of lines in the file: `4`",
    );
    fails(
        &mut mem,
        range(3, 2),
        "Invalid `view_range`: [3, 2]. Its second element `2` should be larger or equal than its first `3`",
    );
    fails(
        &mut mem,
        json!({"command": "view", "path": "/memories/notes.md", "view_range": [1]}),
        "Invalid `view_range`. It should be a list of two integers.",
    );
    fails(
        &mut mem,
        json!({"command": "view", "path": "/memories", "view_range": [1, 2]}),
        "Error: The `view_range` parameter is not allowed when `path` points to a directory.",
    );
    fails(
        &mut mem,
        json!({"command": "view", "path": "/memories/missing.md"}),
        "The path /memories/missing.md does not exist. Please provide a valid path.",
    );
    let many_lines = "\n".repeat(1_000_000);
    create(&mut mem, "/memories/long.md", &many_lines);
    fails(
        &mut mem,
        json!({"command": "view", "path": "/memories/long.md"}),
        "File /memories/long.md exceeds maximum line limit of 999,999 lines.",
    );
}

#[test]
fn create_refuses_existing_paths_as_documented() {
    let mut mem = open();
    assert_eq!(
        ok(
            &mut mem,
            json!({"command": "create", "path": "/memories/a.md", "file_text": "x"})
        ),
        "File created successfully at: /memories/a.md"
    );
    fails(
        &mut mem,
        json!({"command": "create", "path": "/memories/a.md", "file_text": "y"}),
        "Error: File /memories/a.md already exists",
    );
    create(&mut mem, "/memories/dir/b.md", "b");
    fails(
        &mut mem,
        json!({"command": "create", "path": "/memories/dir", "file_text": "y"}),
        "Error: The path /memories/dir is a directory",
    );
    fails(
        &mut mem,
        json!({"command": "create", "path": "/memories/a.md/c.md", "file_text": "y"}),
        "Error: The path /memories/a.md is a file, not a directory",
    );
    let big = "x".repeat(Config::default().limits.max_file_bytes + 1);
    let result = call(
        &mut mem,
        json!({"command": "create", "path": "/memories/big.md", "file_text": big}),
    );
    assert!(
        result.is_error
            && result
                .content
                .starts_with("Error: file `/memories/big.md` is too large"),
        "{}",
        result.content
    );
}

#[test]
fn str_replace_edits_one_unique_occurrence() {
    let mut mem = open();
    create(
        &mut mem,
        "/memories/prefs.md",
        "a\nb\ncoffee: cortado\nd\ne\nf\n",
    );
    assert_eq!(
        ok(&mut mem, json!({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "cortado", "new_str": "flat white\nwith oat milk"})),
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\ta\n     2\tb\n     3\tcoffee: flat white\n     4\twith oat milk\n     5\td\n     6\te"
    );
    assert_eq!(
        mem.file(&scope(), "/memories/prefs.md").unwrap().content,
        "a\nb\ncoffee: flat white\nwith oat milk\nd\ne\nf\n"
    );
    fails(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "espresso", "new_str": "x"}),
        "No replacement was performed, old_str `espresso` did not appear verbatim in /memories/prefs.md.",
    );
    create(&mut mem, "/memories/dup.md", "tea\ncoffee\ntea\n");
    fails(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories/dup.md", "old_str": "tea", "new_str": "x"}),
        "No replacement was performed. Multiple occurrences of old_str `tea` in lines: 1, 3. Please ensure it is unique",
    );
    fails(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories/none.md", "old_str": "a", "new_str": "b"}),
        "Error: The path /memories/none.md does not exist. Please provide a valid path.",
    );
    fails(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories", "old_str": "a", "new_str": "b"}),
        "Error: The path /memories is not a file.",
    );
    fails(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories/dup.md", "old_str": "", "new_str": "b"}),
        "Error: `old_str` must not be empty",
    );
}

#[test]
fn insert_adds_text_after_a_line() {
    let mut mem = open();
    create(&mut mem, "/memories/list.md", "one\nthree\n");
    assert_eq!(
        ok(
            &mut mem,
            json!({"command": "insert", "path": "/memories/list.md", "insert_line": 1, "insert_text": "two\n"})
        ),
        "The file /memories/list.md has been edited."
    );
    ok(
        &mut mem,
        json!({"command": "insert", "path": "/memories/list.md", "insert_line": 0, "insert_text": "zero"}),
    );
    assert_eq!(
        mem.file(&scope(), "/memories/list.md").unwrap().content,
        "zero\none\ntwo\nthree\n"
    );
    for bad in [-1, 5] {
        fails(
            &mut mem,
            json!({"command": "insert", "path": "/memories/list.md", "insert_line": bad, "insert_text": "x"}),
            &format!("Error: Invalid `insert_line` parameter: {bad}. It should be within the range of lines of the file: [0, 4]"),
        );
    }
    fails(
        &mut mem,
        json!({"command": "insert", "path": "/memories/nope.md", "insert_line": 0, "insert_text": "x"}),
        "Error: The path /memories/nope.md does not exist",
    );
}

#[test]
fn delete_removes_files_and_directories_but_not_the_root() {
    let mut mem = open();
    create(&mut mem, "/memories/a.md", "alpha note");
    create(&mut mem, "/memories/dir/b.md", "beta note");
    create(&mut mem, "/memories/dir/sub/c.md", "gamma note");
    assert_eq!(
        ok(
            &mut mem,
            json!({"command": "delete", "path": "/memories/a.md"})
        ),
        "Successfully deleted /memories/a.md"
    );
    assert_eq!(
        ok(
            &mut mem,
            json!({"command": "delete", "path": "/memories/dir"})
        ),
        "Successfully deleted /memories/dir"
    );
    assert_eq!(mem.engine().len(), 0, "chunks of deleted files remain");
    fails(
        &mut mem,
        json!({"command": "delete", "path": "/memories/a.md"}),
        "Error: The path /memories/a.md does not exist",
    );
    fails(
        &mut mem,
        json!({"command": "delete", "path": "/memories"}),
        "Error: Cannot delete the /memories directory itself",
    );
}

#[test]
fn rename_moves_files_and_directories_with_their_chunks() {
    let mut mem = open();
    create(&mut mem, "/memories/draft.md", "The launch is on Friday");
    let chunk_before = mem.engine().items().next().unwrap().into_owned();
    assert_eq!(
        ok(
            &mut mem,
            json!({"command": "rename", "old_path": "/memories/draft.md", "new_path": "/memories/plans/launch.md"})
        ),
        "Successfully renamed /memories/draft.md to /memories/plans/launch.md"
    );
    let chunk_after = mem.get(&chunk_before.id).unwrap();
    assert_eq!(chunk_after.source.reference, "/memories/plans/launch.md");
    assert_eq!(chunk_after.citation(), "/memories/plans/launch.md#L1");
    ok(
        &mut mem,
        json!({"command": "rename", "old_path": "/memories/plans", "new_path": "/memories/archive"}),
    );
    assert_eq!(
        mem.file(&scope(), "/memories/archive/launch.md")
            .unwrap()
            .content,
        "The launch is on Friday"
    );
    assert!(mem.file(&scope(), "/memories/plans/launch.md").is_none());
    create(&mut mem, "/memories/other.md", "x");
    fails(
        &mut mem,
        json!({"command": "rename", "old_path": "/memories/other.md", "new_path": "/memories/archive/launch.md"}),
        "Error: The destination /memories/archive/launch.md already exists",
    );
    fails(
        &mut mem,
        json!({"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/new.md"}),
        "Error: The path /memories/gone.md does not exist",
    );
    fails(
        &mut mem,
        json!({"command": "rename", "old_path": "/memories/archive", "new_path": "/memories/archive/inner"}),
        "Error: Cannot move /memories/archive into itself",
    );
    fails(
        &mut mem,
        json!({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}),
        "Error: Cannot rename the /memories directory itself",
    );
}

#[test]
fn bad_input_is_a_tool_error_and_a_bad_scope_is_a_rust_error() {
    let mut mem = open();
    fails(
        &mut mem,
        json!({"command": "undo_edit", "path": "/memories/a.md"}),
        "Error: Unknown command `undo_edit`. The commands are: view, create, str_replace, insert, delete, rename",
    );
    fails(
        &mut mem,
        json!({"path": "/memories"}),
        "Error: the input has no `command`",
    );
    fails(
        &mut mem,
        json!({"command": 7}),
        "Error: `command` must be a string",
    );
    fails(
        &mut mem,
        json!({"command": "create", "path": "/memories/a.md"}),
        "Error: Invalid input for the `create` command: missing field `file_text`",
    );
    fails(
        &mut mem,
        json!({"command": "insert", "path": "/memories/a.md", "insert_line": "one", "insert_text": "x"}),
        "Error: Invalid input for the `insert` command: invalid type: string \"one\", expected i64",
    );
    let no_user = Scope::workspace("", "w");
    let err = mem
        .memory_tool(&no_user, &json!({"command": "view", "path": "/memories"}))
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn every_traversal_and_malformed_path_is_refused() {
    let mut mem = open();
    create(&mut mem, "/memories/ok.md", "fine");
    let long_segment = format!("/memories/{}", "x".repeat(256));
    let long_path = format!("/memories/{}c", "ab/".repeat(400));
    let cases: Vec<(&str, &str)> = vec![
        (
            "/memories/../etc/passwd",
            "`.` and `..` path segments are not allowed",
        ),
        (
            "/memories/a/../../etc",
            "`.` and `..` path segments are not allowed",
        ),
        (
            "/memories/./ok.md",
            "`.` and `..` path segments are not allowed",
        ),
        ("/memories/..", "`.` and `..` path segments are not allowed"),
        (
            "/memories/%2e%2e%2fetc/passwd",
            "percent-encoded sequences (such as `%2e`) are not allowed in paths",
        ),
        (
            "/memories/%2E%2E/x",
            "percent-encoded sequences (such as `%2e`) are not allowed in paths",
        ),
        (
            "/memories/%252e%252e/x",
            "percent-encoded sequences (such as `%2e`) are not allowed in paths",
        ),
        (
            "/memories/a%5cb",
            "percent-encoded sequences (such as `%2e`) are not allowed in paths",
        ),
        (
            "/memories/a%00b",
            "percent-encoded sequences (such as `%2e`) are not allowed in paths",
        ),
        ("/memories\\..\\etc", "backslashes are not allowed in paths"),
        ("/memories/a\\b.md", "backslashes are not allowed in paths"),
        (
            "/memories/a\u{0}b.md",
            "control characters are not allowed in paths",
        ),
        (
            "/memories/a\nb.md",
            "control characters are not allowed in paths",
        ),
        (
            "/memories/a\u{1b}b.md",
            "control characters are not allowed in paths",
        ),
        (
            "/memories//a.md",
            "empty path segments (`//` or a trailing `/`) are not allowed",
        ),
        (
            "/memories/a.md//",
            "empty path segments (`//` or a trailing `/`) are not allowed",
        ),
        (
            "/etc/passwd",
            "the path must be /memories or lie under /memories",
        ),
        (
            "/memoriesX/a.md",
            "the path must be /memories or lie under /memories",
        ),
        (
            "/",
            "empty path segments (`//` or a trailing `/`) are not allowed",
        ),
        (
            "memories/a.md",
            "the path must be /memories or lie under /memories",
        ),
        ("a.md", "the path must be /memories or lie under /memories"),
        ("", "the path is empty"),
        (
            &long_segment,
            "a path segment is 256 bytes long; the limit is 255",
        ),
        (&long_path, "the path is 1211 bytes long; the limit is 1024"),
    ];
    for (path, reason) in cases {
        let expected = format!(
            "Error: The path {} is not allowed: {reason}",
            path.escape_debug()
        );
        for input in [
            json!({"command": "view", "path": path}),
            json!({"command": "create", "path": path, "file_text": "x"}),
            json!({"command": "str_replace", "path": path, "old_str": "fine", "new_str": "x"}),
            json!({"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"}),
            json!({"command": "delete", "path": path}),
            json!({"command": "rename", "old_path": "/memories/ok.md", "new_path": path}),
            json!({"command": "rename", "old_path": path, "new_path": "/memories/new.md"}),
        ] {
            fails(&mut mem, input, &expected);
        }
    }
    assert_eq!(
        mem.file(&scope(), "/memories/ok.md").unwrap().content,
        "fine"
    );
}

#[test]
fn each_scope_has_its_own_memories_directory() {
    let mut mem = open();
    let other = Scope::workspace("bob", "home");
    create(&mut mem, "/memories/alice.md", "Alice's secret plan");
    let result = mem
        .memory_tool(&other, &json!({"command": "view", "path": "/memories"}))
        .unwrap();
    assert!(!result.content.contains("alice.md"), "{}", result.content);
    let result = mem
        .memory_tool(
            &other,
            &json!({"command": "view", "path": "/memories/alice.md"}),
        )
        .unwrap();
    assert!(result.is_error);
    let result = mem
        .memory_tool(
            &other,
            &json!({"command": "create", "path": "/memories/alice.md", "file_text": "Bob's"}),
        )
        .unwrap();
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        mem.file(&scope(), "/memories/alice.md").unwrap().content,
        "Alice's secret plan"
    );
    let hits = mem
        .retrieve(&RetrieveQuery::new("secret plan", other))
        .unwrap();
    assert!(hits.iter().all(|h| !h.item.text.contains("secret")));
}

#[test]
fn every_write_keeps_the_index_in_step() {
    let mut mem = open();
    create(&mut mem, "/memories/coffee.md", "Alice drinks cortado");
    let find = |mem: &mut Mem, text: &str| -> Vec<String> {
        mem.retrieve(&RetrieveQuery::new(text, scope()))
            .unwrap()
            .into_iter()
            .map(|h| h.item.text)
            .collect()
    };
    assert_eq!(find(&mut mem, "cortado"), ["Alice drinks cortado"]);
    ok(
        &mut mem,
        json!({"command": "str_replace", "path": "/memories/coffee.md", "old_str": "cortado", "new_str": "flat white"}),
    );
    assert!(
        find(&mut mem, "cortado").is_empty(),
        "a stale chunk survived the edit"
    );
    assert_eq!(find(&mut mem, "flat white"), ["Alice drinks flat white"]);
    ok(
        &mut mem,
        json!({"command": "insert", "path": "/memories/coffee.md", "insert_line": 1, "insert_text": "Bob drinks espresso"}),
    );
    assert_eq!(
        find(&mut mem, "espresso"),
        ["Alice drinks flat white\nBob drinks espresso"]
    );
    ok(
        &mut mem,
        json!({"command": "delete", "path": "/memories/coffee.md"}),
    );
    assert!(find(&mut mem, "espresso").is_empty());
    assert_eq!(mem.engine().len(), 0);
}
