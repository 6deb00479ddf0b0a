//! The tail cache of one address's log: its newest records, shared by every reader, each
//! framed once; where retention stands; and the signal that a record arrived.
//!
//! Every tail of a log adds what it holds to one [`Usage`], which the log keeps under its
//! bound by evicting the least recently used tails (see `log.rs`).

use std::any::Any;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use super::frames::{Slot, SLOTS};
use super::offset::BaseOffset;
use crate::store::{is_base_tag, Record, CHECKPOINT};

/// One record as readers receive it: its batch, and each framing's events of it, made once
/// (see [`frames`](super::frames)).
#[derive(Debug)]
pub(crate) struct Entry {
    /// The record's seq.
    pub(crate) seq: u64,
    /// The seq of the address's record before it (0: none).
    pub(crate) prev: u64,
    /// The wire batch, exactly as stored.
    pub(crate) batch: Box<str>,
    /// Whether the record is a checkpoint ([`CHECKPOINT`]): read only by a reader that starts
    /// at it.
    pub(crate) checkpoint: bool,
    /// Whether the record is a base (the first record, a checkpoint, a reset).
    #[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
    pub(crate) base: bool,
    /// Each framing's events of the record, once a reader asked ([`Tail::set_frame`]).
    frames: [OnceLock<Bytes>; SLOTS],
    /// The heap of the frames counted in the tail's usage (changed under the tail's lock).
    charged: AtomicUsize,
}

impl Entry {
    pub(crate) fn new(seq: u64, prev: u64, tag: Option<&str>, batch: &str) -> Entry {
        Entry {
            seq,
            prev,
            batch: batch.into(),
            checkpoint: tag == Some(CHECKPOINT),
            base: is_base_tag(tag),
            frames: Default::default(),
            charged: AtomicUsize::new(0),
        }
    }

    /// The events `slot`'s framing made of this record, if a reader asked for them already.
    pub(crate) fn frame(&self, slot: Slot) -> Option<Bytes> {
        self.frames[slot.index()].get().cloned()
    }

    pub(crate) fn from_record(record: &Record, prev: u64) -> Entry {
        Entry::new(record.seq, prev, record.tag.as_deref(), &record.batch)
    }

    /// The heap this entry holds while cached: its batch, the frames counted so far (each
    /// buffer's capacity, which `Bytes` keeps, and its header), the shared allocation holding
    /// it and its slot in the cache.
    fn cost(&self) -> usize {
        self.batch.len()
            + self.charged.load(Ordering::Relaxed)
            + std::mem::size_of::<Entry>()
            + 2 * std::mem::size_of::<usize>()
            + std::mem::size_of::<Arc<Entry>>()
    }
}

/// What `Bytes` allocates beside a buffer whose length is not its capacity.
const BYTES_HEADER: usize = 32;

/// What a tail holds beside its entries, counted once per tail: the tail, its state and
/// watch channel, and its place in the log's map, without the address's text (counted
/// separately) or the kept bases (counted per base).
pub(crate) const TAIL_OVERHEAD: usize = 512;

/// The bytes the tail caches of one log hold together, each tail adding and removing its own.
#[derive(Debug, Default)]
pub(crate) struct Usage(AtomicUsize);

impl Usage {
    /// The bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.0.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// How large each tail cache may grow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub(crate) records: usize,
    pub(crate) bytes: usize,
    /// The fewest base records kept.
    pub(crate) bases: usize,
    /// How long a base stays kept once a newer one arrived: every offset handed out within
    /// it stays readable (the retention's time floor).
    pub(crate) keep_for: Duration,
}

/// What a read found in the cache.
#[derive(Debug)]
pub(crate) enum Found {
    /// The records after the offset (none when it is the tail), all from the cache.
    Entries(Vec<Arc<Entry>>),
    /// The offset is older than the cache: read the store.
    Miss,
    /// The offset is before the oldest kept base, or beyond the tail: `410 Gone`.
    Gone,
}

/// The tail of one address's log.
#[derive(Debug)]
pub(crate) struct Tail {
    state: Mutex<State>,
    /// What each framing carries from record to record for this address (a door's mirror of
    /// the value), shared by its readers ([`Tail::carry`]).
    #[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
    carries: Mutex<[Option<Arc<dyn Any + Send + Sync>>; SLOTS]>,
    last: watch::Sender<u64>,
    /// What this tail adds to its log's usage beside its entries.
    fixed: usize,
}

#[derive(Debug)]
struct State {
    bounds: Bounds,
    /// The address's newest records, contiguous, oldest first.
    entries: VecDeque<Arc<Entry>>,
    /// What `entries` cost ([`Entry::cost`]), also counted in `usage`.
    bytes: usize,
    usage: Arc<Usage>,
    /// The kept base records, oldest first (each counted in `bytes`).
    bases: VecDeque<Kept>,
    /// The newest record retention dropped (0: none); readers start after it.
    floor: u64,
    /// The address's last record (0: none).
    last: u64,
    /// When this tail was loaded: the bases it found then count as seen then.
    loaded: Instant,
    /// When the last record arrived here (appended, or brought by a follower); `None` for a
    /// last record found at load.
    arrived: Option<Instant>,
}

/// A kept base record.
#[derive(Clone, Copy, Debug)]
struct Kept {
    /// The seq of the address's record before it.
    prev: u64,
    /// Whether it is a checkpoint.
    checkpoint: bool,
    /// When this tail saw it (appended here, brought by a follower, or found at load).
    at: Instant,
}

/// What one kept base costs in the tail's bytes.
const KEPT: usize = std::mem::size_of::<Kept>();

/// Where a tail stands: what HEAD and every response report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Position {
    /// The newest record retention dropped: reading from `-1` starts after it.
    pub(crate) floor: u64,
    /// Where a reader with no value starts: before the latest base batch.
    pub(crate) base: BaseOffset,
    /// The last record.
    pub(crate) last: u64,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    fn push_back(&mut self, entry: Arc<Entry>) {
        let cost = entry.cost();
        self.bytes += cost;
        self.usage.add(cost);
        self.entries.push_back(entry);
    }

    fn push_front(&mut self, entry: Arc<Entry>) {
        let cost = entry.cost();
        self.bytes += cost;
        self.usage.add(cost);
        self.entries.push_front(entry);
    }

    fn pop_front(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            let cost = e.cost();
            self.bytes -= cost;
            self.usage.sub(cost);
        }
    }

    fn push_base(&mut self, kept: Kept, newest: bool) {
        self.bytes += KEPT;
        self.usage.add(KEPT);
        if newest {
            self.bases.push_back(kept);
        } else {
            self.bases.push_front(kept);
        }
    }

    /// Lets go of the oldest kept bases that retention no longer serves: one goes once more
    /// than the fewest kept are here and the base after it was seen at least `keep_for`
    /// ago, as every offset handed out since is after that base. The floor moves to before
    /// the oldest base left.
    fn retire(&mut self, now: Instant) {
        while self.bases.len() > self.bounds.bases.max(1)
            && now.saturating_duration_since(self.bases[1].at) >= self.bounds.keep_for
        {
            self.bases.pop_front();
            self.bytes -= KEPT;
            self.usage.sub(KEPT);
            self.floor = self.bases[0].prev;
        }
    }
}

impl Tail {
    /// A tail built from the address's newest records, newest first (as a descending read
    /// gives them), each with the seq of the record before it. Only the newest that fit the
    /// bounds need their batch text. What it holds is added to `usage`, `fixed` bytes (what
    /// it holds beside its entries) included, until it is dropped.
    pub(crate) fn load(
        bounds: Bounds,
        usage: Arc<Usage>,
        fixed: usize,
        newest_first: Vec<(Record, u64)>,
    ) -> Tail {
        let last = newest_first.first().map_or(0, |(r, _)| r.seq);
        usage.add(fixed);
        let loaded = Instant::now();
        let mut state = State {
            bounds,
            entries: VecDeque::new(),
            bytes: 0,
            usage,
            bases: VecDeque::new(),
            floor: 0,
            last,
            loaded,
            arrived: None,
        };
        // The cache holds the newest records, contiguous: once one does not fit, no older one
        // goes in (their batch text may not even have been kept).
        let mut full = false;
        for (record, prev) in &newest_first {
            let tag = record.tag.as_deref();
            if is_base_tag(tag) && state.bases.len() < bounds.bases {
                let kept = Kept {
                    prev: *prev,
                    checkpoint: tag == Some(CHECKPOINT),
                    at: loaded,
                };
                state.push_base(kept, false);
            }
            full = full
                || state.entries.len() >= bounds.records
                || (!state.entries.is_empty() && state.bytes + record.batch.len() > bounds.bytes);
            if !full {
                state.push_front(Arc::new(Entry::from_record(record, *prev)));
            }
        }
        if state.bases.len() == bounds.bases {
            state.floor = state.bases[0].prev;
        }
        // Nothing before the floor is served: drop what the cache holds of it.
        while state.entries.front().is_some_and(|e| e.seq <= state.floor) {
            state.pop_front();
        }
        Tail {
            state: Mutex::new(state),
            carries: Mutex::new(Default::default()),
            last: watch::channel(last).0,
            fixed,
        }
    }

    /// Adds the address's next record; one at or before the last is already here, and is
    /// ignored (the log's own appends and a follower of the store may both bring a record).
    /// Returns whether it was added.
    pub(crate) fn push(&self, seq: u64, tag: Option<&str>, batch: &str) -> bool {
        {
            let mut state = lock(&self.state);
            if seq <= state.last {
                return false;
            }
            let entry = Arc::new(Entry::new(seq, state.last, tag, batch));
            let now = Instant::now();
            if is_base_tag(tag) {
                let kept = Kept {
                    prev: state.last,
                    checkpoint: entry.checkpoint,
                    at: now,
                };
                state.push_base(kept, true);
            }
            state.retire(now);
            state.last = seq;
            state.arrived = Some(now);
            state.push_back(entry);
            let floor = state.floor;
            while state.entries.len() > 1
                && (state.entries.len() > state.bounds.records
                    || state.bytes > state.bounds.bytes
                    || state.entries[0].seq <= floor)
            {
                state.pop_front();
            }
        }
        self.last.send_replace(seq);
        true
    }

    /// Adds records read from the store, oldest first, each the next of the one before (the
    /// first follows a record at or before the last here): those already here are ignored.
    pub(crate) fn extend(&self, records: &[Record]) {
        for r in records {
            self.push(r.seq, r.tag.as_deref(), &r.batch);
        }
    }

    /// Drops the oldest entries until `bytes` are freed or none is left (but the newest, when
    /// `keep_newest`); readers of what went read the store. Returns what was freed.
    pub(crate) fn free(&self, bytes: usize, keep_newest: bool) -> usize {
        let mut state = lock(&self.state);
        let before = state.bytes;
        let keep = usize::from(keep_newest);
        while state.entries.len() > keep && before - state.bytes < bytes {
            state.pop_front();
        }
        before - state.bytes
    }

    /// What this tail adds to its log's usage: its entries and what it holds beside them.
    pub(crate) fn cost(&self) -> usize {
        lock(&self.state).bytes + self.fixed
    }

    /// How many readers wait on this tail ([`subscribe`](Tail::subscribe)rs alive).
    pub(crate) fn readers(&self) -> usize {
        self.last.receiver_count()
    }

    /// Where the tail stands.
    pub(crate) fn position(&self) -> Position {
        let state = lock(&self.state);
        let base = match state.bases.back() {
            Some(kept) => BaseOffset {
                before: kept.prev,
                checkpoint: kept.checkpoint,
            },
            None => BaseOffset {
                before: state.floor,
                checkpoint: false,
            },
        };
        Position {
            floor: state.floor,
            base,
            last: state.last,
        }
    }

    /// Whether an offset before the floor may still be read from the store: while this tail
    /// is younger than the time floor, the bases it found at load stand for bases of unknown
    /// age, and the records before them are the store's to serve (or to answer gone for).
    pub(crate) fn defers_before_floor(&self) -> bool {
        let state = lock(&self.state);
        state.loaded.elapsed() < state.bounds.keep_for
    }

    /// How long ago the address's last record arrived here; `None` when it was in the log
    /// when this tail was loaded.
    #[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
    pub(crate) fn since_last(&self) -> Option<Duration> {
        lock(&self.state).arrived.map(|at| at.elapsed())
    }

    /// The address's last record, when the cache holds it.
    #[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
    pub(crate) fn newest(&self) -> Option<Arc<Entry>> {
        let state = lock(&self.state);
        state
            .entries
            .back()
            .filter(|e| e.seq == state.last)
            .cloned()
    }

    /// The records after `after`, at most `max_bytes` of batches (at least one record).
    pub(crate) fn read(&self, after: u64, max_bytes: usize) -> Found {
        let state = lock(&self.state);
        if after > state.last {
            return Found::Gone;
        }
        if after < state.floor {
            return if state.loaded.elapsed() < state.bounds.keep_for {
                Found::Miss
            } else {
                Found::Gone
            };
        }
        if after == state.last {
            return Found::Entries(Vec::new());
        }
        match state.entries.front() {
            Some(first) if first.prev <= after => {}
            _ => return Found::Miss,
        }
        let from = state.entries.partition_point(|e| e.seq <= after);
        let mut out = Vec::new();
        let mut bytes = 0;
        for e in state.entries.range(from..) {
            if !out.is_empty() && bytes + e.batch.len() > max_bytes {
                break;
            }
            bytes += e.batch.len();
            out.push(Arc::clone(e));
        }
        Found::Entries(out)
    }

    /// Fills `entry`'s `slot` with `frame` (unless a reader filled it first: then that is
    /// kept) and returns what the slot holds. The frame counts in the cache's byte bound
    /// while the entry is cached; the oldest entries go if it passes the bound.
    pub(crate) fn set_frame(&self, entry: &Entry, slot: Slot, frame: Vec<u8>) -> Bytes {
        let cost = frame.capacity() + BYTES_HEADER;
        let frame = Bytes::from(frame);
        let mut state = lock(&self.state);
        let cell = &entry.frames[slot.index()];
        if cell.set(frame).is_err() {
            return cell.get().cloned().unwrap_or_default();
        }
        let cached = state
            .entries
            .front()
            .is_some_and(|first| first.seq <= entry.seq && entry.seq <= state.last)
            && state
                .entries
                .back()
                .is_some_and(|last| entry.seq <= last.seq);
        if cached {
            // Under the lock, as every change of what the cache counts.
            entry.charged.fetch_add(cost, Ordering::Relaxed);
            state.bytes += cost;
            state.usage.add(cost);
            while state.entries.len() > 1
                && state.bytes > state.bounds.bytes
                && state.entries[0].seq < entry.seq
            {
                state.pop_front();
            }
        }
        cell.get().cloned().unwrap_or_default()
    }

    /// What `slot`'s framing carries from record to record for this address (a door's
    /// mirror of the value), shared by its readers: `C::default()` at first, and for a tail
    /// loaded anew.
    #[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
    pub(crate) fn carry<C: Default + Send + Sync + 'static>(&self, slot: Slot) -> Arc<C> {
        let mut carries = self.carries.lock().unwrap_or_else(PoisonError::into_inner);
        let held = &mut carries[slot.index()];
        if let Some(carry) = held.as_ref() {
            if let Ok(carry) = Arc::clone(carry).downcast::<C>() {
                return carry;
            }
        }
        let carry = Arc::new(C::default());
        *held = Some(Arc::clone(&carry) as Arc<dyn Any + Send + Sync>);
        carry
    }

    /// A receiver that changes when a record is appended.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        state.usage.sub(state.bytes + self.fixed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BASE;

    fn record(seq: u64, base: bool) -> Record {
        Record {
            seq,
            batch: if base {
                format!(r#"[["r",{seq}]]"#)
            } else {
                format!(r#"[["s",["n"],{seq}]]"#)
            },
            tag: base.then(|| BASE.to_owned()),
        }
    }

    fn seqs(found: Found) -> Vec<u64> {
        match found {
            Found::Entries(e) => e.iter().map(|e| e.seq).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retention_moves_the_floor_to_before_the_oldest_kept_base() {
        let bounds = Bounds {
            records: 3,
            bytes: 1 << 20,
            bases: 2,
            keep_for: Duration::ZERO,
        };
        let tail = Tail::load(
            bounds,
            Arc::default(),
            0,
            vec![(record(2, false), 1), (record(1, true), 0)],
        );
        assert_eq!(seqs(tail.read(0, 1 << 20)), [1, 2]);
        tail.push(5, Some(BASE), r#"[["r",5]]"#);
        tail.push(7, None, r#"[["s",["n"],7]]"#);
        // The cache holds 3 records: 2, 5, 7. Reading from 0 needs the store.
        assert!(matches!(tail.read(0, 1 << 20), Found::Miss));
        assert_eq!(seqs(tail.read(2, 1 << 20)), [5, 7]);
        assert_eq!(seqs(tail.read(7, 1 << 20)), Vec::<u64>::new());
        assert!(matches!(tail.read(8, 1 << 20), Found::Gone));
        // A third base: the first is no longer kept.
        tail.push(9, Some(BASE), r#"[["r",9]]"#);
        let p = tail.position();
        assert_eq!((p.floor, p.base.before, p.last), (2, 7, 9));
        assert!(matches!(tail.read(1, 1 << 20), Found::Gone));
        assert_eq!(seqs(tail.read(2, 1 << 20)), [5, 7, 9]);
        assert_eq!(
            seqs(tail.read(2, 1)),
            [5],
            "at least one record, then the byte bound"
        );
    }

    #[test]
    fn a_record_already_here_is_ignored_whoever_brings_it() {
        let bounds = Bounds {
            records: 10,
            bytes: 1 << 20,
            bases: 4,
            keep_for: Duration::ZERO,
        };
        let tail = Tail::load(
            bounds,
            Arc::default(),
            0,
            vec![(record(2, false), 1), (record(1, true), 0)],
        );
        assert!(tail.push(4, None, r#"[["s",["n"],4]]"#));
        assert!(!tail.push(4, None, r#"[["s",["n"],4]]"#), "a duplicate");
        assert!(!tail.push(3, None, r#"[["s",["n"],3]]"#), "an older one");
        // The store's records from before the last: only the newer ones go in.
        tail.extend(&[record(4, false), record(6, true), record(8, false)]);
        assert_eq!(seqs(tail.read(0, 1 << 20)), [1, 2, 4, 6, 8]);
        let p = tail.position();
        assert_eq!((p.base.before, p.last), (4, 8));
        assert_eq!(tail.readers(), 0);
        let rx = tail.subscribe();
        assert_eq!(tail.readers(), 1);
        drop(rx);
    }

    #[test]
    fn the_cache_stays_contiguous_when_a_record_does_not_fit() {
        let bounds = Bounds {
            records: 10,
            bytes: 600,
            bases: 4,
            keep_for: Duration::ZERO,
        };
        let big = Record {
            seq: 2,
            batch: format!(r#"[["s",["n"],"{}"]]"#, "x".repeat(500)),
            tag: None,
        };
        // Newest first: 3 fits, 2 does not, 1 would fit again but must stay out.
        let tail = Tail::load(
            bounds,
            Arc::default(),
            0,
            vec![(record(3, false), 2), (big, 1), (record(1, true), 0)],
        );
        assert!(matches!(tail.read(0, 1 << 20), Found::Miss));
        assert!(matches!(tail.read(1, 1 << 20), Found::Miss));
        assert_eq!(seqs(tail.read(2, 1 << 20)), [3]);
    }

    #[test]
    fn what_a_tail_holds_is_counted_in_its_usage_until_it_goes() {
        let bounds = Bounds {
            records: 10,
            bytes: 1 << 20,
            bases: 4,
            keep_for: Duration::ZERO,
        };
        let usage = Arc::new(Usage::default());
        let tail = Tail::load(bounds, Arc::clone(&usage), 100, vec![(record(1, true), 0)]);
        let one = usage.bytes();
        // The fixed part, the kept base, and one entry of at least its batch and events.
        assert!(one > 100 + KEPT + 2 * r#"[["r",1]]"#.len(), "{one}");
        assert_eq!(tail.cost(), one);
        tail.push(2, Some(BASE), r#"[["r",2]]"#);
        tail.push(3, Some(BASE), r#"[["r",3]]"#);
        let three = usage.bytes();
        assert!(three > one);
        // Freeing keeps the newest when asked to, and says what it freed.
        let freed = tail.free(usize::MAX, true);
        assert_eq!(usage.bytes(), three - freed);
        assert!(matches!(tail.read(0, 1 << 20), Found::Miss));
        assert_eq!(seqs(tail.read(2, 1 << 20)), [3]);
        tail.free(usize::MAX, false);
        assert_eq!(
            usage.bytes(),
            100 + 3 * KEPT,
            "the fixed part and the three bases kept"
        );
        assert!(matches!(tail.read(2, 1 << 20), Found::Miss));
        drop(tail);
        assert_eq!(usage.bytes(), 0);
    }

    #[test]
    fn a_base_newer_than_the_time_floor_keeps_the_ones_before_it() {
        let bounds = Bounds {
            records: 100,
            bytes: 1 << 20,
            bases: 1,
            keep_for: Duration::from_secs(3600),
        };
        let usage = Arc::new(Usage::default());
        let tail = Tail::load(bounds, Arc::clone(&usage), 0, vec![(record(1, true), 0)]);
        for seq in 2..=6 {
            tail.push(seq, Some(BASE), &format!(r#"[["r",{seq}]]"#));
        }
        // Six bases where one is the fewest kept: all six were seen within the hour, so every
        // offset from the first on is still served (from the cache).
        let p = tail.position();
        assert_eq!((p.floor, p.base.before, p.last), (0, 5, 6));
        assert_eq!(seqs(tail.read(0, 1 << 20)), [1, 2, 3, 4, 5, 6]);
        let held = usage.bytes();
        // An hour later the bases before the newest go, and their slots with them.
        {
            let mut state = lock(&tail.state);
            state.retire(Instant::now() + Duration::from_secs(3600));
        }
        let p = tail.position();
        assert_eq!((p.floor, p.base.before), (5, 5));
        assert_eq!(usage.bytes(), held - 5 * KEPT);
        // The entries before the floor are no longer served from here.
        assert!(matches!(tail.read(1, 1 << 20), Found::Miss | Found::Gone));
        assert_eq!(seqs(tail.read(5, 1 << 20)), [6]);
    }
}
