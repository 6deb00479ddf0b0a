//! Array intent: splices recorded as runs of kept and new elements.
//!
//! The current array is described as a sequence of runs: `Kept` runs of accepted elements
//! (by their accepted indices) and `New` runs of elements inserted since the last flush. Every
//! splice edits the runs in `O(runs)`; an unshift on a clean array is two runs, whatever the
//! length. Flush walks the runs once and emits one `p` per contiguous change.

use serde_json::Value;

use crate::error::Result;
use crate::op::Op;
use crate::path::{Path, Seg};
use crate::tracker::node::{flush_assigned, set, with_seg, Key, Node, State};
use crate::tracker::Tracked;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Kept { start: usize, len: usize },
    New { len: usize },
}

impl Run {
    fn len(&self) -> usize {
        match *self {
            Run::Kept { len, .. } | Run::New { len } => len,
        }
    }
}

/// The splices made to an array since the last flush.
#[derive(Debug)]
pub(crate) struct SeqEdit {
    runs: Vec<Run>,
    accepted_len: usize,
}

impl SeqEdit {
    fn fresh(len: usize) -> SeqEdit {
        // Room for the common shapes (a push, an unshift, one removal) without regrowing.
        let mut runs = Vec::with_capacity(4);
        if len > 0 {
            runs.push(Run::Kept { start: 0, len });
        }
        SeqEdit {
            runs,
            accepted_len: len,
        }
    }

    /// Splits runs so that one starts at `pos`; returns its index.
    fn split(&mut self, pos: usize) -> usize {
        let mut at = 0;
        for i in 0..self.runs.len() {
            let len = self.runs[i].len();
            if pos == at {
                return i;
            }
            if pos < at + len {
                let k = pos - at;
                let (left, right) = match self.runs[i] {
                    Run::Kept { start, len } => (
                        Run::Kept { start, len: k },
                        Run::Kept {
                            start: start + k,
                            len: len - k,
                        },
                    ),
                    Run::New { len } => (Run::New { len: k }, Run::New { len: len - k }),
                };
                self.runs[i] = left;
                self.runs.insert(i + 1, right);
                return i + 1;
            }
            at += len;
        }
        self.runs.len()
    }

    /// Records `remove` elements removed at `at` and `insert` new ones put there.
    fn splice(&mut self, at: usize, remove: usize, insert: usize) {
        let i = self.split(at);
        let j = self.split(at + remove);
        self.runs.drain(i..j);
        if insert > 0 {
            match (i.checked_sub(1).map(|k| self.runs[k]), self.runs.get(i)) {
                (Some(Run::New { len }), _) => self.runs[i - 1] = Run::New { len: len + insert },
                (_, Some(Run::New { len })) => {
                    let len = *len;
                    self.runs[i] = Run::New { len: len + insert };
                }
                _ => self.runs.insert(i, Run::New { len: insert }),
            }
        }
    }

    /// The accepted index of the element now at `current`, `None` if it is new.
    fn accepted_index(&self, current: usize) -> Option<usize> {
        let mut at = 0;
        for run in &self.runs {
            let len = run.len();
            if current < at + len {
                return match *run {
                    Run::Kept { start, .. } => Some(start + current - at),
                    Run::New { .. } => None,
                };
            }
            at += len;
        }
        None
    }

    /// The current index of the accepted element `accepted`, `None` if it was removed.
    fn current_index(&self, accepted: usize) -> Option<usize> {
        let mut at = 0;
        for run in &self.runs {
            if let Run::Kept { start, len } = *run {
                if (start..start + len).contains(&accepted) {
                    return Some(at + accepted - start);
                }
            }
            at += run.len();
        }
        None
    }
}

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
    if matches!(node.state, State::Clean) {
        node.state = State::Seq(SeqEdit::fresh(len));
    }
    if let State::Seq(edit) = &mut node.state {
        edit.splice(at, remove, insert);
    }
}

/// The accepted index of the element at `current` (for recording inside it), `None` when it
/// is new since the last flush or when the array's node covers it already.
pub(crate) fn accepted_index(node: Option<&Node>, current: usize) -> Option<usize> {
    match node.map(|n| &n.state) {
        Some(State::Seq(edit)) => edit.accepted_index(current),
        Some(State::Clean) => Some(current),
        _ => None,
    }
}

/// Emits the ops for an array at `path` whose elements are `items`.
pub(crate) fn flush<T: Tracked>(
    items: &[T],
    node: &mut Node,
    path: &mut Path,
    out: &mut Vec<Op>,
) -> Result<()> {
    let edit = match &mut node.state {
        State::Assigned(before) => {
            let after = crate::tracker::to_json(items, path)?;
            flush_assigned(path, before, Some(after), out);
            return Ok(());
        }
        State::Text(_) => return Ok(()),
        State::Clean => None,
        State::Seq(edit) => Some(&*edit),
    };
    if let Some(edit) = edit {
        let whole =
            edit.accepted_len > 0 && !edit.runs.iter().any(|r| matches!(r, Run::Kept { .. }));
        if whole {
            set(path, crate::tracker::to_json(items, path)?, out);
            return Ok(());
        }
        let mut cursor = 0;
        let mut expected = 0;
        let mut pending: Option<(usize, usize, Vec<Value>)> = None;
        fn emit(pending: &mut Option<(usize, usize, Vec<Value>)>, path: &Path, out: &mut Vec<Op>) {
            if let Some((index, remove, items)) = pending.take() {
                out.push(Op::Splice {
                    path: path.clone(),
                    index,
                    remove,
                    items,
                });
            }
        }
        for run in &edit.runs {
            match *run {
                Run::Kept { start, len } => {
                    if start > expected {
                        pending.get_or_insert((cursor, 0, Vec::new())).1 += start - expected;
                    }
                    emit(&mut pending, path, out);
                    cursor += len;
                    expected = start + len;
                }
                Run::New { len } => {
                    let p = pending.get_or_insert((cursor, 0, Vec::new()));
                    for (k, item) in items[cursor..cursor + len].iter().enumerate() {
                        let at = cursor + k;
                        let v =
                            with_seg(path, Seg::Index(at), |p| crate::tracker::to_json(item, p))?;
                        p.2.push(v);
                    }
                    cursor += len;
                }
            }
        }
        if expected < edit.accepted_len {
            pending.get_or_insert((cursor, 0, Vec::new())).1 += edit.accepted_len - expected;
        }
        emit(&mut pending, path, out);
    }
    // Edits inside kept elements, at their current indices (after the splices above).
    let edit = match &node.state {
        State::Seq(edit) => Some(edit),
        _ => None,
    };
    let mut children = std::mem::take(&mut node.children);
    let result = (|| {
        for (key, child) in children.iter_mut() {
            let Key::Index(accepted) = *key else { continue };
            let current = match edit {
                Some(edit) => edit.current_index(accepted),
                None => Some(accepted),
            };
            let Some(item) = current.and_then(|i| items.get(i).map(|item| (i, item))) else {
                continue;
            };
            with_seg(path, Seg::Index(item.0), |p| item.1.__flush(child, p, out))?;
        }
        Ok(())
    })();
    node.children = children;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshift_on_a_clean_array_is_two_runs() {
        let mut e = SeqEdit::fresh(1000);
        e.splice(0, 0, 1);
        assert_eq!(
            e.runs,
            vec![
                Run::New { len: 1 },
                Run::Kept {
                    start: 0,
                    len: 1000
                }
            ]
        );
        assert_eq!(e.accepted_index(0), None);
        assert_eq!(e.accepted_index(1), Some(0));
        assert_eq!(e.current_index(999), Some(1000));
    }

    #[test]
    fn pushes_merge_into_one_run() {
        let mut e = SeqEdit::fresh(2);
        for k in 0..100 {
            e.splice(2 + k, 0, 1);
        }
        assert_eq!(
            e.runs,
            vec![Run::Kept { start: 0, len: 2 }, Run::New { len: 100 }]
        );
    }

    #[test]
    fn removing_new_elements_forgets_them() {
        let mut e = SeqEdit::fresh(3);
        e.splice(1, 0, 2); // [k0, n, n, k1, k2]
        e.splice(0, 2, 0); // [n, k1, k2]
        assert_eq!(
            e.runs,
            vec![Run::New { len: 1 }, Run::Kept { start: 1, len: 2 }]
        );
        assert_eq!(e.current_index(0), None);
        assert_eq!(e.current_index(2), Some(2));
    }
}
