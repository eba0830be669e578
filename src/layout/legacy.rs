//! Stores of formats 1 to 3, where every record had a key of its own
//! (`item/<id>`, `vec/<id>`, `file/<hash>`) and the manifest counted them
//! and carried a digest of their bytes. Opening one reads and checks it as
//! those builds did; `super::open` then migrates it to the segmented layout
//! in one commit.

use super::is_layout;
use crate::codec::{self, SetDigest};
use crate::error::{Error, Result};
use crate::keys::{FILE_PREFIX, ITEM_PREFIX, MANIFEST_KEY, VECTOR_PREFIX};
use crate::storage::AsyncStorage;

/// What a store of formats 1 to 3 holds.
pub(super) struct LegacyStore {
    /// Every record, under its own key.
    pub(super) records: Vec<(String, Vec<u8>)>,
    /// The model of the embeddings, as its manifest names it.
    pub(super) model_id: Option<String>,
    /// The manifest's bytes, when there is one: the migration commits only
    /// if it is still there.
    pub(super) manifest: Option<Vec<u8>>,
}

/// Reads every record of a store of formats 1 to 3 in one snapshot and
/// checks them against its manifest: the counts and the digest must match,
/// else a write was torn (`CORRUPT`). `None` when the snapshot finds a
/// manifest of the segmented layout (another writer migrated the store).
pub(super) async fn read<S: AsyncStorage>(storage: &S) -> Result<Option<LegacyStore>> {
    let (scans, manifest) = storage
        .snapshot(&[ITEM_PREFIX, VECTOR_PREFIX, FILE_PREFIX], MANIFEST_KEY)
        .await?;
    if manifest.as_deref().is_some_and(is_layout) {
        return Ok(None);
    }
    let counts: Vec<usize> = scans.iter().map(Vec::len).collect();
    let records: Vec<(String, Vec<u8>)> = scans.into_iter().flatten().collect();
    let Some(bytes) = &manifest else {
        if records.is_empty() {
            return Ok(Some(LegacyStore {
                records,
                model_id: None,
                manifest,
            }));
        }
        return Err(Error::Corrupt(format!(
            "{} memory records but no manifest",
            records.len()
        )));
    };
    let m = codec::decode_manifest(bytes)?;
    let mut digest = SetDigest::default();
    for (_, record) in &records {
        digest.toggle(record);
    }
    let found = [m.item_count, m.vector_count, m.file_count];
    if found.iter().zip(&counts).any(|(&want, &got)| want != got as u64)
        || m.items_digest != digest.to_hex()
    {
        return Err(Error::Corrupt(format!(
            "the manifest lists {} memories with digest {}, storage holds {} with digest {}: a write was torn",
            m.item_count,
            m.items_digest,
            counts[0],
            digest.to_hex()
        )));
    }
    Ok(Some(LegacyStore {
        records,
        model_id: m.model_id,
        manifest,
    }))
}
