//! [`Compaction`]: when a [`Log`](super::Log) removes from its store what its retention no
//! longer serves.

/// When a [`Log`](super::Log) removes from its store the records its
/// [`Retention`](super::Retention) no longer serves
/// ([`Store::compact`](crate::store::Store::compact) with the retention's number of bases).
///
/// The log counts the base records appended through it to each address. At the first one
/// after the log was built, and then at every `n`-th, it compacts that address, right after
/// the append returned from the store and the record reached the tail cache (so readers
/// before the new oldest kept base already get `410 Gone`), under the store's lock: appends
/// and store reads wait meanwhile, cache reads do not. Cost: for a `JsonlStore`, a rewrite of
/// the whole file (`O(file size)`; every address's lines); for the databases, deleting the
/// removed rows. With a [`Checkpoint`](crate::store::Checkpoint) of `b` batches, retention
/// `Bases(k)` and `EveryBases(n)`, an address holds between about `k * b` and
/// `(k + n - 1) * b` batches in the store. A failed compaction leaves the records as they
/// were and does not fail the append; the next base tries again
/// ([`Log::compaction_failure`](super::Log::compaction_failure) says why it failed).
///
/// ```
/// use chord::streams::{LogBuilder, Compaction};
/// assert_eq!(Compaction::default(), Compaction::EveryBases(4));
/// # let dir = tempfile::tempdir()?;
/// # let store = chord::store::JsonlStore::open(dir.path().join("l"), Default::default())?;
/// let log = LogBuilder::new().compaction(Compaction::EveryBases(1)).build(store);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compaction {
    /// Never: every record stays in the store (call
    /// [`Store::compact`](crate::store::Store::compact) yourself).
    Off,
    /// Compact an address at its first base record after the log was built, then at every
    /// `n`-th (at least 1).
    EveryBases(usize),
}

impl Default for Compaction {
    /// [`Compaction::EveryBases`]`(4)`: a JSONL file is rewritten once per four checkpoints
    /// of an address, not at each.
    fn default() -> Self {
        Compaction::EveryBases(4)
    }
}

impl Compaction {
    /// Every how many base records an address is compacted; `None` for never.
    pub(crate) fn every(self) -> Option<usize> {
        match self {
            Compaction::Off => None,
            Compaction::EveryBases(n) => Some(n.max(1)),
        }
    }
}
