//! Duplicate handling (`docs/design.md`, "Policies", 4).
//!
//! Exact duplicates (same normalized text, so the same `contentHash`, in the
//! same scope, said by the same speaker: `engine/duplicate.rs`) never create
//! a second item: they merge into the existing one.
//! Near-duplicates are found deterministically among the memories of the
//! same scope and speaker (`find_near_duplicate`) by two gates: the
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

use crate::index::Bm25Index;
use crate::item::{MemoryItem, MergeRecord, Privacy, Source, Timestamp};
use crate::rank::Rankable;
use crate::str_list::StrList;
use crate::text;

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

/// The memories a new text may be a near-duplicate of (the engine's live
/// memories of the text's scope that are not file chunks), with the
/// indexes of their tenant.
pub(crate) trait Neighbourhood {
    /// The tenant's lexical index, if it has one.
    fn lexical(&self) -> Option<&Bm25Index>;
    /// The memory of `doc`, when it may be a near-duplicate: read for its
    /// id, text and speaker.
    fn eligible(&self, doc: u32) -> Option<&dyn Rankable>;
    /// The cosine of `vector` and the embedding of memory `id`, if it has
    /// one.
    fn cosine(&self, id: &str, vector: &[f32]) -> Option<f32>;
    /// The docs of the `k` eligible memories nearest `vector` in the
    /// tenant's vector index.
    fn nearest(&self, vector: &[f32], k: usize) -> Vec<u32>;
}

/// The id of the memory of `memories` most similar to `text` (its analysed
/// `terms`, its embedding `vector`) that passes a gate: the highest term
/// overlap, then cosine, then the smaller id.
///
/// Both gates need a term overlap of at least `min_overlap`, so a
/// memory that passes shares at least `min_overlap · n` of the text's
/// `n` distinct terms (its overlap is at most shared / `n`). Every
/// memory of the tenant's lexical index that may share that many
/// ([`Bm25Index::docs_sharing`]) is compared, so the answer does not
/// depend on a candidate count, and common terms cost nothing.
/// Only when the thresholds let a memory sharing no term pass (an
/// overlap threshold of 0) are the candidates the `candidates` best
/// lexical matches and nearest semantic neighbours.
pub(crate) fn find_near_duplicate(
    cfg: &NearDuplicateConfig,
    memories: &impl Neighbourhood,
    text: &str,
    terms: &StrList,
    vector: Option<&[f32]>,
) -> Option<String> {
    if terms.is_empty() || cfg.candidates == 0 {
        return None;
    }
    let lexical = memories.lexical();
    let term_set = lexical.map(|ix| ix.term_set(terms.iter()));
    // Only a doc that passes the overlap check needs it: most ingests
    // compare none.
    let polarity = std::cell::OnceCell::new();
    // Without a vector only the lexical gate can pass: its threshold
    // bounds the docs to compare, far fewer than the semantic gate's would.
    let min_overlap = match vector {
        Some(_) => cfg.min_overlap(),
        None if cfg.lexical_threshold.is_nan() => f32::INFINITY,
        None => cfg.lexical_threshold.max(0.0),
    };
    let passing = |doc: u32| -> Option<((f32, f32), String)> {
        // The overlap comes from the index's term lists when it holds
        // the doc (the sets `text::said_terms` gives its text and speaker); most docs
        // stop here, before their item is looked up.
        let indexed = lexical
            .zip(term_set.as_ref())
            .and_then(|(ix, set)| ix.overlap(doc, set));
        if indexed.is_some_and(|overlap| overlap < min_overlap) {
            return None;
        }
        let other = memories.eligible(doc)?;
        let overlap = indexed.unwrap_or_else(|| {
            let other_terms = text::said_terms(other.text(), other.speaker());
            text::term_overlap(&terms.to_strings(), &other_terms)
        });
        let cosine = vector.and_then(|v| memories.cosine(other.id(), v));
        // The polarity last: most candidates fail the gates first.
        let passes = cfg.is_near_duplicate(overlap, cosine)
            && negated(other.text()) == *polarity.get_or_init(|| negated(text));
        passes.then(|| ((overlap, cosine.unwrap_or(0.0)), other.id().to_string()))
    };

    let sharing = match lexical.zip(term_set.as_ref()) {
        Some((ix, set)) => ix.docs_sharing(
            set,
            min_shared_terms(set.len(), min_overlap),
            max_differing_terms(set.len(), min_overlap),
        ),
        None => Some(Vec::new()),
    };
    let candidates = sharing.unwrap_or_else(|| {
        let lexical_matches = lexical
            .map(|ix| ix.search(&terms.to_strings()))
            .unwrap_or_default()
            .map(|(doc, _)| doc)
            .filter(|&doc| memories.eligible(doc).is_some())
            .take(cfg.candidates);
        let neighbours = vector
            .map(|v| memories.nearest(v, cfg.candidates))
            .unwrap_or_default();
        lexical_matches.chain(neighbours).collect()
    });
    candidates
        .into_iter()
        .filter_map(passing)
        .max_by(|(a, a_id), (b, b_id)| {
            a.partial_cmp(b)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| b_id.cmp(a_id))
        })
        .map(|(_, id)| id)
}

/// The fewest of a text's `distinct` terms another memory must share for
/// its term overlap to reach `min_overlap`: the overlap is at most
/// shared / `distinct`, computed as the gates compute it (`f32` division,
/// which rounds monotonically).
fn min_shared_terms(distinct: usize, min_overlap: f32) -> usize {
    (0..=distinct)
        .find(|&shared| shared as f32 / distinct.max(1) as f32 >= min_overlap)
        .unwrap_or(distinct + 1)
}

/// The most terms in which another memory's distinct terms may differ
/// from a text's `distinct` ones (the size of the symmetric difference)
/// for their term overlap to reach `min_overlap`, computed as the gates
/// compute it: the largest `union − shared` with `shared / union ≥
/// min_overlap` in `f32`, `shared ≤ distinct ≤ union`. `None` when any
/// difference may pass (a threshold of 0 or less).
fn max_differing_terms(distinct: usize, min_overlap: f32) -> Option<usize> {
    if min_overlap.is_nan() || min_overlap <= 0.0 {
        return None;
    }
    // Beyond this many the bound filters nothing a caller can use: `None`
    // (no bound) is then as good and avoids counting up to huge unions.
    let cap = distinct.saturating_mul(2).saturating_add(64);
    let passes = |shared: usize, union: usize| shared as f32 / union as f32 >= min_overlap;
    let mut most = 0;
    for shared in 1..=distinct {
        // The largest union that passes with `shared` terms shared:
        // estimated, then corrected by the gate's own division (which is
        // monotonic in the union).
        let estimate = shared as f64 / f64::from(min_overlap);
        if estimate >= cap as f64 {
            return None;
        }
        let mut union = (estimate as usize).max(distinct);
        while union > distinct && !passes(shared, union) {
            union -= 1;
        }
        if !passes(shared, union) {
            continue;
        }
        while union < cap && passes(shared, union + 1) {
            union += 1;
        }
        if union >= cap {
            return None;
        }
        most = most.max(union - shared);
    }
    Some(most)
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
    use std::sync::Arc;

    use super::*;
    use crate::embed::Embedder;
    use crate::engine::{Config, Engine, MemoryInput, Txn, Voice};
    use crate::env::{Environment, FixedEnvironment};
    use crate::error::Result;
    use crate::item::{Scope, Status};

    fn item() -> MemoryItem {
        MemoryItem {
            status: Status::Pending,
            tags: vec!["x".into()],
            privacy: Privacy {
                pii: false,
                private: false,
                retention_days: Some(30),
            },
            created_at: Timestamp(100),
            updated_at: Timestamp(100),
            ..MemoryItem::example("a", "t")
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
    fn the_difference_bound_is_the_largest_that_passes() {
        for threshold in [0.3f32, 0.5, 0.6, 0.85, 0.9, 1.0, 1.5] {
            for distinct in 1..40 {
                // By brute force over shared ≤ distinct ≤ union.
                let brute = (0..=distinct)
                    .flat_map(|shared| (distinct..distinct * 5).map(move |union| (shared, union)))
                    .filter(|&(shared, union)| shared as f32 / union as f32 >= threshold)
                    .map(|(shared, union)| union - shared)
                    .max()
                    .unwrap_or(0);
                assert_eq!(
                    max_differing_terms(distinct, threshold),
                    Some(brute),
                    "{distinct} terms at {threshold}"
                );
            }
        }
        assert_eq!(max_differing_terms(10, 0.0), None);
        assert_eq!(max_differing_terms(10, f32::NAN), None);
        assert_eq!(max_differing_terms(10, 1e-30), None, "past the cap");
        // 14 distinct terms at the lexical gate's default: 14 of 16.
        assert_eq!(max_differing_terms(14, 0.85), Some(2));
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

    /// Word counts over [`WORDS`] plus a constant component, so cosines
    /// vary with the words a text shares.
    struct WordCounts;

    const WORDS: [&str; 7] = ["tea", "green", "cello", "bike", "red", "play", "not"];

    impl Embedder for WordCounts {
        fn model_id(&self) -> &str {
            "test/word-counts"
        }

        fn dimensions(&self) -> usize {
            WORDS.len() + 1
        }

        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v: Vec<f32> = WORDS
                        .iter()
                        .map(|w| text.split(' ').filter(|t| t == w).count() as f32)
                        .collect();
                    v.push(0.5);
                    v
                })
                .collect())
        }

        fn count_tokens(&self, text: &str) -> usize {
            text.split(' ').count()
        }
    }

    /// The near-duplicate `find_near_duplicate` must find, by brute force:
    /// among every live memory of exactly `scope` said by `speaker`, not a
    /// file chunk, of the same polarity, the one passing a gate with the
    /// highest (overlap, cosine), then the smaller id.
    fn brute_force_near_duplicate(
        engine: &Engine,
        scope: &Scope,
        speaker: Option<&str>,
        text: &str,
        vector: Option<&[f32]>,
    ) -> Option<String> {
        let cfg = engine.config().near_duplicate;
        let terms = text::terms(text);
        if terms.is_empty() || cfg.candidates == 0 {
            return None;
        }
        let items: Vec<MemoryItem> = engine.items().map(std::borrow::Cow::into_owned).collect();
        let mut passing: Vec<((f32, f32), &str)> = items
            .iter()
            .filter(|item| {
                &item.scope == scope
                    && item.speaker.as_deref() == speaker
                    && !item.is_deleted()
                    && !item.is_superseded()
                    && !item.is_file_chunk()
                    && negated(&item.text) == negated(text)
            })
            .filter_map(|item| {
                let overlap = text::term_overlap(
                    &terms,
                    &text::said_terms(&item.text, item.speaker.as_deref()),
                );
                let cosine = vector
                    .zip(engine.embedding(&item.id))
                    .map(|(a, b)| b.dot(a));
                cfg.is_near_duplicate(overlap, cosine)
                    .then_some(((overlap, cosine.unwrap_or(0.0)), item.id.as_str()))
            })
            .collect();
        passing.sort_by(|(a, a_id), (b, b_id)| b.partial_cmp(a).unwrap().then(a_id.cmp(b_id)));
        passing.first().map(|(_, id)| id.to_string())
    }

    fn words() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..6)
            .prop_map(|words| words.join(" "))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        #[test]
        fn the_near_duplicate_found_is_the_best_of_all_memories(
            memories in proptest::collection::vec((words(), 0..2usize, 0..3usize, proptest::bool::weighted(0.2)), 0..14),
            probe in words(),
            probe_scope in 0..2usize,
            probe_speaker in 0..3usize,
            lexical_threshold in proptest::sample::select(vec![0.4f32, 0.6, 0.85, 1.0, 2.0]),
            semantic_threshold in proptest::sample::select(vec![0.5f32, 0.9, 2.0]),
            semantic_lexical_threshold in proptest::sample::select(vec![0.0f32, 0.3, 0.6]),
            semantic in proptest::bool::ANY,
        ) {
            let scopes = [Scope::workspace("u", "w"), Scope::workspace("u", "w").with_session("s")];
            // Two people's words are never near-duplicates of each other.
            let speakers = [None, Some("Caroline"), Some("Melanie")];
            let config = Config {
                near_duplicate: NearDuplicateConfig {
                    lexical_threshold,
                    semantic_threshold,
                    semantic_lexical_threshold,
                    // At least the memories, so that the thresholds of 0
                    // compare every memory too.
                    candidates: 16,
                    action: NearDuplicateAction::Report,
                },
                ..Config::default()
            };
            let mut engine = Engine::new(config);
            let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
            let mut txn = Txn::default();
            if semantic {
                engine.attach_embedder(Arc::new(WordCounts), &mut txn).unwrap();
            }
            for (text, scope, speaker, deleted) in memories {
                let input = MemoryInput {
                    speaker: speakers[speaker].map(str::to_string),
                    ..MemoryInput::new(text, scopes[scope].clone())
                };
                let result = engine.ingest(vec![input], &mut env, &mut txn).unwrap().remove(0);
                if let (true, Some(id)) = (deleted, result.id) {
                    let now = env.now();
                    engine.delete(&id, false, now, &mut txn).unwrap();
                }
            }
            let vector = engine.embed(&[probe.as_str()]).unwrap().map(|mut v| v.remove(0));
            let terms = text::said_term_list(&probe, None);
            let scope = &scopes[probe_scope];
            let speaker = speakers[probe_speaker];
            let voice = Voice::of(None, speaker);
            proptest::prop_assert_eq!(
                engine.find_near_duplicate(scope, &voice, &probe, &terms, vector.as_deref()),
                brute_force_near_duplicate(&engine, scope, speaker, &probe, vector.as_deref())
            );
        }
    }
}
