//! The error type of the public API.
//!
//! Every public entry point returns [`Result`]; bad input becomes
//! [`Error::InvalidInput`] (or [`Error::TooLarge`]), never a panic. Each
//! variant has a stable [`Error::code`] that the CLI prints and the JS
//! package exposes as `error.code`.

use crate::storage::StorageError;

/// Result alias of the public API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in memtide's public API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something malformed; the message says what.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A text, batch or file exceeds a configured limit.
    #[error("{what} is too large: {size} bytes or items, the limit is {limit}")]
    TooLarge {
        /// What was too large (`"text"`, `"inputs[3]: text"`, …).
        what: String,
        /// Its size.
        size: usize,
        /// The limit it exceeded.
        limit: usize,
    },
    /// No memory has this id (or it was erased).
    #[error("no memory with id `{0}`")]
    NotFound(String),
    /// The storage backend failed; nothing of the operation was applied.
    #[error("storage failed: {0}")]
    Storage(String),
    /// The storage backend is out of space; nothing was applied.
    #[error("storage quota exceeded: {0}")]
    QuotaExceeded(String),
    /// Stored or imported data failed its checksum or does not decode.
    #[error("data is corrupt: {0}")]
    Corrupt(String),
    /// Stored or imported data was written by a newer format version.
    #[error("format version {found} is not supported by this build (it reads up to {supported})")]
    VersionMismatch {
        /// Version found in the data.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// The embedding model could not be loaded or run.
    #[error("model error: {0}")]
    Model(String),
    /// The caller stopped the operation (an `AbortSignal`); what it had
    /// committed before is kept, see [`crate::progress`].
    #[error("aborted: {0}")]
    Aborted(String),
    /// An extractor's operations (`docs/memory-model.md`, "Extraction")
    /// are malformed, too large, or name a memory the extractor was not
    /// shown; none of them was applied.
    #[error("invalid operations: {0}")]
    InvalidOperations(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidInput(message.into())
    }

    /// Says where the bad value was (`"inputs[3]"`, `"line 4"`): prefixes
    /// the message of input errors; other errors are returned unchanged.
    pub fn at(self, place: &str) -> Self {
        match self {
            Error::InvalidInput(m) => Error::InvalidInput(format!("{place}: {m}")),
            Error::InvalidOperations(m) => Error::InvalidOperations(format!("{place}: {m}")),
            Error::TooLarge { what, size, limit } => Error::TooLarge {
                what: format!("{place}: {what}"),
                size,
                limit,
            },
            other => other,
        }
    }

    /// Stable machine-readable code: `INVALID_INPUT`, `TOO_LARGE`,
    /// `NOT_FOUND`, `STORAGE`, `QUOTA_EXCEEDED`, `CORRUPT`,
    /// `VERSION_MISMATCH`, `MODEL`, `ABORTED`, `INVALID_OPERATIONS`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::TooLarge { .. } => "TOO_LARGE",
            Error::NotFound(_) => "NOT_FOUND",
            Error::Storage(_) => "STORAGE",
            Error::QuotaExceeded(_) => "QUOTA_EXCEEDED",
            Error::Corrupt(_) => "CORRUPT",
            Error::VersionMismatch { .. } => "VERSION_MISMATCH",
            Error::Model(_) => "MODEL",
            Error::Aborted(_) => "ABORTED",
            Error::InvalidOperations(_) => "INVALID_OPERATIONS",
        }
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::QuotaExceeded(m) => Error::QuotaExceeded(m),
            StorageError::Corrupt(m) => Error::Corrupt(m),
            other => Error::Storage(other.to_string()),
        }
    }
}
