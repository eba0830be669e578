//! One shared copy of each value that many of the catalog's keys hold
//! (scopes): the keys hold an `Arc` to it rather than a
//! copy each, and the copy goes when the last key does.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::{Arc, Weak};

use crate::fast_hash::FastSet;

/// The shared copies of the values of type `T` some key holds.
///
/// A copy is dropped by [`Interner::release`] when only the interner and
/// the handle being released hold it: every key that holds a copy must
/// give it back through `release` when it goes, or the copy stays until
/// the engine does (a leak, never a wrong answer).
pub(super) struct Interner<T: ?Sized> {
    shared: FastSet<Arc<T>>,
    /// The copy `share` gave last, weakly: the memories a store opens
    /// with mostly share the scope and speaker of the one before, and
    /// comparing with it is cheaper than hashing the value (a scope's five
    /// fields). A copy that can still be upgraded is in `shared`: `release`
    /// takes a copy out only when the set and the handle released are its
    /// last holders.
    last: Option<Weak<T>>,
}

impl<T: ?Sized> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            shared: FastSet::default(),
            last: None,
        }
    }
}

impl<T: ?Sized + Eq + Hash> Interner<T> {
    /// The shared copy of `value`, if a key holds one.
    pub(super) fn get<Q>(&self, value: &Q) -> Option<&Arc<T>>
    where
        Arc<T>: Borrow<Q>,
        Q: ?Sized + Eq + Hash,
    {
        self.shared.get(value)
    }

    /// The shared copy of `value`, made if there is none.
    pub(super) fn share(&mut self, value: &T) -> Arc<T>
    where
        T: ToOwned,
        Arc<T>: From<T::Owned>,
    {
        if let Some(last) = self.last.as_ref().and_then(Weak::upgrade) {
            if *last == *value {
                return last;
            }
        }
        let shared = match self.shared.get(value) {
            Some(shared) => shared.clone(),
            None => {
                let shared = Arc::<T>::from(value.to_owned());
                self.shared.insert(shared.clone());
                shared
            }
        };
        self.last = Some(Arc::downgrade(&shared));
        shared
    }

    /// Gives back a handle `share` made, dropping the shared copy once no
    /// other handle holds it.
    pub(super) fn release(&mut self, handle: Arc<T>) {
        // The set's copy and `handle`: no key holds it any more.
        if Arc::strong_count(&handle) == 2 {
            self.shared.remove(&*handle);
        }
    }

    /// How many distinct values are shared.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.shared.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.shared.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Interner;
    use crate::item::Scope;

    #[test]
    fn equal_values_share_one_copy() {
        let mut names: Interner<str> = Interner::default();
        let a = names.share("Caroline");
        let b = names.share(&String::from("Caroline"));
        let c = names.share("Melanie");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(names.len(), 2);
        // The interner's copy and the two handles.
        assert_eq!(Arc::strong_count(&a), 3);
    }

    #[test]
    fn the_copy_goes_with_its_last_handle() {
        let mut scopes: Interner<Scope> = Interner::default();
        let scope = Scope::workspace("alice", "w");
        let first = scopes.share(&scope);
        let second = scopes.share(&scope);
        let freed = Arc::downgrade(&first);
        scopes.release(first);
        assert_eq!(scopes.len(), 1, "a handle still holds it");
        scopes.release(second);
        assert!(scopes.is_empty());
        assert_eq!(freed.strong_count(), 0, "no copy is left behind");
        // Shared again, it is a new copy, which the set holds.
        let again = scopes.share(&scope);
        assert_eq!(Arc::strong_count(&again), 2);
        assert!(Arc::ptr_eq(scopes.get(&scope).unwrap(), &again));
    }

    #[test]
    fn the_last_copy_shared_is_the_sets_copy() {
        let mut scopes: Interner<Scope> = Interner::default();
        let (a, b) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
        // Alternating values, repeats, and a value released and shared
        // again: each handle is the set's copy of its value.
        let mut held = Vec::new();
        for value in [&a, &a, &b, &a, &b, &b] {
            let handle = scopes.share(value);
            assert!(Arc::ptr_eq(scopes.get(value).unwrap(), &handle));
            held.push(handle);
        }
        assert_eq!(scopes.len(), 2);
        for handle in held.drain(..) {
            scopes.release(handle);
        }
        assert!(scopes.is_empty());
        let again = scopes.share(&b);
        assert!(Arc::ptr_eq(scopes.get(&b).unwrap(), &again));
        assert_eq!(Arc::strong_count(&again), 2);
    }

    #[test]
    fn a_value_is_found_by_a_borrowed_key_without_sharing_it() {
        let mut names: Interner<str> = Interner::default();
        assert!(names.get("Caroline").is_none());
        let held = names.share("Caroline");
        let found = names.get("Caroline").expect("shared");
        assert!(Arc::ptr_eq(found, &held));
        assert_eq!(Arc::strong_count(&held), 2, "a lookup makes no handle");
        assert!(names.get("Carol").is_none());
        let mut scopes: Interner<Scope> = Interner::default();
        let scope = scopes.share(&Scope::workspace("u", "w"));
        assert!(Arc::ptr_eq(scopes.get(&Scope::workspace("u", "w")).unwrap(), &scope));
        assert!(scopes.get(&Scope::workspace("u", "x")).is_none());
    }
}
