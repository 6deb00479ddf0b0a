//! chord turns mutations of typed application state into the smallest honest description of
//! what changed: a batch of ops that any replica can apply to stay equal to the producer,
//! streamed live, written to a durable log, and recovered after a crash.
//!
//! # Example
//!
//! ```
//! use chord::{apply, Decoder, Encoder, Tracked};
//! use serde::Serialize;
//!
//! #[derive(Tracked, Serialize, Default)]
//! struct Lane {
//!     text: String,
//!     transcript: Vec<Entry>,
//! }
//!
//! #[derive(Tracked, Serialize, Clone)]
//! struct Entry {
//!     role: String,
//! }
//!
//! // The producer mutates normally, through the tracker's proxies...
//! let mut lane = chord::track(Lane::default());
//! let mut encoder = Encoder::new(); // one per stream
//! let mut decoder = Decoder::new(); // on the replica's side
//! let mut replica = None;
//! for step in 0..3 {
//!     let mut state = lane.state();
//!     state.text += "tok ";                                      // ["a", ["text"], "tok "]
//!     state.transcript.insert(0, Entry { role: "user".into() }); // ["p", ["transcript"], 0, 0, [..]]
//!     // ...and each flush is the smallest batch of ops since the last one
//!     // (the first is a base batch, `["r", value]`).
//!     let ops = lane.flush()?;
//!     let wire = encoder.encode(&ops).to_json();
//!     apply(&mut replica, decoder.decode_str(&wire)?)?;
//!     assert_eq!(replica, Some(serde_json::to_value(lane.get())?));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Map
//!
//! - [`Tracked`] (derive and trait), [`track`], [`Tracker`], the proxies in [`proxy`]: intent
//!   recorded where it happens, flushed from a dirty tree.
//! - [`Op`], [`Path`], [`is_base`], [`display_batch`]: six verbs, always JSON tuples:
//!   `["r", v]`, `["s", path, v]`, `["d", path]`, `["a", path, text]`, `["t", path, n]`,
//!   `["p", path, index, remove, items]`.
//! - [`parse_batch`] and `Deserialize`: untrusted JSON is validated where it enters, with
//!   errors that name the op and what was wrong.
//! - [`apply`]: a strict, safe, atomic applier over [`serde_json::Value`], bounded by
//!   [`Limits`]. [`diff`]: the ops between two snapshots.
//! - [`Encoder`] / [`Decoder`] ([`wire`]): the per-stream codec that shortens paths.
//! - [`store`]: durable logs (JSONL, SQLite with the `sqlite` feature), recovery, and the
//!   checkpointed [`store::Durable`] tracker.
//! - `streams` (feature `streams`): every log served as a Durable Stream over HTTP, resumable
//!   from any offset it handed out; `replica` (feature `replica`): a Rust replica following one.
//!
//! # Features
//!
//! | feature | what it adds | dependencies it turns on |
//! | --- | --- | --- |
//! | `sqlite` | `store::SqliteStore`, the SQLite backend of the durable log | rusqlite (bundled SQLite) |
//! | `streams` | `streams::Streams`: every address's log served as a Durable Stream (catch-up, long-poll, SSE), with `streams::Log`'s tail cache | tokio runtime, axum, hyper (server), hyper-util, http-body, bytes, tower-service, socket2 |
//! | `replica` | `replica::Replica`: a Rust replica following a stream over plain HTTP/1, resuming from its offset | tokio runtime, hyper (client), hyper-util, http-body-util, bytes |
//! | `live` | `streams` + `replica` | |
//!
//! None is on by default: the core (tracking, the format, the codec, the applier, JSONL
//! logs) depends only on serde, serde_json and crc32c.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod apply;
mod diff;
mod error;
mod op;
mod overlap;
mod path;
pub mod proxy;
#[cfg(feature = "replica")]
#[cfg_attr(docsrs, doc(cfg(feature = "replica")))]
pub mod replica;
pub mod store;
#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
pub mod streams;
mod tracker;
mod utf16;
mod validate;
pub mod wire;

pub use crate::apply::{apply, apply_with, IntoOp, Limits};
pub use crate::diff::diff;
pub use crate::error::{Category, Error, ErrorKind, Result};
pub use crate::op::{display_batch, is_base, utf16_len, Op};
pub use crate::path::{NonEmptyPath, Path, Seg, MAX_PATH_SEGMENTS, RESERVED};
pub use crate::tracker::js_safe::MAX_SAFE_INTEGER;
pub use crate::tracker::{track, Proxy, Tracked, Tracker};
pub use crate::validate::{batch_from_value, parse_batch};
pub use crate::wire::{Decoder, Encoder, PathRef, WireBatch, WireOp, MAX_IDS, MAX_ID_PATH_UNITS};
pub use chord_derive::Tracked;

#[doc(hidden)]
pub mod __private;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
