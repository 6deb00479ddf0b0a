//! The frames of a record: what each framing makes of it once, for every reader of its door.
//!
//! A cached record ([`Entry`](super::tail::Entry)) has slots of its own for each framing: the
//! Durable Streams reader's at the tail, and two for each protocol [`Door`] of runs. The first
//! reader of a framing to reach the record fills its slot; every later reader is sent the
//! same bytes, and a reader of another door never sees them. A filled slot counts in the tail
//! cache's byte bound, as the record's batch does.

/// A protocol door that frames a run's records as its own events, with slots of its own in
/// each cached record (and a carry of its own in each tail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
pub(crate) enum Door {
    /// AG-UI's events.
    AgUi = 0,
    /// The AI SDK's UI message stream chunks.
    #[cfg_attr(not(feature = "ai-sdk"), allow(dead_code))]
    AiSdk = 1,
}

/// How many doors have slots.
const DOORS: usize = 2;

/// A framing's slot in each cached record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot(usize);

#[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
impl Slot {
    /// A Durable Streams reader at the tail: the record's `data` event and the `control`
    /// event saying the reader is up to date at it.
    pub(crate) const TAIL: Slot = Slot(0);

    /// `door`'s events of the record for a reader that had the record before it.
    pub(crate) const fn passing(door: Door) -> Slot {
        Slot(1 + 2 * door as usize)
    }

    /// `door`'s events of the run as it stands after a record, for a reader that starts
    /// there with nothing: the run's start, its state and messages whole (for a base record,
    /// the events it gives such a reader).
    pub(crate) const fn start(door: Door) -> Slot {
        Slot(2 + 2 * door as usize)
    }

    /// The slot's index among a record's [`SLOTS`].
    pub(crate) const fn index(self) -> usize {
        self.0
    }
}

/// How many slots each cached record has.
pub(crate) const SLOTS: usize = 1 + 2 * DOORS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_framing_has_slots_of_its_own() {
        let doors = [Door::AgUi, Door::AiSdk];
        assert_eq!(doors.len(), DOORS);
        let mut slots = vec![Slot::TAIL.index()];
        for door in doors {
            slots.push(Slot::passing(door).index());
            slots.push(Slot::start(door).index());
        }
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), SLOTS, "no two framings share a slot");
        assert!(slots.iter().all(|&i| i < SLOTS), "{slots:?}");
    }
}
