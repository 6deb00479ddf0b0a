//! The error type of the storage boundary.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::Address;

/// `Result` with a storage [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from a [`Store`](super::Store), recovery or a [`LogWriter`](super::LogWriter).
///
/// Each variant names what failed and where: the file, the line, the address, the seq.
///
/// ```
/// use chord::store::{Durability, Error, JsonlStore};
/// let dir = tempfile::tempdir()?;
/// let log = dir.path().join("log.jsonl");
/// std::fs::write(&log, "{\"chord\":1}\nnot json\n{\"lease\":1024}\n")?;
/// let err = JsonlStore::open(&log, Durability::EveryAppend).unwrap_err();
/// assert!(matches!(err, Error::Corrupt { line: 2, .. }));
/// assert!(err.to_string().contains("log.jsonl:2:"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on a store's file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done, e.g. `"open"` or `"append"`.
        action: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// A complete record of a log cannot be read: the log is damaged. Never skipped.
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// Another writer holds the log (an operating-system lock): one writer per log.
    Locked {
        /// The log file.
        path: PathBuf,
    },
    /// The store was opened for reading only.
    ReadOnly {
        /// The log file.
        path: PathBuf,
    },
    /// An earlier flush to disk failed, so data the store acknowledged may not be on disk.
    /// The store refuses further work; reopen it (which re-reads what is really there).
    Poisoned {
        /// What the failed flush reported.
        reason: String,
    },
    /// The text passed to [`Store::append`](super::Store::append) is not one line of JSON
    /// array text.
    InvalidBatch {
        /// What is wrong with it.
        reason: String,
    },
    /// A [`ReadOptions`](super::ReadOptions) value makes no sense.
    InvalidOptions {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A stored batch failed to decode or apply during recovery.
    Replay {
        /// The value being recovered.
        address: Address,
        /// The record that failed.
        seq: u64,
        /// Why it failed.
        source: crate::Error,
    },
    /// A durable tracker's flush failed before anything was stored (a value JSON cannot
    /// carry, named by its path).
    Flush {
        /// The value being flushed.
        address: Address,
        /// Why it failed.
        source: crate::Error,
    },
    /// A recovered value does not deserialize into the type asked for.
    Deserialize {
        /// The value being recovered.
        address: Address,
        /// Why it failed.
        source: serde_json::Error,
    },
    /// The SQLite backend failed.
    #[cfg(feature = "sqlite")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done, e.g. `"append"`.
        action: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                path,
                action,
                source,
            } => write!(f, "{}: {action} failed: {source}", path.display()),
            Error::Corrupt { path, line, reason } => {
                write!(f, "{}:{line}: corrupt record: {reason}", path.display())
            }
            Error::Locked { path } => write!(
                f,
                "{}: another writer has this log open (one writer per log; open it read-only to look inside)",
                path.display()
            ),
            Error::ReadOnly { path } => {
                write!(f, "{}: the store was opened read-only", path.display())
            }
            Error::Poisoned { reason } => write!(
                f,
                "an earlier flush to disk failed ({reason}); reopen the store"
            ),
            Error::InvalidBatch { reason } => write!(f, "invalid batch text: {reason}"),
            Error::InvalidOptions { reason } => write!(f, "invalid read options: {reason}"),
            Error::Replay {
                address,
                seq,
                source,
            } => write!(f, "recovering {address}: record {seq}: {source}"),
            Error::Flush { address, source } => write!(f, "flushing {address}: {source}"),
            Error::Deserialize { address, source } => {
                write!(f, "recovering {address}: {source}")
            }
            #[cfg(feature = "sqlite")]
            Error::Sqlite {
                path,
                action,
                source,
            } => write!(f, "{}: {action} failed: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Replay { source, .. } | Error::Flush { source, .. } => Some(source),
            Error::Deserialize { source, .. } => Some(source),
            #[cfg(feature = "sqlite")]
            Error::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}
