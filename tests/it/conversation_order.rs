//! Input order is memory order: a conversation ingested in one call whose
//! turns share one timestamp (an imported history with only session dates)
//! keeps its turns in order, across calls with the same timestamp and after
//! reopening, with the system's ids (ULIDs) and not only the sequential ids
//! of `FixedEnvironment`. Thread following, answer inheritance and the
//! context vectors read that order through `follows`.

use memtide::env::{Environment, SystemEnvironment, UlidGenerator};
use memtide::storage::MemoryStorage;
use memtide::{Config, Memory, MemoryInput, Timestamp};
use memtide_testkit::store::scope;

/// A session date shared by every turn.
const SESSION: Timestamp = Timestamp(1_683_000_000_000);

/// A made-up word of its own for each `n`, so that no two turns are near
/// duplicates of each other.
fn word(n: usize) -> String {
    let mut n = n + 26;
    let mut word = String::new();
    while n > 0 {
        word.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
    }
    word
}

/// Ingests `turns` in one call, each with the session's date, and returns
/// their ids in input order.
fn ingest_turns<E: Environment>(
    mem: &mut Memory<MemoryStorage, E>,
    first: usize,
    turns: usize,
) -> Vec<String> {
    let inputs = (first..first + turns)
        .map(|n| {
            let speaker = if n % 2 == 0 { "Caroline" } else { "Melanie" };
            let text = format!("{speaker}: we spoke of {} and {}", word(n), word(n * 7 + 3));
            let mut input = MemoryInput::new(text, scope());
            input.created_at = Some(SESSION);
            input
        })
        .collect();
    mem.ingest(inputs)
        .unwrap()
        .into_iter()
        .map(|result| result.id.expect("every turn is new"))
        .collect()
}

/// Asserts that each id follows the one before it.
fn assert_chain<E: Environment>(mem: &Memory<MemoryStorage, E>, ids: &[String]) {
    for pair in ids.windows(2) {
        let item = mem.get(&pair[1]).unwrap();
        assert_eq!(
            item.follows.as_deref(),
            Some(pair[0].as_str()),
            "{}",
            item.text
        );
        assert!(pair[0] < pair[1], "ids sort in input order");
    }
}

#[test]
fn turns_sharing_a_timestamp_follow_each_other_in_input_order() {
    let mut mem = Memory::open(
        MemoryStorage::new(),
        SystemEnvironment::default(),
        Config::default(),
    )
    .unwrap();
    // Far more turns than a millisecond holds, so many ids share one.
    let mut ids = ingest_turns(&mut mem, 0, 200);
    assert_eq!(mem.get(&ids[0]).unwrap().follows, None);
    ids.extend(ingest_turns(&mut mem, 200, 50));
    assert_chain(&mem, &ids);

    // A new instance (a new process, another tab) continues the chain, even
    // within the millisecond of the last id.
    let storage = mem.into_storage();
    let mut reopened =
        Memory::open(storage, SystemEnvironment::default(), Config::default()).unwrap();
    ids.extend(ingest_turns(&mut reopened, 250, 50));
    assert_chain(&reopened, &ids);
}

/// A clock that never moves and random bits that only fall, from `random`:
/// every id drawn would sort before the one drawn before it.
struct StuckClock {
    ids: UlidGenerator,
    random: u8,
}

impl StuckClock {
    fn new(random: u8) -> Self {
        StuckClock {
            ids: UlidGenerator::default(),
            random,
        }
    }
}

impl Environment for StuckClock {
    fn now(&self) -> Timestamp {
        SESSION
    }

    fn new_id(&mut self, newest: Option<&str>) -> String {
        self.random = self.random.saturating_sub(1);
        self.ids.next(SESSION.0, [self.random; 10], newest)
    }
}

#[test]
fn a_new_instance_makes_its_ids_after_the_stores_newest_on_a_clock_that_repeats() {
    let mut mem = Memory::open(
        MemoryStorage::new(),
        StuckClock::new(255),
        Config::default(),
    )
    .unwrap();
    let mut ids = ingest_turns(&mut mem, 0, 20);
    assert_chain(&mem, &ids);
    // The second instance draws lower random bits in the same millisecond:
    // only the store's newest id keeps its turns after the first's.
    let storage = mem.into_storage();
    let mut reopened = Memory::open(storage, StuckClock::new(100), Config::default()).unwrap();
    ids.extend(ingest_turns(&mut reopened, 20, 20));
    assert_chain(&reopened, &ids);
}
