//! The durable tracker: flush, encode, tag and append in one call.

use std::ops::Deref;

use serde::de::DeserializeOwned;

use super::{recover, Address, Error, LogWriter, Result, Store};
use crate::tracker::{Tracked, Tracker};

/// A tracked value whose every flush is appended to a durable log, with the writer's
/// [`Checkpoint`](super::Checkpoint) policy answered by base batches, so that recovery replays
/// at most what the policy says.
///
/// [`flush`](Durable::flush) is the one call: if the policy wants a base it rebases the
/// tracker, flushes, encodes with the address's encoder, tags `base` batches and appends.
///
/// # Examples
///
/// ```
/// use chord::store::{recover_as, Address, Checkpoint, Durability, Durable, JsonlStore, LogWriter};
/// use chord::Tracked;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Tracked, Serialize, Deserialize, Default, Debug, PartialEq)]
/// struct Tool { output: String }
///
/// let dir = tempfile::tempdir()?;
/// let log = dir.path().join("agent.jsonl");
/// let at = Address::new("tools", "build");
///
/// let store = JsonlStore::open(&log, Durability::EveryAppend)?;
/// let mut tool = Durable::open(LogWriter::new(store, Checkpoint::EveryBatches(50)), at.clone(), Tool::default)?;
/// for i in 0..200 {
///     tool.state().output.push_str(&format!("line {i}\n"));
///     tool.state().output.keep_last(64);
///     tool.flush()?; // on disk when it returns (Durability::EveryAppend)
/// }
/// let expected = tool.output.clone();
/// drop(tool);
///
/// // After a crash: reopen, and the value is exactly what was last flushed.
/// let store = JsonlStore::open(&log, Durability::EveryAppend)?;
/// let tool = Durable::open(LogWriter::new(store, Checkpoint::EveryBatches(50)), at, Tool::default)?;
/// assert_eq!(tool.output, expected);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Durable<T, S: Store> {
    tracker: Tracker<T>,
    writer: LogWriter<S>,
    address: Address,
}

impl<T: Tracked, S: Store> Durable<T, S> {
    /// Starts a new value at `address`; the first flush writes it as a base batch.
    pub fn new(value: T, writer: LogWriter<S>, address: Address) -> Durable<T, S> {
        Durable {
            tracker: Tracker::new(value),
            writer,
            address,
        }
    }

    /// Recovers the value last flushed at `address`, or starts from `init()` when the log
    /// has none. A recovered value is not written again: the next flush carries only changes
    /// (unless the checkpoint policy asks for a base).
    ///
    /// When the recovered JSON is not what the typed value serializes to (the type changed
    /// since the log was written: a new `#[serde(default)]` field, a field that is now
    /// skipped), the next flush first carries the difference (see
    /// [`Tracker::resume_from`]), so every reader, and the log, come to the typed value.
    ///
    /// # Errors
    ///
    /// Recovery fails (a record that does not decode or apply, or a value that does not
    /// deserialize into `T`), or the store fails.
    pub fn open(writer: LogWriter<S>, address: Address, init: impl FnOnce() -> T) -> Result<Self>
    where
        T: DeserializeOwned,
    {
        let tracker = match recover(writer.store(), &address)? {
            Some(held) => {
                let value: T =
                    serde_json::from_value(held.clone()).map_err(|source| Error::Deserialize {
                        address: address.clone(),
                        source,
                    })?;
                match crate::tracker::to_json(&value, &crate::Path::root()) {
                    Ok(own) if own == held => Tracker::resume(value),
                    // Differs, or cannot be carried (the first flush reports that).
                    _ => Tracker::resume_from(value, held),
                }
            }
            None => Tracker::new(init()),
        };
        Ok(Durable {
            tracker,
            writer,
            address,
        })
    }

    /// The proxy through which to mutate the value (see [`Tracker::state`]).
    pub fn state(&mut self) -> T::Proxy<'_> {
        self.tracker.state()
    }

    /// Flushes the recorded changes to the log: a base batch with the whole value when the
    /// checkpoint policy asks for one (see [`LogWriter::append_checkpointed`]). Returns the
    /// record's seq, or `None` when nothing changed.
    ///
    /// When the record is on disk is the store's [`Durability`](super::Durability); see
    /// [`Store::durable_seq`] and [`sync`](Durable::sync).
    ///
    /// # Errors
    ///
    /// [`Error::Flush`] when the value cannot be carried as JSON (nothing is stored, the
    /// changes stay recorded), or the store's error. After a store error the next flush is a
    /// base batch, so the log never misses a change that was not stored.
    pub fn flush(&mut self) -> Result<Option<u64>> {
        let ops = self.tracker.flush().map_err(|source| Error::Flush {
            address: self.address.clone(),
            source,
        })?;
        let tracker = &self.tracker;
        let current = || crate::tracker::to_json(tracker.get(), &crate::Path::root());
        let stored = self
            .writer
            .append_checkpointed(&self.address, &ops, current);
        if stored.is_err() {
            // The tracker accepted these ops but the log did not: start over from a base.
            self.tracker.rebase();
        }
        stored
    }

    /// Forces what was appended to disk; returns the highest durable seq.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn sync(&mut self) -> Result<Option<u64>> {
        self.writer.sync()
    }

    /// The address the value is stored at.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The writer (and through it, the store).
    pub fn writer(&self) -> &LogWriter<S> {
        &self.writer
    }

    /// The value, for reading.
    pub fn get(&self) -> &T {
        self.tracker.get()
    }

    /// Stops tracking and returns the value and the writer.
    pub fn into_parts(self) -> (T, LogWriter<S>) {
        (self.tracker.into_inner(), self.writer)
    }
}

impl<T, S: Store> Deref for Durable<T, S> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.tracker
    }
}
