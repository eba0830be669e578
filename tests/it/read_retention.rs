//! Reading memories keeps nothing of them. A store opened from its
//! segments holds most memories as their catalog rows (`HeldRow`); a
//! reader of a whole memory gets it decoded for itself. The catalog once
//! kept each decoded memory beside its row for the life of the engine, so
//! an instance that answered queries, listed or exported its memories
//! grew by about a decoded memory for each one it had read: in the
//! package, 20 MiB over 1,000 queries and 59 MiB for one listing of all
//! 100,000 memories, and linear memory never shrinks (`docs/speed.md`,
//! "Heap per memory").
//!
//! The bytes are counted by the `it` binary's allocator, per thread
//! (`retrieve_allocations`).

use memtide::{block_on, ListQuery, MemoryInput, RetrieveQuery, Scope, SummaryQuery};
use memtide_testkit::faults::MapKv;
use memtide_testkit::store::{open_kv as open, KvMem as Mem};

use crate::retrieve_allocations::{held_bytes, peak_bytes, reset_peak};

const MEMORIES: usize = 400;
const TOPICS: [&str; 5] = ["coffee", "berlin", "guitar", "marathon", "sushi"];

fn scope() -> Scope {
    Scope::workspace("alice", "home")
}

/// The memories of both tests, in one ingest: large enough to go
/// straight to a segment of rows, not the log.
fn notes() -> Vec<MemoryInput> {
    (0..MEMORIES)
        .map(|n| {
            let topic = TOPICS[n % TOPICS.len()];
            MemoryInput::new(
                format!(
                    "note {n}: the {topic} plan number {n} for the week of {}",
                    n * 7
                ),
                scope(),
            )
        })
        .collect()
}

/// Every way to read memories, each reading all of them or many: `get`
/// of each, every page of `list`, `export`, retrievals (dry runs, which
/// write nothing) and a summarizer's context. What they return is dropped.
fn read_everything(mem: &mut Mem) {
    let mut ids = Vec::new();
    let mut query = ListQuery {
        include_deleted: true,
        limit: Some(50),
        ..ListQuery::default()
    };
    loop {
        let page = mem.list(&query).unwrap();
        ids.extend(page.items.into_iter().map(|item| item.id));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => break,
        }
    }
    assert_eq!(ids.len(), MEMORIES);
    for id in &ids {
        assert_eq!(&mem.get(id).unwrap().id, id);
    }
    assert!(mem.export().len() > MEMORIES * 50);
    for topic in TOPICS {
        let mut query = RetrieveQuery::new(format!("what about the {topic}?"), scope());
        query.dry_run = true;
        query.limit = Some(20);
        assert!(!block_on(mem.retrieve(&query)).unwrap().unwrap().is_empty());
    }
    let context = mem
        .summary_context(&SummaryQuery {
            scope: scope(),
            limit: Some(100),
            include_pii: false,
        })
        .unwrap();
    assert_eq!(context.memories.len(), 100);
}

#[test]
fn reading_every_memory_of_a_held_store_keeps_none_of_them() {
    let kv = MapKv::default();
    let mut writer = open(&kv);
    block_on(writer.ingest(notes())).unwrap().unwrap();
    drop(writer);

    let mut mem = open(&kv);
    assert!(mem.engine().held_memories() > MEMORIES * 9 / 10);
    let before = held_bytes();
    read_everything(&mut mem);
    let after_first = held_bytes();
    read_everything(&mut mem);
    let after_second = held_bytes();
    // A decoded memory kept would take several hundred bytes (the memory
    // and its strings): 400 of them over 100 KiB. What a first read may
    // build and keep (a query's lookups) is far less, and a second read
    // keeps nothing more.
    let first = after_first - before;
    assert!(
        first < (MEMORIES * 40) as i64,
        "reading every memory once kept {first} bytes"
    );
    assert!(
        after_second - after_first < 1024,
        "reading every memory again kept {} bytes more",
        after_second - after_first
    );
    assert!(mem.engine().held_memories() > MEMORIES * 9 / 10);
}

#[test]
fn memories_a_commit_stores_in_a_segment_are_held_by_its_rows() {
    let kv = MapKv::default();
    let mut mem = open(&kv);
    block_on(mem.ingest(notes())).unwrap().unwrap();
    // The writer holds them as the segment's rows, as a fresh open does,
    // and still answers as it did.
    assert_eq!(mem.engine().held_memories(), MEMORIES);
    assert_eq!(open(&kv).engine().held_memories(), MEMORIES);
    let mut query = RetrieveQuery::new("the marathon plan number 8", scope());
    query.dry_run = true;
    let hits = block_on(mem.retrieve(&query)).unwrap().unwrap();
    assert!(hits.iter().any(|hit| hit.item.text.starts_with("note 8:")));
    // A small write goes to the log: its memory stays decoded until the
    // log folds into a segment.
    block_on(mem.ingest(vec![MemoryInput::new("one more note", scope())]))
        .unwrap()
        .unwrap();
    assert_eq!(mem.engine().held_memories(), MEMORIES);
}

/// Marks three memories in five used, a query each: their segment, most
/// of it older versions then, is rewritten with the other two in five.
fn mark_three_in_five_used(mem: &mut Mem) {
    for n in (0..MEMORIES).filter(|n| n % 5 < 3) {
        let topic = TOPICS[n % TOPICS.len()];
        let mut query = RetrieveQuery::new(format!("the {topic} plan number {n}"), scope());
        query.limit = Some(1);
        assert!(!block_on(mem.retrieve(&query)).unwrap().unwrap().is_empty());
    }
}

/// Queries marking their hits used rewrite those memories (their usage
/// counts); once more than half of a segment's records are such older
/// versions, a commit rewrites the segment with its live records only.
/// A memory held as the row of a segment so rewritten kept that
/// segment's whole catalog part alive, dead rows included, for as long as
/// the memory lived: the engine held the store's parts as first read
/// beside every version written since (natively, 6,000 queries marking
/// their hits used at 100,000 memories kept 8.1 MiB above the open;
/// 5.3 now). The rows of the rewritten segment now take their place.
#[test]
fn usage_marks_keep_no_part_of_a_rewritten_segment() {
    let kv = MapKv::default();
    block_on(open(&kv).ingest(notes())).unwrap().unwrap();
    let mut mem = open(&kv);
    mark_three_in_five_used(&mut mem);
    // What an instance holds is what dropping it frees. The instance that
    // wrote holds what a fresh open of the same store holds, and the
    // little its writes left (a part of the rewritten segment, decoded
    // memories of the log: a fresh open decodes the log's too).
    let size = |mem: Mem| {
        let before = held_bytes();
        drop(mem);
        before - held_bytes()
    };
    let fresh = open(&kv);
    assert_eq!(fresh.engine().held_memories(), mem.engine().held_memories());
    let (fresh, written) = (size(fresh), size(mem));
    assert!(
        written - fresh < 16 * 1024,
        "the instance that wrote holds {} bytes more than a fresh open's {fresh}",
        written - fresh
    );
}

/// A commit that rewrites a segment decodes its live memories for the
/// plan, each once, into a list sized once; the records given as bytes
/// (a folded log's) have their memories boxed, not a memory-sized slot
/// for every record. The list grew by doubling (at 100,000 memories its
/// last copy was 4.8 MiB beside the 2.4 it came from) and the slots took
/// 2.9 MiB for a merge, nearly all empty (`docs/speed.md`, "Fourteenth
/// session").
#[test]
fn a_segment_rewrite_holds_its_memories_once_at_its_peak() {
    let kv = MapKv::default();
    block_on(open(&kv).ingest(notes())).unwrap().unwrap();
    let mut mem = open(&kv);
    let segment_bytes: usize = kv
        .map()
        .iter()
        .filter(|(key, _)| key.starts_with("seg/"))
        .map(|(_, value)| value.len())
        .sum();
    reset_peak();
    let start = held_bytes();
    mark_three_in_five_used(&mut mem);
    // The peak over these writes holds the log's decoded memories, the
    // commit's plan and the segment it writes: 6.4 times the store's
    // segments now, 8.2 times with the list that doubled and the slots.
    let peak = peak_bytes() - start;
    assert!(
        peak < 7 * segment_bytes as i64,
        "the writes peaked at {peak} bytes over {segment_bytes} bytes of segments"
    );
}
