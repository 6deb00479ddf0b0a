//! A Rust replica: follows a value's Server-Sent Events stream over HTTP and keeps it current.
//!
//! [`Replica::connect`] starts a task that subscribes to a stream served by
//! [`sse`](crate::sse) (or anything speaking the same protocol), decodes each event with its
//! own [`Decoder`], and applies it. The value is readable at any time
//! ([`value`](Replica::value), [`value_as`](Replica::value_as)) and every change is announced
//! on a [`watch`] channel ([`watch`](Replica::watch)).
//!
//! On any break (the connection drops or stalls, the server answers an error, an event does
//! not decode or does not apply, the first batch is not a base batch) the replica resubscribes
//! after a short backoff and rebuilds from the new subscription's base batch with a fresh
//! decoder. Until then it keeps the last value it had, marked not [`live`](State::live).
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
mod error;
mod events;
mod follower;
mod handle;
mod state;
mod stats;
mod target;

pub use self::builder::{
    Builder, DEFAULT_BACKOFF_MAX, DEFAULT_BACKOFF_MIN, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_EVENT,
};
pub use self::error::Error;
pub use self::handle::Replica;
pub use self::state::State;
pub use self::stats::{Break, Stats};
