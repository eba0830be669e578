//! Retrieval allocates nothing per word of a candidate's text. The time
//! match of a `when` question (`rank::mentions_time`) once collected every
//! candidate's words into a set of owned strings, which raised the p95 of
//! native retrieval (`docs/speed.md`, "Retrieval"); the month match of a
//! question naming a month (`rank::in_months`) lowercased and collected
//! them twice.
//!
//! The counting allocator below is the allocator of the whole `it` binary;
//! it counts per thread, so the tests running beside this one do not
//! disturb its count. It also keeps the bytes each thread holds, which
//! `read_retention` reads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{Memory, MemoryInput, RetrieveQuery, Scope, Timestamp};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated on this thread less those freed on it.
    static HELD: Cell<i64> = const { Cell::new(0) };
    /// The most `HELD` has been since [`reset_peak`].
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

/// The system allocator, counting the calls that allocate on each thread
/// and the bytes each thread holds.
struct CountingAllocator;

fn counted() {
    // `try_with`: a thread being torn down has no counter left.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn held(bytes: i64) {
    let _ = HELD.try_with(|n| {
        n.set(n.get() + bytes);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(n.get())));
    });
}

/// The bytes this thread holds now (allocated on it and not freed).
pub(crate) fn held_bytes() -> i64 {
    HELD.with(Cell::get)
}

/// Starts this thread's peak from the bytes it holds now.
pub(crate) fn reset_peak() {
    PEAK.with(|peak| peak.set(held_bytes()));
}

/// The most bytes this thread has held since [`reset_peak`].
pub(crate) fn peak_bytes() -> i64 {
    PEAK.with(Cell::get)
}

// SAFETY: every call is forwarded unchanged to `System`; a thread-local
// counter with a const initializer and no destructor is updated besides.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        held(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted();
        held(layout.size() as i64);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        held(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(pointer, layout, new_size) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        held(-(layout.size() as i64));
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn scope() -> Scope {
    Scope::workspace("u", "w")
}

/// The allocations this thread makes to answer `question` (a dry run, so
/// nothing is written).
fn allocations_to_answer(
    memory: &mut Memory<MemoryStorage, FixedEnvironment>,
    question: &str,
) -> u64 {
    let mut query = RetrieveQuery::new(question, scope());
    query.dry_run = true;
    let before = ALLOCATIONS.with(Cell::get);
    let hits = memory.retrieve(&query).expect("retrieve");
    let allocations = ALLOCATIONS.with(Cell::get) - before;
    assert!(!hits.is_empty(), "{question} finds the memories");
    allocations
}

/// A store of 300 memories that all match the questions below, none
/// naming a time, so every one is a candidate the time and month match
/// read: a shared start and 20 words of their own (far from
/// near-duplicates of each other), made in November 2023.
fn lake_store() -> Memory<MemoryStorage, FixedEnvironment> {
    let env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    let mut memory = Memory::open(MemoryStorage::new(), env, Default::default()).unwrap();
    let texts = (0..300u32).map(|i| {
        let own: Vec<String> = (0..20u32)
            .map(|k| format!("w{}", (i * 7919 + k * 104_729) % 100_003))
            .collect();
        format!("Caroline: camping by the lake, {}", own.join(" "))
    });
    memory
        .ingest(texts.map(|text| MemoryInput::new(text, scope())).collect())
        .unwrap();
    memory
}

/// Asserts that answering `question` over [`lake_store`] allocates no
/// more than the same question without what it adds (`plain`): the same
/// candidates, so the match it adds may allocate a little for the query,
/// not per candidate (`what` says what it adds, for the message).
fn assert_allocates_no_more_than_plain(question: &str, what: &str) {
    let mut memory = lake_store();
    let plain = allocations_to_answer(&mut memory, "Did Caroline go camping by the lake?");
    let asked = allocations_to_answer(&mut memory, question);
    assert!(
        asked < plain + 100,
        "a question {what} allocates {asked} times, the same question without it {plain}"
    );
}

#[test]
fn a_when_question_allocates_nothing_per_word_of_its_candidates() {
    // The time match collected every candidate's words (over 20
    // allocations per candidate).
    assert_allocates_no_more_than_plain("When did Caroline go camping by the lake?", "asking when");
}

#[test]
fn a_question_naming_a_month_allocates_nothing_per_word_of_its_candidates() {
    // July is not the month the memories were made in, so the month match
    // reads every candidate's text (it collected its words twice, four
    // allocations per candidate).
    assert_allocates_no_more_than_plain(
        "Did Caroline go camping by the lake in July?",
        "naming a month",
    );
}
