use super::*;
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// [`Bm25Index::search`]'s whole answer.
trait SearchAll {
    fn search_all(&self, terms: &[String]) -> Vec<(u32, f32)>;
}

impl SearchAll for Bm25Index {
    fn search_all(&self, terms: &[String]) -> Vec<(u32, f32)> {
        self.search(terms).collect()
    }
}

/// Matches beyond a batch, and ties across its end, come in order: 3,000
/// docs of one text (one score, so doc order alone decides) and 1,500 of
/// others, read whole and read in part.
#[test]
fn matches_come_best_first_across_batches() {
    let mut index = Bm25Index::default();
    for doc in 0..3_000u32 {
        index.insert(doc, &strings(&["fern", "pot"]));
    }
    for doc in 3_000..4_500u32 {
        let words = ["fern", "pot", "soil", "rain", "sun"];
        let len = 1 + (doc as usize * 7) % words.len();
        index.insert(doc, &strings(&words[..len]));
    }
    let query = strings(&["fern", "soil"]);
    let all = index.search_all(&query);
    assert_eq!(all.len(), 4_500);
    let docs: std::collections::HashSet<u32> = all.iter().map(|&(doc, _)| doc).collect();
    assert_eq!(docs.len(), 4_500);
    for pair in all.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(a.1 > b.1 || (a.1 == b.1 && a.0 < b.0), "{a:?} before {b:?}");
    }
    // The same whichever way the scores are summed, and a part read is
    // the answer's start.
    assert_eq!(index.rank(&query, |_, slots| Scores::by_slot(slots)).collect::<Vec<_>>(), all);
    assert_eq!(index.rank(&query, |postings, _| Scores::reached(postings)).collect::<Vec<_>>(), all);
    assert_eq!(index.search(&query).take(1_500).collect::<Vec<_>>(), all[..1_500]);
    // The 3,000 docs of one score, in doc order, across two batch ends.
    let tied: Vec<u32> = all.iter().filter(|&&(doc, _)| doc < 3_000).map(|&(doc, _)| doc).collect();
    assert_eq!(tied, (0..3_000).collect::<Vec<_>>());
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// d1 = [apple banana apple] (dl 3), d2 = [banana cherry] (dl 2),
/// d3 = [cherry cherry cherry date] (dl 4): N = 3, avgdl = 9 / 3 = 3.
fn tiny_corpus(params: Bm25Params) -> Bm25Index {
    let mut index = Bm25Index::new(params);
    index.insert(1, &strings(&["apple", "banana", "apple"]));
    index.insert(2, &strings(&["banana", "cherry"]));
    index.insert(3, &strings(&["cherry", "cherry", "cherry", "date"]));
    index
}

fn assert_scores(actual: &[(u32, f32)], expected: &[(u32, f32)]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (&(doc, score), &(want_doc, want_score)) in actual.iter().zip(expected) {
        assert_eq!(doc, want_doc, "{actual:?} vs {expected:?}");
        assert!(
            (score - want_score).abs() < 1e-5,
            "doc {doc}: {score} vs {want_score}"
        );
    }
}

#[test]
fn coverage_is_the_idf_weighted_share_of_query_terms_held() {
    let index = tiny_corpus(Bm25Params::default());
    // apple 0.980829, banana 0.470004, and kiwi, held by no doc, as if
    // one held it (as apple): 0.980829.
    let weights = index.query_weights(&strings(&["apple", "banana", "apple", "kiwi"]));
    let total = 0.980_829 + 0.470_004 + 0.980_829;
    let near = |a: f32, b: f64| (f64::from(a) - b).abs() < 1e-5;
    assert!(near(index.coverage(1, &weights), (0.980_829 + 0.470_004) / total));
    assert!(near(index.coverage(2, &weights), 0.470_004 / total));
    assert_eq!(index.coverage(3, &weights), 0.0);
    assert_eq!(index.coverage(9, &weights), 0.0, "not indexed");
    let all = index.query_weights(&strings(&["cherry", "date"]));
    assert!(near(index.coverage(3, &all), 1.0));
    assert_eq!(index.coverage(1, &index.query_weights(&[])), 0.0);
}

#[test]
fn scores_match_hand_computation() {
    let index = tiny_corpus(Bm25Params::default());
    // apple: n = 1, idf = ln(1 + (3 - 1 + 0.5) / 1.5) = ln(2.6667) = 0.980829.
    // d1: tf 2, dl 3: norm = 1.2 · (0.25 + 0.75 · 3/3) = 1.2;
    //     2 · 2.2 / (2 + 1.2) = 1.375; score = 0.980829 · 1.375 = 1.348640.
    assert_scores(&index.search_all(&strings(&["apple"])), &[(1, 1.348_64)]);

    // banana, cherry: n = 2 each, idf = ln(1 + 1.5 / 2.5) = ln(1.6) = 0.470004.
    // d2: dl 2: norm = 1.2 · (0.25 + 0.75 · 2/3) = 0.9; each term 2.2 / 1.9
    //     = 1.157895; score = 0.470004 · 2 · 1.157895 = 1.088429.
    // d3: cherry tf 3, dl 4: norm = 1.2 · (0.25 + 0.75 · 4/3) = 1.5;
    //     3 · 2.2 / 4.5 = 1.466667; score = 0.470004 · 1.466667 = 0.689339.
    // d1: banana tf 1, dl 3: norm 1.2; 2.2 / 2.2 = 1; score = 0.470004.
    assert_scores(
        &index.search_all(&strings(&["banana", "cherry"])),
        &[(2, 1.088_429), (3, 0.689_339), (1, 0.470_004)],
    );
}

#[test]
fn params_are_used() {
    let index = tiny_corpus(Bm25Params { k1: 2.0, b: 0.0 });
    // k1 = 2, b = 0 (no length normalization), cherry: idf = ln(1.6) = 0.470004.
    // d3: tf 3: 3 · 3 / (3 + 2) = 1.8; score = 0.470004 · 1.8 = 0.846007.
    // d2: tf 1: 1 · 3 / (1 + 2) = 1; score = 0.470004.
    assert_scores(
        &index.search_all(&strings(&["cherry"])),
        &[(3, 0.846_007), (2, 0.470_004)],
    );
}

#[test]
fn repeated_query_terms_count_once() {
    let index = tiny_corpus(Bm25Params::default());
    assert_eq!(
        index.search_all(&strings(&["apple", "apple", "banana", "apple"])),
        index.search_all(&strings(&["apple", "banana"]))
    );
}

#[test]
fn empty_query_or_index_finds_nothing() {
    let index = tiny_corpus(Bm25Params::default());
    assert!(index.search_all(&[]).is_empty());
    assert!(index.search_all(&strings(&["unknown"])).is_empty());
    assert!(Bm25Index::default().search_all(&strings(&["apple"])).is_empty());
    let mut empty_docs = Bm25Index::default();
    empty_docs.insert(7, &[]);
    assert!(empty_docs.contains(7));
    assert!(empty_docs.search_all(&strings(&["apple"])).is_empty());
}

#[test]
fn removing_the_last_holder_drops_the_term() {
    let mut index = tiny_corpus(Bm25Params::default());
    assert_eq!(index.term_count(), 4);
    assert!(index.remove(3));
    assert!(!index.remove(3));
    assert!(!index.has_term("date"));
    assert!(index.has_term("cherry"));
    assert_eq!(index.term_count(), 3);
    assert_eq!(index.doc_count(), 2);
    assert!(!index.contains(3));
    assert!(index.search_all(&strings(&["date"])).is_empty());
    // The freed slot is reused by a new term.
    index.insert(4, &strings(&["elder"]));
    assert_eq!(index.term_count(), 4);
    assert_eq!(index.search_all(&strings(&["elder"]))[0].0, 4);
}

#[test]
fn insert_replaces_a_present_doc() {
    let mut index = tiny_corpus(Bm25Params::default());
    index.insert(1, &strings(&["fig"]));
    assert_eq!(index.doc_count(), 3);
    assert!(!index.has_term("apple"));
    assert_eq!(index.search_all(&strings(&["banana"])).len(), 1);
    assert_eq!(index.search_all(&strings(&["fig"]))[0].0, 1);
}

#[test]
fn doc_terms_rebuild_the_same_index_without_the_terms() {
    let index = tiny_corpus(Bm25Params::default());
    assert_eq!(index.doc_terms(1), Some(vec![("apple", 2), ("banana", 1)]));
    assert_eq!(index.doc_terms(9), None);
    let mut rebuilt = Bm25Index::new(Bm25Params::default());
    for doc in [1, 2, 3] {
        rebuilt.insert_counts(doc, index.doc_terms(doc).unwrap());
    }
    for query in [&["cherry"][..], &["apple", "date"], &["banana", "fig"]] {
        let query = strings(query);
        assert_eq!(rebuilt.search_all(&query), index.search_all(&query));
    }
    assert_eq!(rebuilt.term_count(), index.term_count());
}

#[test]
fn term_ids_round_trip_as_deltas() {
    let ids = [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 21, u32::MAX];
    let bytes = encode_ids(ids.iter().copied());
    assert_eq!(term_ids(&bytes).collect::<Vec<_>>(), ids);
    assert_eq!(id_count(&bytes), ids.len());
    // Dense ids take a byte each.
    assert_eq!(encode_ids([3, 4, 9, 100].into_iter()).len(), 4);
    assert_eq!(term_ids(&[]).count(), 0);
}

#[test]
fn a_posting_is_six_bytes() {
    // The index's largest part: one per distinct term of every doc.
    assert_eq!(std::mem::size_of::<Posting>(), 6);
}

#[test]
fn frequencies_saturate_and_a_rebuilt_doc_scores_the_same() {
    let mut index = Bm25Index::default();
    index.insert_counts(4, [("many", 70_000), ("one", 1)]);
    index.insert(9, &strings(&["many", "two", "two"]));
    assert_eq!(index.doc_terms(4), Some(vec![("many", 65_535), ("one", 1)]));
    let mut rebuilt = Bm25Index::default();
    for doc in [4, 9] {
        rebuilt.insert_counts(doc, index.doc_terms(doc).unwrap());
    }
    for query in [&["many"][..], &["one", "two"]] {
        let query = strings(query);
        assert_eq!(rebuilt.search_all(&query), index.search_all(&query));
    }
    // The length is the saturated one: 65,535 + 1 against 3.
    let avg = (65_536.0 + 3.0) / 2.0;
    let idf = (1.0f64 + 1.5 / 1.5).ln();
    let norm = 1.2 * (0.25 + 0.75 * 65_536.0 / avg);
    let want = idf * 2.2 / (1.0 + norm);
    let got = index.search_all(&strings(&["one"]));
    assert_eq!(got.len(), 1);
    assert!((f64::from(got[0].1) - want).abs() < 1e-6, "{got:?} vs {want}");
}

#[test]
fn sparse_doc_numbers_reuse_dense_slots() {
    let mut index = Bm25Index::default();
    index.insert(4_000_000_000, &strings(&["apple"]));
    index.insert(7, &strings(&["apple", "banana"]));
    assert!(index.remove(4_000_000_000));
    index.insert(123_456, &strings(&["banana"]));
    // The freed slot went to the new doc: two slots for two docs.
    assert_eq!(index.docs.len(), 2);
    assert_eq!(
        index.search_all(&strings(&["banana"])).iter().map(|r| r.0).collect::<Vec<_>>(),
        // The shorter doc first.
        vec![123_456, 7]
    );
    let set = index.term_set(["banana"]);
    assert_eq!(index.docs_sharing(&set, 1, None), Some(vec![7, 123_456]));
    assert_eq!(index.overlap(123_456, &set), Some(1.0));
    assert_eq!(index.overlap(4_000_000_000, &set), None);
}

#[test]
fn docs_sharing_never_walks_common_terms_it_does_not_need() {
    let mut index = Bm25Index::default();
    for doc in 0..100 {
        index.insert(doc, &strings(&["common", &format!("unique{doc}")]));
    }
    index.insert(100, &strings(&["common", "rare", "scarce"]));
    index.insert(101, &strings(&["rare"]));
    let set = index.term_set(["rare", "scarce", "common"]);
    // Two of three: one of the two rarest lists; `common` (101 docs)
    // is not walked, so the 100 docs holding only it are not listed.
    assert_eq!(index.docs_sharing(&set, 2, None), Some(vec![100, 101]));
    // Three of three: only the rarest list.
    assert_eq!(index.docs_sharing(&set, 3, None), Some(vec![100]));
    assert_eq!(index.docs_sharing(&set, 4, None), Some(vec![]));
    // One of three needs every list.
    assert_eq!(index.docs_sharing(&set, 1, None).map(|d| d.len()), Some(102));
    // Unknown query terms count in no list.
    let unknown = index.term_set(["rare", "absent"]);
    assert_eq!(index.docs_sharing(&unknown, 2, None), Some(vec![]));
    assert_eq!(index.docs_sharing(&unknown, 1, None), Some(vec![100, 101]));
}

/// The terms of doc `i` of an index where every term is held by a fifth
/// to a thirteenth of the docs, and "note" by all; each doc's combination
/// is its own.
fn every_term_common(i: u32) -> Vec<String> {
    let mut terms = strings(&["note"]);
    for (family, period) in ["a", "b", "c", "d", "e", "f"].into_iter().zip([5, 6, 7, 11, 13, 17]) {
        terms.push(format!("{family}{}", i % period));
    }
    terms
}

fn every_term_common_index() -> Bm25Index {
    let mut index = Bm25Index::default();
    for i in 0..2_000 {
        index.insert(i, &every_term_common(i));
    }
    index
}

#[test]
fn signatures_list_few_docs_where_every_term_is_common() {
    let index = every_term_common_index();
    let mut query = every_term_common(123);
    query.push("unheard".into());
    let set = index.term_set(query.iter().map(String::as_str));
    // 8 terms, 7 known: sharing 6 of them, or differing in 1 besides
    // the unknown term. The postings counted are those of every term
    // but "note": 118 + 154 + 182 + 286 + 333 + 400. The signatures walk the buckets of 2 of the 6
    // partitions (a doc within the bound has the query's signature in
    // 5), which hold only docs with the same terms there.
    let (by_postings, postings_walked) = index.slots_sharing(&set, 6, None).unwrap();
    index.signatures();
    let (by_signatures, entries_walked) = index.slots_sharing(&set, 6, Some(2)).unwrap();
    assert_eq!(postings_walked, 1_473);
    assert!(entries_walked < 200, "{entries_walked} walked");
    assert_eq!(by_postings, [123]);
    assert!(by_signatures.contains(&123), "{by_signatures:?}");
    // The index's cost: a map entry per partition of each doc, most
    // buckets holding one doc.
    let bytes = index.signatures().heap_bytes();
    assert!(bytes / 2_000 <= 16 * PARTS, "{bytes} bytes for 2,000 docs");
    // More difference than the unknown terms allow: nothing.
    let far = index.term_set(["unheard", "unseen", "note"]);
    assert_eq!(index.docs_sharing(&far, 1, Some(1)), Some(vec![]));
}

/// The signatures are built by the call whose walk pays for them: until
/// then every search walks postings (and finds the same docs); a search
/// they could not serve (no bound on the difference) pays nothing.
#[test]
fn the_signatures_are_built_once_the_postings_walked_pay_for_them() {
    let mut index = every_term_common_index();
    let set = index.term_set(every_term_common(123).iter().map(String::as_str));
    for _ in 0..1_000 {
        assert_eq!(index.slots_sharing(&set, 6, None), Some((vec![123], 1_473)));
    }
    assert!(index.signatures.get().is_none());
    // 2,000 docs at 256 postings each: the 348th walk of 1,473 pays.
    let paying_call = (2_000 * SIGNATURES_PAID_PER_DOC).div_ceil(1_473);
    for _ in 1..paying_call {
        assert_eq!(index.slots_sharing(&set, 6, Some(2)), Some((vec![123], 1_473)));
        assert!(index.signatures.get().is_none());
    }
    let (slots, walked) = index.slots_sharing(&set, 6, Some(2)).unwrap();
    assert!(index.signatures.get().is_some());
    assert!(walked < 200, "{walked} walked");
    assert!(slots.contains(&123), "{slots:?}");
    // Built, it follows inserts and removals.
    let twin = every_term_common(1_234);
    index.insert(5_000, &twin);
    assert!(index.remove(1_234));
    let set = index.term_set(twin.iter().map(String::as_str));
    let (slots, walked) = index.slots_sharing(&set, 6, Some(2)).unwrap();
    assert!(walked < 200, "{walked} walked");
    let docs: Vec<u32> = slots.iter().map(|&slot| index.docs[slot as usize].doc).collect();
    assert!(docs.contains(&5_000) && !docs.contains(&1_234), "{docs:?}");
}

#[test]
fn params_serialize_as_camel_case_json() {
    let json = serde_json::to_string(&Bm25Params::default()).unwrap();
    assert_eq!(json, r#"{"k1":1.2,"b":0.75}"#);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, Vec<String>),
    Remove(u32),
}

const VOCABULARY: [&str; 6] = ["ant", "bee", "cat", "dog", "eel", "fox"];

fn term() -> impl Strategy<Value = String> {
    prop::sample::select(VOCABULARY.to_vec()).prop_map(String::from)
}

/// Doc numbers: mostly dense, some far apart (so `docs_sharing`
/// counts both ways).
fn doc() -> impl Strategy<Value = u32> {
    prop_oneof![3 => 0u32..8, 1 => 5_000u32..5_003]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (doc(), prop::collection::vec(term(), 0..6))
            .prop_map(|(doc, terms)| Op::Insert(doc, terms)),
        1 => doc().prop_map(Op::Remove),
    ]
}

proptest! {
    #[test]
    fn incremental_updates_match_a_fresh_build(
        ops in prop::collection::vec(op(), 0..40),
        query in prop::collection::vec(term(), 0..5),
        early in any::<bool>(),
    ) {
        let mut index = Bm25Index::default();
        if early {
            index.signatures();
        }
        let mut surviving: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(doc, terms) => {
                    index.insert(doc, &terms);
                    surviving.insert(doc, terms);
                }
                Op::Remove(doc) => {
                    prop_assert_eq!(index.remove(doc), surviving.remove(&doc).is_some());
                }
            }
        }
        let mut fresh = Bm25Index::default();
        for (&doc, terms) in &surviving {
            fresh.insert(doc, terms);
        }
        prop_assert_eq!(index.doc_count(), fresh.doc_count());
        prop_assert_eq!(index.term_count(), fresh.term_count());
        // The counted terms of each doc rebuild the index (what a
        // segment's lexical part stores).
        let mut counted = Bm25Index::default();
        for &doc in surviving.keys() {
            let terms = index.doc_terms(doc);
            prop_assert!(terms.is_some());
            counted.insert_counts(doc, terms.unwrap_or_default());
        }
        prop_assert_eq!(counted.search_all(&query), fresh.search_all(&query));
        prop_assert_eq!(counted.term_count(), fresh.term_count());
        for word in VOCABULARY {
            prop_assert_eq!(index.has_term(word), fresh.has_term(word));
        }
        // The overlap from the index's term lists is the overlap of the
        // term lists themselves, for any query, held terms or not.
        let set = index.term_set(query.iter().map(String::as_str));
        for (&doc, terms) in &surviving {
            prop_assert_eq!(
                index.overlap(doc, &set),
                Some(crate::text::term_overlap(&query, terms))
            );
        }
        prop_assert_eq!(index.overlap(u32::MAX, &set), None);
        // `docs_sharing` lists, in order, every doc holding enough of
        // the query's terms.
        let query_terms: std::collections::HashSet<&String> = query.iter().collect();
        let shared = |terms: &Vec<String>| {
            let held: std::collections::HashSet<&String> = terms.iter().collect();
            held.intersection(&query_terms).count()
        };
        prop_assert_eq!(index.docs_sharing(&set, 0, None), None);
        // With a bound on the difference too (the signatures, built
        // here after the updates or, when `early`, before them and kept
        // up to date by them): every doc within both is listed.
        let differing = |terms: &Vec<String>| {
            let held: std::collections::HashSet<&String> = terms.iter().collect();
            held.symmetric_difference(&query_terms).count()
        };
        for min_shared in 1..=query_terms.len() + 1 {
            for max_differing in [None].into_iter().chain((0..=PARTS + 1).map(Some)) {
                let listed = index.docs_sharing(&set, min_shared, max_differing).unwrap();
                prop_assert!(listed.windows(2).all(|w| w[0] < w[1]), "{:?}", listed);
                for (&doc, terms) in &surviving {
                    if shared(terms) >= min_shared
                        && max_differing.is_none_or(|d| differing(terms) <= d)
                    {
                        prop_assert!(listed.contains(&doc), "doc {} missing from {:?}", doc, listed);
                    }
                }
                prop_assert!(listed.iter().all(|doc| surviving.contains_key(doc)));
            }
        }
        let queries = VOCABULARY.iter().map(|word| vec![word.to_string()]).chain([query]);
        for query in queries {
            let got = index.search_all(&query);
            let want = fresh.search_all(&query);
            prop_assert_eq!(got.len(), want.len());
            for (&(doc, score), &(want_doc, want_score)) in got.iter().zip(&want) {
                prop_assert_eq!(doc, want_doc);
                prop_assert!((score - want_score).abs() < 1e-4);
            }
        }
    }
}

/// `terms` counted as a segment's lexical part holds them: indexes into
/// `dictionary` (which holds every term), ascending, with frequencies.
fn counted_in(dictionary: &Arc<[Box<str>]>, terms: &[String]) -> TermCounts {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for term in terms {
        let index = dictionary.iter().position(|t| **t == **term).unwrap() as u32;
        *counts.entry(index).or_default() += 1;
    }
    TermCounts::new(dictionary.clone(), counts.into_iter().collect())
}

proptest! {
    #[test]
    fn counted_inserts_by_shared_dictionaries_match_inserts(
        ops in prop::collection::vec(op(), 0..40),
        query in prop::collection::vec(term(), 0..5),
    ) {
        // Two dictionaries that number the same terms differently, each
        // shared by many docs, as segments' are.
        let first: Arc<[Box<str>]> = VOCABULARY.iter().map(|&t| t.into()).collect();
        let second: Arc<[Box<str>]> = std::iter::once("aardvark")
            .chain(VOCABULARY)
            .map(Box::from)
            .collect();
        let mut index = Bm25Index::default();
        let mut oracle = Bm25Index::default();
        let mut surviving: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(doc, terms) => {
                    // Docs by either dictionary and by their terms, mixed,
                    // so ids are resolved, reused and freed in between.
                    match doc % 3 {
                        0 => index.insert_counted(doc, &counted_in(&first, &terms)),
                        1 => index.insert_counted(doc, &counted_in(&second, &terms)),
                        _ => index.insert(doc, &terms),
                    }
                    oracle.insert(doc, &terms);
                    surviving.insert(doc, terms);
                }
                Op::Remove(doc) => {
                    prop_assert_eq!(index.remove(doc), oracle.remove(doc));
                    surviving.remove(&doc);
                }
            }
        }
        for &doc in surviving.keys() {
            prop_assert_eq!(index.doc_terms(doc), oracle.doc_terms(doc));
        }
        prop_assert_eq!(index.search_all(&query), oracle.search_all(&query));
        prop_assert_eq!(index.term_count(), oracle.term_count());
        for word in VOCABULARY {
            prop_assert_eq!(index.has_term(word), oracle.has_term(word));
        }
        index.forget_resolved();
        prop_assert!(index.resolved.is_none());
    }
}

/// The index's answers from a plain map of each term's postings, in doc
/// order, and each doc's length: the reference model of the property
/// below.
#[derive(Default)]
struct Reference {
    postings: HashMap<String, Vec<(u32, u16)>>,
    lengths: BTreeMap<u32, u32>,
}

impl Reference {
    fn insert(&mut self, doc: u32, terms: &[String]) {
        self.remove(doc);
        let mut counts: BTreeMap<&str, u16> = BTreeMap::new();
        for term in terms {
            *counts.entry(term).or_default() += 1;
        }
        for (&term, &tf) in &counts {
            let list = self.postings.entry(term.to_string()).or_default();
            list.push((doc, tf));
            list.sort_unstable();
        }
        self.lengths.insert(doc, counts.values().map(|&tf| u32::from(tf)).sum());
    }

    fn remove(&mut self, doc: u32) -> bool {
        for list in self.postings.values_mut() {
            list.retain(|&(d, _)| d != doc);
        }
        self.postings.retain(|_, list| !list.is_empty());
        self.lengths.remove(&doc).is_some()
    }

    fn idf(&self, doc_frequency: f64) -> f64 {
        let doc_count = self.lengths.len() as f64;
        (1.0 + (doc_count - doc_frequency + 0.5) / (doc_frequency + 0.5)).ln()
    }

    /// [`Bm25Index::search`] as its formula says, summing each doc's
    /// terms in the query's order as the index does.
    fn search(&self, query: &[String], params: Bm25Params) -> Vec<(u32, f32)> {
        let (k1, b) = (f64::from(params.k1), f64::from(params.b));
        let total: u32 = self.lengths.values().sum();
        let avg_len = f64::from(total) / self.lengths.len() as f64;
        let mut seen = std::collections::HashSet::new();
        let mut scores: BTreeMap<u32, f64> = BTreeMap::new();
        for term in query.iter().filter(|term| seen.insert(term.as_str())) {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let idf = self.idf(list.len() as f64);
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let length_norm = k1 * (1.0 - b + b * f64::from(self.lengths[&doc]) / avg_len);
                *scores.entry(doc).or_insert(0.0) += idf * tf * (k1 + 1.0) / (tf + length_norm);
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().map(|(doc, s)| (doc, s as f32)).collect();
        ranked.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        ranked
    }
}

/// A few words over few docs, so that terms often go from one doc to two
/// and back to one and to none.
fn churn_op() -> impl Strategy<Value = Op> {
    let word = prop::sample::select(vec!["ant", "bee", "cat", "dog"]).prop_map(String::from);
    prop_oneof![
        3 => (0u32..5, prop::collection::vec(word, 0..5)).prop_map(|(doc, terms)| Op::Insert(doc, terms)),
        2 => (0u32..5).prop_map(Op::Remove),
    ]
}

proptest! {
    #[test]
    fn answers_are_the_reference_models(
        ops in prop::collection::vec(churn_op(), 0..60),
        queries in prop::collection::vec(prop::collection::vec(term(), 1..4), 1..4),
        by_counts in any::<bool>(),
    ) {
        let params = Bm25Params { k1: 1.1, b: 0.6 };
        let mut index = Bm25Index::new(params);
        let mut reference = Reference::default();
        for op in ops {
            match op {
                Op::Insert(doc, terms) => {
                    if by_counts {
                        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
                        for term in &terms {
                            *counts.entry(term).or_default() += 1;
                        }
                        index.insert_counts(doc, counts);
                    } else {
                        index.insert(doc, &terms);
                    }
                    reference.insert(doc, &terms);
                }
                Op::Remove(doc) => prop_assert_eq!(index.remove(doc), reference.remove(doc)),
            }
            // Checked after every step: a term's postings change shape
            // (inline, a list, none) as docs come and go.
            prop_assert_eq!(index.doc_count(), reference.lengths.len());
            prop_assert_eq!(index.term_count(), reference.postings.len());
            for word in VOCABULARY {
                prop_assert_eq!(index.has_term(word), reference.postings.contains_key(word));
            }
            // A term of one doc holds its posting inline, never a list.
            for slot in &index.terms {
                prop_assert!(!matches!(&slot.postings, Postings::Many(list) if list.len() == 1));
            }
        }
        for (&doc, &len) in &reference.lengths {
            prop_assert_eq!(index.entry(doc).map(|(_, entry)| entry.len), Some(len));
            let mut terms: Vec<(String, u32)> = index
                .doc_terms(doc)
                .unwrap_or_default()
                .into_iter()
                .map(|(term, tf)| (term.to_string(), tf))
                .collect();
            terms.sort_unstable();
            let mut want: Vec<(String, u32)> = reference
                .postings
                .iter()
                .filter_map(|(term, list)| {
                    let &(_, tf) = list.iter().find(|&&(d, _)| d == doc)?;
                    Some((term.clone(), u32::from(tf)))
                })
                .collect();
            want.sort_unstable();
            prop_assert_eq!(terms, want);
        }
        for query in &queries {
            let want = reference.search(query, params);
            prop_assert_eq!(index.search_all(query), want.clone());
            // Whichever way the scores are summed.
            prop_assert_eq!(index.rank(query, |_, slots| Scores::by_slot(slots)).collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(index.rank(query, |postings, _| Scores::reached(postings)).collect::<Vec<_>>(), want);
            // Each held query term weighs its idf.
            let weights = index.query_weights(query);
            for &(id, weight) in &weights.known {
                let term = &*index.terms[id as usize].term;
                let doc_frequency = reference.postings.get(term).map_or(0, Vec::len);
                prop_assert!(doc_frequency > 0);
                prop_assert_eq!(weight, reference.idf(doc_frequency as f64));
            }
            let held = query.iter().filter(|term| reference.postings.contains_key(*term));
            let distinct_held: std::collections::HashSet<&String> = held.collect();
            prop_assert_eq!(weights.known.len(), distinct_held.len());
            // The candidates of one shared term are the docs holding one.
            let set = index.term_set(query.iter().map(String::as_str));
            let mut holding: Vec<u32> = distinct_held
                .iter()
                .flat_map(|term| reference.postings[*term].iter().map(|&(doc, _)| doc))
                .collect();
            holding.sort_unstable();
            holding.dedup();
            prop_assert_eq!(index.docs_sharing(&set, 1, None), Some(holding));
        }
    }
}
