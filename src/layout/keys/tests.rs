//! The key map's tests: it holds what a plain map holds, with keys held
//! by their ULID and keys near them, in fewer bytes than it took.

use super::*;
use memtide_testkit::rng::Rng;
use std::collections::BTreeMap;

/// The state of one key as the map it replaced held it.
#[derive(Debug, Default, Clone, PartialEq)]
struct Oracle {
    segments: Vec<u64>,
    in_log: bool,
}

/// Key `n` of a test's pool: most short, some long enough that keys
/// dropped and added again fill buffers with bytes no longer held
/// (which the map then writes anew), one longer than a buffer; and
/// memories' and embeddings' keys of a ULID, the two of one ULID held in
/// one slot.
fn pool_key(n: u64) -> String {
    if n % 5 == 1 || n % 5 == 2 {
        let value = u128::from(n / 5 + 1) * 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let ulid = String::from_utf8_lossy(&crate::env::write_ulid(value)).into_owned();
        return format!("{}{ulid}", ULID_PREFIXES[(n % 5 - 1) as usize]);
    }
    let pad = match n {
        59 => 70_000,
        n if n % 7 == 0 => 5_000 + n as usize,
        _ => 0,
    };
    format!("item/{n}/é{}", "x".repeat(pad))
}

/// Random pushes, log marks, segment removals, key removals and drops
/// of unheld keys (all of them, or one named) leave the map holding
/// what a `BTreeMap` of the plain state holds, and every id still
/// names its key; the buffers never hold more bytes of keys no longer
/// held than of keys held (past one buffer's worth), and are written
/// anew at least once over the seeds.
#[test]
fn the_map_holds_what_a_plain_map_holds() {
    let mut rewrites = 0;
    for seed in 0..40 {
        let mut rng = Rng(seed);
        let mut map = KeyMap::default();
        let mut oracle: BTreeMap<String, Oracle> = BTreeMap::new();
        let mut next_segment = 0u64;
        let mut live_segments: Vec<u64> = Vec::new();
        for _ in 0..400 {
            let key = pool_key(rng.next_u64() % 60);
            let garbage = map.bytes.garbage;
            match rng.next_u64() % 8 {
                0 | 1 => {
                    // A new segment holding a few keys.
                    let number = next_segment;
                    next_segment += 1 + rng.next_u64() % 3;
                    live_segments.push(number);
                    for _ in 0..1 + rng.next_u64() % 6 {
                        let key = pool_key(rng.next_u64() % 60);
                        let id = map.entry(&key);
                        let state = oracle.entry(key).or_default();
                        if state.segments.last() != Some(&number) {
                            map.push(id, number);
                            state.segments.push(number);
                        }
                    }
                }
                2 => {
                    let id = map.entry(&key);
                    let in_log = rng.next_u64().is_multiple_of(2);
                    map.set_in_log(id, in_log);
                    oracle.entry(key).or_default().in_log = in_log;
                }
                3 if !live_segments.is_empty() => {
                    let gone = live_segments.remove((rng.next_u64() % live_segments.len() as u64) as usize);
                    map.retain_segments(|n| n != gone);
                    for state in oracle.values_mut() {
                        state.segments.retain(|&n| n != gone);
                    }
                }
                4 => {
                    map.remove(&key);
                    oracle.remove(&key);
                }
                5 => {
                    map.retain_held();
                    oracle.retain(|_, state| state.in_log || !state.segments.is_empty());
                }
                6 => {
                    map.release_if_unheld(&key);
                    if oracle.get(&key).is_some_and(|state| !state.in_log && state.segments.is_empty()) {
                        oracle.remove(&key);
                    }
                }
                _ => {}
            }
            assert_eq!(map.len(), oracle.len(), "seed {seed}");
            let KeyBytes { used, garbage: now, .. } = map.bytes;
            assert!(now <= KEY_CHUNK || now * 2 <= used, "seed {seed}: {now} of {used}");
            assert_eq!(used - now, map.held_bytes(), "seed {seed}");
            if now < garbage {
                rewrites += 1;
            }
            let mut held: Vec<(String, Oracle)> = map
                .iter()
                .map(|(id, key)| {
                    let key = &*key;
                    assert_eq!(map.get(key), Some(id));
                    assert_eq!(&*map.key(id), key);
                    let state = Oracle {
                        segments: map.segments(id).collect(),
                        in_log: map.in_log(id),
                    };
                    let live = (!state.in_log).then(|| state.segments.last().copied()).flatten();
                    assert_eq!(map.live_segment(id), live);
                    assert_eq!(map.live_segment_of(key), live);
                    (key.to_string(), state)
                })
                .collect();
            held.sort_by(|a, b| a.0.cmp(&b.0));
            let expected: Vec<(String, Oracle)> = oracle.clone().into_iter().collect();
            assert_eq!(held, expected, "seed {seed}");
        }
        // Segment places are reused, not grown one per segment ever.
        assert!(map.segments.len() <= live_segments.len() + 8, "seed {seed}");
    }
    assert!(rewrites > 0);
}

impl KeyMap {
    /// The bytes the buffers hold of the keys held as their bytes;
    /// checks that each slot in the table holds a key, that no two slots
    /// hold one ULID, and that the places of ULIDs not free are those of
    /// the slots held by a ULID (a memory's and its embedding's key in
    /// one).
    fn held_bytes(&self) -> usize {
        let mut held = 0;
        let mut values = std::collections::BTreeSet::new();
        for &index in self.table.iter() {
            let slot = self.slots[index as usize];
            if slot.by_ulid() {
                assert!(values.insert(self.bytes.ulid(slot.at)), "a ULID in two slots");
            } else if slot.at != NOT_IN_CHUNKS {
                held += (slot.len & LEN) as usize;
            } else {
                assert!(self.bytes.long.contains_key(&index), "a slot of no key in the table");
            }
        }
        let taken: usize = self.bytes.ulids.iter().map(Vec::len).sum();
        assert_eq!(taken - self.bytes.free_ulids.len(), values.len());
        held
    }
}

/// Key `n` of a pool of keys near memories' and embeddings' keys: a
/// ULID key held by its value, and keys that differ from one by a
/// character or its length, which must be held as their bytes (their
/// values, as a careless reading makes them, are a ULID key's).
fn near_ulid_key(rng: &mut Rng, values: &[u128]) -> String {
    let value = values[(rng.next_u64() % values.len() as u64) as usize];
    let prefix = ULID_PREFIXES[(rng.next_u64() % 2) as usize];
    let mut ulid: Vec<u8> = crate::env::write_ulid(value).to_vec();
    let at = (rng.next_u64() % ULID_LEN as u64) as usize;
    match rng.next_u64() % 12 {
        // Lowercase: the same value to a reader ignoring case.
        0 => ulid.make_ascii_lowercase(),
        1 => ulid[at] = ulid[at].to_ascii_lowercase(),
        // A first digit past 7: past 128 bits.
        2 => ulid[0] = b"89ABCDEFGHJKMNPQRSTVWXYZ"[at % 24],
        // Letters that are no Crockford digit.
        3 => ulid[at] = b"ILOU"[at % 4],
        4 => {
            ulid.pop();
        }
        5 => ulid.push(b'0'),
        6 => {
            let other = ["file/", "item", "items/", "vec//", "", "Item/", "é/"][at % 7];
            return format!("{other}{}", String::from_utf8_lossy(&ulid));
        }
        7 => return format!("{prefix}{}/", String::from_utf8_lossy(&ulid)),
        8 => return format!("{}{prefix}", String::from_utf8_lossy(&ulid)),
        _ => {}
    }
    format!("{prefix}{}", String::from_utf8_lossy(&ulid))
}

/// Random inserts, removals (of one key, of the unheld ones, of one
/// if unheld) and lookups of keys mixing ULID keys held by their
/// value, keys near them held as their bytes, and other keys leave the
/// map holding the keys a `BTreeMap` holds, each found by its text and
/// written back exactly, also after the buffers are written anew; the
/// buffers' live bytes are the held keys', a memory's and its
/// embedding's shared bytes counted once.
#[test]
fn ulid_keys_and_keys_near_them_are_held_as_a_plain_map_holds() {
    let mut rewrites = 0;
    let mut by_value = 0;
    let mut shared = 0;
    for seed in 0..12 {
        let mut rng = Rng(seed);
        // Few values, so that keys near one another meet often; the
        // first digits 0 and 7.
        let values: Vec<u128> = (0..40)
            .map(|n| match n {
                0 => 0,
                1 => u128::MAX,
                _ => u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()),
            })
            .collect();
        let pool: Vec<String> = (0..300)
            .map(|n| match n % 3 {
                0 => format!("{}{}", ULID_PREFIXES[n % 2], String::from_utf8_lossy(&crate::env::write_ulid(values[n % 40]))),
                1 => near_ulid_key(&mut rng, &values),
                // Some long, so that keys removed fill buffers.
                _ => format!("other/{n}/é{}", "x".repeat(n % 4 * 1_000)),
            })
            .collect();
        let mut map = KeyMap::default();
        // Each key's id, and whether it is held (in the log).
        let mut model: BTreeMap<String, (KeyId, bool)> = BTreeMap::new();
        for step in 0..6_000 {
            let key = &pool[(rng.next_u64() % pool.len() as u64) as usize];
            let garbage = map.bytes.garbage;
            match rng.next_u64() % 40 {
                0..=15 => {
                    let id = map.entry(key);
                    match model.get(key) {
                        Some(&(held, _)) => assert_eq!(id, held, "seed {seed}: {key}"),
                        None => {
                            assert!(!model.values().any(|&(held, _)| held == id), "seed {seed}: {key}");
                            let in_log = !rng.next_u64().is_multiple_of(4);
                            map.set_in_log(id, in_log);
                            model.insert(key.clone(), (id, in_log));
                        }
                    }
                }
                16..=25 => {
                    map.remove(key);
                    model.remove(key);
                }
                26 => {
                    map.retain_held();
                    model.retain(|_, (_, in_log)| *in_log);
                }
                27..=29 => {
                    map.release_if_unheld(key);
                    if model.get(key).is_some_and(|(_, in_log)| !in_log) {
                        model.remove(key);
                    }
                }
                _ => assert_eq!(map.get(key), model.get(key).map(|(id, _)| *id), "seed {seed}: {key}"),
            }
            if map.bytes.garbage < garbage {
                rewrites += 1;
            }
            let KeyBytes { used, garbage, .. } = map.bytes;
            assert_eq!(used - garbage, map.held_bytes(), "seed {seed}");
            if step % 250 == 0 {
                let mut held: Vec<(String, KeyId)> = map.iter().map(|(id, key)| (key.to_string(), id)).collect();
                held.sort();
                let expected: Vec<(String, KeyId)> = model.iter().map(|(key, (id, _))| (key.clone(), *id)).collect();
                assert_eq!(held, expected, "seed {seed}");
                for (key, &(id, _)) in &model {
                    assert_eq!(&*map.key(id), key.as_str(), "seed {seed}");
                    assert_eq!(map.get(key), Some(id), "seed {seed}");
                    let slot = map.slots[split(id).0 as usize];
                    assert_eq!(slot.by_ulid(), ulid_form(key).is_some(), "seed {seed}: {key}");
                }
                by_value += model.keys().filter(|key| ulid_form(key).is_some()).count();
                shared += model.values().filter(|(id, _)| split(*id).1 && map.slots[split(*id).0 as usize].has(ITEM_KIND)).count();
            }
        }
    }
    assert!(rewrites > 0 && by_value > 0 && shared > 0, "{rewrites} rewrites, {by_value} keys held by value, {shared} sharing");
}

/// The bytes a map's allocations ask for, as a counting allocator
/// counts them (before the allocator's rounding).
fn heap_bytes(map: &KeyMap) -> usize {
    let keys: usize = map.bytes.chunks.iter().map(String::capacity).sum::<usize>()
        + map.bytes.ulids.iter().map(|block| block.capacity() * 16).sum::<usize>()
        + map.bytes.ulids.capacity() * 24
        + map.bytes.free_ulids.capacity() * 4
        + map.bytes.long.values().map(|key| key.len()).sum::<usize>()
        + hash_map_bytes(map.bytes.long.capacity(), 4 + 16)
        + map.bytes.chunks.capacity() * 24;
    let older: usize = map.older.values().map(|older| older.heap_bytes()).sum();
    map.slots.capacity() * std::mem::size_of::<Slot>()
        + map.table.allocation_size()
        + keys
        + older
        + map.free.capacity() * 4
        + map.segments.capacity() * std::mem::size_of::<Option<u64>>()
        + hash_map_bytes(map.places.capacity(), 12)
        + hash_map_bytes(map.older.capacity(), 4 + std::mem::size_of::<Older>())
}

/// Bytes of the table of a std `HashMap` of `capacity` entries of
/// `entry` bytes (hashbrown: buckets a power of two, 7/8 of them
/// usable, a control byte each plus a group's).
fn hash_map_bytes(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * entry + buckets + 16
}

/// The map of a store of 100,000 memories with embeddings (200,000
/// keys of ULIDs, one version each, in segments of 2,500 records) as
/// the reader fills it, against the map it replaced (a `HashMap` of a
/// `String` and a state with a `Vec<u64>` of older segments, an
/// `Option<u64>` and a flag), filled the same way: under half the
/// bytes, and under 30 a key (with the keys' text, 49).
/// `--nocapture` prints both (`docs/speed.md`).
#[test]
fn a_key_takes_under_half_the_bytes_it_took() {
    #[allow(dead_code)]
    #[derive(Default)]
    struct Replaced {
        older: Vec<u64>,
        last: Option<u64>,
        in_log: bool,
    }
    let mut ids = crate::env::UlidGenerator::default();
    let mut keys = Vec::new();
    for n in 0..100_000u64 {
        let id = ids.next(1_700_000_000_000 + n as i64, [7; 10], None);
        keys.push(format!("item/{id}"));
        keys.push(format!("vec/{id}"));
    }
    keys.sort();
    let mut map = KeyMap::default();
    map.reserve(keys.len(), keys.len() / 2);
    let mut replaced: FastMap<String, Replaced> = FastMap::default();
    replaced.reserve(keys.len());
    for (n, key) in keys.iter().enumerate() {
        let segment = (n / 2_500) as u64;
        let id = map.entry(key);
        map.push(id, segment);
        let state = replaced.entry(key.clone()).or_default();
        state.last = Some(segment);
    }
    let bytes = heap_bytes(&map);
    let entry = std::mem::size_of::<(String, Replaced)>();
    let key_bytes: usize = keys.iter().map(String::len).sum();
    let replaced_bytes = hash_map_bytes(replaced.capacity(), entry) + key_bytes;
    println!(
        "200,000 keys: {bytes} bytes ({:.1} MiB, {} a key) against {replaced_bytes} ({:.1} MiB, {} a key)",
        bytes as f64 / 1048576.0,
        bytes / keys.len(),
        replaced_bytes as f64 / 1048576.0,
        replaced_bytes / keys.len()
    );
    assert!(bytes * 2 < replaced_bytes, "{bytes} against {replaced_bytes}");
    // Each key's ULID held once for the two keys, not its text twice.
    assert!(bytes < 30 * keys.len(), "{bytes}");
}

/// Keys written again while their first segment still holds them (as
/// usage marks do): each has one older version, held inline, so the side
/// table's entries are all its bytes; a key with two older versions holds
/// them in a list, and every key still names its segments in order.
#[test]
fn a_key_written_again_takes_no_list_of_its_own() {
    let mut ids = crate::env::UlidGenerator::default();
    let keys: Vec<String> = (0..20_000u64)
        .map(|n| format!("item/{}", ids.next(1_700_000_000_000 + n as i64, [7; 10], None)))
        .collect();
    let mut map = KeyMap::default();
    for key in &keys {
        let id = map.entry(key);
        map.push(id, 10);
        map.push(id, 11);
    }
    let thrice = map.get(&keys[0]).unwrap();
    map.push(thrice, 12);
    let listed: usize = map.older.values().map(Older::heap_bytes).sum();
    assert_eq!(listed, 8, "only the key with two older versions has a list");
    let entries = hash_map_bytes(map.older.capacity(), 4 + std::mem::size_of::<Older>());
    println!("20,000 keys with an older version: {} bytes of older versions, {} a key", entries + listed, (entries + listed) / keys.len());
    // A `Vec<u32>` per key took its entry (4 + 24 bytes natively) and a
    // list of 16 bytes.
    let replaced = hash_map_bytes(map.older.capacity(), 4 + 24) + 16 * keys.len();
    assert!(entries + listed < replaced * 3 / 4, "{} against {replaced}", entries + listed);
    assert_eq!(map.segments(thrice).collect::<Vec<_>>(), [10, 11, 12]);
    for key in &keys[1..] {
        assert_eq!(map.segments(map.get(key).unwrap()).collect::<Vec<_>>(), [10, 11]);
    }
}
