//! What may be retrieved and injected (`docs/design.md`, "Policies", 1).
//!
//! One function decides, so retrieval, injection and the `explain` output
//! agree: [`check`] returns `Ok` for an item a query may see, or the first
//! rule that excludes it; [`admission`] says which rules an admitted item met.

use serde::Serialize;

use crate::item::{Kind, MemoryItem, Role, Scope, Status, Timestamp};
use crate::metadata::{self, Metadata};
use crate::retention::RetentionConfig;

/// Why an item is not returned for a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Exclusion {
    /// Belongs to another tenant, or to a narrower or sibling scope.
    OutOfScope,
    /// Soft-deleted.
    Deleted,
    /// Rejected by a reviewer.
    Rejected,
    /// Pending review and the query did not ask for pending items.
    Pending,
    /// Marked private.
    Private,
    /// Contains PII and the query did not ask for it.
    Pii,
    /// Past its retention period.
    Expired,
    /// Kind not among the requested kinds.
    Kind,
    /// Said by none of the requested roles (or by no role).
    Role,
    /// Has none of the requested tags.
    Tag,
    /// Created outside the requested time range.
    TimeRange,
    /// Its metadata lacks a requested key or value.
    Metadata,
    /// A newer memory took its place (`supersededBy`).
    Superseded,
}

/// The query-side inputs of the policy.
#[derive(Debug, Clone, Copy)]
pub struct Visibility<'a> {
    /// The scope the query is made in.
    pub scope: &'a Scope,
    /// The current time (for retention).
    pub now: Timestamp,
    /// The store's retention policy.
    pub retention: &'a RetentionConfig,
    /// Whether the memories of every session of the scope are visible
    /// (`sessions: "all"`), or only those of the query's own session.
    pub all_sessions: bool,
    /// Also return pending items.
    pub include_pending: bool,
    /// Also return items marked as containing PII.
    pub include_pii: bool,
    /// Only these kinds, when given.
    pub kinds: Option<&'a [Kind]>,
    /// Only items said by one of these roles, when given.
    pub roles: Option<&'a [Role]>,
    /// Only items carrying at least one of these tags, when given.
    pub tags: Option<&'a [String]>,
    /// Only items created at or after this time.
    pub since: Option<Timestamp>,
    /// Only items created before this time.
    pub until: Option<Timestamp>,
    /// Only items whose metadata holds each of these keys with an equal
    /// value.
    pub metadata: Option<&'a Metadata>,
}

/// How an admitted item met the policy for a query: returned with each hit
/// of a query that asks to `explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// The scope fields the query had to match: `userId` and `workspaceId`,
    /// then each narrowing field (`projectId`, `cardId`, `sessionId`) the
    /// memory sets.
    pub scope_fields: Vec<&'static str>,
    /// `approved`, or `pending` when the query included pending items.
    pub status: Status,
    /// True when the item is marked as holding PII and the query included it.
    pub pii: bool,
    /// When the item's retention ends, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// The query's filters the item satisfied, of `kinds`, `roles`, `tags`,
    /// `since`, `until` and `metadata`, in that order.
    pub filters: Vec<&'static str>,
}

/// Describes how `item` met the policy for `vis`; meaningful only for an
/// item [`check`] admits.
pub fn admission(item: &MemoryItem, vis: &Visibility<'_>) -> Admission {
    let scope = &item.scope;
    let narrowing = [
        ("projectId", scope.project_id.is_some()),
        ("cardId", scope.card_id.is_some()),
        // Another session's memory, seen with `sessions: "all"`, did not
        // have to match on its session.
        (
            "sessionId",
            scope.session_id.is_some() && scope.session_id == vis.scope.session_id,
        ),
    ];
    let scope_fields = ["userId", "workspaceId"]
        .into_iter()
        .chain(
            narrowing
                .into_iter()
                .filter(|&(_, matched)| matched)
                .map(|(name, _)| name),
        )
        .collect();
    let filters = [
        ("kinds", vis.kinds.is_some()),
        ("roles", vis.roles.is_some()),
        ("tags", vis.tags.is_some()),
        ("since", vis.since.is_some()),
        ("until", vis.until.is_some()),
        ("metadata", vis.metadata.is_some_and(|m| !m.is_empty())),
    ]
    .into_iter()
    .filter(|&(_, set)| set)
    .map(|(name, _)| name)
    .collect();
    Admission {
        scope_fields,
        status: item.status,
        pii: item.privacy.pii,
        expires_at: vis.retention.expires_at(item),
        filters,
    }
}

/// What the policy reads of a memory. The engine's catalog answers these
/// for a memory it holds as its row without decoding it, so a query judges
/// every memory it walks and decodes only those it keeps
/// (`docs/speed.md`, "Native retrieval since the rows are held after a
/// write").
pub(crate) trait Policed {
    fn scope(&self) -> &Scope;
    fn is_deleted(&self) -> bool;
    fn is_superseded(&self) -> bool;
    fn status(&self) -> Status;
    fn is_private(&self) -> bool;
    fn has_pii(&self) -> bool;
    /// Days the memory's own retention keeps it, when it has one.
    fn retention_days(&self) -> Option<u32>;
    fn is_file_chunk(&self) -> bool;
    fn kind(&self) -> Kind;
    fn role(&self) -> Option<Role>;
    /// True when the memory carries one of `tags`.
    fn has_any_tag(&self, tags: &[String]) -> bool;
    fn created_at(&self) -> Timestamp;
    fn metadata(&self) -> Option<&Metadata>;
}

impl Policed for MemoryItem {
    fn scope(&self) -> &Scope {
        &self.scope
    }
    fn is_deleted(&self) -> bool {
        MemoryItem::is_deleted(self)
    }
    fn is_superseded(&self) -> bool {
        MemoryItem::is_superseded(self)
    }
    fn status(&self) -> Status {
        self.status
    }
    fn is_private(&self) -> bool {
        self.privacy.private
    }
    fn has_pii(&self) -> bool {
        self.privacy.pii
    }
    fn retention_days(&self) -> Option<u32> {
        self.privacy.retention_days
    }
    fn is_file_chunk(&self) -> bool {
        MemoryItem::is_file_chunk(self)
    }
    fn kind(&self) -> Kind {
        self.kind
    }
    fn role(&self) -> Option<Role> {
        self.role
    }
    fn has_any_tag(&self, tags: &[String]) -> bool {
        tags.iter().any(|t| self.tags.contains(t))
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }
}

/// Decides whether `item` may be returned for the query described by
/// `vis`: a decoded memory, or a row the engine's catalog holds.
pub(crate) fn check<P: Policed + ?Sized>(item: &P, vis: &Visibility<'_>) -> Result<(), Exclusion> {
    if !item.scope().is_visible_across(vis.scope, vis.all_sessions) {
        return Err(Exclusion::OutOfScope);
    }
    if item.is_deleted() {
        return Err(Exclusion::Deleted);
    }
    if item.is_superseded() {
        return Err(Exclusion::Superseded);
    }
    match item.status() {
        Status::Rejected => return Err(Exclusion::Rejected),
        Status::Pending if !vis.include_pending => return Err(Exclusion::Pending),
        _ => {}
    }
    if item.is_private() {
        return Err(Exclusion::Private);
    }
    if item.has_pii() && !vis.include_pii {
        return Err(Exclusion::Pii);
    }
    let expiry = vis.retention.expiry(
        item.scope(),
        item.created_at(),
        item.retention_days(),
        item.is_file_chunk(),
    );
    if expiry.is_some_and(|end| vis.now >= end) {
        return Err(Exclusion::Expired);
    }
    if vis.kinds.is_some_and(|kinds| !kinds.contains(&item.kind())) {
        return Err(Exclusion::Kind);
    }
    if vis
        .roles
        .is_some_and(|roles| !item.role().is_some_and(|r| roles.contains(&r)))
    {
        return Err(Exclusion::Role);
    }
    if vis.tags.is_some_and(|tags| !item.has_any_tag(tags)) {
        return Err(Exclusion::Tag);
    }
    let created_at = item.created_at();
    if vis.since.is_some_and(|since| created_at < since)
        || vis.until.is_some_and(|until| created_at >= until)
    {
        return Err(Exclusion::TimeRange);
    }
    if !metadata::matches(item.metadata(), vis.metadata) {
        return Err(Exclusion::Metadata);
    }
    Ok(())
}
