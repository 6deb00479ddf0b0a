//! Array intent: splices recorded as runs of kept and new elements.
//!
//! The current array is described as a sequence of runs: `Kept` runs of accepted elements
//! (by their accepted indices) and `New` runs of elements inserted since the last flush. Every
//! splice edits the runs in `O(runs)`; an unshift on a clean array is two runs, whatever the
//! length. Flush walks the runs once and emits one `p` per contiguous change.

use crate::error::Result;
use crate::tracker::edit::{Run, SeqEdit};
use crate::tracker::node::{capped, flush_reassigned, set, Key, Node, State};
use crate::tracker::Out;
use crate::tracker::Tracked;
use crate::tracker::{Step, Trail};
use crate::wire::table::CachedCell;

/// Records a splice on an array of current length `len` (call before performing it).
pub(crate) fn record_splice(
    node: Option<&mut Node>,
    len: usize,
    at: usize,
    remove: usize,
    insert: usize,
) {
    let Some(node) = node else { return };
    if remove == 0 && insert == 0 {
        return;
    }
    if insert > 0 {
        node.risk.mark(); // (inserted items are serialized at flush; removals cannot fail)
    }
    if matches!(node.state, State::Clean) {
        node.start(State::Seq(SeqEdit::fresh(len)));
        // Elements may now sit at other indices than their nodes' cached path ids name.
        for (_, child) in node.children.iter_mut() {
            child.distrust_wire();
        }
    }
    if let State::Seq(edit) = &mut node.state {
        edit.splice(at, remove, insert);
    }
}

/// The accepted index of the element at `current` (for recording inside it), `None` when it
/// is new since the last flush or when the array's node covers it already.
#[inline]
pub(crate) fn accepted_index(node: Option<&Node>, current: usize) -> Option<usize> {
    match node.map(|n| &n.state) {
        Some(State::Seq(edit)) => edit.accepted_index(current),
        Some(State::Clean) => Some(current),
        _ => None,
    }
}

/// A sequence tracked as a JSON array: a slice, or a `VecDeque`.
pub(crate) trait Items<T>: serde::Serialize {
    fn at(&self, i: usize) -> Option<&T>;
    fn count(&self) -> usize;
}

impl<T: serde::Serialize> Items<T> for [T] {
    fn at(&self, i: usize) -> Option<&T> {
        self.get(i)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<T: serde::Serialize> Items<T> for std::collections::VecDeque<T> {
    fn at(&self, i: usize) -> Option<&T> {
        self.get(i)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// A dirty-tree slot for each of the `len` elements now in the array at `node`, in order,
/// all borrowed at once (for `iter_mut`): `None` for elements inserted since the last flush
/// and when nothing is recorded below `node`.
pub(crate) fn element_slots(
    node: Option<&mut Node>,
    len: usize,
) -> std::vec::IntoIter<Option<&mut Node>> {
    match node {
        Some(node) => {
            let keys = element_keys(node, len);
            node.children_at(keys).into_iter()
        }
        None => Vec::new().into_iter(),
    }
}

/// The runs `start..end` where `keep` is false, last first (so removing them in that order
/// leaves the earlier positions valid): what `retain` removes, one splice per run.
pub(crate) fn removed_runs(keep: &[bool]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = keep.len();
    while i > 0 {
        if keep[i - 1] {
            i -= 1;
            continue;
        }
        let end = i;
        while i > 0 && !keep[i - 1] {
            i -= 1;
        }
        runs.push((i, end));
    }
    runs
}

/// The dirty-tree keys of the elements now in an array of `len` elements (their accepted
/// indices; `None` for new ones).
fn element_keys(node: &Node, len: usize) -> Vec<Option<Key>> {
    match &node.state {
        State::Clean => (0..len).map(|i| Some(Key::Index(i))).collect(),
        State::Seq(edit) => {
            let mut keys = Vec::with_capacity(len);
            for run in &edit.runs {
                match *run {
                    Run::Kept { start, len } => {
                        keys.extend((start..start + len).map(|i| Some(Key::Index(i))));
                    }
                    Run::New { len } => keys.extend((0..len).map(|_| None)),
                }
            }
            keys
        }
        _ => vec![None; len],
    }
}

/// Emits the ops for an array at `path` whose elements are `items`.
pub(crate) fn flush<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    match &node.state {
        State::Assigned(before) => return flush_reassigned(items, before, path, out),
        State::Text(_) => return Ok(()),
        State::Clean => {}
        State::Seq(edit) if out.undoing() => {
            undo_spliced(items, edit, node, path, out);
            return Ok(());
        }
        State::Seq(_) => return flush_spliced(items, node, path, out),
    }
    flush_elements(items, node, path, out)
}

/// [`flush`] of an array with splices in an undo walk (see [`Out::undo`]): when the splices
/// only inserted (every accepted element is still there, in order) and no element was
/// edited, the accepted array is the current one without the inserted elements.
#[cold]
fn undo_spliced<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    edit: &crate::tracker::edit::SeqEdit,
    node: &Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) {
    use crate::tracker::edit::Run;
    let edited = node.touched && node.children.iter().any(|(_, c)| c.is_dirty());
    let mut next = 0; // the accepted index the next kept run must start at
    let mut accepted = Vec::with_capacity(edit.accepted_len);
    let mut at = 0; // the current index of the run
    for run in &edit.runs {
        if let Run::Kept { start, len } = *run {
            if start != next {
                return out.cannot_undo();
            }
            for i in at..at + len {
                match items.at(i).map(serde_json::to_value) {
                    Some(Ok(v)) => accepted.push(v),
                    _ => return out.cannot_undo(),
                }
            }
            next += len;
        }
        at += run.len();
    }
    if edited || next != edit.accepted_len {
        return out.cannot_undo();
    }
    out.restore(path, Some(serde_json::Value::Array(accepted)));
}

/// [`flush`] of an array with splices recorded. (Out of line: a streaming flush edits inside
/// elements without splices, and its walk stays small.)
#[inline(never)]
fn flush_spliced<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    let State::Seq(edit) = &node.state else {
        return flush_elements(items, node, path, out);
    };
    // Splices and edits of elements around them, a good part of the array: their ops
    // may add up to more than one `s` of it. A few changes in a long array never do, so
    // the comparison is not made.
    if node.touched && !path.is_empty() {
        let changed = edit.runs.len()
            + node
                .children
                .iter()
                .filter(|(_, c)| c.may_be_dirty())
                .count();
        if changed * 8 >= items.count() {
            return flush_capped(items, node, path, out);
        }
    }
    flush_splices(items, edit, &node.wire, path, out)?;
    flush_elements(items, node, path, out)
}

/// [`flush`] of an array that has both splices and elements handed out since the last flush:
/// splices and edits inside the elements around them can add up to more than one `s` of the
/// array, which is then sent instead (see [`capped`]). Out of line: a streaming flush edits
/// inside elements without splices.
#[inline(never)]
fn flush_capped<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    capped(items, path, out, |path, own| {
        if let State::Seq(edit) = &node.state {
            flush_splices(items, edit, &node.wire, path, own)?;
        }
        flush_elements(items, node, path, own)
    })
}

/// Edits inside kept elements, at their current indices (after the array's splices).
/// (Always inline: in [`flush`] it is the streaming flush's walk.)
#[inline(always)]
fn flush_elements<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    let edit = match &node.state {
        State::Seq(edit) => Some(edit),
        _ => None,
    };
    if !node.touched {
        return Ok(()); // (no element's proxy was handed out)
    }
    for (key, child) in node.children.iter_mut() {
        let Key::Index(accepted) = *key else { continue };
        if !child.may_be_dirty() {
            continue;
        }
        let current = match edit {
            Some(edit) => edit.current_index(accepted),
            None => Some(accepted),
        };
        let Some(item) = current.and_then(|i| items.at(i).map(|item| (i, item))) else {
            if out.reset {
                child.reset(); // (removed since: nothing of it is written)
            }
            continue;
        };
        item.1
            .__flush(child, &path.child(Step::Index(item.0)), out)?;
        if out.reset {
            child.reset_flushed();
        }
    }
    Ok(())
}

/// The splices recorded on an array (`edit`), as `p` ops (or one `s` of the whole array when
/// no accepted element is left). (Inline: it is called from the out-of-line
/// [`flush_spliced`] and [`flush_capped`] only.)
#[inline]
fn flush_splices<T: Tracked, S: Items<T> + ?Sized>(
    items: &S,
    edit: &SeqEdit,
    wire: &CachedCell,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    let whole = edit.accepted_len > 0 && !edit.runs.iter().any(|r| matches!(r, Run::Kept { .. }));
    if whole {
        set(path, crate::tracker::to_json(items, path)?, out);
        return Ok(());
    }
    // A pending splice: its index, how many accepted elements it removes, and the
    // current indices of the elements it inserts (contiguous).
    let mut cursor = 0;
    let mut expected = 0;
    let mut pending: Option<(usize, usize, std::ops::Range<usize>)> = None;
    let emit = |pending: &mut Option<(usize, usize, std::ops::Range<usize>)>,
                path: &Trail<'_>,
                out: &mut Out<'_>| {
        match pending.take() {
            // One element replaced by one: an `s` of the element says it in fewer bytes
            // than a `p` (its path one index longer, no index, count and brackets).
            Some((index, 1, new)) if new.len() == 1 => match items.at(new.start) {
                Some(item) => set_element(item, index, path, out),
                None => Ok(()),
            },
            Some((index, remove, new)) => {
                let new = new.filter_map(|at| items.at(at).map(|item| (at, item)));
                out.splice(wire, path, index, remove, new)
            }
            None => Ok(()),
        }
    };
    for run in &edit.runs {
        match *run {
            Run::Kept { start, len } => {
                if start > expected {
                    pending.get_or_insert((cursor, 0, cursor..cursor)).1 += start - expected;
                }
                emit(&mut pending, path, out)?;
                cursor += len;
                expected = start + len;
            }
            Run::New { len } => {
                pending.get_or_insert((cursor, 0, cursor..cursor)).2.end += len;
                cursor += len;
            }
        }
    }
    if expected < edit.accepted_len {
        pending.get_or_insert((cursor, 0, cursor..cursor)).1 += edit.accepted_len - expected;
    }
    emit(&mut pending, path, out)?;
    Ok(())
}

/// `["s", path + [index], item]`: one element replaced by one. (Out of line, so that the
/// splice writer around it stays small enough to be inlined where it is called.)
#[inline(never)]
fn set_element<T: serde::Serialize>(
    item: &T,
    index: usize,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    let p = &path.child(Step::Index(index));
    set(p, crate::tracker::to_json(item, p)?, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::removed_runs;

    #[test]
    fn removed_runs_are_maximal_and_last_first() {
        let keep = [true, false, false, true, false, true, false];
        assert_eq!(removed_runs(&keep), vec![(6, 7), (4, 5), (1, 3)]);
        assert!(removed_runs(&[true, true]).is_empty());
        assert_eq!(removed_runs(&[false, false]), vec![(0, 2)]);
    }
}
