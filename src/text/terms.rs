//! Lexical analysis: the terms BM25 indexes and matches.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfc, UnicodeNormalization};

use crate::fast_hash::FastSet;

/// Analysed words longer than this many bytes are noise (base64 blobs,
/// hashes) and are dropped.
const MAX_TERM_BYTES: usize = 64;

/// The text a memory is embedded as: its text, after `Name: ` when it
/// records a speaker in its `speaker` field, so its embedding holds who
/// said it as the embedding of a text written `Name: text` does.
pub fn said_text<'a>(text: &'a str, speaker: Option<&str>) -> std::borrow::Cow<'a, str> {
    match speaker {
        Some(speaker) => std::borrow::Cow::Owned(format!("{speaker}: {text}")),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// The terms a memory is indexed and compared by: those of its text, then
/// those of its speaker's name, when it records one in its `speaker`
/// field. A name written into the text (`Name: text`) is among the text's
/// terms already; one in the field must be too, or a question naming the
/// speaker would match the memory less than the same memory written with
/// its name in the text.
pub fn said_terms(text: &str, speaker: Option<&str>) -> Vec<String> {
    let mut out = terms(text);
    if let Some(speaker) = speaker {
        out.extend(terms(speaker));
    }
    out
}

/// Lexical terms for BM25: analysed, in order, with repeats.
///
/// * Words are maximal runs of alphanumeric characters (with any combining
///   marks that follow them). An apostrophe (`'` or `’`) between two letters
///   joins the word (`don't` → `dont`), except a possessive `'s`, which is
///   dropped (`Caroline's` → `caroline`).
/// * Words are lowercased and accent-folded (NFD without combining marks:
///   `café` → `cafe`); English stopwords are dropped; ASCII-alphabetic words
///   are stemmed with the Snowball English stemmer (`running` → `run`);
///   numbers and other words are kept as they are. Words longer than 64 bytes
///   are dropped.
/// * Han, Hiragana, Katakana and Hangul characters form runs of their own; a
///   run yields its overlapping bigrams (`東京都` → `東京`, `京都`), a run of
///   one character yields that character.
pub fn terms(text: &str) -> Vec<String> {
    #[cfg(any(test, feature = "testing"))]
    ANALYSED.with(|count| count.set(count.get() + 1));
    if text.is_ascii() {
        ascii_terms(text)
    } else {
        char_terms(text)
    }
}

/// [`terms`] of an ASCII text, by bytes: the same rules, where an ASCII
/// text has no CJK character, combining mark or accent, its only
/// apostrophe is `'` and its NFC form is itself. A word's letters are
/// copied as runs, not a character at a time, and no copy of the text as
/// characters is made (the character loop was a third of analysis).
fn ascii_terms(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    // About one term in eight bytes of chat text: the list grows once or
    // not at all.
    let mut out = Vec::with_capacity(bytes.len() / 8 + 1);
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

/// [`terms`] character by character: any text.
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

#[cfg(any(test, feature = "testing"))]
thread_local! {
    static ANALYSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many texts [`terms`] analysed on this thread so far: the tests
/// check that opening a store analyses no text its segments hold.
#[cfg(any(test, feature = "testing"))]
pub fn analysed_texts() -> usize {
    ANALYSED.with(std::cell::Cell::get)
}

/// Jaccard similarity of the two term *sets* (0.0 when both are empty).
pub fn term_overlap(a: &[String], b: &[String]) -> f32 {
    let a: HashSet<&str> = a.iter().map(String::as_str).collect();
    let b: HashSet<&str> = b.iter().map(String::as_str).collect();
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f32 / union as f32
}

/// Analyses the pending word into a term, if it survives, and clears it.
fn push_word(out: &mut Vec<String>, word: &mut String) {
    if word.is_empty() {
        return;
    }
    // An ASCII word has no accent to fold: lowercasing it in place is all
    // (no copy of the word for each word of a text).
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
        out.push(super::stem::stem(word));
    } else if kept {
        out.push(std::mem::take(word));
    }
    word.clear();
}

/// Emits the bigrams of the pending CJK run (or its single character) and
/// clears it.
fn push_cjk_run(out: &mut Vec<String>, run: &mut Vec<char>) {
    match run.as_slice() {
        [] => {}
        [single] => out.push(single.to_string()),
        chars => out.extend(chars.windows(2).map(|pair| pair.iter().collect())),
    }
    run.clear();
}

/// Han ideographs (with the iteration marks), Hiragana, Katakana and Hangul
/// syllables.
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}'..='\u{3007}'      // 々 〆 〇
        | '\u{3041}'..='\u{309F}'    // Hiragana
        | '\u{30A1}'..='\u{30FA}'    // Katakana (without the ・ word separator)
        | '\u{30FC}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}'    // Katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}'    // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'    // CJK unified ideographs
        | '\u{AC00}'..='\u{D7AF}'    // Hangul syllables
        | '\u{F900}'..='\u{FAFF}'    // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}'    // halfwidth Katakana
        | '\u{20000}'..='\u{3FFFF}' // CJK extensions B and later
    )
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

fn is_letter(c: Option<&char>) -> bool {
    c.is_some_and(|&c| c.is_alphabetic() && !is_cjk(c))
}

fn ends_with_letter(word: &str) -> bool {
    is_letter(word.chars().next_back().as_ref())
}

fn continues_word(c: char) -> bool {
    (c.is_alphanumeric() && !is_cjk(c)) || is_combining_mark(c)
}

/// A compact list of English function words, after apostrophes are removed
/// (`i'm` → `im`).
const STOPWORDS: &str = "\
    a about above after again against all also am an and any are as at be because been \
    before being below between both but by can could did do does doing down during each few \
    for from further had has have having he her here hers herself him himself his how i if \
    im in into is it its itself ive just may me might more most must my myself no nor not of \
    off on once only or other our ours ourselves out over own same shall she should so some \
    such than that the their theirs them themselves then there these they theyre theyve this \
    those through to too under until up very was we were weve what when where which while \
    who whom why will with would you youd youll your youre yours yourself yourselves youve";

fn is_stopword(word: &str) -> bool {
    static SET: OnceLock<FastSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOPWORDS.split_ascii_whitespace().collect())
        .contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn possessives_are_dropped_and_contractions_joined() {
        assert_eq!(terms("Bob's dog"), ["bob", "dog"]);
        assert_eq!(terms("Caroline’s"), terms("Caroline"));
        assert_eq!(terms("don't won’t"), ["dont", "wont"]);
        assert_eq!(terms("rock'n'roll"), ["rocknrol"]);
        // Not between two letters: a plain separator.
        assert_eq!(terms("'quoted' 90's"), ["quot", "90", "s"]);
        // `'s` followed by more letters is not a possessive.
        assert_eq!(terms("o'shea"), ["oshea"]);
    }

    #[test]
    fn words_are_lowercased_and_accent_folded() {
        assert_eq!(terms("Café NAÏVE"), ["cafe", "naiv"]);
        assert_eq!(terms("cafe\u{301}"), ["cafe"]);
        assert_eq!(terms("Straße Ελληνικά"), ["straße", "ελληνικα"]);
    }

    #[test]
    fn cjk_runs_yield_bigrams() {
        assert_eq!(
            terms("東京都に住む"),
            ["東京", "京都", "都に", "に住", "住む"]
        );
        assert_eq!(terms("猫 coffee 커피"), ["猫", "coffe", "커피"]);
        assert_eq!(terms("abc日本def"), ["abc", "日本", "def"]);
        assert_eq!(terms("ジョン・ス"), ["ジョ", "ョン", "ス"]);
    }

    #[test]
    fn stopwords_are_dropped() {
        assert_eq!(
            terms("What did I say to you about the trip when we were in Paris?"),
            ["say", "trip", "pari"]
        );
        assert_eq!(terms("I'm sure it's you're"), ["sure"]);
    }

    #[test]
    fn ascii_words_are_stemmed_and_numbers_kept() {
        assert_eq!(
            terms("running runs ran 2023 mp3 1,500"),
            ["run", "run", "ran", "2023", "mp3", "1", "500"]
        );
    }

    #[test]
    fn repeats_are_kept_in_order() {
        assert_eq!(terms("coffee tea coffee"), ["coffe", "tea", "coffe"]);
    }

    #[test]
    fn long_words_are_dropped() {
        let blob = "A".repeat(65);
        assert_eq!(terms(&format!("keep {blob} this")), ["keep"]);
        assert_eq!(terms(&"b".repeat(64)).len(), 1);
    }

    #[test]
    fn empty_and_symbol_only_text_has_no_terms() {
        assert!(terms("").is_empty());
        assert!(terms(" -- !? ''' ’ ").is_empty());
    }

    proptest::proptest! {
        /// An ASCII text is analysed by bytes as the character loop
        /// analyses it: apostrophes between letters and not, possessives
        /// followed by a letter, a digit or nothing, stopwords, digits,
        /// long words and every separator kind.
        #[test]
        fn ascii_texts_are_analysed_as_by_characters(parts in proptest::collection::vec(proptest::sample::select(vec![
            "'", "s", "S", "'s", "'S", "t", "Bob", "don", "90", "a", "the", "I", "im", "running",
            "RUNS", "mp3", " ", "  ", ",", ".", "-", "_", "\n", "\t", "\"", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", "Caroline", "o", "shea", "ABC1", "?!",
        ]), 0..24)) {
            let text = parts.concat();
            proptest::prop_assert_eq!(ascii_terms(&text), char_terms(&text), "{:?}", text);
        }
    }

    #[test]
    fn term_overlap_is_jaccard_of_sets() {
        let a = strings(&["x", "y", "y", "z"]);
        let b = strings(&["y", "z", "w"]);
        assert!((term_overlap(&a, &b) - 0.5).abs() < 1e-6);
        assert!((term_overlap(&a, &a) - 1.0).abs() < 1e-6);
        assert_eq!(term_overlap(&a, &[]), 0.0);
        assert_eq!(term_overlap(&[], &[]), 0.0);
    }
}
