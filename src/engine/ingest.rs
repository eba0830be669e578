//! Ingest: what a memory input becomes. Each input is validated (a caller
//! can check one alone with `check_input`), its text captured (opt-out,
//! redaction, normalization), deduplicated against the store (exact
//! duplicates by content hash, near-duplicates as [`crate::dedupe`]
//! chooses them) and stored with the memory it follows in its conversation
//! (`docs/design.md`, "Data flow").

use super::duplicate::{DuplicateKey, Voice};
use super::catalog::Id;
use super::txn::Txn;
use super::{Engine, IngestOutcome, IngestReason, IngestResult, MemoryInput};
use crate::dedupe::{self, Duplicate, NearDuplicateAction, Neighbourhood};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::index::bm25::TermCounts;
use crate::index::Bm25Index;
use crate::item::{validate_id, MemoryItem, Scope, Source, Tenant, Timestamp};
use crate::metadata;
use crate::rank::Rankable;
use crate::str_list::StrList;
use crate::text::{self, Capture, SecretsConfig};

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
/// ([`text::capture`]: opt-out, redaction, normalization), then, unless
/// `secrets.redact` is off, every credential replaced by
/// [`text::SECRET_MARKER`] ([`text::scrub`]), with a text left blank
/// ([`text::is_blank`]: only whitespace and default-ignorable characters
/// such as U+200D) refused as empty.
pub(crate) fn text_to_store(raw: &str, secrets: SecretsConfig) -> Result<Captured> {
    match text::capture(raw) {
        Capture::NoMemory => Ok(Captured::NoMemory),
        Capture::Text {
            text,
            private_removed,
        } => {
            let text = if secrets.redact {
                // The marker replaces whole tokens of a normalized text, so
                // the result is normalized already; normalizing again keeps
                // that a checked fact rather than an argument. A text with
                // no secret is the captured text, normalized (a fixed
                // point).
                let scrubbed = text::scrub(text);
                if scrubbed.secrets > 0 {
                    text::normalize(&scrubbed.text)
                } else {
                    scrubbed.text
                }
            } else {
                text
            };
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

/// Whether a stored text marks its memory as holding PII
/// ([`text::has_pii`]), as `secrets.markPii` asks.
pub(crate) fn detects_pii(text: &str, secrets: SecretsConfig) -> bool {
    secrets.mark_pii && text::has_pii(text)
}

/// The distinct terms of a memory's `terms` with their frequencies, in
/// ascending byte order: what [`Bm25Index::insert`] counts of them, so
/// indexing the counts gives the same index. The terms stay in their
/// list; the counts name them by their place in it.
fn counted(terms: StrList) -> TermCounts {
    let mut sorted: Vec<(&str, u32)> = (0..terms.len())
        .filter_map(|index| Some((terms.get(index)?, u32::try_from(index).ok()?)))
        .collect();
    sorted.sort_unstable_by_key(|&(term, _)| term);
    let mut counts: Vec<(u32, u32)> = Vec::with_capacity(sorted.len());
    let mut last = None;
    for (term, index) in sorted {
        match counts.last_mut() {
            Some((_, frequency)) if last == Some(term) => *frequency = frequency.saturating_add(1),
            _ => {
                counts.push((index, 1));
                last = Some(term);
            }
        }
    }
    TermCounts::of_list(terms, counts)
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
        self.check_new_keys(&inputs)?;
        self.ingest_batch(inputs, env.now(), env, txn)
    }

    /// [`Engine::ingest`] once the keys are checked: an input whose key a
    /// memory of its scope holds replaces that memory (`upsert`). Everything
    /// the batch stores and records is at `now`, the caller's one reading of
    /// the clock, so an operation that also records events about the
    /// memories it stores (an extractor's `update`) gives them one time.
    pub(super) fn ingest_batch(
        &mut self,
        inputs: Vec<MemoryInput>,
        now: Timestamp,
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
        let mut prepared = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let at = |e: Error| e.at(&format!("inputs[{i}]"));
            let tags = self.validate_fields(&input).map_err(at)?;
            let captured = text_to_store(&input.text, self.config.secrets).map_err(at)?;
            // A scope whose retention rule says `capture: false` keeps
            // nothing; its inputs are still checked like any other.
            let captured = self
                .config
                .retention
                .captures(&input.scope)
                .then_some(captured);
            prepared.push((input, tags, captured));
        }
        let said: Vec<_> = prepared
            .iter()
            .filter_map(|(input, _, captured)| match captured {
                Some(Captured::Text(t)) => Some(text::said_text(t, input.speaker.as_deref())),
                _ => None,
            })
            .collect();
        let texts: Vec<&str> = said
            .iter()
            .map(AsRef::as_ref)
            .collect();
        let mut vectors = self.embed(&texts)?.map(Vec::into_iter);
        let mut results = Vec::with_capacity(prepared.len());
        for (input, tags, captured) in prepared {
            let vector = match captured {
                Some(Captured::Text(_)) => vectors.as_mut().and_then(Iterator::next),
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
        captured: Option<Captured>,
        vector: Option<Vec<f32>>,
        now: Timestamp,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> IngestResult {
        let skipped = |reason| IngestResult {
            id: None,
            outcome: IngestOutcome::Skipped,
            reason: Some(reason),
            similar_to: None,
        };
        let text = match captured {
            None => return skipped(IngestReason::NotCaptured),
            Some(Captured::NoMemory) => return skipped(IngestReason::NoMemory),
            Some(Captured::OnlyPrivate) => return skipped(IngestReason::Private),
            Some(Captured::Text(t)) => t,
        };
        if let Some(existing) = self.keyed(&input) {
            if input.supersede == Some(true) {
                return self.supersede_keyed(&existing, input, tags, text, vector, now, env, txn);
            }
            return self.replace_keyed(&existing, input, tags, text, vector, now, txn);
        }
        self.add_captured(input, tags, text, vector, now, env, txn)
    }

    /// Stores a captured text whose key (if any) no memory holds: merged
    /// into a duplicate of its scope, or added as a new memory.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_captured(
        &mut self,
        input: MemoryInput,
        tags: Vec<String>,
        text: String,
        vector: Option<Vec<f32>>,
        now: Timestamp,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> IngestResult {
        let source = input.source.unwrap_or_default();
        let content_hash = text::content_hash(&text);
        let created_at = input.created_at.unwrap_or(now);
        let keyed = input.key.is_some();
        let mut privacy = input.privacy.unwrap_or_default();
        privacy.pii |= detects_pii(&text, self.config.secrets);
        let duplicate = Duplicate {
            source: source.clone(),
            created_at,
            tags: tags.clone(),
            pinned: input.pinned.unwrap_or(false),
            privacy,
            text: None,
        };

        // A keyed memory is the caller's record: never merged by text.
        let voice = Voice::of(input.role, input.speaker.as_deref());
        let hash_key = DuplicateKey::new(self.scope_key(&input.scope), voice.as_said(), &content_hash);
        if let Some(existing) = self.duplicate_of(&hash_key).filter(|_| !keyed).cloned() {
            return self.merge_duplicate(&existing, duplicate, IngestReason::Duplicate, now, txn);
        }

        // The terms the memory is compared by are those it is indexed by:
        // analysed once.
        let terms = (!keyed).then(|| text::said_term_list(&text, input.speaker.as_deref()));
        let similar = terms.as_ref().and_then(|terms| {
            self.find_near_duplicate(&input.scope, &voice, &text, terms, vector.as_deref())
        });
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
        let follows = if keyed {
            None
        } else {
            self.thread_predecessor(&input.scope, created_at)
        };
        let item = MemoryItem {
            id: id.clone(),
            text,
            kind: input.kind.unwrap_or_default(),
            scope: input.scope,
            status: input.status.unwrap_or_default(),
            pinned: duplicate.pinned,
            source,
            content_hash,
            role: input.role,
            speaker: input.speaker,
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
            key: input.key,
            metadata: metadata::normalize(input.metadata),
            history: Vec::new(),
            superseded_at: None,
            superseded_by: None,
            supersedes: Vec::new(),
            summary_of: Vec::new(),
            withdrawn: false,
        };
        let counts = terms.map(counted);
        let step = txn.undo.len();
        self.write_counted(txn, &id, Some(item), counts.as_ref());
        if let Some(counts) = counts {
            txn.keep_counted(&id, step, counts);
        }
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

    /// Checks each input as [`Engine::check_input`] checks it (the first
    /// refused one is the error, at `inputs[i]`), and gives the text
    /// [`Engine::ingest`] would embed for each: `None` without a model, and
    /// for an input that stores no text. One capture of each text serves
    /// both.
    pub(crate) fn texts_to_embed(&self, inputs: &[MemoryInput]) -> Result<Vec<Option<String>>> {
        let embeds = self.embedder().is_some();
        inputs
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let at = |e: Error| e.at(&format!("inputs[{i}]"));
                self.validate_fields(input).map_err(at)?;
                Ok(match text_to_store(&input.text, self.config.secrets).map_err(at)? {
                    Captured::Text(text) if embeds => {
                        Some(text::said_text(&text, input.speaker.as_deref()).into_owned())
                    }
                    _ => None,
                })
            })
            .collect()
    }

    /// Checks one input as [`Engine::ingest`] would, without changing
    /// anything (lets a caller report every bad input before ingesting).
    pub fn check_input(&self, input: &MemoryInput) -> Result<()> {
        self.validate_fields(input)?;
        text_to_store(&input.text, self.config.secrets).map(|_| ())
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

    /// The stored form of a text that must be stored (an update's, a
    /// summary's): refused when too large, when it asks not to be
    /// remembered, or when nothing is left but private spans.
    pub(super) fn text_that_must_be_stored(&self, raw: &str) -> Result<String> {
        self.check_text_size("text", raw)?;
        match text_to_store(raw, self.config.secrets)? {
            Captured::Text(t) => Ok(t),
            Captured::NoMemory => Err(Error::invalid(
                "text asks not to be remembered (<no-memory>)",
            )),
            Captured::OnlyPrivate => Err(Error::invalid(
                "text is empty after removing <private> spans",
            )),
        }
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
        if let Some(key) = &input.key {
            validate_id("key", key)?;
        }
        if let Some(metadata) = &input.metadata {
            self.check_metadata(metadata)?;
        }
        if let Some(speaker) = &input.speaker {
            validate_id("speaker", speaker)?;
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
        if entry.is_deleted() {
            return IngestResult {
                id: Some(existing_id.to_string()),
                outcome: IngestOutcome::Skipped,
                reason: Some(IngestReason::Suppressed),
                similar_to: None,
            };
        }
        let mut item = entry.item().into_owned();
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

    /// The most similar live memory of exactly `scope` said in `voice`
    /// that passes the near-duplicate gates, as
    /// [`dedupe::find_near_duplicate`] chooses it.
    pub(crate) fn find_near_duplicate(
        &self,
        scope: &Scope,
        voice: &Voice,
        text: &str,
        terms: &StrList,
        vector: Option<&[f32]>,
    ) -> Option<String> {
        let memories = ScopeMemories {
            engine: self,
            scope,
            voice,
            tenant: scope.tenant(),
        };
        dedupe::find_near_duplicate(&self.config.near_duplicate, &memories, text, terms, vector)
    }

    /// The live memory a new memory of `scope` created at `created_at`
    /// follows: the latest one of the same scope created at most
    /// `threadGapMinutes` earlier (ids break ties, in capture order).
    fn thread_predecessor(&self, scope: &Scope, created_at: Timestamp) -> Option<String> {
        let gap = i64::from(self.config.rank.thread_gap_minutes) * 60_000;
        let scope = self.scope_key(scope);
        let from = (scope.clone(), created_at.0.saturating_sub(gap), Id::from(""));
        let to = (scope, created_at.0.saturating_add(1), Id::from(""));
        self.by_scope_time
            .range_rev(from..to)
            .map(|(_, _, id)| id)
            .find(|id| {
                self.entries
                    .get(&***id)
                    .is_some_and(|e| !e.is_deleted() && !e.is_superseded())
            })
            .map(|id| id.to_string())
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

/// The memories a new memory of `scope` said in `voice` may be a
/// near-duplicate of: the live ones of exactly that scope and voice that
/// are not chunks of a file, with the indexes of their tenant.
struct ScopeMemories<'a> {
    engine: &'a Engine,
    scope: &'a Scope,
    voice: &'a Voice,
    tenant: Tenant,
}

impl Neighbourhood for ScopeMemories<'_> {
    fn lexical(&self) -> Option<&Bm25Index> {
        self.engine.lexical.get(&self.tenant)
    }

    /// Read from its entry: a memory held as its row is not decoded.
    fn eligible(&self, doc: u32) -> Option<&dyn Rankable> {
        let entry = self.engine.entry_of(doc)?;
        let live = entry.scope() == self.scope
            && self.voice.said(entry.role(), entry.speaker())
            && !entry.is_deleted()
            && !entry.is_superseded()
            && !entry.is_file_chunk()
            && entry.key().is_none();
        live.then_some(entry as &dyn Rankable)
    }

    fn cosine(&self, id: &str, vector: &[f32]) -> Option<f32> {
        self.engine.embedding(id).map(|own| own.dot(vector))
    }

    fn nearest(&self, vector: &[f32], k: usize) -> Vec<u32> {
        self.engine
            .vectors
            .get(&self.tenant)
            .map(|ix| ix.search(vector, k, &|doc| self.eligible(doc).is_some()))
            .unwrap_or_default()
            .into_iter()
            .map(|(doc, _)| doc)
            .collect()
    }
}
