//! The protocol's write side: off unless [`Streams::writes`](super::Streams::writes) enables
//! it, and then every request is authorized first.

use std::borrow::Cow;
use std::future::poll_fn;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::Response;
use http_body::Body as _;
use serde::de::{Deserializer as _, Error as _, SeqAccess, Visitor};
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{timeout, timeout_at, Instant};

use super::health::chain;
use super::Offset;
use crate::live::log::Source;
use crate::live::tail::Tail;
use crate::store::{Address, CheckedBatch, BASE, MAX_RECORD_BYTES};

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
    /// Its URI as sent, query included.
    pub uri: &'a Uri,
    /// Its headers (`Authorization`, cookies, ...).
    pub headers: &'a HeaderMap,
}

/// The answer to an append to a stream that is not there: how to make one.
pub(super) const NO_SUCH_STREAM: &str = "no such stream: create it first with a PUT (a body \
     of chord batches starting with a base, application/json, for a chord log; any content \
     type, or `Chord-Kind: stream`, for a protocol stream)\n";

/// The header a `PUT` names the kind of stream it creates with.
pub(super) const KIND_HEADER: &str = "chord-kind";

/// The two kinds of stream a `PUT` creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamKind {
    /// A chord log: wire batches, validated, starting with a base (`Chord-Kind: log`).
    Log,
    /// A protocol stream of any content type, held by the router's backend
    /// (`Chord-Kind: stream`).
    Stream,
}

/// The kind a request's `Chord-Kind` header asks for, if it has one.
pub(super) fn asked_kind(headers: &HeaderMap) -> Result<Option<StreamKind>, String> {
    let mut values = headers.get_all(KIND_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("more than one Chord-Kind header\n".to_owned());
    }
    match value.to_str().map(str::trim) {
        Ok(v) if v.eq_ignore_ascii_case("log") => Ok(Some(StreamKind::Log)),
        Ok(v) if v.eq_ignore_ascii_case("stream") => Ok(Some(StreamKind::Stream)),
        _ => Err(format!(
            "Chord-Kind {value:?}: a stream is `log` (a chord log) or `stream` (a protocol \
             stream)\n"
        )),
    }
}

/// The kind a `PUT` without `Chord-Kind` creates: a chord log when it is `application/json`
/// and its body starts as chord batches starting with a base do (`[["r", ...` for one batch,
/// `[[["r", ...` for several); a protocol stream otherwise. Only the first bytes are looked
/// at: the chord log's validation reads the rest, and says why it refuses it.
pub(super) fn kind_of(headers: &HeaderMap, body: &[u8]) -> StreamKind {
    if !is_json(headers) {
        return StreamKind::Stream;
    }
    let skip = |b: &[u8]| -> usize { b.iter().take_while(|c| c.is_ascii_whitespace()).count() };
    let mut rest = body;
    let mut opened = 0;
    loop {
        rest = &rest[skip(rest)..];
        match rest.first() {
            Some(b'[') if opened < 3 => {
                opened += 1;
                rest = &rest[1..];
            }
            _ => break,
        }
    }
    let base = rest.starts_with(b"\"r\"") && {
        let after = &rest[3..];
        after[skip(after)..].starts_with(b",")
    };
    if base && opened >= 2 {
        StreamKind::Log
    } else {
        StreamKind::Stream
    }
}

/// The default [`Streams::max_body`](super::Streams::max_body): the largest request body the
/// write side reads (16 MiB).
pub(crate) const DEFAULT_MAX_BODY: usize = 16 << 20;

/// The default [`Streams::body_budget`](super::Streams::body_budget): the bytes of request
/// bodies a router holds at once, across all its requests (64 MiB).
pub(crate) const DEFAULT_BODY_BUDGET: usize = 64 << 20;

/// The default [`Streams::body_timeout`](super::Streams::body_timeout): how long a request
/// body may take to arrive once its reading starts (30 s).
pub(crate) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`Streams::body_wait`](super::Streams::body_wait): how long a request waits
/// for room in the body budget before it is answered 503 (5 s).
pub(crate) const DEFAULT_BODY_WAIT: Duration = Duration::from_secs(5);

/// The room a body of unknown length reserves before its first byte is read.
const FIRST_STEP: usize = 64 << 10;

/// The bounds on request bodies, and the budget of bytes they share.
#[derive(Clone, Debug)]
pub(super) struct Bodies {
    /// The largest body read.
    max: usize,
    /// How long a body may take.
    pub(super) timeout: Duration,
    /// How long a request waits for room.
    pub(super) wait: Duration,
    /// The budget's size in bytes.
    budget: usize,
    /// One permit per byte of the budget: a body's bytes are reserved before they are read.
    room: Arc<Semaphore>,
}

impl Default for Bodies {
    fn default() -> Self {
        Bodies {
            max: DEFAULT_MAX_BODY,
            timeout: DEFAULT_BODY_TIMEOUT,
            wait: DEFAULT_BODY_WAIT,
            budget: DEFAULT_BODY_BUDGET,
            room: Arc::new(Semaphore::new(DEFAULT_BODY_BUDGET)),
        }
    }
}

impl Bodies {
    /// Sets the largest body read; at most `u32::MAX` bytes (what one reservation can take).
    pub(super) fn set_max(&mut self, bytes: usize) {
        self.max = bytes.min(u32::MAX as usize);
    }

    /// Sets the budget (a fresh one, shared by the clones made after).
    pub(super) fn set_budget(&mut self, bytes: usize) {
        self.budget = bytes.clamp(1, Semaphore::MAX_PERMITS);
        self.room = Arc::new(Semaphore::new(self.budget));
    }

    /// The largest body that can be read: the bound, or the whole budget if smaller.
    fn limit(&self) -> usize {
        self.max.min(self.budget)
    }

    /// Room for `bytes` more, waited for at most [`wait`](Bodies::wait).
    async fn reserve(&self, bytes: usize) -> Result<OwnedSemaphorePermit, BodyRefused> {
        let n = u32::try_from(bytes).map_err(|_| self.too_large())?;
        match timeout(self.wait, Arc::clone(&self.room).acquire_many_owned(n)).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; a closed one is answered as a full one.
            Ok(Err(_)) | Err(_) => Err(BodyRefused::Busy),
        }
    }

    /// Room for `bytes` more now, or none: a request that already holds room never waits
    /// for more, so requests never wait on each other in a cycle.
    fn grow(&self, bytes: usize) -> Result<OwnedSemaphorePermit, BodyRefused> {
        let n = u32::try_from(bytes).map_err(|_| self.too_large())?;
        Arc::clone(&self.room)
            .try_acquire_many_owned(n)
            .map_err(|_| BodyRefused::Busy)
    }

    fn too_large(&self) -> BodyRefused {
        BodyRefused::TooLarge {
            limit: self.limit(),
        }
    }

    /// The bytes of the budget held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.budget - self.room.available_permits()
    }
}

/// Why a request body was not read whole.
#[derive(Debug, thiserror::Error)]
pub(super) enum BodyRefused {
    /// Its `Content-Length` is not a number.
    #[error("malformed Content-Length")]
    BadLength,
    /// It is (or announces) more bytes than may be read.
    #[error("the request body is over {limit} bytes")]
    TooLarge { limit: usize },
    /// The budget had no room for it.
    #[error("the server holds as many request bodies as it may: retry later")]
    Busy,
    /// It did not arrive in time.
    #[error("the request body did not arrive within {} ms", timeout.as_millis())]
    Slow { timeout: Duration },
    /// The connection failed while it arrived.
    #[error("reading the request body: {0}")]
    Broken(String),
}

impl BodyRefused {
    /// The answer: 400, 413, 503 (with `Retry-After`) or 408 (the router's headers close the
    /// connection after it, as the body was not read to its end).
    pub(super) fn response(&self) -> Response {
        let code = match self {
            BodyRefused::BadLength | BodyRefused::Broken(_) => StatusCode::BAD_REQUEST,
            BodyRefused::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyRefused::Busy => StatusCode::SERVICE_UNAVAILABLE,
            BodyRefused::Slow { .. } => StatusCode::REQUEST_TIMEOUT,
        };
        let mut r = status(code, format!("{self}\n"));
        if let BodyRefused::Busy = self {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
    }
}

/// A request body read whole, holding its room in the budget until dropped.
pub(super) struct Held {
    bytes: Vec<u8>,
    _room: OwnedSemaphorePermit,
}

impl Deref for Held {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Reads `body` whole within `bodies`' bounds: 413 before a byte is read when its
/// `Content-Length` (or the body's own size hint) is over the bound, or once the bytes read
/// pass it; 503 when no room frees up in the budget within its wait; 408 when the body takes
/// longer than its timeout; 400 when the connection fails mid-body.
///
/// A body's bytes are reserved in the budget before they are read: all of a
/// `Content-Length` at once (waiting for room), a body of unknown length 64 KiB first (waiting
/// likewise), then in steps that double as its frames arrive, without waiting (503 when there
/// is no room), so that the buffer never holds more than its reservation and no request
/// holding room waits for more. `http_body_util::Limited` bounds the bytes of one
/// body but cannot take them from a budget shared across requests, so the loop does both.
pub(super) async fn read_body(
    bodies: &Bodies,
    headers: &HeaderMap,
    mut body: Body,
) -> Result<Held, BodyRefused> {
    let limit = bodies.limit();
    let announced = match headers.get(header::CONTENT_LENGTH) {
        None => body.size_hint().exact(),
        Some(v) => match v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            Some(n) => Some(n),
            None => return Err(BodyRefused::BadLength),
        },
    };
    let least = announced.unwrap_or(0).max(body.size_hint().lower());
    let Some(least) = usize::try_from(least).ok().filter(|n| *n <= limit) else {
        return Err(bodies.too_large());
    };
    // A body of unknown length starts with a first step of room, waited for as a
    // `Content-Length` is (it holds nothing yet, so waiting closes no cycle).
    let first = match announced {
        Some(_) => least,
        None => least.max(FIRST_STEP).min(limit),
    };
    let mut room = bodies.reserve(first).await?;
    let mut bytes = Vec::with_capacity(first);
    let deadline = Instant::now() + bodies.timeout;
    let read = async {
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.map_err(|e| BodyRefused::Broken(e.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            let len = bytes.len() + data.len();
            if len > limit {
                return Err(bodies.too_large());
            }
            if len > bytes.capacity() {
                let target = len
                    .checked_next_power_of_two()
                    .unwrap_or(len)
                    .clamp(len, limit);
                room.merge(bodies.grow(target.saturating_sub(room.num_permits()))?);
                bytes.reserve_exact(target - bytes.len());
            }
            bytes.extend_from_slice(&data);
        }
        Ok(())
    };
    match timeout_at(deadline, read).await {
        Ok(Ok(())) => Ok(Held { bytes, _room: room }),
        Ok(Err(r)) => Err(r),
        Err(_) => Err(BodyRefused::Slow {
            timeout: bodies.timeout,
        }),
    }
}

/// Carries out an authorized write on `address`, whose tail is `tail` (`None`: no records).
pub(super) async fn handle(
    source: Arc<dyn Source>,
    tail: Option<Arc<Tail>>,
    write: WriteKind,
    address: &Address,
    headers: &HeaderMap,
    body: Held,
) -> Response {
    match write {
        WriteKind::Delete => {
            let mut r = status(
                StatusCode::METHOD_NOT_ALLOWED,
                "a chord log is append-only: streams are not deleted\n",
            );
            // What a chord log takes; a stream of the backend is deleted as the route says.
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, HEAD, PUT, POST, OPTIONS"),
            );
            r
        }
        WriteKind::Create if tail.is_some() => {
            if !is_json(headers) {
                return status(StatusCode::CONFLICT, "the stream is application/json\n");
            }
            if !body.is_empty() && &*body != b"[]" {
                return status(StatusCode::CONFLICT, "the stream exists\n");
            }
            done(StatusCode::OK, tail.map_or(0, |t| t.position().last))
        }
        WriteKind::Create | WriteKind::Append => {
            if write == WriteKind::Append && tail.is_none() {
                return status(StatusCode::NOT_FOUND, NO_SUCH_STREAM);
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
            // Checked whole before any is appended; never parsed into a tree, and each batch
            // stored as the bytes it was sent as (one line).
            // Each batch is checked once, here, before any is appended: what the append needs
            // of the check is whether the batch is a base (a bit a batch).
            let mut bases = Vec::new();
            let checked = std::str::from_utf8(&body)
                .map_err(|e| format!("invalid JSON: the body is not UTF-8 ({e})"))
                .and_then(|text| {
                    each_batch(text, &mut |i, batch| {
                        let checked = CheckedBatch::tagging_bases(address, batch)
                            .map_err(|e| format!("message {i}: {}", chain(&e)))?;
                        bases.push(checked.tag().is_some());
                        Ok(())
                    })
                });
            match checked {
                Ok(0) => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "no batch: a chord stream starts with a base batch\n",
                    )
                }
                Ok(_) => {}
                Err(why) => {
                    crate::live::metrics::rejected_batch();
                    return status(StatusCode::BAD_REQUEST, format!("{why}\n"));
                }
            }
            let at = address.clone();
            let append = move || -> Result<u64, String> {
                let text = std::str::from_utf8(&body).map_err(|e| e.to_string())?;
                let mut last = 0;
                each_batch(text, &mut |i, batch| {
                    // Checked above: only its size is looked at again.
                    let tag = bases[i].then_some(BASE);
                    let checked = CheckedBatch::encoded(&at, batch, tag, MAX_RECORD_BYTES)
                        .map_err(|e| chain(&e))?;
                    last = source.append(&at, checked).map_err(|e| chain(&e))?;
                    Ok(())
                })?;
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

/// JSON's insignificant whitespace.
const WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Calls `each` with every batch of a JSON-mode body, in order: the body itself when it is one
/// batch (`[op, ...]`), else each element of the array it is (`[[op, ...], ...]`). Each is the
/// text it was sent as, borrowed from the body, copied only when it spans lines (onto one
/// line, as the log stores batches). The body is read as it goes, never built into a tree:
/// what this holds besides the body is one batch's copy at most. Stops at `each`'s first
/// error. The number of batches.
fn each_batch(
    body: &str,
    each: &mut dyn FnMut(usize, &str) -> Result<(), String>,
) -> Result<usize, String> {
    let not_batch = || "a message must be a wire batch (a JSON array of ops)".to_owned();
    let inner = body
        .trim_start_matches(WHITESPACE)
        .strip_prefix('[')
        .ok_or_else(not_batch)?
        .trim_start_matches(WHITESPACE);
    // `[op, ...]`: the first op starts with its verb, a string.
    let one = inner
        .strip_prefix('[')
        .is_some_and(|op| op.trim_start_matches(WHITESPACE).starts_with('"'));
    if one {
        each(0, &one_line(body.trim_matches(WHITESPACE)))?;
        return Ok(1);
    }
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(body);
    let walked = de
        .deserialize_seq(Each {
            each,
            failed: &mut failed,
        })
        .and_then(|n| de.end().map(|()| n));
    match (walked, failed) {
        (_, Some(why)) => Err(why),
        (Ok(n), None) => Ok(n),
        (Err(e), None) => Err(format!("invalid JSON: {e}")),
    }
}

/// `raw` (valid JSON) on one line: its line breaks, which can only be whitespace between
/// tokens, removed with the rest of that whitespace.
fn one_line(raw: &str) -> Cow<'_, str> {
    if !raw.contains(['\n', '\r']) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if WHITESPACE.contains(&c) {
            continue;
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Walks an array of batches one element at a time, each borrowed from the text.
struct Each<'a> {
    each: &'a mut dyn FnMut(usize, &str) -> Result<(), String>,
    /// `each`'s error, which stops the walk.
    failed: &'a mut Option<String>,
}

impl<'de> Visitor<'de> for Each<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a wire batch (a JSON array of ops) or an array of them")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut i = 0;
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            if let Err(why) = (self.each)(i, &one_line(raw.get())) {
                *self.failed = Some(why);
                return Err(A::Error::custom("stopped"));
            }
            i += 1;
        }
        Ok(i)
    }
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use http_body::{Frame, SizeHint};

    /// What the test bodies have handed out, counted apart from the budget.
    #[derive(Default)]
    struct Ledger {
        /// Bytes handed to readers whose bodies are not yet dropped.
        buffered: AtomicUsize,
        /// Bytes of frames handed out that their reader has not yet taken in (it polls again
        /// once it has).
        in_flight: AtomicUsize,
        /// The most `buffered` seen at once.
        peak: AtomicUsize,
        /// Polls at which more bytes were taken in than the budget had reserved.
        uncovered: AtomicUsize,
    }

    /// A body of `left` chunks of `size` bytes, one per poll after a pending one, that checks
    /// at every poll that the bytes its readers have taken in are covered by the budget.
    struct Paced {
        left: usize,
        size: usize,
        announced: bool,
        ledger: Arc<Ledger>,
        bodies: Bodies,
        waited: bool,
        /// The last frame handed out, until the reader polls again.
        handed: usize,
        /// Every byte handed out.
        total: usize,
        ended: bool,
    }

    /// A body its reader dropped before the end (it refused the request): what it handed
    /// out is gone with the reader's buffer.
    impl Drop for Paced {
        fn drop(&mut self) {
            if !self.ended {
                self.ledger.in_flight.fetch_sub(self.handed, SeqCst);
                self.ledger.buffered.fetch_sub(self.total, SeqCst);
            }
        }
    }

    impl http_body::Body for Paced {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            let ledger = Arc::clone(&self.ledger);
            // Polled again: the last frame is in the reader's buffer now.
            ledger
                .in_flight
                .fetch_sub(std::mem::take(&mut self.handed), SeqCst);
            let buffered = ledger.buffered.load(SeqCst);
            let taken_in = buffered - ledger.in_flight.load(SeqCst);
            if taken_in > self.bodies.held() {
                ledger.uncovered.fetch_add(1, SeqCst);
            }
            ledger.peak.fetch_max(buffered, SeqCst);
            if self.left == 0 {
                self.ended = true;
                return Poll::Ready(None);
            }
            if !self.waited {
                self.waited = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.waited = false;
            self.left -= 1;
            self.handed = self.size;
            self.total += self.size;
            ledger.in_flight.fetch_add(self.size, SeqCst);
            ledger.buffered.fetch_add(self.size, SeqCst);
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; self.size])))))
        }

        fn size_hint(&self) -> SizeHint {
            if self.announced {
                SizeHint::with_exact((self.left * self.size) as u64)
            } else {
                SizeHint::default()
            }
        }
    }

    /// The batches `each_batch` hands out, or its error.
    fn split(body: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        each_batch(body, &mut |i, batch| {
            assert_eq!(i, out.len());
            out.push(batch.to_owned());
            Ok(())
        })
        .map(|n| {
            assert_eq!(n, out.len());
            out
        })
    }

    #[test]
    fn a_body_is_one_batch_or_an_array_of_them_each_as_sent() {
        let one = r#"[["r",{"a":1}],["s",["a"],2]]"#;
        assert_eq!(split(one).unwrap(), [one]);
        assert_eq!(split(&format!(" \r\n{one}\t")).unwrap(), [one]);
        // Spelled as sent: numbers, escapes and spaces inside strings are not respelled.
        let spelled = r#"[ ["s", ["a"], 1.50e1], ["s",["b"],"\u0041 \" \\"] ]"#;
        assert_eq!(split(spelled).unwrap(), [spelled]);
        let several = r#"[[["r",1]] , [["s",["x"],2],["d",["x"]]]]"#;
        assert_eq!(
            split(several).unwrap(),
            [r#"[["r",1]]"#, r#"[["s",["x"],2],["d",["x"]]]"#]
        );
        assert_eq!(split("[]").unwrap(), Vec::<String>::new());
        assert_eq!(split(" [ ] ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_batch_over_several_lines_is_put_on_one_and_strings_are_kept() {
        let spread = "[\n  [\"s\", [\"a b\"],\r\n   \"x\\\"\\n\\\\ y\"]\n]";
        assert_eq!(split(spread).unwrap(), [r#"[["s",["a b"],"x\"\n\\ y"]]"#]);
        let several = "[\n [[\"r\",\n {\"k\": \"v w\"}]]\n]";
        assert_eq!(split(several).unwrap(), [r#"[["r",{"k":"v w"}]]"#]);
    }

    #[test]
    fn what_is_not_batches_is_refused_saying_why() {
        for (body, why) in [
            ("", "a message must be a wire batch"),
            (r#"{"a":1}"#, "a message must be a wire batch"),
            ("[[1,2]", "invalid JSON: EOF while parsing"),
            ("[[1],[2]] x", "invalid JSON: trailing characters"),
            ("[[1],[2],]", "invalid JSON: trailing comma"),
        ] {
            let got = split(body).unwrap_err();
            assert!(got.starts_with(why), "{body:?}: {got}");
        }
        // The first error of `each` stops the walk and is the answer.
        let mut seen = 0;
        let stopped = each_batch("[[1],[2],[3]]", &mut |i, _| {
            seen += 1;
            if i == 1 {
                Err("message 1: no".into())
            } else {
                Ok(())
            }
        });
        assert_eq!(stopped, Err("message 1: no".into()));
        assert_eq!(seen, 2);
    }

    #[tokio::test]
    async fn concurrent_bodies_never_hold_more_than_the_budget() {
        const BUDGET: usize = 512 << 10;
        const CHUNK: usize = 8 << 10;
        const CHUNKS: usize = 12;
        let mut bodies = Bodies {
            wait: Duration::from_secs(60),
            ..Bodies::default()
        };
        bodies.set_budget(BUDGET);
        let ledger = Arc::new(Ledger::default());
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..32 {
            let body = Paced {
                left: CHUNKS,
                size: CHUNK,
                announced: i % 4 != 0,
                ledger: Arc::clone(&ledger),
                bodies: bodies.clone(),
                waited: false,
                handed: 0,
                total: 0,
                ended: false,
            };
            let (bodies, ledger) = (bodies.clone(), Arc::clone(&ledger));
            tasks.spawn(async move {
                let held = read_body(&bodies, &HeaderMap::new(), Body::new(body)).await;
                let held = match held {
                    Ok(held) => held,
                    Err(why) => return (i, Some(why.response().status())),
                };
                assert_eq!(held.len(), CHUNK * CHUNKS);
                tokio::task::yield_now().await;
                // Counted out before the room is given back.
                ledger.buffered.fetch_sub(held.len(), SeqCst);
                drop(held);
                (i, None)
            });
        }
        let mut refused = 0;
        while let Some(done) = tasks.join_next().await {
            let (i, status) = done.unwrap();
            match status {
                None => {}
                // A body of unknown length does not wait for room it cannot get at once.
                Some(StatusCode::SERVICE_UNAVAILABLE) if i % 4 == 0 => refused += 1,
                Some(other) => panic!("body {i}: {other}"),
            }
        }
        assert_eq!(ledger.uncovered.load(SeqCst), 0);
        let peak = ledger.peak.load(SeqCst);
        assert!(
            peak <= BUDGET,
            "{peak} bytes buffered at once over {BUDGET}"
        );
        // More was sent than the budget holds, so the budget was what held them back.
        const { assert!(32 * CHUNK * CHUNKS > 4 * BUDGET) };
        assert!(peak * 2 > BUDGET, "peak {peak} of {BUDGET}");
        assert!(
            refused < 8,
            "{refused} of 8 bodies of unknown length refused"
        );
        assert_eq!(bodies.held(), 0, "all room given back");
    }
}
