//! The conversions between the WIT types of `wit/` and memtide's: requests
//! in (RFC 3339 timestamps parsed as the JSON API parses them), results out,
//! and every failure as the WIT `error` record with its stable code.

use memtide::{
    Admission, DeleteAllResult, Dropped, FileSync, FileSyncOutcome, HistoryEvent, HistoryKind,
    HotFileSync, ImportResult, IngestOutcome, IngestReason, IngestResult, InjectFormat, Injection,
    Kind, LineRange, ListPage, ListQuery, MemoryInput, MemoryItem, MemoryPatch, MemoryToolResult,
    MergeRecord, MessageOptions, Metadata, OperationsResult, PartType, Privacy, RetrieveHit,
    RetrieveQuery, Role, Scope, ScopeFilter, ScopeOrder, ScoreBreakdown, Sessions, Source,
    SourceKind, Stats, Status, StoredFile, Timestamp,
};

use crate::generated::exports::memtide::memory::types as w;
use crate::WitResult;

/// The WIT `error` record of `error`: its stable code and its message.
pub(crate) fn error(error: memtide::Error) -> w::Error {
    use memtide::Error as E;
    let code = match &error {
        E::InvalidInput(_) => w::ErrorCode::InvalidInput,
        E::TooLarge { .. } => w::ErrorCode::TooLarge,
        E::NotFound(_) => w::ErrorCode::NotFound,
        E::Storage(_) => w::ErrorCode::Storage,
        E::QuotaExceeded(_) => w::ErrorCode::QuotaExceeded,
        E::Corrupt(_) => w::ErrorCode::Corrupt,
        E::VersionMismatch { .. } => w::ErrorCode::VersionMismatch,
        E::Model(_) => w::ErrorCode::Model,
        E::Aborted(_) => w::ErrorCode::Aborted,
        E::InvalidOperations(_) => w::ErrorCode::InvalidOperations,
    };
    w::Error {
        code,
        message: error.to_string(),
    }
}

/// A count for WIT (`usize` is 32 bits in wasm32: never saturates there).
pub(crate) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A WIT count as `usize` (lossless in wasm32).
pub(crate) fn size(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Parses an optional RFC 3339 timestamp; errors name the field.
fn timestamp(text: Option<String>, field: &str) -> memtide::Result<Option<Timestamp>> {
    text.map(|t| Timestamp::parse_rfc3339(&t).map_err(|e| e.at(field)))
        .transpose()
}

/// Parses optional metadata: the JSON text of an object.
fn metadata(text: Option<String>, field: &str) -> memtide::Result<Option<Metadata>> {
    text.map(|t| {
        serde_json::from_str::<Metadata>(&t).map_err(|e| {
            memtide::Error::invalid(format!("{field}: not the JSON text of an object: {e}"))
        })
    })
    .transpose()
}

/// Metadata as JSON text.
fn metadata_text(metadata: Option<Metadata>) -> Option<String> {
    metadata.map(|m| serde_json::Value::Object(m).to_string())
}

pub(crate) fn memory_inputs(inputs: Vec<w::MemoryInput>) -> WitResult<Vec<MemoryInput>> {
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| memory_input(input).map_err(|e| e.at(&format!("inputs[{i}]"))))
        .collect::<memtide::Result<Vec<_>>>()
        .map_err(error)
}

fn memory_input(input: w::MemoryInput) -> memtide::Result<MemoryInput> {
    Ok(MemoryInput {
        text: input.text,
        scope: input.scope.into(),
        kind: input.kind.map(Into::into),
        status: input.status.map(Into::into),
        pinned: input.pinned,
        source: input.source.map(Into::into),
        tags: input.tags,
        privacy: input.privacy.map(Into::into),
        created_at: timestamp(input.created_at, "createdAt")?,
        key: input.key,
        metadata: metadata(input.metadata, "metadata")?,
        role: input.role.map(Into::into),
        speaker: input.speaker,
        supersede: input.supersede,
    })
}

pub(crate) fn message_options(options: w::MessageOptions) -> memtide::Result<MessageOptions> {
    Ok(MessageOptions {
        include: options
            .include
            .map(|parts| parts.into_iter().map(Into::into).collect()),
        roles: roles(options.roles),
        speakers: options.speakers.map(|speakers| {
            speakers
                .into_iter()
                .map(|s| (s.role.into(), s.name))
                .collect()
        }),
        kind: options.kind.map(Into::into),
        status: options.status.map(Into::into),
        tags: options.tags,
        privacy: options.privacy.map(Into::into),
        created_at: timestamp(options.created_at, "createdAt")?,
        ..MessageOptions::new(options.scope.into())
    })
}

fn roles(roles: Option<Vec<w::Role>>) -> Option<Vec<Role>> {
    roles.map(|roles| roles.into_iter().map(Into::into).collect())
}

impl From<w::Role> for Role {
    fn from(role: w::Role) -> Self {
        match role {
            w::Role::User => Role::User,
            w::Role::Assistant => Role::Assistant,
            w::Role::System => Role::System,
        }
    }
}

impl From<Role> for w::Role {
    fn from(role: Role) -> Self {
        match role {
            Role::User => w::Role::User,
            Role::Assistant => w::Role::Assistant,
            Role::System => w::Role::System,
        }
    }
}

impl From<w::PartType> for PartType {
    fn from(part: w::PartType) -> Self {
        match part {
            w::PartType::Text => PartType::Text,
            w::PartType::Reasoning => PartType::Reasoning,
            w::PartType::ToolCall => PartType::ToolCall,
            w::PartType::ToolResult => PartType::ToolResult,
            w::PartType::Image => PartType::Image,
            w::PartType::File => PartType::File,
        }
    }
}

pub(crate) fn retrieve_query(query: w::RetrieveQuery) -> memtide::Result<RetrieveQuery> {
    Ok(RetrieveQuery {
        text: query.text,
        scope: query.scope.into(),
        limit: query.limit.map(size),
        kinds: kinds(query.kinds),
        roles: roles(query.roles),
        tags: query.tags,
        since: timestamp(query.since, "since")?,
        until: timestamp(query.until, "until")?,
        metadata: metadata(query.metadata, "metadata")?,
        dry_run: query.dry_run,
        explain: query.explain,
        include_pending: query.include_pending,
        include_pii: query.include_pii,
        min_relevance: query.min_relevance,
        sessions: query.sessions.map(Sessions::from).unwrap_or_default(),
        scope_order: query.scope_order.map(ScopeOrder::from).unwrap_or_default(),
    })
}

pub(crate) fn list_query(query: w::ListQuery) -> memtide::Result<ListQuery> {
    Ok(ListQuery {
        scope: query
            .scope
            .map(scope_filter)
            .transpose()?
            .unwrap_or_default(),
        kinds: kinds(query.kinds),
        statuses: query
            .statuses
            .map(|statuses| statuses.into_iter().map(Into::into).collect()),
        roles: roles(query.roles),
        tags: query.tags,
        pinned: query.pinned,
        include_deleted: query.include_deleted,
        since: timestamp(query.since, "since")?,
        until: timestamp(query.until, "until")?,
        limit: query.limit.map(size),
        cursor: query.cursor,
        include_superseded: query.include_superseded.unwrap_or(false),
    })
}

fn kinds(kinds: Option<Vec<w::Kind>>) -> Option<Vec<Kind>> {
    kinds.map(|kinds| kinds.into_iter().map(Into::into).collect())
}

pub(crate) fn memory_patch(patch: w::MemoryPatch) -> memtide::Result<MemoryPatch> {
    Ok(MemoryPatch {
        text: patch.text,
        kind: patch.kind.map(Into::into),
        status: patch.status.map(Into::into),
        pinned: patch.pinned,
        tags: patch.tags,
        privacy: patch.privacy.map(Into::into),
        source: patch.source.map(Into::into),
        metadata: metadata(patch.metadata, "metadata")?,
        deleted: patch.deleted,
        role: patch.role.map(Into::into),
        speaker: patch.speaker,
    })
}

impl From<w::Scope> for Scope {
    fn from(scope: w::Scope) -> Self {
        Scope {
            user_id: scope.user_id,
            workspace_id: scope.workspace_id,
            project_id: scope.project_id,
            card_id: scope.card_id,
            session_id: scope.session_id,
        }
    }
}

impl From<Scope> for w::Scope {
    fn from(scope: Scope) -> Self {
        w::Scope {
            user_id: scope.user_id,
            workspace_id: scope.workspace_id,
            project_id: scope.project_id,
            card_id: scope.card_id,
            session_id: scope.session_id,
        }
    }
}

pub(crate) fn scope_filter(filter: w::ScopeFilter) -> memtide::Result<ScopeFilter> {
    Ok(ScopeFilter {
        user_id: filter.user_id,
        workspace_id: filter.workspace_id,
        project_id: filter.project_id,
        card_id: filter.card_id,
        session_id: filter.session_id,
        metadata: metadata(filter.metadata, "scope.metadata")?,
    })
}

impl From<w::Source> for Source {
    fn from(source: w::Source) -> Self {
        Source {
            kind: source.kind.into(),
            reference: source.ref_,
            uri: source.uri,
        }
    }
}

impl From<Source> for w::Source {
    fn from(source: Source) -> Self {
        w::Source {
            kind: source.kind.into(),
            ref_: source.reference,
            uri: source.uri,
        }
    }
}

impl From<w::Privacy> for Privacy {
    fn from(privacy: w::Privacy) -> Self {
        Privacy {
            pii: privacy.pii,
            private: privacy.private,
            retention_days: privacy.retention_days,
        }
    }
}

impl From<Privacy> for w::Privacy {
    fn from(privacy: Privacy) -> Self {
        w::Privacy {
            pii: privacy.pii,
            private: privacy.private,
            retention_days: privacy.retention_days,
        }
    }
}

impl From<w::Kind> for Kind {
    fn from(kind: w::Kind) -> Self {
        match kind {
            w::Kind::Episodic => Kind::Episodic,
            w::Kind::Semantic => Kind::Semantic,
            w::Kind::Preference => Kind::Preference,
            w::Kind::Document => Kind::Document,
            w::Kind::Summary => Kind::Summary,
            w::Kind::Fact => Kind::Fact,
        }
    }
}

impl From<Kind> for w::Kind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Episodic => w::Kind::Episodic,
            Kind::Semantic => w::Kind::Semantic,
            Kind::Preference => w::Kind::Preference,
            Kind::Document => w::Kind::Document,
            Kind::Summary => w::Kind::Summary,
            Kind::Fact => w::Kind::Fact,
        }
    }
}

impl From<w::Status> for Status {
    fn from(status: w::Status) -> Self {
        match status {
            w::Status::Approved => Status::Approved,
            w::Status::Pending => Status::Pending,
            w::Status::Rejected => Status::Rejected,
        }
    }
}

impl From<Status> for w::Status {
    fn from(status: Status) -> Self {
        match status {
            Status::Approved => w::Status::Approved,
            Status::Pending => w::Status::Pending,
            Status::Rejected => w::Status::Rejected,
        }
    }
}

impl From<w::SourceKind> for SourceKind {
    fn from(kind: w::SourceKind) -> Self {
        match kind {
            w::SourceKind::Message => SourceKind::Message,
            w::SourceKind::File => SourceKind::File,
            w::SourceKind::Tool => SourceKind::Tool,
            w::SourceKind::Import => SourceKind::Import,
            w::SourceKind::Manual => SourceKind::Manual,
        }
    }
}

impl From<SourceKind> for w::SourceKind {
    fn from(kind: SourceKind) -> Self {
        match kind {
            SourceKind::Message => w::SourceKind::Message,
            SourceKind::File => w::SourceKind::File,
            SourceKind::Tool => w::SourceKind::Tool,
            SourceKind::Import => w::SourceKind::Import,
            SourceKind::Manual => w::SourceKind::Manual,
        }
    }
}

impl From<w::InjectFormat> for InjectFormat {
    fn from(format: w::InjectFormat) -> Self {
        match format {
            w::InjectFormat::Markdown => InjectFormat::Markdown,
            w::InjectFormat::Xml => InjectFormat::Xml,
        }
    }
}

impl From<w::Sessions> for Sessions {
    fn from(sessions: w::Sessions) -> Self {
        match sessions {
            w::Sessions::Current => Sessions::Current,
            w::Sessions::All => Sessions::All,
        }
    }
}

impl From<w::ScopeOrder> for ScopeOrder {
    fn from(order: w::ScopeOrder) -> Self {
        match order {
            w::ScopeOrder::Blend => ScopeOrder::Blend,
            w::ScopeOrder::Strict => ScopeOrder::Strict,
        }
    }
}

impl From<MergeRecord> for w::MergeRecord {
    fn from(record: MergeRecord) -> Self {
        w::MergeRecord {
            source: record.source.into(),
            merged_at: record.merged_at.to_rfc3339(),
            created_at: record.created_at.to_rfc3339(),
            text: record.text,
        }
    }
}

impl From<MemoryItem> for w::MemoryItem {
    fn from(item: MemoryItem) -> Self {
        w::MemoryItem {
            id: item.id,
            text: item.text,
            kind: item.kind.into(),
            scope: item.scope.into(),
            status: item.status.into(),
            pinned: item.pinned,
            source: item.source.into(),
            content_hash: item.content_hash,
            role: item.role.map(Into::into),
            speaker: item.speaker,
            tags: item.tags,
            privacy: item.privacy.into(),
            created_at: item.created_at.to_rfc3339(),
            updated_at: item.updated_at.to_rfc3339(),
            last_used_at: item.last_used_at.map(Timestamp::to_rfc3339),
            usage_count: item.usage_count,
            merged_from: item.merged_from.into_iter().map(Into::into).collect(),
            follows: item.follows,
            deleted_at: item.deleted_at.map(Timestamp::to_rfc3339),
            source_lines: item.source_lines.map(Into::into),
            key: item.key,
            metadata: metadata_text(item.metadata),
            superseded_at: item.superseded_at.map(Timestamp::to_rfc3339),
            superseded_by: item.superseded_by,
            supersedes: item.supersedes,
            summary_of: item.summary_of,
            withdrawn: item.withdrawn,
        }
    }
}

impl From<OperationsResult> for w::OperationsResult {
    fn from(result: OperationsResult) -> Self {
        w::OperationsResult {
            added: result.added,
            merged: result.merged,
            superseded: result
                .superseded
                .into_iter()
                .map(|s| w::Supersession { id: s.id, by: s.by })
                .collect(),
            deleted: result.deleted,
        }
    }
}

impl From<HistoryEvent> for w::HistoryEvent {
    fn from(event: HistoryEvent) -> Self {
        w::HistoryEvent {
            event: match event.event {
                HistoryKind::Created => w::HistoryKind::Created,
                HistoryKind::Merged => w::HistoryKind::Merged,
                HistoryKind::Updated => w::HistoryKind::Updated,
                HistoryKind::Replaced => w::HistoryKind::Replaced,
                HistoryKind::Status => w::HistoryKind::Status,
                HistoryKind::Pinned => w::HistoryKind::Pinned,
                HistoryKind::Deleted => w::HistoryKind::Deleted,
                HistoryKind::Restored => w::HistoryKind::Restored,
                HistoryKind::Superseded => w::HistoryKind::Superseded,
                HistoryKind::Supersedes => w::HistoryKind::Supersedes,
                HistoryKind::Withdrawn => w::HistoryKind::Withdrawn,
            },
            at: event.at.to_rfc3339(),
            fields: event.fields,
            status: event.status.map(Into::into),
            pinned: event.pinned,
            other: event.other,
        }
    }
}

impl From<LineRange> for w::LineRange {
    fn from(lines: LineRange) -> Self {
        w::LineRange {
            start: lines.start,
            end: lines.end,
        }
    }
}

impl From<FileSync> for w::FileSync {
    fn from(sync: FileSync) -> Self {
        w::FileSync {
            path: sync.path,
            outcome: match sync.outcome {
                FileSyncOutcome::Created => w::FileSyncOutcome::Created,
                FileSyncOutcome::Updated => w::FileSyncOutcome::Updated,
                FileSyncOutcome::Unchanged => w::FileSyncOutcome::Unchanged,
            },
            chunks: sync.chunks,
            removed: count(sync.removed),
        }
    }
}

impl From<StoredFile> for w::StoredFile {
    fn from(file: StoredFile) -> Self {
        w::StoredFile {
            scope: file.scope.into(),
            path: file.path,
            content: file.content,
            content_hash: file.content_hash,
            updated_at: file.updated_at.to_rfc3339(),
        }
    }
}

impl From<MemoryToolResult> for w::MemoryToolResult {
    fn from(result: MemoryToolResult) -> Self {
        w::MemoryToolResult {
            content: result.content,
            is_error: result.is_error,
        }
    }
}

impl From<HotFileSync> for w::HotFileSync {
    fn from(sync: HotFileSync) -> Self {
        w::HotFileSync {
            added: sync.added,
            updated: sync.updated,
            pinned: sync.pinned,
            unpinned: sync.unpinned,
        }
    }
}

impl From<IngestResult> for w::IngestResult {
    fn from(result: IngestResult) -> Self {
        w::IngestResult {
            id: result.id,
            outcome: match result.outcome {
                IngestOutcome::Added => w::IngestOutcome::Added,
                IngestOutcome::Merged => w::IngestOutcome::Merged,
                IngestOutcome::Replaced => w::IngestOutcome::Replaced,
                IngestOutcome::Skipped => w::IngestOutcome::Skipped,
                IngestOutcome::Superseded => w::IngestOutcome::Superseded,
            },
            reason: result.reason.map(|reason| match reason {
                IngestReason::Duplicate => w::IngestReason::Duplicate,
                IngestReason::NearDuplicate => w::IngestReason::NearDuplicate,
                IngestReason::NoMemory => w::IngestReason::NoMemory,
                IngestReason::Private => w::IngestReason::Private,
                IngestReason::Suppressed => w::IngestReason::Suppressed,
                IngestReason::NotCaptured => w::IngestReason::NotCaptured,
            }),
            similar_to: result.similar_to,
        }
    }
}

impl From<ScoreBreakdown> for w::ScoreBreakdown {
    fn from(score: ScoreBreakdown) -> Self {
        w::ScoreBreakdown {
            lexical: score.lexical,
            semantic: score.semantic,
            coverage: score.coverage,
            combined: score.combined,
            inherited: score.inherited,
            speaker_factor: score.speaker_factor,
            time_factor: score.time_factor,
            scope_multiplier: score.scope_multiplier,
            fused: score.fused,
            relevance: score.relevance,
        }
    }
}

impl From<Admission> for w::Admission {
    fn from(admission: Admission) -> Self {
        let names = |names: Vec<&str>| names.into_iter().map(str::to_string).collect();
        w::Admission {
            scope_fields: names(admission.scope_fields),
            status: admission.status.into(),
            pii: admission.pii,
            expires_at: admission.expires_at.map(Timestamp::to_rfc3339),
            filters: names(admission.filters),
        }
    }
}

impl From<RetrieveHit> for w::RetrieveHit {
    fn from(hit: RetrieveHit) -> Self {
        w::RetrieveHit {
            item: hit.item.into(),
            citation: hit.citation,
            score: hit.score,
            relevance: hit.relevance,
            explain: hit.explain.map(Into::into),
            policy: hit.policy.map(Into::into),
        }
    }
}

impl From<Dropped> for w::Dropped {
    fn from(dropped: Dropped) -> Self {
        w::Dropped {
            id: dropped.id,
            tokens: count(dropped.tokens),
        }
    }
}

impl From<Injection> for w::Injection {
    fn from(injection: Injection) -> Self {
        let citations = injection
            .citations
            .into_iter()
            .map(|c| w::Citation {
                tag: c.tag,
                id: c.id,
            })
            .collect();
        w::Injection {
            block: injection.block,
            used: injection.used,
            citations,
            tokens: count(injection.tokens),
            dropped: injection.dropped.into_iter().map(Into::into).collect(),
            estimated: injection.estimated,
        }
    }
}

impl From<ListPage> for w::ListPage {
    fn from(page: ListPage) -> Self {
        w::ListPage {
            items: page.items.into_iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
        }
    }
}

impl From<DeleteAllResult> for w::DeleteAllResult {
    fn from(result: DeleteAllResult) -> Self {
        w::DeleteAllResult {
            deleted: count(result.deleted),
            hard: result.hard,
            summaries: count(result.summaries),
        }
    }
}

impl From<ImportResult> for w::ImportResult {
    fn from(result: ImportResult) -> Self {
        w::ImportResult {
            added: count(result.added),
            replaced: count(result.replaced),
            merged: count(result.merged),
            files: count(result.files),
        }
    }
}

impl From<Stats> for w::Stats {
    fn from(stats: Stats) -> Self {
        w::Stats {
            items: count(stats.items),
            active: count(stats.active),
            deleted: count(stats.deleted),
            pending: count(stats.pending),
            rejected: count(stats.rejected),
            pinned: count(stats.pinned),
            by_kind: Kind::ALL
                .into_iter()
                .filter_map(|kind| {
                    let n = stats.by_kind.get(kind.as_str())?;
                    Some(w::KindCount {
                        kind: kind.into(),
                        count: count(*n),
                    })
                })
                .collect(),
            tenants: count(stats.tenants),
            indexed_terms: count(stats.indexed_terms),
            stored_bytes: u64::try_from(stats.stored_bytes).unwrap_or(u64::MAX),
            embedded: count(stats.embedded),
            retrieval_mode: match stats.retrieval_mode.as_str() {
                "hybrid" => w::RetrievalMode::Hybrid,
                _ => w::RetrievalMode::Lexical,
            },
            model: stats.model,
            token_counting: match stats.token_counting.as_str() {
                "tokenizer" => w::TokenCounting::Tokenizer,
                _ => w::TokenCounting::Estimate,
            },
            format_version: stats.format_version,
        }
    }
}
