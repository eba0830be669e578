//! Time and identity: the only non-determinism the engine needs, passed in
//! through [`Environment`] so tests can fix both.

use crate::item::Timestamp;

/// Supplies the current time and fresh memory ids.
pub trait Environment {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// A new, unique memory id (`[A-Za-z0-9_-]`, at most 256 bytes) for a
    /// memory made after every memory of the store, whose newest ULID id is
    /// `newest`. Memories that share a timestamp follow each other in id
    /// order, so an environment whose ids sort in the order they are made
    /// keeps a conversation's turns in order, also within one millisecond
    /// and across instances ([`UlidGenerator`]). An environment whose ids
    /// are not ULIDs may ignore `newest`.
    fn new_id(&mut self, newest: Option<&str>) -> String;
}

/// Crockford base32 alphabet used by ULIDs.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Characters of a ULID.
pub(crate) const ULID_LEN: usize = 26;

/// Reads a ULID as [`UlidGenerator`] writes it (26 uppercase Crockford
/// digits, at most 128 bits) into its value; `None` for any other id.
pub fn parse_ulid(id: &str) -> Option<u128> {
    let bytes = id.as_bytes();
    if bytes.len() != ULID_LEN || bytes[0] > b'7' {
        return None;
    }
    // A table, not a search of the alphabet per character: the catalog
    // parses every id a store loads in ascending order. In parts of 64-bit
    // values: a 128-bit shift per digit cost several times as much.
    let part = |digits: &[u8]| {
        digits.iter().try_fold(0u64, |value, &byte| {
            let digit = CROCKFORD_VALUES[usize::from(byte)];
            (digit < 32).then(|| value << 5 | u64::from(digit))
        })
    };
    let (top, rest) = bytes.split_at(ULID_LEN - 2 * PART_DIGITS);
    let (mid, low) = rest.split_at(PART_DIGITS);
    Some(
        u128::from(part(top)?) << (10 * PART_DIGITS)
            | u128::from(part(mid)?) << (5 * PART_DIGITS)
            | u128::from(part(low)?),
    )
}

/// Digits of each of a ULID's two low parts, read and written as 64-bit
/// values (60 bits each); the top part is the first two digits (8 bits).
const PART_DIGITS: usize = 12;

/// The value of each byte as a digit of [`CROCKFORD`], else 32.
const CROCKFORD_VALUES: [u8; 256] = {
    let mut values = [32; 256];
    let mut i = 0;
    while i < CROCKFORD.len() {
        values[CROCKFORD[i] as usize] = i as u8;
        i += 1;
    }
    values
};

/// Makes ULIDs (26 characters: 48 bits of milliseconds, 80 random bits)
/// that sort in the order they are made: an id made in the same
/// millisecond as the previous one, or after the clock went back, or not
/// after the store's newest id, is the larger of the two plus one. So
/// ingesting a conversation in one call, or on a clock that repeats, keeps
/// its turns in order.
#[derive(Debug, Clone, Default)]
pub struct UlidGenerator {
    last: u128,
}

impl UlidGenerator {
    /// The next id from the time `millis`, the `random` bits, and the
    /// store's newest ULID id `after`.
    pub fn next(&mut self, millis: i64, random: [u8; 10], after: Option<&str>) -> String {
        let time = u128::from(millis.max(0) as u64 & 0xFFFF_FFFF_FFFF);
        let mut candidate = time << 80;
        for (i, byte) in random.iter().enumerate() {
            candidate |= u128::from(*byte) << (72 - 8 * i);
        }
        let floor = self.last.max(after.and_then(parse_ulid).unwrap_or(0));
        // At u128::MAX (a clock 10,000 years ahead) the id repeats, and the
        // engine's uniqueness check asks again; nothing wraps around.
        let value = if candidate > floor {
            candidate
        } else {
            floor.saturating_add(1)
        };
        self.last = value;
        write_ulid(value).iter().map(|&b| b as char).collect()
    }
}

/// The ULID of `value` (26 Crockford digits, which [`parse_ulid`] reads
/// back to `value`).
pub(crate) fn write_ulid(value: u128) -> [u8; ULID_LEN] {
    const MASK: u128 = (1 << (5 * PART_DIGITS)) - 1;
    let mut out = [0u8; ULID_LEN];
    let (top, rest) = out.split_at_mut(ULID_LEN - 2 * PART_DIGITS);
    let (mid, low) = rest.split_at_mut(PART_DIGITS);
    let parts = [
        (top, (value >> (10 * PART_DIGITS)) as u64),
        (mid, (value >> (5 * PART_DIGITS) & MASK) as u64),
        (low, (value & MASK) as u64),
    ];
    for (digits, part) in parts {
        let last = digits.len() - 1;
        for (i, slot) in digits.iter_mut().enumerate() {
            *slot = CROCKFORD[(part >> (5 * (last - i)) & 31) as usize];
        }
    }
    out
}

/// Random bytes drawn from a source a pool at a time and handed out once
/// each. A host whose randomness is a call into JavaScript pays that call
/// per pool instead of per id: in Node, `crypto.getRandomValues` for each
/// id's 10 bytes took 19 % of a 10,000-memory lexical build
/// (`docs/speed.md`, "Eighteenth session"). A clone starts empty, so two
/// environments never hand out the same bytes.
#[derive(Debug)]
pub struct RandomPool {
    bytes: [u8; RandomPool::SIZE],
    /// The first byte not handed out yet (`SIZE`: none left).
    next: usize,
}

impl RandomPool {
    /// Bytes drawn at a time: 64 ids' worth.
    pub const SIZE: usize = 640;

    /// Fills `out` with bytes not handed out before, drawing a new pool
    /// from `source` whenever this one runs out.
    pub fn take(&mut self, out: &mut [u8], mut source: impl FnMut(&mut [u8])) {
        for byte in out {
            if self.next >= Self::SIZE {
                source(&mut self.bytes);
                self.next = 0;
            }
            *byte = self.bytes[self.next];
            self.next += 1;
        }
    }
}

impl Default for RandomPool {
    fn default() -> Self {
        RandomPool {
            bytes: [0; Self::SIZE],
            next: Self::SIZE,
        }
    }
}

impl Clone for RandomPool {
    /// An empty pool: the bytes left in this one are this one's alone.
    fn clone(&self) -> Self {
        RandomPool::default()
    }
}

/// A deterministic environment for tests and reproducible runs: a settable
/// clock and sequential ids `m000001`, `m000002`, ….
#[derive(Debug, Clone)]
pub struct FixedEnvironment {
    /// The time [`Environment::now`] returns.
    pub now: Timestamp,
    next: u64,
}

impl FixedEnvironment {
    /// Starts at `now` with id counter 1.
    pub fn new(now: Timestamp) -> Self {
        FixedEnvironment { now, next: 1 }
    }

    /// Moves the clock forward.
    pub fn advance_ms(&mut self, ms: i64) {
        self.now = Timestamp(self.now.0.saturating_add(ms));
    }
}

impl Environment for FixedEnvironment {
    fn now(&self) -> Timestamp {
        self.now
    }

    fn new_id(&mut self, _newest: Option<&str>) -> String {
        let id = format!("m{:06}", self.next);
        self.next += 1;
        id
    }
}

/// The operating system's clock and random numbers: native targets, and
/// WASI (`wasm32-wasip2`: the host's `wasi:clocks` and `wasi:random`); the
/// feature `os`. The JavaScript host (crates/js) supplies its own. Ids are
/// ULIDs in the order they are made ([`UlidGenerator`]).
#[cfg(feature = "os")]
#[derive(Debug, Clone, Default)]
pub struct SystemEnvironment {
    ids: UlidGenerator,
}

#[cfg(feature = "os")]
impl Environment for SystemEnvironment {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Timestamp(ms)
    }

    fn new_id(&mut self, newest: Option<&str>) -> String {
        let mut random = [0u8; 10];
        if getrandom::fill(&mut random).is_err() {
            // No entropy source: the generator still makes every id larger
            // than the last, so only other instances could collide, and the
            // engine's uniqueness check asks again then.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            random[..4].copy_from_slice(&nanos.to_le_bytes());
        }
        let now = self.now().0;
        self.ids.next(now, random, newest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills a pool with the next bytes of a counter.
    fn count_into(value: &mut u8, bytes: &mut [u8]) {
        for byte in bytes {
            *byte = *value;
            *value = value.wrapping_add(1);
        }
    }

    #[test]
    fn a_pool_hands_out_each_byte_once_and_draws_when_it_runs_out() {
        let mut pool = RandomPool::default();
        let mut draws = 0;
        let mut value = 0u8;
        let mut taken = Vec::new();
        // 70 ids of 10 bytes: 700 bytes, two pools.
        for _ in 0..70 {
            let mut id = [0u8; 10];
            pool.take(&mut id, |bytes| {
                draws += 1;
                count_into(&mut value, bytes);
            });
            taken.extend_from_slice(&id);
        }
        assert_eq!(draws, 2, "one draw a pool, not one an id");
        let expected: Vec<u8> = (0..700).map(|i| (i % 256) as u8).collect();
        assert_eq!(taken, expected, "every byte of the source, in order, once");
        // A take across the end of a pool continues into the next one.
        let mut rest = [0u8; RandomPool::SIZE];
        pool.take(&mut rest, |bytes| {
            draws += 1;
            count_into(&mut value, bytes);
        });
        assert_eq!(draws, 3);
        let more: Vec<u8> = (700..700 + RandomPool::SIZE)
            .map(|i| (i % 256) as u8)
            .collect();
        assert_eq!(rest.to_vec(), more);
    }

    #[test]
    fn a_cloned_pool_starts_empty() {
        let mut pool = RandomPool::default();
        let mut first = [0u8; 10];
        pool.take(&mut first, |bytes| bytes.fill(7));
        let mut clone = pool.clone();
        let mut from_clone = [0u8; 10];
        let mut drawn = false;
        clone.take(&mut from_clone, |bytes| {
            drawn = true;
            bytes.fill(9);
        });
        assert!(drawn, "the clone draws its own bytes");
        assert_eq!(from_clone, [9; 10]);
        let mut from_original = [0u8; 10];
        pool.take(&mut from_original, |_| {
            panic!("the original still has bytes")
        });
        assert_eq!(from_original, [7; 10]);
    }

    #[test]
    fn ulids_sort_by_time_and_use_crockford_digits() {
        let a = UlidGenerator::default().next(1_700_000_000_000, [0xff; 10], None);
        let b = UlidGenerator::default().next(1_700_000_000_001, [0; 10], None);
        assert_eq!(a.len(), 26);
        assert!(a < b);
        assert!(a.bytes().all(|c| CROCKFORD.contains(&c)));
        assert_eq!(
            parse_ulid(&a),
            Some((1_700_000_000_000u128 << 80) | ((1 << 80) - 1))
        );
        assert_eq!(parse_ulid("m000001"), None);
        assert_eq!(parse_ulid(&"Z".repeat(26)), None, "over 128 bits");
    }

    #[test]
    fn a_ulid_parses_as_its_digits_say() {
        // The oracle: each byte's place in the alphabet, searched.
        let slow = |id: &str| -> Option<u128> {
            if id.len() != ULID_LEN || id.as_bytes()[0] > b'7' {
                return None;
            }
            id.bytes().try_fold(0u128, |value, byte| {
                let digit = CROCKFORD.iter().position(|&c| c == byte)?;
                Some(value << 5 | digit as u128)
            })
        };
        let base = UlidGenerator::default().next(1_700_000_000_000, [0x5a; 10], None);
        for at in 0..ULID_LEN {
            for b in 0..=127u8 {
                let mut id = base.clone().into_bytes();
                id[at] = b;
                let id = String::from_utf8(id).unwrap();
                assert_eq!(parse_ulid(&id), slow(&id), "{id}");
            }
        }
    }

    #[test]
    fn a_ulid_is_written_as_its_value_says_and_read_back() {
        // The oracle: one 128-bit shift per digit.
        let slow = |value: u128| -> Vec<u8> {
            (0..ULID_LEN)
                .map(|i| CROCKFORD[(value >> (5 * (ULID_LEN - 1 - i)) & 31) as usize])
                .collect()
        };
        let mut values = vec![
            0,
            1,
            u128::MAX,
            u128::MAX >> 1,
            1 << 127,
            1 << 120,
            (1 << 120) - 1,
        ];
        values.extend((0..128).map(|bit| 1u128 << bit));
        values.extend((0..128).map(|bit| (1u128 << bit).wrapping_sub(1)));
        let mut x = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C834u128;
        for _ in 0..2_000 {
            x = x
                .wrapping_mul(0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645)
                .wrapping_add(1);
            values.push(x);
        }
        for value in values {
            let written = write_ulid(value);
            assert_eq!(written.to_vec(), slow(value), "{value:#x}");
            let text = std::str::from_utf8(&written).unwrap();
            assert_eq!(parse_ulid(text), Some(value), "{text}");
        }
    }

    #[test]
    fn ulids_keep_the_order_they_are_made_in() {
        let mut ids = UlidGenerator::default();
        let mut made = Vec::new();
        // One millisecond with falling random bits, then a clock that goes
        // back: every id is still larger than the one before.
        for (ms, random) in [(5, 9), (5, 3), (5, 0), (4, 200), (6, 1)] {
            made.push(ids.next(ms, [random; 10], None));
        }
        assert!(made.windows(2).all(|w| w[0] < w[1]), "{made:?}");
        // A store whose newest id is ahead of this instance's clock.
        let newest = UlidGenerator::default().next(1_000, [7; 10], None);
        let next = UlidGenerator::default().next(999, [0; 10], Some(&newest));
        assert!(next > newest);
        assert_eq!(parse_ulid(&next), parse_ulid(&newest).map(|v| v + 1));
        // An id that is no ULID sets no floor.
        let free = UlidGenerator::default().next(3, [0; 10], Some("zz-imported"));
        assert_eq!(parse_ulid(&free), Some(3u128 << 80));
    }

    #[test]
    fn fixed_environment_is_deterministic() {
        let mut env = FixedEnvironment::new(Timestamp(5));
        assert_eq!(env.new_id(None), "m000001");
        assert_eq!(env.new_id(Some("m000009")), "m000002");
        env.advance_ms(10);
        assert_eq!(env.now(), Timestamp(15));
    }
}
