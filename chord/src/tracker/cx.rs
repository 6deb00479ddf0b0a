//! What a proxy carries besides the value it wraps: its dirty-tree node and where it is.

use crate::error::{Error, ErrorKind};
use crate::path::{Path, Seg};
use crate::tracker::check::check;
use crate::tracker::node::{Key, Node};

/// A proxy's place in the tracker: its dirty-tree node (absent when an ancestor's recorded
/// state already covers this location, or before the first flush) and a borrowed chain of
/// segments back to the root, turned into a [`Path`] only when an error needs one.
#[doc(hidden)]
pub struct Cx<'a> {
    pub(crate) node: Option<&'a mut Node>,
    pub(crate) link: Link<'a>,
}

/// One step of the borrowed path chain; costs nothing until an error asks for the path.
pub(crate) struct Link<'a> {
    parent: Option<&'a Link<'a>>,
    seg: LinkSeg<'a>,
}

#[derive(Clone, Copy)]
enum LinkSeg<'a> {
    Root,
    /// Same location as the parent (an `Option`'s contents).
    Same,
    Key(&'a str),
    Index(usize),
}

impl Link<'_> {
    /// The path this link stands for. `O(depth)`.
    pub(crate) fn to_path(&self) -> Path {
        let mut segs = Vec::new();
        let mut at = Some(self);
        while let Some(link) = at {
            match link.seg {
                LinkSeg::Root | LinkSeg::Same => {}
                LinkSeg::Key(k) => segs.push(Seg::Key((*k).to_owned().into())),
                LinkSeg::Index(i) => segs.push(Seg::Index(i)),
            }
            at = link.parent;
        }
        segs.reverse();
        Path::from(segs)
    }
}

impl<'a> Cx<'a> {
    pub(crate) fn root(node: Option<&'a mut Node>) -> Cx<'a> {
        Cx {
            node,
            link: Link {
                parent: None,
                seg: LinkSeg::Root,
            },
        }
    }

    /// The context of a struct field. `present` is, for a field serde may skip, whether it is
    /// in the JSON right now; it is captured when the field's node is created, i.e. at the
    /// first touch since the last flush, when the JSON is still the accepted one.
    pub fn field(&mut self, index: u32, name: &'static str, present: Option<bool>) -> Cx<'_> {
        let node = self
            .node
            .as_deref_mut()
            .and_then(|n| n.child_with(Key::Field(index), |n| n.present = present));
        Cx {
            node,
            link: Link {
                parent: Some(&self.link),
                seg: LinkSeg::Key(name),
            },
        }
    }

    pub(crate) fn member<'b>(&'b mut self, key: &'b str) -> Cx<'b> {
        Cx {
            node: self
                .node
                .as_deref_mut()
                .and_then(|n| n.child(Key::Name(key.to_owned()))),
            link: Link {
                parent: Some(&self.link),
                seg: LinkSeg::Key(key),
            },
        }
    }

    /// An element: `accepted` is its index in the accepted array, `None` for an element
    /// inserted since the last flush (it will be sent whole, so nothing is recorded inside).
    pub(crate) fn element(&mut self, current: usize, accepted: Option<usize>) -> Cx<'_> {
        let node = match accepted {
            Some(i) => self
                .node
                .as_deref_mut()
                .and_then(|n| n.child(Key::Index(i))),
            None => None,
        };
        Cx {
            node,
            link: Link {
                parent: Some(&self.link),
                seg: LinkSeg::Index(current),
            },
        }
    }

    /// The same location (an `Option`'s contents share its node and path).
    pub(crate) fn same(&mut self) -> Cx<'_> {
        Cx {
            node: self.node.as_deref_mut(),
            link: Link {
                parent: Some(&self.link),
                seg: LinkSeg::Same,
            },
        }
    }

    /// Checks that `value` is faithful JSON, naming this location if not.
    pub(crate) fn check<T: serde::Serialize + ?Sized>(&self, value: &T) -> crate::Result<()> {
        check(value).map_err(|e| self.not_json(e.0))
    }

    pub(crate) fn not_json(&self, why: String) -> Error {
        Error::from(ErrorKind::NotJson(why)).at_path(self.link.to_path())
    }
}
