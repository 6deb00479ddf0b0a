//! [`AiSdk`]: the door's configuration and its router: a chat's `POST`, its stream's resume
//! and its state, each answered on the live layer and the run layer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;
use serde_json::Value;

use super::chat::{self, check_chat_id, parse_request, ChatInput};
use super::framing::AiSdkFraming;
use crate::live::server::Draining;
use crate::live::sse::DEFAULT_KEEP_ALIVE;
use crate::live::{headers, requests, Log};
use crate::runs::id::EventId;
use crate::runs::serve::{self, blocking, json_body, refuse, state_answer, NewRun, Runs};
use crate::runs::{AgentError, Run};
use crate::store::{recover, Address, Checkpoint, LogWriter, Store};
use crate::Tracked;

type AgentFn<T, S> =
    dyn Fn(&ChatInput, &mut Run<T, Log<S>>) -> Result<(), AgentError> + Send + Sync;
type InitFn<T> = dyn Fn(&ChatInput) -> T + Send + Sync;

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
            checkpoint: Checkpoint::EveryBytes(256 * 1024),
            keep_alive: DEFAULT_KEEP_ALIVE,
            lifetime: Duration::from_secs(24 * 3600),
            body_limit: 1 << 20,
            body_timeout: Duration::from_secs(30),
            namespace: "ai-sdk/".to_owned(),
            max_runs: 64,
            max_readers: 1024,
        }
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

/// What the handlers share.
struct Shared<T: Tracked, S: Store> {
    app: AiSdk<T, S>,
    runs: Arc<Runs<S>>,
}

impl<T: Tracked, S: Store> Shared<T, S> {
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

/// The latest run of a chat: its address and envelope, `None` for a chat with none (reads
/// the store: call it off the runtime's workers).
fn latest<T: Tracked, S: Store>(
    shared: &Shared<T, S>,
    chat_id: &str,
) -> Result<Option<(Address, Value)>, String> {
    let log = &shared.app.log;
    let turns = match recover(log, &shared.index(chat_id)).map_err(|e| e.to_string())? {
        Some(index) => index.get("turns").and_then(Value::as_u64).unwrap_or(0),
        None => return Ok(None),
    };
    if turns == 0 {
        return Ok(None);
    }
    let address = Address::new(shared.namespace(chat_id), chat::run_id(turns));
    match recover(log, &address).map_err(|e| e.to_string())? {
        Some(envelope) => Ok(Some((address, envelope))),
        // Counted, and its start not written (or compacted away): no run to read.
        None => Ok(None),
    }
}

async fn post_chat<T, S>(State(shared): State<Arc<Shared<T, S>>>, request: Request) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, body) = request.into_parts();
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
    // The chat's next run, unless its latest is running.
    let next = {
        let shared = Arc::clone(&shared);
        let chat_id = asked.chat_id.clone();
        blocking(move || -> Result<String, Box<Response>> {
            match latest(&shared, &chat_id) {
                Ok(Some((_, envelope))) if chat::running(&envelope) => {
                    return Err(Box::new(refuse(
                        StatusCode::CONFLICT,
                        format_args!(
                            "chat {chat_id:?} has a run in progress: resume it with GET \
                             {chat_id}/stream, or wait for it to end"
                        ),
                    )))
                }
                Ok(_) => {}
                Err(e) => return Err(Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e))),
            }
            let writer = LogWriter::new(shared.app.log.clone(), Checkpoint::Never);
            chat::next_run(writer, shared.index(&chat_id))
                .map_err(|e| Box::new(refuse(StatusCode::INTERNAL_SERVER_ERROR, e)))
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
    ui_stream(serve::post::<T, S, AiSdkFraming>(runs, new, None, draining).await)
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
        // A client that has the run's start resumes it, ended or not (the rest of its
        // chunks, or 204 after its last); one that has nothing reads a run in progress.
        Ok(Ok(Some((address, envelope)))) if last.is_some() || chat::running(&envelope) => address,
        Ok(Ok(_)) => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NO_CONTENT;
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return r;
        }
        Ok(Err(e)) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => return r,
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    let runs = Arc::clone(&shared.runs);
    ui_stream(serve::events::<S, AiSdkFraming>(runs, address, last, draining).await)
}

async fn get_state<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath(chat_id): UrlPath<String>,
) -> Response
where
    T: Tracked + Send + 'static,
    S: Store + Send + 'static,
{
    if let Err(why) = check_chat_id(&chat_id) {
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    let found = {
        let shared = Arc::clone(&shared);
        blocking(move || latest(&shared, &chat_id)).await
    };
    match found {
        Ok(Ok(Some((_, envelope)))) => state_answer(envelope),
        Ok(Ok(None)) => refuse(StatusCode::NOT_FOUND, "no such chat"),
        Ok(Err(e)) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => r,
    }
}
