//! chord runs for the [Vercel AI SDK](https://ai-sdk.dev)'s `useChat`: a Rust agent with a
//! typed, tracked state answers the SDK's UI message stream, its text as text parts, its state
//! as data parts, and a stream that resumes from where the client is, on any node.
//!
//! `useChat` posts `{id, messages, trigger, messageId}` and reads Server-Sent Events, each
//! `data:` a chunk (`start`, `text-start`, `text-delta`, `text-end`, `data-<name>`, `finish`,
//! `error`), the last followed by `data: [DONE]`, under the header
//! `x-vercel-ai-ui-message-stream: v1`. [`AiSdk`] is the axum router that serves exactly that
//! from a chord log, with the same [`Run`] handle and the same run layer as the AG-UI door
//! ([`ag_ui`](crate::ag_ui)): one run of a chat is one tracked [`Envelope`] in the log, and
//! every response is a framing of that log.
//!
//! # The chunks of a run
//!
//! - **start**: `start` with the run's id as `messageId`, then the state whole as the data part
//!   `data-state` (id `state`);
//! - **each flush**: the state's ops as one *transient* data part `data-chord`, whose `data` is
//!   chord's batch (`[["a",["answer"],"tok"]]`): a token appended to a state field costs the
//!   token, not the field (`onData` receives it; it is not kept in the message);
//!   the text appended to a message as `text-delta` with exactly the appended text;
//! - **end**: `data-state` again with the final state (a data part with the same id replaces
//!   the earlier one, so the finished message holds the state once), then `finish`; or
//!   `error` whose `errorText` says what failed (`AGENT_FAILED: ...`, `PRODUCER_GONE: ...`).
//!
//! Each event's SSE `id` is `<offset>:<k>`: the record's offset in the run's log and the
//! chunk's index among that record's (one flush gives several chunks), as in the AG-UI door.
//!
//! # Chats and runs
//!
//! A chat's runs are stored at `Address::new("ai-sdk/" + chatId, "t1")`, `"t2"`, ... (one a
//! turn: the run's id, and the assistant message's), and the chat's index at
//! `Address::new("ai-sdk/" + chatId, "chat")` counts them: any node reads the index to find
//! the chat's latest run. A `POST` starts the next run (its agent gets a [`ChatInput`] with
//! the last user message's text; the rest of the body's history is not kept: the log has
//! it) unless the latest run is still running, which is a `409` (resume it instead). Two
//! `POST`s of one chat racing on one node start one run, and the other is told `409`; on two
//! nodes the store's one writer of the chat's index orders them (a PostgreSQL store refuses
//! the second writer, which is answered `409` too).
//! `trigger: "regenerate-message"` starts the next run too, with [`Trigger::Regenerate`] (the
//! agent answers the same user message again; the new run has a `messageId` of its own).
//!
//! # Resume
//!
//! `GET /{chatId}/stream` answers the latest run's stream:
//!
//! - **with `Last-Event-ID`** (chord's transport, `chord-replica/ai-sdk`'s
//!   `ChordChatTransport`, after a cut): exactly the chunks after that one (the rest of its
//!   record's chunks, then the later records'; nothing twice), from any node;
//! - **without one** (the SDK's default transport, a reloaded page): the run as it stands,
//!   compactly (`start` with the run's `messageId`, the state whole in one `data-state`,
//!   each message's `text-start` and its text so far in one `text-delta`), then the rest as
//!   it comes. The default transport takes it as a replay of the message (it resets the
//!   message at `start`), so nothing appears twice. The ids of these chunks are
//!   `<offset>:<500000000 + k>`: a client cut inside them resumes exactly too. Their frames
//!   are made once per record and shared by every client that starts there (the tail
//!   cache's start slot), from the run's mirror; otherwise from the log back to its last
//!   checkpoint;
//! - `204` when the chat has no run in progress: none, or its latest ended more than
//!   [`AiSdk::replay_window`] ago (15 s by default, measured from when the run's last record
//!   reached the answering node). Within the window an ended run is sent as above, ending
//!   with its `finish` or `error`, so that a client cut just before the end learns how it
//!   ended.
//!
//! A run whose producer stopped with its server (over a store one process writes: JSONL,
//! SQLite) is ended when the restarted server is first asked for it, with an `error` chunk
//! `PRODUCER_GONE: ...`; the chat's next `POST` starts a new run. Over a store several
//! processes write (PostgreSQL), a run's producer may live on another node, and no node can
//! tell a gone producer from a slow one: such a run's stream stays open until its producer,
//! or whoever ends it (a [`Run`] over the same address), writes its end. There is no
//! producer lease yet.
//!
//! # Authorization
//!
//! [`AiSdk::authorize`] takes a hook that sees each request ([`ChatRequest`]: what it asks,
//! the chat its URL names, the URI and headers) before its body is read, and answers an
//! [`Access`](crate::live::Access): a refused request is `401` or `403` with an empty body.
//!
//! # The client
//!
//! The JavaScript package's `chord-replica/ai-sdk` entry has `ChordChatTransport` (a
//! `ChatTransport` for `useChat` that sends only the last message and resumes a cut stream
//! by itself after the last id it received) and `createChatState` (the state as a typed
//! replica fed by `onData`, read with `useChord` a part at a time). `cargo run --example
//! ai_sdk_chat` serves a scripted agent and a React page using both.
//!
//! # Routes
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /` | the next run of the chat started, its chunks; `409` while a run of the chat is running or starting; `503` past [`AiSdk::max_runs`] or [`AiSdk::max_readers`] |
//! | `GET /{chatId}/stream` | the latest run's chunks: after `Last-Event-ID` when sent, else the run as it stands and what follows; `204` when none is in progress |
//! | `GET /{chatId}/state` | the latest run's state as JSON; `404` for a chat with no run |
//!
//! Bad input is refused with a plain-text reason, never a panic, and starts nothing: `415`
//! for a body that is not `application/json`, `413` over [`AiSdk::body_limit`] (announced
//! lengths refused before a byte is read), `408` for a body that does not arrive within
//! [`AiSdk::body_timeout`], `400` for JSON that is not a `useChat` body (naming what is
//! wrong), names a member twice, or a malformed or unknown `Last-Event-ID`. Every answer
//! carries the live layer's headers ([`live::headers`](crate::live::headers)) and every
//! request is counted in the request metrics, with the kinds `ai_sdk_chat`,
//! `ai_sdk_stream` and `ai_sdk_state`.
//!
//! ```no_run
//! use chord::ai_sdk::{AiSdk, ChatInput};
//! use chord::ag_ui::{AgentError, Run};
//! use chord::store::{JsonlStore, Store};
//! use chord::streams::{serve, Log};
//! # use chord::Tracked;
//! # use serde::{Deserialize, Serialize};
//! #[derive(Tracked, Serialize, Deserialize, Default)]
//! struct Research { answer: String, steps: u32 }
//!
//! fn agent<S: Store>(input: &ChatInput, run: &mut Run<Research, S>) -> Result<(), AgentError> {
//!     let message = run.start_message();
//!     for token in ["You ", "said: ", input.text.as_str()] {
//!         run.append(&message, token); // a text-delta
//!         run.state().answer += token; // a transient data-chord part
//!         run.flush()?;
//!     }
//!     Ok(())
//! }
//!
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! let log: Log<JsonlStore> = Log::new(JsonlStore::open("chats.jsonl", Default::default())?);
//! let app = axum::Router::new().nest("/api/chat", AiSdk::new(&log, agent).router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! serve(listener, app, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`Run`]: crate::ag_ui::Run
//! [`Envelope`]: crate::ag_ui::Envelope

mod chat;
mod framing;
mod router;

pub use self::chat::{ChatInput, Trigger, MAX_CHAT_ID_BYTES};
pub use self::router::{AiSdk, ChatRequest, ChatRequestKind};
