//! What the commands read: a JSONL log file, a SQLite database (with the `sqlite` feature),
//! or a PostgreSQL store named by its URL (`postgres://...` or `postgresql://...`, with
//! chord's `schema` parameter), all read-only.

use std::path::Path;

use chord::store::{Address, JsonlStore, PostgresStore, ReadOptions, Store, BASE};

use crate::failure::Failure;
#[cfg(not(feature = "sqlite"))]
use crate::location::LocationError;
use crate::location::{Kind, Location};
use crate::output::{self, Progress};

/// An open log.
pub(crate) enum Log {
    /// A JSONL file, indexed in memory when opened.
    Jsonl {
        /// The file as given.
        name: String,
        /// The store.
        store: Box<JsonlStore>,
    },
    /// A PostgreSQL store (no lock, nothing changed: reads only).
    Postgres(PostgresStore),
    /// A SQLite database (nothing changed; its lock is held while it is read).
    #[cfg(feature = "sqlite")]
    Sqlite(chord::store::SqliteStore),
}

impl Log {
    /// Opens a log read-only: a PostgreSQL URL, or a file (with a progress bar for a big
    /// one, and warnings about a torn tail). The library refuses what is not a regular file
    /// (a FIFO, `/dev/zero`, a directory) before reading it, and never holds a line longer
    /// than its maximum record size.
    /// The kind of a file is its contents', else its name's or `store`'s (`--store`).
    pub(crate) fn open(log: &Path, store: Option<Kind>) -> Result<Log, Failure> {
        match Location::of(log, store)? {
            Location::Postgres(url) => Ok(Log::Postgres(PostgresStore::open_read_only(url)?)),
            Location::File {
                path,
                kind: Some(Kind::Sqlite),
            } => Log::open_sqlite(path),
            Location::File { path, .. } => Log::open_jsonl(path),
        }
    }

    /// Opens a SQLite database read-only, refusing one that holds no chord store.
    #[cfg(feature = "sqlite")]
    fn open_sqlite(path: &Path) -> Result<Log, Failure> {
        crate::location::chord_sqlite(path)?;
        Ok(Log::Sqlite(chord::store::SqliteStore::open_read_only(
            path,
        )?))
    }

    /// A build without SQLite names the feature it lacks.
    #[cfg(not(feature = "sqlite"))]
    fn open_sqlite(path: &Path) -> Result<Log, Failure> {
        Err(LocationError::NoSqlite {
            path: path.to_path_buf(),
        }
        .into())
    }

    /// Opens a JSONL file read-only.
    fn open_jsonl(log: &Path) -> Result<Log, Failure> {
        let size = std::fs::metadata(log)
            .map_err(|e| format!("{}: {e}", log.display()))?
            .len();
        let progress = Progress::new(size, "reading", size > output::LONG_BYTES);
        let store = JsonlStore::open_read_only_with_progress(log, |done, _| progress.set(done))?;
        progress.done();
        if let Some(line) = store.unterminated_line() {
            eprintln!(
                "chord: warning: {}:{line}: the last line has no newline (or a damaged one); \
                 its checksum verifies, so its record counts (a writer restores the newline)",
                log.display()
            );
        }
        if let Some(torn) = store.torn_tail() {
            eprintln!(
                "chord: warning: {}:{}: ignoring an incomplete last line ({} bytes): a writer \
                 is appending, or died in the middle of a write",
                log.display(),
                torn.line,
                torn.len
            );
        }
        Ok(Log::Jsonl {
            name: log.display().to_string(),
            store: Box::new(store),
        })
    }

    /// The log as errors name it (a URL without its password).
    pub(crate) fn name(&self) -> &str {
        match self {
            Log::Jsonl { name, .. } => name,
            Log::Postgres(store) => store.database(),
            #[cfg(feature = "sqlite")]
            Log::Sqlite(store) => store.path().to_str().unwrap_or("the SQLite database"),
        }
    }

    /// The store, to read.
    pub(crate) fn store(&self) -> &dyn Store {
        match self {
            Log::Jsonl { store, .. } => &**store,
            Log::Postgres(store) => store,
            #[cfg(feature = "sqlite")]
            Log::Sqlite(store) => store,
        }
    }

    /// The JSONL store, for what only a file has (its size, a torn tail).
    pub(crate) fn jsonl(&self) -> Option<&JsonlStore> {
        match self {
            Log::Jsonl { store, .. } => Some(&**store),
            _ => None,
        }
    }

    /// How many records the log holds, when known without reading them (a JSONL index).
    pub(crate) fn len(&self) -> Option<usize> {
        self.jsonl().map(JsonlStore::len)
    }

    /// How many records `address` has: from the index of a file, by paging through a
    /// database (ids only are kept).
    pub(crate) fn count(&self, address: &Address) -> Result<usize, Failure> {
        if let Some(store) = self.jsonl() {
            return Ok(store.count(address));
        }
        let mut n = 0;
        let mut options = ReadOptions::asc().limit(1000);
        loop {
            let page = self.store().read_list(address, &options)?;
            n += page.records.len();
            match page.next_cursor {
                Some(cursor) => options.cursor = Some(cursor),
                None => return Ok(n),
            }
        }
    }

    /// How many records recovery of `address` replays: back to its last base record.
    pub(crate) fn replay_len(&self, address: &Address) -> Result<usize, Failure> {
        if let Some(store) = self.jsonl() {
            return Ok(store.replay_len(address, None));
        }
        let mut n = 0;
        let mut options = ReadOptions::desc().limit(1000).stop_at_tag(BASE);
        loop {
            let page = self.store().read_list(address, &options)?;
            n += page.records.len();
            let found = page
                .records
                .last()
                .is_some_and(|r| r.tag.as_deref() == Some(BASE));
            match page.next_cursor {
                Some(cursor) if !found => options.cursor = Some(cursor),
                _ => return Ok(n),
            }
        }
    }
}
