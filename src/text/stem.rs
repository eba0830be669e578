//! The Snowball English stemmer behind [`super::terms`], with a small cache
//! of the words it stemmed last. Stemming was the largest single cost of
//! ingest (`docs/speed.md`, "Building a store"), and the words of a
//! store's texts repeat: most words a text
//! holds were stemmed for an earlier one. The cache changes no result: a
//! slot holds a word and the stemmer's output for it, and a word is looked
//! up by equality.

use std::borrow::Cow;
use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Slots of the cache (a power of two): enough for the common words of
/// chat text, small beside a store's indexes (its bytes: `docs/speed.md`).
const SLOTS: usize = 4096;
/// Longer words are stemmed without the cache: they are rare and repeat
/// less.
const MAX_CACHED_BYTES: usize = 24;

/// A word and its stem.
type Entry = Option<(Box<str>, Box<str>)>;

thread_local! {
    /// Direct-mapped: a word's slot is its hash's low bits, and a word
    /// replaces whatever its slot held. One per thread (WebAssembly has one).
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

fn english_stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Replaces the word `text` holds from byte `start` to its end (lowercase
/// ASCII letters, as [`super::terms`] passes them; any word is stemmed as
/// the stemmer stems it) with the stemmer's output for it, in place: the
/// terms of a text share one buffer.
pub(super) fn stem_in_place(text: &mut String, start: usize) {
    let Some(word) = text.get(start..) else {
        return;
    };
    if word.len() > MAX_CACHED_BYTES {
        let stemmed = match english_stemmer().stem(word) {
            Cow::Owned(stemmed) => stemmed,
            Cow::Borrowed(_) => return,
        };
        text.truncate(start);
        text.push_str(&stemmed);
        return;
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.is_empty() {
            cache.resize_with(SLOTS, || None);
        }
        let Some(word) = text.get(start..) else {
            return;
        };
        let slot = foldhash::fast::FixedState::with_seed(0).hash_one(word) as usize & (SLOTS - 1);
        let Some(entry) = cache.get_mut(slot) else {
            return;
        };
        if entry.as_ref().is_none_or(|(cached, _)| **cached != *word) {
            *entry = Some((word.into(), english_stemmer().stem(word).into()));
        }
        if let Some((_, stemmed)) = entry {
            text.truncate(start);
            text.push_str(stemmed);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `word` stemmed in place after a term already in the buffer, which
    /// must be left as it is.
    fn stem(word: &str) -> String {
        let mut text = format!("before{word}");
        stem_in_place(&mut text, "before".len());
        let stemmed = text.strip_prefix("before").map(str::to_string);
        stemmed.unwrap_or_else(|| panic!("the term before {word} was changed: {text}"))
    }

    proptest! {
        /// Through the cache or not, a word stems as the stemmer stems
        /// it: words from a small alphabet repeat and share slots (so
        /// hits, misses and evictions all happen), and some are longer
        /// than the cache takes.
        #[test]
        fn cached_stems_are_the_stemmers(words in prop::collection::vec("[a-z]{1,30}|(run|runn|ing|ed|s|ies|ation|al){1,5}", 1..400)) {
            for word in &words {
                prop_assert_eq!(stem(word), english_stemmer().stem(word).into_owned(), "{}", word);
            }
            // And again, now that the cache holds them.
            for word in words.iter().rev() {
                prop_assert_eq!(stem(word), english_stemmer().stem(word).into_owned(), "{}", word);
            }
        }
    }

    #[test]
    fn locomo_words_stem_as_the_stemmer_stems_them() {
        for turn in crate::text::tests::locomo_turns() {
            for word in turn.split(|c: char| !c.is_ascii_alphabetic()) {
                let word = word.to_ascii_lowercase();
                if !word.is_empty() {
                    assert_eq!(stem(&word), english_stemmer().stem(&word), "{word}");
                }
            }
        }
    }

    #[test]
    fn a_word_evicted_from_its_slot_stems_the_same() {
        // More distinct words than slots: every slot is overwritten.
        let words: Vec<String> = (0..3 * SLOTS).map(|i| format!("walking{}", "s".repeat(i % 7)) + &"x".repeat(i / 7 % 9) + ["ing", "ed", "ness", ""][i % 4]).collect();
        for round in 0..2 {
            for word in &words {
                assert_eq!(stem(word), english_stemmer().stem(word), "{word} in round {round}");
            }
        }
    }
}
