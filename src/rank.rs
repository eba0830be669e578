//! Ranking: turns lexical evidence into one ordered list of hits.
//!
//! The fused score is the BM25 score multiplied by a scope preference: a
//! memory of a narrower scope (card > project > session > workspace, see
//! [`Scope::specificity`](crate::item::Scope::specificity)) gets up to
//! `1 + scope_boost` times the score of a workspace-wide one, so at equal
//! relevance the narrower scope ranks first. Ties are broken by specificity,
//! then recency, then id, so the order is total and deterministic.

use std::cmp::Ordering;

use serde::Serialize;

/// Highest value of `Scope::specificity` (card + project + session).
const MAX_SPECIFICITY: f32 = 7.0;

/// The evidence behind one hit's score, returned when a query asks to
/// `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreBreakdown {
    /// BM25 score of the memory for the query.
    pub lexical: f32,
    /// Scope preference multiplier applied to it.
    pub scope_multiplier: f32,
    /// The final score (`lexical × scopeMultiplier`).
    pub fused: f32,
}

/// The scope preference multiplier for a memory of the given specificity.
pub fn scope_multiplier(specificity: u8, scope_boost: f32) -> f32 {
    1.0 + scope_boost * f32::from(specificity.min(7)) / MAX_SPECIFICITY
}

/// Scores one lexical match.
pub fn fuse(lexical: f32, specificity: u8, scope_boost: f32) -> ScoreBreakdown {
    let scope_multiplier = scope_multiplier(specificity, scope_boost);
    ScoreBreakdown {
        lexical,
        scope_multiplier,
        fused: lexical * scope_multiplier,
    }
}

/// The sort key of a candidate hit.
#[derive(Debug, Clone, Copy)]
pub struct RankKey<'a> {
    /// Fused score.
    pub score: f32,
    /// Scope specificity of the memory.
    pub specificity: u8,
    /// Creation time in ms.
    pub created_at: i64,
    /// Memory id.
    pub id: &'a str,
}

/// Best first: higher score, then narrower scope, then newer, then id.
pub fn compare(a: &RankKey<'_>, b: &RankKey<'_>) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.specificity.cmp(&a.specificity))
        .then(b.created_at.cmp(&a.created_at))
        .then(a.id.cmp(b.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrower_scope_wins_at_equal_relevance() {
        let card = fuse(2.0, 6, 0.1);
        let workspace = fuse(2.0, 0, 0.1);
        assert!(card.fused > workspace.fused);
        assert_eq!(workspace.fused, 2.0);
        let key = |score, specificity, id| RankKey {
            score,
            specificity,
            created_at: 0,
            id,
        };
        let mut keys = [key(1.0, 0, "a"), key(1.0, 6, "b"), key(1.0, 2, "c")];
        keys.sort_by(compare);
        assert_eq!(keys.map(|k| k.id), ["b", "c", "a"]);
    }

    #[test]
    fn relevance_dominates_a_small_scope_boost() {
        assert!(fuse(3.0, 0, 0.1).fused > fuse(2.0, 7, 0.1).fused);
    }
}
