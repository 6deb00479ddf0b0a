//! The flush of a derived struct, or of the current variant of a derived enum: the walk
//! through the fields written since the last flush, one level of it per struct. The code
//! `#[derive(Tracked)]` generates calls these (through `chord::__private`).

use serde::Serialize;

use crate::error::Result;
use crate::tracker::{
    flush_assigned, flush_reassigned, to_json, Before, Cx, Node, Out, State, Step, Tracked, Trail,
};

/// The flush of a struct's fields, by index: what [`flush_struct`] calls for each field
/// written since the last flush. The derive implements it for a struct, each field's flush
/// inline in one `match`, so that a struct's walk is one call per level; an enum variant's
/// fields are a closure (see [`flush_enum`]).
pub trait FlushField {
    /// Flushes field `index` at its node.
    fn __flush_field(
        &self,
        index: u32,
        node: &mut Node,
        path: &Trail<'_>,
        out: &mut Out<'_>,
    ) -> Result<()>;
}

impl<T: FlushField + ?Sized> FlushField for &T {
    #[inline(always)]
    fn __flush_field(
        &self,
        index: u32,
        node: &mut Node,
        path: &Trail<'_>,
        out: &mut Out<'_>,
    ) -> Result<()> {
        (**self).__flush_field(index, node, path, out)
    }
}

/// An enum variant's fields: a closure from a field's index to its flush.
struct ByIndex<F>(F);

impl<F: Fn(u32, &mut Node, &Trail<'_>, &mut Out<'_>) -> Result<()>> FlushField for ByIndex<F> {
    #[inline(always)]
    fn __flush_field(
        &self,
        index: u32,
        node: &mut Node,
        path: &Trail<'_>,
        out: &mut Out<'_>,
    ) -> Result<()> {
        (self.0)(index, node, path, out)
    }
}

/// Flushes a struct (or the current variant of an enum): its own assignment if any, else
/// each field written since the last flush through `fields` (the struct itself, for a
/// derived struct).
pub fn flush_struct<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
    fields: impl FlushField,
) -> Result<()> {
    if let State::Assigned(before) = &node.state {
        return flush_reassigned(value, before, path, out);
    }
    // Only the fields written since the last flush (most fields of a wide struct are
    // clean), by the struct's written set.
    // (A field's index is its place in the list.)
    let Some((list, written)) = node.written_fields() else {
        return flush_one_field(node, path, out, &fields);
    };
    let reset = out.reset;
    let mut bits = written.first(reset);
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let child = &mut list[i].1;
        fields.__flush_field(i as u32, child, path, out)?;
        if reset {
            child.reset_flushed();
        }
    }
    if written.has_more() {
        written.take_more(reset, |i| {
            let child = &mut list[i].1;
            fields.__flush_field(i as u32, child, path, out)?;
            if reset {
                child.reset_flushed();
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// [`flush_struct`] of a struct with one field (or none), which has no written set: the
/// field is visited when anything may be recorded there. (Inline: a streaming flush goes
/// through one-field structs, as `{messages: [...]}`, at every step.)
#[inline(always)]
fn flush_one_field(
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
    fields: &(impl FlushField + ?Sized),
) -> Result<()> {
    for (i, child) in node.children.iter_mut().enumerate() {
        let child = &mut child.1;
        if child.may_be_dirty() {
            fields.__flush_field(i as u32, child, path, out)?;
            if out.reset {
                child.reset_flushed();
            }
        }
    }
    Ok(())
}

/// Runs `f` at `segs` below `path` (an enum variant's place in its JSON: none, one or two
/// segments).
pub fn with_segs<R>(
    path: &Trail<'_>,
    segs: &[Step<'static>],
    f: impl FnOnce(&Trail<'_>) -> R,
) -> R {
    match segs {
        [] => f(path),
        [first, rest @ ..] => with_segs(&path.child(*first), rest, f),
    }
}

/// Flushes one field at `seg` under `path` (`None`: the field's JSON is its parent's, as a
/// newtype's is). `present` is, for a field serde may skip, whether it is in the JSON now;
/// the node remembers whether it was at the last flush.
pub fn flush_field<T: Tracked + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    seg: Option<Step<'static>>,
    present: Option<bool>,
    out: &mut Out<'_>,
) -> Result<()> {
    flush_field_with(value, node, path, seg, present, out, T::__flush)
}

/// [`flush_field`] with the field's own flush passed in (`<Type as Tracked>::__flush`, or a
/// flattened field's), which the derive names at the field's type: a type that is not
/// `Tracked` is then reported there, as the same error as at the proxy's field, once.
/// (Always inline, with no closure of its own: it is one level of every flush walk.)
#[inline(always)]
pub fn flush_field_with<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    seg: Option<Step<'static>>,
    present: Option<bool>,
    out: &mut Out<'_>,
    flush: impl FnOnce(&T, &mut Node, &Trail<'_>, &mut Out<'_>) -> Result<()>,
) -> Result<()> {
    let below;
    let path = match seg {
        Some(seg) => {
            below = path.child(seg);
            &below
        }
        None => path,
    };
    match (node.present, present) {
        // Present then and now (or never skipped): the field's own changes.
        (Some(true), Some(true)) | (None, _) | (_, None) => flush(value, node, path, out),
        // Appeared or disappeared: what a reassignment from or to "absent" amounts to.
        (Some(was), Some(now)) => flush_presence(value, was, now, path, out),
    }
}

/// Flushes a field that appeared (`!was && now`) or disappeared (`was && !now`) in the
/// JSON, or stayed absent.
#[inline(never)]
fn flush_presence<T: Serialize + ?Sized>(
    value: &T,
    was: bool,
    now: bool,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    let before = if was { Before::Existed } else { Before::Absent };
    let after = if now {
        Some(to_json(value, path)?)
    } else {
        None
    };
    flush_assigned(path, &before, after, out);
    Ok(())
}

/// Records that an enum at `cx`, now holding its variant number `variant`, is about to be
/// replaced (or changed through `&mut`).
pub fn record_enum<T: Tracked>(current: &T, variant: u32, cx: &mut Cx<'_>) {
    if let Some(node) = cx.node.as_deref_mut() {
        if !matches!(node.state, State::Assigned(_)) {
            node.variant = Some(variant);
        }
        node.assign_tracked(current);
    }
}

/// Flushes an enum now holding its variant number `variant`: a variant change is one `s`
/// of the new value; anything else as a struct (`fields` flushes the variant's fields).
pub fn flush_enum<T: Serialize + ?Sized>(
    value: &T,
    variant: u32,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
    fields: impl Fn(u32, &mut Node, &Trail<'_>, &mut Out<'_>) -> Result<()>,
) -> Result<()> {
    if matches!(node.state, State::Assigned(_)) && node.variant.is_some_and(|v| v != variant) {
        flush_assigned(path, &Before::Existed, Some(to_json(value, path)?), out);
        return Ok(());
    }
    flush_struct(value, node, path, out, ByIndex(fields))
}
