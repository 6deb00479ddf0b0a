//! The headers every answer of every door carries, whatever route, verb or status produced
//! it: one middleware ([`common`]) around every route, the cross-origin policy's answers, the
//! router's own `405`s and its fallback's `404`s included.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};

/// Adds the security headers to `headers`: no content sniffing (a stream's bytes are never
/// run as a script or a style), and a resource policy that lets pages on other origins read
/// what the cross-origin policy lets them.
pub(crate) fn security(headers: &mut HeaderMap) {
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("cross-origin"),
    );
}

/// A plain-text answer (the security headers are added by [`common`]).
pub(crate) fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    (status, text.into()).into_response()
}

/// The middleware around every route: [`security`] on every answer, and `Connection: close`
/// on the answer to a request whose body was not read to its end (refused before it was
/// read: a refused write, a method the route does not serve, a body over its bound), so that
/// the rest of that body is never read as the next request on the connection.
pub(crate) async fn common(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let unread = Arc::new(AtomicBool::new(!body.is_end_stream()));
    let body = Body::new(Watched {
        body,
        unread: Arc::clone(&unread),
    });
    let mut response = next.run(Request::from_parts(parts, body)).await;
    let headers = response.headers_mut();
    security(headers);
    one_vary(headers);
    if unread.load(Ordering::Acquire) {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Joins every `Vary` of `headers` into one field, each name once: a cache may read only one
/// `Vary` line (nginx before 1.23 keeps the last it is sent), and so would key an answer by
/// the cross-origin policy's names alone and not by the credential's.
fn one_vary(headers: &mut HeaderMap) {
    let mut values = headers.get_all(header::VARY).iter();
    if values.next().is_none() || values.next().is_none() {
        return;
    }
    let mut names: Vec<String> = Vec::new();
    for value in headers.get_all(header::VARY) {
        for name in value.to_str().unwrap_or("*").split(',') {
            let name = name.trim().to_ascii_lowercase();
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    // Names are visible ASCII (or `*` for a value that was not).
    if let Ok(joined) = HeaderValue::from_str(&names.join(", ")) {
        headers.insert(header::VARY, joined);
    }
}

/// `router` with the headers every chord answer carries on every answer it gives, its
/// fallback's (a `404` for an unrouted path) and its `405`s included:
/// `X-Content-Type-Options: nosniff`, `Cross-Origin-Resource-Policy: cross-origin`, and
/// `Connection: close` when the request's body was left unread.
///
/// Every door's router has it already ([`Streams::router`](crate::streams::Streams::router),
/// `AgUi::router`); wrap the router an application merges them into, so that its own routes
/// and its unrouted paths answer alike:
///
/// ```
/// use axum::{routing::get, Router};
///
/// let app: Router = chord::live::headers(Router::new().route("/metrics", get(|| async { "" })));
/// # let _ = app;
/// ```
pub fn headers<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router.layer(axum::middleware::from_fn(common))
}

/// A request body that records when it has been read to its end.
struct Watched {
    body: Body,
    /// Cleared at the body's end.
    unread: Arc<AtomicBool>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.unread.store(false, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
