// Types of the memtide npm package. The same camelCase shapes as the Rust API
// (serde) and the CLI's JSON; timestamps are RFC 3339 strings.

/** What sort of memory an item is. */
export type Kind = "episodic" | "semantic" | "preference" | "document" | "summary" | "fact";
/** Review state: only `approved` memories are retrieved unless a query opts in to `pending`. */
export type Status = "approved" | "pending" | "rejected";
/** Who said a memory, in a conversation. */
export type Role = "user" | "assistant" | "system";
/** Where a memory came from. */
export type SourceKind = "message" | "file" | "tool" | "import" | "manual";

/**
 * Who and what a memory belongs to. A memory is visible to a query when every
 * field the memory sets is equal in the query's scope (a workspace memory is
 * visible in all its projects, never the other way round).
 */
export interface Scope {
  userId: string;
  workspaceId: string;
  projectId?: string;
  cardId?: string;
  sessionId?: string;
}

/**
 * A memory's free-form metadata: a JSON object of at most
 * `limits.maxMetadataBytes` (default 16 KiB) of compact JSON; larger is
 * `TOO_LARGE`.
 */
export type Metadata = { [key: string]: JsonValue };
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Selects memories by scope fields; absent fields match anything. With
 * `metadata`, only memories whose metadata holds each of its keys with an
 * equal value (numbers compare by value) are selected, and no file.
 */
export interface ScopeFilter {
  userId?: string;
  workspaceId?: string;
  projectId?: string;
  cardId?: string;
  sessionId?: string;
  metadata?: Metadata;
}

/** Provenance: the kind of source, a reference into it, an optional locator. */
export interface Source {
  kind: SourceKind;
  ref?: string;
  uri?: string;
}

/** Privacy markers. `private` memories are never retrieved; `pii` only when a query sets `includePii`. */
export interface Privacy {
  pii?: boolean;
  private?: boolean;
  /** Days after `createdAt` when the memory expires (never retrieved after). */
  retentionDays?: number;
}

/** One memory to ingest. `<private>…</private>` spans are removed; text containing `<no-memory>` is not stored. */
export interface MemoryInput {
  text: string;
  scope: Scope;
  /** Default `"episodic"`. */
  kind?: Kind;
  /** Default `"approved"`. */
  status?: Status;
  /** Curated hot memory, injected first. Default false. */
  pinned?: boolean;
  /** Default `{kind: "manual", ref: ""}`. */
  source?: Source;
  tags?: string[];
  privacy?: Privacy;
  /** When it was said (RFC 3339); default now. */
  createdAt?: string;
  /**
   * The caller's key, unique within exactly this scope: `ingest` refuses a
   * key in use (`INVALID_INPUT`), `upsert` replaces the memory holding it.
   * Keyed memories are never merged with duplicates.
   */
  key?: string;
  /** Free-form JSON object (see {@link Metadata}). */
  metadata?: Metadata;
  /** Who said it, for a message of a conversation. */
  role?: Role;
  /** The speaker's name (ranking prefers a named speaker's memories when a query names them). */
  speaker?: string;
  /**
   * For `upsert`: when a memory of the scope holds the key, keep it as a
   * superseded memory (out of retrieval, readable, linked to the new one)
   * instead of replacing it in place (outcome `"superseded"`). Default false.
   */
  supersede?: boolean;
}

/** What `deleteAll` did. */
export interface DeleteAllResult {
  /** The memories the filter matched and the summaries deleted with their sources. */
  deleted: number;
  /** Whether they were erased (hard) or suppressed (soft). */
  hard: boolean;
  /** Of `deleted`, the summaries the filter did not match, deleted because one of their sources was. */
  summaries: number;
}

/** What happened to a memory (`history`). */
export type HistoryKind =
  | "created" | "merged" | "updated" | "replaced" | "status" | "pinned" | "deleted" | "restored"
  | "superseded" | "supersedes" | "withdrawn";

/** One event of a memory's history, oldest first. */
export interface HistoryEvent {
  event: HistoryKind;
  /** When (RFC 3339); `created` is at the memory's `createdAt`. */
  at: string;
  /** For `updated` and `replaced`: the fields that changed. */
  fields?: string[];
  /** For `status`: the new status. */
  status?: Status;
  /** For `pinned`: the new state. */
  pinned?: boolean;
  /** For `superseded` and `supersedes`: the other memory's id (absent once that one is erased). */
  other?: string;
}

/** A duplicate merged into a memory. */
export interface MergeRecord {
  source: Source;
  mergedAt: string;
  createdAt: string;
  /** The duplicate's own text when it differed (near-duplicates). */
  text?: string;
}

/** Lines of a file, 1-based and inclusive (`start` ≤ `end`). */
export interface LineRange {
  start: number;
  end: number;
}

/** One stored memory. */
export interface MemoryItem {
  id: string;
  text: string;
  kind: Kind;
  scope: Scope;
  status: Status;
  pinned: boolean;
  source: Required<Pick<Source, "kind" | "ref">> & Pick<Source, "uri">;
  /** SHA-256 of `text`, lowercase hex. */
  contentHash: string;
  /** Who said it, when it was ingested with a role. */
  role?: Role;
  /** The speaker's name, when it was ingested with one. */
  speaker?: string;
  tags: string[];
  privacy: { pii: boolean; private: boolean; retentionDays?: number };
  createdAt: string;
  updatedAt: string;
  lastUsedAt?: string;
  usageCount: number;
  mergedFrom?: MergeRecord[];
  /** The memory said just before this one in the same conversation. */
  follows?: string;
  /** Set when soft-deleted. */
  deletedAt?: string;
  /**
   * For a chunk of a synced file (`source: {kind: "file", ref: path}`): the
   * lines of the file it holds. Such a memory is cited `path#Lstart-Lend`
   * (`path#Lstart` for one line) and belongs to its file, which replaces it
   * when it changes.
   */
  sourceLines?: LineRange;
  key?: string;
  metadata?: Metadata;
  /** The changes after it was stored (see `Memory.history`, which adds `created` and merges). */
  history?: HistoryEvent[];
  /**
   * When a newer memory took its place: it is never retrieved or injected,
   * listed only with `includeSuperseded`, and stays readable until
   * hard-deleted.
   */
  supersededAt?: string;
  /** The memory that took its place (absent once that one is erased). */
  supersededBy?: string;
  /** The memories it took the place of, oldest first. */
  supersedes?: string[];
  /**
   * For a summary `summarize` stored: the ids of the memories it
   * summarizes, ascending. Erasing any of them (a hard delete, a purge, a
   * new text) erases the summary in the same commit; soft-deleting one
   * soft-deletes it.
   */
  summaryOf?: string[];
  /**
   * For a summary soft-deleted because one of its sources was (absent
   * otherwise): it comes back when all its sources are live again.
   */
  withdrawn?: boolean;
}

/** What a summarizer reads (`Memory.summaryContext`). */
export interface SummaryContext {
  /** The memories of the scope a summary covers, oldest first. */
  memories: MemoryItem[];
  /** The scope's current summary, if it has one. */
  previous?: MemoryItem;
}

/** What a summarizer is given. */
export interface SummarizerInput extends SummaryContext {
  /** The scope being summarized (with `sessionId` for a session). */
  scope: Scope;
  /** The `signal` given to `summarize`, for the model call. */
  signal?: AbortSignal;
}

/**
 * What a summarizer returns: the summary's text (its sources are then all
 * the memories it was given), the text with the ids it summarizes, or
 * `null` to keep the scope's summary as it is.
 */
export type SummarizerOutput = string | { text: string; sources?: string[] } | null | undefined;

/** The app's summarizer: memtide calls no model, this function does. */
export type Summarizer = (input: SummarizerInput) => SummarizerOutput | Promise<SummarizerOutput>;

export interface SummarizeOptions {
  /** The scope to summarize: its memories and those of narrower scopes (a workspace's covers its sessions). */
  scope: Scope;
  /** Summarize this session of `scope` (the same as `scope.sessionId`). */
  session?: string;
  /** Writes the summary. */
  summarizer: Summarizer;
  /** At most this many memories, the newest (default and cap `limits.maxResults`, 1,000). */
  limit?: number;
  /** Give the summarizer memories marked `pii` too (default false). */
  includePii?: boolean;
  /** Stops the call (`ABORTED`) before the summary is stored; handed to the summarizer. */
  signal?: AbortSignal;
}

/** What ingest did with one input. */
/** What an import did. */
export interface ImportResult {
  /** New memories. */
  added: number;
  /** Memories whose id was already stored, replaced by the imported ones. */
  replaced: number;
  /** Memories merged into one with the same text and scope. */
  merged: number;
  /**
   * Files written; a file's chunks the export does not hold are erased with
   * the file it replaces.
   */
  files: number;
}

export interface IngestResult {
  /** The memory added or merged into; absent when nothing was stored. */
  id?: string;
  /**
   * `replaced`: an `upsert` replaced the memory holding the same key;
   * `superseded`: an `upsert` with `supersede` stored a new memory (`id`)
   * that supersedes it.
   */
  outcome: "added" | "merged" | "replaced" | "skipped" | "superseded";
  reason?: "duplicate" | "nearDuplicate" | "noMemory" | "private" | "suppressed" | "notCaptured";
  /** For a reported near-duplicate: the similar memory. */
  similarTo?: string;
}

/**
 * A chat message: OpenAI Chat Completions (`content` a string or parts,
 * `name`, `tool_calls`), Anthropic Messages (content blocks), Vercel AI SDK
 * `ModelMessage` (`content`) or `UIMessage` (`parts`). `createdAt` (RFC 3339
 * or a `Date`) sets when it was said.
 */
export interface ChatMessage {
  role: "user" | "assistant" | "system" | "developer" | "tool" | "function";
  content?: string | readonly unknown[] | null;
  parts?: readonly unknown[];
  name?: string;
  id?: string;
  createdAt?: string | Date;
  [field: string]: unknown;
}

/** A sort of message part that can become a memory. */
export type PartType = "text" | "reasoning" | "toolCall" | "toolResult" | "image" | "file";

/** How `ingestMessages` turns messages into memories. */
export interface MessageOptions {
  scope: Scope;
  /** The parts that become memories; default `["text"]` (tool calls and results, images and files left out). */
  include?: PartType[];
  /** The roles whose messages are kept; default `["user", "assistant"]`. Tool messages follow `include`. */
  roles?: Role[];
  /** The speaker of each role's messages when a message has no `name`. */
  speakers?: Partial<Record<Role, string>>;
  kind?: Kind;
  status?: Status;
  tags?: string[];
  privacy?: Privacy;
  /** When the messages were said, for those without a `createdAt`; default now. */
  createdAt?: string;
}

/** What ingest did with one part of one message. */
export interface MessageIngestResult extends IngestResult {
  /** The message's index. */
  message: number;
  /** The part's index in the message. */
  part: number;
}

/** A retrieval query. */
export interface RetrieveQuery {
  /** What to look for, usually the user's next message. */
  text: string;
  /** Only memories visible from this scope are returned. */
  scope: Scope;
  /** Most hits (default 10). */
  limit?: number;
  kinds?: Kind[];
  /** Only memories said by one of these roles (a memory without a role matches none). */
  roles?: Role[];
  /** Only memories with at least one of these tags. */
  tags?: string[];
  /** Created at or after (RFC 3339). */
  since?: string;
  /** Created before (RFC 3339). */
  until?: string;
  /** Do not mark returned memories as used. */
  dryRun?: boolean;
  /** Only memories whose metadata holds each of these keys with an equal value. */
  metadata?: Metadata;
  /** Attach a score breakdown and the policy admission to each hit. */
  explain?: boolean;
  includePending?: boolean;
  includePii?: boolean;
  /**
   * Leave out hits whose `relevance` is below this, in 0..=1. Default: 0 for
   * `retrieve`, 0.3 for `inject` (a question about nothing the store holds
   * injects nothing).
   */
  minRelevance?: number;
  /**
   * `"all"` (default): every session of the workspace, the query's own
   * first; `"current"`: the memories without a session and those of
   * `scope.sessionId` only.
   */
  sessions?: "current" | "all";
  /**
   * `"blend"` (default): relevance first, narrower scopes slightly boosted;
   * `"strict"`: the narrowest scope first (card, project, session,
   * workspace), by relevance within each.
   */
  scopeOrder?: "blend" | "strict";
}

/** How a hit's score was made (with `explain: true`). */
export interface ScoreBreakdown {
  /** BM25 score. */
  lexical: number;
  /** Cosine similarity, when a model is loaded. */
  semantic?: number;
  /** The idf-weighted share of the query's terms the memory holds, 0..=1. */
  coverage: number;
  /** Fused lexical (normalized BM25 plus `rank.coverageWeight` × coverage) and semantic score. */
  combined: number;
  /** True when inherited from the question this memory answers or from a neighbour (`rank.neighbourShare`). */
  inherited: boolean;
  speakerFactor: number;
  /** Below 1 when the query asks "when" and the memory holds no time word, or names a month the memory was neither created in nor names. */
  timeFactor: number;
  scopeMultiplier: number;
  /** The final score. */
  fused: number;
  /** The calibrated relevance, 0..=1 (as the hit's). */
  relevance: number;
}

/** How a hit met the retrieval policy (with `explain: true`). */
export interface Admission {
  /** The scope fields the query had to match: `userId`, `workspaceId`, then each narrowing field the memory sets. */
  scopeFields: ("userId" | "workspaceId" | "projectId" | "cardId" | "sessionId")[];
  /** `approved`, or `pending` when the query included pending memories. */
  status: Status;
  /** Marked as holding PII, and the query set `includePii`. */
  pii: boolean;
  /** When its retention ends, if it has one. */
  expiresAt?: string;
  /** The query's filters it satisfied. */
  filters: ("kinds" | "roles" | "tags" | "since" | "until" | "metadata")[];
}

/** One retrieved memory. */
export interface RetrieveHit {
  item: MemoryItem;
  /** What to cite it by: `path#Lstart-Lend` for a chunk of a file, `memory:<id>` otherwise. */
  citation: string;
  /** Orders the hits of one query; not comparable across queries. */
  score: number;
  /**
   * How relevant the memory is to the query, 0..=1, from absolute evidence
   * (query-term coverage, the raw cosine with a model): comparable across
   * queries, what `minRelevance` gates on.
   */
  relevance: number;
  explain?: ScoreBreakdown;
  policy?: Admission;
}

/** An injection request: a retrieval query plus a budget. */
export interface InjectQuery extends RetrieveQuery {
  /** Most tokens the block may take (the model's tokenizer when loaded, else an over-estimate). */
  budgetTokens: number;
  /** Default `"markdown"`. */
  format?: "markdown" | "xml";
  /**
   * The block's instruction line: one line without `<`, `>`, `[` or `]`;
   * `""` for none. Default: a short line saying the entries are untrusted
   * notes and how to cite them.
   */
  preamble?: string;
  /** The most of the budget pinned memories may take, 0..=1 (default 0.5). */
  pinnedShare?: number;
  /** `false`: the pinned (hot) memories only, without retrieval (default true). */
  archive?: boolean;
}

/** What a citation tag of a block stands for. */
export interface Citation {
  /** `"m1"`, `"m2"`, … as `[m1]` opens an entry. */
  tag: string;
  /** The memory's id. */
  id: string;
}

/** A rendered block for the prompt. */
export interface Injection {
  /**
   * The block; "" when nothing fits or nothing is relevant enough. Each entry
   * opens with its tag `[m1]`, `[m2]`, … in block order.
   */
  block: string;
  /** Ids in the block, in block order (pinned first): `[mN]` is `used[N - 1]`. */
  used: string[];
  /** Each tag of the block with the id it stands for, in block order. */
  citations: Citation[];
  tokens: number;
  /** Candidates that did not fit. */
  dropped: { id: string; tokens: number }[];
  /** True when `tokens` is an estimate (no model loaded). */
  estimated: boolean;
}

/** A listing request; results are newest first. */
export interface ListQuery {
  scope?: ScopeFilter;
  kinds?: Kind[];
  statuses?: Status[];
  /** Only memories said by one of these roles. */
  roles?: Role[];
  tags?: string[];
  pinned?: boolean;
  includeDeleted?: boolean;
  since?: string;
  until?: string;
  /** Page size (default 50). */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  /** Include superseded memories. Default false. */
  includeSuperseded?: boolean;
}

export interface ListPage {
  items: MemoryItem[];
  nextCursor?: string | null;
}

/** Changes to one memory; absent fields stay. */
export interface MemoryPatch {
  text?: string;
  kind?: Kind;
  status?: Status;
  pinned?: boolean;
  tags?: string[];
  privacy?: Privacy;
  source?: Source;
  /** Replaces the metadata; `{}` removes it. */
  metadata?: Metadata;
  /** `true` soft-deletes, `false` restores. */
  deleted?: boolean;
  /** Who said it. */
  role?: Role;
  /** The speaker's name; `""` removes it. */
  speaker?: string;
}

export interface Stats {
  items: number;
  active: number;
  deleted: number;
  pending: number;
  rejected: number;
  pinned: number;
  byKind: Record<string, number>;
  tenants: number;
  indexedTerms: number;
  storedBytes: number;
  embedded: number;
  retrievalMode: "hybrid" | "lexical";
  model?: string;
  tokenCounting: "estimate" | "tokenizer";
  formatVersion: number;
}

/** A file of a scope: `path` is 1–1024 bytes of `/`-separated segments, no `.`, `..` or empty segment, no backslash, control character or percent-escape. */
export interface FileRef {
  scope: Scope;
  path: string;
}

/** A file to store and index: `content` is its Markdown text. */
export interface FileContent extends FileRef {
  content: string;
}

/** What `syncFile` changed. */
export interface FileSync {
  path: string;
  /** `unchanged`: same content as stored, nothing was written. */
  outcome: "created" | "updated" | "unchanged";
  /** Ids of the file's chunks after the sync, in line order. */
  chunks: string[];
  /** How many old chunks the sync removed. */
  removed: number;
}

/** A stored file. */
export interface StoredFile {
  scope: Scope;
  path: string;
  /** The content, `<private>` spans removed (line breaks kept, so line numbers hold). */
  content: string;
  /** SHA-256 (lowercase hex) of the content as last synced. */
  contentHash: string;
  /** When the content last changed. */
  updatedAt: string;
}

/**
 * One call of Claude's memory tool (`memory_20250818`): the `input` of a
 * `tool_use` block named `memory`. Paths are `/memories` or under it.
 */
export type MemoryToolCommand =
  | { command: "view"; path: string; view_range?: [number, number] }
  | { command: "create"; path: string; file_text: string }
  | { command: "str_replace"; path: string; old_str: string; new_str?: string }
  | { command: "insert"; path: string; insert_line: number; insert_text: string }
  | { command: "delete"; path: string }
  | { command: "rename"; old_path: string; new_path: string };

/** The `tool_result` to send back: `content`, and `isError` as its `is_error`. */
export interface MemoryToolResult {
  content: string;
  /** The command failed (the text says why, for the model) and changed nothing. */
  isError: boolean;
}

/** A hot memory file to read back: the Markdown `document` stored at `path`. */
export interface HotFileDocument extends FileRef {
  document: string;
}

/** What `readHotFile` changed; every list holds memory ids. */
export interface HotFileSync {
  /** New bullets ingested (or the memories they merged into), now pinned. */
  added: string[];
  /** Memories whose text the block changed. */
  updated: string[];
  /** Memories pinned again because the block lists them. */
  pinned: string[];
  /** Memories unpinned because the block no longer lists them (not deleted). */
  unpinned: string[];
}

/**
 * Storage injected by the host. The package ships four: `memtide/fs`,
 * `memtide/durable-object`, `memtide/cloudflare-kv` and `memtide/deno-kv`.
 * Every method may return a promise. `list` returns the keys that start with
 * `prefix`, in any order.
 *
 * With `batch`, which must apply every op or none, a write is one call. Its
 * second argument is the write's precondition: a store that can
 * compare-and-set (Deno KV's `atomic().check()`, a SQL transaction) applies
 * the ops only if `expect.key` holds `expect.value` (`null`: absent) and
 * otherwise throws an error with `code: "CONFLICT"`; memtide then reloads and
 * retries, so several writers never lose each other's writes. A batch the
 * store cannot apply in one transaction throws `code: "BATCH_TOO_LARGE"`
 * having written nothing, and memtide journals it instead.
 *
 * Without `batch`, memtide writes a journal first (keys under `journal/`) so a
 * write interrupted at any point is completed or undone when the store is
 * next used or opened; that keeps one writer's writes atomic, it is not a
 * lock between writers. A thrown error whose `name` is `QuotaExceededError`
 * or whose `code` is `QUOTA_EXCEEDED` surfaces as `QUOTA_EXCEEDED`.
 */
export interface StorageAdapter {
  get(key: string): Uint8Array | ArrayBuffer | null | undefined | Promise<Uint8Array | ArrayBuffer | null | undefined>;
  put(key: string, value: Uint8Array): void | Promise<void>;
  delete(key: string): void | Promise<void>;
  list(prefix: string): string[] | Promise<string[]>;
  batch?(
    ops: ({ type: "put"; key: string; value: Uint8Array } | { type: "delete"; key: string })[],
    expect?: { key: string; value: Uint8Array | null },
  ): void | Promise<void>;
}

/** The model files: `model.onnx` (int8 all-MiniLM-L6-v2) and `tokenizer.json`. */
export interface ModelFiles {
  onnx: Uint8Array | ArrayBuffer;
  tokenizer: string | Uint8Array;
}

/** Progress of `Memory.open`. */
export type OpenProgress =
  /** `persisted`: IndexedDB only, whether the browser granted persistent storage. */
  | { stage: "storage"; persisted?: boolean }
  | { stage: "model" }
  /** The model's embedding backfill: `done` of `total` stored memories embedded. */
  | { stage: "embedding"; done: number; total: number }
  | { stage: "embedded"; count: number }
  | { stage: "ready" };

/** Engine settings; every field has a documented default (see the Rust `Config`). */
export interface Config {
  limits?: Partial<{
    maxTextBytes: number;
    maxBatch: number;
    maxTags: number;
    maxTagBytes: number;
    maxSourceBytes: number;
    maxResults: number;
    maxMergeRecords: number;
    /** Largest file content `syncFile` and the memory tool accept, in bytes (default 1 MiB). */
    maxFileBytes: number;
    /** Largest `metadata` of one memory, in bytes of compact JSON (default 16384). */
    maxMetadataBytes: number;
    /** Most history events kept per memory, oldest dropped first (default 32). */
    maxHistoryEvents: number;
    /** Most operations in one extractor answer (default 100). */
    maxOperations: number;
    /** Longest extractor reply `applyOperations` reads, in bytes (default 262144). */
    maxOperationsBytes: number;
  }>;
  bm25?: Partial<{ k1: number; b: number }>;
  nearDuplicate?: Partial<{
    lexicalThreshold: number;
    semanticThreshold: number;
    semanticLexicalThreshold: number;
    /** 0 turns near-duplicate detection off; otherwise only used when an overlap threshold is 0 (how many best lexical matches and nearest neighbours are compared). */
    candidates: number;
    action: "merge" | "report";
  }>;
  rank?: Partial<{
    lexicalWeight: number;
    answerInheritance: number;
    speakerPenalty: number;
    timePenalty: number;
    scopeBoost: number;
    threadGapMinutes: number;
    /** Share of a conversation turn's score (a message, or a memory with a role or speaker) the turns next to it inherit (default 0.5; 0 turns it off). */
    neighbourShare: number;
    /** Weight of the share of the query's terms a memory holds (idf-weighted) beside its normalized BM25 score (default 0.2; 0 turns it off). */
    coverageWeight: number;
    /** `lexicalWeight` for a question that asks to confirm or infer (it opens with an auxiliary verb, "Would …?", "Did …?", or holds "likely" or "might") (default 0.2; set it to `lexicalWeight` to turn it off). */
    hypothesisLexicalWeight: number;
  }>;
  /** How synced files are cut into chunks. */
  chunking?: Partial<{
    /** Most tokens in one chunk (default 256). */
    maxTokens: number;
    /** Lines a chunk repeats from the end of the one before (default 2). */
    overlapLines: number;
  }>;
  /** Credentials and personal data at capture. */
  secrets?: Partial<{
    /** Replace API keys, tokens, private keys and passwords by `[secret]` (default true). */
    redact: boolean;
    /** Mark a memory with an email, phone or card number `pii` (default true). */
    markPii: boolean;
  }>;
  /**
   * How long memories are kept. Expired memories are never retrieved and are
   * erased by `purgeExpired()` and by every write of a store with a policy.
   */
  retention?: {
    /** Days after `createdAt`, store-wide (absent: kept). */
    days?: number;
    /** Per-scope overrides; the narrowest matching rule wins. */
    scopes?: Array<{
      /** `userId` is required. */
      scope: ScopeFilter;
      /** Absent: the store-wide `days`; `null`: kept. */
      days?: number | null;
      /** `false`: ingest stores nothing of this scope (default true). */
      capture?: boolean;
    }>;
  };
}

/**
 * Where one of memtide's WebAssembly modules (the core, the package's
 * `memtide/wasm`, `wasm/memtide_bg.wasm`; or the model's,
 * `memtide/model-wasm`, `wasm/memtide_model_bg.wasm`) comes from: a URL to
 * fetch (a CDN, your own origin under a strict CSP), a `Response`, a
 * compiled `WebAssembly.Module` (Workers, Vercel Edge) or the file's bytes.
 * A promise of one is awaited.
 */
export type WasmSource = string | URL | Request | Response | WebAssembly.Module | BufferSource;

/** Options of {@link init}. */
export interface InitOptions {
  /**
   * Overrides where the WebAssembly module is loaded from; by default each
   * runtime's entry point finds the file beside itself (bundlers copy it).
   */
  wasm?: WasmSource | Promise<WasmSource>;
  /**
   * Overrides where the model's WebAssembly module is loaded from, when a
   * model is first given (`model` on open, `setModel`); apps without a
   * model never load it. By default each runtime's entry point finds the
   * file beside itself.
   */
  modelWasm?: WasmSource | Promise<WasmSource>;
}

export interface OpenOptions extends InitOptions {
  /**
   * Where memories live: `"indexeddb"` (the default where an `indexedDB`
   * global exists: browsers, workers), `"memory"` (the default elsewhere;
   * gone when closed), or a host adapter.
   */
  storage?: "indexeddb" | "memory" | StorageAdapter;
  /** The IndexedDB database name (default `"mnemo"`, the name of the builds before the rename, so their stores stay found). */
  name?: string;
  /** The embedding model; without it retrieval is lexical-only (`stats().retrievalMode`). */
  model?: ModelFiles;
  config?: Config;
  /** The clock, in milliseconds since the Unix epoch (default `Date.now`). */
  now?: () => number;
  onProgress?: (progress: OpenProgress) => void;
  /**
   * Stops the model's embedding backfill: `open` rejects with `ABORTED`,
   * keeping the batches embedded so far (the next open with the model
   * embeds the rest).
   */
  signal?: AbortSignal;
  /**
   * IndexedDB only: called after this store reloaded because another
   * instance on the same database (another tab, a worker) wrote to it.
   */
  onChange?: () => void;
}

/**
 * One operation of an extractor (docs/memory-model.md, "Extraction").
 * `add` stores a memory of the scope (kind `fact` by default; with a key a
 * memory of the scope holds, it supersedes that one); `update` stores a
 * memory that supersedes `id` (kind, tags, key and metadata default to
 * `id`'s); `delete` soft-deletes `id`; `none` does nothing.
 */
export type MemoryOperation =
  | { op: "add"; text: string; kind?: Kind; tags?: string[]; key?: string; metadata?: Metadata }
  | { op: "update"; id: string; text: string; kind?: Kind; tags?: string[]; key?: string; metadata?: Metadata }
  | { op: "delete"; id: string }
  | { op: "none" };

/** What `applyOperations` did. */
export interface OperationsResult {
  /** The memories `add` and `update` stored, in order. */
  added: string[];
  /** The existing memories an `add` was merged into as a duplicate. */
  merged: string[];
  /** Each memory superseded, with the one that took its place. */
  superseded: { id: string; by: string }[];
  /** The memories `delete` soft-deleted. */
  deleted: string[];
}

/** A memory shown to an extractor. */
export interface ShownMemory {
  id: string;
  text: string;
  kind: Kind;
  createdAt: string;
  key?: string;
}

/**
 * Decides what to remember: returns the operations (an array, or
 * `{ operations }`) or a model's reply text holding them.
 */
export type Extractor = (input: {
  messages: ChatMessage[];
  memories: ShownMemory[];
  scope: Scope;
}) => MemoryOperation[] | { operations: MemoryOperation[] } | string | Promise<MemoryOperation[] | { operations: MemoryOperation[] } | string>;

export interface RememberOptions {
  scope: Scope;
  extractor: Extractor;
  /** How many related memories the extractor is shown (default 10; 0 shows none). */
  limit?: number;
  /** Leaves out related memories below this relevance. */
  minRelevance?: number;
  /** Which sessions the related memories come from (default `"all"`). */
  sessions?: "current" | "all";
}

/** What `remember` did, and the memories the extractor was shown. */
export interface RememberResult extends OperationsResult {
  memories: ShownMemory[];
}

/** Stable error codes. */
export type ErrorCode =
  | "INVALID_INPUT"
  | "TOO_LARGE"
  | "NOT_FOUND"
  | "STORAGE"
  | "QUOTA_EXCEEDED"
  | "CORRUPT"
  | "VERSION_MISMATCH"
  | "MODEL"
  | "ABORTED"
  | "CLOSED"
  | "INVALID_OPERATIONS"
  /** `memtide/worker` only: the worker serving the store died (crashed, was terminated). */
  | "WORKER_GONE";

/** Progress of a long call: `done` of `total` units; `done` never decreases and ends at `total`. */
export interface Progress {
  done: number;
  total: number;
}

/**
 * Options of the long calls (`ingest`, `import`, `setModel`): progress
 * reports, and an `AbortSignal` that stops the call between two batches
 * with a `MemtideError` of code `ABORTED`. Between two batches the call
 * yields to the event loop, so the page (or worker) stays responsive and
 * an abort is seen.
 */
export interface ProgressOptions {
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

/** Every failure of a memtide call; the store stays usable after it. */
export class MemtideError extends Error {
  readonly name: "MemtideError";
  readonly code: ErrorCode;
}

/** A memory store. Calls run one at a time, in call order. */
export class Memory {
  private constructor();
  static open(options?: OpenOptions): Promise<Memory>;
  /**
   * Attaches the model later; resolves to how many stored memories it
   * embedded. With `options` the backfill commits 256 memories at a time
   * (progress in memories embedded): an abort keeps the model and the whole
   * batches embedded, and the next `setModel` embeds the rest.
   */
  setModel(model: ModelFiles, options?: ProgressOptions): Promise<number>;
  /**
   * Redacts, deduplicates, embeds, indexes and persists; one result per
   * input. One commit: an abort (progress in inputs) leaves the store as
   * before the call.
   */
  ingest(input: MemoryInput | MemoryInput[], options?: ProgressOptions): Promise<IngestResult[]>;
  /**
   * Stores keyed inputs (each needs `key`): one whose key a memory of exactly
   * its scope holds replaces that memory in the same commit (same id, outcome
   * `"replaced"`, a `replaced` event in its history); others are added.
   */
  upsert(input: MemoryInput | MemoryInput[]): Promise<IngestResult[]>;
  /** The memory holding `key` in exactly `scope`, or `null`. */
  getByKey(options: { scope: Scope; key: string }): Promise<MemoryItem | null>;
  /**
   * What happened to a memory, oldest first: the fields each change touched,
   * never a text (a replaced text is erased). A hard delete erases the memory
   * with its history (`NOT_FOUND` after).
   */
  history(id: string): Promise<HistoryEvent[]>;
  /**
   * Checks an extractor's operations and applies them in one commit
   * (docs/memory-model.md, "Extraction"): `reply` is the model's reply
   * holding them (JSON, alone, in a code fence or in prose); `update` and
   * `delete` may name only `allowed` ids. `INVALID_OPERATIONS` (nothing
   * changed) when it is malformed, too large, or names another memory.
   */
  applyOperations(options: { scope: Scope; allowed?: string[]; reply: string }): Promise<OperationsResult>;
  /**
   * Extraction with the app's own model: retrieves the memories related to
   * `messages` within `scope`, asks `extractor({ messages, memories })` for
   * operations, and applies them with `applyOperations` (one commit; the
   * ids shown are the only ones it may name).
   */
  remember(messages: ChatMessage[], options: RememberOptions): Promise<RememberResult>;
  /**
   * Ingests a conversation in OpenAI, Anthropic or Vercel AI SDK message
   * shapes: one memory per kept part, in order, in one commit; one result
   * per memory made.
   */
  ingestMessages(messages: ChatMessage[], options: MessageOptions): Promise<MessageIngestResult[]>;
  /** Hits best first; marks them used unless `dryRun`. */
  retrieve(query: RetrieveQuery): Promise<RetrieveHit[]>;
  /** A cited block within the token budget, pinned memories first. */
  inject(query: InjectQuery): Promise<Injection>;
  get(id: string): Promise<MemoryItem>;
  list(query?: ListQuery): Promise<ListPage>;
  update(id: string, patch: MemoryPatch): Promise<MemoryItem>;
  /** Soft delete by default (the text stays suppressed); `hard` erases every stored byte of it. */
  delete(id: string, options?: { hard?: boolean }): Promise<void>;
  /**
   * Deletes what the filter selects (`scope.userId` is required), with the
   * summaries that follow their sources (counted in `summaries` when the
   * filter does not select them).
   */
  deleteAll(options: { scope: ScopeFilter; hard?: boolean }): Promise<DeleteAllResult>;
  /**
   * Erases every expired memory (its `retentionDays` or the config's
   * `retention` passed) with every stored byte of its text. A store with a
   * `retention` policy also does this in every write.
   */
  purgeExpired(): Promise<{ purged: number }>;
  /**
   * Summarizes a scope or session with the app's `summarizer` and stores
   * the summary as a `summary` memory linked to its sources (`summaryOf`),
   * replacing the scope's previous one (same id). Resolves to the summary,
   * or `null` when the scope holds nothing to summarize (the summarizer is
   * not called) or the summarizer returned `null`. Summaries are retrieved
   * and injected like any memory.
   */
  summarize(options: SummarizeOptions): Promise<MemoryItem | null>;
  /**
   * What `summarize` hands the summarizer: the memories of the scope (live,
   * approved, not private, expired or `pii` unless `includePii`, not files'
   * chunks or summaries), oldest first, and its current summary.
   */
  summaryContext(query: { scope: Scope; limit?: number; includePii?: boolean }): Promise<SummaryContext>;
  /**
   * Stores a summary written elsewhere: its `sources` must be live,
   * approved memories within `scope` that are not private, expired or
   * summaries (else `INVALID_INPUT` or `NOT_FOUND`, and nothing changes).
   */
  storeSummary(input: { scope: Scope; text: string; sources: string[] }): Promise<MemoryItem>;
  /**
   * The memories and stored files of the scopes `filter` selects (the whole
   * store when absent) as a versioned, checksummed JSON document.
   */
  export(filter?: ScopeFilter): Promise<string>;
  /** Imports an export atomically (a damaged file is `CORRUPT`, a newer one `VERSION_MISMATCH`). */
  /** One commit: an abort (progress in the export's memories) leaves the store as before the call. */
  import(data: string | Uint8Array, options?: ProgressOptions): Promise<ImportResult>;
  stats(filter?: ScopeFilter): Promise<Stats>;
  /**
   * Stores a Markdown file of a scope and indexes it in chunks of whole lines
   * (memories of kind `document` with `sourceLines`), in one commit.
   * Unchanged content writes nothing; changed content replaces the file's
   * old chunks.
   */
  syncFile(file: FileContent): Promise<FileSync>;
  /** Removes a file and its chunks; resolves to whether it existed. */
  removeFile(file: FileRef): Promise<boolean>;
  /** The file at exactly this scope and path, or `null`. */
  file(file: FileRef): Promise<StoredFile | null>;
  /**
   * Runs one call of Claude's memory tool on the scope's `/memories` files.
   * `input` is the `tool_use` block's `input` as the model sent it (a
   * {@link MemoryToolCommand}); what the model got wrong (a bad path, a
   * missing file) is a result with `isError`, never a rejection. Rejects
   * only for the host's problems (bad scope, storage failure).
   */
  memoryTool(scope: Scope, input: unknown): Promise<MemoryToolResult>;
  /**
   * `document` with its auto-managed block (`<!-- mnemo:begin pinned -->` …
   * `<!-- mnemo:end pinned -->`) listing the scope's pinned memories in the
   * order the block already has them (newly pinned ones after, oldest
   * first); the rest of the document is left as it was.
   */
  renderHotFile(scope: Scope, document: string): Promise<string>;
  /**
   * Applies a human's edits of the block of `document` to the scope's pinned
   * memories (edited line: new text; removed line: unpinned; new line: new
   * pinned memory), in one commit.
   */
  readHotFile(file: HotFileDocument): Promise<HotFileSync>;
  /** Reloads if another instance changed the storage; resolves to whether it did. */
  refresh(): Promise<boolean>;
  /** Later calls fail with `CLOSED`. */
  close(): Promise<void>;
}

/**
 * Starts the core WebAssembly module, which the first `Memory.open`
 * otherwise does: once per page or process, shared by every store; later
 * calls and later `wasm` options reuse the running module (the model's
 * module starts when a model is first given, from `modelWasm` if set). Call it early to load the
 * module before the first store is needed, or to say where it comes from.
 * A failed start (say, a URL that answers 404) rejects, and the next call
 * tries again.
 */
export function init(options?: InitOptions): Promise<void>;

/**
 * Bytes of the linear memories of memtide's WebAssembly instances (the
 * core's with memtide's data, and the model's once a model was given; they
 * never shrink, so it is also the peak). Useful against an isolate's memory
 * limit. 0 before the core module has started.
 */
export function wasmMemoryBytes(): number;
