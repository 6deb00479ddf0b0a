//! Authorization: one answer, [`Access`], for the read hook
//! ([`Streams::reads`](super::Streams::reads)) and the write hook
//! ([`Streams::writes`](super::Streams::writes)), and the response to a refused request.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::Response;

use super::write::WriteRequest;
use crate::store::Address;

/// An authorization hook's answer to a request.
///
/// A hook may also answer `bool`: `true` is [`Allow`](Access::Allow), `false`
/// [`Forbidden`](Access::Forbidden).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Serve the request.
    Allow,
    /// `401 Unauthorized`, with `WWW-Authenticate: Bearer`: the request carries no
    /// credential the hook recognizes, and may be retried with one.
    Unauthorized,
    /// `403 Forbidden`: the credential is recognized, and not allowed this request.
    Forbidden,
}

impl From<bool> for Access {
    fn from(allowed: bool) -> Access {
        if allowed {
            Access::Allow
        } else {
            Access::Forbidden
        }
    }
}

/// What the protocol's read side may be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadKind {
    /// `HEAD`: the stream's metadata (`Stream-Next-Offset`, the base offset, ...).
    Head,
    /// `GET` without `live`: the records after an offset.
    CatchUp,
    /// `GET ...&live=long-poll`: the records after an offset, waiting for one.
    LongPoll,
    /// `GET ...&live=sse`: Server-Sent Events from an offset on.
    Sse,
    /// `PUT` with `Stream-Forked-From`: a new stream that starts as a copy of this one up to
    /// the fork point. The [`ReadRequest`]'s address is the source's; its URI and headers are
    /// the `PUT`'s (the credential a read of the source would carry: a header, a cookie, or
    /// a token in the `PUT`'s query). The write hook has allowed the new stream first.
    Fork,
}

/// A request to the read side, as the authorization hook sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ReadRequest<'a> {
    /// What it asks.
    pub read: ReadKind,
    /// The stream it reads.
    pub address: &'a Address,
    /// Its URI as sent, query included (a token in a query parameter is here).
    pub uri: &'a Uri,
    /// Its headers (`Authorization`, `Cookie`, `Origin`, ...).
    pub headers: &'a HeaderMap,
}

/// The read hook, as the router holds it.
pub(super) type AuthorizeRead = Arc<dyn Fn(&ReadRequest<'_>) -> Access + Send + Sync>;

/// The write hook, as the router holds it.
pub(super) type AuthorizeWrite = Arc<dyn Fn(&WriteRequest<'_>) -> Access + Send + Sync>;

/// The answer to a refused request: 401 (with its challenge) or 403, an empty body, no
/// stream header, never stored by a cache (a refusal must not outlive a login).
///
/// `Allow` is never refused; it is answered 403 should a caller pass it.
pub(crate) fn refusal(access: Access) -> Response {
    let mut r = Response::new(Body::empty());
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if access == Access::Unauthorized {
        h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        *r.status_mut() = StatusCode::UNAUTHORIZED;
    } else {
        *r.status_mut() = StatusCode::FORBIDDEN;
    }
    r
}
