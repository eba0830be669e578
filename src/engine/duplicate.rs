//! The key that finds a memory's exact duplicate: its scope, who said it
//! and its text (`docs/memory-model.md`, "Duplicates"). Two people saying
//! the same words are two memories, so the key holds the speaker; one
//! constructor makes it for every map and lookup, so ingest, import,
//! update and the catalog cannot disagree on what a duplicate is.

use std::sync::Arc;

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
    Speaker(String),
}

impl Voice {
    /// The voice of a text said by `speaker` in `role`.
    pub(crate) fn of(role: Option<Role>, speaker: Option<&str>) -> Voice {
        match (speaker, role) {
            (Some(name), _) => Voice::Speaker(name.to_string()),
            (None, Some(role)) if role != Role::User => Voice::Role(role),
            _ => Voice::Unnamed,
        }
    }

    /// Whether `item` is said in this voice (without building its voice).
    pub(crate) fn said(&self, item: &MemoryItem) -> bool {
        match (self, item.speaker.as_deref(), item.role) {
            (Voice::Speaker(name), Some(other), _) => name == other,
            (Voice::Role(role), None, Some(other)) => *role == other,
            (Voice::Unnamed, None, None | Some(Role::User)) => true,
            _ => false,
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct DuplicateKey {
    scope: Arc<Scope>,
    voice: Voice,
    hash: ContentKey,
}

impl DuplicateKey {
    /// The key of a text of `scope` whose stored form hashes to `hash`,
    /// said in `voice`.
    pub(super) fn new(scope: Arc<Scope>, voice: Voice, hash: &str) -> Self {
        DuplicateKey {
            scope,
            voice,
            hash: ContentKey::of(hash),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A memory said by `speaker` in `role`, read from JSON so that it
    /// takes every later field's default.
    fn said(role: Option<Role>, speaker: Option<&str>) -> MemoryItem {
        serde_json::from_value(serde_json::json!({
            "id": "m", "text": "I love hiking", "kind": "fact",
            "scope": {"userId": "u", "workspaceId": "w"}, "status": "approved",
            "source": {"kind": "message", "ref": "r"}, "contentHash": "h",
            "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z",
            "role": role, "speaker": speaker,
        }))
        .unwrap()
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
