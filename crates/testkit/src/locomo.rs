//! The LoCoMo retrieval-quality protocol: evidence recall of memtide's
//! retrieval on the LoCoMo development set (`tests/data/locomo_dev.json`;
//! `tests/data/README.md` gives its source and licence). Run by memtide's
//! `locomo` tests and printed by `examples/locomo_eval.rs`.
//!
//! Each conversation is its own scope, ingested in one call; every dialog
//! turn becomes one memory (`Speaker: text`, plus ` [shares <caption>]` when
//! the turn shares an image) created at its session's date, with the turn id
//! as `source.ref`. The turns of a session share that date, so their order
//! rests on the ids, which come from [`SystemEnvironment`] as in a real
//! program (ULIDs in the order they are made), not from the sequential ids
//! of a test environment.
//! Every question is asked in its conversation's scope (dry run, top 10) and
//! evidence recall@k is the share of the question's evidence turns among the
//! first k hits, averaged over questions. A hit covers its own turn and every
//! turn merged into it as a duplicate.

use std::collections::BTreeSet;
use std::sync::Arc;

use memtide::embed::Embedder;
use memtide::env::SystemEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{Memory, MemoryInput, RetrieveQuery, Scope, Source, SourceKind, Timestamp};
use serde::Deserialize;

#[derive(Deserialize)]
struct Dataset {
    conversations: Vec<Conversation>,
}

#[derive(Deserialize)]
struct Conversation {
    conversation_id: String,
    sessions: Vec<Session>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Session {
    date: String,
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    id: String,
    speaker: String,
    text: String,
    #[serde(default)]
    image_caption: Option<String>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    evidence: Vec<String>,
}

/// Recall figures of one run.
#[derive(Debug, Clone, Copy)]
pub struct Recall {
    /// Questions asked.
    pub questions: usize,
    /// Mean evidence recall at 1, 5 and 10.
    pub at1: f64,
    /// See `at1`.
    pub at5: f64,
    /// See `at1`.
    pub at10: f64,
}

/// Parses LoCoMo session dates such as `1:56 pm on 8 May, 2023`.
pub fn parse_session_date(date: &str) -> Option<Timestamp> {
    let (clock, day_part) = date.split_once(" on ")?;
    let (hm, meridiem) = clock.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let mut hour: u32 = h.parse().ok()?;
    let minute: u32 = m.parse().ok()?;
    match meridiem.to_ascii_lowercase().as_str() {
        "am" if hour == 12 => hour = 0,
        "pm" if hour != 12 => hour += 12,
        "am" | "pm" => {}
        _ => return None,
    }
    let mut parts = day_part.split_whitespace();
    let day: u32 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?.trim_end_matches(',');
    let year: i32 = parts.next()?.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let month = MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(month_name))?
        + 1;
    let text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z");
    Timestamp::parse_rfc3339(&text).ok()
}

/// Runs the protocol over a LoCoMo JSON document, hybrid when a model is
/// given.
pub fn evaluate(json: &str, model: Option<Arc<dyn Embedder>>) -> Result<Recall, String> {
    let data: Dataset = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let env = SystemEnvironment::default();
    let mut mem =
        Memory::open(MemoryStorage::new(), env, Default::default()).map_err(|e| e.to_string())?;
    if let Some(model) = model {
        mem.set_embedder(model).map_err(|e| e.to_string())?;
    }
    let (mut questions, mut sum1, mut sum5, mut sum10) = (0usize, 0.0, 0.0, 0.0);
    for conv in &data.conversations {
        let scope = Scope::workspace("locomo", conv.conversation_id.as_str());
        let mut inputs = Vec::new();
        for session in &conv.sessions {
            let created = parse_session_date(&session.date)
                .ok_or_else(|| format!("unreadable session date `{}`", session.date))?;
            for turn in &session.turns {
                let mut text = format!("{}: {}", turn.speaker, turn.text);
                if let Some(caption) = &turn.image_caption {
                    text.push_str(&format!(" [shares {caption}]"));
                }
                inputs.push(MemoryInput {
                    source: Some(Source {
                        kind: SourceKind::Message,
                        reference: turn.id.clone(),
                        uri: None,
                    }),
                    created_at: Some(created),
                    ..MemoryInput::new(text, scope.clone())
                });
            }
        }
        mem.ingest(inputs).map_err(|e| e.to_string())?;
        for q in &conv.questions {
            let query = RetrieveQuery {
                limit: Some(10),
                dry_run: true,
                ..RetrieveQuery::new(q.question.as_str(), scope.clone())
            };
            let hits = mem.retrieve(&query).map_err(|e| e.to_string())?;
            let covered: Vec<BTreeSet<&str>> = hits
                .iter()
                .map(|h| {
                    std::iter::once(h.item.source.reference.as_str())
                        .chain(
                            h.item
                                .merged_from
                                .iter()
                                .map(|m| m.source.reference.as_str()),
                        )
                        .collect()
                })
                .collect();
            let evidence: BTreeSet<&str> = q.evidence.iter().map(String::as_str).collect();
            if evidence.is_empty() {
                continue;
            }
            let recall_at = |k: usize| {
                let found: BTreeSet<&str> = covered.iter().take(k).flatten().copied().collect();
                evidence.intersection(&found).count() as f64 / evidence.len() as f64
            };
            questions += 1;
            sum1 += recall_at(1);
            sum5 += recall_at(5);
            sum10 += recall_at(10);
        }
    }
    let n = questions.max(1) as f64;
    Ok(Recall {
        questions,
        at1: sum1 / n,
        at5: sum5 / n,
        at10: sum10 / n,
    })
}
