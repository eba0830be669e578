//! The requests and answers of the engine's operations: the settings, what
//! ingest, retrieval, injection and management take and return, with their
//! JSON forms. Plain data, kept apart from the code that acts on it so the
//! API can be read in one place.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::dedupe::NearDuplicateConfig;
use crate::error::{Error, Result};
use crate::index::Bm25Params;
use crate::inject::InjectFormat;
use crate::item::{
    Kind, MemoryItem, Privacy, Role, Scope, ScopeFilter, Source, Status, Timestamp,
};
use crate::metadata::Metadata;
use crate::policy::Admission;
use crate::rank::{RankParams, ScoreBreakdown};
use crate::text::markdown::ChunkParams;
use crate::retention::RetentionConfig;
use crate::text::SecretsConfig;

/// Size limits; inputs beyond them are refused with [`Error::TooLarge`].
/// In JSON every field is optional (absent: the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Longest memory text (before redaction), in bytes.
    pub max_text_bytes: usize,
    /// Most inputs in one ingest call.
    pub max_batch: usize,
    /// Most tags on one memory.
    pub max_tags: usize,
    /// Longest tag, in bytes.
    pub max_tag_bytes: usize,
    /// Longest `source.ref` or `source.uri`, in bytes.
    pub max_source_bytes: usize,
    /// Largest `limit` a query may ask for.
    pub max_results: usize,
    /// Most provenance records kept per memory (oldest dropped first).
    pub max_merge_records: usize,
    /// Largest file content accepted by file sync and the memory tool, in
    /// bytes.
    pub max_file_bytes: usize,
    /// Largest `metadata` of one memory: the bytes of its compact JSON.
    pub max_metadata_bytes: usize,
    /// Most history events kept per memory (oldest dropped first).
    pub max_history_events: usize,
    /// Most operations in one extractor output (`applyOperations`).
    pub max_operations: usize,
    /// Longest extractor output `applyOperations` parses, in bytes.
    pub max_operations_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_text_bytes: 64 * 1024,
            max_batch: 10_000,
            max_tags: 32,
            max_tag_bytes: 64,
            max_source_bytes: 2048,
            max_results: 1000,
            max_merge_records: 64,
            max_file_bytes: 1024 * 1024,
            max_metadata_bytes: 16 * 1024,
            max_history_events: 32,
            max_operations: 100,
            max_operations_bytes: 256 * 1024,
        }
    }
}

/// Engine settings. Every field has a documented default; opening a store
/// refuses settings [`Config::validate`] refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// Size limits.
    pub limits: Limits,
    /// BM25 parameters (k1 = 1.2, b = 0.75).
    pub bm25: Bm25Params,
    /// Near-duplicate detection.
    pub near_duplicate: NearDuplicateConfig,
    /// Ranking parameters, see [`crate::rank`].
    pub rank: RankParams,
    /// How synced files are cut into chunks.
    pub chunking: ChunkParams,
    /// Credentials replaced by `[secret]` and texts with personal data
    /// marked `pii` at capture (both on by default).
    pub secrets: SecretsConfig,
    /// How long memories are kept, store-wide and per scope, and the
    /// scopes that capture nothing ([`crate::retention`]).
    pub retention: RetentionConfig,
}

impl Config {
    /// Checks the numeric settings: every weight and threshold is finite
    /// (JSON cannot carry `NaN` or infinities, but `1e39` becomes an
    /// infinite `f32`, and Rust callers can pass anything), BM25's `k1`, the
    /// answer inheritance, the scope boost and the coverage weight are not
    /// negative, and BM25's
    /// `b`, the lexical weights and the speaker and time penalties lie in
    /// `0..=1`.
    /// Non-finite settings would make every score `NaN`. Fails with
    /// [`Error::InvalidInput`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        // (setting, value, least, greatest)
        let checks = [
            ("bm25.k1", self.bm25.k1, Some(0.0), None),
            ("bm25.b", self.bm25.b, Some(0.0), Some(1.0)),
            (
                "rank.lexicalWeight",
                self.rank.lexical_weight,
                Some(0.0),
                Some(1.0),
            ),
            (
                "rank.answerInheritance",
                self.rank.answer_inheritance,
                Some(0.0),
                None,
            ),
            (
                "rank.speakerPenalty",
                self.rank.speaker_penalty,
                Some(0.0),
                Some(1.0),
            ),
            (
                "rank.timePenalty",
                self.rank.time_penalty,
                Some(0.0),
                Some(1.0),
            ),
            ("rank.scopeBoost", self.rank.scope_boost, Some(0.0), None),
            (
                "rank.neighbourShare",
                self.rank.neighbour_share,
                Some(0.0),
                Some(1.0),
            ),
            (
                "rank.coverageWeight",
                self.rank.coverage_weight,
                Some(0.0),
                None,
            ),
            (
                "rank.hypothesisLexicalWeight",
                self.rank.hypothesis_lexical_weight,
                Some(0.0),
                Some(1.0),
            ),
            (
                "nearDuplicate.lexicalThreshold",
                self.near_duplicate.lexical_threshold,
                None,
                None,
            ),
            (
                "nearDuplicate.semanticThreshold",
                self.near_duplicate.semantic_threshold,
                None,
                None,
            ),
            (
                "nearDuplicate.semanticLexicalThreshold",
                self.near_duplicate.semantic_lexical_threshold,
                None,
                None,
            ),
        ];
        self.retention.validate().map_err(|e| e.at("config"))?;
        for (name, value, least, greatest) in checks {
            let refuse = |rule: String| Err(Error::invalid(format!("config: {name} {rule}")));
            if !value.is_finite() {
                return refuse(format!("must be a finite number, not {value}"));
            }
            match (least, greatest) {
                (Some(l), Some(g)) if !(l..=g).contains(&value) => {
                    return refuse(format!("is {value}; it must lie in {l}..={g}"));
                }
                (Some(l), None) if value < l => {
                    return refuse(format!("is {value}; it must be at least {l}"));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// One memory to ingest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryInput {
    /// Raw text; `<private>` spans are removed and `<no-memory>` skips it.
    pub text: String,
    /// Where it belongs.
    pub scope: Scope,
    /// Kind (default `episodic`).
    pub kind: Option<Kind>,
    /// Review status (default `approved`).
    pub status: Option<Status>,
    /// Curated hot memory (default false).
    pub pinned: Option<bool>,
    /// Provenance (default `{kind: "manual", ref: ""}`).
    pub source: Option<Source>,
    /// Labels.
    pub tags: Option<Vec<String>>,
    /// Privacy markers.
    pub privacy: Option<Privacy>,
    /// When it was said (default: now).
    pub created_at: Option<Timestamp>,
    /// The caller's key, unique within the scope: `ingest` refuses a key
    /// in use, `upsert` replaces the memory holding it.
    #[serde(default)]
    pub key: Option<String>,
    /// Free-form JSON object (at most `maxMetadataBytes`).
    pub metadata: Option<Metadata>,
    /// Who said it, for a message of a conversation.
    #[serde(default)]
    pub role: Option<Role>,
    /// The speaker's name (an id-like string: not empty, at most 256
    /// bytes, no control characters).
    #[serde(default)]
    pub speaker: Option<String>,
    /// For `upsert`: when a memory of the scope holds the input's key, keep
    /// it as a superseded memory (out of retrieval, readable, linked to the
    /// new one) instead of replacing it in place (`docs/memory-model.md`,
    /// "Supersession"). Default false.
    #[serde(default)]
    pub supersede: Option<bool>,
}

impl MemoryInput {
    /// An input with every optional field at its default.
    pub fn new(text: impl Into<String>, scope: Scope) -> Self {
        MemoryInput {
            text: text.into(),
            scope,
            kind: None,
            status: None,
            pinned: None,
            source: None,
            tags: None,
            privacy: None,
            created_at: None,
            key: None,
            metadata: None,
            role: None,
            speaker: None,
            supersede: None,
        }
    }
}

/// What ingest did with one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IngestOutcome {
    /// Stored as a new memory.
    Added,
    /// Merged into an existing memory (`id` names it).
    Merged,
    /// Replaced the memory holding the same key in the same scope (`id`
    /// names it; `upsert` only).
    Replaced,
    /// Stored as a new memory that supersedes the one holding the same key
    /// in the same scope (`upsert` with `supersede`; `supersedes` names
    /// the old one).
    Superseded,
    /// Not stored (`reason` says why).
    Skipped,
}

/// Why an input was merged, skipped, or flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IngestReason {
    /// Same normalized text already stored in this scope.
    Duplicate,
    /// Lexically near an existing memory of this scope.
    NearDuplicate,
    /// The text asked not to be remembered (`<no-memory>`).
    NoMemory,
    /// Nothing was left after removing `<private>` spans.
    Private,
    /// The same text was deleted by the user earlier; it stays deleted.
    Suppressed,
    /// The scope's retention rule says `capture: false`.
    NotCaptured,
}

/// The result of ingesting one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestResult {
    /// The memory added or merged into (absent when nothing was stored).
    pub id: Option<String>,
    /// What happened.
    pub outcome: IngestOutcome,
    /// Why, for merges, skips and near-duplicate reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<IngestReason>,
    /// For a reported near-duplicate: the similar memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similar_to: Option<String>,
}

/// Which sessions of its workspace a query reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Sessions {
    /// The memories without a session and those of the query's own session
    /// (a query without a session sees only the memories without one).
    Current,
    /// Every session of the query's workspace (and of its project and card,
    /// when it names them), the query's own session ranked first: what a
    /// chat client expects when a new chat should remember the earlier
    /// ones. The default.
    #[default]
    All,
}

/// How the scope of a memory orders the hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScopeOrder {
    /// Relevance first; a narrower scope gets a small boost and wins ties
    /// (`rank.scopeBoost`). The default.
    #[default]
    Blend,
    /// The narrowest scope first (card, then project, then the query's
    /// session, then the workspace), by relevance within each: the block
    /// fills from the narrowest scope.
    Strict,
}

/// A retrieval query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetrieveQuery {
    /// What to look for (usually the user's next message).
    pub text: String,
    /// The scope the query is made in; only memories visible from it return.
    pub scope: Scope,
    /// Most hits to return (default 10).
    pub limit: Option<usize>,
    /// Only these kinds.
    pub kinds: Option<Vec<Kind>>,
    /// Only memories said by one of these roles (a memory without a role
    /// matches none).
    #[serde(default)]
    pub roles: Option<Vec<Role>>,
    /// Only memories with at least one of these tags.
    pub tags: Option<Vec<String>>,
    /// Only memories created at or after this time.
    pub since: Option<Timestamp>,
    /// Only memories created before this time.
    pub until: Option<Timestamp>,
    /// Only memories whose metadata holds each of these keys with an equal
    /// value.
    pub metadata: Option<Metadata>,
    /// Do not mark returned memories as used.
    #[serde(default)]
    pub dry_run: bool,
    /// Attach a score breakdown to each hit.
    #[serde(default)]
    pub explain: bool,
    /// Also return memories pending review.
    #[serde(default)]
    pub include_pending: bool,
    /// Also return memories marked as containing PII.
    #[serde(default)]
    pub include_pii: bool,
    /// Leave out the hits whose calibrated relevance
    /// ([`RetrieveHit::relevance`]) is below this, in `0..=1`. Default: 0
    /// for retrieval (every hit), [`InjectQuery::DEFAULT_MIN_RELEVANCE`] for
    /// injection, so a question about nothing the store holds injects
    /// nothing.
    pub min_relevance: Option<f32>,
    /// Which sessions the query reaches (default [`Sessions::All`]).
    #[serde(default)]
    pub sessions: Sessions,
    /// How scopes order the hits (default [`ScopeOrder::Blend`]).
    #[serde(default)]
    pub scope_order: ScopeOrder,
}

impl RetrieveQuery {
    /// A query with default options.
    pub fn new(text: impl Into<String>, scope: Scope) -> Self {
        RetrieveQuery {
            text: text.into(),
            scope,
            limit: None,
            kinds: None,
            roles: None,
            tags: None,
            since: None,
            until: None,
            metadata: None,
            dry_run: false,
            explain: false,
            include_pending: false,
            include_pii: false,
            min_relevance: None,
            sessions: Sessions::default(),
            scope_order: ScopeOrder::default(),
        }
    }
}

/// One retrieved memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrieveHit {
    /// The memory (after usage marking).
    pub item: MemoryItem,
    /// What to cite it by: `path#Lstart-Lend` for a chunk of a file,
    /// `memory:<id>` otherwise ([`MemoryItem::citation`]).
    pub citation: String,
    /// Its final score (higher is better); it orders the hits of one query
    /// and is not comparable across queries.
    pub score: f32,
    /// How relevant the memory is to the query, in `0..=1`, from absolute
    /// evidence (the idf-weighted share of the query's terms it holds, the
    /// raw cosine with a model), so comparable across queries; see
    /// [`crate::rank`], "Relevance".
    pub relevance: f32,
    /// Score breakdown, when the query asked to explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<ScoreBreakdown>,
    /// How the memory met the policy, when the query asked to explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Admission>,
}

/// An injection request: a retrieval query plus a token budget, a format
/// and the block's instruction line.
///
/// In JSON the retrieval fields sit beside `budgetTokens`, `format` and
/// `preamble`.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectQuery {
    /// The retrieval part; `limit` caps the retrieved (non-pinned) candidates
    /// (default 20).
    pub query: RetrieveQuery,
    /// Most tokens the block may take.
    pub budget_tokens: usize,
    /// Markdown (default) or XML.
    pub format: InjectFormat,
    /// The block's instruction line (default
    /// [`crate::inject::DEFAULT_PREAMBLE`]; "" for none): one line without
    /// `<`, `>`, `[` or `]` ([`crate::inject::check_preamble`]).
    pub preamble: Option<String>,
    /// The most of the budget pinned memories may take, in `0..=1`
    /// (default [`InjectQuery::DEFAULT_PINNED_SHARE`]); the rest is kept for
    /// retrieved memories, and what the pinned ones leave goes to them too.
    pub pinned_share: Option<f32>,
    /// `false` injects the pinned (hot) memories only, without retrieval
    /// (default `true`).
    pub archive: bool,
}

impl InjectQuery {
    /// The relevance gate injection applies when the query sets no
    /// `minRelevance`: chosen on the LoCoMo development set with
    /// leave-one-conversation-out validation (`docs/design.md`, "Ranking"),
    /// for lexical and hybrid retrieval alike.
    pub const DEFAULT_MIN_RELEVANCE: f32 = 0.3;

    /// The share of the budget pinned memories may take when the query sets
    /// no `pinnedShare`: half, so hot memory cannot crowd out what the
    /// question needs from the archive.
    pub const DEFAULT_PINNED_SHARE: f32 = 0.5;

    /// A Markdown injection request.
    pub fn new(query: RetrieveQuery, budget_tokens: usize) -> Self {
        InjectQuery {
            query,
            budget_tokens,
            format: InjectFormat::Markdown,
            preamble: None,
            pinned_share: None,
            archive: true,
        }
    }
}

impl<'de> Deserialize<'de> for InjectQuery {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let budget = map
            .remove("budgetTokens")
            .ok_or_else(|| D::Error::missing_field("budgetTokens"))?;
        let budget_tokens = budget
            .as_u64()
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| D::Error::custom("budgetTokens must be a non-negative integer"))?;
        let format = match map.remove("format") {
            None | Some(serde_json::Value::Null) => InjectFormat::default(),
            Some(v) => serde_json::from_value(v).map_err(D::Error::custom)?,
        };
        let preamble = match map.remove("preamble") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(p)) => {
                crate::inject::check_preamble(&p).map_err(D::Error::custom)?;
                Some(p)
            }
            Some(_) => return Err(D::Error::custom("preamble must be a string")),
        };
        let pinned_share = match map.remove("pinnedShare") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|share| (0.0..=1.0).contains(share))
                    .ok_or_else(|| D::Error::custom("pinnedShare must be a number in 0..=1"))?
                    as f32,
            ),
        };
        let archive = match map.remove("archive") {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Bool(archive)) => archive,
            Some(_) => return Err(D::Error::custom("archive must be a boolean")),
        };
        let query =
            serde_json::from_value(serde_json::Value::Object(map)).map_err(D::Error::custom)?;
        Ok(InjectQuery {
            query,
            budget_tokens,
            format,
            preamble,
            pinned_share,
            archive,
        })
    }
}

/// Changes to one memory; absent fields stay as they are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryPatch {
    /// New text (redacted and normalized like ingested text; re-indexed).
    pub text: Option<String>,
    /// New kind.
    pub kind: Option<Kind>,
    /// New review status (approve / reject).
    pub status: Option<Status>,
    /// Pin or unpin.
    pub pinned: Option<bool>,
    /// Replace the tags.
    pub tags: Option<Vec<String>>,
    /// Replace the privacy markers.
    pub privacy: Option<Privacy>,
    /// Replace the provenance.
    pub source: Option<Source>,
    /// Replace the metadata (`{}` removes it).
    pub metadata: Option<Metadata>,
    /// `true` soft-deletes, `false` restores a soft-deleted memory.
    pub deleted: Option<bool>,
    /// Who said it (`user`, `assistant`, `system`).
    pub role: Option<Role>,
    /// The speaker's name (`""` removes it).
    pub speaker: Option<String>,
}

/// A listing request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ListQuery {
    /// Scope filter (empty: everything).
    pub scope: ScopeFilter,
    /// Only these kinds.
    pub kinds: Option<Vec<Kind>>,
    /// Only these statuses.
    pub statuses: Option<Vec<Status>>,
    /// Only memories said by one of these roles.
    pub roles: Option<Vec<Role>>,
    /// Only memories with at least one of these tags.
    pub tags: Option<Vec<String>>,
    /// Only pinned (true) or unpinned (false) memories.
    pub pinned: Option<bool>,
    /// Include soft-deleted memories.
    pub include_deleted: bool,
    /// Only memories created at or after this time.
    pub since: Option<Timestamp>,
    /// Only memories created before this time.
    pub until: Option<Timestamp>,
    /// Page size (default 50).
    pub limit: Option<usize>,
    /// Continue after this cursor (from a previous page's `nextCursor`).
    pub cursor: Option<String>,
    /// Include superseded memories (those a newer one took the place of).
    pub include_superseded: bool,
}

/// One page of a listing, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPage {
    /// The memories of this page.
    pub items: Vec<MemoryItem>,
    /// Cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// What `deleteAll` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteAllResult {
    /// Memories deleted by this call: those the filter matched and the
    /// summaries deleted with their sources.
    pub deleted: usize,
    /// Whether they were erased (hard) or suppressed (soft).
    pub hard: bool,
    /// Of `deleted`, the summaries the filter did not match, deleted
    /// because one of their sources was (a workspace's summary of a
    /// session's memories, for a filter naming the session).
    pub summaries: usize,
}

/// What `purgeExpired` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeResult {
    /// Expired memories erased by this call.
    pub purged: usize,
}

/// Counts describing a store (or the part of it a scope filter selects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// All memories, including soft-deleted ones.
    pub items: usize,
    /// Memories neither deleted, superseded nor rejected.
    pub active: usize,
    /// Soft-deleted memories.
    pub deleted: usize,
    /// Memories pending review.
    pub pending: usize,
    /// Rejected memories.
    pub rejected: usize,
    /// Pinned memories.
    pub pinned: usize,
    /// Memories per kind.
    pub by_kind: BTreeMap<String, usize>,
    /// Distinct user/workspace pairs.
    pub tenants: usize,
    /// Distinct terms in the lexical indexes of those tenants.
    pub indexed_terms: usize,
    /// Bytes of the stored item and embedding records.
    pub stored_bytes: usize,
    /// Memories with an embedding.
    pub embedded: usize,
    /// `"hybrid"` with an embedding model attached, `"lexical"` without.
    pub retrieval_mode: String,
    /// The model of the stored embeddings, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `"estimate"` or `"tokenizer"`: how injection counts tokens.
    pub token_counting: String,
    /// Record format version.
    pub format_version: u16,
}
