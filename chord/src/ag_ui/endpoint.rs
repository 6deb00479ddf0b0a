//! [`AgUi`]: the axum router that starts runs and serves each run's log as AG-UI events.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::events::{check_id, Event, RunAgentInput};
use super::run::{Envelope, Outcome, Run};
use super::view::View;
use crate::store::{
    recover, Address, Checkpoint, Durable, LogWriter, ReadOptions, Record, Store, BASE,
};
use crate::streams::auth;
use crate::streams::log::{Source, Want};
use crate::streams::server::Draining;
use crate::streams::sse::{self, Changes, Feed, Next, Pending, SseBody, Timing};
use crate::streams::tail::{Found, Tail};
use crate::streams::{Access, Log, Offset, DEFAULT_KEEP_ALIVE};
use crate::Tracked;

/// The default [`AgUi::body_limit`]: 1 MiB.
pub(crate) const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// The default [`AgUi::body_timeout`].
pub(crate) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`AgUi::lifetime`] of an event stream: a day.
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The default [`AgUi::checkpoint`] policy of a run's log.
pub(crate) const DEFAULT_CHECKPOINT: Checkpoint = Checkpoint::EveryBytes(256 * 1024);

/// The default [`AgUi::namespace`] prefix of a run's address.
pub(crate) const DEFAULT_NAMESPACE: &str = "ag-ui/";

/// Most bytes of batches one read of the log takes (a larger record is read whole).
const CHUNK: usize = 64 * 1024;

/// What an agent returns when it fails: any error, said in the `RUN_ERROR` event.
pub type AgentError = Box<dyn std::error::Error + Send + Sync>;

type AgentFn<T, S> = dyn Fn(&RunAgentInput, &mut Run<T, S>) -> Result<(), AgentError> + Send + Sync;
type InitFn<T> = dyn Fn(&RunAgentInput) -> T + Send + Sync;
type AuthorizeFn = dyn Fn(&RunRequest<'_>) -> Access + Send + Sync;

/// What a request to the AG-UI router asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunRequestKind {
    /// `POST /`: start a run, or resume one (its ids are in the body, not read yet).
    Post,
    /// `GET /runs/{threadId}/{runId}`: a run's events.
    Events,
    /// `GET /runs/{threadId}/{runId}/state`: a run's state.
    State,
}

/// A request to the AG-UI router, as the authorization hook ([`AgUi::authorize`]) sees it:
/// before its body is read.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunRequest<'a> {
    /// What it asks.
    pub kind: RunRequestKind,
    /// The run's `(threadId, runId)` when the URL names it (not for a `POST`, whose body
    /// is read only once the hook allowed it).
    pub run: Option<(&'a str, &'a str)>,
    /// The URI, query included.
    pub uri: &'a Uri,
    /// The headers (`Authorization`, `Cookie`, `Origin`, ...).
    pub headers: &'a HeaderMap,
}

/// The AG-UI endpoint: an axum router that starts a run for each new `RunAgentInput` and
/// answers every request for a run with the events of its log (see the
/// [module docs](super) for the routes and the protocol).
///
/// Generic over the run's state `T` and the log's store `S`.
pub struct AgUi<T: Tracked, S: Store> {
    log: Log<S>,
    agent: Arc<AgentFn<T, S>>,
    init: Arc<InitFn<T>>,
    checkpoint: Checkpoint,
    keep_alive: Duration,
    lifetime: Duration,
    body_limit: usize,
    body_timeout: Duration,
    namespace: String,
    authorize: Option<Arc<AuthorizeFn>>,
}

impl<T, S> AgUi<T, S>
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    /// An endpoint whose runs are written to `log`, each run's state starting as
    /// `T::default()` (see [`initial`](AgUi::initial)) and produced by `agent`, called on a
    /// blocking thread with the input and the run's handle.
    pub fn new<F, E>(log: &Log<S>, agent: F) -> AgUi<T, S>
    where
        T: Default,
        F: Fn(&RunAgentInput, &mut Run<T, S>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<AgentError>,
    {
        AgUi {
            log: log.clone(),
            agent: Arc::new(move |input: &RunAgentInput, run: &mut Run<T, S>| {
                agent(input, run).map_err(Into::into)
            }),
            init: Arc::new(|_: &RunAgentInput| T::default()),
            checkpoint: DEFAULT_CHECKPOINT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            lifetime: DEFAULT_LIFETIME,
            body_limit: DEFAULT_BODY_LIMIT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            namespace: DEFAULT_NAMESPACE.to_owned(),
            authorize: None,
        }
    }

    /// The state a new run starts with (its first `STATE_SNAPSHOT`), from the input: the
    /// client's own `state`, say. Default: `T::default()`.
    #[must_use]
    pub fn initial(mut self, init: impl Fn(&RunAgentInput) -> T + Send + Sync + 'static) -> Self {
        self.init = Arc::new(init);
        self
    }

    /// The checkpoint policy of each run's log: how far back a resume or a restarted server
    /// reads at most. Default: a checkpoint after every 256 KiB of a run's batches,
    /// `Checkpoint::EveryBytes(256 * 1024)`.
    #[must_use]
    pub fn checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = checkpoint;
        self
    }

    /// A `: keep-alive` comment after this long without an event (default
    /// 15 s).
    #[must_use]
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }

    /// How long one event stream lasts at most (default a day); a client
    /// resumes from its last event id after it.
    #[must_use]
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The largest `RunAgentInput` read, in bytes (default 1 MiB): a
    /// larger `Content-Length` is a `413` before a byte is read, and so is a body of unknown
    /// length once it passes it.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a body may take to arrive, then `408` (default 30 s).
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// The prefix of each run's address in the log: a run is stored at
    /// `Address::new(namespace + threadId, runId)` (default `"ag-ui/"`).
    #[must_use]
    pub fn namespace(mut self, prefix: impl Into<String>) -> Self {
        self.namespace = prefix.into();
        self
    }

    /// Authorizes each request before anything of it but its head is read, as
    /// [`Streams::reads`](crate::streams::Streams::reads) does for streams: the hook answers
    /// an [`Access`] (or a `bool`); a refused request is a `401` or `403` with an empty body,
    /// and the connection closes (an unread body is never read as the next request).
    #[must_use]
    pub fn authorize<F, A>(mut self, authorize: F) -> Self
    where
        F: Fn(&RunRequest<'_>) -> A + Send + Sync + 'static,
        A: Into<Access>,
    {
        self.authorize = Some(Arc::new(move |r: &RunRequest<'_>| authorize(r).into()));
        self
    }

    /// The address of a run in the log.
    pub fn address(&self, thread_id: &str, run_id: &str) -> Address {
        Address::new(format!("{}{thread_id}", self.namespace), run_id)
    }

    /// The router: `POST /`, `GET /runs/{threadId}/{runId}` and
    /// `GET /runs/{threadId}/{runId}/state`. Nest it under a prefix with
    /// [`Router::nest`] as needed.
    pub fn router(self) -> Router {
        let shared = Arc::new(Shared {
            source: self.log.source(),
            running: Mutex::new(HashSet::new()),
            app: self,
        });
        Router::new()
            .route("/", post(post_run::<T, S>))
            .route("/runs/{thread}/{run}", get(get_events::<T, S>))
            .route("/runs/{thread}/{run}/state", get(get_state::<T, S>))
            .with_state(shared)
    }
}

/// What the handlers share.
struct Shared<T: Tracked, S: Store> {
    app: AgUi<T, S>,
    source: Arc<dyn Source>,
    /// The runs whose producer runs in this process (or is being started).
    running: Mutex<HashSet<Address>>,
}

fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A plain-text refusal saying why.
fn refuse(status: StatusCode, reason: impl std::fmt::Display) -> Response {
    let mut r = (status, format!("{reason}\n")).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A refusal sent before the request's body was read: the connection closes after it.
fn refuse_unread(status: StatusCode, reason: impl std::fmt::Display) -> Response {
    let mut r = refuse(status, reason);
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

impl<T: Tracked, S: Store> Shared<T, S> {
    /// The hook's refusal, if it refuses: the streams' answer to a refused request, and the
    /// connection closes after it (the body was not read).
    fn refused(&self, request: &RunRequest<'_>) -> Option<Response> {
        let hook = self.app.authorize.as_ref()?;
        let access = hook(request);
        if access == Access::Allow {
            return None;
        }
        let mut r = auth::refusal(access);
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        Some(r)
    }

    /// The answer to a request for one run's `kind` that may not go on: the hook's refusal,
    /// or a `400` for an id that is not one.
    fn refused_run(
        &self,
        kind: RunRequestKind,
        thread: &str,
        run: &str,
        parts: &axum::http::request::Parts,
    ) -> Option<Response> {
        let asked = RunRequest {
            kind,
            run: Some((thread, run)),
            uri: &parts.uri,
            headers: &parts.headers,
        };
        if let Some(refused) = self.refused(&asked) {
            return Some(refused);
        }
        check_id("threadId", thread)
            .and_then(|()| check_id("runId", run))
            .err()
            .map(|e| refuse(StatusCode::BAD_REQUEST, e))
    }
}

/// A parsed `Last-Event-ID`: after the `k`-th event of the record `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) seq: u64,
    pub(crate) k: usize,
}

impl EventId {
    /// The `Last-Event-ID` header, if sent: `None` when absent, an error saying why when
    /// malformed.
    fn from_headers(headers: &HeaderMap) -> Result<Option<EventId>, String> {
        let Some(value) = headers.get("last-event-id") else {
            return Ok(None);
        };
        let text = value
            .to_str()
            .map_err(|_| "Last-Event-ID is not visible ASCII".to_owned())?;
        if text.is_empty() {
            // What `EventSource` sends before it had an id: start from the beginning.
            return Ok(None);
        }
        EventId::parse(text).map(Some)
    }

    pub(crate) fn parse(text: &str) -> Result<EventId, String> {
        let shown: String = text.chars().take(64).collect();
        let malformed = || {
            format!(
                "malformed Last-Event-ID {shown:?}: expected <offset>:<k>, 16 lowercase \
                 hexadecimal digits, a colon and a decimal event index, as this server sent"
            )
        };
        let (offset, k) = text.split_once(':').ok_or_else(malformed)?;
        let offset: Offset = offset.parse().map_err(|_| malformed())?;
        if k.is_empty() || k.len() > 9 || !k.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let k = k.parse().map_err(|_| malformed())?;
        Ok(EventId {
            seq: offset.seq(),
            k,
        })
    }

    fn write(self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{}:{}", Offset::from_seq(self.seq), self.k);
    }
}

/// One SSE event: `id: <offset>:<k>` and its JSON.
fn frame(out: &mut String, id: EventId, event: &Event) {
    out.push_str("id: ");
    id.write(out);
    out.push_str("\ndata: ");
    // An event always serializes (strings and JSON values only); compact JSON has no newline.
    out.push_str(&serde_json::to_string(event).unwrap_or_default());
    out.push_str("\n\n");
}

/// A `RUN_ERROR` for a log the view cannot read, with no id (it is not a place in the log).
fn broken(out: &mut String, why: impl std::fmt::Display) {
    let event = Event::RunError {
        message: format!("the run's log cannot be read: {why}"),
    };
    out.push_str("data: ");
    out.push_str(&serde_json::to_string(&event).unwrap_or_default());
    out.push_str("\n\n");
}

/// Runs blocking work (the store's API is synchronous) off the runtime's workers.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Response> {
    tokio::task::spawn_blocking(work).await.map_err(|_| {
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server's work for this request failed",
        )
    })
}

async fn post_run<T, S>(State(shared): State<Arc<Shared<T, S>>>, request: Request) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, body) = request.into_parts();
    let asked = RunRequest {
        kind: RunRequestKind::Post,
        run: None,
        uri: &parts.uri,
        headers: &parts.headers,
    };
    if let Some(refused) = shared.refused(&asked) {
        return refused;
    }
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return refuse_unread(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a run is started with a RunAgentInput as JSON: Content-Type must be application/json",
        );
    }
    let limit = shared.app.body_limit;
    let announced = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return refuse_unread(
            StatusCode::PAYLOAD_TOO_LARGE,
            format_args!("the body is over {limit} bytes"),
        );
    }
    let last = match EventId::from_headers(&parts.headers) {
        Ok(last) => last,
        Err(why) => return refuse_unread(StatusCode::BAD_REQUEST, why),
    };
    let read = tokio::time::timeout(shared.app.body_timeout, axum::body::to_bytes(body, limit));
    let bytes = match read.await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return refuse_unread(
                StatusCode::PAYLOAD_TOO_LARGE,
                format_args!("the body is over {limit} bytes, or was cut off"),
            )
        }
        Err(_) => {
            return refuse_unread(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive in time",
            )
        }
    };
    let input: RunAgentInput = match serde_json::from_slice(&bytes) {
        Ok(input) => input,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format_args!("not a RunAgentInput: {e}"),
            )
        }
    };
    if let Err(e) = input.check() {
        return refuse(
            StatusCode::BAD_REQUEST,
            format_args!("not a RunAgentInput: {e}"),
        );
    }
    let address = shared.app.address(&input.thread_id, &input.run_id);
    let draining = parts.extensions.get::<Draining>().cloned();
    let start = {
        let shared = Arc::clone(&shared);
        let address = address.clone();
        blocking(move || start_or_join(&shared, address, input, last.is_some())).await
    };
    match start {
        Ok(Ok(Some(start))) => respond(shared, address, start, draining),
        Ok(Ok(None)) => events(shared, address, last, draining).await,
        Ok(Err(r)) => *r,
        Err(r) => r,
    }
}

/// Starts the run unless it exists: writes its first record and calls the agent on a
/// blocking thread. `resuming`: the client sent a `Last-Event-ID`, so the run must exist.
/// Returns, for a run it started, where the response starts: at the run's first record,
/// taken before the agent runs (the agent may write, and retention drop, records before the
/// response would otherwise look for its start); `None` for a run that exists.
fn start_or_join<T, S>(
    shared: &Arc<Shared<T, S>>,
    address: Address,
    input: RunAgentInput,
    resuming: bool,
) -> Result<Option<Start>, Box<Response>>
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let mut running = lock(&shared.running);
    if running.contains(&address) {
        return Ok(None);
    }
    let want = Want {
        live: true,
        after: None,
    };
    match shared.source.tail(&address, want) {
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
    let state = (shared.app.init)(&input);
    let mut run = Run::new(
        &shared.app.log,
        shared.app.checkpoint,
        address.clone(),
        &input.thread_id,
        &input.run_id,
        state,
    );
    if let Err(e) = run.flush() {
        return Err(Box::new(refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format_args!("storing the run's start: {e}"),
        )));
    }
    running.insert(address.clone());
    drop(running);
    let start = match start_at(shared, &address, None) {
        Ok(start) => start,
        Err(refused) => {
            // (The run is stored but will not be produced: it is ended as failed.)
            let outcome = Outcome::Error {
                message: "the run's start could not be read back".to_owned(),
            };
            if let Err(e) = run.end(outcome) {
                tracing::error!(target: "chord::ag_ui", run = %address, error = %e, "a run whose start could not be read back could not be ended");
            }
            lock(&shared.running).remove(&address);
            return Err(refused);
        }
    };
    let shared = Arc::clone(shared);
    tokio::task::spawn_blocking(move || produce(&shared, input, run));
    Ok(Some(start))
}

/// Calls the agent, then stores how the run ended.
fn produce<T, S>(shared: &Shared<T, S>, input: RunAgentInput, mut run: Run<T, S>)
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let address = run.address().clone();
    let done = catch_unwind(AssertUnwindSafe(|| (shared.app.agent)(&input, &mut run)));
    let outcome = match done {
        Ok(Ok(())) => Outcome::Finished,
        Ok(Err(e)) => Outcome::Error {
            message: e.to_string(),
        },
        Err(panic) => {
            let said = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Outcome::Error {
                message: format!("the agent panicked: {said}"),
            }
        }
    };
    let ended = catch_unwind(AssertUnwindSafe(|| run.end(outcome.clone())));
    if !matches!(ended, Ok(Ok(_))) {
        // The handle could not store it (a panic left it half-changed, the store failed):
        // the outcome goes through a handle of its own, from what the log holds.
        drop(run);
        if let Err(e) = end_from_log(&shared.app.log, shared.app.checkpoint, &address, outcome) {
            tracing::error!(target: "chord::ag_ui", run = %address, error = %e, "the run's outcome could not be stored");
        }
    }
    lock(&shared.running).remove(&address);
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

async fn get_events<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath((thread, run)): UrlPath<(String, String)>,
    request: Request,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    if let Some(refused) = shared.refused_run(RunRequestKind::Events, &thread, &run, &parts) {
        return refused;
    }
    let last = match EventId::from_headers(&parts.headers) {
        Ok(last) => last,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    let address = shared.app.address(&thread, &run);
    events(shared, address, last, draining).await
}

async fn get_state<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath((thread, run)): UrlPath<(String, String)>,
    request: Request,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    if let Some(refused) = shared.refused_run(RunRequestKind::State, &thread, &run, &parts) {
        return refused;
    }
    let address = shared.app.address(&thread, &run);
    let log = shared.app.log.clone();
    let found = match blocking(move || recover(&log, &address)).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    match found {
        Ok(Some(mut envelope)) => {
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
        Ok(None) => refuse(StatusCode::NOT_FOUND, "no such run"),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// Where a response starts in the run's log.
struct Start {
    tail: Arc<Tail>,
    view: View,
    /// The record the view is after.
    after: u64,
    /// Events to send first: the rest of the record a resumed client was in.
    first: String,
}

/// The SSE response of a run's events, from its start or after `last`.
async fn events<T, S>(
    shared: Arc<Shared<T, S>>,
    address: Address,
    last: Option<EventId>,
    draining: Option<Draining>,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let start = {
        let shared = Arc::clone(&shared);
        let address = address.clone();
        blocking(move || start_at(&shared, &address, last)).await
    };
    match start {
        Ok(Ok(start)) => respond(shared, address, start, draining),
        Ok(Err(r)) => *r,
        Err(r) => r,
    }
}

/// The SSE response of a run's events from `start`.
fn respond<T, S>(
    shared: Arc<Shared<T, S>>,
    address: Address,
    start: Start,
    draining: Option<Draining>,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let timing = Timing {
        lifetime: shared.app.lifetime,
        keep_alive: shared.app.keep_alive,
        coalesce: Duration::ZERO,
        drain: draining,
    };
    let feed = RunFeed {
        source: Arc::clone(&shared.source),
        address,
        changes: Changes::new(start.tail.subscribe()),
        tail: start.tail,
        view: start.view,
        after: start.after,
        first: (!start.first.is_empty()).then(|| Bytes::from(start.first)),
        read: None,
        done: false,
        sent: false,
    };
    let mut r = Response::new(Body::new(SseBody::new(feed, timing)));
    sse::headers(r.headers_mut());
    r
}

/// Finds where a response starts (reads the store: call it off the runtime's workers).
fn start_at<T, S>(
    shared: &Shared<T, S>,
    address: &Address,
    last: Option<EventId>,
) -> Result<Start, Box<Response>>
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let want = Want {
        live: true,
        after: last.map(|l| l.seq),
    };
    let tail = match shared.source.tail(address, want) {
        Ok(Some(tail)) => tail,
        Ok(None) => return Err(Box::new(refuse(StatusCode::NOT_FOUND, "no such run"))),
        Err(e) => return Err(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e))),
    };
    orphan(shared, address);
    let Some(last) = last else {
        let after = tail.position().floor;
        return Ok(Start {
            tail,
            view: View::new(),
            after,
            first: String::new(),
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
    match resume(&shared.app.log, address, last) {
        Ok((view, first)) => Ok(Start {
            tail,
            view,
            after: last.seq,
            first,
        }),
        // The record was there when the floor was read, or never was: a compaction since
        // (of a checkpoint the run appended, which moves the tail's floor before the store
        // drops what it passed) makes it gone, not unknown.
        Err(Resumed::Missing) if last.seq < tail.position().floor => Err(gone()),
        Err(Resumed::Missing) => Err(unknown_id()),
        Err(Resumed::Refused(response)) => Err(response),
    }
}

/// Why [`resume`] gives no view.
enum Resumed {
    /// The log has no record at the id's offset.
    Missing,
    /// Anything else, answered as this.
    Refused(Box<Response>),
}

/// The answer to a Last-Event-ID that names no event of the run.
fn unknown_id() -> Box<Response> {
    Box::new(refuse(
        StatusCode::BAD_REQUEST,
        "unknown Last-Event-ID: the run has no such event",
    ))
}

/// A run left unfinished by a producer that is gone (this process restarted mid-run) is
/// ended with a `RUN_ERROR`, so that its clients do not wait for ever. Only over a store no
/// other process writes: over a shared one, the producer may run on another node.
fn orphan<T: Tracked, S: Store>(shared: &Shared<T, S>, address: &Address) {
    if shared.app.log.live_source().is_some() {
        return;
    }
    let running = lock(&shared.running);
    if running.contains(address) {
        return;
    }
    let unfinished = matches!(
        recover(&shared.app.log, address),
        Ok(Some(envelope)) if envelope.pointer("/outcome/status") == Some(&Value::from("running"))
    );
    if unfinished {
        let outcome = Outcome::Error {
            message: "the run's producer stopped before the run ended (the server restarted)"
                .to_owned(),
        };
        if let Err(e) = end_from_log(&shared.app.log, shared.app.checkpoint, address, outcome) {
            tracing::error!(target: "chord::ag_ui", run = %address, error = %e, "an orphaned run could not be ended");
        }
    }
    drop(running);
}

/// The view just before record `last.seq`, and the events of that record after `last.k`.
fn resume<S: Store>(
    log: &Log<S>,
    address: &Address,
    last: EventId,
) -> Result<(View, String), Resumed> {
    let failed = |e: &dyn std::fmt::Display| {
        Resumed::Refused(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e)))
    };
    // The record itself.
    let at = ReadOptions::asc().cursor(last.seq.checked_sub(1)).limit(1);
    let record = match log.read_list(address, &at) {
        Ok(page) => match page.records.into_iter().next() {
            Some(r) if r.seq == last.seq => r,
            _ => return Err(Resumed::Missing),
        },
        Err(e) => return Err(failed(&e)),
    };
    // The records before it, back to a base.
    let mut before: Vec<Record> = Vec::new();
    let mut options = ReadOptions::desc()
        .cursor(Some(last.seq))
        .stop_at_tag(BASE)
        .limit(100);
    loop {
        let page = log.read_list(address, &options).map_err(|e| failed(&e))?;
        let based = page
            .records
            .last()
            .is_some_and(|r| crate::store::is_base_tag(r.tag.as_deref()));
        before.extend(page.records);
        if based || page.next_cursor.is_none() {
            if !based && !before.is_empty() {
                return Err(Resumed::Refused(Box::new(refuse(
                    StatusCode::GONE,
                    "the run's records before this Last-Event-ID were compacted away: \
                     start again without it",
                ))));
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
    if last.k >= events.len() {
        return Err(Resumed::Refused(unknown_id()));
    }
    let mut first = String::new();
    for (k, event) in events.iter().enumerate().skip(last.k + 1) {
        frame(&mut first, EventId { seq: last.seq, k }, event);
    }
    Ok((view, first))
}

/// The events of one response: what the run's log holds after where the response started,
/// from the tail cache or else the store, until the run's terminal event.
struct RunFeed {
    source: Arc<dyn Source>,
    address: Address,
    tail: Arc<Tail>,
    view: View,
    after: u64,
    /// Events to send before any record's.
    first: Option<Bytes>,
    changes: Changes,
    /// A store read in flight.
    read: Option<Pending<Option<Vec<Record>>>>,
    /// The log could not be read on: nothing more.
    done: bool,
    /// Whether any event was sent.
    sent: bool,
}

impl RunFeed {
    /// The events of records read after `self.after`, framed.
    fn frames<'a>(&mut self, records: impl Iterator<Item = (u64, &'a str)>) -> Option<Bytes> {
        let mut out = String::new();
        for (seq, batch) in records {
            if self.done || self.view.ended() {
                break;
            }
            self.after = seq;
            match self.view.record(batch) {
                Ok(events) => {
                    for (k, event) in events.iter().enumerate() {
                        frame(&mut out, EventId { seq, k }, event);
                    }
                }
                Err(e) => {
                    tracing::warn!(target: "chord::ag_ui", run = %self.address, seq, error = %e, "a run's record gives no events");
                    broken(&mut out, e);
                    self.done = true;
                }
            }
        }
        self.sent |= !out.is_empty();
        (!out.is_empty()).then(|| Bytes::from(out))
    }
}

impl Feed for RunFeed {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            if let Some(first) = self.first.take() {
                self.sent = true;
                return Poll::Ready(Next::Data(first));
            }
            if self.done || self.view.ended() {
                return Poll::Ready(Next::End);
            }
            if let Some(read) = self.read.as_mut() {
                let Poll::Ready(records) = read.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                self.read = None;
                let Some(records) = records else {
                    return Poll::Ready(Next::End);
                };
                let data = self.frames(records.iter().map(|r| (r.seq, r.batch.as_str())));
                match data {
                    Some(data) => return Poll::Ready(Next::Data(data)),
                    None => continue,
                }
            }
            if self.changes.waiting() {
                match self.changes.poll_changed(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Ready(true) => {}
                }
            }
            self.changes.seen();
            match self.tail.read(self.after, CHUNK) {
                // Compacted away before anything was sent (an agent that ran ahead of its
                // client, past what retention keeps): the response starts where a reader
                // with no id starts, at the latest base kept, rather than send nothing.
                Found::Gone if !self.sent => {
                    self.view = View::new();
                    self.after = self.tail.position().floor;
                }
                // Compacted away meanwhile: the client's next request says so.
                Found::Gone => return Poll::Ready(Next::End),
                Found::Miss => {
                    let source = Arc::clone(&self.source);
                    let address = self.address.clone();
                    let after = self.after;
                    let read =
                        tokio::task::spawn_blocking(move || source.read(&address, after, CHUNK));
                    self.read = Some(Box::pin(async move {
                        read.await.ok().and_then(Result::ok).flatten()
                    }));
                }
                Found::Entries(entries) if !entries.is_empty() => {
                    if let Some(data) = self.frames(entries.iter().map(|e| (e.seq, &*e.batch))) {
                        return Poll::Ready(Next::Data(data));
                    }
                }
                Found::Entries(_) => match self.changes.poll_changed(cx) {
                    Poll::Ready(true) => {}
                    Poll::Ready(false) => return Poll::Ready(Next::End),
                    Poll::Pending => return Poll::Pending,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_as_sent_and_nothing_else() {
        let id = EventId { seq: 42, k: 3 };
        let mut text = String::new();
        id.write(&mut text);
        assert_eq!(text, "000000000000002a:3");
        assert_eq!(EventId::parse(&text), Ok(id));
        for bad in [
            "",
            "2a:3",
            "000000000000002a",
            "000000000000002a:",
            "000000000000002a:-1",
            "000000000000002a:+1",
            "000000000000002A:1",
            "000000000000002a:1:2",
            "000000000000002a:99999999999",
            "é",
        ] {
            let err = EventId::parse(bad).unwrap_err();
            assert!(err.contains("malformed Last-Event-ID"), "{bad}: {err}");
        }
    }
}
