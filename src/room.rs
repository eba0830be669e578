//! The room an opened store's per-memory lists keep for the writes that
//! follow the open.
//!
//! An open sizes each list indexed by doc number, slot or term (BM25's
//! docs and terms, the docs' owners, the followers' links, the key map's
//! slots, the doc tables) for what the store holds, so that nothing is
//! left unused. Left at exactly that, the first memory written after the
//! open doubles every one of them: at 100,000 memories that raised a
//! Worker's linear memory by about 11 MiB on each cold start that wrote
//! anything, which never comes back. A 32nd more (and a few) is room for
//! the writes of a request or a session at a small cost, and a list that
//! outgrows it doubles as any other (`docs/speed.md`, "The first write
//! after an open").

/// The capacity a list of `len` values is given by an open: `len`, a
/// 32nd more, and 16.
pub(crate) const fn with_room(len: usize) -> usize {
    len.saturating_add(len / 32).saturating_add(16)
}

/// Frees what `list` holds beyond [`with_room`] of its length; a list with
/// less room keeps its capacity.
pub(crate) fn leave_room<T>(list: &mut Vec<T>) {
    list.shrink_to(with_room(list.len()));
}

/// Makes room in `list` for [`with_room`] of `len` values at least.
pub(crate) fn make_room<T>(list: &mut Vec<T>, len: usize) {
    list.reserve_exact(with_room(len).saturating_sub(list.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_list_keeps_a_32nd_more_room() {
        let mut list: Vec<u32> = Vec::with_capacity(10_000);
        list.extend(0..3_200);
        leave_room(&mut list);
        assert_eq!(list.capacity(), 3_200 + 100 + 16);
        // A list with less room is not grown.
        let mut exact: Vec<u32> = (0..3_200).collect();
        exact.shrink_to_fit();
        leave_room(&mut exact);
        assert_eq!(exact.capacity(), 3_200);
        make_room(&mut exact, 3_200);
        assert_eq!(exact.capacity(), 3_316);
        // Writing its room's worth does not move it.
        let at = exact.as_ptr();
        exact.extend(0..116);
        assert_eq!(exact.as_ptr(), at);
    }
}
