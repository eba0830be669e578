//! The short lowercase words of a text, read in place: ranking's time
//! match asks of every candidate of a `when` question whether its text
//! holds a time word ([`crate::rank::mentions_time`]), so that check must
//! cost no allocation per word (it once built a set of owned words per
//! candidate: `docs/speed.md`, "Retrieval").

/// The longest word [`any_short_word`] hands over, in bytes: a word longer
/// than every word it is compared with cannot be one of them.
pub const SHORT_WORD: usize = 16;

/// True when `is_wanted` holds for a word of `text`, the words being
/// those of `text.to_lowercase()` split at every character that is not
/// ASCII alphanumeric (as [`crate::rank::query_words`] splits them), each
/// of at most [`SHORT_WORD`] bytes (longer ones are skipped). Stops at the
/// first wanted word; allocates nothing.
pub fn any_short_word(text: &str, mut is_wanted: impl FnMut(&str) -> bool) -> bool {
    let mut word = Word {
        bytes: [0; SHORT_WORD],
        len: 0,
    };
    let mut rest = text;
    while !rest.is_empty() {
        // A run of ASCII a byte at a time, then one other character.
        let ascii = rest.bytes().position(|b| !b.is_ascii());
        let (run, other) = rest.split_at_checked(ascii.unwrap_or(rest.len())).unwrap_or((rest, ""));
        for byte in run.bytes() {
            if byte.is_ascii_alphanumeric() {
                word.add(byte.to_ascii_lowercase());
            } else if word.end(&mut is_wanted) {
                return true;
            }
        }
        let mut chars = other.chars();
        // A character's lowercase may be several characters, and a
        // non-ASCII one may lowercase to ASCII (the Kelvin sign to `k`),
        // as in `str::to_lowercase`.
        for c in chars.next().into_iter().flat_map(char::to_lowercase) {
            if c.is_ascii_alphanumeric() {
                // An ASCII character is one byte.
                word.add(c as u8);
            } else if word.end(&mut is_wanted) {
                return true;
            }
        }
        rest = chars.as_str();
    }
    word.end(&mut is_wanted)
}

/// The word being read.
struct Word {
    bytes: [u8; SHORT_WORD],
    /// Its length so far; past [`SHORT_WORD`] it only says "too long".
    len: usize,
}

impl Word {
    /// Adds a lowercase ASCII alphanumeric byte.
    fn add(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
        }
        self.len = self.len.saturating_add(1);
    }

    /// Ends the word; true when it is a short word `is_wanted` holds for.
    fn end(&mut self, is_wanted: &mut impl FnMut(&str) -> bool) -> bool {
        let ended = self
            .bytes
            .get(..self.len)
            .filter(|w| !w.is_empty())
            .and_then(|w| std::str::from_utf8(w).ok());
        self.len = 0;
        ended.is_some_and(is_wanted)
    }
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
