//! chord state for [AG-UI](https://docs.ag-ui.com) frontends: a Rust agent with a typed,
//! tracked state feeds any AG-UI client (the official `@ag-ui/client`, CopilotKit, ...) with
//! state patches that always apply, the answer's text as text deltas, and runs that survive a
//! dropped connection or a restarted server.
//!
//! AG-UI is an event protocol: a client posts a [`RunAgentInput`] and reads Server-Sent
//! Events: `RUN_STARTED`, the state as one `STATE_SNAPSHOT` then `STATE_DELTA`s (RFC 6902
//! JSON Patches), the assistant's text as `TEXT_MESSAGE_START` / `TEXT_MESSAGE_CONTENT` /
//! `TEXT_MESSAGE_END`, and `RUN_FINISHED` or `RUN_ERROR`. This module serves exactly that
//! from a chord log: [`AgUi`] is the axum router, [`Run`] the agent's handle on its run,
//! [`Patcher`] the converter from a flush's ops to a JSON Patch.
//!
//! # A typed state
//!
//! The state is any `#[derive(Tracked)]` type (with `Serialize`): what the page shows beside
//! the answer, a plan, tool calls and their output. It is sent as the state; the answer's
//! text is not part of it (see [the run's log](#the-runs-log)).
//!
//! ```
//! use chord::Tracked;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Tracked, Serialize, Deserialize, Default)]
//! struct Research {
//!     plan: Vec<Step>,
//!     sources: Vec<String>,
//! }
//!
//! #[derive(Tracked, Serialize, Deserialize)]
//! struct Step {
//!     title: String,
//!     done: bool,
//! }
//! ```
//!
//! **Choosing the state's shape.** RFC 6902 has no append: a `STATE_DELTA` for a `String`
//! field that grew by a token replaces the whole string, so a field that grows token by
//! token costs its whole length on every flush (quadratic in the answer's length), where the
//! chord log itself stores each token once. Stream growing text as a message instead
//! ([`Run::append`]: a `TEXT_MESSAGE_CONTENT` carries just the token), or keep it as a list
//! of chunks (each new chunk one `add` at `/-`):
//!
//! ```
//! use chord::{ag_ui::Patcher, track};
//! use serde_json::json;
//!
//! let mut tracker = track(json!({"answer": "It is", "chunks": ["It is"]}));
//! tracker.flush().unwrap(); // the first flush is the whole value: the STATE_SNAPSHOT
//! let mut patcher = Patcher::new(tracker.get().clone());
//! tracker.edit(|v| {
//!     v["answer"].as_str().map(str::to_owned).map(|a| v["answer"] = json!(a + " an event"));
//!     v["chunks"].as_array_mut().unwrap().push(json!(" an event"));
//! });
//! let delta = serde_json::to_string(&patcher.patch(&tracker.flush().unwrap()).unwrap()).unwrap();
//! assert_eq!(
//!     delta,
//!     r#"[{"op":"replace","path":"/answer","value":"It is an event"},{"op":"add","path":"/chunks/-","value":" an event"}]"#,
//! );
//! ```
//!
//! # The handler
//!
//! [`AgUi::new`] takes the log the runs are written to and the agent: a function called, on
//! a thread of its own, with the input and the run's [`Run`] handle. It changes the state
//! through [`Run::state`], streams text with [`Run::start_message`], [`Run::append`] and
//! [`Run::end_message`], and stores what changed with [`Run::flush`]: each flush is one
//! record of the run's log and the events its clients are sent next. When the agent returns
//! `Ok` the run ends with `RUN_FINISHED`; when it returns an error, or panics, with
//! `RUN_ERROR` saying why. Open messages are ended either way.
//!
//! ```no_run
//! use chord::ag_ui::{AgUi, AgentError, Run, RunAgentInput};
//! use chord::store::{Durability, JsonlStore, Store};
//! use chord::streams::{serve, Log, LogBuilder, Retention};
//! # use chord::Tracked;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(Tracked, Serialize, Deserialize, Default)]
//! # struct Research { plan: Vec<Step>, sources: Vec<String> }
//! # #[derive(Tracked, Serialize, Deserialize)]
//! # struct Step { title: String, done: bool }
//!
//! fn agent<S: Store>(input: &RunAgentInput, run: &mut Run<Research, S>) -> Result<(), AgentError> {
//!     run.state().plan.push(Step { title: "search".into(), done: false });
//!     run.flush()?; // STATE_DELTA [{"op":"add","path":"/plan/-","value":{...}}]
//!     run.state().sources.push("https://docs.ag-ui.com".into());
//!     if let Some(mut step) = run.state().plan.get_mut(0) {
//!         step.done.set(true);
//!     }
//!     run.flush()?;
//!     let answer = run.start_message();
//!     for token in ["AG-UI ", "is ", "an ", "event ", "protocol."] {
//!         run.append(&answer, token); // TEXT_MESSAGE_CONTENT, never a state delta
//!         run.flush()?;
//!     }
//!     Ok(()) // RUN_FINISHED
//! }
//!
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! // 64 bases of each run kept: a client resumes from any event of a long run (see Resume).
//! let store = JsonlStore::open("runs.jsonl", Durability::EveryAppend)?;
//! let log: Log<JsonlStore> = LogBuilder::new().retention(Retention::Bases(64)).build(store);
//! let app = AgUi::new(&log, agent).router(); // POST /, GET /runs/{threadId}/{runId}
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8788").await?;
//! serve(listener, app, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! An agent written generic over the store, as above, runs without the router too: over any
//! store's [`LogWriter`](crate::store::LogWriter), [`Run::new`] starts a run and
//! [`Run::finish`] or [`Run::fail`] ends it (for the agent's tests, or another server). A
//! state without `Default` is served with [`AgUi::with_initial`].
//!
//! `chord/examples/ag_ui_agent.rs` in the repository is a whole scripted agent (a plan, tool
//! calls with their output, an answer token by token), run with
//! `cargo run --example ag_ui_agent -- --port 8788`, from the repository's root.
//!
//! **Routes.**
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /` with a `RunAgentInput` | a new run (`threadId`, `runId` not seen before) is started and its events answered from `RUN_STARTED`; an existing one is not started again: its events are answered, after `Last-Event-ID` when sent; `503` with `Retry-After` past [`AgUi::max_runs`] or [`AgUi::max_readers`], nothing started |
//! | `GET /runs/{threadId}/{runId}` | the run's events, after `Last-Event-ID` when sent (what `EventSource` sends on reconnecting); `204` when that id is the run's terminal event (an `EventSource` stops); 404 if no such run; `503` past [`AgUi::max_readers`] |
//! | `GET /runs/{threadId}/{runId}/state` | the run's current state as JSON; 404 if no such run |
//!
//! Event streams are `text/event-stream` with `Cache-Control: no-cache` and
//! `X-Accel-Buffering: no` (a proxy does not hold them back); each record's events are
//! written and flushed as the record is stored, a `: keep-alive` comment goes after 15 s of
//! quiet ([`AgUi::keep_alive`]), and the response ends after the run's terminal event, or when
//! the server drains ([`Server`](crate::streams::Server)), at an event boundary.
//!
//! The router stands on the [live layer](crate::live) as the streams router does: every
//! answer (every verb, route and status, errors and 404s included) carries the same headers
//! ([`live::headers`](crate::live::headers): `X-Content-Type-Options: nosniff`,
//! `Cross-Origin-Resource-Policy: cross-origin`), and every request is counted in
//! `chord_requests_total` and `chord_request_seconds` with the kinds `ag_ui_run`,
//! `ag_ui_events` and `ag_ui_state`; event streams count in `chord_sse_open`,
//! `chord_sse_ended_total` and `chord_stream_readers`, and reads behind the tail cache in
//! `chord_cache_misses_total` (see the [`streams`](crate::streams) module's metrics table).
//!
//! **Bad input** is refused with a plain-text reason, never a panic, and starts nothing:
//! `415` for a body that is not `application/json`, `413` for one over
//! [`AgUi::body_limit`] (1 MiB by default; a larger `Content-Length` is refused before a byte
//! is read), `408` for one that does not arrive within [`AgUi::body_timeout`], `400` for JSON
//! that is not a `RunAgentInput` (the reason names the field and position) or has an empty,
//! overlong or control-character id ([`RunAgentInput::check`]), and for a malformed or unknown
//! `Last-Event-ID`, and for JSON that names a member twice (as everywhere in chord). Unknown
//! fields of the input are ignored, so a newer client is not refused.
//!
//! **The client's state arrives typed.** A `state` that is absent, `null` or `{}` (what
//! `@ag-ui/client` sends when the application set none) starts the run with the initial
//! state ([`AgUi::with_initial`], or `T::default()`); any other is read into `T`, and the
//! run starts with it, or is refused with a `400` naming the field
//! (``the state does not fit this agent's state: `state.plan[1]`: invalid type: ...``), before
//! anything is stored.
//!
//! # Bounds
//!
//! | bound | default | past it |
//! | --- | --- | --- |
//! | runs in flight | 64 ([`AgUi::max_runs`]) | `503` with `Retry-After: 1`, nothing started |
//! | open event streams | 1,024 ([`AgUi::max_readers`]) | `503` with `Retry-After: 1` |
//! | a `RunAgentInput` | 1 MiB ([`AgUi::body_limit`]) | `413`, before a byte is read when announced |
//!
//! Each agent runs on a thread of its own (an agent blocks: a model's step takes seconds),
//! never on the blocking pool that serves the endpoint's store reads, so `/state` and the
//! events of every run answer while every run slot is taken. An open event stream costs the
//! same whatever the state's size: the events of each record are made once and shared by
//! every reader (see [the run's log](#the-runs-log)), and a reader at the tail holds no copy
//! of the state (`chord/tests/ag_ui_memory.rs` holds 400 open streams of a run with a 1 MB
//! state under 64 MiB above idle, and prints what they hold).
//!
//! **Authorization.** [`AgUi::authorize`] takes a hook like
//! [`Streams::reads`](crate::streams::Streams::reads): it sees each request's head
//! ([`RunRequest`]: what it asks, the run its URL names, the URI and headers) before any of
//! its body is read, and answers an [`Access`](crate::streams::Access). A refusal is a `401`
//! or `403` and closes the connection. The router adds no CORS layer: a page on another
//! origin needs one (`tower_http::cors::CorsLayer` around the router) that allows the
//! `content-type` and `last-event-id` request headers.
//!
//! # The run's log
//!
//! A run is stored in the log at `Address::new("ag-ui/" + threadId, runId)`
//! ([`AgUi::namespace`]) as one tracked value, its [`Envelope`]: the ids, the state, the text
//! messages, the [`Outcome`]. The event stream is a view of that log, not a channel of its
//! own: each record's ops turn into events, read by a mirror of the envelope (one per run,
//! carried by the run's tail cache: the first reader to reach a record makes its events,
//! and every other reader is sent the same bytes; a reader behind the cache, or resuming,
//! holds a mirror of its own until it catches up):
//!
//! - the first record (the whole envelope) is `RUN_STARTED`, `STATE_SNAPSHOT`, and the text
//!   events of any message it holds;
//! - the state's ops of a record are one `STATE_DELTA`, built by a [`Patcher`] (below);
//! - a new message is `TEXT_MESSAGE_START` (and `TEXT_MESSAGE_CONTENT` of any text it starts
//!   with), an append to its text a `TEXT_MESSAGE_CONTENT` with exactly the appended text, the
//!   message ended a `TEXT_MESSAGE_END`: the text is stored as appends and sent once, never
//!   inside a state delta;
//! - the outcome is `RUN_FINISHED` or `RUN_ERROR`, whose `code` says what failed
//!   ([`codes`]): `AGENT_FAILED` (the agent returned an error, or [`Run::fail`]),
//!   `AGENT_PANICKED`, `PRODUCER_GONE` (the server running the agent stopped first),
//!   `LOG_UNREADABLE` (the run's log cannot be read; sent, not stored);
//! - a checkpoint (the whole envelope again, written by the [`checkpoint`](AgUi::checkpoint)
//!   policy so that a resume reads back a bounded stretch) equal to the mirror gives nothing;
//!   one that differs gives what differs.
//!
//! Every stream of a run is made from the same records by the same rules, so every client is
//! sent the same events, whenever it connects.
//!
//! # Resume
//!
//! AG-UI itself has no resume: a client whose connection drops loses the run. Here each
//! event's SSE `id` names its place in the log, `<offset>:<k>`: the record's offset (as
//! [`Offset`](crate::streams::Offset) spells it, 16 hexadecimal digits) and the event's index
//! among that record's events. A reader that starts at a checkpoint other than the run's first
//! record is sent that checkpoint's events as a start (`RUN_STARTED`, the snapshot, the text
//! so far), where a reader that had the record before it is sent only what changed; the
//! start's events are numbered from `k` = 500,000,000, so that an id names one event of one
//! of the two lists. A client that reconnects with `Last-Event-ID: <offset>:<k>`
//! is sent the events after it: the rest of that record's, then the later records'. It is
//! not sent `RUN_STARTED` again (it is still in its run), and text in flight goes on from
//! the next token: no event twice, none missing. An id that is the run's terminal event is
//! answered `204 No Content`: nothing follows, and a browser's `EventSource` stops instead
//! of reconnecting every few seconds. It reconnects either way:
//!
//! - `POST /` with the same `RunAgentInput` (the same `threadId` and `runId`) and the
//!   `Last-Event-ID` header: the run exists, so no second agent starts;
//! - `GET /runs/{threadId}/{runId}` with the header: what a browser's `EventSource` does by
//!   itself when its connection drops.
//!
//! The log is the truth, so a resume works on another server over the same log, or on this
//! one after a restart: the view is rebuilt from the last checkpoint before the id. A run
//! whose agent was running when its server stopped cannot go on; over a store only this
//! process writes (a JSONL file, SQLite), the next request for it ends it with a `RUN_ERROR`
//! saying so. An id that names no event of the run is a `400`; one whose records were
//! compacted away a `410` (start again without it).
//!
//! **What stays resumable** is what the log keeps: its [`Retention`](crate::streams::Retention)
//! counts each run's bases (its first record and its checkpoints), so with the default
//! retention (4 bases) and [checkpoint policy](AgUi::checkpoint) (a base every 256 KiB of a
//! run's changes), the ids of at least the last three checkpoint intervals (3 × 256 KiB of
//! changes) resume, and older ones are `410`. Build the log with the retention the longest
//! run needs (`LogBuilder::new().retention(Retention::Bases(64))`, as the example does); a
//! client that connects without an id is served from the oldest base kept: `RUN_STARTED`,
//! the state then, the text so far, and the rest. A response also ends without a terminal
//! event when the server drains ([`Server`](crate::streams::Server)) or after
//! [`AgUi::lifetime`]: the client resumes from its last id.
//!
//! # A React page with the official client
//!
//! `@ag-ui/client`'s `HttpAgent` posts the input and applies the events to its own `state`
//! and `messages`. `ResumableHttpAgent` (from the JavaScript package's `chord-replica/ag-ui`
//! entry, below) is an `HttpAgent` that also resumes; the page shows the guide's `Research`
//! state:
//!
//! ```text
//! import { ResumableHttpAgent } from "chord-replica/ag-ui";
//! import { useEffect, useState } from "react";
//!
//! export function Research() {
//!   const [state, setState] = useState<any>({});
//!   const [answer, setAnswer] = useState("");
//!   useEffect(() => {
//!     const agent = new ResumableHttpAgent({ url: "http://127.0.0.1:8788/", reconnect: { retries: 10 } });
//!     agent.addMessage({ id: crypto.randomUUID(), role: "user", content: "What is AG-UI?" });
//!     const { unsubscribe } = agent.subscribe({
//!       onStateChanged: ({ state }) => setState(state),
//!       onMessagesChanged: ({ messages }) =>
//!         setAnswer(messages.filter((m) => m.role === "assistant").map((m) => m.content).join("")),
//!     });
//!     agent.runAgent();
//!     return unsubscribe;
//!   }, []);
//!   return (
//!     <main>
//!       <ol>{(state.plan ?? []).map((s: any) => <li key={s.title}>{s.done ? "✓" : "…"} {s.title}</li>)}</ol>
//!       <p>{answer}</p>
//!     </main>
//!   );
//! }
//! ```
//!
//! **Resuming from the page.** `HttpAgent` ends a run whose connection dropped. The
//! JavaScript package's `chord-replica/ag-ui` entry has `ResumableHttpAgent`, an `HttpAgent`
//! (same constructor, same subscribers, `@ag-ui/client` as a peer dependency) whose requests
//! remember the last event `id` and, when the connection drops or the response ends before
//! `RUN_FINISHED` or `RUN_ERROR`, post the same input again with `Last-Event-ID` after a
//! backoff, feeding the new response's events to the same client: its state and messages end
//! as if nothing had dropped (`agent.reconnects` counts the resumptions). With a plain
//! `new HttpAgent({ url })` the page works the same but for the resumption; a run that cannot
//! be resumed ends with a `RUN_ERROR` whose code is `RESUME_FAILED`. The repository's
//! `js/README.md` (*AG-UI*) has the details and a fuller page. A browser's `EventSource` on
//! `GET /runs/{threadId}/{runId}` resumes by itself.
//!
//! # Patches
//!
//! AG-UI carries an agent's shared state as one `STATE_SNAPSHOT` event followed by
//! `STATE_DELTA` events, each an [RFC 6902](https://www.rfc-editor.org/rfc/rfc6902) JSON
//! Patch that the client applies to the state it holds. A [`Tracker`](crate::Tracker)
//! already knows each change as an op when it is made; [`Patcher`] turns each flush's ops
//! into the JSON Patch of a `STATE_DELTA`, with no diffing of snapshots, and a patch that
//! applies strictly to what the client holds.
//!
//! The operations are the [`json_patch`] crate's ([`json_patch::PatchOperation`]), Rust's
//! common RFC 6902 types rather than ones of chord's own; the same crate applies patches
//! strictly, which is how the tests check them. [`Patcher::patch`] returns a `Vec` of them,
//! what an event's `delta` field holds, and what [`json_patch::patch`] takes; serialized, it
//! is the RFC's JSON array (wrap it in [`json_patch::Patch`] for that crate's `Display`).
//!
//! ```
//! use chord::{ag_ui::Patcher, track};
//! use serde_json::json;
//!
//! let mut tracker = track(json!({"plan": ["search"], "answer": ""}));
//! let snapshot = match tracker.flush().unwrap().remove(0) {
//!     chord::Op::Replace(v) => v, // the first flush is a base batch: the STATE_SNAPSHOT
//!     _ => unreachable!(),
//! };
//! let mut patcher = Patcher::new(snapshot.clone());
//! tracker.edit(|v| v["plan"].as_array_mut().unwrap().push(json!("answer")));
//! let delta = patcher.patch(&tracker.flush().unwrap()).unwrap();
//! assert_eq!(
//!     serde_json::to_string(&delta).unwrap(),
//!     r#"[{"op":"add","path":"/plan/-","value":"answer"}]"#,
//! );
//! // What a client does with the STATE_DELTA:
//! let mut client = snapshot;
//! json_patch::patch(&mut client, &delta).unwrap();
//! assert_eq!(&client, patcher.value());
//! ```

#[cfg(feature = "ag-ui")]
mod config;
mod events;
#[cfg(feature = "ag-ui")]
mod framing;
mod patch;
mod pointer;
#[cfg(feature = "ag-ui")]
mod router;
#[cfg(feature = "ag-ui")]
mod start;

#[cfg(feature = "ag-ui")]
#[cfg_attr(docsrs, doc(cfg(feature = "ag-ui")))]
pub use self::config::{AgUi, RunRequest, RunRequestKind};
pub use self::events::{
    Context, Event, InputError, InputMessage, RunAgentInput, Tool, MAX_ID_BYTES,
};
pub use self::patch::{PatchError, Patcher};
#[cfg(feature = "ag-ui")]
#[cfg_attr(docsrs, doc(cfg(feature = "ag-ui")))]
pub use crate::runs::AgentError;
pub use crate::runs::{codes, Envelope, MessageId, Outcome, Run, TextMessage};
