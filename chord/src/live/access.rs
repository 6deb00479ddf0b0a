//! Authorization's one answer, [`Access`], for every door's hook, and the response to a
//! refused request.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

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
