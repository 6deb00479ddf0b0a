//! The SQLite backend (cargo feature `sqlite`; SQLite is bundled, nothing to install).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use super::group::Syncer;
use super::{check_batch, Address, Durability, Error, Order, Page, ReadOptions, Record, Result};
use super::{Store, LEASE};

/// A log in a SQLite database: one list table keyed by (address, seq), so every page is a
/// range scan of the primary-key index.
///
/// ```sql
/// CREATE TABLE chord_records (
///     address INTEGER NOT NULL,   -- chord_addresses.id (namespace, key interned)
///     seq     INTEGER NOT NULL,   -- global to the database, never reused
///     tag     TEXT,               -- 'base' for a base batch
///     batch   TEXT NOT NULL,      -- the encoded wire batch, as appended
///     PRIMARY KEY (address, seq)
/// ) WITHOUT ROWID;
/// ```
///
/// The database runs in WAL mode with `synchronous = FULL`, so a committed append is on disk.
/// Under [`Durability::EveryAppend`] each append is its own transaction; under
/// [`Durability::Grouped`] appends share a transaction that commits by the stated bound.
/// The connection holds SQLite's exclusive lock for its whole life: a second writer gets
/// [`Error::Locked`]. Seqs are reserved in leases as in [`JsonlStore`](super::JsonlStore), so
/// a restart never reuses one.
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
}

struct Conn {
    conn: Connection,
    /// A grouped transaction is open.
    in_tx: bool,
    ids: HashMap<Address, i64>,
    last_seq: u64,
    /// Every seq handed out so far is at most this.
    lease_end: u64,
    /// The seq the next append gets: past every stored seq and every lease.
    next_seq: u64,
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
CREATE TABLE IF NOT EXISTS chord_meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chord_addresses (
    id        INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    UNIQUE (namespace, key)
);
CREATE TABLE IF NOT EXISTS chord_records (
    address INTEGER NOT NULL REFERENCES chord_addresses (id),
    seq     INTEGER NOT NULL,
    tag     TEXT,
    batch   TEXT NOT NULL,
    PRIMARY KEY (address, seq)
) WITHOUT ROWID;
";

impl SqliteStore {
    /// Opens (or creates) a database for writing, with the given durability, and takes its
    /// exclusive lock.
    ///
    /// # Errors
    ///
    /// [`Error::Locked`] when another connection holds the database; [`Error::Sqlite`] when
    /// it cannot be opened or is not a chord database.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<SqliteStore> {
        let path = path.as_ref().to_path_buf();
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
        conn.execute_batch(&format!("BEGIN EXCLUSIVE; {SCHEMA} COMMIT;"))
            .map_err(locked)?;
        let lease_end: u64 = conn
            .query_row(
                "SELECT value FROM chord_meta WHERE name = 'lease_end'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map_err(sql("open"))?
            .map_or(0, |v| v as u64);
        let last_seq: u64 = conn
            .query_row(
                "SELECT max((SELECT max(seq) FROM chord_records r WHERE r.address = a.id))
                 FROM chord_addresses a",
                [],
                |row| row.get::<_, Option<i64>>(0),
            )
            .map_err(sql("open"))?
            .map_or(0, |v| v as u64);
        let mut ids = HashMap::new();
        {
            let mut stmt = conn
                .prepare("SELECT id, namespace, key FROM chord_addresses")
                .map_err(sql("open"))?;
            let rows = stmt
                .query_map([], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get(1)?, row.get(2)?))
                })
                .map_err(sql("open"))?;
            for row in rows {
                let (id, namespace, key) = row.map_err(sql("open"))?;
                ids.insert(Address { namespace, key }, id);
            }
        }
        let conn = Arc::new(Mutex::new(Conn {
            conn,
            in_tx: false,
            ids,
            last_seq,
            lease_end,
            next_seq: last_seq.max(lease_end) + 1,
        }));
        let flush_conn = Arc::clone(&conn);
        let flush_path = path.clone();
        let flush = Arc::new(move |target: u64| {
            let mut c = lock(&flush_conn);
            c.commit().map_err(sql_error(&flush_path, "commit"))?;
            Ok(target.max(c.last_seq))
        });
        Ok(SqliteStore {
            syncer: Syncer::new(durability, last_seq, flush),
            path,
            conn,
            durability,
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

fn to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl Conn {
    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.in_tx {
            self.conn.execute_batch("COMMIT")?;
            self.in_tx = false;
        }
        Ok(())
    }

    fn address_id(&mut self, address: &Address) -> rusqlite::Result<i64> {
        if let Some(&id) = self.ids.get(address) {
            return Ok(id);
        }
        self.conn
            .prepare_cached("INSERT INTO chord_addresses (namespace, key) VALUES (?1, ?2)")?
            .execute(params![address.namespace, address.key])?;
        let id = self.conn.last_insert_rowid();
        self.ids.insert(address.clone(), id);
        Ok(id)
    }

    fn insert(
        &mut self,
        address: &Address,
        seq: u64,
        batch: &str,
        tag: Option<&str>,
    ) -> rusqlite::Result<()> {
        let id = self.address_id(address)?;
        self.conn
            .prepare_cached(
                "INSERT INTO chord_records (address, seq, tag, batch) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![id, to_sql(seq), tag, batch])?;
        Ok(())
    }
}

impl Store for SqliteStore {
    fn append(&mut self, address: &Address, batch: &str, tag: Option<&str>) -> Result<u64> {
        self.syncer.check()?;
        check_batch(batch)?;
        let grouped = matches!(self.durability, Durability::Grouped { .. });
        let sql = |action| sql_error(&self.path, action);
        let mut c = lock(&self.conn);
        let seq = c.next_seq;
        if grouped && seq > c.lease_end {
            // Reserve seqs durably before handing any out: commit what is pending, then the
            // lease, in its own synchronous transaction.
            c.commit().map_err(sql("commit"))?;
            let end = seq + LEASE - 1;
            c.conn
                .execute(
                    "INSERT INTO chord_meta (name, value) VALUES ('lease_end', ?1)
                     ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    params![to_sql(end)],
                )
                .map_err(sql("reserve seqs"))?;
            c.lease_end = end;
        }
        if grouped && !c.in_tx {
            c.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(sql("append"))?;
            c.in_tx = true;
        }
        let inserted = c.insert(address, seq, batch, tag);
        if let Err(e) = inserted {
            if !c.in_tx {
                // A failed autocommit statement leaves nothing behind, but it may have
                // interned the address before failing.
                c.ids.remove(address);
                return Err(sql("append")(e));
            }
            drop(c);
            let reason = format!("an append inside a grouped transaction failed: {e}");
            self.syncer.poison(reason.clone());
            return Err(Error::Poisoned { reason });
        }
        c.last_seq = seq;
        c.next_seq = seq + 1;
        drop(c);
        self.syncer.appended(seq)?;
        Ok(seq)
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        let sql = |action| sql_error(&self.path, action);
        let c = lock(&self.conn);
        let Some(&id) = c.ids.get(address) else {
            return Ok(Page::default());
        };
        let query = match options.order {
            Order::Asc => {
                "SELECT seq, tag, batch FROM chord_records
                 WHERE address = ?1 AND seq > ?2 ORDER BY seq ASC LIMIT ?3"
            }
            Order::Desc => {
                "SELECT seq, tag, batch FROM chord_records
                 WHERE address = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
            }
        };
        let cursor = match (options.cursor, options.order) {
            (Some(c), _) => to_sql(c),
            (None, Order::Asc) => -1,
            (None, Order::Desc) => i64::MAX,
        };
        let mut stmt = c.conn.prepare_cached(query).map_err(sql("read"))?;
        // One row more than the page, to know whether another page follows.
        let fetch = i64::try_from(options.limit).unwrap_or(i64::MAX - 1) + 1;
        let mut rows = stmt
            .query(params![id, cursor, fetch])
            .map_err(sql("read"))?;
        let mut records = Vec::new();
        while records.len() < options.limit {
            let Some(row) = rows.next().map_err(sql("read"))? else {
                break;
            };
            let seq: i64 = row.get(0).map_err(sql("read"))?;
            let record = Record {
                seq: seq as u64,
                tag: row.get(1).map_err(sql("read"))?,
                batch: row.get(2).map_err(sql("read"))?,
            };
            let stop = record.tag.is_some() && record.tag == options.stop_at_tag;
            records.push(record);
            if stop {
                break;
            }
        }
        let more = rows.next().map_err(sql("read"))?.is_some();
        let next_cursor = if more {
            records.last().map(|r| r.seq)
        } else {
            None
        };
        Ok(Page {
            records,
            next_cursor,
        })
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        let sql = |action| sql_error(&self.path, action);
        let c = lock(&self.conn);
        let mut stmt = c
            .conn
            .prepare_cached(
                "SELECT namespace, key FROM chord_addresses a
                 WHERE EXISTS (SELECT 1 FROM chord_records r WHERE r.address = a.id)
                 ORDER BY namespace, key",
            )
            .map_err(sql("list addresses"))?;
        let rows = stmt
            .query_map([], |row| {
                Ok(Address {
                    namespace: row.get(0)?,
                    key: row.get(1)?,
                })
            })
            .map_err(sql("list addresses"))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql("list addresses"))
    }

    fn sync(&mut self) -> Result<Option<u64>> {
        self.syncer.sync()
    }

    fn durable_seq(&self) -> Option<u64> {
        self.syncer.durable()
    }
}
