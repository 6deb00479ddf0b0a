//! [`Retention`]: how much of each log readers may still read.

/// How much history a stream serves: readers may resume anywhere from the oldest *kept* base
/// batch on; an offset before it answers `410 Gone`, and the client restarts from the latest
/// base.
///
/// A base is kept while it is one of the last `n`, and also while the base after it is
/// younger than the log's time floor ([`LogBuilder::keep_for`](super::LogBuilder::keep_for),
/// 6 minutes by default): an offset handed out within the floor (a cached answer's
/// `Stream-Next-Offset`) stays readable however many bases came since.
///
/// Retention is applied to what the server serves (the records before the oldest kept base
/// are never read again), and to the store: the [`Log`](super::Log) removes those records
/// ([`Store::compact`](crate::store::Store::compact)) as its
/// [`Compaction`](super::Compaction) policy says (by default at an address's first base
/// record after the log starts, then at every fourth). A reader at an offset before the
/// oldest kept base, or in a range compacted meanwhile, gets `410 Gone`, never the records
/// after the gap as if they followed its offset.
///
/// ```
/// use chord::streams::Retention;
/// assert_eq!(Retention::default(), Retention::Bases(4));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// Keep the last `n` base batches (at least 1) and everything after the oldest of them.
    /// With a [`Checkpoint`](crate::store::Checkpoint) of `b` batches, a reader can resume
    /// after a gap of about `(n - 1) * b` batches without a new base, or of the time floor,
    /// whichever is longer.
    Bases(usize),
}

impl Default for Retention {
    /// [`Retention::Bases`]`(4)`.
    fn default() -> Self {
        Retention::Bases(4)
    }
}

impl Retention {
    pub(crate) fn bases(self) -> usize {
        match self {
            Retention::Bases(n) => n.max(1),
        }
    }
}
