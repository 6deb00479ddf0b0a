//! Configuring a hub: its queue length and its loader.

use std::sync::Arc;

use serde_json::Value;

use super::stream::{Inner, Loader};
use super::{Address, Hub};

/// The default [`Builder::queue`]: how many batches a subscriber may fall behind.
pub const DEFAULT_QUEUE: usize = 256;

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
pub struct Builder {
    queue: usize,
    loader: Option<Loader>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            queue: DEFAULT_QUEUE,
            loader: None,
        }
    }
}

impl Builder {
    /// How many batches may wait for one subscriber, its base batch included (at least 1;
    /// default [`DEFAULT_QUEUE`]). A subscriber with a full queue is cut when the next batch
    /// is published. Memory held for a subscriber is at most this many batches, shared with
    /// the other subscribers that have not read them yet.
    pub fn queue(mut self, batches: usize) -> Builder {
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
    pub fn loader<F>(mut self, loader: F) -> Builder
    where
        F: Fn(&Address) -> Option<Value> + Send + Sync + 'static,
    {
        self.loader = Some(Arc::new(loader));
        self
    }

    /// The hub.
    pub fn build(self) -> Hub {
        Hub {
            inner: Arc::new(Inner::new(self.queue, self.loader)),
        }
    }
}
