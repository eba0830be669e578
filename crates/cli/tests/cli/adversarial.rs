//! Adversarial input through the Rust API and the CLI (so it lives with the
//! binary it runs): the table of the repository's
//! `tests/data/adversarial.json` (also run by `tests/js/adversarial.test.mjs`
//! through the npm package and by `tests/wit/adversarial.test.mjs` through
//! the WIT component), sweeps of truncated and bit-flipped exports, and the
//! typed values only Rust can pass (NaN weights, timestamps outside years
//! 1..=9999, `usize::MAX`).
//!
//! Each case names an operation, its input (JSON text as a client would
//! send it, with `$S`, `$BIG` and `$DEEP` standing for a scope, a 10 MiB
//! string and 100,000 nested arrays), or raw bytes, or an export derived
//! from the store's own, and the outcome: a stable error code, `accepted`,
//! `TOOL_ERROR` (a memory tool result with `isError`, the documented way to
//! refuse a model's bad call), or `n/a` on a surface that cannot express it.
//! A surface's own expectation (`rust`, `cli`, `js`, `wit`) overrides
//! `expect`. On the Rust surface a request refused by deserializing its
//! JSON into the request type counts as `INVALID_INPUT`, as it does in the
//! CLI and the bindings, and is printed `INVALID_INPUT (serde)`.
//!
//! After every input the store must be what it was before (stats, the full
//! listing, the export and every stored byte) unless the input was accepted,
//! and a new memory must be ingested, retrieved and erased. Nothing may
//! panic. `--nocapture` prints the outcome of each case and the number of
//! inputs tried.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use memtide::env::FixedEnvironment;
use memtide::storage::{MemoryStorage, Storage};
use memtide::{
    parse_operations, Config, InjectQuery, ListQuery, Memory, MemoryInput, MemoryPatch,
    OperationsRequest, Privacy, RetrieveQuery, Scope, ScopeFilter, Status, SummaryInput,
    SummaryQuery, Timestamp,
};
use memtide_testkit::store::{records, scope};

const FIXTURE: &str = include_str!("../../../../tests/data/adversarial.json");
const NOW: &str = "2024-05-01T12:00:00Z";
const SCOPE_JSON: &str = r#"{"userId": "alice", "workspaceId": "home"}"#;
/// `$BIG`: 10 MiB.
const BIG_BYTES: usize = 10 * 1024 * 1024;
/// `$DEEP`: arrays nested this deep.
const DEEP: usize = 100_000;

#[derive(Debug, Clone, Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    op: String,
    input: Option<String>,
    batch: Option<Vec<String>>,
    bytes: Option<String>,
    derive: Option<String>,
    expect: String,
    rust: Option<String>,
    cli: Option<String>,
    js: Option<String>,
    wit: Option<String>,
    #[allow(dead_code)]
    note: Option<String>,
}

impl Case {
    /// What `surface` must answer.
    fn expected(&self, surface: &str) -> &str {
        let own = match surface {
            "rust" => &self.rust,
            "cli" => &self.cli,
            "js" => &self.js,
            "wit" => &self.wit,
            _ => panic!("unknown surface {surface}"),
        };
        own.as_deref().unwrap_or(&self.expect)
    }

    /// The input JSON text with its placeholders expanded.
    fn input(&self) -> String {
        expand(self.input.as_deref().expect("the case has an input"))
    }

    fn raw_bytes(&self) -> Option<Vec<u8>> {
        self.bytes.as_deref().map(unhex)
    }
}

fn fixture() -> Fixture {
    let fixture: Fixture = serde_json::from_str(FIXTURE).expect("tests/data/adversarial.json");
    let known = [
        "ingest",
        "retrieve",
        "inject",
        "update",
        "get",
        "list",
        "deleteAll",
        "import",
        "syncFile",
        "memoryTool",
        "readHotFile",
        "config",
        "applyOperations",
        "storeSummary",
        "summaryContext",
    ];
    for case in &fixture.cases {
        assert!(known.contains(&case.op.as_str()), "{}: op", case.name);
        let given = [&case.input, &case.bytes, &case.derive]
            .iter()
            .filter(|f| f.is_some())
            .count()
            + usize::from(case.batch.is_some());
        assert_eq!(
            given, 1,
            "{}: one of input, batch, bytes, derive",
            case.name
        );
    }
    fixture
}

fn expand(text: &str) -> String {
    let mut out = text.replace("$S", SCOPE_JSON);
    if out.contains("$XBIG") {
        out = out.replace("$XBIG", &"x".repeat(BIG_BYTES));
    }
    if out.contains("$BIG") {
        out = out.replace("$BIG", &format!("\"{}\"", "x".repeat(BIG_BYTES)));
    }
    if out.contains("$DEEP") {
        out = out.replace("$DEEP", &("[".repeat(DEEP) + &"]".repeat(DEEP)));
    }
    out
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex bytes"))
        .collect()
}

/// What a surface did with one input.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Accepted,
    /// A memory tool result with `isError`.
    ToolError,
    /// A typed error: its stable code (`USAGE` for a CLI usage error).
    Code(String),
    /// Rust: the JSON did not deserialize into the request type.
    Refused,
    /// The surface cannot express the input (a lone surrogate in a Rust
    /// `&str`, JSON where the CLI takes arguments).
    Inexpressible,
}

impl Outcome {
    fn meets(&self, expected: &str) -> bool {
        match (self, expected) {
            (Outcome::Accepted, "accepted") | (Outcome::ToolError, "TOOL_ERROR") => true,
            (Outcome::Refused, "INVALID_INPUT") => true,
            (Outcome::Inexpressible, "n/a") => true,
            (Outcome::Code(code), expected) => code == expected,
            _ => false,
        }
    }

    fn rejected(&self) -> bool {
        !matches!(self, Outcome::Accepted)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Accepted => f.write_str("accepted"),
            Outcome::ToolError => f.write_str("TOOL_ERROR"),
            Outcome::Code(code) => f.write_str(code),
            Outcome::Refused => f.write_str("INVALID_INPUT (serde)"),
            Outcome::Inexpressible => f.write_str("n/a"),
        }
    }
}

fn code_of<T>(result: memtide::Result<T>) -> Outcome {
    match result {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Code(e.code().to_string()),
    }
}

/// Parses a request as a Rust client would: `Refused` when serde refuses it.
fn parse<T: DeserializeOwned>(text: &str) -> Result<T, Outcome> {
    serde_json::from_str(text).map_err(|_| Outcome::Refused)
}

/// A JSON string literal as Rust text; `Inexpressible` when it cannot be
/// one (a lone surrogate).
fn rust_string(literal: &str) -> Result<String, Outcome> {
    serde_json::from_str(literal).map_err(|_| Outcome::Inexpressible)
}

/// `{scope, path, content}` and `{scope, path, document}`, the JS bindings'
/// file requests.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileRequest {
    scope: Scope,
    path: String,
    #[serde(alias = "document")]
    content: String,
}

/// `{scope, allowed?, reply}`, the JS bindings' `applyOperations` request:
/// the model's reply as text, parsed by the surface.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OperationsCall {
    scope: Scope,
    #[serde(default)]
    allowed: Vec<String>,
    reply: String,
}

// ----- the seeded store ------------------------------------------------------

/// Ids of the seeded store.
#[derive(Debug, Clone)]
struct Seeded {
    /// A plain memory: the target of `update`.
    plain: String,
}

/// Seeds a store with memories of every status, pinned, PII, soft-deleted,
/// non-ASCII text, another tenant, and a synced file with chunks.
fn seed<S: Storage>(mem: &mut Memory<S, FixedEnvironment>) -> Seeded {
    let home = scope();
    let with = |text: &str, f: &dyn Fn(&mut MemoryInput)| {
        let mut input = MemoryInput::new(text, home.clone());
        f(&mut input);
        input
    };
    let results = mem
        .ingest(vec![
            with("I take my coffee as a cortado, no sugar.", &|_| {}),
            with("The spare key is under the blue flower pot.", &|i| {
                i.pinned = Some(true)
            }),
            with("My phone number is 555-0100.", &|i| {
                i.privacy = Some(Privacy {
                    pii: true,
                    private: false,
                    retention_days: Some(30),
                })
            }),
            with("Crème brûlée in 東京, naïvely 🎉.", &|i| {
                i.tags = Some(vec!["dessert".into(), "旅行".into()])
            }),
            with("A pending memory about the garden.", &|i| {
                i.status = Some(Status::Pending)
            }),
            with("A rejected memory about the violin.", &|i| {
                i.status = Some(Status::Rejected)
            }),
            with("A soft-deleted memory about sushi.", &|_| {}),
            MemoryInput::new(
                "Bob's workspace memory about coffee.",
                Scope::workspace("bob", "home"),
            ),
        ])
        .expect("seed");
    let ids: Vec<String> = results.into_iter().map(|r| r.id.unwrap()).collect();
    mem.delete(&ids[6], false).expect("soft delete");
    mem.sync_file(
        &home,
        "notes/MEMORY.md",
        "# Notes\nThe espresso machine is descaled on Sundays.\n\n## Plants\nWater the fern weekly.\n",
    )
    .expect("sync a file");
    Seeded {
        plain: ids[0].clone(),
    }
}

fn open_memory() -> (Memory<MemoryStorage, FixedEnvironment>, Seeded) {
    let env = FixedEnvironment::new(Timestamp::parse_rfc3339(NOW).unwrap());
    let mut mem = Memory::open(MemoryStorage::new(), env, Config::default()).unwrap();
    let seeded = seed(&mut mem);
    (mem, seeded)
}

/// Everything observable of a store: stats, the full listing, the export
/// and every stored key and value.
#[derive(Debug, PartialEq)]
struct State {
    stats: String,
    list: String,
    export: String,
    /// The records, wherever the layout keeps them.
    stored: BTreeMap<String, Vec<u8>>,
}

fn state(mem: &Memory<MemoryStorage, FixedEnvironment>) -> State {
    let list = mem
        .list(&ListQuery {
            include_deleted: true,
            limit: Some(1000),
            ..ListQuery::default()
        })
        .unwrap();
    State {
        stats: serde_json::to_string(&mem.stats(&ScopeFilter::default())).unwrap(),
        list: serde_json::to_string(&list).unwrap(),
        export: mem.export(),
        stored: records(mem.storage()),
    }
}

/// A valid ingest, a retrieval that finds it first, and its erasure.
fn probe<S: Storage>(mem: &mut Memory<S, FixedEnvironment>, n: usize, context: &str) {
    let home = scope();
    let text = format!("zebra quokka probe number {n}");
    let added = mem
        .ingest(vec![MemoryInput::new(&text, home.clone())])
        .unwrap_or_else(|e| panic!("{context}: the probe ingest failed: {e}"));
    let id = added[0].id.clone().expect("probe added");
    let mut query = RetrieveQuery::new(&text, home);
    query.dry_run = true;
    let hits = mem
        .retrieve(&query)
        .unwrap_or_else(|e| panic!("{context}: the probe retrieval failed: {e}"));
    assert_eq!(hits.first().map(|h| &h.item.id), Some(&id), "{context}");
    mem.delete(&id, true)
        .unwrap_or_else(|e| panic!("{context}: erasing the probe failed: {e}"));
}

// ----- derived exports ---------------------------------------------------------

/// An export document around `items` (and the header's files) with their
/// right checksums.
fn export_document(header: &Value, items: &Value) -> String {
    let items = serde_json::to_string(items).unwrap();
    let checksum = hex(&Sha256::digest(items.as_bytes()));
    let files = match header.get("files") {
        Some(files) => {
            let files = serde_json::to_string(files).unwrap();
            let checksum = hex(&Sha256::digest(files.as_bytes()));
            format!(",\"filesChecksum\":\"{checksum}\",\"files\":{files}")
        }
        None => String::new(),
    };
    format!(
        "{{\"format\":{},\"version\":{},\"checksum\":\"{checksum}\",\"items\":{items}{files}}}",
        header["format"], header["version"]
    )
}

/// The byte ranges of the checksummed parts of `export` (the values of
/// `items` and `files`): a flip inside one must be refused.
fn checksummed_ranges(export: &str) -> Vec<std::ops::Range<usize>> {
    [
        ("\"items\":", Some(",\"fileCount\":")),
        ("\"files\":", None),
    ]
    .into_iter()
    .filter_map(|(key, next)| {
        let start = export.find(key)? + key.len();
        let end = next
            .and_then(|next| export.find(next))
            .unwrap_or(export.len() - 1);
        Some(start..end)
    })
    .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The export `derive` names, made from the store's own `export`.
fn derive_export(export: &str, derive: &str) -> String {
    let doc: Value = serde_json::from_str(export).unwrap();
    let mut items = doc["items"].clone();
    let list = items.as_array_mut().unwrap();
    let set_version = |version: &str| {
        let at = export.find("\"version\":").unwrap() + "\"version\":".len();
        let end = at + export[at..].find(',').unwrap();
        format!("{}{version}{}", &export[..at], &export[end..])
    };
    match derive {
        "duplicate-id" => {
            let first = list[0]["id"].clone();
            list[1]["id"] = first;
        }
        "duplicate-item" => {
            let first = list[0].clone();
            list.push(first);
        }
        "duplicate-text" => {
            let mut twin = list[0].clone();
            twin["id"] = Value::from("twinOfTheFirstMemory");
            list.push(twin);
        }
        "format=other" => {
            return export.replacen("\"mnemo-export\"", "\"other-export\"", 1);
        }
        "no-checksum" => {
            let at = export.find("\"checksum\":").unwrap();
            let end = at + export[at..].find(',').unwrap() + 1;
            return format!("{}{}", &export[..at], &export[end..]);
        }
        "content-hash" => list[0]["contentHash"] = Value::from("0".repeat(64)),
        "unnormalized-text" => list[0]["text"] = Value::from("  two   spaces  "),
        "big-text" => list[0]["text"] = Value::from("x".repeat(BIG_BYTES)),
        "unknown-item-field" => list[0]["colour"] = Value::from("red"),
        "summary-of-live" | "summary-of-superseded" => {
            // The first memory's summary, its own summary in its scope.
            let text = "A summary of the first memory.";
            let mut summary = list[0].clone();
            summary["id"] = Value::from("summaryOfTheFirstMemory");
            summary["kind"] = Value::from("summary");
            summary["text"] = Value::from(text);
            summary["contentHash"] = Value::from(hex(&Sha256::digest(text.as_bytes())));
            summary["summaryOf"] = Value::from(vec![list[0]["id"].clone()]);
            if derive == "summary-of-superseded" {
                list[0]["supersededAt"] = list[0]["updatedAt"].clone();
            }
            list.push(summary);
        }
        other => match other.strip_prefix("version=") {
            Some(version) => return set_version(version),
            None => panic!("unknown derive {other}"),
        },
    }
    export_document(&doc, &items)
}

/// The hot file of the scope with the line of a pinned memory twice, the
/// second edited.
fn hot_file_with_a_duplicate_id(rendered: &str) -> String {
    let line = rendered
        .lines()
        .find(|l| l.contains("mnemo:id="))
        .expect("a pinned line");
    let edited = line.replacen("spare key", "spare key (edited)", 1);
    rendered.replacen(line, &format!("{line}\n{edited}"), 1)
}

// ----- the Rust surface ------------------------------------------------------

fn run_rust(
    mem: &mut Memory<MemoryStorage, FixedEnvironment>,
    seeded: &Seeded,
    case: &Case,
) -> Outcome {
    match try_rust(mem, seeded, case) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn try_rust(
    mem: &mut Memory<MemoryStorage, FixedEnvironment>,
    seeded: &Seeded,
    case: &Case,
) -> Result<Outcome, Outcome> {
    if case.bytes.is_some() {
        // Every Rust entry point takes `&str` or typed values: invalid UTF-8
        // cannot reach it.
        return Err(Outcome::Inexpressible);
    }
    Ok(match case.op.as_str() {
        "ingest" => {
            let inputs: Vec<MemoryInput> = match &case.batch {
                Some(batch) => batch
                    .iter()
                    .map(|line| parse(&expand(line)))
                    .collect::<Result<_, _>>()?,
                None => vec![parse(&case.input())?],
            };
            code_of(mem.ingest(inputs))
        }
        "retrieve" => code_of(mem.retrieve(&parse::<RetrieveQuery>(&case.input())?)),
        "inject" => code_of(mem.inject(&parse::<InjectQuery>(&case.input())?)),
        "update" => code_of(mem.update(&seeded.plain, parse::<MemoryPatch>(&case.input())?)),
        "get" => code_of(mem.get(&parse::<String>(&case.input())?)),
        "list" => code_of(mem.list(&parse::<ListQuery>(&case.input())?)),
        "deleteAll" => code_of(mem.delete_all(&parse::<ScopeFilter>(&case.input())?, true)),
        "import" => {
            let data = match &case.derive {
                Some(derive) => derive_export(&mem.export(), derive),
                None => rust_string(&case.input())?,
            };
            code_of(mem.import(&data))
        }
        "syncFile" => {
            let file: FileRequest = parse(&case.input())?;
            code_of(mem.sync_file(&file.scope, &file.path, &file.content))
        }
        "memoryTool" => {
            let input: Value = parse(&case.input())?;
            match mem.memory_tool(&scope(), &input) {
                Ok(result) if result.is_error => Outcome::ToolError,
                other => code_of(other),
            }
        }
        "readHotFile" => {
            let file = match &case.derive {
                Some(derive) => {
                    assert_eq!(derive, "hot-duplicate-id");
                    let rendered = mem.render_hot_file(&scope(), "# Me\n").unwrap();
                    FileRequest {
                        scope: scope(),
                        path: "USER.md".into(),
                        content: hot_file_with_a_duplicate_id(&rendered),
                    }
                }
                None => parse(&case.input())?,
            };
            code_of(mem.read_hot_file(&file.scope, &file.path, &file.content))
        }
        "config" => {
            let config: Config = parse(&case.input())?;
            let env = FixedEnvironment::new(Timestamp::parse_rfc3339(NOW).unwrap());
            match Memory::open(MemoryStorage::new(), env, config) {
                Ok(mut opened) => {
                    probe(&mut opened, 0, &case.name);
                    Outcome::Accepted
                }
                Err(e) => Outcome::Code(e.code().to_string()),
            }
        }
        "applyOperations" => {
            let call: OperationsCall = parse(&case.input())?;
            let limit = mem.config().limits.max_operations_bytes;
            match parse_operations(&call.reply, limit) {
                Ok(operations) => code_of(mem.apply_operations(OperationsRequest {
                    scope: call.scope,
                    allowed: call.allowed,
                    operations,
                })),
                Err(e) => Outcome::Code(e.code().to_string()),
            }
        }
        "storeSummary" => code_of(mem.store_summary(parse::<SummaryInput>(&case.input())?)),
        "summaryContext" => code_of(mem.summary_context(&parse::<SummaryQuery>(&case.input())?)),
        op => panic!("unknown op {op}"),
    })
}

/// Counts and prints the inputs a surface tried, and collects the
/// outcomes that missed their expectation.
#[derive(Default)]
struct Tally {
    inputs: usize,
    rejected: usize,
    wrong: Vec<String>,
}

impl Tally {
    /// Records `outcome` of `case` on `surface`; returns whether the input
    /// was refused.
    fn record(&mut self, surface: &str, case: &Case, expected: &str, outcome: &Outcome) -> bool {
        println!("{surface} | {} | {outcome}", case.name);
        if !outcome.meets(expected) {
            self.wrong
                .push(format!("{}: expected {expected}, got {outcome}", case.name));
        }
        self.inputs += 1;
        self.rejected += usize::from(outcome.rejected());
        outcome.rejected()
    }

    /// Fails listing every outcome that missed its expectation.
    fn assert_as_expected(&self) {
        assert!(
            self.wrong.is_empty(),
            "unexpected outcomes:\n{}",
            self.wrong.join("\n")
        );
    }
}

#[test]
fn the_table_through_the_rust_api() {
    let fixture = fixture();
    let (mut mem, seeded) = open_memory();
    let mut tally = Tally::default();
    for (n, case) in fixture.cases.iter().enumerate() {
        let expected = case.expected("rust");
        if expected == "n/a" {
            println!("rust | {} | n/a", case.name);
            continue;
        }
        let before = state(&mem);
        let outcome = run_rust(&mut mem, &seeded, case);
        if tally.record("rust", case, expected, &outcome) {
            assert!(
                state(&mem) == before,
                "{}: a refused input changed the store",
                case.name
            );
        }
        probe(&mut mem, n, &case.name);
    }
    tally.assert_as_expected();
    println!(
        "adversarial inputs tried through the Rust API: {} table cases ({} refused)",
        tally.inputs, tally.rejected
    );
}

/// Imports `data` into the store and checks the outcome is a refusal with
/// one of `codes` (or an accepted import that changed nothing) and the
/// store is intact and usable.
fn import_damaged(
    mem: &mut Memory<MemoryStorage, FixedEnvironment>,
    before: &State,
    data: &str,
    codes: &[&str],
    context: &str,
    n: usize,
) -> Outcome {
    let outcome = code_of(mem.import(data));
    match &outcome {
        Outcome::Code(code) => assert!(codes.contains(&code.as_str()), "{context}: {code}"),
        Outcome::Accepted => {}
        other => panic!("{context}: {other}"),
    }
    // Accepted or not, the store holds what it held: a damaged export never
    // imports partly, and an undamaged one re-imports the same memories.
    assert!(state(mem) == *before, "{context}: the store changed");
    probe(mem, n, context);
    outcome
}

#[test]
fn truncated_and_bit_flipped_exports_through_the_rust_api() {
    let (mut mem, _) = open_memory();
    let export = mem.export();
    let bytes = export.as_bytes();
    let before = state(&mem);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();

    for cut in 0..bytes.len() {
        let Ok(truncated) = std::str::from_utf8(&bytes[..cut]) else {
            continue; // mid-character: not a &str
        };
        let outcome = import_damaged(
            &mut mem,
            &before,
            truncated,
            &["CORRUPT", "INVALID_INPUT"],
            &format!("truncated at {cut}"),
            cut,
        );
        assert!(outcome.rejected(), "truncated at {cut}: accepted");
        *counts.entry(format!("truncated: {outcome}")).or_default() += 1;
    }

    // Every bit of the header (where a flip can leave a readable export),
    // one bit of every byte of the items (each breaks the checksum).
    let items_at = export.find("\"items\":").unwrap();
    let mut accepted_at = Vec::new();
    for at in 0..bytes.len() {
        let bits = if at < items_at {
            0..8
        } else {
            at % 8..at % 8 + 1
        };
        for bit in bits {
            let mut flipped = bytes.to_vec();
            flipped[at] ^= 1 << bit;
            let Ok(flipped) = String::from_utf8(flipped) else {
                continue; // not UTF-8: a &str cannot hold it (the CLI's case)
            };
            let context = format!("bit {bit} of byte {at} flipped");
            let outcome = import_damaged(
                &mut mem,
                &before,
                &flipped,
                &["CORRUPT", "INVALID_INPUT", "VERSION_MISMATCH"],
                &context,
                at * 8 + bit,
            );
            if !outcome.rejected() {
                accepted_at.push(at);
            }
            *counts.entry(format!("bit flip: {outcome}")).or_default() += 1;
        }
    }
    // What a flip may leave importable: the fields no checksum covers and
    // import does not read (`exportedAt`, a count's key), and the version
    // when it still names a version this build reads.
    let covered = checksummed_ranges(&export);
    assert!(
        accepted_at
            .iter()
            .all(|at| !covered.iter().any(|range| range.contains(at))),
        "a flip inside the items or files was accepted: {accepted_at:?}"
    );
    let total: usize = counts.values().sum();
    println!("export of {} bytes; outcomes: {counts:?}", bytes.len());
    println!(
        "adversarial inputs tried through the Rust API: {total} truncated or bit-flipped exports"
    );
}

// ----- values only Rust can pass --------------------------------------------

type ConfigChange = Box<dyn Fn(&mut Config)>;

#[test]
fn typed_values_no_json_can_carry() {
    let now = Timestamp::parse_rfc3339(NOW).unwrap();
    let mut tried = 0;

    // Non-finite and out-of-range engine settings.
    let configs: Vec<(&str, ConfigChange)> = vec![
        (
            "lexical weight NaN",
            Box::new(|c| c.rank.lexical_weight = f32::NAN),
        ),
        (
            "lexical weight 2",
            Box::new(|c| c.rank.lexical_weight = 2.0),
        ),
        (
            "scope boost +inf",
            Box::new(|c| c.rank.scope_boost = f32::INFINITY),
        ),
        (
            "answer inheritance -inf",
            Box::new(|c| c.rank.answer_inheritance = f32::NEG_INFINITY),
        ),
        (
            "speaker penalty -0.1",
            Box::new(|c| c.rank.speaker_penalty = -0.1),
        ),
        ("bm25 k1 NaN", Box::new(|c| c.bm25.k1 = f32::NAN)),
        ("bm25 b 1.5", Box::new(|c| c.bm25.b = 1.5)),
        (
            "near-duplicate threshold NaN",
            Box::new(|c| c.near_duplicate.lexical_threshold = f32::NAN),
        ),
        (
            "semantic threshold +inf",
            Box::new(|c| c.near_duplicate.semantic_threshold = f32::INFINITY),
        ),
    ];
    for (name, set) in configs {
        let mut config = Config::default();
        set(&mut config);
        let env = FixedEnvironment::new(now);
        let outcome = code_of(Memory::open(MemoryStorage::new(), env, config));
        println!("rust typed | config {name} | {outcome}");
        assert_eq!(
            outcome,
            Outcome::Code("INVALID_INPUT".into()),
            "config {name}"
        );
        tried += 1;
    }
    let mut edge = Config::default();
    edge.rank.lexical_weight = 1.0;
    edge.rank.speaker_penalty = -0.0;
    edge.near_duplicate.lexical_threshold = 2.0; // documented: turns the gate off
    let env = FixedEnvironment::new(now);
    let mut opened = Memory::open(MemoryStorage::new(), env, edge).expect("edge values are valid");
    probe(&mut opened, 0, "edge config");
    tried += 1;

    let (mut mem, seeded) = open_memory();
    let home = scope();
    let at = |ms: i64| {
        let mut input = MemoryInput::new("a memory said at an impossible time", home.clone());
        input.created_at = Some(Timestamp(ms));
        input
    };
    let expiring = |ms: i64| {
        let mut input = at(ms);
        input.privacy = Some(Privacy {
            pii: false,
            private: false,
            retention_days: Some(u32::MAX),
        });
        input
    };
    let cases: Vec<(&str, Vec<MemoryInput>, &str)> = vec![
        ("createdAt i64::MAX", vec![at(i64::MAX)], "INVALID_INPUT"),
        ("createdAt i64::MIN", vec![at(i64::MIN)], "INVALID_INPUT"),
        (
            "createdAt one ms after 9999",
            vec![at(253_402_300_800_000)],
            "INVALID_INPUT",
        ),
        (
            "two expiring duplicates at both ends of time",
            vec![expiring(i64::MIN), expiring(i64::MAX)],
            "INVALID_INPUT",
        ),
        (
            "two expiring duplicates at years 1 and 9999",
            vec![expiring(-62_135_596_800_000), expiring(253_402_300_799_999)],
            "accepted",
        ),
    ];
    for (name, inputs, expected) in cases {
        let before = state(&mem);
        let outcome = code_of(mem.ingest(inputs));
        println!("rust typed | {name} | {outcome}");
        assert!(
            outcome.meets(expected),
            "{name}: expected {expected}, got {outcome}"
        );
        if outcome.rejected() {
            assert!(state(&mem) == before, "{name}: the store changed");
        }
        probe(&mut mem, tried, name);
        tried += 1;
    }

    let query = |limit: Option<usize>| {
        let mut q = RetrieveQuery::new("coffee", home.clone());
        q.limit = limit;
        q.since = Some(Timestamp(i64::MIN));
        q.until = Some(Timestamp(i64::MAX));
        q
    };
    let before = state(&mem);
    let outcomes = [
        (
            "retrieve limit usize::MAX",
            code_of(mem.retrieve(&query(Some(usize::MAX)))),
            "INVALID_INPUT",
        ),
        (
            "retrieve over all of i64 time",
            code_of(mem.retrieve(&query(None))),
            "accepted",
        ),
        (
            "inject budget usize::MAX",
            code_of(mem.inject(&InjectQuery::new(query(None), usize::MAX))),
            "accepted",
        ),
        (
            "list limit usize::MAX",
            code_of(mem.list(&ListQuery {
                limit: Some(usize::MAX),
                ..ListQuery::default()
            })),
            "INVALID_INPUT",
        ),
        (
            "update to 100,000 tags",
            code_of(mem.update(
                &seeded.plain,
                MemoryPatch {
                    tags: Some((0..100_000).map(|i| i.to_string()).collect()),
                    ..MemoryPatch::default()
                },
            )),
            "TOO_LARGE",
        ),
    ];
    for (name, outcome, expected) in outcomes {
        println!("rust typed | {name} | {outcome}");
        assert!(
            outcome.meets(expected),
            "{name}: expected {expected}, got {outcome}"
        );
        tried += 1;
    }
    drop(before);
    probe(&mut mem, tried, "after the typed queries");
    println!("adversarial inputs tried through the Rust API: {tried} typed values");
}

// ----- the CLI ---------------------------------------------------------------

mod cli;
