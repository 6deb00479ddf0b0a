//! The durable tracker: flush, encode, tag and append in one call.

use std::ops::Deref;

use serde::de::DeserializeOwned;

use super::{recover, Address, Error, LogWriter, Result, Store};
use crate::tracker::{Tracked, Tracker};
use crate::{is_base, Op};

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
    /// Changes the tracker flushed that the log does not hold yet: those of a flush whose
    /// checkpoint base was over the record bound, appended with the next flush's.
    unstored: Vec<Op>,
}

impl<T: Tracked, S: Store> Durable<T, S> {
    /// Starts a new value at `address`; the first flush writes it as a base batch.
    pub fn new(value: T, writer: LogWriter<S>, address: Address) -> Durable<T, S> {
        Durable {
            tracker: Tracker::new(value),
            writer,
            address,
            unstored: Vec::new(),
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
            unstored: Vec::new(),
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
    /// **A value over the record bound.** Every record fits the writer's record bound
    /// ([`LogWriter::max_record_bytes`], at most
    /// [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES)). When the checkpoint policy asks for a
    /// base and the whole value no longer fits, this flush returns [`Error::RecordTooLarge`]
    /// (`base: true`, with the bound and the size) and stores nothing; its changes are kept
    /// and go with the next flush, which appends them as changes, as do the flushes after it:
    /// the value goes on being written, and recovery replays back to the last base that fit.
    /// The policy tries a base again one interval later, and once the value is back under the
    /// bound the base is written and the policy holds again. To stay under it: keep the
    /// value smaller (e.g. `keep_last` on text that grows), or split it over several
    /// addresses, one `Durable` each.
    ///
    /// # Errors
    ///
    /// [`Error::Flush`] when the value cannot be carried as JSON (nothing is stored, the
    /// changes stay recorded); [`Error::RecordTooLarge`] for a checkpoint base over the record
    /// bound (above: the changes are kept); otherwise the store's error, or
    /// [`Error::RecordTooLarge`] for a batch of changes, or a first base, that is itself over
    /// the bound.
    ///
    /// **A store error is not a new stream.** When the store can take the same record again
    /// (a `PostgresStore` whose connection failed, before or during the commit), the writer
    /// holds the encoded batch and sends it again, the same text, before the next flush's;
    /// calling `flush` with nothing changed sends it (see [`LogWriter::append`]). The store
    /// recognises the resend by its position, so a commit whose acknowledgement was lost is
    /// not stored twice, and readers see the stream go on with no base, no gap and no
    /// duplicate. Only when the stream cannot go on (another writer took the address, a
    /// poisoned store, a file store's error, the record at that position is another one, a
    /// batch or checkpoint over the bound as above) is the next flush a base batch, so the
    /// log never misses a change that was not stored: while the value is over the bound, such
    /// flushes fail.
    pub fn flush(&mut self) -> Result<Option<u64>> {
        let mut ops = self.tracker.flush().map_err(|source| Error::Flush {
            address: self.address.clone(),
            source,
        })?;
        if !self.unstored.is_empty() && !is_base(&ops) {
            // Ops apply in order: the kept ones, then this flush's.
            let mut all = std::mem::take(&mut self.unstored);
            all.append(&mut ops);
            ops = all;
        }
        self.unstored.clear();
        let tracker = &self.tracker;
        let current = || crate::tracker::to_json(tracker.get(), &crate::Path::root());
        let stored = self
            .writer
            .append_checkpointed(&self.address, &ops, current);
        match &stored {
            // The checkpoint base did not fit and the writer put the checkpoint off: the
            // changes themselves were not tried, and go with the next flush.
            Err(Error::RecordTooLarge { base: true, .. })
                if !is_base(&ops) && !self.writer.wants_base(&self.address) =>
            {
                self.unstored = ops;
            }
            // The writer holds these ops, encoded, and sends them again first: the stream goes
            // on as if the store had never failed.
            Err(e) if e.resendable() && self.writer.held(&self.address) > 0 => {}
            // The tracker accepted these ops but the log did not: start over from a base.
            Err(_) => self.tracker.rebase(),
            Ok(_) => {}
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
