//! Session summaries on LoCoMo: one `summary` memory per session, linked to
//! the session's turns (`storeSummary`), to measure whether summaries help
//! retrieval rather than assume it (`examples/locomo_eval.rs --summaries`).
//!
//! The dev set carries no summaries of its own (LoCoMo's `session_summary`
//! and `observation` fields are not in `tests/data/locomo_dev.json`), and
//! the tests run no language model, so the summaries are made here by a
//! stated rule ([`SummaryText`]).

use std::collections::HashSet;

use memtide::{Scope, SummaryInput};

use super::Loaded;

/// How a session's summary text is made from its turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryText {
    /// The session's longest turns, at most this many words in all, in
    /// the order they were said: an extractive stand-in for a model's
    /// summary of about that length.
    Extractive(usize),
    /// Every turn of the session: the most a summary could hold.
    Whole,
}

impl SummaryText {
    fn make(self, turns: &[&str]) -> String {
        match self {
            SummaryText::Whole => turns.join(" "),
            SummaryText::Extractive(words) => {
                let count = |t: &str| t.split_whitespace().count();
                let mut order: Vec<usize> = (0..turns.len()).collect();
                order.sort_by_key(|&i| (std::cmp::Reverse(count(turns[i])), i));
                let mut kept = HashSet::new();
                let mut total = 0;
                for i in order {
                    if total + count(turns[i]) > words && !kept.is_empty() {
                        continue;
                    }
                    total += count(turns[i]);
                    kept.insert(i);
                }
                (0..turns.len())
                    .filter(|i| kept.contains(i))
                    .map(|i| turns[i])
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        }
    }
}

/// Stores one summary per session of a store loaded by session
/// ([`super::load_by_session`]), its sources the session's turns. With
/// `as_evidence` a summary covers its sources' turns for turn recall (a
/// hit on it counts as a hit on each); without, it covers none and only
/// takes a place among the hits. Either way it ranks its session for
/// session recall. Returns how many summaries it stored.
pub fn add_session_summaries(
    loaded: &mut Loaded,
    text: SummaryText,
    as_evidence: bool,
) -> Result<usize, String> {
    if loaded.session_turns.is_empty() {
        return Err("summaries need a store loaded by session (load_by_session)".into());
    }
    let mut stored = 0;
    for c in 0..loaded.session_turns.len() {
        let workspace = loaded.conversations[c].0.clone();
        for s in 0..loaded.session_turns[c].len() {
            let turns = &loaded.session_turns[c][s];
            if turns.is_empty() {
                continue;
            }
            let texts: Vec<&str> = turns.iter().map(|(_, _, t)| t.as_str()).collect();
            let input = SummaryInput {
                scope: Scope {
                    session_id: Some(format!("S{}", s + 1)),
                    ..workspace.clone()
                },
                text: text.make(&texts),
                sources: turns.iter().map(|(_, id, _)| id.clone()).collect(),
            };
            let turn_ids: Vec<String> = turns.iter().map(|(turn, _, _)| turn.clone()).collect();
            let summary = loaded.mem.store_summary(input).map_err(|e| e.to_string())?;
            loaded.summary_sessions.insert(summary.id.clone(), (c, s));
            if as_evidence {
                loaded
                    .covers
                    .entry(summary.id)
                    .or_default()
                    .extend(turn_ids);
            }
            stored += 1;
        }
    }
    Ok(stored)
}
