//! [`AiSdk`]: the door's configuration and its router: a chat's `POST`, its stream's resume
//! and its state, each answered on the live layer and the run layer; what its authorization
//! hook sees ([`ChatRequest`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;
use serde_json::Value;

use super::chat::{self, check_chat_id, parse_request, ChatInput};
use super::framing::AiSdkFraming;
use crate::live::server::Draining;
use crate::live::{headers, refusal, requests, Access, Log};
use crate::runs::id::EventId;
use crate::runs::serve::{
    self, blocking, defaults, in_progress, json_body, refuse, state_answer, Ended, NewRun, Runs,
};
use crate::runs::{AgentError, Run};
use crate::store::{recover, Address, Checkpoint, Error as StoreError, LogWriter, Store};
use crate::Tracked;

type AgentFn<T, S> =
    dyn Fn(&ChatInput, &mut Run<T, Log<S>>) -> Result<(), AgentError> + Send + Sync;
type InitFn<T> = dyn Fn(&ChatInput) -> T + Send + Sync;
type AuthorizeFn = dyn Fn(&ChatRequest<'_>) -> Access + Send + Sync;

/// What a request to the AI SDK router asks ([`ChatRequest::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChatRequestKind {
    /// `POST /`: a message sent, a turn started.
    Send,
    /// `GET /{chatId}/stream`: a turn's stream resumed.
    Resume,
    /// `GET /{chatId}/state`: the state of a chat's latest turn.
    State,
}

/// A request to the AI SDK router, as the authorization hook ([`AiSdk::authorize`]) sees it:
/// before its body is read.
#[derive(Debug)]
#[non_exhaustive]
pub struct ChatRequest<'a> {
    /// What it asks.
    pub kind: ChatRequestKind,
    /// The chat's id when the URL names it (not for a `POST`, whose body is read only once
    /// the hook allowed it).
    pub chat: Option<&'a str>,
    /// The URI, query included.
    pub uri: &'a Uri,
    /// The headers (`Authorization`, `Cookie`, `Origin`, ...).
    pub headers: &'a HeaderMap,
}

/// The AI SDK door: a `useChat` endpoint whose runs are written to a chord log by an agent
/// (see the [module](super)). Build it with [`AiSdk::new`], adjust it, and serve
/// [`AiSdk::router`].
pub struct AiSdk<T: Tracked, S: Store> {
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
    replay_window: Duration,
    max_runs: usize,
    max_readers: usize,
}

impl<T, S> AiSdk<T, S>
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    /// The door for the runs of `agent`, written to `log`, each starting from
    /// `T::default()`. The agent is called on a thread of its own with the request and the
    /// run's handle; its error, or its panic, ends the run with an `error` chunk.
    pub fn new<F, E>(log: &Log<S>, agent: F) -> AiSdk<T, S>
    where
        T: Default,
        F: Fn(&ChatInput, &mut Run<T, Log<S>>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<AgentError>,
    {
        AiSdk {
            log: log.clone(),
            agent: Arc::new(move |input, run| agent(input, run).map_err(Into::into)),
            init: Arc::new(|_| T::default()),
            checkpoint: defaults::CHECKPOINT,
            keep_alive: defaults::KEEP_ALIVE,
            lifetime: defaults::LIFETIME,
            body_limit: defaults::BODY_LIMIT,
            body_timeout: defaults::BODY_TIMEOUT,
            namespace: "ai-sdk/".to_owned(),
            authorize: None,
            replay_window: DEFAULT_REPLAY_WINDOW,
            max_runs: defaults::MAX_RUNS,
            max_readers: defaults::MAX_READERS,
        }
    }

    /// Authorizes each request before anything of it but its head is read, as
    /// [`AgUi::authorize`](crate::ag_ui::AgUi::authorize) does: the hook answers an
    /// [`Access`] (or a `bool`); a refused request is a `401` or `403` with an empty body, and
    /// the connection closes (an unread body is never read as the next request).
    ///
    /// ```no_run
    /// # use chord::ai_sdk::{AiSdk, ChatInput, ChatRequest};
    /// # use chord::ag_ui::{AgentError, Run};
    /// # use chord::store::{JsonlStore, Store};
    /// # use chord::streams::{Access, Log};
    /// # #[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default)]
    /// # struct Research { answer: String }
    /// # fn agent<S: Store>(_: &ChatInput, _: &mut Run<Research, S>) -> Result<(), AgentError> {
    /// #     Ok(())
    /// # }
    /// # let log: Log<JsonlStore> = Log::new(JsonlStore::open("chats.jsonl", Default::default())?);
    /// // A bearer token on every request: its POST, its stream's resume, its state.
    /// let door = AiSdk::new(&log, agent).authorize(|r: &ChatRequest<'_>| {
    ///     match r.headers.get("authorization").and_then(|v| v.to_str().ok()) {
    ///         Some("Bearer s3cret") => Access::Allow,
    ///         Some(_) => Access::Forbidden,
    ///         None => Access::Unauthorized,
    ///     }
    /// });
    /// let app = axum::Router::new().nest("/api/chat", door.router());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn authorize<F, A>(mut self, authorize: F) -> Self
    where
        F: Fn(&ChatRequest<'_>) -> A + Send + Sync + 'static,
        A: Into<Access>,
    {
        self.authorize = Some(Arc::new(move |r: &ChatRequest<'_>| authorize(r).into()));
        self
    }

    /// Each run's initial state, from the request (default `T::default()`).
    pub fn initial(mut self, init: impl Fn(&ChatInput) -> T + Send + Sync + 'static) -> Self {
        self.init = Arc::new(init);
        self
    }

    /// When a run writes a checkpoint, so that a resume reads a bounded stretch of its log
    /// (default: every 256 KiB of changes).
    pub fn checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = checkpoint;
        self
    }

    /// The most bytes of a `POST`'s body (default 1 MiB): past it `413`.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a `POST`'s body may take to arrive (default 30 s): past it `408`.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long after a turn ended a resume without `Last-Event-ID` (the default transport's,
    /// a reloaded page's) still gets it (default 15 s): the turn as it ended, compactly, so
    /// that a client cut just before the end, or whose server restarted mid-turn, learns how
    /// it ended. Later, such a resume is `204`: nothing in progress. Measured from when the
    /// turn's last record arrived on the node that answers.
    pub fn replay_window(mut self, window: Duration) -> Self {
        self.replay_window = window;
        self
    }

    /// The prefix of the namespaces of the chats' addresses (default `ai-sdk/`).
    pub fn namespace(mut self, prefix: impl Into<String>) -> Self {
        self.namespace = prefix.into();
        self
    }

    /// The most runs in flight at once (default 64): past it `503` with `Retry-After`.
    pub fn max_runs(mut self, runs: usize) -> Self {
        self.max_runs = runs;
        self
    }

    /// The most open streams at once (default 1,024): past it `503` with `Retry-After`.
    pub fn max_readers(mut self, readers: usize) -> Self {
        self.max_readers = readers;
        self
    }

    /// The router: `POST /`, `GET /{chatId}/stream` and `GET /{chatId}/state`, with the
    /// headers every chord answer carries and its requests counted in the request metrics.
    /// Nest it where the page's `useChat` posts (`/api/chat` by default).
    pub fn router(self) -> Router {
        let runs = Runs::new(
            &self.log,
            self.checkpoint,
            (self.max_runs, self.max_readers),
            (self.lifetime, self.keep_alive),
        );
        let shared = Arc::new(Shared {
            runs: Arc::new(runs),
            starting: Mutex::new(HashSet::new()),
            app: self,
        });
        let router = Router::new()
            .route("/", post(post_chat::<T, S>))
            .route("/{chat}/stream", get(get_stream::<T, S>))
            .route("/{chat}/state", get(get_state::<T, S>))
            .with_state(shared);
        requests::counted(headers(router), classify)
    }
}

/// The default [`AiSdk::replay_window`].
const DEFAULT_REPLAY_WINDOW: Duration = Duration::from_secs(15);

/// What the handlers share.
struct Shared<T: Tracked, S: Store> {
    app: AiSdk<T, S>,
    runs: Arc<Runs<S>>,
    /// The chats whose turn this node is starting (from the check that none runs to the
    /// turn's first record).
    starting: Mutex<HashSet<String>>,
}

/// A chat's turn being started by this node: its place in [`Shared::starting`], let go on
/// drop.
struct Starting<'a> {
    chats: &'a Mutex<HashSet<String>>,
    chat_id: String,
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        let mut chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        chats.remove(&self.chat_id);
    }
}

impl<T: Tracked, S: Store> Shared<T, S> {
    /// The hook's refusal of a request for `kind` (of `chat`, when the URL names it), if it
    /// refuses.
    fn refused(
        &self,
        kind: ChatRequestKind,
        chat: Option<&str>,
        parts: &axum::http::request::Parts,
    ) -> Option<Response> {
        let hook = self.app.authorize.as_ref()?;
        let access = hook(&ChatRequest {
            kind,
            chat,
            uri: &parts.uri,
            headers: &parts.headers,
        });
        (access != Access::Allow).then(|| refusal(access))
    }

    /// Claims the start of a turn of `chat_id` on this node; `None` while another request
    /// holds it.
    fn start_turn(&self, chat_id: &str) -> Option<Starting<'_>> {
        let mut chats = self.starting.lock().unwrap_or_else(PoisonError::into_inner);
        chats.insert(chat_id.to_owned()).then(|| Starting {
            chats: &self.starting,
            chat_id: chat_id.to_owned(),
        })
    }

    /// The namespace of a chat's runs and index.
    fn namespace(&self, chat_id: &str) -> String {
        format!("{}{chat_id}", self.app.namespace)
    }

    fn index(&self, chat_id: &str) -> Address {
        Address::new(self.namespace(chat_id), "chat")
    }
}

/// The kind of a request, as the request metrics name it.
fn classify(request: &Request) -> &'static str {
    let path = request.uri().path();
    match *request.method() {
        Method::POST => "ai_sdk_chat",
        Method::GET | Method::HEAD if path.ends_with("/state") => "ai_sdk_state",
        Method::GET | Method::HEAD if path.ends_with("/stream") => "ai_sdk_stream",
        Method::OPTIONS => "options",
        _ => "other",
    }
}

/// A UI message stream's answer: the header `useChat` checks, on a stream.
fn ui_stream(mut r: Response) -> Response {
    if r.status() == StatusCode::OK {
        r.headers_mut().insert(
            "x-vercel-ai-ui-message-stream",
            HeaderValue::from_static("v1"),
        );
    }
    r
}

/// The address of a chat's latest run, from the chat's index; `None` for a chat with none
/// (reads the store: call it off the runtime's workers).
fn latest<T: Tracked, S: Store>(
    shared: &Shared<T, S>,
    chat_id: &str,
) -> Result<Option<Address>, String> {
    let log = &shared.app.log;
    let turns = match recover(log, &shared.index(chat_id)).map_err(|e| e.to_string())? {
        Some(index) => index.get("turns").and_then(Value::as_u64).unwrap_or(0),
        None => return Ok(None),
    };
    Ok((turns > 0).then(|| Address::new(shared.namespace(chat_id), chat::run_id(turns))))
}

/// `204 No Content`: no turn of the chat is in progress.
fn nothing_in_progress() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The answer to a `POST` while a turn of the chat is in progress or starting.
fn turn_in_progress(chat_id: &str) -> Response {
    refuse(
        StatusCode::CONFLICT,
        format_args!(
            "chat {chat_id:?} has a turn in progress: resume it with GET {chat_id}/stream, or \
             wait for it to end"
        ),
    )
}

/// Whether a store error says another writer holds the chat's index (another request, or
/// another node, counting a turn at the same time).
fn contended(e: &StoreError) -> bool {
    #[cfg(feature = "postgres")]
    if matches!(
        e,
        StoreError::AddressLocked { .. } | StoreError::Fenced { .. }
    ) {
        return true;
    }
    matches!(
        e,
        StoreError::Locked { .. } | StoreError::LockedByWriter { .. }
    )
}

async fn post_chat<T, S>(State(shared): State<Arc<Shared<T, S>>>, request: Request) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, body) = request.into_parts();
    if let Some(refused) = shared.refused(ChatRequestKind::Send, None, &parts) {
        return refused;
    }
    let (limit, timeout) = (shared.app.body_limit, shared.app.body_timeout);
    let parsed = match json_body(&parts, body, limit, timeout, "a useChat request").await {
        Ok(value) => parse_request(&value),
        Err(refused) => return refused,
    };
    let asked = match parsed {
        Ok(asked) => asked,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format_args!("not a useChat request: {e}"),
            )
        }
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    // One turn of a chat starts at a time on this node: from the check that none runs to
    // the new run's first record (two nodes are ordered by the store's one writer of the
    // chat's index).
    let Some(starting) = shared.start_turn(&asked.chat_id) else {
        return turn_in_progress(&asked.chat_id);
    };
    // The chat's next run, unless its latest is in progress.
    let next = {
        let shared = Arc::clone(&shared);
        let chat_id = asked.chat_id.clone();
        blocking(move || -> Result<String, Box<Response>> {
            let failed = |e: String| Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e));
            if let Some(address) = latest(&shared, &chat_id).map_err(failed)? {
                if in_progress::<S, AiSdkFraming>(&shared.runs, &address).map_err(failed)? {
                    return Err(Box::new(turn_in_progress(&chat_id)));
                }
            }
            let writer = LogWriter::new(shared.app.log.clone(), Checkpoint::Never);
            chat::next_run(writer, shared.index(&chat_id)).map_err(|e| {
                if contended(&e) {
                    Box::new(turn_in_progress(&chat_id))
                } else {
                    failed(e.to_string())
                }
            })
        })
        .await
    };
    let run_id = match next {
        Ok(Ok(run_id)) => run_id,
        Ok(Err(r)) => return *r,
        Err(r) => return r,
    };
    let input = Arc::new(ChatInput {
        chat_id: asked.chat_id.clone(),
        run_id: run_id.clone(),
        trigger: asked.trigger,
        text: chat::text_of(&asked.message),
        message: asked.message,
    });
    let (init, agent) = (Arc::clone(&shared.app.init), Arc::clone(&shared.app.agent));
    let for_state = Arc::clone(&input);
    let new = NewRun {
        address: Address::new(shared.namespace(&input.chat_id), run_id.clone()),
        thread_id: input.chat_id.clone(),
        run_id,
        state: Box::new(move || init(&for_state)),
        agent: Box::new(move |run| agent(&input, run)),
    };
    let runs = Arc::clone(&shared.runs);
    let answer = serve::post::<T, S, AiSdkFraming>(runs, new, None, draining).await;
    drop(starting);
    ui_stream(answer)
}

async fn get_stream<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath(chat_id): UrlPath<String>,
    request: Request,
) -> Response
where
    T: Tracked + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    if let Some(refused) = shared.refused(ChatRequestKind::Resume, Some(&chat_id), &parts) {
        return refused;
    }
    if let Err(why) = check_chat_id(&chat_id) {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let last = match EventId::from_headers(&parts.headers) {
        Ok(last) => last,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let found = {
        let shared = Arc::clone(&shared);
        blocking(move || latest(&shared, &chat_id)).await
    };
    let address = match found {
        Ok(Ok(Some(address))) => address,
        Ok(Ok(None)) => return nothing_in_progress(),
        Ok(Err(e)) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => return r,
    };
    // A client that has the run's start resumes it, ended or not (the rest of its chunks, or
    // 204 after its last); one that has nothing is sent a run in progress as it stands (or
    // one that ended within the replay window), and 204 for an ended one.
    let ended = if last.is_some() {
        Ended::Send
    } else {
        Ended::NoContentAfter(shared.app.replay_window)
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    let runs = Arc::clone(&shared.runs);
    let answer = serve::events::<S, AiSdkFraming>(runs, address, last, ended, draining).await;
    if last.is_none() && answer.status() == StatusCode::NOT_FOUND {
        // Counted in the index, its first record not written (its start failed): nothing
        // in progress.
        return nothing_in_progress();
    }
    ui_stream(answer)
}

async fn get_state<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath(chat_id): UrlPath<String>,
    request: Request,
) -> Response
where
    T: Tracked + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    if let Some(refused) = shared.refused(ChatRequestKind::State, Some(&chat_id), &parts) {
        return refused;
    }
    if let Err(why) = check_chat_id(&chat_id) {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let found = {
        let shared = Arc::clone(&shared);
        blocking(move || {
            let log = &shared.app.log;
            match latest(&shared, &chat_id)? {
                Some(address) => recover(log, &address).map_err(|e| e.to_string()),
                None => Ok(None),
            }
        })
        .await
    };
    match found {
        Ok(Ok(Some(envelope))) => state_answer(envelope),
        Ok(Ok(None)) => refuse(StatusCode::NOT_FOUND, "no such chat"),
        Ok(Err(e)) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => r,
    }
}
