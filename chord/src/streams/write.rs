//! The protocol's write side: off unless [`Streams::writes`](super::Streams::writes) enables
//! it, and then every request is authorized first.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::log::Source;
use super::tail::Tail;
use super::Offset;
use crate::store::{Address, CheckedBatch};

/// What the protocol's write side may be asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteKind {
    /// `PUT`: create a stream (or confirm it exists).
    Create,
    /// `POST`: append messages (each a wire batch), or close.
    Append,
    /// `DELETE`: delete a stream.
    Delete,
}

/// A request to the write side, as the authorization hook sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct WriteRequest<'a> {
    /// What it asks.
    pub write: WriteKind,
    /// The stream it asks it of.
    pub address: &'a Address,
    /// Its headers (`Authorization`, cookies, ...).
    pub headers: &'a HeaderMap,
}

pub(super) type Authorize = Arc<dyn Fn(&WriteRequest<'_>) -> bool + Send + Sync>;

/// The answer when the write side is off.
pub(super) fn not_allowed() -> Response {
    let mut r = status(
        StatusCode::METHOD_NOT_ALLOWED,
        "this server serves the read path only\n",
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    r
}

/// Carries out an authorized write on `address`, whose tail is `tail` (`None`: no records).
pub(super) async fn handle(
    source: Arc<dyn Source>,
    tail: Option<Arc<Tail>>,
    write: WriteKind,
    address: &Address,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    match write {
        WriteKind::Delete => status(
            StatusCode::METHOD_NOT_ALLOWED,
            "a chord log is append-only: streams are not deleted\n",
        ),
        WriteKind::Create if tail.is_some() => {
            if !is_json(headers) {
                return status(StatusCode::CONFLICT, "the stream is application/json\n");
            }
            if !body.is_empty() && body != b"[]" {
                return status(StatusCode::CONFLICT, "the stream exists\n");
            }
            done(StatusCode::OK, tail.map_or(0, |t| t.position().last))
        }
        WriteKind::Create | WriteKind::Append => {
            if write == WriteKind::Append && tail.is_none() {
                return status(StatusCode::NOT_FOUND, "no such stream\n");
            }
            if is_closing(headers) {
                return status(
                    StatusCode::NOT_IMPLEMENTED,
                    "chord streams are not closed\n",
                );
            }
            if !is_json(headers) {
                return status(StatusCode::CONFLICT, "the stream is application/json\n");
            }
            let batches = match messages(address, body) {
                Ok(b) if b.is_empty() => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "no batch: a chord stream starts with a base batch\n",
                    )
                }
                Ok(b) => b,
                Err(why) => return status(StatusCode::BAD_REQUEST, format!("{why}\n")),
            };
            let at = address.clone();
            let append = move || -> Result<u64, String> {
                let mut last = 0;
                for batch in &batches {
                    last = source.append(&at, batch).map_err(|e| e.to_string())?;
                }
                Ok(last)
            };
            match tokio::task::spawn_blocking(append).await {
                Ok(Ok(last)) if write == WriteKind::Create => done(StatusCode::CREATED, last),
                Ok(Ok(last)) => done(StatusCode::NO_CONTENT, last),
                Ok(Err(why)) => status(StatusCode::BAD_REQUEST, format!("{why}\n")),
                Err(_) => status(StatusCode::INTERNAL_SERVER_ERROR, "append cancelled\n"),
            }
        }
    }
}

/// The messages of a JSON-mode body (an array is flattened one level), each checked as the
/// store checks a batch, before any is appended.
fn messages(address: &Address, body: &[u8]) -> Result<Vec<String>, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Array(items) = value else {
        return Err("a message must be a wire batch (a JSON array of ops)".into());
    };
    // `[op, ...]` is one batch; `[[op, ...], ...]` is several.
    let one = items
        .first()
        .and_then(|op| op.get(0))
        .is_some_and(Value::is_string);
    let batches: Vec<String> = if one {
        vec![Value::Array(items).to_string()]
    } else {
        items.iter().map(Value::to_string).collect()
    };
    for (i, batch) in batches.iter().enumerate() {
        CheckedBatch::new(address, batch, None).map_err(|e| format!("message {i}: {e}"))?;
    }
    Ok(batches)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn is_closing(headers: &HeaderMap) -> bool {
    headers
        .get("stream-closed")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn status(code: StatusCode, text: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(text.into()));
    *r.status_mut() = code;
    r
}

fn done(code: StatusCode, last: u64) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        "stream-next-offset",
        HeaderValue::from_str(&Offset::from_seq(last).to_string()).expect("hex digits"),
    );
    r
}
