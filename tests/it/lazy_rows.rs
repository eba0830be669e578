//! Memories held as their catalog rows (`src/layout/catalog.rs`,
//! `HeldRow`; `src/engine/held.rs`): a store opened from its segments keeps
//! most memories undecoded until one is read. Through random writes
//! (memories with a rest: metadata, supersessions, summaries; keyed
//! memories; soft and hard deletes; files; usage marks), failed commits
//! rolled back, refreshes and reloads, every instance answers `get`,
//! `list`, `retrieve` (with and without the policy's filters, which read
//! a held row in place), `export` and `stats` exactly as an engine loaded
//! from the store's records decoded whole (`Engine::load`, the oracle).

use proptest::prelude::*;

use memtide::engine::{Engine, Txn};
use memtide::layout::stored_records;
use memtide::storage::KvStorage;
use memtide::{
    block_on, Config, Kind, ListQuery, MemoryInput, MemoryPatch, Privacy, RetrieveQuery, Role,
    Scope, ScopeFilter, Source, SourceKind, Status, SummaryInput, Timestamp,
};
use memtide_testkit::faults::MapKv;
use memtide_testkit::store::{open_kv, KvMem, T0};

type Mem = KvMem;

const TOPICS: [&str; 6] = ["coffee", "berlin", "guitar", "marathon", "sushi", "violin"];
const SPEAKERS: [&str; 2] = ["Caroline", "Melanie"];

fn scope(n: usize) -> Scope {
    Scope::workspace(["alice", "bob"][n % 2], "home")
}

/// A text of about 120 bytes; equal `n` give equal texts (duplicates).
fn text(n: usize) -> String {
    format!(
        "note w{n}x: we talked about {} and {} on day {}, and agreed to meet again soon",
        TOPICS[n % 6],
        TOPICS[(n / 6) % 6],
        n % 31
    )
}

const TAGS: [&str; 3] = ["travel", "music", "sport"];

/// Memory `n` of the first batch, with the fields the retrieval policy
/// and ranking read varied (`src/policy.rs`, `src/rank.rs`): kind, role,
/// speaker, source, tags, review status, PII, privacy, its own retention
/// (some expired at `T0`) and its age. Twenty a day, a minute apart, so
/// that memories of a scope follow each other (turns pass a share of
/// their score to their neighbours).
fn varied(n: usize) -> MemoryInput {
    let day = Timestamp::DAY_MS;
    let minute = 60_000;
    MemoryInput {
        kind: Some([Kind::Episodic, Kind::Fact, Kind::Preference][n % 3]),
        role: [None, Some(Role::User), Some(Role::Assistant)][n / 3 % 3],
        speaker: (n % 5 == 1).then(|| SPEAKERS[n / 5 % 2].to_string()),
        source: (n % 4 == 1).then(|| Source {
            kind: SourceKind::Message,
            reference: format!("chat-{n}"),
            uri: None,
        }),
        tags: (!n.is_multiple_of(4))
            .then(|| vec![TAGS[n % 3].to_string(), TAGS[n / 3 % 3].to_string()]),
        status: n.is_multiple_of(13).then_some(Status::Pending),
        privacy: Some(Privacy {
            pii: n.is_multiple_of(7),
            private: n.is_multiple_of(17),
            retention_days: n.is_multiple_of(5).then_some((n % 40) as u32),
        }),
        created_at: Some(Timestamp(
            T0 - (n / 20) as i64 * day - (n % 20) as i64 * minute,
        )),
        ..MemoryInput::new(text(n), scope(n % 2))
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Memories by text number, speaker and scope.
    Ingest(Vec<(usize, Option<usize>, usize)>),
    /// 150 new memories, numbered from `1000 + 150 * n`: a commit that
    /// writes a segment of its own, so that small segments merge (and a
    /// merge writes the memories it keeps, as the engine holds them, as
    /// rows: pinned, deleted, with a rest).
    Bulk(usize),
    Update {
        at: usize,
        text: Option<usize>,
        pin: bool,
        metadata: bool,
    },
    Delete {
        at: usize,
        hard: bool,
    },
    Restore {
        at: usize,
    },
    /// A keyed memory; with `supersede`, the one holding the key is kept
    /// as superseded.
    Upsert {
        key: usize,
        text: usize,
        supersede: bool,
    },
    Summary {
        sources: Vec<usize>,
        text: usize,
    },
    File {
        path: usize,
        text: usize,
    },
    /// A retrieval that marks what it finds as used.
    Retrieve {
        text: usize,
    },
    /// The next write fails to commit: the writer rolls it back.
    Fail(Box<Op>),
    /// The writer reopens the store.
    Reload,
}

fn write_op() -> impl Strategy<Value = Op> {
    let index = any::<usize>;
    prop_oneof![
        4 => proptest::collection::vec((0usize..60, proptest::option::of(0usize..2), 0usize..2), 1..30)
            .prop_map(Op::Ingest),
        2 => (0usize..1000).prop_map(Op::Bulk),
        2 => (index(), proptest::option::of(0usize..60), any::<bool>(), any::<bool>())
            .prop_map(|(at, text, pin, metadata)| Op::Update { at, text, pin, metadata }),
        2 => (index(), any::<bool>()).prop_map(|(at, hard)| Op::Delete { at, hard }),
        1 => index().prop_map(|at| Op::Restore { at }),
        1 => (0usize..4, 0usize..60, any::<bool>())
            .prop_map(|(key, text, supersede)| Op::Upsert { key, text, supersede }),
        1 => (proptest::collection::vec(index(), 1..4), 0usize..60)
            .prop_map(|(sources, text)| Op::Summary { sources, text }),
        1 => (0usize..2, 0usize..60).prop_map(|(path, text)| Op::File { path, text }),
        1 => (0usize..60).prop_map(|text| Op::Retrieve { text }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => write_op(),
        2 => write_op().prop_map(|op| Op::Fail(Box::new(op))),
        1 => Just(Op::Reload),
    ]
}

fn open(kv: &MapKv) -> Mem {
    open_kv(kv)
}

/// The ids the writer holds, sorted: what an index picks from (modulo their number).
fn ids(mem: &Mem) -> Vec<String> {
    let mut ids: Vec<String> = mem.engine().items().map(|item| item.id.clone()).collect();
    ids.sort();
    ids
}

/// Applies `op` to `mem`; an error (a refused write, a failed commit) is
/// part of the run.
fn apply(mem: &mut Mem, kv: &MapKv, op: &Op) {
    let held = ids(mem);
    let pick = |at: &usize| (!held.is_empty()).then(|| held[at % held.len()].clone());
    let _ = match op {
        Op::Ingest(inputs) => {
            let inputs = inputs
                .iter()
                .map(|&(n, speaker, s)| {
                    let mut input = MemoryInput::new(text(n), scope(s));
                    input.speaker = speaker.map(|k| SPEAKERS[k].to_string());
                    input.role = speaker.map(|_| Role::User);
                    input
                })
                .collect();
            block_on(mem.ingest(inputs)).unwrap().map(drop)
        }
        Op::Bulk(n) => {
            let inputs = (0..150)
                .map(|k| {
                    let mut input = MemoryInput::new(text(1000 + 150 * n + k), scope(k % 2));
                    input.pinned = Some(k % 10 == 0);
                    input.tags =
                        (k % 10 == 1).then(|| vec!["lazy".to_string(), TOPICS[k % 6].to_string()]);
                    input.speaker = (k % 10 == 2).then(|| SPEAKERS[k % 2].to_string());
                    input.metadata =
                        (k % 10 == 3).then(|| serde_json::from_str(r#"{"bulk": true}"#).unwrap());
                    input
                })
                .collect();
            block_on(mem.ingest(inputs)).unwrap().map(drop)
        }
        Op::Update {
            at,
            text: new,
            pin,
            metadata,
        } => match pick(at) {
            Some(id) => {
                let patch = MemoryPatch {
                    text: new.map(text),
                    pinned: Some(*pin),
                    metadata: metadata
                        .then(|| serde_json::from_str(r#"{"topic": "lazy"}"#).unwrap()),
                    ..MemoryPatch::default()
                };
                block_on(mem.update(&id, patch)).unwrap().map(drop)
            }
            None => Ok(()),
        },
        Op::Delete { at, hard } => match pick(at) {
            Some(id) => block_on(mem.delete(&id, *hard)).unwrap(),
            None => Ok(()),
        },
        Op::Restore { at } => match pick(at) {
            Some(id) => {
                let patch = MemoryPatch {
                    deleted: Some(false),
                    ..MemoryPatch::default()
                };
                block_on(mem.update(&id, patch)).unwrap().map(drop)
            }
            None => Ok(()),
        },
        Op::Upsert {
            key,
            text: n,
            supersede,
        } => {
            let mut input = MemoryInput::new(text(*n), scope(0));
            input.key = Some(format!("k{key}"));
            input.supersede = Some(*supersede);
            block_on(mem.upsert(vec![input])).unwrap().map(drop)
        }
        Op::Summary { sources, text: n } => {
            let sources = sources.iter().filter_map(pick).collect();
            let input = SummaryInput {
                scope: scope(0),
                text: format!("summary {}", text(*n)),
                sources,
            };
            block_on(mem.store_summary(input)).unwrap().map(drop)
        }
        Op::File { path, text: n } => {
            let content = format!("# Notes\n\n{}\n\n{}\n", text(*n), text(n + 1));
            block_on(mem.sync_file(&scope(0), &format!("notes/{path}.md"), &content))
                .unwrap()
                .map(drop)
        }
        Op::Retrieve { text: n } => {
            let query = RetrieveQuery::new(text(*n), scope(0));
            block_on(mem.retrieve(&query)).unwrap().map(drop)
        }
        Op::Fail(inner) => {
            kv.trigger().arm(0);
            apply(mem, kv, inner);
            kv.trigger().disarm();
            Ok(())
        }
        Op::Reload => Ok(()),
    };
}

/// The retrievals each instance answers: a few texts in both scopes,
/// dry runs (they mark nothing used), each with none of the policy's
/// filters and with one of them (or PII and pending memories let in).
fn queries() -> Vec<RetrieveQuery> {
    let filters: [fn(&mut RetrieveQuery); 6] = [
        |_| {},
        |q| q.tags = Some(vec![TAGS[1].to_string()]),
        |q| q.kinds = Some(vec![Kind::Fact, Kind::Preference]),
        |q| q.roles = Some(vec![Role::User]),
        |q| {
            q.since = Some(Timestamp(T0 - 30 * Timestamp::DAY_MS));
            q.until = Some(Timestamp(T0 - 5 * Timestamp::DAY_MS));
        },
        |q| {
            q.include_pii = true;
            q.include_pending = true;
        },
    ];
    let mut queries = Vec::new();
    for (i, n) in [0, 7, 13, 29].into_iter().enumerate() {
        for s in 0..2 {
            for filter in [filters[0], filters[1 + (i * 2 + s) % 5]] {
                let text = format!("{} {}", TOPICS[n % 6], TOPICS[(n + 1) % 6]);
                let mut query = RetrieveQuery::new(text, scope(s));
                query.dry_run = true;
                query.limit = Some(8);
                filter(&mut query);
                queries.push(query);
            }
        }
    }
    queries
}

/// A retrieval's hits: the memories and their scores to the bit.
fn hits(hits: Vec<memtide::RetrieveHit>) -> String {
    let items: Vec<_> = hits.iter().map(|h| (&h.item, h.score.to_bits())).collect();
    format!("{}\n", serde_json::to_string(&items).unwrap())
}

/// What an engine answers, as text: every memory by `get`, every page of
/// `list` (deleted memories included), the `retrievals` it answered, the
/// export and the statistics.
fn answers(engine: &Engine, retrievals: Vec<String>) -> String {
    let mut out = String::new();
    let mut ids: Vec<String> = engine.items().map(|item| item.id.clone()).collect();
    ids.sort();
    for id in &ids {
        out += &format!(
            "{}\n",
            serde_json::to_string(&*engine.get(id).unwrap()).unwrap()
        );
    }
    let mut query = ListQuery {
        include_deleted: true,
        limit: Some(7),
        ..ListQuery::default()
    };
    loop {
        let page = engine.list(&query).unwrap();
        out += &format!("{}\n", serde_json::to_string(&page.items).unwrap());
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => break,
        }
    }
    out += &retrievals.concat();
    out += &engine.export(&ScopeFilter::default(), Timestamp(T0));
    out += &serde_json::to_string(&engine.stats(&ScopeFilter::default(), true)).unwrap();
    out
}

/// What an instance answers (retrieving through it).
fn instance_answers(mem: &mut Mem) -> String {
    let retrievals = queries()
        .iter()
        .map(|query| hits(block_on(mem.retrieve(query)).unwrap().unwrap()))
        .collect();
    answers(mem.engine(), retrievals)
}

/// What an engine loaded from the store's records, each decoded whole,
/// answers.
fn oracle_answers(kv: &MapKv) -> String {
    let storage = block_on(KvStorage::open(kv.clone())).unwrap().unwrap();
    let records = block_on(stored_records(&storage)).unwrap().unwrap();
    let mut engine = Engine::load(Config::default(), records.into_iter().collect(), None).unwrap();
    assert_eq!(engine.held_memories(), 0, "the oracle decodes every memory");
    let retrievals = queries()
        .iter()
        .map(|query| {
            hits(
                engine
                    .retrieve(query, Timestamp(T0), &mut Txn::default())
                    .unwrap(),
            )
        })
        .collect();
    answers(&engine, retrievals)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The writer (its memories held, decoded on read, or set by its
    /// writes), a reader that refreshes after each write, and a fresh
    /// open answer as the oracle after every operation.
    #[test]
    fn held_rows_answer_as_decoded_memories(ops in proptest::collection::vec(op(), 1..12)) {
        let kv = MapKv::default();
        let mut writer = open(&kv);
        // Enough memories at once for a segment of rows, not the log.
        let first = (0..240).map(varied).collect();
        block_on(writer.ingest(first)).unwrap().unwrap();
        // Memories pinned, with metadata (a rest), soft-deleted, one
        // commit each: the log folds into a segment that holds them as
        // rows. Then segments that merge with the first.
        for at in 0..70 {
            let op = match at % 3 {
                0 => Op::Delete { at, hard: false },
                _ => Op::Update { at, text: None, pin: at % 3 == 1, metadata: at % 5 == 0 },
            };
            apply(&mut writer, &kv, &op);
        }
        for n in 0..4 {
            apply(&mut writer, &kv, &Op::Bulk(n));
        }
        let mut reader = open(&kv);
        prop_assert!(reader.engine().held_memories() > 100, "{}", reader.engine().held_memories());
        for op in &ops {
            if let Op::Reload = op {
                writer = open(&kv);
            } else {
                apply(&mut writer, &kv, op);
            }
            block_on(reader.refresh()).unwrap().unwrap();
            let oracle = oracle_answers(&kv);
            let mut fresh = open(&kv);
            prop_assert!(fresh.engine().held_memories() > 0);
            prop_assert_eq!(&instance_answers(&mut fresh), &oracle, "a fresh open after {:?}", op);
            prop_assert_eq!(&instance_answers(&mut reader), &oracle, "the reader after {:?}", op);
            prop_assert_eq!(&instance_answers(&mut writer), &oracle, "the writer after {:?}", op);
        }
    }
}
