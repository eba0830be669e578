//! The key that finds a memory's exact duplicate: its scope, who said it
//! and its text (`docs/memory-model.md`, "Duplicates"). Two people saying
//! the same words are two memories, so the key holds the speaker; one
//! constructor makes it for every lookup, so ingest, import, update and
//! the catalog cannot disagree on what a duplicate is.
//!
//! [`Duplicates`] is the table of the memories that hold each key, by doc
//! number: it keeps no key, reading a candidate's from its memory.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;

use crate::item::{MemoryItem, Role, Scope};
use crate::text::hex_bytes;

/// Who said a text, as duplicates tell texts apart: the speaker's name
/// when the memory has one, else its role, where a user's text and a text
/// with no role are the same voice (the user's own notes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Voice {
    /// No name, said by the user or with no role.
    Unnamed,
    /// No name, said by the assistant or the system.
    Role(Role),
    /// A named speaker, whatever the role.
    Speaker(Arc<str>),
}

impl Voice {
    /// The voice of a text said by `speaker` in `role`.
    pub(crate) fn of(role: Option<Role>, speaker: Option<&str>) -> Voice {
        match Said::of(role, speaker) {
            Said::Speaker(name) => Voice::Speaker(name.into()),
            Said::Role(role) => Voice::Role(role),
            Said::Unnamed => Voice::Unnamed,
        }
    }

    /// The voice, borrowed as a key holds it.
    pub(super) fn as_said(&self) -> Said<'_> {
        match self {
            Voice::Speaker(name) => Said::Speaker(name),
            Voice::Role(role) => Said::Role(*role),
            Voice::Unnamed => Said::Unnamed,
        }
    }

    /// Whether a memory said by `speaker` in `role` is said in this voice
    /// (without building its voice).
    pub(crate) fn said(&self, role: Option<Role>, speaker: Option<&str>) -> bool {
        self.as_said() == Said::of(role, speaker)
    }
}

/// A [`Voice`] borrowed from the memory or the input that has it: a key
/// built for a memory the catalog sets copies no name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Said<'a> {
    Unnamed,
    Role(Role),
    Speaker(&'a str),
}

impl<'a> Said<'a> {
    /// The voice of a text said by `speaker` in `role`: the one place a
    /// role and a name make a voice.
    pub(super) fn of(role: Option<Role>, speaker: Option<&'a str>) -> Said<'a> {
        match (speaker, role) {
            (Some(name), _) => Said::Speaker(name),
            (None, Some(role)) if role != Role::User => Said::Role(role),
            _ => Said::Unnamed,
        }
    }
}

/// A content hash as a key: the 32 bytes of the 64 lowercase hex digits
/// the engine writes, else (a hash an imported memory brought) its text,
/// so that two keys are equal exactly when the hashes are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum ContentKey {
    Sha256([u8; 32]),
    Other(Box<str>),
}

impl ContentKey {
    pub(super) fn of(hash: &str) -> ContentKey {
        match hex_bytes(hash) {
            Some(bytes) => ContentKey::Sha256(bytes),
            None => ContentKey::Other(hash.into()),
        }
    }
}

/// The key of an exact duplicate: a memory's scope (the catalog's shared
/// copy), voice and content hash.
///
/// The scope is hashed by the address of its copy, not by its five
/// fields: every key is built with `Engine::scope_key` or the interner's
/// `share`, so two keys of equal scopes hold the one shared copy whenever
/// a memory of either is in [`Duplicates`] (whose scope `by_scope_time`
/// holds, keeping the copy and its address). A lookup's fresh copy, made
/// when no key holds the scope, finds nothing, as it should. Hashing the
/// fields took a few hundred instructions per memory a store opens with.
#[derive(Debug, Clone)]
pub(super) struct DuplicateKey<'a> {
    scope: Arc<Scope>,
    voice: Said<'a>,
    hash: ContentKey,
}

impl<'a> DuplicateKey<'a> {
    /// The key of a text of `scope` whose stored form hashes to `hash`,
    /// said in `voice`.
    pub(super) fn new(scope: Arc<Scope>, voice: Said<'a>, hash: &str) -> Self {
        Self::with_content(scope, voice, ContentKey::of(hash))
    }

    /// [`DuplicateKey::new`] given the hash as its key already.
    pub(super) fn with_content(scope: Arc<Scope>, voice: Said<'a>, hash: ContentKey) -> Self {
        DuplicateKey { scope, voice, hash }
    }

    /// The key of `item`, with `scope` the shared copy of its scope.
    pub(super) fn of(scope: Arc<Scope>, item: &'a MemoryItem) -> Self {
        Self::new(
            scope,
            Said::of(item.role, item.speaker.as_deref()),
            &item.content_hash,
        )
    }

    /// Whether a memory of `scope` said in `voice`, whose content hash
    /// `hash` gives, has this key. The scope is compared by its fields:
    /// the memory holds its own copy.
    pub(super) fn names(&self, scope: &Scope, voice: Said<'_>, hash: impl FnOnce() -> ContentKey) -> bool {
        self.voice == voice && *self.scope == *scope && self.hash == hash()
    }

    /// The scope the key holds, given back to the catalog.
    pub(super) fn into_scope(self) -> Arc<Scope> {
        self.scope
    }
}

/// The memory holding each key (`Engine::by_hash`), as its doc number
/// with the key's hash: a slot of 8 bytes where a map of keys held the
/// scope, the voice, the content hash and the id. A probe compares a
/// candidate's key by reading its memory (the caller's `is`); the hash
/// kept with the doc rehashes the table as it grows without reading any,
/// and spares reading most candidates that are not the key.
pub(super) struct Duplicates {
    table: HashTable<Slot>,
    state: foldhash::fast::RandomState,
    /// Gives every key one hash, so that every probe compares keys.
    #[cfg(test)]
    pub(super) one_hash: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    doc: u32,
    hash: u32,
}

/// A kept hash as the table's: the 32 bits twice, so that the bits the
/// table indexes with (the low ones) and those it tags a slot with (the
/// top seven of the low word on 32-bit targets, of the whole on 64-bit
/// ones) both come from it.
fn spread(hash: u32) -> u64 {
    u64::from(hash) << 32 | u64::from(hash)
}

impl Default for Duplicates {
    fn default() -> Self {
        Duplicates {
            table: HashTable::new(),
            state: foldhash::fast::RandomState::default(),
            #[cfg(test)]
            one_hash: false,
        }
    }
}

impl Duplicates {
    /// The hash of `key` in this table.
    pub(super) fn hash(&self, key: &DuplicateKey<'_>) -> u32 {
        #[cfg(test)]
        if self.one_hash {
            return 0;
        }
        let mut state = self.state.build_hasher();
        std::ptr::hash(Arc::as_ptr(&key.scope), &mut state);
        key.voice.hash(&mut state);
        key.hash.hash(&mut state);
        let hash = state.finish();
        (hash ^ hash >> 32) as u32
    }

    /// The doc of the memory holding the key hashed to `hash`, `is`
    /// telling whether a doc's memory has that key.
    pub(super) fn find(&self, hash: u32, is: impl Fn(u32) -> bool) -> Option<u32> {
        self.table
            .find(spread(hash), |slot| slot.hash == hash && is(slot.doc))
            .map(|slot| slot.doc)
    }

    /// Makes `doc` the memory holding the key hashed to `hash`, in place
    /// of any memory holding it (for which `is` holds).
    pub(super) fn insert(&mut self, hash: u32, doc: u32, is: impl Fn(u32) -> bool) {
        let slot = Slot { doc, hash };
        match self.table.entry(
            spread(hash),
            |slot| slot.hash == hash && is(slot.doc),
            |slot| spread(slot.hash),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut held) => *held.get_mut() = slot,
            hashbrown::hash_table::Entry::Vacant(room) => {
                room.insert(slot);
            }
        }
    }

    /// Takes `doc` out as the memory holding the key hashed to `hash`, if
    /// it holds it.
    pub(super) fn remove(&mut self, hash: u32, doc: u32) {
        if let Ok(held) = self.table.find_entry(spread(hash), |slot| slot.doc == doc && slot.hash == hash) {
            held.remove();
        }
    }

    /// Makes room for `additional` more keys.
    pub(super) fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional, |slot| spread(slot.hash));
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Config, Engine, MemoryInput, MemoryPatch, Txn};
    use crate::fast_hash::FastMap;
    use crate::env::{Environment, FixedEnvironment};
    use crate::item::Timestamp;

    /// A memory said by `speaker` in `role`.
    fn said(role: Option<Role>, speaker: Option<&str>) -> MemoryItem {
        MemoryItem {
            role,
            speaker: speaker.map(str::to_string),
            ..MemoryItem::example("m", "I love hiking")
        }
    }

    #[test]
    fn said_agrees_with_the_voice_it_builds() {
        let roles = [None, Some(Role::User), Some(Role::Assistant), Some(Role::System)];
        let speakers = [None, Some("Caroline"), Some("Melanie")];
        let voices: Vec<Voice> = roles
            .iter()
            .flat_map(|&r| speakers.iter().map(move |&s| Voice::of(r, s)))
            .collect();
        for &role in &roles {
            for &speaker in &speakers {
                let item = said(role, speaker);
                for voice in &voices {
                    assert_eq!(
                        voice.said(item.role, item.speaker.as_deref()),
                        *voice == Voice::of(role, speaker),
                        "{voice:?} said {role:?} {speaker:?}"
                    );
                }
            }
        }
    }

    /// A memory's key as the old map of keys held it: scope (by its
    /// fields here), voice and content hash.
    type OldKey = (Scope, Voice, ContentKey);

    /// The memories the catalog finds by text (not keyed, superseded, a
    /// chunk or a summary), by key: what the map of keys to ids held.
    fn reference(engine: &Engine) -> FastMap<OldKey, Vec<String>> {
        let mut keys: FastMap<OldKey, Vec<String>> = FastMap::default();
        for item in engine.items() {
            if item.key.is_none() && !item.is_superseded() && !item.is_file_chunk() && item.summary_of.is_empty() {
                let voice = Voice::of(item.role, item.speaker.as_deref());
                let key = (item.scope.clone(), voice, ContentKey::of(&item.content_hash));
                keys.entry(key).or_default().push(item.id.clone());
            }
        }
        keys
    }

    /// The id the table gives for a key.
    fn found(engine: &Engine, (scope, voice, hash): &OldKey) -> Option<String> {
        let key = DuplicateKey::with_content(engine.scope_key(scope), voice.as_said(), hash.clone());
        engine.duplicate_of(&key).map(|id| id.to_string())
    }

    /// Random ingests (some keyed), soft and hard deletes, undeletes and
    /// changes of text, each committed or rolled back, checked after each
    /// against the reference: every key the memories have finds its one
    /// memory, every other key of the same texts, voices and scopes finds
    /// none, and the table holds no other doc. `one_hash` gives every key
    /// the same hash, so that every probe compares the keys themselves.
    fn the_table_finds_what_the_map_of_keys_found(one_hash: bool) {
        let mut engine = Engine::new(Config::default());
        engine.by_hash.one_hash = one_hash;
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let scopes = [Scope::workspace("u", "w"), Scope::workspace("u", "v")];
        let texts = ["I love hiking", "I adopted a puppy", "we moved to Lisbon", "the cello is old"];
        let speakers = [None, Some("Caroline"), Some("Melanie")];
        let roles = [None, Some(Role::User), Some(Role::Assistant)];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % n
        };
        let mut probes: Vec<OldKey> = Vec::new();
        for scope in &scopes {
            for text in texts {
                for role in roles {
                    for speaker in speakers {
                        let hash = ContentKey::of(&crate::text::content_hash(text));
                        probes.push((scope.clone(), Voice::of(role, speaker), hash));
                    }
                }
            }
        }
        for step in 0..400 {
            let mut txn = Txn::default();
            let now = env.now();
            let ids: Vec<String> = engine.items().map(|item| item.id.clone()).collect();
            let target = (!ids.is_empty()).then(|| ids[next(ids.len())].clone());
            match (next(6), target) {
                (0..=2, _) | (_, None) => {
                    let inputs = (0..=next(3))
                        .map(|n| MemoryInput {
                            role: roles[next(roles.len())],
                            speaker: speakers[next(speakers.len())].map(str::to_string),
                            key: (next(8) == 0).then(|| format!("k{step}-{n}")),
                            ..MemoryInput::new(texts[next(texts.len())], scopes[next(scopes.len())].clone())
                        })
                        .collect();
                    engine.ingest(inputs, &mut env, &mut txn).unwrap();
                }
                (3, Some(id)) => engine.delete(&id, next(2) == 0, now, &mut txn).unwrap(),
                (4, Some(id)) => {
                    let patch = MemoryPatch {
                        deleted: Some(false),
                        ..MemoryPatch::default()
                    };
                    engine.update(&id, patch, now, &mut txn).unwrap();
                }
                (_, Some(id)) => {
                    let patch = MemoryPatch {
                        text: Some(texts[next(texts.len())].to_string()),
                        ..MemoryPatch::default()
                    };
                    // Refused when it would make a duplicate.
                    let _ = engine.update(&id, patch, now, &mut txn);
                }
            }
            if next(4) == 0 {
                engine.rollback(txn);
            }
            let reference = reference(&engine);
            for probe in &probes {
                let held = reference.get(probe).map(|ids| {
                    assert_eq!(ids.len(), 1, "step {step}: one memory per key");
                    ids[0].clone()
                });
                assert_eq!(found(&engine, probe), held, "step {step}: {probe:?}");
            }
            assert_eq!(engine.by_hash.len(), reference.len(), "step {step}");
        }
        assert!(engine.by_hash.len() > 4, "the steps leave memories in the table");
    }

    #[test]
    fn the_table_finds_what_the_map_of_keys_found_by_distinct_hashes() {
        the_table_finds_what_the_map_of_keys_found(false);
    }

    #[test]
    fn the_table_finds_what_the_map_of_keys_found_when_every_hash_collides() {
        the_table_finds_what_the_map_of_keys_found(true);
    }

    #[test]
    fn a_name_or_a_role_other_than_the_users_makes_another_voice() {
        assert_eq!(Voice::of(None, None), Voice::of(Some(Role::User), None));
        assert_ne!(Voice::of(None, None), Voice::of(Some(Role::Assistant), None));
        assert_ne!(
            Voice::of(Some(Role::User), Some("Caroline")),
            Voice::of(Some(Role::User), Some("Melanie"))
        );
        assert_eq!(
            Voice::of(Some(Role::User), Some("Caroline")),
            Voice::of(Some(Role::Assistant), Some("Caroline"))
        );
        // A speaker named like a role is not that role.
        assert_ne!(
            Voice::of(None, Some("assistant")),
            Voice::of(Some(Role::Assistant), None)
        );
    }

    #[test]
    fn duplicate_keys_hash_the_shared_scope_by_its_copy() {
        let table = Duplicates::default();
        let hash = crate::text::content_hash("I love hiking");
        let shared = Arc::new(Scope::workspace("u", "w"));
        let key = |scope: &Arc<Scope>| DuplicateKey::new(scope.clone(), Said::Unnamed, &hash);
        assert_eq!(table.hash(&key(&shared)), table.hash(&key(&shared)));
        assert!(key(&shared).names(&shared, Said::Unnamed, || ContentKey::of(&hash)));
        // Another copy of an equal scope hashes elsewhere: the catalog never
        // builds one while a copy is shared (`Engine::scope_key`).
        let other = Arc::new(Scope::workspace("u", "w"));
        assert_ne!(table.hash(&key(&shared)), table.hash(&key(&other)));
        assert!(!key(&shared).names(&Scope::workspace("u", "v"), Said::Unnamed, || ContentKey::of(&hash)));
        assert!(!key(&shared).names(&shared, Said::Speaker("Caroline"), || ContentKey::of(&hash)));
        let other_text = crate::text::content_hash("I love running");
        assert!(!key(&shared).names(&shared, Said::Unnamed, || ContentKey::of(&other_text)));
    }

    #[test]
    fn content_keys_are_equal_exactly_when_the_hashes_are() {
        let hex = "9d19118d641939e07e91bd8dec6a1d5380794462ec904c207cedb5ae609a31fb";
        assert!(matches!(ContentKey::of(hex), ContentKey::Sha256(_)));
        assert!(ContentKey::of(hex) == ContentKey::of(hex));
        assert!(ContentKey::of(hex) != ContentKey::of(&hex.to_uppercase()));
        assert!(ContentKey::of(hex) != ContentKey::of(&hex[1..]));
        assert!(ContentKey::of("not-hex") == ContentKey::of("not-hex"));
        assert!(ContentKey::of("not-hex") != ContentKey::of("not-hex2"));
    }
}
