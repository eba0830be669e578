//! The MiniLM embedder must reproduce the reference stack (Hugging Face
//! tokenizers + onnxruntime on the same ONNX file) on
//! `tests/data/minilm-int8-golden.json`: the same token ids, embeddings within
//! cosine 0.9999; batching must not change results; no input may panic.
//!
//! The same tests run natively and, built for `wasm32-unknown-unknown` (with
//! crates/js for the JavaScript randomness), inside headless Chromium (`scripts/test-browser.sh`),
//! where the model files are compiled into the test module.

#![cfg(feature = "semantic")]

use memtide_testkit::model::{golden, model_files};

use std::sync::OnceLock;

use memtide::embed::{Embedder, MiniLm};
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    model_sha256: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

/// The model, loaded once for all tests.
fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        let (onnx, tokenizer) = model_files();
        MiniLm::from_bytes(onnx, &tokenizer).expect("load the model")
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Asserts `embedding` is a finite unit vector of the model's width.
fn assert_unit_vector(embedding: &[f32], text: &str) {
    assert_eq!(embedding.len(), 384, "{text:?}");
    assert!(embedding.iter().all(|x| x.is_finite()), "{text:?}");
    let norm = embedding.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm} for {text:?}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn ids_and_embeddings_match_the_reference() {
    let golden: Golden = golden();
    let model = model();
    assert_eq!(model.dimensions(), 384);
    assert_eq!(
        model.model_id(),
        format!(
            "all-MiniLM-L6-v2-int8/{}/mean/256",
            &golden.model_sha256[..16]
        )
    );
    assert_eq!(golden.cases.len(), 25);
    let mut min_cosine = f32::INFINITY;
    for case in &golden.cases {
        assert_eq!(model.token_ids(&case.text), case.ids, "{:?}", case.text);
        let embedding = model.embed_batch(&[&case.text]).expect("embed").remove(0);
        assert_unit_vector(&embedding, &case.text);
        let similarity = cosine(&embedding, &case.embedding);
        assert!(
            similarity >= 0.9999,
            "cosine {similarity} for {:?}",
            case.text
        );
        min_cosine = min_cosine.min(similarity);
    }
    println!("minimum cosine against the reference: {min_cosine:.7}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_batch_equals_one_text_at_a_time() {
    let golden: Golden = golden();
    let model = model();
    let texts: Vec<&str> = golden.cases.iter().map(|c| c.text.as_str()).collect();
    let batched = model.embed_batch(&texts).expect("embed the batch");
    assert_eq!(batched.len(), texts.len());
    for (text, embedding) in texts.iter().zip(&batched) {
        let alone = model.embed_batch(&[text]).expect("embed one").remove(0);
        let similarity = cosine(embedding, &alone);
        assert!(similarity >= 0.99999, "cosine {similarity} for {text:?}");
    }
    assert!(model.embed_batch(&[]).expect("embed nothing").is_empty());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_empty_string_and_adversarial_texts_embed() {
    let long_word = "a".repeat(10_000);
    let long_text = "memory ".repeat(5_000);
    let specials = "[CLS] [SEP] [PAD] [MASK] [UNK] ".repeat(100);
    let texts = [
        "",
        " ",
        "\0\u{1}\u{7f}",
        "\u{FEFF}\u{200B}\u{200D}",
        "\u{301}\u{308}\u{20DD}",
        "\u{FFFF}\u{10FFFF}\u{E000}",
        "🇺🇳👩‍👩‍👧‍👦🏳️‍🌈",
        "\u{202E}reversed\u{202C} שלום עולם",
        "ﷺ ﷽ ꧁꧂ 𒀱",
        "ＡＢＣ１２３ｱｲｳ",
        long_word.as_str(),
        long_text.as_str(),
        specials.as_str(),
    ];
    let model = model();
    let embeddings = model.embed_batch(&texts).expect("embed");
    assert_eq!(embeddings.len(), texts.len());
    for (text, embedding) in texts.iter().zip(&embeddings) {
        assert_unit_vector(embedding, text);
        assert!(model.token_ids(text).len() <= 256);
    }
    assert_eq!(model.token_ids(""), [101, 102]);
    assert_eq!(model.count_tokens(&long_text), 5_000);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bad_model_files_are_model_errors() {
    let (onnx, tokenizer) = model_files();

    let truncated = onnx[..onnx.len() / 2].to_vec();
    for bytes in [Vec::new(), b"not an onnx file".to_vec(), truncated] {
        let error = MiniLm::from_bytes(bytes, &tokenizer).expect_err("bad bytes must fail");
        assert_eq!(error.code(), "MODEL", "{error}");
    }
    let error = MiniLm::from_bytes(onnx, "{}").expect_err("a bad tokenizer must fail");
    assert_eq!(error.code(), "INVALID_INPUT", "{error}");
    #[cfg(not(target_arch = "wasm32"))]
    {
        let missing = memtide_testkit::model::model_dir().join("missing");
        let error = MiniLm::from_dir(&missing).expect_err("a missing dir must fail");
        assert_eq!(error.code(), "MODEL", "{error}");
    }
}
