use std::ops::{Deref, DerefMut};

use serde_json::{Map, Value};

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::proxy::{map, MapProxy, TextProxy, VecProxy};
use crate::tracker::Out;
use crate::tracker::{flush_reassigned, seq, text, Cx, Node, State, Tracked, Trail};

/// The proxy of an untyped `serde_json::Value` ("arbitrary facet state"): the same intent
/// recording as the typed proxies, chosen by the value's type at run time.
///
/// ```
/// use chord::{path, track, Op};
/// use serde_json::json;
/// let mut t = track(json!({"log": "a", "items": [1], "n": 0}));
/// t.flush().unwrap();
/// let mut s = t.state();
/// s.member("log").unwrap().push_str("b").unwrap();
/// s.member("items").unwrap().push(json!(2)).unwrap();
/// s.member("n").unwrap().set(3); // a new member: compared at flush
/// assert_eq!(t.flush().unwrap(), vec![
///     Op::Append(path!["log"], "b".into()),
///     Op::Splice { path: path!["items"].into(), index: 1, remove: 0, items: vec![json!(2)] },
///     Op::Set(path!["n"], json!(3)),
/// ]);
/// ```
pub struct ValueProxy<'a> {
    v: &'a mut Value,
    cx: Cx<'a>,
}

impl<'a> ValueProxy<'a> {
    fn wrong(&self, kind: ErrorKind) -> Error {
        Error::from(kind)
    }

    /// Replaces the value; compared with the accepted one at flush.
    pub fn set(&mut self, value: impl Into<Value>) {
        let value = value.into();
        match self.cx.node.as_deref_mut() {
            Some(node) if node.is_dirty() => {
                node.assign_tracked(&*self.v);
                *self.v = value;
            }
            Some(node) => {
                let old = std::mem::replace(self.v, value);
                node.assign(move || Some(old)); // the accepted value, moved: no copy
            }
            None => *self.v = value,
        }
    }

    /// The proxy of an object member, if this is an object that has it.
    pub fn member<'b>(&'b mut self, key: &'b str) -> Option<ValueProxy<'b>> {
        let Value::Object(m) = &mut *self.v else {
            return None;
        };
        let v = m.get_mut(key)?;
        let reserved = crate::RESERVED.contains(&key);
        if reserved {
            // No path can name it: the object is compared whole at flush instead.
            if let Some(node) = self.cx.node.as_deref_mut() {
                node.assign_before(crate::tracker::Before::Existed);
            }
        }
        let cx = self.cx.member(key);
        Some(ValueProxy { v, cx })
    }

    /// The proxy of an array element, if this is an array that has it.
    pub fn element(&mut self, index: usize) -> Option<ValueProxy<'_>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let Value::Array(items) = &mut *self.v else {
            return None;
        };
        let v = items.get_mut(index)?;
        let cx = self.cx.element(accepted);
        Some(ValueProxy { v, cx })
    }

    /// The object proxy, if this is an object.
    pub fn as_object(&mut self) -> Option<MapProxy<'_, Map<String, Value>>> {
        match &mut *self.v {
            Value::Object(m) => Some(MapProxy::new(m, self.cx.same())),
            _ => None,
        }
    }

    /// The array proxy, if this is an array.
    pub fn as_array(&mut self) -> Option<VecProxy<'_, Value>> {
        match &mut *self.v {
            Value::Array(items) => Some(items.__proxy(self.cx.same())),
            _ => None,
        }
    }

    /// The string proxy, if this is a string.
    pub fn as_text(&mut self) -> Option<TextProxy<'_>> {
        match &mut *self.v {
            Value::String(s) => Some(TextProxy::new(s, self.cx.same())),
            _ => None,
        }
    }

    /// Sets an object member (see [`MapProxy::insert`]).
    ///
    /// # Errors
    ///
    /// This is not an object.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: impl Into<Value>,
    ) -> Result<Option<Value>> {
        let found = json_type(self.v);
        match self.as_object() {
            Some(mut m) => Ok(m.insert(key.into(), value.into())),
            None => Err(self.wrong(ErrorKind::NotAnObject { found })),
        }
    }

    /// Removes an object member (see [`MapProxy::remove`]).
    ///
    /// # Errors
    ///
    /// This is not an object.
    pub fn remove(&mut self, key: &str) -> Result<Option<Value>> {
        let found = json_type(self.v);
        match self.as_object() {
            Some(mut m) => Ok(m.remove(key)),
            None => Err(self.wrong(ErrorKind::NotAnObject { found })),
        }
    }

    /// Appends to an array (see [`VecProxy::push`]).
    ///
    /// # Errors
    ///
    /// This is not an array.
    pub fn push(&mut self, value: impl Into<Value>) -> Result<()> {
        let found = json_type(self.v);
        match self.as_array() {
            Some(mut a) => {
                a.push(value.into());
                Ok(())
            }
            None => Err(self.wrong(ErrorKind::NotAnArray { found })),
        }
    }

    /// Appends to a string (see [`TextProxy::push_str`]).
    ///
    /// # Errors
    ///
    /// This is not a string.
    pub fn push_str(&mut self, s: &str) -> Result<()> {
        let found = json_type(self.v);
        match self.as_text() {
            Some(mut t) => {
                t.push_str(s);
                Ok(())
            }
            None => Err(self.wrong(ErrorKind::NotAString { found })),
        }
    }
}

impl Deref for ValueProxy<'_> {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.v
    }
}

impl DerefMut for ValueProxy<'_> {
    /// Any change through `&mut Value`: compared with the accepted value at flush.
    fn deref_mut(&mut self) -> &mut Value {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
        self.v
    }
}

impl std::fmt::Debug for ValueProxy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.v.fmt(f)
    }
}

impl Tracked for Value {
    type Proxy<'a> = ValueProxy<'a>;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> ValueProxy<'a> {
        ValueProxy { v: self, cx }
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        match (&node.state, self) {
            (State::Assigned(before), _) => flush_reassigned(self, before, path, out),
            (State::Text(_), Value::String(s)) => {
                text::flush(s, node, path, out);
                Ok(())
            }
            (State::Seq(_) | State::Clean, Value::Array(items)) => {
                seq::flush(items.as_slice(), node, path, out)
            }
            (State::Clean, Value::Object(m)) => map::flush(m, node, path, out),
            _ => Ok(()),
        }
    }

    fn __assign<'a>(proxy: &mut ValueProxy<'a>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}
