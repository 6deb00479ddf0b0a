//! [`AgUi`]: the endpoint's configuration, and what its authorization hook sees
//! ([`RunRequest`]).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, Uri};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::events::RunAgentInput;
use crate::live::{Access, Log};
use crate::runs::{AgentError, Run};
use crate::store::{Address, Checkpoint, Store};
use crate::Tracked;

/// The defaults of [`AgUi`], every door's.
pub(crate) use crate::runs::serve::defaults::{
    BODY_LIMIT as DEFAULT_BODY_LIMIT, BODY_TIMEOUT as DEFAULT_BODY_TIMEOUT,
    CHECKPOINT as DEFAULT_CHECKPOINT, KEEP_ALIVE as DEFAULT_KEEP_ALIVE,
    LIFETIME as DEFAULT_LIFETIME, MAX_READERS as DEFAULT_MAX_READERS, MAX_RUNS as DEFAULT_MAX_RUNS,
};

/// The default [`AgUi::namespace`] prefix of a run's address.
pub(crate) const DEFAULT_NAMESPACE: &str = "ag-ui/";

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
    pub(crate) body_limit: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) namespace: String,
    pub(crate) authorize: Option<Arc<AuthorizeFn>>,
    pub(crate) max_runs: usize,
    pub(crate) max_readers: usize,
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
}
