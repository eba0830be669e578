//! The analysis as it was when each term was a `String` of its own, kept
//! as the oracle of the one that writes a text's terms into one buffer
//! (`texts_give_the_terms_of_the_string_per_term_analysis`): the same
//! rules, the stemmer called directly rather than through its cache
//! (which gives the stemmer's output: `super::super::stem`'s tests).

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfc, UnicodeNormalization};

use super::{continues_word, ends_with_letter, is_apostrophe, is_cjk, is_letter, is_stopword, MAX_TERM_BYTES};

/// The terms of `text`, then of `speaker`.
pub(super) fn said_terms(text: &str, speaker: Option<&str>) -> Vec<String> {
    let mut out = terms(text);
    if let Some(speaker) = speaker {
        out.extend(terms(speaker));
    }
    out
}

fn terms(text: &str) -> Vec<String> {
    if text.is_ascii() {
        ascii_terms(text)
    } else {
        char_terms(text)
    }
}

fn ascii_terms(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut word = String::new();
    let letter_at = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_alphabetic);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            let end = bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_alphanumeric())
                .map_or(bytes.len(), |n| i + n);
            word.push_str(&text[i..end]);
            i = end;
            continue;
        }
        if b == b'\'' && word.as_bytes().last().is_some_and(u8::is_ascii_alphabetic) && letter_at(i + 1) {
            let possessive = matches!(bytes[i + 1], b's' | b'S')
                && !bytes.get(i + 2).is_some_and(u8::is_ascii_alphanumeric);
            if possessive {
                push_word(&mut out, &mut word);
                i += 1;
            }
        } else {
            push_word(&mut out, &mut word);
        }
        i += 1;
    }
    push_word(&mut out, &mut word);
    out
}

fn char_terms(text: &str) -> Vec<String> {
    let text: Cow<str> = if is_nfc(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            push_word(&mut out, &mut word);
            cjk_run.push(c);
        } else if c.is_alphanumeric() || (!word.is_empty() && is_combining_mark(c)) {
            if !cjk_run.is_empty() {
                push_cjk_run(&mut out, &mut cjk_run);
            }
            word.push(c);
        } else if is_apostrophe(c) && ends_with_letter(&word) && is_letter(chars.get(i + 1)) {
            let possessive = matches!(chars.get(i + 1), Some('s' | 'S'))
                && !chars.get(i + 2).is_some_and(|&next| continues_word(next));
            if possessive {
                push_word(&mut out, &mut word);
                i += 1;
            }
        } else {
            push_word(&mut out, &mut word);
            push_cjk_run(&mut out, &mut cjk_run);
        }
        i += 1;
    }
    push_word(&mut out, &mut word);
    push_cjk_run(&mut out, &mut cjk_run);
    out
}

fn push_word(out: &mut Vec<String>, word: &mut String) {
    if word.is_empty() {
        return;
    }
    if word.is_ascii() {
        word.make_ascii_lowercase();
    } else {
        *word = word
            .to_lowercase()
            .nfd()
            .filter(|&c| !is_combining_mark(c))
            .collect();
    }
    let kept = !word.is_empty() && word.len() <= MAX_TERM_BYTES && !is_stopword(word);
    if kept && word.bytes().all(|b| b.is_ascii_alphabetic()) {
        out.push(Stemmer::create(Algorithm::English).stem(word).into_owned());
    } else if kept {
        out.push(std::mem::take(word));
    }
    word.clear();
}

fn push_cjk_run(out: &mut Vec<String>, run: &mut Vec<char>) {
    match run.as_slice() {
        [] => {}
        [single] => out.push(single.to_string()),
        chars => out.extend(chars.windows(2).map(|pair| pair.iter().collect())),
    }
    run.clear();
}
