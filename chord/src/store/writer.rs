//! The log writer: encode, tag and append in one call, with a checkpoint policy.

use std::collections::{HashMap, VecDeque};

use super::MAX_RECORD_BYTES;
use super::{
    check, is_base_tag, Address, CheckedBatch, Error, ReadOptions, Result, Store, BASE, CHECKPOINT,
};
use crate::error::ErrorKind;
use crate::wire::Numbers;
use crate::{is_base, Encoder, Op};

/// When a stored value should get a new base batch, so that recovery's work is bounded by a
/// policy rather than by luck.
///
/// The writer never rewrites a batch itself: [`LogWriter::wants_base`] says when the policy
/// asks for a base, and the producer answers with one (a tracker's `rebase()` then `flush()`),
/// or [`LogWriter::append_checkpointed`] (what [`Durable`](super::Durable) calls) answers for
/// it: it stores the batch, then the value after it as a [`CHECKPOINT`], which readers that
/// have the value never receive.
///
/// A checkpoint is a record like any other, so it must fit the record bound
/// ([`LogWriter::max_record_bytes`]). When the value has outgrown it, the base is not written
/// ([`LogWriter::append_checkpointed`] reports [`Error::RecordTooLarge`]) and the policy asks
/// again one interval later; meanwhile batches of changes go on being appended, and recovery
/// replays more than the policy says, up to the next base that fits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checkpoint {
    /// Only ask for the first base batch of a value; recovery replays the whole history
    /// since the last base the producer chose to write.
    #[default]
    Never,
    /// Ask for a base once `n` batches have been written since the last one, that base
    /// included: recovery replays at most `n` batches when the producer answers each request.
    /// `EveryBatches(1)` (or 0) asks for a base every time.
    EveryBatches(u64),
    /// Ask for a base once `n` bytes of batches have been written after the last one:
    /// recovery replays the base plus at most `n` bytes of batches (plus the one batch that
    /// crossed the line) when the producer answers each request.
    EveryBytes(u64),
}

/// Appends a producer's batches to a [`Store`]: one [`Encoder`] per address, so path ids span
/// the value's history and reset at each base batch, and the [`BASE`] tag set on every batch
/// that starts with `r`. A user never wires encoder, tag and store by hand.
///
/// Cost: one encode and one [`Store::append`] per batch; the first batch for an address in
/// this writer's life also reads back to the address's last base record (bounded by the
/// [`Checkpoint`] policy) to learn where the policy stands.
///
/// # Examples
///
/// ```
/// use chord::store::{replay, Address, Checkpoint, Durability, JsonlStore, LogWriter};
/// use chord::{path, Op};
/// use serde_json::json;
///
/// let dir = tempfile::tempdir()?;
/// let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
/// let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(3));
/// let out = Address::new("tools", "build");
/// let mut text = String::new();
/// for i in 0..10 {
///     let chunk = format!("line {i}\n");
///     text.push_str(&chunk);
///     // What a tracker's flush emits; after `rebase()` it is a base batch.
///     let batch = if writer.wants_base(&out) {
///         vec![Op::Replace(json!({ "out": text }))]
///     } else {
///         vec![Op::Append(path!["out"], chunk)]
///     };
///     writer.append(&out, &batch)?;
/// }
/// let r = replay(writer.store(), &out, None)?;
/// assert!(r.batches <= 3);
/// assert_eq!(r.value, Some(json!({ "out": text })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LogWriter<S: Store> {
    store: S,
    policy: Checkpoint,
    streams: HashMap<Address, Stream>,
    /// The longest record it appends, batch and tag: at most [`MAX_RECORD_BYTES`].
    bound: usize,
    /// How its encoders spell numbers.
    numbers: Numbers,
}

/// One address's encoder, where the checkpoint policy stands, and the batches it encoded
/// that the store has not taken yet.
#[derive(Debug, Default)]
struct Stream {
    encoder: Encoder,
    since: Since,
    /// Encoded batches whose append failed with an error the store resolves when the same
    /// record comes again ([`Error::resendable`]), oldest first: sent again, text for text,
    /// before anything newer, so readers' decoders stay in step with this encoder.
    held: VecDeque<Held>,
    /// The bytes of `held`'s texts.
    held_bytes: usize,
}

/// A batch encoded and not yet stored.
#[derive(Debug)]
struct Held {
    text: String,
    /// [`BASE`], [`CHECKPOINT`] or none.
    tag: Option<&'static str>,
}

impl Stream {
    fn new(numbers: Numbers, since: Since) -> Stream {
        Stream {
            encoder: Encoder::new().numbers(numbers),
            since,
            held: VecDeque::new(),
            held_bytes: 0,
        }
    }

    /// Whether the stream has a base, stored or held.
    fn has_base(&self) -> bool {
        self.since.has_base || self.held.iter().any(|h| is_base_tag(h.tag))
    }
}

/// Where an address stands since its last base record.
#[derive(Clone, Copy, Debug, Default)]
struct Since {
    /// Whether the address has a base record at all.
    has_base: bool,
    /// Records from the last base, that base included.
    batches: u64,
    /// Bytes of the batches after the last base.
    bytes: u64,
}

impl Since {
    fn wants_base(&self, policy: Checkpoint) -> bool {
        if !self.has_base {
            return true;
        }
        match policy {
            Checkpoint::Never => false,
            Checkpoint::EveryBatches(n) => self.batches >= n,
            Checkpoint::EveryBytes(n) => self.bytes >= n,
        }
    }

    fn record(&mut self, base: bool, bytes: usize) {
        if base {
            *self = Since {
                has_base: true,
                batches: 1,
                bytes: 0,
            };
        } else {
            self.batches += 1;
            self.bytes += bytes as u64;
        }
    }
}

impl<S: Store> LogWriter<S> {
    /// A writer appending to `store` under the checkpoint `policy`.
    pub fn new(store: S, policy: Checkpoint) -> LogWriter<S> {
        LogWriter {
            store,
            policy,
            streams: HashMap::new(),
            bound: MAX_RECORD_BYTES,
            numbers: Numbers::Serde,
        }
    }

    /// Spells the numbers of the records it writes as `numbers` says: [`Numbers::Serde`] by
    /// default; [`Numbers::JavaScript`] writes records byte for byte as a JavaScript
    /// producer would (see [`Numbers`] for what a Rust reader then decodes). Set it before the
    /// first append.
    pub fn numbers(mut self, numbers: Numbers) -> LogWriter<S> {
        self.numbers = numbers;
        self
    }

    /// Sets the longest record this writer appends (batch text and tag, in bytes):
    /// [`MAX_RECORD_BYTES`] by default, which is also the most any store takes, so a larger
    /// `bytes` is taken as [`MAX_RECORD_BYTES`]. A batch over it is refused before it reaches
    /// the store ([`Error::RecordTooLarge`]).
    ///
    /// A smaller bound keeps every record, and so every base batch a reader or recovery
    /// loads at once, small; it also makes a value that outgrows the bound testable without
    /// megabytes of data.
    ///
    /// ```
    /// use chord::store::{Address, Checkpoint, Durability, Error, JsonlStore, LogWriter};
    /// use chord::Op;
    /// use serde_json::json;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
    /// let mut log = LogWriter::new(store, Checkpoint::Never).max_record_bytes(64);
    /// let at = Address::new("tools", "build");
    /// let err = log.append(&at, &[Op::Replace(json!({ "out": "x".repeat(64) }))]).unwrap_err();
    /// assert!(matches!(err, Error::RecordTooLarge { bound: 64, base: true, .. }), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_record_bytes(mut self, bytes: usize) -> LogWriter<S> {
        self.bound = bytes.min(MAX_RECORD_BYTES);
        self
    }

    /// The longest record this writer appends (see
    /// [`max_record_bytes`](LogWriter::max_record_bytes)).
    pub fn record_bound(&self) -> usize {
        self.bound
    }

    /// Encodes `batch` with `address`'s encoder, tags it [`BASE`] when it starts with `r`, and
    /// appends it. Returns its seq, or `None` for an empty batch (nothing is stored).
    ///
    /// When it is on disk is the store's [`Durability`](super::Durability): compare the seq
    /// with [`Store::durable_seq`], or call [`sync`](LogWriter::sync).
    ///
    /// **Acknowledged means recoverable.** Before encoding, each op is checked against the
    /// bounds of [`Limits::default`](crate::Limits) (what recovery applies with) that no state
    /// can satisfy: an op's path length plus the nesting depth of its value (for a splice,
    /// path length + 1 + each item's depth) at most 120, counted iteratively; at most
    /// `max_array_len` splice items; append text at most `max_string_len`; paths within the
    /// grammar. A batch for an address with no base record must be a base batch (recovery
    /// would have no value to apply it to). Then the store checks the encoded text
    /// ([`Store::append`]).
    ///
    /// What depends on the state cannot be checked without applying, and is not: an array
    /// or string growing past `max_array_len` or `max_string_len` (an `s` one past the end, a
    /// splice that inserts more than it removes, an append: each depends on the current
    /// length), the applier's per-batch work budget (it depends on the sizes of what the ops
    /// shift), and the document's shape (a missing parent, an index past the end, a `t`
    /// splitting a character). A producer whose ops come from a tracker over a valid value
    /// does not break these; recovery names the record if one does ([`Error::Replay`]).
    ///
    /// # Errors
    ///
    /// [`Error::Unrecoverable`](super::Error::Unrecoverable) for a batch recovery could not
    /// apply: nothing is stored and the encoder is untouched. [`Error::RecordTooLarge`] for a
    /// batch whose encoded text and tag are over the record bound
    /// ([`max_record_bytes`](LogWriter::max_record_bytes)). Otherwise the store's error,
    /// and then one of two things:
    ///
    /// - **The store can take the same record again** (a `PostgresStore` whose connection
    ///   failed, before or during the commit: `Error::Postgres`): the writer *holds* the
    ///   encoded batch ([`held`](LogWriter::held) counts them) and sends the same text again
    ///   before the address's next batch, or at the next call with an empty batch. The store
    ///   recognises the resend by its position, so a record whose commit went through but
    ///   whose acknowledgement was lost is not written twice, and readers see one unbroken
    ///   stream: no base, no gap, no duplicate. Batches appended while earlier ones are held
    ///   are held behind them, in order, up to the record bound in bytes
    ///   ([`record_bound`](LogWriter::record_bound)); past it the writer lets go, as below.
    /// - **Otherwise** (another writer took the address, the store is poisoned, the record at
    ///   that position is not this batch): the address's encoder, and what it holds, are
    ///   dropped, and the next batch starts a fresh one, so no later batch refers to a path
    ///   id whose definition was not stored. The producer then sends a base batch
    ///   ([`Durable`](super::Durable) does).
    pub fn append(&mut self, address: &Address, batch: &[Op]) -> Result<Option<u64>> {
        if batch.is_empty() {
            return self.resend(address);
        }
        let unrecoverable = |source: crate::Error| Error::Unrecoverable {
            address: address.clone(),
            source,
        };
        check::ops(batch).map_err(unrecoverable)?;
        if !self.streams.contains_key(address) {
            let since = since_base(&self.store, address, self.policy)?;
            self.streams
                .insert(address.clone(), Stream::new(self.numbers, since));
        }
        let Some(stream) = self.streams.get_mut(address) else {
            return Ok(None);
        };
        let base = is_base(batch);
        if !base && !stream.has_base() {
            let first = ErrorKind::NoValue.into();
            return Err(unrecoverable(crate::Error::at_op(first, 0)));
        }
        // What is held goes first; a failure there holds this batch behind it.
        let earlier = self.resend(address);
        let Some(stream) = self.streams.get_mut(address) else {
            // The resend ended the stream: this batch was not encoded.
            return earlier;
        };
        let wire = stream.encoder.encode(batch).to_json();
        // The encoder has taken the batch's path ids as sent: from here on the batch is
        // stored, held, or the encoder is dropped.
        let checked = match CheckedBatch::encoded(address, &wire, base.then_some(BASE), self.bound)
        {
            Ok(checked) => checked,
            Err(e) => {
                self.streams.remove(address);
                return Err(e);
            }
        };
        let tag = base.then_some(BASE);
        if let Err(e) = earlier {
            return self.hold(address, wire, tag, e);
        }
        match self.store.append_checked(address, checked) {
            Ok(seq) => {
                stream.since.record(base, wire.len());
                Ok(Some(seq))
            }
            Err(e) => self.hold(address, wire, tag, e),
        }
    }

    /// Holds an encoded batch whose append failed with `error`, when the store can take it
    /// again and the held bytes stay within the record bound; otherwise drops the stream.
    /// Returns `error`.
    fn hold(
        &mut self,
        address: &Address,
        text: String,
        tag: Option<&'static str>,
        error: Error,
    ) -> Result<Option<u64>> {
        let bound = self.bound;
        match self.streams.get_mut(address) {
            Some(stream) if error.resendable() && stream.held_bytes + text.len() <= bound => {
                stream.held_bytes += text.len();
                stream.held.push_back(Held { text, tag });
            }
            _ => {
                self.streams.remove(address);
            }
        }
        Err(error)
    }

    /// Sends what `address` holds, oldest first; the seq of the last one stored (`None` when
    /// nothing was held). A failure keeps the rest held when the store can take them again,
    /// and drops the stream otherwise.
    fn resend(&mut self, address: &Address) -> Result<Option<u64>> {
        let mut last = None;
        loop {
            let Some(stream) = self.streams.get_mut(address) else {
                return Ok(last);
            };
            let Some(held) = stream.held.front() else {
                return Ok(last);
            };
            let stored = CheckedBatch::encoded(address, &held.text, held.tag, self.bound)
                .and_then(|checked| self.store.append_checked(address, checked));
            match stored {
                Ok(seq) => {
                    let (base, len) = (is_base_tag(held.tag), held.text.len());
                    stream.held.pop_front();
                    stream.held_bytes -= len;
                    stream.since.record(base, len);
                    last = Some(seq);
                }
                Err(e) => {
                    if !e.resendable() {
                        self.streams.remove(address);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// How many of `address`'s batches this writer holds: encoded, their append failed with
    /// an error after which the store can take them again, and sent again before the next
    /// batch (see [`append`](LogWriter::append)). 0 for an address it does not write.
    pub fn held(&self, address: &Address) -> usize {
        self.streams.get(address).map_or(0, |s| s.held.len())
    }

    /// Appends a producer's batch, followed by a checkpoint when the checkpoint policy asks
    /// for one: `current` then gives the value *after* `batch`, stored as `["r", value]` in a
    /// record tagged [`CHECKPOINT`] right after the batch's. Readers that have the value
    /// before `batch` read the batch and never the checkpoint (the stream server leaves it
    /// out for them: a checkpoint costs a live reader nothing); recovery, retention,
    /// compaction and readers with no value start from the checkpoint.
    ///
    /// A checkpoint that does not fit the record bound is not written: this call returns
    /// [`Error::RecordTooLarge`] (with `base: true`) and stores nothing, `batch` included, so
    /// the caller still holds the changes and appends them with its next batch (a
    /// [`Durable`](super::Durable) does); the policy asks for a base again one interval later
    /// (after as many batches or bytes as the policy counts), not on every call, so a value
    /// over the bound costs one failed base per interval, and appending changes goes on.
    ///
    /// # Errors
    ///
    /// [`Error::Flush`](super::Error::Flush) when `current` fails; [`Error::RecordTooLarge`]
    /// when the base it would write is over the record bound; otherwise as
    /// [`append`](LogWriter::append).
    ///
    /// # Examples
    ///
    /// ```
    /// use chord::store::{recover, Address, Checkpoint, Durability, JsonlStore, LogWriter};
    /// use chord::{path, Op};
    /// use serde_json::json;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
    /// let mut log = LogWriter::new(store, Checkpoint::EveryBatches(2));
    /// let at = Address::new("tools", "build");
    /// let mut value = json!({"n": 0});
    /// for n in 1..=5 {
    ///     value["n"] = json!(n);
    ///     let batch = [Op::Set(path!["n"], json!(n))];
    ///     log.append_checkpointed(&at, &batch, || Ok(value.clone()))?;
    /// }
    /// assert_eq!(recover(log.store(), &at)?, Some(json!({"n": 5})));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append_checkpointed(
        &mut self,
        address: &Address,
        batch: &[Op],
        current: impl FnOnce() -> crate::Result<serde_json::Value>,
    ) -> Result<Option<u64>> {
        // While batches are held the checkpoint waits: a base over the record bound would
        // drop the encoder, and what it holds with it.
        if batch.is_empty() || is_base(batch) || self.held(address) > 0 || !self.wants_base(address)
        {
            return self.append(address, batch);
        }
        let value = current().map_err(|source| super::Error::Flush {
            address: address.clone(),
            source,
        })?;
        let has_base = match self.streams.get(address) {
            Some(stream) => stream.since.has_base,
            None => since_base(&self.store, address, self.policy)?.has_base,
        };
        if !has_base {
            // Nothing before to change: the stream starts with the value as its base.
            return self.append(address, &[Op::Replace(value)]);
        }
        // The checkpoint's text is checked before the batch is stored, so that one over the
        // bound stores nothing. An `r` uses no path id, so a fresh encoder writes it as the
        // address's own would.
        let checkpoint = [Op::Replace(value)];
        let text = Encoder::new()
            .numbers(self.numbers)
            .encode(&checkpoint)
            .to_json();
        if let Err(e) = CheckedBatch::encoded(address, &text, Some(CHECKPOINT), self.bound) {
            // The log keeps its last base; the policy counts the interval again from here
            // (the address's encoder is untouched: nothing was encoded with it).
            let since = Since {
                has_base: true,
                batches: 0,
                bytes: 0,
            };
            match self.streams.get_mut(address) {
                Some(stream) => stream.since = since,
                None => {
                    self.streams
                        .insert(address.clone(), Stream::new(self.numbers, since));
                }
            }
            return Err(e);
        }
        let changes = self.append(address, batch)?;
        let Some(stream) = self.streams.get_mut(address) else {
            return Ok(changes);
        };
        // From here the address's encoder starts over, as every decoder reading from the
        // checkpoint does; a decoder that skips the checkpoint keeps ids the encoder no longer
        // uses, which is harmless: every id is defined again before it is used.
        stream.encoder.reset();
        match self.store.append_checked(
            address,
            CheckedBatch::encoded(address, &text, Some(CHECKPOINT), self.bound)?,
        ) {
            Ok(seq) => {
                stream.since.record(true, text.len());
                Ok(Some(seq))
            }
            // The batch is stored: the flush succeeded. A checkpoint the store can take again
            // is held and sent before the next batch; another is dropped (recovery then starts
            // from the base before), and the address starts over with a fresh encoder.
            Err(e) => {
                tracing::warn!(
                    target: "chord::checkpoint",
                    stream = %address,
                    error = %e,
                    "the checkpoint after a stored batch was not stored"
                );
                let _ = self.hold(address, text, Some(CHECKPOINT), e);
                Ok(changes)
            }
        }
    }

    /// Whether the checkpoint policy asks for a base batch as `address`'s next batch. Always
    /// true for an address with no base record yet (a stream starts with a base batch).
    ///
    /// Cost: a map lookup; for an address this writer has not written yet, a read back to
    /// its last base record. If that read fails, the answer is `true`: a base batch is never
    /// wrong.
    pub fn wants_base(&self, address: &Address) -> bool {
        match self.streams.get(address) {
            Some(stream) => stream.since.wants_base(self.policy),
            None => since_base(&self.store, address, self.policy)
                .map_or(true, |since| since.wants_base(self.policy)),
        }
    }

    /// Flushes everything appended to disk now (see [`Store::sync`]) and returns the durable
    /// seq.
    ///
    /// # Errors
    ///
    /// As [`Store::sync`].
    pub fn sync(&mut self) -> Result<Option<u64>> {
        self.store.sync()
    }

    /// The checkpoint policy.
    pub fn policy(&self) -> Checkpoint {
        self.policy
    }

    /// The store, to read from (e.g. [`recover`](super::recover)).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, mutably. Appending to an address this writer also writes, other than
    /// through it, breaks its encoder's path ids: don't.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// The store back.
    pub fn into_store(self) -> S {
        self.store
    }
}

/// Reads back from `address`'s end to its last base record, far enough to know whether the
/// policy wants a base.
fn since_base<S: Store + ?Sized>(
    store: &S,
    address: &Address,
    policy: Checkpoint,
) -> Result<Since> {
    let mut since = Since::default();
    let mut options = ReadOptions::desc().limit(100).stop_at_tag(BASE);
    loop {
        let page = store.read_list(address, &options)?;
        for record in &page.records {
            since.batches += 1;
            if is_base_tag(record.tag.as_deref()) {
                since.has_base = true;
                return Ok(since);
            }
            since.bytes += record.batch.len() as u64;
        }
        let past = match policy {
            Checkpoint::Never => false,
            Checkpoint::EveryBatches(n) => since.batches >= n,
            Checkpoint::EveryBytes(n) => since.bytes >= n,
        };
        match page.next_cursor {
            // Far enough: the policy wants a base whatever lies further back.
            Some(_) if past => {
                since.has_base = true;
                return Ok(since);
            }
            Some(cursor) => options.cursor = Some(cursor),
            None => return Ok(since),
        }
    }
}
