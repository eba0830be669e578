//! The `memtide` binary with a model: `embed`, and store commands that
//! embed and retrieve by meaning.

use std::path::Path;
use std::process::{Command, Output};

use memtide_testkit::model::{golden, model_dir};
use serde_json::{json, Value};

use crate::commands::{inputs, keys, memtide_command, ok, query, run, stdout_lines, NOW};

/// Runs `memtide --model DIR embed` (no store) with `stdin`.
fn embed(model: &Path, stdin: &str) -> Output {
    run(
        memtide_command()
            .env_remove("MEMTIDE_STORE")
            .arg("--model")
            .arg(model)
            .arg("embed"),
        stdin,
    )
}

#[test]
fn embed_prints_the_reference_ids_and_embeddings() {
    let golden: Value = golden();
    let cases = &golden["cases"].as_array().unwrap()[..2];
    let stdin: String = cases
        .iter()
        .map(|case| json!({"text": case["text"]}).to_string() + "\n")
        .collect();
    let out = embed(model_dir(), &stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = stdout_lines(&out);
    assert_eq!(lines.len(), 2);
    for (line, case) in lines.iter().zip(cases) {
        assert_eq!(keys(line), ["embedding", "ids"]);
        assert_eq!(line["ids"], case["ids"]);
        let floats = |value: &Value| -> Vec<f64> {
            let values = value.as_array().unwrap();
            values.iter().map(|x| x.as_f64().unwrap()).collect()
        };
        let (got, expected) = (floats(&line["embedding"]), floats(&case["embedding"]));
        assert_eq!(got.len(), 384);
        let dot: f64 = got.iter().zip(&expected).map(|(a, b)| a * b).sum();
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let cosine = dot / (norm(&got) * norm(&expected));
        assert!(cosine >= 0.9999, "cosine {cosine} for {}", case["text"]);
    }
}

#[test]
fn embed_reports_bad_lines_before_loading_and_model_errors() {
    let missing = tempfile::tempdir().unwrap();
    // The bad line is reported even though the model cannot load: input is
    // parsed first.
    let out = embed(
        missing.path(),
        "{\"text\":\"fine\"}\n\n{\"txt\":\"typo\"}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
    assert!(stderr.contains("line 3: unknown field `txt`"), "{stderr}");

    let out = embed(missing.path(), "{\"text\":\"fine\"}\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error[MODEL]: "), "{stderr}");
    assert!(stderr.contains("model.onnx"), "{stderr}");

    let out = run(memtide_command().arg("embed"), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));
}

#[test]
fn store_commands_with_a_model_embed_and_retrieve_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let model = model_dir().to_str().unwrap();
    let memories = [
        ("We adopted a golden retriever puppy named Biscuit", "w"),
        ("My sister moved to Lisbon for her new job", "w"),
    ];
    // Stored lexical-only first: no embeddings, and the query shares no
    // word with either memory, so lexical retrieval finds nothing.
    ok(store, &["ingest"], &inputs(&memories[..1]));
    let question = query("which animal lives with us at home?", json!({}));
    let lexical = ok(store, &["retrieve"], &question);
    assert_eq!(lexical[0]["results"], json!([]));
    let stats = &ok(store, &["stats"], "")[0];
    assert_eq!(stats["retrievalMode"], "lexical");
    assert_eq!(stats["embedded"], 0);

    // With the model, the new memory is embedded at ingest and the old one
    // when the model is attached; retrieval becomes hybrid.
    ok(
        store,
        &["--model", model, "ingest"],
        &inputs(&memories[1..]),
    );
    let stats = &ok(store, &["--model", model, "stats"], "")[0];
    assert_eq!(stats["retrievalMode"], "hybrid");
    assert_eq!(stats["embedded"], 2);
    let model_id = stats["model"].as_str().unwrap().to_string();
    let hybrid = ok(store, &["--model", model, "retrieve"], &question);
    let results = hybrid[0]["results"].as_array().unwrap();
    assert_eq!(results[0]["id"], "m000001", "{results:?}");

    // MEMTIDE_MODEL_DIR works like --model; the embeddings stay stored, and a
    // later run without a model is lexical-only but keeps them.
    let out = run(
        Command::new(env!("CARGO_BIN_EXE_memtide"))
            .env("MEMTIDE_MODEL_DIR", model)
            .arg("--store")
            .arg(store)
            .args(["--now", NOW, "retrieve"]),
        &question,
    );
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out), hybrid);
    let stats = &ok(store, &["stats"], "")[0];
    assert_eq!(stats["retrievalMode"], "lexical");
    assert_eq!(stats["embedded"], 2);
    assert_eq!(stats["model"], model_id.as_str());
}
