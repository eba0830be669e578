//! Where the engine's records live in storage: the segmented layout of
//! format 4 (`docs/format.md`, section 2.2).
//!
//! The engine's records (`item/…`, `vec/…`, `file/…`) do not get a storage
//! key each. Most sit in immutable *segments* (`seg/<n>`), many to a value;
//! recent changes sit in the *log*, which the manifest record carries after
//! its header. Opening a store reads the manifest and the segments it names
//! — one key per MiB of records, not one per record — and a small write
//! rewrites the manifest alone. A commit is one batch: the new segments,
//! the manifest naming them, and the deletes of the segments they replace;
//! the manifest is the commit point, and a reader that finds a segment
//! missing read a manifest that a newer commit replaced, and reads again.
//!
//! Compaction happens inside commits, with bounded work per call:
//! - a commit's records go to the log, or straight to a new segment when
//!   they are many ([`DIRECT_BYTES`]);
//! - the log folds into a new segment when it grows past [`LOG_BYTES`] or
//!   [`LOG_FRAMES`];
//! - at most one merge per commit: a segment holding more shadowed versions
//!   than live ones is rewritten, or [`MERGE_FANIN`] small segments of one
//!   size tier become one;
//! - a deleted record is erased in the same commit: every segment holding
//!   any version of it is rewritten without it, and the log drops it, so no
//!   byte of it stays in storage; so are the earlier versions of a memory
//!   whose text the commit replaces, and of its embedding.

pub(crate) mod catalog;
mod format;
mod held;
mod keys;
mod legacy;
mod lexical;
mod plan;
mod read;
mod varint;

use std::collections::BTreeMap;

use crate::codec;
use crate::engine::{Config, Engine};
use crate::error::{Error, Result};
use crate::fast_hash::FastSet;
use crate::keys::MANIFEST_KEY;
use crate::storage::{AsyncStorage, Expect, StorageError, SNAPSHOT_ATTEMPTS};
use format::{SegmentRef, LAYOUT_VERSION};
use keys::KeyMap;
#[cfg(any(test, feature = "testing"))]
pub use read::stored_records;

/// Bytes of records a segment is filled to (a record larger than this gets
/// a segment alone). Every backend's value limit is above it: Durable
/// Objects take 2 MiB, Workers KV 25 MiB; the Deno KV adapter chunks.
pub(crate) const SEGMENT_BYTES: usize = 1 << 20;
/// The log folds into a segment past this many bytes: the manifest, which
/// every commit rewrites, stays small.
pub(crate) const LOG_BYTES: usize = 64 << 10;
/// … or past this many frames (commits).
pub(crate) const LOG_FRAMES: usize = 64;
/// A commit whose records take more bytes than this writes them straight
/// to a segment instead of the log.
pub(crate) const DIRECT_BYTES: usize = 16 << 10;
/// How many small segments of one size tier merge into one.
pub(crate) const MERGE_FANIN: usize = 4;
/// Size tiers of small segments: below this, then ×4 each tier.
const TIER_BASE: u64 = 16 << 10;

/// Where each record is, as of the last load or commit; see the module
/// documentation.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// The live segments by number (oldest first).
    segments: BTreeMap<u64, Segment>,
    /// Every record key with where its versions are.
    keys: KeyMap,
    /// The log's frames, oldest first: frames of puts.
    log: Vec<Vec<u8>>,
    /// The keys with a version in the log.
    log_keys: FastSet<String>,
    /// The number the next segment takes.
    next_segment: u64,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    info: SegmentRef,
    /// How many of its records are the newest version of their key.
    live: u32,
    /// It is of the format this build writes (6: lexical and catalog
    /// parts); a segment of an older format is rewritten in it when a
    /// commit has no other merge.
    current: bool,
}

/// What [`open`] returns: the engine, where its records are, and the
/// manifest storage holds (the expectation of the next commit).
pub(crate) struct Opened {
    pub(crate) engine: Engine,
    pub(crate) layout: Layout,
    pub(crate) manifest: Option<Vec<u8>>,
}

/// Opens the store `storage` holds: reads the manifest and its segments,
/// or a store of formats 1 to 3, which it migrates to the segmented layout
/// in one commit first.
pub(crate) async fn open<S: AsyncStorage>(storage: &mut S, config: Config) -> Result<Opened> {
    config.validate()?;
    // The segment found missing under the same manifest at every attempt.
    let mut missing: Option<(Vec<u8>, String)> = None;
    let mut always_missing = true;
    for _ in 0..SNAPSHOT_ATTEMPTS {
        let manifest = storage.get(MANIFEST_KEY).await?;
        if let Some(bytes) = manifest.filter(|m| is_layout(m)) {
            match read::read(storage, config.clone(), bytes.clone()).await? {
                Read::Done(opened) => return Ok(opened),
                Read::Missing(key) => {
                    let same = missing.as_ref().is_none_or(|m| m == &(bytes.clone(), key.clone()));
                    always_missing &= same;
                    missing = Some((bytes, key));
                    continue;
                }
            }
        }
        always_missing = false;
        let Some(old) = legacy::read(storage).await? else {
            continue;
        };
        let keys: Vec<String> = old.records.iter().map(|(k, _)| k.clone()).collect();
        let mut engine = Engine::load(config.clone(), old.records, old.model_id)?;
        if keys.is_empty() {
            return Ok(Opened {
                engine,
                layout: Layout::default(),
                manifest: old.manifest,
            });
        }
        let mut plan = Layout::default().plan_all(&engine);
        for key in keys {
            plan.batch.delete(key);
        }
        let expect = Expect {
            key: MANIFEST_KEY,
            value: old.manifest.as_deref(),
        };
        match storage.commit(&plan.batch, Some(expect)).await {
            Ok(()) => {
                let mut layout = Layout::default();
                let manifest = plan.manifest.clone();
                plan.hold_rows(&mut engine);
                layout.apply(plan);
                return Ok(Opened {
                    engine,
                    layout,
                    manifest: Some(manifest),
                });
            }
            Err(StorageError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    match missing {
        // Not a newer commit's doing: the store lost a segment.
        Some((_, key)) if always_missing => Err(Error::Corrupt(format!(
            "`{key}`, which the manifest names, is missing"
        ))),
        _ => Err(Error::Storage(format!(
            "other writers changed the store during each of {SNAPSHOT_ATTEMPTS} attempts to open it"
        ))),
    }
}

/// True when `manifest` is a record of the segmented layout (else a
/// manifest of formats 1 to 3, or damage the legacy reader reports).
pub(crate) fn is_layout(manifest: &[u8]) -> bool {
    codec::decode(manifest).is_ok() && codec::record_version(manifest) >= LAYOUT_VERSION
}

/// How reading the segments a manifest names ended.
pub(crate) enum Read<T> {
    Done(T),
    /// This segment was not found: a newer commit replaced it, or the
    /// store lost it.
    Missing(String),
}
