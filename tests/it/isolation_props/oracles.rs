//! Independent oracles: what may be returned, written out from the
//! policies without the crate's own policy code.

use super::*;

/// Whether a query made in `query.scope` may return `item` at `now`, written
/// out from `docs/design.md` ("Policies", 1) without the crate's own policy
/// code.
pub(super) fn visible(item: &MemoryItem, query: &RetrieveQuery, now: Timestamp) -> bool {
    fn narrows(item: &Option<String>, query: &Option<String>) -> bool {
        item.is_none() || item == query
    }
    let (s, q) = (&item.scope, &query.scope);
    let in_scope = s.user_id == q.user_id
        && s.workspace_id == q.workspace_id
        && narrows(&s.project_id, &q.project_id)
        && narrows(&s.card_id, &q.card_id)
        && (query.sessions == Sessions::All || narrows(&s.session_id, &q.session_id));
    let expired = item
        .privacy
        .retention_days
        .is_some_and(|days| now.0 >= item.created_at.0 + i64::from(days) * DAY_MS);
    in_scope
        && item.deleted_at.is_none()
        && item.status != Status::Rejected
        && (item.status != Status::Pending || query.include_pending)
        && !item.privacy.private
        && (!item.privacy.pii || query.include_pii)
        && !expired
}

/// Whether `item` shares an analysed term with the query.
pub(super) fn matches_terms(item: &MemoryItem, query_terms: &BTreeSet<String>) -> bool {
    text::terms(&item.text)
        .iter()
        .any(|t| query_terms.contains(t))
}

/// Ids of hits, in order.
pub(super) fn hit_ids(hits: &[RetrieveHit]) -> Vec<String> {
    hits.iter().map(|h| h.item.id.clone()).collect()
}

/// Whether `item` is the reply (thread follower) of a memory satisfying
/// `relevant`: such replies may inherit the relevance of their question.
pub(super) fn follows_one_of(
    item: &MemoryItem,
    items: &BTreeMap<String, MemoryItem>,
    relevant: &dyn Fn(&MemoryItem) -> bool,
) -> bool {
    item.follows
        .as_ref()
        .and_then(|prev| items.get(prev))
        .is_some_and(relevant)
}

/// Whether a scope filter selects `scope`: every field it sets is equal.
pub(super) fn selects(filter: &ScopeFilter, scope: &Scope) -> bool {
    fn eq(want: &Option<String>, have: Option<&String>) -> bool {
        want.as_ref().is_none_or(|w| Some(w) == have)
    }
    eq(&filter.user_id, Some(&scope.user_id))
        && eq(&filter.workspace_id, Some(&scope.workspace_id))
        && eq(&filter.project_id, scope.project_id.as_ref())
        && eq(&filter.card_id, scope.card_id.as_ref())
        && eq(&filter.session_id, scope.session_id.as_ref())
}

/// Scope filters `list` and `stats` are probed with after every step: each
/// user, and per user one workspace, project, card and session filter.
pub(super) fn probe_filters(users: u8) -> Vec<ScopeFilter> {
    let mut filters = Vec::new();
    for user in 0..users {
        let user_only = ScopeFilter {
            user_id: Some(format!("u{user}")),
            ..ScopeFilter::default()
        };
        let workspace = |w: u8| ScopeFilter {
            workspace_id: Some(format!("w{w}")),
            ..user_only.clone()
        };
        filters.extend([
            workspace(0),
            ScopeFilter {
                project_id: Some("p0".into()),
                ..workspace(1)
            },
            ScopeFilter {
                project_id: Some("p1".into()),
                card_id: Some("c1".into()),
                ..workspace(0)
            },
            ScopeFilter {
                session_id: Some("s1".into()),
                ..workspace(1)
            },
            user_only,
        ]);
    }
    filters
}
