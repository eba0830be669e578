//! Supersession: a newer memory takes the place of an older one, the way a
//! changed fact replaces its old value (`docs/memory-model.md`,
//! "Supersession"). The old memory is not replaced in place: it stays
//! stored and readable (`get`, `history`), marked `supersededAt`, and
//! leaves retrieval, injection, listing (unless asked), duplicates, threads
//! and its key; `supersededBy` and the successor's `supersedes` link the
//! two, and each records the event in its history.
//!
//! Two calls supersede: `upsert` with `supersede` (by key, below) and an
//! extractor's `update` operation (`engine/operations.rs`). A hard delete
//! of either memory unlinks the other ([`Engine::unlink_supersessions`]),
//! so no record keeps the erased id.

use super::txn::Txn;
use super::{Engine, IngestOutcome, IngestResult, MemoryInput};
use crate::env::Environment;
use crate::history::{self, HistoryEvent, HistoryKind};
use crate::item::Timestamp;

impl Engine {
    /// Marks memory `id` superseded at `now`, before its successor is
    /// stored: from then on it holds no key and no duplicate or thread
    /// index entry, so the successor can take its key. Nothing happens to
    /// an unknown or already superseded memory.
    pub(super) fn retire(&mut self, id: &str, now: Timestamp, txn: &mut Txn) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        if entry.is_superseded() {
            return;
        }
        let mut item = entry.item().into_owned();
        item.superseded_at = Some(now);
        item.updated_at = now;
        self.write(txn, id, Some(item));
    }

    /// Links the retired memory `old` to its successor `new`: `supersededBy`
    /// and a `superseded` event on `old`, `supersedes` and a `supersedes`
    /// event on `new`.
    pub(super) fn link_successor(&mut self, old: &str, new: &str, now: Timestamp, txn: &mut Txn) {
        let limit = self.config.limits.max_history_events;
        let event = |kind, other: &str| HistoryEvent {
            other: Some(other.to_string()),
            ..HistoryEvent::new(kind, now)
        };
        if let Some(entry) = self.entries.get(old) {
            let mut item = entry.item().into_owned();
            item.superseded_by = Some(new.to_string());
            history::record(&mut item, vec![event(HistoryKind::Superseded, new)], limit);
            self.write(txn, old, Some(item));
        }
        if let Some(entry) = self.entries.get(new) {
            let mut item = entry.item().into_owned();
            if !item.supersedes.iter().any(|s| s == old) {
                item.supersedes.push(old.to_string());
            }
            item.updated_at = now;
            history::record(&mut item, vec![event(HistoryKind::Supersedes, old)], limit);
            self.write(txn, new, Some(item));
        }
    }

    /// `upsert` with `supersede` of an input whose key memory `holder`
    /// holds: a new memory takes the key and supersedes the holder. An
    /// input whose text is the holder's changes no fact: it replaces the
    /// holder in place, as a plain `upsert` does.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn supersede_keyed(
        &mut self,
        holder: &str,
        input: MemoryInput,
        tags: Vec<String>,
        text: String,
        vector: Option<Vec<f32>>,
        now: Timestamp,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> IngestResult {
        let same_text = self.entries.get(holder).is_some_and(|e| e.item().text == text);
        if same_text {
            return self.replace_keyed(holder, input, tags, text, vector, now, txn);
        }
        self.retire(holder, now, txn);
        let added = self.add_captured(input, tags, text, vector, now, env, txn);
        match &added.id {
            Some(id) if added.outcome == IngestOutcome::Added => {
                let id = id.clone();
                self.link_successor(holder, &id, now, txn);
                IngestResult {
                    outcome: IngestOutcome::Superseded,
                    ..added
                }
            }
            // A keyed input is never merged or skipped once captured.
            _ => added,
        }
    }

    /// Before memory `id` is hard-deleted: the memories it superseded and
    /// the one that superseded it forget it (their link and the `other` of
    /// their events), so no stored record keeps the erased id. A memory
    /// whose successor is erased stays superseded: an erasure does not
    /// bring an old fact back.
    pub(super) fn unlink_supersessions(&mut self, id: &str, txn: &mut Txn) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        let linked: Vec<String> = entry
            .item()
            .supersedes
            .iter()
            .cloned()
            .chain(entry.item().superseded_by.clone())
            .collect();
        for other in linked {
            let Some(entry) = self.entries.get(&other) else {
                continue;
            };
            let mut item = entry.item().into_owned();
            if item.superseded_by.as_deref() == Some(id) {
                item.superseded_by = None;
            }
            item.supersedes.retain(|s| s != id);
            for event in &mut item.history {
                if event.other.as_deref() == Some(id) {
                    event.other = None;
                }
            }
            self.write(txn, &other, Some(item));
        }
    }
}
