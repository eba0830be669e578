//! The lexical part of a segment (`docs/format.md`, section 2.2): for each
//! memory the segment holds that the lexical index holds (every memory not
//! soft-deleted), its distinct analysed terms and how often each occurs.
//! Opening a store feeds these counts to the BM25 index instead of
//! analysing the memories' texts again: no stored text is tokenized.
//!
//! The part is binary, made of unsigned LEB128 integers (`varint` below,
//! at most five bytes, at most `u32::MAX`):
//!
//! - the dictionary: a varint `T`, then `T` terms, each a varint byte
//!   length (1 to [`MAX_TERM_BYTES`]) and that many UTF-8 bytes, strictly
//!   ascending by bytes;
//! - the docs: a varint `D`, then `D` docs, each the varint index of its
//!   record in the segment (strictly ascending; the record is an
//!   `item/…`), a varint `K`, and `K` pairs of a term (a varint: the
//!   dictionary index for the first, the distance to the previous one,
//!   at least 1, after) and its frequency (a varint, at least 1).
//!
//! Every byte of the part must be used.

use std::sync::Arc;

use super::varint::{put_varint, Reader};
use crate::codec::CodecError;
use crate::fast_hash::FastMap;
use crate::index::bm25::TermCounts;

/// Longest term a part may hold: the analyser keeps words of at most 64
/// bytes and bigrams of two characters, far below this.
const MAX_TERM_BYTES: usize = 256;

/// A decoded lexical part: the docs' term counts, by record index.
#[derive(Debug, Clone, Default)]
pub(crate) struct LexicalPart {
    /// Each doc's record index and its terms.
    pub(crate) docs: Vec<(u32, TermCounts)>,
}

/// The lexical part of a segment whose records are `docs`' owners: each
/// doc is its record index and its distinct terms with their frequencies,
/// in any order, docs ascending by record index.
pub(crate) fn encode_lexical(docs: &[(u32, Vec<(&str, u32)>)]) -> Vec<u8> {
    // A segment's docs share most of their terms: each doc term is hashed
    // once, to the slot of its term (slots in the order terms are first
    // seen), then only the distinct terms are sorted by bytes, and a doc's
    // terms become dictionary indexes through their slots, sorted as
    // integers where they were not in byte order already (the terms of a
    // memory a merge rewrites come in the order of the index's ids).
    let total: usize = docs.iter().map(|(_, terms)| terms.len()).sum();
    let mut slots: FastMap<&str, u32> = FastMap::with_capacity_and_hasher(total / 2, Default::default());
    let mut distinct: Vec<(&str, u32)> = Vec::new();
    let mut doc_slots: Vec<u32> = Vec::with_capacity(total);
    for (_, terms) in docs {
        for &(term, _) in terms {
            let next = distinct.len() as u32;
            let slot = *slots.entry(term).or_insert_with(|| {
                distinct.push((term, next));
                next
            });
            doc_slots.push(slot);
        }
    }
    drop(slots);
    // Terms are distinct: ordering by term alone is the same.
    distinct.sort_unstable_by_key(|&(term, _)| term);
    let mut index_of = vec![0u32; distinct.len()];
    for (index, &(_, slot)) in distinct.iter().enumerate() {
        index_of[slot as usize] = index as u32;
    }
    let mut out = Vec::new();
    put_varint(&mut out, distinct.len() as u64);
    for (term, _) in &distinct {
        put_varint(&mut out, term.len() as u64);
        out.extend_from_slice(term.as_bytes());
    }
    put_varint(&mut out, docs.len() as u64);
    let mut doc_slots = doc_slots.into_iter();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for (record, terms) in docs {
        pairs.clear();
        for (&(_, frequency), slot) in terms.iter().zip(doc_slots.by_ref()) {
            pairs.push((index_of[slot as usize], frequency));
        }
        if !pairs.is_sorted_by_key(|&(index, _)| index) {
            pairs.sort_unstable_by_key(|&(index, _)| index);
        }
        put_varint(&mut out, u64::from(*record));
        put_varint(&mut out, pairs.len() as u64);
        let mut previous = None;
        for &(index, frequency) in &pairs {
            put_varint(&mut out, u64::from(previous.map_or(index, |p| index - p)));
            put_varint(&mut out, u64::from(frequency));
            previous = Some(index);
        }
    }
    out
}

/// Decodes a lexical part of a segment of `records` records.
pub(crate) fn decode_lexical(bytes: &[u8], records: usize) -> Result<LexicalPart, CodecError> {
    let bad = |m: &str| CodecError::Payload(format!("lexical part: {m}"));
    let mut reader = Reader::new(bytes, "lexical part");
    let term_count = reader.varint()? as usize;
    // Each term takes at least two bytes: the count cannot ask for more
    // room than the part has.
    if term_count > bytes.len() / 2 {
        return Err(bad("more terms than bytes"));
    }
    let mut dictionary: Vec<Box<str>> = Vec::with_capacity(term_count);
    for _ in 0..term_count {
        let len = reader.varint()? as usize;
        if len == 0 || len > MAX_TERM_BYTES {
            return Err(bad("a term of a bad length"));
        }
        let term = std::str::from_utf8(reader.take(len)?).map_err(|_| bad("a term is not UTF-8"))?;
        if dictionary.last().is_some_and(|last| **last >= *term) {
            return Err(bad("terms are not strictly ascending"));
        }
        dictionary.push(term.into());
    }
    let dictionary: Arc<[Box<str>]> = dictionary.into();
    let doc_count = reader.varint()? as usize;
    if doc_count > records {
        return Err(bad("more docs than records"));
    }
    let mut docs = Vec::with_capacity(doc_count);
    let mut previous_record = None;
    for _ in 0..doc_count {
        let record = reader.varint()?;
        if record as usize >= records || previous_record.is_some_and(|p| p >= record) {
            return Err(bad("doc records are not ascending record indexes"));
        }
        previous_record = Some(record);
        let pairs = reader.varint()? as usize;
        if pairs > term_count {
            return Err(bad("a doc with more terms than the dictionary"));
        }
        let mut terms = Vec::with_capacity(pairs);
        let mut previous: Option<u32> = None;
        for _ in 0..pairs {
            let step = reader.varint()?;
            let index = match previous {
                None => Some(step),
                Some(_) if step == 0 => None,
                Some(p) => p.checked_add(step),
            }
            .filter(|&i| (i as usize) < term_count)
            .ok_or_else(|| bad("a doc's terms are not ascending dictionary indexes"))?;
            let frequency = reader.varint()?;
            if frequency == 0 {
                return Err(bad("a term that occurs 0 times"));
            }
            terms.push((index, frequency));
            previous = Some(index);
        }
        docs.push((record, TermCounts::new(dictionary.clone(), terms)));
    }
    if !reader.done() {
        return Err(bad("bytes after the docs"));
    }
    Ok(LexicalPart { docs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> Vec<(u32, Vec<(&'static str, u32)>)> {
        vec![
            (0, vec![("appl", 2), ("banana", 1)]),
            (1, vec![]),
            (3, vec![("banana", 1), ("東京", 300)]),
        ]
    }

    fn owned(part: &LexicalPart) -> Vec<(u32, Vec<(String, u32)>)> {
        part.docs
            .iter()
            .map(|(r, t)| (*r, t.iter().map(|(s, f)| (s.to_string(), f)).collect()))
            .collect()
    }

    /// `encode_lexical` as it was first (one sorted list of every doc's
    /// terms, searched for each, a doc's terms sorted by bytes): the
    /// oracle of the property below.
    fn encode_by_search(docs: &[(u32, Vec<(&str, u32)>)]) -> Vec<u8> {
        let mut dictionary: Vec<&str> = docs.iter().flat_map(|(_, t)| t.iter().map(|&(term, _)| term)).collect();
        dictionary.sort_unstable();
        dictionary.dedup();
        let mut out = Vec::new();
        put_varint(&mut out, dictionary.len() as u64);
        for term in &dictionary {
            put_varint(&mut out, term.len() as u64);
            out.extend_from_slice(term.as_bytes());
        }
        put_varint(&mut out, docs.len() as u64);
        for (record, terms) in docs {
            let mut terms = terms.clone();
            terms.sort_unstable();
            put_varint(&mut out, u64::from(*record));
            put_varint(&mut out, terms.len() as u64);
            let mut previous = None;
            for (term, frequency) in terms {
                let index = dictionary.binary_search(&term).unwrap() as u32;
                put_varint(&mut out, u64::from(previous.map_or(index, |p| index - p)));
                put_varint(&mut out, u64::from(frequency));
                previous = Some(index);
            }
        }
        out
    }

    proptest::proptest! {
        /// The same bytes as the search by strings, for docs sharing terms
        /// from a small vocabulary (and some of their own), each doc's
        /// terms in byte order or in an order of its own (as a merge
        /// gives the terms of a memory it rewrites).
        #[test]
        fn parts_are_the_bytes_of_the_search_by_strings(
            docs in proptest::collection::vec(
                (
                    proptest::collection::btree_map("[a-f]{1,3}|é[a-z]|東京", 1u32..70_000, 0..12),
                    proptest::prelude::any::<u64>(),
                ),
                0..40,
            )
        ) {
            let docs: Vec<(u32, Vec<(&str, u32)>)> = docs
                .iter()
                .enumerate()
                .map(|(i, (terms, order))| {
                    let mut terms: Vec<(&str, u32)> = terms.iter().map(|(t, &f)| (t.as_str(), f)).collect();
                    // Half the docs keep byte order; the others are
                    // rotated and, by a bit each, pairs swapped.
                    if order % 2 == 1 && !terms.is_empty() {
                        let len = terms.len();
                        terms.rotate_left((order >> 1) as usize % len);
                        for j in (1..len).step_by(2) {
                            if order >> (j % 60 + 4) & 1 == 1 {
                                terms.swap(j - 1, j);
                            }
                        }
                    }
                    (2 * i as u32, terms)
                })
                .collect();
            proptest::prop_assert_eq!(encode_lexical(&docs), encode_by_search(&docs));
        }
    }

    #[test]
    fn parts_round_trip() {
        let bytes = encode_lexical(&docs());
        let part = decode_lexical(&bytes, 4).unwrap();
        let expected: Vec<(u32, Vec<(String, u32)>)> = docs()
            .into_iter()
            .map(|(r, t)| (r, t.into_iter().map(|(s, f)| (s.to_string(), f)).collect()))
            .collect();
        assert_eq!(owned(&part), expected);
        assert!(decode_lexical(&encode_lexical(&[]), 0).unwrap().docs.is_empty());
    }

    #[test]
    fn damaged_parts_are_refused_without_panicking() {
        let bytes = encode_lexical(&docs());
        // A doc past the segment's records.
        assert!(decode_lexical(&bytes, 3).is_err());
        // Every truncation, and trailing bytes.
        for end in 0..bytes.len() {
            assert!(decode_lexical(&bytes[..end], 4).is_err(), "cut at {end}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_lexical(&longer, 4).is_err());
        // Terms out of order, a repeated doc, a zero frequency.
        let unsorted = [3u8, 1, b'b', 1, b'a', 1, b'c', 0];
        assert!(decode_lexical(&unsorted, 1).is_err());
        let repeated = [1u8, 1, b'a', 2, 0, 1, 0, 1, 0, 1, 0, 1];
        assert!(decode_lexical(&repeated, 2).is_err());
        let never = [1u8, 1, b'a', 1, 0, 1, 0, 0];
        assert!(decode_lexical(&never, 1).is_err());
        let overlong = [0x80u8, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert!(decode_lexical(&overlong, 1).is_err());
        // Any byte flipped decodes or is refused, never panics.
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                let _ = decode_lexical(&bad, 4);
            }
        }
    }
}
