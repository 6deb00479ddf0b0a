//! Reads of a [`Backend`](crate::streams::Backend) stream: catch-up (a chunk at a time from
//! its messages, shared with the stream), long-poll and `HEAD`.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use tokio::time::{sleep_until, Instant};

use super::sse::sse;
use super::{meta, offset_value, text, Refusal};
use crate::live::offset::Start;
use crate::live::sse::Timing;
use crate::streams::frame;
use crate::streams::memory::{MemoryStream, State};
use crate::streams::Offset;

/// Most bytes of messages in one catch-up response (a single larger message is sent whole).
const CHUNK: usize = 256 * 1024;

/// `HEAD`.
pub(crate) fn head(stream: &MemoryStream) -> Response {
    let mut r = Response::new(Body::empty());
    meta(r.headers_mut(), stream, &stream.lock());
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The messages after `after`, at most [`CHUNK`] bytes of them (at least one), and the
/// offset after the last.
pub(super) fn chunk(state: &State, after: u64) -> (Vec<Bytes>, u64) {
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut next = after;
    for m in state
        .messages
        .iter()
        .skip(usize::try_from(after).unwrap_or(usize::MAX))
    {
        if !out.is_empty() && bytes + m.len() > CHUNK {
            break;
        }
        bytes += m.len();
        out.push(m.clone());
        next += 1;
    }
    (out, next)
}

pub(super) fn body_of(json: bool, messages: &[Bytes]) -> Vec<u8> {
    if json {
        frame::json_array(
            messages
                .iter()
                .map(|m| std::str::from_utf8(m).unwrap_or("null")),
        )
    } else {
        messages.iter().flat_map(|m| m.iter().copied()).collect()
    }
}

/// A catch-up body of many messages, sent about a chunk at a time (one copy of a chunk at
/// once, not of the whole body).
struct Messages {
    messages: std::vec::IntoIter<Bytes>,
    json: bool,
    /// Whether the first frame (with a JSON array's `[`) went.
    started: bool,
}

impl http_body::Body for Messages {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.started && this.messages.as_slice().is_empty() {
            return Poll::Ready(None);
        }
        let mut out = Vec::with_capacity(CHUNK + 64);
        if this.json {
            out.push(if this.started { b',' } else { b'[' });
        }
        let mut first = true;
        while out.len() < CHUNK {
            let Some(m) = this.messages.next() else { break };
            if this.json {
                if !first {
                    out.push(b',');
                }
                out.extend_from_slice(if std::str::from_utf8(&m).is_ok() {
                    &m
                } else {
                    b"null"
                });
            } else {
                out.extend_from_slice(&m);
            }
            first = false;
        }
        if this.json && this.messages.as_slice().is_empty() {
            out.push(b']');
        }
        this.started = true;
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(out)))))
    }

    fn is_end_stream(&self) -> bool {
        self.started && self.messages.as_slice().is_empty()
    }
}

/// Where a read starts; `Err` answers it.
fn resolve(state: &State, start: Start) -> Result<u64, Refusal> {
    let tail = state.messages.len() as u64;
    match start {
        // These streams have no base batches but their start.
        Start::Beginning | Start::Latest => Ok(0),
        Start::Now => Ok(tail),
        // A base's token is an offset like any other here: these streams have no checkpoints.
        Start::At(o) | Start::Base(o) if o.seq() <= tail => Ok(o.seq()),
        Start::At(_) | Start::Base(_) => {
            Err(Refusal::new(StatusCode::GONE, "offset beyond the tail\n"))
        }
    }
}

/// A catch-up or long-poll read: `None` when long-polling and there is nothing yet.
fn read_response(
    stream: &MemoryStream,
    after: u64,
    cache_control: &HeaderValue,
    request: &HeaderMap,
    cursor: Option<u64>,
    long_poll: bool,
) -> Option<Response> {
    let state = stream.lock();
    let (mut messages, mut next) = chunk(&state, after);
    let tail = state.messages.len() as u64;
    // A catch-up answers everything up to the tail, as a chord log's does (see `catchup.rs`
    // for why): the messages are shared, so a reader holds only their handles.
    let whole = !long_poll && next < tail;
    if whole {
        messages.extend(
            state
                .messages
                .iter()
                .skip(usize::try_from(next).unwrap_or(usize::MAX))
                .cloned(),
        );
        next = tail;
    }
    if messages.is_empty() && long_poll && !state.closed {
        return None;
    }
    let up_to_date = next >= tail;
    let closed_here = state.closed && up_to_date;
    let empty = messages.is_empty();
    let etag = format!(
        "\"{}:{}:{}\"",
        Offset::from_seq(after),
        Offset::from_seq(next),
        if closed_here { "c" } else { "o" }
    );
    let matches = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut r = if long_poll && messages.is_empty() {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        r
    } else if matches {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else if whole {
        Response::new(Body::new(Messages {
            messages: messages.into_iter(),
            json: stream.json(),
            started: false,
        }))
    } else {
        Response::new(Body::from(body_of(stream.json(), &messages)))
    };
    let h = r.headers_mut();
    meta(h, stream, &state);
    h.insert("stream-next-offset", offset_value(next));
    if !closed_here {
        h.remove("stream-closed");
    }
    if up_to_date {
        h.insert("stream-up-to-date", HeaderValue::from_static("true"));
    }
    if long_poll || cursor.is_some() {
        h.insert("stream-cursor", HeaderValue::from(frame::cursor(cursor)));
    }
    if !(long_poll && empty) {
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, cache_control.clone());
    } else {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Some(r)
}

/// What a `GET` asks.
pub(crate) struct Get<'a> {
    pub(crate) start: Start,
    pub(crate) live: Option<&'a str>,
    pub(crate) cursor: Option<u64>,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) cache_control: &'a HeaderValue,
    pub(crate) long_poll: Duration,
    pub(crate) sse: Timing,
}

/// `GET`: catch-up, long-poll or SSE.
pub(crate) async fn get(stream: Arc<MemoryStream>, get: Get<'_>) -> Response {
    stream.touch();
    let after = match resolve(&stream.lock(), get.start) {
        Ok(a) => a,
        Err(r) => return r.into(),
    };
    match get.live {
        None => {
            if get.start == Start::Now {
                let mut r =
                    read_response(&stream, after, get.cache_control, get.headers, None, false)
                        .expect("not long-poll");
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return r;
            }
            read_response(&stream, after, get.cache_control, get.headers, None, false)
                .expect("not long-poll")
        }
        Some("long-poll") => {
            let mut changes = stream.subscribe();
            let deadline = Instant::now() + get.long_poll;
            // Draining: the poll answers 204 at once, and the client polls the successor.
            let mut drain: crate::live::sse::Pending<()> = match &get.sse.drain {
                Some(d) => Box::pin(d.wait()),
                None => Box::pin(std::future::pending()),
            };
            loop {
                changes.borrow_and_update();
                let cursor = Some(frame::cursor(get.cursor));
                if let Some(r) = read_response(
                    &stream,
                    after,
                    get.cache_control,
                    get.headers,
                    get.cursor,
                    true,
                ) {
                    return r;
                }
                let changed = tokio::select! {
                    c = changes.changed() => c.is_ok(),
                    () = sleep_until(deadline) => false,
                    () = &mut drain => false,
                };
                if !changed {
                    let state = stream.lock();
                    let mut r = Response::new(Body::empty());
                    *r.status_mut() = StatusCode::NO_CONTENT;
                    let h = r.headers_mut();
                    meta(h, &stream, &state);
                    h.insert("stream-next-offset", offset_value(after));
                    h.insert("stream-up-to-date", HeaderValue::from_static("true"));
                    if let Some(c) = cursor {
                        h.insert("stream-cursor", HeaderValue::from(c));
                    }
                    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                    return r;
                }
            }
        }
        Some("sse") => sse(stream, after, get.cursor, get.sse),
        Some(other) => text(
            StatusCode::BAD_REQUEST,
            format!("unknown live mode {other:?}: expected long-poll or sse\n"),
        ),
    }
}

/// Whether an offset names the start of the stream: `-1`, or `0…0_0…0`.
pub(super) fn is_start(offset: &str) -> bool {
    offset == "-1"
        || offset.split_once('_').is_some_and(|(a, b)| {
            !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c == b'0')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_of_a_stream_has_two_spellings() {
        assert!(is_start("-1"));
        assert!(is_start("0000000000000000_0000000000000000"));
        assert!(!is_start("0000000000000000"));
        assert!(!is_start("0000000000000001_0000000000000000"));
        assert!(!is_start("_"));
    }
}
