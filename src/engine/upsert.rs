//! Caller keys and history: `upsert` (an input whose key a memory of its
//! scope holds replaces that memory in the same commit, keeping its id),
//! the key checks of `ingest` and `import`, the metadata limit, and each
//! memory's history ([`crate::history`]).

use std::collections::HashSet;

use super::txn::Txn;
use super::{Engine, IngestOutcome, IngestResult, MemoryInput};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::history::{self, HistoryEvent};
use crate::item::{MemoryItem, Scope, Timestamp};
use crate::metadata::{self, Metadata};
use crate::text;

impl Engine {
    /// Stores keyed memories: each input must have a `key`; one whose key
    /// a memory of exactly its scope holds replaces that memory (same id,
    /// its `createdAt` kept unless the input sets one, a `replaced` event in
    /// its history, a soft-deleted one restored), others are added as
    /// [`Engine::ingest`] adds them. Inputs of one batch apply in order.
    pub fn upsert(
        &mut self,
        inputs: Vec<MemoryInput>,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<Vec<IngestResult>> {
        for (i, input) in inputs.iter().enumerate() {
            if input.key.is_none() {
                return Err(Error::invalid(format!(
                    "inputs[{i}]: upsert needs a key"
                )));
            }
        }
        self.ingest_batch(inputs, env.now(), env, txn)
    }

    /// Refuses, for `ingest`, a key a memory of its scope holds or that an
    /// earlier input of the batch uses.
    pub(super) fn check_new_keys(&self, inputs: &[MemoryInput]) -> Result<()> {
        let mut seen: HashSet<(&Scope, &str)> = HashSet::new();
        for (i, input) in inputs.iter().enumerate() {
            let Some(key) = &input.key else { continue };
            if let Some(holder) = self.keyed(input) {
                return Err(Error::invalid(format!(
                    "inputs[{i}]: key `{key}` is held by memory `{holder}` in this scope (upsert replaces it)"
                )));
            }
            if !seen.insert((&input.scope, key)) {
                return Err(Error::invalid(format!(
                    "inputs[{i}]: key `{key}` is used twice in this batch"
                )));
            }
        }
        Ok(())
    }

    /// The memory holding the input's key in its scope, if any.
    pub(super) fn keyed(&self, input: &MemoryInput) -> Option<String> {
        self.holder_of_key(&input.scope, input.key.as_deref()?)
    }

    /// The memory holding `key` in exactly `scope`, if any.
    pub fn holder_of_key(&self, scope: &Scope, key: &str) -> Option<String> {
        self.by_key
            .get(&(self.scope_key(scope), key.to_string()))
            .map(|id| id.to_string())
    }

    /// Refuses metadata larger than `maxMetadataBytes`.
    pub(super) fn check_metadata(&self, metadata: &Metadata) -> Result<()> {
        metadata::check_size(metadata, self.config.limits.max_metadata_bytes)
    }

    /// Replaces the keyed memory `id` by what `input` says (its validated
    /// tags, its stored text, its role and speaker, and the embedding of
    /// the text as said).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn replace_keyed(
        &mut self,
        id: &str,
        input: MemoryInput,
        tags: Vec<String>,
        text: String,
        vector: Option<Vec<f32>>,
        now: Timestamp,
        txn: &mut Txn,
    ) -> IngestResult {
        let result = IngestResult {
            id: Some(id.to_string()),
            outcome: IngestOutcome::Replaced,
            reason: None,
            similar_to: None,
        };
        let Some(entry) = self.entries.get(id) else {
            // `by_key` and `entries` change together in `set`.
            return result;
        };
        let before = entry.item().into_owned();
        let mut privacy = input.privacy.unwrap_or_default();
        privacy.pii |= super::ingest::detects_pii(&text, self.config.secrets);
        let mut item = MemoryItem {
            id: id.to_string(),
            content_hash: text::content_hash(&text),
            text,
            kind: input.kind.unwrap_or_default(),
            scope: input.scope,
            status: input.status.unwrap_or_default(),
            pinned: input.pinned.unwrap_or(false),
            source: input.source.unwrap_or_default(),
            tags,
            privacy,
            created_at: input.created_at.unwrap_or(before.created_at),
            updated_at: before.updated_at,
            deleted_at: None,
            key: input.key,
            metadata: metadata::normalize(input.metadata),
            role: input.role,
            speaker: input.speaker,
            ..before.clone()
        };
        if item == before {
            return result;
        }
        item.updated_at = now;
        let events = history::changes(&before, &item, now, true);
        history::record(&mut item, events, self.config.limits.max_history_events);
        // Embedded as said (`text::said_text`): a new text or speaker makes
        // the stored embedding stale; `vector` is the input's, as said.
        let said_changed = item.text != before.text || item.speaker != before.speaker;
        self.write(txn, id, Some(item));
        let stale = said_changed && self.has_embedding(id);
        let missing = !self.has_embedding(id) && vector.is_some();
        if stale || missing {
            self.write_vector(txn, id, vector);
        }
        result
    }

    /// Records in `after`'s history what changed since `before`.
    pub(super) fn record_history(&self, before: &MemoryItem, after: &mut MemoryItem, now: Timestamp) {
        let events = history::changes(before, after, now, false);
        history::record(after, events, self.config.limits.max_history_events);
    }

    /// The history of a memory, oldest first ([`crate::history::of`]); a
    /// hard-deleted memory has none (`NOT_FOUND`).
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEvent>> {
        self.get(id).map(|item| history::of(&item))
    }
}
