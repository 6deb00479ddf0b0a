//! [`Log`]: a store shared by its writer and the stream server, with a tail cache per address.

mod cache;
mod follower;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use self::cache::{catch_up, Index};
use super::tail::{Bounds, Tail, Usage};
use super::{Compaction, Retention};
use crate::store::{
    is_base_tag, Address, CheckedBatch, Compacted, LiveSource, Page, ReadOptions, Record, Result,
    Store,
};

/// The default [`LogBuilder::tail_records`].
pub(crate) const DEFAULT_TAIL_RECORDS: usize = 1024;

/// The default [`LogBuilder::tail_bytes`].
pub(crate) const DEFAULT_TAIL_BYTES: usize = 8 << 20;

/// The default [`LogBuilder::tail_cache_bytes`]: eight addresses' full tail caches.
pub(crate) const DEFAULT_TAIL_CACHE_BYTES: usize = 64 << 20;

/// The default [`LogBuilder::keep_for`]: the default cache policy's `max-age` (60 s) and
/// `stale-while-revalidate` (300 s) together, so that no answer a cache may give under it
/// points at an offset the log no longer serves.
pub const DEFAULT_KEEP_FOR: Duration = Duration::from_secs(360);

/// The default [`LogBuilder::follow_idle`].
pub(crate) const DEFAULT_FOLLOW_IDLE: Duration = Duration::from_secs(30);

/// A [`Store`] shared by one writer and any number of readers: what the stream server
/// ([`Streams`](crate::streams::Streams)) serves.
///
/// Write through it as through any store (`LogWriter::new(log.clone(), ..)`, [`Durable`]); every
/// append also lands in its address's *tail cache*, the newest records, each held once with
/// its SSE events already framed, so that every reader at the tail is sent the same bytes.
/// Readers further behind read the store. Cloning a `Log` gives another handle to the same
/// store and caches.
///
/// Cost: an append takes the store's lock (as the store's own append would need `&mut`),
/// then pushes one shared entry to the address's cache and wakes its readers. Memory per
/// address read: at most [`tail_records`](LogBuilder::tail_records) records and
/// [`tail_bytes`](LogBuilder::tail_bytes) bytes. Memory of all the caches together: at most
/// [`tail_cache_bytes`](LogBuilder::tail_cache_bytes), as [`cached_bytes`](Log::cached_bytes)
/// counts it; past it the least recently read addresses' caches go first. An append of a base record may also compact its
/// address to the retention, as the [`Compaction`] policy says ([`LogBuilder::compaction`]): for
/// a `JsonlStore`, a rewrite of the file while the store's lock is held.
///
/// # A store shared by several nodes
///
/// Over a store other processes write to ([`Store::live_source`] is `Some`: `PostgresStore`),
/// the producer of an address may be another node. The cache of an address is then fed by
/// whoever can see its records:
///
/// - **By a follower**, one thread per address, started by the first live read (`live=sse`
///   or `live=long-poll`), which reads the records the store commits
///   ([`LiveSource::follow`]: for PostgreSQL, `LISTEN`/`NOTIFY`, no polling), whoever wrote
///   them, and adds each to the cache in seq order. It stops once the address has had no
///   live reader for [`follow_idle`](LogBuilder::follow_idle).
/// - **By this log's appends**, as above, for an address it writes (from its first
///   successful append, until an append to it fails): its readers get a record as soon as
///   it is stored, before the follower reads it back. At the first append the cache is
///   brought up to date from the store, since another node may have written since it was
///   last fed.
///
/// A read while no follower runs loads the cache afresh from the store (or, for an address
/// this log writes, reads what the store holds past it: another node may have taken the
/// address over without this log's knowing); a read from an offset the cache has not reached
/// yet (a reader that moved from a node further ahead) first reads the store up to it.
///
/// Offsets are the store's seqs, so a reader can move between nodes. A record already in the
/// cache is never added again, whoever brings it, and each record added follows the one
/// before it in the store's log: no gap, no duplicate.
///
/// Cost, per followed address and node: a thread, and one read of the store per wake-up
/// (a commit, or several committed together), on the producer's node too; nothing per
/// reader. A read of an address nobody follows (no live reader) reads the store.
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
    index: Mutex<Index>,
    bounds: Bounds,
    /// What every tail cache holds, together.
    usage: Arc<Usage>,
    /// The most `usage` may reach (see [`LogBuilder::tail_cache_bytes`]).
    cache_bytes: usize,
    /// The store's live source: `Some` for a store other processes write to.
    live: Option<Arc<dyn LiveSource>>,
    /// When the log was built: the base records already in its store are of unknown age,
    /// and count as appended then.
    started: Instant,
    follow_idle: Duration,
    compaction: Compaction,
    /// This log, for the followers it starts (which must not keep it alive).
    me: Weak<Shared<S>>,
}

/// What a read wants of [`Shared::tail`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Want {
    /// A live read (`live=sse` or `live=long-poll`): keep the cache fed.
    pub(crate) live: bool,
    /// The offset the read starts after, when it names one.
    pub(crate) after: Option<u64>,
}

/// Configures a [`Log`]: its retention and the size of its tail caches.
///
/// ```
/// use chord::streams::{LogBuilder, Retention};
/// # let dir = tempfile::tempdir()?;
/// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
/// let log = LogBuilder::new().retention(Retention::Bases(8)).tail_records(256).build(store);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct LogBuilder {
    bounds: Bounds,
    cache_bytes: usize,
    follow_idle: Duration,
    compaction: Compaction,
}

impl Default for LogBuilder {
    /// The defaults: [`Retention::default`], 1,024 records and 8 MiB in each address's tail
    /// cache, 64 MiB in all the tail caches together, followers idle for 30 s before they
    /// stop, [`Compaction::default`].
    fn default() -> Self {
        LogBuilder {
            bounds: Bounds {
                records: DEFAULT_TAIL_RECORDS,
                bytes: DEFAULT_TAIL_BYTES,
                bases: Retention::default().bases(),
                keep_for: DEFAULT_KEEP_FOR,
            },
            cache_bytes: DEFAULT_TAIL_CACHE_BYTES,
            follow_idle: DEFAULT_FOLLOW_IDLE,
            compaction: Compaction::default(),
        }
    }
}

impl LogBuilder {
    /// The defaults (see [`LogBuilder::default`]).
    pub fn new() -> LogBuilder {
        LogBuilder::default()
    }

    /// What readers may still read ([`Retention::default`] when not set).
    pub fn retention(mut self, retention: Retention) -> LogBuilder {
        self.bounds.bases = retention.bases();
        self
    }

    /// The retention's time floor (default [`DEFAULT_KEEP_FOR`], 6 minutes): every record
    /// appended within it stays readable, however many base batches came since, on top of
    /// the [`Retention`]'s bases. A base batch goes only once the one after it is older than
    /// this, so an offset handed out within it (a `Stream-Next-Offset`, a cached answer's)
    /// is never answered `410 Gone` before it is that old.
    ///
    /// Keep it at least as long as the longest a cache may hold an answer of
    /// `offset=base` or `offset=-1` (their `max-age` or `s-maxage`, plus
    /// `stale-while-revalidate` or `stale-if-error`): [`Streams`](crate::streams::Streams)
    /// shortens those answers' `Cache-Control` to it. Zero keeps only the retention's bases.
    ///
    /// What it costs: the store keeps the records of the window (compaction removes only
    /// older ones; a log younger than the window compacts nothing, since the base records
    /// it found in its store are of unknown age), and a reader joining from the oldest
    /// answer a cache may give replays up to the whole window from the log.
    ///
    /// ```
    /// use chord::streams::{LogBuilder, Retention};
    /// use std::time::Duration;
    /// # let dir = tempfile::tempdir()?;
    /// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
    /// // Eight bases, and every record of the last ten minutes.
    /// let log = LogBuilder::new()
    ///     .retention(Retention::Bases(8))
    ///     .keep_for(Duration::from_secs(600))
    ///     .build(store);
    /// assert_eq!(log.keep_for(), Duration::from_secs(600));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keep_for(mut self, window: Duration) -> LogBuilder {
        self.bounds.keep_for = window;
        self
    }

    /// At most this many records in each address's tail cache (at least 1; default 1,024).
    pub fn tail_records(mut self, records: usize) -> LogBuilder {
        self.bounds.records = records.max(1);
        self
    }

    /// At most this many bytes of batches in each address's tail cache (default 8 MiB); the
    /// newest record is kept whatever its size.
    pub fn tail_bytes(mut self, bytes: usize) -> LogBuilder {
        self.bounds.bytes = bytes;
        self
    }

    /// At most this many bytes in all the tail caches together (default 64 MiB: eight
    /// addresses' full tail caches), as [`Log::cached_bytes`] counts them: each cache's
    /// records with their framed events, and a few hundred bytes per address loaded. Past it,
    /// the caches of the least recently read addresses are emptied first (an address nobody
    /// reads or follows now is forgotten, and loaded again from the store by its next read);
    /// only the newest record of the address just read or written is kept whatever its size.
    /// An address's cache never holds more than this either, whatever
    /// [`tail_bytes`](LogBuilder::tail_bytes) says.
    ///
    /// ```
    /// use chord::streams::LogBuilder;
    /// # let dir = tempfile::tempdir()?;
    /// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
    /// let log = LogBuilder::new().tail_cache_bytes(16 << 20).build(store);
    /// assert_eq!(log.cached_bytes(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tail_cache_bytes(mut self, bytes: usize) -> LogBuilder {
        self.cache_bytes = bytes;
        self
    }

    /// Over a store shared by several nodes: how long a follower of an address keeps
    /// running once no live reader waits on it (default 30 s); see
    /// [`Log`].
    pub fn follow_idle(mut self, idle: Duration) -> LogBuilder {
        self.follow_idle = idle;
        self
    }

    /// When the records the retention no longer serves are removed from the store
    /// ([`Compaction::default`] when not set).
    pub fn compaction(mut self, compaction: Compaction) -> LogBuilder {
        self.compaction = compaction;
        self
    }

    /// The log over `store`.
    pub fn build<S: Store>(self, store: S) -> Log<S> {
        let live = store.live_source();
        Log {
            shared: Arc::new_cyclic(|me| Shared {
                store: Mutex::new(store),
                index: Mutex::new(Index::default()),
                bounds: Bounds {
                    bytes: self.bounds.bytes.min(self.cache_bytes),
                    ..self.bounds
                },
                usage: Arc::default(),
                cache_bytes: self.cache_bytes,
                live,
                follow_idle: self.follow_idle,
                compaction: self.compaction,
                started: Instant::now(),
                me: me.clone(),
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
        LogBuilder::default().build(store)
    }

    /// Runs `f` with the store, locked (appends wait meanwhile).
    pub fn with_store<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut lock(&self.shared.store))
    }

    /// Compacts `address` to the log's retention now ([`Store::compact`]), whatever the
    /// [`Compaction`] policy.
    ///
    /// # Errors
    ///
    /// As [`Store::compact`].
    pub fn compact(&self, address: &Address) -> Result<Compacted> {
        let done = self.shared.compact(&mut lock(&self.shared.store), address);
        super::metrics::compacted(done.is_ok());
        done
    }

    /// How far behind its followers are, over a store other nodes write to: for each
    /// address a follower feeds (one per address with live readers), how long ago it last
    /// heard from the store, the longest of them; `None` when no follower runs (a store only
    /// this process writes, or no live reader). A follower hears at least every half second
    /// while the store answers, so a lag of seconds means the store is away (its
    /// connection cut, its server restarting): readers at the tail see nothing new meanwhile.
    pub fn follower_lag(&self) -> Option<Duration> {
        self.shared.follower_lag()
    }

    /// The bytes all the tail caches hold now, as they count them (see
    /// [`LogBuilder::tail_cache_bytes`]): the records with their framed events, and what each
    /// loaded address holds beside them.
    pub fn cached_bytes(&self) -> usize {
        self.shared.usage.bytes()
    }

    /// The retention's time floor ([`LogBuilder::keep_for`]).
    pub fn keep_for(&self) -> Duration {
        self.shared.bounds.keep_for
    }

    /// Why the last automatic compaction failed (see [`Compaction`]), when it did; cleared by
    /// the next one that succeeds.
    pub fn compaction_failure(&self) -> Option<String> {
        lock(&self.shared.index).compaction_failure.clone()
    }
}

/// The address the readiness probe reads: one nobody writes, so its read is the least a
/// store can do and still reach its data.
const PROBE_ADDRESS: (&str, &str) = ("chord.health", "probe");

impl<S: Store> Shared<S> {
    /// Reads the newest record of an address nobody writes, under the store's lock: whether
    /// the store answers (a PostgreSQL store reaches its server and schema).
    fn probe(&self) -> Result<()> {
        let address = Address::new(PROBE_ADDRESS.0, PROBE_ADDRESS.1);
        lock(&self.store)
            .read_list(&address, &ReadOptions::desc().limit(1))
            .map(drop)
    }
}

impl<S: Store> Shared<S> {
    fn append_checked(&self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        let _span = tracing::debug_span!("chord.store.append", stream = %address).entered();
        let started = Instant::now();
        let mut store = lock(&self.store);
        let appended = store.append_checked(address, batch);
        // Still under the store's lock: records reach the cache in the log's order.
        let mut index = lock(&self.index);
        let seq = match appended {
            Ok(seq) => seq,
            Err(e) => {
                // Perhaps no longer this log's address (another node may take it over).
                index.own.remove(address);
                super::metrics::append_failed();
                return Err(e);
            }
        };
        super::metrics::appended(batch.text().len(), started.elapsed());
        if self.live.is_some() && !index.own.contains(address) {
            // The first append here (or the first since one failed): another node may have
            // written since the cache was last fed, so it is brought up to date from the
            // store first (the record just appended included); one that cannot be is
            // dropped, and loaded afresh by the next read.
            let stale = index
                .tails
                .get(address)
                .is_some_and(|tail| catch_up(&*store, address, tail).is_err());
            if stale {
                index.tails.remove(address);
            }
            index.own.insert(address.clone());
        }
        let base = is_base_tag(batch.tag());
        if base {
            index.seen_base(address, self.bounds.keep_for);
        }
        if let Some(tail) = index.tails.to_back(address) {
            tail.push(seq, batch.tag(), batch.text());
            self.trim(&mut index, Some(address));
        }
        let due = base && self.compaction_due(&mut index, address);
        let keep = due
            .then(|| self.keep_bases(&index, address, Instant::now()))
            .flatten();
        if let Some(keep) = keep {
            // The tail's floor already moved past what goes (its readers get 410); the
            // cache readers need not wait for the store.
            drop(index);
            let done = store.compact(address, keep);
            super::metrics::compacted(done.is_ok());
            let mut index = lock(&self.index);
            match done {
                Ok(_) => {
                    index.bases_since.insert(address.clone(), 0);
                    index.compaction_failure = None;
                }
                Err(e) => index.compaction_failure = Some(format!("compacting {address}: {e}")),
            }
        }
        Ok(seq)
    }

    /// Counts a base record appended to `address`: whether the address is due for compaction.
    fn compaction_due(&self, index: &mut Index, address: &Address) -> bool {
        let Some(every) = self.compaction.every() else {
            return false;
        };
        let since = index
            .bases_since
            .entry(address.clone())
            .or_insert(every - 1);
        *since += 1;
        *since >= every
    }

    /// How many base records of `address` retention keeps now: the fewest it keeps, or more
    /// for the time floor (the bases appended within it, and the one before them, which the
    /// oldest offset handed out within it follows). `None` while the log is younger than the
    /// time floor: the bases in the store from before it started are of unknown age, so none
    /// may go yet.
    fn keep_bases(&self, index: &Index, address: &Address, now: Instant) -> Option<usize> {
        let window = self.bounds.keep_for;
        if now.saturating_duration_since(self.started) < window {
            return None;
        }
        let recent = index.bases_within(address, window, now);
        Some(self.bounds.bases.max(1).max(recent + 1))
    }

    /// Compacts `address` to the retention (nothing while the log is younger than its time
    /// floor).
    fn compact(&self, store: &mut S, address: &Address) -> Result<Compacted> {
        let keep = self.keep_bases(&lock(&self.index), address, Instant::now());
        match keep {
            Some(keep) => store.compact(address, keep),
            None => Ok(Compacted::default()),
        }
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

    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        lock(&self.shared.store).compact(address, keep_bases)
    }

    fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
        self.shared.live.clone()
    }
}

/// What the router needs of a log, whatever its store.
pub(crate) trait Source: Send + Sync {
    /// See [`Shared::tail`].
    fn tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>>;
    /// See [`Shared::read`].
    fn read(&self, address: &Address, after: u64, max_bytes: usize) -> Result<Option<Vec<Record>>>;
    /// Appends one batch from outside the process (the protocol's write side), checked.
    fn append(&self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64>;
    /// See [`Shared::probe`].
    fn probe(&self) -> Result<()>;
    /// See [`Log::follower_lag`].
    fn follower_lag(&self) -> Option<Duration>;
}

impl<S: Store + Send + 'static> Source for Shared<S> {
    fn tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>> {
        Shared::tail(self, address, want)
    }
    fn read(&self, address: &Address, after: u64, max_bytes: usize) -> Result<Option<Vec<Record>>> {
        Shared::read(self, address, after, max_bytes)
    }
    fn append(&self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        self.append_checked(address, batch)
    }
    fn probe(&self) -> Result<()> {
        Shared::probe(self)
    }
    fn follower_lag(&self) -> Option<Duration> {
        Shared::follower_lag(self)
    }
}

impl<S: Store + Send + 'static> Log<S> {
    pub(crate) fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.shared) as Arc<dyn Source>
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Condvar;

    use super::*;
    use crate::store::BASE;
    use crate::store::{Durability, Error, JsonlStore, LiveTail};

    // What the tests of `cache` and `follower` share with these.

    /// One JSONL log shared by the "nodes" of a test, standing in for a database: a handle
    /// appends as another node's writer would, and every live tail wakes on each append.
    #[derive(Clone)]
    pub(super) struct Db(pub(super) Arc<DbInner>);

    pub(super) struct DbInner {
        store: Mutex<JsonlStore>,
        wake: Condvar,
        /// While set, live tails deliver nothing (a follower that fell behind).
        pub(super) frozen: AtomicBool,
        _dir: tempfile::TempDir,
    }

    impl Db {
        pub(super) fn new() -> Db {
            let dir = tempfile::tempdir().unwrap();
            let store =
                JsonlStore::open(dir.path().join("db.jsonl"), Durability::EveryAppend).unwrap();
            Db(Arc::new(DbInner {
                store: Mutex::new(store),
                wake: Condvar::new(),
                frozen: AtomicBool::new(false),
                _dir: dir,
            }))
        }
    }

    impl Store for Db {
        fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
            let seq = lock(&self.0.store).append_checked(address, batch)?;
            self.0.wake.notify_all();
            Ok(seq)
        }
        fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
            lock(&self.0.store).read_list(address, options)
        }
        fn addresses(&self) -> Result<Vec<Address>> {
            lock(&self.0.store).addresses()
        }
        fn sync(&mut self) -> Result<Option<u64>> {
            lock(&self.0.store).sync()
        }
        fn durable_seq(&self) -> Option<u64> {
            lock(&self.0.store).durable_seq()
        }
        fn compact(&mut self, address: &Address, keep: usize) -> Result<Compacted> {
            lock(&self.0.store).compact(address, keep)
        }
        fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
            Some(Arc::new(self.clone()))
        }
    }

    impl LiveSource for Db {
        fn follow(&self, address: &Address, after: Option<u64>) -> Result<Box<dyn LiveTail>> {
            Ok(Box::new(DbTail {
                db: self.clone(),
                address: address.clone(),
                cursor: after,
            }))
        }
    }

    struct DbTail {
        db: Db,
        address: Address,
        cursor: Option<u64>,
    }

    impl LiveTail for DbTail {
        fn next(&mut self, timeout: Option<Duration>) -> Result<Vec<Record>> {
            let deadline = Instant::now() + timeout.unwrap_or(Duration::from_secs(3600));
            let mut store = lock(&self.db.0.store);
            loop {
                if !self.db.0.frozen.load(Ordering::Acquire) {
                    let options = ReadOptions::asc().cursor(self.cursor).limit(100);
                    let page = store.read_list(&self.address, &options)?;
                    if let Some(last) = page.records.last() {
                        self.cursor = Some(last.seq);
                        return Ok(page.records);
                    }
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(Vec::new());
                }
                store = self
                    .db
                    .0
                    .wake
                    .wait_timeout(store, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        fn cursor(&self) -> Option<u64> {
            self.cursor
        }
    }

    pub(super) fn set(n: u64) -> String {
        format!(r#"[["s",["n"],{n}]]"#)
    }

    pub(super) fn seqs(tail: &Tail, after: u64) -> Vec<u64> {
        match tail.read(after, 1 << 20) {
            super::super::tail::Found::Entries(e) => e.iter().map(|e| e.seq).collect(),
            other => panic!("{other:?}"),
        }
    }

    /// Waits until `done` holds (a follower works on its own thread); panics after a minute.
    pub(super) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "gave up waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub(super) const LIVE: Want = Want {
        live: true,
        after: None,
    };

    #[test]
    fn the_first_append_here_catches_the_cache_up_and_no_record_comes_twice() {
        let db = Db::new();
        let mut other = db.clone();
        let a = Address::new("lanes", "main");
        let s0 = other.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        let mut log = LogBuilder::new().build(db.clone());
        let tail = log.shared.tail(&a, LIVE).unwrap().unwrap();
        let _reader = tail.subscribe();
        // Another node writes while the follower is behind; then this log takes over.
        db.0.frozen.store(true, Ordering::Release);
        let s1 = other.append(&a, &set(1), None).unwrap();
        let s2 = other.append(&a, &set(2), None).unwrap();
        let s3 = log.append(&a, &set(3), None).unwrap();
        assert_eq!(seqs(&tail, s0), [s1, s2, s3], "caught up, then its own");
        // The follower reads the same records again, and its own: none is added twice.
        db.0.frozen.store(false, Ordering::Release);
        let s4 = log.append(&a, &set(4), None).unwrap();
        let s5 = other.append(&a, &set(5), None).unwrap(); // after losing the lane, say
        wait_for("the follower", || tail.position().last == s5);
        assert_eq!(seqs(&tail, s0), [s1, s2, s3, s4, s5]);
    }

    /// The seqs `store` holds for `a`.
    fn stored<S: Store>(store: &S, a: &Address) -> Vec<u64> {
        let page = store.read_list(a, &ReadOptions::asc().limit(1000)).unwrap();
        page.records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn the_log_compacts_at_the_first_base_then_every_nth() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let log = LogBuilder::new()
            .retention(Retention::Bases(1))
            .keep_for(Duration::ZERO)
            .compaction(Compaction::EveryBases(2))
            .build(store);
        let mut writer = log.clone();
        let a = Address::new("lanes", "main");
        let b = Address::new("lanes", "other");
        let base = |n: u64| format!(r#"[["r",{{"n":{n}}}]]"#);
        writer.append(&a, &base(0), Some(BASE)).unwrap(); // 1: the first: compacts (nothing)
        writer.append(&a, &set(1), None).unwrap(); // 2
        writer.append(&b, &base(0), Some(BASE)).unwrap(); // 3: b's first
        writer.append(&a, &base(2), Some(BASE)).unwrap(); // 4: 1 since: not yet
        writer.append(&a, &set(3), None).unwrap(); // 5
        assert_eq!(stored(&log, &a), [1, 2, 4, 5]);
        writer.append(&a, &base(4), Some(BASE)).unwrap(); // 6: 2 since: keeps 1 base
        assert_eq!(stored(&log, &a), [6]);
        assert_eq!(stored(&log, &b), [3], "another address is not compacted");
        writer.append(&a, &set(5), None).unwrap(); // 7
        writer.append(&a, &base(6), Some(BASE)).unwrap(); // 8
        assert_eq!(stored(&log, &a), [6, 7, 8]);
        assert_eq!(log.compaction_failure(), None);
        // By hand, whatever the policy.
        let done = log.compact(&a).unwrap();
        assert_eq!((done.removed, done.oldest_kept), (2, Some(8)));
        assert_eq!(stored(&log, &a), [8]);
    }

    #[test]
    fn compaction_keeps_every_base_the_time_floor_needs() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let window = Duration::from_secs(3600);
        let log = LogBuilder::new()
            .retention(Retention::Bases(1))
            .keep_for(window)
            .compaction(Compaction::EveryBases(1))
            .build(store);
        let mut writer = log.clone();
        let a = Address::new("lanes", "main");
        // The bases come after the log's start, by at least this much.
        let gap = Duration::from_millis(40);
        std::thread::sleep(gap);
        for n in 0..4 {
            writer
                .append(&a, &format!(r#"[["r",{{"n":{n}}}]]"#), Some(BASE))
                .unwrap();
        }
        // A log younger than its time floor compacts nothing: the bases before its start
        // are of unknown age.
        assert_eq!(stored(&log, &a), [1, 2, 3, 4]);
        assert_eq!(log.compact(&a).unwrap(), Compacted::default());
        assert_eq!(stored(&log, &a), [1, 2, 3, 4]);
        let keep = |now: Instant| {
            let index = lock(&log.shared.index);
            log.shared.keep_bases(&index, &a, now)
        };
        let started = log.shared.started;
        assert_eq!(keep(started + window / 2), None, "younger than the floor");
        // Older than the floor, with all four bases within it: all four, and the one before
        // them (none here) are kept, whatever the retention's one.
        assert_eq!(keep(started + window + gap / 2), Some(5));
        // Once they are all older than the floor, the retention's one (the newest).
        assert_eq!(keep(started + 2 * window), Some(1));
    }

    #[test]
    fn compaction_off_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let log = LogBuilder::new()
            .retention(Retention::Bases(1))
            .compaction(Compaction::Off)
            .build(store);
        let mut writer = log.clone();
        let a = Address::new("lanes", "main");
        for n in 0..5 {
            writer
                .append(&a, &format!(r#"[["r",{{"n":{n}}}]]"#), Some(BASE))
                .unwrap();
        }
        assert_eq!(stored(&log, &a), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_failed_compaction_fails_no_append_and_is_told() {
        let db = Db::new();
        let log = LogBuilder::new()
            .retention(Retention::Bases(1))
            .keep_for(Duration::ZERO)
            .compaction(Compaction::EveryBases(1))
            .build(Failing(db));
        let mut writer = log.clone();
        let a = Address::new("lanes", "main");
        writer.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        writer.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE)).unwrap();
        let failure = log.compaction_failure().expect("told");
        assert!(failure.contains("lanes/main"), "{failure}");
        assert_eq!(stored(&log, &a).len(), 2);
    }

    /// A store whose compaction always fails.
    struct Failing(Db);

    impl Store for Failing {
        fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
            self.0.append_checked(address, batch)
        }
        fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
            self.0.read_list(address, options)
        }
        fn addresses(&self) -> Result<Vec<Address>> {
            self.0.addresses()
        }
        fn sync(&mut self) -> Result<Option<u64>> {
            self.0.sync()
        }
        fn durable_seq(&self) -> Option<u64> {
            self.0.durable_seq()
        }
        fn compact(&mut self, address: &Address, _: usize) -> Result<Compacted> {
            Err(Error::KeepsNoBase {
                address: address.clone(),
            })
        }
    }
}
