//! The near-duplicate a new memory is reported against (or merged into) is
//! the most similar of all memories it may be a near-duplicate of, by
//! brute force (`docs/design.md`, "Policies", 4), through the public API,
//! lexical-only: over random stores of several tenants, scopes and
//! speakers, with soft and hard deletes and superseded memories, and the
//! same once the store is reopened (whose lexical index builds its
//! near-duplicate signatures afresh on the first ingest, where the live
//! store has kept them up to date since its first ingest).

use proptest::prelude::*;

use memtide::dedupe::{negated, NearDuplicateAction, NearDuplicateConfig};
use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::text;
use memtide::{
    Config, Error, IngestReason, Memory, MemoryInput, Operation, OperationsRequest, Scope,
    Timestamp,
};
use memtide_testkit::store::T0;

type Mem = Memory<MemoryStorage, FixedEnvironment>;

/// Few words, so that memories share most of their terms.
const WORDS: [&str; 8] = [
    "tea", "green", "cello", "bike", "red", "play", "jazz", "not",
];
const SPEAKERS: [Option<&str>; 2] = [None, Some("Caroline")];

fn scope(user: usize, session: bool) -> Scope {
    let scope = Scope::workspace(["u0", "u1"][user], "w");
    if session {
        scope.with_session("s")
    } else {
        scope
    }
}

#[derive(Debug, Clone)]
enum Op {
    Ingest {
        words: Vec<&'static str>,
        user: usize,
        session: bool,
        speaker: usize,
    },
    Delete {
        pick: prop::sample::Index,
        hard: bool,
    },
    Supersede {
        pick: prop::sample::Index,
        words: Vec<&'static str>,
    },
}

fn words() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(WORDS.to_vec()), 1..7)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (words(), 0..2usize, any::<bool>(), 0..2usize).prop_map(|(words, user, session, speaker)| {
            Op::Ingest { words, user, session, speaker }
        }),
        1 => (any::<prop::sample::Index>(), any::<bool>()).prop_map(|(pick, hard)| Op::Delete { pick, hard }),
        1 => (any::<prop::sample::Index>(), words()).prop_map(|(pick, words)| Op::Supersede { pick, words }),
    ]
}

fn input(words: &[&str], user: usize, session: bool, speaker: usize) -> MemoryInput {
    MemoryInput {
        speaker: SPEAKERS[speaker].map(str::to_string),
        ..MemoryInput::new(words.join(" "), scope(user, session))
    }
}

/// The memory a probe must be reported against, by brute force over every
/// memory of the store.
fn brute_force(mem: &Mem, probe: &MemoryInput, threshold: f32) -> Option<String> {
    let terms = text::said_terms(&probe.text, probe.speaker.as_deref());
    let mut best: Option<(f32, String)> = None;
    for item in mem.engine().items() {
        let eligible = item.scope == probe.scope
            && item.speaker == probe.speaker
            && item.role.is_none()
            && !item.is_deleted()
            && !item.is_superseded()
            && !item.is_file_chunk()
            && item.key.is_none()
            && negated(&item.text) == negated(&probe.text);
        if !eligible {
            continue;
        }
        let overlap = text::term_overlap(
            &terms,
            &text::said_terms(&item.text, item.speaker.as_deref()),
        );
        let better = best
            .as_ref()
            .is_none_or(|(o, id)| overlap > *o || (overlap == *o && item.id < *id));
        if overlap >= threshold && better {
            best = Some((overlap, item.id.clone()));
        }
    }
    best.map(|(_, id)| id)
}

/// The memory `mem` reports the probe against; `None` when the probe is
/// an exact duplicate, merged by its hash or, when the user deleted the
/// memory holding its text, suppressed (not compared either way).
fn reported(mem: &mut Mem, probe: &MemoryInput) -> Option<Option<String>> {
    let result = mem.ingest(vec![probe.clone()]).unwrap().remove(0);
    let by_hash = matches!(
        result.reason,
        Some(IngestReason::Duplicate | IngestReason::Suppressed)
    );
    (!by_hash).then_some(result.similar_to)
}

/// Runs `ops`, checking every ingest's report against brute force, then
/// the probe on the live store and on the store reopened.
fn check(
    ops: &[Op],
    probe: &(Vec<&'static str>, usize, bool, usize),
    threshold: f32,
) -> Result<(), TestCaseError> {
    let config = Config {
        near_duplicate: NearDuplicateConfig {
            lexical_threshold: threshold,
            action: NearDuplicateAction::Report,
            ..NearDuplicateConfig::default()
        },
        ..Config::default()
    };
    let env = FixedEnvironment::new(Timestamp(T0));
    let mut mem = Mem::open(MemoryStorage::new(), env, config.clone()).unwrap();
    for op in ops {
        mem.env_mut().advance_ms(60_000);
        let ids: Vec<(String, Scope)> = mem
            .engine()
            .items()
            .filter(|item| !item.is_deleted() && !item.is_superseded())
            .map(|item| (item.id.clone(), item.scope.clone()))
            .collect();
        match op {
            Op::Ingest {
                words,
                user,
                session,
                speaker,
            } => {
                let probe = input(words, *user, *session, *speaker);
                // Every ingest is itself a probe of the store so far.
                let want = brute_force(&mem, &probe, threshold);
                if let Some(got) = reported(&mut mem, &probe) {
                    prop_assert_eq!(got, want);
                }
            }
            Op::Delete { pick, hard } if !ids.is_empty() => {
                mem.delete(&pick.get(&ids).0, *hard).unwrap();
            }
            Op::Supersede { pick, words } if !ids.is_empty() => {
                let (id, scope) = pick.get(&ids).clone();
                let request = OperationsRequest {
                    scope,
                    allowed: vec![id.clone()],
                    operations: vec![Operation::Update {
                        id,
                        text: words.join(" "),
                        kind: None,
                        tags: None,
                        key: None,
                        metadata: None,
                    }],
                };
                match mem.apply_operations(request) {
                    Ok(_) => {}
                    // A text the user deleted is not written back by
                    // an update: refused, and the store is unchanged.
                    Err(Error::InvalidOperations(m)) if m.contains("one the user deleted") => {}
                    Err(e) => prop_assert!(false, "update refused: {e}"),
                }
            }
            _ => {}
        }
    }
    let probe = input(&probe.0, probe.1, probe.2, probe.3);
    let want = brute_force(&mem, &probe, threshold);
    let env = mem.env_mut().clone();
    let mut reopened = Mem::open(mem.storage().clone(), env, config).unwrap();
    let live = reported(&mut mem, &probe);
    prop_assert_eq!(live.clone(), reported(&mut reopened, &probe));
    if let Some(got) = live {
        prop_assert_eq!(got, want);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn the_near_duplicate_reported_is_the_best_of_all_memories(
        ops in prop::collection::vec(op(), 0..40),
        probe in (words(), 0..2usize, any::<bool>(), 0..2usize),
        threshold in prop::sample::select(vec![0.4f32, 0.6, 0.75, 0.85, 1.0]),
    ) {
        check(&ops, &probe, threshold)?;
    }
}
