//! `memtide`: the command-line tool over a directory store.
//!
//! A thin shell over [`Memory`] with [`FsStorage`]: it parses arguments and
//! JSON input, calls the library and prints compact JSON, one value per line.
//! Errors go to stderr as `error[CODE]: message`; the exit status is 1 for
//! runtime errors and 2 for usage errors.

#![forbid(unsafe_code)]

use std::io::{self, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind as ClapErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use serde::de::DeserializeOwned;
use serde::Serialize;

use memtide::env::{Environment, FixedEnvironment, SystemEnvironment};

use memtide::storage::FsStorage;

mod open;
mod plumbing;

use memtide::{
    parse_operations, Admission, Config, Error, HotFileSync, InjectQuery, Kind, ListQuery, Memory,
    MemoryInput, MemoryPatch, MessageOptions, OperationsRequest, PartType, RetrieveHit,
    RetrieveQuery, Role, Scope, ScopeFilter, ScoreBreakdown, Source, Status, SummaryInput,
    SummaryQuery, Timestamp,
};
use open::OpenStore;
#[cfg(feature = "semantic")]
use plumbing::embed;
use plumbing::{
    check_lines, parse_json_lines, parse_object, print_json, read_limited, read_text_file,
    read_text_file_or_empty, stored_path, write_file_atomically, Failure, Line, MAX_STDIN_BYTES,
};

/// Every command opens the whole store, a few small allocations per memory
/// (ids, texts, index entries), and glibc's malloc was about a fifth of the
/// CPU of opening a large one (`docs/speed.md`, "The open"). mimalloc's
/// thread-local free lists serve them faster. The
/// binary only: the library leaves the allocator to whoever links it, and
/// WebAssembly keeps its own.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Long-term memory for LLM chat clients, over a directory store.
///
/// Every command prints compact JSON, one value per line (`hot render`
/// prints the Markdown document). JSON Lines commands read one request per
/// line from stdin; blank lines are ignored but counted.
#[derive(Debug, Parser)]
#[command(name = "memtide", version)]
struct Cli {
    /// Store directory, created if missing [default: $MEMTIDE_STORE].
    #[arg(long, global = true, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Model directory holding `model.onnx` and `tokenizer.json`, as
    /// `scripts/fetch-model.sh` makes it [default: $MEMTIDE_MODEL_DIR].
    /// Required by `embed`. With a store, `ingest`, `retrieve`, `inject`,
    /// `update`, `import` and `stats` load it: memories are embedded (those
    /// stored without an embedding, or with another model's, at once) and
    /// retrieval is hybrid. Without it they run lexical-only.
    #[cfg(feature = "semantic")]
    #[arg(long, global = true, value_name = "DIR")]
    model: Option<PathBuf>,
    /// A JSON file of engine settings, as `Memory.open({config})` takes
    /// them (`secrets`, `retention`, `limits`, …) [default:
    /// $MEMTIDE_CONFIG]. Settings are not stored: pass the same file to
    /// every command on a store.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Fixes the clock (RFC 3339) for reproducible runs; ids then become
    /// sequential (`m000001`, … skipping ids in use).
    #[arg(long, global = true, hide = true, value_name = "RFC3339", value_parser = parse_timestamp)]
    now: Option<Timestamp>,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    #[command(flatten)]
    Store(Box<StoreCommand>),
    /// Embeds texts with the MiniLM model (no store needed): stdin is JSON
    /// Lines of `{"text":…}`, stdout one `{"ids":[…],"embedding":[…]}` per
    /// line with the token ids fed to the model and the L2-normalized vector.
    #[cfg(feature = "semantic")]
    Embed,
}

/// The subcommands that work on a store.
#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Ingests memories: stdin is JSON Lines of inputs, stdout one result per
    /// input. Every line is parsed before anything is stored; inputs are
    /// committed atomically per batch of 10,000.
    Ingest,
    /// Stores keyed memories: stdin is JSON Lines of inputs that each have
    /// a `key`, stdout one result per input; an input whose key a memory of
    /// its scope holds replaces that memory (outcome `replaced`).
    Upsert,
    /// Prints what happened to one memory, one event per line, oldest
    /// first.
    History {
        /// The memory's id.
        id: String,
    },
    /// Prints what a summarizer of a scope reads: stdin is one JSON object
    /// `{"scope", "limit"?, "includePii"?}`, stdout one line
    /// `{"memories":[…],"previous"?}` (oldest first; `previous` the
    /// scope's current summary), for the host to give its model.
    SummaryContext,
    /// Stores the summary a host's model wrote: stdin is one JSON object
    /// `{"scope","text","sources"}`, stdout the summary. It replaces the
    /// scope's previous summary; its sources must be live memories within
    /// the scope that are not summaries.
    StoreSummary,
    /// Ingests a conversation: stdin is a JSON array of chat messages
    /// (OpenAI, Anthropic or Vercel AI SDK shapes), stdout one result per
    /// memory made, `{"message","part",…}` in order. One commit.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    IngestMessages(MessageArgs),
    /// Applies an extractor's operations (docs/memory-model.md,
    /// "Extraction"): stdin is the model's reply holding them (a JSON array
    /// of `{"op":"add"|"update"|"delete"|"none",…}`, alone, fenced or in
    /// prose), stdout one `{"added","merged","superseded","deleted"}`. One
    /// commit; `INVALID_OPERATIONS` changes nothing.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    ApplyOps(ApplyOpsArgs),
    /// Runs retrieval queries: stdin is JSON Lines of queries, stdout one
    /// `{"results":[…]}` line per query, best hit first.
    Retrieve {
        /// Leaves out hits of relevance below this (0..=1) in the queries
        /// that set no `minRelevance` [default: 0].
        #[arg(long, value_name = "R")]
        min_relevance: Option<f32>,
    },
    /// Renders injection blocks: stdin is JSON Lines of queries with
    /// `budgetTokens`, stdout one injection per query.
    Inject {
        /// Leaves out memories of relevance below this (0..=1) in the
        /// queries that set no `minRelevance` [default: 0.3, so a question
        /// about nothing the store holds injects nothing].
        #[arg(long, value_name = "R")]
        min_relevance: Option<f32>,
    },
    /// Prints one memory.
    Get {
        /// The memory's id.
        id: String,
    },
    /// Lists memories newest first, one per line; without `--all`, a last
    /// line `{"nextCursor":…}` when more remain.
    List(ListArgs),
    /// Applies the JSON patch read from stdin to one memory and prints it.
    Update {
        /// The memory's id.
        id: String,
    },
    /// Deletes one memory (soft unless `--hard`).
    Delete {
        /// The memory's id.
        id: String,
        /// Erase it with every trace instead of suppressing it.
        #[arg(long)]
        hard: bool,
    },
    /// Deletes every memory of a user, or of a narrower scope.
    #[command(mut_arg("user", |arg| arg.required(true)))]
    DeleteAll {
        #[command(flatten)]
        scope: FilterArgs,
        /// Erase them with every trace instead of suppressing them.
        #[arg(long)]
        hard: bool,
    },
    /// Erases every expired memory (its `retentionDays` or the config's
    /// `retention` passed) with every stored byte of its text; prints
    /// `{"purged":N}`. With a `retention` policy every write does this too.
    PurgeExpired,
    /// Prints the memories and stored files of the store, or of the selected
    /// scope, as a versioned, checksummed JSON document.
    Export {
        #[command(flatten)]
        scope: FilterArgs,
    },
    /// Imports an export read from stdin, atomically.
    Import,
    /// Prints counts over the store or the selected scope.
    Stats {
        #[command(flatten)]
        scope: FilterArgs,
    },
    /// Markdown files as memories, indexed in chunks that cite
    /// `path#Lstart-Lend`.
    #[command(subcommand)]
    Md(MdCommand),
    /// Runs one call of Claude's memory tool (`memory_20250818`) on the
    /// scope's `/memories` files: stdin is the tool call's JSON `input`,
    /// stdout one `{"content":…,"isError":…}` line, the `tool_result` to
    /// send back. A refused call (a bad path, a missing file) is a result
    /// with `isError` and exit status 0.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    MemoryTool {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// The hot memory file: the scope's pinned memories as an auto-managed
    /// block (`<!-- mnemo:begin pinned -->` … `<!-- mnemo:end pinned -->`)
    /// inside a Markdown file such as USER.md.
    #[command(subcommand)]
    Hot(HotCommand),
}

/// Subcommands of `md`.
#[derive(Debug, Subcommand)]
enum MdCommand {
    /// Reads Markdown files from disk and syncs each into the scope: an
    /// unchanged file writes nothing, a changed one replaces its chunks.
    /// Prints one `{"path","outcome","chunks","removed"}` line per file.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    Sync {
        /// The files to read.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The path to store (and cite) the file under [default: the path
        /// given, with `\` as `/` and without a leading `./`]; only with one
        /// file.
        #[arg(long = "as", value_name = "PATH")]
        stored_as: Option<String>,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Removes a synced file and its chunks; prints `{"path","removed"}`.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    Remove {
        /// The stored path.
        path: String,
        #[command(flatten)]
        scope: ScopeArgs,
    },
}

/// Subcommands of `hot`.
#[derive(Debug, Subcommand)]
enum HotCommand {
    /// Prints the file (empty if missing) with its block rendered from the
    /// store, as Markdown (not JSON); changes nothing.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    Render {
        /// The Markdown file.
        file: PathBuf,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Reads the human edits of the file's block into the store, then
    /// writes the file back with the block rendered anew (created if
    /// missing; text outside the block untouched), so file and store
    /// converge. Prints `{"path","changed","sync":{added,updated,pinned,unpinned}}`.
    #[command(mut_arg("user", |arg| arg.required(true)), mut_arg("workspace", |arg| arg.required(true)))]
    Sync {
        /// The Markdown file.
        file: PathBuf,
        #[command(flatten)]
        scope: ScopeArgs,
    },
}

/// Scope filter options: every option given must match.
#[derive(Debug, clap::Args)]
struct ScopeArgs {
    /// Only this user's memories.
    #[arg(long)]
    user: Option<String>,
    /// Only this workspace.
    #[arg(long)]
    workspace: Option<String>,
    /// Only this project.
    #[arg(long)]
    project: Option<String>,
    /// Only this card.
    #[arg(long)]
    card: Option<String>,
    /// Only this session.
    #[arg(long)]
    session: Option<String>,
}

/// Scope filter options with metadata: every option given must match.
#[derive(Debug, clap::Args)]
struct FilterArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Only memories whose metadata has this key with this value
    /// (`KEY=VALUE`, the value as JSON, else as a string; repeatable, all
    /// must match); files are then not selected.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    metadata: Vec<(String, serde_json::Value)>,
}

impl From<FilterArgs> for ScopeFilter {
    fn from(args: FilterArgs) -> Self {
        ScopeFilter {
            metadata: (!args.metadata.is_empty()).then(|| args.metadata.into_iter().collect()),
            ..args.scope.into()
        }
    }
}

impl ScopeArgs {
    /// The scope these options name (`--user` and `--workspace` are
    /// required where one is needed).
    fn scope(self) -> Scope {
        Scope {
            user_id: self.user.unwrap_or_default(),
            workspace_id: self.workspace.unwrap_or_default(),
            project_id: self.project,
            card_id: self.card,
            session_id: self.session,
        }
    }
}

impl From<ScopeArgs> for ScopeFilter {
    fn from(args: ScopeArgs) -> Self {
        ScopeFilter {
            user_id: args.user,
            workspace_id: args.workspace,
            project_id: args.project,
            card_id: args.card,
            session_id: args.session,
            metadata: None,
        }
    }
}

/// Parses a `--meta KEY=VALUE`: the value as JSON when it is JSON (`3`,
/// `true`, `"x"`, `{…}`), else as a string.
fn parse_meta(text: &str) -> Result<(String, serde_json::Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not KEY=VALUE"))?;
    let value = serde_json::from_str(value)
        .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    Ok((key.to_string(), value))
}

/// Options of `apply-ops`.
#[derive(Debug, clap::Args)]
struct ApplyOpsArgs {
    /// Where `add` stores; the ids named must be visible from it.
    #[command(flatten)]
    scope: ScopeArgs,
    /// The id of a memory the model was shown, which `update` and `delete`
    /// may name (repeatable).
    #[arg(long = "allow", value_name = "ID")]
    allowed: Vec<String>,
}

/// Options of `ingest-messages`.
#[derive(Debug, clap::Args)]
struct MessageArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// A part type that becomes a memory (repeatable: text, reasoning,
    /// toolCall, toolResult, image, file) [default: text].
    #[arg(long = "include", value_name = "PART", value_parser = parse_wire::<PartType>)]
    include: Vec<PartType>,
    /// A role whose messages are kept (repeatable: user, assistant, system)
    /// [default: user and assistant].
    #[arg(long = "role", value_name = "ROLE", value_parser = parse_wire::<Role>)]
    roles: Vec<Role>,
    /// The speaker of a role's messages, as ROLE=NAME (repeatable), for
    /// messages without a `name`.
    #[arg(long = "speaker", value_name = "ROLE=NAME", value_parser = parse_speaker)]
    speakers: Vec<(Role, String)>,
    /// The kind of every memory [default: episodic].
    #[arg(long, value_name = "KIND", value_parser = parse_wire::<Kind>)]
    kind: Option<Kind>,
    /// A tag of every memory (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// When the messages were said, for those without a `createdAt`
    /// (RFC 3339) [default: now].
    #[arg(long, value_name = "RFC3339", value_parser = parse_timestamp)]
    created_at: Option<Timestamp>,
}

impl From<MessageArgs> for MessageOptions {
    fn from(args: MessageArgs) -> Self {
        MessageOptions {
            include: non_empty(args.include),
            roles: non_empty(args.roles),
            speakers: (!args.speakers.is_empty()).then(|| args.speakers.into_iter().collect()),
            kind: args.kind,
            tags: non_empty(args.tags),
            created_at: args.created_at,
            ..MessageOptions::new(args.scope.scope())
        }
    }
}

/// Parses `ROLE=NAME`.
fn parse_speaker(text: &str) -> Result<(Role, String), String> {
    let (role, name) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not ROLE=NAME"))?;
    Ok((parse_wire::<Role>(role)?, name.to_string()))
}

/// Options of `list`.
#[derive(Debug, clap::Args)]
struct ListArgs {
    #[command(flatten)]
    scope: FilterArgs,
    /// Only this kind (repeatable).
    #[arg(long = "kind", value_name = "KIND", value_parser = parse_wire::<Kind>)]
    kinds: Vec<Kind>,
    /// Only this review status (repeatable).
    #[arg(long = "status", value_name = "STATUS", value_parser = parse_wire::<Status>)]
    statuses: Vec<Status>,
    /// Only memories said by this role (repeatable).
    #[arg(long = "role", value_name = "ROLE", value_parser = parse_wire::<Role>)]
    roles: Vec<Role>,
    /// Only memories with this tag (repeatable: any of them).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only pinned (true) or unpinned (false) memories.
    #[arg(long, value_name = "BOOL")]
    pinned: Option<bool>,
    /// Include soft-deleted memories.
    #[arg(long)]
    include_deleted: bool,
    /// Include superseded memories (those a newer one took the place of).
    #[arg(long)]
    include_superseded: bool,
    /// Page size (default 50).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Start after this cursor (a previous `nextCursor`).
    #[arg(long, value_name = "C")]
    cursor: Option<String>,
    /// Follow cursors and print every page.
    #[arg(long)]
    all: bool,
}

impl From<ListArgs> for ListQuery {
    fn from(args: ListArgs) -> Self {
        ListQuery {
            scope: args.scope.into(),
            kinds: non_empty(args.kinds),
            statuses: non_empty(args.statuses),
            roles: non_empty(args.roles),
            tags: non_empty(args.tags),
            pinned: args.pinned,
            include_deleted: args.include_deleted,
            since: None,
            until: None,
            limit: args.limit,
            cursor: args.cursor,
            include_superseded: args.include_superseded,
        }
    }
}

/// `None` for an unused repeatable option, so it does not filter.
fn non_empty<T>(values: Vec<T>) -> Option<Vec<T>> {
    (!values.is_empty()).then_some(values)
}

/// Parses an RFC 3339 `--now`.
fn parse_timestamp(text: &str) -> Result<Timestamp, String> {
    Timestamp::parse_rfc3339(text).map_err(|e| e.to_string())
}

/// Parses an option value by its JSON wire name (`fact`, `pending`, …).
fn parse_wire<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|e| e.to_string())
}

/// One retrieval hit as printed by `retrieve`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HitOutput<'a> {
    id: &'a str,
    /// What to cite the hit by: `path#Lstart-Lend` for a chunk of a file,
    /// `memory:<id>` otherwise.
    citation: &'a str,
    score: f32,
    relevance: f32,
    text: &'a str,
    kind: Kind,
    scope: &'a Scope,
    source: &'a Source,
    created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<&'a ScoreBreakdown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<&'a Admission>,
}

impl<'a> From<&'a RetrieveHit> for HitOutput<'a> {
    fn from(hit: &'a RetrieveHit) -> Self {
        HitOutput {
            id: &hit.item.id,
            citation: &hit.citation,
            score: hit.score,
            relevance: hit.relevance,
            text: &hit.item.text,
            kind: hit.item.kind,
            scope: &hit.item.scope,
            source: &hit.item.source,
            created_at: hit.item.created_at,
            explain: hit.explain.as_ref(),
            policy: hit.policy.as_ref(),
        }
    }
}

/// The line `retrieve` prints per query.
#[derive(Serialize)]
struct RetrieveOutput<'a> {
    results: Vec<HitOutput<'a>>,
}

/// The line `delete` prints.
#[derive(Serialize)]
struct DeleteOutput<'a> {
    id: &'a str,
    deleted: bool,
    hard: bool,
}

/// The line `md remove` prints.
#[derive(Serialize)]
struct RemoveOutput<'a> {
    path: &'a str,
    removed: bool,
}

/// The line `hot sync` prints.
#[derive(Serialize)]
struct HotSyncOutput<'a> {
    path: &'a str,
    changed: bool,
    sync: HotFileSync,
}

/// The last line of a `list` page that has a successor.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CursorOutput<'a> {
    next_cursor: &'a str,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = BufWriter::new(io::stdout().lock());
    let mut input = io::stdin().lock();
    let result = match cli.command {
        #[cfg(feature = "semantic")]
        Command::Embed => {
            let model = required_dir(cli.model, "--model", "MEMTIDE_MODEL_DIR", "model");
            embed(&model, &mut input, &mut out)
        }
        Command::Store(command) => {
            let store = required_dir(cli.store, "--store", "MEMTIDE_STORE", "store");
            #[cfg(feature = "semantic")]
            let model = optional_dir(cli.model, "MEMTIDE_MODEL_DIR");
            #[cfg(not(feature = "semantic"))]
            let model: Option<PathBuf> = None;
            let config = match load_config(optional_dir(cli.config, "MEMTIDE_CONFIG")) {
                Ok(config) => config,
                Err(e) => {
                    let _ = writeln!(io::stderr(), "error[{}]: {e}", e.code());
                    return ExitCode::FAILURE;
                }
            };
            let target = Target {
                store: &store,
                model: model.as_deref(),
                config: &config,
            };
            match cli.now {
                Some(now) => run(
                    *command,
                    target,
                    FixedEnvironment::new(now),
                    &mut input,
                    &mut out,
                ),
                None => run(
                    *command,
                    target,
                    SystemEnvironment::default(),
                    &mut input,
                    &mut out,
                ),
            }
        }
    };
    // Flushed even after a failure: what was printed reports committed work.
    let flushed = out.flush();
    let result = result.and_then(|()| flushed.map_err(Failure::Io));
    let message = match result {
        Ok(()) => return ExitCode::SUCCESS,
        // The reader went away (`| head`): not an error of ours.
        Err(Failure::Io(e)) if e.kind() == ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(Failure::Io(e)) => format!("error[IO]: {e}"),
        Err(Failure::Memtide(e)) => format!("error[{}]: {e}", e.code()),
    };
    let _ = writeln!(io::stderr(), "{message}");
    ExitCode::FAILURE
}

/// The directory given by an option, else by the environment variable
/// `variable` if set and non-empty.
fn optional_dir(given: Option<PathBuf>, variable: &str) -> Option<PathBuf> {
    let from_env = std::env::var_os(variable).filter(|dir| !dir.is_empty());
    given.or_else(|| from_env.map(PathBuf::from))
}

/// The directory given by `option`, else by the environment variable
/// `variable` if set and non-empty; exits with a usage error when neither is.
fn required_dir(given: Option<PathBuf>, option: &str, variable: &str, what: &str) -> PathBuf {
    match optional_dir(given, variable) {
        Some(dir) => dir,
        None => Cli::command()
            .error(
                ClapErrorKind::MissingRequiredArgument,
                format!("the {what} directory is required: pass {option} DIR or set {variable}"),
            )
            .exit(),
    }
}

/// The settings of the file `--config` names (the defaults without one).
fn load_config(path: Option<PathBuf>) -> Result<Config, Error> {
    let Some(path) = path else {
        return Ok(Config::default());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::invalid(format!("config file {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::invalid(format!("config file {}: {e}", path.display())))
}

/// Where a store command works: the store directory, the settings and, for
/// semantic retrieval, the model directory.
#[derive(Clone, Copy)]
struct Target<'a> {
    store: &'a Path,
    model: Option<&'a Path>,
    config: &'a Config,
}

/// Opens the store; with a model directory and a command that embeds or
/// searches (`uses_model`), attaches the model first, which embeds the
/// memories that lack an embedding from it.
fn open_store<E: Environment>(
    target: Target<'_>,
    env: E,
    uses_model: bool,
) -> Result<OpenStore<E>, Error> {
    #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
    let mut memory = OpenStore::new(Memory::open(
        FsStorage::open(target.store)?,
        env,
        target.config.clone(),
    )?);
    #[cfg(feature = "semantic")]
    if let (true, Some(dir)) = (uses_model, target.model) {
        let model = memtide::embed::MiniLm::from_dir(dir)?;
        memory.set_embedder(std::sync::Arc::new(model))?;
    }
    #[cfg(not(feature = "semantic"))]
    let _ = (uses_model, target.model);
    Ok(memory)
}

/// Runs one command against the store (and model) of `target`.
fn run<E: Environment>(
    command: StoreCommand,
    target: Target<'_>,
    env: E,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    // Parse stdin before taking the store's lock, so bad input touches nothing.
    // Commands that embed or search load the model; the others never need it.
    let open = |env: E| open_store(target, env, false);
    let open_with_model = |env: E| open_store(target, env, true);
    match command {
        StoreCommand::Ingest => {
            let lines = parse_json_lines(&read_limited(input, MAX_STDIN_BYTES)?)?;
            let mut memory = open_with_model(env)?;
            let inputs: Vec<MemoryInput> = check_lines(lines, |i| memory.check_input(i))?;
            let batch_size = memory.config().limits.max_batch.max(1);
            let mut remaining = inputs.into_iter().peekable();
            while remaining.peek().is_some() {
                let batch: Vec<MemoryInput> = remaining.by_ref().take(batch_size).collect();
                for result in memory.ingest(batch)? {
                    print_json(out, &result)?;
                }
            }
        }
        StoreCommand::Upsert => {
            let lines = parse_json_lines(&read_limited(input, MAX_STDIN_BYTES)?)?;
            let mut memory = open_with_model(env)?;
            let inputs: Vec<MemoryInput> = check_lines(lines, |i: &MemoryInput| {
                memory.check_input(i)?;
                match i.key {
                    Some(_) => Ok(()),
                    None => Err(Error::invalid("upsert needs a key")),
                }
            })?;
            let batch_size = memory.config().limits.max_batch.max(1);
            let mut remaining = inputs.into_iter().peekable();
            while remaining.peek().is_some() {
                let batch: Vec<MemoryInput> = remaining.by_ref().take(batch_size).collect();
                for result in memory.upsert(batch)? {
                    print_json(out, &result)?;
                }
            }
        }
        StoreCommand::History { id } => {
            for event in open(env)?.history(&id)? {
                print_json(out, &event)?;
            }
        }
        StoreCommand::SummaryContext => {
            let query: SummaryQuery = parse_object(&read_limited(input, MAX_STDIN_BYTES)?)?;
            print_json(out, &open(env)?.summary_context(&query)?)?;
        }
        StoreCommand::StoreSummary => {
            let summary: SummaryInput = parse_object(&read_limited(input, MAX_STDIN_BYTES)?)?;
            print_json(out, &open_with_model(env)?.store_summary(summary)?)?;
        }
        StoreCommand::IngestMessages(args) => {
            let bytes = read_limited(input, MAX_STDIN_BYTES)?;
            let messages: Vec<serde_json::Value> = serde_json::from_slice(&bytes).map_err(|e| {
                Error::invalid(format!(
                    "standard input is not a JSON array of messages: {e}"
                ))
            })?;
            let options = MessageOptions::from(args);
            for result in open_with_model(env)?.ingest_messages(&messages, &options)? {
                print_json(out, &result)?;
            }
        }
        StoreCommand::ApplyOps(args) => {
            let bytes = read_limited(input, MAX_STDIN_BYTES)?;
            let reply = String::from_utf8(bytes)
                .map_err(|_| Error::InvalidOperations("standard input is not UTF-8".to_string()))?;
            let mut memory = open_with_model(env)?;
            let limit = memory.config().limits.max_operations_bytes;
            let request = OperationsRequest {
                scope: args.scope.scope(),
                allowed: args.allowed,
                operations: parse_operations(&reply, limit)?,
            };
            print_json(out, &memory.apply_operations(request)?)?;
        }
        StoreCommand::Retrieve { min_relevance } => {
            let mut lines: Vec<Line<RetrieveQuery>> =
                parse_json_lines(&read_limited(input, MAX_STDIN_BYTES)?)?;
            for line in &mut lines {
                line.value.min_relevance = line.value.min_relevance.or(min_relevance);
            }
            let mut memory = open_with_model(env)?;
            let queries = check_lines(lines, |q| memory.check_query(q))?;
            for query in &queries {
                let hits = memory.retrieve(query)?;
                let results = hits.iter().map(HitOutput::from).collect();
                print_json(out, &RetrieveOutput { results })?;
            }
        }
        StoreCommand::Inject { min_relevance } => {
            let mut lines: Vec<Line<InjectQuery>> =
                parse_json_lines(&read_limited(input, MAX_STDIN_BYTES)?)?;
            for line in &mut lines {
                let query = &mut line.value.query;
                query.min_relevance = query.min_relevance.or(min_relevance);
            }
            let mut memory = open_with_model(env)?;
            let queries = check_lines(lines, |q: &InjectQuery| memory.check_query(&q.query))?;
            for query in &queries {
                print_json(out, &memory.inject(query)?)?;
            }
        }
        StoreCommand::Get { id } => print_json(out, &open(env)?.get(&id)?)?,
        StoreCommand::List(args) => {
            let all = args.all;
            let mut query = ListQuery::from(args);
            let memory = open(env)?;
            loop {
                let page = memory.list(&query)?;
                for item in &page.items {
                    print_json(out, item)?;
                }
                match page.next_cursor {
                    Some(cursor) if all => query.cursor = Some(cursor),
                    Some(cursor) => {
                        print_json(
                            out,
                            &CursorOutput {
                                next_cursor: &cursor,
                            },
                        )?;
                        break;
                    }
                    None => break,
                }
            }
        }
        StoreCommand::Update { id } => {
            let bytes = read_limited(input, MAX_STDIN_BYTES)?;
            let patch: MemoryPatch = serde_json::from_slice(&bytes)
                .map_err(|e| Error::invalid(format!("patch: {e}")))?;
            print_json(out, &open_with_model(env)?.update(&id, patch)?)?;
        }
        StoreCommand::Delete { id, hard } => {
            open(env)?.delete(&id, hard)?;
            print_json(
                out,
                &DeleteOutput {
                    id: &id,
                    deleted: true,
                    hard,
                },
            )?;
        }
        StoreCommand::DeleteAll { scope, hard } => {
            print_json(out, &open(env)?.delete_all(&scope.into(), hard)?)?;
        }
        StoreCommand::PurgeExpired => {
            print_json(out, &open(env)?.purge_expired()?)?;
        }
        StoreCommand::Export { scope } => {
            let export = open(env)?.export_filtered(&scope.into());
            out.write_all(export.as_bytes())?;
            out.write_all(b"\n")?;
        }
        StoreCommand::Import => {
            let bytes = read_limited(input, MAX_STDIN_BYTES)?;
            let text = String::from_utf8(bytes)
                .map_err(|e| Error::invalid(format!("standard input is not UTF-8: {e}")))?;
            print_json(out, &open_with_model(env)?.import(&text)?)?;
        }
        StoreCommand::Stats { scope } => {
            print_json(out, &open_with_model(env)?.stats(&scope.into()))?
        }
        StoreCommand::Md(MdCommand::Sync {
            files,
            stored_as,
            scope,
        }) => {
            if stored_as.is_some() && files.len() > 1 {
                return Err(Error::invalid("--as names one file; give one file with it").into());
            }
            let mut contents = Vec::with_capacity(files.len());
            for file in &files {
                let path = stored_as.clone().unwrap_or_else(|| stored_path(file));
                contents.push((path, read_text_file(file)?));
            }
            let scope = scope.scope();
            let mut memory = open_with_model(env)?;
            for (path, content) in &contents {
                print_json(out, &memory.sync_file(&scope, path, content)?)?;
            }
        }
        StoreCommand::Md(MdCommand::Remove { path, scope }) => {
            let removed = open(env)?.remove_file(&scope.scope(), &path)?;
            print_json(
                out,
                &RemoveOutput {
                    path: &path,
                    removed,
                },
            )?;
        }
        StoreCommand::MemoryTool { scope } => {
            let bytes = read_limited(input, MAX_STDIN_BYTES)?;
            let call: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| Error::invalid(format!("tool input: {e}")))?;
            let result = open_with_model(env)?.memory_tool(&scope.scope(), &call)?;
            print_json(out, &result)?;
        }
        StoreCommand::Hot(HotCommand::Render { file, scope }) => {
            let document = read_text_file_or_empty(&file)?;
            let rendered = open(env)?.render_hot_file(&scope.scope(), &document)?;
            out.write_all(rendered.as_bytes())?;
        }
        StoreCommand::Hot(HotCommand::Sync { file, scope }) => {
            let document = read_text_file_or_empty(&file)?;
            let scope = scope.scope();
            let path = stored_path(&file);
            let mut memory = open_with_model(env)?;
            let sync = memory.read_hot_file(&scope, &path, &document)?;
            let rendered = memory.render_hot_file(&scope, &document)?;
            let changed = rendered != document;
            if changed {
                write_file_atomically(&file, &rendered)?;
            }
            print_json(
                out,
                &HotSyncOutput {
                    path: &path,
                    changed,
                    sync,
                },
            )?;
        }
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_definitions_are_consistent() {
        Cli::command().debug_assert();
    }
}
