//! [`Streams`]: the axum router serving every address's log as a Durable Stream: its
//! configuration here, its handlers per verb in `routes`, a chord log's reads in `read`, and
//! names in paths in `names`.

mod kinds;
mod names;
mod read;
mod routes;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue, Method};
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::auth::{AuthorizeRead, AuthorizeWrite, ReadRequest};
use super::memory::Backend;
use super::write::{Bodies, WriteRequest};
use super::Log;
use crate::live::log::Source;
use crate::live::server::Draining;
use crate::live::sse::Timing;
use crate::live::sse::DEFAULT_KEEP_ALIVE;
use crate::live::Access;
use crate::store::{Address, Store};

/// The route the router serves: a value's stream by namespace and key, each one path segment
/// (percent-encode a `/` inside them; [`stream_path`] does).
pub const ROUTE: &str = "/streams/{namespace}/{key}";

/// The header, on every response for a stream, naming the offset just before its latest base
/// batch: where a reader with no state starts (`GET ...?offset=<it>`), so that it needs only
/// a fresh decoder and replays the least.
pub const BASE_OFFSET_HEADER: &str = "chord-base-offset";

/// The longest namespace or key, in bytes, the router accepts.
pub const MAX_NAME: usize = 1024;

/// The default [`Streams::long_poll`] timeout.
pub(crate) const DEFAULT_LONG_POLL: Duration = Duration::from_secs(20);

/// The default [`Streams::sse_lifetime`].
pub(crate) const DEFAULT_SSE_LIFETIME: Duration = Duration::from_secs(60);

/// The default `Cache-Control` of catch-up and long-poll reads.
pub(crate) const DEFAULT_CACHE_CONTROL: &str = "private, max-age=60, stale-while-revalidate=300";

/// The default `Cache-Control` of catch-up and long-poll reads once a read hook is set
/// ([`Streams::reads`]): a browser may keep a read but asks the server again before each use
/// (a conditional request, answered 304 when unchanged), so that every read goes through the
/// hook and a cached read is never shown to a request without the credential.
pub(crate) const AUTHORIZED_CACHE_CONTROL: &str = "private, no-cache";

/// Serves every address of a [`Log`] as a [Durable Stream] (`application/json`, each message
/// one wire batch exactly as stored) at [`ROUTE`].
///
/// The read path, for every backend: catch-up reads (`GET ?offset=`), `live=long-poll`,
/// `live=sse` (`data` and `control` events), `HEAD`; `Stream-Next-Offset`,
/// `Stream-Up-To-Date`, `Stream-Cursor`, `ETag` (`If-None-Match` answers 304) and
/// `Cache-Control`; 400 for a malformed offset or name, 404 for an address with no records,
/// 410 for an offset before the oldest base batch kept (see [`Retention`](super::Retention))
/// or beyond the tail.
///
/// Where a reader starts: `offset=-1` (or none) reads from the oldest base kept;
/// [`BASE_OFFSET_HEADER`] on every response names the offset before the *latest* base, which
/// a fresh replica uses (a `HEAD` first, or any earlier response). Either way the first
/// message is a base batch and a fresh [`Decoder`](crate::Decoder) decodes from there; a
/// reader resuming from an offset it was given gets only the records after it and keeps its
/// decoder.
///
/// Every reader at the tail is sent the same bytes, framed once per record by the log's tail
/// cache; a reader that falls behind the cache reads the store from its own offset (nothing
/// is queued per reader, so a slow reader holds no memory but its socket's).
///
/// Every read is served unless [`reads`](Streams::reads) guards them with an authorization
/// hook. The write side (`PUT`, `POST`, `DELETE`) answers 405 unless
/// [`writes`](Streams::writes) enables it with one.
///
/// [Durable Stream]: https://github.com/durable-streams/durable-streams
///
/// ```
/// use chord::store::JsonlStore;
/// use chord::streams::{Log, Streams};
/// # let dir = tempfile::tempdir()?;
/// let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Default::default())?);
/// let app: axum::Router = Streams::new(&log)
///     .router()
///     .route("/health", axum::routing::get(|| async { "ok" }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct Streams {
    pub(super) source: Arc<dyn Source>,
    pub(super) long_poll: Duration,
    sse_lifetime: Duration,
    keep_alive: Duration,
    coalesce: Duration,
    pub(super) cache_control: HeaderValue,
    /// Whether [`cache_control`](Streams::cache_control) was called (a read hook then keeps it).
    cache_control_set: bool,
    /// The log's time floor ([`LogBuilder::keep_for`](super::LogBuilder::keep_for)): the
    /// longest an answer whose records move (`offset=base`, `offset=-1`) may be cached.
    keep_for: Duration,
    /// `cache_control` capped to `keep_for`, for those answers (set by the router).
    pub(super) moving_cache_control: HeaderValue,
    pub(super) write_hook: Option<AuthorizeWrite>,
    pub(super) read_hook: Option<AuthorizeRead>,
    pub(super) bodies: Bodies,
    pub(super) backend: Option<Arc<dyn Backend>>,
    pub(super) cors: Option<CorsLayer>,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("long_poll", &self.long_poll)
            .field("sse_lifetime", &self.sse_lifetime)
            .field("writes", &self.write_hook.is_some())
            .field("reads_authorized", &self.read_hook.is_some())
            .finish_non_exhaustive()
    }
}

impl Streams {
    /// Serves `log`'s addresses, read-only, with the defaults: long-polls of 20 s, SSE
    /// responses of 60 s with a keep-alive comment every 15 s, no coalescing, catch-up reads
    /// sent with `Cache-Control: private, max-age=60, stale-while-revalidate=300`, and the
    /// [`default_cors`] policy. Once the write side is on: bodies of up to 16 MiB, 64 MiB of
    /// them held at once, 30 s for a body to arrive, 5 s of waiting for room (see each
    /// method).
    pub fn new<S: Store + Send + 'static>(log: &Log<S>) -> Streams {
        Streams {
            source: log.source(),
            long_poll: DEFAULT_LONG_POLL,
            sse_lifetime: DEFAULT_SSE_LIFETIME,
            keep_alive: DEFAULT_KEEP_ALIVE,
            coalesce: Duration::ZERO,
            cache_control: HeaderValue::from_static(DEFAULT_CACHE_CONTROL),
            cache_control_set: false,
            keep_for: log.keep_for(),
            moving_cache_control: HeaderValue::from_static(DEFAULT_CACHE_CONTROL),
            write_hook: None,
            read_hook: None,
            bodies: Bodies::default(),
            backend: None,
            cors: Some(default_cors()),
        }
    }

    /// Holds the protocol streams (those that are not chord logs) in `backend`
    /// ([`Memory`](super::Memory) for the process's life, [`Journaled`](super::Journaled)
    /// beyond it): with the write side on, a `PUT` on an address with no chord records
    /// creates such a stream unless it asks for a chord log (`Chord-Kind: log`, or a base
    /// batch as its `application/json` body: see [the module docs](super#two-kinds-of-stream)),
    /// of any content type (bytes stored as sent;
    /// `application/json` framed as JSON messages), which then supports close
    /// (`Stream-Closed`), `DELETE`, idempotent producers (`Producer-Id`, `-Epoch`, `-Seq`),
    /// `Stream-Seq`, `Stream-TTL`, `Stream-Expires-At` and forks (`Stream-Forked-From`, copied
    /// up to the fork point; a deleted source with live forks answers 410 until the last one
    /// goes). Read as every stream is: catch-up,
    /// long-poll, SSE (base64 for content types other than `text/*` and JSON), `HEAD`.
    /// Addresses with chord records keep the chord log's behaviour.
    pub fn backend(mut self, backend: impl Backend) -> Streams {
        self.backend = Some(Arc::new(backend));
        self
    }

    /// How long a long-poll waits for a record before answering 204 (default 20 s).
    pub fn long_poll(mut self, timeout: Duration) -> Streams {
        self.long_poll = timeout;
        self
    }

    /// How long an SSE response lasts before the server ends it and the client reconnects
    /// from its offset (default 60 s, as the protocol advises).
    pub fn sse_lifetime(mut self, lifetime: Duration) -> Streams {
        self.sse_lifetime = lifetime;
        self
    }

    /// Sends an SSE comment after `every` without an event (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Streams {
        self.keep_alive = every.max(Duration::from_millis(1));
        self
    }

    /// Lets an SSE response send at most one `data` event per `window` (default zero: every
    /// batch is sent as soon as it is appended). The batches appended meanwhile go together,
    /// in one `data` event and one write, when the window ends: a batch waits at most
    /// `window` longer, and each connection makes one write (one system call, one wake)
    /// per window instead of one per batch. The load test measures what that saves
    /// (`chord/tests/sse_load.rs` with `CHORD_LOAD_COALESCE_MS`).
    ///
    /// ```
    /// # use chord::streams::{Log, Streams};
    /// # use chord::store::JsonlStore;
    /// # use std::time::Duration;
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Default::default())?);
    /// // A browser does not need more than 20 updates a second.
    /// let streams = Streams::new(&log).coalesce(Duration::from_millis(50));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn coalesce(mut self, window: Duration) -> Streams {
        self.coalesce = window;
        self
    }

    /// The `Cache-Control` of catch-up and long-poll reads (default
    /// `private, max-age=60, stale-while-revalidate=300`, or `private, no-cache`
    /// once a read hook is set;
    /// `public, ...` for streams every user may read). Set, it holds with a read hook too,
    /// and every read then also answers `Vary: Authorization, Cookie` (see
    /// [`reads`](Streams::reads)).
    ///
    /// The answers whose records move as the log grows, a joiner's `offset=base` and
    /// `offset=-1` (or no offset), are sent with it shortened to the log's time floor
    /// ([`LogBuilder::keep_for`](super::LogBuilder::keep_for), 6 minutes by default): a cache
    /// holding one longer could hand out a `Stream-Next-Offset` the log no longer serves, and
    /// every reader joining from it would meet `410 Gone`. Its freshness (`max-age`,
    /// `s-maxage`) is cut to the floor and its staleness (`stale-while-revalidate`,
    /// `stale-if-error`) to what is left; answers at an offset the server handed out keep
    /// the policy as given, as their records never change.
    ///
    /// ```
    /// use axum::http::HeaderValue;
    /// use chord::streams::{LogBuilder, Streams};
    /// use std::time::Duration;
    /// # let dir = tempfile::tempdir()?;
    /// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
    /// // A public stream behind a CDN; a joiner's answer is given out for at most 2 minutes
    /// // (`max-age=60, stale-while-revalidate=60`), as the log keeps 2 minutes.
    /// let log = LogBuilder::new().keep_for(Duration::from_secs(120)).build(store);
    /// let streams = Streams::new(&log).cache_control(HeaderValue::from_static(
    ///     "public, max-age=60, stale-while-revalidate=300",
    /// ));
    /// # let _ = streams.router();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cache_control(mut self, value: HeaderValue) -> Streams {
        self.cache_control = value;
        self.cache_control_set = true;
        self
    }

    /// The cross-origin policy of every route: which pages on other origins may read (and,
    /// with the write side on, write), with or without credentials. The default,
    /// [`default_cors`], lets a page on any origin read without credentials (cookies are not
    /// sent; an `Authorization` header is, when the page sets one) and exposes the protocol's
    /// headers (`Stream-Next-Offset` and the rest) to it. `None` answers no CORS request, so
    /// browsers allow only same-origin pages.
    ///
    /// To send cookies across origins, name the origins: a credentialed request needs an
    /// exact `Access-Control-Allow-Origin`, never `*`.
    ///
    /// ```
    /// use chord::streams::{default_cors, Log, Streams};
    /// use axum::http::HeaderValue;
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?);
    /// let app = HeaderValue::from_static("https://app.example");
    /// let streams = Streams::new(&log)
    ///     .cors(Some(default_cors().allow_origin(app).allow_credentials(true)));
    /// # let _ = streams.router();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    ///
    /// [`router`](Streams::router) panics, as tower-http's layer does, on a policy no browser
    /// accepts: credentials allowed together with any origin (`*`).
    pub fn cors(mut self, policy: Option<CorsLayer>) -> Streams {
        self.cors = policy;
        self
    }

    /// Enables the protocol's write side: `PUT` (create, or confirm), `POST` (append wire
    /// batches; the body is one JSON array of them), nothing else. Every request goes through
    /// `authorize` first, which sees its request line and headers ([`WriteRequest`]) and
    /// answers an [`Access`] (or a `bool`: `false` is [`Access::Forbidden`]); one it refuses
    /// answers 401 or 403 at once, with an empty body and `Connection: close`, before a byte
    /// of its body is read, and changes nothing. An authorized request's body is then read
    /// within the router's bounds ([`max_body`](Streams::max_body),
    /// [`body_budget`](Streams::body_budget), [`body_timeout`](Streams::body_timeout),
    /// [`body_wait`](Streams::body_wait)). [`reads`](Streams::reads) is its counterpart for
    /// reads.
    ///
    /// Appends go to the log like a producer's, checked as [`Store::append`] checks them.
    /// Only for streams no producer in the process writes to: a [`LogWriter`]'s encoder does
    /// not know the batches appended here, so its later path ids could clash.
    ///
    /// [`LogWriter`]: crate::store::LogWriter
    pub fn writes<F, A>(mut self, authorize: F) -> Streams
    where
        F: Fn(&WriteRequest<'_>) -> A + Send + Sync + 'static,
        A: Into<Access>,
    {
        self.write_hook = Some(Arc::new(move |r: &WriteRequest<'_>| authorize(r).into()));
        self
    }

    /// Authorizes every read: a catch-up `GET`, a long-poll, an SSE `GET` and a `HEAD`, on a
    /// chord log or a [`backend`](Streams::backend)'s stream, each goes through `authorize`
    /// first, which sees what it asks, its address, URI and headers ([`ReadRequest`]) and
    /// answers an [`Access`] (or a `bool`: `false` is [`Access::Forbidden`]). A refused
    /// read answers 401 (with `WWW-Authenticate: Bearer`) or 403, with an empty body and
    /// none of the stream's headers (no `Stream-Next-Offset`, no base offset, no
    /// `Content-Type` of the stream), before the stream is looked up: a refused reader
    /// learns nothing of it, not even whether it exists. The cross-origin policy's headers
    /// are still on the refusal, so a page on an allowed origin sees its status.
    ///
    /// A fork (`PUT` with `Stream-Forked-From`) is a read of its source: once the write hook
    /// has allowed the new stream, `authorize` is asked about the source
    /// ([`ReadKind::Fork`](super::ReadKind::Fork), the source's address, the `PUT`'s URI and
    /// headers), and a refused source answers as a refused read of it, copying nothing and
    /// telling nothing of it.
    ///
    /// Without a hook (the default) every read is served. Only a malformed name or an
    /// unknown `live` mode is answered (400) before the hook, as neither says anything of
    /// a stream. Catch-up and long-poll reads are then `private, no-cache`
    /// unless [`cache_control`](Streams::cache_control) says otherwise:
    /// a browser revalidates a read it kept, through the hook, before it uses it again.
    /// Every read (and its refusal) also answers `Vary: authorization, cookie`, whatever the
    /// policy: a shared cache that stores an answer keys it by the credential's usual
    /// carriers, and never gives it to a request without them. A hook that reads a credential
    /// from another header must keep shared caches out with its policy (`private`).
    /// Preflight `OPTIONS` requests carry no credentials, and are answered by the
    /// cross-origin policy without the hook. How pages on other origins send a credential
    /// (a header, a cookie, a query parameter) is in the [module docs](super#credentials-across-origins).
    ///
    /// ```
    /// use axum::http::header::{AUTHORIZATION, COOKIE};
    /// use chord::store::Address;
    /// use chord::streams::{Access, Log, Streams};
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?);
    /// /// Whether the holder of `credential` may read `address` (the application's rule).
    /// fn may_read(credential: &str, address: &Address) -> bool {
    ///     credential == "t0ken" && address.namespace == "lanes"
    /// }
    ///
    /// let streams = Streams::new(&log).reads(|r| {
    ///     // A bearer token (fetch), else a `session` cookie (fetch or EventSource).
    ///     let bearer = r.headers.get(AUTHORIZATION)
    ///         .and_then(|v| v.to_str().ok())
    ///         .and_then(|v| v.strip_prefix("Bearer "));
    ///     let session = r.headers.get_all(COOKIE).iter()
    ///         .filter_map(|v| v.to_str().ok())
    ///         .flat_map(|v| v.split(';'))
    ///         .find_map(|c| c.trim().strip_prefix("session="));
    ///     match bearer.or(session) {
    ///         None => Access::Unauthorized,
    ///         Some(credential) if may_read(credential, r.address) => Access::Allow,
    ///         Some(_) => Access::Forbidden,
    ///     }
    /// });
    /// # let _ = streams.router();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reads<F, A>(mut self, authorize: F) -> Streams
    where
        F: Fn(&ReadRequest<'_>) -> A + Send + Sync + 'static,
        A: Into<Access>,
    {
        self.read_hook = Some(Arc::new(move |r: &ReadRequest<'_>| authorize(r).into()));
        if !self.cache_control_set {
            self.cache_control = HeaderValue::from_static(AUTHORIZED_CACHE_CONTROL);
        }
        self
    }

    /// The largest request body an authorized write reads (default 16 MiB, at most
    /// `u32::MAX`): a `Content-Length`
    /// over it answers 413 before a byte is read, and so does a body of unknown length once it
    /// passes it. No other request's body is ever read.
    pub fn max_body(mut self, bytes: usize) -> Streams {
        self.bodies.set_max(bytes);
        self
    }

    /// The bytes of request bodies the router holds at once, across all its requests
    /// (default 64 MiB; clones of these
    /// `Streams`, and every router made from them, share one budget). A body's bytes are
    /// reserved before they are read: all of its `Content-Length` at once, waiting at most
    /// [`body_wait`](Streams::body_wait) for room; a body of unknown length 64 KiB first
    /// (waiting likewise), then in steps that double as it arrives, without waiting (a request holding room never waits for more, so
    /// requests cannot wait on each other in a cycle). A request that finds no room answers
    /// 503 with `Retry-After`; one larger than the whole budget answers 413.
    ///
    /// ```
    /// # use chord::streams::{Log, Streams};
    /// # use chord::store::JsonlStore;
    /// # use std::time::Duration;
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Default::default())?);
    /// // Small appends from many writers: 1 MiB each, 32 MiB in all, 10 s to send one.
    /// let streams = Streams::new(&log)
    ///     .writes(|_| true)
    ///     .max_body(1 << 20)
    ///     .body_budget(32 << 20)
    ///     .body_timeout(Duration::from_secs(10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn body_budget(mut self, bytes: usize) -> Streams {
        self.bodies.set_budget(bytes);
        self
    }

    /// How long an authorized request's body may take to arrive once its reading starts
    /// (default 30 s); a slower one answers
    /// 408 and its connection closes.
    pub fn body_timeout(mut self, timeout: Duration) -> Streams {
        self.bodies.timeout = timeout;
        self
    }

    /// How long an authorized request waits for room in the
    /// [`body_budget`](Streams::body_budget) before it answers 503 (default 5 s).
    pub fn body_wait(mut self, wait: Duration) -> Streams {
        self.bodies.wait = wait;
        self
    }

    /// The timing of this router's SSE responses, ending early when `drain` fires.
    pub(super) fn sse_timing(&self, drain: Option<Draining>) -> Timing {
        Timing {
            lifetime: self.sse_lifetime,
            keep_alive: self.keep_alive,
            coalesce: self.coalesce,
            drain,
        }
    }

    /// The liveness and readiness routes of this router's log, with [`Health`]'s defaults
    /// (`/healthz`, `/readyz`): merge them into the application's router. [`Health::new`]
    /// configures them.
    ///
    /// [`Health`]: super::Health
    /// [`Health::new`]: super::Health::new
    pub fn health(&self) -> Router {
        super::health::Health::of(Arc::clone(&self.source)).router()
    }

    /// The router: [`ROUTE`]. Add routes to it, or nest it under a prefix.
    ///
    /// One handler per verb: `GET` and `HEAD` read, `OPTIONS` answers with the methods
    /// served, and `PUT`, `POST` and `DELETE` are routed only once [`writes`](Streams::writes)
    /// enables them; any other method answers `405` with `Allow` naming those served. Every
    /// answer, whatever route, verb or status, carries the same security headers
    /// (`X-Content-Type-Options: nosniff`, `Cross-Origin-Resource-Policy: cross-origin`), and
    /// one to a request whose body was left unread has `Connection: close`.
    pub fn router(self) -> Router {
        routes::router(ROUTE, self, None)
    }

    /// A router serving one namespace's streams at `{prefix}/{key}` (`prefix` starts with a
    /// `/`), for clients that expect one path segment per stream, e.g. the protocol's
    /// conformance suite (`/v1/stream/{key}`). The same routes as [`router`](Streams::router).
    ///
    /// ```
    /// use chord::streams::{Log, Streams};
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?);
    /// let app: axum::Router = Streams::new(&log).namespace_router("/v1/stream", "v1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn namespace_router(self, prefix: &str, namespace: &str) -> Router {
        routes::router(&format!("{prefix}/{{key}}"), self, Some(namespace.into()))
    }

    /// The methods this router serves, for `Allow`.
    pub(super) fn allow(&self) -> HeaderValue {
        HeaderValue::from_static(if self.write_hook.is_some() {
            "GET, HEAD, PUT, POST, DELETE, OPTIONS"
        } else {
            "GET, HEAD, OPTIONS"
        })
    }
}

/// The response headers of the protocol a page on another origin must be able to read.
pub const EXPOSED_HEADERS: &[&str] = &[
    "stream-next-offset",
    "stream-up-to-date",
    "stream-cursor",
    "stream-closed",
    "stream-ttl",
    "stream-expires-at",
    "stream-seq",
    "stream-sse-data-encoding",
    "chord-base-offset",
    "producer-epoch",
    "producer-seq",
    "producer-expected-seq",
    "producer-received-seq",
    "etag",
    "content-type",
    "cache-control",
];

/// The request headers of the protocol a page on another origin may send.
const ALLOWED_HEADERS: &[&str] = &[
    "content-type",
    "authorization",
    "if-none-match",
    "stream-closed",
    "stream-seq",
    "stream-ttl",
    "stream-expires-at",
    "stream-forked-from",
    "stream-fork-offset",
    "stream-fork-sub-offset",
    "producer-id",
    "producer-epoch",
    "producer-seq",
];

/// The default cross-origin policy ([`Streams::cors`]): any origin, no credentials, the
/// protocol's methods and headers allowed, its response headers exposed ([`EXPOSED_HEADERS`]),
/// preflights cached for a day. Start from it to name origins or allow credentials.
pub fn default_cors() -> CorsLayer {
    let names = |list: &[&'static str]| {
        list.iter()
            .map(|h| header::HeaderName::from_static(h))
            .collect::<Vec<_>>()
    };
    CorsLayer::new()
        .allow_origin(AllowOrigin::any())
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::PUT,
            Method::POST,
            Method::DELETE,
        ])
        .allow_headers(names(ALLOWED_HEADERS))
        .expose_headers(names(EXPOSED_HEADERS))
        .max_age(Duration::from_secs(86_400))
}

/// The path of `address`'s stream under [`ROUTE`], percent-encoded.
///
/// ```
/// use chord::store::Address;
/// use chord::streams::stream_path;
/// assert_eq!(stream_path(&Address::new("lanes", "main")), "/streams/lanes/main");
/// assert_eq!(stream_path(&Address::new("sessions/42", "a b")), "/streams/sessions%2F42/a%20b");
/// ```
pub fn stream_path(address: &Address) -> String {
    format!(
        "/streams/{}/{}",
        names::percent_encode(&address.namespace),
        names::percent_encode(&address.key)
    )
}
