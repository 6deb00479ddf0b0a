//! [`Server`]: serving the router over HTTP/1.1 with each connection's send buffer capped, and
//! its graceful drain at shutdown.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The default cap on each connection's kernel send buffer in [`Server`].
pub(crate) const DEFAULT_SEND_BUFFER: usize = 64 * 1024;

/// The default [`Server::drain`] deadline.
pub(crate) const DEFAULT_DRAIN: Duration = Duration::from_secs(10);

/// The drain signal, in every request's extensions as [`Server`] serves it: `true` once the
/// server drains. SSE responses end at their next event boundary, long-polls answer at once.
#[derive(Clone, Debug)]
pub(crate) struct Draining(pub(crate) watch::Receiver<bool>);

impl Draining {
    /// Resolves once the server drains (or is gone).
    pub(crate) fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.0.clone();
        async move {
            let _ = rx.wait_for(|draining| *draining).await;
        }
    }
}

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

/// An HTTP/1.1 server for streams: what `axum::serve` does, plus a cap on each connection's
/// kernel send buffer ([`send_buffer`](Server::send_buffer)), so that a client that stops
/// reading holds at most that much, rather than the megabytes the kernel's autotuning would
/// give it. Above the kernel, a connection buffers at most 16 KiB of output; the reader's task
/// waits with its offset, holding no records of its own.
///
/// Request headers must arrive within 30 seconds.
///
/// # Shutdown
///
/// When `shutdown` resolves the server drains: it stops accepting (the listener is closed,
/// so another server may bind its address), every SSE response ends at its next event
/// boundary (the client has had the `control` event of every `data` event it was sent, and
/// resumes from its offset by itself, on this server's successor), a long-poll in flight
/// answers `204` at once, catch-up reads in flight finish, and idle keep-alive connections
/// close. Whatever is still open after the [`drain`](Server::drain) deadline is cut.
///
/// ```no_run
/// # async fn run(app: axum::Router) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// chord::streams::Server::new()
///     .send_buffer(Some(256 * 1024)) // clients far away, large base batches
///     .serve(listener, app, std::future::pending())
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Server {
    send_buffer: Option<usize>,
    drain: Duration,
}

impl Default for Server {
    /// A server with the defaults: each connection's kernel send buffer capped at 64 KiB, and
    /// a shutdown that waits up to 10 s for the responses in flight.
    fn default() -> Self {
        Server {
            send_buffer: Some(DEFAULT_SEND_BUFFER),
            drain: DEFAULT_DRAIN,
        }
    }
}

impl Server {
    /// A server with the defaults (see [`Server::default`]).
    pub fn new() -> Server {
        Server::default()
    }

    /// Caps each connection's kernel send buffer at `bytes` (the kernel may double it for
    /// bookkeeping); `None` leaves the kernel's autotuning, which lets a stalled client hold
    /// megabytes. Default `Some(64 KiB)`: keep it above what a client far away needs
    /// in flight (bandwidth times round trip).
    pub fn send_buffer(mut self, bytes: Option<usize>) -> Server {
        self.send_buffer = bytes;
        self
    }

    /// How long a shutdown waits for the responses in flight to end before it cuts the
    /// connections still open (default 10 s). SSE responses and long-polls end
    /// at once when the drain starts; what the deadline bounds is catch-up reads in flight
    /// and clients slow to read what they were sent.
    pub fn drain(mut self, deadline: Duration) -> Server {
        self.drain = deadline;
        self
    }

    /// Serves `router` on `listener` until `shutdown` resolves, then drains (see
    /// [Shutdown](Server#shutdown)) and returns once every connection has closed or the
    /// [`drain`](Server::drain) deadline has passed.
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
        let (drain, draining) = watch::channel(false);
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
            let draining = Draining(draining.clone());
            connections.spawn(connection(stream, router.clone(), draining));
        }
        drop(listener); // no more connections: a successor may bind the address now
        let open = connections.len();
        tracing::info!(target: "chord::streams", open, "draining");
        let _ = drain.send(true);
        let deadline = tokio::time::sleep(self.drain);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => break,
                next = connections.join_next() => if next.is_none() { break },
            }
        }
        let cut = connections.len();
        if cut > 0 {
            tracing::warn!(target: "chord::streams", cut, "drain deadline passed: connections cut");
        }
        super::metrics::drain_cut(cut);
        connections.shutdown().await;
        Ok(())
    }
}

/// Serves one connection until it ends, or, once the server drains, until its response in
/// flight has ended.
async fn connection(stream: tokio::net::TcpStream, router: Router, draining: Draining) {
    let signal = draining.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut router = router.clone();
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(signal.clone());
        async move { tower_service::Service::call(&mut router, request).await }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_buf_size(16 * 1024)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = draining.wait() => {}
    }
    // No further request on this connection; the one in flight ends (an SSE response at its
    // next event boundary, as it too sees the drain).
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

fn transient(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    ) || matches!(e.raw_os_error(), Some(23 | 24)) // ENFILE, EMFILE
}
