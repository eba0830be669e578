//! A cosine-similarity vector index over context vectors: an exactly
//! scanned tail of recent rows plus HNSW segments built with
//! `instant-distance`.
//!
//! # Memory layout: one int8 row per embedding
//!
//! Each doc's row is its own embedding as the engine stores it (the index
//! holds the only copy, [`VectorIndex::embedding`]): `i8` codes with a
//! per-row scale (symmetric, no zero point), `m` being its largest
//! |component|:
//!
//! ```text
//! code_i = round(127 · v_i / m)        scale = m / 127        v ≈ code · scale
//! ```
//!
//! A doc is scored by its *context vector*: its embedding `a` plus the
//! embedding `b` of the doc it follows, normalized, `(a + b) / ‖a + b‖`
//! (`crate::rank`). A row holds its predecessor's row number and
//! `1 / ‖a + b‖` (`src/index/rows.rs`), so the cosine with a unit query
//! `q` is `(q·a + q·b) / ‖a + b‖`: a scan computes every row's dot product
//! in one contiguous pass, then each score from two entries of that list.
//! Links are kept within the tail's rows and within a segment's; a doc
//! whose predecessor is elsewhere (soft-deleted, in a segment, of another
//! tenant) is scored by its own embedding.
//!
//! The rows of the tail, and of each segment, sit in contiguous chunks
//! of `i8`: a quarter of the memory of `f32`. A query is normalized and
//! quantized to `i16` (256 times finer than the rows, so the scoring is
//! effectively asymmetric); a score is the exact integer dot product times
//! both scales. The loops accumulate in independent `i32` lanes over
//! fixed-size chunks, and are widened to `i64` every 4096 components so no
//! dimension can overflow them (`crates/int-dot`, shared with the
//! embedder's int8 matrix products). On WebAssembly with SIMD the components are
//! widened to `i16` eight at a time and multiplied pairwise into `i32` lanes
//! (`i32x4.dot_i16x8_s`); elsewhere a portable loop LLVM vectorizes. Both
//! give the same exact integers.
//!
//! Each row component is off by at most `scale / 2`, so a score is off by
//! at most `‖query‖₁ · scale / 2`. Measured on 384-d vectors the error is
//! 3·10⁻⁴ on average (1.4·10⁻³ at most) for random and for clustered
//! vectors, 1.6·10⁻³ when one component dominates. Against an `f32` brute
//! force the exact int8 scan keeps recall@10 at 0.985 (random) and 0.99
//! (clustered); only near-ties within very tight clusters swap (0.92 when
//! neighbours are 0.92 ± 0.005 similar), which does not matter for memory
//! retrieval. So the index keeps no `f32` copies, and every score (tail,
//! graph candidates, exact fallbacks) comes from the same formula: one doc
//! always gets the same score.
//!
//! # Segments
//!
//! `instant-distance` builds a graph in one batch and can neither insert
//! nor delete, so the index is segmented:
//!
//! - **Tail.** New vectors go to a flat tail, scanned exactly. When it reaches
//!   [`VectorParams::segment_threshold`] vectors it is built into a new
//!   segment, synchronously (the engine has no threads; a host with idle time
//!   can call [`VectorIndex::compact`] to build it earlier).
//! - **Tombstones.** Removing or replacing a doc of a segment marks its row
//!   dead; searches skip it. A segment whose dead rows exceed a quarter of its
//!   rows is rebuilt from its live rows (dropped when none is left). A
//!   segment's links are fixed with its graph: a dead row still serves as
//!   its followers' predecessor until the rebuild, and a doc of a segment
//!   linked to another predecessor moves to the tail.
//! - **Merges.** Past [`VectorParams::max_segments`] segments, all are rebuilt
//!   into one. With threshold `T` and `S` segments a merge happens at most
//!   every `S · T` inserts and rebuilds the `N` live vectors: `N / (S · T)`
//!   extra graph insertions per insert, amortized.
//!
//! A search scans the tail and asks each segment's graph for
//! [`VectorParams::ef_search`] candidates, drops dead and rejected docs and
//! scores the rest. A segment that yields fewer than `k` accepted live
//! candidates (a selective filter, or `k` above `ef_search`) is scanned
//! exactly instead, so a filter never loses results and the answer is never
//! worse than the graphs alone.
//!
//! # Costs
//!
//! `docs/speed.md` ("Retrieval") has the measurements behind this section.
//!
//! - **Exact scan**: one exact integer dot product per row (SIMD in wasm, a
//!   portable loop elsewhere) and a lookup of its predecessor's; 404 bytes
//!   per row (384 codes, the scale, the norm, three links) plus the doc map.
//! - **Graph build**: `instant-distance` fixes `M` = 32 (64 links on layer
//!   0) and re-selects the links of every neighbour of a new point with the
//!   diversity heuristic: some 10⁵ distance computations per point, each the
//!   cosine of two context vectors (up to four int8 dot products). Its
//!   simple selection is cheap but loses recall as graphs grow, so it is not
//!   used.
//! - **Graph search**: random 384-d vectors need an `ef_search` in the
//!   hundreds for a good recall@10, and such a search visits most of the
//!   graph, which costs more than the exact scan.
//!
//! So graphs only pay off far above 100 000 vectors: the default threshold
//! of 131 072 keeps tenants of the size memtide targets exact (recall of the
//! int8 scan, no build pauses, ingest linear in the memories); a lower one
//! spent most of a large ingest building and merging graphs, and made a
//! query search several graphs. The price is a cliff: the insert that
//! brings a tenant's tail to the threshold builds one graph of all of it,
//! synchronously (natively spread over the cores; in wasm on one thread).
//! The engine uses the defaults for every tenant, so a tenant that large
//! pays that pause once.
//!
//! # Determinism
//!
//! Graphs are built with [`VectorParams::seed`], rows are gathered in a fixed
//! order and ties rank the smaller doc first, so the same operations give
//! the same results when graphs are built on one thread. `instant-distance`
//! inserts the points below the top graph layer (graphs above ~110 points)
//! in parallel on the rayon pool, where the links depend on scheduling; on
//! WebAssembly rayon falls back to the calling thread and builds are
//! reproducible.

use std::sync::Arc;

use instant_distance::{Builder, Hnsw, Point, Search};
use serde::{Deserialize, Serialize};

use super::doc_table::{DocTable, Vacant};
use super::int8::{max_abs, round_half_away, Int8Ref, Int8Vector};
use super::rows::Rows;
#[cfg(any(test, feature = "testing"))]
use crate::error::{Error, Result};
use crate::room;
use memtide_int_dot::dot_i16_i8;

/// The tuning parameters of a [`VectorIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorParams {
    /// Number of tail vectors at which the tail is built into an HNSW
    /// segment (default 131 072; at least 1).
    pub segment_threshold: usize,
    /// Most segments kept before all are merged into one (default 8; at
    /// least 1).
    pub max_segments: usize,
    /// Candidate list size while building a graph (default 64).
    pub ef_construction: usize,
    /// Candidates a segment's graph returns per search (default 300); a
    /// search for more than this many results scans segments exactly.
    pub ef_search: usize,
    /// Seed of every random choice of the graph builder.
    pub seed: u64,
}

impl Default for VectorParams {
    fn default() -> Self {
        VectorParams {
            segment_threshold: 131_072,
            max_segments: 8,
            ef_construction: 64,
            ef_search: 300,
            seed: 0x6d6e_656d_6f5f_7663,
        }
    }
}

/// Largest `i16` query component magnitude.
const QUERY_MAX: f32 = 32767.0;
#[cfg(any(test, feature = "testing"))]
/// Approximate graph bytes per point of a segment: `instant-distance` keeps
/// 64 neighbour ids (4 bytes each) on layer zero and 32 on each upper layer,
/// where about 0.4 of the points appear in total.
const GRAPH_BYTES_PER_POINT: usize = 64 * 4 + 52;

/// A row or segment number as a [`Location`] holds it: each is below the
/// number of docs the index holds, and docs are `u32`.
fn row_number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The unit vector along `vector`; `None` when it is all zeros or has a
/// non-finite component. Divides by the largest component first so the sum
/// of squares can neither overflow nor underflow.
fn normalize(vector: &[f32]) -> Option<Vec<f32>> {
    if vector.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let max_abs = max_abs(vector);
    if max_abs == 0.0 {
        return None;
    }
    let scaled: Vec<f32> = vector.iter().map(|x| x / max_abs).collect();
    let norm = scaled
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt() as f32;
    Some(scaled.iter().map(|x| x / norm).collect())
}

/// A query prepared for scoring: the unit vector quantized to `i16` (so a
/// score is an exact integer dot product, scaled once; the `i16` rounding is
/// 256 times finer than the rows') and to an int8 row for graph traversal.
struct Query {
    values: Vec<i16>,
    scale: f32,
    point: GraphPoint,
}

impl Query {
    /// `None` when `vector` is all zeros or has a non-finite component.
    fn new(vector: &[f32]) -> Option<Query> {
        let unit = normalize(vector)?;
        let max_abs = max_abs(&unit);
        let values = unit
            .iter()
            // In [-32767, 32767], so the cast never saturates.
            .map(|&x| round_half_away(x / max_abs * QUERY_MAX) as i16)
            .collect();
        let mut rows = Rows::new(unit.len());
        let point = Int8Vector::quantize(&unit);
        rows.push(point.codes(), point.scale());
        Some(Query {
            values,
            scale: max_abs / QUERY_MAX,
            point: GraphPoint {
                rows: Arc::new(rows),
                row: 0,
            },
        })
    }

    /// The dot product with a row with these codes and scale (the cosine
    /// when the row is a unit vector).
    fn score(&self, code: &[i8], scale: f32) -> f32 {
        dot_i16_i8(&self.values, code) as f32 * self.scale * scale
    }
}

/// A row of a segment as a point of its graph. Graph distances compare two
/// rows' context vectors (the query is quantized to int8 too for the
/// traversal); the candidates are then scored with the `i16` query.
#[derive(Debug, Clone)]
struct GraphPoint {
    rows: Arc<Rows>,
    row: usize,
}

impl Point for GraphPoint {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - self.rows.context_cosine(self.row, &other.rows, other.row)
    }
}

/// An immutable HNSW graph over some rows, with tombstones.
struct Segment {
    rows: Arc<Rows>,
    /// The doc of each row.
    docs: Vec<u32>,
    /// Whether each row is live (not removed or replaced since the build).
    live: Vec<bool>,
    dead: usize,
    graph: Hnsw<GraphPoint>,
}

impl Segment {
    fn build(rows: Rows, docs: Vec<u32>, params: &VectorParams) -> Segment {
        let rows = Arc::new(rows);
        let points = (0..docs.len())
            .map(|row| GraphPoint {
                rows: Arc::clone(&rows),
                row,
            })
            .collect();
        let (graph, _) = Builder::default()
            .seed(params.seed)
            .ef_construction(params.ef_construction)
            .ef_search(params.ef_search)
            .build_hnsw(points);
        Segment {
            rows,
            live: vec![true; docs.len()],
            docs,
            dead: 0,
            graph,
        }
    }

    fn live_count(&self) -> usize {
        self.docs.len() - self.dead
    }

    /// Appends this segment's live rows and their docs, in row order, with
    /// the links between them (a row whose predecessor is dead has none).
    fn collect_live(&self, rows: &mut Rows, docs: &mut Vec<u32>) {
        let mut moved_to = vec![None; self.docs.len()];
        for (row, (code, scale)) in self.rows.iter().enumerate() {
            if self.live[row] {
                moved_to[row] = Some(rows.push(code, scale));
                docs.push(self.docs[row]);
            }
        }
        for (row, to) in moved_to.iter().enumerate() {
            if let (Some(to), Some(prev)) = (to, self.rows.prev(row)) {
                rows.set_prev(*to, moved_to[prev]);
            }
        }
    }

    /// The doc of the predecessor of `row`, if it has one in this segment.
    fn prev_doc(&self, row: usize) -> Option<u32> {
        self.rows.prev(row).map(|p| self.docs[p])
    }

    /// Offers this segment's best `k` live accepted docs to `top`: the
    /// graph's candidates, or an exact scan when they are too few.
    fn search(&self, query: &Query, k: usize, accept: &dyn Fn(u32) -> bool, top: &mut TopK) {
        let mut search = Search::default();
        let candidates: Vec<usize> = self
            .graph
            .search(&query.point, &mut search)
            .map(|item| item.point.row)
            .filter(|&row| self.live[row] && accept(self.docs[row]))
            .collect();
        if candidates.len() >= k || candidates.len() == self.live_count() {
            for row in candidates {
                let score = self.rows.context_score_of(row, |c, s| query.score(c, s));
                top.offer(self.docs[row], score);
            }
            return;
        }
        self.rows.context_scores(
            |c, s| query.score(c, s),
            |row, score| {
                if let (Some(true), Some(&doc)) = (self.live.get(row), self.docs.get(row)) {
                    top.offer_accepted(doc, score, accept);
                }
            },
        );
    }

#[cfg(any(test, feature = "testing"))]
    fn heap_bytes(&self) -> usize {
        self.rows.heap_bytes()
            + self.docs.capacity() * size_of::<u32>()
            + self.live.capacity()
            + self.docs.len() * (GRAPH_BYTES_PER_POINT + size_of::<GraphPoint>())
    }
}

/// The best `k` docs offered, best first (ties: smaller doc first).
///
/// Offers are appended; whenever twice `k` are held the best `k` are selected
/// in linear time, so `n` offers cost `O(n + k log k)` whatever `k` is.
struct TopK {
    k: usize,
    held: Vec<(u32, f32)>,
    /// The `k`-th best offer at the last selection: an offer ranking after
    /// it can no longer make the top `k`.
    floor: Option<(u32, f32)>,
}

impl TopK {
    /// `k` must be at least 1.
    fn new(k: usize) -> Self {
        TopK {
            k,
            held: Vec::new(),
            floor: None,
        }
    }

    fn offer(&mut self, doc: u32, score: f32) {
        self.held.push((doc, score));
        if self.held.len() >= self.k.saturating_mul(2).max(64) {
            self.held.select_nth_unstable_by(self.k - 1, rank_order);
            self.held.truncate(self.k);
            self.floor = self.held.last().copied();
        }
    }

    /// Offers `doc` if it could still make the top `k` and `accept` lets it
    /// through; `accept` (the caller's filter, possibly costly) runs only
    /// for such docs, a few per thousand rows once the top fills.
    fn offer_accepted(&mut self, doc: u32, score: f32, accept: &dyn Fn(u32) -> bool) {
        let could_enter = self
            .floor
            .is_none_or(|floor| rank_order(&(doc, score), &floor).is_lt());
        if could_enter && accept(doc) {
            self.offer(doc, score);
        }
    }

    fn into_sorted(mut self) -> Vec<(u32, f32)> {
        self.held.sort_unstable_by(rank_order);
        self.held.truncate(self.k);
        self.held
    }
}

/// Best score first, then smaller doc; a total order since docs are unique.
fn rank_order(x: &(u32, f32), y: &(u32, f32)) -> std::cmp::Ordering {
    y.1.total_cmp(&x.1).then(x.0.cmp(&y.0))
}

/// Where a doc's row is: a row of the tail, or of a segment, as the doc
/// table holds it (two `u32`s: a doc number is a `u32`, so no index holds
/// more rows or segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Location {
    /// The segment, or [`TAIL`].
    segment: u32,
    row: u32,
}

/// [`Location::segment`] of a row of the tail.
const TAIL: u32 = u32::MAX;

impl Vacant for Location {
    // The tail's last possible row: the tail would need more rows than
    // docs can be numbered before a doc sat there.
    const VACANT: Location = Location { segment: TAIL, row: u32::MAX };
}

/// A [`Location`] to match on.
enum Place {
    Tail(usize),
    Segment { segment: usize, row: usize },
}

impl Location {
    fn tail(row: usize) -> Location {
        Location { segment: TAIL, row: row_number(row) }
    }

    fn segment(segment: usize, row: usize) -> Location {
        Location { segment: row_number(segment), row: row_number(row) }
    }

    fn place(self) -> Place {
        match self.segment {
            TAIL => Place::Tail(self.row as usize),
            segment => Place::Segment { segment: segment as usize, row: self.row as usize },
        }
    }
}

/// A cosine-similarity index over `u32` docs: an exactly scanned tail plus
/// HNSW segments, with int8 rows (see the module docs).
pub struct VectorIndex {
    dimensions: usize,
    params: VectorParams,
    tail: Rows,
    /// The doc of each tail row.
    tail_docs: Vec<u32>,
    segments: Vec<Segment>,
    locations: DocTable<Location>,
}

impl VectorIndex {
    /// An empty index of vectors with `dimensions` components. Parameters
    /// below 1 are raised to 1.
    pub fn new(dimensions: usize, params: VectorParams) -> Self {
        let params = VectorParams {
            segment_threshold: params.segment_threshold.max(1),
            max_segments: params.max_segments.max(1),
            ef_construction: params.ef_construction.max(1),
            ef_search: params.ef_search.max(1),
            seed: params.seed,
        };
        VectorIndex {
            dimensions,
            params,
            tail: Rows::new(dimensions),
            tail_docs: Vec::new(),
            segments: Vec::new(),
            locations: DocTable::default(),
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// Indexes `doc` with `vector` quantized, following no other doc,
    /// replacing the doc if present. Fails with [`Error::InvalidInput`],
    /// leaving the index unchanged, when the vector has the wrong
    /// dimension, a non-finite component or no non-zero component.
    pub fn insert(&mut self, doc: u32, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dimensions {
            return Err(Error::invalid(format!(
                "the vector has {} dimensions, the index expects {}",
                vector.len(),
                self.dimensions
            )));
        }
        if normalize(vector).is_none() {
            return Err(Error::invalid("the vector must have finite components, not all zero"));
        }
        self.insert_own(doc, Int8Vector::quantize(vector), None)
            .map_err(|_| Error::invalid("the vector must have finite components, not all zero"))
    }

    /// Indexes `doc` with its own embedding `own`, kept as given (the
    /// index holds the only copy: [`VectorIndex::embedding`] gives it
    /// back), following doc `prev` (see [`VectorIndex::link`]), replacing
    /// the doc if present. Gives `own` back, leaving the index unchanged,
    /// when it has the wrong dimension or is all zeros.
    pub fn insert_own(&mut self, doc: u32, own: Int8Vector, prev: Option<u32>) -> std::result::Result<(), Int8Vector> {
        if own.len() != self.dimensions || own.scale() == 0.0 || own.codes().iter().all(|&c| c == 0) {
            return Err(own);
        }
        self.remove(doc);
        self.tail.push(own.codes(), own.scale());
        self.tail_docs.push(doc);
        self.locations
            .insert(doc, Location::tail(self.tail_docs.len() - 1));
        self.link(doc, prev);
        if self.tail_docs.len() >= self.params.segment_threshold {
            self.compact();
        }
        Ok(())
    }

    /// Makes `doc`'s context vector its embedding plus the embedding of
    /// doc `prev` (the memory it follows), normalized; its embedding alone
    /// when `prev` is `None` or not in the tail with it. Links are kept
    /// in the tail's rows, so a scan scores a context from two dot
    /// products of its one pass; a segment's links are fixed when its graph
    /// is built, so a doc of a segment linked anew moves to the tail.
    /// Returns whether `doc` is indexed.
    pub fn link(&mut self, doc: u32, prev: Option<u32>) -> bool {
        let prev_row = |index: &Self| match prev.and_then(|p| index.locations.get(p)).map(Location::place) {
            Some(Place::Tail(row)) if prev != Some(doc) => Some(row),
            _ => None,
        };
        match self.locations.get(doc).map(Location::place) {
            None => false,
            Some(Place::Tail(row)) => {
                let wanted = prev_row(self);
                if self.tail.prev(row) != wanted {
                    self.tail.set_prev(row, wanted);
                }
                true
            }
            Some(Place::Segment { segment, row }) => {
                let held = &self.segments[segment];
                if held.prev_doc(row) == prev {
                    return true;
                }
                match self.remove(doc) {
                    Some(own) => self.insert_own(doc, own, prev).is_ok(),
                    None => false,
                }
            }
        }
    }

    /// The own embedding of `doc`, as it was inserted.
    pub fn embedding(&self, doc: u32) -> Option<Int8Ref<'_>> {
        let (rows, row) = match self.locations.get(doc)?.place() {
            Place::Tail(row) => (&self.tail, row),
            Place::Segment { segment, row } => (&*self.segments[segment].rows, row),
        };
        Some(Int8Ref::new(rows.code(row), rows.scale(row)))
    }

    #[cfg(any(test, feature = "testing"))]
    /// What `doc`'s context vector is made of, as the index holds it: its
    /// embedding, and its predecessor's doc and row (a segment's row of a
    /// doc removed since still serves until the segment is rebuilt).
    pub fn context_parts(&self, doc: u32) -> Option<(Int8Vector, Option<(u32, Int8Vector)>)> {
        let (rows, docs, row): (&Rows, &[u32], usize) = match self.locations.get(doc)?.place() {
            Place::Tail(row) => (&self.tail, &self.tail_docs, row),
            Place::Segment { segment, row } => {
                let held = &self.segments[segment];
                (&held.rows, &held.docs, row)
            }
        };
        let part = |row: usize| Int8Ref::new(rows.code(row), rows.scale(row)).to_vector();
        Some((part(row), rows.prev(row).map(|p| (docs[p], part(p)))))
    }

    /// Makes room for `additional` more docs in the tail without growing
    /// its doc map and lists as they fill (a store's open knows how many
    /// it loads: a map that doubles holds the old and the new table at
    /// once, and WebAssembly memory keeps that peak). Rows are in chunks
    /// that never double, so they need no room made.
    pub fn reserve(&mut self, additional: usize) {
        self.locations.reserve(additional);
        self.tail_docs.reserve(additional);
        self.tail.reserve(additional);
    }

    /// Frees the tail's unused room (what [`VectorIndex::reserve`] made
    /// for docs that did not come) at the end of an open, but for the
    /// writes that follow it ([`crate::room`]).
    pub fn leave_room(&mut self) {
        self.locations.leave_room();
        room::leave_room(&mut self.tail_docs);
        self.tail.leave_room();
    }

    #[cfg(any(test, feature = "testing"))]
    /// How many docs the tail's doc list holds without growing.
    pub fn tail_capacity(&self) -> usize {
        self.tail_docs.capacity()
    }

    /// Removes `doc`; returns its own embedding if it was present.
    pub fn remove(&mut self, doc: u32) -> Option<Int8Vector> {
        let own = self.embedding(doc)?.to_vector();
        match self.locations.remove(doc)?.place() {
            Place::Tail(row) => {
                self.tail.swap_remove(row);
                self.tail_docs.swap_remove(row);
                if let Some(&moved) = self.tail_docs.get(row) {
                    self.locations.insert(moved, Location::tail(row));
                }
            }
            Place::Segment { segment, row } => {
                let held = &mut self.segments[segment];
                held.live[row] = false;
                held.dead += 1;
                if held.dead * 4 > held.docs.len() {
                    self.rebuild_segment(segment);
                }
            }
        }
        Some(own)
    }

    /// The `k` docs whose context vectors are most similar to `query`
    /// among those `accept` lets through, with their cosine similarity,
    /// best first (ties: smaller doc first). A query of the wrong
    /// dimension, with a non-finite component or all zeros finds nothing.
    pub fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        if k == 0 || query.len() != self.dimensions {
            return Vec::new();
        }
        let Some(query) = Query::new(query) else {
            return Vec::new();
        };
        let mut top = TopK::new(k);
        // Every row's context score from its and its predecessor's dot
        // products, in one contiguous pass.
        self.tail.context_scores(
            |code, scale| query.score(code, scale),
            |row, score| {
                if let Some(&doc) = self.tail_docs.get(row) {
                    top.offer_accepted(doc, score, accept);
                }
            },
        );
        for segment in &self.segments {
            segment.search(&query, k, accept, &mut top);
        }
        top.into_sorted()
    }

    /// Builds the tail into a segment now instead of when it reaches the
    /// threshold (for a host with idle time); the tail is empty afterwards.
    pub fn compact(&mut self) {
        if self.tail_docs.is_empty() {
            return;
        }
        let rows = std::mem::replace(&mut self.tail, Rows::new(self.dimensions));
        let docs = std::mem::take(&mut self.tail_docs);
        self.segments.push(self.build_segment(rows, docs));
        self.relocate(self.segments.len() - 1);
        if self.segments.len() > self.params.max_segments {
            let mut rows = Rows::new(self.dimensions);
            let mut docs = Vec::new();
            for segment in &self.segments {
                segment.collect_live(&mut rows, &mut docs);
            }
            self.segments = vec![self.build_segment(rows, docs)];
            self.relocate(0);
        }
    }

#[cfg(any(test, feature = "testing"))]
    /// Number of indexed docs.
    pub fn len(&self) -> usize {
        self.locations.len()
    }

    /// Whether no doc is indexed.
    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }

#[cfg(any(test, feature = "testing"))]
    /// Whether `doc` is indexed.
    pub fn contains(&self, doc: u32) -> bool {
        self.locations.contains(doc)
    }

#[cfg(any(test, feature = "testing"))]
    /// Approximate heap bytes held: rows, doc lists, graphs (estimated from
    /// `instant-distance`'s layout) and the doc map.
    pub fn memory_bytes(&self) -> usize {
        self.tail.heap_bytes()
            + self.tail_docs.capacity() * size_of::<u32>()
            + self.segments.iter().map(Segment::heap_bytes).sum::<usize>()
            + self.locations.heap_bytes()
    }

    /// A segment over `rows` (exactly sized), built with this index's params.
    fn build_segment(&self, mut rows: Rows, mut docs: Vec<u32>) -> Segment {
        rows.shrink_to_fit();
        docs.shrink_to_fit();
        Segment::build(rows, docs, &self.params)
    }

    /// Rebuilds segment `index` from its live rows, or drops it if none is
    /// left.
    fn rebuild_segment(&mut self, index: usize) {
        let mut rows = Rows::new(self.dimensions);
        let mut docs = Vec::new();
        self.segments[index].collect_live(&mut rows, &mut docs);
        if docs.is_empty() {
            self.segments.remove(index);
            for later in index..self.segments.len() {
                self.relocate(later);
            }
        } else {
            self.segments[index] = self.build_segment(rows, docs);
            self.relocate(index);
        }
    }

    /// Points every live doc of segment `index` at its row.
    fn relocate(&mut self, index: usize) {
        let segment = &self.segments[index];
        for (row, &doc) in segment.docs.iter().enumerate() {
            if segment.live[row] {
                self.locations.insert(doc, Location::segment(index, row));
            }
        }
    }
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dimensions", &self.dimensions)
            .field("params", &self.params)
            .field("tail", &self.tail_docs.len())
            .field(
                "segments",
                &self
                    .segments
                    .iter()
                    .map(Segment::live_count)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_in_the_doc_table_is_eight_bytes() {
        assert_eq!(size_of::<Location>(), 8);
    }

    // The test kit's seeded generator: it holds no memtide types, so unit
    // tests can use it (the kit's other parts see a second copy of the crate).
    use memtide_testkit::rng::Rng;

    fn exact_cosine(a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| f64::from(x) * f64::from(y))
            .sum();
        let norm = |v: &[f32]| v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        dot / (norm(a) * norm(b))
    }

    /// Scores `pairs` through the quantized path; checks each error against
    /// the rounding bound and returns the mean and largest error.
    fn quantization_errors(pairs: &[(Vec<f32>, Vec<f32>)]) -> (f64, f64) {
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        for (query, vector) in pairs {
            let prepared = Query::new(query).unwrap();
            let unit = normalize(vector).unwrap();
            let row = Int8Vector::quantize(&unit);
            let scale = row.scale();
            let error =
                (f64::from(prepared.score(row.codes(), scale)) - exact_cosine(query, vector)).abs();
            // Each row component is off by at most scale / 2 and each query
            // component by at most query.scale / 2 (both unit vectors).
            let query_l1: f32 = normalize(query).unwrap().iter().map(|x| x.abs()).sum();
            let row_l1: f32 = unit.iter().map(|x| x.abs()).sum();
            let bound = f64::from(query_l1 * scale / 2.0 + row_l1 * prepared.scale / 2.0) + 1e-5;
            assert!(error <= bound, "error {error} above bound {bound}");
            sum += error;
            max = max.max(error);
        }
        (sum / pairs.len() as f64, max)
    }

    #[test]
    fn quantized_scores_stay_within_the_rounding_bound() {
        let mut rng = Rng(11);
        let random: Vec<_> = (0..2000)
            .map(|_| (rng.gaussian_vector(384), rng.gaussian_vector(384)))
            .collect();
        let center = rng.gaussian_vector(384);
        let near = |rng: &mut Rng| -> Vec<f32> {
            center.iter().map(|&c| c + 0.3 * rng.gaussian()).collect()
        };
        let clustered: Vec<_> = (0..2000)
            .map(|_| (near(&mut rng), near(&mut rng)))
            .collect();
        // One large component squeezes the others into few code steps.
        let outliers: Vec<_> = (0..2000)
            .map(|_| {
                let mut vector = rng.gaussian_vector(384);
                vector[7] = 40.0;
                (near(&mut rng), vector)
            })
            .collect();
        for (name, pairs, typical) in [
            ("random", &random, 1e-3),
            ("clustered", &clustered, 1e-3),
            ("outlier", &outliers, 3e-3),
        ] {
            let (mean, max) = quantization_errors(pairs);
            println!("{name}: mean |error| {mean:.2e}, max {max:.2e}");
            assert!(mean < typical, "{name}: mean error {mean}");
        }
    }

    #[test]
    fn normalize_rejects_zero_and_non_finite_and_survives_extremes() {
        assert!(normalize(&[0.0, 0.0]).is_none());
        assert!(normalize(&[]).is_none());
        assert!(normalize(&[1.0, f32::NAN]).is_none());
        assert!(normalize(&[f32::INFINITY, 1.0]).is_none());
        for vector in [[3e37f32, -4e37], [3e-38, -4e-38], [3.0, -4.0]] {
            let unit = normalize(&vector).unwrap();
            assert!(
                (unit[0] - 0.6).abs() < 1e-6 && (unit[1] + 0.8).abs() < 1e-6,
                "{unit:?}"
            );
        }
    }

    #[test]
    fn top_k_keeps_the_best_in_rank_order() {
        let mut rng = Rng(9);
        // Few distinct scores, so ties are common.
        let offers: Vec<(u32, f32)> = (0..500u32)
            .map(|doc| (doc, (rng.next_u64() % 20) as f32 / 4.0))
            .collect();
        let mut sorted = offers.clone();
        sorted.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        for k in [1, 3, 31, 32, 100, 499, 500, 10_000, usize::MAX] {
            let mut top = TopK::new(k);
            for &(doc, score) in &offers {
                top.offer(doc, score);
            }
            let want: Vec<_> = sorted.iter().copied().take(k).collect();
            assert_eq!(top.into_sorted(), want, "k {k}");

            // With a filter, consulted only for docs that could still enter.
            let odd = |doc: u32| doc % 2 == 1;
            let consulted = std::cell::Cell::new(0);
            let counting_odd = |doc: u32| {
                consulted.set(consulted.get() + 1);
                odd(doc)
            };
            let mut top = TopK::new(k);
            for &(doc, score) in &offers {
                top.offer_accepted(doc, score, &counting_odd);
            }
            let want: Vec<_> = sorted
                .iter()
                .copied()
                .filter(|&(d, _)| odd(d))
                .take(k)
                .collect();
            assert_eq!(top.into_sorted(), want, "k {k}, filtered");
            if k <= 3 {
                assert!(
                    consulted.get() < offers.len() / 2,
                    "k {k}: {}",
                    consulted.get()
                );
            }
        }
    }
}

#[cfg(test)]
mod location_tests {
    use super::*;
    use memtide_testkit::rng::Rng;
    use std::collections::BTreeMap;

    /// Two tenants' indexes over interleaved doc numbers (as the engine
    /// numbers docs across tenants), with removals, re-insertions of freed
    /// docs, re-links (which move a segment's doc to the tail) and
    /// segments built, merged and rebuilt: after each step every doc's
    /// embedding is the one last given, and at the end a search finds each
    /// doc of a tenant, and only them. A doc belongs to the second tenant
    /// when `shares` divides it: one in two keeps both doc tables lists,
    /// one in eight makes the smaller tenant's a hash table. Returns
    /// whether each table is a list.
    fn locations_follow_their_docs(shares: u32, seed: u64) -> [bool; 2] {
        let mut rng = Rng(seed);
        let params = VectorParams {
            segment_threshold: 24,
            max_segments: 3,
            ..VectorParams::default()
        };
        let mut indexes = [VectorIndex::new(8, params), VectorIndex::new(8, params)];
        // As an open reserves each tenant's index for its docs.
        indexes[0].reserve(160 - 160 / shares as usize);
        indexes[1].reserve(160 / shares as usize);
        let mut want: [BTreeMap<u32, Vec<i8>>; 2] = [BTreeMap::new(), BTreeMap::new()];
        for step in 0..1_500 {
            let doc = (rng.next_u64() % 160) as u32;
            let t = usize::from(doc.is_multiple_of(shares));
            match rng.next_u64() % 4 {
                0 => {
                    let removed = indexes[t].remove(doc).map(|v| v.codes().to_vec());
                    assert_eq!(removed, want[t].remove(&doc), "step {step}: remove {doc}");
                }
                1 => {
                    let prev = (rng.next_u64() % 160) as u32;
                    let linked = indexes[t].link(doc, Some(prev).filter(|&p| p != doc));
                    assert_eq!(linked, want[t].contains_key(&doc), "step {step}: link {doc}");
                }
                _ => {
                    let own = Int8Vector::quantize(&rng.gaussian_vector(8));
                    want[t].insert(doc, own.codes().to_vec());
                    indexes[t].insert_own(doc, own, None).unwrap();
                }
            }
            for (index, want) in indexes.iter().zip(&want) {
                assert_eq!(index.len(), want.len(), "step {step}");
                for doc in 0..160u32 {
                    let got = index.embedding(doc).map(|e| e.to_vector().codes().to_vec());
                    assert_eq!(got.as_ref(), want.get(&doc), "step {step}: doc {doc}");
                    assert_eq!(index.contains(doc), got.is_some(), "step {step}: doc {doc}");
                }
            }
        }
        for (index, want) in indexes.iter().zip(&want) {
            for (&doc, codes) in want {
                let query: Vec<f32> = codes.iter().map(|&c| f32::from(c)).collect();
                let found = index.search(&query, want.len(), &|_| true);
                assert!(found.iter().any(|&(d, _)| d == doc), "doc {doc} not found");
                assert!(found.len() == want.len() && found.iter().all(|(d, _)| want.contains_key(d)), "a doc not held");
            }
        }
        [indexes[0].locations.is_list(), indexes[1].locations.is_list()]
    }

    #[test]
    fn locations_follow_their_docs_across_two_tenants() {
        assert_eq!(locations_follow_their_docs(2, 5), [true, true]);
        assert_eq!(locations_follow_their_docs(8, 6), [true, false]);
    }
}
