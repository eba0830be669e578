//! Retention: how long a store keeps memories, store-wide and per scope,
//! and whether a scope captures anything at all (`retention` in the
//! config; `docs/memory-model.md`, "Expiry and erasure").
//!
//! A memory expires at the earliest of its own `privacy.retentionDays` and
//! the days of the rule that governs its scope: the narrowest rule whose
//! scope filter matches it (the one setting the most fields; the first of
//! equals), else the store-wide `days`. Expired memories are never
//! retrieved; they are erased by `purgeExpired`, and by every write of a
//! store that has a retention policy ([`RetentionConfig::is_set`]).

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};
use crate::item::{MemoryItem, Scope, ScopeFilter, Timestamp};

/// The store's retention policy. Empty by default: memories are kept until
/// deleted, unless they set their own `retentionDays`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Days after `createdAt` a memory is kept, store-wide (absent: kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    /// Per-scope overrides; the narrowest matching rule wins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeRetention>,
}

/// The retention of the memories of one scope (and of the narrower scopes
/// inside it that no narrower rule names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeRetention {
    /// The scopes the rule governs: every field it sets must match
    /// (`userId` is required).
    pub scope: ScopeFilter,
    /// Days after `createdAt` the scope's memories are kept: absent, the
    /// store-wide `days`; `null`, kept whatever the store-wide default.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub days: Option<Option<u32>>,
    /// `false`: ingest stores nothing of this scope (default `true`).
    #[serde(default = "yes")]
    pub capture: bool,
}

fn yes() -> bool {
    true
}

/// A field that is present (even as `null`) is `Some`.
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

impl RetentionConfig {
    /// True when the store has a policy: a store-wide default or a rule.
    pub fn is_set(&self) -> bool {
        self.days.is_some() || !self.scopes.is_empty()
    }

    /// Checks every rule names a user (a rule cannot reach across users)
    /// and valid ids.
    pub fn validate(&self) -> Result<()> {
        for (i, rule) in self.scopes.iter().enumerate() {
            let at = |e: Error| e.at(&format!("retention.scopes[{i}]"));
            let scope = &rule.scope;
            if scope.user_id.is_none() {
                return Err(at(Error::invalid("scope.userId is required")));
            }
            for (name, value) in [
                ("scope.userId", &scope.user_id),
                ("scope.workspaceId", &scope.workspace_id),
                ("scope.projectId", &scope.project_id),
                ("scope.cardId", &scope.card_id),
                ("scope.sessionId", &scope.session_id),
            ] {
                if let Some(v) = value {
                    crate::item::validate_id(name, v).map_err(at)?;
                }
            }
        }
        Ok(())
    }

    /// The rule governing `scope`: the matching one that sets the most
    /// fields, the first of equals.
    pub fn rule_for(&self, scope: &Scope) -> Option<&ScopeRetention> {
        let mut best: Option<(&ScopeRetention, usize)> = None;
        for rule in self.scopes.iter().filter(|r| r.scope.matches(scope)) {
            let fields = rule.scope.fields();
            if best.is_none_or(|(_, f)| fields > f) {
                best = Some((rule, fields));
            }
        }
        best.map(|(rule, _)| rule)
    }

    /// Days the policy keeps a memory of `scope` (None: kept).
    pub fn days_for(&self, scope: &Scope) -> Option<u32> {
        match self.rule_for(scope).and_then(|r| r.days) {
            Some(days) => days,
            None => self.days,
        }
    }

    /// Whether ingest stores memories of `scope`.
    pub fn captures(&self, scope: &Scope) -> bool {
        self.rule_for(scope).is_none_or(|r| r.capture)
    }

    /// When `item` expires: the earliest of its own retention and the
    /// policy's. A chunk of a file lives as long as its file.
    pub fn expires_at(&self, item: &MemoryItem) -> Option<Timestamp> {
        self.expiry(
            &item.scope,
            item.created_at,
            item.privacy.retention_days,
            item.is_file_chunk(),
        )
    }

    /// [`Self::expires_at`] of a memory of `scope` made at `created_at`,
    /// which its own retention keeps `own_days`: from the fields alone, as
    /// a row the engine holds gives them without being decoded.
    pub(crate) fn expiry(
        &self,
        scope: &Scope,
        created_at: Timestamp,
        own_days: Option<u32>,
        file_chunk: bool,
    ) -> Option<Timestamp> {
        let own = own_days.map(|days| created_at.plus_days(days));
        if file_chunk {
            return own;
        }
        let policy = self.days_for(scope).map(|days| created_at.plus_days(days));
        match (own, policy) {
            (Some(own), Some(policy)) => Some(own.min(policy)),
            (own, policy) => own.or(policy),
        }
    }

    /// True when `item` has expired at `now`.
    pub fn is_expired(&self, item: &MemoryItem, now: Timestamp) -> bool {
        self.expires_at(item).is_some_and(|end| now >= end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> ScopeRetention {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_narrowest_rule_wins_and_null_keeps() {
        let config = RetentionConfig {
            days: Some(30),
            scopes: vec![
                rule(r#"{"scope":{"userId":"u","workspaceId":"w"},"days":7}"#),
                rule(r#"{"scope":{"userId":"u","workspaceId":"w","projectId":"p"},"days":null}"#),
                rule(r#"{"scope":{"userId":"u","workspaceId":"w","sessionId":"s"},"capture":false}"#),
            ],
        };
        let w = Scope::workspace("u", "w");
        assert_eq!(config.days_for(&w), Some(7));
        assert_eq!(config.days_for(&w.clone().with_project("p")), None);
        assert_eq!(config.days_for(&Scope::workspace("v", "w")), Some(30));
        // `days` absent: the store-wide default.
        assert_eq!(config.days_for(&w.clone().with_session("s")), Some(30));
        assert!(!config.captures(&w.clone().with_session("s")));
        assert!(config.captures(&w));
        assert!(config.validate().is_ok());
        let no_user = RetentionConfig {
            days: None,
            scopes: vec![rule(r#"{"scope":{"workspaceId":"w"},"days":1}"#)],
        };
        assert!(no_user.validate().is_err());
    }
}
