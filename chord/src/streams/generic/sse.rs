//! SSE reads of a [`Backend`](crate::streams::Backend) stream: its messages as `data`
//! events (base64 for a binary stream) with `control` events, over the one SSE body.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;

use super::read::{body_of, chunk};
use crate::live::sse::{self, Changes, Feed, Fields, Next, SseBody, Timing};
use crate::streams::frame;
use crate::streams::memory::MemoryStream;
use crate::streams::Offset;

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648).
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(BASE64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether SSE carries the stream's bytes as text (`text/*`, `application/json`).
fn textual(content_type: &str) -> bool {
    content_type.starts_with("text/") || content_type == "application/json"
}

fn data_event(out: &mut Vec<u8>, stream: &MemoryStream, messages: &[Bytes]) {
    let fields = Fields {
        event: Some("data"),
        id: None,
        compact: true,
    };
    // The writer starts a new `data:` line at every line break of a textual payload, so no
    // payload can end the event or forge another.
    sse::event(out, fields, |out| {
        if textual(&stream.config.content_type) {
            let body = body_of(stream.json(), messages);
            out.extend_from_slice(String::from_utf8_lossy(&body).as_bytes());
        } else {
            out.extend_from_slice(base64(&body_of(false, messages)).as_bytes());
        }
    });
}

fn control_event(out: &mut Vec<u8>, next: u64, cursor: u64, up_to_date: bool, closed: bool) {
    let mut json = format!("{{\"streamNextOffset\":\"{}\"", Offset::from_seq(next));
    if closed {
        json.push_str(",\"streamClosed\":true,\"upToDate\":true}");
    } else {
        json.push_str(&format!(",\"streamCursor\":\"{cursor}\""));
        if up_to_date {
            json.push_str(",\"upToDate\":true");
        }
        json.push('}');
    }
    let fields = Fields {
        event: Some("control"),
        id: None,
        compact: true,
    };
    sse::event(out, fields, |out| out.extend_from_slice(json.as_bytes()));
}

/// An SSE response, polled by the connection as every SSE read is ([`SseBody`]).
pub(super) fn sse(
    stream: Arc<MemoryStream>,
    after: u64,
    echoed: Option<u64>,
    timing: Timing,
) -> Response {
    let binary = !textual(&stream.config.content_type);
    let feed = StreamFeed {
        changes: Changes::new(stream.subscribe()),
        stream,
        after,
        echoed,
        first: true,
        ended: false,
    };
    let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
    let h = r.headers_mut();
    sse::headers(h);
    if binary {
        h.insert(
            "stream-sse-data-encoding",
            HeaderValue::from_static("base64"),
        );
    }
    r
}

/// The SSE events of one reader of a stream the backend holds.
struct StreamFeed {
    stream: Arc<MemoryStream>,
    after: u64,
    echoed: Option<u64>,
    changes: Changes,
    /// Nothing sent yet: an empty first read still sends a `control` event.
    first: bool,
    /// The closing `control` event went: nothing follows it.
    ended: bool,
}

impl Feed for StreamFeed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            if self.ended {
                return Poll::Ready(Next::End);
            }
            match self.changes.poll_turn(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(false) => return Poll::Ready(Next::End),
                Poll::Ready(true) => {}
            }
            let (out, data) = {
                let state = self.stream.lock();
                let (messages, next) = chunk(&state, self.after);
                let tail = state.messages.len() as u64;
                let closed = state.closed && next >= tail;
                let mut out = Vec::new();
                if !messages.is_empty() {
                    data_event(&mut out, &self.stream, &messages);
                }
                if !messages.is_empty() || self.first || closed {
                    control_event(
                        &mut out,
                        next,
                        frame::cursor(self.echoed),
                        next >= tail,
                        closed,
                    );
                }
                self.after = next;
                self.ended = closed;
                (out, !messages.is_empty())
            };
            self.first = false;
            match (out.is_empty(), data) {
                (false, true) => return Poll::Ready(Next::Data(Bytes::from(out))),
                (false, false) => return Poll::Ready(Next::Control(Bytes::from(out))),
                (true, _) => self.changes.caught_up(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), "AQIDBAUGBwgJCg==");
    }
}
