//! The vector index's scores against exact cosines, in every build: the
//! dot-product kernels are a portable loop natively and 128-bit SIMD in
//! WebAssembly, so these tests also run inside headless Chromium
//! (`scripts/test-browser.sh`). Every score must be within the int8
//! rounding bound of the module docs, for lengths around the SIMD groups
//! and across the `i64` widening block; graphs (built with the code-to-code
//! kernel) must find the exact neighbours.

use memtide::index::{VectorIndex, VectorParams};

use memtide_testkit::rng::Rng;

/// Components uniform in (-1, 1].
fn uniform_vector(rng: &mut Rng, dimensions: usize) -> Vec<f32> {
    (0..dimensions).map(|_| rng.signed()).collect()
}

fn unit(vector: &[f32]) -> Vec<f64> {
    let norm = vector
        .iter()
        .map(|&x| f64::from(x).powi(2))
        .sum::<f64>()
        .sqrt();
    vector.iter().map(|&x| f64::from(x) / norm).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    unit(a).iter().zip(unit(b)).map(|(x, y)| x * y).sum()
}

/// The rounding bound of a stored vector's score: each stored component is
/// off by at most half its row's int8 step (largest |component| / 127), so
/// the score by at most `‖query‖₁ · step / 2`; likewise the query's `i16`
/// components (step: its largest |component| / 32767) by
/// `‖stored‖₁ · query step / 2`; plus `f32` arithmetic.
fn score_bound(query: &[f32], stored: &[f32]) -> f64 {
    let half_step_and_l1 = |vector: &[f32], levels: f64| {
        let unit = unit(vector);
        let largest = unit.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        (
            largest / levels / 2.0,
            unit.iter().map(|x| x.abs()).sum::<f64>(),
        )
    };
    let (stored_half_step, stored_l1) = half_step_and_l1(stored, 127.0);
    let (query_half_step, query_l1) = half_step_and_l1(query, 32767.0);
    (query_l1 * stored_half_step + stored_l1 * query_half_step) * 1.01 + 1e-5
}

/// Vectors that stress the kernels: random ones, one dominant component,
/// all components at the extremes of both signs.
fn vectors(rng: &mut Rng, dimensions: usize, count: usize) -> Vec<Vec<f32>> {
    let mut vectors: Vec<Vec<f32>> = (0..count)
        .map(|_| uniform_vector(rng, dimensions))
        .collect();
    let mut dominant = vec![1e-3f32; dimensions];
    dominant[dimensions / 2] = 1.0;
    vectors.push(dominant);
    vectors.push(vec![-1.0; dimensions]);
    vectors.push(
        (0..dimensions)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect(),
    );
    vectors
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn exact_scan_scores_are_within_the_rounding_bound_at_every_length() {
    let mut rng = Rng(11);
    // Around the SIMD group (8) and step (32), MiniLM's width, and across
    // the 4096-component widening block.
    for dimensions in [1, 7, 8, 9, 31, 32, 33, 384, 4095, 4096, 4100, 9000] {
        let stored = vectors(&mut rng, dimensions, 20);
        let mut index = VectorIndex::new(dimensions, VectorParams::default());
        for (doc, vector) in stored.iter().enumerate() {
            index.insert(doc as u32, vector).expect("insert");
        }
        let mut queries = vectors(&mut rng, dimensions, 3);
        queries.push(stored[0].clone());
        for query in &queries {
            let hits = index.search(query, stored.len(), &|_| true);
            assert_eq!(hits.len(), stored.len(), "d {dimensions}");
            for (doc, score) in hits {
                let vector = &stored[doc as usize];
                let exact = cosine(query, vector);
                let error = (f64::from(score) - exact).abs();
                let bound = score_bound(query, vector);
                assert!(
                    error <= bound,
                    "d {dimensions}, doc {doc}: score {score}, exact {exact}, error {error} > {bound}"
                );
            }
        }
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn graph_segments_find_the_exact_neighbours() {
    const DIMENSIONS: usize = 384;
    let mut rng = Rng(12);
    let stored: Vec<Vec<f32>> = (0..400)
        .map(|_| uniform_vector(&mut rng, DIMENSIONS))
        .collect();
    let params = VectorParams {
        segment_threshold: 100,
        ..VectorParams::default()
    };
    let mut index = VectorIndex::new(DIMENSIONS, params);
    for (doc, vector) in stored.iter().enumerate() {
        index.insert(doc as u32, vector).expect("insert");
    }
    let mut found = 0;
    let queries = 20;
    for _ in 0..queries {
        // A query near a stored vector, so its neighbours are well defined.
        let target = &stored[(rng.next_u64() % 400) as usize];
        let noise = uniform_vector(&mut rng, DIMENSIONS);
        let query: Vec<f32> = target
            .iter()
            .zip(&noise)
            .map(|(t, n)| t + 0.3 * n)
            .collect();
        let mut exact: Vec<(usize, f64)> = stored
            .iter()
            .enumerate()
            .map(|(doc, vector)| (doc, cosine(&query, vector)))
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let truth: Vec<u32> = exact.iter().take(10).map(|&(doc, _)| doc as u32).collect();
        let hits = index.search(&query, 10, &|_| true);
        for (doc, score) in &hits {
            let vector = &stored[*doc as usize];
            let error = (f64::from(*score) - cosine(&query, vector)).abs();
            assert!(
                error <= score_bound(&query, vector),
                "doc {doc}: error {error}"
            );
        }
        found += hits.iter().filter(|(doc, _)| truth.contains(doc)).count();
    }
    let recall = found as f64 / (10 * queries) as f64;
    assert!(recall >= 0.9, "recall@10 {recall}");
}
