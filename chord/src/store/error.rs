//! The error type of the storage boundary.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::Address;

/// `Result` with a storage [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from a [`Store`](super::Store), recovery or a [`LogWriter`](super::LogWriter).
///
/// Each variant names what failed and where: the file, the line, the address, the seq. An
/// underlying error (I/O, SQLite, the applier, serde) is its [`source`](std::error::Error::source),
/// not repeated in the message, so a report that walks the chain prints each cause once.
///
/// ```
/// use std::io::Write;
/// use chord::store::{Durability, Error, JsonlStore};
/// let dir = tempfile::tempdir()?;
/// let log = dir.path().join("log.jsonl");
/// drop(JsonlStore::open(&log, Durability::EveryAppend)?); // writes the header line
/// std::fs::OpenOptions::new().append(true).open(&log)?.write_all(b"not json\n")?;
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
    /// A complete line of a JSONL log cannot be trusted: the log is damaged (a checksum that
    /// does not match, a line that is missing or out of place, a line that does not parse).
    /// Never skipped.
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A record of a database (the SQLite backend) cannot be trusted: its checksum does not
    /// match, or a record of its address is missing. Never skipped.
    CorruptRecord {
        /// The database file.
        path: PathBuf,
        /// The address the record belongs to.
        address: Address,
        /// The record's seq (for a missing record, the seq next to the gap).
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// A database's bookkeeping (its address table or metadata) cannot be trusted.
    CorruptDatabase {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The log was written in a format version this build does not read (an older or newer
    /// chord). Nothing was changed.
    Version {
        /// The log file.
        path: PathBuf,
        /// The version the log says it has.
        found: u64,
        /// The one version this build reads and writes.
        supported: u64,
    },
    /// The path is not a regular file (a FIFO, a device, a directory, ...): a log is a
    /// regular file. Refused before anything is read.
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead, e.g. `"a FIFO"`.
        found: &'static str,
    },
    /// Every sequence number has been handed out: the log takes no more records.
    SeqsExhausted {
        /// The log file.
        path: PathBuf,
        /// The last seq handed out or reserved.
        last: u64,
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
    /// array text that recovery can parse (including serde_json's nesting limit), is longer
    /// than [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES), or carries the [`BASE`](super::BASE)
    /// tag without starting with an `r` op. Nothing was stored.
    InvalidBatch {
        /// What is wrong with it.
        reason: String,
    },
    /// A batch recovery could never decode or apply, refused before anything was stored: it
    /// breaks the wire grammar or the decoder's rules, or one of its ops exceeds a bound of
    /// [`Limits::default`](crate::Limits) whatever the state (see
    /// [`LogWriter::append`](super::LogWriter::append)). Acknowledged means recoverable.
    Unrecoverable {
        /// The value the batch was for.
        address: Address,
        /// Why it could not be recovered: the op's position, its path, the rule or limit.
        source: crate::Error,
    },
    /// A [`ReadOptions`](super::ReadOptions) value makes no sense.
    InvalidOptions {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A [`Store::compact`](super::Store::compact) asked to keep no base record: recovery
    /// would have nowhere to start.
    KeepsNoBase {
        /// The address to compact.
        address: Address,
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
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done, e.g. `"append"`.
        action: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The PostgreSQL backend failed: the server could not be reached, refused, or the
    /// connection broke. A read is retried once on a fresh connection before this is
    /// returned; an append is not (the next one learns whether it was stored).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    Postgres {
        /// The database, `postgres://user@host:port/database?schema=name` (no password).
        database: String,
        /// What was being done, e.g. `"append"`.
        action: &'static str,
        /// The driver's error.
        source: postgres::Error,
    },
    /// A PostgreSQL URL chord cannot use (its own parameter, `schema`, is malformed).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    InvalidUrl {
        /// The URL, without its password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another writer, on this node or another, holds the address: one writer per address
    /// across the cluster. Nothing was stored. Wait for it with
    /// [`PostgresStore::claim`](super::PostgresStore::claim), or read instead.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    AddressLocked {
        /// The database.
        database: String,
        /// The address.
        address: Address,
        /// Who holds it (backend pid, application name, client address), when the server
        /// says.
        holder: Option<String>,
    },
    /// Another writer appended to the address after this store last held it (this store's
    /// connection was cut and the address taken over): this store never writes there again.
    /// Reopen, recover ([`Durable::open`](super::Durable::open)) and claim it anew.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    Fenced {
        /// The database.
        database: String,
        /// The address.
        address: Address,
        /// The newest record this store wrote there.
        expected: u64,
        /// The newest record the database has.
        found: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, action, .. } => write!(f, "{}: {action} failed", path.display()),
            Error::Corrupt { path, line, reason } => {
                write!(f, "{}:{line}: corrupt record: {reason}", path.display())
            }
            Error::CorruptRecord {
                path,
                address,
                seq,
                reason,
            } => write!(
                f,
                "{}: {address}: record {seq}: corrupt record: {reason}",
                path.display()
            ),
            Error::CorruptDatabase { path, reason } => {
                write!(f, "{}: corrupt database: {reason}", path.display())
            }
            Error::Version {
                path,
                found,
                supported,
            } => {
                let age = if found < supported { "an older" } else { "a newer" };
                write!(
                    f,
                    "{}: log format version {found} is not supported: this build reads and \
                     writes version {supported} only (the log was written by {age} chord)",
                    path.display()
                )
            }
            Error::NotAFile { path, found } => write!(
                f,
                "{}: not a regular file ({found}); a log is a regular file",
                path.display()
            ),
            Error::SeqsExhausted { path, last } => write!(
                f,
                "{}: no sequence number left after {last}: the log takes no more records",
                path.display()
            ),
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
            Error::Unrecoverable { address, .. } => write!(
                f,
                "refused a batch for {address} that recovery could not read back"
            ),
            Error::InvalidOptions { reason } => write!(f, "invalid read options: {reason}"),
            Error::KeepsNoBase { address } => write!(
                f,
                "compacting {address}: at least one base record must be kept (recovery starts \
                 from one)"
            ),
            Error::Replay { address, seq, .. } => {
                write!(f, "recovering {address}: record {seq} does not apply")
            }
            Error::Flush { address, .. } => write!(f, "flushing {address}"),
            Error::Deserialize { address, .. } => {
                write!(f, "recovering {address}: the value does not fit the type")
            }
            #[cfg(feature = "sqlite")]
            Error::Sqlite { path, action, .. } => {
                write!(f, "{}: {action} failed", path.display())
            }
            #[cfg(feature = "postgres")]
            Error::Postgres {
                database, action, ..
            } => write!(f, "{database}: {action} failed"),
            #[cfg(feature = "postgres")]
            Error::InvalidUrl { url, reason } => write!(f, "{url}: {reason}"),
            #[cfg(feature = "postgres")]
            Error::AddressLocked {
                database,
                address,
                holder,
            } => {
                write!(
                    f,
                    "{database}: {address}: another writer holds this address (one writer \
                     per address across the cluster"
                )?;
                match holder {
                    Some(holder) => write!(f, "; held by {holder})"),
                    None => write!(f, ")"),
                }
            }
            #[cfg(feature = "postgres")]
            Error::Fenced {
                database,
                address,
                expected,
                found,
            } => write!(
                f,
                "{database}: {address}: another writer appended after this writer lost its \
                 connection (the newest record is {found}, this writer's was {expected}); \
                 reopen and recover"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Replay { source, .. }
            | Error::Flush { source, .. }
            | Error::Unrecoverable { source, .. } => Some(source),
            Error::Deserialize { source, .. } => Some(source),
            #[cfg(feature = "sqlite")]
            Error::Sqlite { source, .. } => Some(source),
            #[cfg(feature = "postgres")]
            Error::Postgres { source, .. } => Some(source),
            _ => None,
        }
    }
}
