//! The frames of a record: what each framing makes of it once, for every reader of its door.
//!
//! A cached record ([`Entry`](super::tail::Entry)) has one slot per framing. The first reader
//! of a door to reach the record fills its slot; every later reader is sent the same bytes.
//! A filled slot counts in the tail cache's byte bound, as the record's batch does.

/// A framing's slot in each cached record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A Durable Streams reader at the tail: the record's `data` event and the `control`
    /// event saying the reader is up to date at it.
    Tail = 0,
    /// A door's events of the record for a reader that had the record before it.
    Passing = 1,
    /// A door's events of a base record for a reader that starts at it (with no value).
    Start = 2,
}

/// How many slots each cached record has.
pub(crate) const SLOTS: usize = 3;
