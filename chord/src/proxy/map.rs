use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::ops::{Deref, DerefMut};

use serde_json::Value;

use crate::error::Result;
use crate::path::RESERVED;
use crate::tracker::{
    capped, flush_assigned, flush_reassigned, to_json, Before, Cx, Key, Node, State, Step, Tracked,
    Trail,
};
use crate::tracker::{fallback, Out};

/// A map with string keys that chord tracks as a JSON object: `BTreeMap<String, V>`,
/// `HashMap<String, V>` and `serde_json::Map<String, Value>`. Sealed: chord implements it for
/// these three, and [`MapProxy`] is generic over it.
pub trait MapLike: Tracked + sealed::MapAccess<<Self as MapLike>::Value> {
    /// The value type.
    type Value: Tracked;
}

mod sealed {
    /// What [`MapProxy`](super::MapProxy) calls on a map: its own methods, under one name for
    /// the three maps. Public in a private module, so that no type outside chord implements
    /// [`MapLike`](super::MapLike).
    pub trait MapAccess<V> {
        fn __get(&self, key: &str) -> Option<&V>;
        fn __get_mut(&mut self, key: &str) -> Option<&mut V>;
        fn __insert(&mut self, key: String, value: V) -> Option<V>;
        fn __remove(&mut self, key: &str) -> Option<V>;
        fn __keys(&self) -> Vec<String>;
        fn __iter_mut<'a>(&'a mut self) -> impl Iterator<Item = (&'a String, &'a mut V)>
        where
            V: 'a;
        fn __len(&self) -> usize;
    }
}

macro_rules! std_map {
    ($map:ty, $($extra:tt)*) => {
        impl<V: Tracked, $($extra)*> MapLike for $map {
            type Value = V;
        }

        impl<V: Tracked, $($extra)*> sealed::MapAccess<V> for $map {
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
            fn __keys(&self) -> Vec<String> {
                self.keys().cloned().collect()
            }
            fn __iter_mut<'a>(&'a mut self) -> impl Iterator<Item = (&'a String, &'a mut V)>
            where
                V: 'a,
            {
                self.iter_mut()
            }
            fn __len(&self) -> usize {
                self.len()
            }
        }
    };
}

std_map!(BTreeMap<String, V>,);
std_map!(HashMap<String, V, S>, S: BuildHasher);

impl MapLike for serde_json::Map<String, Value> {
    type Value = Value;
}

impl sealed::MapAccess<Value> for serde_json::Map<String, Value> {
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
    fn __keys(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
    fn __iter_mut<'a>(&'a mut self) -> impl Iterator<Item = (&'a String, &'a mut Value)>
    where
        Value: 'a,
    {
        self.iter_mut()
    }
    fn __len(&self) -> usize {
        self.len()
    }
}

/// The proxy of a map tracked as a JSON object, with the map's methods: `insert` is `s` of
/// the member (compared with a replaced value), `remove` is `d` (a member removed and
/// inserted again before the flush is one `s`), `get_mut`, `entry` and
/// `iter_mut` record inside members, and any other change through `&mut M` compares the
/// whole map at flush.
///
/// A member named `__proto__`, `constructor` or `prototype` cannot be addressed by a path;
/// changing one makes the whole map be compared at flush (it is sent as one value).
///
/// ```
/// use std::collections::BTreeMap;
/// use chord::{path, track, Op};
/// let mut t = track(BTreeMap::from([("a".to_string(), 1u32)]));
/// t.flush().unwrap();
/// let mut m = t.state();
/// m.insert("b".into(), 2);
/// m.remove("a");
/// *m.entry("c".into()).or_default() += 3;
/// assert_eq!(t.flush().unwrap(), vec![
///     Op::Set(path!["b"], 2.into()),
///     Op::Delete(path!["a"]),
///     Op::Set(path!["c"], 3.into()),
/// ]);
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
    pub fn insert(&mut self, key: String, value: M::Value) -> Option<M::Value> {
        self.record(&key);
        self.m.__insert(key, value)
    }

    /// Records that member `key` is about to be replaced or removed.
    fn record(&mut self, key: &str) {
        let old = self.m.__get(key);
        record_member(&mut self.cx, &*self.m, key, old);
    }

    /// Removes a member, returning it.
    pub fn remove(&mut self, key: &str) -> Option<M::Value> {
        if reserved(key) {
            // (The whole map is compared at flush, against its JSON before the removal.)
            let old = self.m.__get(key)?;
            record_member(&mut self.cx, &*self.m, key, Some(old));
            return self.m.__remove(key);
        }
        let removed = self.m.__remove(key)?;
        record_removal(&mut self.cx, key);
        Some(removed)
    }

    /// Removes every member: one `d` each.
    pub fn clear(&mut self) {
        let keys = self.m.__keys();
        for key in keys {
            self.remove(&key);
        }
    }

    /// Keeps the members for which `keep` returns true: one `d` for each other one.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &M::Value) -> bool) {
        let gone: Vec<String> = self
            .m
            .__keys()
            .into_iter()
            .filter(|k| self.m.__get(k).is_some_and(|v| !keep(k, v)))
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// The proxy of member `key`, if present.
    pub fn get_mut(&mut self, key: &str) -> Option<<M::Value as Tracked>::Proxy<'_>> {
        if reserved(key) {
            let m = &*self.m;
            if let Some(node) = self.cx.node.as_deref_mut() {
                node.assign(|| serde_json::to_value(m).ok());
            }
        }
        let cx = self.cx.member(key);
        self.m.__get_mut(key).map(|v| v.__proxy(cx))
    }

    /// The entry for `key`, for in-place insertion or change (`HashMap::entry`).
    pub fn entry(&mut self, key: String) -> Entry<'_, 'a, M> {
        Entry { map: self, key }
    }

    /// Every member's key and proxy, in the map's order. Prepares a dirty-tree slot for each
    /// member, so it costs `O(len)` now and at the next flush; use
    /// [`get_mut`](MapProxy::get_mut) when the key is known.
    pub fn iter_mut(
        &mut self,
    ) -> impl Iterator<Item = (&String, <M::Value as Tracked>::Proxy<'_>)> {
        let keys: Vec<Option<Key>> = self
            .m
            .__keys()
            .into_iter()
            .map(|k| (!reserved(&k)).then_some(Key::Name(k)))
            .collect();
        if keys.iter().any(Option::is_none) {
            let m = &*self.m;
            if let Some(node) = self.cx.node.as_deref_mut() {
                node.assign(|| serde_json::to_value(m).ok());
            }
        }
        let mut slots = match self.cx.node.as_deref_mut() {
            Some(node) => node.children_at(keys),
            None => Vec::new(),
        }
        .into_iter();
        self.m
            .__iter_mut()
            .map(move |(k, v)| (k, v.__proxy(Cx::root(slots.next().flatten()))))
    }

    /// Every member's proxy (see [`iter_mut`](MapProxy::iter_mut)).
    pub fn values_mut(&mut self) -> impl Iterator<Item = <M::Value as Tracked>::Proxy<'_>> {
        self.iter_mut().map(|(_, v)| v)
    }

    /// Replaces the whole map; compared with the accepted one at flush.
    pub fn set(&mut self, value: M) {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.m);
        }
        *self.m = value;
    }
}

/// A map entry, from [`MapProxy::entry`].
pub struct Entry<'m, 'a, M> {
    map: &'m mut MapProxy<'a, M>,
    key: String,
}

impl<'m, M: MapLike> Entry<'m, '_, M> {
    /// The entry's key.
    pub fn key(&self) -> &String {
        &self.key
    }

    /// The member's proxy, inserting `value` first when absent.
    pub fn or_insert(self, value: M::Value) -> <M::Value as Tracked>::Proxy<'m> {
        self.or_insert_with(|| value)
    }

    /// The member's proxy, inserting `f()` first when absent.
    pub fn or_insert_with(self, f: impl FnOnce() -> M::Value) -> <M::Value as Tracked>::Proxy<'m> {
        if self.map.m.__get(&self.key).is_none() {
            self.map.insert(self.key.clone(), f());
        }
        let Entry { map, key } = self;
        match map.get_mut(&key) {
            Some(p) => p,
            None => unreachable!("the member was just inserted"),
        }
    }

    /// The member's proxy, inserting the default value first when absent.
    pub fn or_default(self) -> <M::Value as Tracked>::Proxy<'m>
    where
        M::Value: Default,
    {
        self.or_insert_with(Default::default)
    }

    /// Runs `f` on the member's proxy when present.
    pub fn and_modify(self, f: impl FnOnce(&mut <M::Value as Tracked>::Proxy<'_>)) -> Self {
        if let Some(mut p) = self.map.get_mut(&self.key) {
            f(&mut p);
        }
        self
    }
}

impl<M> Deref for MapProxy<'_, M> {
    type Target = M;
    fn deref(&self) -> &M {
        self.m
    }
}

impl<M: MapLike> DerefMut for MapProxy<'_, M> {
    /// Any change through `&mut M`: the map is compared with the accepted one at flush.
    fn deref_mut(&mut self) -> &mut M {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.m);
            fallback::fell_back(Some(node));
        }
        self.m
    }
}

impl<M: MapLike> fmt::Debug for MapProxy<'_, M> {
    /// The value as JSON (what the replicas hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::debug::debug_json(&*self.m, f)
    }
}

/// Emits the ops for a map at `path`.
pub(crate) fn flush<M: MapLike>(
    map: &M,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    if let State::Assigned(before) = &node.state {
        return flush_reassigned(map, before, path, out);
    }
    // Several members changed, a good part of the map (one that lost most of them, say):
    // their ops may add up to more than one `s` of the map, which is then sent instead. A
    // few members of a large map never do, so the comparison is not made.
    let changed = node
        .children
        .iter()
        .filter(|(_, c)| c.may_be_dirty())
        .count();
    if changed > 1 && changed * 8 >= map.__len() {
        return capped(map, path, out, |path, own| {
            flush_members(map, node, path, own)
        });
    }
    flush_members(map, node, path, out)
}

/// Records that member `key` of `m`, now `old`, is about to be replaced or removed.
fn record_member<M: MapLike>(cx: &mut Cx<'_>, m: &M, key: &str, old: Option<&M::Value>) {
    let Some(node) = cx.node.as_deref_mut() else {
        return;
    };
    if reserved(key) {
        node.assign(|| serde_json::to_value(m).ok());
        return;
    }
    if let Some(child) = node.member(key) {
        match old {
            None => child.assign_before(Before::Absent),
            Some(old) => child.assign_tracked(old),
        }
    }
}

/// Records that member `key` (not a reserved name) was removed: its `d` at flush. The
/// removed value is not kept: a member inserted again at that key before the flush is sent
/// whole, as one `s`, so a churning map pays no serialization for what it removes.
fn record_removal(cx: &mut Cx<'_>, key: &str) {
    if let Some(child) = cx.node.as_deref_mut().and_then(|node| node.member(key)) {
        child.assign_before(Before::Existed);
    }
}

/// The ops of the members recorded since the last flush.
fn flush_members<M: MapLike>(
    map: &M,
    node: &mut Node,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> Result<()> {
    for (key, child) in node.children.iter_mut() {
        let Key::Name(k) = key else { continue };
        if !child.may_be_dirty() {
            continue;
        }
        let current = map.__get(k);
        let p = &path.child(Step::Key(k));
        match &child.state {
            State::Assigned(before) => match (before, current) {
                // A member new or set whole: its `s` (what `flush_assigned` sends for it)
                // written without building a `Value`.
                (Before::Absent | Before::Existed, Some(v)) if !out.undoing() => {
                    out.set_checked(p, v)
                }
                (before, current) => {
                    let after = current.map(|v| to_json(v, p)).transpose()?;
                    flush_assigned(p, before, after, out);
                    Ok(())
                }
            },
            _ => match current {
                Some(v) => v.__flush(child, p, out),
                None => Ok(()),
            },
        }?;
        if out.reset {
            // (All of it: a member gone since was not walked.)
            child.reset();
        }
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
    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        fallback::flush_counted(node, path, out, |node, path, out| {
            flush(self, node, path, out)
        })
    }
    fn __assign<'a>(proxy: &mut MapProxy<'a, Self>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
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
    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        fallback::flush_counted(node, path, out, |node, path, out| {
            flush(self, node, path, out)
        })
    }
    fn __assign<'a>(proxy: &mut MapProxy<'a, Self>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}

impl Tracked for serde_json::Map<String, Value> {
    type Proxy<'a> = MapProxy<'a, Self>;
    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> MapProxy<'a, Self> {
        MapProxy::new(self, cx)
    }
    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        fallback::flush_counted(node, path, out, |node, path, out| {
            flush(self, node, path, out)
        })
    }
    fn __assign<'a>(proxy: &mut MapProxy<'a, Self>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}
