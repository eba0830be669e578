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
//!
//! Session recall@k, the figure published LoCoMo and LongMemEval retrievers
//! report, asks whether any evidence turn's session is among the first k
//! sessions: the sessions of the hits of a second query (top
//! [`SESSION_HITS`]) in the order of their best hit. Both are reported per
//! conversation too ([`recall_by_conversation`]): with two conversations,
//! a change judged on one and confirmed on the other (leave one
//! conversation out) is the check that it generalizes.
//!
//! Injection is measured the same way ([`evidence_kept`]): the share of a
//! question's evidence turns among the memories a dry-run `inject` puts in
//! its block, at a token budget. The relevance gate is measured across
//! conversations ([`gate_sweep`]): each conversation's store is asked its own
//! questions and the other conversations' (other people, other lives), and
//! an unrelated question should inject nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use memtide::embed::Embedder;
use memtide::env::SystemEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{
    Config, InjectQuery, Memory, MemoryInput, RetrieveQuery, Scope, Source, SourceKind, Timestamp,
};
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
    /// LoCoMo's question category (1 multi-hop, 2 temporal, 3 open-domain
    /// inference, 4 single-hop, 5 adversarial, as the dataset numbers them).
    #[serde(default)]
    category: Option<u8>,
}

/// Recall figures of one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recall {
    /// Questions asked.
    pub questions: usize,
    /// Mean evidence recall at 1, 5 and 10.
    pub at1: f64,
    /// See `at1`.
    pub at5: f64,
    /// See `at1`.
    pub at10: f64,
    /// Share of questions with an evidence turn's session among the first
    /// 1, 5 and 10 sessions retrieved.
    pub session_at1: f64,
    /// See `session_at1`.
    pub session_at5: f64,
    /// See `session_at1`.
    pub session_at10: f64,
}

impl Recall {
    /// The question-weighted mean of several runs' figures.
    pub fn pooled(parts: &[Recall]) -> Recall {
        let questions: usize = parts.iter().map(|r| r.questions).sum();
        let n = questions.max(1) as f64;
        let mean = |f: fn(&Recall) -> f64| {
            parts.iter().map(|r| f(r) * r.questions as f64).sum::<f64>() / n
        };
        Recall {
            questions,
            at1: mean(|r| r.at1),
            at5: mean(|r| r.at5),
            at10: mean(|r| r.at10),
            session_at1: mean(|r| r.session_at1),
            session_at5: mean(|r| r.session_at5),
            session_at10: mean(|r| r.session_at10),
        }
    }
}

/// Hits of the query that ranks sessions: enough for ten distinct sessions
/// in nearly every question of the dev set.
pub const SESSION_HITS: usize = 50;

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
    let month = memtide::text::calendar::month_number(month_name)?;
    let text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z");
    Timestamp::parse_rfc3339(&text).ok()
}

/// A question with its evidence turns and its category.
type Asked = (String, BTreeSet<String>, Option<u8>);

/// The dev set ingested, one scope per conversation, with what each memory
/// covers.
pub struct Loaded {
    mem: Memory<MemoryStorage, SystemEnvironment>,
    /// Per conversation: its scope and its questions with their evidence
    /// turns (questions without evidence left out).
    conversations: Vec<(Scope, Vec<Asked>)>,
    /// The turns each memory covers: its own and those merged into it.
    covers: HashMap<String, BTreeSet<String>>,
    /// The session of each turn, as (conversation, session) indexes, by
    /// conversation and turn id (LoCoMo's turn ids, `D<session>:<n>`, repeat
    /// across conversations).
    sessions: HashMap<(usize, String), (usize, usize)>,
    /// The session each summary memory summarizes ([`summaries`]).
    summary_sessions: HashMap<String, (usize, usize)>,
    /// Per conversation, per session: its turns as (turn id, memory id,
    /// text), when the turns were stored in session scopes.
    session_turns: Vec<Vec<Vec<(String, String, String)>>>,
    /// Every turn by conversation and turn id: where it was said and what
    /// ([`misses`]).
    turns: HashMap<(usize, String), TurnSaid>,
}

/// One turn of the document as said.
struct TurnSaid {
    /// Its position in its conversation (sessions in order).
    position: usize,
    /// Its text as stored (`Name: text` with the speaker prefix).
    text: String,
    /// Its speaker.
    speaker: String,
    /// Its session's date, in ms since the Unix epoch.
    made_at: i64,
}

mod misses;
mod summaries;
pub use misses::{misses, questions_missing, reason_counts, Miss, MissReason, MissedTurn};
pub use summaries::{add_session_summaries, SummaryText};

/// Where a turn's speaker is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speakers {
    /// In the text, as `Name: text` (how memories recorded it before the
    /// `speaker` field).
    Prefix,
    /// In the memory's `speaker` field, the text as said.
    Field,
}

/// Ingests a LoCoMo JSON document, with the model attached when one is
/// given (hybrid retrieval), speakers written as `Name: text`.
pub fn load(json: &str, model: Option<Arc<dyn Embedder>>) -> Result<Loaded, String> {
    load_with(json, model, Config::default(), Speakers::Prefix)
}

/// [`load`] into a store opened with `config` (to try ranking parameters),
/// with the speakers recorded as `speakers` says.
pub fn load_with(
    json: &str,
    model: Option<Arc<dyn Embedder>>,
    config: Config,
    speakers: Speakers,
) -> Result<Loaded, String> {
    load_scoped(json, model, config, speakers, false)
}

/// [`load_with`], each session's turns stored in a scope of their own (the
/// conversation's workspace with `sessionId` `S<n>`), which a question
/// asked in the workspace reaches (`sessions: "all"`): what summaries of
/// sessions need ([`add_session_summaries`]).
pub fn load_by_session(
    json: &str,
    model: Option<Arc<dyn Embedder>>,
    config: Config,
    speakers: Speakers,
) -> Result<Loaded, String> {
    load_scoped(json, model, config, speakers, true)
}

fn load_scoped(
    json: &str,
    model: Option<Arc<dyn Embedder>>,
    config: Config,
    speakers: Speakers,
    by_session: bool,
) -> Result<Loaded, String> {
    let data: Dataset = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let env = SystemEnvironment::default();
    let mut mem = Memory::open(MemoryStorage::new(), env, config).map_err(|e| e.to_string())?;
    if let Some(model) = model {
        mem.set_embedder(model).map_err(|e| e.to_string())?;
    }
    let mut conversations = Vec::new();
    let mut covers: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut sessions = HashMap::new();
    let mut session_turns = Vec::new();
    let mut said = HashMap::new();
    for (c, conv) in data.conversations.iter().enumerate() {
        let scope = Scope::workspace("locomo", conv.conversation_id.as_str());
        let mut inputs = Vec::new();
        let mut turn_sessions = Vec::new();
        for (s, session) in conv.sessions.iter().enumerate() {
            let turn_scope = if by_session {
                Scope {
                    session_id: Some(format!("S{}", s + 1)),
                    ..scope.clone()
                }
            } else {
                scope.clone()
            };
            let created = parse_session_date(&session.date)
                .ok_or_else(|| format!("unreadable session date `{}`", session.date))?;
            for turn in &session.turns {
                sessions.insert((c, turn.id.clone()), (c, s));
                let (mut text, speaker) = match speakers {
                    Speakers::Prefix => (format!("{}: {}", turn.speaker, turn.text), None),
                    Speakers::Field => (turn.text.clone(), Some(turn.speaker.clone())),
                };
                text.push_str(&shared_caption(turn));
                turn_sessions.push(s);
                said.insert(
                    (c, turn.id.clone()),
                    TurnSaid {
                        position: inputs.len(),
                        text: text.clone(),
                        speaker: turn.speaker.clone(),
                        made_at: created.0,
                    },
                );
                inputs.push(MemoryInput {
                    source: Some(Source {
                        kind: SourceKind::Message,
                        reference: turn.id.clone(),
                        uri: None,
                    }),
                    created_at: Some(created),
                    speaker,
                    ..MemoryInput::new(text, turn_scope.clone())
                });
            }
        }
        let turns: Vec<String> = inputs
            .iter()
            .filter_map(|i| i.source.as_ref().map(|s| s.reference.clone()))
            .collect();
        let texts: Vec<String> = inputs.iter().map(|i| i.text.clone()).collect();
        let results = mem.ingest(inputs).map_err(|e| e.to_string())?;
        let mut by_session = vec![Vec::new(); conv.sessions.len()];
        for (((turn, result), s), text) in
            turns.into_iter().zip(results).zip(turn_sessions).zip(texts)
        {
            if let Some(id) = result.id {
                by_session[s].push((turn.clone(), id.clone(), text));
                covers.entry(id).or_default().insert(turn);
            }
        }
        session_turns.push(by_session);
        let questions = conv
            .questions
            .iter()
            .filter(|q| !q.evidence.is_empty())
            .map(|q| {
                (
                    q.question.clone(),
                    q.evidence.iter().cloned().collect(),
                    q.category,
                )
            })
            .collect();
        conversations.push((scope, questions));
    }
    Ok(Loaded {
        mem,
        conversations,
        covers,
        sessions,
        summary_sessions: HashMap::new(),
        session_turns: if by_session {
            session_turns
        } else {
            Vec::new()
        },
        turns: said,
    })
}

/// A turn as the model embeds it: `Speaker: text`, whichever way
/// [`Speakers`] records the speaker (the engine embeds a memory with its
/// `speaker` field as `Name: text`), plus its shared image's caption.
fn said(turn: &Turn) -> String {
    let mut text = format!("{}: {}", turn.speaker, turn.text);
    text.push_str(&shared_caption(turn));
    text
}

/// The ` [shares <caption>]` a turn sharing an image ends with, or "".
fn shared_caption(turn: &Turn) -> String {
    turn.image_caption
        .as_ref()
        .map_or(String::new(), |caption| format!(" [shares {caption}]"))
}

/// Each turn's text as the model embeds it ([`said`]) beside the text of
/// its contextual embedding: the session's previous turn, a newline, then
/// the turn's own (what `locomo_eval --contextual-embedding` embeds in
/// place of the turn, to measure a contextual embedding against the
/// context vector's sum). The first turn of a session has no previous
/// turn and is left out.
pub fn contextual_texts(json: &str) -> Result<Vec<(String, String)>, String> {
    let data: Dataset = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for session in data.conversations.iter().flat_map(|c| &c.sessions) {
        let said: Vec<String> = session.turns.iter().map(said).collect();
        for pair in said.windows(2) {
            out.push((pair[1].clone(), format!("{}\n{}", pair[0], pair[1])));
        }
    }
    Ok(out)
}

/// Which texts `locomo_eval --embed-without-speaker` embeds without the
/// speakers' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nameless {
    /// The questions: each name of its conversation's speakers removed.
    Questions,
    /// The turns: embedded without their `Speaker: ` label.
    Turns,
    /// Both.
    Both,
}

/// The texts the model embeds that `nameless` says to embed without the
/// speakers' names, each beside its nameless form: a question with every
/// name of its conversation's speakers (and a possessive `'s` after it)
/// removed, a turn ([`said`]) without its `Speaker: ` label. A protocol
/// variant: whether the name, which a short question's embedding leans
/// on and every turn of a speaker shares, hides the topic.
pub fn nameless_texts(json: &str, nameless: Nameless) -> Result<Vec<(String, String)>, String> {
    let data: Dataset = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for conv in &data.conversations {
        let turns = conv.sessions.iter().flat_map(|s| &s.turns);
        if nameless != Nameless::Questions {
            out.extend(
                turns
                    .clone()
                    .map(|t| (said(t), format!("{}{}", t.text, shared_caption(t)))),
            );
        }
        if nameless != Nameless::Turns {
            let names: BTreeSet<&str> = turns.map(|t| t.speaker.as_str()).collect();
            out.extend(
                conv.questions
                    .iter()
                    .map(|q| (q.question.clone(), without_names(&q.question, &names))),
            );
        }
    }
    Ok(out)
}

/// `text` without the words that are one of `names`, with or without a
/// possessive `'s` (the punctuation after one is kept).
fn without_names(text: &str, names: &BTreeSet<&str>) -> String {
    text.split(' ')
        .map(|word| {
            let bare = word.trim_end_matches(|c: char| !c.is_alphanumeric());
            let name = ["'s", "\u{2019}s"]
                .iter()
                .find_map(|s| bare.strip_suffix(s))
                .unwrap_or(bare);
            if names.contains(name) {
                &word[bare.len()..]
            } else {
                word
            }
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the protocol over a LoCoMo JSON document, hybrid when a model is
/// given.
pub fn evaluate(json: &str, model: Option<Arc<dyn Embedder>>) -> Result<Recall, String> {
    recall(&mut load(json, model)?)
}

/// Runs the protocol over a loaded document.
pub fn recall(loaded: &mut Loaded) -> Result<Recall, String> {
    Ok(Recall::pooled(&recall_by_conversation(loaded)?))
}

/// Runs the protocol over a loaded document, one figure per conversation.
pub fn recall_by_conversation(loaded: &mut Loaded) -> Result<Vec<Recall>, String> {
    Ok(recall_by_question(loaded)?
        .iter()
        .map(|questions| Recall::pooled(&questions.iter().map(|q| q.recall).collect::<Vec<_>>()))
        .collect())
}

/// One question's figures (a [`Recall`] of one question) and its category.
#[derive(Debug, Clone, Copy)]
pub struct QuestionRecall {
    /// LoCoMo's category of the question, when the data gives one.
    pub category: Option<u8>,
    /// The question's figures.
    pub recall: Recall,
}

/// Runs the protocol over a loaded document, one figure per question,
/// grouped by conversation.
pub fn recall_by_question(loaded: &mut Loaded) -> Result<Vec<Vec<QuestionRecall>>, String> {
    (0..loaded.conversations.len())
        .map(|c| loaded.conversation_recall(c))
        .collect()
}

/// The pooled figures of each category among some questions, by category
/// (questions without one left out).
pub fn recall_by_category<'a>(
    questions: impl IntoIterator<Item = &'a QuestionRecall>,
) -> Vec<(u8, Recall)> {
    let mut by: std::collections::BTreeMap<u8, Vec<Recall>> = std::collections::BTreeMap::new();
    for q in questions {
        if let Some(category) = q.category {
            by.entry(category).or_default().push(q.recall);
        }
    }
    by.into_iter()
        .map(|(category, parts)| (category, Recall::pooled(&parts)))
        .collect()
}

impl Loaded {
    /// The memories of a dry-run retrieval of `question` in conversation
    /// `conv`'s scope, best first.
    fn retrieve(
        &mut self,
        conv: usize,
        question: &str,
        limit: usize,
    ) -> Result<Vec<String>, String> {
        let query = RetrieveQuery {
            limit: Some(limit),
            dry_run: true,
            ..RetrieveQuery::new(question, self.conversations[conv].0.clone())
        };
        let hits = self.mem.retrieve(&query).map_err(|e| e.to_string())?;
        Ok(hits.into_iter().map(|h| h.item.id).collect())
    }

    /// The protocol over conversation `conv`'s questions, one figure each.
    fn conversation_recall(&mut self, conv: usize) -> Result<Vec<QuestionRecall>, String> {
        let mut out = Vec::new();
        for q in 0..self.conversations[conv].1.len() {
            let question = self.conversations[conv].1[q].0.clone();
            let turns = self.retrieve(conv, &question, 10)?;
            let session_hits = self.retrieve(conv, &question, SESSION_HITS)?;
            let (_, evidence, category) = &self.conversations[conv].1[q];
            let covered: Vec<&BTreeSet<String>> =
                turns.iter().filter_map(|id| self.covers.get(id)).collect();
            let recall_at = |k: usize| {
                let found: BTreeSet<&String> = covered.iter().take(k).copied().flatten().collect();
                evidence.iter().filter(|e| found.contains(e)).count() as f64 / evidence.len() as f64
            };
            // Sessions in the order of their best hit.
            // A summary's hit ranks its session.
            let mut ranked: Vec<(usize, usize)> = Vec::new();
            for id in &session_hits {
                let own = self.summary_sessions.get(id).copied();
                let covered = self.covers.get(id).into_iter().flatten();
                let of_turns =
                    covered.filter_map(|turn| self.sessions.get(&(conv, turn.clone())).copied());
                for session in own.into_iter().chain(of_turns) {
                    if !ranked.contains(&session) {
                        ranked.push(session);
                    }
                }
            }
            let wanted: BTreeSet<(usize, usize)> = evidence
                .iter()
                .filter_map(|e| self.sessions.get(&(conv, e.clone())).copied())
                .collect();
            let session_at =
                |k: usize| f64::from(u8::from(ranked.iter().take(k).any(|s| wanted.contains(s))));
            out.push(QuestionRecall {
                category: *category,
                recall: Recall {
                    questions: 1,
                    at1: recall_at(1),
                    at5: recall_at(5),
                    at10: recall_at(10),
                    session_at1: session_at(1),
                    session_at5: session_at(5),
                    session_at10: session_at(10),
                },
            });
        }
        Ok(out)
    }
}

impl Loaded {
    /// Conversations in the document.
    pub fn conversations(&self) -> usize {
        self.conversations.len()
    }

    /// A dry-run injection of `question` in conversation `conv`'s scope.
    fn inject(
        &mut self,
        conv: usize,
        question: &str,
        budget: usize,
        min_relevance: Option<f32>,
    ) -> Result<memtide::Injection, String> {
        let scope = self.conversations[conv].0.clone();
        let query = RetrieveQuery {
            dry_run: true,
            min_relevance,
            ..RetrieveQuery::new(question, scope)
        };
        self.mem
            .inject(&InjectQuery::new(query, budget))
            .map_err(|e| e.to_string())
    }

    /// Mean share of the evidence of conversation `conv`'s questions (every
    /// conversation's when `None`) that a dry-run `inject` at `budget` tokens
    /// puts in its block, with the gate at `min_relevance` (the default
    /// when `None`).
    pub fn evidence_kept(
        &mut self,
        conv: Option<usize>,
        budget: usize,
        min_relevance: Option<f32>,
    ) -> Result<f64, String> {
        let (mut sum, mut n) = (0.0, 0usize);
        for c in 0..self.conversations.len() {
            if conv.is_some_and(|only| only != c) {
                continue;
            }
            for q in 0..self.conversations[c].1.len() {
                let question = self.conversations[c].1[q].0.clone();
                let injection = self.inject(c, &question, budget, min_relevance)?;
                let evidence = &self.conversations[c].1[q].1;
                let found: BTreeSet<&String> = injection
                    .used
                    .iter()
                    .filter_map(|id| self.covers.get(id))
                    .flatten()
                    .collect();
                sum += evidence.iter().filter(|e| found.contains(e)).count() as f64
                    / evidence.len() as f64;
                n += 1;
            }
        }
        Ok(sum / n.max(1) as f64)
    }

    /// Share of the other conversations' questions for which a dry-run
    /// `inject` (1,000 tokens) in conversation `conv`'s scope (every
    /// conversation's when `None`) injects nothing, with the gate at
    /// `min_relevance` (the default when `None`).
    pub fn unrelated_empty(
        &mut self,
        conv: Option<usize>,
        min_relevance: Option<f32>,
    ) -> Result<f64, String> {
        let (mut empty, mut n) = (0usize, 0usize);
        for c in 0..self.conversations.len() {
            if conv.is_some_and(|only| only != c) {
                continue;
            }
            for other in (0..self.conversations.len()).filter(|&o| o != c) {
                for q in 0..self.conversations[other].1.len() {
                    let question = self.conversations[other].1[q].0.clone();
                    let injection = self.inject(c, &question, 1_000, min_relevance)?;
                    empty += usize::from(injection.used.is_empty());
                    n += 1;
                }
            }
        }
        Ok(empty as f64 / n.max(1) as f64)
    }
}

/// The gate's figures at one threshold for one conversation's store.
#[derive(Debug, Clone, Copy)]
pub struct GatePoint {
    /// The `minRelevance` tried.
    pub threshold: f32,
    /// Share of the other conversations' questions that inject nothing.
    pub unrelated_empty: f64,
    /// Mean share of the own questions' evidence injected at 1,000 tokens.
    pub own_kept: f64,
}

/// The gate's figures at each threshold, per conversation (`[conv][i]`).
pub fn gate_sweep(loaded: &mut Loaded, thresholds: &[f32]) -> Result<Vec<Vec<GatePoint>>, String> {
    (0..loaded.conversations())
        .map(|c| {
            thresholds
                .iter()
                .map(|&t| {
                    Ok(GatePoint {
                        threshold: t,
                        unrelated_empty: loaded.unrelated_empty(Some(c), Some(t))?,
                        own_kept: loaded.evidence_kept(Some(c), 1_000, Some(t))?,
                    })
                })
                .collect()
        })
        .collect()
}

/// Share of unrelated questions the gate must silence (the target).
pub const SILENCE_TARGET: f64 = 0.8;

/// The threshold some points recommend: the lowest whose unrelated
/// questions inject nothing at least [`SILENCE_TARGET`] of the time, so the
/// own questions keep as much of their evidence as the target allows.
/// `points` go by increasing threshold.
pub fn choose_threshold(points: &[GatePoint]) -> Option<f32> {
    points
        .iter()
        .find(|p| p.unrelated_empty >= SILENCE_TARGET)
        .map(|p| p.threshold)
}
