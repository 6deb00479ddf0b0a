//! [`Subscription`]: one subscriber's view of a value's stream.

use std::fmt;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::sync::mpsc;

use super::stream::{Inner, Stream};
use super::{Address, Batch, Signal};
use crate::{Encoder, Op};

/// One subscriber's view of a value's stream: a base batch, then every batch published after
/// it, in order. Read it as ops with [`recv`](Subscription::recv) (an in-process consumer) or
/// as wire text with [`recv_wire`](Subscription::recv_wire) (a transport), one way for its
/// whole life: the subscription's own encoder sees only what `recv_wire` returns.
///
/// The stream ends (`None`) when the subscriber was cut for falling behind
/// ([`was_cut`](Subscription::was_cut)) or the value was [removed](super::Hub::remove):
/// resubscribe to start again from a base batch. Dropping the subscription unsubscribes.
pub struct Subscription {
    hub: Arc<Inner>,
    stream: Arc<Mutex<Stream>>,
    address: Address,
    id: u64,
    rx: mpsc::Receiver<Batch>,
    signal: Arc<Signal>,
    encoder: Encoder,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("address", &self.address)
            .field("id", &self.id)
            .field("queued", &self.rx.len())
            .field("cut", &self.was_cut())
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The subscription of subscriber `id`, just registered on `stream`.
    pub(super) fn new(
        hub: Arc<Inner>,
        stream: Arc<Mutex<Stream>>,
        address: Address,
        id: u64,
        rx: mpsc::Receiver<Batch>,
        signal: Arc<Signal>,
    ) -> Subscription {
        Subscription {
            hub,
            stream,
            address,
            id,
            rx,
            signal,
            encoder: Encoder::new(),
        }
    }

    /// The next batch, waiting for one; `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<Batch> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next batch encoded for the wire with this subscription's own encoder, as JSON
    /// text; `None` once the subscription has ended.
    pub async fn recv_wire(&mut self) -> Option<String> {
        let batch = self.recv().await?;
        Some(self.encode(&batch))
    }

    /// Polls for the next batch (for transports written as futures or bodies by hand).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Batch>> {
        if self.signal.is_fired() {
            return Poll::Ready(None);
        }
        self.rx.poll_recv(cx)
    }

    /// Encodes a batch received with [`poll_recv`](Subscription::poll_recv) with this
    /// subscription's encoder, as JSON text.
    pub fn encode(&mut self, batch: &[Op]) -> String {
        self.encoder.encode(batch).to_json()
    }

    /// Whether the hub cut this subscription for falling behind.
    pub fn was_cut(&self) -> bool {
        self.signal.is_fired()
    }

    /// The address subscribed to.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Batches waiting to be read.
    pub fn queued(&self) -> usize {
        self.rx.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(&self.address, &self.stream, self.id);
    }
}
