//! The task behind a replica: follows the stream connection after connection, resuming each
//! from the offset the last one reached, and restarting from the latest base batch when the
//! server no longer serves that offset or a batch did not decode or apply.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::catch_up::Batches;
use super::events::{Dispatched, Parser};
use super::offset;
use super::settings::Settings;
use super::stats::Counters;
use super::target::Target;
use super::{Break, State};
use crate::{Decoder, ErrorKind, Limits};

/// The offset of the latest base batch, for a reader with no value (see `streams`).
const LATEST_BASE: &str = "base";

/// The task behind a [`Replica`](super::Replica).
pub(super) struct Follower {
    pub(super) target: Target,
    pub(super) config: Settings,
    pub(super) state: watch::Sender<State>,
    pub(super) stats: Arc<Counters>,
}

/// Where the replica stands in its stream: the offset its value reflects and the decoder that
/// has read everything up to it. `None`: start again from the latest base batch.
#[derive(Default)]
struct Position {
    offset: Option<String>,
    decoder: Decoder,
    /// A live read has answered since the start (later ones are resumes).
    answered: bool,
}

impl Follower {
    /// Follows the stream until the task is aborted.
    pub(super) async fn run(self) {
        let mut backoff = self.config.backoff_min;
        let mut jitter = Jitter::new(Arc::as_ptr(&self.stats) as usize as u64);
        let mut at = Position::default();
        // Where the next fresh start reads from, when not the latest base: the base a `410`
        // named (a cache may hold an answer to `offset=base` older than what the server keeps;
        // the named base's own answer is newer).
        let mut start_at = None;
        loop {
            let (why, delivered) = self.follow(&mut at, &mut start_at).await;
            if why.restarts() {
                at = Position::default();
            }
            // The reason first, then the count: whoever sees the count sees its reason.
            *self
                .stats
                .last_break
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(why);
            self.stats.breaks.fetch_add(1, Ordering::Relaxed);
            self.state
                .send_if_modified(|s| std::mem::replace(&mut s.live, false));
            if delivered {
                backoff = self.config.backoff_min;
            }
            tokio::time::sleep(jitter.spread(backoff)).await;
            backoff = (backoff * 2).min(self.config.backoff_max);
        }
    }

    /// Follows one connection until it breaks, a fresh start first catching up with one
    /// cacheable read. Whether it delivered a control event.
    async fn follow(&self, at: &mut Position, start_at: &mut Option<String>) -> (Break, bool) {
        if at.offset.is_none() {
            let from = start_at.take().unwrap_or_else(|| LATEST_BASE.to_owned());
            if let Err(why) = self.catch_up(at, &from, start_at).await {
                return (why, false);
            }
        }
        // A server (or a proxy) that accepts and then says nothing counts as silent too.
        let opened = tokio::time::timeout(self.config.idle_timeout, self.open(at, start_at)).await;
        let mut body = match opened {
            Ok(Ok(body)) => body,
            Ok(Err(why)) => return (why, false),
            Err(_) => return (Break::Idle, false),
        };
        let mut parser = Parser::new(self.config.max_event);
        let mut pending: Option<String> = None;
        let mut delivered = false;
        loop {
            let frame =
                match tokio::time::timeout(self.config.idle_timeout, body.body.frame()).await {
                    Err(_) => return (Break::Idle, delivered),
                    Ok(None) => return (Break::Ended, delivered),
                    Ok(Some(Err(e))) => return (Break::Connection(e.to_string()), delivered),
                    Ok(Some(Ok(frame))) => frame,
                };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            self.stats
                .bytes
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            parser.push(&data);
            loop {
                let event = match parser.next_event() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) => return (Break::Events(e.to_string()), delivered),
                };
                if let Err(why) = self.event(at, event, &mut pending, &mut delivered) {
                    return (why, delivered);
                }
            }
        }
    }

    /// Takes one event: a `data` event waits for the `control` event after it, which says
    /// the offset its batches reach; both are applied together, so the offset the replica
    /// holds always matches its value.
    fn event(
        &self,
        at: &mut Position,
        event: Dispatched,
        pending: &mut Option<String>,
        delivered: &mut bool,
    ) -> Result<(), Break> {
        match event.name.as_str() {
            "data" => {
                if pending.replace(event.data).is_some() {
                    return Err(Break::Events(
                        "two data events without a control event".into(),
                    ));
                }
                Ok(())
            }
            "control" => {
                let control: serde_json::Value = serde_json::from_str(&event.data)
                    .map_err(|e| Break::Events(format!("a control event: {e}")))?;
                // Checked before anything is applied: a bad one is never held, and the
                // batches it would stand for are not applied either.
                if !control.is_object() {
                    return Err(Break::Events("a control event is not a JSON object".into()));
                }
                let next = offset::check("streamNextOffset", control.get("streamNextOffset"))?;
                if !*delivered {
                    // Counted, and the replica marked live, before its batches are applied:
                    // whoever sees the value change also sees the counters that go with it.
                    *delivered = true;
                    // The first live read to answer since the start subscribed (its catch-up
                    // may have come on an earlier connection); the others resumed.
                    let count = if std::mem::replace(&mut at.answered, true) {
                        &self.stats.resumes
                    } else {
                        &self.stats.subscriptions
                    };
                    count.fetch_add(1, Ordering::Relaxed);
                    self.state
                        .send_if_modified(|s| !std::mem::replace(&mut s.live, true));
                }
                if let Some(data) = pending.take() {
                    let batches: Vec<&RawValue> = serde_json::from_str(&data).map_err(|e| {
                        Break::Decode(format!("a data event is no JSON array: {e}"))
                    })?;
                    for batch in batches {
                        let fresh = at.offset.is_none();
                        self.batch(&mut at.decoder, batch.get(), fresh)?;
                        // Only the first batch of a fresh start starts from nothing.
                        at.offset.get_or_insert_with(String::new);
                    }
                }
                at.offset = Some(next);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Decodes and applies one batch, op by op as it is read (the batch's ops are never all
    /// held): the first of a fresh start must be a base batch.
    fn batch(&self, decoder: &mut Decoder, text: &str, fresh: bool) -> Result<(), Break> {
        let limits = Limits::default();
        let broken = |decoder: &Decoder, e: crate::Error| {
            if decoder.is_poisoned() {
                Break::Decode(e.to_string())
            } else {
                Break::Apply(e.to_string())
            }
        };
        if fresh {
            let mut value = None;
            match decoder.apply_str(text, &mut value, &limits) {
                Ok(applied) if applied.base => {}
                // Only an `r` gives a value to a fresh start: anything else first has none.
                Ok(_) => return Err(Break::NotBase),
                Err(e) if !decoder.is_poisoned() && *e.kind() == ErrorKind::NoValue => {
                    return Err(Break::NotBase)
                }
                Err(e) => return Err(broken(decoder, e)),
            }
            // Counted before the new state is published: whoever sees the state change
            // also sees the counters that go with it.
            self.stats.bases.fetch_add(1, Ordering::Relaxed);
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            self.state
                .send_if_modified(|s| replaced(&mut s.value, value));
            return Ok(());
        }
        if starts_with_replace(text) {
            // A base batch mid-stream (its producer restarted): the value it gives replaces
            // the one held only where it differs, so watchers hear of a change only then.
            let mut value = None;
            let applied = decoder.apply_str(text, &mut value, &limits);
            return match applied {
                Ok(applied) => {
                    if applied.base {
                        self.stats.bases.fetch_add(1, Ordering::Relaxed);
                    }
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                    self.state
                        .send_if_modified(|s| replaced(&mut s.value, value));
                    Ok(())
                }
                Err(e) => Err(broken(decoder, e)),
            };
        }
        let mut failed = None;
        self.state
            .send_if_modified(|s| match decoder.apply_str(text, &mut s.value, &limits) {
                Ok(applied) => {
                    // Inside the update, so before the watchers are told.
                    if applied.base {
                        self.stats.bases.fetch_add(1, Ordering::Relaxed);
                    }
                    self.stats.batches.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(e) => {
                    failed = Some(broken(decoder, e));
                    false
                }
            });
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A fresh start's catch-up: one `GET ?offset=<from>` (the latest base, or the base a
    /// `410` named), the same URL for every joiner and answered under the server's cache
    /// policy, so that a cache in front answers many joiners with one request to the server.
    /// Its batches are applied as they arrive (the first must be a base batch), and the
    /// replica then holds the answer's `Stream-Next-Offset`, from which its live read goes
    /// on. An answer with no batch (a stream with no base yet) leaves the replica fresh: its
    /// live read starts at the latest base. The replica is not live until its live read
    /// answers.
    async fn catch_up(
        &self,
        at: &mut Position,
        from: &str,
        start_at: &mut Option<String>,
    ) -> Result<(), Break> {
        let idle = self.config.idle_timeout;
        let path = format!(
            "{}{}offset={}",
            self.target.path,
            self.joiner(),
            offset::query(from)
        );
        let answered = tokio::time::timeout(idle, async {
            let mut connection = self.connect().await?;
            let response = self
                .send(&mut connection, Method::GET, &path, "application/json")
                .await?;
            Ok::<_, Break>((connection, response))
        })
        .await;
        let (_connection, response) = match answered {
            Ok(answered) => answered?,
            Err(_) => return Err(Break::Idle),
        };
        let status = response.status();
        if status != StatusCode::OK {
            return Err(self.refused(status, response.headers(), start_at));
        }
        let next = response
            .headers()
            .get("stream-next-offset")
            .and_then(|v| v.to_str().ok())
            .map(|v| serde_json::Value::String(v.to_owned()));
        let next = offset::check("Stream-Next-Offset", next.as_ref())?;
        let mut body = response.into_body();
        let mut batches = Batches::new(self.config.max_event);
        let mut decoder = Decoder::new();
        let mut applied = 0usize;
        while !batches.finished() {
            let frame = match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => return Err(Break::Idle),
                Ok(None) => {
                    return Err(Break::Connection("the catch-up answer ended early".into()))
                }
                Ok(Some(Err(e))) => return Err(Break::Connection(e.to_string())),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            self.stats
                .bytes
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            batches.push(&data, |text| {
                self.batch(&mut decoder, text, applied == 0)?;
                applied += 1;
                Ok(())
            })?;
        }
        if applied > 0 {
            at.decoder = decoder;
            at.offset = Some(next);
        }
        Ok(())
    }

    /// The break for an answer other than 200; a `410` naming the latest base the server
    /// keeps sets where the next fresh start reads from.
    fn refused(
        &self,
        status: StatusCode,
        headers: &hyper::HeaderMap,
        start_at: &mut Option<String>,
    ) -> Break {
        if status == StatusCode::GONE {
            *start_at = headers
                .get(BASE_OFFSET_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|v| offset::valid(v))
                .map(str::to_owned);
        }
        Break::Status(status.as_u16())
    }

    /// What goes between the stream's path and the offset parameter.
    fn joiner(&self) -> char {
        if self.target.path.contains('?') {
            '&'
        } else {
            '?'
        }
    }

    /// Opens an HTTP/1 connection to the server.
    async fn connect(&self) -> Result<Connection, Break> {
        let broken = |e: &dyn fmt::Display| Break::Connection(e.to_string());
        let stream = TcpStream::connect((self.target.host.as_str(), self.target.port))
            .await
            .map_err(|e| broken(&e))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| broken(&e))?;
        Ok(Connection {
            sender,
            driver: tokio::spawn(connection),
        })
    }

    /// Sends one request on `connection`.
    async fn send(
        &self,
        connection: &mut Connection,
        method: Method,
        path: &str,
        accept: &'static str,
    ) -> Result<hyper::Response<hyper::body::Incoming>, Break> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.target.authority.clone())
            .header(ACCEPT, accept);
        if accept == EVENT_STREAM {
            // A live read is never answered from a cache; a catch-up may be.
            request = request.header(CACHE_CONTROL, "no-cache");
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(|e| Break::Connection(e.to_string()))?;
        connection
            .sender
            .send_request(request)
            .await
            .map_err(|e| Break::Connection(e.to_string()))
    }

    /// Opens the SSE response from the offset the replica holds, or, with none, from the
    /// latest base batch (`offset=base`, which the server resolves: no `HEAD` first).
    async fn open(&self, at: &Position, start_at: &mut Option<String>) -> Result<Body, Break> {
        let mut connection = self.connect().await?;
        let offset = at.offset.clone().unwrap_or_else(|| LATEST_BASE.to_owned());
        let path = format!(
            "{}{}offset={}&live=sse",
            self.target.path,
            self.joiner(),
            offset::query(&offset)
        );
        let response = self
            .send(&mut connection, Method::GET, &path, EVENT_STREAM)
            .await?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(self.refused(status, response.headers(), start_at));
        }
        let is_events = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !is_events {
            return Err(Break::NotEventStream);
        }
        Ok(Body {
            body: response.into_body(),
            _connection: connection,
        })
    }
}

/// The header naming the latest base a server keeps (`streams::BASE_OFFSET_HEADER`).
const BASE_OFFSET_HEADER: &str = "chord-base-offset";

/// The media type of a live read.
const EVENT_STREAM: &str = "text/event-stream";

/// Puts `value` in `held` unless it is equal to what `held` has: whether it changed.
fn replaced(held: &mut Option<serde_json::Value>, value: Option<serde_json::Value>) -> bool {
    if *held == value {
        return false;
    }
    *held = value;
    true
}

/// Whether a batch's text starts with an `r` op (a base batch), read without parsing it.
fn starts_with_replace(text: &str) -> bool {
    let mut rest = text.trim_start();
    for open in ['[', '['] {
        match rest.strip_prefix(open) {
            Some(after) => rest = after.trim_start(),
            None => return false,
        }
    }
    rest.starts_with("\"r\"")
}

/// An HTTP/1 connection: its request sender and the task driving it, closed together.
struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    driver: JoinHandle<Result<(), hyper::Error>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A response body and the connection it arrives on.
struct Body {
    body: hyper::body::Incoming,
    _connection: Connection,
}

/// A small xorshift generator spreading backoffs.
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Jitter((seed ^ u64::from(nanos)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// `d` scaled by a factor in [0.5, 1.5).
    fn spread(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        d.mul_f64(0.5 + unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_half_either_side() {
        let mut j = Jitter::new(7);
        for _ in 0..1000 {
            let d = j.spread(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }
}
