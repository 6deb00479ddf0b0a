//! The store backends a test suite runs against, each opened in a directory (the same
//! store again for the same directory). Include with `#[path = "support/backends.rs"]`
//! beside `mod pg` (`support/postgres.rs`, feature `postgres`).

#![allow(dead_code)] // each test binary uses part of it

use std::path::Path;
use std::time::Duration;

use chord::store::{Durability, JsonlStore, Store};

/// How to open one backend's store in a directory.
pub struct Backend {
    pub open: fn(&Path, Durability) -> chord::store::Result<Box<dyn Store>>,
    /// Whether the backend can run here (a server to reach); a skip says why.
    pub available: fn() -> bool,
}

impl Backend {
    /// The store in `dir`, every append durable when it returns.
    pub fn open(&self, dir: &Path) -> Box<dyn Store> {
        self.open_with(dir, Durability::EveryAppend)
    }

    pub fn open_with(&self, dir: &Path, durability: Durability) -> Box<dyn Store> {
        (self.open)(dir, durability).expect("open the store")
    }
}

pub const JSONL: Backend = Backend {
    available: || true,
    open: |dir, durability| {
        Ok(Box::new(JsonlStore::open(
            dir.join("log.jsonl"),
            durability,
        )?))
    },
};

#[cfg(feature = "sqlite")]
pub const SQLITE: Backend = Backend {
    available: || true,
    open: |dir, durability| {
        Ok(Box::new(chord::store::SqliteStore::open(
            dir.join("log.db"),
            durability,
        )?))
    },
};

/// A directory's store is the schema named after it, on the test server.
#[cfg(feature = "postgres")]
pub const POSTGRES: Backend = Backend {
    available: crate::pg::available,
    open: |dir, durability| {
        let name = dir.file_name().unwrap().to_string_lossy();
        let schema = format!("chord_test_store_{}", name.trim_start_matches('.'));
        crate::pg::create_schema(&schema);
        Ok(Box::new(
            chord::store::PostgresStore::builder(&crate::pg::url().unwrap())?
                .schema(&schema)
                .open(durability)?,
        ))
    },
};

/// Every backend that can run here, with its name, for a test that loops over them.
pub fn available() -> Vec<(&'static str, &'static Backend)> {
    #[allow(unused_mut)]
    let mut all = vec![("jsonl", &JSONL)];
    #[cfg(feature = "sqlite")]
    all.push(("sqlite", &SQLITE));
    #[cfg(feature = "postgres")]
    if (POSTGRES.available)() {
        all.push(("postgres", &POSTGRES));
    }
    all
}

/// Grouped with a bound no test waits for: flushes happen on `sync`, compaction, drop, or a
/// full group.
pub const LAZY: Durability = Durability::Grouped {
    max_batches: 1_000_000,
    max_delay: Duration::from_secs(3600),
};
