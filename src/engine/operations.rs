//! Applying an extractor's operations ([`crate::operations`]): every
//! operation is checked against the request's scope and the ids the
//! extractor was shown before anything changes, then all are applied in
//! the one transaction of the call, so the store takes all of them or none.

use std::borrow::Cow;
use std::collections::HashSet;

use super::ingest::{text_to_store, Captured};
use super::txn::Txn;
use super::{Engine, IngestOutcome, IngestResult, MemoryInput};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::item::{validate_item_id, Kind, MemoryItem, Scope};
use crate::operations::{Operation, OperationsRequest, OperationsResult, Supersession};

/// One checked operation, ready to apply.
enum Step {
    /// Store this input (an `add`).
    Add(MemoryInput),
    /// Store this input as the successor of memory `target` (an `update`).
    Update { target: String, input: MemoryInput },
    /// Soft-delete this memory.
    Delete(String),
    /// Nothing to do: `none`, an `update` that changes no text, or one in
    /// a scope that captures nothing.
    Nothing,
}

/// [`Error::InvalidOperations`] about operation `i`.
fn refuse(i: usize, message: impl std::fmt::Display) -> Error {
    Error::InvalidOperations(format!("operations[{i}]: {message}"))
}

impl Engine {
    /// Checks an extractor's operations against `request.scope` and
    /// `request.allowed`, then applies them in order: `add` stores a
    /// memory of kind `fact` unless it says otherwise (with a key a memory
    /// of the scope holds, superseding that one), `update` stores a memory
    /// that supersedes `id`, `delete` soft-deletes `id`. An operation that
    /// is malformed, too large, names an id the extractor was not shown,
    /// one outside the scope, one already deleted or superseded, or one
    /// twice, or that uses a key another memory of its scope holds, is
    /// [`Error::InvalidOperations`] and nothing is applied. A bad scope or
    /// allowed id (the host's input) is `INVALID_INPUT`.
    pub fn apply_operations(
        &mut self,
        request: OperationsRequest,
        env: &mut dyn Environment,
        txn: &mut Txn,
    ) -> Result<OperationsResult> {
        let steps = self.check_operations(request)?;
        let now = env.now();
        let mut inputs = Vec::new();
        for step in &steps {
            match step {
                Step::Add(input) => inputs.push(input.clone()),
                Step::Update { target, input } => {
                    self.retire(target, now, txn);
                    inputs.push(input.clone());
                }
                Step::Delete(_) | Step::Nothing => {}
            }
        }
        let mut stored = self.ingest_batch(inputs, now, env, txn)?.into_iter();
        let mut result = OperationsResult::default();
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Step::Add(_) => {
                    if let Some(added) = stored.next() {
                        self.report_add(added, &mut result);
                    }
                }
                Step::Update { target, .. } => {
                    let successor = match stored.next() {
                        Some(IngestResult { id: Some(id), outcome, .. }) => (id, outcome),
                        // Checked before: the text is captured in a scope
                        // that captures, and is no deleted memory's.
                        _ => return Err(refuse(i, "the new text would not be stored")),
                    };
                    let (id, outcome) = successor;
                    self.link_successor(&target, &id, now, txn);
                    match outcome {
                        IngestOutcome::Merged => result.merged.push(id.clone()),
                        _ => result.added.push(id.clone()),
                    }
                    result.superseded.push(Supersession { id: target, by: id });
                }
                Step::Delete(id) => {
                    self.delete(&id, false, now, txn)?;
                    result.deleted.push(id);
                }
                Step::Nothing => {}
            }
        }
        Ok(result)
    }

    /// Records what an `add` did in `result`.
    fn report_add(&self, added: IngestResult, result: &mut OperationsResult) {
        let Some(id) = added.id else { return };
        match added.outcome {
            IngestOutcome::Added => result.added.push(id),
            IngestOutcome::Superseded => {
                let old = self
                    .entries
                    .get(&id)
                    .and_then(|e| e.item().supersedes.last().cloned());
                if let Some(old) = old {
                    result.superseded.push(Supersession {
                        id: old,
                        by: id.clone(),
                    });
                }
                result.added.push(id);
            }
            IngestOutcome::Merged | IngestOutcome::Replaced => result.merged.push(id),
            IngestOutcome::Skipped => {}
        }
    }

    /// Every operation of `request` checked, in order, without changing
    /// anything.
    fn check_operations(&self, request: OperationsRequest) -> Result<Vec<Step>> {
        request.scope.validate()?;
        for (i, id) in request.allowed.iter().enumerate() {
            validate_item_id(id).map_err(|e| e.at(&format!("allowed[{i}]")))?;
        }
        let limit = self.config.limits.max_operations;
        if request.operations.len() > limit {
            return Err(Error::InvalidOperations(format!(
                "{} operations; the limit is {limit}",
                request.operations.len()
            )));
        }
        let allowed: HashSet<&str> = request.allowed.iter().map(String::as_str).collect();
        let mut named: HashSet<String> = HashSet::new();
        let mut keys: HashSet<(Scope, String)> = HashSet::new();
        let mut steps = Vec::with_capacity(request.operations.len());
        for (i, op) in request.operations.into_iter().enumerate() {
            let step = match op {
                Operation::Add {
                    text,
                    kind,
                    tags,
                    key,
                    metadata,
                } => {
                    let input = MemoryInput {
                        kind: Some(kind.unwrap_or(Kind::Fact)),
                        tags,
                        supersede: key.as_ref().map(|_| true),
                        key,
                        metadata,
                        ..MemoryInput::new(text, request.scope.clone())
                    };
                    self.check_input(&input).map_err(|e| refuse(i, e))?;
                    Step::Add(input)
                }
                Operation::Update {
                    id,
                    text,
                    kind,
                    tags,
                    key,
                    metadata,
                } => {
                    let old = self.named(i, &id, &request.scope, &allowed, &mut named)?;
                    let input = MemoryInput {
                        kind: Some(kind.unwrap_or(old.kind)),
                        status: Some(old.status),
                        pinned: Some(old.pinned),
                        tags: Some(tags.unwrap_or_else(|| old.tags.clone())),
                        privacy: Some(old.privacy),
                        key: key.or_else(|| old.key.clone()),
                        metadata: metadata.or_else(|| old.metadata.clone()),
                        role: old.role,
                        speaker: old.speaker.clone(),
                        ..MemoryInput::new(text, old.scope.clone())
                    };
                    self.check_input(&input).map_err(|e| refuse(i, e))?;
                    self.check_update(i, &old, &input)?
                }
                Operation::Delete { id } => {
                    self.named(i, &id, &request.scope, &allowed, &mut named)?;
                    Step::Delete(id)
                }
                Operation::None {} => Step::Nothing,
            };
            let keyed = match &step {
                Step::Add(input) | Step::Update { input, .. } => input
                    .key
                    .as_ref()
                    .map(|key| (input.scope.clone(), key.clone())),
                Step::Delete(_) | Step::Nothing => None,
            };
            if let Some(scope_key) = keyed {
                if !keys.insert(scope_key.clone()) {
                    return Err(refuse(i, format!("key `{}` is used twice", scope_key.1)));
                }
            }
            steps.push(step);
        }
        Ok(steps)
    }

    /// The memory `id` an `update` or `delete` names, checked: shown to the
    /// extractor, held, visible from the scope, neither deleted nor
    /// superseded, no chunk of a file, and not named before in the list.
    fn named(
        &self,
        i: usize,
        id: &str,
        scope: &Scope,
        allowed: &HashSet<&str>,
        named: &mut HashSet<String>,
    ) -> Result<Cow<'_, MemoryItem>> {
        if !allowed.contains(id) {
            return Err(refuse(i, format!("`{id}` is not one of the memories shown")));
        }
        let item = self
            .entries
            .get(id)
            .map(|e| e.item())
            .ok_or_else(|| refuse(i, format!("no memory `{id}`")))?;
        if !item.scope.is_visible_across(scope, true) {
            return Err(refuse(i, format!("memory `{id}` is outside the scope")));
        }
        if item.is_deleted() || item.is_superseded() {
            return Err(refuse(i, format!("memory `{id}` is deleted or superseded")));
        }
        if let Some((path, _)) = item.file_location() {
            return Err(refuse(
                i,
                format!("memory `{id}` is a chunk of file `{path}`: it changes with the file"),
            ));
        }
        if !named.insert(id.to_string()) {
            return Err(refuse(i, format!("memory `{id}` is named twice")));
        }
        Ok(item)
    }

    /// The step of an `update` of `old` to `input`: nothing when its text
    /// is `old`'s or its scope captures nothing; refused when `old` is a
    /// summary, or its text is not stored, is a deleted memory's, or its
    /// key is another memory's.
    fn check_update(&self, i: usize, old: &MemoryItem, input: &MemoryInput) -> Result<Step> {
        if !old.summary_of.is_empty() {
            // A summary follows its sources; `summarize` replaces it.
            return Err(refuse(i, format!("memory `{}` is a summary", old.id)));
        }
        let text = match text_to_store(&input.text, self.config.secrets) {
            Ok(Captured::Text(text)) => text,
            Ok(_) => return Err(refuse(i, "the new text asks not to be stored")),
            Err(e) => return Err(refuse(i, e)),
        };
        if text == old.text || !self.config.retention.captures(&old.scope) {
            return Ok(Step::Nothing);
        }
        if let Some(key) = &input.key {
            if let Some(holder) = self.holder_of_key(&old.scope, key) {
                if holder != old.id {
                    return Err(refuse(
                        i,
                        format!("key `{key}` is held by memory `{holder}`"),
                    ));
                }
            }
        } else if self
            .find_text(&old.scope, old.role, old.speaker.as_deref(), &text)
            .is_some_and(|m| m.is_deleted()) {
            return Err(refuse(i, "the new text is one the user deleted"));
        }
        Ok(Step::Update {
            target: old.id.clone(),
            input: input.clone(),
        })
    }
}
