//! Ranking: turns lexical and semantic evidence into one ordered list.
//!
//! For a query, every candidate memory `i` (a BM25 match, a semantic
//! neighbour, or the reply that follows a matching question) is scored in
//! four steps, with the parameters of [`RankParams`]:
//!
//! 1. **Fusion** — `f(i) = W · ℓ(i) + (1 − W) · max(0, cos(q, i))`, with the
//!    lexical evidence `ℓ(i) = bm25(i) / max bm25 + C · c(i)`. BM25 is
//!    normalized by the best BM25 score of the query, the cosine is used
//!    raw; `c(i)` is the idf-weighted share of the query's distinct terms
//!    the memory holds (see "Relevance"). BM25 favours a short turn holding
//!    one rare query term over a turn holding all of them; the coverage
//!    term gives back to a memory that matches more of what was asked.
//!    Without an embedding model `W = 1` (lexical only). A question that
//!    asks to confirm or infer ([`asks_hypothesis`]: "Would Caroline pursue
//!    writing as a career?") states a hypothesis in words the evidence
//!    seldom says, and fuses with `W = H` instead, leaning on the
//!    embedding.
//! 2. **Answer inheritance** — conversations answer questions in the next
//!    turn ("How long have you been married?" / "5 years already!"): when the
//!    memory `i` [follows](crate::MemoryItem::follows) a memory `p` whose text
//!    asks a question, `g(i) = max(f(i), A · f(p))`. Beside that, a turn
//!    next to a strong one (the memory it follows, or one following it) is
//!    often the other half of what was said — the question a statement
//!    answers, the detail a reply adds — so every turn of a conversation
//!    ([`Rankable::is_turn`]) inherits a share `N` of the scores of the turns next to
//!    it: `g(i) = max(f(i), A · f(p), N · f(n))` over those neighbours `n`
//!    (one step, from step 1's scores).
//! 3. **Speaker match** — a memory's speaker is its `speaker` field, or for
//!    a memory without one written as `Name: text`, that label (one to three
//!    capitalised words before the first `": "`), see [`speaker_of`]. When
//!    the query names a speaker of the candidates, memories by another
//!    speaker are scaled by `1 − S`.
//!    **Time match** — a question asking `when` is answered by a memory that
//!    places something in time ("yesterday", "last week", "in May", "2022"):
//!    when the query holds the word `when`, or asks how long, how often or
//!    how old ([`asks_duration`]: "5 years already!"), memories without such
//!    a time word
//!    ([`mentions_time`]) are scaled by `1 − T`. A query naming a month
//!    ("in July", "on 13 October, 2023", [`named_months`]) asks about that
//!    month: memories neither created in it, nor naming it, nor pointing
//!    to a day of it with a relative date ("last week" said on 3 July,
//!    [`crate::relative_time`]) are scaled by
//!    `1 − T` too (once, whichever applies). The factor orders; it is left
//!    out of the relevance (a memory is no less about the question for
//!    lacking a date).
//! 4. **Scope preference** — the score is multiplied by up to `1 + scopeBoost`
//!    for the narrowest scopes (card > project > session > workspace, see
//!    [`Scope::specificity`](crate::item::Scope::specificity)), so at equal
//!    relevance the narrower scope ranks first.
//!
//! Ties are broken by specificity, then recency, then id, so the order is total
//! and deterministic.
//!
//! # Relevance
//!
//! The score orders the hits of one query; it says little across queries,
//! since BM25 is divided by the query's best match (the best hit of any
//! query scores about 1, related or not). Beside it every hit gets a
//! calibrated **relevance** in `0..=1`, built only from absolute evidence:
//!
//! - `c(i)`: the idf-weighted share of the query's distinct terms the memory
//!   holds ([`crate::index::Bm25Index::coverage`]); a query term no memory
//!   holds still weighs (as a term one memory holds), so a question about
//!   people the store never heard of covers little;
//! - `r(i) = c(i)` without a model, `W · c(i) + (1 − W) · max(0, cos(q, i))`
//!   with one (the raw cosine, as in step 1);
//! - steps 2 and 3 apply as to the score: a reply inherits `A · r(p)` of the
//!   question it follows, a memory `N · r(n)` of its neighbours', a memory
//!   by another speaker than the one named is
//!   scaled by `1 − S`; the result is capped at 1. The scope preference is
//!   not relevance and is left out.
//!
//! The relevance orders nothing: the gate (`minRelevance`) drops the hits
//! below a threshold after ranking, so the order of the hits kept is the
//! ranking's. The parameters were chosen on the LoCoMo development set
//! with leave-one-conversation-out validation and sit on broad plateaus (see
//! `docs/design.md`, "Ranking").
//!
//! `rank` runs the four steps over the candidates the engine gathers (with
//! their BM25 score and cosine); choosing the candidates, and what a query
//! may see, is the engine's and [`crate::policy`]'s.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::item::{MemoryItem, Scope, SourceKind};
use crate::policy::Policed;
use crate::relative_time;
use crate::text::{calendar, words};

/// Highest value of `Scope::specificity` (card + project + session).
const MAX_SPECIFICITY: f32 = 7.0;

/// Ranking parameters. The defaults are the documented ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RankParams {
    /// `W`: weight of the normalized BM25 score when a semantic score exists
    /// (default 0.4; the cosine gets `1 − W`).
    pub lexical_weight: f32,
    /// `A`: share of a question's score the reply that follows it inherits
    /// (default 1.0; 0 turns inheritance off).
    pub answer_inheritance: f32,
    /// `S`: score reduction of memories by another speaker when the query
    /// names a speaker (default 0.3; 0 turns it off).
    pub speaker_penalty: f32,
    /// `T`: score reduction of memories without a time word when the query
    /// asks `when` (or how long, how often, how old), and of memories of another month when the query names a
    /// month (default 0.3; 0 turns it off).
    pub time_penalty: f32,
    /// Strength of the scope preference (default 0.1).
    pub scope_boost: f32,
    /// Longest gap, in minutes, between two memories of one scope for the
    /// later to follow the earlier in a conversation (default 30).
    pub thread_gap_minutes: u32,
    /// `N`: share of a conversation turn's step-1 score (and relevance) the
    /// turns next to it inherit: the one it follows and those following it
    /// (default 0.5; 0 turns it off).
    pub neighbour_share: f32,
    /// `C`: weight of the query coverage beside the normalized BM25 score
    /// in step 1 (default 0.2; 0 turns it off).
    pub coverage_weight: f32,
    /// `H`: the lexical weight `W` takes for a question that asks to
    /// confirm or infer rather than to recall ([`asks_hypothesis`]: "Would
    /// Caroline pursue writing as a career?", "What would her political
    /// leaning likely be?"), whose words are the hypothesis, not words the
    /// evidence says (default 0.2; the same as `W` turns it off).
    pub hypothesis_lexical_weight: f32,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            lexical_weight: 0.4,
            answer_inheritance: 1.0,
            speaker_penalty: 0.3,
            time_penalty: 0.3,
            scope_boost: 0.1,
            thread_gap_minutes: 30,
            neighbour_share: 0.5,
            coverage_weight: 0.2,
            hypothesis_lexical_weight: 0.2,
        }
    }
}

/// The evidence behind one hit's score, returned when a query asks to
/// `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreBreakdown {
    /// BM25 score of the memory for the query (0 when it has no query term).
    pub lexical: f32,
    /// Cosine similarity of the query and the memory (with the memory it
    /// follows), when a model is loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<f32>,
    /// The idf-weighted share of the query's terms the memory holds, in
    /// `0..=1`.
    pub coverage: f32,
    /// Step 1: the fused lexical (normalized BM25 plus `C` times the
    /// coverage) and semantic score.
    pub combined: f32,
    /// Step 2: true when the score was inherited from the question this
    /// memory answers or from a neighbour.
    pub inherited: bool,
    /// Step 3: the speaker factor applied (1 when no speaker was named).
    pub speaker_factor: f32,
    /// Step 3: the time factor applied (1 unless the query asks `when`, how
    /// long, how often or how old and the memory holds no time word, or names a month the memory was
    /// neither created in nor names).
    pub time_factor: f32,
    /// Step 4: the scope preference multiplier.
    pub scope_multiplier: f32,
    /// The final score.
    pub fused: f32,
    /// The calibrated relevance, in `0..=1` (module documentation,
    /// "Relevance").
    pub relevance: f32,
}

/// What ranking reads of a memory, beside what the policy reads (its
/// scope and creation time among them). The engine's catalog answers it
/// for a memory held as its row without decoding the row, so a query
/// decodes only the hits it returns (`docs/speed.md`, "Eighteenth
/// session").
pub(crate) trait Rankable: Policed {
    fn id(&self) -> &str;
    fn text(&self) -> &str;
    /// The memory it follows in its conversation.
    fn follows(&self) -> Option<&str>;
    /// Its `speaker` field.
    fn speaker(&self) -> Option<&str>;
    /// The kind of its source (a message, a file, …).
    fn source_kind(&self) -> SourceKind;
    /// True when it is a turn of a conversation: a chat message, or said
    /// by someone (a role or a speaker). Only turns share their score with
    /// their neighbours: facts entered one after another are not a
    /// dialogue.
    fn is_turn(&self) -> bool {
        self.source_kind() == SourceKind::Message || self.role().is_some() || self.speaker().is_some()
    }
}

impl Rankable for MemoryItem {
    fn id(&self) -> &str {
        &self.id
    }
    fn text(&self) -> &str {
        &self.text
    }
    fn follows(&self) -> Option<&str> {
        self.follows.as_deref()
    }
    fn speaker(&self) -> Option<&str> {
        self.speaker.as_deref()
    }
    fn source_kind(&self) -> SourceKind {
        self.source.kind
    }
}

/// A memory that may answer a query, with the evidence for it.
pub(crate) struct Candidate<'a, M: ?Sized> {
    /// The memory.
    pub(crate) item: &'a M,
    /// Its BM25 score for the query (0 when it holds no query term).
    pub(crate) lexical: f32,
    /// The idf-weighted share of the query's terms it holds.
    pub(crate) coverage: f32,
    /// The cosine of the query and its context vector, when a model is
    /// loaded.
    pub(crate) semantic: Option<f32>,
}

/// Scores distinct candidates for the query text `query` in the four steps
/// of the module documentation and returns the best `limit` of those
/// scoring above 0, best first ([`compare`]), with their breakdowns.
/// `bm25_max` is the query's best BM25 score; `scope` is the query's, which
/// the scope preference measures each memory's scope from
/// ([`Scope::specificity_from`]: another session is no narrower than its
/// workspace).
pub(crate) fn rank<'a, M: Rankable + ?Sized>(
    query: &str,
    scope: &Scope,
    candidates: impl IntoIterator<Item = Candidate<'a, M>>,
    bm25_max: f32,
    params: &RankParams,
    limit: usize,
) -> Vec<(ScoreBreakdown, &'a M)> {
    // Step 1 for every candidate, with the relevance before steps 2 and 3.
    // A hypothesis question fuses with its own lexical weight; the
    // relevance keeps `W`, so the gate means the same for every question.
    let fusion = if asks_hypothesis(query) {
        RankParams {
            lexical_weight: params.hypothesis_lexical_weight,
            ..*params
        }
    } else {
        *params
    };
    let combined: HashMap<&str, Scored<'a, M>> = candidates
        .into_iter()
        .map(|c| {
            // Each read once: a held row reads its strings in place, as
            // UTF-8 again at every read.
            let scored = Scored {
                item: c.item,
                id: c.item.id(),
                text: c.item.text(),
                follows: c.item.follows(),
                speaker: speaker_of(c.item),
                turn: c.item.is_turn(),
                lexical: c.lexical,
                coverage: c.coverage,
                semantic: c.semantic,
                combined: combine(c.lexical, bm25_max, c.coverage, c.semantic, &fusion),
                evidence: evidence(c.coverage, c.semantic, params),
            };
            (scored.id, scored)
        })
        .collect();

    // Step 3 needs the speakers the query names among the candidates.
    let words = query_words(query);
    let named: BTreeSet<&str> = combined
        .values()
        .filter_map(|c| c.speaker)
        .filter(|label| names_speaker(&words, label))
        .collect();
    let asks_when = words.contains("when") || asks_duration(query);
    let months = named_months(query);
    // Step 2 also passes a share of a turn's score to the turns next to it.
    let mut next: HashMap<&str, Vec<&Scored<'a, M>>> = HashMap::new();
    for c in combined.values().filter(|c| c.turn) {
        if let Some(prev) = c.follows {
            next.entry(prev).or_default().push(c);
        }
    }

    let mut hits: Vec<(RankKey<'a>, ScoreBreakdown, &'a M)> = combined
        .values()
        .map(|c| {
            let item = c.item;
            let question = c
                .follows
                .and_then(|prev| combined.get(prev))
                .filter(|prev| asks_question(prev.text));
            let inherit = |of: fn(&Scored<'a, M>) -> f32| {
                question.map_or(0.0, |prev| params.answer_inheritance * of(prev))
            };
            let neighbours = || {
                c.follows
                    .and_then(|prev| combined.get(prev))
                    .filter(|prev| prev.turn)
                    .into_iter()
                    .chain(next.get(c.id).into_iter().flatten().copied())
                    .filter(|_| c.turn)
            };
            let share = params.neighbour_share.clamp(0.0, 1.0);
            let near = |of: fn(&Scored<'a, M>) -> f32| {
                neighbours().map(|n| share * of(n)).fold(0.0, f32::max)
            };
            let inherited_score = inherit(|p| p.combined).max(near(|p| p.combined));
            let f = c.combined;
            let g = f.max(inherited_score);
            let r = c
                .evidence
                .max(inherit(|p| p.evidence))
                .max(near(|p| p.evidence))
                .min(1.0);
            let speaker_factor = match c.speaker {
                Some(label) if !named.is_empty() && !named.contains(label) => {
                    1.0 - params.speaker_penalty.clamp(0.0, 1.0)
                }
                _ => 1.0,
            };
            let created_at = item.created_at().0;
            let untimed = asks_when && !mentions_time(c.text);
            let other_month = !months.is_empty() && !in_months(c.text, created_at, &months);
            let time_factor = if untimed || other_month {
                1.0 - params.time_penalty.clamp(0.0, 1.0)
            } else {
                1.0
            };
            let specificity = item.scope().specificity_from(scope);
            let scope_multiplier = scope_multiplier(specificity, params.scope_boost);
            let breakdown = ScoreBreakdown {
                lexical: c.lexical,
                semantic: c.semantic,
                coverage: c.coverage,
                combined: f,
                inherited: inherited_score > f,
                speaker_factor,
                time_factor,
                scope_multiplier,
                fused: g * speaker_factor * time_factor * scope_multiplier,
                relevance: r * speaker_factor,
            };
            let key = RankKey {
                score: breakdown.fused,
                specificity,
                created_at,
                id: c.id,
            };
            (key, breakdown, item)
        })
        .filter(|(_, b, _)| b.fused > 0.0)
        .collect();
    hits.sort_by(|a, b| compare(&a.0, &b.0));
    hits.truncate(limit);
    hits.into_iter().map(|(_, breakdown, item)| (breakdown, item)).collect()
}

/// One candidate after step 1.
struct Scored<'a, M: ?Sized> {
    item: &'a M,
    id: &'a str,
    text: &'a str,
    follows: Option<&'a str>,
    /// Who said it ([`speaker_of`]).
    speaker: Option<&'a str>,
    /// [`Rankable::is_turn`].
    turn: bool,
    lexical: f32,
    coverage: f32,
    semantic: Option<f32>,
    /// Step 1's score.
    combined: f32,
    /// The relevance before steps 2 and 3.
    evidence: f32,
}

/// The relevance of one memory before answer inheritance and speaker match
/// (module documentation, "Relevance"): its query coverage, mixed with the
/// raw cosine as step 1 mixes BM25 with it. In `0..=1` for a coverage in
/// `0..=1` and a cosine of unit vectors.
pub fn evidence(coverage: f32, semantic: Option<f32>, params: &RankParams) -> f32 {
    let r = match semantic {
        None => coverage,
        Some(cos) => {
            let w = params.lexical_weight.clamp(0.0, 1.0);
            w * coverage + (1.0 - w) * cos.max(0.0)
        }
    };
    r.clamp(0.0, 1.0)
}

/// Step 1 for one memory: `bm25_max` is the query's best BM25 score,
/// `coverage` the idf-weighted share of the query's terms the memory holds.
pub fn combine(
    lexical: f32,
    bm25_max: f32,
    coverage: f32,
    semantic: Option<f32>,
    params: &RankParams,
) -> f32 {
    let normalized = if bm25_max > 0.0 {
        lexical / bm25_max
    } else {
        0.0
    };
    let lexical = normalized + params.coverage_weight.max(0.0) * coverage;
    match semantic {
        None => lexical,
        Some(cos) => {
            let w = params.lexical_weight.clamp(0.0, 1.0);
            w * lexical + (1.0 - w) * cos.max(0.0)
        }
    }
}

/// Words that place what a text says in time: relative days and periods
/// and seasons; month and weekday names are the calendar's
/// ([`calendar::is_calendar_name`]), and a four-digit year counts too.
const TIME_WORDS: &[&str] = &[
    "yesterday", "today", "tonight", "tomorrow", "ago", "last", "next", "day", "days",
    "week", "weeks", "weekend", "month", "months", "year", "years", "recently", "morning",
    "evening", "night", "spring", "summer", "fall", "autumn", "winter",
];

/// The months (1 to 12) a text names. "may" is a month only next to a
/// number ("May 23", "8 May, 2023") or after "in" or "of", not as the verb.
pub fn named_months(text: &str) -> Vec<u8> {
    let lower = text.to_lowercase();
    months_named_in(&relative_time::words(&lower))
}

/// [`named_months`] of a text's words ([`relative_time::words`]).
fn months_named_in(words: &[&str]) -> Vec<u8> {
    let number = |i: Option<&&str>| i.is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()));
    let mut months: Vec<u8> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let Some(month) = calendar::month_number(word) else {
            continue;
        };
        let before = i.checked_sub(1).and_then(|j| words.get(j));
        let verb_like = *word == "may"
            && !(number(before) || number(words.get(i + 1)) || matches!(before, Some(&"in" | &"of")));
        if !verb_like && !months.contains(&month) {
            months.push(month);
        }
    }
    months
}

/// True when a memory was created in one of `months`, names one, or
/// points to a day in one with a relative date ("last week",
/// [`crate::relative_time`]).
fn in_months(text: &str, created_at: i64, months: &[u8]) -> bool {
    let created = time::OffsetDateTime::from_unix_timestamp(created_at.div_euclid(1000))
        .map(|t| u8::from(t.month()))
        .ok();
    // Read in place first: this runs for every candidate of a question
    // naming a month, and most hold neither a month's name nor a word a
    // relative date opens with, which the readers below would find only
    // after lowercasing and collecting the text's words.
    let dated = || words::any_short_word(text, |w| {
        calendar::month_number(w).is_some() || relative_time::opens_relative_date(w)
    });
    // A dated text's words are collected once for both readers.
    let said_in_months = || {
        let lower = text.to_lowercase();
        let said = relative_time::words(&lower);
        let wanted = |found: Vec<u8>| found.iter().any(|m| months.contains(m));
        wanted(months_named_in(&said))
            || wanted(relative_time::months_resolved_in(&said, created_at))
    };
    created.is_some_and(|m| months.contains(&m)) || (dated() && said_in_months())
}

/// True when a text holds a time word ([`TIME_WORDS`]), a month or
/// weekday name, or a year (four digits from 1900 to 2099).
pub fn mentions_time(text: &str) -> bool {
    // Read in place: this runs for every candidate of a `when` question.
    words::any_short_word(text, is_time_word)
}

/// True when a lowercase word is a time word, a month or weekday name, or
/// a year.
fn is_time_word(w: &str) -> bool {
    TIME_WORDS.contains(&w)
        || calendar::is_calendar_name(w)
        || (w.len() == 4 && (w.starts_with("19") || w.starts_with("20")) && w.bytes().all(|b| b.is_ascii_digit()))
}

/// Words that open a yes/no question: forms of be, do and have, and the
/// modal verbs but "may", which opens a query about the month as often.
const AUXILIARIES: &[&str] = &[
    "am", "is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can",
    "could", "will", "would", "shall", "should", "might", "must",
];

/// Whether a query asks to confirm or infer something rather than to
/// recall it: a yes/no question (it opens with an auxiliary verb, "Would
/// Caroline pursue writing as a career option?") or one asking what is
/// likely ("likely", "might": "What would Caroline's political leaning
/// likely be?"). Its words state the hypothesis; the evidence is what was
/// said about the topic, in other words, which the embedding reaches and
/// BM25 does not.
pub(crate) fn asks_hypothesis(query: &str) -> bool {
    let lower = query.to_lowercase();
    let mut words = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty());
    let opens = words.next().is_some_and(|w| AUXILIARIES.contains(&w));
    opens || words.any(|w| w == "likely" || w == "might")
}

/// True when a query asks how long, how often or how old: a time too.
pub fn asks_duration(query: &str) -> bool {
    let lower = query.to_lowercase();
    ["how long", "how often", "how old"]
        .iter()
        .any(|phrase| lower.contains(phrase))
}

/// True when a text asks something (its reply may inherit its relevance).
pub fn asks_question(text: &str) -> bool {
    text.contains('?') || text.contains('\u{FF1F}')
}

/// Who said a memory, by name: its `speaker` field, else the label of a
/// text written as `Name: text` ([`speaker_label`]), as memories recorded
/// their speaker before the field existed.
pub(crate) fn speaker_of<M: Rankable + ?Sized>(item: &M) -> Option<&str> {
    item.speaker().or_else(|| speaker_label(item.text()))
}

/// The speaker label of a `Name: text` memory: one to three words, each
/// starting with an uppercase letter, before the first `": "`.
pub fn speaker_label(text: &str) -> Option<&str> {
    let (label, _) = text.split_once(": ")?;
    let words: Vec<&str> = label.split(' ').collect();
    let well_formed = (1..=3).contains(&words.len())
        && words.iter().all(|w| {
            let mut chars = w.chars();
            chars.next().is_some_and(char::is_uppercase) && chars.all(char::is_alphanumeric)
        });
    well_formed.then_some(label)
}

/// The lowercase ASCII-alphanumeric words of a query, for speaker matching.
pub fn query_words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// True when every word of the speaker label appears in the query.
pub fn names_speaker(query_words: &BTreeSet<String>, label: &str) -> bool {
    query_words_of_label(label).all(|w| query_words.contains(&w))
}

fn query_words_of_label(label: &str) -> impl Iterator<Item = String> + '_ {
    label
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The scope preference multiplier for a memory of the given specificity.
pub fn scope_multiplier(specificity: u8, scope_boost: f32) -> f32 {
    1.0 + scope_boost * f32::from(specificity.min(7)) / MAX_SPECIFICITY
}

/// The sort key of a candidate hit.
#[derive(Debug, Clone, Copy)]
pub struct RankKey<'a> {
    /// Final score.
    pub score: f32,
    /// Scope specificity of the memory.
    pub specificity: u8,
    /// Creation time in ms.
    pub created_at: i64,
    /// Memory id.
    pub id: &'a str,
}

/// Best first: higher score, then narrower scope, then newer, then id.
pub fn compare(a: &RankKey<'_>, b: &RankKey<'_>) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.specificity.cmp(&a.specificity))
        .then(b.created_at.cmp(&a.created_at))
        .then(a.id.cmp(b.id))
}

#[cfg(test)]
mod tests;
