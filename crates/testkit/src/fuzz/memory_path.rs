//! Target `memory_path`: the path rules of files (`files::validate_path`)
//! and of Claude's memory tool (`memory_tool::check_memory_path`) on
//! arbitrary strings.
//!
//! The input is the path (UTF-8, lossily); a first byte of `0xFF` instead
//! makes the rest `/memories/` followed by the rest of the input, so the
//! accepted side is explored as well.
//!
//! Invariants:
//! * neither function panics;
//! * an accepted file path is 1 to 1024 bytes of segments of at most 255
//!   bytes, none empty, `.` or `..`, after an optional leading `/`; it holds
//!   no backslash, no control character and no `%` followed by two hex
//!   digits;
//! * a path the memory tool accepts is also an accepted file path, and is
//!   `/memories` or starts with `/memories/`; a valid file path is refused
//!   by the tool only for lying outside `/memories`.

use memtide::files::{self, PathError, MAX_PATH_BYTES, MAX_SEGMENT_BYTES};
use memtide::memory_tool::{check_memory_path, MEMORIES_ROOT};

/// See the module documentation.
pub fn check(data: &[u8]) {
    let path = match data.split_first() {
        Some((0xFF, rest)) => format!("{MEMORIES_ROOT}/{}", String::from_utf8_lossy(rest)),
        _ => String::from_utf8_lossy(data).into_owned(),
    };
    let file = files::validate_path(&path);
    if file.is_ok() {
        check_accepted(&path);
    }
    match check_memory_path(&path) {
        Ok(()) => {
            assert!(file.is_ok(), "the tool accepts the bad path {path:?}");
            assert!(
                path == MEMORIES_ROOT || path.starts_with("/memories/"),
                "the tool accepts {path:?}, outside /memories"
            );
        }
        Err(PathError::OutsideMemories) => {
            assert!(file.is_ok(), "{path:?}: OutsideMemories for a bad path");
            assert!(path != MEMORIES_ROOT && !path.starts_with("/memories/"));
        }
        Err(error) => assert_eq!(Err(error), file, "{path:?}: not the file path's error"),
    }
}

/// The rules an accepted path meets, checked independently of the code.
fn check_accepted(path: &str) {
    assert!(
        !path.is_empty() && path.len() <= MAX_PATH_BYTES,
        "accepted a path of {} bytes",
        path.len()
    );
    assert!(!path.contains('\\'), "accepted a backslash: {path:?}");
    assert!(
        !path.chars().any(char::is_control),
        "accepted a control character: {path:?}"
    );
    let bytes = path.as_bytes();
    for (at, _) in path.match_indices('%') {
        let escape = bytes
            .get(at + 1..at + 3)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        assert!(!escape, "accepted a percent-escape: {path:?}");
    }
    let relative = path.strip_prefix('/').unwrap_or(path);
    for segment in relative.split('/') {
        assert!(
            !matches!(segment, "" | "." | ".."),
            "accepted the segment {segment:?} in {path:?}"
        );
        assert!(segment.len() <= MAX_SEGMENT_BYTES, "accepted a long segment");
    }
}
