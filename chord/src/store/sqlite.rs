//! The SQLite backend (cargo feature `sqlite`; SQLite is bundled, nothing to install).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::group::Syncer;
use super::mark::{self, Mark};
use super::record::{self, address_crc, newest_mismatch, record_crc, to_sql, Fetched, Row};
use super::{
    regular_file, Address, CheckedBatch, Compacted, Durability, Error, Order, Page, ReadOptions,
};
use super::{Result, Store, LEASE};

/// The format version this code reads and writes (`chord_meta.format`). Version 1 had no
/// checksums and no `prev`/`last` links.
const VERSION: u64 = 2;

/// The largest seq SQLite's signed 64-bit integers hold.
const MAX_SEQ: u64 = i64::MAX as u64;

/// A log in a SQLite database: one list table keyed by (address, seq), so every page is a
/// range scan of the primary-key index.
///
/// ```sql
/// CREATE TABLE chord_meta (        -- 'format' = 2, 'lease_end', 'addresses' (how many)
///     name  TEXT PRIMARY KEY,
///     value INTEGER NOT NULL
/// ) WITHOUT ROWID;
/// CREATE TABLE chord_addresses (
///     id        INTEGER PRIMARY KEY, -- 1, 2, 3, ... in the order addresses appear
///     namespace TEXT NOT NULL,
///     key       TEXT NOT NULL,
///     last      INTEGER NOT NULL,    -- the seq of the address's newest record
///     crc       INTEGER NOT NULL,    -- CRC-32C of id, namespace and key
///     UNIQUE (namespace, key)
/// );
/// CREATE TABLE chord_records (
///     address INTEGER NOT NULL,   -- chord_addresses.id
///     seq     INTEGER NOT NULL,   -- global to the database, never reused
///     prev    INTEGER NOT NULL,   -- the seq of the address's previous record; 0 for its first
///     tag     TEXT,               -- 'base' or 'checkpoint' for a base
///     batch   TEXT NOT NULL,      -- the encoded wire batch, as appended
///     crc     INTEGER NOT NULL,   -- CRC-32C of seq, address, prev, tag and batch
///     PRIMARY KEY (address, seq)
/// ) WITHOUT ROWID;
/// ```
///
/// **Checksums.** A record's `crc` is the CRC-32C of the text
/// `{"s":<seq>,"a":<address id>,"p":<prev>,"t":<tag as a JSON string>,"b":<batch>` (the
/// `"t"` member left out when there is no tag): the exact stored bytes of the batch and tag,
/// and the numbers in decimal. An address's `crc` is that of
/// `{"def":<id>,"ns":<namespace as a JSON string>,"key":<key as a JSON string>`.
///
/// **Continuity.** Each record names its address's previous record (`prev`), and each address
/// its newest (`last`), updated in the same transaction as the insert. Every page read checks
/// the links of the records it returns and of their neighbours (one more record on each side,
/// or `last` at the newest end, `prev = 0` at the oldest), so a record that is missing, the
/// newest one included, is an error, as is a record whose checksum does not match:
/// [`Error::CorruptRecord`], naming the address and the seq. At open, every address row's
/// checksum is checked, ids must run 1, 2, ... up to the `addresses` count, and no record may
/// name an address that is not there ([`Error::CorruptDatabase`]). A database of another
/// format version is [`Error::Version`], and nothing is changed.
///
/// The database runs in WAL mode with `synchronous = FULL`, so a committed append is on disk.
/// SQLite drops a `-wal` frame that does not verify, and every frame after it, and then reads
/// as the consistent database it was before them: the acknowledged mark beside the database
/// (`<path>-ack`, see the [module documentation](crate::store#what-each-store-detects)) makes
/// that [`Error::RolledBack`] at open instead of an older state.
/// Under [`Durability::EveryAppend`] each append is its own transaction; under
/// [`Durability::Grouped`] appends share a transaction that commits by the stated bound.
/// The connection holds SQLite's exclusive lock for its whole life: a second writer gets
/// [`Error::Locked`]. Seqs are reserved in leases as in [`JsonlStore`](super::JsonlStore), so
/// a restart never reuses one; they end at `i64::MAX` ([`Error::SeqsExhausted`]).
///
/// # Examples
///
/// ```
/// use chord::store::{recover, Address, Durability, SqliteStore, Store, BASE};
/// let dir = tempfile::tempdir()?;
/// let mut db = SqliteStore::open(dir.path().join("log.db"), Durability::EveryAppend)?;
/// let a = Address::new("lanes", "main");
/// db.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// db.append(&a, r#"[["s",["n"],2]]"#, None)?;
/// assert_eq!(recover(&db, &a)?, Some(serde_json::json!({"n": 2})));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Conn>>,
    durability: Durability,
    syncer: Syncer,
    /// Opened by [`SqliteStore::open_read_only`]: appends and compactions are refused.
    read_only: bool,
}

/// What a SQLite database file holds, as [`SqliteStore::contents`] finds it without changing
/// it: whether serving it would read a chord store, start one, or mix chord's tables into
/// another application's database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqliteContents {
    /// No table at all: a file of 0 bytes, or a database whose tables were all dropped. A
    /// database of several pages without a table may also be one whose schema is damaged
    /// (a flipped bit in its first page hides every table), which is why
    /// [`SqliteStore::open`] refuses one and only [`SqliteStore::create`] starts a store in it.
    Empty {
        /// Its size in pages (0 for an empty file).
        pages: u64,
    },
    /// chord's tables (a store, whatever else it holds).
    Chord,
    /// Tables of another application, and none of chord's.
    Other {
        /// Their names, in alphabetical order.
        tables: Vec<String>,
    },
}

struct Conn {
    conn: Connection,
    /// A grouped transaction is open.
    in_tx: bool,
    ids: HashMap<Address, AddressRow>,
    /// How many addresses the database has (the largest id).
    address_count: i64,
    last_seq: u64,
    /// Every seq handed out so far is at most this.
    lease_end: u64,
    /// The seq the next append gets: past every stored seq and every lease. `None` once
    /// [`MAX_SEQ`] was handed out or reserved.
    next_seq: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct AddressRow {
    id: i64,
    /// The seq of its newest record; 0 for none.
    last: u64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

const SCHEMA: &str = "
CREATE TABLE chord_meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE chord_addresses (
    id        INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    last      INTEGER NOT NULL,
    crc       INTEGER NOT NULL,
    UNIQUE (namespace, key)
);
CREATE TABLE chord_records (
    address INTEGER NOT NULL REFERENCES chord_addresses (id),
    seq     INTEGER NOT NULL,
    prev    INTEGER NOT NULL,
    tag     TEXT,
    batch   TEXT NOT NULL,
    crc     INTEGER NOT NULL,
    PRIMARY KEY (address, seq)
) WITHOUT ROWID;
INSERT INTO chord_meta (name, value) VALUES ('format', 2), ('lease_end', 0), ('addresses', 0);
";

impl SqliteStore {
    /// Opens (or creates) a database for writing, with the given durability, and takes its
    /// exclusive lock.
    ///
    /// # Errors
    ///
    /// [`Error::NotAFile`] when the path is a FIFO, device or directory; [`Error::Locked`]
    /// when another connection holds the database; [`Error::Version`] for a database of
    /// another format version; [`Error::CorruptDatabase`] when its address table or
    /// metadata does not check out; [`Error::RolledBack`] when the database ends before the
    /// seq its acknowledged mark holds, [`Error::CorruptMark`] when the mark does not read as
    /// one ([`Error::Io`] when it cannot be read or written); [`Error::Sqlite`] when it cannot
    /// be opened or is not a chord database.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<SqliteStore> {
        SqliteStore::open_for_writes(path.as_ref(), durability, Empty::Refuse)
    }

    /// As [`open`](SqliteStore::open), and starts a store in a database without any table
    /// even when it has pages, which `open` refuses as possibly damaged: for a caller that
    /// knows the database is empty (a person who created it, and said so).
    ///
    /// # Errors
    ///
    /// As [`open`](SqliteStore::open).
    ///
    /// # Examples
    ///
    /// ```
    /// use chord::store::{Durability, SqliteContents, SqliteStore};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("log.db");
    /// std::fs::File::create(&path)?;
    /// assert_eq!(SqliteStore::contents(&path)?, SqliteContents::Empty { pages: 0 });
    /// drop(SqliteStore::create(&path, Durability::EveryAppend)?);
    /// assert_eq!(SqliteStore::contents(&path)?, SqliteContents::Chord);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(path: impl AsRef<Path>, durability: Durability) -> Result<SqliteStore> {
        SqliteStore::open_for_writes(path.as_ref(), durability, Empty::Create)
    }

    fn open_for_writes(path: &Path, durability: Durability, empty: Empty) -> Result<SqliteStore> {
        let path = path.to_path_buf();
        regular_file(&path)?;
        let sql = |action| sql_error(&path, action);
        let conn = Connection::open(&path).map_err(sql("open"))?;
        conn.busy_timeout(Duration::ZERO).map_err(sql("open"))?;
        let locked = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                Error::Locked { path: path.clone() }
            }
            _ => sql("open")(e),
        };
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(locked)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(locked)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(locked)?;
        // Takes the exclusive lock now, and keeps it (locking_mode) until the connection closes.
        conn.execute_batch("BEGIN EXCLUSIVE").map_err(locked)?;
        let setup = prepare(&path, &conn, empty);
        let finish = match &setup {
            Ok(()) => conn.execute_batch("COMMIT"),
            Err(_) => conn.execute_batch("ROLLBACK"),
        };
        setup?;
        finish.map_err(sql("open"))?;
        let acknowledged = mark::read(&path)?;
        let state = load(&path, &conn)?;
        let found = Some(state.last_seq).filter(|&s| s > 0);
        mark::check(&path, acknowledged, found)?;
        let mark = Mark::open(&path, acknowledged, found)?;
        let conn = Arc::new(Mutex::new(Conn {
            conn,
            in_tx: false,
            ids: state.ids,
            address_count: state.address_count,
            last_seq: state.last_seq,
            lease_end: state.lease_end,
            next_seq: state
                .last_seq
                .max(state.lease_end)
                .checked_add(1)
                .filter(|&s| s <= MAX_SEQ),
        }));
        let flush_conn = Arc::clone(&conn);
        let flush_path = path.clone();
        let flush = Arc::new(move |target: u64| {
            let mut c = lock(&flush_conn);
            c.commit().map_err(sql_error(&flush_path, "commit"))?;
            Ok(target.max(c.last_seq))
        });
        Ok(SqliteStore {
            syncer: Syncer::new(durability, state.last_seq, flush, Some(mark)),
            path,
            conn,
            durability,
            read_only: false,
        })
    }

    /// Opens a store for reading only: nothing is created, and no statement that writes is
    /// run. The store sees the records present when it was opened (it holds one read
    /// transaction for its life). While a writer has the database open (it holds SQLite's
    /// exclusive lock for its life), it cannot be read: [`Error::LockedByWriter`]; and while
    /// the reader is open, it holds the lock in turn, so a writer opening then gets
    /// [`Error::Locked`]: a reader is for a look inside (the `chord` command), short-lived.
    ///
    /// # Errors
    ///
    /// [`Error::NotAFile`] when the path is a FIFO, device or directory; [`Error::Io`] when
    /// it cannot be opened (there is no file); [`Error::LockedByWriter`];
    /// [`Error::CorruptDatabase`] when it holds no chord store (see
    /// [`contents`](SqliteStore::contents)) or its address table or metadata does not check
    /// out; [`Error::Version`], [`Error::RolledBack`], [`Error::CorruptMark`] as
    /// [`open`](SqliteStore::open); [`Error::Sqlite`] when it is not a SQLite database.
    ///
    /// # Examples
    ///
    /// ```
    /// use chord::store::{recover, Address, Durability, Error, SqliteStore, Store, BASE};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("log.db");
    /// let a = Address::new("lanes", "main");
    /// let mut db = SqliteStore::open(&path, Durability::EveryAppend)?;
    /// db.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
    /// drop(db);
    /// let mut reader = SqliteStore::open_read_only(&path)?;
    /// assert_eq!(recover(&reader, &a)?, Some(serde_json::json!({"n": 1})));
    /// let refused = reader.append(&a, r#"[["s",["n"],2]]"#, None).unwrap_err();
    /// assert!(matches!(refused, Error::ReadOnly { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref().to_path_buf();
        let conn = read_only(&path)?;
        // One snapshot for the store's life: the address rows read here and the records
        // read later agree, whatever a writer commits meanwhile.
        conn.execute_batch("BEGIN")
            .map_err(sql_error(&path, "open"))?;
        if chord_tables(&conn).map_err(busy_error(&path, "open"))? == 0 {
            return Err(Error::CorruptDatabase {
                path,
                reason: "no chord table: not a chord store".to_owned(),
            });
        }
        check_version(&path, &conn)?;
        let acknowledged = mark::read(&path)?;
        let state = load(&path, &conn)?;
        mark::check(&path, acknowledged, Some(state.last_seq).filter(|&s| s > 0))?;
        let durability = Durability::EveryAppend;
        let flush = Arc::new(|target: u64| Ok(target));
        Ok(SqliteStore {
            syncer: Syncer::new(durability, state.last_seq, flush, None),
            conn: Arc::new(Mutex::new(Conn {
                conn,
                in_tx: false,
                ids: state.ids,
                address_count: state.address_count,
                last_seq: state.last_seq,
                lease_end: state.lease_end,
                next_seq: None,
            })),
            path,
            durability,
            read_only: true,
        })
    }

    /// What the SQLite database at `path` holds, read without changing it: whether it is
    /// empty, a chord store, or another application's database.
    ///
    /// # Errors
    ///
    /// As [`open_read_only`](SqliteStore::open_read_only), but for what concerns chord's
    /// tables.
    pub fn contents(path: impl AsRef<Path>) -> Result<SqliteContents> {
        let path = path.as_ref();
        let conn = read_only(path)?;
        let busy = busy_error(path, "read the schema");
        if chord_tables(&conn).map_err(&busy)? > 0 {
            return Ok(SqliteContents::Chord);
        }
        let tables = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .and_then(|mut stmt| {
                stmt.query_map([], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(&busy)?;
        if !tables.is_empty() {
            return Ok(SqliteContents::Other { tables });
        }
        let pages: i64 = conn
            .query_row("SELECT page_count FROM pragma_page_count()", [], |row| {
                row.get(0)
            })
            .map_err(&busy)?;
        Ok(SqliteContents::Empty {
            pages: u64::try_from(pages).unwrap_or(0),
        })
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's durability.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Whether it was opened by [`open_read_only`](SqliteStore::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Refuses a change to a store opened read-only.
    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly {
                path: self.path.clone(),
            });
        }
        Ok(())
    }
}

/// What [`prepare`] does with a database that has pages but no table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Empty {
    /// Refuse it: its schema may be damaged.
    Refuse,
    /// Start a store in it: the caller knows it is empty.
    Create,
}

/// Opens `path` read-only, for [`SqliteStore::open_read_only`] and
/// [`SqliteStore::contents`]: a missing file is the operating system's error, not a
/// database SQLite would create.
fn read_only(path: &Path) -> Result<Connection> {
    if !regular_file(path)? {
        let source = std::fs::metadata(path)
            .err()
            .unwrap_or_else(|| std::io::ErrorKind::NotFound.into());
        return Err(Error::Io {
            path: path.to_path_buf(),
            action: "open",
            source,
        });
    }
    // Opened for writing (not created) but refusing every statement that writes
    // (`query_only`): SQLite's read-only mode would leave a `-shm` and a `-wal` beside a WAL
    // database, which it cannot remove, and its locks need a descriptor open for writing.
    // In `EXCLUSIVE` locking mode, set before the first read, a WAL database is read
    // without the shared-memory index, and the last connection's close removes its `-wal`
    // as a writer's does. The lock is held until the connection closes, as a writer's is: a
    // reader is short-lived.
    // A file this process may only read is opened read-only after all (SQLite's own mode).
    let sql = |action| sql_error(path, action);
    let conn = match Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(conn) => {
            conn.pragma_update(None, "query_only", true)
                .map_err(sql("open"))?;
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
                .map_err(sql("open"))?;
            conn
        }
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::CannotOpen) => {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql("open"))?
        }
        Err(e) => return Err(sql("open")(e)),
    };
    conn.busy_timeout(Duration::ZERO).map_err(sql("open"))?;
    Ok(conn)
}

/// As [`sql_error`], but a database a writer holds is [`Error::LockedByWriter`].
fn busy_error<'a>(path: &'a Path, action: &'static str) -> impl Fn(rusqlite::Error) -> Error + 'a {
    move |e| match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::LockedByWriter {
            path: path.to_path_buf(),
        },
        _ => sql_error(path, action)(e),
    }
}

/// How many of chord's three tables the database has.
fn chord_tables(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master
         WHERE type = 'table' AND name IN ('chord_meta', 'chord_addresses', 'chord_records')",
        [],
        |row| row.get(0),
    )
}

/// Creates the schema in a new database, or checks the format version of an existing one.
fn prepare(path: &Path, conn: &Connection, empty: Empty) -> Result<()> {
    let sql = |action| sql_error(path, action);
    let tables = chord_tables(conn).map_err(sql("open"))?;
    if tables == 0 {
        // A new database, or one holding only other applications' tables. A database with
        // pages but no table at all is not new: its schema is damaged (a flipped bit in the
        // first page can hide every table), and must not be silently started afresh.
        let (pages, entries): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT page_count FROM pragma_page_count()),
                        (SELECT count(*) FROM sqlite_master)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(sql("open"))?;
        if entries == 0 && pages > 1 && empty == Empty::Refuse {
            return Err(Error::CorruptDatabase {
                path: path.to_path_buf(),
                reason: format!(
                    "{pages} pages but no table: not a chord database, or its schema is \
                     damaged (if it is empty, create the store in it explicitly)"
                ),
            });
        }
        return conn.execute_batch(SCHEMA).map_err(sql("create the schema"));
    }
    check_version(path, conn)
}

/// Refuses a store of another format version than this code's.
fn check_version(path: &Path, conn: &Connection) -> Result<()> {
    let sql = |action| sql_error(path, action);
    // Version 1 had no `format` row.
    let format: Option<i64> = conn
        .query_row(
            "SELECT value FROM chord_meta WHERE name = 'format'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(sql("read the format version"))?;
    let found = format.map_or(1, |v| u64::try_from(v).unwrap_or(0));
    if found != VERSION {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found,
            supported: VERSION,
        });
    }
    Ok(())
}

/// What [`SqliteStore::open`] reads from a database.
struct Loaded {
    ids: HashMap<Address, AddressRow>,
    address_count: i64,
    last_seq: u64,
    lease_end: u64,
}

/// Reads and checks the metadata and the address table.
fn load(path: &Path, conn: &Connection) -> Result<Loaded> {
    let sql = |action| sql_error(path, action);
    let corrupt = |reason: String| Error::CorruptDatabase {
        path: path.to_path_buf(),
        reason,
    };
    let meta = |name: &str| -> Result<u64> {
        let value: Option<i64> = conn
            .query_row(
                "SELECT value FROM chord_meta WHERE name = ?1",
                [name],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql("open"))?;
        match value {
            Some(v) if v >= 0 => Ok(v as u64),
            Some(v) => Err(corrupt(format!("chord_meta.{name} is {v}"))),
            None => Err(corrupt(format!("chord_meta.{name} is missing"))),
        }
    };
    let lease_end = meta("lease_end")?;
    let address_count = meta("addresses")?;
    let mut ids = HashMap::new();
    let mut last_seq = 0;
    {
        let mut stmt = conn
            .prepare("SELECT id, namespace, key, last, crc FROM chord_addresses ORDER BY id")
            .map_err(sql("open"))?;
        let mut rows = stmt.query([]).map_err(sql("open"))?;
        let mut expected = 1;
        while let Some(row) = rows.next().map_err(sql("open"))? {
            let id: i64 = row.get(0).map_err(sql("open"))?;
            let namespace: String = row.get(1).map_err(sql("open"))?;
            let key: String = row.get(2).map_err(sql("open"))?;
            let last: i64 = row.get(3).map_err(sql("open"))?;
            let crc: i64 = row.get(4).map_err(sql("open"))?;
            let address = Address { namespace, key };
            if id != expected {
                return Err(corrupt(format!(
                    "address {address} has id {id}, expected {expected}: an address row is \
                     missing or out of place"
                )));
            }
            record::check_address(path, id, &address, crc)?;
            let last = u64::try_from(last)
                .map_err(|_| corrupt(format!("address {address}: newest record is {last}")))?;
            last_seq = last_seq.max(last);
            ids.insert(address, AddressRow { id, last });
            expected += 1;
        }
        if expected - 1 != address_count as i64 {
            return Err(corrupt(format!(
                "{} address rows, but chord_meta says {address_count}: an address row is \
                 missing",
                expected - 1
            )));
        }
    }
    // No record may belong to an address that is not there (a range seek on the key).
    let orphan: Option<i64> = conn
        .query_row(
            "SELECT address FROM chord_records WHERE address < 1 OR address > ?1 LIMIT 1",
            [address_count as i64],
            |row| row.get(0),
        )
        .optional()
        .map_err(sql("open"))?;
    if let Some(id) = orphan {
        return Err(corrupt(format!(
            "records of address id {id}, which is not defined"
        )));
    }
    // Also past a newest record whose link was lost: seqs are never reused.
    let stored: Option<i64> = conn
        .query_row(
            "SELECT max((SELECT max(seq) FROM chord_records r WHERE r.address = a.id))
             FROM chord_addresses a",
            [],
            |row| row.get(0),
        )
        .map_err(sql("open"))?;
    last_seq = last_seq.max(stored.map_or(0, |v| v.max(0) as u64));
    Ok(Loaded {
        ids,
        address_count: address_count as i64,
        last_seq,
        lease_end,
    })
}

fn lock(conn: &Mutex<Conn>) -> MutexGuard<'_, Conn> {
    conn.lock().unwrap_or_else(PoisonError::into_inner)
}

fn sql_error<'a>(path: &'a Path, action: &'static str) -> impl Fn(rusqlite::Error) -> Error + 'a {
    move |source| Error::Sqlite {
        path: path.to_path_buf(),
        action,
        source,
    }
}

impl Conn {
    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.in_tx {
            self.conn.execute_batch("COMMIT")?;
            self.in_tx = false;
        }
        Ok(())
    }

    /// Inserts the record (and the address, when new) and moves the address's `last` link.
    /// Returns the address's row as it is after the insert.
    fn insert(
        &mut self,
        address: &Address,
        seq: u64,
        batch: &str,
        tag: Option<&str>,
    ) -> rusqlite::Result<AddressRow> {
        let row = match self.ids.get(address) {
            Some(&row) => row,
            None => {
                let id = self.address_count + 1;
                let crc = address_crc(id, &address.namespace, &address.key);
                self.conn
                    .prepare_cached(
                        "INSERT INTO chord_addresses (id, namespace, key, last, crc)
                         VALUES (?1, ?2, ?3, 0, ?4)",
                    )?
                    .execute(params![id, address.namespace, address.key, crc])?;
                self.conn
                    .prepare_cached("UPDATE chord_meta SET value = ?1 WHERE name = 'addresses'")?
                    .execute([id])?;
                AddressRow { id, last: 0 }
            }
        };
        let crc = record_crc(seq, row.id, row.last, tag, batch);
        self.conn
            .prepare_cached(
                "INSERT INTO chord_records (address, seq, prev, tag, batch, crc)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                row.id,
                to_sql(seq),
                to_sql(row.last),
                tag,
                batch,
                crc
            ])?;
        self.conn
            .prepare_cached("UPDATE chord_addresses SET last = ?2 WHERE id = ?1")?
            .execute(params![row.id, to_sql(seq)])?;
        Ok(AddressRow {
            id: row.id,
            last: seq,
        })
    }

    /// Reads the rows of one page (one more than `limit`, to know whether more follow).
    fn rows(&self, id: i64, options: &ReadOptions) -> rusqlite::Result<Vec<Row>> {
        let (query, bound) = match (options.order, options.cursor) {
            (Order::Asc, Some(c)) if c >= MAX_SEQ => return Ok(Vec::new()),
            (Order::Asc, cursor) => (
                "SELECT seq, prev, tag, batch, crc FROM chord_records
                 WHERE address = ?1 AND seq > ?2 ORDER BY seq ASC LIMIT ?3",
                cursor.map_or(-1, |c| c as i64),
            ),
            (Order::Desc, Some(0)) => return Ok(Vec::new()),
            (Order::Desc, cursor) => (
                "SELECT seq, prev, tag, batch, crc FROM chord_records
                 WHERE address = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT ?3",
                cursor.map_or(i64::MAX, |c| to_sql(c - 1)),
            ),
        };
        let fetch = i64::try_from(options.limit).unwrap_or(i64::MAX - 1) + 1;
        let mut stmt = self.conn.prepare_cached(query)?;
        let rows = stmt.query_map(params![id, bound, fetch], |row| {
            Ok(Row {
                seq: row.get(0)?,
                prev: row.get(1)?,
                tag: row.get(2)?,
                batch: row.get(3)?,
                crc: row.get(4)?,
            })
        })?;
        rows.collect()
    }

    /// The record next to `seq` (included) on one side: `Asc`, the oldest at or after it;
    /// `Desc`, the newest at or before it. Its (seq, prev).
    fn neighbour(&self, id: i64, seq: i64, side: Order) -> rusqlite::Result<Option<(i64, i64)>> {
        let query = match side {
            Order::Asc => {
                "SELECT seq, prev FROM chord_records WHERE address = ?1 AND seq >= ?2
                 ORDER BY seq ASC LIMIT 1"
            }
            Order::Desc => {
                "SELECT seq, prev FROM chord_records WHERE address = ?1 AND seq <= ?2
                 ORDER BY seq DESC LIMIT 1"
            }
        };
        self.conn
            .prepare_cached(query)?
            .query_row(params![id, seq], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()
    }
}

impl SqliteStore {
    /// One page's rows (in `options.order`, one more than the page when more follow) with
    /// the neighbours the chain check needs: ascending, the record just before the first
    /// row; descending, (seq, prev) of the one just after the last.
    fn fetch(&self, c: &Conn, row: AddressRow, options: &ReadOptions) -> Result<Fetched> {
        let sql = |action| sql_error(&self.path, action);
        let mut fetched = Fetched {
            id: row.id,
            last: to_sql(row.last),
            rows: c.rows(row.id, options).map_err(sql("read"))?,
            older: None,
            newer: None,
        };
        match (options.order, options.cursor) {
            (Order::Asc, Some(cursor)) => {
                fetched.older = c
                    .neighbour(row.id, to_sql(cursor), Order::Desc)
                    .map_err(sql("read"))?
                    .map(|(seq, _)| seq);
            }
            // The oldest record at or past the cursor: the one after this page's newest.
            (Order::Desc, Some(cursor)) if cursor <= MAX_SEQ => {
                fetched.newer = c
                    .neighbour(row.id, cursor as i64, Order::Asc)
                    .map_err(sql("read"))?;
            }
            _ => {}
        }
        Ok(fetched)
    }
}

impl SqliteStore {
    /// The compaction's statements, inside its transaction.
    fn compact_rows(
        &self,
        c: &Conn,
        address: &Address,
        id: i64,
        keep_bases: usize,
    ) -> Result<Compacted> {
        let sql = |action| sql_error(&self.path, action);
        let offset = i64::try_from(keep_bases - 1).unwrap_or(i64::MAX);
        let oldest: Option<i64> = c
            .conn
            .query_row(
                "SELECT seq FROM chord_records
                 WHERE address = ?1 AND tag IN ('base', 'checkpoint')
                 ORDER BY seq DESC LIMIT 1 OFFSET ?2",
                params![id, offset],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("compact"))?;
        let Some(oldest) = oldest else {
            return Ok(Compacted::default());
        };
        let before: Option<i64> = c
            .conn
            .query_row(
                "SELECT max(seq) FROM chord_records WHERE address = ?1 AND seq < ?2",
                params![id, oldest],
                |r| r.get(0),
            )
            .map_err(sql("compact"))?;
        let removed = match before {
            None => 0,
            Some(before) => {
                let row = c
                    .conn
                    .query_row(
                        "SELECT prev, tag, batch, crc FROM chord_records
                         WHERE address = ?1 AND seq = ?2",
                        params![id, oldest],
                        |r| {
                            Ok(Row {
                                seq: oldest,
                                prev: r.get(0)?,
                                tag: r.get(1)?,
                                batch: r.get(2)?,
                                crc: r.get(3)?,
                            })
                        },
                    )
                    .map_err(sql("compact"))?;
                let crc = row.unlink(&self.path, address, id, before)?;
                let removed = c
                    .conn
                    .execute(
                        "DELETE FROM chord_records WHERE address = ?1 AND seq < ?2",
                        params![id, oldest],
                    )
                    .map_err(sql("compact"))?;
                c.conn
                    .execute(
                        "UPDATE chord_records SET prev = 0, crc = ?3 WHERE address = ?1 AND seq = ?2",
                        params![id, oldest, crc],
                    )
                    .map_err(sql("compact"))?;
                removed as u64
            }
        };
        Ok(Compacted {
            removed,
            oldest_kept: Some(oldest as u64),
        })
    }
}

impl Store for SqliteStore {
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        self.writable()?;
        let (batch, tag) = (batch.text(), batch.tag());
        self.syncer.check()?;
        let grouped = matches!(self.durability, Durability::Grouped { .. });
        let sql = |action| sql_error(&self.path, action);
        let mut c = lock(&self.conn);
        let seq = c.next_seq.ok_or_else(|| Error::SeqsExhausted {
            path: self.path.clone(),
            last: MAX_SEQ,
        })?;
        if grouped && seq > c.lease_end {
            // Reserve seqs durably before handing any out: commit what is pending, then the
            // lease, in its own synchronous transaction.
            c.commit().map_err(sql("commit"))?;
            let end = seq.saturating_add(LEASE - 1).min(MAX_SEQ);
            c.conn
                .execute(
                    "UPDATE chord_meta SET value = ?1 WHERE name = 'lease_end'",
                    params![to_sql(end)],
                )
                .map_err(sql("reserve seqs"))?;
            c.lease_end = end;
        }
        if !c.in_tx {
            c.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(sql("append"))?;
            c.in_tx = grouped;
        }
        let inserted = c.insert(address, seq, batch, tag);
        let inserted = match inserted {
            Ok(row) if !grouped => c.conn.execute_batch("COMMIT").map(|()| row),
            other => other,
        };
        let row = match inserted {
            Ok(row) => row,
            Err(e) if !grouped => {
                // Nothing of this append stays: its own transaction is rolled back.
                let _ = c.conn.execute_batch("ROLLBACK");
                return Err(sql("append")(e));
            }
            Err(e) => {
                drop(c);
                let reason = format!("an append inside a grouped transaction failed: {e}");
                self.syncer.poison(reason.clone());
                return Err(Error::Poisoned { reason });
            }
        };
        if !c.ids.contains_key(address) {
            c.address_count = row.id;
        }
        c.ids.insert(address.clone(), row);
        c.last_seq = seq;
        c.next_seq = seq.checked_add(1).filter(|&s| s <= MAX_SEQ);
        drop(c);
        self.syncer.appended(seq)?;
        Ok(seq)
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        let c = lock(&self.conn);
        let Some(&row) = c.ids.get(address) else {
            return Ok(Page::default());
        };
        self.fetch(&c, row, options)?
            .into_page(&self.path, address, options)
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        let sql = |action| sql_error(&self.path, action);
        let c = lock(&self.conn);
        // Names from the address rows checked at open (never from an index, which no
        // checksum covers); whether each has records, from the records themselves, checked
        // against its `last` link.
        let mut stmt = c
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM chord_records WHERE address = ?1)")
            .map_err(sql("list addresses"))?;
        let mut out = Vec::new();
        for (address, row) in &c.ids {
            let has_records: bool = stmt
                .query_row([row.id], |r| r.get(0))
                .map_err(sql("list addresses"))?;
            if has_records != (row.last > 0) {
                return Err(newest_mismatch(&self.path, address, row.last, has_records));
            }
            if has_records {
                out.push(address.clone());
            }
        }
        out.sort();
        Ok(out)
    }

    fn sync(&mut self) -> Result<Option<u64>> {
        self.syncer.sync()
    }

    /// Deletes the removed rows and unlinks the oldest kept record from them (its `prev`
    /// becomes 0, its checksum recomputed, as for an address's first record), in one
    /// synchronous transaction, after committing what waits. `O(removed rows)`, plus a scan
    /// of the address's newest records down to the oldest kept base. The file does not
    /// shrink: SQLite reuses the freed pages for later appends (`VACUUM` gives them back).
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        if keep_bases == 0 {
            return Err(Error::KeepsNoBase {
                address: address.clone(),
            });
        }
        self.writable()?;
        self.syncer.sync()?;
        let sql = |action| sql_error(&self.path, action);
        let mut c = lock(&self.conn);
        let Some(&row) = c.ids.get(address) else {
            return Ok(Compacted::default());
        };
        c.commit().map_err(sql("commit"))?;
        c.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(sql("compact"))?;
        let done = self.compact_rows(&c, address, row.id, keep_bases);
        let done = done.and_then(|done| {
            c.conn
                .execute_batch("COMMIT")
                .map(|()| done)
                .map_err(sql("compact"))
        });
        if done.is_err() {
            let _ = c.conn.execute_batch("ROLLBACK");
        }
        done
    }

    fn durable_seq(&self) -> Option<u64> {
        self.syncer.durable()
    }
}
