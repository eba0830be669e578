//! Target `wordpiece`: the BERT WordPiece tokenizer (`memtide::embed::WordPiece`)
//! with a small vocabulary built here.
//!
//! The first byte picks a mode:
//! * even: the rest is text (UTF-8, lossily), encoded with `max_tokens`
//!   taken from the second byte. `encode` frames the ids as `[CLS] … [SEP]`,
//!   keeps at most `max(max_tokens, 2)` of them, each below the vocabulary
//!   size, and its content is a prefix of the untruncated encoding, whose
//!   length is `count_tokens`.
//! * odd: the rest is a `tokenizer.json`: `from_tokenizer_json` gives a
//!   tokenizer (which then encodes a fixed text within the same rules) or
//!   `INVALID_INPUT`.

use std::sync::OnceLock;

use memtide::embed::WordPiece;

use super::assert_code;

/// `tokenizer.json` (next to this file): a BERT-style tokenizer with 32
/// tokens: the five specials, words, continuation pieces, punctuation, a CJK
/// ideograph and Greek.
pub const TOKENIZER_JSON: &str = include_str!("tokenizer.json");

fn tokenizer() -> &'static WordPiece {
    static TOKENIZER: OnceLock<WordPiece> = OnceLock::new();
    TOKENIZER.get_or_init(|| {
        WordPiece::from_tokenizer_json(TOKENIZER_JSON).expect("the fuzz vocabulary parses")
    })
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let (max_tokens, text) = match rest.split_first() {
            Some((&max, text)) => (usize::from(max), text),
            None => (0, rest),
        };
        check_encode(tokenizer(), &String::from_utf8_lossy(text), max_tokens);
    } else {
        match WordPiece::from_tokenizer_json(&String::from_utf8_lossy(rest)) {
            Ok(tokenizer) => check_encode(&tokenizer, "Running, [MASK] un wanted 東京 café!", 8),
            Err(error) => assert_code(&error, &["INVALID_INPUT"], "from_tokenizer_json"),
        }
    }
}

fn check_encode(tokenizer: &WordPiece, text: &str, max_tokens: usize) {
    let full = tokenizer.encode(text, usize::MAX);
    let ids = tokenizer.encode(text, max_tokens);
    let size = tokenizer.vocab_size();
    for encoding in [&full, &ids] {
        assert!(encoding.len() >= 2, "no [CLS]/[SEP]");
        assert!(encoding.iter().all(|&id| (id as usize) < size), "id out of range");
        assert_eq!(encoding.first(), full.first(), "[CLS] is not first");
        assert_eq!(encoding.last(), full.last(), "[SEP] is not last");
    }
    assert!(ids.len() <= max_tokens.max(2), "more than max_tokens ids");
    let content = &ids[1..ids.len() - 1];
    assert!(
        full[1..].starts_with(content),
        "the truncated content is not a prefix of the full one"
    );
    assert_eq!(tokenizer.count_tokens(text), full.len() - 2);
}
