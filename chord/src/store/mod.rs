//! Durable storage: an append-only log of encoded batches per tracked value, and recovery.
//!
//! A tracked value lives at an [`Address`] (a namespace and a key). Its history is a list of
//! [`Record`]s: a sequence number global to the store, the *statefully encoded* wire batch
//! (the text [`WireBatch::to_json`](crate::WireBatch::to_json) produced), and an optional tag.
//! A batch that starts with `r` is stored with the tag [`BASE`], and a checkpoint (a record
//! that restates the value after the record before it, written beside a batch by
//! [`LogWriter`]'s checkpoint policy) with the tag [`CHECKPOINT`]; both are bases, where
//! recovery, retention and compaction start ([`is_base_tag`]). The tag is decided by whoever
//! encodes, which is what [`LogWriter`] does for you.
//!
//! **Acknowledged means recoverable.** An append that returns `Ok` stored a batch recovery can
//! read back: [`Store::append`] parses it as recovery does and checks it against the wire
//! grammar, the decoder's rules and the bounds of [`Limits::default`](crate::Limits) that
//! hold whatever the state; [`LogWriter`] also checks the unencoded ops, whose paths it knows
//! in full. What depends on the state (growth of an array or a string, a missing parent) can
//! only be found by applying, and recovery names the record ([`Error::Replay`]).
//!
//! **Damage is never silent.** Every record carries a CRC-32C checksum over its exact stored
//! bytes, and a continuity check finds a record that is missing; a damaged or missing record
//! is an error naming where it is, never a different state. See each backend for its format.
//!
//! **Nor is a store that ends early.** Checksums and links cannot see records cut off the
//! *end*: a JSONL log that lost its last lines, or a SQLite database whose `-wal` file lost or
//! damaged a frame (SQLite then drops that frame and every later one, and the database reads
//! as a consistent older one). So [`JsonlStore`] and `SqliteStore` keep an *acknowledged
//! mark* beside their file, `<path>-ack`: the highest seq they reported durable
//! ([`Store::durable_seq`]), rewritten after each flush. A store found ending before its mark
//! is [`Error::RolledBack`] at open, read-only opens included, naming the store, the
//! acknowledged seq and the seq found; nothing is changed. Restore the store from a copy, or
//! delete the mark to accept the store as it is.
//!
//! # What each store detects
//!
//! - **A changed byte in a record**: every store, by the checksum of its JSONL line or of
//!   its row.
//! - **A record missing, moved or duplicated between others**: every store (a JSONL log chains
//!   its checksums line to line; the databases link each record to the one before it and each
//!   address to its newest).
//! - **Records cut off the end**, torn or whole, after a crash: [`JsonlStore`] and
//!   `SqliteStore` (damage to its `-wal`), by the mark; not `PostgresStore`, where
//!   PostgreSQL's own durability decides.
//! - **A torn last line a crash left** (never acknowledged): a JSONL writer cuts it off and a
//!   reader ignores it; the databases' transactions never leave one.
//!
//! What none of them detects:
//!
//! - **A store and its mark replaced together**, e.g. both restored from an older copy; and a
//!   store without a mark (copied without it, or written before marks existed) is not checked
//!   at its first open, which writes one.
//! - **A cut after a power loss that also lost the mark's latest writes.** The mark is
//!   written to the operating system after each flush (one positioned 40-byte write; an
//!   `fsync` of its own would add a second flush to disk to every
//!   [`EveryAppend`](Durability::EveryAppend) append), so it survives the process dying at
//!   once; it is flushed to disk when it is created and when the store is dropped. After a
//!   power loss it may hold an older seq, and the check starts from there. It is never ahead
//!   of the store, so it never raises a false alarm.
//! - **PostgreSQL going back to an older state** (a restore from a backup, a failover to a
//!   replica that had not received the last commits): that database is consistent, and chord
//!   keeps no mark for a store that several nodes share. Whether a committed record survives
//!   is PostgreSQL's durability (`fsync`, `synchronous_commit`, replication).
//!
//! SQLite's checksum VFS (`cksumvfs`) would not help here: it is not in the SQLite that
//! rusqlite bundles, and it checks pages as they are read, while a `-wal` frame whose own
//! checksum fails is dropped before any of its pages is read.
//!
//! The trials in `chord/tests/store_rollback.rs`: a writer process appends 60 records under
//! [`Durability::EveryAppend`] and is killed with SIGKILL; then each of 300 single-bit flips at
//! random offsets of the `-wal` file and 300 cuts of it to a random length, and each cut of
//! the JSONL log inside its last line (but the cut of its `\n` alone, which leaves the
//! complete record) or at one of the four line boundaries before it (read-only and writer
//! opens), is [`Error::RolledBack`] with the acknowledged seq, and the
//! undamaged files open with every record.
//!
//! Recovery ([`recover`]) reads backwards to the last base record and applies forward with a
//! fresh [`Decoder`](crate::Decoder), so its cost is bounded by the distance to the last base
//! batch, not by the length of the history. A [`Checkpoint`] policy on the writer turns "at
//! most N batches to replay" into a policy.
//!
//! Three backends implement [`Store`] and pass one conformance suite:
//!
//! - [`JsonlStore`]: the embedded default, a JSONL file with no extra dependency.
//! - `SqliteStore` (cargo feature `sqlite`, SQLite bundled): a table keyed by (address, seq).
//! - `PostgresStore` (cargo feature `postgres`): a table keyed by (address, seq) in
//!   PostgreSQL, shared by the nodes of a cluster, with a live tail across nodes
//!   (`LISTEN`/`NOTIFY`) and one writer per address (advisory locks, fencing).
//!
//! Durability is explicit: [`Durability`] says when an appended batch reaches the disk, and
//! [`Store::durable_seq`] says which batches have.
//!
//! # Example
//!
//! ```
//! use chord::store::{recover, Address, Checkpoint, Durability, JsonlStore, LogWriter};
//! use chord::{path, Op};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let log = dir.path().join("agent.jsonl");
//! let lane = Address::new("lanes", "main");
//!
//! let store = JsonlStore::open(&log, Durability::EveryAppend)?;
//! let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(50));
//! assert!(writer.wants_base(&lane)); // a stream starts with a base batch
//! writer.append(&lane, &[Op::Replace(json!({"text": ""}))])?;
//! writer.append(&lane, &[Op::Append(path!["text"], "Hello".into())])?;
//! drop(writer);
//!
//! // Later, perhaps in another process:
//! let store = JsonlStore::open_read_only(&log)?;
//! assert_eq!(recover(&store, &lane)?, Some(json!({"text": "Hello"})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod durable;
mod error;
mod file;
mod group;
mod jsonl;
mod mark;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
mod recover;
#[cfg(feature = "sqlite")]
mod sqlite;
mod writer;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use self::check::CheckedBatch;
pub use self::durable::Durable;
pub use self::error::{Error, Result};
pub use self::jsonl::{JsonlStore, TornTail};
/// For tests: the faults [`PostgresStore::cut_next_write`] injects. Only with the `postgres`
/// and `test-util` features.
#[cfg(all(feature = "postgres", feature = "test-util"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "postgres", feature = "test-util"))))]
pub use self::postgres::Cut as PostgresCut;
// The protocol streams' journal over PostgreSQL (`streams::Journaled::postgres`).
#[cfg(all(feature = "postgres", feature = "streams"))]
pub(crate) use self::postgres::Target;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::postgres::{PostgresBuilder, PostgresStore, PostgresTail};
pub use self::recover::{recover, recover_as, recover_at, replay, Replay};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use self::sqlite::{SqliteContents, SqliteStore};
pub use self::writer::{Checkpoint, LogWriter};

/// The tag of a record whose batch starts with `r` as a change: a producer's first value, or
/// a value it replaced whole. Recovery starts from the last base or [`CHECKPOINT`].
pub const BASE: &str = "base";

/// The tag of a checkpoint: a record that restates, as `["r", value]`, the value after the
/// address's record before it ([`LogWriter`]'s checkpoint policy writes one after a batch).
/// A base for everything that starts from one (recovery, retention, compaction, a reader
/// with no value), and nothing new for a reader that has the record before it: the stream
/// server never sends it to a reader resuming from an offset (see
#[cfg_attr(
    feature = "streams",
    doc = " [`streams`](crate::streams#checkpoints))."
)]
#[cfg_attr(
    not(feature = "streams"),
    doc = " *Checkpoints* in the `streams` module, with the `streams` feature)."
)]
pub const CHECKPOINT: &str = "checkpoint";

/// Whether a record tagged `tag` starts from a whole value ([`BASE`] or [`CHECKPOINT`]):
/// where recovery, retention and compaction may start.
///
/// ```
/// use chord::store::{is_base_tag, BASE, CHECKPOINT};
/// assert!(is_base_tag(Some(BASE)) && is_base_tag(Some(CHECKPOINT)));
/// assert!(!is_base_tag(None) && !is_base_tag(Some("other")));
/// ```
pub fn is_base_tag(tag: Option<&str>) -> bool {
    matches!(tag, Some(BASE | CHECKPOINT))
}

/// Where a tracked value lives: a namespace and a key.
///
/// ```
/// use chord::store::Address;
/// let a = Address::new("lanes", "main");
/// assert_eq!(a.to_string(), "lanes/main");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    /// A group of values, e.g. `"lanes"` or `"sessions/42"`.
    pub namespace: String,
    /// The value within its namespace.
    pub key: String,
}

impl Address {
    /// An address from its namespace and key.
    pub fn new(namespace: impl Into<String>, key: impl Into<String>) -> Address {
        Address {
            namespace: namespace.into(),
            key: key.into(),
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.key)
    }
}

/// One stored batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Sequence number, global to the store, increasing in append order. Never reused, also
    /// across restarts; there may be gaps.
    pub seq: u64,
    /// The encoded wire batch, as JSON text, exactly as appended.
    pub batch: String,
    /// The record's tag: [`BASE`] for a base batch, [`CHECKPOINT`] for a checkpoint, or none.
    pub tag: Option<String>,
}

/// The direction of a [`Store::read_list`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    #[default]
    Asc,
    /// Newest first.
    Desc,
}

/// How to read one page of a list with [`Store::read_list`].
///
/// ```
/// use chord::store::{Order, ReadOptions, BASE};
/// let opts = ReadOptions::desc().limit(100).stop_at_tag(BASE);
/// assert_eq!(opts.order, Order::Desc);
/// assert_eq!(opts.stop_at_tag.as_deref(), Some("base"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Read past this seq: records with a greater seq in [`Order::Asc`], a smaller one in
    /// [`Order::Desc`]. `None` starts at the beginning (or, descending, at the end). Pass a
    /// page's [`Page::next_cursor`] to read the next page.
    pub cursor: Option<u64>,
    /// Which way to read.
    pub order: Order,
    /// At most this many records in the page; at least 1.
    pub limit: usize,
    /// Stop the page at, and include, the first record carrying this tag ([`BASE`] stops at a
    /// [`CHECKPOINT`] too: both are bases, see [`is_base_tag`]). The search never goes past
    /// `limit`: when the page holds no such record, page on with the cursor.
    pub stop_at_tag: Option<String>,
}

impl Default for ReadOptions {
    /// Ascending from the beginning, 100 records a page, no tag to stop at.
    fn default() -> Self {
        ReadOptions {
            cursor: None,
            order: Order::Asc,
            limit: 100,
            stop_at_tag: None,
        }
    }
}

impl ReadOptions {
    /// Oldest first, from the beginning, 100 records a page.
    pub fn asc() -> ReadOptions {
        ReadOptions::default()
    }

    /// Newest first, from the end, 100 records a page.
    pub fn desc() -> ReadOptions {
        ReadOptions {
            order: Order::Desc,
            ..ReadOptions::default()
        }
    }

    /// Sets [`cursor`](ReadOptions::cursor).
    pub fn cursor(mut self, cursor: Option<u64>) -> ReadOptions {
        self.cursor = cursor;
        self
    }

    /// Sets [`limit`](ReadOptions::limit).
    pub fn limit(mut self, limit: usize) -> ReadOptions {
        self.limit = limit;
        self
    }

    /// Sets [`stop_at_tag`](ReadOptions::stop_at_tag).
    pub fn stop_at_tag(mut self, tag: impl Into<String>) -> ReadOptions {
        self.stop_at_tag = Some(tag.into());
        self
    }

    /// Whether a record tagged `tag` ends the page ([`stop_at_tag`](ReadOptions::stop_at_tag)).
    pub(crate) fn stops_at(&self, tag: Option<&str>) -> bool {
        match (self.stop_at_tag.as_deref(), tag) {
            (Some(BASE), tag) => is_base_tag(tag),
            (Some(stop), Some(tag)) => stop == tag,
            _ => false,
        }
    }

    /// Whether `seq` lies past the cursor in this order.
    pub(crate) fn after_cursor(&self, seq: u64) -> bool {
        match (self.cursor, self.order) {
            (None, _) => true,
            (Some(c), Order::Asc) => seq > c,
            (Some(c), Order::Desc) => seq < c,
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.limit == 0 {
            return Err(Error::InvalidOptions {
                reason: "limit must be at least 1",
            });
        }
        Ok(())
    }
}

/// One page of records from [`Store::read_list`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// The records, in the order asked for.
    pub records: Vec<Record>,
    /// The cursor for the next page, `Some` when more records lie beyond this page in the
    /// order asked for (also when the page stopped at a tag), `None` at the end of the list.
    pub next_cursor: Option<u64>,
}

/// When an appended batch reaches the disk.
///
/// Either way the batch is handed to the operating system before `append` returns, so it
/// survives the *process* dying at once; the policy decides when it survives the *machine*
/// dying (power loss, kernel panic), which is what [`Store::durable_seq`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every append is flushed to disk (`fdatasync`, or a synchronous SQLite commit) before
    /// it returns: when `append` returns `Ok(seq)`, `durable_seq() >= Some(seq)`.
    EveryAppend,
    /// Group commit. A batch is on disk at most `max_delay` after its `append` returned (plus
    /// the time the flush itself takes; a background thread does it), or as soon as
    /// `max_batches` batches are waiting, whichever comes first. [`Store::sync`] flushes now.
    Grouped {
        /// Flush once this many batches are waiting (at least 1).
        max_batches: usize,
        /// Flush at most this long after the oldest waiting batch was appended.
        max_delay: Duration,
    },
}

impl Default for Durability {
    /// [`Durability::EveryAppend`].
    fn default() -> Self {
        Durability::EveryAppend
    }
}

/// An append-only store of records, one list per [`Address`].
///
/// Implemented by [`JsonlStore`] and, with the `sqlite` and `postgres` features, `SqliteStore`
/// and `PostgresStore`. All pass the same conformance suite (`chord/tests/store_conformance.rs`).
pub trait Store {
    /// Appends one encoded batch to `address`'s list and returns its sequence number, which
    /// is greater than every seq the store has handed out before, also across restarts.
    ///
    /// `batch` is JSON text on one line, an array (what [`WireBatch::to_json`] produces), at
    /// most [`MAX_RECORD_BYTES`] with its tag. The store refuses, before writing anything, a
    /// batch recovery could not read back: it parses the text as recovery does (serde_json,
    /// with its nesting limit), checks each op against the wire grammar
    /// ([`WireOp::from_value`](crate::WireOp::from_value)) and the decoder's rules, and checks
    /// the bounds of [`Limits::default`](crate::Limits) that every state breaks. `tag` is
    /// stored beside it: pass [`BASE`] for a base batch (or use a [`LogWriter`], which does);
    /// a batch tagged [`BASE`] must start with an `r` op.
    ///
    /// The batch is on disk when [`durable_seq`](Store::durable_seq) reaches the returned seq:
    /// at once under [`Durability::EveryAppend`], within the stated bound under
    /// [`Durability::Grouped`].
    ///
    /// [`WireBatch::to_json`]: crate::WireBatch::to_json
    ///
    /// # Errors
    ///
    /// [`Error::RecordTooLarge`] when `batch` and `tag` are longer than [`MAX_RECORD_BYTES`];
    /// [`Error::InvalidBatch`] when `batch` is not one line of JSON array text recovery can
    /// parse; [`Error::Unrecoverable`] when recovery could never decode or apply it;
    /// [`Error::SeqsExhausted`] when no seq is left; [`Error::ReadOnly`] on a store opened for
    /// reading; [`Error::Poisoned`] after an earlier
    /// flush failed; an I/O or database error. A failed append stores nothing, except when
    /// the flush to disk fails after the write: the store is then poisoned, and whether that
    /// record survived shows when the log is reopened.
    fn append(&mut self, address: &Address, batch: &str, tag: Option<&str>) -> Result<u64> {
        let batch = CheckedBatch::new(address, batch, tag)?;
        self.append_checked(address, batch)
    }

    /// [`append`](Store::append) of a batch already checked ([`CheckedBatch`]): what a
    /// backend implements, and what [`LogWriter`] calls with the text its encoder wrote, so
    /// that a batch is never parsed again on its way to disk.
    ///
    /// # Errors
    ///
    /// As [`append`](Store::append), except the checks of [`CheckedBatch::new`].
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64>;

    /// Reads one page of `address`'s records (see [`ReadOptions`]). An address with no
    /// records reads as an empty page.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOptions`] for a zero limit; an I/O or database error; a record that
    /// cannot be read back or is missing ([`Error::Corrupt`], [`Error::CorruptRecord`]).
    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page>;

    /// Every address that has at least one record, sorted by namespace, then key.
    ///
    /// # Errors
    ///
    /// An I/O or database error.
    fn addresses(&self) -> Result<Vec<Address>>;

    /// Flushes every appended batch to disk now, and returns [`durable_seq`](Store::durable_seq).
    ///
    /// # Errors
    ///
    /// The flush failed; the store is then poisoned ([`Error::Poisoned`]) because the
    /// operating system may have dropped the unflushed data: reopen it.
    fn sync(&mut self) -> Result<Option<u64>>;

    /// The highest seq such that it and every record appended before it are on disk; `None`
    /// when nothing is. On a store opened for reading, the last seq it read.
    fn durable_seq(&self) -> Option<u64>;

    /// Removes `address`'s records before its `keep_bases`-th newest base record: what a
    /// retention policy no longer serves (`streams::Retention`, in feature
    /// `streams`). The kept base and every record after it stay, byte for byte, with their seqs;
    /// other addresses are untouched; nothing is removed when the address has fewer than
    /// `keep_bases` base records. Seqs are never reused: appends go on past the newest seq
    /// handed out, as before.
    ///
    /// Compaction first makes every appended record durable (as [`sync`](Store::sync) does),
    /// and the removal is durable when it returns: a crash at any point leaves the records as
    /// they were before or as they are after, never anything else. Recovery ([`recover`])
    /// reads back to the last base, which is always kept, so it gives the same state after as
    /// before. A read of the removed range finds nothing: the list starts at the oldest kept
    /// base.
    ///
    /// Cost: [`JsonlStore`] rewrites its file (every address's lines, `O(file size)`) unless
    /// there is nothing to remove; the databases delete the removed rows in one transaction.
    ///
    /// ```
    /// use chord::store::{Address, Durability, JsonlStore, ReadOptions, Store, BASE};
    /// let dir = tempfile::tempdir()?;
    /// let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
    /// let a = Address::new("lanes", "main");
    /// for n in 0..3 {
    ///     log.append(&a, &format!(r#"[["r",{{"n":{n}}}]]"#), Some(BASE))?;
    ///     log.append(&a, r#"[["s",["n"],9]]"#, None)?;
    /// }
    /// let done = log.compact(&a, 2)?; // keep the last two bases and what follows
    /// assert_eq!((done.removed, done.oldest_kept), (2, Some(3)));
    /// let seqs: Vec<u64> = log.read_list(&a, &ReadOptions::asc())?.records.iter().map(|r| r.seq).collect();
    /// assert_eq!(seqs, [3, 4, 5, 6]);
    /// assert_eq!(log.append(&a, r#"[["s",["n"],1]]"#, None)?, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::KeepsNoBase`] when `keep_bases` is 0; [`Error::ReadOnly`] on a store opened
    /// for reading; [`Error::Poisoned`] after a failed flush; a record that does not check
    /// out ([`Error::Corrupt`], [`Error::CorruptRecord`]: compaction never carries damage
    /// over); an I/O or database error, which leaves the records as they were.
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted>;

    /// How to follow records that *other* writers commit to this store while it is open: the
    /// capability of a store shared by several processes (a database), `None` (the default)
    /// for a store only this process writes. `streams::Log` (feature `streams`) uses it to
    /// keep its tail caches current on a node that does not produce an address.
    fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
        None
    }
}

/// What one [`Store::compact`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// How many records it removed.
    pub removed: u64,
    /// The seq of the oldest base record kept (the `keep_bases`-th newest), `None` when the
    /// address has fewer base records than that (then nothing was removed).
    pub oldest_kept: Option<u64>,
}

/// Follows addresses of a shared store live: from [`Store::live_source`].
///
/// Implemented by `PostgresStore` (feature `postgres`): its `PostgresTail`s, `LISTEN`/`NOTIFY`.
pub trait LiveSource: Send + Sync {
    /// A live reader of `address`'s committed records past `after` (a seq; `None`: from the
    /// first record), whoever writes them.
    ///
    /// # Errors
    ///
    /// The store cannot start following (e.g. the database does not answer).
    fn follow(&self, address: &Address, after: Option<u64>) -> Result<Box<dyn LiveTail>>;
}

/// A live reader of one address's committed records, from [`LiveSource::follow`].
pub trait LiveTail: Send {
    /// The records past the previous ones, oldest first, with no gap and no duplicate,
    /// waiting for at least one up to `timeout` (`None`: without end); an empty list when the
    /// wait ended first.
    ///
    /// # Errors
    ///
    /// A read failed; the reader keeps its place, and the next call tries again.
    fn next(&mut self, timeout: Option<Duration>) -> Result<Vec<Record>>;

    /// The seq of the last record returned (or the one it started after).
    fn cursor(&self) -> Option<u64>;
}

impl<S: Store + ?Sized> Store for Box<S> {
    fn append(&mut self, address: &Address, batch: &str, tag: Option<&str>) -> Result<u64> {
        (**self).append(address, batch, tag)
    }
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        (**self).append_checked(address, batch)
    }
    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        (**self).read_list(address, options)
    }
    fn addresses(&self) -> Result<Vec<Address>> {
        (**self).addresses()
    }
    fn sync(&mut self) -> Result<Option<u64>> {
        (**self).sync()
    }
    fn durable_seq(&self) -> Option<u64> {
        (**self).durable_seq()
    }
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        (**self).compact(address, keep_bases)
    }
    fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
        (**self).live_source()
    }
}

/// How many seqs a writer reserves at a time (see the backends' lease records): seqs a
/// crashed writer may have handed out are never handed out again.
pub(crate) const LEASE: u64 = 1024;

/// The longest record a store takes: a record's batch text plus its tag, and in a JSONL log
/// the whole line (seq, address, tag, batch, checksum; an address definition line too).
/// Appends beyond it are refused before anything is written: [`Error::RecordTooLarge`] for
/// batch and tag, [`Error::InvalidBatch`] for a JSONL line that only its own fields push over.
/// A [`LogWriter`] can hold its records to a smaller bound
/// ([`LogWriter::max_record_bytes`]); a value whose base batch no longer fits is best split
/// over several addresses (see [`Durable::flush`]). Reading a JSONL log never holds a longer
/// line in memory: a complete line beyond it is [`Error::Corrupt`], an unterminated last one
/// is a torn tail (it was never acknowledged, since no append could have written it).
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// Whether `path` names an existing regular file (following symbolic links): `false` when
/// nothing is there, [`Error::NotAFile`] for a FIFO, device, socket or directory, which a store
/// refuses before opening it (opening a FIFO to read blocks until someone writes to it).
pub(crate) fn regular_file(path: &std::path::Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) => Err(Error::NotAFile {
            path: path.to_path_buf(),
            found: file_kind(&meta.file_type()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            action: "read metadata",
            source,
        }),
    }
}

/// What a file that is not a regular file is, in words.
pub(crate) fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}
