//! Support for the code `#[derive(Tracked)]` generates. Not a public API: anything here may
//! change in any release.

use serde::Serialize;
use serde_json::Value;

pub use crate::proxy::{debug_json, flush_leaf, LeafProxy};
pub use crate::tracker::{Cx, Fields, Node, Out, Step, Tracked, Trail};
pub use crate::{Error, Op, Path, Result, Seg};
pub use core;
pub use serde;
pub use serde_json;
pub use std::borrow::Cow;
pub use std::vec::Vec;

mod hints;
pub use hints::{
    AppendOrCopyTheText, AssignThroughTheProxy, NoOtherRhs, NoRhs, WriteStarToReadTheOperand,
    WriteStarToReadTheValue,
};

/// What the derive's `TypeScript` implementations call.
pub mod ts {
    pub use crate::typescript::{
        enumeration, fields, structure, tuple, Declarations, EnumRepr, Fields, Member, Probe,
        TsParam, TsType, TypeScript, ViaTypeScript, ViaUnknown,
    };
}

use crate::tracker::{flush_assigned, to_json, Before, State};

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
        return crate::tracker::flush_reassigned(value, before, path, out);
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

/// Flushes a field tracked as one opaque JSON value.
pub fn flush_opaque_field<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    seg: Option<Step<'static>>,
    present: Option<bool>,
    out: &mut Out<'_>,
) -> Result<()> {
    flush_field(&Opaque(value), node, path, seg, present, out)
}

/// Flushes a field whose JSON a `#[serde(with = "...")]` module wrote (`json`).
pub fn flush_json_field(
    json: std::result::Result<Value, serde_json::Error>,
    node: &mut Node,
    path: &Trail<'_>,
    seg: Option<Step<'static>>,
    present: Option<bool>,
    out: &mut Out<'_>,
) -> Result<()> {
    match json {
        Ok(v) => flush_opaque_field(&v, node, path, seg, present, out),
        Err(e) => {
            let at = match seg {
                Some(seg) => path.child(seg).to_path(),
                None => path.to_path(),
            };
            Err(Error::from(crate::ErrorKind::NotJson(e.to_string())).at_path(at))
        }
    }
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

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        crate::proxy::flush_leaf(self.0, node, path, out)
    }

    fn __assign<'b>(_: &mut (), _: Self)
    where
        Self: 'b,
    {
    }
}

/// A type whose JSON is an object chord can follow when it is flattened into its parent's
/// (`#[serde(flatten)]`): a struct with named fields deriving `Tracked`. Its fields' paths are
/// then the parent's, and its proxy's `set` is its fields' `set`s, so nothing is ever
/// recorded at its own location, which it shares with the parent.
#[diagnostic::on_unimplemented(
    message = "chord cannot follow `{Self}` flattened into its parent",
    label = "`#[serde(flatten)]` on a field of this type",
    note = "chord follows a flattened field whose type is a struct with named fields deriving `Tracked`: its fields' paths are the parent's",
    note = "a flattened map is refused: its keys would be the parent's members beside its fields, and replacing the whole map has no path of its own; keep it under its own key (remove `#[serde(flatten)]`)"
)]
pub trait Flatten: Tracked {
    /// The members of the JSON object this type writes: its fields' and, through them, its
    /// flattened fields'.
    const MEMBERS: Members;
}

/// The member names of a JSON object a struct writes: its own fields' (`own`) and those of
/// the structs flattened into it (`flattened`).
pub struct Members {
    /// The names of the fields serde writes, a struct's `tag` among them.
    pub own: &'static [&'static str],
    /// The members of each flattened field.
    pub flattened: &'static [&'static Members],
}

impl Members {
    /// Whether a name is a member of this object more than once.
    pub const fn repeats(&self) -> bool {
        repeats(self, self)
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// How many times `name` is a member in `m` (its own, and its flattened fields').
const fn count(m: &Members, name: &str) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < m.own.len() {
        if same(m.own[i], name) {
            n += 1;
        }
        i += 1;
    }
    let mut j = 0;
    while j < m.flattened.len() {
        n += count(m.flattened[j], name);
        j += 1;
    }
    n
}

/// Whether a name of `part` (a part of `all`) is a member of `all` more than once.
const fn repeats(all: &Members, part: &Members) -> bool {
    let mut i = 0;
    while i < part.own.len() {
        if count(all, part.own[i]) > 1 {
            return true;
        }
        i += 1;
    }
    let mut j = 0;
    while j < part.flattened.len() {
        if repeats(all, part.flattened[j]) {
            return true;
        }
        j += 1;
    }
    false
}

/// Evaluated (when the flush of `T` is compiled) to refuse two members of one JSON object
/// with the same name, which flattening can make: their paths would be one.
pub struct UniqueMembers<T: ?Sized>(core::marker::PhantomData<T>);

impl<T: Flatten + ?Sized> UniqueMembers<T> {
    /// Fails to evaluate when a member name repeats.
    pub const OK: () = assert!(
        !T::MEMBERS.repeats(),
        "two members of one JSON object have the same name: a `#[serde(flatten)]` field writes a member that its parent, or another flattened field, writes too, so both would have one path; rename one"
    );
}

/// Checks, at a flattened field of type `T`, that `T` is [`Flatten`]; a type that is not
/// even `Tracked` is let through, as it is reported as such at the same field.
///
/// By autoref: `(&&&FlattenCheck::<T>::NEW).check()` finds the first of `&&FlattenCheck`
/// (`T: Flatten`: nothing to say), `&FlattenCheck` (`T: Tracked` only: the method's own bound
/// fails, naming `Flatten`) and `FlattenCheck` (anything else).
pub struct FlattenCheck<T: ?Sized>(core::marker::PhantomData<T>);

impl<T: ?Sized> FlattenCheck<T> {
    /// The check's receiver.
    pub const NEW: FlattenCheck<T> = FlattenCheck(core::marker::PhantomData);
}

/// [`FlattenCheck`] for a `Flatten` type.
pub trait FlattenOk {
    /// Nothing to report.
    fn check(&self) {}

    /// Refuses, at compile time, a member name that repeats in the JSON object.
    fn unique_members(&self);
}
impl<T: Flatten + ?Sized> FlattenOk for &&FlattenCheck<T> {
    #[inline(always)]
    fn unique_members(&self) {
        #[allow(clippy::let_unit_value)]
        let () = UniqueMembers::<T>::OK;
    }
}

/// [`FlattenCheck`] for a type that is `Tracked` but not `Flatten`.
pub trait FlattenRefused<T: ?Sized> {
    /// Reports that `T` is not `Flatten` (its bound cannot hold, or `FlattenOk` would have
    /// been found).
    fn check(&self)
    where
        T: Flatten,
    {
    }

    /// Nothing to check: `T` is refused as a flattened field, or has one that is.
    fn unique_members(&self) {}
}
impl<T: Tracked + ?Sized> FlattenRefused<T> for &FlattenCheck<T> {}

/// [`FlattenCheck`] for a type that is not `Tracked`, which is reported as such.
pub trait FlattenUntracked {
    /// Nothing more to report.
    fn check(&self) {}

    /// Nothing to check.
    fn unique_members(&self) {}
}
impl<T: ?Sized> FlattenUntracked for FlattenCheck<T> {}
