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
use crate::live::cursor::{self, Cursor, Read, Step};
use crate::live::frames::Slot;
use crate::live::headers::plain;
use crate::live::log::Want;
use crate::live::metrics::{self, Reading};
use crate::live::offset::{BaseOffset, Start};
use crate::live::server::Draining;
use crate::live::sse::{self, Feed, Next, Pending, SseBody};
use crate::live::tail::{Entry, Found, Tail};
use crate::store::{Address, Record, CHECKPOINT};
use crate::streams::catchup::CatchUpBody;
use crate::streams::{frame, Offset};

/// Most bytes of batches read at once for a catch-up response (a single larger record is
/// read whole); a response reaching past one chunk is sent a chunk at a time
/// ([`CatchUpBody`]).
const CHUNK: usize = 256 * 1024;

/// Most bytes of batches in one SSE `data` event (a single larger record is sent whole): a
/// reader applies a `data` event once the `control` event after it arrives, so a reader
/// catching up over a link that breaks often progresses in steps this small.
const SSE_CHUNK: usize = 16 * 1024;

/// A `304 Not Modified` when the request's `If-None-Match` names `etag`.
fn not_modified(headers: &HeaderMap, etag: &str) -> Option<Response> {
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    matches.then(|| {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    })
}

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
    headers.insert(
        BASE_OFFSET_HEADER,
        HeaderValue::from_str(&position.base.to_string()).expect("hex digits and a suffix"),
    );
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

/// A chunk of records read from the cache or the store, as a read delivers them: without
/// checkpoints (a reader that has the record before one has its value), but for one the read
/// starts at (a reader with no value starts there).
struct Chunk {
    items: Items,
    /// The seq of the last record read, delivered or left out: where the reader is after it.
    last: Option<u64>,
}

enum Items {
    Entries(Vec<Arc<Entry>>),
    Records(Vec<Record>),
}

impl Chunk {
    /// `items`, read in order after `from`. A checkpoint first among them is delivered to a
    /// reader with no value (`from.base`), and to one whose offset is not the record right
    /// before it: the records between went (compacted), so the reader cannot have the value
    /// the checkpoint restates, and a base is what it needs (the store's own reads answer
    /// `410` for such an offset, but the cache knows only the records it holds).
    fn new(items: Items, from: ReadFrom) -> Chunk {
        let keep = |i: usize, checkpoint: bool, prev: Option<u64>| {
            !checkpoint || (i == 0 && (from.base || from.after == 0 || prev != Some(from.after)))
        };
        match items {
            Items::Entries(mut e) => {
                let last = e.last().map(|e| e.seq);
                let mut i = 0;
                e.retain(|e| {
                    i += 1;
                    keep(i - 1, e.checkpoint, Some(e.prev))
                });
                Chunk {
                    items: Items::Entries(e),
                    last,
                }
            }
            Items::Records(mut r) => {
                let last = r.last().map(|r| r.seq);
                let mut i = 0;
                // A store read of a reader's own offset: the record before the first is the
                // one at the offset (or the read answered gone).
                r.retain(|r| {
                    i += 1;
                    keep(
                        i - 1,
                        r.tag.as_deref() == Some(CHECKPOINT),
                        Some(from.after),
                    )
                });
                Chunk {
                    items: Items::Records(r),
                    last,
                }
            }
        }
    }

    /// Whether it delivers nothing.
    fn is_empty(&self) -> bool {
        match &self.items {
            Items::Entries(e) => e.is_empty(),
            Items::Records(r) => r.is_empty(),
        }
    }

    fn last_seq(&self) -> Option<u64> {
        self.last
    }

    fn batches(&self) -> Vec<&str> {
        match &self.items {
            Items::Entries(e) => e.iter().map(|e| &*e.batch).collect(),
            Items::Records(r) => r.iter().map(|r| r.batch.as_str()).collect(),
        }
    }
}

/// Where a read starts: after `after`; `base`: for a reader with no value, so a checkpoint
/// right after it is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ReadFrom {
    after: u64,
    base: bool,
    /// The answer's records move as the log grows (`offset=base`, `offset=-1`): it is
    /// cached at most for the log's time floor.
    moves: bool,
}

impl ReadFrom {
    /// The `ETag` of an answer from here to `next`: a read for a reader with no value holds
    /// what one resuming from the same offset does not.
    fn etag(self, next: u64) -> String {
        let start = BaseOffset {
            before: self.after,
            checkpoint: self.base,
        };
        format!("\"{start}:{}\"", Offset::from_seq(next))
    }
}

impl Reader {
    /// Where `start` is.
    fn resolve(&self, start: Start) -> ReadFrom {
        let position = self.tail.position();
        let (after, base) = match start {
            // From the oldest base kept, checkpoint or not.
            Start::Beginning => (position.floor, true),
            Start::Now => (position.last, false),
            Start::At(offset) => (offset.seq(), false),
            Start::Base(offset) => (offset.seq(), true),
            Start::Latest => (position.base.before, true),
        };
        ReadFrom {
            after,
            base,
            moves: matches!(start, Start::Beginning | Start::Latest),
        }
    }

    /// The records after `from`, from the cache or else the store. `None`: gone.
    async fn chunk(&self, from: ReadFrom) -> Result<Option<Chunk>, Response> {
        let source = &self.streams.source;
        match cursor::read(source, &self.address, &self.tail, from.after, CHUNK) {
            Read::Cached(entries) => Ok(Some(Chunk::new(Items::Entries(entries), from))),
            Read::Gone => Ok(None),
            Read::Stored(read) => match read.await {
                Ok(Some(records)) => Ok(Some(Chunk::new(Items::Records(records), from))),
                // Compacted away meanwhile: gone, as the cache would say now.
                Ok(None) => Ok(None),
                Err(why) => Err(plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n"))),
            },
        }
    }

    /// The `Cache-Control` of an answer read from `from`.
    fn cache_control(&self, from: ReadFrom) -> HeaderValue {
        if from.moves {
            self.streams.moving_cache_control.clone()
        } else {
            self.streams.cache_control.clone()
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
        from: ReadFrom,
        chunk: &Chunk,
        cursor: Option<u64>,
        headers: &HeaderMap,
    ) -> Response {
        let next = chunk.last_seq().unwrap_or(from.after);
        let up_to_date = next >= self.tail.position().last;
        let etag = from.etag(next);
        let mut r = not_modified(headers, &etag)
            .unwrap_or_else(|| Response::new(Body::from(frame::json_array(chunk.batches()))));
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
        h.insert(header::CACHE_CONTROL, self.cache_control(from));
        r
    }

    pub(super) async fn catch_up(self, start: Start, headers: &HeaderMap) -> Response {
        let from = self.resolve(start);
        if start == Start::Now {
            let mut r = Response::new(Body::from("[]"));
            let h = r.headers_mut();
            stream_headers(h, &self.tail);
            h.insert("stream-next-offset", offset_value(from.after));
            h.insert("stream-up-to-date", HeaderValue::from_static("true"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return r;
        }
        match self.chunk(from).await {
            Ok(Some(chunk)) => {
                let until = self.tail.position().last;
                match chunk.last_seq() {
                    Some(next) if next < until => self.whole(from, &chunk, until, headers),
                    _ => self.data(from, &chunk, None, headers),
                }
            }
            Ok(None) => self.gone(),
            Err(r) => r,
        }
    }

    /// A 200 with every record after `after` up to `until` as one JSON array, up to date:
    /// `chunk` (the first records) at once, the rest as the connection sends it (see
    /// [`CatchUpBody`] for why one response).
    fn whole(&self, from: ReadFrom, chunk: &Chunk, until: u64, headers: &HeaderMap) -> Response {
        let etag = from.etag(until);
        let mut r = not_modified(headers, &etag).unwrap_or_else(|| {
            let mut first = frame::json_array(chunk.batches());
            first.pop(); // the `]`: the body goes on
            let next = chunk.last_seq().unwrap_or(from.after);
            Response::new(Body::new(CatchUpBody::new(
                first,
                Arc::clone(&self.streams.source),
                Arc::clone(&self.tail),
                self.address.clone(),
                (next, until),
                CHUNK,
            )))
        });
        let h = r.headers_mut();
        stream_headers(h, &self.tail);
        h.insert("stream-next-offset", offset_value(until));
        h.insert("stream-up-to-date", HeaderValue::from_static("true"));
        h.insert(
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex digits"),
        );
        h.insert(header::CACHE_CONTROL, self.cache_control(from));
        r
    }

    pub(super) async fn long_poll(self, start: Start, echoed: Option<u64>) -> Response {
        let mut from = self.resolve(start);
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
            let chunk = match self.chunk(from).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return self.gone(),
                Err(r) => return r,
            };
            if !chunk.is_empty() {
                return self.data(from, &chunk, Some(frame::cursor(echoed)), &HeaderMap::new());
            }
            if let Some(last) = chunk.last_seq() {
                // Only checkpoints: nothing for this reader, which waits on past them.
                from = ReadFrom {
                    after: last,
                    base: false,
                    moves: false,
                };
                continue;
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
                h.insert("stream-next-offset", offset_value(from.after));
                h.insert("stream-up-to-date", HeaderValue::from_static("true"));
                h.insert("stream-cursor", HeaderValue::from(frame::cursor(echoed)));
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return r;
            }
        }
    }

    pub(super) async fn sse(self, start: Start, echoed: Option<u64>) -> Response {
        let from = self.resolve(start);
        let ReadFrom { after, base, .. } = from;
        match self.tail.read(after, 1) {
            Found::Gone => return self.gone(),
            // Before the floor of a tail younger than the time floor: the store says whether
            // it is still served, before the answer starts (a stream that started and then
            // found it gone would end at once, and its client reconnect to the same end).
            Found::Miss if after < self.tail.position().floor => match self.chunk(from).await {
                Ok(Some(_)) => {}
                Ok(None) => return self.gone(),
                Err(r) => return r,
            },
            _ => {}
        }
        let timing = self.streams.sse_timing(self.draining.clone());
        let tail = Arc::clone(&self.tail);
        let cursor = Cursor::new(
            Arc::clone(&self.streams.source),
            self.address.clone(),
            Arc::clone(&self.tail),
            after,
            SSE_CHUNK,
        );
        let feed = LogFeed {
            cursor,
            base,
            echoed,
            first: true,
        };
        let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
        let h = r.headers_mut();
        stream_headers(h, &tail);
        sse::headers(h);
        r
    }
}

/// The SSE events of one reader of a chord log: what it has not had yet, as its cursor yields
/// it, framed as `data` and `control` events (a record at the tail in the bytes every reader
/// at the tail is sent, made once).
struct LogFeed {
    cursor: Cursor,
    /// The reader has no value: a checkpoint first in the first read is delivered.
    base: bool,
    echoed: Option<u64>,
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

    /// What `items`, read after `after`, deliver.
    fn chunk(&mut self, items: Items, after: u64) -> Chunk {
        let from = ReadFrom {
            after,
            base: self.base,
            moves: false,
        };
        self.base = false;
        Chunk::new(items, from)
    }

    /// The events for `chunk`; `None` when it delivers nothing (only checkpoints), the reader
    /// then being past them.
    fn events(&mut self, chunk: &Chunk) -> Option<Bytes> {
        if chunk.is_empty() {
            return None;
        }
        self.first = false;
        let next = chunk.last_seq().unwrap_or(self.cursor.after());
        let tail = self.cursor.tail();
        let last = tail.position().last;
        if let Items::Entries(e) = &chunk.items {
            if e.len() == 1 && e[0].seq == last && self.echoed.is_none() {
                // The same bytes for every reader at the tail, made by the first.
                return Some(e[0].frame(Slot::TAIL).unwrap_or_else(|| {
                    let mut out = Vec::with_capacity(e[0].batch.len() + 128);
                    frame::data_event(&mut out, [&*e[0].batch]);
                    frame::control_event(
                        &mut out,
                        Offset::from_seq(next),
                        frame::cursor(None),
                        true,
                    );
                    tail.set_frame(&e[0], Slot::TAIL, out)
                }));
            }
        }
        let batches = chunk.batches();
        // The event's size up front: one allocation, not one per doubling.
        let size: usize = batches.iter().map(|b| b.len() + 1).sum();
        let mut out = Vec::with_capacity(size + 160);
        frame::data_event(&mut out, batches);
        out.extend_from_slice(&self.control(next, next >= last));
        Some(Bytes::from(out))
    }
}

impl Feed for LogFeed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            let after = self.cursor.after();
            let items = match self.cursor.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Step::Entries(entries)) => Items::Entries(entries),
                Poll::Ready(Step::Records(records)) => Items::Records(records),
                Poll::Ready(Step::Idle) if self.first => {
                    self.first = false;
                    let control = self.control(after, true);
                    return Poll::Ready(Next::Control(Bytes::from(control)));
                }
                Poll::Ready(Step::Idle) => continue,
                // Gone, failed or dropped: the client's next request says which.
                Poll::Ready(Step::Gone | Step::Failed(_) | Step::End) => {
                    return Poll::Ready(Next::End)
                }
            };
            let chunk = self.chunk(items, after);
            if let Some(data) = self.events(&chunk) {
                return Poll::Ready(Next::Data(data));
            }
        }
    }
}
