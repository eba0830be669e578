//! The memories that follow each memory in its conversation (their
//! `follows`), threaded through the doc numbers of the followers: a
//! memory's followers are a ring of docs, held at the doc of the memory
//! they follow, or by its id while the catalog does not hold it (erased,
//! or not loaded yet). No allocation per memory: two numbers per doc
//! where a map held a boxed list per followed memory (`docs/speed.md`,
//! "Heap per memory").

use super::catalog::{FastMap, Id};

/// No doc.
const NONE: u32 = u32::MAX;

/// The memory whose followers are read or changed: its doc number when the
/// catalog holds it, else its id.
#[derive(Clone, Copy)]
pub(super) enum Followed<'a> {
    Doc(u32),
    Absent(&'a str),
}

/// The links of one doc.
#[derive(Clone, Copy)]
struct Links {
    /// The last of the docs that follow this doc's memory, `NONE` if none.
    last: u32,
    /// The doc that follows the same memory as this one next, in the order
    /// they were added; the last one's next is the first (a ring), so both
    /// ends of a list are a step from its `last`.
    next: u32,
}

const UNLINKED: Links = Links { last: NONE, next: NONE };

/// The followers of every memory; see the module documentation.
#[derive(Default)]
pub(super) struct Followers {
    /// By doc number; docs beyond its end have no links.
    links: Vec<Links>,
    /// The last follower of each memory the catalog does not hold, by id:
    /// the memory's doc adopts them when it comes ([`Followers::arrive`])
    /// and gives them back here when it goes ([`Followers::leave`]).
    absent: FastMap<Id, u32>,
}

impl Followers {
    /// Makes room for the links of docs numbered below `docs`: exactly
    /// the first time (an open, which asks for its room,
    /// [`crate::room`]), by doubling after that (not a copy of every link
    /// on each write or refresh that brings new docs).
    pub(super) fn reserve(&mut self, docs: usize) {
        self.links.reserve(docs.saturating_sub(self.links.len()));
    }

    /// The docs that follow `followed`, in the order they were added.
    pub(super) fn of(&self, followed: Followed<'_>) -> impl Iterator<Item = u32> + '_ {
        let last = self.last(followed);
        std::iter::successors(Some(self.next(last)).filter(|&d| d != NONE), move |&d| {
            Some(self.next(d)).filter(|&n| d != last && n != NONE)
        })
    }

    /// Adds `follower` after the followers of `followed`; `key` makes the
    /// id under which a memory the catalog does not hold keeps them.
    pub(super) fn add(&mut self, followed: Followed<'_>, follower: u32, key: impl FnOnce() -> Id) {
        let last = self.last(followed);
        let first = match last {
            NONE => follower,
            last => self.next(last),
        };
        self.link(follower).next = first;
        match (followed, last) {
            (Followed::Absent(_), NONE) => {
                self.absent.insert(key(), follower);
            }
            (_, NONE) => self.set_last(followed, follower),
            (_, last) => {
                self.link(last).next = follower;
                self.set_last(followed, follower);
            }
        }
    }

    /// Takes `follower` out of the followers of `followed`.
    pub(super) fn remove(&mut self, followed: Followed<'_>, follower: u32) {
        let last = self.last(followed);
        if last == NONE {
            return;
        }
        // The doc before `follower` in the ring.
        let mut before = last;
        while self.next(before) != follower {
            before = self.next(before);
            if before == last || before == NONE {
                return;
            }
        }
        let after = self.next(follower);
        self.link(follower).next = NONE;
        if before == follower {
            // It was the only one.
            self.set_last(followed, NONE);
        } else {
            self.link(before).next = after;
            if last == follower {
                self.set_last(followed, before);
            }
        }
    }

    /// The catalog now holds memory `id` at `doc`: its followers, kept by
    /// its id until now, are kept at its doc.
    pub(super) fn arrive(&mut self, id: &str, doc: u32) {
        if self.absent.is_empty() {
            return;
        }
        if let Some(last) = self.absent.remove(id) {
            self.link(doc).last = last;
        }
    }

    /// The catalog no longer holds memory `id` at `doc`, which a memory
    /// may take next: its followers are kept by its id.
    pub(super) fn leave(&mut self, id: Id, doc: u32) {
        let last = self.last(Followed::Doc(doc));
        if last != NONE {
            self.link(doc).last = NONE;
            self.absent.insert(id, last);
        }
    }

    fn last(&self, followed: Followed<'_>) -> u32 {
        match followed {
            Followed::Doc(doc) => self.links.get(doc as usize).map_or(NONE, |l| l.last),
            Followed::Absent(id) => self.absent.get(id).copied().unwrap_or(NONE),
        }
    }

    /// Makes `last` the last follower of `followed`, which has followers
    /// (`NONE`: has none left).
    fn set_last(&mut self, followed: Followed<'_>, last: u32) {
        match followed {
            Followed::Doc(doc) => self.link(doc).last = last,
            Followed::Absent(id) if last == NONE => {
                self.absent.remove(id);
            }
            Followed::Absent(id) => {
                if let Some(held) = self.absent.get_mut(id) {
                    *held = last;
                }
            }
        }
    }

    fn next(&self, doc: u32) -> u32 {
        self.links.get(doc as usize).map_or(NONE, |l| l.next)
    }

    /// The links of `doc`, made if it had none.
    fn link(&mut self, doc: u32) -> &mut Links {
        let at = doc as usize;
        if at >= self.links.len() {
            self.links.resize(at + 1, UNLINKED);
        }
        &mut self.links[at]
    }
}
