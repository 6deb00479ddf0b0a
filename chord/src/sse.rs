//! Server-Sent Events: a [`Hub`]'s streams served over HTTP with axum.
//!
//! `GET /streams/{namespace}/{key}` answers `text/event-stream`. Each batch is one event whose
//! `data:` is the subscription's wire JSON (one line) and whose `id:` is stamped by the
//! transport, counting from 1 on each connection. Nothing wraps the batch. The first event is
//! the base batch and carries a `retry:` hint; a comment line keeps idle connections open
//! through proxies, and the headers ask proxies not to buffer or cache (`Cache-Control:
//! no-cache`, `X-Accel-Buffering: no`).
//!
//! There is no `Last-Event-ID` resume: a reconnecting client is a new subscriber and starts
//! from a base batch. An address the hub does not know gives 404; a malformed one 400. The
//! endpoint only reads: nothing a client sends reaches the producer's state.
//!
//! Serve the router with [`serve`] (or a configured [`Server`]), which closes a cut
//! subscriber's connection at once (a subscriber that stopped reading may never read the end
//! of its stream) and caps each connection's kernel send buffer. Under `axum::serve` the
//! router works too, but a stalled connection stays open, holding its bounded queue and
//! whatever the kernel buffers for it, until the client goes away.
//!
//! # Example
//!
//! ```no_run
//! use chord::hub::Hub;
//! use chord::sse::{serve, Sse};
//!
//! # async fn run() -> std::io::Result<()> {
//! let hub = Hub::new();
//! let app = Sse::new(hub.clone()).router(); // merge your own routes into it
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, app, std::future::pending()).await
//! # }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant, Sleep};

use crate::hub::{Address, Hub, Signal, Subscription};

/// The route the router serves: a value's stream by namespace and key, each one path segment
/// (percent-encode a `/` inside them; [`stream_path`] does).
pub const ROUTE: &str = "/streams/{namespace}/{key}";

/// The longest namespace or key, in bytes, the endpoint accepts.
pub const MAX_NAME: usize = 1024;

/// The default interval of keep-alive comments on an idle stream.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The default reconnection delay suggested to browsers (the `retry:` field).
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// Most bytes of events gathered into one write when several batches are waiting.
const COALESCE: usize = 64 * 1024;

/// Builds the axum [`Router`] that serves a hub's streams as Server-Sent Events.
///
/// ```
/// use std::time::Duration;
/// use chord::hub::Hub;
/// use chord::sse::Sse;
/// let app: axum::Router = Sse::new(Hub::new())
///     .keep_alive(Duration::from_secs(10))
///     .retry(Duration::from_millis(500))
///     .router()
///     .route("/health", axum::routing::get(|| async { "ok" }));
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Sse {
    hub: Hub,
    keep_alive: Duration,
    retry: Duration,
}

impl Sse {
    /// Serves `hub`'s streams, with the default keep-alive and retry hint.
    pub fn new(hub: Hub) -> Sse {
        Sse {
            hub,
            keep_alive: DEFAULT_KEEP_ALIVE,
            retry: DEFAULT_RETRY,
        }
    }

    /// Sends a keep-alive comment after `every` without an event (default
    /// [`DEFAULT_KEEP_ALIVE`]).
    pub fn keep_alive(mut self, every: Duration) -> Sse {
        self.keep_alive = every.max(Duration::from_millis(1));
        self
    }

    /// The reconnection delay suggested to browsers in the first event (default
    /// [`DEFAULT_RETRY`]).
    pub fn retry(mut self, after: Duration) -> Sse {
        self.retry = after;
        self
    }

    /// The router: `GET` [`ROUTE`]. Add routes to it, or nest it under a prefix.
    pub fn router(self) -> Router {
        Router::new()
            .route(ROUTE, get(stream))
            .with_state(Arc::new(self))
    }
}

/// The path of `address`'s stream under [`ROUTE`], percent-encoded.
///
/// ```
/// use chord::store::Address;
/// assert_eq!(chord::sse::stream_path(&Address::new("lanes", "main")), "/streams/lanes/main");
/// assert_eq!(chord::sse::stream_path(&Address::new("sessions/42", "a b")), "/streams/sessions%2F42/a%20b");
/// ```
pub fn stream_path(address: &Address) -> String {
    format!(
        "/streams/{}/{}",
        percent_encode(&address.namespace),
        percent_encode(&address.key)
    )
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Marks a request with its connection's signal, so a cut closes the connection.
#[derive(Clone)]
struct Connection(Arc<Signal>);

async fn stream(
    State(sse): State<Arc<Sse>>,
    path: Result<Path<(String, String)>, PathRejection>,
    connection: Option<Extension<Connection>>,
) -> Response {
    let Ok(Path((namespace, key))) = path else {
        return (StatusCode::BAD_REQUEST, "malformed stream address\n").into_response();
    };
    if let Err(why) = check_name(&namespace).and_then(|()| check_name(&key)) {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    let address = Address::new(namespace, key);
    let signal = match connection {
        Some(Extension(Connection(signal))) => signal,
        None => Arc::new(Signal::default()),
    };
    let mut subscription = sse.hub.subscribe_live(&address, Arc::clone(&signal));
    if subscription.is_none() && sse.hub.has_loader() {
        // The loader may read the disk: not on a runtime worker.
        let hub = sse.hub.clone();
        let load = move || hub.subscribe_with(&address, signal);
        subscription = tokio::task::spawn_blocking(load).await.ok().flatten();
    }
    let Some(subscription) = subscription else {
        return (StatusCode::NOT_FOUND, "no such stream\n").into_response();
    };
    let body = EventBody {
        subscription,
        next_id: 1,
        retry: Some(sse.retry),
        every: sse.keep_alive,
        keep_alive: Box::pin(sleep_until(Instant::now() + sse.keep_alive)),
    };
    let mut response = Response::new(Body::new(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
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

/// The `text/event-stream` body of one subscription.
struct EventBody {
    subscription: Subscription,
    next_id: u64,
    /// The `retry:` hint, sent with the first event.
    retry: Option<Duration>,
    every: Duration,
    keep_alive: Pin<Box<Sleep>>,
}

impl EventBody {
    fn write_event(&mut self, out: &mut Vec<u8>, wire: &str) {
        use std::io::Write as _;
        if let Some(retry) = self.retry.take() {
            let _ = writeln!(out, "retry: {}", retry.as_millis());
        }
        // Wire JSON is one line: serde_json escapes every control character in strings.
        let _ = write!(out, "id: {}\ndata: {wire}\n\n", self.next_id);
        self.next_id += 1;
    }
}

impl http_body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let mut out = Vec::new();
        while out.len() < COALESCE {
            match this.subscription.poll_recv(cx) {
                Poll::Ready(Some(batch)) => {
                    let wire = this.subscription.encode(&batch);
                    this.write_event(&mut out, &wire);
                }
                // Ended: send what was gathered; the next poll ends the body.
                Poll::Ready(None) if out.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
        if !out.is_empty() {
            let deadline = Instant::now() + this.every;
            this.keep_alive.as_mut().reset(deadline);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
        }
        if this.keep_alive.as_mut().poll(cx).is_ready() {
            let deadline = Instant::now() + this.every;
            this.keep_alive.as_mut().reset(deadline);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                b": keep-alive\n\n",
            )))));
        }
        Poll::Pending
    }
}

/// The default cap on each connection's kernel send buffer in [`Server`].
pub const DEFAULT_SEND_BUFFER: usize = 64 * 1024;

/// Serves `router` over HTTP/1.1 with [`Server`]'s defaults until `shutdown` resolves.
///
/// # Errors
///
/// As [`Server::serve`].
pub async fn serve<F>(listener: TcpListener, router: Router, shutdown: F) -> io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    Server::new().serve(listener, router, shutdown).await
}

/// An HTTP/1.1 server for event streams: what `axum::serve` does, plus the two things a
/// fan-out server needs to keep a stalled client from holding memory.
///
/// - A connection whose subscription the hub cuts is closed at once.
/// - Each connection's kernel send buffer is capped ([`send_buffer`](Server::send_buffer)),
///   so a client that stops reading is noticed by the hub's bounded queue after at most that
///   much data, rather than after the megabytes the kernel's autotuning would give it.
///   Above the kernel, a connection buffers at most 16 KiB of output.
///
/// Request headers must arrive within 30 seconds.
///
/// ```no_run
/// # async fn run(app: axum::Router) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// chord::sse::Server::new()
///     .send_buffer(Some(256 * 1024)) // clients far away, large base batches
///     .serve(listener, app, std::future::pending())
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Server {
    send_buffer: Option<usize>,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            send_buffer: Some(DEFAULT_SEND_BUFFER),
        }
    }
}

impl Server {
    /// A server with the defaults.
    pub fn new() -> Server {
        Server::default()
    }

    /// Caps each connection's kernel send buffer at `bytes` (the kernel may double it for
    /// bookkeeping); `None` leaves the kernel's autotuning, which lets a stalled client hold
    /// megabytes. Default [`DEFAULT_SEND_BUFFER`]: keep it above what a client far away needs
    /// in flight (bandwidth times round trip).
    pub fn send_buffer(mut self, bytes: Option<usize>) -> Server {
        self.send_buffer = bytes;
        self
    }

    /// Serves `router` on `listener` until `shutdown` resolves, then closes every connection
    /// (event streams never end on their own: their clients reconnect elsewhere).
    ///
    /// # Errors
    ///
    /// Accepting connections failed in a way that retrying cannot mend. Transient errors
    /// (a connection reset before it was accepted, running out of file descriptors) are
    /// waited out.
    pub async fn serve<F>(
        self,
        listener: TcpListener,
        router: Router,
        shutdown: F,
    ) -> io::Result<()>
    where
        F: Future<Output = ()> + Send,
    {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut connections = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) if transient(&e) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let _ = stream.set_nodelay(true);
            if let Some(bytes) = self.send_buffer {
                let _ = socket2::SockRef::from(&stream).set_send_buffer_size(bytes);
            }
            connections.spawn(connection(stream, router.clone()));
        }
        connections.shutdown().await;
        Ok(())
    }
}

/// Serves one connection until it ends or its subscription is cut.
async fn connection(stream: tokio::net::TcpStream, router: Router) {
    let signal = Arc::new(Signal::default());
    let marked = Arc::clone(&signal);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request
            .extensions_mut()
            .insert(Connection(Arc::clone(&marked)));
        let mut router = router.clone();
        async move { tower_service::Service::call(&mut router, request.map(Body::new)).await }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_buf_size(16 * 1024)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = connection => {}
        () = signal.fired() => {} // cut: drop the connection
    }
}

fn transient(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    ) || matches!(e.raw_os_error(), Some(23 | 24)) // ENFILE, EMFILE
}
