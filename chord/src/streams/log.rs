//! [`Log`]: a store shared by its writer and the stream server, with a tail cache per address.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::tail::{Bounds, Tail};
use super::Retention;
use crate::store::{Address, CheckedBatch, Page, ReadOptions, Record, Result, Store, BASE};

/// The default [`Builder::tail_records`].
pub const DEFAULT_TAIL_RECORDS: usize = 1024;

/// The default [`Builder::tail_bytes`].
pub const DEFAULT_TAIL_BYTES: usize = 8 << 20;

/// A [`Store`] shared by one writer and any number of readers: what the stream server
/// ([`Streams`](super::Streams)) serves.
///
/// Write through it as through any store (`LogWriter::new(log.clone(), ..)`, [`Durable`]); every
/// append also lands in its address's *tail cache*, the newest records, each held once with
/// its SSE events already framed, so that every reader at the tail is sent the same bytes.
/// Readers further behind read the store. Cloning a `Log` gives another handle to the same
/// store and caches.
///
/// Cost: an append takes the store's lock (as the store's own append would need `&mut`),
/// then pushes one shared entry to the address's cache and wakes its readers. Memory per
/// address read: at most [`tail_records`](Builder::tail_records) records and
/// [`tail_bytes`](Builder::tail_bytes) bytes.
///
/// [`Durable`]: crate::store::Durable
///
/// ```
/// use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
/// use chord::streams::Log;
/// use chord::Op;
/// let dir = tempfile::tempdir()?;
/// let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?);
/// let mut writer = LogWriter::new(log.clone(), Checkpoint::EveryBatches(50));
/// writer.append(&Address::new("lanes", "main"), &[Op::Replace(serde_json::json!({"n": 1}))])?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Log<S> {
    shared: Arc<Shared<S>>,
}

impl<S> Clone for Log<S> {
    fn clone(&self) -> Self {
        Log {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S> fmt::Debug for Log<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Log")
            .field("bounds", &self.shared.bounds)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Shared<S> {
    store: Mutex<S>,
    tails: Mutex<HashMap<Address, Arc<Tail>>>,
    bounds: Bounds,
}

/// Configures a [`Log`]: its retention and the size of its tail caches.
///
/// ```
/// use chord::streams::{Builder, Retention};
/// # let dir = tempfile::tempdir()?;
/// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
/// let log = Builder::new().retention(Retention::Bases(8)).tail_records(256).build(store);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct Builder {
    bounds: Bounds,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            bounds: Bounds {
                records: DEFAULT_TAIL_RECORDS,
                bytes: DEFAULT_TAIL_BYTES,
                bases: Retention::default().bases(),
            },
        }
    }
}

impl Builder {
    /// The defaults: [`Retention::default`], [`DEFAULT_TAIL_RECORDS`], [`DEFAULT_TAIL_BYTES`].
    pub fn new() -> Builder {
        Builder::default()
    }

    /// What readers may still read ([`Retention::default`] when not set).
    pub fn retention(mut self, retention: Retention) -> Builder {
        self.bounds.bases = retention.bases();
        self
    }

    /// At most this many records in each address's tail cache (at least 1; default
    /// [`DEFAULT_TAIL_RECORDS`]).
    pub fn tail_records(mut self, records: usize) -> Builder {
        self.bounds.records = records.max(1);
        self
    }

    /// At most this many bytes of batches in each address's tail cache (default
    /// [`DEFAULT_TAIL_BYTES`]); the newest record is kept whatever its size.
    pub fn tail_bytes(mut self, bytes: usize) -> Builder {
        self.bounds.bytes = bytes;
        self
    }

    /// The log over `store`.
    pub fn build<S: Store>(self, store: S) -> Log<S> {
        Log {
            shared: Arc::new(Shared {
                store: Mutex::new(store),
                tails: Mutex::new(HashMap::new()),
                bounds: self.bounds,
            }),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S: Store> Log<S> {
    /// A log over `store` with the default retention and tail caches.
    pub fn new(store: S) -> Log<S> {
        Builder::default().build(store)
    }

    /// Runs `f` with the store, locked (appends wait meanwhile).
    pub fn with_store<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut lock(&self.shared.store))
    }
}

impl<S: Store> Shared<S> {
    /// The tail of `address`, loaded from the store on first use; `None` when the address
    /// has no records. Reads the store when loading: call it off the async runtime's workers.
    pub(crate) fn tail(&self, address: &Address) -> Result<Option<Arc<Tail>>> {
        if let Some(tail) = lock(&self.tails).get(address) {
            return Ok(Some(Arc::clone(tail)));
        }
        // Appends wait while the tail loads, so none slips between the read and the insert.
        let store = lock(&self.store);
        if let Some(tail) = lock(&self.tails).get(address) {
            return Ok(Some(Arc::clone(tail)));
        }
        let newest = self.newest(&*store, address)?;
        if newest.is_empty() {
            return Ok(None);
        }
        let tail = Arc::new(Tail::load(self.bounds, newest));
        lock(&self.tails).insert(address.clone(), Arc::clone(&tail));
        Ok(Some(tail))
    }

    /// The newest records of `address`, newest first, each with the seq before it: enough to
    /// fill the cache and to find the kept bases.
    fn newest(&self, store: &S, address: &Address) -> Result<Vec<(Record, u64)>> {
        let mut out: Vec<(Record, u64)> = Vec::new();
        let mut bases = 0;
        let mut kept = 0usize;
        let mut cursor = None;
        loop {
            let page = store.read_list(address, &ReadOptions::desc().cursor(cursor).limit(256))?;
            for mut record in page.records {
                if let Some(newer) = out.last_mut() {
                    newer.1 = record.seq;
                }
                let base = record.tag.as_deref() == Some(BASE);
                // Beyond what the cache can hold, only the seqs and tags are needed: memory
                // stays bounded however far back the kept bases are.
                kept += record.batch.len();
                let newest = out.is_empty(); // kept whatever its size, as the cache keeps it
                if !newest && (out.len() >= self.bounds.records || kept > self.bounds.bytes) {
                    record.batch = String::new();
                }
                out.push((record, 0));
                if base {
                    bases += 1;
                }
            }
            let enough = bases >= self.bounds.bases;
            match page.next_cursor {
                Some(next) if !enough => cursor = Some(next),
                Some(_) => {
                    // One record more: the seq before the oldest base read.
                    let page = store.read_list(
                        address,
                        &ReadOptions::desc().cursor(cursor_of(&out)).limit(1),
                    )?;
                    if let (Some(last), Some(before)) = (out.last_mut(), page.records.first()) {
                        last.1 = before.seq;
                    }
                    return Ok(out);
                }
                None => return Ok(out),
            }
        }
    }

    /// `after`'s records from the store, oldest first, at most `max_bytes` of them (at least
    /// one); blocking.
    pub(crate) fn read(
        &self,
        address: &Address,
        after: u64,
        max_bytes: usize,
    ) -> Result<Vec<Record>> {
        let store = lock(&self.store);
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut cursor = Some(after);
        loop {
            let page = store.read_list(address, &ReadOptions::asc().cursor(cursor).limit(64))?;
            for record in page.records {
                if !out.is_empty() && bytes + record.batch.len() > max_bytes {
                    return Ok(out);
                }
                bytes += record.batch.len();
                out.push(record);
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}

fn cursor_of(out: &[(Record, u64)]) -> Option<u64> {
    out.last().map(|(r, _)| r.seq)
}

impl<S: Store> Shared<S> {
    fn append_checked(&self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        let mut store = lock(&self.store);
        let seq = store.append_checked(address, batch)?;
        // Still under the store's lock: records reach the cache in the log's order.
        let tail = lock(&self.tails).get(address).cloned();
        if let Some(tail) = tail {
            tail.push(seq, batch.tag() == Some(BASE), batch.text());
        }
        Ok(seq)
    }
}

impl<S: Store> Store for Log<S> {
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        self.shared.append_checked(address, batch)
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        lock(&self.shared.store).read_list(address, options)
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        lock(&self.shared.store).addresses()
    }

    fn sync(&mut self) -> Result<Option<u64>> {
        lock(&self.shared.store).sync()
    }

    fn durable_seq(&self) -> Option<u64> {
        lock(&self.shared.store).durable_seq()
    }
}

/// What the router needs of a log, whatever its store.
pub(crate) trait Source: Send + Sync {
    /// See [`Shared::tail`].
    fn tail(&self, address: &Address) -> Result<Option<Arc<Tail>>>;
    /// See [`Shared::read`].
    fn read(&self, address: &Address, after: u64, max_bytes: usize) -> Result<Vec<Record>>;
    /// Checks and appends one batch from outside the process (the protocol's write side).
    fn append(&self, address: &Address, batch: &str) -> Result<u64>;
}

impl<S: Store + Send> Source for Shared<S> {
    fn tail(&self, address: &Address) -> Result<Option<Arc<Tail>>> {
        Shared::tail(self, address)
    }
    fn read(&self, address: &Address, after: u64, max_bytes: usize) -> Result<Vec<Record>> {
        Shared::read(self, address, after, max_bytes)
    }
    fn append(&self, address: &Address, batch: &str) -> Result<u64> {
        let tag = starts_with_replace(batch).then_some(BASE);
        let checked = CheckedBatch::new(address, batch, tag)?;
        self.append_checked(address, checked)
    }
}

impl<S: Store + Send + 'static> Log<S> {
    pub(crate) fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.shared) as Arc<dyn Source>
    }
}

/// Whether batch text's first op is `r` (a base batch); `false` for text that is no batch.
fn starts_with_replace(batch: &str) -> bool {
    let value: serde_json::Value = match serde_json::from_str(batch) {
        Ok(v) => v,
        Err(_) => return false,
    };
    value
        .get(0)
        .and_then(|op| op.get(0))
        .and_then(serde_json::Value::as_str)
        == Some("r")
}
