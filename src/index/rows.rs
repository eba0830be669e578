//! The int8 rows of a vector index ([`crate::index::VectorIndex`]): each
//! memory's own embedding, held once, with the row of the memory it
//! follows and `1 / ‖own + predecessor‖`. A row's context vector (its
//! embedding plus its predecessor's, normalized: `crate::rank`) is then
//! scored from the dot products of one contiguous pass over the rows, as
//! `(d[row] + d[prev]) · inv_norm`: a lookup, not a second row
//! (`docs/speed.md`, "Heap per memory").
//!
//! The codes sit in chunks of [`ROWS_PER_CHUNK`] rows, each allocated for
//! exactly what it holds once it is past its first rows: a large index
//! never doubles one big allocation, which would leave up to half of it
//! unused and, while it moves, hold the old and the new copy at once
//! (WebAssembly memory never shrinks, so that peak would stay).
//!
//! The followers of each row are a list threaded through the rows (its
//! first follower, each follower's next sibling), so removing or moving a
//! row updates the rows that name it without scanning every row.

use memtide_int_dot::dot_i8_i8;

use crate::room;

/// Rows per chunk of [`Rows`]: 256 rows of 384 codes are 96 KiB. An open
/// frees each segment's bytes as it loads its rows, and the rows' chunks
/// go into the holes that leaves: chunks a fraction of a segment fill
/// them, where chunks of 1,024 rows left a remainder of each hole that
/// nothing reused and went on top of the memory every other time
/// (`docs/speed.md`, "Heap per memory").
pub(super) const ROWS_PER_CHUNK: usize = 256;

/// No row: a row without a predecessor among its rows, or a list's end.
const NO_ROW: u32 = u32::MAX;

/// Int8 rows with per-row scales and context links (see the module docs).
#[derive(Debug, Clone, Default)]
pub(super) struct Rows {
    dimensions: usize,
    chunks: Vec<Vec<i8>>,
    scales: Vec<f32>,
    /// Each row's predecessor among these rows ([`NO_ROW`]: none).
    prev: Vec<u32>,
    /// `1 / ‖row + predecessor‖` of the dequantized codes (the row alone
    /// without one); 0 when that sum is zero, so the row scores 0.
    inv_norms: Vec<f32>,
    /// The first row whose predecessor is this one.
    first_follower: Vec<u32>,
    /// The next row with the same predecessor.
    next_sibling: Vec<u32>,
}

/// A row number as the links hold it: rows are below the `u32` doc numbers
/// an index holds.
fn link(row: usize) -> u32 {
    u32::try_from(row).unwrap_or(NO_ROW)
}

impl Rows {
    pub(super) fn new(dimensions: usize) -> Self {
        Rows {
            dimensions,
            ..Rows::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.scales.len()
    }

    pub(super) fn code(&self, row: usize) -> &[i8] {
        let start = row % ROWS_PER_CHUNK * self.dimensions;
        &self.chunks[row / ROWS_PER_CHUNK][start..start + self.dimensions]
    }

    pub(super) fn scale(&self, row: usize) -> f32 {
        self.scales[row]
    }

    /// The predecessor of `row` among these rows.
    pub(super) fn prev(&self, row: usize) -> Option<usize> {
        let prev = self.prev[row];
        (prev != NO_ROW).then_some(prev as usize)
    }

    /// Makes room for `additional` more rows' scales and links (the codes
    /// are in chunks that never double).
    pub(super) fn reserve(&mut self, additional: usize) {
        self.scales.reserve(additional);
        self.prev.reserve(additional);
        self.inv_norms.reserve(additional);
        self.first_follower.reserve(additional);
        self.next_sibling.reserve(additional);
    }

    /// Appends a row without a predecessor; returns its number.
    pub(super) fn push(&mut self, code: &[i8], scale: f32) -> usize {
        let full = ROWS_PER_CHUNK * self.dimensions;
        let row = self.len();
        if row.is_multiple_of(ROWS_PER_CHUNK) {
            self.chunks.push(Vec::new());
        }
        if let Some(chunk) = self.chunks.last_mut() {
            if chunk.len() + code.len() > chunk.capacity() {
                // Doubling within the chunk (small indexes stay small), capped
                // at the full chunk.
                let wanted = (2 * chunk.capacity()).max(8 * code.len()).min(full);
                chunk.reserve_exact(wanted.max(chunk.len() + code.len()) - chunk.len());
            }
            chunk.extend_from_slice(code);
        }
        self.scales.push(scale);
        self.prev.push(NO_ROW);
        self.inv_norms.push(0.0);
        self.first_follower.push(NO_ROW);
        self.next_sibling.push(NO_ROW);
        self.inv_norms[row] = self.inv_norm(row, None);
        row
    }

    /// `1 / ‖row + prev‖` of the dequantized codes, 0 for a zero sum.
    fn inv_norm(&self, row: usize, prev: Option<usize>) -> f32 {
        let own = self.code(row);
        let scale = f64::from(self.scales[row]);
        let sum: f64 = match prev {
            None => own.iter().map(|&c| (f64::from(c) * scale).powi(2)).sum(),
            Some(p) => {
                let prev_scale = f64::from(self.scales[p]);
                own.iter()
                    .zip(self.code(p))
                    .map(|(&a, &b)| (f64::from(a) * scale + f64::from(b) * prev_scale).powi(2))
                    .sum()
            }
        };
        let inv = 1.0 / sum.sqrt();
        if inv.is_finite() {
            inv as f32
        } else {
            0.0
        }
    }

    /// Makes `prev` the predecessor of `row` (`None`, or `row` itself:
    /// none), and its norm the norm of their sum.
    pub(super) fn set_prev(&mut self, row: usize, prev: Option<usize>) {
        self.detach(row);
        let prev = prev.filter(|&p| p != row && p < self.len());
        if let Some(p) = prev {
            self.prev[row] = link(p);
            self.next_sibling[row] = self.first_follower[p];
            self.first_follower[p] = link(row);
        }
        self.inv_norms[row] = self.inv_norm(row, prev);
    }

    /// Takes `row` out of its predecessor's list of followers.
    fn detach(&mut self, row: usize) {
        let Some(p) = self.prev(row) else {
            return;
        };
        let after = self.next_sibling[row];
        self.replace_in_list(p, link(row), after);
        self.prev[row] = NO_ROW;
        self.next_sibling[row] = NO_ROW;
    }

    /// In the list of `p`'s followers, puts `new` where `old` is (`new`
    /// being [`NO_ROW`] or the rest of the list removes `old`).
    fn replace_in_list(&mut self, p: usize, old: u32, new: u32) {
        if self.first_follower[p] == old {
            self.first_follower[p] = new;
            return;
        }
        let mut at = self.first_follower[p];
        while at != NO_ROW {
            let next = self.next_sibling[at as usize];
            if next == old {
                self.next_sibling[at as usize] = new;
                return;
            }
            at = next;
        }
    }

    /// Removes `row` by moving the last row into its place. The rows that
    /// followed it are scored by their own embedding from then on; the
    /// links of the moved row and of its followers follow it.
    pub(super) fn swap_remove(&mut self, row: usize) {
        self.detach(row);
        let mut follower = std::mem::replace(&mut self.first_follower[row], NO_ROW);
        while follower != NO_ROW {
            let f = follower as usize;
            follower = self.next_sibling[f];
            self.prev[f] = NO_ROW;
            self.next_sibling[f] = NO_ROW;
            self.inv_norms[f] = self.inv_norm(f, None);
        }
        let last = self.len() - 1;
        let width = self.dimensions;
        if row != last {
            let moved = self.code(last).to_vec();
            let start = row % ROWS_PER_CHUNK * width;
            self.chunks[row / ROWS_PER_CHUNK][start..start + width].copy_from_slice(&moved);
            self.scales[row] = self.scales[last];
            self.inv_norms[row] = self.inv_norms[last];
            self.prev[row] = self.prev[last];
            self.next_sibling[row] = self.next_sibling[last];
            self.first_follower[row] = self.first_follower[last];
            if let Some(p) = self.prev(row) {
                self.replace_in_list(p, link(last), link(row));
            }
            let mut follower = self.first_follower[row];
            while follower != NO_ROW {
                self.prev[follower as usize] = link(row);
                follower = self.next_sibling[follower as usize];
            }
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.truncate(chunk.len() - width);
        }
        if last.is_multiple_of(ROWS_PER_CHUNK) {
            self.chunks.pop();
        }
        self.scales.pop();
        self.prev.pop();
        self.inv_norms.pop();
        self.first_follower.pop();
        self.next_sibling.pop();
    }

    /// Every row's codes and scale, in row order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[i8], f32)> {
        // `chunks_exact` refuses a zero size; an index of zero dimensions
        // never holds a row, so the clamp changes nothing.
        let width = self.dimensions.max(1);
        self.chunks
            .iter()
            .flat_map(move |chunk| chunk.chunks_exact(width))
            .zip(self.scales.iter().copied())
    }

    /// Calls `score(row, context score)` for every row, in row order: the
    /// one contiguous pass of a scan. The dot products are taken a chunk
    /// at a time, each row's predecessor's read from its chunk's when it
    /// is in the same chunk (as a conversation's rows mostly are) and
    /// taken again otherwise: a scan of 100,000 rows held every row's dot
    /// product at once (400 KB), which a large index's first answer left
    /// in linear memory for good.
    pub(super) fn context_scores(
        &self,
        dot: impl Fn(&[i8], f32) -> f32,
        mut score: impl FnMut(usize, f32),
    ) {
        let width = self.dimensions.max(1);
        let mut dots = Vec::with_capacity(ROWS_PER_CHUNK.min(self.len()));
        for (chunk, first) in self.chunks.iter().zip((0..).step_by(ROWS_PER_CHUNK)) {
            let scales = self.scales.get(first..).unwrap_or_default();
            dots.clear();
            dots.extend(
                chunk
                    .chunks_exact(width)
                    .zip(scales)
                    .map(|(code, &scale)| dot(code, scale)),
            );
            let end = first + dots.len();
            let links = self.prev.get(first..end).unwrap_or_default();
            let norms = self.inv_norms.get(first..end).unwrap_or_default();
            for (row, ((&own, &prev), &norm)) in (first..).zip(dots.iter().zip(links).zip(norms)) {
                let prev = match prev as usize {
                    _ if prev == NO_ROW => 0.0,
                    p if (first..end).contains(&p) => dots[p - first],
                    p => dot(self.code(p), self.scales[p]),
                };
                score(row, (own + prev) * norm);
            }
        }
    }

    /// The context score of `row` alone: `dot` of its row and of its
    /// predecessor's (a graph's candidate).
    pub(super) fn context_score_of(&self, row: usize, dot: impl Fn(&[i8], f32) -> f32) -> f32 {
        let own = dot(self.code(row), self.scales[row]);
        let prev = self
            .prev(row)
            .map_or(0.0, |p| dot(self.code(p), self.scales[p]));
        (own + prev) * self.inv_norms[row]
    }

    /// The cosine of two rows' context vectors (a graph's distance): up to
    /// four exact int8 dot products, each row with its predecessor.
    pub(super) fn context_cosine(&self, a: usize, other: &Rows, b: usize) -> f32 {
        let pair = |x: usize, y: usize| {
            dot_i8_i8(self.code(x), other.code(y)) as f32 * self.scales[x] * other.scales[y]
        };
        let (pa, pb) = (self.prev(a), other.prev(b));
        let mut sum = pair(a, b);
        if let Some(pa) = pa {
            sum += pair(pa, b);
        }
        if let Some(pb) = pb {
            sum += pair(a, pb);
        }
        if let (Some(pa), Some(pb)) = (pa, pb) {
            sum += pair(pa, pb);
        }
        sum * self.inv_norms[a] * other.inv_norms[b]
    }

    /// Frees the unused capacity (of a segment's rows, which never grow).
    pub(super) fn shrink_to_fit(&mut self) {
        self.fit(false);
    }

    /// Frees the unused capacity of a loaded tail but for the rows written
    /// after the open ([`crate::room`]).
    pub(super) fn leave_room(&mut self) {
        self.fit(true);
    }

    fn fit(&mut self, room: bool) {
        fn fit<T>(list: &mut Vec<T>, room: bool) {
            match room {
                true => room::leave_room(list),
                false => list.shrink_to_fit(),
            }
        }
        if let Some(chunk) = self.chunks.last_mut() {
            fit(chunk, room);
        }
        fit(&mut self.chunks, room);
        fit(&mut self.scales, room);
        fit(&mut self.prev, room);
        fit(&mut self.inv_norms, room);
        fit(&mut self.first_follower, room);
        fit(&mut self.next_sibling, room);
    }

    #[cfg(any(test, feature = "testing"))]
    pub(super) fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.chunks.capacity() * size_of::<Vec<i8>>()
            + (self.scales.capacity() + self.inv_norms.capacity()) * size_of::<f32>()
            + (self.prev.capacity() + self.first_follower.capacity() + self.next_sibling.capacity())
                * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtide_testkit::rng::Rng;

    /// The followers of `row` as the links list them, sorted.
    fn followers(rows: &Rows, row: usize) -> Vec<usize> {
        let mut listed = Vec::new();
        let mut at = rows.first_follower[row];
        while at != NO_ROW {
            listed.push(at as usize);
            at = rows.next_sibling[at as usize];
        }
        listed.sort_unstable();
        listed
    }

    /// The links agree: each row is in the list of its predecessor and of
    /// no other, and each norm is the norm of the row with its predecessor.
    fn assert_consistent(rows: &Rows) {
        for row in 0..rows.len() {
            let named: Vec<usize> = (0..rows.len())
                .filter(|&f| rows.prev(f) == Some(row))
                .collect();
            assert_eq!(followers(rows, row), named, "followers of row {row}");
            assert_eq!(rows.inv_norms[row], rows.inv_norm(row, rows.prev(row)), "row {row}");
        }
    }

    #[test]
    fn swap_remove_moves_the_last_row_and_its_links_into_the_hole() {
        let mut rows = Rows::new(2);
        rows.push(&[1, 2], 0.5);
        rows.push(&[3, 4], 0.25);
        rows.push(&[5, 6], 0.125);
        rows.set_prev(1, Some(2));
        rows.set_prev(2, Some(0));
        rows.swap_remove(0);
        // Row 2 moved to 0 and no longer follows the removed row; row 1
        // still follows it at its new place.
        assert_eq!(rows.code(0), [5, 6]);
        assert_eq!(rows.code(1), [3, 4]);
        assert_eq!(rows.scales, [0.125, 0.25]);
        assert_eq!((rows.prev(0), rows.prev(1)), (None, Some(0)));
        assert_consistent(&rows);
        rows.swap_remove(1);
        assert_eq!(rows.chunks, [vec![5, 6]]);
        assert_eq!(rows.len(), 1);
        assert_consistent(&rows);
        rows.swap_remove(0);
        assert!(rows.chunks.is_empty() && rows.len() == 0);
    }

    #[test]
    fn links_stay_consistent_under_random_links_and_removals() {
        let mut rng = Rng(23);
        let width = 4;
        let mut rows = Rows::new(width);
        let mut pushed = 0i64;
        for step in 0..3000 {
            match rng.next_u64() % 5 {
                0 | 1 => {
                    let code: Vec<i8> = (0..width).map(|i| ((pushed * 7 + i as i64) % 200 - 100) as i8).collect();
                    rows.push(&code, 0.01 + (pushed % 5) as f32 * 0.01);
                    pushed += 1;
                }
                2 | 3 if rows.len() > 1 => {
                    let row = rng.next_u64() as usize % rows.len();
                    let prev = rng.next_u64() as usize % (rows.len() + 1);
                    rows.set_prev(row, (prev < rows.len()).then_some(prev));
                }
                _ if rows.len() > 0 => rows.swap_remove(rng.next_u64() as usize % rows.len()),
                _ => {}
            }
            if step % 97 == 0 {
                assert_consistent(&rows);
            }
        }
        assert_consistent(&rows);
    }

    /// A scan's context scores, taken a chunk at a time, are each row's
    /// and its predecessor's dot products as a scan of every row's would
    /// give, bit for bit: predecessors in the same chunk, in an earlier
    /// or a later one, and none.
    #[test]
    fn context_scores_across_chunks_are_those_of_every_rows_dots() {
        let mut rng = Rng(41);
        let width = 8;
        let mut rows = Rows::new(width);
        let count = 3 * ROWS_PER_CHUNK + 17;
        for _ in 0..count {
            let code: Vec<i8> = (0..width).map(|_| (rng.next_u64() % 255) as i8).collect();
            rows.push(&code, 0.001 + rng.uniform() as f32 * 0.01);
        }
        for row in 1..count {
            let prev = match rng.next_u64() % 4 {
                0 => None,
                1 => Some(row - 1),
                _ => Some(rng.next_u64() as usize % count).filter(|&p| p != row),
            };
            rows.set_prev(row, prev);
        }
        let query: Vec<f32> = (0..width).map(|_| rng.signed()).collect();
        let dot = |code: &[i8], scale: f32| -> f32 {
            code.iter().zip(&query).map(|(&c, &q)| f32::from(c) * q).sum::<f32>() * scale
        };
        let dots: Vec<f32> = rows.iter().map(|(code, scale)| dot(code, scale)).collect();
        let mut scored = Vec::new();
        rows.context_scores(dot, |row, score| scored.push((row, score)));
        assert_eq!(scored.len(), count);
        let crossing = (0..count)
            .filter(|&row| rows.prev(row).is_some_and(|p| p / ROWS_PER_CHUNK != row / ROWS_PER_CHUNK))
            .count();
        assert!(crossing > ROWS_PER_CHUNK, "{crossing} predecessors in another chunk");
        for (at, &(row, score)) in scored.iter().enumerate() {
            assert_eq!(row, at);
            let prev = rows.prev(row).map_or(0.0, |p| dots[p]);
            let expected = (dots[row] + prev) * rows.inv_norms[row];
            assert_eq!(score.to_bits(), expected.to_bits(), "row {row}");
        }
        let mut none = 0;
        Rows::new(width).context_scores(dot, |_, _| none += 1);
        assert_eq!(none, 0);
    }

    #[test]
    fn rows_span_chunks_allocated_for_what_they_hold() {
        let width = 3;
        let code = |row: usize| -> Vec<i8> { (0..width).map(|i| (row * 7 + i) as i8).collect() };
        let mut rows = Rows::new(width);
        let count = 2 * ROWS_PER_CHUNK + 5;
        for row in 0..count {
            rows.push(&code(row), row as f32);
        }
        assert_eq!(rows.chunks.len(), 3);
        assert!(rows.chunks[..2]
            .iter()
            .all(|chunk| chunk.capacity() == ROWS_PER_CHUNK * width));
        assert!(rows.chunks[2].capacity() < ROWS_PER_CHUNK * width);
        for row in [0, ROWS_PER_CHUNK - 1, ROWS_PER_CHUNK, count - 1] {
            assert_eq!(rows.code(row), code(row), "row {row}");
        }
        let listed: Vec<(Vec<i8>, f32)> = rows.iter().map(|(c, s)| (c.to_vec(), s)).collect();
        assert_eq!(listed.len(), count);
        assert!(listed
            .iter()
            .enumerate()
            .all(|(row, (c, s))| *c == code(row) && *s == row as f32));
        // Removing rows from the first chunk pulls the last rows across
        // chunks and drops the emptied last chunk.
        for removed in 0..6 {
            rows.swap_remove(removed);
            assert_eq!(rows.code(removed), code(count - 1 - removed));
        }
        assert_eq!((rows.len(), rows.chunks.len()), (2 * ROWS_PER_CHUNK - 1, 2));
        assert_eq!(rows.iter().count(), rows.len());
    }
}
