use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::ops::Deref;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::op::Op;
use crate::path::{Path, Seg, RESERVED};
use crate::tracker::{flush_assigned, to_json, with_seg, Before, Cx, Key, Node, State, Tracked};

/// A map with string keys that chord tracks as a JSON object: `BTreeMap<String, V>`,
/// `HashMap<String, V>` and `serde_json::Map<String, Value>`.
pub trait MapLike: Serialize {
    /// The value type.
    type Value: Tracked;
    #[doc(hidden)]
    fn __get(&self, key: &str) -> Option<&Self::Value>;
    #[doc(hidden)]
    fn __get_mut(&mut self, key: &str) -> Option<&mut Self::Value>;
    #[doc(hidden)]
    fn __insert(&mut self, key: String, value: Self::Value) -> Option<Self::Value>;
    #[doc(hidden)]
    fn __remove(&mut self, key: &str) -> Option<Self::Value>;
}

macro_rules! std_map {
    ($map:ty, $($extra:tt)*) => {
        impl<V: Tracked, $($extra)*> MapLike for $map {
            type Value = V;
            fn __get(&self, key: &str) -> Option<&V> {
                self.get(key)
            }
            fn __get_mut(&mut self, key: &str) -> Option<&mut V> {
                self.get_mut(key)
            }
            fn __insert(&mut self, key: String, value: V) -> Option<V> {
                self.insert(key, value)
            }
            fn __remove(&mut self, key: &str) -> Option<V> {
                self.remove(key)
            }
        }
    };
}

std_map!(BTreeMap<String, V>,);
std_map!(HashMap<String, V, S>, S: BuildHasher);

impl MapLike for serde_json::Map<String, Value> {
    type Value = Value;
    fn __get(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
    fn __get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.get_mut(key)
    }
    fn __insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.insert(key, value)
    }
    fn __remove(&mut self, key: &str) -> Option<Value> {
        self.shift_remove(key)
    }
}

/// The proxy of a map tracked as a JSON object: `insert` is `s` of the member (deep-diffed
/// against a replaced value), `remove` is `d`, and `get_mut` records inside a member.
///
/// A member named `__proto__`, `constructor` or `prototype` cannot be addressed by a path;
/// changing one makes the whole map be compared at flush (it is sent as one value).
///
/// ```
/// use std::collections::BTreeMap;
/// use chord::{path, track, Op};
/// let mut t = track(BTreeMap::from([("a".to_string(), 1u32)]));
/// t.flush().unwrap();
/// t.state().insert("b".into(), 2).unwrap();
/// t.state().remove("a");
/// assert_eq!(t.flush().unwrap(), vec![Op::Set(path!["b"], 2.into()), Op::Delete(path!["a"])]);
/// ```
pub struct MapProxy<'a, M> {
    m: &'a mut M,
    cx: Cx<'a>,
}

fn reserved(key: &str) -> bool {
    RESERVED.contains(&key)
}

impl<'a, M: MapLike> MapProxy<'a, M> {
    pub(crate) fn new(m: &'a mut M, cx: Cx<'a>) -> Self {
        MapProxy { m, cx }
    }

    /// Inserts or replaces a member, returning the old value.
    ///
    /// # Errors
    ///
    /// The value is not faithful JSON; nothing is changed then.
    pub fn insert(&mut self, key: String, value: M::Value) -> Result<Option<M::Value>> {
        self.cx.check(&value)?;
        self.record(&key);
        Ok(self.m.__insert(key, value))
    }

    /// Records that member `key` is about to be replaced or removed.
    fn record(&mut self, key: &str) {
        let Some(node) = self.cx.node.as_deref_mut() else {
            return;
        };
        if reserved(key) {
            let m = &*self.m;
            node.assign(|| serde_json::to_value(m).ok());
            return;
        }
        if let Some(child) = node.child(Key::Name(key.to_owned())) {
            match self.m.__get(key) {
                None => child.assign_before(Before::Absent),
                Some(old) => child.assign_tracked(old),
            }
        }
    }

    /// Removes a member, returning it.
    pub fn remove(&mut self, key: &str) -> Option<M::Value> {
        if self.m.__get(key).is_some() {
            self.record(key);
        }
        self.m.__remove(key)
    }

    /// The proxy of member `key`, if present.
    pub fn get_mut<'b>(&'b mut self, key: &'b str) -> Option<<M::Value as Tracked>::Proxy<'b>> {
        if reserved(key) {
            let m = &*self.m;
            if let Some(node) = self.cx.node.as_deref_mut() {
                node.assign(|| serde_json::to_value(m).ok());
            }
        }
        let cx = self.cx.member(key);
        self.m.__get_mut(key).map(|v| v.__proxy(cx))
    }
}

impl<M> Deref for MapProxy<'_, M> {
    type Target = M;
    fn deref(&self) -> &M {
        self.m
    }
}

/// Emits the ops for a map at `path`.
pub(crate) fn flush<M: MapLike>(
    map: &M,
    node: &mut Node,
    path: &mut Path,
    out: &mut Vec<Op>,
) -> Result<()> {
    if let State::Assigned(before) = &node.state {
        flush_assigned(path, before, Some(to_json(map, path)?), out);
        return Ok(());
    }
    for (key, child) in node.children.iter_mut() {
        let Key::Name(k) = key else { continue };
        with_seg(path, Seg::Key(k.clone().into()), |p| match &child.state {
            State::Assigned(before) => {
                let after = map.__get(k).map(|v| to_json(v, p)).transpose()?;
                flush_assigned(p, before, after, out);
                Ok(())
            }
            _ => match map.__get(k) {
                Some(v) => v.__flush(child, p, out),
                None => Ok(()),
            },
        })?;
    }
    Ok(())
}

impl<V: Tracked> Tracked for BTreeMap<String, V> {
    type Proxy<'a>
        = MapProxy<'a, Self>
    where
        V: 'a;
    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> MapProxy<'a, Self> {
        MapProxy::new(self, cx)
    }
    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        flush(self, node, path, out)
    }
}

impl<V: Tracked, S: BuildHasher> Tracked for HashMap<String, V, S> {
    type Proxy<'a>
        = MapProxy<'a, Self>
    where
        V: 'a,
        S: 'a;
    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> MapProxy<'a, Self> {
        MapProxy::new(self, cx)
    }
    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        flush(self, node, path, out)
    }
}
