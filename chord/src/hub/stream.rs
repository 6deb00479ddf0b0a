//! The per-address state behind a hub: each value, its subscribers, and the locking that keeps
//! publishing, subscribing, unsubscribing and removal consistent with each other.
//!
//! Lock order: the map of streams, then a stream; never the other way round.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::{Address, Published, Signal, Stats, Subscription};
use crate::{apply, Op, Result};

/// One published batch, shared by every subscription that receives it.
pub type Batch = Arc<[Op]>;

/// Finds the state of a value that is not live, e.g. by recovering it from the durable log.
pub(super) type Loader = Arc<dyn Fn(&Address) -> Option<Value> + Send + Sync>;

/// What every handle to a hub, and every subscription, shares.
pub(super) struct Inner {
    streams: RwLock<HashMap<Address, Arc<Mutex<Stream>>>>,
    pub(super) queue: usize,
    pub(super) loader: Option<Loader>,
    next_id: AtomicU64,
    subscribers: AtomicUsize,
    published: AtomicU64,
    cut: AtomicU64,
}

/// One value and its subscribers.
pub(super) struct Stream {
    /// `None` only for a stream whose first publish failed to apply.
    value: Option<Value>,
    subscribers: Vec<Subscriber>,
    /// Whether a producer has published here, rather than only a loader having filled it.
    published: bool,
    /// Set once the stream has left the hub's map: nothing may join it any more.
    removed: bool,
}

/// The hub's side of one subscription: where to queue batches, and what to fire on a cut.
struct Subscriber {
    id: u64,
    tx: mpsc::Sender<Batch>,
    signal: Arc<Signal>,
}

/// Locks a mutex, shrugging off poisoning: every critical section here leaves the stream
/// consistent before anything that could panic.
fn lock(stream: &Mutex<Stream>) -> MutexGuard<'_, Stream> {
    stream.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    pub(super) fn new(queue: usize, loader: Option<Loader>) -> Inner {
        Inner {
            streams: RwLock::new(HashMap::new()),
            queue,
            loader,
            next_id: AtomicU64::new(0),
            subscribers: AtomicUsize::new(0),
            published: AtomicU64::new(0),
            cut: AtomicU64::new(0),
        }
    }

    /// See [`Hub::publish`](super::Hub::publish).
    pub(super) fn publish(&self, address: &Address, batch: &[Op]) -> Result<Published> {
        if batch.is_empty() {
            return Ok(Published::default());
        }
        loop {
            let stream = self.stream_or_insert(address);
            let mut s = lock(&stream);
            if s.removed {
                continue; // removed between the lookup and the lock: look again
            }
            apply(&mut s.value, batch)?;
            s.published = true;
            self.published.fetch_add(1, Ordering::Relaxed);
            let shared: Batch = batch.into();
            let mut outcome = Published::default();
            let before = s.subscribers.len();
            s.subscribers
                .retain(|sub| match sub.tx.try_send(Arc::clone(&shared)) {
                    Ok(()) => {
                        outcome.delivered += 1;
                        true
                    }
                    Err(TrySendError::Full(_)) => {
                        outcome.cut += 1;
                        sub.signal.fire();
                        false
                    }
                    Err(TrySendError::Closed(_)) => false,
                });
            self.forget(before - s.subscribers.len());
            self.cut.fetch_add(outcome.cut as u64, Ordering::Relaxed);
            return Ok(outcome);
        }
    }

    /// Subscribes to the value at `address`, asking the loader for a value that is not live
    /// when `load` is set. See [`Hub::subscribe`](super::Hub::subscribe).
    pub(super) fn subscribe(
        self: &Arc<Inner>,
        address: &Address,
        signal: Arc<Signal>,
        load: bool,
    ) -> Option<Subscription> {
        loop {
            if let Some(stream) = self.stream(address) {
                let mut s = lock(&stream);
                if s.removed {
                    continue;
                }
                if s.value.is_some() {
                    return Some(self.join(address, &stream, &mut s, Arc::clone(&signal)));
                }
            }
            if !load {
                return None;
            }
            // Not live: ask the loader, outside every lock.
            let loaded = (self.loader.as_ref()?)(address)?;
            let stream = self.stream_or_insert(address);
            let mut s = lock(&stream);
            if s.removed {
                continue;
            }
            if s.value.is_none() {
                s.value = Some(loaded);
            }
            return Some(self.join(address, &stream, &mut s, signal));
        }
    }

    /// Registers a subscriber on a locked stream that has a value, queueing its base batch
    /// first: the snapshot and the registration happen under one lock.
    fn join(
        self: &Arc<Inner>,
        address: &Address,
        stream: &Arc<Mutex<Stream>>,
        s: &mut Stream,
        signal: Arc<Signal>,
    ) -> Subscription {
        let (tx, rx) = mpsc::channel(self.queue);
        let base: Batch = Arc::new([Op::Replace(s.value.clone().unwrap_or(Value::Null))]);
        // The channel is new and holds at least one batch: this cannot fail.
        let _ = tx.try_send(base);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        s.subscribers.push(Subscriber {
            id,
            tx,
            signal: Arc::clone(&signal),
        });
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        Subscription::new(
            Arc::clone(self),
            Arc::clone(stream),
            address.clone(),
            id,
            rx,
            signal,
        )
    }

    /// Unregisters subscriber `id` of `stream` (a dropped [`Subscription`]). A value only
    /// loaded for subscribers leaves with the last of them, so the next subscriber loads it
    /// afresh.
    pub(super) fn unsubscribe(&self, address: &Address, stream: &Arc<Mutex<Stream>>, id: u64) {
        let evict = {
            let mut s = lock(stream);
            let before = s.subscribers.len();
            s.subscribers.retain(|sub| sub.id != id);
            let gone = before - s.subscribers.len();
            self.subscribers.fetch_sub(gone, Ordering::Relaxed);
            !s.published && !s.removed && s.subscribers.is_empty()
        };
        if evict {
            // Lock order: the map, then the stream.
            let mut streams = self.streams.write().unwrap_or_else(PoisonError::into_inner);
            let mut s = lock(stream);
            let same = streams
                .get(address)
                .is_some_and(|held| Arc::ptr_eq(held, stream));
            if same && !s.published && s.subscribers.is_empty() {
                streams.remove(address);
                s.removed = true;
            }
        }
    }

    /// See [`Hub::get`](super::Hub::get).
    pub(super) fn get(&self, address: &Address) -> Option<Value> {
        let stream = self.stream(address)?;
        let s = lock(&stream);
        s.value.clone()
    }

    /// See [`Hub::addresses`](super::Hub::addresses).
    pub(super) fn addresses(&self) -> Vec<Address> {
        let streams = self.streams.read().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<Address> = streams.keys().cloned().collect();
        all.sort();
        all
    }

    /// See [`Hub::subscribers`](super::Hub::subscribers).
    pub(super) fn subscribers(&self, address: &Address) -> usize {
        self.stream(address)
            .map(|stream| lock(&stream).subscribers.len())
            .unwrap_or(0)
    }

    /// See [`Hub::remove`](super::Hub::remove).
    pub(super) fn remove(&self, address: &Address) -> bool {
        let mut streams = self.streams.write().unwrap_or_else(PoisonError::into_inner);
        let Some(stream) = streams.remove(address) else {
            return false;
        };
        let mut s = lock(&stream);
        s.removed = true;
        let ended = s.subscribers.len();
        s.subscribers.clear(); // dropping the senders ends the subscriptions
        self.forget(ended);
        true
    }

    /// See [`Hub::stats`](super::Hub::stats).
    pub(super) fn stats(&self) -> Stats {
        let streams = self
            .streams
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        Stats {
            streams,
            subscribers: self.subscribers.load(Ordering::Relaxed),
            published: self.published.load(Ordering::Relaxed),
            cut: self.cut.load(Ordering::Relaxed),
        }
    }

    fn forget(&self, subscribers: usize) {
        self.subscribers.fetch_sub(subscribers, Ordering::Relaxed);
    }

    fn stream(&self, address: &Address) -> Option<Arc<Mutex<Stream>>> {
        let streams = self.streams.read().unwrap_or_else(PoisonError::into_inner);
        streams.get(address).cloned()
    }

    fn stream_or_insert(&self, address: &Address) -> Arc<Mutex<Stream>> {
        if let Some(stream) = self.stream(address) {
            return stream;
        }
        let mut streams = self.streams.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(streams.entry(address.clone()).or_insert_with(|| {
            Arc::new(Mutex::new(Stream {
                value: None,
                subscribers: Vec::new(),
                published: false,
                removed: false,
            }))
        }))
    }
}
