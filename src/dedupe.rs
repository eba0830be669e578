//! Duplicate handling (DESIGN.md, policy 4).
//!
//! Exact duplicates (same normalized text, so the same `contentHash`, in the
//! same scope) never create a second item: they merge into the existing one.
//! Near-duplicates are found deterministically among the best lexical (and,
//! with a model, semantic) matches in the same scope by two gates: the
//! lexical gate (Jaccard similarity of the analysed term sets ≥
//! `lexicalThreshold`) or, when both memories have embeddings, the semantic
//! gate (cosine ≥ `semanticThreshold` *and* Jaccard ≥
//! `semanticLexicalThreshold`). The second condition of the semantic gate
//! keeps a changed value ("I drink cortado" → "I drink flat white", cosine
//! high, overlap 0.5) a separate memory. Texts of opposite polarity are never
//! near-duplicates. Depending on [`NearDuplicateAction`] a near-duplicate
//! merges (its text is kept in the provenance record, never dropped) or is
//! added and reported.

use serde::{Deserialize, Serialize};

use crate::item::{MemoryItem, MergeRecord, Privacy, Source, Timestamp};

/// What to do with a near-duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum NearDuplicateAction {
    /// Merge into the similar memory, keeping the new text in `mergedFrom`.
    #[default]
    Merge,
    /// Store as a new memory and report the similar one (`similarTo`).
    Report,
}

/// Near-duplicate detection settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct NearDuplicateConfig {
    /// Lexical gate: minimum Jaccard overlap of the term sets (default
    /// 0.85). Values above 1 turn the gate off.
    pub lexical_threshold: f32,
    /// Semantic gate: minimum cosine of the embeddings (default 0.9).
    pub semantic_threshold: f32,
    /// Semantic gate: minimum Jaccard overlap that must come with the high
    /// cosine (default 0.6).
    pub semantic_lexical_threshold: f32,
    /// 0 turns near-duplicate detection off. Otherwise every memory sharing
    /// enough terms to pass a gate is compared; only when an overlap
    /// threshold of 0 lets a memory sharing no term pass, the comparison is
    /// limited to this many of the best lexical matches and as many nearest
    /// semantic neighbours (default 8).
    pub candidates: usize,
    /// Merge or report.
    pub action: NearDuplicateAction,
}

impl Default for NearDuplicateConfig {
    fn default() -> Self {
        NearDuplicateConfig {
            lexical_threshold: 0.85,
            semantic_threshold: 0.9,
            semantic_lexical_threshold: 0.6,
            candidates: 8,
            action: NearDuplicateAction::Merge,
        }
    }
}

impl NearDuplicateConfig {
    /// The lowest term overlap either gate accepts (in 0..=1).
    pub fn min_overlap(&self) -> f32 {
        let lowest = self.lexical_threshold.min(self.semantic_lexical_threshold);
        if lowest.is_nan() {
            0.0
        } else {
            lowest.clamp(0.0, 1.0)
        }
    }

    /// True when two texts with this term overlap (and embedding cosine, when
    /// both have embeddings) pass a gate.
    pub fn is_near_duplicate(&self, overlap: f32, cosine: Option<f32>) -> bool {
        overlap >= self.lexical_threshold
            || cosine.is_some_and(|c| {
                c >= self.semantic_threshold && overlap >= self.semantic_lexical_threshold
            })
    }
}

/// What a duplicate brings to the item it merges into.
#[derive(Debug, Clone)]
pub struct Duplicate {
    /// Provenance of the duplicate.
    pub source: Source,
    /// When the duplicate was said.
    pub created_at: Timestamp,
    /// Its tags (unioned into the item).
    pub tags: Vec<String>,
    /// Whether it was pinned (pinning is kept if either is pinned).
    pub pinned: bool,
    /// Its privacy markers (the stricter of the two wins).
    pub privacy: Privacy,
    /// Its own text, when it differs from the item's (near-duplicates).
    pub text: Option<String>,
}

/// Merges a duplicate into `item`: provenance appended (the oldest records are
/// dropped beyond `max_records`), `createdAt` becomes the earlier of the two,
/// `updatedAt` becomes `now`, tags are unioned up to `max_tags`, pinning and
/// the PII and private markers take the stricter value. Retention is renewed,
/// never shortened: the merged memory expires at the later of the two
/// expiries (never, when either has no retention), so restating a memory
/// keeps it alive. Review status is left as it is.
pub fn merge_into(
    item: &mut MemoryItem,
    duplicate: Duplicate,
    now: Timestamp,
    max_records: usize,
    max_tags: usize,
) {
    let expiry = |created: Timestamp, days: Option<u32>| days.map(|d| created.plus_days(d));
    let latest_expiry = match (
        expiry(item.created_at, item.privacy.retention_days),
        expiry(duplicate.created_at, duplicate.privacy.retention_days),
    ) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    item.merged_from.push(MergeRecord {
        source: duplicate.source,
        merged_at: now,
        created_at: duplicate.created_at,
        text: duplicate.text,
    });
    if item.merged_from.len() > max_records {
        let excess = item.merged_from.len() - max_records;
        item.merged_from.drain(..excess);
    }
    item.created_at = item.created_at.min(duplicate.created_at);
    item.updated_at = now;
    for tag in duplicate.tags {
        if item.tags.len() >= max_tags {
            break;
        }
        if !item.tags.contains(&tag) {
            item.tags.push(tag);
        }
    }
    item.pinned |= duplicate.pinned;
    item.privacy.pii |= duplicate.privacy.pii;
    item.privacy.private |= duplicate.privacy.private;
    item.privacy.retention_days = latest_expiry.map(|end| {
        let days = (end.0 - item.created_at.0 + Timestamp::DAY_MS - 1) / Timestamp::DAY_MS;
        u32::try_from(days.max(0)).unwrap_or(u32::MAX)
    });
}

/// Words that flip a statement's meaning; stopword removal drops most of
/// them from the lexical terms, so they are checked separately.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "nor", "none", "nothing", "nobody", "neither", "without", "cannot",
];

/// True when the text is negated: an odd number of negation words
/// (including `n't` contractions). Two texts of different polarity are never
/// near-duplicates ("I like cats" / "I do not like cats").
pub fn negated(text: &str) -> bool {
    let count = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
        .filter(|w| {
            let w = w.to_lowercase();
            NEGATIONS.contains(&w.as_str()) || w.ends_with("n't") || w.ends_with("n\u{2019}t")
        })
        .count();
    count % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Kind, Scope, Status};

    fn item() -> MemoryItem {
        MemoryItem {
            id: "a".into(),
            text: "t".into(),
            kind: Kind::Fact,
            scope: Scope::workspace("u", "w"),
            status: Status::Pending,
            pinned: false,
            source: Source::default(),
            content_hash: String::new(),
            tags: vec!["x".into()],
            privacy: Privacy {
                pii: false,
                private: false,
                retention_days: Some(30),
            },
            created_at: Timestamp(100),
            updated_at: Timestamp(100),
            last_used_at: None,
            usage_count: 0,
            merged_from: vec![],
            follows: None,
            deleted_at: None,
            source_lines: None,
        }
    }

    #[test]
    fn merge_keeps_provenance_and_takes_the_stricter_settings() {
        let mut it = item();
        let dup = Duplicate {
            source: Source {
                reference: "turn-2".into(),
                ..Source::default()
            },
            created_at: Timestamp(50),
            tags: vec!["x".into(), "y".into()],
            pinned: true,
            privacy: Privacy {
                pii: true,
                private: false,
                retention_days: Some(7),
            },
            text: Some("variant".into()),
        };
        merge_into(&mut it, dup, Timestamp(200), 10, 10);
        assert_eq!(it.created_at, Timestamp(50));
        assert_eq!(it.updated_at, Timestamp(200));
        assert_eq!(it.tags, ["x", "y"]);
        assert!(it.pinned && it.privacy.pii);
        // Expiries: the item's at 100 ms + 30 days, the duplicate's at 50 ms +
        // 7 days; the later one is kept, counted in whole days from the new
        // createdAt (50 ms), so 31.
        assert_eq!(it.privacy.retention_days, Some(31));
        assert_eq!(it.status, Status::Pending);
        assert_eq!(it.merged_from[0].source.reference, "turn-2");
        assert_eq!(it.merged_from[0].text.as_deref(), Some("variant"));
    }

    #[test]
    fn the_gates_keep_changed_values_apart() {
        let cfg = NearDuplicateConfig::default();
        assert!(cfg.is_near_duplicate(0.9, None));
        assert!(!cfg.is_near_duplicate(0.7, None));
        assert!(cfg.is_near_duplicate(0.7, Some(0.95)), "paraphrase");
        assert!(
            !cfg.is_near_duplicate(0.5, Some(0.97)),
            "cortado -> flat white"
        );
        assert!(!cfg.is_near_duplicate(0.7, Some(0.8)));
    }

    #[test]
    fn negation_is_detected_by_parity() {
        assert!(!negated("I like cats"));
        assert!(negated("I do not like cats"));
        assert!(negated("I don't like cats"));
        assert!(negated("I don\u{2019}t like cats"));
        assert!(!negated("It is not that I never liked cats"));
        assert!(negated("No sugar in my tea"));
    }

    #[test]
    fn restating_a_memory_renews_its_retention() {
        let mut it = item();
        it.privacy.retention_days = Some(1);
        let restated = |days, created| Duplicate {
            source: Source::default(),
            created_at: Timestamp(created),
            tags: vec![],
            pinned: false,
            privacy: Privacy {
                retention_days: days,
                ..Privacy::default()
            },
            text: None,
        };
        let late = 100 + 10 * Timestamp::DAY_MS;
        merge_into(&mut it, restated(Some(3), late), Timestamp(late), 10, 10);
        assert_eq!(
            it.privacy.retention_days,
            Some(13),
            "10 days later + 3 days"
        );
        assert!(!it.is_expired(Timestamp(late)));
        merge_into(&mut it, restated(None, late), Timestamp(late), 10, 10);
        assert_eq!(
            it.privacy.retention_days, None,
            "a restatement without retention keeps it"
        );
    }

    #[test]
    fn provenance_is_bounded_keeping_the_newest() {
        let mut it = item();
        for i in 0..5 {
            let dup = Duplicate {
                source: Source {
                    reference: format!("r{i}"),
                    ..Source::default()
                },
                created_at: Timestamp(100),
                tags: vec![],
                pinned: false,
                privacy: Privacy::default(),
                text: None,
            };
            merge_into(&mut it, dup, Timestamp(200 + i), 3, 10);
        }
        let refs: Vec<_> = it
            .merged_from
            .iter()
            .map(|m| m.source.reference.as_str())
            .collect();
        assert_eq!(refs, ["r2", "r3", "r4"]);
    }
}
