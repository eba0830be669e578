//! The hash maps and sets of the engine, its indexes and the layout reader.
//!
//! They hash with foldhash rather than the standard library's SipHash,
//! which took about a sixth of the CPU time of opening a large store
//! (`docs/speed.md`, "The open"). Their keys are ids, record keys,
//! caller keys, content hashes,
//! scopes and terms, some of which callers choose: foldhash's per-map
//! random seed means a caller cannot precompute colliding keys, though it
//! is not a keyed cryptographic hash; the worst a caller who found
//! collisions could do is slow down operations on the store it already
//! writes to, within the ingest limits on ids, keys and texts.

use std::collections::{HashMap, HashSet};

/// A `HashMap` hashing with foldhash; see the module documentation.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// A `HashSet` hashing with foldhash; see the module documentation.
pub(crate) type FastSet<K> = HashSet<K, foldhash::fast::RandomState>;
