//! A Rust replica: follows a value's Durable Stream over HTTP and keeps it current.
//!
//! [`Replica::connect`] starts a task that reads a stream served by
//! [`streams`](crate::streams) (`live=sse`), decodes each batch with its own [`Decoder`], and
//! applies it. The value is readable at any time ([`value`](Replica::value),
//! [`value_as`](Replica::value_as)) and every change is announced on a [`watch`] channel
//! ([`watch`](Replica::watch)).
//!
//! It joins with one catch-up read of the latest base batch and what follows it
//! (`GET ?offset=base`: the server finds it, no `HEAD`), the same URL for every joiner and
//! answered under the server's cache policy, so that a cache in front of the server answers
//! many joiners with one request; it applies the answer's batches as they arrive, then reads
//! live (`live=sse`) from the answer's `Stream-Next-Offset`, and is [`live`](State::live)
//! once that read answers. A base batch equal to the value held (a join, a restart, a
//! producer's restart) leaves the value as it is, and watchers are not told. A
//! `data` event is applied together with the `control` event after it, whose
//! `streamNextOffset` the replica keeps. When the connection drops, stalls, or the server
//! ends it (every minute, as the protocol advises), the replica reconnects after a short
//! backoff and *resumes* from that offset with the same decoder: it receives only the batches
//! it missed, no base batch. It starts again with a fresh decoder (a catch-up at the latest
//! base, or at the base a `410`'s `Chord-Base-Offset` names) only
//! when the server answers `410 Gone` (the offset is before the oldest base kept) or `404`,
//! the server handed out an offset that is not one (a `streamNextOffset` outside the
//! protocol's grammar: it is never sent back), or a batch did not decode or apply
//! ([`Break::restarts`]). Meanwhile it keeps its value,
//! marked not [`live`](State::live).
//!
//! Plain `http://` only: put TLS in front of the server, or follow the stream with another
//! client and the same decoder and applier.
//!
//! # Example
//!
//! ```no_run
//! use chord::replica::Replica;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let replica = Replica::connect("http://127.0.0.1:8080/streams/lanes/main")?;
//! let mut changes = replica.watch();
//! while changes.changed().await.is_ok() {
//!     println!("{:?}", changes.borrow().value);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! [`Decoder`]: crate::Decoder
//! [`watch`]: tokio::sync::watch

mod builder;
mod catch_up;
mod error;
mod events;
mod follower;
mod handle;
mod offset;
mod settings;
mod state;
mod stats;
mod target;

pub use self::builder::Builder;
pub use self::error::Error;
pub use self::handle::Replica;
pub use self::state::State;
pub use self::stats::{Break, Stats};
