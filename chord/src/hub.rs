//! The hub: live streams of tracked values, fanned out to any number of subscribers.
//!
//! A producer [`publish`](Hub::publish)es each flushed batch once, under the value's
//! [`Address`]. The hub applies it to the current value it holds and hands it to every
//! [`Subscription`] of that address. Each subscription:
//!
//! - starts with a base batch (`[["r", current]]`), taken atomically with its registration, so
//!   every batch published after it follows in order, nothing lost or duplicated in between;
//! - owns its [`Encoder`]: a late subscriber never receives an id it has not seen defined;
//! - has a bounded queue. A subscriber that falls more than [`HubBuilder::queue`] batches
//!   behind is *cut*: its subscription ends, and it resubscribes to start again from a base
//!   batch. Publishing never waits for a subscriber and never buffers without limit.
//!
//! A value that is not live (no producer has published it since the hub started) can still
//! be subscribed to when a [loader](HubBuilder::loader) knows it, for instance by recovering it
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

use std::collections::HashMap;
use std::fmt;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, Notify};

pub use crate::store::Address;
use crate::{apply, Encoder, Op, Result};

/// One published batch, shared by every subscription that receives it.
pub type Batch = Arc<[Op]>;

/// Finds the state of a value that is not live, e.g. by recovering it from the durable log.
type Loader = Arc<dyn Fn(&Address) -> Option<Value> + Send + Sync>;

/// The default [`HubBuilder::queue`]: how many batches a subscriber may fall behind.
pub const DEFAULT_QUEUE: usize = 256;

/// Live streams of values, addressed like the durable log, fanned out to subscribers.
///
/// Cloning a hub is cheap and gives another handle to the same streams. See the
/// [module documentation](self) for the guarantees.
///
/// Cost: [`publish`](Hub::publish) applies the batch once and then does `O(subscribers)`
/// queue pushes of one shared pointer; encoding happens on each subscriber's side, in
/// [`Subscription::recv_wire`]. [`subscribe`](Hub::subscribe) clones the current value.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

/// Builds a [`Hub`] with a queue length and a loader other than the defaults.
///
/// ```
/// use chord::hub::Hub;
/// use serde_json::json;
/// let hub = Hub::builder()
///     .queue(64)
///     .loader(|address| (address.key == "archived").then(|| json!({"text": "from disk"})))
///     .build();
/// assert!(hub.subscribe(&chord::store::Address::new("lanes", "archived")).is_some());
/// assert!(hub.subscribe(&chord::store::Address::new("lanes", "nowhere")).is_none());
/// ```
#[must_use]
pub struct HubBuilder {
    queue: usize,
    loader: Option<Loader>,
}

struct Inner {
    streams: RwLock<HashMap<Address, Arc<Mutex<Stream>>>>,
    queue: usize,
    loader: Option<Loader>,
    next_id: AtomicU64,
    subscribers: AtomicUsize,
    published: AtomicU64,
    cut: AtomicU64,
}

struct Stream {
    /// `None` only for a stream whose first publish failed to apply.
    value: Option<Value>,
    subscribers: Vec<Subscriber>,
    /// Whether a producer has published here, rather than only a loader having filled it.
    published: bool,
    /// Set once the stream has left the hub's map: nothing may join it any more.
    removed: bool,
}

struct Subscriber {
    id: u64,
    tx: mpsc::Sender<Batch>,
    signal: Arc<Signal>,
}

/// What one [`Hub::publish`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Published {
    /// Subscriptions the batch was queued for.
    pub delivered: usize,
    /// Subscriptions cut because their queue was full.
    pub cut: usize,
}

/// Counters over a hub's life, from [`Hub::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubStats {
    /// Values the hub holds now.
    pub streams: usize,
    /// Open subscriptions now.
    pub subscribers: usize,
    /// Non-empty batches published and applied.
    pub published: u64,
    /// Subscriptions cut for falling behind.
    pub cut: u64,
}

impl Default for HubBuilder {
    fn default() -> Self {
        HubBuilder {
            queue: DEFAULT_QUEUE,
            loader: None,
        }
    }
}

impl HubBuilder {
    /// How many batches may wait for one subscriber, its base batch included (at least 1;
    /// default [`DEFAULT_QUEUE`]). A subscriber with a full queue is cut when the next batch
    /// is published. Memory held for a subscriber is at most this many batches, shared with
    /// the other subscribers that have not read them yet.
    pub fn queue(mut self, batches: usize) -> HubBuilder {
        self.queue = batches.max(1);
        self
    }

    /// Where [`Hub::subscribe`] finds a value that is not live: `loader(address)` returns its
    /// state, or `None` when there is no such value. It is called outside the hub's locks,
    /// once per subscription to a value not live, so it may read the disk; a value it loaded
    /// is kept while it has subscribers, or for good once a producer publishes to it. The
    /// SSE endpoint calls it on a blocking thread, off the async runtime's workers.
    ///
    /// Behind the SSE endpoint the addresses come from clients: treat them as untrusted
    /// (look them up, never build file paths or queries from them).
    ///
    /// With the durable log (a store shared behind a mutex, read with
    /// [`recover`](crate::store::recover)):
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use chord::hub::Hub;
    /// use chord::store::{recover, Address, Durability, JsonlStore, LogWriter, Checkpoint};
    /// use chord::Op;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let lane = Address::new("lanes", "main");
    /// let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
    /// let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(50));
    /// writer.append(&lane, &[Op::Replace(serde_json::json!({"text": "saved"}))])?;
    /// drop(writer);
    ///
    /// let store = Arc::new(Mutex::new(JsonlStore::open_read_only(dir.path().join("log.jsonl"))?));
    /// let hub = Hub::builder()
    ///     .loader(move |address| {
    ///         let store = store.lock().ok()?;
    ///         recover(&*store, address).ok().flatten()
    ///     })
    ///     .build();
    /// assert_eq!(hub.get(&lane), None); // not live...
    /// let subscription = hub.subscribe(&lane).expect("recovered for a subscriber");
    /// assert_eq!(hub.get(&lane), Some(serde_json::json!({"text": "saved"})));
    /// drop(subscription); // ...and held while it has subscribers
    /// assert_eq!(hub.get(&lane), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loader<F>(mut self, loader: F) -> HubBuilder
    where
        F: Fn(&Address) -> Option<Value> + Send + Sync + 'static,
    {
        self.loader = Some(Arc::new(loader));
        self
    }

    /// The hub.
    pub fn build(self) -> Hub {
        Hub {
            inner: Arc::new(Inner {
                streams: RwLock::new(HashMap::new()),
                queue: self.queue,
                loader: self.loader,
                next_id: AtomicU64::new(0),
                subscribers: AtomicUsize::new(0),
                published: AtomicU64::new(0),
                cut: AtomicU64::new(0),
            }),
        }
    }
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

/// Locks a mutex, shrugging off poisoning: every critical section here leaves the stream
/// consistent before anything that could panic.
fn lock(stream: &Mutex<Stream>) -> MutexGuard<'_, Stream> {
    stream.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hub {
    /// A hub with the default queue length and no loader.
    pub fn new() -> Hub {
        HubBuilder::default().build()
    }

    /// Configures a hub: queue length, loader.
    pub fn builder() -> HubBuilder {
        HubBuilder::default()
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
            self.inner.published.fetch_add(1, Ordering::Relaxed);
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
            self.inner
                .cut
                .fetch_add(outcome.cut as u64, Ordering::Relaxed);
            return Ok(outcome);
        }
    }

    /// Subscribes to the value at `address`. The subscription's first batch is a base batch
    /// with the current value; every batch published after it follows, in order.
    ///
    /// A value that is not live is asked of the [loader](HubBuilder::loader). `None` when
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
        self.subscribe_inner(address, signal, true)
    }

    /// [`subscribe_with`](Hub::subscribe_with) without asking the loader: `None` for a value
    /// that is not live. Never blocks on anything but the hub's own short locks.
    #[cfg(feature = "sse")]
    pub(crate) fn subscribe_live(
        &self,
        address: &Address,
        signal: Arc<Signal>,
    ) -> Option<Subscription> {
        self.subscribe_inner(address, signal, false)
    }

    /// Whether a loader is set.
    #[cfg(feature = "sse")]
    pub(crate) fn has_loader(&self) -> bool {
        self.inner.loader.is_some()
    }

    fn subscribe_inner(
        &self,
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
            let loaded = (self.inner.loader.as_ref()?)(address)?;
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
        &self,
        address: &Address,
        stream: &Arc<Mutex<Stream>>,
        s: &mut Stream,
        signal: Arc<Signal>,
    ) -> Subscription {
        let (tx, rx) = mpsc::channel(self.inner.queue);
        let base: Batch = Arc::new([Op::Replace(s.value.clone().unwrap_or(Value::Null))]);
        // The channel is new and holds at least one batch: this cannot fail.
        let _ = tx.try_send(base);
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        s.subscribers.push(Subscriber {
            id,
            tx,
            signal: Arc::clone(&signal),
        });
        self.inner.subscribers.fetch_add(1, Ordering::Relaxed);
        Subscription {
            hub: Arc::clone(&self.inner),
            stream: Arc::clone(stream),
            address: address.clone(),
            id,
            rx,
            signal,
            encoder: Encoder::new(),
        }
    }

    /// The current value at `address`, if it is live (or loaded for a subscriber).
    pub fn get(&self, address: &Address) -> Option<Value> {
        let stream = self.stream(address)?;
        let s = lock(&stream);
        s.value.clone()
    }

    /// The addresses the hub holds, sorted.
    pub fn addresses(&self) -> Vec<Address> {
        let streams = self
            .inner
            .streams
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<Address> = streams.keys().cloned().collect();
        all.sort();
        all
    }

    /// How many subscriptions of `address` are open.
    pub fn subscribers(&self, address: &Address) -> usize {
        self.stream(address)
            .map(|stream| lock(&stream).subscribers.len())
            .unwrap_or(0)
    }

    /// Forgets the value at `address` and ends its subscriptions (their subscribers will
    /// find it gone, or ask the loader, when they resubscribe). Whether it was there.
    pub fn remove(&self, address: &Address) -> bool {
        let mut streams = self
            .inner
            .streams
            .write()
            .unwrap_or_else(PoisonError::into_inner);
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

    /// Counters: streams, open subscriptions, batches published, subscriptions cut.
    pub fn stats(&self) -> HubStats {
        let streams = self
            .inner
            .streams
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        HubStats {
            streams,
            subscribers: self.inner.subscribers.load(Ordering::Relaxed),
            published: self.inner.published.load(Ordering::Relaxed),
            cut: self.inner.cut.load(Ordering::Relaxed),
        }
    }

    fn forget(&self, subscribers: usize) {
        self.inner
            .subscribers
            .fetch_sub(subscribers, Ordering::Relaxed);
    }

    fn stream(&self, address: &Address) -> Option<Arc<Mutex<Stream>>> {
        let streams = self
            .inner
            .streams
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        streams.get(address).cloned()
    }

    fn stream_or_insert(&self, address: &Address) -> Arc<Mutex<Stream>> {
        if let Some(stream) = self.stream(address) {
            return stream;
        }
        let mut streams = self
            .inner
            .streams
            .write()
            .unwrap_or_else(PoisonError::into_inner);
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

/// One subscriber's view of a value's stream: a base batch, then every batch published after
/// it, in order. Read it as ops with [`recv`](Subscription::recv) (an in-process consumer) or
/// as wire text with [`recv_wire`](Subscription::recv_wire) (a transport), one way for its
/// whole life: the subscription's own encoder sees only what `recv_wire` returns.
///
/// The stream ends (`None`) when the subscriber was cut for falling behind
/// ([`was_cut`](Subscription::was_cut)) or the value was [removed](Hub::remove): resubscribe
/// to start again from a base batch. Dropping the subscription unsubscribes.
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
        let evict = {
            let mut s = lock(&self.stream);
            let before = s.subscribers.len();
            s.subscribers.retain(|sub| sub.id != self.id);
            let gone = before - s.subscribers.len();
            self.hub.subscribers.fetch_sub(gone, Ordering::Relaxed);
            !s.published && !s.removed && s.subscribers.is_empty()
        };
        if evict {
            // A value only loaded for subscribers leaves with the last of them, so the next
            // subscriber loads it afresh. Lock order: the map, then the stream.
            let mut streams = self
                .hub
                .streams
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let mut s = lock(&self.stream);
            let same = streams
                .get(&self.address)
                .is_some_and(|held| Arc::ptr_eq(held, &self.stream));
            if same && !s.published && s.subscribers.is_empty() {
                streams.remove(&self.address);
                s.removed = true;
            }
        }
    }
}

/// A one-way flag with a waker: set once, awaited by anyone.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    fired: AtomicBool,
    notify: Notify,
}

impl Signal {
    pub(crate) fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Resolves once the signal has fired.
    #[cfg(feature = "sse")]
    pub(crate) async fn fired(&self) {
        loop {
            let mut notified = std::pin::pin!(self.notify.notified());
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}
