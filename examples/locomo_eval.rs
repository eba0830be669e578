//! Evidence recall of memtide's retrieval on the LoCoMo development set,
//! and with `--inject` what injection keeps of the evidence and what the
//! relevance gate does with unrelated questions.
//!
//! ```text
//! cargo run --release --example locomo_eval [-- [--model DIR] [--rank JSON] [--inject] [--speaker-field] [--summaries extractive|whole [--summary-evidence]] [path/to/locomo_dev.json]]
//! ```
//!
//! With `--model DIR` (the directory `scripts/fetch-model.sh` prints) the
//! MiniLM model is attached and retrieval is hybrid; without it, lexical.
//! `--rank '{"answerInheritance":0.8}'` tries ranking parameters
//! (`RankParams`, camelCase) instead of the defaults. Turn and session
//! recall are printed for the dev set and for each conversation: with two
//! conversations, leave-one-conversation-out is a change (or a parameter)
//! judged on one conversation and confirmed on the other.
//! With `--speaker-field` each turn's speaker goes in the memory's
//! `speaker` field instead of the text (`Name: text`).
//! With `--summaries` each session's turns are stored in a session scope
//! and the figures are printed without and then with one summary per
//! session (`storeSummary`, linked to the session's turns): `extractive`
//! (the session's longest turns, up to 150 words) or `whole` (every turn).
//! A summary ranks its session for session recall; with
//! `--summary-evidence` it also counts as a hit on each of its turns for
//! turn recall.
//! The protocol (`crates/testkit/src/locomo.rs`) is the one memtide's tests
//! hold the retrieval to.

use std::sync::Arc;

use memtide::embed::Embedder;
use memtide::{Config, InjectQuery, RankParams};
use memtide_testkit::locomo::{self, GatePoint, Loaded, Recall, Speakers, SummaryText};

/// The thresholds the gate is tried at.
const THRESHOLDS: [f32; 13] = [
    0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7,
];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let model_dir = take_value(&mut args, "--model");
    let rank = take_value(&mut args, "--rank");
    let inject = take_flag(&mut args, "--inject");
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
        let mut config = Config::default();
        if let Some(rank) = &rank {
            config.rank =
                serde_json::from_str::<RankParams>(rank).map_err(|e| format!("--rank: {e}"))?;
        }
        let summary_text = match summaries.as_deref() {
            None => None,
            Some("extractive") => Some(SummaryText::Extractive(150)),
            Some("whole") => Some(SummaryText::Whole),
            Some(other) => return Err(format!("--summaries {other}: extractive or whole")),
        };
        let mut loaded = match summary_text {
            None => locomo::load_with(&json, model, config, speakers)?,
            Some(_) => locomo::load_by_session(&json, model, config, speakers)?,
        };
        let label = format!("LoCoMo dev, {mode}, speakers {speakers:?}");
        let parts = locomo::recall_by_conversation(&mut loaded)?;
        print_parts(&label, &parts);
        if let Some(text) = summary_text {
            let stored = locomo::add_session_summaries(&mut loaded, text, summary_evidence)?;
            let parts = locomo::recall_by_conversation(&mut loaded)?;
            let evidence = if summary_evidence {
                "as evidence"
            } else {
                "not evidence"
            };
            print_parts(
                &format!("{label}, {stored} session summaries ({text:?}, {evidence})"),
                &parts,
            );
        }
        if inject {
            report_injection(&mut loaded)?;
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

/// Prints the pooled figures and each conversation's.
fn print_parts(label: &str, parts: &[Recall]) {
    print_recall(label, &Recall::pooled(parts));
    for (c, part) in parts.iter().enumerate() {
        print_recall(&format!("  conversation {c}"), part);
    }
}

/// Prints one line of recall figures.
fn print_recall(label: &str, r: &Recall) {
    println!(
        "{label} ({} questions): turn recall@1/5/10 {:.3}/{:.3}/{:.3}  session recall@1/5/10 {:.3}/{:.3}/{:.3}",
        r.questions, r.at1, r.at5, r.at10, r.session_at1, r.session_at5, r.session_at10
    );
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

/// Loads MiniLM from a model directory, if one was given.
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
