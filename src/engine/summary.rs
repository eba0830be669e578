//! Summaries: one `summary` memory per scope, written by the app's model
//! from the memories of that scope and linked to them (`summaryOf`). The
//! engine calls no model: [`Engine::summary_context`] gathers what a
//! summarizer reads, the host runs it, and [`Engine::store_summary`]
//! stores its text, replacing the scope's previous summary in place.
//!
//! A summary may repeat what its sources say, so it follows them
//! ([`Engine::follow_sources`], called by every write): when a source is
//! erased (hard delete, purge, deleteAll), its text replaced or it is
//! superseded, the summary is erased in the same commit, so a hard delete
//! still leaves no byte and no summary keeps an old value; when a source
//! is soft-deleted, the summary is withdrawn (soft-deleted, a `withdrawn`
//! event), and restored when all its sources are live again.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::ingest::detects_pii;
use super::txn::Txn;
use super::Engine;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::history::{self, HistoryEvent, HistoryKind};
use crate::item::{
    validate_item_id, Kind, MemoryItem, Privacy, Scope, ScopeFilter, Source, SourceKind, Status,
    Timestamp,
};
use crate::metadata;
use crate::text;

/// What `storeSummary` stores: the summary of exactly `scope` (with its
/// `sessionId`, the summary of that session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryInput {
    /// The scope the summary belongs to and whose memories it covers.
    pub scope: Scope,
    /// The summary's text, as the summarizer wrote it (captured like any
    /// text: private spans removed, credentials replaced).
    pub text: String,
    /// The ids of the memories it summarizes: live memories within
    /// `scope` that are not summaries themselves; at least one, at most
    /// `limits.maxResults`.
    pub sources: Vec<String>,
}

/// Which memories a summarizer reads ([`Engine::summary_context`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryQuery {
    /// The scope to summarize (with `sessionId`, one session).
    pub scope: Scope,
    /// At most this many memories, the newest (default and cap
    /// `limits.maxResults`).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Include memories marked `pii` (default false: they reach no model
    /// unless the caller opts in, as with injection).
    #[serde(default)]
    pub include_pii: bool,
}

/// What a summarizer reads: the memories of a scope, oldest first, and
/// the summary it holds now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryContext {
    /// The memories a summary of the scope covers, oldest first.
    pub memories: Vec<MemoryItem>,
    /// The scope's current summary, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<MemoryItem>,
}

/// What a write did to a memory that summaries list as a source.
enum Change {
    /// Erased, its text replaced, or superseded: the summaries go.
    Erased,
    /// Soft-deleted at this time: the summaries are withdrawn too.
    Withdrawn(Timestamp),
    /// Restored at this time: the summaries withdrawn with a source come
    /// back once all their sources are live.
    Restored(Timestamp),
}

impl Engine {
    /// The memories a summary of `query.scope` covers, oldest first (at
    /// most the newest `limit`), and its current summary. Covered: live,
    /// approved, not superseded, not private, not expired at `now`, not
    /// chunks of files, not summaries, and personal data only with `includePii`; a memory
    /// belongs to the scope when each field the scope sets is equal (a
    /// workspace's summary covers its sessions).
    pub fn summary_context(&self, query: &SummaryQuery, now: Timestamp) -> Result<SummaryContext> {
        let SummaryQuery {
            scope,
            limit,
            include_pii,
        } = query;
        let include_pii = *include_pii;
        scope.validate()?;
        let cap = self.config.limits.max_results;
        let limit = limit.unwrap_or(cap);
        if limit == 0 || limit > cap {
            return Err(Error::invalid(format!(
                "limit must be between 1 and {cap}"
            )));
        }
        let within = ScopeFilter::from(scope);
        let mut memories: Vec<MemoryItem> = Vec::new();
        for (_, id) in self.by_created.iter_rev() {
            if memories.len() == limit {
                break;
            }
            let Some(entry) = self.entries.get(&**id) else {
                continue;
            };
            let item = entry.item();
            if within.matches(&item.scope)
                && self.summarizable(&item)
                && !item.privacy.private
                && (include_pii || !item.privacy.pii)
                && !self.config.retention.is_expired(&item, now)
            {
                memories.push(item.into_owned());
            }
        }
        memories.reverse();
        let previous = self.summary_of_scope(scope).map(Cow::into_owned);
        Ok(SummaryContext { memories, previous })
    }

    /// The summary `scope` holds, if any (soft-deleted included).
    pub fn summary_of_scope(&self, scope: &Scope) -> Option<Cow<'_, MemoryItem>> {
        let id = self.by_summary.get(&self.scope_key(scope))?;
        self.entries.get(id).map(|e| e.item())
    }

    /// Stores the summary of `input.scope`: a `summary` memory whose
    /// `summaryOf` lists the sources, replacing the scope's previous
    /// summary in place (same id, a `replaced` event in its history).
    /// Refuses, changing nothing, an empty text, an unknown source, one
    /// outside the scope, soft-deleted, private, expired or itself a
    /// summary (a `pii` source marks the summary `pii`).
    pub fn store_summary(
        &mut self,
        input: SummaryInput,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<MemoryItem> {
        input.scope.validate()?;
        let text = self.text_that_must_be_stored(&input.text)?;
        let mut sources = input.sources;
        sources.sort();
        sources.dedup();
        let cap = self.config.limits.max_results;
        if sources.is_empty() {
            return Err(Error::invalid("sources: a summary needs at least one"));
        }
        if sources.len() > cap {
            return Err(Error::TooLarge {
                what: "summary sources".into(),
                size: sources.len(),
                limit: cap,
            });
        }
        let now = env.now();
        let within = ScopeFilter::from(&input.scope);
        let mut newest = Timestamp(i64::MIN);
        let mut pii = detects_pii(&text, self.config.secrets);
        let mut expires: Option<Timestamp> = None;
        for (i, id) in sources.iter().enumerate() {
            let at = |e: Error| e.at(&format!("sources[{i}]"));
            validate_item_id(id).map_err(at)?;
            let source = self.get(id).map_err(at)?;
            let refuse =
                |why: &str| Err(Error::invalid(format!("sources[{i}]: memory `{id}` {why}")));
            if !within.matches(&source.scope) {
                return refuse("is not within the summary's scope");
            }
            if source.is_deleted() {
                return refuse("is deleted");
            }
            if !self.summarizable(&source) {
                return refuse("is a summary, a chunk of a file, superseded, pending or rejected");
            }
            // A summary is injected like any memory: it must not carry
            // what its source may not show.
            if source.privacy.private {
                return refuse("is private");
            }
            if self.config.retention.is_expired(&source, now) {
                return refuse("has expired");
            }
            newest = newest.max(source.created_at);
            pii |= source.privacy.pii;
            if let Some(end) = self.config.retention.expires_at(&source) {
                expires = Some(expires.map_or(end, |e| e.min(end)));
            }
        }
        // The summary is as recent as what it covers, and expires no later
        // than its first source does (whole days, rounded down).
        let created_at = newest;
        let retention_days = expires.map(|end| {
            let days = (end.0 - created_at.0).max(0) / Timestamp::DAY_MS;
            u32::try_from(days).unwrap_or(u32::MAX)
        });
        let said = text::said_text(&text, None);
        let vector = self.embed(&[said.as_ref()])?.and_then(|mut v| v.pop());
        let previous = self.summary_of_scope(&input.scope).map(Cow::into_owned);
        let id = match &previous {
            Some(p) => p.id.clone(),
            None => self.fresh_id(env),
        };
        let mut item = MemoryItem {
            id: id.clone(),
            content_hash: text::content_hash(&text),
            text,
            kind: Kind::Summary,
            scope: input.scope,
            status: Status::Approved,
            pinned: false,
            source: Source {
                kind: SourceKind::Manual,
                reference: "summary".into(),
                uri: None,
            },
            role: None,
            speaker: None,
            tags: Vec::new(),
            privacy: Privacy {
                pii,
                private: false,
                retention_days,
            },
            created_at,
            updated_at: now,
            last_used_at: None,
            usage_count: 0,
            merged_from: Vec::new(),
            follows: None,
            deleted_at: None,
            source_lines: None,
            key: None,
            metadata: metadata::normalize(None),
            history: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            supersedes: Vec::new(),
            summary_of: sources,
            withdrawn: false,
        };
        if let Some(before) = &previous {
            // What the app set on the summary stays: pin, tags, metadata,
            // usage; its history says it was replaced.
            item.pinned = before.pinned;
            item.tags = before.tags.clone();
            item.metadata = before.metadata.clone();
            item.last_used_at = before.last_used_at;
            item.usage_count = before.usage_count;
            item.history = before.history.clone();
            let events = history::changes(before, &item, now, true);
            history::record(&mut item, events, self.config.limits.max_history_events);
        }
        let text_changed = previous.as_ref().is_none_or(|p| p.text != item.text);
        self.write(txn, &id, Some(item.clone()));
        if text_changed && (vector.is_some() || self.has_embedding(&id)) {
            self.write_vector(txn, &id, vector);
        }
        Ok(item)
    }

    /// Makes the summaries listing `id` follow what a write did to it
    /// (`previous` its item before): erased with it, with its old text or
    /// when it is superseded (a summary must not keep an old value),
    /// withdrawn with it, restored with it. Called by [`Engine::write`].
    pub(super) fn follow_sources(&mut self, id: &str, previous: &MemoryItem, txn: &mut Txn) {
        let Some(summaries) = self.summaries.get(id).cloned() else {
            return;
        };
        let change = match self.entries.get(id).map(|e| e.item()) {
            None => Change::Erased,
            Some(now) if now.text != previous.text => Change::Erased,
            Some(now) if now.is_superseded() && !previous.is_superseded() => Change::Erased,
            Some(now) => match (now.deleted_at, previous.is_deleted()) {
                (Some(at), false) => Change::Withdrawn(at),
                (None, true) => Change::Restored(now.updated_at),
                _ => return,
            },
        };
        for summary in summaries {
            match change {
                Change::Erased => {
                    self.write_erased(txn, &summary);
                }
                Change::Withdrawn(at) => {
                    let Some(before) = self.entries.get(&summary).map(|e| e.item().into_owned()) else {
                        continue;
                    };
                    if before.is_deleted() {
                        continue;
                    }
                    let mut withdrawn = before;
                    withdrawn.deleted_at = Some(at);
                    withdrawn.withdrawn = true;
                    withdrawn.updated_at = at;
                    let event = HistoryEvent::new(HistoryKind::Withdrawn, at);
                    history::record(
                        &mut withdrawn,
                        vec![event],
                        self.config.limits.max_history_events,
                    );
                    self.write(txn, &summary, Some(withdrawn));
                }
                Change::Restored(at) => {
                    let Some(before) = self.entries.get(&summary).map(|e| e.item().into_owned()) else {
                        continue;
                    };
                    // A summary deleted on its own stays deleted.
                    if !history::is_withdrawn(&before) || !self.sources_are_live(&before) {
                        continue;
                    }
                    let mut restored = before.clone();
                    restored.deleted_at = None;
                    restored.withdrawn = false;
                    restored.updated_at = at;
                    self.record_history(&before, &mut restored, at);
                    self.write(txn, &summary, Some(restored));
                }
            }
        }
    }

    /// Whether every source of `summary` is stored, not soft-deleted and
    /// not superseded.
    fn sources_are_live(&self, summary: &MemoryItem) -> bool {
        summary.summary_of.iter().all(|source| {
            self.entries
                .get(source)
                .is_some_and(|e| !e.is_deleted() && !e.is_superseded())
        })
    }

    /// Refuses, for `import`, a summary of a scope that holds another.
    pub(super) fn check_imported_summary_scope(&self, item: &MemoryItem) -> Result<()> {
        match self.summary_of_scope(&item.scope) {
            Some(other) if other.id != item.id => Err(Error::invalid(format!(
                "memory `{}` is a summary of a scope whose summary is memory `{}`",
                item.id, other.id
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses, for `import` once its memories are written, a summary
    /// whose sources are not ascending and distinct, too many, neither
    /// stored nor imported, outside its scope, summaries, or superseded:
    /// superseding a source erases its summaries, so a summary of an old
    /// version of a fact is one no store holds ([`Engine::store_summary`]
    /// refuses such a source too).
    pub(super) fn check_imported_summaries(
        &self,
        summaries: &[(String, Scope, Vec<String>)],
    ) -> Result<()> {
        for (id, scope, sources) in summaries {
            let ascending = sources.windows(2).all(|pair| pair[0] < pair[1]);
            if !ascending || sources.len() > self.config.limits.max_results {
                return Err(Error::invalid(format!(
                    "memory `{id}`: summaryOf must list at most {} ids, ascending, each once",
                    self.config.limits.max_results
                )));
            }
            let within = ScopeFilter::from(scope);
            for source in sources {
                let fits = self
                    .entries
                    .get(source)
                    .is_some_and(|e| within.matches(e.scope()) && e.item().summary_of.is_empty());
                if !fits {
                    return Err(Error::invalid(format!(
                        "memory `{id}` summarizes memory `{source}`, which is not a stored memory of its scope or is a summary"
                    )));
                }
                if self
                    .entries
                    .get(source)
                    .is_some_and(|e| e.is_superseded())
                {
                    return Err(Error::invalid(format!(
                        "memory `{id}` summarizes memory `{source}`, which is superseded"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether a memory can be a summary's source: not a summary, not a
    /// chunk of a file, approved, not superseded (an old version of a fact
    /// must not come back through a summary).
    fn summarizable(&self, item: &MemoryItem) -> bool {
        item.summary_of.is_empty()
            && !item.is_superseded()
            && item.kind != Kind::Summary
            && !item.is_file_chunk()
            && item.status == Status::Approved
            && !item.is_deleted()
    }
}
