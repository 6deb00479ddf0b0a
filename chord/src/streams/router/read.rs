//! Reads of a chord log: catch-up, long-poll, SSE and `HEAD`, from the address's tail cache or
//! else its store.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use tokio::time::{sleep_until, Instant};

use super::{Streams, BASE_OFFSET_HEADER};
use crate::store::{Address, Record};
use crate::streams::catchup::CatchUpBody;
use crate::streams::headers::plain;
use crate::streams::log::Want;
use crate::streams::metrics::{self, Reading};
use crate::streams::offset::Start;
use crate::streams::server::Draining;
use crate::streams::sse::{self, Changes, Feed, Next, Pending, SseBody};
use crate::streams::tail::{Entry, Found, Tail};
use crate::streams::{frame, Offset};

/// Most bytes of batches read at once for a catch-up response (a single larger record is
/// read whole); a response reaching past one chunk is sent a chunk at a time
/// ([`CatchUpBody`]).
const CHUNK: usize = 256 * 1024;

/// Most bytes of batches in one SSE `data` event (a single larger record is sent whole): a
/// reader applies a `data` event once the `control` event after it arrives, so a reader
/// catching up over a link that breaks often progresses in steps this small.
const SSE_CHUNK: usize = 16 * 1024;

pub(super) fn offset_value(seq: u64) -> HeaderValue {
    HeaderValue::from_str(&Offset::from_seq(seq).to_string()).expect("hex digits")
}

pub(super) async fn load(
    streams: &Streams,
    address: &Address,
    want: Want,
) -> Result<Option<Arc<Tail>>, Box<Response>> {
    let source = Arc::clone(&streams.source);
    let at = address.clone();
    // Loading reads the store: not on a runtime worker.
    let span = tracing::debug_span!("chord.store.tail", stream = %address);
    match tokio::task::spawn_blocking(move || span.in_scope(|| source.tail(&at, want))).await {
        Ok(Ok(tail)) => Ok(tail),
        Ok(Err(e)) => Err(Box::new({
            metrics::read_failed();
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading {address}: {e}\n"),
            )
        })),
        Err(_) => Err(Box::new(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the read was cancelled\n",
        ))),
    }
}

/// The metadata every response for a stream carries.
fn stream_headers(headers: &mut HeaderMap, tail: &Tail) {
    let position = tail.position();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(BASE_OFFSET_HEADER, offset_value(position.base));
}

pub(super) fn head(tail: &Tail) -> Response {
    let mut r = Response::new(Body::empty());
    let h = r.headers_mut();
    stream_headers(h, tail);
    h.insert("stream-next-offset", offset_value(tail.position().last));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// One read of one stream.
pub(super) struct Reader {
    pub(super) streams: Arc<Streams>,
    pub(super) address: Address,
    pub(super) tail: Arc<Tail>,
    /// The server's drain signal, when a [`Server`](crate::streams::Server) serves the read.
    pub(super) draining: Option<Draining>,
}

/// A chunk of records read from the cache or the store.
enum Chunk {
    Entries(Vec<Arc<Entry>>),
    Records(Vec<Record>),
}

impl Chunk {
    fn is_empty(&self) -> bool {
        match self {
            Chunk::Entries(e) => e.is_empty(),
            Chunk::Records(r) => r.is_empty(),
        }
    }

    fn last_seq(&self) -> Option<u64> {
        match self {
            Chunk::Entries(e) => e.last().map(|e| e.seq),
            Chunk::Records(r) => r.last().map(|r| r.seq),
        }
    }

    fn batches(&self) -> Vec<&str> {
        match self {
            Chunk::Entries(e) => e.iter().map(|e| &*e.batch).collect(),
            Chunk::Records(r) => r.iter().map(|r| r.batch.as_str()).collect(),
        }
    }
}

impl Reader {
    /// Where `start` is, as a seq: `None` for `now`.
    fn resolve(&self, start: Start) -> u64 {
        let position = self.tail.position();
        match start {
            Start::Beginning => position.floor,
            Start::Now => position.last,
            Start::At(offset) => offset.seq(),
        }
    }

    /// The records after `after`, from the cache or else the store. `None`: gone.
    async fn chunk(&self, after: u64) -> Result<Option<Chunk>, Response> {
        match self.tail.read(after, CHUNK) {
            Found::Entries(entries) => Ok(Some(Chunk::Entries(entries))),
            Found::Gone => Ok(None),
            Found::Miss => {
                metrics::cache_miss();
                let source = Arc::clone(&self.streams.source);
                let address = self.address.clone();
                let span = tracing::debug_span!("chord.store.read", stream = %address, after);
                let read = move || span.in_scope(|| source.read(&address, after, CHUNK));
                match tokio::task::spawn_blocking(read).await {
                    Ok(Ok(Some(records))) => Ok(Some(Chunk::Records(records))),
                    // Compacted away meanwhile: gone, as the cache would say now.
                    Ok(Ok(None)) => Ok(None),
                    Ok(Err(e)) => Err({
                        metrics::read_failed();
                        plain(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            format!("reading {}: {e}\n", self.address),
                        )
                    }),
                    Err(_) => Err(plain(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the read was cancelled\n",
                    )),
                }
            }
        }
    }

    fn gone(&self) -> Response {
        metrics::gone();
        let mut r = plain(
            StatusCode::GONE,
            "offset no longer served (before the oldest base kept, or beyond the tail): \
             restart from the latest base\n",
        );
        stream_headers(r.headers_mut(), &self.tail);
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        r
    }

    /// A 200 with the chunk's records as one JSON array.
    fn data(
        &self,
        after: u64,
        chunk: &Chunk,
        cursor: Option<u64>,
        headers: &HeaderMap,
    ) -> Response {
        let next = chunk.last_seq().unwrap_or(after);
        let up_to_date = next >= self.tail.position().last;
        let etag = format!("\"{}:{}\"", Offset::from_seq(after), Offset::from_seq(next));
        let matches = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
        let mut r = if matches {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            Response::new(Body::from(frame::json_array(chunk.batches())))
        };
        let h = r.headers_mut();
        stream_headers(h, &self.tail);
        h.insert("stream-next-offset", offset_value(next));
        if up_to_date {
            h.insert("stream-up-to-date", HeaderValue::from_static("true"));
        }
        if let Some(cursor) = cursor {
            h.insert("stream-cursor", HeaderValue::from(cursor));
        }
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, self.streams.cache_control.clone());
        r
    }

    pub(super) async fn catch_up(self, start: Start, headers: &HeaderMap) -> Response {
        let after = self.resolve(start);
        if start == Start::Now {
            let mut r = Response::new(Body::from("[]"));
            let h = r.headers_mut();
            stream_headers(h, &self.tail);
            h.insert("stream-next-offset", offset_value(after));
            h.insert("stream-up-to-date", HeaderValue::from_static("true"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return r;
        }
        match self.chunk(after).await {
            Ok(Some(chunk)) => {
                let until = self.tail.position().last;
                match chunk.last_seq() {
                    Some(next) if next < until => self.whole(after, &chunk, until, headers),
                    _ => self.data(after, &chunk, None, headers),
                }
            }
            Ok(None) => self.gone(),
            Err(r) => r,
        }
    }

    /// A 200 with every record after `after` up to `until` as one JSON array, up to date:
    /// `chunk` (the first records) at once, the rest as the connection sends it (see
    /// [`CatchUpBody`] for why one response).
    fn whole(&self, after: u64, chunk: &Chunk, until: u64, headers: &HeaderMap) -> Response {
        let etag = format!(
            "\"{}:{}\"",
            Offset::from_seq(after),
            Offset::from_seq(until)
        );
        let matches = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
        let mut r = if matches {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            let mut first = frame::json_array(chunk.batches());
            first.pop(); // the `]`: the body goes on
            let next = chunk.last_seq().unwrap_or(after);
            Response::new(Body::new(CatchUpBody::new(
                first,
                Arc::clone(&self.streams.source),
                Arc::clone(&self.tail),
                self.address.clone(),
                (next, until),
                CHUNK,
            )))
        };
        let h = r.headers_mut();
        stream_headers(h, &self.tail);
        h.insert("stream-next-offset", offset_value(until));
        h.insert("stream-up-to-date", HeaderValue::from_static("true"));
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, self.streams.cache_control.clone());
        r
    }

    pub(super) async fn long_poll(self, start: Start, echoed: Option<u64>) -> Response {
        let after = self.resolve(start);
        // Subscribed before the first read, so no record slips between it and the wait.
        let mut changes = self.tail.subscribe();
        let _reading = Reading::new(&self.address);
        let deadline = Instant::now() + self.streams.long_poll;
        // Draining: the poll answers 204 at once, and the client polls the server's successor.
        let mut drain: Pending<()> = match &self.draining {
            Some(d) => Box::pin(d.wait()),
            None => Box::pin(std::future::pending()),
        };
        loop {
            changes.borrow_and_update();
            let chunk = match self.chunk(after).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return self.gone(),
                Err(r) => return r,
            };
            if !chunk.is_empty() {
                return self.data(
                    after,
                    &chunk,
                    Some(frame::cursor(echoed)),
                    &HeaderMap::new(),
                );
            }
            let changed = tokio::select! {
                changed = changes.changed() => changed.is_ok(),
                () = sleep_until(deadline) => false,
                () = &mut drain => false,
            };
            if !changed {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::NO_CONTENT;
                let h = r.headers_mut();
                stream_headers(h, &self.tail);
                h.insert("stream-next-offset", offset_value(after));
                h.insert("stream-up-to-date", HeaderValue::from_static("true"));
                h.insert("stream-cursor", HeaderValue::from(frame::cursor(echoed)));
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return r;
            }
        }
    }

    pub(super) fn sse(self, start: Start, echoed: Option<u64>) -> Response {
        let after = self.resolve(start);
        if let Found::Gone = self.tail.read(after, 1) {
            return self.gone();
        }
        let timing = self.streams.sse_timing(self.draining.clone());
        let tail = Arc::clone(&self.tail);
        let feed = LogFeed {
            _reading: Reading::new(&self.address),
            changes: Changes::new(self.tail.subscribe()),
            read: None,
            after,
            echoed,
            first: true,
            reader: self,
        };
        let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
        let h = r.headers_mut();
        stream_headers(h, &tail);
        sse::headers(h);
        r
    }
}

/// The SSE events of one reader of a chord log: what it has not had yet, from the tail cache
/// (the same bytes for every reader at the tail) or else the store.
struct LogFeed {
    /// Counts this reader of the stream while it lives.
    _reading: Reading,
    reader: Reader,
    after: u64,
    echoed: Option<u64>,
    changes: Changes,
    /// A store read in flight.
    read: Option<Pending<Option<Vec<Record>>>>,
    /// Nothing sent yet: an empty first read still sends a `control` event.
    first: bool,
}

impl LogFeed {
    fn control(&self, next: u64, up_to_date: bool) -> Vec<u8> {
        let mut out = Vec::new();
        frame::control_event(
            &mut out,
            Offset::from_seq(next),
            frame::cursor(self.echoed),
            up_to_date,
        );
        out
    }

    /// The events for `chunk`, read after `self.after`.
    fn events(&mut self, chunk: &Chunk) -> Bytes {
        self.first = false;
        let last = self.reader.tail.position().last;
        let next = chunk.last_seq().unwrap_or(self.after);
        self.after = next;
        if let Chunk::Entries(e) = chunk {
            if e.len() == 1 && e[0].seq == last && self.echoed.is_none() {
                return e[0].live.clone(); // the same bytes for every reader at the tail
            }
        }
        let batches = chunk.batches();
        // The event's size up front: one allocation, not one per doubling.
        let size: usize = batches.iter().map(|b| b.len() + 1).sum();
        let mut out = Vec::with_capacity(size + 160);
        frame::data_event(&mut out, batches);
        out.extend_from_slice(&self.control(next, next >= last));
        Bytes::from(out)
    }
}

impl Feed for LogFeed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            if let Some(read) = self.read.as_mut() {
                let Poll::Ready(records) = read.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                self.read = None;
                // `None`: the store failed, or compacted the records away meanwhile; the
                // client's next request says which.
                let Some(records) = records else {
                    return Poll::Ready(Next::End);
                };
                return Poll::Ready(Next::Data(self.events(&Chunk::Records(records))));
            }
            if self.changes.waiting() {
                match self.changes.poll_changed(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Ready(true) => {}
                }
            }
            self.changes.seen();
            match self.reader.tail.read(self.after, SSE_CHUNK) {
                Found::Gone => return Poll::Ready(Next::End),
                Found::Miss => {
                    metrics::cache_miss();
                    let source = Arc::clone(&self.reader.streams.source);
                    let address = self.reader.address.clone();
                    let after = self.after;
                    let span = tracing::debug_span!("chord.store.read", stream = %address, after);
                    let read = tokio::task::spawn_blocking(move || {
                        let read = span.in_scope(|| source.read(&address, after, SSE_CHUNK));
                        if read.is_err() {
                            metrics::read_failed();
                        }
                        read
                    });
                    self.read = Some(Box::pin(async move {
                        read.await.ok().and_then(Result::ok).flatten()
                    }));
                }
                Found::Entries(entries) if !entries.is_empty() => {
                    return Poll::Ready(Next::Data(self.events(&Chunk::Entries(entries))));
                }
                Found::Entries(_) => match self.changes.poll_changed(cx) {
                    Poll::Ready(true) => {}
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Pending if self.first => {
                        self.first = false;
                        let control = self.control(self.after, true);
                        return Poll::Ready(Next::Control(Bytes::from(control)));
                    }
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}
