//! Managing memories one by one or by scope: reading (`get`, `list`),
//! changing (`update`), deleting (soft or hard, one or all of a user's) and
//! counting (`stats`). Deletion is the user's right to see and erase what
//! is kept (`docs/design.md`, "Policies").

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use super::duplicate::{DuplicateKey, Said};
use super::catalog::{Entry, Id, TenantKey};
use super::ingest::detects_pii;
use super::txn::Txn;
use super::{DeleteAllResult, Engine, ListPage, ListQuery, MemoryPatch, Stats};
use crate::codec::FORMAT_VERSION;
use crate::error::{Error, Result};
use crate::index::Bm25Index;
use crate::item::{
    validate_id, validate_item_id, Kind, MemoryItem, Role, Scope, ScopeFilter, Status, Timestamp,
};
use crate::metadata;
use crate::text;

impl Engine {
    /// One memory by id (soft-deleted memories included, with `deletedAt`).
    pub fn get(&self, id: &str) -> Result<Cow<'_, MemoryItem>> {
        validate_item_id(id)?;
        self.entries
            .get(id)
            .map(|e| e.item())
            .ok_or_else(|| Error::NotFound(id.to_string()))
    }

    /// The pinned memories, in no order (soft-deleted ones included).
    pub fn pinned_items(&self) -> impl Iterator<Item = Cow<'_, MemoryItem>> {
        self.pinned
            .iter()
            .filter_map(|id| self.entries.get(id).map(|e| e.item()))
    }

    /// The memory of exactly `scope` whose text is `normalized` (in stored
    /// form), said by `speaker` in `role` (see `duplicate.rs` for when two
    /// are the same voice), if any; soft-deleted ones included, chunks of
    /// files, keyed, superseded memories and summaries not.
    pub fn find_text(
        &self,
        scope: &Scope,
        role: Option<Role>,
        speaker: Option<&str>,
        normalized: &str,
    ) -> Option<Cow<'_, MemoryItem>> {
        let key = DuplicateKey::new(
            self.scope_key(scope),
            Said::of(role, speaker),
            &text::content_hash(normalized),
        );
        let id = self.duplicate_of(&key)?;
        self.entries.get(&**id).map(|e| e.item())
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
        let below = match &upper {
            Some(u) => Bound::Excluded(u.clone()),
            None => Bound::Unbounded,
        };
        for (created, id) in self.by_created.range_rev((Bound::Unbounded, below)) {
            let Some(entry) = self.entries.get(&**id) else {
                continue;
            };
            let item = entry.item();
            if !list_matches(&item, query) {
                continue;
            }
            if items.len() == limit {
                next_cursor = items
                    .last()
                    .map(|last: &MemoryItem| format!("{}:{}", last.created_at.0, last.id));
                break;
            }
            debug_assert_eq!(item.created_at.0, *created);
            items.push(item.into_owned());
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
        let before = self.get(id)?.into_owned();
        let mut item = before.clone();
        if let Some((path, _)) = item.file_location() {
            // A chunk holds a file's words: nobody said them.
            let voiced = patch.role.is_some() || patch.speaker.is_some();
            if patch.text.is_some() || patch.source.is_some() || voiced {
                return Err(Error::invalid(format!(
                    "memory `{id}` is a chunk of file `{path}`: its text and source change with the file, and it has no role or speaker"
                )));
            }
        }
        if let Some(raw) = &patch.text {
            let text = self.text_that_must_be_stored(raw)?;
            item.content_hash = text::content_hash(&text);
            item.text = text;
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
        // A text holding personal data stays marked, whatever the patch
        // says of its privacy.
        item.privacy.pii |= detects_pii(&item.text, self.config.secrets);
        if let Some(source) = patch.source {
            self.validate_source(&source)?;
            item.source = source;
        }
        if let Some(metadata) = patch.metadata {
            self.check_metadata(&metadata)?;
            item.metadata = metadata::normalize(Some(metadata));
        }
        if let Some(role) = patch.role {
            item.role = Some(role);
        }
        match patch.speaker.as_deref() {
            Some("") => item.speaker = None,
            Some(speaker) => {
                validate_id("speaker", speaker)?;
                item.speaker = Some(speaker.to_string());
            }
            None => {}
        }
        // A new text or voice must not make the memory another one's exact
        // duplicate (one memory per text, scope and voice).
        if item.content_hash != before.content_hash
            || Said::of(item.role, item.speaker.as_deref())
                != Said::of(before.role, before.speaker.as_deref())
        {
            if let Some(other) = self
                .duplicate_of(&DuplicateKey::of(self.scope_key(&item.scope), &item))
                .filter(|other| &***other != id)
            {
                return Err(Error::invalid(format!(
                    "the memory would become identical to memory `{other}`: the same text, said by the same speaker, in the same scope"
                )));
            }
        }
        match patch.deleted {
            Some(true) if item.deleted_at.is_none() => item.deleted_at = Some(now),
            Some(false) => {
                item.deleted_at = None;
                item.withdrawn = false;
            }
            _ => {}
        }
        // A memory is embedded as said (`text::said_text`: its speaker's
        // name, then its text), so a new text or speaker gets a fresh
        // embedding (or loses its stale one).
        let new_vector = if item.text != before.text || item.speaker != before.speaker {
            let said = text::said_text(&item.text, item.speaker.as_deref());
            Some(self.embed(&[said.as_ref()])?.and_then(|mut v| v.pop()))
        } else {
            None
        };
        item.updated_at = now;
        self.record_history(&before, &mut item, now);
        self.write(txn, id, Some(item.clone()));
        if let Some(vector) = new_vector {
            if vector.is_some() || self.has_embedding(id) {
                self.write_vector(txn, id, vector);
            }
        }
        Ok(item)
    }

    /// Deletes one memory: soft (suppressed, kept for the user to see and so
    /// the same text is not captured again) or hard (erased with every trace,
    /// index postings included).
    pub fn delete(&mut self, id: &str, hard: bool, now: Timestamp, txn: &mut Txn) -> Result<()> {
        let item = self.get(id)?.into_owned();
        if hard {
            self.unlink_supersessions(id, txn);
            // Erasing leaves no trace: the memories that followed this one
            // forget the link.
            let followers: Vec<u32> = self.follower_docs(id).collect();
            for follower in followers {
                if let Some(entry) = self.entry_of(follower) {
                    let mut unlinked = entry.item().into_owned();
                    unlinked.follows = None;
                    let follower = unlinked.id.clone();
                    self.write(txn, &follower, Some(unlinked));
                }
            }
            self.write_erased(txn, id);
        } else if !item.is_deleted() {
            let mut deleted = item.clone();
            deleted.deleted_at = Some(now);
            deleted.updated_at = now;
            self.record_history(&item, &mut deleted, now);
            self.write(txn, id, Some(deleted));
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
        // Read from the entries' fields: a held memory is not decoded.
        let selected =
            |e: &Entry| filter.matches_parts(e.scope(), e.metadata()) && (hard || !e.is_deleted());
        let mut matched: Vec<(&str, bool)> = self
            .entries
            .iter()
            .filter(|(_, e)| selected(e))
            .map(|(id, e)| (id, e.summary_of().is_empty()))
            .collect();
        // The summaries the filter does not select that go with a selected
        // source ([`Engine::follow_sources`]): a hard delete erases them, a
        // soft one withdraws those still live.
        let mut followers: BTreeSet<&str> = BTreeSet::new();
        for &(id, _) in &matched {
            for summary in self.summaries.get(id).into_iter().flatten() {
                let goes = self
                    .entries
                    .get(summary)
                    .is_some_and(|e| !selected(e) && (hard || !e.is_deleted()));
                if goes {
                    followers.insert(summary);
                }
            }
        }
        let summaries = followers.len();
        // The summaries the filter selects first: deleted by the caller,
        // not withdrawn with a source, so restoring a source later does
        // not bring them back.
        matched.sort_by_key(|&(_, plain)| plain);
        let ids: Vec<String> = matched.into_iter().map(|(id, _)| id.to_string()).collect();
        for id in &ids {
            // A summary erased with its source is already gone.
            if self.entries.contains_key(id) {
                self.delete(id, hard, now, txn)?;
            }
        }
        // Erasure takes the files too: they hold the same text.
        if hard {
            self.remove_files_where(|scope| filter.matches_files_of(scope), txn);
        }
        Ok(DeleteAllResult {
            deleted: ids.len() + summaries,
            hard,
            summaries,
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
        // Kinds counted by their place in `Kind::ALL` and tenants borrowed
        // from the memories: nothing is allocated per memory.
        let mut kinds = [0usize; Kind::ALL.len()];
        let mut tenants: BTreeSet<(&str, &str)> = BTreeSet::new();
        for entry in self.entries.values() {
            if !filter.matches_parts(entry.scope(), entry.metadata()) {
                continue;
            }
            let status = entry.status();
            stats.items += 1;
            stats.deleted += usize::from(entry.is_deleted());
            stats.pending += usize::from(status == Status::Pending);
            stats.rejected += usize::from(status == Status::Rejected);
            stats.active += usize::from(
                !entry.is_deleted() && !entry.is_superseded() && status != Status::Rejected,
            );
            stats.pinned += usize::from(entry.pinned());
            let kind = entry.kind();
            if let Some(k) = Kind::ALL.iter().position(|k| *k == kind) {
                kinds[k] += 1;
            }
            stats.stored_bytes += entry.record_len();
            if let Some(vector) = self.embedding_of(entry.doc) {
                stats.embedded += 1;
                stats.stored_bytes += crate::codec::vector_record_len(vector.len());
            }
            let scope = entry.scope();
            tenants.insert((scope.user_id.as_str(), scope.workspace_id.as_str()));
        }
        for (kind, count) in Kind::ALL.iter().zip(kinds) {
            if count > 0 {
                stats.by_kind.insert(kind.as_str().to_string(), count);
            }
        }
        stats.tenants = tenants.len();
        stats.indexed_terms = tenants
            .into_iter()
            .filter_map(|tenant| self.lexical.get(&tenant as &dyn TenantKey))
            .map(Bm25Index::term_count)
            .sum();
        stats
    }
}

fn list_matches(item: &MemoryItem, q: &ListQuery) -> bool {
    q.scope.matches_item(item)
        && (q.include_deleted || !item.is_deleted())
        && (q.include_superseded || !item.is_superseded())
        && q.kinds.as_ref().is_none_or(|k| k.contains(&item.kind))
        && q.roles
            .as_ref()
            .is_none_or(|r| item.role.is_some_and(|role| r.contains(&role)))
        && q.statuses.as_ref().is_none_or(|s| s.contains(&item.status))
        && q.tags
            .as_ref()
            .is_none_or(|t| t.iter().any(|t| item.tags.contains(t)))
        && q.pinned.is_none_or(|p| p == item.pinned)
        && q.since.is_none_or(|s| item.created_at >= s)
        && q.until.is_none_or(|u| item.created_at < u)
}

fn parse_cursor(cursor: &str) -> Result<(i64, Id)> {
    let bad = || Error::invalid("cursor is not one returned by list");
    let (ms, id) = cursor.split_once(':').ok_or_else(bad)?;
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    validate_item_id(id).map_err(|_| bad())?;
    Ok((ms, Id::from(id)))
}
