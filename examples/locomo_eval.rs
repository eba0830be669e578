//! Evidence recall of memtide's retrieval on the LoCoMo development set,
//! and with `--inject` what injection keeps of the evidence and what the
//! relevance gate does with unrelated questions.
//!
//! ```text
//! cargo run --release --example locomo_eval [-- [--model DIR] [--rank JSON] [--bm25 JSON] [--inject] [--misses] [--contextual-embedding | --embed-without-speaker questions|turns|both] [--speaker-field] [--summaries extractive|whole [--summary-evidence]] [path/to/locomo_dev.json]]
//! ```
//!
//! With `--model DIR` (the directory `scripts/fetch-model.sh` prints) the
//! MiniLM model is attached and retrieval is hybrid; without it, lexical.
//! `--rank '{"answerInheritance":0.8}'` tries ranking parameters
//! (`RankParams`, camelCase) instead of the defaults; given several times,
//! it runs each (the model embeds every text once for all of them). Turn
//! and session recall are printed for the dev set, for each conversation
//! and for each LoCoMo question category: with two conversations,
//! leave-one-conversation-out is a change (or a parameter) judged on one
//! conversation and confirmed on the other, and with several `--rank`
//! configurations the eval prints, for each conversation, the one chosen on
//! the other and its figures there. `--bm25 '{"k1":0.9,"b":0.4}'` sets
//! BM25's parameters (`Bm25Params`, the store's `bm25` configuration) for
//! every configuration of the run.
//!
//! With `--summaries` each session's turns are stored in a session scope
//! and the figures are printed without and then with one summary per
//! session (`storeSummary`, linked to the session's turns): `extractive`
//! (the session's longest turns, up to 150 words) or `whole` (every turn).
//! A summary ranks its session for session recall; with
//! `--summary-evidence` it also counts as a hit on each of its turns for
//! turn recall.
//!
//! With `--misses` every question with evidence missing from its first 10
//! hits is printed with each missing turn, its rank in the first 200, the
//! terms it shares with the question and why it is missed
//! (`locomo::MissReason`), then the reasons counted per category.
//!
//! With `--contextual-embedding` each turn after a session's first is
//! embedded as the previous turn, a newline and the turn
//! (`locomo::contextual_texts`) instead of alone: a contextual embedding,
//! to weigh against the context vector's sum of the two turns' vectors.
//!
//! With `--embed-without-speaker questions|turns|both` the questions are
//! embedded without the names of their conversation's speakers, the
//! turns without their `Speaker: ` label, or both
//! (`locomo::nameless_texts`); BM25 and the speaker match still see them.
//!
//! With `--speaker-field` each turn's speaker goes in the memory's
//! `speaker` field instead of the text (`Name: text`).
//! The protocol (`crates/testkit/src/locomo.rs`) is the one memtide's tests
//! hold the retrieval to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memtide::embed::Embedder;
use memtide::{Config, InjectQuery, RankParams};
use memtide_testkit::locomo::{
    self, GatePoint, Loaded, Nameless, QuestionRecall, Recall, Speakers, SummaryText,
};

/// The thresholds the gate is tried at.
const THRESHOLDS: [f32; 13] = [
    0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7,
];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let model_dir = take_value(&mut args, "--model");
    let mut ranks = Vec::new();
    while let Some(rank) = take_value(&mut args, "--rank") {
        ranks.push(rank);
    }
    let bm25 = take_value(&mut args, "--bm25");
    let inject = take_flag(&mut args, "--inject");
    let misses = take_flag(&mut args, "--misses");
    let contextual = take_flag(&mut args, "--contextual-embedding");
    let nameless = take_value(&mut args, "--embed-without-speaker");
    let summaries = take_value(&mut args, "--summaries");
    let summary_evidence = take_flag(&mut args, "--summary-evidence");
    let speakers = if take_flag(&mut args, "--speaker-field") {
        Speakers::Field
    } else {
        Speakers::Prefix
    };
    let path = args
        .pop()
        .unwrap_or_else(|| "tests/data/locomo_dev.json".to_string());
    let run = load_model(model_dir.as_deref()).and_then(|model| {
        let mode = if model.is_some() { "hybrid" } else { "lexical" };
        let json = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let configs: Vec<(String, RankParams)> = if ranks.is_empty() {
            vec![("defaults".to_string(), RankParams::default())]
        } else {
            ranks
                .iter()
                .map(|r| {
                    serde_json::from_str::<RankParams>(r)
                        .map(|p| (r.clone(), p))
                        .map_err(|e| format!("--rank {r}: {e}"))
                })
                .collect::<Result<_, _>>()?
        };
        let summary_text = match summaries.as_deref() {
            None => None,
            Some("extractive") => Some(SummaryText::Extractive(150)),
            Some("whole") => Some(SummaryText::Whole),
            Some(other) => return Err(format!("--summaries {other}: extractive or whole")),
        };
        // Every configuration embeds the same turns and questions: once.
        let rewrite = match (contextual, nameless.as_deref()) {
            (false, None) => HashMap::new(),
            (true, None) => locomo::contextual_texts(&json)?.into_iter().collect(),
            (false, Some(which)) => {
                let which = match which {
                    "questions" => Nameless::Questions,
                    "turns" => Nameless::Turns,
                    "both" => Nameless::Both,
                    other => {
                        return Err(format!(
                            "--embed-without-speaker {other}: questions, turns or both"
                        ))
                    }
                };
                locomo::nameless_texts(&json, which)?.into_iter().collect()
            }
            (true, Some(_)) => {
                return Err("--contextual-embedding and --embed-without-speaker rewrite the same turns: one at a time".to_string())
            }
        };
        let cached = model.map(|m| Arc::new(Cached::new(m, rewrite)));
        let model = cached.clone().map(|m| m as Arc<dyn Embedder>);
        let bm25 = match bm25.as_deref() {
            None => memtide::Bm25Params::default(),
            Some(b) => serde_json::from_str(b).map_err(|e| format!("--bm25 {b}: {e}"))?,
        };
        let mut runs = Vec::new();
        for (label, params) in &configs {
            let config = Config {
                rank: *params,
                bm25,
                ..Config::default()
            };
            let mut loaded = match summary_text {
                None => locomo::load_with(&json, model.clone(), config, speakers)?,
                Some(_) => locomo::load_by_session(&json, model.clone(), config, speakers)?,
            };
            println!("== {label}");
            if let Some(cached) = &cached {
                cached.report_ingest();
            }
            let questions = locomo::recall_by_question(&mut loaded)?;
            let title = format!("LoCoMo dev, {mode}, speakers {speakers:?}");
            print_run(&title, &questions);
            if let Some(text) = summary_text {
                let stored = locomo::add_session_summaries(&mut loaded, text, summary_evidence)?;
                let evidence = if summary_evidence {
                    "as evidence"
                } else {
                    "not evidence"
                };
                print_run(
                    &format!("{title}, {stored} session summaries ({text:?}, {evidence})"),
                    &locomo::recall_by_question(&mut loaded)?,
                );
            }
            if inject {
                report_injection(&mut loaded)?;
            }
            if misses {
                report_misses(&mut loaded)?;
            }
            runs.push((label.clone(), questions));
        }
        if runs.len() > 1 {
            print_held_out(&runs);
        }
        Ok(())
    });
    match run {
        Ok(()) => {}
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// A model that embeds each distinct text once per run, a text in
/// `rewrite` as the text it maps to (`--contextual-embedding`).
struct Cached {
    model: Arc<dyn Embedder>,
    seen: Mutex<HashMap<String, Vec<f32>>>,
    rewrite: HashMap<String, String>,
    /// Texts, tokens and seconds the model spent since the last report.
    spent: Mutex<(usize, usize, f64)>,
}

impl Cached {
    fn new(model: Arc<dyn Embedder>, rewrite: HashMap<String, String>) -> Self {
        Cached {
            model,
            seen: Mutex::new(HashMap::new()),
            rewrite,
            spent: Mutex::new((0, 0, 0.0)),
        }
    }

    /// Prints what the model spent embedding since the last report (the
    /// turns, on the first configuration's ingest) and starts again.
    fn report_ingest(&self) {
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let (texts, tokens, seconds) = *spent;
        println!("ingest embedded {texts} texts, {tokens} tokens, in {seconds:.2} s");
        *spent = (0, 0, 0.0);
    }
}

impl Embedder for Cached {
    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !seen.contains_key(*t))
            .collect();
        if !missing.is_empty() {
            let embedded: Vec<&str> = missing
                .iter()
                .map(|t| self.rewrite.get(*t).map_or(*t, String::as_str))
                .collect();
            let started = std::time::Instant::now();
            let vectors = self.model.embed_batch(&embedded)?;
            let tokens: usize = embedded.iter().map(|t| self.model.count_tokens(t)).sum();
            let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
            spent.0 += embedded.len();
            spent.1 += tokens;
            spent.2 += started.elapsed().as_secs_f64();
            for (text, vector) in missing.iter().zip(vectors) {
                seen.insert((*text).to_string(), vector);
            }
        }
        Ok(texts.iter().map(|t| seen[*t].clone()).collect())
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }
}

fn pooled(questions: &[QuestionRecall]) -> Recall {
    Recall::pooled(&questions.iter().map(|q| q.recall).collect::<Vec<_>>())
}

/// Prints a run's figures: pooled, per conversation, per category.
fn print_run(label: &str, questions: &[Vec<QuestionRecall>]) {
    let all: Vec<QuestionRecall> = questions.iter().flatten().copied().collect();
    print_recall(label, &pooled(&all));
    for (c, part) in questions.iter().enumerate() {
        print_recall(&format!("  conversation {c}"), &pooled(part));
    }
    for (category, r) in locomo::recall_by_category(&all) {
        print_recall(&format!("  category {category}"), &r);
    }
}

/// Prints one line of recall figures.
fn print_recall(label: &str, r: &Recall) {
    println!(
        "{label} ({} questions): turn recall@1/5/10 {:.3}/{:.3}/{:.3}  session recall@1/5/10 {:.3}/{:.3}/{:.3}",
        r.questions, r.at1, r.at5, r.at10, r.session_at1, r.session_at5, r.session_at10
    );
}

/// Leave one conversation out over several configurations: for each
/// conversation, the configuration with the best mean of recall@5 and @10
/// on the others, and its figures on the one left out.
fn print_held_out(runs: &[(String, Vec<Vec<QuestionRecall>>)]) {
    let conversations = runs[0].1.len();
    let score = |r: &Recall| r.at5 + r.at10;
    for held_out in 0..conversations {
        let training = |questions: &Vec<Vec<QuestionRecall>>| {
            let rest: Vec<QuestionRecall> = questions
                .iter()
                .enumerate()
                .filter(|&(c, _)| c != held_out)
                .flat_map(|(_, q)| q.iter().copied())
                .collect();
            score(&pooled(&rest))
        };
        // Ties go to the earlier configuration (the first is the baseline).
        let best = runs
            .iter()
            .fold(None, |best: Option<&(String, _)>, run| match best {
                Some(b) if training(&b.1) >= training(&run.1) => Some(b),
                _ => Some(run),
            });
        if let Some((label, questions)) = best {
            print_recall(
                &format!("held out conversation {held_out}: {label} (chosen on the others)"),
                &pooled(&questions[held_out]),
            );
        }
    }
}

/// Prints the evidence injection keeps at three budgets, without the gate
/// and with the default one, then the gate's figures per threshold and
/// conversation, and the leave-one-conversation-out choice.
fn report_injection(loaded: &mut Loaded) -> Result<(), String> {
    for budget in [250, 500, 1_000] {
        println!(
            "evidence kept at {budget} tokens: {:.3} without the gate, {:.3} with the default ({})",
            loaded.evidence_kept(None, budget, Some(0.0))?,
            loaded.evidence_kept(None, budget, None)?,
            InjectQuery::DEFAULT_MIN_RELEVANCE,
        );
    }
    println!(
        "unrelated questions injecting nothing: {:.3} without the gate, {:.3} with the default",
        loaded.unrelated_empty(None, Some(0.0))?,
        loaded.unrelated_empty(None, None)?
    );
    let sweep = locomo::gate_sweep(loaded, &THRESHOLDS)?;
    println!("threshold  per conversation: unrelated empty / own evidence kept at 1,000 tokens");
    for (i, t) in THRESHOLDS.iter().enumerate() {
        let row: Vec<String> = sweep
            .iter()
            .map(|points| {
                format!(
                    "{:.3} / {:.3}",
                    points[i].unrelated_empty, points[i].own_kept
                )
            })
            .collect();
        println!("{t:>9.2}  {}", row.join("   "));
    }
    // Leave one conversation out: the threshold chosen on the others,
    // reported on the one left out.
    let mean = |points: &[&GatePoint]| {
        let n = points.len().max(1) as f64;
        (
            points.iter().map(|p| p.unrelated_empty).sum::<f64>() / n,
            points.iter().map(|p| p.own_kept).sum::<f64>() / n,
        )
    };
    for held_out in 0..sweep.len() {
        let training: Vec<GatePoint> = (0..THRESHOLDS.len())
            .map(|i| {
                let rows: Vec<&GatePoint> = (0..sweep.len())
                    .filter(|&c| c != held_out)
                    .map(|c| &sweep[c][i])
                    .collect();
                let (unrelated_empty, own_kept) = mean(&rows);
                GatePoint {
                    threshold: THRESHOLDS[i],
                    unrelated_empty,
                    own_kept,
                }
            })
            .collect();
        let chosen = locomo::choose_threshold(&training).ok_or("no thresholds")?;
        let i = THRESHOLDS.iter().position(|&t| t == chosen).unwrap_or(0);
        let p = &sweep[held_out][i];
        println!(
            "held out conversation {held_out}: threshold {chosen} (chosen on the others) gives unrelated empty {:.3}, own evidence kept {:.3}",
            p.unrelated_empty, p.own_kept
        );
    }
    let all: Vec<GatePoint> = (0..THRESHOLDS.len())
        .map(|i| {
            let rows: Vec<&GatePoint> = sweep.iter().map(|points| &points[i]).collect();
            let (unrelated_empty, own_kept) = mean(&rows);
            GatePoint {
                threshold: THRESHOLDS[i],
                unrelated_empty,
                own_kept,
            }
        })
        .collect();
    println!(
        "threshold chosen on the whole dev set: {:?}",
        locomo::choose_threshold(&all)
    );
    Ok(())
}

/// Prints every question with evidence missing from its first 10 hits,
/// each missing turn with its rank, the terms it shares with the question
/// and the reason, then the reasons counted per category.
fn report_misses(loaded: &mut Loaded) -> Result<(), String> {
    let misses = locomo::misses(loaded)?;
    let cut = |t: &str| t.chars().take(160).collect::<String>();
    for miss in &misses {
        println!(
            "\n[conv {} cat {:?}] {} ({} evidence, {} missed)",
            miss.conv,
            miss.category,
            miss.question,
            miss.evidence,
            miss.missed.len()
        );
        for turn in &miss.missed {
            let rank = turn.rank.map_or("-".to_string(), |r| r.to_string());
            let cos = turn
                .breakdown
                .and_then(|b| b.semantic)
                .map_or("-".to_string(), |c| format!("{c:.2}"));
            println!(
                "  missed {} {:?} rank {rank} cos {cos} shared {:?} topic {:?} same-terms-above {}: {}",
                turn.turn,
                turn.reason,
                turn.shared,
                turn.topic_shared,
                turn.same_terms_above,
                cut(&turn.text)
            );
        }
        for (i, top) in miss.top.iter().enumerate() {
            println!("  top {}: {}", i + 1, cut(top));
        }
    }
    let questions = locomo::questions_missing(&misses);
    println!("\nmissed evidence turns per reason (questions missing evidence):");
    println!("category {:?}", locomo::MissReason::ALL);
    for (category, counts) in locomo::reason_counts(&misses) {
        println!(
            "{category:?} ({} questions): {counts:?}",
            questions.get(&category).copied().unwrap_or(0)
        );
    }
    Ok(())
}

/// Removes `--name VALUE` from `args` and returns the value.
fn take_value(args: &mut Vec<String>, name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    if i + 1 >= args.len() {
        return None;
    }
    let value = args.remove(i + 1);
    args.remove(i);
    Some(value)
}

/// Removes `--name` from `args`; whether it was there.
fn take_flag(args: &mut Vec<String>, name: &str) -> bool {
    match args.iter().position(|a| a == name) {
        Some(i) => {
            args.remove(i);
            true
        }
        None => false,
    }
}

/// Loads MiniLM from a model directory, if one was given.
fn load_model(dir: Option<&str>) -> Result<Option<Arc<dyn Embedder>>, String> {
    let Some(dir) = dir else { return Ok(None) };
    #[cfg(feature = "semantic")]
    {
        memtide::embed::MiniLm::from_dir(std::path::Path::new(dir))
            .map(|m| Some(Arc::new(m) as Arc<dyn Embedder>))
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "semantic"))]
    {
        Err(format!(
            "cannot load {dir}: built without the `semantic` feature"
        ))
    }
}
