//! The adversarial inputs through the CLI: the real binary on a store
//! directory seeded like the Rust one.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use memtide::storage::FsStorage;

use super::*;

/// The CLI over a store directory seeded like the Rust one.
struct Cli {
    store: tempfile::TempDir,
    files: tempfile::TempDir,
    seeded: Seeded,
}

impl Cli {
    fn new() -> Cli {
        let store = tempfile::tempdir().unwrap();
        let env = FixedEnvironment::new(Timestamp::parse_rfc3339(NOW).unwrap());
        let mut mem = Memory::open(
            FsStorage::open(store.path()).unwrap(),
            env,
            Config::default(),
        )
        .unwrap();
        let seeded = seed(&mut mem);
        drop(mem);
        Cli {
            store,
            files: tempfile::tempdir().unwrap(),
            seeded,
        }
    }

    /// Runs `memtide --store DIR --now NOW ARGS…` with `stdin`.
    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_memtide"));
        command
            .env_remove("MEMTIDE_MODEL_DIR")
            .arg("--store")
            .arg(self.store.path())
            .args(["--now", NOW])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        // The CLI may refuse before reading all of it: ignore a broken pipe.
        let writer = std::thread::scope(|s| {
            s.spawn(move || {
                let _ = input.write_all(stdin);
            });
            child.wait_with_output().unwrap()
        });
        writer
    }

    /// The outcome of a finished command; a crash fails the test.
    fn outcome(out: &Output, context: &str) -> Outcome {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{context}: {stderr}");
        match out.status.code() {
            Some(0) => Outcome::Accepted,
            Some(1) => {
                let code = stderr
                    .strip_prefix("error[")
                    .and_then(|rest| rest.split_once(']'))
                    .map(|(code, _)| code.to_string())
                    .unwrap_or_else(|| panic!("{context}: no error code: {stderr}"));
                assert_eq!(stderr.lines().count(), 1, "{context}: {stderr}");
                assert!(out.stdout.is_empty(), "{context}: printed before failing");
                Outcome::Code(code)
            }
            Some(2) => Outcome::Code("USAGE".into()),
            _ => panic!("{context}: crashed ({:?}): {stderr}", out.status),
        }
    }

    /// Runs `args` and checks it succeeds; stdout as text.
    fn ok(&self, args: &[&str], stdin: &[u8]) -> String {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "memtide {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Export, stats and the full listing as the CLI prints them, and every
    /// byte of the store directory.
    fn state(&self) -> (String, BTreeMap<PathBuf, Vec<u8>>) {
        let seen = [
            self.ok(&["export"], b""),
            self.ok(&["stats"], b""),
            self.ok(&["list", "--all", "--include-deleted"], b""),
        ]
        .concat();
        (seen, self.stored_bytes())
    }

    fn stored_bytes(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut dirs = vec![self.store.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    files.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }

    fn probe(&self, n: usize, context: &str) {
        let text = format!("zebra quokka probe number {n}");
        let line =
            serde_json::json!({"text": text, "scope": {"userId": "alice", "workspaceId": "home"}});
        let added: Value = serde_json::from_str(&self.ok(&["ingest"], line.to_string().as_bytes()))
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        let id = added["id"].as_str().expect("probe added").to_string();
        let query = serde_json::json!({"text": text, "scope": {"userId": "alice", "workspaceId": "home"}, "dryRun": true});
        let hits: Value =
            serde_json::from_str(&self.ok(&["retrieve"], query.to_string().as_bytes())).unwrap();
        assert_eq!(hits["results"][0]["id"], id.as_str(), "{context}");
        self.ok(&["delete", &id, "--hard"], b"");
    }

    /// A file holding `bytes` in the files directory.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.files.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn run_case(&self, case: &Case) -> Outcome {
        match self.try_case(case) {
            Ok(out) => Cli::outcome(&out, &case.name),
            Err(outcome) => outcome,
        }
    }

    fn try_case(&self, case: &Case) -> Result<Output, Outcome> {
        let bytes = case.raw_bytes();
        let stdin = || -> Vec<u8> {
            match (&bytes, &case.batch) {
                (Some(bytes), _) => bytes.clone(),
                (None, Some(batch)) => batch
                    .iter()
                    .map(|line| expand(line))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into_bytes(),
                (None, None) => case.input().into_bytes(),
            }
        };
        let scope_args = |scope: &Scope| -> Vec<String> {
            let mut args = vec![
                "--user".to_string(),
                scope.user_id.clone(),
                "--workspace".to_string(),
                scope.workspace_id.clone(),
            ];
            if let Some(project) = &scope.project_id {
                args.extend(["--project".to_string(), project.clone()]);
            }
            args
        };
        let strings = |args: &[String]| args.to_vec();
        let run = |args: Vec<String>, stdin: &[u8]| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.run(&args, stdin)
        };
        Ok(match case.op.as_str() {
            "ingest" | "retrieve" | "inject" => run(vec![case.op.clone()], &stdin()),
            "update" => run(
                strings(&["update".into(), self.seeded.plain.clone()]),
                &stdin(),
            ),
            "get" => run(vec!["get".into(), rust_string(&case.input())?], b""),
            "deleteAll" => {
                let filter: ScopeFilter =
                    serde_json::from_str(&case.input()).map_err(|_| Outcome::Inexpressible)?;
                let mut args = vec!["delete-all".to_string(), "--hard".to_string()];
                for (flag, value) in [
                    ("--user", filter.user_id),
                    ("--workspace", filter.workspace_id),
                    ("--project", filter.project_id),
                    ("--card", filter.card_id),
                    ("--session", filter.session_id),
                ] {
                    if let Some(value) = value {
                        args.extend([flag.to_string(), value]);
                    }
                }
                run(args, b"")
            }
            "import" => {
                let data = match (&case.derive, &bytes) {
                    (Some(derive), _) => {
                        derive_export(self.ok(&["export"], b"").trim_end(), derive).into_bytes()
                    }
                    (None, Some(bytes)) => bytes.clone(),
                    (None, None) => rust_string(&case.input())?.into_bytes(),
                };
                run(vec!["import".into()], &data)
            }
            "syncFile" => {
                let (scope, path, content) = match &bytes {
                    Some(bytes) => (scope(), "notes/bytes.md".to_string(), bytes.clone()),
                    None => {
                        let file: FileRequest = serde_json::from_str(&case.input())
                            .map_err(|_| Outcome::Inexpressible)?;
                        (file.scope, file.path, file.content.into_bytes())
                    }
                };
                let local = self.file("sync.md", &content);
                let mut args = vec![
                    "md".to_string(),
                    "sync".to_string(),
                    local.display().to_string(),
                    "--as".to_string(),
                    path,
                ];
                args.extend(scope_args(&scope));
                run(args, b"")
            }
            "memoryTool" => {
                let mut args = vec!["memory-tool".to_string()];
                args.extend(scope_args(&scope()));
                let out = run(args, &stdin());
                if out.status.success() {
                    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
                    if result["isError"] == true {
                        return Err(Outcome::ToolError);
                    }
                }
                out
            }
            "readHotFile" => {
                let (scope, document) = match (&case.derive, &bytes) {
                    (Some(_), _) => {
                        let empty = self.file("empty.md", b"");
                        let mut args =
                            vec!["hot".into(), "render".into(), empty.display().to_string()];
                        args.extend(scope_args(&scope()));
                        let args: Vec<&str> = args.iter().map(String::as_str).collect();
                        let rendered = self.ok(&args, b"");
                        (
                            scope(),
                            hot_file_with_a_duplicate_id(&rendered).into_bytes(),
                        )
                    }
                    (None, Some(bytes)) => (scope(), bytes.clone()),
                    (None, None) => {
                        let file: FileRequest = serde_json::from_str(&case.input())
                            .map_err(|_| Outcome::Inexpressible)?;
                        (file.scope, file.content.into_bytes())
                    }
                };
                let local = self.file("USER.md", &document);
                let mut args = vec![
                    "hot".to_string(),
                    "sync".to_string(),
                    local.display().to_string(),
                ];
                args.extend(scope_args(&scope));
                run(args, b"")
            }
            "applyOperations" => {
                let call: OperationsCall =
                    serde_json::from_str(&case.input()).map_err(|_| Outcome::Inexpressible)?;
                let mut args = vec!["apply-ops".to_string()];
                args.extend(scope_args(&call.scope));
                for id in call.allowed {
                    args.extend(["--allow".to_string(), id]);
                }
                run(args, call.reply.as_bytes())
            }
            "storeSummary" => run(vec!["store-summary".into()], &stdin()),
            "summaryContext" => run(vec!["summary-context".into()], &stdin()),
            // Lists, settings: the CLI takes no JSON for them.
            "list" | "config" => return Err(Outcome::Inexpressible),
            op => panic!("unknown op {op}"),
        })
    }
}

#[test]
fn the_table_through_the_cli() {
    let fixture = fixture();
    let cli = Cli::new();
    let mut tally = Tally::default();
    for (n, case) in fixture.cases.iter().enumerate() {
        let expected = case.expected("cli");
        if expected == "n/a" {
            println!("cli | {} | n/a", case.name);
            continue;
        }
        let (before, stored) = cli.state();
        let outcome = cli.run_case(case);
        if tally.record("cli", case, expected, &outcome) {
            assert!(
                cli.stored_bytes() == stored,
                "{}: a refused input changed the store's files",
                case.name
            );
            assert_eq!(cli.state().0, before, "{}: the store changed", case.name);
        }
        cli.probe(n, &case.name);
    }

    tally.assert_as_expected();

    // Damaged exports on stdin: a sample of truncations and bit flips
    // (every position runs through the Rust API; a process per input is slow).
    let export = cli.ok(&["export"], b"");
    let bytes = export.trim_end().as_bytes();
    let (before, stored) = cli.state();
    let mut damaged = 0;
    let step = bytes.len() / 24;
    for (k, cut) in (0..bytes.len()).step_by(step).enumerate() {
        let outcome = Cli::outcome(&cli.run(&["import"], &bytes[..cut]), "truncated");
        assert!(
            outcome.meets("CORRUPT") || outcome.meets("INVALID_INPUT"),
            "truncated at {cut}: {outcome}"
        );
        let mut flipped = bytes.to_vec();
        let at = (cut + k * 7) % bytes.len();
        flipped[at] ^= 1 << (k % 8);
        let context = format!("bit {} of byte {at} flipped", k % 8);
        let outcome = Cli::outcome(&cli.run(&["import"], &flipped), &context);
        assert!(
            matches!(&outcome, Outcome::Accepted)
                || ["CORRUPT", "INVALID_INPUT", "VERSION_MISMATCH"]
                    .iter()
                    .any(|c| outcome.meets(c)),
            "{context}: {outcome}"
        );
        damaged += 2;
    }
    assert_eq!(
        cli.state(),
        (before, stored),
        "damaged imports changed the store"
    );
    cli.probe(usize::MAX, "after the damaged exports");
    println!(
        "adversarial inputs tried through the CLI: {} table cases ({} refused), {damaged} truncated or bit-flipped exports",
        tally.inputs, tally.rejected
    );
}

/// A path the CLI would reject never reaches the engine: clap's own errors
/// are usage errors (exit 2), also for arguments that are not UTF-8.
#[test]
fn cli_arguments_that_are_not_utf8_are_usage_errors() {
    use std::os::unix::ffi::OsStrExt;
    let cli = Cli::new();
    let before = cli.state();
    let bad = std::ffi::OsStr::from_bytes(b"m\xff1");
    for args in [
        vec![std::ffi::OsStr::new("get"), bad],
        vec![
            std::ffi::OsStr::new("delete-all"),
            std::ffi::OsStr::new("--user"),
            bad,
        ],
        vec![
            std::ffi::OsStr::new("list"),
            std::ffi::OsStr::new("--kind"),
            std::ffi::OsStr::new("gossip"),
        ],
        vec![
            std::ffi::OsStr::new("list"),
            std::ffi::OsStr::new("--limit"),
            std::ffi::OsStr::new("-1"),
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
            .env_remove("MEMTIDE_MODEL_DIR")
            .arg("--store")
            .arg(cli.store.path())
            .args(&args)
            .output()
            .unwrap();
        let outcome = Cli::outcome(&out, &format!("{args:?}"));
        println!("cli | arguments {args:?} | {outcome}");
        assert_eq!(outcome, Outcome::Code("USAGE".into()), "{args:?}");
    }
    assert_eq!(cli.state(), before);
    cli.probe(0, "after bad arguments");
}
