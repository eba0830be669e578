//! The reference model: a plain map of id to memory that applies each
//! operation's documented semantics directly.

use super::*;

/// What the model knows of one memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ModelItem {
    pub(super) text: String,
    pub(super) scope: Scope,
    pub(super) kind: Kind,
    pub(super) status: Status,
    pub(super) pinned: bool,
    pub(super) tags: Vec<String>,
    pub(super) deleted: bool,
    pub(super) merges: usize,
    /// A newer memory took its place (`applyOperations` with an `update`).
    pub(super) superseded: bool,
    /// For a summary: its sources, ascending.
    pub(super) summary_of: Vec<String>,
    /// Soft-deleted with one of its sources (a summary), not on its own:
    /// restored when all its sources are live again.
    pub(super) withdrawn: bool,
}

impl ModelItem {
    pub(super) fn of(item: &MemoryItem) -> Self {
        ModelItem {
            text: item.text.clone(),
            scope: item.scope.clone(),
            kind: item.kind,
            status: item.status,
            pinned: item.pinned,
            tags: item.tags.clone(),
            deleted: item.deleted_at.is_some(),
            merges: item.merged_from.len(),
            superseded: item.superseded_at.is_some(),
            summary_of: item.summary_of.clone(),
            withdrawn: item.is_deleted() && last_deletion(item) == Some(HistoryKind::Withdrawn),
        }
    }

    pub(super) fn retrievable(&self) -> bool {
        !self.deleted && !self.superseded && self.status == Status::Approved
    }

    /// Folds a duplicate into this memory, as `dedupe::merge_into` documents.
    pub(super) fn merge(&mut self, tags: &[String], pinned: bool) {
        for tag in tags {
            if !self.tags.contains(tag) {
                self.tags.push(tag.clone());
            }
        }
        self.pinned |= pinned;
        self.merges += 1;
    }
}

/// The last event of `item` that deleted or restored it.
fn last_deletion(item: &MemoryItem) -> Option<HistoryKind> {
    item.history.iter().rev().map(|e| e.event).find(|e| {
        matches!(
            e,
            HistoryKind::Deleted | HistoryKind::Withdrawn | HistoryKind::Restored
        )
    })
}

/// The expected outcome of one ingested input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Expected {
    Added,
    Merged(String),
    Suppressed(String),
}

/// The store as the documented semantics say it must be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Model {
    pub(super) items: BTreeMap<String, ModelItem>,
    /// Texts hard-deleted and not stored again since: no byte of them may
    /// remain in storage.
    pub(super) erased: BTreeSet<String>,
}

impl Model {
    pub(super) fn same_text(&self, scope: &Scope, text: &str) -> Option<String> {
        self.items
            .iter()
            .find(|(_, item)| {
                &item.scope == scope
                    && item.text == text
                    && !item.superseded
                    && item.summary_of.is_empty()
            })
            .map(|(id, _)| id.clone())
    }

    pub(super) fn add(&mut self, id: String, item: ModelItem) {
        self.erased.remove(&item.text);
        self.items.insert(id, item);
    }

    /// Erases a memory and the summaries that list it.
    pub(super) fn erase(&mut self, id: &str) {
        if let Some(item) = self.items.remove(id) {
            self.retire(item.text);
            for summary in self.summaries_of(id) {
                self.erase(&summary);
            }
        }
    }

    /// The summaries listing `id` among their sources.
    pub(super) fn summaries_of(&self, id: &str) -> Vec<String> {
        self.items
            .iter()
            .filter(|(_, item)| item.summary_of.iter().any(|s| s == id))
            .map(|(sid, _)| sid.clone())
            .collect()
    }

    /// Soft-deletes a memory; the summaries listing it are withdrawn too.
    pub(super) fn soft_delete(&mut self, id: &str) {
        let Some(before) = self.items.get(id).cloned() else {
            return;
        };
        if before.deleted {
            return;
        }
        if let Some(item) = self.items.get_mut(id) {
            item.deleted = true;
            item.withdrawn = false;
        }
        self.follow(id, &before);
    }

    /// Whether every source of `summary` is stored, not deleted and not
    /// superseded.
    fn sources_live(&self, summary: &ModelItem) -> bool {
        summary.summary_of.iter().all(|s| {
            self.items
                .get(s)
                .is_some_and(|s| !s.deleted && !s.superseded)
        })
    }

    /// What a write of `id` from `before` to its present state does to the
    /// summaries listing it: a new text or a supersession erases them, a
    /// soft delete withdraws them, a restore brings back those withdrawn
    /// whose sources are all live.
    pub(super) fn follow(&mut self, id: &str, before: &ModelItem) {
        let Some(now) = self.items.get(id).cloned() else {
            return;
        };
        if now.text != before.text || (now.superseded && !before.superseded) {
            for summary in self.summaries_of(id) {
                self.erase(&summary);
            }
        } else if now.deleted && !before.deleted {
            for summary in self.summaries_of(id) {
                if let Some(s) = self.items.get_mut(&summary).filter(|s| !s.deleted) {
                    s.deleted = true;
                    s.withdrawn = true;
                }
            }
        } else if !now.deleted && before.deleted {
            for summary in self.summaries_of(id) {
                let back =
                    self.items[&summary].withdrawn && self.sources_live(&self.items[&summary]);
                if let Some(s) = self.items.get_mut(&summary).filter(|_| back) {
                    s.deleted = false;
                    s.withdrawn = false;
                }
            }
        }
    }

    /// The memories a summary of `scope` may list: live, approved, within
    /// the scope, not summaries.
    pub(super) fn summarizable(&self, scope: &Scope) -> Vec<String> {
        let within = ScopeFilter::from(scope);
        self.items
            .iter()
            .filter(|(_, item)| {
                within.matches(&item.scope)
                    && !item.deleted
                    && !item.superseded
                    && item.status == Status::Approved
                    && item.kind != Kind::Summary
                    && item.summary_of.is_empty()
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Stores the summary of `scope`, replacing the one it holds (its pin
    /// and tags kept).
    pub(super) fn summarize(
        &mut self,
        scope: &Scope,
        text: String,
        mut sources: Vec<String>,
        new_id: impl FnOnce() -> String,
    ) {
        sources.sort();
        sources.dedup();
        let previous = self
            .items
            .iter()
            .find(|(_, i)| &i.scope == scope && !i.summary_of.is_empty())
            .map(|(id, i)| (id.clone(), i.clone()));
        let (id, pinned, tags) = match previous {
            Some((id, old)) => {
                self.items.remove(&id);
                if old.text != text {
                    self.retire(old.text);
                }
                (id, old.pinned, old.tags)
            }
            None => (new_id(), false, Vec::new()),
        };
        self.add(
            id,
            ModelItem {
                text,
                scope: scope.clone(),
                kind: Kind::Summary,
                status: Status::Approved,
                pinned,
                tags,
                deleted: false,
                merges: 0,
                superseded: false,
                summary_of: sources,
                withdrawn: false,
            },
        );
    }

    /// Records `text`, no longer some memory's, as erased unless another
    /// memory still holds it (soft history is not kept).
    pub(super) fn retire(&mut self, text: String) {
        if self.same_text_anywhere(&text).is_none() {
            self.erased.insert(text);
        }
    }

    pub(super) fn same_text_anywhere(&self, text: &str) -> Option<&String> {
        self.items
            .iter()
            .find(|(_, item)| item.text == text)
            .map(|(id, _)| id)
    }

    /// Ingests one input (inputs of a batch apply in order); `new_id` names
    /// an added memory (memtide picks ids, the model takes them).
    pub(super) fn ingest(
        &mut self,
        input: &InputSpec,
        new_id: impl FnOnce() -> String,
    ) -> Expected {
        let (scope, text) = (scope_of(input.scope), pool_text(input.text));
        match self.same_text(&scope, &text) {
            Some(id) if self.items[&id].deleted => Expected::Suppressed(id),
            Some(id) => {
                let tags = input.tags();
                if let Some(item) = self.items.get_mut(&id) {
                    item.merge(&tags, input.pinned);
                }
                Expected::Merged(id)
            }
            None => {
                self.add(
                    new_id(),
                    ModelItem {
                        text,
                        scope,
                        kind: input.kind,
                        status: input.status,
                        pinned: input.pinned,
                        tags: input.tags(),
                        deleted: false,
                        merges: 0,
                        superseded: false,
                        summary_of: Vec::new(),
                        withdrawn: false,
                    },
                );
                Expected::Added
            }
        }
    }

    pub(super) fn update(&mut self, id: &str, patch: &MemoryPatch) {
        let Some(before) = self.items.get(id).cloned() else {
            return;
        };
        let Some(item) = self.items.get_mut(id) else {
            return;
        };
        let old_text = item.text.clone();
        if let Some(text) = &patch.text {
            item.text = text.clone();
        }
        if let Some(status) = patch.status {
            item.status = status;
        }
        if let Some(pinned) = patch.pinned {
            item.pinned = pinned;
        }
        if let Some(tags) = &patch.tags {
            item.tags = tags.clone();
        }
        if let Some(deleted) = patch.deleted.filter(|d| *d != item.deleted) {
            item.deleted = deleted;
            item.withdrawn = false;
        }
        if let Some(text) = &patch.text {
            self.retire(old_text);
            self.erased.remove(text);
        }
        self.follow(id, &before);
    }

    /// An `update` operation on `id`: a memory of `text` (as `id`'s in
    /// every other field) takes its place. False when the operation must
    /// be refused (`id` deleted or superseded already).
    pub(super) fn supersede(&mut self, id: &str, text: &str, new_id: String) -> bool {
        let Some(old) = self.items.get_mut(id) else {
            return false;
        };
        // A summary follows its sources and is replaced by `summarize`.
        if old.deleted || old.superseded || !old.summary_of.is_empty() {
            return false;
        }
        let before = old.clone();
        old.superseded = true;
        let successor = ModelItem {
            text: text.to_string(),
            deleted: false,
            merges: 0,
            superseded: false,
            ..before.clone()
        };
        self.follow(id, &before);
        self.add(new_id, successor);
        true
    }

    /// `deleteAll`: the memories deleted (matched, and summaries deleted
    /// with their sources) and, of them, the summaries not matched.
    pub(super) fn delete_all(&mut self, filter: &ScopeFilter, hard: bool) -> (usize, usize) {
        let present = |model: &Model| {
            model
                .items
                .values()
                .filter(|item| hard || !item.deleted)
                .count()
        };
        // The summaries it selects first: deleted by the caller, not
        // withdrawn with a source.
        let mut matched: Vec<(&String, &ModelItem)> = self
            .items
            .iter()
            .filter(|(_, item)| filter.matches(&item.scope) && (hard || !item.deleted))
            .collect();
        matched.sort_by_key(|(_, item)| item.summary_of.is_empty());
        let ids: Vec<String> = matched.into_iter().map(|(id, _)| id.clone()).collect();
        let before = present(self);
        for id in &ids {
            if hard {
                self.erase(id);
            } else {
                self.soft_delete(id);
            }
        }
        let deleted = before - present(self);
        (deleted, deleted - ids.len())
    }

    /// Imports a snapshot of an earlier model (an export is sorted by id):
    /// same id replaced, same text and scope merged, else added; an import
    /// that would make two memories identical fails whole.
    pub(super) fn import(
        &mut self,
        snapshot: &BTreeMap<String, ModelItem>,
    ) -> Option<(usize, usize, usize)> {
        let mut next = self.clone();
        let (mut added, mut replaced, mut merged) = (0, 0, 0);
        for (id, item) in snapshot {
            // A superseded memory is imported as it is: it takes part in
            // no duplicates.
            let same = next
                .same_text(&item.scope, &item.text)
                .filter(|other| other != id && !item.superseded);
            if !item.summary_of.is_empty() {
                let holder = next
                    .items
                    .iter()
                    .find(|(_, i)| i.scope == item.scope && !i.summary_of.is_empty())
                    .map(|(other, _)| other);
                if holder.is_some_and(|other| other != id) {
                    return None;
                }
            }
            if next.items.contains_key(id) {
                if same.is_some() {
                    return None;
                }
                let old = next.items.insert(id.clone(), item.clone());
                next.erased.remove(&item.text);
                if let Some(old) = &old {
                    next.follow(id, old);
                }
                if let Some(old) = old.filter(|old| old.text != item.text) {
                    next.retire(old.text);
                }
                replaced += 1;
            } else if let Some(other) = same {
                if let Some(target) = next.items.get_mut(&other).filter(|t| !t.deleted) {
                    target.merge(&item.tags, item.pinned);
                }
                merged += 1;
            } else {
                next.add(id.clone(), item.clone());
                added += 1;
            }
        }
        // Each imported summary's sources are stored, within its scope.
        for item in snapshot.values() {
            let within = ScopeFilter::from(&item.scope);
            let stored = |source: &String| {
                next.items
                    .get(source)
                    .is_some_and(|s| within.matches(&s.scope))
            };
            if !item.summary_of.iter().all(stored) {
                return None;
            }
        }
        *self = next;
        Some((added, replaced, merged))
    }
}
