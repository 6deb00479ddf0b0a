use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::tracker::structs::flush_field;
use crate::tracker::Out;
use crate::tracker::{
    flush_assigned, to_json, Before, Cx, Node, Scalar, State, Step, Tracked, Trail,
};

/// The proxy of a value tracked as one JSON leaf: a number, a `bool`, a set, or a field
/// marked `#[chord(opaque)]`. Assigning it (`set`, `+=` and the other compound assignments,
/// or any change through `&mut`) emits `s` at flush, or the finer ops a deep comparison
/// finds, or nothing when the value ends up equal.
///
/// ```
/// use chord::track;
/// let mut t = track(1u32);
/// t.flush().unwrap();
/// let mut n = t.state();
/// n += 1;
/// n -= 1;
/// assert!(t.flush().unwrap().is_empty()); // back where the replica is
/// ```
pub struct LeafProxy<'a, T> {
    v: &'a mut T,
    cx: Cx<'a>,
    json: fn(&T) -> Option<Value>,
    /// For a `bool`, `char`, `()` or integer of up to 64 bits: its value kept typed, whose
    /// reassignment is recorded without a `Value` and cannot fail to flush.
    typed: Option<fn(&T) -> Scalar>,
}

fn json_of<T: Serialize>(v: &T) -> Option<Value> {
    serde_json::to_value(v).ok()
}

impl<'a, T: Serialize> LeafProxy<'a, T> {
    fn new(v: &'a mut T, cx: Cx<'a>) -> Self {
        LeafProxy {
            v,
            cx,
            json: json_of::<T>,
            typed: None,
        }
    }

    /// A leaf whose value `typed` reads as a [`Scalar`].
    fn scalar(v: &'a mut T, cx: Cx<'a>, typed: fn(&T) -> Scalar) -> Self {
        LeafProxy {
            v,
            cx,
            json: json_of::<T>,
            typed: Some(typed),
        }
    }
}

impl<'a, T> LeafProxy<'a, T> {
    /// A leaf whose JSON is written by `json` (a field with `#[serde(with = "...")]`).
    fn with_json(v: &'a mut T, cx: Cx<'a>, json: fn(&T) -> Option<Value>) -> Self {
        LeafProxy {
            v,
            cx,
            json,
            typed: None,
        }
    }

    /// Records a reassignment about to happen (the value is still the old one); then
    /// [`settle`](LeafProxy::settle) once the new value is in place.
    #[inline]
    fn record(&mut self) {
        if let Some(node) = self.cx.node.as_deref_mut() {
            let v = &*self.v;
            match self.typed {
                Some(typed) => node.assign_scalar(typed(v)),
                None => {
                    let json = self.json;
                    node.assign(|| json(v));
                }
            }
        }
    }

    /// After a reassignment: a scalar's new value decides whether the flush may fail.
    #[inline]
    fn settle(&mut self) {
        if let (Some(node), Some(typed)) = (self.cx.node.as_deref(), self.typed) {
            node.settle_scalar(typed(self.v));
        }
    }

    /// Replaces the value.
    pub fn set(&mut self, value: T) {
        self.record();
        *self.v = value;
        self.settle();
    }

    /// Replaces the value, returning the old one (`std::mem::replace`).
    pub fn replace(&mut self, value: T) -> T {
        self.record();
        let old = std::mem::replace(self.v, value);
        self.settle();
        old
    }

    /// Changes the value in place; it is compared with the accepted value at flush.
    pub fn update<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        self.record();
        let r = f(self.v);
        self.settle();
        r
    }
}

impl<T> Deref for LeafProxy<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.v
    }
}

impl<T> DerefMut for LeafProxy<'_, T> {
    /// Any change through `&mut T`: the value's JSON is taken now and compared at flush.
    fn deref_mut(&mut self) -> &mut T {
        self.record();
        // (The new value is not seen: the flush may fail.)
        if let Some(node) = self.cx.node.as_deref() {
            node.risk.mark();
        }
        self.v
    }
}

impl<T> fmt::Debug for LeafProxy<'_, T> {
    /// The value as JSON (what the replicas hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.json)(self.v) {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("<not JSON>"),
        }
    }
}

impl<T: fmt::Display> fmt::Display for LeafProxy<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.v.fmt(f)
    }
}

impl<T: PartialEq> PartialEq<T> for LeafProxy<'_, T> {
    fn eq(&self, other: &T) -> bool {
        *self.v == *other
    }
}

impl<T: PartialOrd> PartialOrd<T> for LeafProxy<'_, T> {
    fn partial_cmp(&self, other: &T) -> Option<std::cmp::Ordering> {
        (*self.v).partial_cmp(other)
    }
}

macro_rules! compound {
    ($($trait:ident $method:ident),*) => {$(
        impl<T: std::ops::$trait<R>, R> std::ops::$trait<R> for LeafProxy<'_, T> {
            /// Assigns in place; compared with the accepted value at flush.
            fn $method(&mut self, rhs: R) {
                self.record();
                std::ops::$trait::$method(self.v, rhs);
                self.settle();
            }
        }
    )*};
}

compound!(AddAssign add_assign, SubAssign sub_assign, MulAssign mul_assign,
    DivAssign div_assign, RemAssign rem_assign, BitAndAssign bitand_assign,
    BitOrAssign bitor_assign, BitXorAssign bitxor_assign, ShlAssign shl_assign,
    ShrAssign shr_assign);

/// Emits the ops for a leaf at `path`.
pub fn flush<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    match &node.state {
        State::Assigned(before) if out.undoing() => {
            crate::tracker::undo_assigned(path, before, out);
            Ok(())
        }
        State::Assigned(before) => {
            let after = to_json(value, path)?;
            match before {
                // A number, a `bool` or `null` now, or before: the change is one `s` or
                // nothing (what the diff finds), written under the path id the node caches.
                Before::Value(before) if !comparable(before, &after) => {
                    if *before != after {
                        out.set_cached(&node.wire, path, after);
                    }
                }
                Before::Scalar(before) => {
                    if before.value() != after {
                        out.set_cached(&node.wire, path, after);
                    }
                }
                _ => flush_assigned(path, before, Some(after), out),
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Emits the ops for a scalar leaf at `path`, `now` its value: compared with the accepted
/// value typed, when it was kept so, and sent as one `s` when it differs.
#[inline]
fn flush_scalar<T: Serialize + ?Sized>(
    now: Scalar,
    value: &T,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    if out.undoing() {
        return flush(value, node, path, out);
    }
    match &node.state {
        // (A value beyond ±(2^53 − 1) goes through `to_json`, which counts it for the
        // JS-safe check.)
        State::Assigned(Before::Scalar(before)) if now.safe() => {
            if *before != now {
                out.set_scalar(&node.wire, path, now);
            }
            Ok(())
        }
        State::Clean => Ok(()),
        _ => flush(value, node, path, out),
    }
}

/// Whether two JSON values are compared inside (two strings, arrays or objects), not as one.
fn comparable(a: &Value, b: &Value) -> bool {
    matches!(
        (a, b),
        (Value::String(_), Value::String(_))
            | (Value::Array(_), Value::Array(_))
            | (Value::Object(_), Value::Object(_))
    )
}

/// The leaves kept typed as [`Scalar`]s, with the variant each is kept as.
macro_rules! scalars {
    ($($t:ty => $v:ident $(as $w:ty)?),*) => {$(
        impl Tracked for $t {
            type Proxy<'a> = LeafProxy<'a, $t>;

            fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> LeafProxy<'a, $t> {
                LeafProxy::scalar(self, cx, |v| scalars!(@of $v v $($w)?))
            }

            #[inline]
            fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
                let v = self;
                flush_scalar(scalars!(@of $v v $($w)?), self, node, path, out)
            }

            fn __assign<'a>(proxy: &mut LeafProxy<'a, $t>, value: Self) where Self: 'a {
                proxy.set(value);
            }
        }
    )*};
    (@of Unit $v:ident) => { { let _ = $v; Scalar::Unit } };
    (@of $variant:ident $v:ident) => { Scalar::$variant(*$v) };
    (@of $variant:ident $v:ident $w:ty) => { Scalar::$variant(*$v as $w) };
}

scalars!(
    bool => Bool,
    char => Char,
    () => Unit,
    i8 => Int as i64,
    i16 => Int as i64,
    i32 => Int as i64,
    i64 => Int,
    isize => Int as i64,
    u8 => UInt as u64,
    u16 => UInt as u64,
    u32 => UInt as u64,
    u64 => UInt,
    usize => UInt as u64
);

macro_rules! leaves {
    ($($t:ty),*) => {$(
        impl Tracked for $t {
            type Proxy<'a> = LeafProxy<'a, $t>;

            fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> LeafProxy<'a, $t> {
                LeafProxy::new(self, cx)
            }

            fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
                flush(self, node, path, out)
            }

            fn __assign<'a>(proxy: &mut LeafProxy<'a, $t>, value: Self) where Self: 'a {
                proxy.set(value);
            }
        }
    )*};
}

leaves!(i128, u128, f32, f64);

/// A `BTreeSet` is tracked as one value (its JSON is a sorted array): a change is compared
/// with the accepted array at flush.
impl<T: Serialize + Ord> Tracked for std::collections::BTreeSet<T> {
    type Proxy<'a>
        = LeafProxy<'a, Self>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> LeafProxy<'a, Self> {
        LeafProxy::new(self, cx)
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        flush(self, node, path, out)
    }

    fn __assign<'a>(proxy: &mut LeafProxy<'a, Self>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}

/// A `HashSet` is tracked as one value (its JSON is an array in the set's iteration order,
/// which any insertion may change): a change is compared with the accepted array at flush.
impl<T, S> Tracked for std::collections::HashSet<T, S>
where
    T: Serialize + Eq + std::hash::Hash,
    S: std::hash::BuildHasher,
{
    type Proxy<'a>
        = LeafProxy<'a, Self>
    where
        T: 'a,
        S: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> LeafProxy<'a, Self> {
        LeafProxy::new(self, cx)
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        flush(self, node, path, out)
    }

    fn __assign<'a>(proxy: &mut LeafProxy<'a, Self>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}

// ---- Fields tracked as one JSON value: `#[chord(opaque)]` and `#[serde(with = "...")]`. ----

/// The proxy of a value tracked as one JSON leaf: a field marked `#[chord(opaque)]`, or a
/// type whose derive tracks it whole.
pub fn leaf_proxy<'a, T: Serialize>(v: &'a mut T, cx: Cx<'a>) -> LeafProxy<'a, T> {
    LeafProxy::new(v, cx)
}

/// The proxy of a field whose JSON `json` writes (a field with `#[serde(with = "...")]`).
pub fn leaf_proxy_with_json<'a, T>(
    v: &'a mut T,
    cx: Cx<'a>,
    json: fn(&T) -> Option<Value>,
) -> LeafProxy<'a, T> {
    LeafProxy::with_json(v, cx, json)
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
            Err(Error::from(ErrorKind::NotJson(e.to_string())).at_path(at))
        }
    }
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
        flush(self.0, node, path, out)
    }

    fn __assign<'b>(_: &mut (), _: Self)
    where
        Self: 'b,
    {
    }
}
