//! The undo log of one batch: what each op changed, so that a failed batch leaves the
//! document exactly as it was.
//!
//! An entry that adds nothing to what an earlier entry restores is not kept: after an `r`,
//! rolling back to the value before the first `r` of the batch undoes everything since, so
//! a later `r` drops the entries after the first one; and an op that changes the location
//! the previous entry already restores (the same member set again, appended to again, cut
//! again, or spliced again inside the range the previous splice inserted) folds into that
//! entry. So a batch that rewrites one location a million times keeps one entry, not a
//! million: the log grows with the locations a batch changes, not with its ops.

use serde_json::Value;

use super::walk::{key_of, split, walk};
use crate::path::{Path, Seg};

/// One batch's undo log.
#[derive(Default)]
pub(super) struct UndoLog {
    entries: Vec<Undo>,
    /// The position of the batch's first `r` entry.
    first_root: Option<usize>,
}

impl UndoLog {
    /// Records what an op changed, folded into the previous entry when that one already
    /// restores it (see the module documentation).
    pub(super) fn push(&mut self, undo: Undo) {
        let last = self.entries.last_mut();
        match (undo, last) {
            (Undo::Root(_), _) if self.first_root.is_some() => {
                let first = self.first_root.unwrap_or_default();
                self.entries.truncate(first + 1);
            }
            (Undo::Root(previous), _) => {
                self.first_root = Some(self.entries.len());
                self.entries.push(Undo::Root(previous));
            }
            (Undo::SetKey(p, _), Some(Undo::SetKey(q, _)))
            | (Undo::SetIndex(p, _), Some(Undo::SetIndex(q, _)))
            | (Undo::Append(p, _), Some(Undo::Append(q, _)))
                if p == *q => {}
            (Undo::Truncate(p, more), Some(Undo::Truncate(q, removed))) if p == *q => {
                // Cut `removed` first, then `more` from what was left: both go back in front,
                // in that order.
                removed.push_str(&more);
            }
            (Undo::Splice(p, index, inserted, removed), Some(Undo::Splice(q, at, count, _)))
                if p == *q && index >= *at && index + removed.len() <= *at + *count =>
            {
                // Inside (or at the end of) the range the previous splice inserted: the
                // range changes length, and the previous entry still restores what was there
                // before both.
                *count = *count - removed.len() + inserted;
            }
            (undo, _) => self.entries.push(undo),
        }
    }

    /// Puts `target` back as it was before the batch.
    pub(super) fn rollback(self, target: &mut Option<Value>) {
        rollback(target, self.entries);
    }
}

/// How to put back what one op changed. Paths are the op's own (shared, not copied: see
/// [`Path`]); the parent of a member or element is every segment but the last.
pub(super) enum Undo {
    Root(Option<Value>),
    /// A member was set; `None` means it did not exist (it was added at the end).
    SetKey(Path, Option<Value>),
    /// An element was set; `None` means it was pushed one past the end.
    SetIndex(Path, Option<Value>),
    /// A member was removed from this position.
    DeleteKey(Path, usize, String, Value),
    /// Members removed in one pass from the parent of this path, with their positions
    /// before the pass, in ascending order.
    DeleteKeys(Path, Vec<(usize, String, Value)>),
    DeleteIndex(Path, Value),
    /// The string's byte length before an append.
    Append(Path, usize),
    /// The prefix a truncate removed.
    Truncate(Path, String),
    /// Where a splice happened, how many items it inserted, what it removed.
    Splice(Path, usize, usize, Vec<Value>),
}

fn rollback(target: &mut Option<Value>, undo: Vec<Undo>) {
    for u in undo.into_iter().rev() {
        if let Undo::Root(previous) = u {
            *target = previous;
            continue;
        }
        let Some(root) = target.as_mut() else {
            continue;
        };
        // Every step below re-walks a path that the forward op just walked; after undoing
        // the later ops the document is in the same shape again, so the walks succeed. Each
        // costs what its forward op cost, so a rollback stays within the work budget too.
        match u {
            Undo::Root(_) => {}
            Undo::SetKey(path, previous) => {
                let Some((parent, last)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    let key = key_of(last);
                    match previous {
                        Some(v) => {
                            map.insert(key.into_owned(), v);
                        }
                        None => {
                            // Added at the end, so this removes the last member: O(1).
                            map.shift_remove(key.as_ref());
                        }
                    }
                }
            }
            Undo::SetIndex(path, previous) => {
                let Some((parent, Seg::Index(index))) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Array(arr)) = walk(root, parent) {
                    match previous {
                        Some(v) if *index < arr.len() => arr[*index] = v,
                        Some(_) => {}
                        None => {
                            arr.pop();
                        }
                    }
                }
            }
            Undo::DeleteKey(path, position, key, value) => {
                let Some((parent, _)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    let position = position.min(map.len());
                    map.shift_insert(position, key, value);
                }
            }
            Undo::DeleteKeys(path, removed) => {
                let Some((parent, _)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    // One merge of the kept and the removed members, in their old order.
                    let kept = std::mem::take(map);
                    let mut kept = kept.into_iter();
                    for (position, key, value) in removed {
                        while map.len() < position {
                            match kept.next() {
                                Some((k, v)) => map.insert(k, v),
                                None => break,
                            };
                        }
                        map.insert(key, value);
                    }
                    map.extend(kept);
                }
            }
            Undo::DeleteIndex(path, value) => {
                let Some((parent, Seg::Index(index))) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Array(arr)) = walk(root, parent) {
                    arr.insert((*index).min(arr.len()), value);
                }
            }
            Undo::Append(path, len) => {
                if let Ok(Value::String(s)) = walk(root, &path) {
                    s.truncate(len);
                }
            }
            Undo::Truncate(path, mut removed) => {
                if let Ok(Value::String(s)) = walk(root, &path) {
                    removed.push_str(s);
                    *s = removed;
                }
            }
            Undo::Splice(path, index, inserted, removed) => {
                if let Ok(Value::Array(arr)) = walk(root, &path) {
                    let end = (index + inserted).min(arr.len());
                    arr.splice(index.min(end)..end, removed);
                }
            }
        }
    }
}
