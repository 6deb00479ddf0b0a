//! Protocol streams that are not chord logs: any content type, held by a [`Backend`]
//! ([`Memory`], in memory and bounded).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::sync::watch;

use super::config::Config;
use super::journal::Journal;
use crate::store::Address;

/// The default [`Memory::max_streams`].
pub(crate) const DEFAULT_MAX_STREAMS: usize = 10_000;

/// The default [`Memory::max_stream_bytes`].
pub(crate) const DEFAULT_MAX_STREAM_BYTES: usize = 64 << 20;

/// The default [`Memory::max_bytes`] (see there for why).
pub(crate) const DEFAULT_MAX_BYTES: usize = 1 << 30;

/// The longest `Stream-TTL` a stream may be created with: 36,500 days (100 years of 365
/// days). A longer one answers 400, so that no idle deadline lies beyond what the clock can
/// represent.
pub const MAX_TTL: Duration = Duration::from_secs(36_500 * 86_400);

/// Where the protocol streams that are not chord logs live: created by `PUT`, written by
/// `POST`, removed by `DELETE` (see [`Streams::backend`](super::Streams::backend)).
///
/// A backend holds [`MemoryStream`]s by address; the router does the protocol (framing, closure,
/// producers, expiry) on them, under each stream's own lock.
pub trait Backend: Send + Sync + 'static {
    /// The stream at `address`, if any.
    fn get(&self, address: &Address) -> Option<Arc<MemoryStream>>;

    /// Adds `stream` at `address` unless one is there already: returns the stream now at
    /// `address` and whether it is the one passed.
    ///
    /// # Errors
    ///
    /// [`TooManyStreams`] when the backend holds as many streams as it may.
    fn insert(
        &self,
        address: &Address,
        stream: MemoryStream,
    ) -> Result<(Arc<MemoryStream>, bool), TooManyStreams>;

    /// Removes the stream at `address`; whether there was one.
    fn remove(&self, address: &Address) -> bool;

    /// The most bytes one stream may hold.
    fn max_stream_bytes(&self) -> usize;

    /// Reserves `bytes` more bytes of messages, all or none, for a create (its first
    /// messages, a fork's inherited ones included) or an append about to be made. The router
    /// calls it once the request is otherwise accepted, under the stream's lock for an
    /// append, and gives back with [`release`](Backend::release) what it then does not use
    /// (a create that finds the stream there already). A backend bounding its bytes counts
    /// them here, and gives back a stream's bytes itself when it drops the stream (see
    /// [`MemoryStream::retire`]).
    ///
    /// The default reserves nothing and always succeeds: no bound beyond
    /// [`max_stream_bytes`](Backend::max_stream_bytes) per stream.
    ///
    /// # Errors
    ///
    /// [`TooManyBytes`] when the streams would hold more than the backend may: the request
    /// is refused whole (`507`), and nothing is reserved.
    fn reserve(&self, bytes: usize) -> Result<(), TooManyBytes> {
        let _ = bytes;
        Ok(())
    }

    /// Gives back `bytes` reserved by [`reserve`](Backend::reserve) and not used. The default
    /// does nothing.
    fn release(&self, bytes: usize) {
        let _ = bytes;
    }

    /// The journal the protocol's writes record each change in before applying it
    /// ([`Journaled`](super::Journaled)'s). The default, `None`: changes live in memory
    /// only.
    #[doc(hidden)]
    fn journal(&self) -> Option<&Journal> {
        None
    }
}

/// A backend holds as many streams as it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the server holds as many streams as it may")]
pub struct TooManyStreams;

/// A backend's streams hold as many bytes as they may, all together (see
/// [`Backend::reserve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the server holds as many bytes as it may")]
pub struct TooManyBytes;

/// A [`Backend`] in memory: streams last as long as the process. Bounded: at most
/// [`max_streams`](Memory::max_streams) streams (a create beyond answers 507) of at most
/// [`max_stream_bytes`](Memory::max_stream_bytes) bytes each (an append beyond answers 413),
/// and at most [`max_bytes`](Memory::max_bytes) bytes in all the streams together (a create
/// or an append beyond answers 507).
///
/// ```
/// use chord::streams::Memory;
/// let memory = Memory::new()
///     .max_streams(100)
///     .max_stream_bytes(1 << 20)
///     .max_bytes(64 << 20);
/// ```
#[derive(Debug)]
pub struct Memory {
    streams: Mutex<HashMap<Address, Arc<MemoryStream>>>,
    max_streams: usize,
    max_stream_bytes: usize,
    max_bytes: usize,
    /// The bytes of messages the streams hold together, with those reserved for requests
    /// in progress: what [`Memory::max_bytes`] bounds.
    bytes: AtomicUsize,
}

impl Default for Memory {
    /// An empty backend with the defaults: at most 10,000 streams, 64 MiB of messages in
    /// each, 1 GiB in all of them together.
    fn default() -> Self {
        Memory {
            streams: Mutex::new(HashMap::new()),
            max_streams: DEFAULT_MAX_STREAMS,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
            max_bytes: DEFAULT_MAX_BYTES,
            bytes: AtomicUsize::new(0),
        }
    }
}

impl Memory {
    /// An empty backend with the defaults (see [`Memory::default`]).
    #[must_use]
    pub fn new() -> Memory {
        Memory::default()
    }

    /// At most this many streams (default 10,000; expired ones are dropped first when
    /// full).
    #[must_use]
    pub fn max_streams(mut self, n: usize) -> Memory {
        self.max_streams = n;
        self
    }

    /// At most this many bytes of messages in one stream, each message counted with its
    /// handle (32 bytes on 64-bit targets), so that the bound holds the memory a stream takes
    /// however small its messages (default 64 MiB).
    #[must_use]
    pub fn max_stream_bytes(mut self, n: usize) -> Memory {
        self.max_stream_bytes = n;
        self
    }

    /// At most this many bytes of messages in all the streams together, counted as
    /// [`max_stream_bytes`](Memory::max_stream_bytes) counts them (default 1 GiB, sixteen
    /// streams at the default [`max_stream_bytes`](Memory::max_stream_bytes)). The other two
    /// bounds alone would let the default 10,000 streams hold 625 GiB, more memory than a
    /// server has: the default is what a modest server can give its streams beside the rest
    /// of the process, so that writers filling streams are refused before the process runs
    /// out of memory; a server meant to hold more sets its own. A create (its first messages,
    /// a fork's inherited ones included) or an append that would go beyond is refused whole with
    /// `507 Insufficient Storage`: nothing of it is kept, and the stream is as it was.
    /// Expired streams are dropped first when full. A stream's bytes are given back when it
    /// is deleted, or dropped once expired, or replaced by a new stream at its address.
    #[must_use]
    pub fn max_bytes(mut self, n: usize) -> Memory {
        self.max_bytes = n;
        self
    }

    /// Adds `n` to the bytes held, unless that would go beyond the bound.
    fn try_add(&self, n: usize) -> bool {
        self.bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(n).filter(|total| *total <= self.max_bytes)
            })
            .is_ok()
    }

    /// Drops `stream`, taken out of the map: gives back its bytes.
    fn dropped(&self, stream: &MemoryStream) {
        self.release(stream.retire());
    }

    /// Drops the expired streams, as far as it can without waiting: called when full, maybe
    /// under a stream's lock (an append's), so it takes the map and each stream's lock only
    /// when free (waiting for either there could deadlock with a request holding the map and
    /// waiting for that stream). A stream being written at this moment is not expired.
    fn drop_expired(&self) {
        let mut streams = match self.streams.try_lock() {
            Ok(streams) => streams,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        let now = SystemTime::now();
        streams.retain(|_, stream| {
            let mut state = match stream.state.try_lock() {
                Ok(state) => state,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => return true,
            };
            if !stream.expired_at(&state, now) {
                return true;
            }
            let bytes = retire(&mut state);
            self.release(bytes);
            false
        });
    }
}

/// When a stream with a TTL of `ttl` seconds, touched now, expires: `None` (never) when that
/// lies beyond what [`SystemTime`] represents, which [`MAX_TTL`] keeps from happening.
fn idle_deadline(ttl: u64) -> Option<SystemTime> {
    SystemTime::now().checked_add(Duration::from_secs(ttl))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Backend for Memory {
    fn get(&self, address: &Address) -> Option<Arc<MemoryStream>> {
        let mut streams = lock(&self.streams);
        let stream = streams.get(address)?;
        if stream.expired() {
            if let Some(gone) = streams.remove(address) {
                self.dropped(&gone);
            }
            return None;
        }
        Some(Arc::clone(stream))
    }

    fn insert(
        &self,
        address: &Address,
        stream: MemoryStream,
    ) -> Result<(Arc<MemoryStream>, bool), TooManyStreams> {
        let mut streams = lock(&self.streams);
        if let Some(there) = streams.get(address) {
            if !there.expired() {
                return Ok((Arc::clone(there), false));
            }
        }
        if streams.len() >= self.max_streams {
            streams.retain(|_, s| {
                if !s.expired() {
                    return true;
                }
                self.dropped(s);
                false
            });
            if streams.len() >= self.max_streams {
                return Err(TooManyStreams);
            }
        }
        let stream = Arc::new(stream);
        if let Some(replaced) = streams.insert(address.clone(), Arc::clone(&stream)) {
            self.dropped(&replaced);
        }
        Ok((stream, true))
    }

    fn remove(&self, address: &Address) -> bool {
        let Some(gone) = lock(&self.streams).remove(address) else {
            return false;
        };
        self.dropped(&gone);
        !gone.expired()
    }

    fn max_stream_bytes(&self) -> usize {
        self.max_stream_bytes
    }

    fn reserve(&self, bytes: usize) -> Result<(), TooManyBytes> {
        if self.try_add(bytes) {
            return Ok(());
        }
        self.drop_expired();
        if self.try_add(bytes) {
            Ok(())
        } else {
            Err(TooManyBytes)
        }
    }

    fn release(&self, bytes: usize) {
        // Never below zero, whatever a caller gives back.
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                Some(held.saturating_sub(bytes))
            });
    }
}

/// One protocol stream: its configuration, messages, closure and producers.
#[derive(Debug)]
pub struct MemoryStream {
    pub(crate) config: Config,
    pub(crate) state: Mutex<State>,
    changes: watch::Sender<u64>,
}

/// What changes as a stream is written.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The messages; the offset after message `i` is `i + 1`.
    pub(crate) messages: Vec<Bytes>,
    pub(crate) bytes: usize,
    pub(crate) closed: bool,
    /// The producer request that closed the stream: (id, epoch, seq).
    pub(crate) closed_by: Option<(String, u64, u64)>,
    /// Each producer's (epoch, last seq).
    pub(crate) producers: HashMap<String, (u64, u64)>,
    /// The last `Stream-Seq`.
    pub(crate) stream_seq: Option<String>,
    /// When a stream with a TTL expires, reset by reads and writes.
    pub(crate) idle_until: Option<SystemTime>,
    /// How many forks of this stream exist.
    pub(crate) forks: usize,
    /// Deleted while forks of it existed: kept for nothing but their bookkeeping (410).
    pub(crate) deleted: bool,
    /// Dropped by its backend, its bytes given back ([`MemoryStream::retire`]): an append
    /// that finds it so (it raced the drop) adds nothing.
    pub(crate) retired: bool,
}

/// Marks `state`'s stream as dropped by its backend: the bytes to give back, the first time.
fn retire(state: &mut State) -> usize {
    if std::mem::replace(&mut state.retired, true) {
        0
    } else {
        state.bytes
    }
}

impl MemoryStream {
    pub(crate) fn new(config: Config) -> MemoryStream {
        let idle_until = config.ttl.and_then(idle_deadline);
        MemoryStream {
            config,
            state: Mutex::new(State {
                idle_until,
                ..State::default()
            }),
            changes: watch::channel(0).0,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Whether the stream's TTL or expiry time has passed.
    pub(crate) fn expired(&self) -> bool {
        let now = SystemTime::now();
        self.expires_by(now) || self.lock().idle_until.is_some_and(|at| at <= now)
    }

    /// [`expired`](MemoryStream::expired), its state at hand.
    fn expired_at(&self, state: &State, now: SystemTime) -> bool {
        self.expires_by(now) || state.idle_until.is_some_and(|at| at <= now)
    }

    /// Whether the stream's `Stream-Expires-At` is `now` or before.
    fn expires_by(&self, now: SystemTime) -> bool {
        self.config
            .expires_at
            .as_ref()
            .is_some_and(|(_, at)| *at <= now)
    }

    /// Marks the stream as dropped by its backend, and returns the bytes of messages it
    /// holds, for a backend bounding its bytes ([`Backend::reserve`]) to give back: call it
    /// once the stream is out of the backend (deleted, dropped as expired, replaced). The
    /// first call returns the bytes, later ones 0; an append that reached the stream before
    /// it was dropped and finds it dropped adds nothing and reserves nothing (`404`).
    pub fn retire(&self) -> usize {
        retire(&mut self.lock())
    }

    /// Resets the TTL countdown (a read or a write).
    pub(crate) fn touch(&self) {
        if let Some(ttl) = self.config.ttl {
            self.lock().idle_until = idle_deadline(ttl);
        }
    }

    /// Whether the stream is JSON mode (`application/json`).
    pub(crate) fn json(&self) -> bool {
        self.config.content_type == "application/json"
    }

    /// Wakes the stream's live readers (after an append or a close).
    pub(crate) fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, StatusCode};

    use super::super::generic;
    use super::*;

    fn headers(expires_at: Option<&'static str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("text/plain"));
        if let Some(at) = expires_at {
            h.insert("stream-expires-at", HeaderValue::from_static(at));
        }
        h
    }

    /// A `PUT` of `body` at `t/key`, expired at once when `expired`.
    fn put(memory: &Memory, key: &str, body: &str, expired: bool) -> StatusCode {
        let at = expired.then_some("2000-01-01T00:00:00Z");
        let address = Address::new("t", key);
        generic::create(memory, &address, None, "", &headers(at), body.as_bytes()).status()
    }

    fn held(memory: &Memory) -> usize {
        memory.bytes.load(Ordering::Acquire)
    }

    /// What a message costs beside its bytes.
    const H: usize = generic::MESSAGE_COST;

    #[test]
    fn bytes_are_given_back_when_a_stream_is_deleted_expires_or_is_replaced() {
        let memory = Memory::new();
        let (a, b) = (Address::new("t", "a"), Address::new("t", "b"));
        assert_eq!(put(&memory, "a", "hello", false), StatusCode::CREATED);
        assert_eq!(put(&memory, "a", "hello", false), StatusCode::OK);
        assert_eq!(held(&memory), 5 + H, "an idempotent PUT adds nothing");
        assert_eq!(put(&memory, "b", "expired", true), StatusCode::CREATED);
        assert_eq!(held(&memory), 12 + 2 * H);
        // Replaced: the expired stream's bytes go, the new one's come.
        assert_eq!(put(&memory, "b", "new", false), StatusCode::CREATED);
        assert_eq!(held(&memory), 8 + 2 * H);
        assert_eq!(
            generic::delete(&memory, &b).status(),
            StatusCode::NO_CONTENT
        );
        assert_eq!(held(&memory), 5 + H, "deleted");
        assert_eq!(put(&memory, "b", "expired", true), StatusCode::CREATED);
        assert!(memory.get(&b).is_none());
        assert_eq!(held(&memory), 5 + H, "dropped once found expired");
        assert!(memory.remove(&a));
        assert_eq!(held(&memory), 0);
    }

    #[test]
    fn when_full_expired_streams_are_dropped_first() {
        let memory = Memory::new().max_bytes(10 + 2 * H);
        assert_eq!(put(&memory, "old", "xxxxxxxx", true), StatusCode::CREATED);
        assert_eq!(put(&memory, "live", "yy", false), StatusCode::CREATED);
        assert_eq!(held(&memory), 10 + 2 * H);
        assert_eq!(put(&memory, "new", "zzzzzzzz", false), StatusCode::CREATED);
        assert_eq!(held(&memory), 10 + 2 * H, "the expired stream went");
        assert_eq!(
            put(&memory, "more", "w", false),
            StatusCode::INSUFFICIENT_STORAGE
        );
        assert_eq!(
            held(&memory),
            10 + 2 * H,
            "a refused create reserves nothing"
        );
        assert_eq!(put(&memory, "empty", "", false), StatusCode::CREATED);
    }

    #[test]
    fn an_append_that_raced_a_delete_adds_nothing() {
        let memory = Memory::new();
        let a = Address::new("t", "a");
        assert_eq!(put(&memory, "a", "hello", false), StatusCode::CREATED);
        let stream = memory.get(&a).unwrap();
        assert_eq!(
            generic::delete(&memory, &a).status(),
            StatusCode::NO_CONTENT
        );
        let r = generic::append(&memory, &a, &stream, &headers(None), b"more");
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(held(&memory), 0);
        assert_eq!(stream.retire(), 0, "its bytes were given back once");
    }
}
