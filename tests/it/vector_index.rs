//! The vector index against brute force: HNSW recall, exact results for
//! flat scans and selective filters, deletes, replacement, bad input,
//! determinism, and context scores (each row's embedding plus its
//! predecessor's) against a brute force of the same scores.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use memtide::index::{Int8Vector, VectorIndex, VectorParams};
use memtide::Error;
use proptest::prelude::*;

const DIMENSIONS: usize = 384;

use memtide_testkit::rng::Rng;

fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.iter().map(|x| x / norm).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `count` random unit vectors.
fn random_vectors(rng: &mut Rng, count: usize) -> Vec<Vec<f32>> {
    (0..count)
        .map(|_| unit(&rng.gaussian_vector(DIMENSIONS)))
        .collect()
}

/// `count` unit vectors around `centers`: center + noise of about the same
/// norm, so neighbours within a cluster have a cosine near 0.5.
fn clustered_vectors(rng: &mut Rng, centers: &[Vec<f32>], count: usize) -> Vec<Vec<f32>> {
    let noise = 1.0 / (DIMENSIONS as f32).sqrt();
    (0..count)
        .map(|_| {
            let center = &centers[(rng.next_u64() % centers.len() as u64) as usize];
            let point: Vec<f32> = center.iter().map(|&c| c + noise * rng.gaussian()).collect();
            unit(&point)
        })
        .collect()
}

/// The exact top `k` docs by cosine, ties by smaller doc.
fn brute_force(vectors: &[(u32, Vec<f32>)], query: &[f32], k: usize) -> Vec<u32> {
    let query = unit(query);
    let mut scored: Vec<(u32, f32)> = vectors
        .iter()
        .map(|(doc, vector)| (*doc, dot(&query, vector)))
        .collect();
    scored.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    scored.into_iter().take(k).map(|(doc, _)| doc).collect()
}

fn accept_all(_: u32) -> bool {
    true
}

fn build(vectors: &[Vec<f32>], params: VectorParams) -> (VectorIndex, Vec<(u32, Vec<f32>)>) {
    let mut index = VectorIndex::new(DIMENSIONS, params);
    let mut docs = Vec::new();
    for (doc, vector) in (0u32..).zip(vectors) {
        index.insert(doc, vector).unwrap();
        docs.push((doc, vector.clone()));
    }
    (index, docs)
}

/// Mean recall@10 of `index` against brute force over `queries`.
fn recall_at_10(index: &VectorIndex, docs: &[(u32, Vec<f32>)], queries: &[Vec<f32>]) -> f64 {
    let mut found = 0;
    for query in queries {
        let truth: HashSet<u32> = brute_force(docs, query, 10).into_iter().collect();
        let got = index.search(query, 10, &accept_all);
        assert_eq!(got.len(), 10);
        found += got.iter().filter(|(doc, _)| truth.contains(doc)).count();
    }
    found as f64 / (10 * queries.len()) as f64
}

/// Recall of the segmented index (tail compacted away) and of a flat index
/// (exact int8 scan) on the same data.
fn check_recall(name: &str, vectors: &[Vec<f32>], queries: &[Vec<f32>], minimum: f64) {
    let started = Instant::now();
    let (mut index, docs) = build(vectors, VectorParams::default());
    index.compact();
    let built = started.elapsed();
    let hnsw = recall_at_10(&index, &docs, queries);
    let flat_params = VectorParams {
        segment_threshold: usize::MAX,
        ..VectorParams::default()
    };
    let (flat, _) = build(vectors, flat_params);
    let flat_recall = recall_at_10(&flat, &docs, queries);
    println!(
        "{name}: recall@10 {hnsw:.4} (segments, built in {built:?}), {flat_recall:.4} (flat int8 scan), {} KiB",
        index.memory_bytes() / 1024
    );
    assert!(hnsw >= minimum, "{name}: recall@10 {hnsw}");
    assert!(flat_recall >= 0.98, "{name}: flat recall@10 {flat_recall}");
    // The int8 layout stays well under the 4 bytes per component of f32.
    assert!(index.memory_bytes() < vectors.len() * DIMENSIONS * 4 / 2);
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "builds a 10k-vector graph: run with --release"
)]
fn recall_on_random_vectors() {
    let mut rng = Rng(1);
    let vectors = random_vectors(&mut rng, 10_000);
    let queries = random_vectors(&mut rng, 200);
    check_recall("random", &vectors, &queries, 0.95);
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "builds a 10k-vector graph: run with --release"
)]
fn recall_on_clustered_vectors() {
    let mut rng = Rng(2);
    let centers = random_vectors(&mut rng, 100);
    let vectors = clustered_vectors(&mut rng, &centers, 10_000);
    let queries = clustered_vectors(&mut rng, &centers, 200);
    check_recall("clustered", &vectors, &queries, 0.95);
}

/// Small graphs for the tests that must stay fast unoptimized: segments of
/// `threshold` vectors, a merge past two segments, few graph candidates.
fn small_params(threshold: usize) -> VectorParams {
    VectorParams {
        segment_threshold: threshold,
        max_segments: 2,
        ef_construction: 16,
        ef_search: 8,
        seed: 7,
    }
}

/// An index of everything in `docs`, all in the exactly scanned tail.
fn flat_index(dimensions: usize, docs: &BTreeMap<u32, Vec<f32>>) -> VectorIndex {
    let mut index = VectorIndex::new(
        dimensions,
        VectorParams {
            segment_threshold: usize::MAX,
            ..VectorParams::default()
        },
    );
    for (&doc, vector) in docs {
        index.insert(doc, vector).unwrap();
    }
    index
}

#[test]
fn selective_filters_return_the_exact_top_k_among_accepted_docs() {
    let dimensions = 16;
    let mut rng = Rng(4);
    let mut index = VectorIndex::new(dimensions, small_params(100));
    let mut accepted = BTreeMap::new();
    for doc in 0..600u32 {
        let vector = rng.gaussian_vector(dimensions);
        index.insert(doc, &vector).unwrap();
        if doc.is_multiple_of(37) {
            accepted.insert(doc, vector);
        }
    }
    index.compact();
    let only_accepted = flat_index(dimensions, &accepted);
    let selective = |doc: u32| doc.is_multiple_of(37);
    let even = |doc: u32| doc.is_multiple_of(2);
    for _ in 0..50 {
        let query = rng.gaussian_vector(dimensions);
        let got = index.search(&query, 5, &selective);
        assert_eq!(got, only_accepted.search(&query, 5, &accept_all));
        let got = index.search(&query, 5, &even);
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|&(doc, _)| even(doc)), "{got:?}");
    }
}

#[test]
fn insert_replaces_a_doc_in_the_tail_or_in_a_segment() {
    let dimensions = 16;
    let mut rng = Rng(5);
    let mut index = VectorIndex::new(dimensions, small_params(50));
    for doc in 0..80u32 {
        index.insert(doc, &rng.gaussian_vector(dimensions)).unwrap();
    }
    // Docs 0..50 form a segment, 50..80 the tail.
    for doc in [3u32, 65] {
        let old = rng.gaussian_vector(dimensions);
        index.insert(doc, &old).unwrap();
        let new = rng.gaussian_vector(dimensions);
        index.insert(doc, &new).unwrap();
        assert_eq!(index.len(), 80);
        let all = index.search(&new, 100, &accept_all);
        assert_eq!(all.len(), 80);
        assert_eq!(all.iter().filter(|(d, _)| *d == doc).count(), 1);
        assert_eq!(all[0].0, doc);
        assert!((all[0].1 - 1.0).abs() < 2e-3, "{all:?}");
        let by_old = index.search(&old, 100, &accept_all);
        let score = by_old.iter().find(|(d, _)| *d == doc).unwrap().1;
        let expected = dot(&unit(&old), &unit(&new));
        assert!((score - expected).abs() < 5e-3, "{score} vs {expected}");
    }
}

#[test]
fn bad_vectors_are_rejected_and_leave_the_index_unchanged() {
    let mut index = VectorIndex::new(3, VectorParams::default());
    index.insert(1, &[1.0, 0.0, 0.0]).unwrap();
    for bad in [
        vec![1.0, 0.0],
        vec![1.0, 0.0, 0.0, 0.0],
        vec![f32::NAN, 1.0, 0.0],
        vec![1.0, f32::INFINITY, 0.0],
        vec![0.0, 0.0, 0.0],
    ] {
        assert!(
            matches!(index.insert(1, &bad), Err(Error::InvalidInput(_))),
            "{bad:?}"
        );
        assert!(
            matches!(index.insert(2, &bad), Err(Error::InvalidInput(_))),
            "{bad:?}"
        );
        // The search finds nothing for a bad query either.
        assert!(index.search(&bad, 5, &accept_all).is_empty(), "{bad:?}");
    }
    assert_eq!(index.len(), 1);
    assert!(!index.contains(2));
    assert_eq!(index.search(&[2.0, 0.0, 0.0], 5, &accept_all), [(1, 1.0)]);
    assert!(index.search(&[1.0, 0.0, 0.0], 0, &accept_all).is_empty());
    assert!(VectorIndex::new(3, VectorParams::default())
        .search(&[1.0, 0.0, 0.0], 5, &accept_all)
        .is_empty());
}

#[test]
fn flat_memory_is_int8_sized() {
    let mut rng = Rng(6);
    let vectors = random_vectors(&mut rng, 2000);
    let (index, _) = build(&vectors, VectorParams::default());
    let bytes = index.memory_bytes();
    // 384 code bytes, a 4-byte scale and a 4-byte doc id per vector, plus
    // the doc map: far below the 1536 bytes of an f32 vector.
    assert!(bytes > 2000 * 392 && bytes < 2000 * 600, "{bytes}");
}

#[test]
fn same_operations_give_identical_results() {
    // At most 100 docs, so no graph exceeds the ~110 points below which
    // instant-distance builds on the calling thread only; 32 random
    // dimensions and 5 graph candidates make the results depend on the graph.
    let dimensions = 32;
    let params = VectorParams {
        ef_search: 5,
        ..small_params(50)
    };
    let run = || {
        let mut rng = Rng(8);
        let mut index = VectorIndex::new(dimensions, params);
        for step in 0..400u64 {
            let doc = (rng.next_u64() % 100) as u32;
            match step % 9 {
                0 => {
                    index.remove(doc);
                }
                _ => index.insert(doc, &rng.gaussian_vector(dimensions)).unwrap(),
            }
        }
        (0..200)
            .map(|_| index.search(&rng.gaussian_vector(dimensions), 5, &accept_all))
            .collect::<Vec<_>>()
    };
    let first = run();
    assert!(first.iter().all(|results| results.len() == 5));
    assert_eq!(first, run());
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, Vec<f32>),
    Remove(u32),
    Compact,
}

const SMALL: usize = 8;

fn small_vector() -> impl Strategy<Value = Vec<f32>> {
    // Small integers: zero vectors (rejected) and exact ties occur.
    prop::collection::vec((-3i8..=3).prop_map(f32::from), SMALL)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..48, small_vector()).prop_map(|(doc, vector)| Op::Insert(doc, vector)),
        3 => (0u32..48).prop_map(Op::Remove),
        1 => Just(Op::Compact),
    ]
}

/// Applies `ops` to `index` and to a model map, checking each result.
fn apply(index: &mut VectorIndex, ops: Vec<Op>) -> Result<BTreeMap<u32, Vec<f32>>, TestCaseError> {
    let mut model = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(doc, vector) => {
                let valid = vector.iter().any(|&x| x != 0.0);
                prop_assert_eq!(index.insert(doc, &vector).is_ok(), valid);
                if valid {
                    model.insert(doc, vector);
                }
            }
            Op::Remove(doc) => {
                prop_assert_eq!(index.remove(doc).is_some(), model.remove(&doc).is_some())
            }
            Op::Compact => index.compact(),
        }
    }
    prop_assert_eq!(index.len(), model.len());
    for doc in 0..48 {
        prop_assert_eq!(index.contains(doc), model.contains_key(&doc));
    }
    Ok(model)
}

proptest! {
    /// Through segment builds, tombstones, rebuilds and merges, a search
    /// for everything returns exactly the live docs with the scores of a
    /// fresh index, and a top-3 search only live docs.
    #[test]
    fn deletes_never_resurface(
        ops in prop::collection::vec(op(), 0..120),
        query in small_vector(),
    ) {
        let mut index = VectorIndex::new(SMALL, small_params(6));
        let model = apply(&mut index, ops)?;
        let fresh = flat_index(SMALL, &model);
        prop_assert_eq!(index.search(&query, 64, &accept_all), fresh.search(&query, 64, &accept_all));
        let top = index.search(&query, 3, &accept_all);
        let expected_len = if query.iter().all(|&x| x == 0.0) { 0 } else { model.len().min(3) };
        prop_assert_eq!(top.len(), expected_len);
        prop_assert!(top.iter().all(|(doc, _)| model.contains_key(doc)));
    }

    /// With everything in the tail the search is exact: the returned docs
    /// are the brute-force top k, up to the quantization error.
    #[test]
    fn flat_search_matches_brute_force(
        ops in prop::collection::vec(op().prop_filter("flat", |op| !matches!(op, Op::Compact)), 0..60),
        query in small_vector(),
        k in 1usize..6,
    ) {
        prop_assume!(query.iter().any(|&x| x != 0.0));
        let mut index = VectorIndex::new(SMALL, VectorParams { segment_threshold: usize::MAX, ..VectorParams::default() });
        let model = apply(&mut index, ops)?;
        let got = index.search(&query, k, &accept_all);
        prop_assert_eq!(got.len(), model.len().min(k));
        let query = unit(&query);
        let truth = |doc: &u32| dot(&query, &unit(&model[doc]));
        // Score error bound for 8-d int8 rows with components in -3..=3.
        let tolerance = 0.02;
        for (doc, score) in &got {
            prop_assert!((score - truth(doc)).abs() < tolerance, "doc {doc}: {score} vs {}", truth(doc));
        }
        if let Some(&(_, worst)) = got.last() {
            for doc in model.keys().filter(|doc| got.iter().all(|(d, _)| d != *doc)) {
                prop_assert!(truth(doc) <= worst + tolerance, "doc {doc} missing from {got:?}");
            }
        }
    }
}

/// CPU time of the calling thread in nanoseconds (Linux).
fn thread_cpu_nanos() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

/// CPU time of the whole process (all threads) in seconds (Linux, assuming
/// 100 clock ticks per second).
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15, i.e. 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// Mean wall and CPU time of a top-10 search over `queries`.
fn search_latency(index: &VectorIndex, queries: &[Vec<f32>]) -> String {
    let (wall, cpu) = (Instant::now(), thread_cpu_nanos());
    for query in queries {
        assert_eq!(index.search(query, 10, &accept_all).len(), 10);
    }
    let count = queries.len() as u32;
    let cpu_micros = (thread_cpu_nanos() - cpu) / 1000 / u64::from(count);
    format!("{:?} wall, {cpu_micros} µs CPU", wall.elapsed() / count)
}

/// Exact-scan latencies at 1k, 10k and 100k vectors, and the build time,
/// latency and memory of one 10k graph, with the default parameters on
/// random 384-d vectors (the hardest case for the graph). Release only:
/// `cargo test --release --test it vector_index -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark: minutes of graph building"]
fn benchmark_report() {
    let mut rng = Rng(10);
    let queries = random_vectors(&mut rng, 200);
    let flat = VectorParams {
        segment_threshold: usize::MAX,
        ..VectorParams::default()
    };
    for count in [1_000, 10_000, 100_000] {
        let vectors = random_vectors(&mut rng, count);
        let started = Instant::now();
        let (mut index, _) = build(&vectors, flat);
        println!(
            "{count} flat: inserted in {:?}, {} bytes/vector; search {}",
            started.elapsed(),
            index.memory_bytes() / count,
            search_latency(&index, &queries)
        );
        if count == 10_000 {
            let (wall, cpu) = (Instant::now(), process_cpu_seconds());
            index.compact();
            println!(
                "{count} in one graph: built in {:?} wall, {:.0} s CPU, {} bytes/vector; search {}",
                wall.elapsed(),
                process_cpu_seconds() - cpu,
                index.memory_bytes() / count,
                search_latency(&index, &queries)
            );
        }
    }
}

/// A change to an index whose docs follow one another.
#[derive(Debug, Clone)]
enum LinkOp {
    Insert(u32, Vec<f32>, Option<u32>),
    Link(u32, Option<u32>),
    Remove(u32),
    Compact,
}

fn link_op() -> impl Strategy<Value = LinkOp> {
    let doc = || 0u32..24;
    prop_oneof![
        6 => (doc(), small_vector(), prop::option::of(doc()))
            .prop_map(|(d, vector, prev)| LinkOp::Insert(d, vector, prev)),
        3 => (doc(), prop::option::of(doc())).prop_map(|(d, prev)| LinkOp::Link(d, prev)),
        2 => doc().prop_map(LinkOp::Remove),
        1 => Just(LinkOp::Compact),
    ]
}

/// The cosine of `query` with `(own + prev) / ‖own + prev‖`, in `f64`
/// from the dequantized codes; 0 for a zero sum.
fn context_cosine(query: &[f32], own: &Int8Vector, prev: Option<&Int8Vector>) -> f64 {
    let mut context: Vec<f64> = own.to_f32().iter().map(|&x| f64::from(x)).collect();
    if let Some(prev) = prev {
        for (c, x) in context.iter_mut().zip(prev.to_f32()) {
            *c += f64::from(x);
        }
    }
    let norm = context.iter().map(|x| x * x).sum::<f64>().sqrt();
    let query_norm = query
        .iter()
        .map(|&x| f64::from(x).powi(2))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 {
        return 0.0;
    }
    let dot: f64 = context
        .iter()
        .zip(query)
        .map(|(c, &q)| c * f64::from(q))
        .sum();
    dot / (norm * query_norm)
}

/// Applies `ops` to a flat index and to a model of its links: a doc
/// follows the predecessor it was inserted or linked with while both are
/// indexed; removing or replacing a doc unlinks its followers.
fn apply_links(
    index: &mut VectorIndex,
    ops: Vec<LinkOp>,
) -> Result<BTreeMap<u32, (Int8Vector, Option<u32>)>, TestCaseError> {
    let mut model: BTreeMap<u32, (Int8Vector, Option<u32>)> = BTreeMap::new();
    let unlink_followers = |model: &mut BTreeMap<u32, (Int8Vector, Option<u32>)>, doc: u32| {
        for (_, prev) in model.values_mut() {
            if *prev == Some(doc) {
                *prev = None;
            }
        }
    };
    for op in ops {
        match op {
            LinkOp::Insert(doc, vector, prev) => {
                let own = Int8Vector::quantize(&vector);
                let valid = own.codes().iter().any(|&c| c != 0);
                prop_assert_eq!(index.insert_own(doc, own.clone(), prev).is_ok(), valid);
                if valid {
                    if model.remove(&doc).is_some() {
                        unlink_followers(&mut model, doc);
                    }
                    let prev = prev.filter(|p| *p != doc && model.contains_key(p));
                    model.insert(doc, (own, prev));
                }
            }
            LinkOp::Link(doc, prev) => {
                let held = model.contains_key(&doc);
                let prev = prev.filter(|p| *p != doc && model.contains_key(p));
                prop_assert_eq!(index.link(doc, prev), held);
                if let Some((_, linked)) = model.get_mut(&doc) {
                    *linked = prev;
                }
            }
            LinkOp::Remove(doc) => {
                let removed = model.remove(&doc);
                prop_assert_eq!(index.remove(doc), removed.map(|(own, _)| own));
                unlink_followers(&mut model, doc);
            }
            LinkOp::Compact => {}
        }
    }
    Ok(model)
}

proptest! {
    /// In the tail, each doc holds its embedding as given and follows the
    /// predecessor the model says; a search for everything scores every
    /// doc as a brute force of its context vector does (up to the query's
    /// `i16` rounding), best first.
    #[test]
    fn context_scores_in_the_tail_equal_a_brute_force_of_the_same_scores(
        ops in prop::collection::vec(link_op(), 0..80),
        query in small_vector(),
    ) {
        prop_assume!(query.iter().any(|&x| x != 0.0));
        let mut index = VectorIndex::new(SMALL, VectorParams { segment_threshold: usize::MAX, ..VectorParams::default() });
        let model = apply_links(&mut index, ops)?;
        prop_assert_eq!(index.len(), model.len());
        for (doc, (own, prev)) in &model {
            let (held, held_prev) = index.context_parts(*doc).unwrap();
            prop_assert_eq!(&held, own);
            prop_assert_eq!(held_prev.map(|(p, _)| p), *prev, "doc {}", doc);
            prop_assert_eq!(index.embedding(*doc).map(|e| e.to_vector()), Some(own.clone()));
        }
        let got = index.search(&query, 64, &accept_all);
        prop_assert_eq!(got.len(), model.len());
        for (doc, score) in &got {
            let (own, prev) = &model[doc];
            let truth = context_cosine(&query, own, prev.map(|p| &model[&p].0));
            prop_assert!((f64::from(*score) - truth).abs() < 1e-3, "doc {doc}: {score} vs {truth}");
        }
        prop_assert!(got.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    /// Through segment builds, tombstones, rebuilds and merges, every doc
    /// is scored from the parts its row holds (the graph's candidates and
    /// the exact fallback alike) as a brute force of them.
    #[test]
    fn context_scores_in_segments_equal_a_brute_force_of_the_same_scores(
        ops in prop::collection::vec(link_op(), 0..120),
        query in small_vector(),
    ) {
        prop_assume!(query.iter().any(|&x| x != 0.0));
        let mut index = VectorIndex::new(SMALL, small_params(5));
        let mut live = HashSet::new();
        for op in ops {
            match op {
                LinkOp::Insert(doc, vector, prev) => {
                    if index.insert_own(doc, Int8Vector::quantize(&vector), prev).is_ok() {
                        live.insert(doc);
                    }
                }
                LinkOp::Link(doc, prev) => {
                    index.link(doc, prev);
                }
                LinkOp::Remove(doc) => {
                    index.remove(doc);
                    live.remove(&doc);
                }
                LinkOp::Compact => index.compact(),
            }
        }
        let got = index.search(&query, 64, &accept_all);
        prop_assert_eq!(got.iter().map(|(d, _)| *d).collect::<HashSet<_>>(), live);
        for (doc, score) in &got {
            let (own, prev) = index.context_parts(*doc).unwrap();
            let truth = context_cosine(&query, &own, prev.as_ref().map(|(_, p)| p));
            prop_assert!((f64::from(*score) - truth).abs() < 1e-3, "doc {doc}: {score} vs {truth}");
        }
    }
}
