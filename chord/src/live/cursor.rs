//! [`Cursor`]: one reader's position in one address's log, yielding the records after it as
//! they come: from the tail cache, or from the store when the reader is behind the cache,
//! waiting at the tail for the next. Every door's live responses read through one, and only
//! map what it yields to their protocol's events.

use std::sync::Arc;
use std::task::{Context, Poll};

use super::log::Source;
use super::metrics::{self, Reading};
use super::sse::{Changes, Pending};
use super::tail::{Entry, Found, Tail};
use crate::store::{Address, Record};

/// What a cursor yields next.
pub(crate) enum Step {
    /// The next records, from the tail cache (each shared by every reader of the address).
    Entries(Vec<Arc<Entry>>),
    /// The next records, read from the store (the reader is behind the cache).
    Records(Vec<Record>),
    /// Nothing new: the reader is at the tail, and the cursor waits for the next record.
    /// Yielded once each time the reader catches up.
    Idle,
    /// The position was compacted away (before the oldest base kept), or is beyond the tail:
    /// the client's next request answers `410`.
    Gone,
    /// The store could not be read (counted, traced): what the door says of it is its own.
    Failed(String),
    /// The log's signal is gone (the log was dropped): nothing more.
    End,
}

/// One reader's position in one address's log.
pub(crate) struct Cursor {
    source: Arc<dyn Source>,
    address: Address,
    tail: Arc<Tail>,
    changes: Changes,
    /// The last record yielded (or skipped): the next read is after it.
    after: u64,
    /// Most bytes of batches one read yields (a single larger record is yielded whole).
    chunk: usize,
    /// A store read in flight.
    read: Option<Pending<Result<Option<Vec<Record>>, String>>>,
    /// `Idle` was yielded since the last records.
    idle: bool,
    /// Counts this reader of the address while it lives.
    _reading: Reading,
}

impl Cursor {
    /// A cursor after record `after` of `address`, whose tail is `tail`. Subscribed to the
    /// tail's signal now, so no record appended after this call is missed.
    pub(crate) fn new(
        source: Arc<dyn Source>,
        address: Address,
        tail: Arc<Tail>,
        after: u64,
        chunk: usize,
    ) -> Cursor {
        Cursor {
            changes: Changes::new(tail.subscribe()),
            _reading: Reading::new(&address),
            source,
            address,
            tail,
            after,
            chunk,
            read: None,
            idle: false,
        }
    }

    /// The last record yielded: the reader's position.
    pub(crate) fn after(&self) -> u64 {
        self.after
    }

    /// Moves the reader to after record `after` (a door that skips ahead, or starts over).
    pub(crate) fn seek(&mut self, after: u64) {
        self.after = after;
        self.read = None;
    }

    /// The address's tail cache.
    pub(crate) fn tail(&self) -> &Arc<Tail> {
        &self.tail
    }

    /// The address read.
    pub(crate) fn address(&self) -> &Address {
        &self.address
    }

    /// The next step, or `Pending` (with `cx`'s waker registered) until there is one.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        loop {
            if let Some(read) = self.read.as_mut() {
                let Poll::Ready(read) = read.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                self.read = None;
                return Poll::Ready(match read {
                    Ok(Some(records)) => {
                        if let Some(last) = records.last() {
                            self.after = last.seq;
                        }
                        self.idle = false;
                        Step::Records(records)
                    }
                    // Compacted away meanwhile: gone, as the cache would say now.
                    Ok(None) => Step::Gone,
                    Err(why) => Step::Failed(why),
                });
            }
            match self.changes.poll_turn(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(false) => return Poll::Ready(Step::End),
                Poll::Ready(true) => {}
            }
            match read(
                &self.source,
                &self.address,
                &self.tail,
                self.after,
                self.chunk,
            ) {
                Read::Gone => return Poll::Ready(Step::Gone),
                Read::Stored(read) => self.read = Some(read),
                Read::Cached(entries) if !entries.is_empty() => {
                    if let Some(last) = entries.last() {
                        self.after = last.seq;
                    }
                    self.idle = false;
                    return Poll::Ready(Step::Entries(entries));
                }
                Read::Cached(_) => {
                    self.changes.caught_up();
                    if !self.idle {
                        self.idle = true;
                        return Poll::Ready(Step::Idle);
                    }
                }
            }
        }
    }
}

/// What one read after a position found.
pub(crate) enum Read {
    /// The records after it (none when it is the tail), all from the tail cache.
    Cached(Vec<Arc<Entry>>),
    /// The position is behind the cache: the store's records after it, being read off the
    /// runtime's workers (`Ok(None)`: compacted away meanwhile).
    Stored(Pending<Result<Option<Vec<Record>>, String>>),
    /// The position is before the oldest base kept, or beyond the tail.
    Gone,
}

/// The records after `after` of `address`, at most `max_bytes` of batches (a single larger
/// record whole): from the tail cache, or else from the store, on the blocking pool, counted
/// in `chord_cache_misses_total`, traced as `chord.store.read`, and a failure counted in
/// `chord_read_errors_total`. Every read of a log behind its cache goes through here.
pub(crate) fn read(
    source: &Arc<dyn Source>,
    address: &Address,
    tail: &Tail,
    after: u64,
    max_bytes: usize,
) -> Read {
    match tail.read(after, max_bytes) {
        Found::Entries(entries) => Read::Cached(entries),
        Found::Gone => Read::Gone,
        Found::Miss => {
            metrics::cache_miss();
            let source = Arc::clone(source);
            let address = address.clone();
            let span = tracing::debug_span!("chord.store.read", stream = %address, after);
            let read = tokio::task::spawn_blocking(move || {
                span.in_scope(|| source.read(&address, after, max_bytes))
                    .map_err(|e| format!("reading {address}: {e}"))
            });
            Read::Stored(Box::pin(async move {
                let read = read
                    .await
                    .unwrap_or_else(|_| Err("the read was cancelled".to_owned()));
                if read.is_err() {
                    metrics::read_failed();
                }
                read
            }))
        }
    }
}
