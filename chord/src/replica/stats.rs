//! What a replica reports: counters over its life, and why its last subscription ended.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Counters over a replica's life, from [`Replica::stats`](super::Replica::stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Connections that started from the latest base batch (the first, and each restart after
    /// a `410 Gone`, a bad offset, or a batch that did not decode or apply: see
    /// [`Break::restarts`]) and received their first `control` event (counted before its
    /// batches are applied).
    pub subscriptions: u64,
    /// Connections that resumed from the offset the replica held (no base batch) and
    /// received their first `control` event.
    pub resumes: u64,
    /// Base batches applied: one per start, plus any the producer wrote into the stream.
    pub bases: u64,
    /// Bytes of event streams received.
    pub bytes: u64,
    /// Batches applied, base batches included.
    pub batches: u64,
    /// Subscriptions (or attempts) that ended.
    pub breaks: u64,
    /// Why the last one ended.
    pub last_break: Option<Break>,
}

/// Why a connection ended, from [`Stats::last_break`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Break {
    /// Connecting, sending the request or reading the response failed.
    #[error("connection failed: {0}")]
    Connection(String),
    /// The server answered with a status other than 200 (`410`: the offset is no longer
    /// served, and the replica restarts from the latest base batch).
    #[error("the server answered {0}")]
    Status(u16),
    /// The response is not `text/event-stream`.
    #[error("the response is not text/event-stream")]
    NotEventStream,
    /// The stream ended.
    #[error("the stream ended")]
    Ended,
    /// Nothing arrived (no response, not even a keep-alive comment) for the idle timeout.
    #[error("the stream went silent")]
    Idle,
    /// The stream is not readable as events (see the message).
    #[error("unreadable event stream: {0}")]
    Events(String),
    /// An event did not decode as a wire batch.
    #[error("a batch did not decode: {0}")]
    Decode(String),
    /// The first batch of a start was not a base batch.
    #[error("the first batch of a start is not a base batch")]
    NotBase,
    /// A batch did not apply to the replica's value.
    #[error("a batch did not apply: {0}")]
    Apply(String),
    /// The server handed out an offset that is not one by the protocol's grammar (a
    /// `streamNextOffset`, or a `Chord-Base-Offset` header): the position it names cannot be
    /// trusted, so the replica restarts from the latest base batch.
    #[error("the server sent a bad offset: {0}")]
    BadOffset(String),
}

impl Break {
    /// Whether the replica must start again from the latest base batch: the server no longer
    /// serves its offset (410) or the stream (404), it handed out a bad offset, or the
    /// replica's decoder or value can no longer be trusted. Other breaks resume from the
    /// offset held.
    pub fn restarts(&self) -> bool {
        matches!(
            self,
            Break::Status(404 | 410)
                | Break::Decode(_)
                | Break::NotBase
                | Break::Apply(_)
                | Break::BadOffset(_)
        )
    }
}

/// The counters behind [`Stats`], shared by a replica and its follower.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) subscriptions: AtomicU64,
    pub(super) resumes: AtomicU64,
    pub(super) bases: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) batches: AtomicU64,
    pub(super) breaks: AtomicU64,
    pub(super) last_break: Mutex<Option<Break>>,
}

impl Counters {
    /// The counters now.
    pub(super) fn snapshot(&self) -> Stats {
        Stats {
            subscriptions: self.subscriptions.load(Ordering::Relaxed),
            resumes: self.resumes.load(Ordering::Relaxed),
            bases: self.bases.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            breaks: self.breaks.load(Ordering::Relaxed),
            last_break: self
                .last_break
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }
}
