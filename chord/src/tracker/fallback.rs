//! Whole-value fallbacks: locations whose change reached the tracker through a plain `&mut`
//! of a container (a proxy's `DerefMut`), so that the flush had to serialize the value and
//! diff it against the last one, instead of writing the ops the proxy's own methods record.
//!
//! The fallback stays implicit: any `&mut Vec<T>` API keeps working on a field (`sort`,
//! `retain`, a helper written for plain Rust), and the batch is still exact. But it costs a
//! serialization of the whole value at every flush, and its batch may be larger than the
//! proxy's, so each tracker counts them by path ([`Tracker::fallbacks`]) and reports each at
//! `DEBUG` as a `tracing` event (target `chord::fallback`, with the path and the bytes).

use crate::path::Path;
use crate::tracker::node::Node;
use crate::tracker::out::Out;
use crate::tracker::trail::Trail;
use crate::Result;

#[cfg(doc)]
use crate::Tracker;

/// Paths kept apart in [`Fallbacks`]; the flushes of further paths count in the totals.
pub const FALLBACK_PATHS: usize = 32;

/// What a tracker's flushes diffed whole, since it was made or since
/// [`Tracker::take_fallbacks`]: how many locations, the bytes of the ops they produced, and
/// the same per path for the first [`FALLBACK_PATHS`] paths.
///
/// ```
/// use chord::{track, Tracked};
/// #[derive(Tracked, serde::Serialize, Default)]
/// struct Lane { log: Vec<String>, count: u64 }
///
/// fn log(lines: &mut Vec<String>, line: &str) { // a helper written for plain Rust
///     lines.push(line.to_owned());
/// }
/// let mut lane = track(Lane::default());
/// lane.flush()?; // the base batch
/// log(&mut lane.state().log, "started");          // through `DerefMut`: a fallback
/// lane.state().log.push("through the proxy".into()); // a recorded push
/// *lane.state().count += 1;                        // a leaf: never a fallback
/// lane.flush()?;
/// let fallbacks = lane.fallbacks();
/// assert_eq!(fallbacks.diffs(), 1);
/// let (path, diffs, bytes) = fallbacks.paths().next().unwrap();
/// assert_eq!((path.to_string(), diffs), ("log".to_owned(), 1));
/// assert!(bytes > 0);
/// # Ok::<(), chord::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fallbacks {
    diffs: u64,
    bytes: u64,
    paths: Vec<(Path, u64, u64)>,
}

impl Fallbacks {
    /// Locations flushed by a whole-value diff.
    pub fn diffs(&self) -> u64 {
        self.diffs
    }

    /// Bytes of the ops those flushes wrote (as compact JSON, paths written in full).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Per path: the path, its diffs, their bytes; in the order first seen.
    pub fn paths(&self) -> impl Iterator<Item = (&Path, u64, u64)> {
        self.paths.iter().map(|(p, d, b)| (p, *d, *b))
    }

    /// Adds one flush's fallbacks, leaving `flushed` empty (most flushes have none: nothing
    /// is done for them).
    #[inline]
    pub(crate) fn add(&mut self, flushed: &mut Vec<(Path, u64)>) {
        if !flushed.is_empty() {
            self.count(flushed);
        }
    }

    #[cold]
    #[inline(never)]
    fn count(&mut self, flushed: &mut Vec<(Path, u64)>) {
        // The name `streams::metrics::FALLBACKS` documents; a no-op without a recorder.
        metrics::counter!("chord_fallbacks_total").increment(flushed.len() as u64);
        for (path, bytes) in flushed.drain(..) {
            tracing::debug!(target: "chord::fallback", path = %path, bytes, "a whole-value diff");
            self.diffs += 1;
            self.bytes += bytes;
            if let Some(entry) = self.paths.iter_mut().find(|(p, ..)| *p == path) {
                entry.1 += 1;
                entry.2 += bytes;
            } else if self.paths.len() < FALLBACK_PATHS {
                self.paths.push((path, 1, bytes));
            }
        }
    }
}

/// Marks `node`'s value as reached through a plain `&mut` (a container proxy's `DerefMut`).
#[inline]
pub(crate) fn fell_back(node: Option<&mut Node>) {
    if let Some(node) = node {
        node.fell_back = true;
        node.mark_written();
    }
}

/// Runs `flush` for `node` at `path`, counting what it writes as a fallback when the node's
/// value was reached through a plain `&mut` since the last flush.
#[inline]
pub(crate) fn flush_counted(
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
    flush: impl FnOnce(&mut Node, &Trail<'_>, &mut Out<'_>) -> Result<()>,
) -> Result<()> {
    if !node.fell_back {
        return flush(node, path, out);
    }
    let mark = out.mark();
    flush(node, path, out)?;
    out.count_fallback(path.to_path(), mark);
    Ok(())
}
