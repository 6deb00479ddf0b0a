//! [`Log`]: a store shared by its writer and the stream server, with a tail cache per address.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::RandomState;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use hashlink::LinkedHashMap;

use super::tail::{Bounds, Tail, Usage, TAIL_OVERHEAD};
use super::{Compaction, Retention};
use crate::store::{
    Address, CheckedBatch, Compacted, Error, LiveSource, LiveTail, Page, ReadOptions, Record,
    Result, Store, BASE,
};

/// The default [`LogBuilder::tail_records`].
pub const DEFAULT_TAIL_RECORDS: usize = 1024;

/// The default [`LogBuilder::tail_bytes`].
pub const DEFAULT_TAIL_BYTES: usize = 8 << 20;

/// The default [`LogBuilder::tail_cache_bytes`]: eight addresses' full tail caches.
pub const DEFAULT_TAIL_CACHE_BYTES: usize = 64 << 20;

/// The default [`LogBuilder::follow_idle`].
pub const DEFAULT_FOLLOW_IDLE: Duration = Duration::from_secs(30);

/// How long a follower waits on the store before it looks whether it is still wanted.
const FOLLOW_POLL: Duration = Duration::from_millis(500);

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
    follow_idle: Duration,
    compaction: Compaction,
    /// This log, for the followers it starts (which must not keep it alive).
    me: Weak<Shared<S>>,
}

/// The tail caches and who feeds them. Locked after the store, never before.
#[derive(Default)]
struct Index {
    /// The loaded tails, the least recently used first: a read moves its address to the back,
    /// and [`Shared::trim`] evicts from the front. A map with its own order (rather than an
    /// LRU cache that evicts by count) since what goes is decided by bytes, and a tail still in
    /// use by a reader or a follower is emptied rather than dropped. Hashed as std's maps are
    /// (SipHash, keyed per map), since the addresses come from request paths.
    tails: LinkedHashMap<Address, Arc<Tail>, RandomState>,
    /// Addresses whose cache this log's appends feed (shared stores only).
    own: HashSet<Address>,
    /// The running followers (shared stores only).
    followers: HashMap<Address, Following>,
    /// Per address, the base records appended since its last compaction (see
    /// [`Compaction`]); none yet: due at the first.
    bases_since: HashMap<Address, usize>,
    /// Why the last automatic compaction failed, when it did.
    compaction_failure: Option<String>,
}

/// A running follower, as the log sees it.
struct Following {
    /// Tells this follower from a later one of the same address.
    id: u64,
    /// The last time a live reader asked for the address, or the follower saw one waiting.
    wanted: Instant,
    /// The last time the follower heard from the store (records, or a wait that ended with
    /// none); its start until it first does.
    heard: Instant,
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
    fn default() -> Self {
        LogBuilder {
            bounds: Bounds {
                records: DEFAULT_TAIL_RECORDS,
                bytes: DEFAULT_TAIL_BYTES,
                bases: Retention::default().bases(),
            },
            cache_bytes: DEFAULT_TAIL_CACHE_BYTES,
            follow_idle: DEFAULT_FOLLOW_IDLE,
            compaction: Compaction::default(),
        }
    }
}

impl LogBuilder {
    /// The defaults: [`Retention::default`], [`DEFAULT_TAIL_RECORDS`], [`DEFAULT_TAIL_BYTES`],
    /// [`DEFAULT_TAIL_CACHE_BYTES`].
    pub fn new() -> LogBuilder {
        LogBuilder::default()
    }

    /// What readers may still read ([`Retention::default`] when not set).
    pub fn retention(mut self, retention: Retention) -> LogBuilder {
        self.bounds.bases = retention.bases();
        self
    }

    /// At most this many records in each address's tail cache (at least 1; default
    /// [`DEFAULT_TAIL_RECORDS`]).
    pub fn tail_records(mut self, records: usize) -> LogBuilder {
        self.bounds.records = records.max(1);
        self
    }

    /// At most this many bytes of batches in each address's tail cache (default
    /// [`DEFAULT_TAIL_BYTES`]); the newest record is kept whatever its size.
    pub fn tail_bytes(mut self, bytes: usize) -> LogBuilder {
        self.bounds.bytes = bytes;
        self
    }

    /// At most this many bytes in all the tail caches together (default
    /// [`DEFAULT_TAIL_CACHE_BYTES`]), as [`Log::cached_bytes`] counts them: each cache's
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
    /// running once no live reader waits on it (default [`DEFAULT_FOLLOW_IDLE`]); see
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

    /// See [`Log::follower_lag`].
    fn follower_lag(&self) -> Option<Duration> {
        let index = lock(&self.index);
        index
            .followers
            .iter()
            .map(|(address, f)| {
                let lag = f.heard.elapsed();
                super::metrics::follower_lag(address, lag);
                lag
            })
            .max()
    }
}

impl<S> Shared<S> {
    /// Empties tail caches, the least recently used first, until all of them together hold
    /// at most the log's bound. `keep` (the address just read or written) goes last, and
    /// keeps its newest record. A tail only the index holds (no reader waiting, no follower,
    /// no read in progress: every other handle is cloned under the index's lock, which the
    /// caller holds) is forgotten; one still held is emptied, and its readers read the store.
    fn trim(&self, index: &mut Index, keep: Option<&Address>) {
        self.trim_to_bound(index, keep);
        super::metrics::tail_cache_bytes(self.usage.bytes());
    }

    fn trim_to_bound(&self, index: &mut Index, keep: Option<&Address>) {
        let Some(mut over) = self.usage.bytes().checked_sub(self.cache_bytes) else {
            return;
        };
        let mut forget = Vec::new();
        for (address, tail) in index.tails.iter() {
            if over == 0 {
                break;
            }
            if Some(address) == keep {
                continue;
            }
            let freed = if Arc::strong_count(tail) == 1 {
                forget.push(address.clone());
                tail.cost()
            } else {
                tail.free(usize::MAX, false)
            };
            over = over.saturating_sub(freed);
        }
        for address in &forget {
            index.tails.remove(address);
        }
        if let Some(tail) = keep.and_then(|a| index.tails.get(a)) {
            if over > 0 {
                tail.free(over, true);
            }
        }
    }
}

impl<S: Store + Send + 'static> Shared<S> {
    /// The tail of `address`, loaded from the store on first use; `None` when the address
    /// has no records. Reads the store when loading: call it off the async runtime's workers.
    ///
    /// Over a shared store (see [`Log`]), a tail that nobody feeds is loaded afresh, a live
    /// read starts (or keeps) the address's follower, and a read from an offset past the
    /// cache's last record reads the store up to it first.
    pub(crate) fn tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>> {
        if let Some(tail) = self.fed_tail(address, want) {
            return Ok(Some(tail));
        }
        let tail = self.load_tail(address, want);
        if let Ok(Some(_)) = &tail {
            self.trim(&mut lock(&self.index), Some(address));
        }
        tail
    }

    /// [`tail`](Shared::tail) when the cache cannot answer alone: loads, catches up, starts
    /// the follower.
    fn load_tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>> {
        // Appends wait while the tail loads, so none slips between the read and the insert.
        let store = lock(&self.store);
        let mut index = lock(&self.index);
        let shared = self.live.is_some();
        let own = index.own.contains(address);
        let mut following = index.followers.contains_key(address);
        let tail = match index.tails.to_back(address) {
            Some(tail) if !shared || following || own => Arc::clone(tail),
            _ => {
                // Not loaded yet, or nobody fed it since it was: read it afresh (a follower
                // of another tail, if any, stops at its next look).
                index.followers.remove(address);
                following = false;
                let newest = self.newest(&*store, address)?;
                if newest.is_empty() {
                    index.tails.remove(address);
                    return Ok(None);
                }
                let fixed = TAIL_OVERHEAD + address.namespace.len() + address.key.len();
                let usage = Arc::clone(&self.usage);
                let tail = Arc::new(Tail::load(self.bounds, usage, fixed, newest));
                index.tails.insert(address.clone(), Arc::clone(&tail));
                tail
            }
        };
        if !shared {
            return Ok(Some(tail));
        }
        let behind = want.after.is_some_and(|after| after > tail.position().last);
        if (own && !following) || behind {
            // Fed by this log's appends only (another node may have taken the address
            // over since), or a reader ahead of the follower (it read another node): read
            // what the store has past the cache first.
            catch_up(&*store, address, &tail)?;
        }
        if want.live {
            match index.followers.get_mut(address) {
                Some(following) => following.wanted = Instant::now(),
                None => {
                    let id = self.start_follower(address, &tail)?;
                    let wanted = Instant::now();
                    index.followers.insert(
                        address.clone(),
                        Following {
                            id,
                            wanted,
                            heard: wanted,
                        },
                    );
                }
            }
        }
        Ok(Some(tail))
    }

    /// The tail of `address` when it is loaded, fed, and has what `want` asks for: no store
    /// read needed, and no wait for an append in progress.
    fn fed_tail(&self, address: &Address, want: Want) -> Option<Arc<Tail>> {
        let mut index = lock(&self.index);
        let tail = Arc::clone(index.tails.to_back(address)?);
        if self.live.is_none() {
            return Some(tail);
        }
        let following = index.followers.get_mut(address)?;
        if want.after.is_some_and(|after| after > tail.position().last) {
            return None;
        }
        if want.live {
            following.wanted = Instant::now();
        }
        Some(tail)
    }

    /// Starts the thread that feeds `tail` from the store's live source. Its id.
    fn start_follower(&self, address: &Address, tail: &Arc<Tail>) -> Result<u64> {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        let Some(source) = self.live.clone() else {
            return Ok(id); // only called for shared stores
        };
        let follower = Follower {
            log: self.me.clone(),
            source,
            address: address.clone(),
            tail: Arc::clone(tail),
            id,
            idle: self.follow_idle,
        };
        std::thread::Builder::new()
            .name("chord-follow".into())
            .spawn(move || follower.run())
            .map_err(|source| Error::Io {
                path: address.to_string().into(),
                action: "start a follower thread",
                source,
            })?;
        Ok(id)
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
    /// one); blocking. `None` when `after` is gone: before the tail's floor (which may have
    /// moved, and the store been compacted, since the caller looked at the cache), or in a
    /// range compacted by other means (no record of the address at or before it is left,
    /// and it is not the floor itself, the seq just before the oldest kept base): the records
    /// past it would not follow it, so the reader gets `410`, never a gap.
    pub(crate) fn read(
        &self,
        address: &Address,
        after: u64,
        max_bytes: usize,
    ) -> Result<Option<Vec<Record>>> {
        let store = lock(&self.store);
        let floor = lock(&self.index)
            .tails
            .get(address)
            .map(|tail| tail.position().floor);
        if floor.is_some_and(|floor| after < floor) {
            return Ok(None);
        }
        if after > 0 && floor != Some(after) {
            let at_or_before = ReadOptions::desc().cursor(after.checked_add(1)).limit(1);
            if store.read_list(address, &at_or_before)?.records.is_empty() {
                return Ok(None);
            }
        }
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut cursor = Some(after);
        loop {
            let page = store.read_list(address, &ReadOptions::asc().cursor(cursor).limit(64))?;
            for record in page.records {
                if !out.is_empty() && bytes + record.batch.len() > max_bytes {
                    return Ok(Some(out));
                }
                bytes += record.batch.len();
                out.push(record);
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(Some(out)),
            }
        }
    }
}

fn cursor_of(out: &[(Record, u64)]) -> Option<u64> {
    out.last().map(|(r, _)| r.seq)
}

/// Reads the store into `tail` from past its last record to the store's newest.
fn catch_up<S: Store>(store: &S, address: &Address, tail: &Tail) -> Result<()> {
    let mut cursor = tail.position().last;
    loop {
        let options = ReadOptions::asc().cursor(Some(cursor)).limit(256);
        let page = store.read_list(address, &options)?;
        tail.extend(&page.records);
        match page.next_cursor {
            Some(next) => cursor = next,
            None => return Ok(()),
        }
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
        let base = batch.tag() == Some(BASE);
        if let Some(tail) = index.tails.to_back(address) {
            tail.push(seq, base, batch.text());
            self.trim(&mut index, Some(address));
        }
        let due = base && self.compaction_due(&mut index, address);
        if due {
            // The tail's floor already moved past what goes (its readers get 410); the
            // cache readers need not wait for the store.
            drop(index);
            let done = self.compact(&mut store, address);
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

    /// Compacts `address` to the retention.
    fn compact(&self, store: &mut S, address: &Address) -> Result<Compacted> {
        store.compact(address, self.bounds.bases)
    }
}

/// A thread feeding one address's tail cache from the store's live source, until the log is
/// dropped or the address has had no live reader for `idle`.
struct Follower<S> {
    log: Weak<Shared<S>>,
    source: Arc<dyn LiveSource>,
    address: Address,
    tail: Arc<Tail>,
    id: u64,
    idle: Duration,
}

impl<S> Follower<S> {
    fn run(self) {
        let mut live: Option<Box<dyn LiveTail>> = None;
        let mut backoff = Duration::from_millis(10);
        while self.wanted() {
            let read = match &mut live {
                Some(live) => live.next(Some(FOLLOW_POLL)),
                None => match self
                    .source
                    .follow(&self.address, Some(self.tail.position().last))
                {
                    Ok(started) => {
                        live = Some(started);
                        continue;
                    }
                    Err(e) => Err(e),
                },
            };
            match read {
                Ok(records) => {
                    backoff = Duration::from_millis(10);
                    self.tail.extend(&records);
                    if let Some(log) = self.log.upgrade() {
                        let mut index = lock(&log.index);
                        if let Some(following) = self.following(&mut index) {
                            following.heard = Instant::now();
                        }
                        super::metrics::follower_lag(&self.address, Duration::ZERO);
                        log.trim(&mut index, Some(&self.address));
                    }
                }
                Err(e) => {
                    // The store is away (a restart, a cut connection): the tail keeps its
                    // place and reads again.
                    tracing::debug!(
                        target: "chord::streams",
                        stream = %self.address,
                        error = %e,
                        "the follower's read failed"
                    );
                    if let Some(log) = self.log.upgrade() {
                        let mut index = lock(&log.index);
                        if let Some(following) = self.following(&mut index) {
                            super::metrics::follower_lag(&self.address, following.heard.elapsed());
                        }
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// This follower's entry in the log's list (`None` once a later one replaced it).
    fn following<'a>(&self, index: &'a mut Index) -> Option<&'a mut Following> {
        index
            .followers
            .get_mut(&self.address)
            .filter(|f| f.id == self.id)
    }

    /// Whether to go on; when not, the follower is taken off the log's list.
    fn wanted(&self) -> bool {
        let Some(log) = self.log.upgrade() else {
            return false;
        };
        let mut index = lock(&log.index);
        let Some(following) = index
            .followers
            .get_mut(&self.address)
            .filter(|f| f.id == self.id)
        else {
            return false;
        };
        if self.tail.readers() > 0 {
            following.wanted = Instant::now();
            return true;
        }
        if following.wanted.elapsed() < self.idle {
            return true;
        }
        index.followers.remove(&self.address);
        false
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
    /// Checks and appends one batch from outside the process (the protocol's write side).
    fn append(&self, address: &Address, batch: &str) -> Result<u64>;
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
    fn append(&self, address: &Address, batch: &str) -> Result<u64> {
        let checked = CheckedBatch::tagging_bases(address, batch)?;
        self.append_checked(address, checked)
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
    use std::sync::atomic::AtomicBool;
    use std::sync::Condvar;

    use super::*;
    use crate::store::{Durability, JsonlStore};

    /// One JSONL log shared by the "nodes" of a test, standing in for a database: a handle
    /// appends as another node's writer would, and every live tail wakes on each append.
    #[derive(Clone)]
    struct Db(Arc<DbInner>);

    struct DbInner {
        store: Mutex<JsonlStore>,
        wake: Condvar,
        /// While set, live tails deliver nothing (a follower that fell behind).
        frozen: AtomicBool,
        _dir: tempfile::TempDir,
    }

    impl Db {
        fn new() -> Db {
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

    fn set(n: u64) -> String {
        format!(r#"[["s",["n"],{n}]]"#)
    }

    fn seqs(tail: &Tail, after: u64) -> Vec<u64> {
        match tail.read(after, 1 << 20) {
            super::super::tail::Found::Entries(e) => e.iter().map(|e| e.seq).collect(),
            other => panic!("{other:?}"),
        }
    }

    /// Waits until `done` holds (a follower works on its own thread); panics after a minute.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "gave up waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    const LIVE: Want = Want {
        live: true,
        after: None,
    };

    #[test]
    fn a_follower_feeds_another_writers_records_and_stops_once_unwanted() {
        let db = Db::new();
        let mut other = db.clone(); // another node's writer
        let a = Address::new("lanes", "main");
        let s0 = other.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        let s1 = other.append(&a, &set(1), None).unwrap();
        let log = LogBuilder::new()
            .follow_idle(Duration::from_millis(20))
            .build(db.clone());
        let shared = &log.shared;
        let tail = shared.tail(&a, LIVE).unwrap().unwrap();
        let reader = tail.subscribe();
        assert!(lock(&shared.index).followers.contains_key(&a));
        let s2 = other.append(&a, &set(2), None).unwrap();
        wait_for("the follower", || tail.position().last == s2);
        assert_eq!(seqs(&tail, s0), [s1, s2]);
        // No reader left: the follower stops after its idle time.
        drop(reader);
        wait_for("the follower to stop", || {
            lock(&shared.index).followers.is_empty()
        });
        // Nobody feeds the cache now: a read loads it afresh.
        let s3 = other.append(&a, &set(3), None).unwrap();
        let fresh = shared.tail(&a, Want::default()).unwrap().unwrap();
        assert_eq!(fresh.position().last, s3);
        assert_eq!(seqs(&fresh, s0), [s1, s2, s3]);
    }

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

    #[test]
    fn a_reader_ahead_of_the_follower_is_caught_up_not_gone() {
        let db = Db::new();
        let mut other = db.clone();
        let a = Address::new("lanes", "main");
        other.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        let s1 = other.append(&a, &set(1), None).unwrap();
        let log = LogBuilder::new().build(db.clone());
        let tail = log.shared.tail(&a, LIVE).unwrap().unwrap();
        let _reader = tail.subscribe();
        db.0.frozen.store(true, Ordering::Release);
        let s2 = other.append(&a, &set(2), None).unwrap();
        let s3 = other.append(&a, &set(3), None).unwrap();
        assert_eq!(tail.position().last, s1, "the follower is behind");
        // A reader that saw s2 on another node.
        let want = Want {
            live: true,
            after: Some(s2),
        };
        let same = log.shared.tail(&a, want).unwrap().unwrap();
        assert!(Arc::ptr_eq(&same, &tail), "the fed cache, caught up");
        assert_eq!(seqs(&tail, s2), [s3]);
        // An offset nobody handed out is still beyond the tail.
        let beyond = Want {
            live: true,
            after: Some(s3 + 100),
        };
        let same = log.shared.tail(&a, beyond).unwrap().unwrap();
        assert!(matches!(
            same.read(s3 + 100, 1),
            super::super::tail::Found::Gone
        ));
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

    #[test]
    fn the_caches_together_stay_within_their_bound_least_recently_read_out_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path().join("l"), Durability::default()).unwrap();
        let bound = 64 << 10;
        let mut log = LogBuilder::new().tail_cache_bytes(bound).build(store);
        let addr = |i: usize| Address::new("many", format!("a{i}"));
        // 40 addresses of about 8 KiB each: five times the bound in all.
        let text = format!(r#"[["r",{{"s":"{}"}}]]"#, "x".repeat(1000));
        let change = format!(r#"[["s",["s"],"{}"]]"#, "y".repeat(1000));
        for i in 0..40 {
            log.append(&addr(i), &text, Some(BASE)).unwrap();
            for _ in 1..8 {
                log.append(&addr(i), &change, None).unwrap();
            }
        }
        assert_eq!(log.cached_bytes(), 0, "nothing is cached before a read");
        let held = log.shared.tail(&addr(0), Want::default()).unwrap().unwrap();
        assert_eq!(seqs(&held, 0).len(), 8, "all of a0 is cached");
        let mut most = 0;
        for i in 1..40 {
            log.shared.tail(&addr(i), Want::default()).unwrap().unwrap();
            most = most.max(log.cached_bytes());
            // a1 is read again each time: the most recently used but one.
            if i > 1 {
                log.shared.tail(&addr(1), Want::default()).unwrap().unwrap();
            }
        }
        assert!(most <= bound, "{most} > {bound}");
        assert!(most > bound / 2, "the caches were used: {most}");
        let index = lock(&log.shared.index);
        let a1 = index.tails.get(&addr(1)).expect("a1 was read last but one");
        assert_eq!(seqs(a1, 0).len(), 8, "a1 keeps all its records");
        assert!(index.tails.contains_key(&addr(39)), "the last one read");
        for i in 2..20 {
            assert!(!index.tails.contains_key(&addr(i)), "a{i} was forgotten");
        }
        // a0's tail is held (as a reader would hold it): emptied, not forgotten.
        assert!(Arc::ptr_eq(index.tails.get(&addr(0)).unwrap(), &held));
        assert!(matches!(
            held.read(0, 1 << 20),
            super::super::tail::Found::Miss
        ));
        drop(index);
        // What the index forgot is no longer counted; what the held tail holds beside its
        // entries goes when it is dropped.
        let before = log.cached_bytes();
        drop(held);
        assert!(log.cached_bytes() == before, "a0 is still in the index");
        lock(&log.shared.index).tails.clear();
        assert_eq!(log.cached_bytes(), 0, "every byte counted is given back");
    }
}
