//! Lexical analysis: the terms BM25 indexes and matches.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfc, UnicodeNormalization};

use crate::fast_hash::FastSet;
use crate::str_list::StrList;

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
    said_term_list(text, speaker).to_strings()
}

/// [`said_terms`] in one buffer: what ingest analyses each memory into.
pub fn said_term_list(text: &str, speaker: Option<&str>) -> StrList {
    let mut out = StrList::default();
    add_terms(&mut out, text);
    if let Some(speaker) = speaker {
        add_terms(&mut out, speaker);
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
    said_terms(text, None)
}

/// Adds the terms of `text` ([`terms`]) to `out`.
fn add_terms(out: &mut StrList, text: &str) {
    #[cfg(any(test, feature = "testing"))]
    ANALYSED.with(|count| count.set(count.get() + 1));
    if text.is_ascii() {
        ascii_terms(out, text);
    } else {
        char_terms(out, text);
    }
}

/// [`terms`] of an ASCII text, by bytes: the same rules, where an ASCII
/// text has no CJK character, combining mark or accent, its only
/// apostrophe is `'` and its NFC form is itself. A word's letters are
/// copied as runs, not a character at a time, and no copy of the text as
/// characters is made (the character loop was a third of analysis).
fn ascii_terms(out: &mut StrList, text: &str) {
    let bytes = text.as_bytes();
    // The terms take at most the text's bytes, and chat text has about
    // one term in eight bytes: the lists grow once or not at all.
    out.reserve(bytes.len(), bytes.len() / 8 + 1);
    let letter_at = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_alphabetic);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            let end = bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_alphanumeric())
                .map_or(bytes.len(), |n| i + n);
            out.buffer().push_str(&text[i..end]);
            i = end;
            continue;
        }
        let word_ends_in_letter = out.next_string().as_bytes().last().is_some_and(u8::is_ascii_alphabetic);
        if b == b'\'' && word_ends_in_letter && letter_at(i + 1) {
            let possessive = matches!(bytes[i + 1], b's' | b'S')
                && !bytes.get(i + 2).is_some_and(u8::is_ascii_alphanumeric);
            if possessive {
                end_word(out);
                i += 1;
            }
        } else {
            end_word(out);
        }
        i += 1;
    }
    end_word(out);
}

/// [`terms`] character by character: any text.
fn char_terms(out: &mut StrList, text: &str) {
    let text: Cow<str> = if is_nfc(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    };
    let chars: Vec<char> = text.chars().collect();
    out.reserve(text.len(), text.len() / 8 + 1);
    let mut cjk_run: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_word = !out.next_string().is_empty();
        if is_cjk(c) {
            end_word(out);
            cjk_run.push(c);
        } else if c.is_alphanumeric() || (in_word && is_combining_mark(c)) {
            // A run of CJK ended the word before it began: the run is
            // the next to add.
            if !cjk_run.is_empty() {
                push_cjk_run(out, &mut cjk_run);
            }
            out.buffer().push(c);
        } else if is_apostrophe(c) && ends_with_letter(out.next_string()) && is_letter(chars.get(i + 1)) {
            let possessive = matches!(chars.get(i + 1), Some('s' | 'S'))
                && !chars.get(i + 2).is_some_and(|&next| continues_word(next));
            if possessive {
                end_word(out);
                i += 1;
            }
        } else {
            end_word(out);
            push_cjk_run(out, &mut cjk_run);
        }
        i += 1;
    }
    end_word(out);
    push_cjk_run(out, &mut cjk_run);
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

/// Analyses the word written at the end of `out` ([`StrList::next_string`])
/// into a term, if it survives, and starts the next word.
fn end_word(out: &mut StrList) {
    let start = out.next_start();
    let word = out.next_string();
    if word.is_empty() {
        return;
    }
    // An ASCII word has no accent to fold: lowercasing it in place is all.
    if word.is_ascii() {
        if let Some(word) = out.buffer().get_mut(start..) {
            word.make_ascii_lowercase();
        }
    } else {
        let folded: String = word
            .to_lowercase()
            .nfd()
            .filter(|&c| !is_combining_mark(c))
            .collect();
        out.buffer().truncate(start);
        out.buffer().push_str(&folded);
    }
    let word = out.next_string();
    let kept = !word.is_empty() && word.len() <= MAX_TERM_BYTES && !is_stopword(word);
    if !kept {
        out.buffer().truncate(start);
        return;
    }
    if word.bytes().all(|b| b.is_ascii_alphabetic()) {
        super::stem::stem_in_place(out.buffer(), start);
    }
    out.end_string();
}

/// Adds the bigrams of the pending CJK run (or its single character) to
/// `out`, where no word is pending, and clears it.
fn push_cjk_run(out: &mut StrList, run: &mut Vec<char>) {
    let mut add = |chars: &[char]| {
        out.buffer().extend(chars);
        out.end_string();
    };
    match run.as_slice() {
        [] => {}
        [single] => add(std::slice::from_ref(single)),
        chars => chars.windows(2).for_each(add),
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
mod old;

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
            let (mut by_bytes, mut by_chars) = (StrList::default(), StrList::default());
            ascii_terms(&mut by_bytes, &text);
            char_terms(&mut by_chars, &text);
            proptest::prop_assert_eq!(by_bytes, by_chars, "{:?}", text);
        }
    }

    /// Pieces of text each rule of the analysis is about: ASCII words,
    /// stopwords, apostrophes and possessives, digits and separators,
    /// words of 64 and 65 bytes, accents (composed and not), combining
    /// marks alone, letters whose lowercase changes length or context
    /// (`İ`, the Kelvin sign, final sigma), ligatures, other scripts'
    /// digits and letters, and CJK runs of every range.
    const ASCII_PIECES: &[&str] = &[
        "Bob", "'s", "'S", "'", "s", "t", "don", "running", "RUNS", "ran", "the", "I", "im", "You're",
        "mp3", "2023", "1,500", "90", " ", "  ", "\n", "\t", "-", ".", "?!", "_", "\"", "o", "shea",
        "Caroline", "rock'n'roll", "cats", "happily", "generously", "national", "ABC1", "x",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "supercalifragilisticexpialidociously",
    ];
    const OTHER_PIECES: &[&str] = &[
        "’", "’s", "café", "Café", "NAÏVE", "cafe\u{301}", "e\u{301}", "\u{301}", "\u{308}", "Straße",
        "Ελληνικά", "ΣΑΣ", "東京都", "に住む", "猫", "커피", "ジョン・ス", "ｶﾀｶﾅ", "々", "\u{20000}\u{20001}",
        "İstanbul", "\u{212A}elvin", "ǅemal", "ﬁne", "Ⅻ", "٣٤", "x\u{200D}y", "ŉ", "ÀÉÎÕÜ",
        "éééééééééééééééééééééééééééééééé", "ééééééééééééééééééééééééééééééééé", "\u{3000}", "Ａｂｃ",
    ];

    /// `count` texts made of the pieces above by a fixed pseudo-random
    /// sequence (ASCII only, which takes the byte loop, or mixed).
    fn texts_of_pieces(count: usize) -> Vec<String> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        (0..count)
            .map(|_| {
                let ascii = next(3) == 0;
                let len = next(24);
                (0..len)
                    .map(|_| match next(3) {
                        0 if !ascii => OTHER_PIECES[next(OTHER_PIECES.len())],
                        _ => ASCII_PIECES[next(ASCII_PIECES.len())],
                    })
                    .collect()
            })
            .collect()
    }

    /// The analysis into one buffer gives, byte for byte, the terms the
    /// analysis that made a `String` of each term gave (`old.rs`): texts
    /// of every rule's pieces and the LoCoMo turns, each alone and said
    /// by a speaker (the speaker's terms after the text's in the buffer).
    #[test]
    fn texts_give_the_terms_of_the_string_per_term_analysis() {
        let mut texts = texts_of_pieces(20_000);
        texts.extend(crate::text::tests::locomo_turns());
        for text in &texts {
            for speaker in [None, Some("Caroline"), Some("J’s ΣΑΣ café")] {
                let list = said_term_list(text, speaker);
                let old = old::said_terms(text, speaker);
                assert_eq!(list.iter().collect::<Vec<_>>(), old, "{text:?} said by {speaker:?}");
                assert_eq!(said_terms(text, speaker), old);
            }
        }
    }

    proptest::proptest! {
        /// The same, for texts proptest makes of the pieces.
        #[test]
        fn pieces_give_the_terms_of_the_string_per_term_analysis(
            parts in proptest::collection::vec(proptest::sample::select([ASCII_PIECES, OTHER_PIECES].concat()), 0..30),
            speaker in proptest::option::of(proptest::sample::select(OTHER_PIECES.to_vec())),
        ) {
            let text = parts.concat();
            proptest::prop_assert_eq!(said_term_list(&text, speaker).to_strings(), old::said_terms(&text, speaker));
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
