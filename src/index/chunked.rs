//! A list grown a chunk at a time: pushing never moves a full chunk.
//!
//! Why: in WebAssembly linear memory never shrinks, so a list that doubles
//! while a store opens holds its old and new buffers at once, and that
//! moment can set the memory's high-water mark. At 100,000 memories BM25's
//! term slots (2.5 MiB) and docs (2 MiB) did, two thirds of the way
//! through the open (`docs/speed.md`, "Sixteenth session"). Chunks of a
//! bounded size grow by one chunk, hold at most one chunk of room, and are
//! small enough to go into holes other allocations left. A chunk grows as
//! a list does (doubling) up to its bound, so a small list (an index of a
//! tenant with a few memories) takes what it holds, not a whole chunk.

use std::ops::{Index, IndexMut};

/// Values per chunk: a power of two, so a place is a shift and a mask.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A list of `T` in chunks of [`CHUNK`] values.
#[derive(Debug, Clone)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `value`; a full last chunk gets a new one beside it.
    pub(crate) fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => {
                if chunk.len() == chunk.capacity() {
                    // Doubling, up to the chunk's bound.
                    chunk.reserve_exact(chunk.len().max(4).min(CHUNK - chunk.len()));
                }
                chunk.push(value);
            }
            _ => {
                let mut chunk = Vec::new();
                chunk.reserve_exact(4);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub(crate) fn get(&self, at: usize) -> Option<&T> {
        self.chunks.get(at >> CHUNK_BITS)?.get(at & (CHUNK - 1))
    }

    pub(crate) fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        self.chunks.get_mut(at >> CHUNK_BITS)?.get_mut(at & (CHUNK - 1))
    }
}

/// Panics past the end, as a slice's index does: the index's callers hold
/// the places they index (a term's id, a doc's slot) as a `Vec`'s were.
impl<T> Index<usize> for Chunked<T> {
    type Output = T;

    fn index(&self, at: usize) -> &T {
        &self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)]
    }
}

impl<T> IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, at: usize) -> &mut T {
        &mut self.chunks[at >> CHUNK_BITS][at & (CHUNK - 1)]
    }
}

/// The values in order.
impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_list_takes_what_it_holds() {
        let mut list = Chunked::default();
        for n in 0..5u64 {
            list.push(n);
        }
        assert_eq!(list.chunks[0].capacity(), 8);
        for n in 5..CHUNK as u64 {
            list.push(n);
        }
        assert_eq!((list.chunks.len(), list.chunks[0].capacity()), (1, CHUNK));
    }

    #[test]
    fn values_keep_their_places_and_never_move() {
        let mut list = Chunked::default();
        let mut plain = Vec::new();
        let mut first = None;
        for n in 0..3 * CHUNK + 5 {
            list.push(n * 7);
            plain.push(n * 7);
            // Once its chunk is full, the first value stays where it is.
            if list.len() >= CHUNK {
                let at = first.get_or_insert(&list[0] as *const usize);
                assert_eq!(*at, &list[0] as *const usize);
            }
        }
        assert_eq!(list.len(), plain.len());
        assert_eq!(list.chunks.len(), 4);
        // Full chunks hold a chunk; the last what it needs, doubling.
        assert!(list.chunks[..3].iter().all(|chunk| chunk.capacity() == CHUNK));
        assert_eq!(list.chunks[3].capacity(), 8);
        assert!((&list).into_iter().eq(plain.iter()));
        for at in [0, 1, CHUNK - 1, CHUNK, 2 * CHUNK + 3, plain.len() - 1] {
            assert_eq!(list[at], plain[at]);
            assert_eq!(list.get(at), Some(&plain[at]));
        }
        assert_eq!(list.get(plain.len()), None);
        list[CHUNK] = 1;
        *list.get_mut(CHUNK + 1).unwrap() = 2;
        assert_eq!((list[CHUNK - 1], list[CHUNK], list[CHUNK + 1]), (plain[CHUNK - 1], 1, 2));
        assert_eq!(list.get_mut(plain.len()), None);
    }
}
