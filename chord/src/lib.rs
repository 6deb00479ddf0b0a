//! chord turns mutations of typed application state into the smallest honest description of
//! what changed: a batch of ops that any replica can apply to stay equal to the producer.
//!
//! This crate holds the data boundary every part of chord shares:
//!
//! - [`Op`]: six verbs, always JSON tuples: `["r", v]`, `["s", path, v]`, `["d", path]`,
//!   `["a", path, text]`, `["t", path, n]`, `["p", path, index, remove, items]`.
//! - [`parse_batch`] and `Deserialize`: untrusted JSON is validated where it enters, with
//!   errors that name the op and what was wrong.
//! - [`apply`]: a strict, safe, atomic applier over [`serde_json::Value`].
//! - [`Encoder`] / [`Decoder`]: the per-stream wire codec that shortens paths.
//!
//! # Example
//!
//! ```
//! use chord::{apply, path, Decoder, Encoder, Op};
//! use serde_json::json;
//!
//! // A producer's batches (the tracker builds these from ordinary mutations).
//! let batches = vec![
//!     vec![Op::Replace(json!({"text": "", "transcript": []}))],
//!     vec![Op::Append(path!["text"], "Hel".into())],
//!     vec![Op::Append(path!["text"], "lo".into()),
//!          Op::Splice { path: path!["transcript"].into(), index: 0, remove: 0, items: vec![json!({"role": "user"})] }],
//! ];
//!
//! // One encoder per stream on the producer side, one decoder per stream on the replica.
//! let mut encoder = Encoder::new();
//! let mut decoder = Decoder::new();
//! let mut replica = None;
//! for batch in &batches {
//!     let wire = encoder.encode(batch).to_json();
//!     let ops = decoder.decode_str(&wire)?;
//!     apply(&mut replica, ops)?;
//! }
//! assert_eq!(replica, Some(json!({"text": "Hello", "transcript": [{"role": "user"}]})));
//! # Ok::<(), chord::Error>(())
//! ```
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
pub use crate::error::{Error, ErrorKind, Result};
pub use crate::op::{display_batch, is_base, utf16_len, Op};
pub use crate::path::{NonEmptyPath, Path, Seg, RESERVED};
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
