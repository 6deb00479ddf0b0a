//! [`Server`]: serving the router over HTTP/1.1 with each connection's send buffer capped.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

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

/// An HTTP/1.1 server for streams: what `axum::serve` does, plus a cap on each connection's
/// kernel send buffer ([`send_buffer`](Server::send_buffer)), so that a client that stops
/// reading holds at most that much, rather than the megabytes the kernel's autotuning would
/// give it. Above the kernel, a connection buffers at most 16 KiB of output; the reader's task
/// waits with its offset, holding no records of its own.
///
/// Request headers must arrive within 30 seconds.
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

/// Serves one connection until it ends.
async fn connection(stream: tokio::net::TcpStream, router: Router) {
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut router = router.clone();
        async move { tower_service::Service::call(&mut router, request.map(Body::new)).await }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_buf_size(16 * 1024)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

fn transient(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    ) || matches!(e.raw_os_error(), Some(23 | 24)) // ENFILE, EMFILE
}
