//! Runs and their responses, whatever the door: starting a run (its first record, its agent
//! on a thread of its own, within the bound on runs), where a response starts in a run's log
//! (its start, or after a `Last-Event-ID`), the response itself (an SSE body of the door's
//! [`Framing`]), and ending a run whose producer is gone.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::feed::{self, Own, Rebuild, RunFeed};
use super::id::{EventId, START_K};
use super::run::{codes, Envelope, Outcome, Run};
use super::view::{Framing, RunEnd, View};
use crate::live::bound::{busy, Bound, Permit};
use crate::live::cursor::Cursor;
use crate::live::log::{Source, Want};
use crate::live::server::Draining;
use crate::live::sse::{self, SseBody, Timing};
use crate::live::tail::Tail;
use crate::live::Log;
use crate::store::{
    is_base_tag, recover, Address, Checkpoint, Durable, LogWriter, ReadOptions, Record, Store, BASE,
};
use crate::Tracked;

/// What an agent returns when it fails: any error, said in the run's terminal event (AG-UI's
/// `RUN_ERROR`).
pub type AgentError = Box<dyn std::error::Error + Send + Sync>;

/// What every door starts with, each changed by the door's builder.
pub(crate) mod defaults {
    use std::time::Duration;

    use crate::store::Checkpoint;

    /// The most bytes of a request's body: 1 MiB.
    pub(crate) const BODY_LIMIT: usize = 1 << 20;
    /// How long a request's body may take to arrive.
    pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);
    /// How long one event stream lasts at most: a day.
    pub(crate) const LIFETIME: Duration = Duration::from_secs(24 * 3600);
    /// The quiet after which an event stream sends a comment.
    pub(crate) const KEEP_ALIVE: Duration = crate::live::sse::DEFAULT_KEEP_ALIVE;
    /// When a run writes a checkpoint: every 256 KiB of its changes.
    pub(crate) const CHECKPOINT: Checkpoint = Checkpoint::EveryBytes(256 * 1024);
    /// The most runs in flight at once.
    pub(crate) const MAX_RUNS: usize = 64;
    /// The most event streams open at once.
    pub(crate) const MAX_READERS: usize = 1024;
}

/// Most bytes of batches one read of the log takes (a larger record is read whole).
const CHUNK: usize = 64 * 1024;

/// What a client past a bound is told to wait, in seconds.
const RETRY_AFTER: u64 = 1;

/// What a door's handlers share about its runs.
pub(crate) struct Runs<S: Store> {
    /// The log the runs are written to.
    pub(crate) log: Log<S>,
    pub(crate) source: Arc<dyn Source>,
    /// The runs whose producer runs in this process (or is being started).
    pub(crate) running: Mutex<HashSet<Address>>,
    /// The runs in flight, bounded.
    pub(crate) runs: Bound,
    /// The open event streams, bounded.
    pub(crate) readers: Bound,
    /// When a run writes a checkpoint.
    pub(crate) checkpoint: Checkpoint,
    /// How long one response lasts at most, and the quiet after which it sends a comment.
    pub(crate) lifetime: Duration,
    pub(crate) keep_alive: Duration,
}

impl<S: Store + Send + 'static> Runs<S> {
    /// The runs of `log`, at most `max_runs` in flight and `max_readers` responses open.
    pub(crate) fn new(
        log: &Log<S>,
        checkpoint: Checkpoint,
        (max_runs, max_readers): (usize, usize),
        (lifetime, keep_alive): (Duration, Duration),
    ) -> Runs<S> {
        Runs {
            log: log.clone(),
            source: log.source(),
            running: Mutex::new(HashSet::new()),
            runs: Bound::new(max_runs),
            readers: Bound::new(max_readers),
            checkpoint,
            lifetime,
            keep_alive,
        }
    }
}

/// What an agent does with its run, once started: its result is the run's outcome.
pub(crate) type Agent<T, S> = Box<dyn FnOnce(&mut Run<T, Log<S>>) -> Result<(), AgentError> + Send>;

fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A plain-text refusal saying why.
pub(crate) fn refuse(status: StatusCode, reason: impl std::fmt::Display) -> Response {
    let mut r = (status, format!("{reason}\n")).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Runs blocking work (the store's API is synchronous) off the runtime's workers.
pub(crate) async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Response> {
    tokio::task::spawn_blocking(work).await.map_err(|_| {
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server's work for this request failed",
        )
    })
}

/// Reads a door's JSON body, `what` naming what it must be (`a RunAgentInput`): `415` unless
/// it is `application/json`, `413` over `limit` bytes (an announced length before a byte is
/// read), `408` when it does not arrive within `timeout`, `400` for text that is not JSON or
/// names a member twice (as every JSON in chord is read), each saying why.
pub(crate) async fn json_body(
    parts: &axum::http::request::Parts,
    body: Body,
    limit: usize,
    timeout: Duration,
    what: &str,
) -> Result<Value, Response> {
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format_args!("{what} is sent as JSON: Content-Type must be application/json"),
        ));
    }
    let announced = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format_args!("the body is over {limit} bytes"),
        ));
    }
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format_args!("the body is over {limit} bytes, or was cut off"),
            ))
        }
        Err(_) => {
            return Err(refuse(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive in time",
            ))
        }
    };
    std::str::from_utf8(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|text| crate::json::value_from_str(text).map_err(|e| e.to_string()))
        .map_err(|e| refuse(StatusCode::BAD_REQUEST, format_args!("not {what}: {e}")))
}

/// The answer to a `/state` request: the state of the run `envelope` (a recovered run's
/// value), as JSON, never stored by a cache.
pub(crate) fn state_answer(mut envelope: Value) -> Response {
    let state = envelope
        .get_mut("state")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let mut r = Response::new(Body::from(state.to_string()));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Where a response starts in the run's log.
pub(crate) struct Start<F> {
    cursor: Cursor,
    /// What the reader reads the records after the cursor with.
    own: Own<F>,
    /// Events to send first: the run so far for a client with nothing, or the rest of the
    /// record a resumed client was in.
    first: Bytes,
    /// Where the run stands after `first`: a response that starts ended sends `first` alone.
    end: RunEnd,
    /// How long ago the run's last record arrived on this node (`None`: before it loaded the
    /// run).
    since_last: Option<Duration>,
}

/// What a response for a client with nothing (no `Last-Event-ID`) does when the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Sends the run as the door starts a client with nothing (AG-UI: a reader that joins
    /// late gets the result).
    Send,
    /// Answers `204`, nothing being in progress (the AI SDK's resume of a chat), unless the
    /// run's last record arrived on this node less than this long ago: a client whose
    /// connection was cut just before the end (or whose server restarted, the run then ended
    /// as failed) still gets how it ended.
    #[cfg_attr(not(feature = "ai-sdk"), allow(dead_code))]
    NoContentAfter(Duration),
}

/// A run to start unless it exists: its address and ids, its initial state, its agent.
pub(crate) struct NewRun<T: Tracked, S: Store> {
    pub(crate) address: Address,
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    pub(crate) state: Box<dyn FnOnce() -> T + Send>,
    pub(crate) agent: Agent<T, S>,
}

/// Starts a run unless it exists, and answers its events (after `last`, for a client that
/// resumes it).
pub(crate) async fn post<T, S, F>(
    runs: Arc<Runs<S>>,
    new: NewRun<T, S>,
    last: Option<EventId>,
    draining: Option<Draining>,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
    F: Framing,
{
    let address = new.address.clone();
    let reader = match reader(&runs) {
        Ok(reader) => reader,
        Err(busy) => return *busy,
    };
    let start = {
        let runs = Arc::clone(&runs);
        blocking(move || start_or_join::<T, S, F>(&runs, new, last.is_some())).await
    };
    match start {
        Ok(Ok(Some(start))) => respond(&runs, &address, start, draining, reader),
        Ok(Ok(None)) => {
            events_with::<S, F>(runs, address, last, Ended::Send, draining, reader).await
        }
        Ok(Err(r)) => *r,
        Err(r) => r,
    }
}

/// A place among the endpoint's open event streams, or the `503` past its bound.
fn reader<S: Store>(runs: &Runs<S>) -> Result<Permit, Box<Response>> {
    runs.readers.take().ok_or_else(|| {
        Box::new(busy(
            "the endpoint has its most event streams open",
            RETRY_AFTER,
        ))
    })
}

/// The SSE response of a run's events: after `last`, or for a client with nothing, the run
/// as it stands then the rest as it comes (`ended`: what an ended run gives such a client).
pub(crate) async fn events<S, F>(
    runs: Arc<Runs<S>>,
    address: Address,
    last: Option<EventId>,
    ended: Ended,
    draining: Option<Draining>,
) -> Response
where
    S: Store + Send + 'static,
    F: Framing,
{
    let reader = match reader(&runs) {
        Ok(reader) => reader,
        Err(busy) => return *busy,
    };
    events_with::<S, F>(runs, address, last, ended, draining, reader).await
}

async fn events_with<S, F>(
    runs: Arc<Runs<S>>,
    address: Address,
    last: Option<EventId>,
    ended: Ended,
    draining: Option<Draining>,
    reader: Permit,
) -> Response
where
    S: Store + Send + 'static,
    F: Framing,
{
    let start = {
        let runs = Arc::clone(&runs);
        let address = address.clone();
        blocking(move || {
            let start = start_at::<S, F>(&runs, &address, last)?;
            if let (None, Ended::NoContentAfter(window)) = (last, ended) {
                let recent = start.since_last.is_some_and(|quiet| quiet < window);
                if start.end != RunEnd::Running && !recent {
                    return Err(no_content());
                }
            }
            Ok(start)
        })
        .await
    };
    match start {
        Ok(Ok(start)) => respond(&runs, &address, start, draining, reader),
        Ok(Err(r)) => *r,
        Err(r) => r,
    }
}

/// The SSE response of a run's events from `start`.
fn respond<S, F>(
    runs: &Runs<S>,
    address: &Address,
    start: Start<F>,
    draining: Option<Draining>,
    reader: Permit,
) -> Response
where
    S: Store + Send + 'static,
    F: Framing,
{
    let timing = Timing {
        lifetime: runs.lifetime,
        keep_alive: runs.keep_alive,
        coalesce: Duration::ZERO,
        drain: draining,
    };
    let log = runs.log.clone();
    let at = address.clone();
    let rebuild: Rebuild<F> = Arc::new(move |after| match view_through(&log, &at, after) {
        Ok((view, _)) => Ok(view),
        Err(Resumed::Missing | Resumed::Gone) => {
            Err("the run's records were compacted away".to_owned())
        }
        Err(Resumed::Failed(why)) => Err(why),
    });
    let first = (!start.first.is_empty()).then_some(start.first);
    let ended = start.end != RunEnd::Running;
    let feed = RunFeed::new(start.cursor, start.own, ended, first, rebuild, reader);
    let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
    sse::headers(r.headers_mut());
    r
}

/// Finds where a response starts (reads the store: call it off the runtime's workers).
fn start_at<S, F>(
    runs: &Runs<S>,
    address: &Address,
    last: Option<EventId>,
) -> Result<Start<F>, Box<Response>>
where
    S: Store + Send + 'static,
    F: Framing,
{
    let want = Want {
        live: true,
        after: last.map(|l| l.seq),
    };
    let tail = match runs.source.tail(address, want) {
        Ok(Some(tail)) => tail,
        Ok(None) => return Err(Box::new(refuse(StatusCode::NOT_FOUND, "no such run"))),
        Err(e) => return Err(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e))),
    };
    orphan::<S, F>(runs, address, &tail);
    let cursor = |after| {
        Cursor::new(
            Arc::clone(&runs.source),
            address.clone(),
            Arc::clone(&tail),
            after,
            CHUNK,
        )
    };
    let Some(last) = last else {
        if F::COMPACT_START {
            return fresh_start::<S, F>(runs, address, &tail, cursor);
        }
        return Ok(Start {
            cursor: cursor(tail.position().floor),
            own: Own::Fresh,
            first: Bytes::new(),
            end: RunEnd::Running,
            since_last: tail.since_last(),
        });
    };
    let gone = || {
        Box::new(refuse(
            StatusCode::GONE,
            "the run's records at this Last-Event-ID were compacted away: start again without it",
        ))
    };
    if last.seq < tail.position().floor {
        return Err(gone());
    }
    // An id from a base's start events (a reader that started at a checkpoint): the view is
    // the base alone; else the view is built from the last base before the record.
    let (k0, through) = if last.k >= START_K {
        (START_K, view_as_start(&runs.log, address, last.seq))
    } else {
        (0, view_through(&runs.log, address, last.seq))
    };
    let (view, events) = match through {
        Ok(through) => through,
        // The record was there when the floor was read, or never was: a compaction since
        // (of a checkpoint the run appended, which moves the tail's floor before the store
        // drops what it passed) makes it gone, not unknown.
        Err(Resumed::Missing) if last.seq < tail.position().floor => return Err(gone()),
        Err(Resumed::Missing) => return Err(unknown_id()),
        Err(Resumed::Gone) => {
            return Err(Box::new(refuse(
                StatusCode::GONE,
                "the run's records before this Last-Event-ID were compacted away: \
                 start again without it",
            )))
        }
        Err(Resumed::Failed(why)) => {
            return Err(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, why)))
        }
    };
    let at = last.k - k0;
    if at >= events.len() {
        return Err(unknown_id());
    }
    if at + 1 == events.len() && view.ended() {
        // The id is the run's terminal event: nothing follows, ever. `204` stops an
        // `EventSource`, which would otherwise reconnect for ever.
        return Err(no_content());
    }
    let first = F::frames(last.seq, k0 + at + 1, &events[at + 1..]);
    Ok(Start {
        cursor: cursor(last.seq),
        end: view.end(),
        since_last: None,
        own: Own::View(view),
        first: Bytes::from(first),
    })
}

/// `204 No Content`: nothing to send, now or later.
fn no_content() -> Box<Response> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Box::new(r)
}

/// Where a response for a client with nothing starts: after the run's latest record, sent
/// the run as it stands there in one go (its start, the state whole, each message's text so
/// far in one event), then the records after it. The frames are shared through the tail
/// cache when it holds that record (made once, from the mirror), else made from the log
/// back to the last base. A run whose latest records are gone from the store (compacted
/// meanwhile) starts at the oldest base kept.
fn fresh_start<S, F>(
    runs: &Runs<S>,
    address: &Address,
    tail: &Arc<Tail>,
    cursor: impl Fn(u64) -> Cursor,
) -> Result<Start<F>, Box<Response>>
where
    S: Store + Send + 'static,
    F: Framing,
{
    let broken = |why: String| {
        Box::new(refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format_args!("the run's log gives no events: {why}"),
        ))
    };
    let cached = tail.newest();
    if let Some(entry) = &cached {
        match feed::start_after::<F>(tail, entry, None) {
            Ok(Some((first, end))) => {
                return Ok(Start {
                    cursor: cursor(entry.seq),
                    own: Own::Shared,
                    first,
                    end,
                    since_last: tail.since_last(),
                })
            }
            Ok(None) => {}
            Err(why) => return Err(broken(why)),
        }
    }
    let seq = cached
        .as_ref()
        .map_or_else(|| tail.position().last, |e| e.seq);
    let (view, _) = match view_through::<S, F>(&runs.log, address, seq) {
        Ok(through) => through,
        Err(Resumed::Missing | Resumed::Gone) => {
            return Ok(Start {
                cursor: cursor(tail.position().floor),
                own: Own::Fresh,
                first: Bytes::new(),
                end: RunEnd::Running,
                since_last: None,
            })
        }
        Err(Resumed::Failed(why)) => return Err(broken(why)),
    };
    // Made once for every client that starts there, when the cache holds the record.
    if let Some(entry) = &cached {
        return match feed::start_after::<F>(tail, entry, Some(view)) {
            Ok(Some((first, end))) => Ok(Start {
                cursor: cursor(entry.seq),
                own: Own::Shared,
                first,
                end,
                since_last: tail.since_last(),
            }),
            Ok(None) => Err(broken("no start events".to_owned())),
            Err(why) => Err(broken(why)),
        };
    }
    let events = view.start_events().map_err(|e| broken(e.to_string()))?;
    let first = F::frames(seq, START_K, &events);
    Ok(Start {
        cursor: cursor(seq),
        end: view.end(),
        since_last: tail.since_last(),
        own: Own::View(view),
        first: Bytes::from(first),
    })
}

/// Starts the run unless it exists: writes its first record and calls the agent on a thread
/// of its own. `resuming`: the client sent a `Last-Event-ID`, so the run must exist. Returns,
/// for a run it started, where the response starts: at the run's first record, taken before
/// the agent runs (the agent may write, and retention drop, records before the response
/// would otherwise look for its start); `None` for a run that exists.
fn start_or_join<T, S, F>(
    runs: &Arc<Runs<S>>,
    new: NewRun<T, S>,
    resuming: bool,
) -> Result<Option<Start<F>>, Box<Response>>
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
    F: Framing,
{
    let address = new.address;
    let mut running = lock(&runs.running);
    if running.contains(&address) {
        return Ok(None);
    }
    let want = Want {
        live: true,
        after: None,
    };
    match runs.source.tail(&address, want) {
        Ok(Some(_)) => return Ok(None),
        Ok(None) => {}
        Err(e) => return Err(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e))),
    }
    if resuming {
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            "unknown Last-Event-ID: this server has no such run",
        )));
    }
    let Some(permit) = runs.runs.take() else {
        return Err(Box::new(busy(
            "the endpoint runs its most runs at once",
            RETRY_AFTER,
        )));
    };
    let writer = LogWriter::new(runs.log.clone(), runs.checkpoint);
    let mut run = Run::new(
        writer,
        address.clone(),
        &new.thread_id,
        &new.run_id,
        (new.state)(),
    );
    if let Err(e) = run.flush() {
        return Err(Box::new(refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format_args!("storing the run's start: {e}"),
        )));
    }
    running.insert(address.clone());
    drop(running);
    // A run stored but not produced is ended as failed, through the log (the handle may be
    // gone with a thread that did not start).
    let abandon = |why: &str| {
        let outcome = Outcome::error(codes::PRODUCER_GONE, why);
        if let Err(e) = end_from_log(&runs.log, runs.checkpoint, &address, outcome) {
            tracing::error!(target: "chord::runs", run = %address, error = %e, "a run that could not be produced could not be ended");
        }
        lock(&runs.running).remove(&address);
    };
    let start = match start_at(runs, &address, None) {
        Ok(start) => start,
        Err(refused) => {
            drop(run);
            abandon("the run's start could not be read back");
            return Err(refused);
        }
    };
    // The agent's own thread: an agent blocks (an LLM call takes seconds), and the blocking
    // pool serves the endpoint's reads, which must not wait behind it.
    let producer = Arc::clone(runs);
    let agent = new.agent;
    let spawned = std::thread::Builder::new()
        .name("chord-agent".to_owned())
        .spawn(move || {
            produce(&producer, agent, run);
            drop(permit);
        });
    if let Err(e) = spawned {
        let why = format!("the agent's thread could not start: {e}");
        abandon(&why);
        return Err(Box::new(refuse(StatusCode::SERVICE_UNAVAILABLE, why)));
    }
    Ok(Some(start))
}

/// Calls the agent, then stores how the run ended.
fn produce<T, S>(runs: &Runs<S>, agent: Agent<T, S>, mut run: Run<T, Log<S>>)
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let address = run.address().clone();
    let done = catch_unwind(AssertUnwindSafe(|| agent(&mut run)));
    let outcome = match done {
        Ok(Ok(())) => Outcome::Finished,
        Ok(Err(e)) => Outcome::error(codes::AGENT_FAILED, e.to_string()),
        Err(panic) => {
            let said = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Outcome::error(codes::AGENT_PANICKED, format!("the agent panicked: {said}"))
        }
    };
    let ended = catch_unwind(AssertUnwindSafe(|| run.end(outcome.clone())));
    if !matches!(ended, Ok(Ok(_))) {
        // The handle could not store it (a panic left it half-changed, the store failed):
        // the outcome goes through a handle of its own, from what the log holds.
        drop(run);
        if let Err(e) = end_from_log(&runs.log, runs.checkpoint, &address, outcome) {
            tracing::error!(target: "chord::runs", run = %address, error = %e, "the run's outcome could not be stored");
        }
    }
    lock(&runs.running).remove(&address);
}

/// Ends the run stored at `address` with `outcome` (its open messages ended), whatever its
/// state's type: recovered from the log, changed, flushed.
fn end_from_log<S: Store>(
    log: &Log<S>,
    checkpoint: Checkpoint,
    address: &Address,
    outcome: Outcome,
) -> crate::store::Result<()> {
    let writer = LogWriter::new(log.clone(), checkpoint);
    let mut run: Durable<Envelope<Value>, _> =
        Durable::open(writer, address.clone(), Envelope::default)?;
    if run.outcome != Outcome::Running {
        return Ok(());
    }
    let open: Vec<usize> = (run.messages.iter().enumerate())
        .filter(|(_, m)| !m.ended)
        .map(|(i, _)| i)
        .collect();
    {
        let mut envelope = run.state();
        for i in open {
            if let Some(mut m) = envelope.messages.get_mut(i) {
                m.ended.set(true);
            }
        }
        envelope.outcome.set(outcome);
    }
    run.flush().map(drop)
}

/// Whether the run at `address` is in progress: its producer runs in this process, or its log
/// says it runs (over a store other processes write, its producer may be elsewhere). A run
/// left unfinished by a producer that is gone is ended first, as its readers would end it
/// ([`orphan`]). Reads the store: call it off the runtime's workers.
#[cfg_attr(not(feature = "ai-sdk"), allow(dead_code))]
pub(crate) fn in_progress<S: Store, F: Framing>(
    runs: &Runs<S>,
    address: &Address,
) -> Result<bool, String> {
    if lock(&runs.running).contains(address) {
        return Ok(true);
    }
    let want = Want {
        live: true,
        after: None,
    };
    let tail = match runs.source.tail(address, want) {
        Ok(Some(tail)) => tail,
        Ok(None) => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    orphan::<S, F>(runs, address, &tail);
    if feed::known_ended::<F>(&tail) {
        return Ok(false);
    }
    match recover(&runs.log, address) {
        Ok(Some(envelope)) => {
            Ok(envelope.pointer("/outcome/status") == Some(&Value::from("running")))
        }
        Ok(None) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// A run left unfinished by a producer that is gone (this process restarted mid-run) is
/// ended with a `RUN_ERROR`, so that its clients do not wait for ever. Only over a store no
/// other process writes: over a shared one, the producer may run on another node.
fn orphan<S: Store, F: Framing>(runs: &Runs<S>, address: &Address, tail: &Tail) {
    if runs.log.live_source().is_some() || feed::known_ended::<F>(tail) {
        return;
    }
    let running = lock(&runs.running);
    if running.contains(address) {
        return;
    }
    let status = match recover(&runs.log, address) {
        Ok(Some(envelope)) => envelope.pointer("/outcome/status").cloned(),
        _ => None,
    };
    let unfinished = status == Some(Value::from("running"));
    if status.is_some() && !unfinished {
        // Ended before: no later reader reads the log to find out.
        feed::mark_ended::<F>(tail);
    }
    if unfinished {
        let outcome = Outcome::error(
            codes::PRODUCER_GONE,
            "the run's producer stopped before the run ended (the server restarted)",
        );
        match end_from_log(&runs.log, runs.checkpoint, address, outcome) {
            Ok(()) => feed::mark_ended::<F>(tail),
            Err(e) => {
                tracing::error!(target: "chord::runs", run = %address, error = %e, "an orphaned run could not be ended");
            }
        }
    }
    drop(running);
}

/// Why [`view_through`] gives no view.
enum Resumed {
    /// The log has no record at that seq.
    Missing,
    /// The records before it, back to a base, were compacted away.
    Gone,
    /// The store failed, the records before were compacted away, or a record gives no
    /// events: why.
    Failed(String),
}

/// The answer to a Last-Event-ID that names no event of the run.
fn unknown_id() -> Box<Response> {
    Box::new(refuse(
        StatusCode::BAD_REQUEST,
        "unknown Last-Event-ID: the run has no such event",
    ))
}

/// The record `seq` of the run.
fn record_at<S: Store>(log: &Log<S>, address: &Address, seq: u64) -> Result<Record, Resumed> {
    let at = ReadOptions::asc().cursor(seq.checked_sub(1)).limit(1);
    match log.read_list(address, &at) {
        Ok(page) => match page.records.into_iter().next() {
            Some(r) if r.seq == seq => Ok(r),
            _ => Err(Resumed::Missing),
        },
        Err(e) => Err(Resumed::Failed(e.to_string())),
    }
}

/// The view after record `seq`, and the run as it stands there as sent to a reader that
/// starts there with nothing ([`View::start_events`]): for a base, read alone.
fn view_as_start<S: Store, F: Framing>(
    log: &Log<S>,
    address: &Address,
    seq: u64,
) -> Result<(View<F>, Vec<F::Event>), Resumed> {
    let record = record_at(log, address, seq)?;
    let failed = |e: super::view::ViewError| Resumed::Failed(e.to_string());
    if is_base_tag(record.tag.as_deref()) {
        let mut view = View::new();
        let events = view.record(&record.batch).map_err(failed)?;
        return Ok((view, events));
    }
    let (view, _) = view_through(log, address, seq)?;
    let events = view.start_events().map_err(failed)?;
    Ok((view, events))
}

/// The view after record `seq` of the run, built from the last base before it, and the
/// events of that record.
fn view_through<S: Store, F: Framing>(
    log: &Log<S>,
    address: &Address,
    seq: u64,
) -> Result<(View<F>, Vec<F::Event>), Resumed> {
    let failed = |e: &dyn std::fmt::Display| Resumed::Failed(e.to_string());
    let record = record_at(log, address, seq)?;
    // The records before it, back to a base.
    let mut before: Vec<Record> = Vec::new();
    let mut options = ReadOptions::desc()
        .cursor(Some(seq))
        .stop_at_tag(BASE)
        .limit(100);
    loop {
        let page = log.read_list(address, &options).map_err(|e| failed(&e))?;
        let based = page
            .records
            .last()
            .is_some_and(|r| is_base_tag(r.tag.as_deref()));
        before.extend(page.records);
        if based || page.next_cursor.is_none() {
            if !based && !before.is_empty() {
                return Err(Resumed::Gone);
            }
            break;
        }
        options.cursor = page.next_cursor;
    }
    let mut view = View::new();
    for r in before.iter().rev() {
        view.record(&r.batch).map_err(|e| failed(&e))?;
    }
    let events = view.record(&record.batch).map_err(|e| failed(&e))?;
    Ok((view, events))
}
