//! What a proxy carries besides the value it wraps: its place in the dirty tree.

use crate::tracker::node::{Key, Node};

/// A proxy's place in the tracker: its dirty-tree node, absent when an ancestor's recorded
/// state already covers this location, or before the first flush (which sends everything).
#[doc(hidden)]
pub struct Cx<'a> {
    pub(crate) node: Option<&'a mut Node>,
}

impl<'a> Cx<'a> {
    pub(crate) fn root(node: Option<&'a mut Node>) -> Cx<'a> {
        Cx { node }
    }

    /// Splits the node of a struct (or of an enum variant) with `count` fields into one
    /// context per field, in declaration order. The field nodes stay allocated across
    /// flushes, so handing out a struct's proxy allocates nothing after the first time.
    #[inline]
    pub fn fields(self, count: usize) -> Fields<'a> {
        // (No node: no list, so that each field's hand-out tests one end, not also whether
        // there is a list.)
        let slots = match self.node {
            Some(node) if !node.subsumes_children() => node.fields(count).iter_mut(),
            _ => [].iter_mut(),
        };
        Fields { slots }
    }

    /// A map member's context (created on first touch).
    pub(crate) fn member(&mut self, key: &str) -> Cx<'_> {
        Cx {
            node: self.node.as_deref_mut().and_then(|n| n.member(key)),
        }
    }

    /// An element's context: `accepted` is its index in the accepted array, `None` for an
    /// element inserted since the last flush (it will be sent whole, so nothing is recorded
    /// inside).
    #[inline]
    pub(crate) fn into_element(self, accepted: Option<usize>) -> Cx<'a> {
        let node = match accepted {
            Some(i) => self.node.and_then(|n| n.child(Key::Index(i))),
            None => None,
        };
        Cx { node }
    }

    /// [`into_element`](Cx::into_element), borrowing this context.
    #[inline]
    pub(crate) fn element(&mut self, accepted: Option<usize>) -> Cx<'_> {
        let node = match accepted {
            Some(i) => self
                .node
                .as_deref_mut()
                .and_then(|n| n.child(Key::Index(i))),
            None => None,
        };
        Cx { node }
    }

    /// The same location, reborrowed (an `Option`'s or an enum's contents share its node).
    #[inline]
    pub fn same(&mut self) -> Cx<'_> {
        Cx {
            node: self.node.as_deref_mut(),
        }
    }
}

/// The field contexts of one struct, handed out in declaration order by
/// [`Cx::fields`].
#[doc(hidden)]
pub struct Fields<'a> {
    slots: std::slice::IterMut<'a, (Key, Node)>,
}

impl<'a> Fields<'a> {
    /// The next field's context. `present` is, for a field serde may skip, whether it is in
    /// the JSON now; it is kept from the first proxy handed out after a flush, when the JSON
    /// is still the one the replicas hold.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self, present: Option<bool>) -> Cx<'a> {
        self.slot(present, true)
    }

    /// [`next`](Fields::next) for an `Option` field serde skips when it is `None`: absent,
    /// it can only appear by an assignment, which counts as a record that may fail by
    /// itself, so handing it out does not (see `Risk`).
    #[inline]
    pub fn next_option(&mut self, present: Option<bool>) -> Cx<'a> {
        self.slot(present, false)
    }

    #[inline]
    fn slot(&mut self, present: Option<bool>, absent_may_fail: bool) -> Cx<'a> {
        let node = self.slots.next().map(|(_, node)| {
            // (Nothing to do for a field serde never skips, whose `present` is the constant
            // `None`: its node's presence stays `None` too.)
            if present.is_some() {
                if node.present.is_none() {
                    node.present = present;
                }
                // A field absent from the JSON that appears is serialized whole at flush,
                // which may fail; a present one stays (its own records decide) or disappears
                // (a `d`, which cannot fail). (Marked at every hand-out: a field no write
                // reached keeps the presence it had, unvisited, across flushes.)
                if absent_may_fail && node.present == Some(false) {
                    node.risk.mark();
                }
            }
            node
        });
        Cx { node }
    }
}
