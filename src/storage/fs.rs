//! A native directory backend: a checksummed append-only log, mirrored in
//! memory.
//!
//! The directory holds `store.log`, a sequence of frames, one per committed
//! [`Batch`], and `LOCK` while a store has it open. `docs/format.md` specifies
//! the frame layout, the recovery rules and the locking. In short:
//!
//! * A batch without deletes is appended as one frame and `fsync`ed.
//! * A batch with deletes (and a log holding more than twice the live data)
//!   rewrites the log as one frame of the live pairs into `store.log.tmp`,
//!   which is synced and renamed over `store.log`: nothing of a deleted value
//!   stays in the directory.
//! * On open, a damaged *last* frame is a torn append and is cut off; damage
//!   anywhere before it is reported as [`StorageError::Corrupt`].

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::frame::{
    declared_frame_len, encode_frame, intact_frame_len, op_len, parse_frame, MIN_FRAME_LEN,
};
use super::{scan_map, Batch, Storage, StorageError};

const LOG_FILE: &str = "store.log";
const TMP_FILE: &str = "store.log.tmp";
const LOCK_FILE: &str = "LOCK";

/// A log shorter than this is never compacted for size alone.
const COMPACTION_MIN_LOG_BYTES: u64 = 64 * 1024;

/// Linux `errno` values for "no space left on device" and "disk quota
/// exceeded".
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;

/// A store in one directory of the local file system.
///
/// Every committed pair is also kept in memory, which serves [`Storage::get`]
/// and [`Storage::scan`]. One `FsStorage` at a time may have a directory
/// open; a second [`FsStorage::open`] fails until the first is dropped.
pub struct FsStorage {
    dir: PathBuf,
    log: File,
    /// Bytes of `store.log` that hold committed frames.
    log_len: u64,
    /// Set when cutting a failed append off the log failed too: the next
    /// commit retries the cut before appending.
    log_has_garbage_tail: bool,
    map: BTreeMap<String, Vec<u8>>,
    /// Sum of [`op_len`] over the live pairs: the op bytes of a compacted log.
    live_op_bytes: u64,
    // Declared last so it is released after the log file is closed.
    _lock: DirLock,
}

impl FsStorage {
    /// Opens the store in `dir`, creating the directory if it is missing.
    ///
    /// Recovers from an interrupted write: a leftover `store.log.tmp` is
    /// removed and a torn last frame is cut off. Fails with
    /// [`StorageError::Corrupt`] when committed frames are damaged, and with
    /// [`StorageError::Backend`] when another process (or another
    /// `FsStorage`) has the directory open.
    pub fn open(dir: impl AsRef<Path>) -> Result<FsStorage, StorageError> {
        let dir = dir.as_ref();
        let dir_is_new = !dir.exists();
        fs::create_dir_all(dir).map_err(io_error)?;
        let lock = DirLock::acquire(dir)?;
        remove_if_exists(&dir.join(TMP_FILE))?;

        let mut log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOG_FILE))
            .map_err(io_error)?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes).map_err(io_error)?;
        let (map, committed_len) = replay(&bytes)?;
        let log_len = committed_len as u64;
        if committed_len < bytes.len() {
            log.set_len(log_len)
                .and_then(|()| log.sync_all())
                .map_err(io_error)?;
        }
        if bytes.is_empty() {
            // The log may have just been created: make its directory entry
            // (and the directory's own) durable before the first commit.
            sync_dir(dir);
            if let Some(parent) = dir.parent().filter(|_| dir_is_new) {
                sync_dir(parent);
            }
        }

        let live_op_bytes = map.iter().map(|(k, v)| op_len(k, Some(v))).sum();
        Ok(FsStorage {
            dir: dir.to_path_buf(),
            log,
            log_len,
            log_has_garbage_tail: false,
            map,
            live_op_bytes,
            _lock: lock,
        })
    }

    /// Appends one frame and syncs it; on failure the log is cut back to its
    /// previous length.
    fn append(&mut self, frame: &[u8]) -> Result<(), StorageError> {
        if self.log_has_garbage_tail {
            self.log.set_len(self.log_len).map_err(io_error)?;
            self.log_has_garbage_tail = false;
        }
        let written = self
            .log
            .seek(SeekFrom::Start(self.log_len))
            .and_then(|_| self.log.write_all(frame))
            .and_then(|()| self.log.sync_data());
        if let Err(error) = written {
            let rolled_back = self
                .log
                .set_len(self.log_len)
                .and_then(|()| self.log.sync_all());
            self.log_has_garbage_tail = rolled_back.is_err();
            return Err(io_error(error));
        }
        self.log_len += frame.len() as u64;
        Ok(())
    }

    /// Replaces the log with `frame` (the whole live state, or nothing) via
    /// `store.log.tmp` and an atomic rename. On failure the old log stays.
    fn replace_log(&mut self, frame: &[u8]) -> Result<(), StorageError> {
        let tmp_path = self.dir.join(TMP_FILE);
        let written = write_synced(&tmp_path, frame)
            .and_then(|file| fs::rename(&tmp_path, self.dir.join(LOG_FILE)).map(|()| file));
        match written {
            Ok(file) => {
                // The rename is done and visible: the new log is the state
                // now, whether or not the directory sync is supported.
                sync_dir(&self.dir);
                self.log = file;
                self.log_len = frame.len() as u64;
                self.log_has_garbage_tail = false;
                Ok(())
            }
            Err(error) => {
                // Best effort: open() removes a leftover tmp file anyway.
                let _ = fs::remove_file(&tmp_path);
                Err(io_error(error))
            }
        }
    }

    /// Rewrites the log when it holds more than twice the live data.
    fn compact_if_bloated(&mut self) {
        let compacted_len = if self.map.is_empty() {
            0
        } else {
            (MIN_FRAME_LEN as u64).saturating_add(self.live_op_bytes)
        };
        if self.log_len < COMPACTION_MIN_LOG_BYTES
            || self.log_len <= compacted_len.saturating_mul(2)
        {
            return;
        }
        let pairs: Vec<_> = self
            .map
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.as_slice())))
            .collect();
        // The batch that got us here is already durable. A failed compaction
        // leaves a valid (longer) log and is retried after the next commit.
        if let Ok(frame) = encode_frame(&pairs) {
            let _ = self.replace_log(&frame);
        }
    }

    /// Applies a committed batch to the in-memory mirror.
    fn apply(&mut self, batch: &Batch) {
        for (key, value) in batch.ops() {
            let old = match value {
                Some(v) => {
                    self.live_op_bytes += op_len(key, Some(v));
                    self.map.insert(key.to_string(), v.to_vec())
                }
                None => self.map.remove(key),
            };
            if let Some(old) = old {
                self.live_op_bytes = self.live_op_bytes.saturating_sub(op_len(key, Some(&old)));
            }
        }
    }
}

impl Storage for FsStorage {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.map.get(key).cloned())
    }

    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(scan_map(&self.map, prefix))
    }

    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
        batch.validate_keys()?;
        if batch.is_empty() {
            return Ok(());
        }
        if batch.erases() {
            // Erase by rewriting: the new log holds the live pairs after the
            // batch, so no byte of a deleted value survives in the directory.
            let touched: HashSet<&str> = batch.ops().map(|(k, _)| k).collect();
            let kept = self
                .map
                .iter()
                .filter(|(k, _)| !touched.contains(k.as_str()))
                .map(|(k, v)| (k.as_str(), Some(v.as_slice())));
            let added = batch.ops().filter(|(_, v)| v.is_some());
            let live: Vec<_> = kept.chain(added).collect();
            let frame = encode_frame(&live)?;
            self.replace_log(&frame)?;
            self.apply(batch);
        } else {
            let ops: Vec<_> = batch.ops().collect();
            let frame = encode_frame(&ops)?;
            self.append(&frame)?;
            self.apply(batch);
            self.compact_if_bloated();
        }
        Ok(())
    }
}

impl fmt::Debug for FsStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsStorage")
            .field("dir", &self.dir)
            .field("keys", &self.map.len())
            .field("log_len", &self.log_len)
            .finish()
    }
}

/// Replays a log: the committed pairs and the length of the committed
/// prefix. Everything after that prefix is a torn append; damage that cannot
/// be one is an error (the rules are in `docs/format.md`).
fn replay(log: &[u8]) -> Result<(BTreeMap<String, Vec<u8>>, usize), StorageError> {
    let mut map = BTreeMap::new();
    let mut pos = 0;
    while pos < log.len() {
        let rest = &log[pos..];
        let Some(len) = intact_frame_len(rest) else {
            check_torn_tail(rest, pos)?;
            break;
        };
        let ops = parse_frame(&rest[..len]).map_err(|reason| {
            StorageError::Corrupt(format!("store.log frame at offset {pos}: {reason}"))
        })?;
        for (key, value) in ops {
            match value {
                Some(v) => map.insert(key.to_string(), v.to_vec()),
                None => map.remove(key),
            };
        }
        pos += len;
    }
    Ok((map, pos))
}

/// Decides whether the damaged bytes `rest`, found at `offset`, can be an
/// append interrupted by a crash, or are damaged committed data.
fn check_torn_tail(rest: &[u8], offset: usize) -> Result<(), StorageError> {
    if let Some(len) = declared_frame_len(rest).filter(|&len| len < rest.len()) {
        return Err(StorageError::Corrupt(format!(
            "store.log frame at offset {offset} fails its checksum and {} bytes follow it: \
             committed data is damaged",
            rest.len() - len
        )));
    }
    if let Some(next) = (1..rest.len()).find(|&at| intact_frame_len(&rest[at..]).is_some()) {
        return Err(StorageError::Corrupt(format!(
            "store.log is damaged at offset {offset} and an intact frame follows at offset {}: \
             committed data is damaged",
            offset + next
        )));
    }
    Ok(())
}

/// Creates (or truncates) `path`, writes `bytes` and syncs, returning the
/// file open for reading and writing.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(file)
}

/// Makes a rename in `dir` durable where the platform supports syncing a
/// directory; other platforms (and file systems that refuse) are ignored.
#[cfg(unix)]
fn sync_dir(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Makes a rename in `dir` durable where the platform supports syncing a
/// directory; other platforms (and file systems that refuse) are ignored.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

fn remove_if_exists(path: &Path) -> Result<(), StorageError> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != ErrorKind::NotFound => Err(io_error(error)),
        _ => Ok(()),
    }
}

/// Maps an I/O error, turning "disk full" and "over quota" into
/// [`StorageError::QuotaExceeded`].
fn io_error(error: io::Error) -> StorageError {
    let out_of_space = error.kind() == ErrorKind::StorageFull
        || (cfg!(target_os = "linux") && matches!(error.raw_os_error(), Some(ENOSPC | EDQUOT)));
    if out_of_space {
        StorageError::QuotaExceeded(format!("the store's disk is full or over quota: {error}"))
    } else {
        StorageError::Io(error)
    }
}

/// Exclusive use of a store directory, held as the file `LOCK` containing the
/// holder's process id; the file is removed on drop.
struct DirLock {
    path: PathBuf,
}

impl DirLock {
    fn acquire(dir: &Path) -> Result<DirLock, StorageError> {
        let path = dir.join(LOCK_FILE);
        // A second attempt follows the removal of a stale lock.
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let lock = DirLock { path };
                    file.write_all(std::process::id().to_string().as_bytes())
                        .and_then(|()| file.sync_all())
                        .map_err(io_error)?;
                    return Ok(lock);
                }
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
                Err(error) => return Err(io_error(error)),
            }
            let holder = fs::read_to_string(&path)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok());
            match holder {
                Some(pid) if !process_is_alive(pid) => remove_if_exists(&path)?,
                _ => return Err(locked_error(&path, holder)),
            }
        }
        Err(locked_error(&path, None))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn locked_error(path: &Path, holder: Option<u32>) -> StorageError {
    let holder = holder.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    StorageError::Backend(format!(
        "store is locked by another process{holder}: {} exists; \
         delete it only if no process has the store open",
        path.display()
    ))
}

/// Whether `pid` names a running process. Only Linux can tell (through
/// `/proc`); elsewhere, and without a mounted `/proc`, every holder is alive.
#[cfg(target_os = "linux")]
fn process_is_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Whether `pid` names a running process. Only Linux can tell (through
/// `/proc`); elsewhere, and without a mounted `/proc`, every holder is alive.
#[cfg(not(target_os = "linux"))]
fn process_is_alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::super::frame::{Op, FRAME_HEADER_LEN, FRAME_TRAILER_LEN};
    use super::*;

    fn frame_of(ops: &[Op<'_>]) -> Vec<u8> {
        encode_frame(ops).unwrap()
    }

    /// Recomputes the CRC of a frame after a test edited it.
    fn reseal(frame: &mut [u8]) {
        let crc_at = frame.len() - FRAME_TRAILER_LEN;
        let crc = crc32fast::hash(&frame[..crc_at]).to_le_bytes();
        frame[crc_at..].copy_from_slice(&crc);
    }

    #[test]
    fn checksummed_frames_with_bad_contents_are_corrupt() {
        let good = frame_of(&[("k", Some(b"v"))]);
        let mut newer = good.clone();
        newer[4] = 2;
        reseal(&mut newer);
        let mut bad_tag = good.clone();
        bad_tag[FRAME_HEADER_LEN + 4 + 1] = 7;
        reseal(&mut bad_tag);
        let mut extra_op = good.clone();
        extra_op[10] = 2;
        reseal(&mut extra_op);
        let mut fewer_ops = good.clone();
        fewer_ops[10] = 0;
        reseal(&mut fewer_ops);
        let mut huge_key = good;
        huge_key[FRAME_HEADER_LEN..FRAME_HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        reseal(&mut huge_key);
        for frame in [newer, bad_tag, extra_op, fewer_ops, huge_key] {
            match replay(&frame) {
                Err(StorageError::Corrupt(message)) => assert!(message.contains("offset 0")),
                other => panic!("expected Corrupt, got {other:?}"),
            }
        }
    }

    #[test]
    fn garbage_lengths_in_a_tail_are_a_torn_append() {
        let first = frame_of(&[("k", Some(b"v"))]);
        let mut log = first.clone();
        log.extend_from_slice(b"MNLG\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff");
        let (map, committed) = replay(&log).unwrap();
        assert_eq!(committed, first.len());
        assert_eq!(map.get("k").map(Vec::as_slice), Some(&b"v"[..]));
    }

    #[test]
    fn out_of_space_errors_become_quota_exceeded() {
        let full = io::Error::new(ErrorKind::StorageFull, "full");
        assert!(matches!(io_error(full), StorageError::QuotaExceeded(_)));
        if cfg!(target_os = "linux") {
            for errno in [ENOSPC, EDQUOT] {
                let error = io::Error::from_raw_os_error(errno);
                assert!(matches!(io_error(error), StorageError::QuotaExceeded(_)));
            }
        }
        let other = io::Error::new(ErrorKind::PermissionDenied, "no");
        assert!(matches!(io_error(other), StorageError::Io(_)));
    }
}
