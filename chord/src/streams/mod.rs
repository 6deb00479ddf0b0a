//! Durable Streams: every address's log served over HTTP, resumable from any offset.
//!
//! The [Durable Streams protocol] reads an append-only, offset-addressed stream at a URL by
//! catch-up, long-poll or Server-Sent Events. chord serves each address's durable log as one
//! such stream (`application/json`; each message is one wire batch, exactly as stored), at
//! [`ROUTE`]:
//!
//! - [`Log`] wraps a [`Store`](crate::store::Store): the producer writes through it (a
//!   [`LogWriter`](crate::store::LogWriter) or [`Durable`](crate::store::Durable) over a
//!   clone), the server reads through it. Its tail cache holds each address's newest records,
//!   their SSE events framed once: every reader at the tail is sent the same bytes, and no
//!   reader has an encoder of its own.
//! - [`Offset`]s are the log's seqs, 16 hexadecimal digits: opaque to clients, sorted as the
//!   log is.
//! - A fresh reader starts at the latest base batch: the offset named by
//!   [`BASE_OFFSET_HEADER`] (`Chord-Base-Offset`) on every response, `HEAD` included. A
//!   reader resuming from an offset it was handed gets the records after it, no base batch.
//! - [`Retention`] says how many base batches stay readable; an offset before the oldest
//!   answers `410 Gone`, and the client restarts from the latest base.
//! - [`Streams`] is the axum router: the read path for every backend, the write side off
//!   unless enabled with an authorization hook. With a [`Backend`] ([`Memory`]) it is a full
//!   Durable Streams server for streams that are not chord logs: any content type, close,
//!   `DELETE`, idempotent producers, TTL and expiry, forks
//!   ([`Streams::backend`](Streams::backend)). [`serve`] (or a configured [`Server`]) runs
//!   it with each connection's kernel send buffer capped.
//!
//! [Durable Streams protocol]: https://github.com/durable-streams/durable-streams
//!
//! # Example
//!
//! ```no_run
//! use chord::store::{Checkpoint, JsonlStore, LogWriter};
//! use chord::streams::{serve, Log, Streams};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let log = Log::new(JsonlStore::open("agent.jsonl", Default::default())?);
//! let writer = LogWriter::new(log.clone(), Checkpoint::EveryBytes(256 * 1024));
//! // ... the producer appends through `writer` (or a `Durable` over it) ...
//! let app = Streams::new(&log).router(); // GET /streams/{namespace}/{key}?offset=..&live=sse
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, app, std::future::pending()).await?;
//! # drop(writer);
//! # Ok(())
//! # }
//! ```

mod compaction;
mod frame;
mod generic;
mod log;
mod memory;
mod offset;
mod retention;
mod router;
mod server;
mod tail;
mod write;

pub use self::compaction::Compaction;
pub use self::log::{Builder, Log, DEFAULT_FOLLOW_IDLE, DEFAULT_TAIL_BYTES, DEFAULT_TAIL_RECORDS};
pub use self::memory::{
    Backend, Full, Memory, Stream, DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAM_BYTES,
};
pub use self::offset::{BadOffset, Offset};
pub use self::retention::Retention;
pub use self::router::{
    stream_path, Streams, BASE_OFFSET_HEADER, DEFAULT_CACHE_CONTROL, DEFAULT_KEEP_ALIVE,
    DEFAULT_LONG_POLL, DEFAULT_SSE_LIFETIME, MAX_NAME, ROUTE, WRITE_BODY_LIMIT,
};
pub use self::server::{serve, Server, DEFAULT_SEND_BUFFER};
pub use self::write::{Write, WriteRequest};
