use std::collections::VecDeque;
use std::fmt;
use std::ops::{Deref, DerefMut, RangeBounds};

use crate::error::Result;
use crate::proxy::elements::Elements;
use crate::proxy::vec::range;
use crate::tracker::{fallback, Out};
use crate::tracker::{seq, Cx, Node, Tracked, Trail};

/// The proxy of a `VecDeque<T>` (a JSON array), with `VecDeque`'s methods: `push_back`,
/// `push_front`, `pop_front`, `pop_back`, `insert`, `remove` and `truncate` are each one
/// splice, as on a `Vec`; anything else through `&mut VecDeque<T>` is compared at flush.
///
/// ```
/// use std::collections::VecDeque;
/// use chord::{path, track, Op};
/// let mut t = track(VecDeque::from([1, 2]));
/// t.flush().unwrap();
/// let mut q = t.state();
/// q.push_back(3);
/// q.pop_front();
/// assert_eq!(t.flush().unwrap(), vec![
///     Op::Splice { path: path![], index: 0, remove: 1, items: vec![] },
///     Op::Splice { path: path![], index: 1, remove: 0, items: vec![3.into()] },
/// ]);
/// ```
pub struct DequeProxy<'a, T> {
    v: &'a mut VecDeque<T>,
    cx: Cx<'a>,
}

impl<'a, T: Tracked> DequeProxy<'a, T> {
    fn record(&mut self, at: usize, remove: usize, insert: usize) {
        seq::record_splice(
            self.cx.node.as_deref_mut(),
            self.v.len(),
            at,
            remove,
            insert,
        );
    }

    /// The proxy of element `index`, if it exists.
    pub fn get_mut(&mut self, index: usize) -> Option<T::Proxy<'_>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let item = self.v.get_mut(index)?;
        Some(item.__proxy(self.cx.element(accepted)))
    }

    /// The proxy of the first element.
    pub fn front_mut(&mut self) -> Option<T::Proxy<'_>> {
        self.get_mut(0)
    }

    /// The proxy of the last element.
    pub fn back_mut(&mut self) -> Option<T::Proxy<'_>> {
        let last = self.v.len().checked_sub(1)?;
        self.get_mut(last)
    }

    /// Every element's proxy, in order (see [`VecProxy::iter_mut`](crate::proxy::VecProxy::iter_mut)).
    pub fn iter_mut(&mut self) -> Elements<'_, std::collections::vec_deque::IterMut<'_, T>> {
        let slots = seq::element_slots(self.cx.node.as_deref_mut(), self.v.len());
        Elements::new(self.v.iter_mut(), slots)
    }

    /// The proxy of element `index`, consuming this one (see
    /// [`VecProxy::into_get_mut`](crate::proxy::VecProxy::into_get_mut)).
    pub fn into_get_mut(self, index: usize) -> Option<T::Proxy<'a>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let item = self.v.get_mut(index)?;
        Some(item.__proxy(self.cx.into_element(accepted)))
    }

    /// [`front_mut`](DequeProxy::front_mut), consuming the proxy.
    pub fn into_front_mut(self) -> Option<T::Proxy<'a>> {
        self.into_get_mut(0)
    }

    /// [`back_mut`](DequeProxy::back_mut), consuming the proxy.
    pub fn into_back_mut(self) -> Option<T::Proxy<'a>> {
        let last = self.v.len().checked_sub(1)?;
        self.into_get_mut(last)
    }

    /// Appends an element.
    pub fn push_back(&mut self, item: T) {
        self.record(self.v.len(), 0, 1);
        self.v.push_back(item);
    }

    /// Prepends an element (one `p` at index 0).
    pub fn push_front(&mut self, item: T) {
        self.record(0, 0, 1);
        self.v.push_front(item);
    }

    /// Removes the last element.
    pub fn pop_back(&mut self) -> Option<T> {
        if self.v.is_empty() {
            return None;
        }
        self.record(self.v.len() - 1, 1, 0);
        self.v.pop_back()
    }

    /// Removes the first element.
    pub fn pop_front(&mut self) -> Option<T> {
        if self.v.is_empty() {
            return None;
        }
        self.record(0, 1, 0);
        self.v.pop_front()
    }

    /// Inserts an element at `index`.
    ///
    /// # Panics
    ///
    /// If `index > len`, like `VecDeque::insert`.
    pub fn insert(&mut self, index: usize, item: T) {
        assert!(index <= self.v.len(), "index out of bounds");
        self.record(index, 0, 1);
        self.v.insert(index, item);
    }

    /// Removes the element at `index`, if there is one.
    pub fn remove(&mut self, index: usize) -> Option<T> {
        if index >= self.v.len() {
            return None;
        }
        self.record(index, 1, 0);
        self.v.remove(index)
    }

    /// Shortens the deque to `len`.
    pub fn truncate(&mut self, len: usize) {
        if len < self.v.len() {
            self.record(len, self.v.len() - len, 0);
            self.v.truncate(len);
        }
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Removes a range and returns it as an iterator (`VecDeque::drain`).
    ///
    /// # Panics
    ///
    /// If the range is out of bounds.
    pub fn drain(
        &mut self,
        r: impl RangeBounds<usize>,
    ) -> std::collections::vec_deque::Drain<'_, T> {
        let (start, end) = range(r, self.v.len());
        self.record(start, end - start, 0);
        self.v.drain(start..end)
    }

    /// Keeps the elements for which `keep` returns true: one splice per removed run.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let flags: Vec<bool> = self.v.iter().map(&mut keep).collect();
        for (start, end) in seq::removed_runs(&flags) {
            self.record(start, end - start, 0);
            self.v.drain(start..end);
        }
    }

    /// Replaces the whole deque; compared with the accepted one at flush.
    pub fn set(&mut self, items: VecDeque<T>) {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
        *self.v = items;
    }
}

impl<T> Deref for DequeProxy<'_, T> {
    type Target = VecDeque<T>;
    fn deref(&self) -> &VecDeque<T> {
        self.v
    }
}

impl<T: Tracked> DerefMut for DequeProxy<'_, T> {
    /// Any change through `&mut VecDeque<T>`: compared with the accepted array at flush.
    fn deref_mut(&mut self) -> &mut VecDeque<T> {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
            fallback::fell_back(Some(node));
        }
        self.v
    }
}

impl<'a, T: Tracked> IntoIterator for DequeProxy<'a, T> {
    type Item = T::Proxy<'a>;
    type IntoIter = Elements<'a, std::collections::vec_deque::IterMut<'a, T>>;

    /// Every element's proxy, consuming this one.
    fn into_iter(mut self) -> Self::IntoIter {
        let slots = seq::element_slots(self.cx.node.take(), self.v.len());
        Elements::new(self.v.iter_mut(), slots)
    }
}

impl<'b, T: Tracked> IntoIterator for &'b mut DequeProxy<'_, T> {
    type Item = T::Proxy<'b>;
    type IntoIter = Elements<'b, std::collections::vec_deque::IterMut<'b, T>>;

    /// [`DequeProxy::iter_mut`].
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T: Tracked> Extend<T> for DequeProxy<'_, T> {
    /// Appends every item: one `p`.
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        let items: Vec<T> = items.into_iter().collect();
        self.record(self.v.len(), 0, items.len());
        self.v.extend(items);
    }
}

impl<T: serde::Serialize> fmt::Debug for DequeProxy<'_, T> {
    /// The value as JSON (what the replicas hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::debug::debug_json(&*self.v, f)
    }
}

impl<T: Tracked> Tracked for VecDeque<T> {
    type Proxy<'a>
        = DequeProxy<'a, T>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> DequeProxy<'a, T> {
        DequeProxy { v: self, cx }
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        fallback::flush_counted(node, path, out, |node, path, out| {
            seq::flush(self, node, path, out)
        })
    }

    fn __assign<'a>(proxy: &mut DequeProxy<'a, T>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}
