//! Text analysis: normalization, content hashing, capture policies and the
//! lexical terms BM25 indexes.
//!
//! * [`normalize`] turns raw text into the canonical form memtide stores and
//!   hashes; [`content_hash`] is the sha256 of that form.
//! * [`redact`] applies the capture policies: `<no-memory>` opts a text out,
//!   `<private>…</private>` spans are cut before anything is stored.
//! * [`scrub`] replaces credentials by `[secret]`; [`has_pii`] finds
//!   emails, phone numbers and card numbers.
//! * [`capture`] is the whole pipeline ingest runs: the stored form of a raw
//!   text.
//! * [`terms`] analyses text into BM25 terms; [`term_overlap`] compares two
//!   term lists for near-duplicate detection.
//! * [`markdown`] cuts Markdown documents into line-ranged chunks.
//! * [`tokens`] counts prompt tokens, or estimates them.
//! * [`words`] reads the short lowercase words of a text in place.

pub mod calendar;
pub mod markdown;
mod redact;
mod secrets;
mod stem;
mod terms;
pub mod tokens;
pub mod words;

pub use redact::{redact, remove_private_keeping_lines, Capture};
pub use secrets::{
    has_pii, scrub, scrub_keeping_lines, SecretsConfig, SECRET_MARKER,
};
#[cfg(any(test, feature = "testing"))]
pub use terms::analysed_texts;
pub use terms::{said_term_list, said_terms, said_text, term_overlap, terms};

use sha2::{Digest, Sha256};
use unicode_normalization::{is_nfc, UnicodeNormalization};

/// Normalizes text for storage and hashing.
///
/// * Unicode NFC; `\r\n` and lone `\r` become `\n`.
/// * Control characters other than `\n` and `\t` are removed, and so are the
///   zero-width characters U+200B, U+2060 and U+FEFF (U+200D, the emoji
///   joiner, is kept).
/// * Every other whitespace character (tab, NBSP, ideographic space, …)
///   becomes a plain space.
/// * Within a line, runs of spaces collapse to one, except the leading
///   indentation, which is kept; trailing spaces are removed.
/// * Three or more consecutive newlines collapse to two (one blank line).
/// * Leading and trailing whitespace and blank lines of the whole text are
///   removed.
///
/// The result is a fixed point: `normalize(&normalize(x)) == normalize(x)`.
pub fn normalize(raw: &str) -> String {
    // Ingest normalizes each text three times (`capture`, then after
    // scrubbing secrets), and most texts are normalized already.
    if is_normal_ascii(raw) {
        return raw.to_string();
    }
    normalize_chars(raw)
}

/// True when `text` is ASCII that [`normalize`] returns unchanged: printable
/// characters, spaces and line breaks only, with no leading or trailing
/// space or line break, no line ending in a space, no run of spaces after a
/// line's indentation, and no more than one blank line in a row. A cheap
/// scan that rules in most texts; a text it rejects is normalized in full.
fn is_normal_ascii(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |b: Option<&u8>| matches!(b, Some(b' ' | b'\n'));
    if edge(bytes.first()) || edge(bytes.last()) {
        return false;
    }
    // One pass over the bytes (three searches of the text and a split of
    // its lines were a third of ingest's normalizing).
    let mut previous = 0u8;
    // Line breaks in a row, and whether the line is still in its
    // indentation.
    let mut breaks = 0;
    let mut indent = true;
    for &b in bytes {
        match b {
            b'\n' => {
                breaks += 1;
                if previous == b' ' || breaks == 3 {
                    return false;
                }
                indent = true;
            }
            b' ' => {
                if previous == b' ' && !indent {
                    return false;
                }
                breaks = 0;
            }
            b'!'..=b'~' => {
                breaks = 0;
                indent = false;
            }
            _ => return false,
        }
        previous = b;
    }
    true
}

/// [`normalize`] character by character.
fn normalize_chars(raw: &str) -> String {
    // Characters are cleaned before composing: removing a zero-width character
    // after NFC could leave a letter next to a combining mark that a second
    // pass would compose, breaking idempotence.
    let cleaned = clean_chars(raw);
    // Most texts are NFC already (all ASCII ones are): composing them would
    // copy each character through the normalizer for nothing.
    let composed = if is_nfc(&cleaned) {
        cleaned
    } else {
        cleaned.nfc().collect()
    };
    let mut out = String::with_capacity(composed.len());
    let mut blank_pending = false;
    for line in composed.split('\n') {
        let line = tidy_line(line);
        if line.is_empty() {
            blank_pending = !out.is_empty();
            continue;
        }
        if out.is_empty() {
            out.push_str(line.trim_start_matches(' '));
        } else {
            out.push_str(if blank_pending { "\n\n" } else { "\n" });
            out.push_str(&line);
        }
        blank_pending = false;
    }
    out
}

/// The stored form of a raw text: what ingest keeps of it.
///
/// The text is normalized, then the capture policies of [`redact`] apply
/// to the normalized text, then the remainder is normalized again (the
/// cuts leave spaces). Markers are looked for after normalization so that
/// characters normalization removes (control and zero-width characters)
/// can neither hide a `<private>` or `<no-memory>` marker from the policies
/// nor join two pieces into one in the stored text.
///
/// The result is a fixed point: capturing the text of a [`Capture::Text`]
/// again yields the same text, with `private_removed` false.
pub fn capture(raw: &str) -> Capture {
    match redact(normalize(raw)) {
        Capture::NoMemory => Capture::NoMemory,
        // Nothing was cut: the text is normalized already (a fixed point).
        Capture::Text {
            text,
            private_removed,
        } => Capture::Text {
            text: if private_removed { normalize(&text) } else { text },
            private_removed,
        },
    }
}

/// sha256 of already-normalized text, lowercase hex.
pub fn content_hash(normalized: &str) -> String {
    hex(&Sha256::digest(normalized.as_bytes()))
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Built as bytes and converted once: pushing `char`s one at a time
    // checked capacity and encoded UTF-8 per digit, and a store's open
    // writes a content hash per memory (`docs/speed.md`, "The open").
    let mut digits = vec![0u8; bytes.len() * 2];
    for (pair, b) in digits.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    // Only ASCII digits were written: the conversion cannot fail.
    String::from_utf8(digits).unwrap_or_default()
}

/// The value of each byte as a lowercase hex digit, else `NOT_HEX`.
const HEX_VALUES: [u8; 256] = {
    let mut values = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        values[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        values[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    values
};
const NOT_HEX: u8 = 0xff;

/// The 32 bytes of a content hash written as 64 lowercase hex digits
/// ([`content_hash`]), else `None`.
pub(crate) fn hex_bytes(hash: &str) -> Option<[u8; 32]> {
    let digits: &[u8; 64] = hash.as_bytes().try_into().ok()?;
    let mut out = [0u8; 32];
    // Every pair is decoded and the misfits are found once at the end:
    // no branch per digit.
    let mut bad = 0u8;
    for (i, byte) in out.iter_mut().enumerate() {
        let high = HEX_VALUES[usize::from(digits[2 * i])];
        let low = HEX_VALUES[usize::from(digits[2 * i + 1])];
        bad |= high | low;
        *byte = (high << 4) | (low & 15);
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// Unifies line breaks, drops control and zero-width characters and maps
/// every whitespace character except `\n` to a plain space.
fn clean_chars(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            '\n' => out.push('\n'),
            c if is_removed(c) => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// True when `text` shows nothing: it holds only whitespace and
/// default-ignorable code points (the Unicode property
/// `Default_Ignorable_Code_Point`: zero-width joiners and non-joiners, soft
/// hyphens, bidirectional marks, variation selectors, fillers, tag
/// characters …). [`normalize`] keeps most of those, because inside words
/// they matter, but a text of nothing else is as empty as a blank one: it
/// has no term to find it by and nothing to show.
pub fn is_blank(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_whitespace() || is_default_ignorable(c))
}

/// `Default_Ignorable_Code_Point` (Unicode 15.1, `DerivedCoreProperties.txt`).
fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// True for the characters [`normalize`] removes: control characters other
/// than `\n`, `\r` and `\t`, and the zero-width characters U+200B, U+2060
/// and U+FEFF.
fn is_removed(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{2060}' | '\u{FEFF}')
        || (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

/// Keeps a line's indentation, collapses the spaces after it and drops
/// trailing spaces; a line of spaces only becomes empty.
fn tidy_line(line: &str) -> String {
    let body = line.trim_start_matches(' ');
    let mut words = body.split(' ').filter(|word| !word.is_empty());
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut out = String::with_capacity(line.len());
    out.push_str(&line[..line.len() - body.len()]);
    out.push_str(first);
    for word in words {
        out.push(' ');
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every turn of the LoCoMo development set, as written.
    pub(crate) fn locomo_turns() -> Vec<String> {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/locomo_dev.json")).unwrap();
        let mut turns = Vec::new();
        for conversation in data["conversations"].as_array().unwrap() {
            for session in conversation["sessions"].as_array().unwrap() {
                for turn in session["turns"].as_array().unwrap() {
                    turns.push(turn["text"].as_str().unwrap().to_string());
                }
            }
        }
        assert!(turns.len() > 500, "the dev set has its turns");
        turns
    }

    #[test]
    fn locomo_turns_normalize_as_character_by_character() {
        for turn in locomo_turns() {
            let normalized = normalize_chars(&turn);
            assert_eq!(normalize(&turn), normalized, "{turn:?}");
            assert_eq!(normalize(&normalized), normalized, "{turn:?}");
        }
    }

    proptest! {
        /// A text the fast check takes as normalized is one the full
        /// normalization leaves unchanged: random texts of the characters
        /// each rule is about (spaces, line breaks, tabs, returns, controls,
        /// zero-width and non-ASCII characters, combining marks).
        #[test]
        fn the_fast_check_takes_only_normalized_texts(
            text in prop::collection::vec(prop::sample::select(vec![
                "a", "Zq", " ", "  ", "\n", "\n\n", "\r", "\t", "\u{7f}", "\u{1}",
                "\u{a0}", "\u{200b}", "é", "e\u{301}", "~", "."
            ]), 0..24).prop_map(|parts| parts.concat())
        ) {
            if is_normal_ascii(&text) {
                prop_assert_eq!(&normalize_chars(&text), &text);
            }
            prop_assert_eq!(is_normal_ascii(&text), is_normal_ascii_by_lines(&text));
            prop_assert_eq!(normalize(&text), normalize_chars(&text));
        }
    }

    /// The fast check as it was written first, by searches and lines: the
    /// oracle of the one-pass scan.
    fn is_normal_ascii_by_lines(text: &str) -> bool {
        let bytes = text.as_bytes();
        let edge = |b: Option<&u8>| matches!(b, Some(b' ' | b'\n'));
        !edge(bytes.first())
            && !edge(bytes.last())
            && bytes.iter().all(|&b| b == b'\n' || (b' '..=b'~').contains(&b))
            && !text.contains("\n\n\n")
            && text.split('\n').all(|line| {
                !line.ends_with(' ') && !line.trim_start_matches(' ').contains("  ")
            })
    }

    #[test]
    fn the_fast_check_takes_ordinary_texts() {
        for text in ["", "a", "one line. Two words!", "a\nb", "a\n\nb", "a\n  indented b"] {
            assert!(is_normal_ascii(text), "{text:?}");
            assert_eq!(normalize_chars(text), text);
        }
        for text in [" a", "a ", "a\n", "a  b", "a\n\n\nb", "a\tb", "a\n \nb", "café", "a \nb", "a\n  b  c"] {
            assert!(!is_normal_ascii(text), "{text:?}");
        }
    }

    #[test]
    fn line_breaks_are_unified() {
        assert_eq!(normalize("a\r\nb\rc\nd"), "a\nb\nc\nd");
        assert_eq!(normalize("a\r\r\nb"), "a\n\nb");
    }

    #[test]
    fn control_and_zero_width_characters_are_removed() {
        assert_eq!(normalize("a\u{0}b\u{7}c\u{1b}d\u{7f}e"), "abcde");
        assert_eq!(normalize("\u{FEFF}zero\u{200B}width\u{2060}"), "zerowidth");
        // The zero-width joiner holds emoji sequences together.
        assert_eq!(normalize("👩\u{200D}💻"), "👩\u{200D}💻");
    }

    #[test]
    fn unicode_spaces_become_plain_spaces() {
        assert_eq!(normalize("a\u{A0}b\u{3000}c\td\u{2009}e"), "a b c d e");
        assert_eq!(normalize("a \u{A0}\t b"), "a b");
    }

    #[test]
    fn indentation_is_kept_and_inner_runs_collapse() {
        assert_eq!(
            normalize("fn main() {\n    let  x =   1;   \n\tdone\n}"),
            "fn main() {\n    let x = 1;\n done\n}"
        );
    }

    #[test]
    fn blank_lines_collapse_and_the_text_is_trimmed() {
        assert_eq!(normalize("\n\n  a\n\n\n\n b \n \n\t\n"), "a\n\n b");
        assert_eq!(normalize("a\n\nb"), "a\n\nb");
        assert_eq!(normalize(" \n\t\u{A0}\n"), "");
    }

    #[test]
    fn decomposed_characters_are_composed() {
        assert_eq!(normalize("cafe\u{301}"), "caf\u{E9}");
        // A zero-width character between a letter and its accent.
        assert_eq!(normalize("e\u{200B}\u{301}"), "\u{E9}");
    }

    #[test]
    fn markers_hidden_by_removed_characters_still_apply() {
        // Found by the `text` fuzz target: normalization removed the control
        // character after the policies had run, so the stored text held a
        // `<no-memory />` marker (and was refused by import).
        assert_eq!(
            capture("please <No-Memory /\u{1a}> forget"),
            Capture::NoMemory
        );
        assert_eq!(
            capture("a <private\u{200B}>secret</private\u{7}> b"),
            Capture::Text {
                text: "a b".into(),
                private_removed: true
            }
        );
    }

    #[test]
    fn capture_is_a_fixed_point() {
        let Capture::Text { text, .. } = capture("  x <private>y</private>\r\n\n\n z ") else {
            panic!("captured as NoMemory");
        };
        assert_eq!(text, "x\n\n z");
        assert_eq!(
            capture(&text),
            Capture::Text {
                text: text.clone(),
                private_removed: false
            }
        );
    }

    #[test]
    fn content_hash_is_sha256_hex() {
        assert_eq!(
            content_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
        let hash = content_hash("a");
        assert_eq!(hex_bytes(&hash).map(|b| hex(&b)), Some(hash.clone()));
        assert_eq!(hex_bytes(&hash.to_uppercase()), None);
        assert_eq!(hex_bytes(&hash[1..]), None);
    }

    #[test]
    fn hex_bytes_accepts_exactly_the_lowercase_hex_digits() {
        // Any byte at any place: refused unless it is a digit `hex` writes
        // (the oracle: `char::to_digit`, lowercase only).
        let hash = content_hash("a");
        for at in 0..64 {
            for b in 0..=255u8 {
                let mut digits = hash.clone().into_bytes();
                digits[at] = b;
                let Ok(text) = String::from_utf8(digits) else {
                    continue;
                };
                let expected = text.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
                let decoded = hex_bytes(&text);
                assert_eq!(decoded.is_some(), expected, "{b:#x} at {at}");
                if let Some(bytes) = decoded {
                    assert_eq!(hex(&bytes), text);
                }
            }
        }
    }

    fn tricky_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a", "é", "e", "\u{301}", " ", "  ", "\t", "\n", "\r", "\r\n", "\u{A0}", "\u{3000}",
            "\u{200B}", "\u{200D}", "\u{FEFF}", "\u{85}", "\u{2028}", "\u{0}", "\u{2000}", "한",
            "\u{1100}", "\u{1161}",
        ]);
        prop::collection::vec(pieces, 0..24).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn normalize_is_idempotent(raw in any::<String>()) {
            let once = normalize(&raw);
            prop_assert_eq!(normalize(&once), once);
        }

        #[test]
        fn capture_is_a_fixed_point_on_any_text(raw in any::<String>()) {
            if let Capture::Text { text, .. } = capture(&raw) {
                prop_assert_eq!(capture(&text), Capture::Text { text: text.clone(), private_removed: false });
            }
        }

        /// Capture keeps the normalized text when nothing was cut, as
        /// normalizing it again did (the oracle: normalize, redact,
        /// normalize), over texts with and without tags and markers.
        #[test]
        fn capture_is_normalize_redact_normalize(
            parts in prop::collection::vec(prop::sample::select(vec![
                "<private>", "</private>", "<no-memory>", "<", "a", "é", " ", "  ", "\n\n\n",
                "\t", "\r\n", "\u{200B}", "e\u{301}", "x",
            ]), 0..16)
        ) {
            let raw = parts.concat();
            let oracle = match redact(normalize(&raw)) {
                Capture::NoMemory => Capture::NoMemory,
                Capture::Text { text, private_removed } => Capture::Text {
                    text: normalize(&text),
                    private_removed,
                },
            };
            prop_assert_eq!(capture(&raw), oracle);
        }

        #[test]
        fn normalize_is_idempotent_on_tricky_text(raw in tricky_text()) {
            let once = normalize(&raw);
            prop_assert_eq!(normalize(&once), once);
        }
    }
}
