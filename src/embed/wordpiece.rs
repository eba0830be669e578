//! BERT WordPiece tokenization, compatible with Hugging Face `tokenizers`.
//!
//! [`WordPiece`] reads a `tokenizer.json` whose pipeline is the classic BERT
//! one (`BertNormalizer`, `BertPreTokenizer`, a `WordPiece` model and a
//! `[CLS] … [SEP]` template) and reproduces the token ids Hugging Face
//! `tokenizers` computes for it:
//!
//! 1. literal added tokens (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]`) are
//!    cut out of the raw text and become their own ids;
//! 2. the rest is normalized: control characters dropped, whitespace turned
//!    into spaces, CJK ideographs padded with spaces, accents stripped
//!    (NFD without nonspacing marks), lowercased;
//! 3. split on whitespace and around every punctuation character;
//! 4. each word becomes the greedy longest-match-first sequence of vocabulary
//!    pieces (`##` marks a continuation), or `[UNK]` when none exists or the
//!    word is longer than `max_input_chars_per_word`.
//!
//! The character classes are those of the Unicode 8.0 tables `tokenizers`
//! uses (through the `unicode_categories` crate), not the newer ones of
//! `std`, so that every code point is treated exactly as the reference does.

use std::cmp::{Ordering, Reverse};
use std::collections::HashMap;

use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;

use super::vocabulary::Vocabulary;
use crate::Error;

/// A BERT WordPiece tokenizer loaded from a Hugging Face `tokenizer.json`.
#[derive(Debug, Clone)]
pub struct WordPiece {
    vocab: Vocabulary,
    unk_id: u32,
    cls_id: u32,
    sep_id: u32,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    normalizer: BertNormalizer,
    /// Literal tokens cut out of the raw text, longest first.
    added_tokens: Vec<(String, u32)>,
}

/// The `BertNormalizer` settings, with `strip_accents` already resolved.
#[derive(Debug, Clone, Copy)]
struct BertNormalizer {
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

impl WordPiece {
    /// Parses a Hugging Face `tokenizer.json` with a BERT WordPiece pipeline.
    ///
    /// The file's padding and truncation settings are ignored (see
    /// [`WordPiece::encode`]). Fails with [`Error::InvalidInput`] when the
    /// JSON is malformed, uses another normalizer, pre-tokenizer, model or
    /// post-processor, or refers to ids outside the vocabulary.
    pub fn from_tokenizer_json(json: &str) -> Result<WordPiece, Error> {
        let file: TokenizerFile = serde_json::from_str(json).map_err(|e| invalid(e.to_string()))?;
        let ModelSection::WordPiece {
            vocab,
            unk_token,
            continuing_subword_prefix,
            max_input_chars_per_word,
        } = file.model;
        let size = vocab.len();
        if let Some((token, id)) = vocab.iter().find(|(_, &id)| id as usize >= size) {
            return Err(invalid(format!(
                "vocabulary id {id} of `{token}` is not below the vocabulary size {size}"
            )));
        }
        let vocab = Vocabulary::new(vocab);
        let id_of = |token: &str| {
            vocab
                .get(token)
                .ok_or_else(|| invalid(format!("`{token}` is not in the vocabulary")))
        };
        let unk_id = id_of(&unk_token)?;
        let PostProcessorSection::TemplateProcessing {
            single,
            special_tokens,
        } = file.post_processor;
        let template_id = |name: &str| match special_tokens.get(name) {
            Some(SpecialTokenSection { ids }) if ids.len() == 1 => Ok(ids[0]),
            _ => Err(invalid(format!(
                "template token `{name}` must map to exactly one id"
            ))),
        };
        let (cls_id, sep_id) = match single.as_slice() {
            [TemplatePiece::SpecialToken { id: first }, TemplatePiece::Sequence { id: sequence }, TemplatePiece::SpecialToken { id: last }]
                if sequence == "A" =>
            {
                (template_id(first)?, template_id(last)?)
            }
            _ => {
                return Err(invalid(
                    "the single-sequence template must be `special A special`".to_string(),
                ))
            }
        };
        let mut added_tokens = Vec::with_capacity(file.added_tokens.len());
        for token in file.added_tokens {
            if token.content.is_empty() {
                return Err(invalid("an added token is empty".to_string()));
            }
            if token.single_word || token.lstrip || token.rstrip || token.normalized {
                return Err(invalid(format!(
                    "added token `{}` uses single_word, lstrip, rstrip or normalized, which are not supported",
                    token.content
                )));
            }
            added_tokens.push((token.content, token.id));
        }
        added_tokens.sort_by_key(|(token, _)| Reverse(token.len()));
        if let Some(id) = [cls_id, sep_id]
            .into_iter()
            .chain(added_tokens.iter().map(|(_, id)| *id))
            .find(|&id| id as usize >= size)
        {
            return Err(invalid(format!(
                "special token id {id} is not below the vocabulary size {size}"
            )));
        }
        let NormalizerSection::BertNormalizer {
            clean_text,
            handle_chinese_chars,
            strip_accents,
            lowercase,
        } = file.normalizer;
        let PreTokenizerSection::BertPreTokenizer = file.pre_tokenizer;
        Ok(WordPiece {
            vocab,
            unk_id,
            cls_id,
            sep_id,
            continuing_subword_prefix,
            max_input_chars_per_word,
            normalizer: BertNormalizer {
                clean_text,
                handle_chinese_chars,
                strip_accents: strip_accents.unwrap_or(lowercase),
                lowercase,
            },
            added_tokens,
        })
    }

    /// Token ids of `text` framed as `[CLS] … [SEP]`, at most `max_tokens` in
    /// all: the text's tokens are cut at the end so that `[SEP]` stays last.
    /// The result always holds `[CLS]` and `[SEP]`, even if `max_tokens < 2`.
    /// Every id is below [`WordPiece::vocab_size`].
    pub fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let content_limit = max_tokens.saturating_sub(2);
        let mut ids = Vec::with_capacity(content_limit.min(text.len()) + 2);
        ids.push(self.cls_id);
        self.tokenize_into(text, &mut ids, content_limit + 1);
        ids.push(self.sep_id);
        ids
    }

    /// Number of tokens of `text`, without `[CLS]`/`[SEP]` and without
    /// truncation (for prompt budgets).
    pub fn count_tokens(&self, text: &str) -> usize {
        let mut ids = Vec::new();
        self.tokenize_into(text, &mut ids, usize::MAX);
        ids.len()
    }

    /// Number of entries of the vocabulary; every id is below it.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// Appends the ids of `text` to `out` until `out` holds `max_len` ids.
    fn tokenize_into(&self, text: &str, out: &mut Vec<u32>, max_len: usize) {
        let mut rest = text;
        while !rest.is_empty() && out.len() < max_len {
            match self.find_added_token(rest) {
                Some((start, token, id)) => {
                    self.tokenize_segment(&rest[..start], out, max_len);
                    out.push(id);
                    rest = &rest[start + token.len()..];
                }
                None => {
                    self.tokenize_segment(rest, out, max_len);
                    rest = "";
                }
            }
        }
        out.truncate(max_len);
    }

    /// The leftmost literal added token in `text` (the longest one among
    /// those starting there): its byte offset, content and id.
    fn find_added_token<'a>(&'a self, text: &str) -> Option<(usize, &'a str, u32)> {
        text.char_indices().find_map(|(start, _)| {
            self.added_tokens
                .iter()
                .find(|(token, _)| text[start..].starts_with(token.as_str()))
                .map(|(token, id)| (start, token.as_str(), *id))
        })
    }

    /// Normalizes, pre-tokenizes and word-pieces text free of added tokens.
    fn tokenize_segment(&self, segment: &str, out: &mut Vec<u32>, max_len: usize) {
        let normalized = self.normalizer.normalize(segment);
        let mut word_start = None;
        for (index, c) in normalized.char_indices() {
            if c.is_whitespace() || is_punctuation(c) {
                if let Some(start) = word_start.take() {
                    self.push_word(&normalized[start..index], out);
                }
                if !c.is_whitespace() {
                    self.push_word(&normalized[index..index + c.len_utf8()], out);
                }
                if out.len() >= max_len {
                    return;
                }
            } else if word_start.is_none() {
                word_start = Some(index);
            }
        }
        if let Some(start) = word_start {
            self.push_word(&normalized[start..], out);
        }
    }

    /// Appends the greedy longest-match-first pieces of `word`, or `[UNK]`.
    fn push_word(&self, word: &str, out: &mut Vec<u32>) {
        if word.chars().count() > self.max_input_chars_per_word {
            out.push(self.unk_id);
            return;
        }
        let first_piece = out.len();
        let mut candidate =
            String::with_capacity(word.len() + self.continuing_subword_prefix.len());
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let matched = loop {
                candidate.clear();
                if start > 0 {
                    candidate.push_str(&self.continuing_subword_prefix);
                }
                candidate.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(&candidate) {
                    break Some(id);
                }
                match word[start..end].char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            match matched {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(first_piece);
                    out.push(self.unk_id);
                    return;
                }
            }
        }
    }
}

impl BertNormalizer {
    /// Applies the configured steps in Hugging Face's order: clean text,
    /// pad CJK ideographs, strip accents, lowercase.
    fn normalize(&self, text: &str) -> String {
        let mut cleaned = String::with_capacity(text.len());
        for c in text.chars() {
            let c = if self.clean_text {
                if c == '\0' || c == '\u{FFFD}' || is_control(c) {
                    continue;
                }
                if c.is_whitespace() {
                    ' '
                } else {
                    c
                }
            } else {
                c
            };
            if self.handle_chinese_chars && is_chinese_char(c) {
                cleaned.push(' ');
                cleaned.push(c);
                cleaned.push(' ');
            } else {
                cleaned.push(c);
            }
        }
        let stripped = if self.strip_accents {
            cleaned
                .nfd()
                .filter(|&c| !in_table(NONSPACING_MARK, c))
                .collect()
        } else {
            cleaned
        };
        if self.lowercase {
            stripped.chars().flat_map(char::to_lowercase).collect()
        } else {
            stripped
        }
    }
}

/// Hugging Face's `is_control`: categories Cc, Cf and Co except `\t`, `\n`,
/// `\r` (which count as whitespace).
fn is_control(c: char) -> bool {
    in_table(CONTROL, c)
}

/// Hugging Face's BERT punctuation: ASCII 33–47, 58–64, 91–96, 123–126 and
/// the categories Pc, Pd, Ps, Pe, Pi, Pf, Po.
fn is_punctuation(c: char) -> bool {
    in_table(PUNCTUATION, c)
}

/// The CJK ideograph blocks of Hugging Face's `is_chinese_char`.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// Whether `c` falls in one of the sorted, disjoint inclusive `ranges`.
fn in_table(ranges: &[(u32, u32)], c: char) -> bool {
    let code = c as u32;
    ranges
        .binary_search_by(|&(low, high)| {
            if high < code {
                Ordering::Less
            } else if low > code {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

fn invalid(message: String) -> Error {
    Error::invalid(format!("tokenizer.json: {message}"))
}

/// The parts of `tokenizer.json` this tokenizer reads.
#[derive(Deserialize)]
struct TokenizerFile {
    model: ModelSection,
    normalizer: NormalizerSection,
    pre_tokenizer: PreTokenizerSection,
    post_processor: PostProcessorSection,
    #[serde(default)]
    added_tokens: Vec<AddedTokenSection>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum ModelSection {
    WordPiece {
        vocab: HashMap<String, u32>,
        unk_token: String,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum NormalizerSection {
    BertNormalizer {
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: Option<bool>,
        lowercase: bool,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum PreTokenizerSection {
    BertPreTokenizer,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum PostProcessorSection {
    TemplateProcessing {
        single: Vec<TemplatePiece>,
        special_tokens: HashMap<String, SpecialTokenSection>,
    },
}

#[derive(Deserialize)]
enum TemplatePiece {
    SpecialToken { id: String },
    Sequence { id: String },
}

#[derive(Deserialize)]
struct SpecialTokenSection {
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct AddedTokenSection {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

// The character tables below were generated by probing every code point with
// the `BertNormalizer` and `BertPreTokenizer` of `tokenizers` 0.23.3. They are
// the Unicode 8.0 categories of the `unicode_categories` crate it uses.

/// Cc, Cf and Co, without `\t`, `\n`, `\r`.
#[rustfmt::skip]
const CONTROL: &[(u32, u32)] = &[
    (0x0000, 0x0008), (0x000B, 0x000C), (0x000E, 0x001F), (0x007F, 0x009F),
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xE000, 0xF8FF), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
];

/// ASCII punctuation and the P* categories.
#[rustfmt::skip]
const PUNCTUATION: &[(u32, u32)] = &[
    (0x0021, 0x002F), (0x003A, 0x0040), (0x005B, 0x0060), (0x007B, 0x007E),
    (0x00A1, 0x00A1), (0x00A7, 0x00A7), (0x00AB, 0x00AB), (0x00B6, 0x00B7),
    (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x037E, 0x037E), (0x0387, 0x0387),
    (0x055A, 0x055F), (0x0589, 0x058A), (0x05BE, 0x05BE), (0x05C0, 0x05C0),
    (0x05C3, 0x05C3), (0x05C6, 0x05C6), (0x05F3, 0x05F4), (0x0609, 0x060A),
    (0x060C, 0x060D), (0x061B, 0x061B), (0x061E, 0x061F), (0x066A, 0x066D),
    (0x06D4, 0x06D4), (0x0700, 0x070D), (0x07F7, 0x07F9), (0x0830, 0x083E),
    (0x085E, 0x085E), (0x0964, 0x0965), (0x0970, 0x0970), (0x0AF0, 0x0AF0),
    (0x0DF4, 0x0DF4), (0x0E4F, 0x0E4F), (0x0E5A, 0x0E5B), (0x0F04, 0x0F12),
    (0x0F14, 0x0F14), (0x0F3A, 0x0F3D), (0x0F85, 0x0F85), (0x0FD0, 0x0FD4),
    (0x0FD9, 0x0FDA), (0x104A, 0x104F), (0x10FB, 0x10FB), (0x1360, 0x1368),
    (0x1400, 0x1400), (0x166D, 0x166E), (0x169B, 0x169C), (0x16EB, 0x16ED),
    (0x1735, 0x1736), (0x17D4, 0x17D6), (0x17D8, 0x17DA), (0x1800, 0x180A),
    (0x1944, 0x1945), (0x1A1E, 0x1A1F), (0x1AA0, 0x1AA6), (0x1AA8, 0x1AAD),
    (0x1B5A, 0x1B60), (0x1BFC, 0x1BFF), (0x1C3B, 0x1C3F), (0x1C7E, 0x1C7F),
    (0x1CC0, 0x1CC7), (0x1CD3, 0x1CD3), (0x2010, 0x2027), (0x2030, 0x2043),
    (0x2045, 0x2051), (0x2053, 0x205E), (0x207D, 0x207E), (0x208D, 0x208E),
    (0x2308, 0x230B), (0x2329, 0x232A), (0x2768, 0x2775), (0x27C5, 0x27C6),
    (0x27E6, 0x27EF), (0x2983, 0x2998), (0x29D8, 0x29DB), (0x29FC, 0x29FD),
    (0x2CF9, 0x2CFC), (0x2CFE, 0x2CFF), (0x2D70, 0x2D70), (0x2E00, 0x2E2E),
    (0x2E30, 0x2E42), (0x3001, 0x3003), (0x3008, 0x3011), (0x3014, 0x301F),
    (0x3030, 0x3030), (0x303D, 0x303D), (0x30A0, 0x30A0), (0x30FB, 0x30FB),
    (0xA4FE, 0xA4FF), (0xA60D, 0xA60F), (0xA673, 0xA673), (0xA67E, 0xA67E),
    (0xA6F2, 0xA6F7), (0xA874, 0xA877), (0xA8CE, 0xA8CF), (0xA8F8, 0xA8FA),
    (0xA8FC, 0xA8FC), (0xA92E, 0xA92F), (0xA95F, 0xA95F), (0xA9C1, 0xA9CD),
    (0xA9DE, 0xA9DF), (0xAA5C, 0xAA5F), (0xAADE, 0xAADF), (0xAAF0, 0xAAF1),
    (0xABEB, 0xABEB), (0xFD3E, 0xFD3F), (0xFE10, 0xFE19), (0xFE30, 0xFE52),
    (0xFE54, 0xFE61), (0xFE63, 0xFE63), (0xFE68, 0xFE68), (0xFE6A, 0xFE6B),
    (0xFF01, 0xFF03), (0xFF05, 0xFF0A), (0xFF0C, 0xFF0F), (0xFF1A, 0xFF1B),
    (0xFF1F, 0xFF20), (0xFF3B, 0xFF3D), (0xFF3F, 0xFF3F), (0xFF5B, 0xFF5B),
    (0xFF5D, 0xFF5D), (0xFF5F, 0xFF65), (0x10100, 0x10102), (0x1039F, 0x1039F),
    (0x103D0, 0x103D0), (0x1056F, 0x1056F), (0x10857, 0x10857), (0x1091F, 0x1091F),
    (0x1093F, 0x1093F), (0x10A50, 0x10A58), (0x10A7F, 0x10A7F), (0x10AF0, 0x10AF6),
    (0x10B39, 0x10B3F), (0x10B99, 0x10B9C), (0x11047, 0x1104D), (0x110BB, 0x110BC),
    (0x110BE, 0x110C1), (0x11140, 0x11143), (0x11174, 0x11175), (0x111C5, 0x111C9),
    (0x111CD, 0x111CD), (0x111DB, 0x111DB), (0x111DD, 0x111DF), (0x11238, 0x1123D),
    (0x112A9, 0x112A9), (0x114C6, 0x114C6), (0x115C1, 0x115D7), (0x11641, 0x11643),
    (0x1173C, 0x1173E), (0x12470, 0x12474), (0x16A6E, 0x16A6F), (0x16AF5, 0x16AF5),
    (0x16B37, 0x16B3B), (0x16B44, 0x16B44), (0x1BC9F, 0x1BC9F), (0x1DA87, 0x1DA8B),
];

/// Mn.
#[rustfmt::skip]
const NONSPACING_MARK: &[(u32, u32)] = &[
    (0x0300, 0x033F), (0x0342, 0x0342), (0x0345, 0x036F), (0x0483, 0x0487),
    (0x0591, 0x05BD), (0x05BF, 0x05BF), (0x05C1, 0x05C2), (0x05C4, 0x05C5),
    (0x05C7, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670),
    (0x06D6, 0x06DC), (0x06DF, 0x06E4), (0x06E7, 0x06E8), (0x06EA, 0x06ED),
    (0x0711, 0x0711), (0x0730, 0x074A), (0x07A6, 0x07B0), (0x07EB, 0x07F3),
    (0x0816, 0x0819), (0x081B, 0x0823), (0x0825, 0x0827), (0x0829, 0x082D),
    (0x0859, 0x085B), (0x08E3, 0x0902), (0x093A, 0x093A), (0x093C, 0x093C),
    (0x0941, 0x0948), (0x094D, 0x094D), (0x0951, 0x0957), (0x0962, 0x0963),
    (0x0981, 0x0981), (0x09BC, 0x09BC), (0x09C1, 0x09C4), (0x09CD, 0x09CD),
    (0x09E2, 0x09E3), (0x0A01, 0x0A02), (0x0A3C, 0x0A3C), (0x0A41, 0x0A42),
    (0x0A47, 0x0A48), (0x0A4B, 0x0A4D), (0x0A51, 0x0A51), (0x0A70, 0x0A71),
    (0x0A75, 0x0A75), (0x0A81, 0x0A82), (0x0ABC, 0x0ABC), (0x0AC1, 0x0AC5),
    (0x0AC7, 0x0AC8), (0x0ACD, 0x0ACD), (0x0AE2, 0x0AE3), (0x0B01, 0x0B01),
    (0x0B3C, 0x0B3C), (0x0B3F, 0x0B3F), (0x0B41, 0x0B44), (0x0B4D, 0x0B4D),
    (0x0B56, 0x0B56), (0x0B62, 0x0B63), (0x0B82, 0x0B82), (0x0BC0, 0x0BC0),
    (0x0BCD, 0x0BCD), (0x0C00, 0x0C00), (0x0C3E, 0x0C40), (0x0C46, 0x0C47),
    (0x0C4A, 0x0C4D), (0x0C55, 0x0C56), (0x0C62, 0x0C63), (0x0C81, 0x0C81),
    (0x0CBC, 0x0CBC), (0x0CBF, 0x0CBF), (0x0CC6, 0x0CC6), (0x0CCC, 0x0CCD),
    (0x0CE2, 0x0CE3), (0x0D01, 0x0D01), (0x0D41, 0x0D44), (0x0D4D, 0x0D4D),
    (0x0D62, 0x0D63), (0x0DCA, 0x0DCA), (0x0DD2, 0x0DD4), (0x0DD6, 0x0DD6),
    (0x0E31, 0x0E31), (0x0E34, 0x0E3A), (0x0E47, 0x0E4E), (0x0EB1, 0x0EB1),
    (0x0EB4, 0x0EB9), (0x0EBB, 0x0EBC), (0x0EC8, 0x0ECD), (0x0F18, 0x0F19),
    (0x0F35, 0x0F35), (0x0F37, 0x0F37), (0x0F39, 0x0F39), (0x0F71, 0x0F72),
    (0x0F74, 0x0F74), (0x0F77, 0x0F77), (0x0F79, 0x0F7E), (0x0F80, 0x0F80),
    (0x0F82, 0x0F84), (0x0F86, 0x0F87), (0x0F8D, 0x0F92), (0x0F94, 0x0F97),
    (0x0F99, 0x0F9C), (0x0F9E, 0x0FA1), (0x0FA3, 0x0FA6), (0x0FA8, 0x0FAB),
    (0x0FAD, 0x0FB8), (0x0FBA, 0x0FBC), (0x0FC6, 0x0FC6), (0x102D, 0x1030),
    (0x1032, 0x1037), (0x1039, 0x103A), (0x103D, 0x103E), (0x1058, 0x1059),
    (0x105E, 0x1060), (0x1071, 0x1074), (0x1082, 0x1082), (0x1085, 0x1086),
    (0x108D, 0x108D), (0x109D, 0x109D), (0x135D, 0x135F), (0x1712, 0x1714),
    (0x1732, 0x1734), (0x1752, 0x1753), (0x1772, 0x1773), (0x17B4, 0x17B5),
    (0x17B7, 0x17BD), (0x17C6, 0x17C6), (0x17C9, 0x17D3), (0x17DD, 0x17DD),
    (0x180B, 0x180D), (0x18A9, 0x18A9), (0x1920, 0x1922), (0x1927, 0x1928),
    (0x1932, 0x1932), (0x1939, 0x193B), (0x1A17, 0x1A18), (0x1A1B, 0x1A1B),
    (0x1A56, 0x1A56), (0x1A58, 0x1A5E), (0x1A60, 0x1A60), (0x1A62, 0x1A62),
    (0x1A65, 0x1A6C), (0x1A73, 0x1A7C), (0x1A7F, 0x1A7F), (0x1AB0, 0x1ABD),
    (0x1B00, 0x1B03), (0x1B34, 0x1B34), (0x1B36, 0x1B3A), (0x1B3C, 0x1B3C),
    (0x1B42, 0x1B42), (0x1B6B, 0x1B73), (0x1B80, 0x1B81), (0x1BA2, 0x1BA5),
    (0x1BA8, 0x1BA9), (0x1BAB, 0x1BAD), (0x1BE6, 0x1BE6), (0x1BE8, 0x1BE9),
    (0x1BED, 0x1BED), (0x1BEF, 0x1BF1), (0x1C2C, 0x1C33), (0x1C36, 0x1C37),
    (0x1CD0, 0x1CD2), (0x1CD4, 0x1CE0), (0x1CE2, 0x1CE8), (0x1CED, 0x1CED),
    (0x1CF4, 0x1CF4), (0x1CF8, 0x1CF9), (0x1DC0, 0x1DF5), (0x1DFC, 0x1DFF),
    (0x20D0, 0x20DC), (0x20E1, 0x20E1), (0x20E5, 0x20F0), (0x2CEF, 0x2CF1),
    (0x2D7F, 0x2D7F), (0x2DE0, 0x2DFF), (0x302A, 0x302D), (0x3099, 0x309A),
    (0xA66F, 0xA66F), (0xA674, 0xA67D), (0xA69E, 0xA69F), (0xA6F0, 0xA6F1),
    (0xA802, 0xA802), (0xA806, 0xA806), (0xA80B, 0xA80B), (0xA825, 0xA826),
    (0xA8C4, 0xA8C4), (0xA8E0, 0xA8F1), (0xA926, 0xA92D), (0xA947, 0xA951),
    (0xA980, 0xA982), (0xA9B3, 0xA9B3), (0xA9B6, 0xA9B9), (0xA9BC, 0xA9BC),
    (0xA9E5, 0xA9E5), (0xAA29, 0xAA2E), (0xAA31, 0xAA32), (0xAA35, 0xAA36),
    (0xAA43, 0xAA43), (0xAA4C, 0xAA4C), (0xAA7C, 0xAA7C), (0xAAB0, 0xAAB0),
    (0xAAB2, 0xAAB4), (0xAAB7, 0xAAB8), (0xAABE, 0xAABF), (0xAAC1, 0xAAC1),
    (0xAAEC, 0xAAED), (0xAAF6, 0xAAF6), (0xABE5, 0xABE5), (0xABE8, 0xABE8),
    (0xABED, 0xABED), (0xFB1E, 0xFB1E), (0xFE00, 0xFE0F), (0xFE20, 0xFE2F),
    (0x101FD, 0x101FD), (0x102E0, 0x102E0), (0x10376, 0x1037A), (0x10A01, 0x10A03),
    (0x10A05, 0x10A06), (0x10A0C, 0x10A0F), (0x10A38, 0x10A3A), (0x10A3F, 0x10A3F),
    (0x10AE5, 0x10AE6), (0x11001, 0x11001), (0x11038, 0x11046), (0x1107F, 0x11081),
    (0x110B3, 0x110B6), (0x110B9, 0x110BA), (0x11100, 0x11102), (0x11127, 0x1112B),
    (0x1112D, 0x1112D), (0x11130, 0x11134), (0x11173, 0x11173), (0x11180, 0x11181),
    (0x111B6, 0x111BE), (0x111CA, 0x111CC), (0x1122F, 0x11231), (0x11234, 0x11234),
    (0x11236, 0x11237), (0x112DF, 0x112DF), (0x112E3, 0x112EA), (0x11300, 0x11301),
    (0x1133C, 0x1133C), (0x11340, 0x11340), (0x11366, 0x1136C), (0x11370, 0x11374),
    (0x114B3, 0x114B8), (0x114BA, 0x114BA), (0x114BF, 0x114C0), (0x114C2, 0x114C3),
    (0x115B2, 0x115B5), (0x115BC, 0x115BD), (0x115BF, 0x115C0), (0x115DC, 0x115DD),
    (0x11633, 0x1163A), (0x1163D, 0x1163D), (0x1163F, 0x11640), (0x116AB, 0x116AB),
    (0x116AD, 0x116AD), (0x116B0, 0x116B5), (0x116B7, 0x116B7), (0x1171D, 0x1171F),
    (0x11722, 0x11725), (0x11727, 0x1172B), (0x16AF0, 0x16AF4), (0x16B30, 0x16B36),
    (0x16F8F, 0x16F92), (0x1BC9D, 0x1BC9E), (0x1D167, 0x1D169), (0x1D17B, 0x1D182),
    (0x1D185, 0x1D18B), (0x1D1AA, 0x1D1AD), (0x1D242, 0x1D244), (0x1DA00, 0x1DA36),
    (0x1DA3B, 0x1DA6C), (0x1DA75, 0x1DA75), (0x1DA84, 0x1DA84), (0x1DA9B, 0x1DA9F),
    (0x1DAA1, 0x1DAAF), (0x1E8D0, 0x1E8D6), (0xE0100, 0xE01EF),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const VOCAB: &[&str] = &[
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "a",
        "##a",
        "un",
        "##aff",
        "##able",
        "aff",
        "cafe",
        "naive",
        "hello",
        "world",
        ",",
        "!",
        "«",
        "»",
        "東",
        "京",
        "zerowidth",
        "tab",
        "new",
        "line",
        "i",
        "x",
        "##x",
        "[",
        "]",
        "sep",
        "σ",
        "οδοσ",
    ];

    fn tokenizer_json() -> Value {
        let vocab: serde_json::Map<String, Value> = VOCAB
            .iter()
            .enumerate()
            .map(|(id, token)| (token.to_string(), json!(id)))
            .collect();
        let added: Vec<Value> = VOCAB[..5]
            .iter()
            .enumerate()
            .map(|(id, token)| json!({"id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
            .collect();
        json!({
            "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}
            },
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
        })
    }

    fn tiny() -> WordPiece {
        WordPiece::from_tokenizer_json(&tokenizer_json().to_string()).unwrap()
    }

    /// The pieces of `text` as strings, without `[CLS]`/`[SEP]`.
    fn pieces(text: &str) -> Vec<&'static str> {
        let ids = tiny().encode(text, usize::MAX);
        assert_eq!((ids[0], ids[ids.len() - 1]), (2, 3));
        ids[1..ids.len() - 1]
            .iter()
            .map(|&id| VOCAB[id as usize])
            .collect()
    }

    #[test]
    fn strips_accents_and_lowercases() {
        assert_eq!(pieces("Café NAÏVE"), ["cafe", "naive"]);
        assert_eq!(pieces("cafe\u{301}"), ["cafe"]);
        assert_eq!(pieces("İ"), ["i"]);
        // Per-character lowercasing: a final capital sigma becomes σ, not ς.
        assert_eq!(pieces("ΟΔΟΣ Σ"), ["οδοσ", "σ"]);
    }

    #[test]
    fn pads_cjk_ideographs() {
        assert_eq!(pieces("東京"), ["東", "京"]);
        assert_eq!(pieces("a東a"), ["a", "東", "a"]);
    }

    #[test]
    fn splits_on_whitespace_and_every_punctuation_char() {
        assert_eq!(pieces("hello,world!!"), ["hello", ",", "world", "!", "!"]);
        assert_eq!(pieces("«hello»"), ["«", "hello", "»"]);
        assert_eq!(pieces("  hello\u{3000}world\u{a0} "), ["hello", "world"]);
    }

    #[test]
    fn cleans_control_characters() {
        assert_eq!(pieces("zero\u{200b}width\u{0}\u{fffd}"), ["zerowidth"]);
        assert_eq!(pieces("tab\tnew\r\nline\u{7}"), ["tab", "new", "line"]);
    }

    #[test]
    fn greedy_longest_match_first() {
        assert_eq!(pieces("unaffable"), ["un", "##aff", "##able"]);
        assert_eq!(pieces("affx unaffy"), ["aff", "##x", "[UNK]"]);
        assert_eq!(pieces("hellos"), ["[UNK]"]);
    }

    #[test]
    fn over_long_words_are_unknown() {
        assert_eq!(
            pieces(&"a".repeat(100)),
            vec!["a"; 1]
                .into_iter()
                .chain(vec!["##a"; 99])
                .collect::<Vec<_>>()
        );
        assert_eq!(pieces(&"a".repeat(101)), ["[UNK]"]);
        // The limit counts characters of the normalized word, not bytes.
        assert_eq!(tiny().count_tokens(&"東".repeat(101)), 101);
    }

    #[test]
    fn literal_special_tokens_are_single_tokens() {
        assert_eq!(pieces("a [SEP] x"), ["a", "[SEP]", "x"]);
        assert_eq!(
            pieces("a[MASK]x[CLS][PAD]"),
            ["a", "[MASK]", "x", "[CLS]", "[PAD]"]
        );
        // Only the exact raw spelling is special.
        assert_eq!(
            pieces("[sep] [SE P]"),
            ["[", "sep", "]", "[", "[UNK]", "[UNK]", "]"]
        );
    }

    #[test]
    fn truncation_keeps_sep_last() {
        let wordpiece = tiny();
        assert_eq!(wordpiece.encode("a a a a", 4), [2, 5, 5, 3]);
        assert_eq!(wordpiece.encode("unaffable a", 4), [2, 7, 8, 3]);
        assert_eq!(wordpiece.encode("a [SEP] a", 3), [2, 5, 3]);
        assert_eq!(wordpiece.encode("a a", 2), [2, 3]);
        assert_eq!(wordpiece.encode("a a", 0), [2, 3]);
        assert_eq!(wordpiece.encode("", 10), [2, 3]);
        assert_eq!(wordpiece.count_tokens("unaffable a [SEP]"), 5);
        assert_eq!(wordpiece.vocab_size(), VOCAB.len());
    }

    #[test]
    fn rejects_unsupported_or_inconsistent_files() {
        let reject = |edit: &dyn Fn(&mut Value)| {
            let mut file = tokenizer_json();
            edit(&mut file);
            let error = WordPiece::from_tokenizer_json(&file.to_string()).unwrap_err();
            assert_eq!(error.code(), "INVALID_INPUT", "{error}");
        };
        reject(&|file| file["normalizer"]["type"] = json!("NFC"));
        reject(&|file| file["pre_tokenizer"]["type"] = json!("Whitespace"));
        reject(&|file| file["model"]["type"] = json!("BPE"));
        reject(&|file| file["model"]["unk_token"] = json!("<unk>"));
        reject(&|file| file["model"]["vocab"]["sep"] = json!(VOCAB.len()));
        reject(&|file| file["added_tokens"][0]["id"] = json!(VOCAB.len()));
        reject(&|file| file["added_tokens"][1]["normalized"] = json!(true));
        reject(&|file| file["post_processor"]["special_tokens"]["[SEP]"]["ids"] = json!([3, 3]));
        reject(&|file| file["post_processor"]["single"] = json!([]));
        assert!(WordPiece::from_tokenizer_json("{").is_err());
    }

    #[test]
    fn character_tables_are_sorted_and_disjoint() {
        for table in [CONTROL, PUNCTUATION, NONSPACING_MARK] {
            assert!(table.iter().all(|(low, high)| low <= high));
            assert!(table.windows(2).all(|pair| pair[0].1 < pair[1].0));
        }
    }
}
