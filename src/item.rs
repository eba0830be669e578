//! The data model: what a memory is, where it belongs and where it came from.
//!
//! Every type here serializes with camelCase field names; this JSON is the
//! contract shared by the Rust API, the CLI and the JavaScript package.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::history::HistoryEvent;
use crate::metadata::{self, Metadata};

/// Longest accepted scope id, tag, source ref or item id, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// A point in time, in milliseconds since the Unix epoch (UTC).
///
/// Serialized as an RFC 3339 string (`2024-05-08T13:56:00.000Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

/// Earliest representable timestamp (0001-01-01T00:00:00Z).
const MIN_TIMESTAMP_MS: i64 = -62_135_596_800_000;
/// Latest representable timestamp (9999-12-31T23:59:59.999Z).
const MAX_TIMESTAMP_MS: i64 = 253_402_300_799_999;

impl Timestamp {
    /// Milliseconds in one day.
    pub const DAY_MS: i64 = 86_400_000;

    /// Builds a timestamp, rejecting values outside years 1..=9999.
    pub fn from_millis(ms: i64) -> Result<Self> {
        if (MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(&ms) {
            Ok(Timestamp(ms))
        } else {
            Err(Error::invalid(format!(
                "timestamp {ms} ms is outside years 1..=9999"
            )))
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// Parses an RFC 3339 date-time such as `2023-05-08T13:56:00Z`.
    pub fn parse_rfc3339(text: &str) -> Result<Self> {
        let parsed = OffsetDateTime::parse(text, &Rfc3339)
            .map_err(|e| Error::invalid(format!("`{text}` is not an RFC 3339 date-time: {e}")))?;
        let ms = parsed.unix_timestamp_nanos() / 1_000_000;
        let ms = i64::try_from(ms).map_err(|_| Error::invalid("timestamp out of range"))?;
        Self::from_millis(ms)
    }

    /// Formats as RFC 3339 in UTC with millisecond precision.
    pub fn to_rfc3339(self) -> String {
        let clamped = self.0.clamp(MIN_TIMESTAMP_MS, MAX_TIMESTAMP_MS);
        let secs = clamped.div_euclid(1000);
        let millis = clamped.rem_euclid(1000);
        match OffsetDateTime::from_unix_timestamp(secs) {
            Ok(t) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                millis
            ),
            // Unreachable after clamping; keep a total function anyway.
            Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
        }
    }

    /// This timestamp plus `days` days (saturating).
    pub fn plus_days(self, days: u32) -> Timestamp {
        Timestamp(
            self.0
                .saturating_add(i64::from(days).saturating_mul(Self::DAY_MS)),
        )
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// What sort of memory an item is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// Something that happened: a message, an event of a session.
    #[default]
    Episodic,
    /// General knowledge distilled from conversations.
    Semantic,
    /// A stated preference of the user.
    Preference,
    /// A piece of a document (a file or a chunk of one).
    Document,
    /// A summary of a session or of other memories.
    Summary,
    /// A durable fact (identity, constraint, decision).
    Fact,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 6] = [
        Kind::Episodic,
        Kind::Semantic,
        Kind::Preference,
        Kind::Document,
        Kind::Summary,
        Kind::Fact,
    ];

    /// The wire name (`"episodic"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Episodic => "episodic",
            Kind::Semantic => "semantic",
            Kind::Preference => "preference",
            Kind::Document => "document",
            Kind::Summary => "summary",
            Kind::Fact => "fact",
        }
    }
}

/// Review state of a memory. Only approved memories are retrieved by default;
/// rejected memories are never retrieved or injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// Usable for retrieval and injection.
    #[default]
    Approved,
    /// Awaiting review; retrieved only when a query asks for pending items.
    Pending,
    /// Refused by a reviewer; never retrieved or injected.
    Rejected,
}

/// Where a memory came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum SourceKind {
    /// A chat message.
    Message,
    /// A file or document.
    File,
    /// A tool call or its result.
    Tool,
    /// An import from another system.
    Import,
    /// Entered by hand.
    #[default]
    Manual,
}

/// Who said a memory, in a conversation: the chat message roles of
/// OpenAI, Anthropic and the Vercel AI SDK. Tool output is not a role here:
/// a memory taken from a tool's result has `source.kind` `tool` instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// The person using the chat client.
    User,
    /// The model's replies.
    Assistant,
    /// The system prompt or developer instructions.
    System,
}

impl Role {
    /// The wire name (`"user"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        }
    }
}

/// Provenance of a memory: the kind of source and a reference into it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Source {
    /// What sort of source this is.
    pub kind: SourceKind,
    /// Reference within the source (message id, turn id, file path…).
    #[serde(rename = "ref", default)]
    pub reference: String,
    /// Optional locator (URL, file URI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// A range of lines of a file, 1-based and inclusive: `start..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineRange {
    /// First line (1-based).
    pub start: u32,
    /// Last line, inclusive (at least `start`).
    pub end: u32,
}

impl fmt::Display for LineRange {
    /// `L3-L10` (`L3` for a single line): the line part of a file citation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end {
            write!(f, "L{}", self.start)
        } else {
            write!(f, "L{}-L{}", self.start, self.end)
        }
    }
}

/// Privacy markers of a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Privacy {
    /// Contains personally identifiable information: retrieved only when a
    /// query sets `includePii`.
    #[serde(default)]
    pub pii: bool,
    /// Private: kept for the user to see, never retrieved or injected.
    #[serde(default)]
    pub private: bool,
    /// Days after `createdAt` when the memory expires; expired memories are
    /// never retrieved or injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u32>,
}

/// Who and what a memory belongs to.
///
/// `userId` and `workspaceId` name the tenant; `projectId`, `cardId` and
/// `sessionId` narrow it. A memory is visible to a query when every field the
/// memory sets is equal in the query's scope: a workspace-wide memory is
/// visible to all of the workspace's projects, a project memory to all of the
/// project's cards, and never the other way round.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scope {
    /// The user the memory belongs to.
    pub user_id: String,
    /// The workspace within the user's data.
    pub workspace_id: String,
    /// Optional project within the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Optional card (task) within the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_id: Option<String>,
    /// Optional chat session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl Scope {
    /// A workspace-wide scope.
    pub fn workspace(user_id: impl Into<String>, workspace_id: impl Into<String>) -> Self {
        Scope {
            user_id: user_id.into(),
            workspace_id: workspace_id.into(),
            project_id: None,
            card_id: None,
            session_id: None,
        }
    }

    /// This scope narrowed to a project.
    pub fn with_project(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// This scope narrowed to a card.
    pub fn with_card(mut self, card_id: impl Into<String>) -> Self {
        self.card_id = Some(card_id.into());
        self
    }

    /// This scope narrowed to a session.
    pub fn with_session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Checks every id is non-empty, short and free of control characters.
    pub fn validate(&self) -> Result<()> {
        validate_id("scope.userId", &self.user_id)?;
        validate_id("scope.workspaceId", &self.workspace_id)?;
        for (name, value) in [
            ("scope.projectId", &self.project_id),
            ("scope.cardId", &self.card_id),
            ("scope.sessionId", &self.session_id),
        ] {
            if let Some(v) = value {
                validate_id(name, v)?;
            }
        }
        Ok(())
    }

    /// True when a memory stored in `self` may be seen by a query made in
    /// `query`: same tenant, and every narrowing field `self` sets is equal in
    /// `query`.
    pub fn is_visible_from(&self, query: &Scope) -> bool {
        self.is_visible_across(query, false)
    }

    /// [`Scope::is_visible_from`], with `all_sessions` letting the memories
    /// of every session of the query's scope through (the query's
    /// `sessions: "all"`): the session is a conversation, not a boundary of
    /// what the user shared with the workspace.
    pub fn is_visible_across(&self, query: &Scope, all_sessions: bool) -> bool {
        fn narrows(item: &Option<String>, query: &Option<String>) -> bool {
            item.is_none() || item == query
        }
        self.user_id == query.user_id
            && self.workspace_id == query.workspace_id
            && narrows(&self.project_id, &query.project_id)
            && narrows(&self.card_id, &query.card_id)
            && (all_sessions || narrows(&self.session_id, &query.session_id))
    }

    /// [`Scope::specificity`] as a query made in `query` sees it: a session
    /// counts only when it is the query's own, so another session's memory
    /// ranks as its project, card or workspace would.
    pub fn specificity_from(&self, query: &Scope) -> u8 {
        let own_session = self.session_id.is_some() && self.session_id == query.session_id;
        self.specificity() - u8::from(self.session_id.is_some() && !own_session)
    }

    /// How narrow this scope is: 0 for workspace-wide, then +1 for a session,
    /// +2 for a project and +4 for a card, so card > project > workspace.
    pub fn specificity(&self) -> u8 {
        u8::from(self.session_id.is_some())
            + 2 * u8::from(self.project_id.is_some())
            + 4 * u8::from(self.card_id.is_some())
    }

    /// The tenant this scope belongs to (user and workspace).
    pub fn tenant(&self) -> Tenant {
        Tenant {
            user_id: self.user_id.clone(),
            workspace_id: self.workspace_id.clone(),
        }
    }
}

/// Scopes are ordered field by field, in the order of their declaration
/// (user, workspace, project, card, session; `None` first), as a derived
/// `Ord` would. A scope compared with itself is equal without reading its
/// fields: the engine's ordered keys hold one shared copy of each scope
/// (`engine/interner.rs`), so most of their comparisons are of a copy with
/// itself, which compared every field before. Equal addresses mean the
/// same value, so the order stays total and consistent with `Eq`.
impl Ord for Scope {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if std::ptr::eq(self, other) {
            return std::cmp::Ordering::Equal;
        }
        type Fields<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
        fn fields(s: &Scope) -> Fields<'_> {
            (
                &s.user_id,
                &s.workspace_id,
                s.project_id.as_deref(),
                s.card_id.as_deref(),
                s.session_id.as_deref(),
            )
        }
        fields(self).cmp(&fields(other))
    }
}

impl PartialOrd for Scope {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A user's workspace: the unit of isolation. Indexes and statistics never
/// mix tenants.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant {
    /// The user.
    pub user_id: String,
    /// The workspace.
    pub workspace_id: String,
}

/// A filter on scopes used by `list`, `deleteAll`, `export` and `stats`:
/// every field that is set must be equal in the memory's scope; unset
/// fields match anything. `metadata` also narrows to the memories whose
/// metadata holds each of its keys with an equal value (files, which have
/// no metadata, are then not selected).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeFilter {
    /// Required user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Required workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Required project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Required card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_id: Option<String>,
    /// Required session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Required metadata: each key with an equal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl ScopeFilter {
    /// True when the memory's scope and metadata match the filter.
    pub fn matches_item(&self, item: &MemoryItem) -> bool {
        self.matches_parts(&item.scope, item.metadata.as_ref())
    }

    /// [`ScopeFilter::matches_item`] given a memory's scope and metadata.
    pub(crate) fn matches_parts(&self, scope: &Scope, metadata: Option<&Metadata>) -> bool {
        self.matches(scope) && metadata::matches(metadata, self.metadata.as_ref())
    }

    /// True when the filter selects files of `scope`: its scope fields
    /// match and it sets no metadata.
    pub fn matches_files_of(&self, scope: &Scope) -> bool {
        self.matches(scope) && self.metadata.as_ref().is_none_or(|m| m.is_empty())
    }

    /// True when every scope field set in the filter equals the scope's
    /// field (metadata aside).
    pub fn matches(&self, scope: &Scope) -> bool {
        fn eq(want: &Option<String>, have: Option<&String>) -> bool {
            want.as_ref().is_none_or(|w| Some(w) == have)
        }
        eq(&self.user_id, Some(&scope.user_id))
            && eq(&self.workspace_id, Some(&scope.workspace_id))
            && eq(&self.project_id, scope.project_id.as_ref())
            && eq(&self.card_id, scope.card_id.as_ref())
            && eq(&self.session_id, scope.session_id.as_ref())
    }

    /// How many fields are set: how narrow the filter is.
    pub fn fields(&self) -> usize {
        [
            &self.user_id,
            &self.workspace_id,
            &self.project_id,
            &self.card_id,
            &self.session_id,
        ]
        .iter()
        .filter(|f| f.is_some())
        .count()
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self == &ScopeFilter::default()
    }
}

impl From<&Scope> for ScopeFilter {
    fn from(scope: &Scope) -> Self {
        ScopeFilter {
            user_id: Some(scope.user_id.clone()),
            workspace_id: Some(scope.workspace_id.clone()),
            project_id: scope.project_id.clone(),
            card_id: scope.card_id.clone(),
            session_id: scope.session_id.clone(),
            metadata: None,
        }
    }
}

/// Provenance of one duplicate that was merged into an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MergeRecord {
    /// Where the duplicate came from.
    pub source: Source,
    /// When the duplicate was merged.
    pub merged_at: Timestamp,
    /// When the duplicate was said (its `createdAt`).
    pub created_at: Timestamp,
    /// The duplicate's own text when it differed (near-duplicates); absent
    /// for exact duplicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryItem {
    /// Stable identifier (`[A-Za-z0-9_-]`, at most 256 bytes).
    pub id: String,
    /// Normalized text with private spans removed.
    pub text: String,
    /// What sort of memory this is.
    pub kind: Kind,
    /// Who and what it belongs to.
    pub scope: Scope,
    /// Review state.
    pub status: Status,
    /// Curated hot memory: injected first.
    #[serde(default)]
    pub pinned: bool,
    /// Provenance.
    pub source: Source,
    /// sha256 of `text`, lowercase hex.
    pub content_hash: String,
    /// Who said it, for a memory of a conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The speaker's name (`Caroline`), when the conversation names it;
    /// ranking's speaker match reads it ([`crate::rank`], step 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Privacy markers.
    #[serde(default)]
    pub privacy: Privacy,
    /// When it was said or written.
    pub created_at: Timestamp,
    /// When the item last changed.
    pub updated_at: Timestamp,
    /// When retrieval last returned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Timestamp>,
    /// How many times retrieval returned it.
    #[serde(default)]
    pub usage_count: u64,
    /// Duplicates merged into this item.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergeRecord>,
    /// The memory captured just before this one in the same conversation
    /// (same scope, at most 30 minutes earlier): the thread link ranking uses
    /// to let an answer inherit the relevance of the question it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<String>,
    /// Soft-delete marker: when set the item is suppressed (never retrieved,
    /// and re-ingesting the same text does not bring it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<Timestamp>,
    /// For a chunk of a synced file (see [`crate::files`]): the lines of the
    /// file (`source.ref`) it holds. Only file sync sets it; such memories
    /// belong to their file, which replaces them when it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_lines: Option<LineRange>,
    /// The caller's key: unique among the memories of exactly this scope,
    /// so `upsert` replaces the memory instead of adding another. Keyed
    /// memories are records the caller manages: they are never merged with
    /// duplicates and join no conversation thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Free-form JSON object the caller attached (at most
    /// `maxMetadataBytes` of JSON); retrieval, listing, export and
    /// `deleteAll` filter on it by equality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// The changes made to the memory after it was stored (see
    /// [`crate::history`]; `created` and merges are not stored here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEvent>,
    /// When a newer memory took this one's place (`docs/memory-model.md`,
    /// "Supersession"): a superseded memory is never retrieved or injected
    /// but stays readable until it is hard-deleted. It stays set when the
    /// successor is erased: an erasure does not bring an old fact back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<Timestamp>,
    /// The memory that took this one's place (absent once that one is
    /// hard-deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The memories this one took the place of, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    /// For a summary `summarize` stored: the ids of the memories it
    /// summarizes, ascending. A hard delete of any of them erases the
    /// summary in the same commit, since its text may repeat theirs
    /// (`docs/memory-model.md`, "Summaries").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary_of: Vec<String>,
    /// For a summary soft-deleted because one of its sources was: it comes
    /// back when all its sources are live again (`docs/memory-model.md`,
    /// "Summaries"). Set only while `deletedAt` is. A mark of its own, not
    /// read from `history`, whose oldest events are dropped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
}

impl MemoryItem {
    /// When the item's retention ends, if it has one.
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.privacy
            .retention_days
            .map(|days| self.created_at.plus_days(days))
    }

    /// True when the retention period has passed at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|end| now >= end)
    }

    /// True when a field most memories leave empty is set (merges,
    /// metadata, history, supersession, a summary's sources): such a
    /// memory is written whole, as JSON, where a compact form names only
    /// the common fields (a catalog row's rest, its JSON length).
    pub(crate) fn has_rare_fields(&self) -> bool {
        !self.merged_from.is_empty()
            || self.metadata.is_some()
            || !self.history.is_empty()
            || self.superseded_at.is_some()
            || self.superseded_by.is_some()
            || !self.supersedes.is_empty()
            || !self.summary_of.is_empty()
    }

    /// True when soft-deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted_at.is_some()
    }

    /// True when a newer memory took its place.
    pub fn is_superseded(&self) -> bool {
        self.superseded_at.is_some()
    }

    /// True when the record holds a field of version 5 records
    /// (`docs/format.md`, section 2.1): a key, metadata, history, who said
    /// it, a supersession link, the sources of a summary or its withdrawal.
    pub fn uses_v5_fields(&self) -> bool {
        self.key.is_some()
            || self.metadata.is_some()
            || !self.history.is_empty()
            || self.role.is_some()
            || self.speaker.is_some()
            || self.superseded_at.is_some()
            || !self.supersedes.is_empty()
            || !self.summary_of.is_empty()
            || self.withdrawn
    }

    /// The place this chunk of a file holds, when it is one: the file's path
    /// and the chunk's lines.
    pub fn file_location(&self) -> Option<(&str, LineRange)> {
        match (self.source.kind, self.source_lines) {
            (SourceKind::File, Some(lines)) => Some((&self.source.reference, lines)),
            _ => None,
        }
    }

    /// True for a chunk of a synced file. Chunks belong to their file: they
    /// are never merged with other memories as duplicates, never join a
    /// conversation thread, and their text changes only with the file.
    pub fn is_file_chunk(&self) -> bool {
        self.file_location().is_some()
    }

    /// What a reader cites this memory by: `path#Lstart-Lend` for a chunk of
    /// a file, `memory:<id>` for any other memory.
    pub fn citation(&self) -> String {
        match self.file_location() {
            Some((path, lines)) => format!("{path}#{lines}"),
            None => format!("memory:{}", self.id),
        }
    }
}

/// Checks an identifier-like string: non-empty, at most [`MAX_ID_BYTES`],
/// no control characters.
pub fn validate_id(field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(Error::invalid(format!("{field} must not be empty")));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(Error::invalid(format!(
            "{field} is {} bytes long; the limit is {MAX_ID_BYTES}",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "{field} must not contain control characters"
        )));
    }
    Ok(())
}

/// Checks a memory id: `[A-Za-z0-9_-]`, 1..=256 bytes.
pub fn validate_item_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "`{}` is not a memory id (expected 1-256 characters of A-Z a-z 0-9 _ -)",
            id.chars().take(64).collect::<String>()
        )))
    }
}

#[cfg(test)]
impl MemoryItem {
    /// A memory for unit tests: `text` as a fact of the scope `u`/`w`,
    /// approved, made at the epoch, every optional field unset.
    /// Tests set what they need with `..MemoryItem::example(id, text)`.
    pub(crate) fn example(id: &str, text: &str) -> MemoryItem {
        // Read from JSON as a stored record is, so that a field added
        // later takes its default here instead of needing a line.
        let epoch = Timestamp(0);
        serde_json::from_value(serde_json::json!({
            "id": id, "text": text, "kind": Kind::Fact,
            "scope": Scope::workspace("u", "w"), "status": Status::Approved,
            "source": Source::default(), "contentHash": "",
            "createdAt": epoch, "updatedAt": epoch,
        }))
        .expect("the fields every memory has")
    }

    /// A memory as ingest stores one: an episode of the scope
    /// `carol`/`garden` with a content hash of 64 hex digits, made at
    /// 2023-11-14T22:13:20Z, every optional field unset. The stored forms'
    /// tests (catalog rows, the JSON length) start from it.
    pub(crate) fn stored_example() -> MemoryItem {
        let made = Timestamp(1_700_000_000_000);
        MemoryItem {
            kind: Kind::Episodic,
            scope: Scope::workspace("carol", "garden"),
            content_hash: "9d19118d641939e07e91bd8dec6a1d5380794462ec904c207cedb5ae609a31fb"
                .to_string(),
            created_at: made,
            updated_at: made,
            ..MemoryItem::example("m1", "Carol: the shed key hangs by the door")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        let t = Timestamp::parse_rfc3339("2023-05-08T13:56:00+02:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-08T11:56:00.000Z");
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()).unwrap(), t);
        assert!(Timestamp::parse_rfc3339("8 May 2023").is_err());
        assert!(Timestamp::from_millis(i64::MAX).is_err());
    }

    #[test]
    fn scope_visibility_only_widens_to_ancestors() {
        let ws = Scope::workspace("u", "w");
        let proj = ws.clone().with_project("p");
        let card = proj.clone().with_card("c");
        assert!(ws.is_visible_from(&card));
        assert!(proj.is_visible_from(&card));
        assert!(card.is_visible_from(&card));
        assert!(!card.is_visible_from(&proj));
        assert!(!proj.is_visible_from(&ws));
        assert!(!ws.is_visible_from(&Scope::workspace("u", "other")));
        assert!(!ws.is_visible_from(&Scope::workspace("other", "w")));
        assert!(card.specificity() > proj.specificity());
        assert!(proj.specificity() > ws.specificity());
    }

    #[test]
    fn scopes_order_field_by_field_and_a_scope_equals_itself() {
        let values = [None, Some(""), Some("a"), Some("b")];
        let mut scopes = Vec::new();
        for user in ["", "a", "b"] {
            for workspace in ["a", "b"] {
                for project in values {
                    for card in values {
                        for session in values {
                            scopes.push(Scope {
                                user_id: user.into(),
                                workspace_id: workspace.into(),
                                project_id: project.map(String::from),
                                card_id: card.map(String::from),
                                session_id: session.map(String::from),
                            });
                        }
                    }
                }
            }
        }
        // The order a derived `Ord` gives: the fields as a tuple.
        let fields = |s: &Scope| {
            (
                s.user_id.clone(),
                s.workspace_id.clone(),
                s.project_id.clone(),
                s.card_id.clone(),
                s.session_id.clone(),
            )
        };
        for a in &scopes {
            assert_eq!(a.cmp(a), std::cmp::Ordering::Equal);
            for b in &scopes {
                let copy = b.clone();
                assert_eq!(a.cmp(&copy), fields(a).cmp(&fields(b)), "{a:?} {b:?}");
                assert_eq!(a.cmp(&copy).is_eq(), *a == copy);
                assert_eq!(a.partial_cmp(&copy), Some(a.cmp(&copy)));
            }
        }
    }

    #[test]
    fn unknown_fields_and_enum_values_are_rejected() {
        let bad_kind = r#"{"userId":"u","workspaceId":"w","projectid":"x"}"#;
        assert!(serde_json::from_str::<Scope>(bad_kind).is_err());
        assert!(serde_json::from_str::<Kind>("\"opinion\"").is_err());
        assert_eq!(
            serde_json::from_str::<Kind>("\"fact\"").unwrap(),
            Kind::Fact
        );
    }

    #[test]
    fn item_ids_are_validated() {
        assert!(validate_item_id("mem_01ABC-x").is_ok());
        assert!(validate_item_id("").is_err());
        assert!(validate_item_id("../etc").is_err());
        assert!(validate_item_id(&"a".repeat(300)).is_err());
    }
}
