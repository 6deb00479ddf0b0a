//! Support for the code `#[derive(Tracked)]` generates. Not a public API: anything here may
//! change in any release.

use serde::Serialize;

pub use crate::proxy::{flush_leaf, LeafProxy};
pub use crate::tracker::{Cx, Node, Tracked};
pub use crate::{Error, Op, Path, Result};
pub use core;
pub use serde;
pub use serde_json;
pub use std::vec::Vec;

use crate::path::Seg;
use crate::tracker::{flush_assigned, to_json, with_seg, Before, Key, State};

/// Flushes a struct: its own assignment if any, else each dirty field through `field`.
pub fn flush_struct<T: Serialize>(
    value: &T,
    node: &mut Node,
    path: &mut Path,
    out: &mut Vec<Op>,
    mut field: impl FnMut(u32, &mut Node, &mut Path, &mut Vec<Op>) -> Result<()>,
) -> Result<()> {
    if let State::Assigned(before) = &node.state {
        flush_assigned(path, before, Some(to_json(value, path)?), out);
        return Ok(());
    }
    for (key, child) in node.children.iter_mut() {
        if let Key::Field(index) = *key {
            field(index, child, path, out)?;
        }
    }
    Ok(())
}

/// Flushes one field named `name`. `present` is, for a field serde may skip, whether it is in
/// the JSON now; the node remembers whether it was at the last flush.
pub fn flush_field<T: Tracked + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &mut Path,
    name: &'static str,
    present: Option<bool>,
    out: &mut Vec<Op>,
) -> Result<()> {
    with_seg(path, Seg::Key(name.into()), |p| {
        match (node.present, present) {
            // Present then and now (or never skipped): the field's own changes.
            (Some(true), Some(true)) | (None, _) | (_, None) => value.__flush(node, p, out),
            // Appeared or disappeared: what a reassignment from or to "absent" amounts to.
            (Some(was), Some(now)) => {
                let before = if was { Before::Existed } else { Before::Absent };
                let after = if now { Some(to_json(value, p)?) } else { None };
                flush_assigned(p, &before, after, out);
                Ok(())
            }
        }
    })
}

/// Flushes a field tracked as one opaque JSON value.
pub fn flush_opaque_field<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &mut Path,
    name: &'static str,
    present: Option<bool>,
    out: &mut Vec<Op>,
) -> Result<()> {
    flush_field(&Opaque(value), node, path, name, present, out)
}

/// Reassigns a whole struct through its proxy.
pub fn assign<T: Tracked>(slot: &mut T, value: T, cx: &mut Cx<'_>) -> Result<()> {
    cx.check(&value)?;
    if let Some(node) = cx.node.as_deref_mut() {
        node.assign_tracked(&*slot);
    }
    *slot = value;
    Ok(())
}

/// A borrowed value tracked as a leaf.
struct Opaque<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Opaque<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<T: Serialize + ?Sized> Tracked for Opaque<'_, T> {
    type Proxy<'b>
        = ()
    where
        Self: 'b;

    fn __proxy<'b>(&'b mut self, _: Cx<'b>) {}

    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        crate::proxy::flush_leaf(self.0, node, path, out)
    }
}
