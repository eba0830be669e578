//! Retrieval and injection: which memories a query may see
//! ([`crate::policy`]), the candidates and the evidence for each (BM25
//! matches, semantic neighbours, the replies of matching questions), handed
//! to [`crate::rank`] to score and order (`docs/design.md`, "Ranking");
//! injection renders the pinned memories and the best hits within a token
//! budget ([`crate::inject`]). Both mark what they return as used.

use std::borrow::Cow;
use std::collections::HashMap;

use super::catalog::Entry;
use super::txn::Txn;
use super::{Engine, InjectQuery, RetrieveHit, RetrieveQuery, ScopeOrder, Sessions};
use crate::error::{Error, Result};
use crate::inject::{self, Injection};
use crate::item::{MemoryItem, Timestamp};
use crate::policy::{self, Visibility};
use crate::retention::RetentionConfig;
use crate::rank::{self, Candidate, Rankable};
use crate::text;
use crate::text::tokens::TokenCounter;

/// Fewest semantic neighbours a hybrid query considers.
const DENSE_CANDIDATES: usize = 100;
/// Fewest best lexical matches a query considers (more lose to the fused
/// ranking's first places only when both signals are weak).
const LEXICAL_CANDIDATES: usize = 200;

impl RetrieveQuery {
    /// What the policy needs of the query.
    fn visibility<'a>(&'a self, now: Timestamp, retention: &'a RetentionConfig) -> Visibility<'a> {
        Visibility {
            scope: &self.scope,
            now,
            retention,
            all_sessions: self.sessions == Sessions::All,
            include_pending: self.include_pending,
            include_pii: self.include_pii,
            kinds: self.kinds.as_deref(),
            roles: self.roles.as_deref(),
            tags: self.tags.as_deref(),
            since: self.since,
            until: self.until,
            metadata: self.metadata.as_ref(),
        }
    }
}

impl Engine {
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
        if let Some(min) = query.min_relevance {
            if !(0.0..=1.0).contains(&min) {
                return Err(Error::invalid(format!(
                    "minRelevance must lie in 0..=1, not {min}"
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

    /// Ranks the memories visible to `query` without marking them used:
    /// gathers the candidates and their evidence for [`rank::rank`], then
    /// keeps the best `limit` hits of relevance `min_relevance` or more (the
    /// gate drops hits, it never reorders them).
    fn search(
        &self,
        query: &RetrieveQuery,
        query_vector: Option<&[f32]>,
        limit: usize,
        min_relevance: f32,
        now: Timestamp,
    ) -> Vec<RetrieveHit> {
        let tenant = query.scope.tenant();
        let vis = query.visibility(now, &self.config.retention);
        // The policy and ranking read a held memory's row in place; only
        // the hits returned are decoded (`Entry::item`).
        let admitted = |doc: u32| {
            self.entry_of(doc)
                .filter(|entry| policy::check(*entry, &vis).is_ok())
        };
        let query_terms = text::terms(&query.text);
        let index = self.lexical.get(&tenant);
        // Read as far as the candidates need (`Ranked`).
        let mut lexical = index
            .map(|ix| ix.search(&query_terms))
            .unwrap_or_default()
            .peekable();
        let weights = index.map(|ix| (ix, ix.query_weights(&query_terms)));
        let coverage = |doc: u32| -> f32 {
            weights
                .as_ref()
                .map_or(0.0, |(ix, weights)| ix.coverage(doc, weights))
        };
        let bm25_max = lexical.peek().map_or(0.0, |&(_, score)| score);

        // Candidates: the best visible lexical matches, the semantic
        // neighbours, then the replies of candidate questions (they may
        // inherit); with their BM25 score, by doc.
        let mut candidates: HashMap<u32, (&Entry, f32)> = HashMap::new();
        let lexical_candidates = limit.saturating_mul(4).max(LEXICAL_CANDIDATES);
        for (doc, entry, score) in lexical
            .filter_map(|(doc, score)| Some((doc, admitted(doc)?, score)))
            .take(lexical_candidates)
        {
            candidates.insert(doc, (entry, score));
        }
        if let (Some(q), Some(ix)) = (query_vector, self.vectors.get(&tenant)) {
            let k = limit.saturating_mul(4).max(DENSE_CANDIDATES);
            // A scan offers the filter far more memories than it keeps
            // (about 1,800 for 200 at 100,000).
            let accepted = ix.search(q, k, &|doc| candidates.contains_key(&doc) || admitted(doc).is_some());
            for (doc, _) in accepted {
                add_admitted(&mut candidates, doc, &admitted);
            }
        }
        // With a neighbour share every conversation turn passes score to its
        // neighbours, without one only questions to their replies.
        let neighbours = self.config.rank.neighbour_share > 0.0;
        let sources: Vec<(Option<u32>, Vec<u32>)> = candidates
            .values()
            .map(|&(entry, _)| entry)
            .filter(|entry| (neighbours && entry.is_turn()) || rank::asks_question(entry.text()))
            .map(|source| {
                let previous = Entry::follows(source)
                    .filter(|_| neighbours && source.is_turn())
                    .and_then(|id| self.entries.get(id))
                    .map(|entry| entry.doc);
                (previous, self.follower_docs(Rankable::id(source)).collect())
            })
            .collect();
        for (previous, followers) in sources {
            for doc in followers.into_iter().chain(previous) {
                add_admitted(&mut candidates, doc, &admitted);
            }
        }

        let candidates = candidates.iter().map(|(&doc, &(entry, lexical))| Candidate {
            item: entry,
            lexical,
            coverage: coverage(doc),
            semantic: query_vector.map(|q| {
                self.context_vector(doc, Entry::follows(entry))
                    .map_or(0.0, |context| dot(q, &context))
            }),
        });
        // A strict scope order ranks every candidate, then puts the
        // narrowest scope first (a stable sort keeps the rank within each),
        // so a weaker card memory is not cut before a stronger project one.
        let strict = query.scope_order == ScopeOrder::Strict;
        let ranked_limit = if strict { usize::MAX } else { limit };
        let mut ranked = rank::rank(
            &query.text,
            &query.scope,
            candidates,
            bm25_max,
            &self.config.rank,
            ranked_limit,
        );
        if strict {
            ranked.sort_by_key(|(_, entry)| std::cmp::Reverse(Entry::scope(entry).specificity_from(&query.scope)));
        }
        ranked
            .into_iter()
            .filter(|(breakdown, _)| breakdown.relevance >= min_relevance)
            .take(limit)
            .map(|(breakdown, entry)| {
                let item = entry.item().into_owned();
                RetrieveHit {
                    citation: item.citation(),
                    score: breakdown.fused,
                    relevance: breakdown.relevance,
                    explain: query.explain.then_some(breakdown),
                    policy: query.explain.then(|| policy::admission(&item, &vis)),
                    item,
                }
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
                let mut item = entry.item().into_owned();
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
            query.min_relevance.unwrap_or(0.0),
            now,
        );
        if !query.dry_run {
            self.mark_used(hits.iter().map(|h| h.item.id.as_str()), now, txn);
            for hit in &mut hits {
                if let Some(entry) = self.entries.get(&hit.item.id) {
                    hit.item = entry.item().into_owned();
                }
            }
        }
        Ok(hits)
    }

    /// Renders the pinned memories of the scope, then the most relevant
    /// ones, into one block within the token budget, and marks the memories
    /// it used unless `dryRun`. Pinned memories pass the relevance gate: the
    /// user chose them for every prompt; the retrieved ones must reach
    /// `minRelevance` (default [`InjectQuery::DEFAULT_MIN_RELEVANCE`]).
    pub fn inject(
        &mut self,
        request: &InjectQuery,
        counter: &dyn TokenCounter,
        now: Timestamp,
        txn: &mut Txn,
    ) -> Result<Injection> {
        let query = &request.query;
        self.check_query(query)?;
        let preamble = request
            .preamble
            .as_deref()
            .unwrap_or(inject::DEFAULT_PREAMBLE);
        inject::check_preamble(preamble).map_err(Error::invalid)?;
        let share = request
            .pinned_share
            .unwrap_or(InjectQuery::DEFAULT_PINNED_SHARE);
        if !(0.0..=1.0).contains(&share) {
            return Err(Error::invalid(format!(
                "pinnedShare is {share}; it must lie in 0..=1"
            )));
        }
        let vis = query.visibility(now, &self.config.retention);
        let mut pinned: Vec<Cow<'_, MemoryItem>> = self
            .pinned
            .iter()
            .filter_map(|id| self.entries.get(id))
            .filter(|entry| policy::check(*entry, &vis).is_ok())
            .map(|entry| entry.item())
            .collect();
        pinned.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        if query.scope_order == ScopeOrder::Strict {
            pinned.sort_by_key(|item| std::cmp::Reverse(item.scope.specificity_from(&query.scope)));
        }
        // `archive: false` injects hot memory only: no retrieval at all.
        let ranked = if request.archive {
            let query_vector = self.query_vector(query)?;
            self.search(
                query,
                query_vector.as_deref(),
                query.limit.unwrap_or(20),
                query
                    .min_relevance
                    .unwrap_or(InjectQuery::DEFAULT_MIN_RELEVANCE),
                now,
            )
        } else {
            Vec::new()
        };
        let candidates: Vec<&MemoryItem> = pinned
            .iter()
            .map(|item| &**item)
            .chain(ranked.iter().map(|h| &h.item).filter(|i| !i.pinned))
            .collect();
        // The share is of the tokens the block may spend; rounding down keeps
        // the pinned memories within it.
        let pinned_tokens = (request.budget_tokens as f64 * f64::from(share)).floor() as usize;
        let injection = inject::render_within(
            &candidates,
            request.budget_tokens,
            pinned_tokens,
            request.format,
            preamble,
            counter,
        );
        if !query.dry_run {
            let used = injection.used.clone();
            self.mark_used(used.iter().map(String::as_str), now, txn);
        }
        Ok(injection)
    }
}

/// Adds memory `doc` to `candidates`, with no BM25 score, when it is not
/// one yet and the query may see it.
fn add_admitted<'e>(
    candidates: &mut HashMap<u32, (&'e Entry, f32)>,
    doc: u32,
    admitted: &impl Fn(u32) -> Option<&'e Entry>,
) {
    if let std::collections::hash_map::Entry::Vacant(slot) = candidates.entry(doc) {
        if let Some(entry) = admitted(doc) {
            slot.insert((entry, 0.0));
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
