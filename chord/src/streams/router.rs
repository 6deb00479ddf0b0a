//! [`Streams`]: the axum router serving every address's log as a Durable Stream.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tower_http::cors::{AllowOrigin, CorsLayer};

use tokio::time::{sleep_until, Instant};
use tracing::Instrument;

use super::auth::{self, Access, AuthorizeRead, AuthorizeWrite, ReadKind, ReadRequest};
use super::catchup::CatchUpBody;
use super::generic;
use super::log::{Source, Want};
use super::memory::Backend;
use super::metrics::{self, Reading};
use super::offset::Start;
use super::server::Draining;
use super::sse::{self, Changes, Feed, Next, Pending, SseBody, Timing};
use super::tail::{Entry, Found, Tail};
use super::write::{self, Bodies, WriteKind, WriteRequest};
use super::{frame, Log, Offset};
use crate::store::{Address, Record, Store};

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
pub const DEFAULT_LONG_POLL: Duration = Duration::from_secs(20);

/// The default [`Streams::sse_lifetime`].
pub const DEFAULT_SSE_LIFETIME: Duration = Duration::from_secs(60);

/// The default interval of keep-alive comments on an idle SSE response.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The default `Cache-Control` of catch-up and long-poll reads.
pub const DEFAULT_CACHE_CONTROL: &str = "private, max-age=60, stale-while-revalidate=300";

/// The default `Cache-Control` of catch-up and long-poll reads once a read hook is set
/// ([`Streams::reads`]): a browser may keep a read but asks the server again before each use
/// (a conditional request, answered 304 when unchanged), so that every read goes through the
/// hook and a cached read is never shown to a request without the credential.
pub const AUTHORIZED_CACHE_CONTROL: &str = "private, no-cache";

/// Most bytes of batches read at once for a catch-up response (a single larger record is
/// read whole); a response reaching past one chunk is sent a chunk at a time
/// ([`CatchUpBody`]).
const CHUNK: usize = 256 * 1024;

/// Most bytes of batches in one SSE `data` event (a single larger record is sent whole): a
/// reader applies a `data` event once the `control` event after it arrives, so a reader
/// catching up over a link that breaks often progresses in steps this small.
const SSE_CHUNK: usize = 16 * 1024;

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
    source: Arc<dyn Source>,
    long_poll: Duration,
    sse_lifetime: Duration,
    keep_alive: Duration,
    coalesce: Duration,
    cache_control: HeaderValue,
    /// Whether [`cache_control`](Streams::cache_control) was called (a read hook then keeps it).
    cache_control_set: bool,
    write_hook: Option<AuthorizeWrite>,
    read_hook: Option<AuthorizeRead>,
    bodies: Bodies,
    backend: Option<Arc<dyn Backend>>,
    cors: Option<CorsLayer>,
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
    /// Serves `log`'s addresses, read-only, with the defaults.
    pub fn new<S: Store + Send + 'static>(log: &Log<S>) -> Streams {
        Streams {
            source: log.source(),
            long_poll: DEFAULT_LONG_POLL,
            sse_lifetime: DEFAULT_SSE_LIFETIME,
            keep_alive: DEFAULT_KEEP_ALIVE,
            coalesce: Duration::ZERO,
            cache_control: HeaderValue::from_static(DEFAULT_CACHE_CONTROL),
            cache_control_set: false,
            write_hook: None,
            read_hook: None,
            bodies: Bodies::default(),
            backend: None,
            cors: Some(default_cors()),
        }
    }

    /// Holds the streams created through the protocol that are not chord logs in `backend`
    /// (e.g. [`Memory`](super::Memory)): with the write side on, a `PUT` on an address with no
    /// chord records creates such a stream, of any content type (bytes stored as sent;
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

    /// How long a long-poll waits for a record before answering 204 (default
    /// [`DEFAULT_LONG_POLL`]).
    pub fn long_poll(mut self, timeout: Duration) -> Streams {
        self.long_poll = timeout;
        self
    }

    /// How long an SSE response lasts before the server ends it and the client reconnects
    /// from its offset (default [`DEFAULT_SSE_LIFETIME`], as the protocol advises).
    pub fn sse_lifetime(mut self, lifetime: Duration) -> Streams {
        self.sse_lifetime = lifetime;
        self
    }

    /// Sends an SSE comment after `every` without an event (default [`DEFAULT_KEEP_ALIVE`]).
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
    /// [`DEFAULT_CACHE_CONTROL`], or [`AUTHORIZED_CACHE_CONTROL`] once a read hook is set;
    /// `public, ...` for streams every user may read). Set, it holds with a read hook too.
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
    /// Without a hook (the default) every read is served. Only a malformed name or an
    /// unknown `live` mode is answered (400) before the hook, as neither says anything of
    /// a stream. Catch-up and long-poll reads are then [`AUTHORIZED_CACHE_CONTROL`]
    /// (`private, no-cache`) unless [`cache_control`](Streams::cache_control) says otherwise:
    /// a browser revalidates a read it kept, through the hook, before it uses it again.
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

    /// The largest request body an authorized write reads (default
    /// [`WRITE_BODY_LIMIT`](super::WRITE_BODY_LIMIT), at most `u32::MAX`): a `Content-Length`
    /// over it answers 413 before a byte is read, and so does a body of unknown length once it
    /// passes it. No other request's body is ever read.
    pub fn max_body(mut self, bytes: usize) -> Streams {
        self.bodies.set_max(bytes);
        self
    }

    /// The bytes of request bodies the router holds at once, across all its requests
    /// (default [`DEFAULT_BODY_BUDGET`](super::DEFAULT_BODY_BUDGET); clones of these
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
    /// (default [`DEFAULT_BODY_TIMEOUT`](super::DEFAULT_BODY_TIMEOUT)); a slower one answers
    /// 408 and its connection closes.
    pub fn body_timeout(mut self, timeout: Duration) -> Streams {
        self.bodies.timeout = timeout;
        self
    }

    /// How long an authorized request waits for room in the
    /// [`body_budget`](Streams::body_budget) before it answers 503 (default
    /// [`DEFAULT_BODY_WAIT`](super::DEFAULT_BODY_WAIT)).
    pub fn body_wait(mut self, wait: Duration) -> Streams {
        self.bodies.wait = wait;
        self
    }

    /// The timing of this router's SSE responses, ending early when `drain` fires.
    fn sse_timing(&self, drain: Option<Draining>) -> Timing {
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
    pub fn router(self) -> Router {
        let cors = self.cors.clone();
        with_cors(
            Router::new()
                .route(ROUTE, any(handle))
                .with_state(Arc::new(self)),
            cors,
        )
    }

    /// A router serving one namespace's streams at `{prefix}/{key}` (`prefix` starts with a
    /// `/`), for clients that expect one path segment per stream, e.g. the protocol's
    /// conformance suite (`/v1/stream/{key}`).
    ///
    /// ```
    /// use chord::streams::{Log, Streams};
    /// # let dir = tempfile::tempdir()?;
    /// # let log = Log::new(chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?);
    /// let app: axum::Router = Streams::new(&log).namespace_router("/v1/stream", "v1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn namespace_router(self, prefix: &str, namespace: &str) -> Router {
        let namespace: Arc<str> = namespace.into();
        let cors = self.cors.clone();
        let streams = Arc::new(self);
        let serve = move |method: Method,
                          path: Result<Path<String>, PathRejection>,
                          query: Query<HashMap<String, String>>,
                          uri: Uri,
                          headers: HeaderMap,
                          draining: Option<Extension<Draining>>,
                          body: Body| {
            let streams = Arc::clone(&streams);
            let namespace = Arc::clone(&namespace);
            async move {
                let Ok(Path(key)) = path else {
                    return plain(StatusCode::BAD_REQUEST, "malformed stream address\n");
                };
                let span = request_span(&method, &namespace, &key);
                serve_address(
                    streams,
                    method,
                    (namespace.to_string(), key),
                    query,
                    (&uri, draining.map(|Extension(d)| d)),
                    headers,
                    body,
                )
                .instrument(span)
                .await
            }
        };
        with_cors(
            Router::new().route(&format!("{prefix}/{{key}}"), any(serve)),
            cors,
        )
    }
}

fn with_cors(router: Router, cors: Option<CorsLayer>) -> Router {
    match cors {
        Some(layer) => router.layer(layer),
        None => router,
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
        percent_encode(&address.namespace),
        percent_encode(&address.key)
    )
}

/// What a name keeps unescaped in a path segment: RFC 3986's unreserved characters.
/// Everything else is escaped, `/` and `+` included, so a name is always one segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn percent_encode(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err("a namespace or key must be 1 to 1024 bytes\n");
    }
    if name.chars().any(char::is_control) {
        return Err("a namespace or key must not hold control characters\n");
    }
    Ok(())
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    let mut r = (status, text.into()).into_response();
    security(r.headers_mut());
    r
}

fn security(headers: &mut HeaderMap) {
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("cross-origin"),
    );
}

/// The address a `Stream-Forked-From` path names: a sibling of the request's path (same
/// prefix, same namespace), or a path under [`ROUTE`]. `None`: neither.
fn fork_source(request: &str, address: &Address, from: &str) -> Option<Address> {
    let from = from.trim();
    let dir = request.rsplit_once('/').map_or("", |(d, _)| d);
    if let Some(key) = from.strip_prefix(dir).and_then(|k| k.strip_prefix('/')) {
        if !key.is_empty() && !key.contains('/') {
            return Some(Address::new(
                address.namespace.clone(),
                percent_decode(key)?,
            ));
        }
    }
    let rest = from.strip_prefix("/streams/")?;
    let (namespace, key) = rest.split_once('/')?;
    if key.contains('/') {
        return None;
    }
    Some(Address::new(
        percent_decode(namespace)?,
        percent_decode(key)?,
    ))
}

/// Decodes one path segment as the router decodes a request's: `%XX` escapes, `+` a plain
/// plus (a space only in query strings). `None` for an escape that is not `%` and two
/// hexadecimal digits, or bytes that are not UTF-8: the request is answered 400.
fn percent_decode(s: &str) -> Option<String> {
    let escapes_ok = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_ok {
        return None;
    }
    percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// The absolute URL of a request (for `Location`): `http://` and its `Host`, or else its path.
fn location(uri: &Uri, headers: &HeaderMap) -> String {
    match headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
        Some(host) => format!("http://{host}{}", uri.path()),
        None => uri.path().to_owned(),
    }
}

/// The answer to an `OPTIONS` when there is no [`cors`](Streams::cors) policy (with one, its
/// layer answers every `OPTIONS`): the protocol's methods, and no CORS grant.
fn options() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, PUT, POST, DELETE, OPTIONS"),
    );
    security(h);
    r
}

fn offset_value(seq: u64) -> HeaderValue {
    HeaderValue::from_str(&Offset::from_seq(seq).to_string()).expect("hex digits")
}

async fn handle(
    State(streams): State<Arc<Streams>>,
    method: Method,
    path: Result<Path<(String, String)>, PathRejection>,
    Query(query): Query<HashMap<String, String>>,
    (uri, draining): (Uri, Option<Extension<Draining>>),
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(Path(names)) = path else {
        return plain(StatusCode::BAD_REQUEST, "malformed stream address\n");
    };
    let span = request_span(&method, &names.0, &names.1);
    let draining = draining.map(|Extension(d)| d);
    serve_address(
        streams,
        method,
        names,
        Query(query),
        (&uri, draining),
        headers,
        body,
    )
    .instrument(span)
    .await
}

/// The span of one request (its response's body, an SSE stream, is polled outside it).
fn request_span(method: &Method, namespace: &str, key: &str) -> tracing::Span {
    tracing::debug_span!("chord.request", method = %method, namespace, key)
}

async fn serve_address(
    streams: Arc<Streams>,
    method: Method,
    (namespace, key): (String, String),
    Query(query): Query<HashMap<String, String>>,
    (uri, draining): (&Uri, Option<Draining>),
    headers: HeaderMap,
    body: Body,
) -> Response {
    if method == Method::OPTIONS {
        return options();
    }
    if let Err(why) = check_name(&namespace).and_then(|()| check_name(&key)) {
        return plain(StatusCode::BAD_REQUEST, why);
    }
    let address = Address::new(namespace, key);
    let write = match method {
        Method::GET | Method::HEAD => None,
        Method::PUT => Some(WriteKind::Create),
        Method::POST => Some(WriteKind::Append),
        Method::DELETE => Some(WriteKind::Delete),
        _ => return write::not_allowed(),
    };
    if let Some(write) = write {
        let request = WriteRequest {
            write,
            address: &address,
            uri,
            headers: &headers,
        };
        // Authorized from the request line and headers alone: a refused request's body is
        // never read, and its connection closes after the answer.
        let Some(authorize) = &streams.write_hook else {
            return write::not_allowed();
        };
        let access = authorize(&request);
        if access != Access::Allow {
            let mut r = auth::refusal(access);
            let h = r.headers_mut();
            h.insert(header::CONNECTION, HeaderValue::from_static("close"));
            security(h);
            return r;
        }
        let body = match write::read_body(&streams.bodies, &headers, body).await {
            Ok(body) => body,
            Err(why) => {
                let mut r = why.response();
                security(r.headers_mut());
                return r;
            }
        };
        let tail = match load(&streams, &address, Want::default()).await {
            Ok(tail) => tail,
            Err(response) => return *response,
        };
        if let Some(backend) = &streams.backend {
            let found = backend.get(&address);
            let deleted = found.as_ref().is_some_and(|s| s.lock().deleted);
            if found.is_some() || tail.is_none() {
                let fork = headers
                    .get("stream-forked-from")
                    .map(|v| fork_source(uri.path(), &address, v.to_str().unwrap_or("")));
                let mut r = match (write, found) {
                    (WriteKind::Create, _) => generic::create(
                        &**backend,
                        &address,
                        fork,
                        &location(uri, &headers),
                        &headers,
                        &body,
                    ),
                    (WriteKind::Append | WriteKind::Delete, Some(_)) if deleted => generic::gone(),
                    (WriteKind::Append, Some(s)) => {
                        generic::append(&**backend, &s, &headers, &body)
                    }
                    (WriteKind::Delete, _) => generic::delete(&**backend, &address),
                    (WriteKind::Append, None) => plain(StatusCode::NOT_FOUND, "no such stream\n"),
                };
                security(r.headers_mut());
                return r;
            }
        }
        let source = Arc::clone(&streams.source);
        return write::handle(source, tail, write, &address, &headers, &body).await;
    }
    let read = if method == Method::HEAD {
        ReadKind::Head
    } else {
        match query.get("live").map(String::as_str) {
            None => ReadKind::CatchUp,
            Some("long-poll") => ReadKind::LongPoll,
            Some("sse") => ReadKind::Sse,
            Some(other) => return unknown_live(other),
        }
    };
    if let Some(authorize) = &streams.read_hook {
        let request = ReadRequest {
            read,
            address: &address,
            uri,
            headers: &headers,
        };
        // Before the stream is looked up: a refused reader learns nothing of it.
        let access = authorize(&request);
        if access != Access::Allow {
            let mut r = auth::refusal(access);
            security(r.headers_mut());
            return r;
        }
    }
    if let Some(stream) = streams.backend.as_ref().and_then(|b| b.get(&address)) {
        let mut r = read_generic(&streams, stream, &method, &query, &headers, draining).await;
        security(r.headers_mut());
        return r;
    }
    // What the read wants of the tail cache (the offset's errors are answered below, after
    // a missing stream's 404).
    let want = Want {
        live: method == Method::GET && query.contains_key("live"),
        after: match Start::parse(query.get("offset").map(String::as_str)) {
            Ok(Start::At(offset)) => Some(offset.seq()),
            _ => None,
        },
    };
    let tail = match load(&streams, &address, want).await {
        Ok(Some(tail)) => tail,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "no such stream\n"),
        Err(response) => return *response,
    };
    if method == Method::HEAD {
        return head(&tail);
    }
    let start = match Start::parse(query.get("offset").map(String::as_str)) {
        Ok(start) => start,
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("{e}\n")),
    };
    let cursor = match query.get("cursor").map(|c| c.parse::<u64>()) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(_)) => None, // a cursor is only a cache key: an unknown one is no error
    };
    let reader = Reader {
        streams: Arc::clone(&streams),
        address,
        tail,
        draining,
    };
    match query.get("live").map(String::as_str) {
        None => reader.catch_up(start, &headers).await,
        Some("long-poll") => {
            if !query.contains_key("offset") {
                return plain(StatusCode::BAD_REQUEST, "live=long-poll needs an offset\n");
            }
            reader.long_poll(start, cursor).await
        }
        Some("sse") => reader.sse(start, cursor),
        Some(other) => unknown_live(other),
    }
}

fn unknown_live(mode: &str) -> Response {
    plain(
        StatusCode::BAD_REQUEST,
        format!("unknown live mode {mode:?}: expected long-poll or sse\n"),
    )
}

async fn read_generic(
    streams: &Streams,
    stream: Arc<super::memory::MemoryStream>,
    method: &Method,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    draining: Option<Draining>,
) -> Response {
    if stream.lock().deleted {
        return generic::gone();
    }
    if method == Method::HEAD {
        return generic::head(&stream);
    }
    let start = match Start::parse(query.get("offset").map(String::as_str)) {
        Ok(start) => start,
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("{e}\n")),
    };
    let live = query.get("live").map(String::as_str);
    if live.is_some() && !query.contains_key("offset") {
        return plain(StatusCode::BAD_REQUEST, "live reads need an offset\n");
    }
    let cursor = query.get("cursor").and_then(|c| c.parse::<u64>().ok());
    let get = generic::Get {
        start,
        live,
        cursor,
        headers,
        cache_control: &streams.cache_control,
        long_poll: streams.long_poll,
        sse: streams.sse_timing(draining),
    };
    generic::get(stream, get).await
}

async fn load(
    streams: &Streams,
    address: &Address,
    want: Want,
) -> Result<Option<Arc<Tail>>, Box<Response>> {
    let source = Arc::clone(&streams.source);
    let at = address.clone();
    // Loading reads the store: not on a runtime worker.
    let span = tracing::debug_span!("chord.store.tail", stream = %address);
    match tokio::task::spawn_blocking(move || span.in_scope(|| source.tail(&at, want))).await {
        Ok(Ok(tail)) => Ok(tail),
        Ok(Err(e)) => Err(Box::new({
            metrics::read_failed();
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading {address}: {e}\n"),
            )
        })),
        Err(_) => Err(Box::new(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the read was cancelled\n",
        ))),
    }
}

/// The metadata every response for a stream carries.
fn stream_headers(headers: &mut HeaderMap, tail: &Tail) {
    let position = tail.position();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(BASE_OFFSET_HEADER, offset_value(position.base));
    security(headers);
}

fn head(tail: &Tail) -> Response {
    let mut r = Response::new(Body::empty());
    let h = r.headers_mut();
    stream_headers(h, tail);
    h.insert("stream-next-offset", offset_value(tail.position().last));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// One read of one stream.
struct Reader {
    streams: Arc<Streams>,
    address: Address,
    tail: Arc<Tail>,
    /// The server's drain signal, when a [`Server`](super::Server) serves the read.
    draining: Option<Draining>,
}

/// A chunk of records read from the cache or the store.
enum Chunk {
    Entries(Vec<Arc<Entry>>),
    Records(Vec<Record>),
}

impl Chunk {
    fn is_empty(&self) -> bool {
        match self {
            Chunk::Entries(e) => e.is_empty(),
            Chunk::Records(r) => r.is_empty(),
        }
    }

    fn last_seq(&self) -> Option<u64> {
        match self {
            Chunk::Entries(e) => e.last().map(|e| e.seq),
            Chunk::Records(r) => r.last().map(|r| r.seq),
        }
    }

    fn batches(&self) -> Vec<&str> {
        match self {
            Chunk::Entries(e) => e.iter().map(|e| &*e.batch).collect(),
            Chunk::Records(r) => r.iter().map(|r| r.batch.as_str()).collect(),
        }
    }
}

impl Reader {
    /// Where `start` is, as a seq: `None` for `now`.
    fn resolve(&self, start: Start) -> u64 {
        let position = self.tail.position();
        match start {
            Start::Beginning => position.floor,
            Start::Now => position.last,
            Start::At(offset) => offset.seq(),
        }
    }

    /// The records after `after`, from the cache or else the store. `None`: gone.
    async fn chunk(&self, after: u64) -> Result<Option<Chunk>, Response> {
        match self.tail.read(after, CHUNK) {
            Found::Entries(entries) => Ok(Some(Chunk::Entries(entries))),
            Found::Gone => Ok(None),
            Found::Miss => {
                metrics::cache_miss();
                let source = Arc::clone(&self.streams.source);
                let address = self.address.clone();
                let span = tracing::debug_span!("chord.store.read", stream = %address, after);
                let read = move || span.in_scope(|| source.read(&address, after, CHUNK));
                match tokio::task::spawn_blocking(read).await {
                    Ok(Ok(Some(records))) => Ok(Some(Chunk::Records(records))),
                    // Compacted away meanwhile: gone, as the cache would say now.
                    Ok(Ok(None)) => Ok(None),
                    Ok(Err(e)) => Err({
                        metrics::read_failed();
                        plain(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            format!("reading {}: {e}\n", self.address),
                        )
                    }),
                    Err(_) => Err(plain(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the read was cancelled\n",
                    )),
                }
            }
        }
    }

    fn gone(&self) -> Response {
        metrics::gone();
        let mut r = plain(
            StatusCode::GONE,
            "offset no longer served (before the oldest base kept, or beyond the tail): \
             restart from the latest base\n",
        );
        stream_headers(r.headers_mut(), &self.tail);
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        r
    }

    /// A 200 with the chunk's records as one JSON array.
    fn data(
        &self,
        after: u64,
        chunk: &Chunk,
        cursor: Option<u64>,
        headers: &HeaderMap,
    ) -> Response {
        let next = chunk.last_seq().unwrap_or(after);
        let up_to_date = next >= self.tail.position().last;
        let etag = format!("\"{}:{}\"", Offset::from_seq(after), Offset::from_seq(next));
        let matches = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
        let mut r = if matches {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            Response::new(Body::from(frame::json_array(chunk.batches())))
        };
        let h = r.headers_mut();
        stream_headers(h, &self.tail);
        h.insert("stream-next-offset", offset_value(next));
        if up_to_date {
            h.insert("stream-up-to-date", HeaderValue::from_static("true"));
        }
        if let Some(cursor) = cursor {
            h.insert("stream-cursor", HeaderValue::from(cursor));
        }
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, self.streams.cache_control.clone());
        r
    }

    async fn catch_up(self, start: Start, headers: &HeaderMap) -> Response {
        let after = self.resolve(start);
        if start == Start::Now {
            let mut r = Response::new(Body::from("[]"));
            let h = r.headers_mut();
            stream_headers(h, &self.tail);
            h.insert("stream-next-offset", offset_value(after));
            h.insert("stream-up-to-date", HeaderValue::from_static("true"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return r;
        }
        match self.chunk(after).await {
            Ok(Some(chunk)) => {
                let until = self.tail.position().last;
                match chunk.last_seq() {
                    Some(next) if next < until => self.whole(after, &chunk, until, headers),
                    _ => self.data(after, &chunk, None, headers),
                }
            }
            Ok(None) => self.gone(),
            Err(r) => r,
        }
    }

    /// A 200 with every record after `after` up to `until` as one JSON array, up to date:
    /// `chunk` (the first records) at once, the rest as the connection sends it (see
    /// [`CatchUpBody`] for why one response).
    fn whole(&self, after: u64, chunk: &Chunk, until: u64, headers: &HeaderMap) -> Response {
        let etag = format!(
            "\"{}:{}\"",
            Offset::from_seq(after),
            Offset::from_seq(until)
        );
        let matches = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
        let mut r = if matches {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            let mut first = frame::json_array(chunk.batches());
            first.pop(); // the `]`: the body goes on
            let next = chunk.last_seq().unwrap_or(after);
            Response::new(Body::new(CatchUpBody::new(
                first,
                Arc::clone(&self.streams.source),
                Arc::clone(&self.tail),
                self.address.clone(),
                (next, until),
                CHUNK,
            )))
        };
        let h = r.headers_mut();
        stream_headers(h, &self.tail);
        h.insert("stream-next-offset", offset_value(until));
        h.insert("stream-up-to-date", HeaderValue::from_static("true"));
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, self.streams.cache_control.clone());
        r
    }

    async fn long_poll(self, start: Start, echoed: Option<u64>) -> Response {
        let after = self.resolve(start);
        // Subscribed before the first read, so no record slips between it and the wait.
        let mut changes = self.tail.subscribe();
        let _reading = Reading::new(&self.address);
        let deadline = Instant::now() + self.streams.long_poll;
        // Draining: the poll answers 204 at once, and the client polls the server's successor.
        let mut drain: Pending<()> = match &self.draining {
            Some(d) => Box::pin(d.wait()),
            None => Box::pin(std::future::pending()),
        };
        loop {
            changes.borrow_and_update();
            let chunk = match self.chunk(after).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return self.gone(),
                Err(r) => return r,
            };
            if !chunk.is_empty() {
                return self.data(
                    after,
                    &chunk,
                    Some(frame::cursor(echoed)),
                    &HeaderMap::new(),
                );
            }
            let changed = tokio::select! {
                changed = changes.changed() => changed.is_ok(),
                () = sleep_until(deadline) => false,
                () = &mut drain => false,
            };
            if !changed {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::NO_CONTENT;
                let h = r.headers_mut();
                stream_headers(h, &self.tail);
                h.insert("stream-next-offset", offset_value(after));
                h.insert("stream-up-to-date", HeaderValue::from_static("true"));
                h.insert("stream-cursor", HeaderValue::from(frame::cursor(echoed)));
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return r;
            }
        }
    }

    fn sse(self, start: Start, echoed: Option<u64>) -> Response {
        let after = self.resolve(start);
        if let Found::Gone = self.tail.read(after, 1) {
            return self.gone();
        }
        let timing = self.streams.sse_timing(self.draining.clone());
        let tail = Arc::clone(&self.tail);
        let feed = LogFeed {
            _reading: Reading::new(&self.address),
            changes: Changes::new(self.tail.subscribe()),
            read: None,
            after,
            echoed,
            first: true,
            reader: self,
        };
        let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
        let h = r.headers_mut();
        stream_headers(h, &tail);
        sse::headers(h);
        r
    }
}

/// The SSE events of one reader of a chord log: what it has not had yet, from the tail cache
/// (the same bytes for every reader at the tail) or else the store.
struct LogFeed {
    /// Counts this reader of the stream while it lives.
    _reading: Reading,
    reader: Reader,
    after: u64,
    echoed: Option<u64>,
    changes: Changes,
    /// A store read in flight.
    read: Option<Pending<Option<Vec<Record>>>>,
    /// Nothing sent yet: an empty first read still sends a `control` event.
    first: bool,
}

impl LogFeed {
    fn control(&self, next: u64, up_to_date: bool) -> Vec<u8> {
        let mut out = Vec::new();
        frame::control_event(
            &mut out,
            Offset::from_seq(next),
            frame::cursor(self.echoed),
            up_to_date,
        );
        out
    }

    /// The events for `chunk`, read after `self.after`.
    fn events(&mut self, chunk: &Chunk) -> Bytes {
        self.first = false;
        let last = self.reader.tail.position().last;
        let next = chunk.last_seq().unwrap_or(self.after);
        self.after = next;
        if let Chunk::Entries(e) = chunk {
            if e.len() == 1 && e[0].seq == last && self.echoed.is_none() {
                return e[0].live.clone(); // the same bytes for every reader at the tail
            }
        }
        let batches = chunk.batches();
        // The event's size up front: one allocation, not one per doubling.
        let size: usize = batches.iter().map(|b| b.len() + 1).sum();
        let mut out = Vec::with_capacity(size + 160);
        frame::data_event(&mut out, batches);
        out.extend_from_slice(&self.control(next, next >= last));
        Bytes::from(out)
    }
}

impl Feed for LogFeed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            if let Some(read) = self.read.as_mut() {
                let Poll::Ready(records) = read.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                self.read = None;
                // `None`: the store failed, or compacted the records away meanwhile; the
                // client's next request says which.
                let Some(records) = records else {
                    return Poll::Ready(Next::End);
                };
                return Poll::Ready(Next::Data(self.events(&Chunk::Records(records))));
            }
            if self.changes.waiting() {
                match self.changes.poll_changed(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Ready(true) => {}
                }
            }
            self.changes.seen();
            match self.reader.tail.read(self.after, SSE_CHUNK) {
                Found::Gone => return Poll::Ready(Next::End),
                Found::Miss => {
                    metrics::cache_miss();
                    let source = Arc::clone(&self.reader.streams.source);
                    let address = self.reader.address.clone();
                    let after = self.after;
                    let span = tracing::debug_span!("chord.store.read", stream = %address, after);
                    let read = tokio::task::spawn_blocking(move || {
                        let read = span.in_scope(|| source.read(&address, after, SSE_CHUNK));
                        if read.is_err() {
                            metrics::read_failed();
                        }
                        read
                    });
                    self.read = Some(Box::pin(async move {
                        read.await.ok().and_then(Result::ok).flatten()
                    }));
                }
                Found::Entries(entries) if !entries.is_empty() => {
                    return Poll::Ready(Next::Data(self.events(&Chunk::Entries(entries))));
                }
                Found::Entries(_) => match self.changes.poll_changed(cx) {
                    Poll::Ready(true) => {}
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Pending if self.first => {
                        self.first = false;
                        let control = self.control(self.after, true);
                        return Poll::Ready(Next::Control(Bytes::from(control)));
                    }
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_escaped_segment() {
        assert_eq!(percent_encode("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(percent_encode("a/b c+d%"), "a%2Fb%20c%2Bd%25");
        assert_eq!(percent_encode("é"), "%C3%A9");
        for name in ["a/b c+d%", "é", "%2B", "+", "?&=#"] {
            assert_eq!(percent_decode(&percent_encode(name)).as_deref(), Some(name));
        }
    }

    #[test]
    fn a_segment_decodes_as_a_path_not_a_query() {
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%2Bb").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%2bb").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("").as_deref(), Some(""));
    }

    #[test]
    fn bad_escapes_and_non_utf8_are_refused() {
        for bad in [
            "%", "a%", "a%2", "%zz", "%2g", "%%41", "%FF", "%C3", "%C3%28",
        ] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn fork_sources_are_siblings_or_under_the_route() {
        let here = Address::new("v1", "new");
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/v1/stream/a%2Bb+c"),
            Some(Address::new("v1", "a+b+c"))
        );
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/streams/ns%2F1/k%20"),
            Some(Address::new("ns/1", "k "))
        );
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/v1/stream/a%zz"),
            None
        );
        assert_eq!(fork_source("/v1/stream/new", &here, "/v1/stream/%FF"), None);
        assert_eq!(fork_source("/v1/stream/new", &here, "/streams/a/b/c"), None);
        assert_eq!(fork_source("/v1/stream/new", &here, "/elsewhere/a"), None);
    }

    /// A status and body from `app`.
    async fn call(app: &Router, method: Method, uri: &str, fork: Option<&str>) -> (u16, String) {
        use http_body_util::BodyExt;
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header(header::CONTENT_TYPE, "text/plain");
        if let Some(from) = fork {
            request = request.header("stream-forked-from", from);
        }
        let request = request.body(Body::from("x")).unwrap();
        let response = tower_service::Service::call(&mut app.clone(), request)
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Streams over an empty log, with protocol streams in memory and every write allowed.
    fn memory_streams() -> (tempfile::TempDir, Streams) {
        let dir = tempfile::tempdir().unwrap();
        let store =
            crate::store::JsonlStore::open(dir.path().join("log.jsonl"), Default::default())
                .unwrap();
        let streams = Streams::new(&Log::new(store))
            .backend(super::super::Memory::new())
            .writes(|_| true);
        (dir, streams)
    }

    #[tokio::test]
    async fn a_memory_stream_is_read_over_the_same_sse_body_as_a_log() {
        let (_dir, streams) = memory_streams();
        let app = streams
            .keep_alive(Duration::from_millis(40))
            .sse_lifetime(Duration::from_millis(300))
            .router();
        assert_eq!(call(&app, Method::PUT, "/streams/ns/s", None).await.0, 201);
        let (status, body) =
            call(&app, Method::GET, "/streams/ns/s?offset=-1&live=sse", None).await;
        assert_eq!(status, 200);
        let data = "event: data\ndata:x\n\n";
        assert!(body.starts_with(data), "{body}");
        let control = body[data.len()..].split("\n\n").next().unwrap();
        assert!(
            control.starts_with("event: control\ndata:{\"streamNextOffset\":\"0000000000000001\""),
            "{body}"
        );
        // Keep-alives are sent (how many fit in the lifetime depends on the scheduler).
        assert!(body.contains(": keep-alive\n\n"), "{body:?}");
    }

    #[tokio::test]
    async fn a_plus_in_a_name_is_a_plus_in_the_path_and_in_a_fork_source() {
        let (_dir, streams) = memory_streams();
        let app = streams.router();
        let source = stream_path(&Address::new("ns", "a+b"));
        assert_eq!(source, "/streams/ns/a%2Bb");
        assert_eq!(call(&app, Method::PUT, &source, None).await.0, 201);
        // The literal `+` in the request path names the same stream as `%2B`.
        assert_eq!(
            call(&app, Method::GET, "/streams/ns/a+b", None).await,
            (200, "x".into())
        );
        for from in ["/streams/ns/a+b", "/streams/ns/a%2Bb", "/streams/ns/fork-0"] {
            let at = format!("/streams/ns/fork-{}", from.len());
            let (status, _) = call(&app, Method::PUT, &at, Some(from)).await;
            let expected = if from.ends_with("fork-0") { 404 } else { 201 };
            assert_eq!(status, expected, "forked from {from}");
        }
        for bad in ["/streams/ns/a%2", "/streams/ns/%FF", "/streams/ns/a%zzb"] {
            assert_eq!(
                call(&app, Method::PUT, "/streams/ns/bad", Some(bad)).await,
                (400, "malformed Stream-Forked-From\n".into()),
                "forked from {bad}"
            );
        }
    }
}
