//! The engine: memtide's state machine, without I/O.
//!
//! [`Engine`] holds every item and the indexes over them. Each write operation
//! takes a [`Txn`], mutates the in-memory state and records how to undo it;
//! the caller then asks [`Engine::batch_for`] for the storage [`Batch`],
//! commits it, and on failure calls [`Engine::rollback`] so memory and storage
//! never disagree. [`crate::Memory`] does exactly this for a synchronous
//! [`crate::storage::Storage`]; the JavaScript bindings do it around an async
//! commit.

mod export;
mod files;

pub use crate::keys::{ITEM_PREFIX, MANIFEST_KEY, VECTOR_PREFIX};
pub use export::{ImportResult, EXPORT_FORMAT, EXPORT_VERSION};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use crate::codec::{self, Manifest, SetDigest, FORMAT_VERSION};
use crate::dedupe::{self, Duplicate, NearDuplicateAction, NearDuplicateConfig};
use crate::embed::Embedder;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::files::StoredFile;
use crate::index::{Bm25Index, Bm25Params, Int8Vector, VectorIndex, VectorParams};
use crate::inject::{self, InjectFormat, Injection, TokenCounter};
use crate::item::{
    validate_id, validate_item_id, Kind, MemoryItem, Privacy, Scope, ScopeFilter, Source, Status,
    Tenant, Timestamp,
};
use crate::policy::{self, Admission, Exclusion, Visibility};
use crate::rank::{self, RankKey, RankParams, ScoreBreakdown};
use crate::storage::Batch;
use crate::text::markdown::ChunkParams;
use crate::text::{self, Capture};
use files::FileKey;

/// Fewest semantic neighbours a hybrid query considers.
const DENSE_CANDIDATES: usize = 100;
/// Fewest best lexical matches a query considers (more lose to the fused
/// ranking's first places only when both signals are weak).
const LEXICAL_CANDIDATES: usize = 200;
/// Texts embedded per model call.
const EMBED_CHUNK: usize = 64;

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
        }
    }
}

/// Engine settings. Every field has a documented default; opening a store
/// refuses settings [`Config::validate`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
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
}

impl Config {
    /// Checks the numeric settings: every weight and threshold is finite
    /// (JSON cannot carry `NaN` or infinities, but `1e39` becomes an
    /// infinite `f32`, and Rust callers can pass anything), BM25's `k1`, the
    /// answer inheritance and the scope boost are not negative, and BM25's
    /// `b`, the lexical weight and the speaker penalty lie in `0..=1`.
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
            ("rank.scopeBoost", self.rank.scope_boost, Some(0.0), None),
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
    /// Only memories with at least one of these tags.
    pub tags: Option<Vec<String>>,
    /// Only memories created at or after this time.
    pub since: Option<Timestamp>,
    /// Only memories created before this time.
    pub until: Option<Timestamp>,
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
}

impl RetrieveQuery {
    /// A query with default options.
    pub fn new(text: impl Into<String>, scope: Scope) -> Self {
        RetrieveQuery {
            text: text.into(),
            scope,
            limit: None,
            kinds: None,
            tags: None,
            since: None,
            until: None,
            dry_run: false,
            explain: false,
            include_pending: false,
            include_pii: false,
        }
    }

    fn visibility(&self, now: Timestamp) -> Visibility<'_> {
        Visibility {
            scope: &self.scope,
            now,
            include_pending: self.include_pending,
            include_pii: self.include_pii,
            kinds: self.kinds.as_deref(),
            tags: self.tags.as_deref(),
            since: self.since,
            until: self.until,
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
    /// Its final score (higher is better).
    pub score: f32,
    /// Score breakdown, when the query asked to explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<ScoreBreakdown>,
    /// How the memory met the policy, when the query asked to explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Admission>,
}

/// An injection request: a retrieval query plus a token budget and format.
///
/// In JSON the retrieval fields sit beside `budgetTokens` and `format`.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectQuery {
    /// The retrieval part; `limit` caps the retrieved (non-pinned) candidates
    /// (default 20).
    pub query: RetrieveQuery,
    /// Most tokens the block may take.
    pub budget_tokens: usize,
    /// Markdown (default) or XML.
    pub format: InjectFormat,
}

impl InjectQuery {
    /// A Markdown injection request.
    pub fn new(query: RetrieveQuery, budget_tokens: usize) -> Self {
        InjectQuery {
            query,
            budget_tokens,
            format: InjectFormat::Markdown,
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
        let query =
            serde_json::from_value(serde_json::Value::Object(map)).map_err(D::Error::custom)?;
        Ok(InjectQuery {
            query,
            budget_tokens,
            format,
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
    /// `true` soft-deletes, `false` restores a soft-deleted memory.
    pub deleted: Option<bool>,
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
    /// Memories deleted by this call.
    pub deleted: usize,
    /// Whether they were erased (hard) or suppressed (soft).
    pub hard: bool,
}

/// Counts describing a store (or the part of it a scope filter selects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// All memories, including soft-deleted ones.
    pub items: usize,
    /// Memories neither deleted nor rejected.
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

/// Undo log of one write operation. Pass the same `Txn` to
/// [`Engine::batch_for`] after the operation and to [`Engine::rollback`] if
/// the commit fails.
#[derive(Debug, Default)]
pub struct Txn {
    undo: Vec<Undo>,
}

/// One recorded change and what it replaced.
enum Undo {
    Item(String, Option<Box<MemoryItem>>),
    Vector(String, Option<StoredVector>),
    File(FileKey, Option<Box<StoredFile>>),
    Model(Option<String>, Option<Arc<dyn Embedder>>),
}

impl std::fmt::Debug for Undo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undo::Item(id, _) => write!(f, "Item({id})"),
            Undo::Vector(id, _) => write!(f, "Vector({id})"),
            Undo::File((_, path), _) => write!(f, "File({path})"),
            Undo::Model(model, _) => write!(f, "Model({model:?})"),
        }
    }
}

struct Entry {
    item: MemoryItem,
    doc: u32,
}

/// A memory's own embedding as the engine holds it: int8, as stored.
#[derive(Debug, Clone)]
struct StoredVector {
    vector: Int8Vector,
    /// Set when the vector was loaded from an `f32` record (written before
    /// records held int8 codes): re-encoding gives other bytes, so the
    /// digest and the stats need what the stored record was.
    legacy_record: Option<Box<LegacyRecord>>,
}

/// The stored `f32` record a [`StoredVector`] was loaded from.
#[derive(Debug, Clone)]
struct LegacyRecord {
    hash: [u8; 32],
    len: usize,
}

impl StoredVector {
    /// A new embedding, quantized.
    fn quantize(vector: &[f32]) -> Self {
        StoredVector {
            vector: Int8Vector::quantize(vector),
            legacy_record: None,
        }
    }

    /// A vector decoded from its stored record `bytes`.
    fn loaded(decoded: codec::DecodedVector, bytes: &[u8]) -> Self {
        StoredVector {
            vector: decoded.vector,
            legacy_record: decoded.legacy.then(|| {
                Box::new(LegacyRecord {
                    hash: SetDigest::hash(bytes),
                    len: bytes.len(),
                })
            }),
        }
    }

    /// The sha256 of the stored record (see [`SetDigest`]).
    fn record_hash(&self) -> [u8; 32] {
        match &self.legacy_record {
            Some(record) => record.hash,
            None => SetDigest::hash(&codec::encode_vector(&self.vector)),
        }
    }

    /// Bytes of the stored record.
    fn record_len(&self) -> usize {
        match &self.legacy_record {
            Some(record) => record.len,
            None => codec::encode_vector(&self.vector).len(),
        }
    }
}

/// The memory state machine. See the module documentation.
pub struct Engine {
    config: Config,
    /// Boxed: the table stays small when it grows (an `Entry` is some 400
    /// bytes, and a table holds up to twice the entries it has while it
    /// doubles).
    entries: HashMap<String, Box<Entry>>,
    doc_owner: Vec<Option<String>>,
    free_docs: Vec<u32>,
    /// Each scope of a memory in `by_hash` or `by_scope_time`, once: their
    /// keys share it.
    scopes: HashSet<Arc<Scope>>,
    by_hash: HashMap<(Arc<Scope>, String), String>,
    by_created: BTreeSet<(i64, String)>,
    by_scope_time: BTreeSet<(Arc<Scope>, i64, String)>,
    followers: HashMap<String, Vec<String>>,
    pinned: BTreeSet<String>,
    lexical: HashMap<Tenant, Bm25Index>,
    /// Own embedding of each memory that has one (key `vec/<id>`).
    embeddings: HashMap<String, StoredVector>,
    /// Per tenant, the context vectors of its live memories (see
    /// [`crate::rank`]): the embedding plus the one of the memory it follows.
    vectors: HashMap<Tenant, VectorIndex>,
    /// Docs present in `vectors`, with their tenant.
    vector_docs: HashMap<u32, Tenant>,
    /// The model the stored embeddings come from.
    model_id: Option<String>,
    embedder: Option<Arc<dyn Embedder>>,
    /// Every stored file (key `file/…`).
    files: BTreeMap<FileKey, StoredFile>,
    /// The chunks of each file (memories with `sourceLines`), by file.
    file_chunks: HashMap<FileKey, BTreeSet<String>>,
    digest: SetDigest,
}

impl Engine {
    /// An empty engine.
    pub fn new(config: Config) -> Self {
        Engine {
            config,
            entries: HashMap::new(),
            doc_owner: Vec::new(),
            free_docs: Vec::new(),
            scopes: HashSet::new(),
            by_hash: HashMap::new(),
            by_created: BTreeSet::new(),
            by_scope_time: BTreeSet::new(),
            followers: HashMap::new(),
            pinned: BTreeSet::new(),
            lexical: HashMap::new(),
            embeddings: HashMap::new(),
            vectors: HashMap::new(),
            vector_docs: HashMap::new(),
            model_id: None,
            embedder: None,
            files: BTreeMap::new(),
            file_chunks: HashMap::new(),
            digest: SetDigest::default(),
        }
    }

    /// Rebuilds an engine from stored records (`item/…`, `vec/…` and
    /// `file/…` pairs and the manifest) and verifies they agree with the
    /// manifest.
    pub fn load(
        config: Config,
        item_records: Vec<(String, Vec<u8>)>,
        vector_records: Vec<(String, Vec<u8>)>,
        file_records: Vec<(String, Vec<u8>)>,
        manifest: Option<&[u8]>,
    ) -> Result<Engine> {
        config.validate()?;
        let mut engine = Engine::new(config);
        let mut stored = SetDigest::default();
        let count = item_records.len();
        let vector_count = vector_records.len();
        let file_count = file_records.len();
        for (key, bytes) in item_records {
            let item = codec::decode_item(&bytes).map_err(|e| match Error::from(e) {
                Error::Corrupt(m) => Error::Corrupt(format!("record `{key}`: {m}")),
                other => other,
            })?;
            if key.strip_prefix(ITEM_PREFIX) != Some(item.id.as_str()) {
                return Err(Error::Corrupt(format!(
                    "record `{key}` holds memory `{}`",
                    item.id
                )));
            }
            stored.toggle(&bytes);
            engine.set(&item.id.clone(), Some(item));
        }
        for (key, bytes) in vector_records {
            let decoded = codec::decode_vector(&bytes).map_err(|e| match Error::from(e) {
                Error::Corrupt(m) => Error::Corrupt(format!("record `{key}`: {m}")),
                other => other,
            })?;
            let id = key.strip_prefix(VECTOR_PREFIX).unwrap_or_default();
            if !engine.entries.contains_key(id) {
                return Err(Error::Corrupt(format!("record `{key}` has no memory")));
            }
            stored.toggle(&bytes);
            engine.set_vector(id, Some(StoredVector::loaded(decoded, &bytes)));
        }
        for (key, bytes) in file_records {
            let file = codec::decode_file(&bytes).map_err(|e| match Error::from(e) {
                Error::Corrupt(m) => Error::Corrupt(format!("record `{key}`: {m}")),
                other => other,
            })?;
            if file.storage_key() != key {
                return Err(Error::Corrupt(format!(
                    "record `{key}` holds file `{}` of another key",
                    file.path
                )));
            }
            stored.toggle(&bytes);
            engine.set_file(&(file.scope.clone(), file.path.clone()), Some(file));
        }
        match manifest.map(codec::decode_manifest).transpose()? {
            None if count == 0 && vector_count == 0 && file_count == 0 => {}
            None => {
                return Err(Error::Corrupt(format!(
                    "{count} memory records but no manifest"
                )))
            }
            Some(m) => {
                engine.model_id = m.model_id.clone();
                if m.format_version > FORMAT_VERSION {
                    return Err(Error::VersionMismatch {
                        found: u32::from(m.format_version),
                        supported: u32::from(FORMAT_VERSION),
                    });
                }
                if m.item_count != count as u64
                    || m.vector_count != vector_count as u64
                    || m.file_count != file_count as u64
                    || m.items_digest != stored.to_hex()
                {
                    return Err(Error::Corrupt(format!(
                        "the manifest lists {} memories with digest {}, storage holds {count} with digest {}: a write was torn",
                        m.item_count,
                        m.items_digest,
                        stored.to_hex()
                    )));
                }
            }
        }
        Ok(engine)
    }

    /// The engine's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Number of memories (including soft-deleted ones).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the store holds no memory at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every memory, in no particular order.
    pub fn items(&self) -> impl Iterator<Item = &MemoryItem> {
        self.entries.values().map(|e| &e.item)
    }

    /// True when the lexical index of `tenant` holds `term` (an analysed
    /// term, see [`text::terms`]).
    pub fn lexical_index_has_term(&self, tenant: &Tenant, term: &str) -> bool {
        self.lexical.get(tenant).is_some_and(|ix| ix.has_term(term))
    }

    // ----- the one mutation primitive -------------------------------------

    /// Replaces (or removes, with `None`) the item stored under `id`, keeping
    /// every index and the digest in step. Returns the previous item.
    fn set(&mut self, id: &str, new: Option<MemoryItem>) -> Option<MemoryItem> {
        let old = self.entries.remove(id);
        let mut doc = None;
        if let Some(Entry { item, doc: d }) = old.as_deref() {
            self.digest.toggle(&codec::encode_item(item));
            let key = (self.scope_key(&item.scope), item.content_hash.clone());
            if self.by_hash.get(&key).map(String::as_str) == Some(id) {
                self.by_hash.remove(&key);
            }
            self.by_created.remove(&(item.created_at.0, id.to_string()));
            let (scope, ..) = key;
            self.by_scope_time
                .remove(&(scope.clone(), item.created_at.0, id.to_string()));
            self.release_scope(scope);
            if let Some(prev) = &item.follows {
                if let Some(list) = self.followers.get_mut(prev) {
                    list.retain(|f| f != id);
                    if list.is_empty() {
                        self.followers.remove(prev);
                    }
                }
            }
            self.pinned.remove(id);
            self.index_file_chunk(item, false);
            let same_context = new.as_ref().is_some_and(|n| {
                n.scope.tenant() == item.scope.tenant()
                    && n.is_deleted() == item.is_deleted()
                    && n.follows == item.follows
            });
            if !same_context {
                self.unindex_vector(*d);
            }
            let unchanged_text = new.as_ref().is_some_and(|n| {
                n.text == item.text
                    && n.scope.tenant() == item.scope.tenant()
                    && n.is_deleted() == item.is_deleted()
            });
            if !item.is_deleted() && !unchanged_text {
                let tenant = item.scope.tenant();
                if let Some(ix) = self.lexical.get_mut(&tenant) {
                    ix.remove(*d);
                    if ix.doc_count() == 0 {
                        self.lexical.remove(&tenant);
                    }
                }
            }
            doc = Some((*d, unchanged_text));
        }
        match new {
            Some(item) => {
                self.digest.toggle(&codec::encode_item(&item));
                let (d, already_indexed) = match doc {
                    Some(state) => state,
                    None => (self.allocate_doc(id), false),
                };
                if !item.is_deleted() && !already_indexed {
                    let terms = text::terms(&item.text);
                    self.lexical
                        .entry(item.scope.tenant())
                        .or_insert_with(|| Bm25Index::new(self.config.bm25))
                        .insert(d, &terms);
                }
                // Chunks belong to their file: they take no part in
                // duplicate detection or conversation threads.
                if item.is_file_chunk() {
                    self.index_file_chunk(&item, true);
                } else {
                    let scope = self.intern_scope(&item.scope);
                    self.by_hash
                        .insert((scope.clone(), item.content_hash.clone()), id.to_string());
                    self.by_scope_time
                        .insert((scope, item.created_at.0, id.to_string()));
                }
                self.by_created.insert((item.created_at.0, id.to_string()));
                if let Some(prev) = &item.follows {
                    self.followers
                        .entry(prev.clone())
                        .or_default()
                        .push(id.to_string());
                }
                if item.pinned {
                    self.pinned.insert(id.to_string());
                }
                self.entries
                    .insert(id.to_string(), Box::new(Entry { item, doc: d }));
                self.index_vector(id);
            }
            None => {
                if let Some((d, _)) = doc {
                    self.doc_owner[d as usize] = None;
                    self.free_docs.push(d);
                }
            }
        }
        old.map(|e| e.item)
    }

    /// The shared copy of `scope`, made if there is none.
    fn intern_scope(&mut self, scope: &Scope) -> Arc<Scope> {
        if let Some(shared) = self.scopes.get(scope) {
            return shared.clone();
        }
        let shared = Arc::new(scope.clone());
        self.scopes.insert(shared.clone());
        shared
    }

    /// `scope` as a key of `by_hash` or `by_scope_time`: the shared copy, or
    /// a new one when no key holds it (so the lookup finds nothing).
    fn scope_key(&self, scope: &Scope) -> Arc<Scope> {
        self.scopes
            .get(scope)
            .cloned()
            .unwrap_or_else(|| Arc::new(scope.clone()))
    }

    /// Drops the shared copy of a scope once only `scopes` holds it (`key`
    /// being the caller's handle).
    fn release_scope(&mut self, key: Arc<Scope>) {
        if Arc::strong_count(&key) == 2 {
            self.scopes.remove(&*key);
        }
    }

    fn allocate_doc(&mut self, id: &str) -> u32 {
        match self.free_docs.pop() {
            Some(d) => {
                self.doc_owner[d as usize] = Some(id.to_string());
                d
            }
            None => {
                self.doc_owner.push(Some(id.to_string()));
                (self.doc_owner.len() - 1) as u32
            }
        }
    }

    /// Replaces (or removes) the embedding of memory `id`, keeping the
    /// vector index and the digest in step. Returns the previous embedding.
    fn set_vector(&mut self, id: &str, new: Option<StoredVector>) -> Option<StoredVector> {
        if let Some(doc) = self.entries.get(id).map(|e| e.doc) {
            self.unindex_vector(doc);
        }
        let old = self.embeddings.remove(id);
        if let Some(v) = &old {
            self.digest.toggle_hash(&v.record_hash());
        }
        if let Some(v) = new {
            self.digest.toggle_hash(&v.record_hash());
            self.embeddings.insert(id.to_string(), v);
        }
        self.index_vector(id);
        old
    }

    /// Removes a doc from the vector index it sits in, if any.
    fn unindex_vector(&mut self, doc: u32) {
        if let Some(tenant) = self.vector_docs.remove(&doc) {
            if let Some(ix) = self.vectors.get_mut(&tenant) {
                ix.remove(doc);
                if ix.is_empty() {
                    self.vectors.remove(&tenant);
                }
            }
        }
    }

    /// Puts a live memory that has an embedding into its tenant's vector
    /// index, as its context vector.
    fn index_vector(&mut self, id: &str) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        if entry.item.is_deleted() || self.vector_docs.contains_key(&entry.doc) {
            return;
        }
        let Some(context) = self.context_vector(&entry.item) else {
            return;
        };
        let tenant = entry.item.scope.tenant();
        let doc = entry.doc;
        let index = self
            .vectors
            .entry(tenant.clone())
            .or_insert_with(|| VectorIndex::new(context.len(), VectorParams::default()));
        if index.insert(doc, &context).is_ok() {
            self.vector_docs.insert(doc, tenant);
        }
    }

    /// The context vector of a memory: its embedding plus the embedding of
    /// the memory it follows, normalized (see [`crate::rank`]).
    fn context_vector(&self, item: &MemoryItem) -> Option<Vec<f32>> {
        let own = &self.embeddings.get(&item.id)?.vector;
        let previous = item
            .follows
            .as_ref()
            .and_then(|p| self.embeddings.get(p))
            .map(|p| &p.vector)
            .filter(|p| p.len() == own.len());
        let mut context = own.to_f32();
        if let Some(p) = previous {
            for (c, &code) in context.iter_mut().zip(p.codes()) {
                *c += f32::from(code) * p.scale();
            }
        }
        let norm = context.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            context.iter_mut().for_each(|x| *x /= norm);
        }
        Some(context)
    }

    /// [`Engine::set`] that records the undo step.
    fn write(&mut self, txn: &mut Txn, id: &str, new: Option<MemoryItem>) {
        let previous = self.set(id, new);
        txn.undo
            .push(Undo::Item(id.to_string(), previous.map(Box::new)));
    }

    /// [`Engine::set_vector`] that records the undo step.
    fn write_vector(&mut self, txn: &mut Txn, id: &str, new: Option<Vec<f32>>) {
        let previous = self.set_vector(id, new.as_deref().map(StoredVector::quantize));
        txn.undo.push(Undo::Vector(id.to_string(), previous));
    }

    /// Undoes every change recorded in `txn`, newest first.
    pub fn rollback(&mut self, txn: Txn) {
        for step in txn.undo.into_iter().rev() {
            match step {
                Undo::Item(id, previous) => {
                    self.set(&id, previous.map(|item| *item));
                }
                Undo::Vector(id, previous) => {
                    self.set_vector(&id, previous);
                }
                Undo::File(key, previous) => {
                    self.set_file(&key, previous.map(|file| *file));
                }
                Undo::Model(model_id, embedder) => {
                    self.model_id = model_id;
                    self.embedder = embedder;
                }
            }
        }
    }

    /// The storage batch that persists `txn`'s changes: the final state of
    /// every touched item, embedding and file plus the manifest. Empty when nothing changed.
    pub fn batch_for(&self, txn: &Txn) -> Batch {
        let mut batch = Batch::new();
        let mut items = BTreeSet::new();
        // Vector keys, with whether one existed before the transaction.
        let mut vectors: BTreeMap<&str, bool> = BTreeMap::new();
        let mut files = BTreeSet::new();
        for step in &txn.undo {
            match step {
                Undo::Item(id, _) => {
                    items.insert(id.as_str());
                }
                Undo::Vector(id, before) => {
                    vectors.entry(id.as_str()).or_insert(before.is_some());
                }
                Undo::File(key, _) => {
                    files.insert(key);
                }
                Undo::Model(..) => {}
            }
        }
        for key in files {
            match self.files.get(key) {
                Some(file) => batch.put(file.storage_key(), codec::encode_file(file)),
                None => batch.delete(crate::files::file_storage_key(&key.0, &key.1)),
            }
        }
        for id in items {
            let key = format!("{ITEM_PREFIX}{id}");
            match self.entries.get(id) {
                Some(entry) => batch.put(key, codec::encode_item(&entry.item)),
                None => batch.delete(key),
            }
        }
        for (id, existed) in vectors {
            let key = format!("{VECTOR_PREFIX}{id}");
            match self.embeddings.get(id) {
                Some(v) => batch.put(key, codec::encode_vector(&v.vector)),
                None if existed => batch.delete(key),
                None => {}
            }
        }
        if !batch.is_empty() {
            batch.put(MANIFEST_KEY, codec::encode_manifest(&self.manifest()));
        }
        batch
    }

    /// The manifest describing the current items.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            format_version: codec::version_for(!self.files.is_empty()),
            item_count: self.entries.len() as u64,
            vector_count: self.embeddings.len() as u64,
            items_digest: self.digest.to_hex(),
            model_id: self
                .model_id
                .clone()
                .filter(|_| !self.embeddings.is_empty()),
            file_count: self.files.len() as u64,
        }
    }

    // ----- ingest -----------------------------------------------------------

    /// Ingests a batch: each input is redacted, normalized, deduplicated
    /// against the store and the earlier inputs of the batch, and stored. Any
    /// invalid input fails the whole batch.
    pub fn ingest(
        &mut self,
        inputs: Vec<MemoryInput>,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<Vec<IngestResult>> {
        let limits = self.config.limits;
        if inputs.len() > limits.max_batch {
            return Err(Error::TooLarge {
                what: "ingest batch".into(),
                size: inputs.len(),
                limit: limits.max_batch,
            });
        }
        let now = env.now();
        let mut prepared = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let at = |e: Error| e.at(&format!("inputs[{i}]"));
            let tags = self.validate_fields(&input).map_err(at)?;
            let captured = text_to_store(&input.text).map_err(at)?;
            prepared.push((input, tags, captured));
        }
        let texts: Vec<&str> = prepared
            .iter()
            .filter_map(|(_, _, captured)| match captured {
                Captured::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let mut vectors = self.embed(&texts)?.map(Vec::into_iter);
        let mut results = Vec::with_capacity(prepared.len());
        for (input, tags, captured) in prepared {
            let vector = match captured {
                Captured::Text(_) => vectors.as_mut().and_then(Iterator::next),
                _ => None,
            };
            results.push(self.ingest_one(input, tags, captured, vector, now, env, txn));
        }
        Ok(results)
    }

    #[allow(clippy::too_many_arguments)]
    fn ingest_one(
        &mut self,
        input: MemoryInput,
        tags: Vec<String>,
        captured: Captured,
        vector: Option<Vec<f32>>,
        now: Timestamp,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> IngestResult {
        let source = input.source.unwrap_or_default();
        let skipped = |reason| IngestResult {
            id: None,
            outcome: IngestOutcome::Skipped,
            reason: Some(reason),
            similar_to: None,
        };
        let text = match captured {
            Captured::NoMemory => return skipped(IngestReason::NoMemory),
            Captured::OnlyPrivate => return skipped(IngestReason::Private),
            Captured::Text(t) => t,
        };
        let content_hash = text::content_hash(&text);
        let created_at = input.created_at.unwrap_or(now);
        let duplicate = Duplicate {
            source: source.clone(),
            created_at,
            tags: tags.clone(),
            pinned: input.pinned.unwrap_or(false),
            privacy: input.privacy.unwrap_or_default(),
            text: None,
        };

        let hash_key = (self.scope_key(&input.scope), content_hash.clone());
        if let Some(existing) = self.by_hash.get(&hash_key).cloned() {
            return self.merge_duplicate(&existing, duplicate, IngestReason::Duplicate, now, txn);
        }

        let terms = text::terms(&text);
        let similar = self.find_near_duplicate(&input.scope, &text, &terms, vector.as_deref());
        if let Some(similar) = &similar {
            if self.config.near_duplicate.action == NearDuplicateAction::Merge {
                let duplicate = Duplicate {
                    text: Some(text),
                    ..duplicate
                };
                return self.merge_duplicate(
                    similar,
                    duplicate,
                    IngestReason::NearDuplicate,
                    now,
                    txn,
                );
            }
        }

        let id = self.fresh_id(env);
        let follows = self.thread_predecessor(&input.scope, created_at);
        let item = MemoryItem {
            id: id.clone(),
            text,
            kind: input.kind.unwrap_or_default(),
            scope: input.scope,
            status: input.status.unwrap_or_default(),
            pinned: duplicate.pinned,
            source,
            content_hash,
            tags,
            privacy: duplicate.privacy,
            created_at,
            updated_at: now,
            last_used_at: None,
            usage_count: 0,
            merged_from: Vec::new(),
            follows,
            deleted_at: None,
            source_lines: None,
        };
        self.write(txn, &id, Some(item));
        if vector.is_some() {
            self.write_vector(txn, &id, vector);
        }
        IngestResult {
            id: Some(id),
            outcome: IngestOutcome::Added,
            reason: similar.is_some().then_some(IngestReason::NearDuplicate),
            similar_to: similar,
        }
    }

    /// Embeds texts with the attached model (`None` without one), checking
    /// every vector's length and values.
    fn embed(&self, texts: &[&str]) -> Result<Option<Vec<Vec<f32>>>> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(EMBED_CHUNK) {
            vectors.extend(embedder.embed_batch(chunk)?);
        }
        let dims = embedder.dimensions();
        if vectors.len() != texts.len()
            || vectors
                .iter()
                .any(|v| v.len() != dims || v.iter().any(|x| !x.is_finite()))
        {
            return Err(Error::Model(format!(
                "the model returned malformed embeddings (expected {} vectors of {dims} finite values)",
                texts.len()
            )));
        }
        Ok(Some(vectors))
    }

    /// The query's embedding when a model is attached and the tenant has
    /// vectors to compare it with.
    fn query_vector(&self, query: &RetrieveQuery) -> Result<Option<Vec<f32>>> {
        if !self.vectors.contains_key(&query.scope.tenant()) {
            return Ok(None);
        }
        Ok(self
            .embed(&[query.text.as_str()])?
            .and_then(|mut v| v.pop()))
    }

    /// Attaches an embedding model: from now on memories are embedded at
    /// ingest and retrieval is hybrid. Memories without an embedding, or with
    /// one from another model, are embedded now (a store never mixes
    /// models). Returns how many memories were embedded.
    pub fn attach_embedder(&mut self, embedder: Arc<dyn Embedder>, txn: &mut Txn) -> Result<usize> {
        let model = embedder.model_id().to_string();
        txn.undo
            .push(Undo::Model(self.model_id.clone(), self.embedder.clone()));
        if self.model_id.as_deref() != Some(model.as_str()) {
            let stale: Vec<String> = self.embeddings.keys().cloned().collect();
            for id in stale {
                self.write_vector(txn, &id, None);
            }
        }
        self.model_id = Some(model);
        self.embedder = Some(embedder);
        let mut missing: Vec<(String, String)> = self
            .entries
            .values()
            .filter(|e| !self.embeddings.contains_key(&e.item.id))
            .map(|e| (e.item.id.clone(), e.item.text.clone()))
            .collect();
        missing.sort();
        for chunk in missing.chunks(EMBED_CHUNK) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = self.embed(&texts)?.unwrap_or_default();
            for ((id, _), vector) in chunk.iter().zip(vectors) {
                self.write_vector(txn, id, Some(vector));
            }
        }
        Ok(missing.len())
    }

    /// The attached embedding model, if any.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// Checks one input as [`Engine::ingest`] would, without changing
    /// anything (lets a caller report every bad input before ingesting).
    pub fn check_input(&self, input: &MemoryInput) -> Result<()> {
        self.validate_fields(input)?;
        text_to_store(&input.text).map(|_| ())
    }

    /// Refuses a text longer than `maxTextBytes`.
    fn check_text_size(&self, what: &str, text: &str) -> Result<()> {
        let limit = self.config.limits.max_text_bytes;
        if text.len() > limit {
            return Err(Error::TooLarge {
                what: what.into(),
                size: text.len(),
                limit,
            });
        }
        Ok(())
    }

    /// Validates everything of an input but its text's content; returns the
    /// cleaned tags.
    fn validate_fields(&self, input: &MemoryInput) -> Result<Vec<String>> {
        self.check_text_size("text", &input.text)?;
        input.scope.validate()?;
        if let Some(created_at) = input.created_at {
            // JSON reads only RFC 3339 dates of years 1..=9999; a Rust
            // caller can pass any `i64`, which later date arithmetic and
            // the export would not survive.
            Timestamp::from_millis(created_at.0).map_err(|e| e.at("createdAt"))?;
        }
        if let Some(source) = &input.source {
            self.validate_source(source)?;
        }
        self.clean_tags(input.tags.clone().unwrap_or_default())
    }

    fn merge_duplicate(
        &mut self,
        existing_id: &str,
        duplicate: Duplicate,
        reason: IngestReason,
        now: Timestamp,
        txn: &mut Txn,
    ) -> IngestResult {
        let Some(entry) = self.entries.get(existing_id) else {
            // by_hash and entries are kept in step by `set`; treat a miss as
            // "nothing to merge into" rather than panic.
            return IngestResult {
                id: None,
                outcome: IngestOutcome::Skipped,
                reason: Some(reason),
                similar_to: None,
            };
        };
        if entry.item.is_deleted() {
            return IngestResult {
                id: Some(existing_id.to_string()),
                outcome: IngestOutcome::Skipped,
                reason: Some(IngestReason::Suppressed),
                similar_to: None,
            };
        }
        let mut item = entry.item.clone();
        let limits = self.config.limits;
        dedupe::merge_into(
            &mut item,
            duplicate,
            now,
            limits.max_merge_records,
            limits.max_tags,
        );
        self.write(txn, existing_id, Some(item));
        IngestResult {
            id: Some(existing_id.to_string()),
            outcome: IngestOutcome::Merged,
            reason: Some(reason),
            similar_to: None,
        }
    }

    /// The most similar live memory of exactly `scope` that passes the
    /// near-duplicate gates (see [`crate::dedupe`]): the highest term
    /// overlap, then cosine, then the smaller id.
    ///
    /// Both gates need a term overlap of at least `min_overlap`, so a
    /// memory that passes shares at least `min_overlap · n` of the text's
    /// `n` distinct terms (its overlap is at most shared / `n`). Every
    /// memory of the tenant's lexical index that may share that many
    /// ([`Bm25Index::docs_sharing`]) is compared, so the answer does not
    /// depend on a candidate count, and common terms cost nothing.
    /// Only when the thresholds let a memory sharing no term pass (an
    /// overlap threshold of 0) are the candidates the `candidates` best
    /// lexical matches and nearest semantic neighbours.
    fn find_near_duplicate(
        &self,
        scope: &Scope,
        text: &str,
        terms: &[String],
        vector: Option<&[f32]>,
    ) -> Option<String> {
        let cfg = self.config.near_duplicate;
        if terms.is_empty() || cfg.candidates == 0 {
            return None;
        }
        let tenant = scope.tenant();
        let lexical = self.lexical.get(&tenant);
        let term_set = lexical.map(|ix| ix.term_set(terms));
        let negated = dedupe::negated(text);
        // A live memory of exactly `scope` that is not a file chunk.
        let eligible = |doc: u32| {
            self.entry_of(doc)
                .map(|e| &e.item)
                .filter(|item| &item.scope == scope && !item.is_deleted() && !item.is_file_chunk())
        };
        let same_scope = |doc: u32| eligible(doc).is_some();
        let min_overlap = cfg.min_overlap();
        let passing = |doc: u32| -> Option<((f32, f32), &str)> {
            // The overlap comes from the index's term lists when it holds
            // the doc (the sets `text::terms` gives its text); most docs
            // stop here, before their item is looked up.
            let indexed = lexical
                .zip(term_set.as_ref())
                .and_then(|(ix, set)| ix.overlap(doc, set));
            if indexed.is_some_and(|overlap| overlap < min_overlap) {
                return None;
            }
            let other = eligible(doc).filter(|o| dedupe::negated(&o.text) == negated)?;
            let overlap =
                indexed.unwrap_or_else(|| text::term_overlap(terms, &text::terms(&other.text)));
            let cosine = vector
                .zip(self.embeddings.get(&other.id))
                .map(|(a, b)| b.vector.dot(a));
            cfg.is_near_duplicate(overlap, cosine)
                .then_some(((overlap, cosine.unwrap_or(0.0)), other.id.as_str()))
        };

        let sharing = match lexical.zip(term_set.as_ref()) {
            Some((ix, set)) => ix.docs_sharing(set, min_shared_terms(set.len(), min_overlap)),
            None => Some(Vec::new()),
        };
        let candidates = sharing.unwrap_or_else(|| {
            let lexical_matches = lexical
                .map(|ix| ix.search(terms))
                .unwrap_or_default()
                .into_iter()
                .map(|(doc, _)| doc)
                .filter(|&doc| same_scope(doc))
                .take(cfg.candidates);
            let neighbours = vector
                .zip(self.vectors.get(&tenant))
                .map(|(v, ix)| ix.search(v, cfg.candidates, &same_scope))
                .unwrap_or_default()
                .into_iter()
                .map(|(doc, _)| doc);
            lexical_matches.chain(neighbours).collect()
        });
        candidates
            .into_iter()
            .filter_map(passing)
            .max_by(|(a, a_id), (b, b_id)| {
                a.partial_cmp(b)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| b_id.cmp(a_id))
            })
            .map(|(_, id)| id.to_string())
    }

    /// The live memory a new memory of `scope` created at `created_at`
    /// follows: the latest one of the same scope created at most
    /// `threadGapMinutes` earlier (ids break ties, in capture order).
    fn thread_predecessor(&self, scope: &Scope, created_at: Timestamp) -> Option<String> {
        let gap = i64::from(self.config.rank.thread_gap_minutes) * 60_000;
        let scope = self.scope_key(scope);
        let from = (
            scope.clone(),
            created_at.0.saturating_sub(gap),
            String::new(),
        );
        let to = (scope, created_at.0.saturating_add(1), String::new());
        self.by_scope_time
            .range(from..to)
            .rev()
            .map(|(_, _, id)| id)
            .find(|id| self.entries.get(*id).is_some_and(|e| !e.item.is_deleted()))
            .cloned()
    }

    fn entry_of(&self, doc: u32) -> Option<&Entry> {
        let id = self.doc_owner.get(doc as usize)?.as_ref()?;
        self.entries.get(id).map(Box::as_ref)
    }

    fn fresh_id(&self, env: &mut dyn Environment) -> String {
        loop {
            let id = env.new_id();
            if validate_item_id(&id).is_ok() && !self.entries.contains_key(&id) {
                return id;
            }
        }
    }

    fn clean_tags(&self, tags: Vec<String>) -> Result<Vec<String>> {
        let limits = self.config.limits;
        if tags.len() > limits.max_tags {
            return Err(Error::TooLarge {
                what: "tags".into(),
                size: tags.len(),
                limit: limits.max_tags,
            });
        }
        let mut clean: Vec<String> = Vec::with_capacity(tags.len());
        for tag in tags {
            let tag = tag.trim().to_string();
            if tag.len() > limits.max_tag_bytes {
                return Err(Error::TooLarge {
                    what: "tag".into(),
                    size: tag.len(),
                    limit: limits.max_tag_bytes,
                });
            }
            validate_id("tag", &tag)?;
            if !clean.contains(&tag) {
                clean.push(tag);
            }
        }
        Ok(clean)
    }

    fn validate_source(&self, source: &Source) -> Result<()> {
        let limit = self.config.limits.max_source_bytes;
        for (what, value) in [
            ("source.ref", Some(&source.reference)),
            ("source.uri", source.uri.as_ref()),
        ] {
            if let Some(v) = value {
                if v.len() > limit {
                    return Err(Error::TooLarge {
                        what: what.to_string(),
                        size: v.len(),
                        limit,
                    });
                }
                if v.chars().any(char::is_control) {
                    return Err(Error::invalid(format!(
                        "{what} must not contain control characters"
                    )));
                }
            }
        }
        Ok(())
    }

    // ----- retrieval ----------------------------------------------------------

    /// Checks a retrieval query without running it.
    pub fn check_query(&self, query: &RetrieveQuery) -> Result<()> {
        query.scope.validate()?;
        if text::is_blank(&query.text) {
            return Err(Error::invalid("query text must not be empty"));
        }
        self.check_text_size("query text", &query.text)?;
        if let Some(limit) = query.limit {
            if limit == 0 || limit > self.config.limits.max_results {
                return Err(Error::invalid(format!(
                    "limit must be between 1 and {}",
                    self.config.limits.max_results
                )));
            }
        }
        if let (Some(since), Some(until)) = (query.since, query.until) {
            if since > until {
                return Err(Error::invalid("since must not be after until"));
            }
        }
        Ok(())
    }

    /// Ranks the memories visible to `query` without marking them used
    /// (the algorithm is described in [`crate::rank`]).
    fn search(
        &self,
        query: &RetrieveQuery,
        query_vector: Option<&[f32]>,
        limit: usize,
        now: Timestamp,
    ) -> Vec<RetrieveHit> {
        let params = self.config.rank;
        let tenant = query.scope.tenant();
        let vis = query.visibility(now);
        let visible = |doc: u32| -> Option<&MemoryItem> {
            let item = &self.entry_of(doc)?.item;
            policy::check(item, &vis).ok().map(|()| item)
        };
        let lexical: Vec<(u32, f32)> = self
            .lexical
            .get(&tenant)
            .map(|ix| ix.search(&text::terms(&query.text)))
            .unwrap_or_default();
        let bm25_max = lexical.first().map_or(0.0, |&(_, score)| score);

        // Candidates: the best visible lexical matches, the semantic
        // neighbours, then the replies of candidate questions (they may
        // inherit); with their BM25 score.
        let mut candidates: HashMap<&str, (&MemoryItem, f32)> = HashMap::new();
        let lexical_candidates = limit.saturating_mul(4).max(LEXICAL_CANDIDATES);
        for (item, score) in lexical
            .iter()
            .filter_map(|&(doc, score)| Some((visible(doc)?, score)))
            .take(lexical_candidates)
        {
            candidates.insert(&item.id, (item, score));
        }
        if let (Some(q), Some(ix)) = (query_vector, self.vectors.get(&tenant)) {
            let k = limit.saturating_mul(4).max(DENSE_CANDIDATES);
            for (doc, _) in ix.search(q, k, &|doc| visible(doc).is_some()) {
                if let Some(item) = visible(doc) {
                    candidates.entry(&item.id).or_insert((item, 0.0));
                }
            }
        }
        let questions: Vec<&str> = candidates
            .values()
            .filter(|(item, _)| rank::asks_question(&item.text))
            .map(|(item, _)| item.id.as_str())
            .collect();
        for question in questions {
            for reply in self.followers.get(question).into_iter().flatten() {
                if let Some(entry) = self.entries.get(reply) {
                    if policy::check(&entry.item, &vis).is_ok() {
                        candidates
                            .entry(&entry.item.id)
                            .or_insert((&entry.item, 0.0));
                    }
                }
            }
        }

        // Step 1 for every candidate: (memory, BM25, cosine, fused score).
        let combined: HashMap<&str, (&MemoryItem, f32, Option<f32>, f32)> = candidates
            .into_iter()
            .map(|(id, (item, lexical))| {
                let semantic = query_vector.map(|q| {
                    self.context_vector(item)
                        .map_or(0.0, |context| dot(q, &context))
                });
                let f = rank::combine(lexical, bm25_max, semantic, &params);
                (id, (item, lexical, semantic, f))
            })
            .collect();

        // Step 3 needs the speakers the query names among the candidates.
        let words = rank::query_words(&query.text);
        let named: BTreeSet<&str> = combined
            .values()
            .filter_map(|(item, ..)| rank::speaker_label(&item.text))
            .filter(|label| rank::names_speaker(&words, label))
            .collect();

        let mut hits: Vec<(ScoreBreakdown, &MemoryItem)> = combined
            .values()
            .map(|&(item, lexical, semantic, f)| {
                let inherited_score = item
                    .follows
                    .as_deref()
                    .and_then(|prev| combined.get(prev))
                    .filter(|(prev, ..)| rank::asks_question(&prev.text))
                    .map(|(.., pf)| params.answer_inheritance * pf)
                    .unwrap_or(0.0);
                let g = f.max(inherited_score);
                let speaker_factor = match rank::speaker_label(&item.text) {
                    Some(label) if !named.is_empty() && !named.contains(label) => {
                        1.0 - params.speaker_penalty.clamp(0.0, 1.0)
                    }
                    _ => 1.0,
                };
                let scope_multiplier =
                    rank::scope_multiplier(item.scope.specificity(), params.scope_boost);
                let breakdown = ScoreBreakdown {
                    lexical,
                    semantic,
                    combined: f,
                    inherited: inherited_score > f,
                    speaker_factor,
                    scope_multiplier,
                    fused: g * speaker_factor * scope_multiplier,
                };
                (breakdown, item)
            })
            .filter(|(b, _)| b.fused > 0.0)
            .collect();
        fn key<'a>((s, item): &(ScoreBreakdown, &'a MemoryItem)) -> RankKey<'a> {
            RankKey {
                score: s.fused,
                specificity: item.scope.specificity(),
                created_at: item.created_at.0,
                id: &item.id,
            }
        }
        hits.sort_by(|a, b| rank::compare(&key(a), &key(b)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(breakdown, item)| RetrieveHit {
                item: item.clone(),
                citation: item.citation(),
                score: breakdown.fused,
                explain: query.explain.then_some(breakdown),
                policy: query.explain.then(|| policy::admission(item, &vis)),
            })
            .collect()
    }

    /// Marks memories as used now (usage count and last use).
    fn mark_used<'a>(
        &mut self,
        ids: impl IntoIterator<Item = &'a str>,
        now: Timestamp,
        txn: &mut Txn,
    ) {
        for id in ids {
            if let Some(entry) = self.entries.get(id) {
                let mut item = entry.item.clone();
                item.usage_count = item.usage_count.saturating_add(1);
                item.last_used_at = Some(now);
                self.write(txn, id, Some(item));
            }
        }
    }

    /// Retrieves the memories most relevant to the query, best first, and
    /// marks them used unless `dryRun`.
    pub fn retrieve(
        &mut self,
        query: &RetrieveQuery,
        now: Timestamp,
        txn: &mut Txn,
    ) -> Result<Vec<RetrieveHit>> {
        self.check_query(query)?;
        let query_vector = self.query_vector(query)?;
        let mut hits = self.search(
            query,
            query_vector.as_deref(),
            query.limit.unwrap_or(10),
            now,
        );
        if !query.dry_run {
            self.mark_used(hits.iter().map(|h| h.item.id.as_str()), now, txn);
            for hit in &mut hits {
                if let Some(entry) = self.entries.get(&hit.item.id) {
                    hit.item = entry.item.clone();
                }
            }
        }
        Ok(hits)
    }

    /// Renders the pinned memories of the scope, then the most relevant
    /// ones, into one block within the token budget, and marks the memories
    /// it used unless `dryRun`.
    pub fn inject(
        &mut self,
        request: &InjectQuery,
        counter: &dyn TokenCounter,
        now: Timestamp,
        txn: &mut Txn,
    ) -> Result<Injection> {
        let query = &request.query;
        self.check_query(query)?;
        let vis = query.visibility(now);
        let mut pinned: Vec<&MemoryItem> = self
            .pinned
            .iter()
            .filter_map(|id| self.entries.get(id).map(|e| &e.item))
            .filter(|item| policy::check(item, &vis).is_ok())
            .collect();
        pinned.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        let query_vector = self.query_vector(query)?;
        let ranked = self.search(
            query,
            query_vector.as_deref(),
            query.limit.unwrap_or(20),
            now,
        );
        let mut candidates = pinned;
        candidates.extend(ranked.iter().map(|h| &h.item).filter(|i| !i.pinned));
        let injection = inject::render(&candidates, request.budget_tokens, request.format, counter);
        if !query.dry_run {
            let used = injection.used.clone();
            self.mark_used(used.iter().map(String::as_str), now, txn);
        }
        Ok(injection)
    }

    /// Why `item_id` would or would not be returned for `query`.
    pub fn explain_policy(
        &self,
        item_id: &str,
        query: &RetrieveQuery,
        now: Timestamp,
    ) -> Result<Option<Exclusion>> {
        let entry = self
            .entries
            .get(item_id)
            .ok_or_else(|| Error::NotFound(item_id.to_string()))?;
        Ok(policy::check(&entry.item, &query.visibility(now)).err())
    }

    // ----- management -----------------------------------------------------------

    /// One memory by id (soft-deleted memories included, with `deletedAt`).
    pub fn get(&self, id: &str) -> Result<&MemoryItem> {
        validate_item_id(id)?;
        self.entries
            .get(id)
            .map(|e| &e.item)
            .ok_or_else(|| Error::NotFound(id.to_string()))
    }

    /// The live memory of exactly `scope` whose text is `normalized` (in
    /// stored form), if any; chunks of files are not found.
    pub fn find_text(&self, scope: &Scope, normalized: &str) -> Option<&MemoryItem> {
        let id = self
            .by_hash
            .get(&(self.scope_key(scope), text::content_hash(normalized)))?;
        self.entries.get(id).map(|e| &e.item)
    }

    /// Lists memories newest first, filtered, one page at a time.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        let limit = query.limit.unwrap_or(50);
        if limit == 0 || limit > self.config.limits.max_results {
            return Err(Error::invalid(format!(
                "limit must be between 1 and {}",
                self.config.limits.max_results
            )));
        }
        let upper = match &query.cursor {
            None => None,
            Some(c) => Some(parse_cursor(c)?),
        };
        let mut items = Vec::new();
        let mut next_cursor = None;
        let range = match &upper {
            Some(u) => self.by_created.range(..u.clone()),
            None => self.by_created.range(..),
        };
        for (created, id) in range.rev() {
            let Some(entry) = self.entries.get(id) else {
                continue;
            };
            let item = &entry.item;
            if !list_matches(item, query) {
                continue;
            }
            if items.len() == limit {
                next_cursor = items
                    .last()
                    .map(|last: &MemoryItem| format!("{}:{}", last.created_at.0, last.id));
                break;
            }
            debug_assert_eq!(item.created_at.0, *created);
            items.push(item.clone());
        }
        Ok(ListPage { items, next_cursor })
    }

    /// Applies a patch to one memory and returns the new version.
    pub fn update(
        &mut self,
        id: &str,
        patch: MemoryPatch,
        now: Timestamp,
        txn: &mut Txn,
    ) -> Result<MemoryItem> {
        let mut item = self.get(id)?.clone();
        if let Some((path, _)) = item.file_location() {
            if patch.text.is_some() || patch.source.is_some() {
                return Err(Error::invalid(format!(
                    "memory `{id}` is a chunk of file `{path}`: its text and source change with the file"
                )));
            }
        }
        let mut new_vector = None;
        if let Some(raw) = &patch.text {
            self.check_text_size("text", raw)?;
            let text = match text_to_store(raw)? {
                Captured::Text(t) => t,
                Captured::NoMemory => {
                    return Err(Error::invalid(
                        "text asks not to be remembered (<no-memory>)",
                    ))
                }
                Captured::OnlyPrivate => {
                    return Err(Error::invalid(
                        "text is empty after removing <private> spans",
                    ))
                }
            };
            let hash = text::content_hash(&text);
            if let Some(other) = self
                .by_hash
                .get(&(self.scope_key(&item.scope), hash.clone()))
            {
                if other != id {
                    return Err(Error::invalid(format!(
                        "the new text is identical to memory `{other}` in the same scope"
                    )));
                }
            }
            if text != item.text {
                new_vector = Some(self.embed(&[text.as_str()])?.and_then(|mut v| v.pop()));
            }
            item.text = text;
            item.content_hash = hash;
        }
        if let Some(kind) = patch.kind {
            item.kind = kind;
        }
        if let Some(status) = patch.status {
            item.status = status;
        }
        if let Some(pinned) = patch.pinned {
            item.pinned = pinned;
        }
        if let Some(tags) = patch.tags {
            item.tags = self.clean_tags(tags)?;
        }
        if let Some(privacy) = patch.privacy {
            item.privacy = privacy;
        }
        if let Some(source) = patch.source {
            self.validate_source(&source)?;
            item.source = source;
        }
        match patch.deleted {
            Some(true) if item.deleted_at.is_none() => item.deleted_at = Some(now),
            Some(false) => item.deleted_at = None,
            _ => {}
        }
        item.updated_at = now;
        self.write(txn, id, Some(item.clone()));
        // A changed text gets a fresh embedding (or loses its stale one).
        if let Some(vector) = new_vector {
            if vector.is_some() || self.embeddings.contains_key(id) {
                self.write_vector(txn, id, vector);
            }
        }
        Ok(item)
    }

    /// Deletes one memory: soft (suppressed, kept for the user to see and so
    /// the same text is not captured again) or hard (erased with every trace,
    /// index postings included).
    pub fn delete(&mut self, id: &str, hard: bool, now: Timestamp, txn: &mut Txn) -> Result<()> {
        let item = self.get(id)?.clone();
        if hard {
            // Erasing leaves no trace: the memories that followed this one
            // forget the link.
            for follower in self.followers.get(id).cloned().unwrap_or_default() {
                if let Some(entry) = self.entries.get(&follower) {
                    let mut unlinked = entry.item.clone();
                    unlinked.follows = None;
                    self.write(txn, &follower, Some(unlinked));
                }
            }
            self.write(txn, id, None);
            if self.embeddings.contains_key(id) {
                self.write_vector(txn, id, None);
            }
        } else if !item.is_deleted() {
            let mut item = item;
            item.deleted_at = Some(now);
            item.updated_at = now;
            self.write(txn, id, Some(item));
        }
        Ok(())
    }

    /// Deletes every memory the filter selects (`userId` is required, so a
    /// call never reaches other users' data). Returns how many it deleted.
    /// A hard delete also removes the files of the selected scopes.
    pub fn delete_all(
        &mut self,
        filter: &ScopeFilter,
        hard: bool,
        now: Timestamp,
        txn: &mut Txn,
    ) -> Result<DeleteAllResult> {
        if filter.user_id.is_none() {
            return Err(Error::invalid("deleteAll needs at least scope.userId"));
        }
        let ids: Vec<String> = self
            .entries
            .values()
            .filter(|e| filter.matches(&e.item.scope) && (hard || !e.item.is_deleted()))
            .map(|e| e.item.id.clone())
            .collect();
        for id in &ids {
            self.delete(id, hard, now, txn)?;
        }
        // Erasure takes the files too: they hold the same text.
        if hard {
            self.remove_files_where(|scope| filter.matches(scope), txn);
        }
        Ok(DeleteAllResult {
            deleted: ids.len(),
            hard,
        })
    }

    /// Counts over the memories the filter selects (everything when empty).
    pub fn stats(&self, filter: &ScopeFilter, token_counting_is_estimate: bool) -> Stats {
        let mut stats = Stats {
            items: 0,
            active: 0,
            deleted: 0,
            pending: 0,
            rejected: 0,
            pinned: 0,
            by_kind: BTreeMap::new(),
            tenants: 0,
            indexed_terms: 0,
            stored_bytes: 0,
            embedded: 0,
            retrieval_mode: if self.embedder.is_some() {
                "hybrid"
            } else {
                "lexical"
            }
            .to_string(),
            model: self.model_id.clone(),
            token_counting: if token_counting_is_estimate {
                "estimate"
            } else {
                "tokenizer"
            }
            .to_string(),
            format_version: FORMAT_VERSION,
        };
        let mut tenants = BTreeSet::new();
        for item in self.items().filter(|i| filter.matches(&i.scope)) {
            stats.items += 1;
            stats.deleted += usize::from(item.is_deleted());
            stats.pending += usize::from(item.status == Status::Pending);
            stats.rejected += usize::from(item.status == Status::Rejected);
            stats.active += usize::from(!item.is_deleted() && item.status != Status::Rejected);
            stats.pinned += usize::from(item.pinned);
            *stats
                .by_kind
                .entry(item.kind.as_str().to_string())
                .or_default() += 1;
            stats.stored_bytes += codec::encode_item(item).len();
            if let Some(vector) = self.embeddings.get(&item.id) {
                stats.embedded += 1;
                stats.stored_bytes += vector.record_len();
            }
            tenants.insert(item.scope.tenant());
        }
        stats.tenants = tenants.len();
        stats.indexed_terms = tenants
            .iter()
            .filter_map(|t| self.lexical.get(t))
            .map(Bm25Index::term_count)
            .sum();
        stats
    }
}

/// The fewest of a text's `distinct` terms another memory must share for
/// its term overlap to reach `min_overlap`: the overlap is at most
/// shared / `distinct`, computed as the gates compute it (`f32` division,
/// which rounds monotonically).
fn min_shared_terms(distinct: usize, min_overlap: f32) -> usize {
    (0..=distinct)
        .find(|&shared| shared as f32 / distinct.max(1) as f32 >= min_overlap)
        .unwrap_or(distinct + 1)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// What ingest keeps of a raw text.
pub(crate) enum Captured {
    /// The text opted out (`<no-memory>`).
    NoMemory,
    /// Nothing was left but private spans.
    OnlyPrivate,
    /// The redacted, normalized text.
    Text(String),
}

/// The text ingest stores for `raw`: the capture pipeline
/// ([`text::capture`]: opt-out, redaction, normalization), with a text left
/// blank ([`text::is_blank`]: only whitespace and default-ignorable
/// characters such as U+200D) refused as empty.
pub(crate) fn text_to_store(raw: &str) -> Result<Captured> {
    match text::capture(raw) {
        Capture::NoMemory => Ok(Captured::NoMemory),
        Capture::Text {
            text,
            private_removed,
        } => {
            if !text::is_blank(&text) {
                Ok(Captured::Text(text))
            } else if private_removed {
                Ok(Captured::OnlyPrivate)
            } else {
                Err(Error::invalid("text is empty"))
            }
        }
    }
}

fn list_matches(item: &MemoryItem, q: &ListQuery) -> bool {
    q.scope.matches(&item.scope)
        && (q.include_deleted || !item.is_deleted())
        && q.kinds.as_ref().is_none_or(|k| k.contains(&item.kind))
        && q.statuses.as_ref().is_none_or(|s| s.contains(&item.status))
        && q.tags
            .as_ref()
            .is_none_or(|t| t.iter().any(|t| item.tags.contains(t)))
        && q.pinned.is_none_or(|p| p == item.pinned)
        && q.since.is_none_or(|s| item.created_at >= s)
        && q.until.is_none_or(|u| item.created_at < u)
}

fn parse_cursor(cursor: &str) -> Result<(i64, String)> {
    let bad = || Error::invalid("cursor is not one returned by list");
    let (ms, id) = cursor.split_once(':').ok_or_else(bad)?;
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    validate_item_id(id).map_err(|_| bad())?;
    Ok((ms, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::FixedEnvironment;

    #[test]
    fn scope_keys_share_one_copy_per_scope_and_drop_it_with_the_last_memory() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let mut txn = Txn::default();
        let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
        let inputs = vec![
            MemoryInput::new("alice likes green tea", alice.clone()),
            MemoryInput::new("alice plays the cello", alice.clone()),
            MemoryInput::new("bob owns a red bicycle", bob.clone()),
        ];
        let ids: Vec<String> = engine
            .ingest(inputs, &mut env, &mut txn)
            .unwrap()
            .into_iter()
            .map(|r| r.id.unwrap())
            .collect();
        assert_eq!(engine.scopes.len(), 2);
        let shared = engine.scope_key(&alice);
        // The interner, two memories' keys in each of two maps, this handle.
        assert_eq!(Arc::strong_count(&shared), 1 + 2 * 2 + 1);
        drop(shared);
        let now = env.now();
        let mut txn = Txn::default();
        engine.delete(&ids[2], true, now, &mut txn).unwrap();
        assert_eq!(engine.scopes.len(), 1, "bob's last memory is gone");
        engine.delete(&ids[0], false, now, &mut txn).unwrap();
        assert_eq!(engine.scopes.len(), 1, "a soft delete keeps the keys");
        engine.delete(&ids[0], true, now, &mut txn).unwrap();
        engine.delete(&ids[1], true, now, &mut txn).unwrap();
        assert!(engine.scopes.is_empty() && engine.by_hash.is_empty());
        engine.rollback(txn);
        assert_eq!(engine.scopes.len(), 2, "a rollback brings both back");
        assert!(engine.find_text(&bob, "bob owns a red bicycle").is_some());
    }

    /// Word counts over [`WORDS`] plus a constant component, so cosines
    /// vary with the words a text shares.
    struct WordCounts;

    const WORDS: [&str; 7] = ["tea", "green", "cello", "bike", "red", "play", "not"];

    impl Embedder for WordCounts {
        fn model_id(&self) -> &str {
            "test/word-counts"
        }

        fn dimensions(&self) -> usize {
            WORDS.len() + 1
        }

        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v: Vec<f32> = WORDS
                        .iter()
                        .map(|w| text.split(' ').filter(|t| t == w).count() as f32)
                        .collect();
                    v.push(0.5);
                    v
                })
                .collect())
        }

        fn count_tokens(&self, text: &str) -> usize {
            text.split(' ').count()
        }
    }

    /// The near-duplicate `find_near_duplicate` must find, by brute force:
    /// among every live memory of exactly `scope`, not a file chunk, of the
    /// same polarity, the one passing a gate with the highest (overlap,
    /// cosine), then the smaller id.
    fn brute_force_near_duplicate(
        engine: &Engine,
        scope: &Scope,
        text: &str,
        vector: Option<&[f32]>,
    ) -> Option<String> {
        let cfg = engine.config.near_duplicate;
        let terms = text::terms(text);
        if terms.is_empty() || cfg.candidates == 0 {
            return None;
        }
        let mut passing: Vec<((f32, f32), &str)> = engine
            .entries
            .values()
            .map(|e| &e.item)
            .filter(|item| {
                &item.scope == scope
                    && !item.is_deleted()
                    && !item.is_file_chunk()
                    && dedupe::negated(&item.text) == dedupe::negated(text)
            })
            .filter_map(|item| {
                let overlap = text::term_overlap(&terms, &text::terms(&item.text));
                let cosine = vector
                    .zip(engine.embeddings.get(&item.id))
                    .map(|(a, b)| b.vector.dot(a));
                cfg.is_near_duplicate(overlap, cosine)
                    .then_some(((overlap, cosine.unwrap_or(0.0)), item.id.as_str()))
            })
            .collect();
        passing.sort_by(|(a, a_id), (b, b_id)| b.partial_cmp(a).unwrap().then(a_id.cmp(b_id)));
        passing.first().map(|(_, id)| id.to_string())
    }

    fn words() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..6)
            .prop_map(|words| words.join(" "))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        #[test]
        fn the_near_duplicate_found_is_the_best_of_all_memories(
            memories in proptest::collection::vec((words(), 0..2usize, proptest::bool::weighted(0.2)), 0..14),
            probe in words(),
            probe_scope in 0..2usize,
            lexical_threshold in proptest::sample::select(vec![0.4f32, 0.6, 0.85, 1.0, 2.0]),
            semantic_threshold in proptest::sample::select(vec![0.5f32, 0.9, 2.0]),
            semantic_lexical_threshold in proptest::sample::select(vec![0.0f32, 0.3, 0.6]),
            semantic in proptest::bool::ANY,
        ) {
            let scopes = [Scope::workspace("u", "w"), Scope::workspace("u", "w").with_session("s")];
            let config = Config {
                near_duplicate: NearDuplicateConfig {
                    lexical_threshold,
                    semantic_threshold,
                    semantic_lexical_threshold,
                    // At least the memories, so that the thresholds of 0
                    // compare every memory too.
                    candidates: 16,
                    action: NearDuplicateAction::Report,
                },
                ..Config::default()
            };
            let mut engine = Engine::new(config);
            let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
            let mut txn = Txn::default();
            if semantic {
                engine.attach_embedder(Arc::new(WordCounts), &mut txn).unwrap();
            }
            for (text, scope, deleted) in memories {
                let input = MemoryInput::new(text, scopes[scope].clone());
                let result = engine.ingest(vec![input], &mut env, &mut txn).unwrap().remove(0);
                if let (true, Some(id)) = (deleted, result.id) {
                    let now = env.now();
                    engine.delete(&id, false, now, &mut txn).unwrap();
                }
            }
            let vector = engine.embed(&[probe.as_str()]).unwrap().map(|mut v| v.remove(0));
            let terms = text::terms(&probe);
            let scope = &scopes[probe_scope];
            proptest::prop_assert_eq!(
                engine.find_near_duplicate(scope, &probe, &terms, vector.as_deref()),
                brute_force_near_duplicate(&engine, scope, &probe, vector.as_deref())
            );
        }
    }
}
