//! The short lowercase words of a text, read in place: ranking's time
//! match asks of every candidate of a `when` question whether its text
//! holds a time word ([`crate::rank::mentions_time`]), so that check must
//! cost no allocation per word (it once built a set of owned words per
//! candidate, which tripled such a query's time: `docs/speed.md`, "Issue
//! 21, sixth session").

/// The longest word [`any_short_word`] hands over, in bytes: a word longer
/// than every word it is compared with cannot be one of them.
pub const SHORT_WORD: usize = 16;

/// True when `is_wanted` holds for a word of `text`, the words being
/// those of `text.to_lowercase()` split at every character that is not
/// ASCII alphanumeric (as [`crate::rank::query_words`] splits them), each
/// of at most [`SHORT_WORD`] bytes (longer ones are skipped). Stops at the
/// first wanted word; allocates nothing.
pub fn any_short_word(text: &str, mut is_wanted: impl FnMut(&str) -> bool) -> bool {
    let mut word = [0u8; SHORT_WORD];
    // The word's length so far; past SHORT_WORD it only says "too long".
    let mut len = 0usize;
    // A character's lowercase may be several characters, and a non-ASCII
    // one may lowercase to ASCII (the Kelvin sign to `k`), as in
    // `str::to_lowercase`; the space ends the last word.
    let lowercase = text.chars().flat_map(char::to_lowercase);
    for c in lowercase.chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() {
            if let Some(byte) = word.get_mut(len) {
                // An ASCII character is one byte.
                *byte = c as u8;
            }
            len = len.saturating_add(1);
            continue;
        }
        let short = word
            .get(..len)
            .filter(|w| !w.is_empty())
            .and_then(|w| std::str::from_utf8(w).ok());
        if short.is_some_and(&mut is_wanted) {
            return true;
        }
        len = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The words [`any_short_word`] visits, collected.
    fn visited(text: &str) -> Vec<String> {
        let mut words = Vec::new();
        any_short_word(text, |w| {
            words.push(w.to_string());
            false
        });
        words
    }

    /// The oracle: lowercase the whole text, split it, keep the short words.
    fn oracle(text: &str) -> Vec<String> {
        text.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty() && w.len() <= SHORT_WORD)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn words_are_split_lowercased_and_long_ones_skipped() {
        assert_eq!(
            visited("Caroline: we went LAST week, on 2023-05-07!"),
            ["caroline", "we", "went", "last", "week", "on", "2023", "05", "07"]
        );
        // The Kelvin sign lowercases to an ASCII k; `İ` to `i` and a
        // combining dot, which ends the word.
        assert_eq!(visited("\u{212A}ayak \u{130}stanbul"), ["kayak", "i", "stanbul"]);
        assert_eq!(visited("a supercalifragilistic word"), ["a", "word"]);
        assert_eq!(visited("sixteen-letters: abcdefghijklmnop"), ["sixteen", "letters", "abcdefghijklmnop"]);
        assert!(visited("").is_empty() && visited("?!  ,").is_empty());
        // It stops at the first wanted word.
        let mut seen = 0;
        assert!(any_short_word("one two three", |w| {
            seen += 1;
            w == "two"
        }));
        assert_eq!(seen, 2);
    }

    proptest! {
        #[test]
        fn visits_the_words_lowercasing_the_whole_text_gives(
            text in "([a-zA-Z0-9 .,:?'-]|\u{212A}|\u{130}|\u{3A3}|é|É|ß|\u{1E9E}){0,80}",
        ) {
            prop_assert_eq!(visited(&text), oracle(&text));
        }
    }
}
