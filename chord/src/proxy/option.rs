use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::error::Result;
use crate::tracker::Out;
use crate::tracker::{flush_reassigned, Cx, Node, State, Tracked, Trail};

/// The proxy of an `Option<T>`, with `Option`'s methods. [`as_mut`](OptionProxy::as_mut)
/// hands out the contents' proxy, so edits inside stay fine-grained; replacing the option
/// (`set`, `take`, `replace`, `insert`) is compared with the accepted value at flush. Setting
/// `None` on a field serde skips when `None` (`skip_serializing_if = "Option::is_none"`)
/// emits `d`; otherwise it is `s` of `null`.
///
/// ```
/// use chord::{path, track, Op, Tracked};
/// use serde::Serialize;
///
/// #[derive(Tracked, Serialize)]
/// struct Config {
///     #[serde(skip_serializing_if = "Option::is_none")]
///     model: Option<String>,
/// }
///
/// let mut t = track(Config { model: Some("gpt".into()) });
/// t.flush().unwrap();
/// if let Some(mut model) = t.state().model.as_mut() {
///     model.push_str("-5");
/// }
/// assert_eq!(t.flush().unwrap(), vec![Op::Append(path!["model"], "-5".into())]);
/// t.state().model.set(None);
/// assert_eq!(t.flush().unwrap(), vec![Op::Delete(path!["model"])]);
/// ```
pub struct OptionProxy<'a, T> {
    v: &'a mut Option<T>,
    cx: Cx<'a>,
}

impl<'a, T: Tracked> OptionProxy<'a, T> {
    fn record(&mut self) {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
    }

    /// The proxy of the contents, when there are any (`Option::as_mut`).
    pub fn as_mut(&mut self) -> Option<T::Proxy<'_>> {
        let cx = self.cx.same();
        self.v.as_mut().map(|v| v.__proxy(cx))
    }

    /// Replaces the option.
    pub fn set(&mut self, value: Option<T>) {
        self.record();
        *self.v = value;
    }

    /// Takes the contents out, leaving `None` (`Option::take`).
    pub fn take(&mut self) -> Option<T> {
        if self.v.is_none() {
            return None;
        }
        self.record();
        self.v.take()
    }

    /// Puts `value` in, returning the old contents (`Option::replace`).
    pub fn replace(&mut self, value: T) -> Option<T> {
        self.record();
        self.v.replace(value)
    }

    /// Puts `value` in and returns the proxy of it (`Option::insert`).
    pub fn insert(&mut self, value: T) -> T::Proxy<'_> {
        self.record();
        *self.v = Some(value);
        self.contents()
    }

    /// The proxy of the contents, inserting `value` first when there are none
    /// (`Option::get_or_insert`).
    pub fn get_or_insert(&mut self, value: T) -> T::Proxy<'_> {
        self.get_or_insert_with(|| value)
    }

    /// The proxy of the contents, inserting `f()` first when there are none
    /// (`Option::get_or_insert_with`).
    pub fn get_or_insert_with(&mut self, f: impl FnOnce() -> T) -> T::Proxy<'_> {
        if self.v.is_none() {
            self.record();
            *self.v = Some(f());
        }
        self.contents()
    }

    fn contents(&mut self) -> T::Proxy<'_> {
        let cx = self.cx.same();
        match self.v.as_mut() {
            Some(v) => v.__proxy(cx),
            None => unreachable!("the option was just filled"),
        }
    }
}

impl<T> Deref for OptionProxy<'_, T> {
    type Target = Option<T>;
    fn deref(&self) -> &Option<T> {
        self.v
    }
}

impl<T: Tracked> DerefMut for OptionProxy<'_, T> {
    /// Any change through `&mut Option<T>`: the option is compared with the accepted value
    /// at flush (its JSON is taken now).
    fn deref_mut(&mut self) -> &mut Option<T> {
        self.record();
        self.v
    }
}

impl<T: serde::Serialize> fmt::Debug for OptionProxy<'_, T> {
    /// The value as JSON (what the replicas hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::debug::debug_json(&*self.v, f)
    }
}

impl<T: PartialEq> PartialEq<Option<T>> for OptionProxy<'_, T> {
    fn eq(&self, other: &Option<T>) -> bool {
        *self.v == *other
    }
}

impl<T: Tracked> Tracked for Option<T> {
    type Proxy<'a>
        = OptionProxy<'a, T>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> OptionProxy<'a, T> {
        OptionProxy { v: self, cx }
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        match (&node.state, self) {
            (State::Assigned(before), _) => flush_reassigned(self, before, path, out),
            (_, Some(v)) => v.__flush(node, path, out),
            (_, None) => Ok(()),
        }
    }

    fn __assign<'a>(proxy: &mut OptionProxy<'a, T>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}

/// A `Box<T>` is tracked as its contents: the same proxy, the same JSON.
impl<T: Tracked> Tracked for Box<T> {
    type Proxy<'a>
        = T::Proxy<'a>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> T::Proxy<'a> {
        (**self).__proxy(cx)
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        (**self).__flush(node, path, out)
    }

    fn __assign<'a>(proxy: &mut T::Proxy<'a>, value: Self)
    where
        Self: 'a,
    {
        T::__assign(proxy, *value);
    }
}
