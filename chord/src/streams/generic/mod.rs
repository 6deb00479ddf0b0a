//! The protocol on streams that are not chord logs (held by a [`Backend`](super::Backend)):
//! writes (create, append, close, delete, idempotent producers, TTL and expiry) in `write`,
//! reads (catch-up, long-poll, `HEAD`) in `read`, SSE in `sse`; what they share here.

mod read;
mod sse;
mod write;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use bytes::Bytes;

use super::memory::{MemoryStream, State};
use super::Offset;

pub(super) use self::read::{get, head, Get};
pub(super) use self::write::{append, cost, create, delete};

fn text(code: StatusCode, body: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(body.into()));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// A request the protocol refuses: its status and why.
#[derive(Debug)]
struct Refusal {
    code: StatusCode,
    why: String,
}

impl Refusal {
    fn new(code: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal {
            code,
            why: why.into(),
        }
    }
}

impl From<Refusal> for Response {
    fn from(r: Refusal) -> Response {
        text(r.code, r.why)
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn is_true(headers: &HeaderMap, name: &str) -> bool {
    header_str(headers, name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn offset_value(n: u64) -> HeaderValue {
    HeaderValue::from_str(&Offset::from_seq(n).to_string()).expect("hex digits")
}

/// What a message costs a stream beside its bytes: its handle in the stream's list. Counted in
/// the backend's bounds ([`Backend::max_stream_bytes`](crate::streams::Backend::max_stream_bytes),
/// [`Backend::reserve`](crate::streams::Backend::reserve)), so that they bound the memory
/// streams take however small their messages (a JSON body of `[1,1,...]` is a message every
/// two bytes).
pub(crate) const MESSAGE_COST: usize = std::mem::size_of::<Bytes>();

/// The headers every response for a stream carries.
fn meta(h: &mut HeaderMap, stream: &MemoryStream, state: &State) {
    if let Ok(v) = HeaderValue::from_str(&stream.config.content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Some(ttl) = stream.config.ttl {
        h.insert("stream-ttl", HeaderValue::from(ttl));
    }
    if let Some((at, _)) = &stream.config.expires_at {
        if let Ok(v) = HeaderValue::from_str(at) {
            h.insert("stream-expires-at", v);
        }
    }
    h.insert(
        "stream-next-offset",
        offset_value(state.messages.len() as u64),
    );
    if state.closed {
        h.insert("stream-closed", HeaderValue::from_static("true"));
    }
}

/// An answer with no body.
fn empty(code: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// The answer for a soft-deleted stream.
pub(super) fn gone() -> Response {
    text(StatusCode::GONE, "the stream is deleted\n")
}
