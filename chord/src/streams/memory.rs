//! Protocol streams that are not chord logs: any content type, held by a [`Backend`]
//! ([`Memory`], in memory and bounded).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::sync::watch;

use crate::store::Address;

/// The default [`Memory::max_streams`].
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

/// The default [`Memory::max_stream_bytes`].
pub const DEFAULT_MAX_STREAM_BYTES: usize = 64 << 20;

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
}

/// A backend holds as many streams as it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the server holds as many streams as it may")]
pub struct TooManyStreams;

/// A [`Backend`] in memory: streams last as long as the process. Bounded: at most
/// [`max_streams`](Memory::max_streams) streams of at most
/// [`max_stream_bytes`](Memory::max_stream_bytes) bytes each (an append beyond answers 413).
///
/// ```
/// use chord::streams::Memory;
/// let memory = Memory::new().max_streams(100).max_stream_bytes(1 << 20);
/// ```
#[derive(Debug)]
pub struct Memory {
    streams: Mutex<HashMap<Address, Arc<MemoryStream>>>,
    max_streams: usize,
    max_stream_bytes: usize,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            streams: Mutex::new(HashMap::new()),
            max_streams: DEFAULT_MAX_STREAMS,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }
}

impl Memory {
    /// An empty backend with [`DEFAULT_MAX_STREAMS`] and [`DEFAULT_MAX_STREAM_BYTES`].
    #[must_use]
    pub fn new() -> Memory {
        Memory::default()
    }

    /// At most this many streams (expired ones are dropped first when full).
    #[must_use]
    pub fn max_streams(mut self, n: usize) -> Memory {
        self.max_streams = n;
        self
    }

    /// At most this many bytes of messages in one stream.
    #[must_use]
    pub fn max_stream_bytes(mut self, n: usize) -> Memory {
        self.max_stream_bytes = n;
        self
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
            streams.remove(address);
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
            streams.retain(|_, s| !s.expired());
            if streams.len() >= self.max_streams {
                return Err(TooManyStreams);
            }
        }
        let stream = Arc::new(stream);
        streams.insert(address.clone(), Arc::clone(&stream));
        Ok((stream, true))
    }

    fn remove(&self, address: &Address) -> bool {
        lock(&self.streams)
            .remove(address)
            .is_some_and(|s| !s.expired())
    }

    fn max_stream_bytes(&self) -> usize {
        self.max_stream_bytes
    }
}

/// How a stream was created: compared by an idempotent `PUT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// The media type, lower case, without parameters.
    pub(crate) content_type: String,
    /// `Stream-TTL`, in seconds.
    pub(crate) ttl: Option<u64>,
    /// `Stream-Expires-At` as given, and when that is.
    pub(crate) expires_at: Option<(String, SystemTime)>,
    /// The stream this one is a fork of, the offset and the sub-offset it forked at.
    pub(crate) fork_of: Option<(Address, u64, u64)>,
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
        if self
            .config
            .expires_at
            .as_ref()
            .is_some_and(|(_, at)| *at <= now)
        {
            return true;
        }
        self.lock().idle_until.is_some_and(|at| at <= now)
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
