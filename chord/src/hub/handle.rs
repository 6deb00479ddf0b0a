//! [`Hub`]: the handle producers publish through and subscribers subscribe through.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::stream::Inner;
use super::{Address, Builder, Published, Signal, Stats, Subscription};
use crate::{Op, Result};

/// Live streams of values, addressed like the durable log, fanned out to subscribers.
///
/// Cloning a hub is cheap and gives another handle to the same streams. See the
/// [module documentation](crate::hub) for the guarantees.
///
/// Cost: [`publish`](Hub::publish) applies the batch once and then does `O(subscribers)`
/// queue pushes of one shared pointer; encoding happens on each subscriber's side, in
/// [`Subscription::recv_wire`]. [`subscribe`](Hub::subscribe) clones the current value.
#[derive(Clone)]
pub struct Hub {
    pub(super) inner: Arc<Inner>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("queue", &self.inner.queue)
            .field("loader", &self.inner.loader.is_some())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Hub {
    /// A hub with the default queue length and no loader.
    pub fn new() -> Hub {
        Builder::default().build()
    }

    /// Configures a hub: queue length, loader.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Publishes one flushed batch of the value at `address`: applies it to the value the hub
    /// holds, then queues it for every subscription, cutting those whose queue is full. An
    /// empty batch does nothing. Never waits for a subscriber.
    ///
    /// The first batch published to an address must be a base batch (a tracker's first
    /// flush is one).
    ///
    /// # Errors
    ///
    /// The batch does not apply to the value the hub holds (the producer and the hub
    /// disagree, or the first batch is not a base batch). Nothing is delivered then and the
    /// value is unchanged: publish a base batch (`tracker.rebase()`, then flush) to recover.
    pub fn publish(&self, address: &Address, batch: &[Op]) -> Result<Published> {
        self.inner.publish(address, batch)
    }

    /// Subscribes to the value at `address`. The subscription's first batch is a base batch
    /// with the current value; every batch published after it follows, in order.
    ///
    /// A value that is not live is asked of the [loader](Builder::loader). `None` when
    /// neither the hub nor the loader knows the address.
    pub fn subscribe(&self, address: &Address) -> Option<Subscription> {
        self.subscribe_with(address, Arc::new(Signal::default()))
    }

    /// [`subscribe`](Hub::subscribe), firing `signal` when the subscription is cut (the SSE
    /// binding passes its connection's, so a cut closes the connection at once).
    pub(crate) fn subscribe_with(
        &self,
        address: &Address,
        signal: Arc<Signal>,
    ) -> Option<Subscription> {
        self.inner.subscribe(address, signal, true)
    }

    /// [`subscribe_with`](Hub::subscribe_with) without asking the loader: `None` for a value
    /// that is not live. Never blocks on anything but the hub's own short locks.
    #[cfg(feature = "sse")]
    pub(crate) fn subscribe_live(
        &self,
        address: &Address,
        signal: Arc<Signal>,
    ) -> Option<Subscription> {
        self.inner.subscribe(address, signal, false)
    }

    /// Whether a loader is set.
    #[cfg(feature = "sse")]
    pub(crate) fn has_loader(&self) -> bool {
        self.inner.loader.is_some()
    }

    /// The current value at `address`, if it is live (or loaded for a subscriber).
    pub fn get(&self, address: &Address) -> Option<Value> {
        self.inner.get(address)
    }

    /// The addresses the hub holds, sorted.
    pub fn addresses(&self) -> Vec<Address> {
        self.inner.addresses()
    }

    /// How many subscriptions of `address` are open.
    pub fn subscribers(&self, address: &Address) -> usize {
        self.inner.subscribers(address)
    }

    /// Forgets the value at `address` and ends its subscriptions (their subscribers will
    /// find it gone, or ask the loader, when they resubscribe). Whether it was there.
    pub fn remove(&self, address: &Address) -> bool {
        self.inner.remove(address)
    }

    /// Counters: streams, open subscriptions, batches published, subscriptions cut.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
