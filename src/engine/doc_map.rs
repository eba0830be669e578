//! A map keyed by doc number, held as a list indexed by it: the docs of a
//! store are numbered densely from 0 (`Engine::allocate_doc` reuses the
//! freed ones), so a slot per doc costs less than a hash table's slot,
//! control byte and slack per key (`docs/speed.md`, "Heap per memory").

/// Values by doc number; see the module documentation.
pub(super) struct DocMap<T> {
    slots: Vec<Option<T>>,
    /// The slots that hold a value.
    len: usize,
}

impl<T> Default for DocMap<T> {
    fn default() -> Self {
        DocMap {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> DocMap<T> {
    /// Makes room for values of docs numbered below `docs` (exactly the
    /// first time: an open, which asks for its room, [`crate::room`]).
    pub(super) fn reserve(&mut self, docs: usize) {
        self.slots.reserve(docs.saturating_sub(self.slots.len()));
    }

    /// How many docs hold a value.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, doc: u32) -> Option<&T> {
        self.slots.get(doc as usize)?.as_ref()
    }

    pub(super) fn contains(&self, doc: u32) -> bool {
        self.get(doc).is_some()
    }

    /// Sets the value of `doc`, returning the one it replaces.
    pub(super) fn insert(&mut self, doc: u32, value: T) -> Option<T> {
        let at = doc as usize;
        if at >= self.slots.len() {
            self.slots.resize_with(at + 1, || None);
        }
        let old = self.slots.get_mut(at)?.replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub(super) fn remove(&mut self, doc: u32) -> Option<T> {
        let old = self.slots.get_mut(doc as usize)?.take();
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Every doc holding a value, with it, in doc order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        (0u32..).zip(&self.slots).filter_map(|(doc, slot)| Some((doc, slot.as_ref()?)))
    }

    /// Takes every value out, with its doc, in doc order.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = (u32, T)> + '_ {
        self.len = 0;
        (0u32..).zip(self.slots.drain(..)).filter_map(|(doc, slot)| Some((doc, slot?)))
    }
}
