//! The `text/event-stream` body of every door's SSE responses, [`SseBody`] over a [`Feed`],
//! and the one writer of SSE lines ([`event`], [`comment`]).
//!
//! The body is polled by the connection itself: no task and no queue per reader. It ends the
//! response after its lifetime or when the server drains (the client resumes from its offset;
//! every frame is whole events, so the response ends at an event boundary), sends a keep-alive
//! comment after a quiet interval, and holds `data` events to one per coalescing window; the
//! [`Feed`] says what to send next.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue};
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant, Sleep};

use super::metrics::{Ended, SseOpen};
use super::server::Draining;

/// The default interval of keep-alive comments on an idle SSE response.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The fields of an SSE event beside its data: its type (`event:`) and its id (`id:`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fields<'a> {
    /// The `event:` field: the event's type (none: `message`).
    pub(crate) event: Option<&'a str>,
    /// The `id:` field: what a client sends back as `Last-Event-ID`.
    pub(crate) id: Option<&'a str>,
    /// `data:` lines without the space after the colon (`data:x`), as the Durable Streams
    /// protocol's reference server writes them and its conformance suite reads them; a line
    /// that starts with a space gets one more, so that it keeps it. Otherwise `data: x`.
    pub(crate) compact: bool,
}

/// Whether a field's value can be written on one line: no CR, LF or NUL (a line break would
/// end the field and start another, a forged one; a NUL makes a browser drop an id).
fn one_line(value: &str) -> bool {
    !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
}

/// Writes one SSE event to `out`: its fields, then the data `data` writes, as `data:` lines,
/// then the blank line that ends it.
///
/// A field whose value holds a line break is refused: it is left out (a caller's bug, never
/// input: every door writes fields it made), as axum's `Event` refuses one. Every line break
/// the SSE grammar knows (CR LF, CR, LF) inside the data starts a new `data:` line, so no
/// payload can end the event or forge another; data without one (compact JSON, a wire
/// batch) is written in place, not copied.
pub(crate) fn event(out: &mut Vec<u8>, fields: Fields<'_>, data: impl FnOnce(&mut Vec<u8>)) {
    for (name, value) in [(&b"event: "[..], fields.event), (&b"id: "[..], fields.id)] {
        match value {
            Some(value) if one_line(value) => {
                out.extend_from_slice(name);
                out.extend_from_slice(value.as_bytes());
                out.push(b'\n');
            }
            Some(value) => debug_assert!(false, "an SSE field with a line break: {value:?}"),
            None => {}
        }
    }
    let line_start = |compact: bool, first: Option<&u8>| -> &'static [u8] {
        if !compact || first == Some(&b' ') {
            b"data: "
        } else {
            b"data:"
        }
    };
    let head = out.len();
    out.extend_from_slice(line_start(fields.compact, None));
    let start = out.len();
    data(out);
    if !out[start..].iter().any(|&b| b == b'\r' || b == b'\n') {
        // One line, written in place (a compact line that starts with a space keeps it).
        if fields.compact && out.get(start) == Some(&b' ') {
            out.insert(start, b' ');
        }
        out.extend_from_slice(b"\n\n");
        return;
    }
    let written = out.split_off(start);
    out.truncate(head);
    let text = String::from_utf8_lossy(&written);
    for line in text.split("\r\n").flat_map(|l| l.split(['\r', '\n'])) {
        out.extend_from_slice(line_start(fields.compact, line.as_bytes().first()));
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Writes an SSE comment (`: text`), which clients ignore: a keep-alive. A line break in
/// `text` ends the comment there.
pub(crate) fn comment(out: &mut Vec<u8>, text: &str) {
    let line = text.split(['\r', '\n']).next().unwrap_or_default();
    out.extend_from_slice(b": ");
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// A boxed future a feed polls (a store read, a wait for a change).
pub(crate) type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a [`Feed`] has for its reader.
pub(crate) enum Next {
    /// Whole events with at least one `data` event: the coalescing window opens.
    Data(Bytes),
    /// Whole events without data (a `control` event alone).
    Control(Bytes),
    /// Nothing more: the response ends (the stream closed, went, or the store failed; the
    /// client's next request says which).
    End,
}

/// The events one SSE reader has not had yet.
pub(crate) trait Feed: Send + Unpin + 'static {
    /// The next events, or `Pending` (with `cx`'s waker registered) until there are some.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next>;
}

/// A stream's change counter as a feed waits on it: [`poll_changed`](Changes::poll_changed)
/// resolves once the counter moved past the value last [`seen`](Changes::seen).
pub(crate) struct Changes {
    rx: Option<watch::Receiver<u64>>,
    /// The last read found nothing new: the next turn waits for a change.
    caught_up: bool,
    /// The wait in flight; it holds the receiver until it resolves.
    wait: Option<Pending<Option<watch::Receiver<u64>>>>,
}

impl Changes {
    pub(crate) fn new(rx: watch::Receiver<u64>) -> Changes {
        Changes {
            rx: Some(rx),
            caught_up: false,
            wait: None,
        }
    }

    /// `Ready(true)` when it is the reader's turn to read: at once, unless its last read
    /// found nothing new ([`caught_up`](Changes::caught_up)), then once the value changed;
    /// the value is marked seen before the read, so no change slips between the read and the
    /// next wait. `Ready(false)` once the sender is gone.
    pub(crate) fn poll_turn(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        if self.caught_up || self.waiting() {
            match self.poll_changed(cx) {
                Poll::Ready(true) => {}
                other => return other,
            }
        }
        self.caught_up = false;
        self.seen();
        Poll::Ready(true)
    }

    /// The read of this turn found nothing new: the next turn waits for a change.
    pub(crate) fn caught_up(&mut self) {
        self.caught_up = true;
    }

    /// Whether a wait is in flight (a poll returned `Pending`).
    pub(crate) fn waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// Marks the current value seen: the next wait is for a newer one. Called before each
    /// read, so no change slips between the read and the wait.
    pub(crate) fn seen(&mut self) {
        if let Some(rx) = self.rx.as_mut() {
            rx.borrow_and_update();
        }
    }

    /// `Ready(true)` once the value changed since [`seen`](Changes::seen), `Ready(false)` once
    /// its sender is gone.
    pub(crate) fn poll_changed(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let wait = match self.wait.as_mut() {
            Some(wait) => wait,
            None => {
                let Some(mut rx) = self.rx.take() else {
                    return Poll::Ready(false);
                };
                self.wait.insert(Box::pin(
                    async move { rx.changed().await.ok().map(|()| rx) },
                ))
            }
        };
        let Poll::Ready(rx) = wait.as_mut().poll(cx) else {
            return Poll::Pending;
        };
        self.wait = None;
        self.rx = rx;
        Poll::Ready(self.rx.is_some())
    }
}

/// The timing of an SSE response.
#[derive(Clone, Debug)]
pub(crate) struct Timing {
    /// How long the response lasts.
    pub(crate) lifetime: Duration,
    /// The quiet interval after which a keep-alive comment goes.
    pub(crate) keep_alive: Duration,
    /// At most one `data` event per this window (zero: no window).
    pub(crate) coalesce: Duration,
    /// The server's drain signal, when a [`Server`](super::Server) serves the response.
    pub(crate) drain: Option<Draining>,
}

/// The body of one SSE response: what `feed` yields, with the lifetime, keep-alives and the
/// coalescing window applied.
pub(crate) struct SseBody<F> {
    feed: F,
    timing: Timing,
    end: Pin<Box<Sleep>>,
    /// Fires a keep-alive interval after the last event sent (moved forward when it fires
    /// early, not at every event: a timer reset takes the timer driver's lock).
    keep_alive: Pin<Box<Sleep>>,
    last_sent: Instant,
    /// The end of the coalescing window that the last `data` event opened.
    hold: Option<Pin<Box<Sleep>>>,
    /// Resolves when the server drains.
    drain: Option<Pending<()>>,
    /// Counts this response as open, and why it ended.
    open: SseOpen,
    done: bool,
}

impl<F: Feed> SseBody<F> {
    pub(crate) fn new(feed: F, timing: Timing) -> SseBody<F> {
        let now = Instant::now();
        let drain = timing
            .drain
            .as_ref()
            .map(|d| Box::pin(d.wait()) as Pending<()>);
        SseBody {
            feed,
            end: Box::pin(sleep_until(now + timing.lifetime)),
            keep_alive: Box::pin(sleep_until(now + timing.keep_alive)),
            timing,
            last_sent: now,
            hold: None,
            drain,
            open: SseOpen::new(),
            done: false,
        }
    }

    fn send(&mut self, bytes: Bytes) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.last_sent = Instant::now();
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }

    /// A `data` event went: the next waits for the end of the coalescing window.
    fn open_window(&mut self) {
        if self.timing.coalesce.is_zero() {
            return;
        }
        let until = self.last_sent + self.timing.coalesce;
        match self.hold.as_mut() {
            Some(hold) => hold.as_mut().reset(until),
            None => self.hold = Some(Box::pin(sleep_until(until))),
        }
    }

    /// Nothing to send now: a keep-alive comment if one is due, else `Pending`.
    fn idle(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.keep_alive.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let due = self.last_sent + self.timing.keep_alive;
        if Instant::now() >= due {
            let mut out = Vec::with_capacity(16);
            comment(&mut out, "keep-alive");
            return self.send(Bytes::from(out));
        }
        self.keep_alive.as_mut().reset(due);
        let _ = self.keep_alive.as_mut().poll(cx); // (registers the waker)
        Poll::Pending
    }
}

impl<F: Feed> http_body::Body for SseBody<F> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.end.as_mut().poll(cx).is_ready() {
            this.done = true; // the client resumes from its offset
            this.open.ended(Ended::Lifetime);
            return Poll::Ready(None);
        }
        if let Some(drain) = this.drain.as_mut() {
            if drain.as_mut().poll(cx).is_ready() {
                // Between frames, each whole events: the client has the `control` event of
                // every `data` event it was sent, and resumes from its offset elsewhere.
                this.done = true;
                this.open.ended(Ended::Drain);
                return Poll::Ready(None);
            }
        }
        if let Some(hold) = this.hold.as_mut() {
            if hold.as_mut().poll(cx).is_pending() {
                // Within the window: what arrives meanwhile goes when it ends.
                return this.idle(cx);
            }
        }
        match this.feed.poll_next(cx) {
            Poll::Ready(Next::Data(bytes)) => {
                let sent = this.send(bytes);
                this.open_window();
                sent
            }
            Poll::Ready(Next::Control(bytes)) => this.send(bytes),
            Poll::Ready(Next::End) => {
                this.done = true;
                this.open.ended(Ended::End);
                Poll::Ready(None)
            }
            Poll::Pending => this.idle(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// The headers of every SSE response (set last: they replace a `Content-Type` set before).
pub(crate) fn headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn written(fields: Fields<'_>, data: &str) -> String {
        let mut out = Vec::new();
        event(&mut out, fields, |out| {
            out.extend_from_slice(data.as_bytes())
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_writer_keeps_every_line_of_data_and_no_forged_field() {
        let spaced = Fields {
            event: Some("data"),
            id: Some("1:0"),
            compact: false,
        };
        assert_eq!(
            written(spaced, "[1]"),
            "event: data\nid: 1:0\ndata: [1]\n\n"
        );
        assert_eq!(
            written(spaced, "a\r\nb\rc\nd"),
            "event: data\nid: 1:0\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
        );
        let compact = Fields {
            compact: true,
            ..Fields::default()
        };
        assert_eq!(written(compact, "x"), "data:x\n\n");
        // A line that starts with a space keeps it: a client strips one.
        assert_eq!(written(compact, " x"), "data:  x\n\n");
        assert_eq!(written(compact, "a\n b"), "data:a\ndata:  b\n\n");
        // An injected event boundary is data, not an event.
        assert_eq!(
            written(compact, "ok\n\nevent: control"),
            "data:ok\ndata:\ndata:event: control\n\n"
        );
        let mut out = Vec::new();
        comment(&mut out, "keep-alive\ndata: forged");
        assert_eq!(out, b": keep-alive\n\n");
    }

    /// Yields its events in order, then waits forever.
    struct Script(Vec<Next>);

    impl Feed for Script {
        fn poll_next(&mut self, _: &mut Context<'_>) -> Poll<Next> {
            if self.0.is_empty() {
                Poll::Pending
            } else {
                Poll::Ready(self.0.remove(0))
            }
        }
    }

    fn timing(lifetime: u64, keep_alive: u64, coalesce: u64) -> Timing {
        Timing {
            lifetime: Duration::from_millis(lifetime),
            keep_alive: Duration::from_millis(keep_alive),
            coalesce: Duration::from_millis(coalesce),
            drain: None,
        }
    }

    async fn frames<F: Feed>(body: SseBody<F>) -> Vec<Bytes> {
        let mut body = body;
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            out.push(frame.unwrap().into_data().unwrap());
        }
        out
    }

    #[tokio::test]
    async fn sends_the_feed_then_keep_alives_until_its_lifetime_ends() {
        let feed = Script(vec![
            Next::Control(Bytes::from_static(b"c\n\n")),
            Next::Data(Bytes::from_static(b"d\n\n")),
        ]);
        let start = Instant::now();
        let out = frames(SseBody::new(feed, timing(250, 100, 0))).await;
        assert!(start.elapsed() >= Duration::from_millis(250));
        assert_eq!(&out[..2], [&b"c\n\n"[..], &b"d\n\n"[..]]);
        let keep_alives = &out[2..];
        assert!(
            (1..=2).contains(&keep_alives.len()),
            "{} keep-alives in 250 ms at 100 ms",
            keep_alives.len()
        );
        assert!(keep_alives.iter().all(|k| &k[..] == b": keep-alive\n\n"));
    }

    #[tokio::test]
    async fn a_drain_ends_the_response_after_the_frame_sent() {
        let (drain, draining) = watch::channel(false);
        let feed = Script(vec![Next::Data(Bytes::from_static(b"d\n\n"))]);
        let mut timing = timing(60_000, 60_000, 0);
        timing.drain = Some(Draining(draining));
        let mut body = SseBody::new(feed, timing);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "d\n\n");
        assert!(!http_body::Body::is_end_stream(&body));
        drain.send(true).unwrap();
        assert!(body.frame().await.is_none(), "no frame after the drain");
        assert!(http_body::Body::is_end_stream(&body));
    }

    #[tokio::test]
    async fn ends_when_the_feed_does() {
        let feed = Script(vec![Next::Data(Bytes::from_static(b"d\n\n")), Next::End]);
        let start = Instant::now();
        let out = frames(SseBody::new(feed, timing(10_000, 10_000, 0))).await;
        assert_eq!(out, [Bytes::from_static(b"d\n\n")]);
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn data_events_wait_for_the_window_control_events_do_not() {
        let feed = Script(vec![
            Next::Data(Bytes::from_static(b"1")),
            Next::Data(Bytes::from_static(b"2")),
            Next::End,
        ]);
        let mut body = SseBody::new(feed, timing(10_000, 10_000, 200));
        let start = Instant::now();
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "1"
        );
        assert!(start.elapsed() < Duration::from_millis(150));
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "2"
        );
        assert!(start.elapsed() >= Duration::from_millis(200));

        let feed = Script(vec![
            Next::Control(Bytes::from_static(b"c")),
            Next::Control(Bytes::from_static(b"c")),
            Next::End,
        ]);
        let start = Instant::now();
        let out = frames(SseBody::new(feed, timing(10_000, 10_000, 200))).await;
        assert_eq!(out.len(), 2);
        assert!(start.elapsed() < Duration::from_millis(150));
    }
}
