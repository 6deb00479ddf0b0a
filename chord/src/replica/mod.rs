//! A Rust replica: follows a value's Server-Sent Events stream over HTTP and keeps it current.
//!
//! [`Replica::connect`] starts a task that subscribes to a stream served by
//! [`sse`](crate::sse) (or anything speaking the same protocol), decodes each event with its
//! own [`Decoder`], and applies it. The value is readable at any time
//! ([`value`](Replica::value), [`value_as`](Replica::value_as)) and every change is announced
//! on a [`watch`] channel ([`watch`](Replica::watch)).
//!
//! On any break (the connection drops or stalls, the server answers an error, an event does
//! not decode or does not apply, the first batch is not a base batch) the replica resubscribes
//! after a short backoff and rebuilds from the new subscription's base batch with a fresh
//! decoder. Until then it keeps the last value it had, marked not [`live`](ReplicaState::live).
//!
//! Plain `http://` only: put TLS in front of the server, or follow the stream with another
//! client and the same decoder and applier.
//!
//! # Example
//!
//! ```no_run
//! use chord::replica::Replica;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let replica = Replica::connect("http://127.0.0.1:8080/streams/lanes/main")?;
//! let mut changes = replica.watch();
//! while changes.changed().await.is_ok() {
//!     println!("{:?}", changes.borrow().value);
//! }
//! # Ok(())
//! # }
//! ```

mod events;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::events::Parser;
use crate::{apply, is_base, Decoder};

/// The default backoff before the first resubscription after a break.
pub const DEFAULT_BACKOFF_MIN: Duration = Duration::from_millis(50);
/// The default longest backoff between resubscriptions.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(2);
/// The default time without a byte (events or keep-alive comments) after which a stream
/// counts as broken: three of the endpoint's default keep-alive intervals.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(45);
/// The default largest event accepted.
pub const DEFAULT_MAX_EVENT: usize = 64 << 20;

/// What a replica holds, as seen through [`Replica::watch`].
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ReplicaState {
    /// The value, once a base batch has arrived. After a break it stays at the last value
    /// until the next subscription's base batch replaces it.
    pub value: Option<Value>,
    /// Whether the replica is following its stream now (between a base batch and a break).
    pub live: bool,
}

/// Why a subscription ended, from [`ReplicaStats::last_break`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Break {
    /// Connecting, sending the request or reading the response failed.
    Connection(String),
    /// The server answered with a status other than 200.
    Status(u16),
    /// The response is not `text/event-stream`.
    NotEventStream,
    /// The stream ended.
    Ended,
    /// Nothing arrived (no response, not even a keep-alive comment) for the idle timeout.
    Idle,
    /// The stream is not readable as events (see the message).
    Events(String),
    /// An event did not decode as a wire batch.
    Decode(String),
    /// The first batch of a subscription was not a base batch.
    NotBase,
    /// A batch did not apply to the replica's value.
    Apply(String),
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Break::Connection(e) => write!(f, "connection failed: {e}"),
            Break::Status(status) => write!(f, "the server answered {status}"),
            Break::NotEventStream => f.write_str("the response is not text/event-stream"),
            Break::Ended => f.write_str("the stream ended"),
            Break::Idle => f.write_str("the stream went silent"),
            Break::Events(e) => write!(f, "unreadable event stream: {e}"),
            Break::Decode(e) => write!(f, "a batch did not decode: {e}"),
            Break::NotBase => {
                f.write_str("the first batch of the subscription is not a base batch")
            }
            Break::Apply(e) => write!(f, "a batch did not apply: {e}"),
        }
    }
}

/// Counters over a replica's life, from [`Replica::stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplicaStats {
    /// Subscriptions that delivered their base batch.
    pub subscriptions: u64,
    /// Batches applied, base batches included.
    pub batches: u64,
    /// Subscriptions (or attempts) that ended.
    pub breaks: u64,
    /// Why the last one ended.
    pub last_break: Option<Break>,
}

/// Why a replica could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaError {
    /// The URL is not an absolute `http://` URL with a host.
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`Replica::connect`] was called outside a Tokio runtime.
    NoRuntime,
}

impl fmt::Display for ReplicaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicaError::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            ReplicaError::NoRuntime => {
                f.write_str("a replica must be started inside a Tokio runtime")
            }
        }
    }
}

impl std::error::Error for ReplicaError {}

/// Configures a [`Replica`]: backoff, idle timeout, event size bound.
///
/// ```no_run
/// use std::time::Duration;
/// use chord::replica::Replica;
/// # async fn run() -> Result<(), chord::replica::ReplicaError> {
/// let replica = Replica::builder("http://127.0.0.1:8080/streams/lanes/main")
///     .backoff(Duration::from_millis(20), Duration::from_secs(1))
///     .idle_timeout(Duration::from_secs(20))
///     .connect()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ReplicaBuilder {
    url: String,
    backoff_min: Duration,
    backoff_max: Duration,
    idle_timeout: Duration,
    max_event: usize,
}

impl ReplicaBuilder {
    /// The backoff before resubscribing: `min` after a subscription that delivered its base
    /// batch, doubling on each failed attempt up to `max`, each spread by ±50% so that many
    /// replicas broken at once do not return at once.
    pub fn backoff(mut self, min: Duration, max: Duration) -> ReplicaBuilder {
        self.backoff_min = min;
        self.backoff_max = max.max(min);
        self
    }

    /// How long a stream may stay silent before it counts as broken (default
    /// [`DEFAULT_IDLE_TIMEOUT`]); keep it above the server's keep-alive interval.
    pub fn idle_timeout(mut self, timeout: Duration) -> ReplicaBuilder {
        self.idle_timeout = timeout;
        self
    }

    /// The largest event accepted, in bytes (default [`DEFAULT_MAX_EVENT`]); a larger one
    /// breaks the subscription.
    pub fn max_event(mut self, bytes: usize) -> ReplicaBuilder {
        self.max_event = bytes;
        self
    }

    /// Starts following the stream.
    ///
    /// # Errors
    ///
    /// [`ReplicaError::InvalidUrl`]; [`ReplicaError::NoRuntime`] outside a Tokio runtime.
    pub fn connect(self) -> Result<Replica, ReplicaError> {
        let target = Target::parse(&self.url)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ReplicaError::NoRuntime)?;
        let (tx, rx) = watch::channel(ReplicaState::default());
        let stats = Arc::new(Counters::default());
        let follower = Follower {
            target,
            config: self,
            state: tx,
            stats: Arc::clone(&stats),
        };
        let task = runtime.spawn(follower.run());
        Ok(Replica {
            state: rx,
            stats,
            task,
        })
    }
}

/// A replica of one value, following its stream over HTTP; see the [module docs](self).
///
/// Dropping it stops following.
pub struct Replica {
    state: watch::Receiver<ReplicaState>,
    stats: Arc<Counters>,
    task: JoinHandle<()>,
}

impl fmt::Debug for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("live", &self.is_live())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// Follows the stream at `url` (e.g. `http://127.0.0.1:8080/streams/lanes/main`) with the
    /// default settings.
    ///
    /// # Errors
    ///
    /// [`ReplicaError::InvalidUrl`]; [`ReplicaError::NoRuntime`] outside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Replica, ReplicaError> {
        Replica::builder(url).connect()
    }

    /// Configures a replica of the stream at `url`.
    pub fn builder(url: &str) -> ReplicaBuilder {
        ReplicaBuilder {
            url: url.to_owned(),
            backoff_min: DEFAULT_BACKOFF_MIN,
            backoff_max: DEFAULT_BACKOFF_MAX,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_event: DEFAULT_MAX_EVENT,
        }
    }

    /// The current value (a clone); `None` before the first base batch.
    pub fn value(&self) -> Option<Value> {
        self.state.borrow().value.clone()
    }

    /// The current value as `T`; `None` before the first base batch.
    ///
    /// # Errors
    ///
    /// The value does not deserialize as `T`.
    pub fn value_as<T: DeserializeOwned>(&self) -> Option<serde_json::Result<T>> {
        let state = self.state.borrow();
        let value = state.value.as_ref()?;
        Some(T::deserialize(value))
    }

    /// Whether the replica is following its stream now.
    pub fn is_live(&self) -> bool {
        self.state.borrow().live
    }

    /// A receiver that is notified of every change: each applied batch, and each change of
    /// [`live`](ReplicaState::live).
    pub fn watch(&self) -> watch::Receiver<ReplicaState> {
        self.state.clone()
    }

    /// Waits until `done` holds for the replica's state, and returns that state.
    pub async fn wait_until(&self, mut done: impl FnMut(&ReplicaState) -> bool) -> ReplicaState {
        let mut state = self.state.clone();
        let found = match state.wait_for(|s| done(s)).await {
            Ok(s) => s.clone(),
            // The follower only stops when the replica is dropped, and `self` is alive.
            Err(_) => self.state.borrow().clone(),
        };
        found
    }

    /// Counters: subscriptions, batches, breaks and the last break's reason.
    pub fn stats(&self) -> ReplicaStats {
        ReplicaStats {
            subscriptions: self.stats.subscriptions.load(Ordering::Relaxed),
            batches: self.stats.batches.load(Ordering::Relaxed),
            breaks: self.stats.breaks.load(Ordering::Relaxed),
            last_break: self
                .stats
                .last_break
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Debug, Default)]
struct Counters {
    subscriptions: AtomicU64,
    batches: AtomicU64,
    breaks: AtomicU64,
    last_break: Mutex<Option<Break>>,
}

/// Where to connect and what to ask for.
#[derive(Debug)]
struct Target {
    host: String,
    port: u16,
    authority: HeaderValue,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, ReplicaError> {
        let invalid = |reason: &str| ReplicaError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| invalid(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(_) => return Err(invalid("only http:// is supported")),
            None => return Err(invalid("the URL must be absolute (http://host:port/path)")),
        }
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Target {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            authority: HeaderValue::from_str(authority.as_str())
                .map_err(|_| invalid("the host is not a valid header value"))?,
            path,
        })
    }
}

/// The task behind a [`Replica`].
struct Follower {
    target: Target,
    config: ReplicaBuilder,
    state: watch::Sender<ReplicaState>,
    stats: Arc<Counters>,
}

impl Follower {
    async fn run(self) {
        let mut backoff = self.config.backoff_min;
        let mut jitter = Jitter::new(Arc::as_ptr(&self.stats) as usize as u64);
        loop {
            let (why, delivered) = self.follow().await;
            // The reason first, then the count: whoever sees the count sees its reason.
            *self
                .stats
                .last_break
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(why);
            self.stats.breaks.fetch_add(1, Ordering::Relaxed);
            self.state
                .send_if_modified(|s| std::mem::replace(&mut s.live, false));
            if delivered {
                backoff = self.config.backoff_min;
            }
            tokio::time::sleep(jitter.spread(backoff)).await;
            backoff = (backoff * 2).min(self.config.backoff_max);
        }
    }

    /// Follows one subscription until it breaks. Whether it delivered its base batch.
    async fn follow(&self) -> (Break, bool) {
        // A server (or a proxy) that accepts and then says nothing counts as silent too.
        let mut body = match tokio::time::timeout(self.config.idle_timeout, self.open()).await {
            Ok(Ok(body)) => body,
            Ok(Err(why)) => return (why, false),
            Err(_) => return (Break::Idle, false),
        };
        let mut parser = Parser::new(self.config.max_event);
        let mut decoder = Decoder::new();
        let mut delivered = false;
        loop {
            let frame =
                match tokio::time::timeout(self.config.idle_timeout, body.body.frame()).await {
                    Err(_) => return (Break::Idle, delivered),
                    Ok(None) => return (Break::Ended, delivered),
                    Ok(Some(Err(e))) => return (Break::Connection(e.to_string()), delivered),
                    Ok(Some(Ok(frame))) => frame,
                };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            parser.push(&data);
            loop {
                let event = match parser.next_event() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) => return (Break::Events(e.to_string()), delivered),
                };
                if let Err(why) = self.batch(&mut decoder, &event, delivered) {
                    return (why, delivered);
                }
                delivered = true;
            }
        }
    }

    /// Decodes and applies one event: the first of a subscription must be a base batch.
    fn batch(&self, decoder: &mut Decoder, event: &str, following: bool) -> Result<(), Break> {
        let ops = decoder
            .decode_str(event)
            .map_err(|e| Break::Decode(e.to_string()))?;
        if !following {
            if !is_base(&ops) {
                return Err(Break::NotBase);
            }
            let mut fresh = None;
            apply(&mut fresh, ops).map_err(|e| Break::Apply(e.to_string()))?;
            // Counted before the new state is published: whoever sees the state change
            // also sees the counters that go with it.
            self.stats.subscriptions.fetch_add(1, Ordering::Relaxed);
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            self.state.send_modify(|s| {
                s.value = fresh;
                s.live = true;
            });
        } else {
            let mut failed = None;
            self.state
                .send_if_modified(|s| match apply(&mut s.value, ops) {
                    Ok(()) => {
                        // Inside the update, so before the watchers are told.
                        self.stats.batches.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                });
            if let Some(e) = failed {
                return Err(Break::Apply(e.to_string()));
            }
        }
        Ok(())
    }

    /// Connects and sends the request; the response body once it is an event stream.
    async fn open(&self) -> Result<Connection, Break> {
        let broken = |e: &dyn fmt::Display| Break::Connection(e.to_string());
        let stream = TcpStream::connect((self.target.host.as_str(), self.target.port))
            .await
            .map_err(|e| broken(&e))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| broken(&e))?;
        let driver = tokio::spawn(connection);
        let request = Request::get(self.target.path.as_str())
            .header(HOST, self.target.authority.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache")
            .body(Empty::<Bytes>::new())
            .map_err(|e| broken(&e))?;
        let response = sender.send_request(request).await.map_err(|e| broken(&e))?;
        let status = response.status();
        if status != StatusCode::OK {
            driver.abort();
            return Err(Break::Status(status.as_u16()));
        }
        let is_events = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !is_events {
            driver.abort();
            return Err(Break::NotEventStream);
        }
        Ok(Connection {
            body: response.into_body(),
            driver,
        })
    }
}

/// A response body and the task driving its connection, closed together.
struct Connection {
    body: hyper::body::Incoming,
    driver: JoinHandle<Result<(), hyper::Error>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A small xorshift generator spreading backoffs.
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Jitter((seed ^ u64::from(nanos)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// `d` scaled by a factor in [0.5, 1.5).
    fn spread(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        d.mul_f64(0.5 + unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        let t = Target::parse("http://127.0.0.1:8080/streams/lanes/main?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.path, "/streams/lanes/main?x=1");
        let t = Target::parse("http://[::1]/s").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        for bad in [
            "https://example.com/",
            "/streams/a/b",
            "http:///x",
            "not a url",
        ] {
            assert!(
                matches!(Target::parse(bad), Err(ReplicaError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn jitter_stays_within_half_either_side() {
        let mut j = Jitter::new(7);
        for _ in 0..1000 {
            let d = j.spread(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }

    #[test]
    fn connecting_outside_a_runtime_is_an_error() {
        assert_eq!(
            Replica::connect("http://127.0.0.1:1/").unwrap_err(),
            ReplicaError::NoRuntime
        );
    }
}
