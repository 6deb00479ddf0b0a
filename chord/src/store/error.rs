//! The error type of the storage boundary.

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
/// Each message is written beside its variant (`thiserror` derives `Display` and `source`).
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on a store's file failed.
    #[error("{}: {action} failed", .path.display())]
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
    #[error("{}:{line}: corrupt record: {reason}", .path.display())]
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
    #[error("{}: {address}: record {seq}: corrupt record: {reason}", .path.display())]
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
    #[error("{}: corrupt database: {reason}", .path.display())]
    CorruptDatabase {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The log was written in a format version this build does not read (an older or newer
    /// chord). Nothing was changed.
    #[error("{}: log format version {found} is not supported: this build reads and writes version {supported} only (the log was written by {age} chord)", .path.display(), age = if found < supported { "an older" } else { "a newer" })]
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
    #[error("{}: not a regular file ({found}); a log is a regular file", .path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead, e.g. `"a FIFO"`.
        found: &'static str,
    },
    /// Every sequence number has been handed out: the log takes no more records.
    #[error("{}: no sequence number left after {last}: the log takes no more records", .path.display())]
    SeqsExhausted {
        /// The log file.
        path: PathBuf,
        /// The last seq handed out or reserved.
        last: u64,
    },
    /// Another writer holds the log (an operating-system lock): one writer per log.
    #[error("{}: another writer has this log open (one writer per log; open it read-only to look inside)", .path.display())]
    Locked {
        /// The log file.
        path: PathBuf,
    },
    /// A SQLite store could not be read: its writer holds the database's exclusive lock,
    /// which it keeps while it is open.
    #[error("{}: its writer has the database open, and holds it locked: a SQLite store is read while no writer has it open (or through the server that writes it)", .path.display())]
    LockedByWriter {
        /// The database file.
        path: PathBuf,
    },
    /// The store ends before a seq it acknowledged as durable: the seq in its acknowledged
    /// mark (`<store path>-ack`, written after each flush) is past the store's last record.
    /// Records it acknowledged are gone, cut off the end (a JSONL log that lost its last
    /// lines, SQLite dropping a damaged WAL frame and every later one), which checksums and
    /// links cannot see. Nothing was changed: restore the store from a copy, or, to accept
    /// it as it is, delete the mark file.
    #[error("{}: seq {acknowledged} was acknowledged as durable, but the store ends at {}: acknowledged records are lost (restore it from a copy, or delete {} to accept it as it is)", .path.display(), .found.map_or_else(|| "no record".to_owned(), |s| format!("seq {s}")), .mark.display())]
    RolledBack {
        /// The store's file.
        path: PathBuf,
        /// The highest seq the store acknowledged as durable, as its mark holds it.
        acknowledged: u64,
        /// The seq of the store's last record, `None` for no record.
        found: Option<u64>,
        /// The mark's file.
        mark: PathBuf,
    },
    /// A store's acknowledged mark (`<store path>-ack`) does not read as one. Nothing was
    /// changed; a mark can be deleted, which gives up the check of that open.
    #[error("{}: corrupt acknowledged mark: {reason}", .path.display())]
    CorruptMark {
        /// The mark's file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A record would be longer than the record bound: [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES),
    /// or the smaller bound of a [`LogWriter`](super::LogWriter)
    /// ([`LogWriter::max_record_bytes`](super::LogWriter::max_record_bytes)). Nothing was
    /// stored. A value whose base batch outgrows the bound is best split over several
    /// addresses, or kept smaller.
    #[error("{address}: a record of {size} bytes (batch and tag{}) is over the record bound of {bound} bytes", if *.base { ", a base batch" } else { "" })]
    RecordTooLarge {
        /// The address it was for.
        address: Address,
        /// Its size: the batch text's bytes plus the tag's.
        size: usize,
        /// The bound it broke.
        bound: usize,
        /// Whether it was a base batch (an `r` of the whole value).
        base: bool,
    },
    /// The store was opened for reading only.
    #[error("{}: the store was opened read-only", .path.display())]
    ReadOnly {
        /// The log file.
        path: PathBuf,
    },
    /// An earlier flush to disk failed, so data the store acknowledged may not be on disk.
    /// The store refuses further work; reopen it (which re-reads what is really there).
    #[error("an earlier flush to disk failed ({reason}); reopen the store")]
    Poisoned {
        /// What the failed flush reported.
        reason: String,
    },
    /// The text passed to [`Store::append`](super::Store::append) is not one line of JSON
    /// array text that recovery can parse (including serde_json's nesting limit), is longer
    /// than [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES), or carries the [`BASE`](super::BASE)
    /// tag without starting with an `r` op. Nothing was stored.
    #[error("invalid batch text: {reason}")]
    InvalidBatch {
        /// What is wrong with it.
        reason: String,
    },
    /// A batch recovery could never decode or apply, refused before anything was stored: it
    /// breaks the wire grammar or the decoder's rules, or one of its ops exceeds a bound of
    /// [`Limits::default`](crate::Limits) whatever the state (see
    /// [`LogWriter::append`](super::LogWriter::append)). Acknowledged means recoverable.
    #[error("refused a batch for {address} that recovery could not read back")]
    Unrecoverable {
        /// The value the batch was for.
        address: Address,
        /// Why it could not be recovered: the op's position, its path, the rule or limit.
        source: crate::Error,
    },
    /// A [`ReadOptions`](super::ReadOptions) value makes no sense.
    #[error("invalid read options: {reason}")]
    InvalidOptions {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A [`Store::compact`](super::Store::compact) asked to keep no base record: recovery
    /// would have nowhere to start.
    #[error(
        "compacting {address}: at least one base record must be kept (recovery starts from one)"
    )]
    KeepsNoBase {
        /// The address to compact.
        address: Address,
    },
    /// A stored batch failed to decode or apply during recovery.
    #[error("recovering {address}: record {seq} does not apply")]
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
    #[error("flushing {address}")]
    Flush {
        /// The value being flushed.
        address: Address,
        /// Why it failed.
        source: crate::Error,
    },
    /// A recovered value does not deserialize into the type asked for.
    #[error("recovering {address}: the value does not fit the type")]
    Deserialize {
        /// The value being recovered.
        address: Address,
        /// Why it failed.
        source: serde_json::Error,
    },
    /// The SQLite backend failed.
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    #[error("{}: {action} failed", .path.display())]
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
    /// returned; an append is not: the next one learns whether it was stored, and a
    /// [`LogWriter`](super::LogWriter) sends the same batch again, which the store writes
    /// once (see [`PostgresStore`](super::PostgresStore)'s durability).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[error("{database}: {action} failed")]
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
    #[error("{url}: {reason}")]
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
    #[error("{database}: {address}: another writer holds this address (one writer per address across the cluster{})", held_by(.holder))]
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
    #[error("{database}: {address}: another writer appended after this writer lost its connection (the newest record is {found}, this writer's was {expected}); reopen and recover")]
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

impl Error {
    /// Whether a [`LogWriter`](super::LogWriter) holds the batch whose append failed with this
    /// error and sends the same text again: a store error whose outcome the store resolves
    /// by position when the same record comes again. Today that is [`Error::Postgres`] (the
    /// connection failed, before or during the commit); every other error ends the stream
    /// (the next batch is a base).
    pub(crate) fn resendable(&self) -> bool {
        #[cfg(feature = "postgres")]
        if let Error::Postgres { .. } = self {
            return true;
        }
        false
    }
}

/// The end of [`Error::AddressLocked`]'s message: who holds the address, when known.
#[cfg(feature = "postgres")]
fn held_by(holder: &Option<String>) -> String {
    holder
        .as_ref()
        .map_or_else(String::new, |holder| format!("; held by {holder}"))
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn messages_say_what_and_where_and_leave_the_cause_to_the_source() {
        let version = |found| Error::Version {
            path: "log.jsonl".into(),
            found,
            supported: 2,
        };
        assert_eq!(
            version(1).to_string(),
            "log.jsonl: log format version 1 is not supported: this build reads and writes \
             version 2 only (the log was written by an older chord)"
        );
        assert!(version(3)
            .to_string()
            .ends_with("(the log was written by a newer chord)"));

        let io = Error::Io {
            path: "log.jsonl".into(),
            action: "open",
            source: io::Error::new(io::ErrorKind::NotFound, "gone"),
        };
        assert_eq!(io.to_string(), "log.jsonl: open failed");
        assert_eq!(io.source().unwrap().to_string(), "gone");

        let json = serde_json::from_str::<u8>("x").unwrap_err();
        let replay = Error::Replay {
            address: Address::new("lanes", "main"),
            seq: 7,
            source: crate::Error::from(json),
        };
        assert_eq!(
            replay.to_string(),
            "recovering lanes/main: record 7 does not apply"
        );
        let cause = replay.source().unwrap();
        assert!(cause
            .to_string()
            .starts_with("invalid JSON: expected value"));
        assert!(cause.source().unwrap().is::<serde_json::Error>());
        assert!(Error::Locked { path: "l".into() }.source().is_none());
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn an_address_lock_names_its_holder_when_known() {
        let locked = |holder: Option<&str>| Error::AddressLocked {
            database: "postgres://u@h:5432/d".into(),
            address: Address::new("lanes", "main"),
            holder: holder.map(Into::into),
        };
        assert_eq!(
            locked(None).to_string(),
            "postgres://u@h:5432/d: lanes/main: another writer holds this address (one writer \
             per address across the cluster)"
        );
        assert_eq!(
            locked(Some("pid 42")).to_string(),
            "postgres://u@h:5432/d: lanes/main: another writer holds this address (one writer \
             per address across the cluster; held by pid 42)"
        );
    }
}
