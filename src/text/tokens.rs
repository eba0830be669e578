//! Counting prompt tokens: the [`TokenCounter`] that budgets take, and the
//! [`EstimatedTokens`] used until a real tokenizer is loaded.

/// Counts prompt tokens.
pub trait TokenCounter {
    /// Tokens `text` occupies.
    fn count(&self, text: &str) -> usize;
    /// True when counts are estimates rather than the model's tokenizer.
    fn is_estimate(&self) -> bool;
}

/// The documented estimate used until a real tokenizer is loaded.
///
/// Tokens of a text are the sum of:
/// - each maximal run of ASCII letters and digits: `ceil(len / 4)`;
/// - each `\n`: 1;
/// - each other whitespace character: 0;
/// - each other character (ASCII punctuation, any non-ASCII character): 1.
///
/// It is meant to count high against BERT WordPiece and BPE tokenizers on
/// natural language (common words are one token there, punctuation and CJK
/// characters are split out), so a budget met with the estimate still holds
/// under the real tokenizer. Rare letter sequences (hashes, base64) can take
/// more real tokens than estimated. The count is additive over pieces split
/// right after a `\n`, which [`crate::inject::render`] relies on.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimatedTokens;

impl TokenCounter for EstimatedTokens {
    fn count(&self, text: &str) -> usize {
        let mut tokens = 0;
        let mut run: usize = 0;
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                run += 1;
                continue;
            }
            tokens += run.div_ceil(4);
            run = 0;
            if c == '\n' || !c.is_whitespace() {
                tokens += 1;
            }
        }
        tokens + run.div_ceil(4)
    }

    fn is_estimate(&self) -> bool {
        true
    }
}

/// Token counters for the tests of the modules that count tokens.
#[cfg(test)]
pub(crate) mod test_counters {
    use super::TokenCounter;

    /// One token per character, line breaks included: additive like the
    /// estimate, but a different weighting.
    pub(crate) struct PerChar;

    impl TokenCounter for PerChar {
        fn count(&self, text: &str) -> usize {
            text.chars().count()
        }
        fn is_estimate(&self) -> bool {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_matches_hand_counts() {
        let cases = [
            ("", 0),
            ("   \t ", 0),
            ("abcd", 1),
            ("abcde", 2),
            ("hello world", 4),
            ("I drink coffee.", 6),
            ("a\nb", 3),
            ("2024-05-08", 5),
            ("[memory:abc]", 6),
            ("café", 2),
            ("東京タワー🗼", 6),
            ("don't", 3),
        ];
        for (text, expected) in cases {
            assert_eq!(EstimatedTokens.count(text), expected, "{text:?}");
        }
        assert!(EstimatedTokens.is_estimate());
    }
}
