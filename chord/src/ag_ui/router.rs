//! [`AgUi`]: the endpoint's configuration, and its router: a run's start, its events and its
//! state, each answered on the live layer (its headers, request metrics, bounds and drain).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::events::{check_id, RunAgentInput};
use super::id::EventId;
use super::run::Run;
use super::start::{self, Shared};
use crate::live::bound::Bound;
use crate::live::server::Draining;
use crate::live::sse::DEFAULT_KEEP_ALIVE;
use crate::live::{headers, refusal, requests, Access, Log};
use crate::store::{recover, Address, Checkpoint, Store};
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

/// The default [`AgUi::max_runs`].
pub(crate) const DEFAULT_MAX_RUNS: usize = 64;

/// The default [`AgUi::max_readers`].
pub(crate) const DEFAULT_MAX_READERS: usize = 1024;

/// What an agent returns when it fails: any error, said in the `RUN_ERROR` event.
pub type AgentError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) type AgentFn<T, S> =
    dyn Fn(&RunAgentInput, &mut Run<T, Log<S>>) -> Result<(), AgentError> + Send + Sync;
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
    pub(crate) log: Log<S>,
    pub(crate) agent: Arc<AgentFn<T, S>>,
    pub(crate) init: Arc<InitFn<T>>,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) keep_alive: Duration,
    pub(crate) lifetime: Duration,
    body_limit: usize,
    body_timeout: Duration,
    namespace: String,
    authorize: Option<Arc<AuthorizeFn>>,
    max_runs: usize,
    max_readers: usize,
}

impl<T, S> AgUi<T, S>
where
    T: Tracked + Serialize + DeserializeOwned + Send + 'static,
    S: Store + Send + 'static,
{
    /// An endpoint whose runs are written to `log`, each run's state starting as the
    /// client's `state` when it sends one, else `T::default()` (see
    /// [`with_initial`](AgUi::with_initial)), and produced by `agent`, called on a thread of
    /// its own with the input and the run's handle.
    pub fn new<F, E>(log: &Log<S>, agent: F) -> AgUi<T, S>
    where
        T: Default,
        F: Fn(&RunAgentInput, &mut Run<T, Log<S>>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<AgentError>,
    {
        AgUi::with_initial(log, |_: &RunAgentInput| T::default(), agent)
    }

    /// As [`new`](AgUi::new), for a state without `Default`: a run whose client sends no
    /// state (absent, `null` or `{}`) starts as `init` makes it from the input.
    pub fn with_initial<I, F, E>(log: &Log<S>, init: I, agent: F) -> AgUi<T, S>
    where
        I: Fn(&RunAgentInput) -> T + Send + Sync + 'static,
        F: Fn(&RunAgentInput, &mut Run<T, Log<S>>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<AgentError>,
    {
        AgUi {
            log: log.clone(),
            agent: Arc::new(move |input: &RunAgentInput, run: &mut Run<T, Log<S>>| {
                agent(input, run).map_err(Into::into)
            }),
            init: Arc::new(init),
            max_runs: DEFAULT_MAX_RUNS,
            max_readers: DEFAULT_MAX_READERS,
            checkpoint: DEFAULT_CHECKPOINT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            lifetime: DEFAULT_LIFETIME,
            body_limit: DEFAULT_BODY_LIMIT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            namespace: DEFAULT_NAMESPACE.to_owned(),
            authorize: None,
        }
    }

    /// The state a new run starts with (its first `STATE_SNAPSHOT`) when its client sends
    /// none (absent, `null` or `{}`), from the input. Default: `T::default()` (or what
    /// [`with_initial`](AgUi::with_initial) was given).
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

    /// How many runs may be in flight at once (default 64): a `POST` that would start one
    /// more is answered `503` with `Retry-After`, and nothing is started. Each run's agent
    /// runs on a thread of its own, never on the pool that serves the endpoint's reads.
    #[must_use]
    pub fn max_runs(mut self, runs: usize) -> Self {
        self.max_runs = runs;
        self
    }

    /// How many event streams may be open at once (default 1,024): one more is answered
    /// `503` with `Retry-After`. An open stream at the tail of its run holds no copy of the
    /// run's state: every reader is sent the same frames, made once.
    #[must_use]
    pub fn max_readers(mut self, readers: usize) -> Self {
        self.max_readers = readers;
        self
    }

    /// The address of a run in the log.
    pub fn address(&self, thread_id: &str, run_id: &str) -> Address {
        Address::new(format!("{}{thread_id}", self.namespace), run_id)
    }

    /// The router: `POST /`, `GET /runs/{threadId}/{runId}` and
    /// `GET /runs/{threadId}/{runId}/state`, with the headers every chord answer carries
    /// ([`live::headers`](crate::live::headers)) and its requests counted in the request
    /// metrics (kinds `ag_ui_run`, `ag_ui_events`, `ag_ui_state`). Nest it under a prefix
    /// with [`Router::nest`] as needed.
    pub fn router(self) -> Router {
        let shared = Arc::new(Shared {
            source: self.log.source(),
            running: Mutex::new(HashSet::new()),
            runs: Bound::new(self.max_runs),
            readers: Bound::new(self.max_readers),
            app: self,
        });
        let router = Router::new()
            .route("/", post(post_run::<T, S>))
            .route("/runs/{thread}/{run}", get(get_events::<T, S>))
            .route("/runs/{thread}/{run}/state", get(get_state::<T, S>))
            .with_state(shared);
        requests::counted(headers(router), classify)
    }
}

/// The kind of a request to the AG-UI router, as the request metrics name it.
fn classify(request: &Request) -> &'static str {
    let path = request.uri().path();
    match *request.method() {
        Method::POST => "ag_ui_run",
        Method::GET | Method::HEAD if path.ends_with("/state") => "ag_ui_state",
        Method::GET | Method::HEAD if path.contains("/runs/") => "ag_ui_events",
        Method::OPTIONS => "options",
        _ => "other",
    }
}

/// A plain-text refusal saying why.
pub(crate) fn refuse(status: StatusCode, reason: impl std::fmt::Display) -> Response {
    let mut r = (status, format!("{reason}\n")).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A refusal sent before the request's body was read (the live layer's headers close the
/// connection after it).
fn refuse_unread(status: StatusCode, reason: impl std::fmt::Display) -> Response {
    refuse(status, reason)
}

impl<T: Tracked, S: Store> Shared<T, S> {
    /// The hook's refusal, if it refuses: the streams' answer to a refused request (the live
    /// layer closes the connection after it: the body was not read).
    fn refused(&self, request: &RunRequest<'_>) -> Option<Response> {
        let hook = self.app.authorize.as_ref()?;
        let access = hook(request);
        (access != Access::Allow).then(|| refusal(access))
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

    /// The address of a run in the log.
    pub(crate) fn address(&self, thread_id: &str, run_id: &str) -> Address {
        Address::new(format!("{}{thread_id}", self.app.namespace), run_id)
    }
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

/// The state a client sent, as the run's state: `None` when it sent none (absent, `null` or
/// `{}`), an error naming the field when it is not a `T`.
fn client_state<T: DeserializeOwned>(state: &Value) -> Result<Option<T>, String> {
    let none = match state {
        Value::Null => true,
        Value::Object(members) => members.is_empty(),
        _ => false,
    };
    if none {
        return Ok(None);
    }
    serde_path_to_error::deserialize(state)
        .map(Some)
        .map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." { "the state".to_owned() } else { format!("`state.{path}`") };
            format!("the state does not fit this agent's state: {at}: {}", e.inner())
        })
}

async fn post_run<T, S>(State(shared): State<Arc<Shared<T, S>>>, request: Request) -> Response
where
    T: Tracked + Serialize + DeserializeOwned + Send + 'static,
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
    // Read as every JSON in chord is: a member named twice is refused, where it is.
    let parsed = std::str::from_utf8(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|text| crate::json::value_from_str(text).map_err(|e| e.to_string()))
        .and_then(|value| serde_json::from_value::<RunAgentInput>(value).map_err(|e| e.to_string()));
    let input = match parsed {
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
    let state = match client_state::<T>(&input.state) {
        Ok(state) => state,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    start::post(shared, input, state, last, draining).await
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
    let address = shared.address(&thread, &run);
    start::events(shared, address, last, draining).await
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
    let address = shared.address(&thread, &run);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_state_is_typed_and_a_misfit_names_its_field() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct S {
            plan: Vec<String>,
            n: u32,
        }
        for none in [Value::Null, serde_json::json!({})] {
            assert_eq!(client_state::<S>(&none), Ok(None));
        }
        assert_eq!(
            client_state::<S>(&serde_json::json!({"plan": ["a"], "n": 2})),
            Ok(Some(S { plan: vec!["a".into()], n: 2 }))
        );
        let why = client_state::<S>(&serde_json::json!({"plan": ["a", 3], "n": 2})).unwrap_err();
        assert!(why.contains("`state.plan[1]`"), "{why}");
        let why = client_state::<S>(&serde_json::json!({"plan": []})).unwrap_err();
        assert!(why.contains("missing field `n`"), "{why}");
    }
}
