use std::ops::Deref;

use crate::error::Result;
use crate::op::Op;
use crate::path::Path;
use crate::tracker::{flush_assigned, to_json, Cx, Node, State, Tracked};

/// The proxy of an `Option<T>`. Setting `None` on a field serde skips when `None`
/// (`skip_serializing_if = "Option::is_none"`) emits `d`; otherwise it is `s` of `null`.
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
/// t.state().model().get_mut().unwrap().push_str("-5");
/// assert_eq!(t.flush().unwrap(), vec![Op::Append(path!["model"], "-5".into())]);
/// t.state().model().set(None).unwrap();
/// assert_eq!(t.flush().unwrap(), vec![Op::Delete(path!["model"])]);
/// ```
pub struct OptionProxy<'a, T> {
    v: &'a mut Option<T>,
    cx: Cx<'a>,
}

impl<'a, T: Tracked> OptionProxy<'a, T> {
    /// The proxy of the contents, when there are any.
    pub fn get_mut(&mut self) -> Option<T::Proxy<'_>> {
        let cx = self.cx.same();
        self.v.as_mut().map(|v| v.__proxy(cx))
    }

    /// Replaces the option.
    ///
    /// # Errors
    ///
    /// The value is not faithful JSON; nothing is changed then.
    pub fn set(&mut self, value: Option<T>) -> Result<()> {
        self.cx.check(&value)?;
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
        *self.v = value;
        Ok(())
    }

    /// Takes the contents out, leaving `None`.
    pub fn take(&mut self) -> Option<T> {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
        self.v.take()
    }

    /// The proxy of the contents, inserting `f()` first when there are none.
    ///
    /// # Errors
    ///
    /// The inserted value is not faithful JSON.
    pub fn get_or_insert_with(&mut self, f: impl FnOnce() -> T) -> Result<T::Proxy<'_>> {
        if self.v.is_none() {
            self.set(Some(f()))?;
        }
        let cx = self.cx.same();
        match self.v.as_mut() {
            Some(v) => Ok(v.__proxy(cx)),
            None => unreachable!("just inserted"),
        }
    }
}

impl<T> Deref for OptionProxy<'_, T> {
    type Target = Option<T>;
    fn deref(&self) -> &Option<T> {
        self.v
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

    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        match (&node.state, self) {
            (State::Assigned(before), _) => {
                flush_assigned(path, before, Some(to_json(self, path)?), out);
                Ok(())
            }
            (_, Some(v)) => v.__flush(node, path, out),
            (_, None) => Ok(()),
        }
    }
}
