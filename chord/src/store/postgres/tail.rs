//! The cross-node live tail: `LISTEN`/`NOTIFY` wakes a reader when an address it follows has
//! new records, on any node, with no polling of the database in the steady state.
//!
//! Every write of a [`PostgresStore`](super::PostgresStore) notifies, inside its own
//! statement, so the notification is delivered when (and only if) the records commit: channel
//! [`channel`] of the schema, payload `<address key in hex> <newest seq>`. One listener thread
//! per store holds one connection that `LISTEN`s, and counts notifications per followed
//! address; a [`PostgresTail`] reads the database, and when it found nothing new, sleeps until the
//! count of its address moves (or the listener reconnected, after which every tail reads
//! again, since notifications sent while it was away are lost).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;

use super::target::{quote, Target};
use crate::store::{Address, Page, ReadOptions, Record, Result};

/// What a tail reads from: the store's shared reading side.
pub(crate) trait Source: Send + Sync {
    /// One checked page of the address's records.
    fn read_page(&self, address: &Address, options: &ReadOptions) -> Result<Page>;
    /// The address's notification key.
    fn key(&self, address: &Address) -> u64;
}

/// The channel a schema's writes notify on: short enough for PostgreSQL's 63-byte names
/// whatever the schema is called (two schemas sharing one only wake each other's tails).
pub(crate) fn channel(schema: &str) -> String {
    format!("chord_{:08x}", crc32c::crc32c(schema.as_bytes()))
}

/// The payload of one address's notification.
pub(crate) fn payload(key: u64, seq: u64) -> String {
    format!("{key:016x} {seq}")
}

/// What the listener thread and the tails share.
pub(crate) struct Listener {
    state: Mutex<State>,
    wake: Condvar,
    stop: AtomicBool,
}

#[derive(Default)]
struct State {
    /// Followed address keys: how many tails follow each, and how many notifications came.
    followed: HashMap<u64, (usize, u64)>,
    /// Moves each time the listener (re)connects: every tail reads again.
    epoch: u64,
    /// Why the listener is not connected now, while it tries again.
    down: Option<String>,
}

impl Listener {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connects, `LISTEN`s, and starts the thread that receives notifications. Returns once
    /// the server has confirmed the `LISTEN`, so a read that starts after it misses nothing.
    pub(crate) fn start(target: &Target) -> Result<Arc<Listener>> {
        let mut client = target.connect()?;
        let listen = format!("LISTEN {}", quote(&channel(&target.schema)));
        client
            .batch_execute(&listen)
            .map_err(target.error("listen"))?;
        let listener = Arc::new(Listener {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let shared = Arc::clone(&listener);
        let path = target.name.clone().into();
        let target = target.clone();
        std::thread::Builder::new()
            .name("chord-pg-listen".into())
            .spawn(move || shared.run(client, &target, &listen))
            .map_err(|source| crate::store::Error::Io {
                path,
                action: "start the listener thread",
                source,
            })?;
        Ok(listener)
    }

    /// Receives notifications until stopped; reconnects (and bumps the epoch) when the
    /// connection is lost.
    fn run(&self, mut client: postgres::Client, target: &Target, listen: &str) {
        let mut backoff = Duration::from_millis(10);
        loop {
            let failure = self.receive(&mut client, &mut backoff);
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.lock().down = Some(failure);
            // Reconnect, with a growing pause while the server is away.
            loop {
                if self.stop.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
                let Ok(mut fresh) = target.connect() else {
                    continue;
                };
                if fresh.batch_execute(listen).is_ok() {
                    client = fresh;
                    break;
                }
            }
            let mut state = self.lock();
            state.down = None;
            state.epoch += 1;
            drop(state);
            self.wake.notify_all();
        }
    }

    /// Receives notifications until the connection fails (or the listener is stopped), and
    /// says why it ended.
    fn receive(&self, client: &mut postgres::Client, backoff: &mut Duration) -> String {
        let mut notifications = client.notifications();
        let mut iter = notifications.blocking_iter();
        loop {
            match iter.next() {
                Ok(Some(n)) => {
                    if self.stop.load(Ordering::Acquire) {
                        return "stopped".to_owned();
                    }
                    self.notified(n.payload());
                    *backoff = Duration::from_millis(10);
                }
                Ok(None) => return "the connection closed".to_owned(),
                Err(e) => return e.to_string(),
            }
        }
    }

    fn notified(&self, payload: &str) {
        let Some(key) = payload
            .split(' ')
            .next()
            .and_then(|k| u64::from_str_radix(k, 16).ok())
        else {
            return; // a wake-up without an address (see `stop`)
        };
        let mut state = self.lock();
        if let Some((_, count)) = state.followed.get_mut(&key) {
            *count += 1;
            drop(state);
            self.wake.notify_all();
        }
    }

    /// Stops the thread at its next notification (the store sends one as it closes).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    fn follow(&self, key: u64) {
        self.lock().followed.entry(key).or_default().0 += 1;
    }

    fn unfollow(&self, key: u64) {
        let mut state = self.lock();
        if let Some(entry) = state.followed.get_mut(&key) {
            entry.0 -= 1;
            if entry.0 == 0 {
                state.followed.remove(&key);
            }
        }
    }

    /// Where the address's notifications stand: (epoch, count).
    fn mark(&self, key: u64) -> (u64, u64) {
        let state = self.lock();
        (state.epoch, state.followed.get(&key).map_or(0, |e| e.1))
    }

    /// Sleeps until the mark moves past `seen`, or until `deadline`. Returns whether it moved.
    fn wait(&self, key: u64, seen: (u64, u64), deadline: Option<Instant>) -> bool {
        let mut state = self.lock();
        loop {
            let now = (state.epoch, state.followed.get(&key).map_or(0, |e| e.1));
            if now != seen {
                return true;
            }
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            state = match deadline {
                None => self
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.wake
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

/// A live reader of one address's records in a [`PostgresStore`](super::PostgresStore), on any
/// node: each [`next`](PostgresTail::next) returns the records committed past the previous
/// ones, in order, with no gap and no duplicate, waking on `LISTEN`/`NOTIFY` rather than
/// polling.
///
/// From [`PostgresStore::tail`](super::PostgresStore::tail). Only committed records are read:
/// under [`Durability::Grouped`](crate::store::Durability) a tail sees a batch when its group
/// commits.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use chord::store::{Address, PostgresStore};
/// let store = PostgresStore::open_read_only("postgres://postgres@127.0.0.1/test")?;
/// let mut tail = store.tail(&Address::new("lanes", "main"), None)?;
/// loop {
///     for record in tail.next(Some(Duration::from_secs(30)))? {
///         println!("{} {}", record.seq, record.batch); // decode with a `Decoder`, apply
///     }
/// }
/// # Ok::<(), chord::store::Error>(())
/// ```
pub struct PostgresTail {
    shared: Arc<dyn Source>,
    listener: Arc<Listener>,
    address: Address,
    key: u64,
    cursor: Option<u64>,
    limit: usize,
}

impl std::fmt::Debug for PostgresTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTail")
            .field("address", &self.address)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl PostgresTail {
    pub(crate) fn new(
        shared: Arc<dyn Source>,
        listener: Arc<Listener>,
        address: Address,
        cursor: Option<u64>,
    ) -> PostgresTail {
        let key = shared.key(&address);
        listener.follow(key);
        PostgresTail {
            shared,
            listener,
            address,
            key,
            cursor,
            limit: 100,
        }
    }

    /// The seq of the last record returned (or the cursor the tail started from): where a
    /// reader resumes, on this node or another.
    pub fn cursor(&self) -> Option<u64> {
        self.cursor
    }

    /// The address followed.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// At most this many records per [`next`](PostgresTail::next) (default 100, at least 1).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
    }

    /// The records past the cursor, oldest first, waiting for at least one: blocks until a
    /// writer on any node commits one, or `timeout` passes (then an empty list; `None`
    /// waits without end). Advances the cursor past what it returns.
    ///
    /// Cost: one read of the database (a page, checked as every read is) per wake-up; none
    /// while nothing is written.
    ///
    /// # Errors
    ///
    /// A read failed (the connection is replaced on the next call) or a record does not
    /// check out ([`Error::CorruptRecord`](crate::store::Error::CorruptRecord)).
    pub fn next(&mut self, timeout: Option<Duration>) -> Result<Vec<Record>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            // The mark is taken before the read: a commit the read misses notifies after it.
            let seen = self.listener.mark(self.key);
            let options = ReadOptions::asc().cursor(self.cursor).limit(self.limit);
            let page = self.shared.read_page(&self.address, &options)?;
            if let Some(last) = page.records.last() {
                self.cursor = Some(last.seq);
                return Ok(page.records);
            }
            if !self.listener.wait(self.key, seen, deadline) {
                return Ok(Vec::new());
            }
        }
    }
}

impl Drop for PostgresTail {
    fn drop(&mut self) {
        self.listener.unfollow(self.key);
    }
}
