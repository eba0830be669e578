//! The history of a memory: what happened to it and when, as mem0's
//! `history` gives it.
//!
//! The events live in the memory's own record (`history`, bounded by
//! `maxHistoryEvents`, oldest dropped first), so they persist with it, and
//! a hard delete, which erases the record, erases them. They name the
//! fields that changed but hold no text: a text replaced by an update is
//! erased like a deleted one (`docs/reliability.md`), so history cannot
//! keep it. Two kinds of event are not stored but read from the memory
//! itself: `created` (at its `createdAt`) and `merged` (its `mergedFrom`
//! records).

use serde::{Deserialize, Serialize};

use crate::item::{MemoryItem, Status, Timestamp};

/// What happened to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HistoryKind {
    /// Stored (at its `createdAt`).
    Created,
    /// A duplicate was merged into it.
    Merged,
    /// Fields changed by `update` (`fields` names them).
    Updated,
    /// Its content was replaced by an `upsert` of its key.
    Replaced,
    /// Its review status changed (`status` is the new one).
    Status,
    /// Pinned or unpinned (`pinned` is the new state).
    Pinned,
    /// Soft-deleted.
    Deleted,
    /// Restored after a soft delete.
    Restored,
    /// A newer memory (`other`) took its place.
    Superseded,
    /// It took the place of an older memory (`other`).
    Supersedes,
    /// A summary soft-deleted because one of its sources was: it is
    /// restored when all its sources are live again.
    Withdrawn,
}

/// One event of a memory's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryEvent {
    /// What happened.
    pub event: HistoryKind,
    /// When.
    pub at: Timestamp,
    /// For `updated` and `replaced`: the fields that changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// For `status`: the new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For `pinned`: the new state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// For `superseded` and `supersedes`: the id of the other memory
    /// (removed when that memory is hard-deleted, which leaves no trace of
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

impl HistoryEvent {
    /// An event with no details.
    pub fn new(event: HistoryKind, at: Timestamp) -> Self {
        HistoryEvent {
            event,
            at,
            fields: Vec::new(),
            status: None,
            pinned: None,
            other: None,
        }
    }
}

/// The events between `before` and `after` (the same memory), at `at`:
/// `replaced` (when `replaced`) or `updated` for content fields, then
/// `status`, `pinned`, `deleted` or `restored`. Usage marks are no event.
pub fn changes(
    before: &MemoryItem,
    after: &MemoryItem,
    at: Timestamp,
    replaced: bool,
) -> Vec<HistoryEvent> {
    let mut events = Vec::new();
    let content = [
        ("text", before.text != after.text),
        ("kind", before.kind != after.kind),
        ("tags", before.tags != after.tags),
        ("privacy", before.privacy != after.privacy),
        ("source", before.source != after.source),
        ("metadata", before.metadata != after.metadata),
        ("role", before.role != after.role),
        ("speaker", before.speaker != after.speaker),
        ("createdAt", before.created_at != after.created_at),
    ];
    let fields: Vec<String> = content
        .iter()
        .filter(|(_, changed)| *changed)
        .map(|(name, _)| name.to_string())
        .collect();
    if !fields.is_empty() || replaced {
        let kind = if replaced {
            HistoryKind::Replaced
        } else {
            HistoryKind::Updated
        };
        events.push(HistoryEvent {
            fields,
            ..HistoryEvent::new(kind, at)
        });
    }
    if before.status != after.status {
        events.push(HistoryEvent {
            status: Some(after.status),
            ..HistoryEvent::new(HistoryKind::Status, at)
        });
    }
    if before.pinned != after.pinned {
        events.push(HistoryEvent {
            pinned: Some(after.pinned),
            ..HistoryEvent::new(HistoryKind::Pinned, at)
        });
    }
    match (before.is_deleted(), after.is_deleted()) {
        (false, true) => events.push(HistoryEvent::new(HistoryKind::Deleted, at)),
        (true, false) => events.push(HistoryEvent::new(HistoryKind::Restored, at)),
        _ => {}
    }
    events
}

/// Whether a soft-deleted memory was withdrawn with a source (marked
/// `withdrawn`) rather than deleted on its own.
pub fn is_withdrawn(item: &MemoryItem) -> bool {
    // A summary withdrawn by a build before the `withdrawn` mark has only
    // its history to say so: its last deletion event is `withdrawn`.
    let withdrawn_before_the_mark = || {
        item.history
            .iter()
            .rev()
            .find(|e| {
                matches!(
                    e.event,
                    HistoryKind::Deleted | HistoryKind::Withdrawn | HistoryKind::Restored
                )
            })
            .is_some_and(|e| e.event == HistoryKind::Withdrawn)
    };
    item.is_deleted() && (item.withdrawn || withdrawn_before_the_mark())
}

/// Appends `events` to the memory's stored history, keeping the newest
/// `limit` events.
pub fn record(item: &mut MemoryItem, events: Vec<HistoryEvent>, limit: usize) {
    item.history.extend(events);
    let excess = item.history.len().saturating_sub(limit);
    item.history.drain(..excess);
}

/// The whole history of a memory, oldest first: `created`, each merge of
/// `mergedFrom`, then the stored events (a stable sort by time keeps the
/// order of events of the same millisecond).
pub fn of(item: &MemoryItem) -> Vec<HistoryEvent> {
    let mut events = vec![HistoryEvent::new(HistoryKind::Created, item.created_at)];
    events.extend(
        item.merged_from
            .iter()
            .map(|m| HistoryEvent::new(HistoryKind::Merged, m.merged_at)),
    );
    events.extend(item.history.iter().cloned());
    events.sort_by_key(|e| e.at);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary soft-deleted with `history` (event names), and the mark
    /// when `marked`, read from JSON as a store holds it.
    fn deleted_summary(events: &[&str], marked: bool) -> MemoryItem {
        let history: Vec<_> = events
            .iter()
            .map(|e| serde_json::json!({"event": e, "at": "2024-05-02T10:00:00Z"}))
            .collect();
        let mut item = serde_json::json!({
            "id": "s", "text": "A summary.", "kind": "summary",
            "scope": {"userId": "u", "workspaceId": "w"}, "status": "approved",
            "source": {"kind": "manual", "ref": "summary"}, "contentHash": "h",
            "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-02T10:00:00Z",
            "deletedAt": "2024-05-02T10:00:00Z", "summaryOf": ["a"], "history": history,
        });
        if marked {
            item["withdrawn"] = true.into();
        }
        serde_json::from_value(item).unwrap()
    }

    #[test]
    fn withdrawn_is_the_mark_or_for_older_stores_the_last_deletion_event() {
        // The mark holds once its event has dropped out of the history.
        assert!(is_withdrawn(&deleted_summary(&["pinned"; 32], true)));
        // Written before the mark: the history decides.
        assert!(is_withdrawn(&deleted_summary(&["withdrawn", "pinned"], false)));
        assert!(!is_withdrawn(&deleted_summary(
            &["withdrawn", "restored", "deleted"],
            false
        )));
        assert!(!is_withdrawn(&deleted_summary(&["deleted"], false)));
        assert!(!is_withdrawn(&deleted_summary(&["pinned"; 32], false)));
        // A live memory is withdrawn from nothing.
        let mut live = deleted_summary(&["withdrawn"], true);
        live.deleted_at = None;
        assert!(!is_withdrawn(&live));
    }
}
