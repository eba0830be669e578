//! The key that finds a memory's exact duplicate: its scope, who said it
//! and its text (`docs/memory-model.md`, "Duplicates"). Two people saying
//! the same words are two memories, so the key holds the speaker; one
//! constructor makes it for every map and lookup, so ingest, import,
//! update and the catalog cannot disagree on what a duplicate is.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::interner::Interner;
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
    /// A named speaker, whatever the role: in `Engine::by_hash`'s keys,
    /// the name's one shared copy (`Engine::speakers`), as ids are shared.
    Speaker(Arc<str>),
}

impl Voice {
    /// The voice of a text said by `speaker` in `role`.
    pub(crate) fn of(role: Option<Role>, speaker: Option<&str>) -> Voice {
        match (speaker, role) {
            (Some(name), _) => Voice::Speaker(name.into()),
            (None, Some(role)) if role != Role::User => Voice::Role(role),
            _ => Voice::Unnamed,
        }
    }

    /// Whether `item` is said in this voice (without building its voice).
    pub(crate) fn said(&self, item: &MemoryItem) -> bool {
        match (self, item.speaker.as_deref(), item.role) {
            (Voice::Speaker(name), Some(other), _) => **name == *other,
            (Voice::Role(role), None, Some(other)) => *role == other,
            (Voice::Unnamed, None, None | Some(Role::User)) => true,
            _ => false,
        }
    }

    /// The voice of a memory said by `speaker` in `role`, the speaker's
    /// name being the copy `speakers` shares (made there if it has none):
    /// what a key `Engine::by_hash` holds is built with it.
    pub(super) fn shared(role: Option<Role>, speaker: Option<&str>, speakers: &mut Interner<str>) -> Voice {
        match speaker {
            Some(name) => Voice::Speaker(speakers.share(name)),
            None => Voice::of(role, None),
        }
    }

    /// Drops the shared copy of this voice's name from `speakers` once no
    /// key but this one (the key `Engine::by_hash` just gave back) holds it.
    pub(super) fn release(self, speakers: &mut Interner<str>) {
        if let Voice::Speaker(name) = self {
            speakers.release(name);
        }
    }
}

/// A content hash as a key of `by_hash`: the 32 bytes of the 64 lowercase
/// hex digits the engine writes, else (a hash an imported memory brought)
/// its text, so that two keys are equal exactly when the hashes are. The
/// bytes take 33 bytes inline where the hex digits took a 64-byte
/// allocation.
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

/// The key of `Engine::by_hash`: a memory's scope (the catalog's shared
/// copy), voice and content hash.
///
/// The scope is compared and hashed by the address of its copy, not by its
/// five fields: every key is built with `Engine::scope_key` or the
/// interner's `share`, so two keys of equal scopes hold the one shared copy
/// whenever either is in `by_hash` (a lookup's fresh copy, made when no key
/// holds the scope, finds nothing, as it should). Hashing the fields took
/// a few hundred instructions per memory a store opens with.
#[derive(Debug, Clone)]
pub(super) struct DuplicateKey {
    scope: Arc<Scope>,
    voice: Voice,
    hash: ContentKey,
}

impl PartialEq for DuplicateKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.scope, &other.scope)
            && self.voice == other.voice
            && self.hash == other.hash
    }
}

impl Eq for DuplicateKey {}

impl Hash for DuplicateKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.scope), state);
        self.voice.hash(state);
        self.hash.hash(state);
    }
}

impl DuplicateKey {
    /// The key of a text of `scope` whose stored form hashes to `hash`,
    /// said in `voice`.
    pub(super) fn new(scope: Arc<Scope>, voice: Voice, hash: &str) -> Self {
        Self::with_content(scope, voice, ContentKey::of(hash))
    }

    /// [`DuplicateKey::new`] given the hash as its key already.
    pub(super) fn with_content(scope: Arc<Scope>, voice: Voice, hash: ContentKey) -> Self {
        DuplicateKey { scope, voice, hash }
    }

    /// The key of `item`, with `scope` the shared copy of its scope.
    pub(super) fn of(scope: Arc<Scope>, item: &MemoryItem) -> Self {
        Self::new(
            scope,
            Voice::of(item.role, item.speaker.as_deref()),
            &item.content_hash,
        )
    }

    /// The scope the key holds, given back to the catalog.
    pub(super) fn into_scope(self) -> Arc<Scope> {
        self.scope
    }

    /// The voice the key holds, given back to the catalog.
    pub(super) fn into_voice(self) -> Voice {
        self.voice
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Config, Engine, MemoryInput, Txn};
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
                        voice.said(&item),
                        *voice == Voice::of(role, speaker),
                        "{voice:?} said {role:?} {speaker:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn duplicate_keys_share_one_copy_per_speaker_and_drop_it_with_the_last_key() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let mut txn = Txn::default();
        let scope = Scope::workspace("u", "w");
        let said_by = |text: &str, speaker: Option<&str>| MemoryInput {
            speaker: speaker.map(str::to_string),
            ..MemoryInput::new(text, scope.clone())
        };
        let inputs = vec![
            said_by("I adopted a puppy named Rex", Some("Caroline")),
            said_by("I am training for a marathon", Some("Caroline")),
            said_by("I painted a sunrise last week", Some("Melanie")),
            said_by("remember to buy oat milk", None),
        ];
        let added = engine.ingest(inputs, &mut env, &mut txn).unwrap();
        let ids: Vec<&str> = added.iter().filter_map(|r| r.id.as_deref()).collect();
        assert_eq!(ids.len(), 4);
        assert_eq!(engine.speakers.len(), 2, "one copy per name, none for no name");
        // The interner's copy and the keys of the memories said by `name`.
        let holders = |engine: &Engine, name: &str| engine.speakers.get(name).map(Arc::strong_count);
        assert_eq!(holders(&engine, "Caroline"), Some(1 + 2));
        assert_eq!(holders(&engine, "Melanie"), Some(1 + 1));
        let freed = Arc::downgrade(engine.speakers.get("Melanie").unwrap());
        let now = env.now();
        let mut txn = Txn::default();
        engine.delete(ids[0], true, now, &mut txn).unwrap();
        assert_eq!(holders(&engine, "Caroline"), Some(1 + 1));
        engine.delete(ids[1], false, now, &mut txn).unwrap();
        assert_eq!(holders(&engine, "Caroline"), Some(1 + 1), "a soft delete keeps the key");
        engine.delete(ids[1], true, now, &mut txn).unwrap();
        assert_eq!(holders(&engine, "Caroline"), None, "its last key went");
        engine.delete(ids[2], true, now, &mut txn).unwrap();
        assert!(engine.speakers.is_empty());
        assert_eq!(freed.strong_count(), 0, "no copy is left behind");
        engine.rollback(txn);
        assert_eq!(holders(&engine, "Caroline"), Some(1 + 2), "a rollback brings them back");
        assert_eq!(holders(&engine, "Melanie"), Some(1 + 1));
        // The shared copies still find the duplicates they key.
        let again = vec![said_by("I am training for a marathon", Some("Caroline"))];
        let mut txn = Txn::default();
        let merged = engine.ingest(again, &mut env, &mut txn).unwrap();
        assert_eq!(merged[0].id.as_deref(), Some(ids[1]));
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
    fn duplicate_keys_compare_the_shared_scope_by_its_copy() {
        let hash = crate::text::content_hash("I love hiking");
        let shared = Arc::new(Scope::workspace("u", "w"));
        let key = |scope: &Arc<Scope>| DuplicateKey::new(scope.clone(), Voice::Unnamed, &hash);
        let hashed = |key: &DuplicateKey| {
            let mut state = std::hash::DefaultHasher::new();
            key.hash(&mut state);
            state.finish()
        };
        assert_eq!(key(&shared), key(&shared));
        assert_eq!(hashed(&key(&shared)), hashed(&key(&shared)));
        // Another copy of an equal scope is another key: the catalog never
        // builds one while a copy is shared (`Engine::scope_key`).
        let other = Arc::new(Scope::workspace("u", "w"));
        assert_ne!(key(&shared), key(&other));
        let said = DuplicateKey::new(shared.clone(), Voice::of(None, Some("Caroline")), &hash);
        assert_ne!(key(&shared), said);
        let other_text = crate::text::content_hash("I love running");
        assert_ne!(key(&shared), DuplicateKey::new(shared.clone(), Voice::Unnamed, &other_text));
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
