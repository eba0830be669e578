//! A WordPiece vocabulary as one sorted buffer.
//!
//! Why: as a `HashMap<String, u32>`, BERT's 30,522 tokens are each a heap
//! allocation of their own beside a hash table of twice as many slots, and
//! in the model module's linear memory that stays for the module's life.
//! Sorted, the tokens are one string and one array of their ends and ids;
//! a lookup is a binary search (figures: `docs/speed.md`, "Heap per
//! memory").

use std::cmp::Ordering;
use std::collections::HashMap;

/// Tokens and their ids, sorted by the tokens' bytes.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// Every token, one after the other, in sorted order.
    text: String,
    /// Per token, in the same order: the end of its text in `text`, and its
    /// id.
    entries: Vec<(usize, u32)>,
}

impl Vocabulary {
    /// The vocabulary of `tokens` (token → id).
    pub fn new(tokens: HashMap<String, u32>) -> Vocabulary {
        let mut tokens: Vec<(String, u32)> = tokens.into_iter().collect();
        tokens.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        let mut text = String::with_capacity(tokens.iter().map(|(token, _)| token.len()).sum());
        let entries = tokens
            .into_iter()
            .map(|(token, id)| {
                text.push_str(&token);
                (text.len(), id)
            })
            .collect();
        Vocabulary { text, entries }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The id of `token`, if it is in the vocabulary.
    pub fn get(&self, token: &str) -> Option<u32> {
        let (mut low, mut high) = (0, self.entries.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let start = match middle.checked_sub(1) {
                Some(before) => self.entries[before].0,
                None => 0,
            };
            let (end, id) = self.entries[middle];
            match self.text[start..end].cmp(token) {
                Ordering::Less => low = middle + 1,
                Ordering::Greater => high = middle,
                Ordering::Equal => return Some(id),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtide_testkit::rng::Rng;

    #[test]
    fn every_token_and_only_they_are_found() {
        let mut rng = Rng(17);
        // Short tokens over a small alphabet, so that many share prefixes
        // and many strings looked up are missing; multi-byte characters
        // and the continuing-subword prefix among them.
        let alphabet = ["a", "b", "é", "#", "z"];
        let random_token = |rng: &mut Rng| -> String {
            let len = 1 + (rng.next_u64() % 4) as usize;
            (0..len)
                .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize])
                .collect()
        };
        let mut tokens = HashMap::new();
        for id in 0..300 {
            tokens.insert(random_token(&mut rng), id);
        }
        let vocabulary = Vocabulary::new(tokens.clone());
        assert_eq!(vocabulary.len(), tokens.len());
        for (token, &id) in &tokens {
            assert_eq!(vocabulary.get(token), Some(id), "{token}");
        }
        for _ in 0..2000 {
            let probe = random_token(&mut rng);
            assert_eq!(
                vocabulary.get(&probe),
                tokens.get(&probe).copied(),
                "{probe}"
            );
        }
        assert_eq!(vocabulary.get(""), None);
        assert_eq!(vocabulary.get("aaaaa"), None);
    }

    #[test]
    fn an_empty_vocabulary_finds_nothing() {
        let vocabulary = Vocabulary::new(HashMap::new());
        assert_eq!(vocabulary.len(), 0);
        assert_eq!(vocabulary.get("a"), None);
        assert_eq!(vocabulary.get(""), None);
    }
}
