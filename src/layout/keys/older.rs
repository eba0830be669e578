//! The older versions of one key in the key map: the places of the
//! segments holding them, ascending.
//!
//! Why not a `Vec<u32>`: a key gains an older version each time a commit
//! writes it again while a segment still holds it, which a usage mark does
//! for every memory a query returns. Most such keys have exactly one older
//! version, and a list of its own for it was an allocation per key: over
//! 3,000 queries marking their hits used at 100,000 memories the key map
//! grew by 1.6 MiB and 30,000 allocations (`docs/speed.md`, "Fifteenth
//! session"). One place is held inline; more in an exact list, which
//! grows rarely.

/// One or more segment places, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Older {
    One(u32),
    Many(Box<[u32]>),
}

impl Older {
    /// The places, ascending.
    pub(super) fn as_slice(&self) -> &[u32] {
        match self {
            Older::One(place) => std::slice::from_ref(place),
            Older::Many(places) => places,
        }
    }

    /// `places` held, or `None` when there are none.
    pub(super) fn from_vec(mut places: Vec<u32>) -> Option<Older> {
        match places[..] {
            [] => None,
            [place] => Some(Older::One(place)),
            _ => {
                places.shrink_to_fit();
                Some(Older::Many(places.into_boxed_slice()))
            }
        }
    }

    /// The places as a list.
    pub(super) fn into_vec(self) -> Vec<u32> {
        match self {
            Older::One(place) => vec![place],
            Older::Many(places) => places.into_vec(),
        }
    }

    /// `held` with `place` (newer than every place held) added.
    pub(super) fn with(held: Option<Older>, place: u32) -> Older {
        match held {
            None => Older::One(place),
            Some(Older::One(first)) => Older::Many(Box::new([first, place])),
            Some(Older::Many(places)) => {
                let mut places = places.into_vec();
                places.push(place);
                Older::Many(places.into_boxed_slice())
            }
        }
    }

    /// Bytes its list takes beside the entry (none when inline).
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        self.as_slice().len() * 4 * usize::from(matches!(self, Older::Many(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_kept_in_order_one_inline_more_in_a_list() {
        let one = Older::with(None, 3);
        assert_eq!(one, Older::One(3));
        assert_eq!(one.heap_bytes(), 0);
        let two = Older::with(Some(one), 5);
        assert_eq!(two.as_slice(), [3, 5]);
        let three = Older::with(Some(two), 9);
        assert_eq!(three.as_slice(), [3, 5, 9]);
        assert_eq!(three.heap_bytes(), 12);
        assert_eq!(three.clone().into_vec(), vec![3, 5, 9]);
        assert_eq!(Older::from_vec(vec![]), None);
        assert_eq!(Older::from_vec(vec![7]), Some(Older::One(7)));
        assert_eq!(Older::from_vec(vec![3, 5, 9]), Some(three));
    }

    #[test]
    fn one_place_takes_no_more_room_than_a_list_would() {
        // Held inline in the key map's side table: no larger than the
        // `Vec<u32>` it replaces.
        assert!(size_of::<Older>() <= size_of::<Vec<u32>>());
    }
}
