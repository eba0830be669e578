//! Why retrieval misses evidence (`examples/locomo_eval.rs --misses`): for
//! every question whose evidence is not all among the first 10 hits, each
//! evidence turn left out, with what it shares with the question, where it
//! ranks in a deeper list, and the reason a ranking change could act on
//! ([`MissReason`]). `docs/design.md` ("Ranking") tabulates the reasons.

use std::collections::{BTreeSet, HashMap};

use memtide::text::{calendar, terms};
use memtide::{RetrieveQuery, ScoreBreakdown};

use super::Loaded;

/// How deep a missed turn's rank is looked for.
pub const DEEP: usize = 200;

/// Where the "outranked" reasons split: ranks 11 to this one are near
/// misses, beyond it (or not retrieved) far ones.
pub const NEAR: usize = 50;

/// Why an evidence turn is not among the first 10 hits, the first that
/// applies in this order: what the words allow first, then what the
/// ranking could reach from a hit, then how far down the turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MissReason {
    /// The turn shares no analysed term with the question: a paraphrase
    /// only the embedding can bridge.
    NoSharedTerm,
    /// It shares only a speaker's name, a number or a calendar word with
    /// the question: nothing of the topic.
    NameOrDateOnly,
    /// A temporal question (category 2) whose evidence dates the event
    /// relatively ("last week", "yesterday"): the answer is the session's
    /// date moved, which the question's words cannot match.
    RelativeDate,
    /// Another evidence turn of the question is among the first 10: one
    /// hop of a multi-hop question found, the other not.
    OtherHopFound,
    /// The turn is next to one of the first 10 hits (the one before or
    /// after it in the conversation).
    NextToHit,
    /// It shares topic terms and ranks 11 to [`NEAR`]: outranked.
    Outranked,
    /// It shares topic terms but ranks beyond [`NEAR`] or not at all.
    Far,
    /// The evidence names no turn of the conversation: a data error (one
    /// dev question's evidence reads `"D8:6; D9:17"`, two ids in one).
    UnknownTurn,
}

impl MissReason {
    /// Every reason, in order.
    pub const ALL: [MissReason; 8] = [
        MissReason::NoSharedTerm,
        MissReason::NameOrDateOnly,
        MissReason::RelativeDate,
        MissReason::OtherHopFound,
        MissReason::NextToHit,
        MissReason::Outranked,
        MissReason::Far,
        MissReason::UnknownTurn,
    ];
}

/// One evidence turn missing from the first 10 hits.
#[derive(Debug, Clone)]
pub struct MissedTurn {
    /// Its turn id.
    pub turn: String,
    /// Its text as stored.
    pub text: String,
    /// Its rank (1-based) among the first [`DEEP`] hits, if there.
    pub rank: Option<usize>,
    /// The analysed terms it shares with the question.
    pub shared: Vec<String>,
    /// Those that are no speaker's name, number or calendar word.
    pub topic_shared: Vec<String>,
    /// How many of the first 10 hits hold every topic term it shares
    /// (turns on the same terms that outrank it).
    pub same_terms_above: usize,
    /// Its score breakdown, when it was among the first [`DEEP`].
    pub breakdown: Option<ScoreBreakdown>,
    /// Why it is missed.
    pub reason: MissReason,
}

/// A question with evidence missing from its first 10 hits.
#[derive(Debug, Clone)]
pub struct Miss {
    /// Its conversation.
    pub conv: usize,
    /// The question.
    pub question: String,
    /// LoCoMo's category.
    pub category: Option<u8>,
    /// Its evidence turns.
    pub evidence: usize,
    /// The evidence turns left out.
    pub missed: Vec<MissedTurn>,
    /// The texts of the first 3 hits.
    pub top: Vec<String>,
}

/// Every question of the loaded document with evidence missing from its
/// first 10 hits, in document order.
pub fn misses(loaded: &mut Loaded) -> Result<Vec<Miss>, String> {
    let mut out = Vec::new();
    for conv in 0..loaded.conversations.len() {
        let generic = generic_terms(loaded, conv);
        for q in 0..loaded.conversations[conv].1.len() {
            let (question, evidence, category) = loaded.conversations[conv].1[q].clone();
            let query = RetrieveQuery {
                limit: Some(DEEP),
                dry_run: true,
                explain: true,
                ..RetrieveQuery::new(&question, loaded.conversations[conv].0.clone())
            };
            let hits = loaded.mem.retrieve(&query).map_err(|e| e.to_string())?;
            // The turns each hit covers, in hit order.
            let covered: Vec<(&BTreeSet<String>, Option<ScoreBreakdown>, &str)> = hits
                .iter()
                .filter_map(|h| {
                    let turns = loaded.covers.get(&h.item.id)?;
                    Some((turns, h.explain, h.item.text.as_str()))
                })
                .collect();
            let rank_of = |turn: &str| covered.iter().position(|(t, _, _)| t.contains(turn));
            let in_top = |turn: &str| rank_of(turn).is_some_and(|r| r < 10);
            if evidence.iter().all(|e| in_top(e)) {
                continue;
            }
            let top_positions: BTreeSet<usize> = covered
                .iter()
                .take(10)
                .flat_map(|(turns, _, _)| turns.iter())
                .filter_map(|t| loaded.turns.get(&(conv, t.clone())).map(|s| s.position))
                .collect();
            let top_terms: Vec<BTreeSet<String>> = covered
                .iter()
                .take(10)
                .map(|(_, _, text)| terms(text).into_iter().collect())
                .collect();
            let question_terms: BTreeSet<String> = terms(&question).into_iter().collect();
            let other_found = evidence.iter().any(|e| in_top(e));
            let mut missed = Vec::new();
            for turn in evidence.iter().filter(|e| !in_top(e)) {
                let Some(said) = loaded.turns.get(&(conv, turn.clone())) else {
                    missed.push(MissedTurn {
                        turn: turn.clone(),
                        text: String::new(),
                        rank: None,
                        shared: Vec::new(),
                        topic_shared: Vec::new(),
                        same_terms_above: 0,
                        breakdown: None,
                        reason: MissReason::UnknownTurn,
                    });
                    continue;
                };
                let turn_terms: BTreeSet<String> = terms(&said.text).into_iter().collect();
                let shared: Vec<String> =
                    question_terms.intersection(&turn_terms).cloned().collect();
                let topic_shared: Vec<String> = shared
                    .iter()
                    .filter(|t| !generic.contains(*t) && !is_number(t))
                    .cloned()
                    .collect();
                let same_terms_above = top_terms
                    .iter()
                    .filter(|held| topic_shared.iter().all(|t| held.contains(t)))
                    .count();
                let rank = rank_of(turn);
                let next_to_hit = [said.position.checked_sub(1), Some(said.position + 1)]
                    .into_iter()
                    .flatten()
                    .any(|p| top_positions.contains(&p));
                let relative = category == Some(2)
                    && !memtide::relative_time::resolved_months(&said.text, said.made_at)
                        .is_empty();
                let reason = if shared.is_empty() {
                    MissReason::NoSharedTerm
                } else if topic_shared.is_empty() {
                    MissReason::NameOrDateOnly
                } else if relative {
                    MissReason::RelativeDate
                } else if other_found {
                    MissReason::OtherHopFound
                } else if next_to_hit {
                    MissReason::NextToHit
                } else if rank.is_some_and(|r| r < NEAR) {
                    MissReason::Outranked
                } else {
                    MissReason::Far
                };
                missed.push(MissedTurn {
                    turn: turn.clone(),
                    text: said.text.clone(),
                    rank: rank.map(|r| r + 1),
                    shared,
                    topic_shared,
                    same_terms_above,
                    breakdown: rank.and_then(|r| covered[r].1),
                    reason,
                });
            }
            out.push(Miss {
                conv,
                question,
                category,
                evidence: evidence.len(),
                missed,
                top: covered
                    .iter()
                    .take(3)
                    .map(|(_, _, t)| t.to_string())
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// Counts of missed evidence turns per reason, per category (`None` for
/// questions without one), in [`MissReason::ALL`]'s order.
pub fn reason_counts(misses: &[Miss]) -> Vec<(Option<u8>, [usize; 8])> {
    let mut by: std::collections::BTreeMap<Option<u8>, [usize; 8]> = Default::default();
    for miss in misses {
        let row = by.entry(miss.category).or_default();
        for turn in &miss.missed {
            if let Some(i) = MissReason::ALL.iter().position(|r| *r == turn.reason) {
                row[i] += 1;
            }
        }
    }
    by.into_iter().collect()
}

/// The analysed terms that say nothing of a topic in conversation `conv`:
/// its speakers' names, month and weekday names.
fn generic_terms(loaded: &Loaded, conv: usize) -> BTreeSet<String> {
    let names: BTreeSet<&str> = loaded
        .turns
        .iter()
        .filter(|((c, _), _)| *c == conv)
        .map(|(_, t)| t)
        .map(|t| t.speaker.as_str())
        .collect();
    let mut generic: BTreeSet<String> = names.iter().flat_map(|n| terms(n)).collect();
    let weekdays = calendar::WEEKDAYS.iter().map(|(name, _)| *name);
    for name in calendar::MONTHS.iter().copied().chain(weekdays) {
        generic.extend(terms(name));
    }
    generic
}

/// Whether an analysed term is a number (numbers say a date or an amount,
/// not a topic).
fn is_number(term: &str) -> bool {
    !term.is_empty() && term.bytes().all(|b| b.is_ascii_digit())
}

/// The questions' counts: how many questions miss evidence, per category.
pub fn questions_missing(misses: &[Miss]) -> HashMap<Option<u8>, usize> {
    let mut by = HashMap::new();
    for miss in misses {
        *by.entry(miss.category).or_insert(0) += 1;
    }
    by
}
