//! The PostgreSQL backend (cargo feature `postgres`): one store shared by every node of a
//! cluster, a live tail across nodes, and one writer per address.

mod pool;
mod tail;
mod target;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres::types::Type;
use postgres::{Client, Socket};

use self::pool::Pool;
pub use self::tail::PostgresTail;
use self::tail::{Listener, Source};
pub(crate) use self::target::Target;
use super::group::Syncer;
use super::record::{
    self, address_crc, json_string, newest_mismatch, record_crc, to_sql, Fetched, Row,
};
use super::Record;
use super::{Address, CheckedBatch, Compacted, Durability, Error, Order, Page, ReadOptions};
use super::{LiveSource, LiveTail, Result, Store, LEASE};

/// The format version this code reads and writes (`chord_meta.format`).
const VERSION: i64 = 1;

/// The largest seq PostgreSQL's `bigint` holds.
const MAX_SEQ: u64 = i64::MAX as u64;

/// Connections a store's pool opens at most, unless told otherwise.
const POOL_SIZE: usize = 4;

/// A log in PostgreSQL, shared by every node of a cluster: any node reads any address, and
/// follows it live ([`tail`](PostgresStore::tail)); one writer per address at a time across
/// the cluster ([`claim`](PostgresStore::claim)).
///
/// Configured by URL: `postgres://user:password@host:port/database?schema=name`, any
/// parameter of the [`postgres`] crate's `Config` plus `schema` (default `public`), which
/// chord reads itself. TLS is the caller's choice of crate ([`PostgresBuilder::tls`]).
///
/// # Schema
///
/// The store creates its tables in the schema when they are not there (under a
/// transaction-scoped advisory lock, so nodes starting together create them once):
///
/// ```sql
/// CREATE SCHEMA IF NOT EXISTS "<schema>";
/// CREATE TABLE chord_meta (                 -- 'format' = 1
///     name  text PRIMARY KEY,
///     value bigint NOT NULL
/// );
/// CREATE SEQUENCE chord_seqs INCREMENT BY 1024;  -- each value reserves 1024 seqs
/// CREATE SEQUENCE chord_address_ids;
/// CREATE TABLE chord_addresses (
///     id        bigint PRIMARY KEY,        -- from chord_address_ids
///     namespace text NOT NULL,
///     key       text NOT NULL,
///     last      bigint NOT NULL,           -- the seq of the address's newest record; 0: none
///     crc       bigint NOT NULL,           -- CRC-32C of id, namespace and key
///     UNIQUE (namespace, key)
/// );
/// CREATE TABLE chord_records (
///     address bigint NOT NULL REFERENCES chord_addresses (id),
///     seq     bigint NOT NULL,             -- global to the schema, never reused
///     prev    bigint NOT NULL,             -- the address's previous record; 0 for its first
///     tag     text,                        -- 'base' or 'checkpoint' for a base
///     batch   text NOT NULL,               -- the encoded wire batch, as appended
///     crc     bigint NOT NULL,             -- CRC-32C of seq, address, prev, tag and batch
///     PRIMARY KEY (address, seq)
/// );
/// ```
///
/// **Migrations.** `chord_meta.format` names the version of this layout. A store of an older
/// version is brought up to this one at open, inside the same locked transaction (version 1
/// is the first, so there is nothing to migrate yet); a newer one is [`Error::Version`], and
/// nothing is changed.
///
/// **Integrity** is the SQLite backend's: the same checksums over the same text, the same
/// `prev`/`last` links checked on every page read ([`Error::CorruptRecord`]), address rows
/// checked when read ([`Error::CorruptDatabase`]). Every page is read in one
/// `REPEATABLE READ` snapshot, so a reader on another node never sees half a write.
///
/// # Writing
///
/// **One writer per address, across the cluster.** A store takes a session-level advisory
/// lock on an address (a 64-bit key from the schema and the address) before its first
/// append there, or when asked with [`claim`](PostgresStore::claim), and keeps it while its
/// connection lives. Another writer is refused with [`Error::AddressLocked`], which names the
/// holder's backend pid and application. When the writer's process dies, PostgreSQL ends its
/// session and frees the lock (at once; for a machine that vanished, within about 20 seconds:
/// the writer's session sets the server's TCP keepalives to probe every few seconds); a
/// [`claim`](PostgresStore::claim) waiting on another node gets it, and
/// [`Durable::open`](super::Durable::open) recovers the value and continues.
///
/// **In an async program.** The client is the `postgres` crate's blocking one, which runs a
/// runtime of its own: open the store and call it from a thread that drives no tokio runtime
/// (before the runtime starts, in `spawn_blocking`, as the stream server reads it), never
/// on a runtime's worker, where it panics. Dropping it is safe anywhere: it closes its
/// connections on a thread of its own.
///
/// **Fencing.** Every write moves each address's `last` link with a compare-and-set (`WHERE
/// last = <the writer's newest>`), in the same statement as the insert. A writer whose
/// connection was cut (and so lost its lock) reconnects, takes the lock again and checks that
/// `last` is still its own newest record, or the one whose commit it could not confirm; if
/// another writer appended meanwhile, this writer is fenced off for good:
/// [`Error::Fenced`]. Reopen and recover to continue.
///
/// **Durability.** [`Durability::EveryAppend`]: one statement per append (insert, link,
/// notify), committed before `append` returns; durable as the server's `synchronous_commit`
/// says (on by default). If the connection fails before or during the commit, `append`
/// returns the error ([`Error::Postgres`]); the next append reconnects, takes the lock again
/// and learns from `last` whether the record was stored. When it is the same record again
/// (what a [`LogWriter`](super::LogWriter) sends after such an error), it is written at the
/// same position with the same seq if it was not stored, and if it was, the stored row is
/// checked to be that record (else [`Error::CorruptRecord`]) and its seq returned without
/// writing it twice: a blip costs readers nothing, not even a new base batch.
/// [`Durability::Grouped`]: appends wait in memory and are written by one multi-row insert,
/// in one transaction, at the stated bound; unlike the file backends, a waiting batch is
/// lost if the *process* dies. A group write whose connection fails (before or during the
/// commit) keeps the group waiting, in doubt, and the store goes on taking appends: the next
/// write ([`sync`](Store::sync), a full group, or the background thread one `max_delay`
/// later) reconnects, takes the group's locks again, learns from each address's `last`
/// whether the transaction committed, and writes the same records again if it did not.
/// Meanwhile [`durable_seq`](Store::durable_seq) stays where it was. Any other failure of a
/// group write poisons the store ([`Error::Poisoned`]).
/// A read through the writing store first writes what waits, so it reads its own appends.
///
/// **Seqs** come from the sequence `chord_seqs`, 1024 at a time, so they increase per store
/// and per address, are never reused (also after a writer died), and leave gaps. Seqs of one
/// address increase across failovers too: the sequence only moves forward.
///
/// # Reading on any node
///
/// Readers use a small pool of connections (default 4, see
/// [`PostgresBuilder::pool_size`]), replacing a connection the server closed and retrying a
/// read once. [`tail`](PostgresStore::tail) follows an address live through
/// `LISTEN`/`NOTIFY`: each write notifies in its own statement, so a notification means
/// committed records.
///
/// # Examples
///
/// ```no_run
/// use chord::store::{recover, Address, Durability, PostgresStore, Store, BASE};
/// let url = "postgres://postgres@127.0.0.1:5432/test?schema=chord";
/// let mut db = PostgresStore::open(url, Durability::EveryAppend)?;
/// let a = Address::new("lanes", "main");
/// db.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// db.append(&a, r#"[["s",["n"],2]]"#, None)?;
/// // On any node:
/// let reader = PostgresStore::open_read_only(url)?;
/// assert_eq!(recover(&reader, &a)?, Some(serde_json::json!({"n": 2})));
/// # Ok::<(), chord::store::Error>(())
/// ```
pub struct PostgresStore {
    // Dropped first: its last flush needs the writer.
    syncer: Option<Syncer>,
    writer: Option<Arc<Mutex<Writer>>>,
    shared: SharedHandle,
    durability: Durability,
    /// A read-only store's durable seq: the newest seq it read.
    read: AtomicU64,
}

/// The store's [`Shared`], which [`PostgresStore`]'s drop takes away to a thread of its own.
struct SharedHandle(Option<Arc<Shared>>);

impl std::ops::Deref for SharedHandle {
    type Target = Arc<Shared>;
    fn deref(&self) -> &Arc<Shared> {
        self.0.as_ref().expect("taken only by the store's drop")
    }
}

impl Drop for PostgresStore {
    /// Closes the connections on a thread of their own, and waits for it. The PostgreSQL
    /// client blocks on a runtime of its own to close a connection (and the writer's last
    /// flush and unlock, the listener's stop, run queries): on a thread that drives another
    /// tokio runtime (the last handle of a server's `Log` dropped in a task) that panics, and
    /// a panic in a drop aborts the process. A thread of its own has no runtime; the drop
    /// still returns only once the connections are closed and the locks let go.
    fn drop(&mut self) {
        let parts = (self.syncer.take(), self.writer.take(), self.shared.0.take());
        let closing = std::thread::Builder::new()
            .name("chord-postgres-close".into())
            .spawn(move || drop(parts));
        // Without a thread to be had, the parts were dropped here, as before.
        if let Ok(thread) = closing {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.shared.target.name)
            .field("durability", &self.durability)
            .field("read_only", &self.writer.is_none())
            .finish_non_exhaustive()
    }
}

/// How to open a [`PostgresStore`]: from [`PostgresStore::builder`].
///
/// ```no_run
/// use chord::store::{Durability, PostgresStore};
/// let store = PostgresStore::builder("postgres://postgres@127.0.0.1/test")?
///     .schema("agents")
///     .pool_size(8)
///     .open(Durability::EveryAppend)?;
/// # Ok::<(), chord::store::Error>(())
/// ```
#[must_use]
pub struct PostgresBuilder {
    target: Target,
    pool_size: usize,
}

impl std::fmt::Debug for PostgresBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBuilder")
            .field("database", &self.target.name)
            .field("pool_size", &self.pool_size)
            .finish_non_exhaustive()
    }
}

impl PostgresBuilder {
    /// The schema holding the store's tables (overrides the URL's `schema` parameter). Stores
    /// in different schemas of one database are independent.
    pub fn schema(mut self, schema: &str) -> PostgresBuilder {
        self.target.set_schema(schema);
        self
    }

    /// At most this many connections for reads (at least 1; default 4). A writing store has
    /// one more, which holds its locks, and a store that tails one more, which listens.
    pub fn pool_size(mut self, size: usize) -> PostgresBuilder {
        self.pool_size = size.max(1);
        self
    }

    /// Connects through `tls`, any connector of the `postgres` ecosystem
    /// (`postgres_native_tls::MakeTlsConnector`, `postgres_openssl::MakeTlsConnector`,
    /// `tokio_postgres_rustls::MakeRustlsConnect`). Without it, connections are plain TCP or
    /// a Unix socket.
    pub fn tls<T>(mut self, tls: T) -> PostgresBuilder
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::TlsConnect: Send,
        T::Stream: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        self.target.tls(tls);
        self
    }

    /// Opens the store for writing (creating or migrating its tables).
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] when the server cannot be reached or refuses;
    /// [`Error::Version`] for tables of a newer format.
    pub fn open(self, durability: Durability) -> Result<PostgresStore> {
        let shared = Arc::new(Shared::new(self.target, self.pool_size)?);
        let durable = shared.newest()?;
        let client = writer_connection(&shared.target)?;
        let writer = Arc::new(Mutex::new(Writer {
            shared: Arc::clone(&shared),
            client: Some(client),
            claims: HashMap::new(),
            pending: Vec::new(),
            lease: (1, 0),
            last_seq: durable,
            grouped: matches!(durability, Durability::Grouped { .. }),
            cut: None,
        }));
        let flush_writer = Arc::clone(&writer);
        let flush = Arc::new(move |target: u64| {
            let mut w = lock(&flush_writer);
            w.write_pending()?;
            Ok(target.max(w.last_seq))
        });
        Ok(PostgresStore {
            syncer: Some(Syncer::new(durability, durable, flush, None)),
            writer: Some(writer),
            shared: SharedHandle(Some(shared)),
            durability,
            read: AtomicU64::new(0),
        })
    }

    /// Opens the store for reading only: [`Store::append`] is [`Error::ReadOnly`]. Creates the
    /// tables when they are not there yet, so that a reader may start before any writer.
    ///
    /// # Errors
    ///
    /// As [`open`](PostgresBuilder::open).
    pub fn open_read_only(self) -> Result<PostgresStore> {
        let shared = Arc::new(Shared::new(self.target, self.pool_size)?);
        Ok(PostgresStore {
            syncer: None,
            writer: None,
            shared: SharedHandle(Some(shared)),
            durability: Durability::EveryAppend,
            read: AtomicU64::new(0),
        })
    }
}

impl PostgresStore {
    /// Opens the store at `url` for writing: [`builder`](PostgresStore::builder) with its
    /// defaults.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] or [`Error::Postgres`] for a URL that does not parse;
    /// otherwise as [`PostgresBuilder::open`].
    pub fn open(url: &str, durability: Durability) -> Result<PostgresStore> {
        PostgresStore::builder(url)?.open(durability)
    }

    /// Opens the store at `url` for reading only (see [`PostgresBuilder::open_read_only`]).
    ///
    /// # Errors
    ///
    /// As [`open`](PostgresStore::open).
    pub fn open_read_only(url: &str) -> Result<PostgresStore> {
        PostgresStore::builder(url)?.open_read_only()
    }

    /// A builder for the store at `url`, to set the schema, the pool size or TLS.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] or [`Error::Postgres`] for a URL that does not parse.
    pub fn builder(url: &str) -> Result<PostgresBuilder> {
        Ok(PostgresBuilder {
            target: Target::parse(url)?,
            pool_size: POOL_SIZE,
        })
    }

    /// The database, as errors name it: `postgres://user@host:port/database?schema=name`
    /// (never the password).
    pub fn database(&self) -> &str {
        &self.shared.target.name
    }

    /// The schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.shared.target.schema
    }

    /// The store's durability.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Takes the cluster-wide write lock on `address`, waiting up to `wait` for the current
    /// holder to let go (or die): what a standby node does before it takes an address over.
    /// Claim *before* recovering ([`Durable::open`](super::Durable::open)), so that nobody
    /// appends between the recovery and this writer's first append. An append claims by
    /// itself, without waiting. Claiming an address this store holds does nothing.
    ///
    /// # Errors
    ///
    /// [`Error::AddressLocked`] when another writer still holds it after `wait`;
    /// [`Error::Fenced`] when another writer appended since this store last held it;
    /// [`Error::ReadOnly`]; [`Error::Postgres`].
    pub fn claim(&mut self, address: &Address, wait: Duration) -> Result<()> {
        let Some(writer) = &self.writer else {
            return Err(self.read_only());
        };
        lock(writer).claim(address, wait).map(drop)
    }

    /// Follows `address` live from past `after` (a seq, e.g. a reader's offset; `None`: from
    /// its first record): see [`PostgresTail`]. The first tail of a store starts its listener (one
    /// more connection, and a thread that sleeps until a notification comes).
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] when the listener cannot connect.
    pub fn tail(&self, address: &Address, after: Option<u64>) -> Result<PostgresTail> {
        let listener = self.shared.listener()?;
        let source: Arc<dyn Source> = Arc::clone(&self.shared) as Arc<dyn Source>;
        Ok(PostgresTail::new(source, listener, address.clone(), after))
    }

    /// For tests of what a database blip does to a producer: the server ends this store's
    /// writing session during its next write, before the write reaches it or after it
    /// committed (`cut`), so that the append fails either way. Nothing happens on a read-only
    /// store. Only with the `test-util` feature.
    #[cfg(feature = "test-util")]
    #[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
    pub fn cut_next_write(&self, cut: Cut) {
        if let Some(writer) = &self.writer {
            lock(writer).cut = Some(cut);
        }
    }

    fn grouped(&self) -> bool {
        matches!(self.durability, Durability::Grouped { .. })
    }

    fn read_only(&self) -> Error {
        Error::ReadOnly {
            path: self.shared.target.name.clone().into(),
        }
    }

    /// Writes what waits (grouped durability) before a read, so the store reads its own
    /// appends.
    fn settle(&self) -> Result<()> {
        if let (Some(writer), Some(syncer)) = (&self.writer, &self.syncer) {
            if !lock(writer).pending.is_empty() {
                syncer.sync()?;
            }
        }
        Ok(())
    }
}

impl Store for PostgresStore {
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        let (Some(writer), Some(syncer)) = (&self.writer, &self.syncer) else {
            return Err(self.read_only());
        };
        syncer.check()?;
        let seq = lock(writer).append(address, batch.text(), batch.tag())?;
        match syncer.appended(seq) {
            // Grouped: the batch waits with its group, which is written again later (see
            // `Writer::write_pending`); it is durable when `durable_seq` reaches it.
            Err(Error::Postgres { .. }) if self.grouped() => Ok(seq),
            Err(e) => Err(e),
            Ok(()) => Ok(seq),
        }
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        self.settle()?;
        let page = self.shared.read_list(address, options)?;
        if self.writer.is_none() {
            if let Some(newest) = page.records.iter().map(|r| r.seq).max() {
                self.read.fetch_max(newest, Ordering::Relaxed);
            }
        }
        Ok(page)
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        self.settle()?;
        self.shared.addresses()
    }

    fn sync(&mut self) -> Result<Option<u64>> {
        match &self.syncer {
            Some(syncer) => syncer.sync(),
            None => Ok(self.durable_seq()),
        }
    }

    /// Writes what waits, then, holding the address (as an append would, [`claim`]
    /// without waiting), deletes the removed rows and unlinks the oldest kept record from
    /// them (its `prev` becomes 0, its checksum recomputed) in one transaction: a reader on
    /// any node sees the records as before or as after. `O(removed rows)`; the space is
    /// reclaimed by the server's (auto)vacuum.
    ///
    /// A live [`PostgresTail`] on another node whose cursor lies in the removed range (a follower
    /// further behind than the retention) reads on from the oldest kept record: the gap ends
    /// at a base batch, so what it hands out still recovers the same state.
    ///
    /// [`claim`]: PostgresStore::claim
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        if keep_bases == 0 {
            return Err(Error::KeepsNoBase {
                address: address.clone(),
            });
        }
        let (Some(writer), Some(syncer)) = (&self.writer, &self.syncer) else {
            return Err(self.read_only());
        };
        syncer.sync()?;
        lock(writer).compact(address, keep_bases)
    }

    fn durable_seq(&self) -> Option<u64> {
        match &self.syncer {
            Some(syncer) => syncer.durable(),
            None => Some(self.read.load(Ordering::Relaxed)).filter(|&s| s > 0),
        }
    }

    /// [`PostgresTail`]s on this store's listener: records committed by any writer, on any node.
    fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
        Some(Arc::new(Live(Arc::clone(&self.shared))))
    }
}

/// The store's [`LiveSource`]: [`PostgresTail`]s sharing its listener and its pool.
struct Live(Arc<Shared>);

impl LiveSource for Live {
    fn follow(&self, address: &Address, after: Option<u64>) -> Result<Box<dyn LiveTail>> {
        let listener = self.0.listener()?;
        let source: Arc<dyn Source> = Arc::clone(&self.0) as Arc<dyn Source>;
        Ok(Box::new(PostgresTail::new(
            source,
            listener,
            address.clone(),
            after,
        )))
    }
}

impl LiveTail for PostgresTail {
    fn next(&mut self, timeout: Option<Duration>) -> Result<Vec<Record>> {
        PostgresTail::next(self, timeout)
    }

    fn cursor(&self) -> Option<u64> {
        PostgresTail::cursor(self)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The SQL of one schema, its names quoted in.
struct Sql {
    address: String,
    insert_address: String,
    next_address_id: String,
    next_seqs: String,
    newest: String,
    asc: String,
    desc: String,
    addresses: String,
    write: String,
    channel: String,
    nth_base: String,
    before: String,
    record: String,
    stored: String,
    delete_before: String,
    unlink: String,
}

impl Sql {
    fn new(s: &str, channel: String) -> Sql {
        Sql {
            address: format!(
                "SELECT id, last, crc FROM {s}.chord_addresses WHERE namespace = $1 AND key = $2"
            ),
            insert_address: format!(
                "INSERT INTO {s}.chord_addresses (id, namespace, key, last, crc)
                 VALUES ($1, $2, $3, 0, $4)"
            ),
            next_address_id: format!("SELECT nextval('{s}.chord_address_ids')"),
            next_seqs: format!("SELECT nextval('{s}.chord_seqs')"),
            newest: format!("SELECT coalesce(max(last), 0) FROM {s}.chord_addresses"),
            // A page in one statement (one snapshot, one round trip): the address row, up to
            // `limit + 1` records past the cursor, and the record next to the cursor on the
            // other side, which the continuity check needs. $3: the bound, $4: how many,
            // $5: the neighbour's bound, $6: whether there is one.
            asc: format!(
                "SELECT a.id, a.last, a.crc, r.seq, r.prev, r.tag, r.batch, r.crc, n.seq, n.prev
                 FROM {s}.chord_addresses a
                 LEFT JOIN LATERAL (
                     SELECT seq, prev, tag, batch, crc FROM {s}.chord_records
                     WHERE address = a.id AND seq > $3 ORDER BY seq ASC LIMIT $4) r ON true
                 LEFT JOIN LATERAL (
                     SELECT seq, prev FROM {s}.chord_records
                     WHERE $6 AND address = a.id AND seq <= $5
                     ORDER BY seq DESC LIMIT 1) n ON true
                 WHERE a.namespace = $1 AND a.key = $2
                 ORDER BY r.seq ASC"
            ),
            desc: format!(
                "SELECT a.id, a.last, a.crc, r.seq, r.prev, r.tag, r.batch, r.crc, n.seq, n.prev
                 FROM {s}.chord_addresses a
                 LEFT JOIN LATERAL (
                     SELECT seq, prev, tag, batch, crc FROM {s}.chord_records
                     WHERE address = a.id AND seq <= $3 ORDER BY seq DESC LIMIT $4) r ON true
                 LEFT JOIN LATERAL (
                     SELECT seq, prev FROM {s}.chord_records
                     WHERE $6 AND address = a.id AND seq >= $5
                     ORDER BY seq ASC LIMIT 1) n ON true
                 WHERE a.namespace = $1 AND a.key = $2
                 ORDER BY r.seq DESC"
            ),
            addresses: format!(
                "SELECT a.id, a.namespace, a.key, a.last, a.crc,
                        EXISTS (SELECT 1 FROM {s}.chord_records r WHERE r.address = a.id)
                 FROM {s}.chord_addresses a"
            ),
            // One statement per write: each address's `last` moves by compare-and-set (the
            // fence), its records go in only when it moved, and a notification goes out for
            // each address written, delivered at commit.
            write: format!(
                "WITH v AS (
                     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[])
                         AS v(id, prev, last, note)),
                 u AS (
                     UPDATE {s}.chord_addresses a SET last = v.last FROM v
                     WHERE a.id = v.id AND a.last = v.prev
                     RETURNING a.id, v.note),
                 r AS (
                     INSERT INTO {s}.chord_records (address, seq, prev, tag, batch, crc)
                     SELECT x.address, x.seq, x.prev, x.tag, x.batch, x.crc
                     FROM unnest($5::bigint[], $6::bigint[], $7::bigint[], $8::text[],
                                 $9::text[], $10::bigint[])
                         AS x(address, seq, prev, tag, batch, crc)
                     JOIN u ON u.id = x.address
                     RETURNING 1),
                 n AS (SELECT pg_notify($11, u.note) FROM u)
                 SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM r),
                        (SELECT count(*) FROM n)"
            ),
            channel,
            nth_base: format!(
                "SELECT seq FROM {s}.chord_records
                 WHERE address = $1 AND tag IN ('base', 'checkpoint')
                 ORDER BY seq DESC LIMIT 1 OFFSET $2"
            ),
            before: format!(
                "SELECT max(seq) FROM {s}.chord_records WHERE address = $1 AND seq < $2"
            ),
            record: format!(
                "SELECT prev, tag, batch, crc FROM {s}.chord_records
                 WHERE address = $1 AND seq = $2 FOR UPDATE"
            ),
            stored: format!(
                "SELECT prev, tag, batch, crc FROM {s}.chord_records
                 WHERE address = $1 AND seq = $2"
            ),
            delete_before: format!("DELETE FROM {s}.chord_records WHERE address = $1 AND seq < $2"),
            unlink: format!(
                "UPDATE {s}.chord_records SET prev = 0, crc = $3 WHERE address = $1 AND seq = $2"
            ),
        }
    }
}

/// The tables, for a schema with none (see the type's documentation).
fn schema_sql(s: &str) -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE {s}.chord_meta (
             name  text PRIMARY KEY,
             value bigint NOT NULL
         );
         CREATE SEQUENCE {s}.chord_seqs INCREMENT BY {LEASE};
         CREATE SEQUENCE {s}.chord_address_ids;
         CREATE TABLE {s}.chord_addresses (
             id        bigint PRIMARY KEY,
             namespace text NOT NULL,
             key       text NOT NULL,
             last      bigint NOT NULL,
             crc       bigint NOT NULL,
             UNIQUE (namespace, key)
         );
         CREATE TABLE {s}.chord_records (
             address bigint NOT NULL REFERENCES {s}.chord_addresses (id),
             seq     bigint NOT NULL,
             prev    bigint NOT NULL,
             tag     text,
             batch   text NOT NULL,
             crc     bigint NOT NULL,
             PRIMARY KEY (address, seq)
         );
         INSERT INTO {s}.chord_meta (name, value) VALUES ('format', {VERSION});"
    )
}

/// What the store, its writer, its tails and its group-commit thread share.
pub(crate) struct Shared {
    target: Target,
    pool: Pool,
    sql: Sql,
    listener: Mutex<Option<Arc<Listener>>>,
}

impl Shared {
    fn new(target: Target, pool_size: usize) -> Result<Shared> {
        let schema = target.quoted_schema();
        let sql = Sql::new(&schema, tail::channel(&target.schema));
        let shared = Shared {
            target,
            pool: Pool::new(pool_size),
            sql,
            listener: Mutex::new(None),
        };
        shared.prepare()?;
        Ok(shared)
    }

    /// Creates the tables, or checks (and migrates) their version.
    fn prepare(&self) -> Result<()> {
        let err = self.target.error("create the schema");
        let mut conn = self.pool.get(&self.target)?;
        let mut tx = conn.transaction().map_err(&err)?;
        // One node at a time, per schema: the lock ends with the transaction.
        let key = crc32c::crc32c(format!("chord-setup\0{}", self.target.schema).as_bytes());
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&i64::from(key)])
            .map_err(&err)?;
        let meta = format!("{}.chord_meta", self.target.quoted_schema());
        let exists: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&meta])
            .map_err(&err)?
            .get(0);
        if !exists {
            tx.batch_execute(&schema_sql(&self.target.quoted_schema()))
                .map_err(&err)?;
        } else {
            let format: Option<i64> = tx
                .query_opt(
                    &format!("SELECT value FROM {meta} WHERE name = 'format'"),
                    &[],
                )
                .map_err(&err)?
                .map(|row| row.get(0));
            let found = format.unwrap_or(0);
            if found != VERSION {
                return Err(Error::Version {
                    path: self.target.name.clone().into(),
                    found: u64::try_from(found).unwrap_or(0),
                    supported: VERSION as u64,
                });
            }
        }
        tx.commit().map_err(&err)
    }

    /// The address's lock and notification key: 64 bits from the schema and the address.
    pub(crate) fn key(&self, address: &Address) -> u64 {
        let text = format!(
            "{}\0{}\0{}",
            self.target.schema,
            json_string(&address.namespace),
            json_string(&address.key)
        );
        let hi = crc32c::crc32c_append(crc32c::crc32c(b"chord-lock-hi\0"), text.as_bytes());
        let lo = crc32c::crc32c_append(crc32c::crc32c(b"chord-lock-lo\0"), text.as_bytes());
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// The listener, started on first use.
    fn listener(&self) -> Result<Arc<Listener>> {
        let mut slot = lock(&self.listener);
        if let Some(listener) = &*slot {
            return Ok(Arc::clone(listener));
        }
        let listener = Listener::start(&self.target)?;
        *slot = Some(Arc::clone(&listener));
        Ok(listener)
    }

    /// The newest seq stored in the schema, 0 for none.
    fn newest(&self) -> Result<u64> {
        let newest: i64 =
            self.read("read", |tx| Ok(tx.query_one(&self.sql.newest, &[])?.get(0)))?;
        Ok(u64::try_from(newest).unwrap_or(0))
    }

    /// Runs `f` (one statement: one snapshot) on a pooled connection, once more on a fresh
    /// connection if it fails (the server may have closed the first).
    fn read<T>(
        &self,
        action: &'static str,
        f: impl Fn(&mut Client) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut conn = self.pool.get(&self.target)?;
            match f(&mut conn) {
                Ok(value) => return Ok(value),
                Err(e) => {
                    conn.discard();
                    if attempt >= 2 {
                        return Err(self.target.error(action)(e));
                    }
                }
            }
        }
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        let fetch = i64::try_from(options.limit).unwrap_or(i64::MAX - 1) + 1;
        let (query, bound, neighbour, with_neighbour) = match (options.order, options.cursor) {
            (Order::Asc, cursor) => (
                &self.sql.asc,
                cursor.map_or(-1, to_sql),
                cursor.map_or(0, to_sql),
                cursor.is_some(),
            ),
            (Order::Desc, cursor) => (
                &self.sql.desc,
                // Records before the cursor: none before 0.
                cursor.map_or(i64::MAX, |c| c.checked_sub(1).map_or(-1, to_sql)),
                cursor.map_or(0, to_sql),
                cursor.is_some_and(|c| c <= MAX_SEQ),
            ),
        };
        let rows = self.read("read", |client| {
            client.query_typed(
                query,
                &[
                    (&address.namespace, Type::TEXT),
                    (&address.key, Type::TEXT),
                    (&bound, Type::INT8),
                    (&fetch, Type::INT8),
                    (&neighbour, Type::INT8),
                    (&with_neighbour, Type::BOOL),
                ],
            )
        })?;
        let Some(first) = rows.first() else {
            return Ok(Page::default());
        };
        let (id, last, crc): (i64, i64, i64) = (first.get(0), first.get(1), first.get(2));
        let neighbour: (Option<i64>, Option<i64>) = (first.get(8), first.get(9));
        let fetched = Fetched {
            id,
            last,
            rows: rows
                .iter()
                .filter_map(|r| {
                    Some(Row {
                        seq: r.get::<_, Option<i64>>(3)?,
                        prev: r.get(4),
                        tag: r.get(5),
                        batch: r.get(6),
                        crc: r.get(7),
                    })
                })
                .collect(),
            older: match options.order {
                Order::Asc => neighbour.0,
                Order::Desc => None,
            },
            newer: match (options.order, neighbour) {
                (Order::Desc, (Some(seq), Some(prev))) => Some((seq, prev)),
                _ => None,
            },
        };
        self.check_address(id, address, crc)?;
        fetched.into_page(self.path(), address, options)
    }

    /// The database's name as errors carry it, in the place of a file's path.
    fn path(&self) -> &Path {
        Path::new(&self.target.name)
    }

    fn check_address(&self, id: i64, address: &Address, crc: i64) -> Result<()> {
        record::check_address(self.path(), id, address, crc)
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        let rows = self.read("list addresses", |client| {
            Ok(client
                .query_typed(&self.sql.addresses, &[])?
                .iter()
                .map(|r| {
                    let row: (i64, String, String, i64, i64, bool) =
                        (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
                    row
                })
                .collect::<Vec<_>>())
        })?;
        let mut out = Vec::new();
        for (id, namespace, key, last, crc, has_records) in rows {
            let address = Address { namespace, key };
            self.check_address(id, &address, crc)?;
            if has_records != (last > 0) {
                let last = last.max(0) as u64;
                return Err(newest_mismatch(self.path(), &address, last, has_records));
            }
            if has_records {
                out.push(address);
            }
        }
        out.sort();
        Ok(out)
    }
}

impl Source for Shared {
    fn read_page(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        self.read_list(address, options)
    }

    fn key(&self, address: &Address) -> u64 {
        Shared::key(self, address)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let listener = lock(&self.listener).take();
        if let Some(listener) = listener {
            listener.stop();
            // Wakes the listener thread, blocked until a notification comes.
            if let Ok(mut conn) = self.pool.get(&self.target) {
                let _ = conn.execute("SELECT pg_notify($1, 'stop')", &[&self.sql.channel]);
            }
        }
    }
}

/// The writer's connection, which holds its locks. The server probes it every few seconds
/// when idle (TCP keepalives, set for this session), so that the locks of a writer whose
/// machine vanished are freed within about 20 seconds, not the operating system's two hours.
fn writer_connection(target: &Target) -> Result<Client> {
    let mut client = target.connect()?;
    client
        .batch_execute(
            "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 3; \
             SET tcp_keepalives_count = 3",
        )
        .map_err(target.error("connect"))?;
    Ok(client)
}

/// The writing side of a store: its own connection (which holds the address locks), the
/// addresses it holds, and what waits to be written.
struct Writer {
    shared: Arc<Shared>,
    /// `None` after a failure, until the next append reconnects.
    client: Option<Client>,
    claims: HashMap<Address, Claim>,
    pending: Vec<Pending>,
    /// The seqs reserved and not yet handed out: `next..=end` (empty when `next > end`).
    lease: (u64, u64),
    /// The newest seq this store handed out (or, at open, the newest stored).
    last_seq: u64,
    grouped: bool,
    /// A fault for the next write, for tests (see `PostgresStore::cut_next_write`).
    cut: Option<Cut>,
}

/// An address this writer holds.
#[derive(Debug)]
struct Claim {
    id: i64,
    /// The address's newest record in the database.
    committed: u64,
    /// Its newest record, waiting ones included.
    last: u64,
    /// The lock is held by the current connection.
    held: bool,
    /// An append whose commit was not confirmed: the next claim looks whether it is there,
    /// and the next append of the same record is answered by it.
    in_doubt: Option<Doubt>,
    /// Another writer appended: this store never writes here again.
    fenced: Option<u64>,
}

/// A record whose commit was not confirmed.
#[derive(Clone, Copy, Debug)]
struct Doubt {
    seq: u64,
    /// The address's newest record before it.
    prev: u64,
    /// Its checksum (of seq, address, prev, tag and batch); `None` for a group in doubt,
    /// whose newest record `seq` is.
    crc: Option<u32>,
}

/// A fault to inject into the next write (see `PostgresStore::cut_next_write`, with the
/// `test-util` feature).
// Without `test-util` nothing constructs it: the write below checks for a cut that never comes.
#[cfg_attr(not(feature = "test-util"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The server ends the writer's session before the write reaches it: nothing is stored.
    BeforeWrite,
    /// The server ends the writer's session after the write committed, before the append
    /// returns: stored, but the append fails.
    AfterCommit,
}

/// One record waiting to be written.
struct Pending {
    id: i64,
    seq: u64,
    prev: u64,
    tag: Option<String>,
    batch: String,
    crc: u32,
}

impl Writer {
    fn err(&self, action: &'static str) -> impl Fn(postgres::Error) -> Error + '_ {
        self.shared.target.error(action)
    }

    /// The connection, reconnecting after a failure (every lock is then taken again).
    fn client(&mut self) -> Result<&mut Client> {
        let client = match self.client.take() {
            Some(client) if !client.is_closed() => client,
            _ => {
                self.lost();
                writer_connection(&self.shared.target)?
            }
        };
        Ok(self.client.insert(client))
    }

    /// The connection failed or is in an unknown state: drop it (and with it every lock).
    fn lost(&mut self) {
        self.client = None;
        for claim in self.claims.values_mut() {
            claim.held = false;
        }
    }

    fn fenced(&self, address: &Address, expected: u64, found: u64) -> Error {
        Error::Fenced {
            database: self.shared.target.name.clone(),
            address: address.clone(),
            expected,
            found,
        }
    }

    /// Holds `address` on the current connection (see [`PostgresStore::claim`]).
    fn claim(&mut self, address: &Address, wait: Duration) -> Result<&mut Claim> {
        let shared = Arc::clone(&self.shared);
        let key = shared.key(address) as i64;
        let held = self.claims.get(address).is_some_and(|c| c.held);
        if !held || self.client.as_ref().is_none_or(Client::is_closed) {
            let client = self.client()?;
            let took = if wait.is_zero() {
                client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                    .map(|r| r.get::<_, bool>(0))
            } else {
                let millis = wait.as_millis().clamp(1, i32::MAX as u128);
                client
                    .batch_execute(&format!("SET lock_timeout = {millis}"))
                    .and_then(|()| client.execute("SELECT pg_advisory_lock($1)", &[&key]))
                    .map(|_| true)
                    .or_else(|e| match e.code() {
                        Some(&SqlState::LOCK_NOT_AVAILABLE) => Ok(false),
                        _ => Err(e),
                    })
                    .and_then(|took| client.batch_execute("RESET lock_timeout").map(|()| took))
            };
            let took = match took {
                Ok(took) => took,
                Err(e) => {
                    self.lost();
                    return Err(self.err("take the address's lock")(e));
                }
            };
            if !took {
                let holder = self.holder(key);
                return Err(Error::AddressLocked {
                    database: shared.target.name.clone(),
                    address: address.clone(),
                    holder,
                });
            }
            let row = self.address_row(address);
            let (id, stored) = match row {
                Ok(row) => row,
                Err(e) => {
                    // Keep nothing half-done: the lock goes with the connection.
                    self.lost();
                    return Err(e);
                }
            };
            // Records of this address still waiting (a group in doubt) come after the newest.
            let waiting = self
                .pending
                .iter()
                .filter(|p| p.id == id)
                .map(|p| p.seq)
                .max();
            let claim = self.claims.entry(address.clone()).or_insert(Claim {
                id,
                committed: stored,
                last: stored,
                held: false,
                in_doubt: None,
                fenced: None,
            });
            claim.held = true;
            if claim.fenced.is_none() {
                // An append whose commit was not confirmed: stored if `last` is its seq. The
                // doubt stays, so that the same record sent again is recognised (`append`).
                match &claim.in_doubt {
                    Some(doubt) if stored == doubt.seq => claim.committed = doubt.seq,
                    _ => {}
                }
                if stored != claim.committed || claim.id != id {
                    claim.fenced = Some(stored);
                }
                claim.last = waiting.map_or(claim.committed, |w| w.max(claim.committed));
            }
        }
        let claim = self
            .claims
            .get_mut(address)
            .ok_or_else(|| Error::Poisoned {
                reason: "a claimed address went missing".into(),
            })?;
        if let Some(found) = claim.fenced {
            let expected = claim.committed;
            return Err(Error::Fenced {
                database: shared.target.name.clone(),
                address: address.clone(),
                expected,
                found,
            });
        }
        Ok(claim)
    }

    /// Who holds the lock `key`, in words, when the server says.
    fn holder(&mut self, key: i64) -> Option<String> {
        let (hi, lo) = ((key as u64 >> 32) as i64, (key as u64 & 0xffff_ffff) as i64);
        let client = self.client.as_mut()?;
        let row = client
            .query_opt(
                "SELECT l.pid, coalesce(a.application_name, ''),
                        coalesce(host(a.client_addr), 'a local socket')
                 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                   AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid
                   AND l.database = (SELECT oid FROM pg_database
                                     WHERE datname = current_database())
                 LIMIT 1",
                &[&hi, &lo],
            )
            .ok()??;
        let (pid, app, from): (i32, String, String) = (row.get(0), row.get(1), row.get(2));
        Some(format!(
            "backend pid {pid}, application {app:?}, from {from}"
        ))
    }

    /// The address's id and newest seq, creating its row when new.
    fn address_row(&mut self, address: &Address) -> Result<(i64, u64)> {
        let shared = Arc::clone(&self.shared);
        let sql = &shared.sql;
        let err = shared.target.error("read the address");
        let client = self.client()?;
        let found = client
            .query_opt(&sql.address, &[&address.namespace, &address.key])
            .map_err(&err)?;
        if let Some(row) = found {
            let (id, last, crc): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            shared.check_address(id, address, crc)?;
            return Ok((id, u64::try_from(last).unwrap_or(0)));
        }
        let id: i64 = client
            .query_one(&sql.next_address_id, &[])
            .map_err(&err)?
            .get(0);
        let crc = i64::from(address_crc(id, &address.namespace, &address.key));
        client
            .execute(
                &sql.insert_address,
                &[&id, &address.namespace, &address.key, &crc],
            )
            .map_err(&err)?;
        Ok((id, 0))
    }

    /// The next seq past `after` (the address's newest record), reserving more from
    /// `chord_seqs` when the lease is used up, or lies below `after` (an address taken over
    /// from a writer with a newer lease): every value the sequence gives lies past every seq
    /// handed out before.
    fn next_seq(&mut self, after: u64) -> Result<u64> {
        let (next, end) = self.lease;
        if next <= end && next > after {
            self.lease.0 = next + 1;
            return Ok(next);
        }
        let shared = Arc::clone(&self.shared);
        let client = self.client()?;
        match client.query_one(&shared.sql.next_seqs, &[]) {
            Ok(row) => {
                let start = u64::try_from(row.get::<_, i64>(0)).unwrap_or(0).max(1);
                self.lease = (start + 1, start.saturating_add(LEASE - 1).min(MAX_SEQ));
                Ok(start)
            }
            Err(e) if e.code() == Some(&SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED) => {
                Err(Error::SeqsExhausted {
                    path: shared.target.name.clone().into(),
                    last: MAX_SEQ,
                })
            }
            Err(e) => {
                self.lost();
                Err(shared.target.error("reserve seqs")(e))
            }
        }
    }

    fn append(&mut self, address: &Address, batch: &str, tag: Option<&str>) -> Result<u64> {
        let grouped = self.grouped;
        let claim = self.claim(address, Duration::ZERO)?;
        let (id, prev) = (claim.id, claim.last);
        // The same record as the one in doubt, sent again (a `LogWriter` does): the same
        // position, the same seq, so a commit whose acknowledgement was lost is not written
        // twice.
        let again = match grouped {
            true => None,
            false => claim
                .in_doubt
                .take()
                .filter(|d| d.crc == Some(record_crc(d.seq, id, d.prev, tag, batch))),
        };
        let seq = match again {
            Some(doubt) if prev == doubt.seq => {
                let found = self.stored_as(address, id, doubt, tag, batch);
                if let (Err(Error::Postgres { .. }), Some(claim)) =
                    (&found, self.claims.get_mut(address))
                {
                    claim.in_doubt = Some(doubt);
                }
                found?;
                self.last_seq = self.last_seq.max(doubt.seq);
                return Ok(doubt.seq);
            }
            Some(doubt) if prev == doubt.prev => doubt.seq,
            _ => self.next_seq(prev)?,
        };
        let crc = record_crc(seq, id, prev, tag, batch);
        let pending = Pending {
            id,
            seq,
            prev,
            tag: tag.map(str::to_owned),
            batch: batch.to_owned(),
            crc,
        };
        if self.grouped {
            self.pending.push(pending);
        } else {
            match self.write(&[pending]) {
                Ok(()) => {}
                Err(e) => {
                    if let Some(claim) = self.claims.get_mut(address) {
                        if !matches!(e, Error::Fenced { .. }) {
                            claim.in_doubt = Some(Doubt {
                                seq,
                                prev,
                                crc: Some(crc),
                            });
                        }
                    }
                    return Err(e);
                }
            }
        }
        if let Some(claim) = self.claims.get_mut(address) {
            claim.last = seq;
            if !self.grouped {
                claim.committed = seq;
            }
        }
        self.last_seq = seq;
        Ok(seq)
    }

    /// Checks that the record committed at `doubt`'s position is the one sent again.
    fn stored_as(
        &mut self,
        address: &Address,
        id: i64,
        doubt: Doubt,
        tag: Option<&str>,
        batch: &str,
    ) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let client = self.client()?;
        let row = match client.query_opt(&shared.sql.stored, &[&id, &to_sql(doubt.seq)]) {
            Ok(row) => row,
            Err(e) => {
                self.lost();
                return Err(shared.target.error("read the record in doubt")(e));
            }
        };
        let same = row.is_some_and(|row| {
            let (prev, found_tag, found, crc): (i64, Option<String>, String, i64) =
                (row.get(0), row.get(1), row.get(2), row.get(3));
            prev == to_sql(doubt.prev)
                && found_tag.as_deref() == tag
                && found == batch
                && doubt.crc.is_some_and(|c| crc == i64::from(c))
        });
        if same {
            return Ok(());
        }
        Err(Error::CorruptRecord {
            path: shared.target.name.clone().into(),
            address: address.clone(),
            seq: doubt.seq,
            reason: "the record whose commit was in doubt is not the batch sent again".into(),
        })
    }

    /// See [`PostgresStore::compact`]: called with nothing waiting.
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        let id = self.claim(address, Duration::ZERO)?.id;
        let shared = Arc::clone(&self.shared);
        let done = self.compact_rows(&shared, address, id, keep_bases);
        if let Err(Error::Postgres { .. }) = &done {
            self.lost();
        }
        done
    }

    fn compact_rows(
        &mut self,
        shared: &Shared,
        address: &Address,
        id: i64,
        keep_bases: usize,
    ) -> Result<Compacted> {
        let err = shared.target.error("compact");
        let sql = &shared.sql;
        let offset = i64::try_from(keep_bases - 1).unwrap_or(i64::MAX);
        let client = self.client()?;
        let mut tx = client.transaction().map_err(&err)?;
        let Some(oldest) = tx
            .query_opt(&sql.nth_base, &[&id, &offset])
            .map_err(&err)?
            .map(|r| r.get::<_, i64>(0))
        else {
            return Ok(Compacted::default());
        };
        let before: Option<i64> = tx
            .query_one(&sql.before, &[&id, &oldest])
            .map_err(&err)?
            .get(0);
        let mut removed = 0;
        if let Some(before) = before {
            let row = tx.query_one(&sql.record, &[&id, &oldest]).map_err(&err)?;
            let row = Row {
                seq: oldest,
                prev: row.get(0),
                tag: row.get(1),
                batch: row.get(2),
                crc: row.get(3),
            };
            let crc = i64::from(row.unlink(shared.path(), address, id, before)?);
            removed = tx
                .execute(&sql.delete_before, &[&id, &oldest])
                .map_err(&err)?;
            tx.execute(&sql.unlink, &[&id, &oldest, &crc])
                .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(Compacted {
            removed,
            oldest_kept: Some(oldest as u64),
        })
    }

    /// Writes what waits, in one transaction (the group commit).
    ///
    /// A group whose write failed with the connection stays waiting, in doubt: the next
    /// attempt reconnects, takes each of its addresses' locks again, and learns from their
    /// `last` whether the transaction committed (all of it or none: then the same records,
    /// with the same seqs, are written again). Another writer having appended meanwhile is
    /// [`Error::Fenced`], as for a single append.
    fn write_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let lost: Vec<Address> = self
            .claims
            .iter()
            .filter(|(_, c)| !c.held && self.pending.iter().any(|p| p.id == c.id))
            .map(|(a, _)| a.clone())
            .collect();
        for address in &lost {
            self.claim(address, Duration::ZERO)?;
        }
        if !lost.is_empty() {
            // What the claims found committed is no longer waiting.
            let committed: HashMap<i64, u64> =
                self.claims.values().map(|c| (c.id, c.committed)).collect();
            self.pending
                .retain(|p| committed.get(&p.id).is_none_or(|&c| p.seq > c));
            if self.pending.is_empty() {
                self.settled();
                return Ok(());
            }
        }
        let pending = std::mem::take(&mut self.pending);
        match self.write(&pending) {
            Ok(()) => {
                self.settled();
                Ok(())
            }
            Err(e) => {
                if let Error::Postgres { .. } = e {
                    for claim in self.claims.values_mut() {
                        let mine = pending.iter().filter(|p| p.id == claim.id);
                        let (Some(first), Some(newest)) =
                            (mine.clone().next(), mine.map(|p| p.seq).max())
                        else {
                            continue;
                        };
                        claim.in_doubt = Some(Doubt {
                            seq: newest,
                            prev: first.prev,
                            crc: None,
                        });
                    }
                    self.pending = pending;
                }
                Err(e)
            }
        }
    }

    /// Everything waiting is committed.
    fn settled(&mut self) {
        for claim in self.claims.values_mut() {
            claim.committed = claim.last;
            claim.in_doubt = None;
        }
    }

    /// Writes records (of one or more addresses, oldest first) with one statement: in its own
    /// transaction for one address, in an explicit one for a group, so a fenced address
    /// writes nothing of the group.
    fn write(&mut self, records: &[Pending]) -> Result<()> {
        // Per address: (id, prev before the records, newest, notification).
        let mut moves: Vec<(i64, i64, i64, String)> = Vec::new();
        for r in records {
            match moves.iter_mut().find(|m| m.0 == r.id) {
                Some(m) => m.2 = to_sql(r.seq),
                None => moves.push((r.id, to_sql(r.prev), to_sql(r.seq), String::new())),
            }
        }
        let addresses: HashMap<i64, Address> =
            self.claims.iter().map(|(a, c)| (c.id, a.clone())).collect();
        for m in &mut moves {
            if let Some(address) = addresses.get(&m.0) {
                m.3 = tail::payload(self.shared.key(address), m.2 as u64);
            }
        }
        let ids: Vec<i64> = moves.iter().map(|m| m.0).collect();
        let prevs: Vec<i64> = moves.iter().map(|m| m.1).collect();
        let lasts: Vec<i64> = moves.iter().map(|m| m.2).collect();
        let notes: Vec<String> = moves.iter().map(|m| m.3.clone()).collect();
        let r_ids: Vec<i64> = records.iter().map(|r| r.id).collect();
        let r_seqs: Vec<i64> = records.iter().map(|r| to_sql(r.seq)).collect();
        let r_prevs: Vec<i64> = records.iter().map(|r| to_sql(r.prev)).collect();
        let r_tags: Vec<Option<&str>> = records.iter().map(|r| r.tag.as_deref()).collect();
        let r_batches: Vec<&str> = records.iter().map(|r| r.batch.as_str()).collect();
        let r_crcs: Vec<i64> = records.iter().map(|r| i64::from(r.crc)).collect();
        if let Some((address, _)) = self
            .claims
            .iter()
            .find(|(_, c)| !c.held && moves.iter().any(|m| m.0 == c.id))
        {
            // Waiting batches whose lock went with a lost connection: never written blind.
            return Err(Error::Poisoned {
                reason: format!(
                    "the connection holding the lock on {address} was lost with batches \
                     waiting to be written"
                ),
            });
        }
        let shared = Arc::clone(&self.shared);
        let explicit = moves.len() > 1;
        let cut = self.cut.take();
        let client = self.client()?;
        // The server ends this session: what a database restart or failover does to it.
        let end_session = "SELECT pg_terminate_backend(pg_backend_pid())";
        let outcome = (|| {
            if cut == Some(Cut::BeforeWrite) {
                // Fails, and leaves the connection closed for the write below.
                let _ = client.batch_execute(end_session);
            }
            if explicit {
                client.batch_execute("BEGIN")?;
            }
            let row = client.query_typed_one(
                &shared.sql.write,
                &[
                    (&ids, Type::INT8_ARRAY),
                    (&prevs, Type::INT8_ARRAY),
                    (&lasts, Type::INT8_ARRAY),
                    (&notes, Type::TEXT_ARRAY),
                    (&r_ids, Type::INT8_ARRAY),
                    (&r_seqs, Type::INT8_ARRAY),
                    (&r_prevs, Type::INT8_ARRAY),
                    (&r_tags, Type::TEXT_ARRAY),
                    (&r_batches, Type::TEXT_ARRAY),
                    (&r_crcs, Type::INT8_ARRAY),
                    (&shared.sql.channel, Type::TEXT),
                ],
            )?;
            let moved: i64 = row.get(0);
            if moved as usize != moves.len() {
                if explicit {
                    client.batch_execute("ROLLBACK")?;
                }
                return Ok(false);
            }
            if explicit {
                client.batch_execute("COMMIT")?;
            }
            if cut == Some(Cut::AfterCommit) {
                client.batch_execute(end_session)?;
            }
            Ok(true)
        })();
        match outcome {
            Ok(true) => Ok(()),
            Ok(false) => {
                // Which address moved under us, and to what.
                let sql = &shared.sql;
                for (address, claim) in &mut self.claims {
                    if !ids.contains(&claim.id) {
                        continue;
                    }
                    let found = match &mut self.client {
                        Some(c) => c
                            .query_opt(&sql.address, &[&address.namespace, &address.key])
                            .ok()
                            .flatten()
                            .map_or(0, |r| u64::try_from(r.get::<_, i64>(1)).unwrap_or(0)),
                        None => 0,
                    };
                    if found != claim.committed {
                        claim.fenced = Some(found);
                        let expected = claim.committed;
                        let address = address.clone();
                        return Err(self.fenced(&address, expected, found));
                    }
                }
                Err(Error::Poisoned {
                    reason: "a write moved fewer addresses than it wrote".into(),
                })
            }
            Err(e) => {
                self.lost();
                Err(shared.target.error("append")(e))
            }
        }
    }
}

impl Drop for Writer {
    /// Lets go of every lock now, rather than when the server notices the closed connection.
    fn drop(&mut self) {
        if let Some(client) = &mut self.client {
            let _ = client.batch_execute("SELECT pg_advisory_unlock_all()");
        }
    }
}
