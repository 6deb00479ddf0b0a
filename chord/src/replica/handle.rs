//! [`Replica`]: the handle to a replica, reading what its follower keeps current.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::stats::Counters;
use super::{State, Stats};

/// A replica of one value, following its stream over HTTP; see the
/// [module docs](crate::replica).
///
/// Dropping it stops following.
pub struct Replica {
    pub(super) state: watch::Receiver<State>,
    pub(super) stats: Arc<Counters>,
    pub(super) task: JoinHandle<()>,
}

impl fmt::Debug for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("live", &self.is_live())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// The current value (a clone); `None` before the first base batch.
    pub fn value(&self) -> Option<Value> {
        self.state.borrow().value.clone()
    }

    /// The current value as `T`; `None` before the first base batch.
    ///
    /// # Errors
    ///
    /// The value does not deserialize as `T`.
    pub fn value_as<T: DeserializeOwned>(&self) -> Option<serde_json::Result<T>> {
        let state = self.state.borrow();
        let value = state.value.as_ref()?;
        Some(T::deserialize(value))
    }

    /// Whether the replica is following its stream now.
    pub fn is_live(&self) -> bool {
        self.state.borrow().live
    }

    /// A receiver that is notified of every change: each applied batch, and each change of
    /// [`live`](State::live).
    pub fn watch(&self) -> watch::Receiver<State> {
        self.state.clone()
    }

    /// Waits until `done` holds for the replica's state, and returns that state.
    pub async fn wait_until(&self, mut done: impl FnMut(&State) -> bool) -> State {
        let mut state = self.state.clone();
        let found = match state.wait_for(|s| done(s)).await {
            Ok(s) => s.clone(),
            // The follower only stops when the replica is dropped, and `self` is alive.
            Err(_) => self.state.borrow().clone(),
        };
        found
    }

    /// Counters: subscriptions, batches, breaks and the last break's reason.
    pub fn stats(&self) -> Stats {
        self.stats.snapshot()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.task.abort();
    }
}
