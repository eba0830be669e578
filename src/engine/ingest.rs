//! Ingest: what a memory input becomes. Each input is validated (a caller
//! can check one alone with `check_input`), its text captured (opt-out,
//! redaction, normalization), deduplicated against the store (exact
//! duplicates by content hash, near-duplicates as [`crate::dedupe`]
//! chooses them) and stored with the memory it follows in its conversation
//! (`docs/design.md`, "Data flow").

use super::txn::Txn;
use super::{Engine, IngestOutcome, IngestReason, IngestResult, MemoryInput};
use crate::dedupe::{self, Duplicate, NearDuplicateAction};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::item::{validate_id, MemoryItem, Scope, Source, Timestamp};
use crate::text::{self, Capture};

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

impl Engine {
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

    /// Checks one input as [`Engine::ingest`] would, without changing
    /// anything (lets a caller report every bad input before ingesting).
    pub fn check_input(&self, input: &MemoryInput) -> Result<()> {
        self.validate_fields(input)?;
        text_to_store(&input.text).map(|_| ())
    }

    /// Refuses a text longer than `maxTextBytes`.
    pub(super) fn check_text_size(&self, what: &str, text: &str) -> Result<()> {
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

    pub(super) fn merge_duplicate(
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

    pub(super) fn clean_tags(&self, tags: Vec<String>) -> Result<Vec<String>> {
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

    pub(super) fn validate_source(&self, source: &Source) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::dedupe::NearDuplicateConfig;
    use crate::embed::Embedder;
    use crate::engine::Config;
    use crate::env::FixedEnvironment;

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
