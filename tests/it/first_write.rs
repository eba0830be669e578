//! The first write after an open grows none of the lists an open sizes
//! for its store. An open sizes BM25's docs and terms, the docs' owners,
//! the followers' links, the key map's slots and the doc tables for what
//! the store holds; sized to exactly that, the first memory written after
//! the open doubled every one of them, which in a Worker that opened and
//! wrote on each cold start took about 11 MiB of linear memory at
//! 100,000 memories, never given back (`docs/speed.md`, "The first write
//! after an open"). An open now leaves room for the writes that follow.
//!
//! The bytes are counted by the `it` binary's allocator, per thread
//! (`retrieve_allocations`).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use memtide::{block_on, MemoryInput, RetrieveQuery, Scope, ScopeFilter};
use memtide_testkit::faults::MapKv;
use memtide_testkit::store::{open_kv as open, KvMem as Mem};

use crate::progress::CountingEmbedder;
use crate::retrieve_allocations::held_bytes;

const MEMORIES: usize = 4_000;

fn scope() -> Scope {
    Scope::workspace("alice", "home")
}

/// The tests' embedder of hashed words: every memory gets an embedding,
/// which is all this test needs of them.
fn embedder() -> Arc<CountingEmbedder> {
    Arc::new(CountingEmbedder {
        embedded: Arc::new(AtomicUsize::new(0)),
    })
}

/// A store of [`MEMORIES`] distinct notes in one ingest (one segment: the
/// first write after the open merges nothing, which would replace every
/// held row), embedded or not.
fn filled(embedded: bool) -> MapKv {
    let kv = MapKv::default();
    let mut mem = open(&kv);
    if embedded {
        block_on(mem.set_embedder(embedder())).unwrap().unwrap();
    }
    let notes = (0..MEMORIES)
        .map(|n| {
            MemoryInput::new(
                format!("note {n}: word{n} and term{} for week {}", n * 3, n % 52),
                scope(),
            )
        })
        .collect();
    block_on(mem.ingest(notes)).unwrap().unwrap();
    kv
}

// A list doubled would keep its whole size again: 4,000 docs of BM25
// (16 to 40 bytes each, natively), owners (16), links (8), key slots (12)
// and vector locations (8) come to over 300 KiB (without the room,
// `room::with_room` giving the length alone: 723,128 and 841,607 bytes).
// The memory written, its catalog entry, postings and keys take a few
// KiB.
const BOUND: i64 = 24 * 1024;

/// Opens `kv`, answers once (a dry run, which writes nothing), then
/// checks the bytes the first write keeps: one memory with words no
/// other holds.
fn first_write_keeps_little(kv: &MapKv, embedded: bool) {
    let mut mem: Mem = open(kv);
    if embedded {
        let embedded_now = block_on(mem.set_embedder(embedder())).unwrap().unwrap();
        assert_eq!(embedded_now, 0, "every memory was embedded when written");
    }
    let mut query = RetrieveQuery::new("what about word17?", scope());
    query.dry_run = true;
    assert!(!block_on(mem.retrieve(&query)).unwrap().unwrap().is_empty());
    let before = held_bytes();
    block_on(mem.ingest(vec![MemoryInput::new("zebra quokka xylophone", scope())]))
        .unwrap()
        .unwrap();
    let kept = held_bytes() - before;
    assert_eq!(mem.stats(&ScopeFilter::default()).items, MEMORIES + 1);
    assert!(
        kept < BOUND,
        "the first write after an open (embedded: {embedded}) kept {kept} bytes"
    );
}

#[test]
fn the_first_write_after_an_open_grows_no_list_of_the_store() {
    first_write_keeps_little(&filled(false), false);
}

#[test]
fn the_first_embedded_write_after_an_open_grows_no_list_of_the_store() {
    first_write_keeps_little(&filled(true), true);
}
