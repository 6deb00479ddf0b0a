//! The dirty tree: what changed since the last flush, and nothing else.
//!
//! A node exists only for a location touched since the last flush. It holds the *intent*
//! recorded there (an assignment with the accepted value, string edits, array splices) and the
//! nodes of touched children. Flushing turns nodes into ops and resets the tree, so the
//! tracker's memory is proportional to what changed, never to the state's size.

use serde_json::Value;

use crate::op::Op;
use crate::path::{Path, Seg};
use crate::tracker::seq::SeqEdit;
use crate::tracker::text::TextEdit;

/// One touched location in the dirty tree.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Node {
    pub(crate) state: State,
    /// For fields serde may skip (`skip_serializing_if`): whether the field was present in the
    /// JSON at the last flush. Captured when the node is created.
    pub(crate) present: Option<bool>,
    pub(crate) children: Vec<(Key, Node)>,
}

/// How a child is addressed under its parent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// A struct field, by declaration index.
    Field(u32),
    /// A map member.
    Name(String),
    /// An array element, by its index in the accepted array.
    Index(usize),
}

/// What is known about the accepted value of a reassigned location.
#[derive(Debug)]
pub(crate) enum Before {
    /// Not present in the accepted JSON.
    Absent,
    /// Present, content no longer known (edits were recorded before the reassignment).
    Existed,
    /// Present with this JSON.
    Value(Value),
}

#[derive(Debug, Default)]
pub(crate) enum State {
    /// Nothing recorded at this level (children may still be dirty).
    #[default]
    Clean,
    /// The whole value was reassigned; flush diffs the accepted JSON against the current one.
    /// Children are subsumed.
    Assigned(Before),
    /// String edits (append, drop from the front, or a whole-string baseline).
    Text(TextEdit),
    /// Array splices; children are keyed by accepted index.
    Seq(SeqEdit),
}

impl Node {
    /// Whether recording below this node is pointless because the node's own state already
    /// covers everything under it.
    pub(crate) fn subsumes_children(&self) -> bool {
        matches!(self.state, State::Assigned(_))
    }

    /// The child at `key`, created clean if absent; `None` when this node subsumes children.
    pub(crate) fn child(&mut self, key: Key) -> Option<&mut Node> {
        self.child_with(key, |_| {})
    }

    /// Like [`child`](Node::child), running `init` on the child when it is created.
    pub(crate) fn child_with(
        &mut self,
        key: Key,
        init: impl FnOnce(&mut Node),
    ) -> Option<&mut Node> {
        if self.subsumes_children() {
            return None;
        }
        let at = match self.children.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let mut node = Node::default();
                init(&mut node);
                self.children.push((key, node));
                self.children.len() - 1
            }
        };
        Some(&mut self.children[at].1)
    }

    /// Whether anything is recorded here or below.
    pub(crate) fn is_dirty(&self) -> bool {
        !matches!(self.state, State::Clean) || self.children.iter().any(|(_, n)| n.is_dirty())
    }

    /// Records a reassignment of the whole value at this node. `accepted` produces the JSON
    /// of the value being replaced, and is only called when that is still the accepted value.
    pub(crate) fn assign(&mut self, accepted: impl FnOnce() -> Option<Value>) {
        if matches!(self.state, State::Assigned(_)) {
            return; // the first baseline stays: it is what the replica has
        }
        let before = if self.is_dirty() {
            Before::Existed
        } else {
            match accepted() {
                Some(v) => Before::Value(v),
                None => Before::Existed,
            }
        };
        self.state = State::Assigned(before);
        self.children.clear();
    }

    /// Records a reassignment where the accepted value is known to be absent or unknown.
    pub(crate) fn assign_before(&mut self, before: Before) {
        if matches!(self.state, State::Assigned(_)) {
            return;
        }
        self.state = State::Assigned(before);
        self.children.clear();
    }
}

/// Emits what an assignment at `path` amounts to, given the accepted and current JSON
/// (`None` = absent).
pub(crate) fn flush_assigned(
    path: &Path,
    before: &Before,
    after: Option<Value>,
    out: &mut Vec<Op>,
) {
    match (before, after) {
        (Before::Absent, None) => {}
        (_, None) => {
            if let Ok(p) = crate::NonEmptyPath::try_from(path.clone()) {
                out.push(Op::Delete(p));
            }
        }
        (Before::Value(b), Some(a)) => crate::diff::diff_into(path, b, &a, out),
        (Before::Absent | Before::Existed, Some(a)) => set(path, a, out),
    }
}

/// `s` of a whole value, or `r` at the root.
pub(crate) fn set(path: &Path, value: Value, out: &mut Vec<Op>) {
    match crate::NonEmptyPath::try_from(path.clone()) {
        Ok(p) => out.push(Op::Set(p, value)),
        Err(_) => out.push(Op::Replace(value)),
    }
}

/// Runs `f` with `seg` pushed onto `path`.
pub(crate) fn with_seg<R>(path: &mut Path, seg: Seg, f: impl FnOnce(&mut Path) -> R) -> R {
    path.push(seg);
    let r = f(path);
    path.pop();
    r
}
