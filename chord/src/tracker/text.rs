//! String intent: appends and drops from the front, recorded as they happen; anything else
//! falls back to a baseline diffed at flush.

use crate::diff::StringEdit;
use crate::op::Op;
use crate::tracker::edit::TextEdit;
use crate::tracker::node::{flush_assigned, Node, State};
use crate::tracker::Out;
use crate::tracker::Trail;

/// The text state of `node`, started if the node is clean. `None` when an ancestor's or this
/// node's assignment already covers the string.
#[inline]
fn edit<'n>(node: &'n mut Node, current: &str) -> Option<&'n mut TextEdit> {
    if matches!(node.state, State::Clean) {
        node.start(State::Text(TextEdit::Window {
            dropped: String::new(),
            tail_start: current.len(),
        }));
    }
    match &mut node.state {
        State::Text(edit) => Some(edit),
        _ => None,
    }
}

/// Records an append (call before pushing).
#[inline]
pub(crate) fn record_append(node: Option<&mut Node>, current: &str) {
    if let Some(node) = node {
        edit(node, current);
    }
}

/// Records dropping `bytes` from the front of `current` (call before draining).
pub(crate) fn record_drop_front(node: Option<&mut Node>, current: &str, bytes: usize) {
    let Some(TextEdit::Window {
        dropped,
        tail_start,
    }) = node.and_then(|n| edit(n, current))
    else {
        return;
    };
    if bytes <= *tail_start {
        dropped.push_str(&current[..bytes]);
        *tail_start -= bytes;
    } else {
        // The drop eats into text appended since the flush: all of the accepted part is gone.
        dropped.push_str(&current[..*tail_start]);
        *tail_start = 0;
    }
}

/// Records an edit that is not a window edit: keeps the accepted value (call before editing).
/// `current` is handed over when the caller is about to replace it anyway (no copy then).
pub(crate) fn record_rewrite(node: Option<&mut Node>, current: &str) {
    let Some(node) = node else { return };
    let accepted = match &mut node.state {
        State::Clean => current.to_owned(),
        State::Text(TextEdit::Window {
            dropped,
            tail_start,
        }) => {
            let mut accepted = std::mem::take(dropped);
            accepted.push_str(&current[..*tail_start]);
            accepted
        }
        _ => return,
    };
    node.mark_written();
    node.state = State::Text(TextEdit::Baseline(accepted));
}

/// Records a whole assignment that moves the old string out: `old` becomes the baseline
/// without a copy when nothing else was recorded.
pub(crate) fn record_set(node: Option<&mut Node>, old: String) {
    let Some(node) = node else { return };
    match &mut node.state {
        State::Clean => node.start(State::Text(TextEdit::Baseline(old))),
        State::Text(TextEdit::Window { .. }) => {
            record_rewrite(Some(node), &old);
        }
        _ => {}
    }
}

/// Emits the ops for a string at `path`. (Always inline: a streaming flush's one step.)
#[inline(always)]
pub(crate) fn flush(current: &str, node: &Node, path: &Trail<'_>, out: &mut Out<'_>) {
    match &node.state {
        State::Clean => {}
        // The common case, appends only, written directly (an undo walk goes on below).
        State::Text(TextEdit::Window {
            dropped,
            tail_start,
        }) if dropped.is_empty() && !path.is_empty() && !out.undoing() => {
            if *tail_start < current.len() {
                out.append(&node.wire, path, &current[*tail_start..]);
            }
        }
        state => flush_other(current, state, path, out),
    }
}

/// [`flush`] in an undo walk (see [`Out::undo`]): the accepted text restored.
#[cold]
fn undo(current: &str, state: &State, path: &Trail<'_>, out: &mut Out<'_>) {
    let accepted = match state {
        State::Clean | State::Seq(_) => return,
        State::Assigned(before) => return crate::tracker::undo_assigned(path, before, out),
        State::Text(TextEdit::Window {
            dropped,
            tail_start,
        }) => {
            let mut accepted = dropped.clone();
            accepted.push_str(&current[..*tail_start]);
            accepted
        }
        State::Text(TextEdit::Baseline(before)) => before.clone(),
    };
    out.restore(path, Some(accepted.into()));
}

/// [`flush`] of anything but appends.
#[inline(never)]
fn flush_other(current: &str, state: &State, path: &Trail<'_>, out: &mut Out<'_>) {
    if out.undoing() {
        return undo(current, state, path, out);
    }
    match state {
        State::Clean | State::Seq(_) => {}
        State::Assigned(before) => {
            flush_assigned(path, before, Some(current.into()), out);
        }
        State::Text(edit) => {
            if path.is_empty() {
                // A tracked root string can only be replaced.
                out.push(Op::Replace(current.into()));
                return;
            }
            match edit {
                TextEdit::Window {
                    dropped,
                    tail_start,
                } => {
                    let Some(p) = path.non_empty() else {
                        return;
                    };
                    // (`dropped` is not empty: appends alone were written by `flush`.)
                    let mut window = Vec::with_capacity(2);
                    window.push(Op::Truncate(p.clone(), crate::utf16::utf16_len(dropped)));
                    if *tail_start < current.len() {
                        window.push(Op::Append(p.clone(), current[*tail_start..].to_owned()));
                    }
                    out.extend(crate::diff::smaller_than_set(&p, current, window));
                }
                // The string's diff, the common `s` written without building it.
                TextEdit::Baseline(before) => {
                    match crate::diff::diff_string_edit(path, before, current) {
                        StringEdit::Same => {}
                        StringEdit::Set => out.set_text(path, current),
                        StringEdit::Window { kept } => {
                            if let Some(p) = path.non_empty() {
                                out.extend(crate::diff::window_ops(&p, before, current, kept));
                            }
                        }
                    }
                }
            }
        }
    }
}
