use std::ops::Deref;

use serde::Serialize;

use crate::error::Result;
use crate::op::Op;
use crate::path::Path;
use crate::tracker::{flush_assigned, to_json, Cx, Node, State, Tracked};

/// The proxy of a value tracked as one JSON leaf: a primitive, or a field marked
/// `#[chord(opaque)]`. Setting it (or updating it in place) emits `s` at flush, or the
/// finer ops a deep comparison finds, or nothing when the value ends up equal.
///
/// ```
/// use chord::track;
/// let mut t = track(1u32);
/// t.flush().unwrap();
/// t.state().set(2).unwrap();
/// t.state().set(1).unwrap();
/// assert!(t.flush().unwrap().is_empty()); // back where the replica is
/// ```
pub struct LeafProxy<'a, T> {
    v: &'a mut T,
    cx: Cx<'a>,
}

impl<'a, T: Serialize> LeafProxy<'a, T> {
    #[doc(hidden)]
    pub fn new(v: &'a mut T, cx: Cx<'a>) -> Self {
        LeafProxy { v, cx }
    }

    fn record(&mut self) {
        if let Some(node) = self.cx.node.as_deref_mut() {
            let v = &*self.v;
            node.assign(|| serde_json::to_value(v).ok());
        }
    }

    /// Replaces the value.
    ///
    /// # Errors
    ///
    /// The value is not faithful JSON (a non-finite float, a non-string map key); nothing is
    /// changed then.
    pub fn set(&mut self, value: T) -> Result<()> {
        self.cx.check(&value)?;
        self.record();
        *self.v = value;
        Ok(())
    }

    /// Changes the value in place; it is compared with the accepted value at flush.
    ///
    /// # Errors
    ///
    /// The changed value is not faithful JSON. The change stays made, and the next flush
    /// reports the same error until the value is fixed.
    pub fn update<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> Result<R> {
        self.record();
        let r = f(self.v);
        self.cx.check(&*self.v)?;
        Ok(r)
    }
}

impl<T> Deref for LeafProxy<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.v
    }
}

/// Emits the ops for a leaf at `path`.
#[doc(hidden)]
pub fn flush<T: Serialize + ?Sized>(
    value: &T,
    node: &mut Node,
    path: &mut Path,
    out: &mut Vec<Op>,
) -> Result<()> {
    if let State::Assigned(before) = &node.state {
        flush_assigned(path, before, Some(to_json(value, path)?), out);
    }
    Ok(())
}

macro_rules! leaves {
    ($($t:ty),*) => {$(
        impl Tracked for $t {
            type Proxy<'a> = LeafProxy<'a, $t>;

            fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> LeafProxy<'a, $t> {
                LeafProxy::new(self, cx)
            }

            fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
                flush(self, node, path, out)
            }
        }
    )*};
}

leaves!(bool, char, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);
