//! The hub: live streams of tracked values, fanned out to any number of subscribers.
//!
//! A producer [`publish`](Hub::publish)es each flushed batch once, under the value's
//! [`Address`]. The hub applies it to the current value it holds and hands it to every
//! [`Subscription`] of that address. Each subscription:
//!
//! - starts with a base batch (`[["r", current]]`), taken atomically with its registration, so
//!   every batch published after it follows in order, nothing lost or duplicated in between;
//! - owns its [`Encoder`]: a late subscriber never receives an id it has not seen defined;
//! - has a bounded queue. A subscriber that falls more than [`Builder::queue`] batches
//!   behind is *cut*: its subscription ends, and it resubscribes to start again from a base
//!   batch. Publishing never waits for a subscriber and never buffers without limit.
//!
//! A value that is not live (no producer has published it since the hub started) can still
//! be subscribed to when a [loader](Builder::loader) knows it, for instance by recovering it
//! from the durable log: the subscription starts from the recovered state.
//!
//! # Example
//!
//! ```
//! use chord::hub::Hub;
//! use chord::store::Address;
//! use chord::{apply, track, Decoder};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let hub = Hub::new();
//! let lane = Address::new("lanes", "main");
//! let mut state = track(json!({"text": ""}));
//! hub.publish(&lane, &state.flush()?)?; // the first flush is a base batch
//!
//! let mut sub = hub.subscribe(&lane).expect("the lane is live");
//! state.state().member("text").unwrap().push_str("Hello")?;
//! hub.publish(&lane, &state.flush()?)?;
//!
//! // A replica decodes the subscription's wire batches with its own decoder.
//! let (mut decoder, mut replica) = (Decoder::new(), None);
//! for _ in 0..2 {
//!     let wire = sub.recv_wire().await.expect("the subscription is open");
//!     apply(&mut replica, decoder.decode_str(&wire)?)?;
//! }
//! assert_eq!(replica, Some(json!({"text": "Hello"})));
//! # Ok::<(), chord::Error>(())
//! # }).unwrap();
//! ```
//!
//! [`Encoder`]: crate::Encoder

mod builder;
mod handle;
mod signal;
mod stats;
mod stream;
mod subscription;

pub use self::builder::{Builder, DEFAULT_QUEUE};
pub use self::handle::Hub;
pub(crate) use self::signal::Signal;
pub use self::stats::{Published, Stats};
pub use self::stream::Batch;
pub use self::subscription::Subscription;
pub use crate::store::Address;
