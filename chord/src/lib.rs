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
//!     lane.state().text().push_str("tok ");                                  // ["a", ["text"], "tok "]
//!     lane.state().transcript().insert(0, Entry { role: "user".into() })?;   // ["p", ["transcript"], 0, 0, [..]]
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
//! - With the `sse` feature: `hub` (fan-out to subscribers, each with its own encoder), `sse`
//!   (a Server-Sent Events endpoint) and `replica` (a Rust replica over HTTP).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod apply;
mod diff;
mod error;
#[cfg(feature = "sse")]
pub mod hub;
mod op;
mod overlap;
mod path;
pub mod proxy;
#[cfg(feature = "sse")]
pub mod replica;
#[cfg(feature = "sse")]
pub mod sse;
pub mod store;
mod tracker;
mod utf16;
mod validate;
pub mod wire;

pub use crate::apply::{apply, apply_with, IntoOp, Limits};
pub use crate::diff::diff;
pub use crate::error::{Category, Error, ErrorKind, Result};
pub use crate::op::{display_batch, is_base, utf16_len, Op};
pub use crate::path::{NonEmptyPath, Path, Seg, MAX_PATH_SEGMENTS, RESERVED};
pub use crate::tracker::{track, Proxy, Tracked, Tracker};
pub use crate::validate::{batch_from_value, parse_batch};
pub use crate::wire::{Decoder, Encoder, PathRef, WireBatch, WireOp};
pub use chord_derive::Tracked;

#[doc(hidden)]
pub mod __private;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
