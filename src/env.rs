//! Time and identity: the only non-determinism the engine needs, passed in
//! through [`Environment`] so tests can fix both.

use crate::item::Timestamp;

/// Supplies the current time and fresh memory ids.
pub trait Environment {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// A new, unique memory id (`[A-Za-z0-9_-]`, at most 256 bytes).
    fn new_id(&mut self) -> String;
}

/// Crockford base32 alphabet used by ULIDs.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Formats a ULID (26 characters, sortable by time) from a millisecond
/// timestamp and 80 random bits.
pub fn ulid(millis: i64, random: [u8; 10]) -> String {
    let time = u128::from(millis.max(0) as u64 & 0xFFFF_FFFF_FFFF);
    let mut value = time << 80;
    for (i, byte) in random.iter().enumerate() {
        value |= u128::from(*byte) << (72 - 8 * i);
    }
    let mut out = [0u8; 26];
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 125 - 5 * i as u32;
        *slot = CROCKFORD[((value >> shift) & 31) as usize];
    }
    out.iter().map(|&b| b as char).collect()
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

    fn new_id(&mut self) -> String {
        let id = format!("m{:06}", self.next);
        self.next += 1;
        id
    }
}

/// The operating system's clock and random numbers: native targets, and
/// WASI (`wasm32-wasip2`: the host's `wasi:clocks` and `wasi:random`); the
/// feature `os`. The JavaScript host (crates/js) supplies its own.
#[cfg(feature = "os")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemEnvironment;

#[cfg(feature = "os")]
impl Environment for SystemEnvironment {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Timestamp(ms)
    }

    fn new_id(&mut self) -> String {
        let mut random = [0u8; 10];
        if getrandom::fill(&mut random).is_err() {
            // No entropy source: fall back to the clock's nanoseconds, still
            // unique within this process thanks to the counter below.
            use std::sync::atomic::{AtomicU64, Ordering};
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            random[..4].copy_from_slice(&nanos.to_le_bytes());
            random[4..].copy_from_slice(&n.to_le_bytes()[..6]);
        }
        ulid(self.now().0, random)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulids_sort_by_time_and_use_crockford_digits() {
        let a = ulid(1_700_000_000_000, [0xff; 10]);
        let b = ulid(1_700_000_000_001, [0; 10]);
        assert_eq!(a.len(), 26);
        assert!(a < b);
        assert!(a.bytes().all(|c| CROCKFORD.contains(&c)));
        assert_eq!(ulid(0, [0; 10]), "0".repeat(26));
    }

    #[test]
    fn fixed_environment_is_deterministic() {
        let mut env = FixedEnvironment::new(Timestamp(5));
        assert_eq!(env.new_id(), "m000001");
        assert_eq!(env.new_id(), "m000002");
        env.advance_ms(10);
        assert_eq!(env.now(), Timestamp(15));
    }
}
