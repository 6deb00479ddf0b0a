//! Fields flattened into their parent's JSON object (`#[serde(flatten)]`): which types chord
//! can follow there, and the compile-time check that no two members of one object share a
//! name. The code `#[derive(Tracked)]` generates names these (through `chord::__private`).

use crate::tracker::Tracked;

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
