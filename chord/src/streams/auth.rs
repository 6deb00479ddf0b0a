//! Authorization: one answer, [`Access`], for the read hook
//! ([`Streams::reads`](super::Streams::reads)) and the write hook
//! ([`Streams::writes`](super::Streams::writes)), and the response to a refused request.

use std::sync::Arc;

use axum::http::{HeaderMap, Uri};

use super::write::WriteRequest;
use crate::live::Access;
use crate::store::Address;

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
pub(crate) type AuthorizeRead = Arc<dyn Fn(&ReadRequest<'_>) -> Access + Send + Sync>;

/// The write hook, as the router holds it.
pub(crate) type AuthorizeWrite = Arc<dyn Fn(&WriteRequest<'_>) -> Access + Send + Sync>;
