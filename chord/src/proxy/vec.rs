use std::fmt;
use std::ops::{Bound, Deref, DerefMut, Index, IndexMut, RangeBounds};

use crate::error::Result;
use crate::proxy::elements::Elements;
use crate::tracker::{fallback, Out};
use crate::tracker::{seq, Cx, Node, Tracked, Trail};

/// The proxy of a `Vec<T>`, with `Vec`'s methods. Every structural change is recorded as a
/// splice where it happens: `push`, `insert(0, ..)` (an unshift), `remove`, `truncate`,
/// `drain`, `retain`... each cost one `p` op and `O(1)` recorded state, never one write per
/// shifted index. Element proxies (`get_mut`, `first_mut`, `last_mut`, `iter_mut`) record
/// inside elements; `v[i] = x` and `swap` reassign single elements. Reordering methods
/// (`sort`, `reverse`, ...) and any other change through `&mut Vec<T>` compare before and
/// after at flush: correct, and never larger than one `s` of the whole array.
///
/// ```
/// use chord::{path, track, Op};
/// let mut t = track(vec![1, 2, 3]);
/// t.flush().unwrap();
/// t.state().insert(0, 0);
/// assert_eq!(t.flush().unwrap(), vec![Op::Splice { path: path![], index: 0, remove: 0, items: vec![0.into()] }]);
/// ```
pub struct VecProxy<'a, T> {
    v: &'a mut Vec<T>,
    cx: Cx<'a>,
}

pub(crate) fn range(r: impl RangeBounds<usize>, len: usize) -> (usize, usize) {
    let start = match r.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s
            .checked_add(1)
            .expect("attempted to index slice from after maximum usize"),
        Bound::Unbounded => 0,
    };
    let end = match r.end_bound() {
        Bound::Included(&e) => e
            .checked_add(1)
            .expect("attempted to index slice up to maximum usize"),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end && end <= len,
        "range {start}..{end} out of bounds for a sequence of length {len}"
    );
    (start, end)
}

impl<'a, T: Tracked> VecProxy<'a, T> {
    fn record(&mut self, at: usize, remove: usize, insert: usize) {
        seq::record_splice(
            self.cx.node.as_deref_mut(),
            self.v.len(),
            at,
            remove,
            insert,
        );
    }

    /// Records that element `index` is about to be reassigned (compared at flush).
    fn touch(&mut self, index: usize) {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        if let (Some(item), Some(_)) = (self.v.get(index), accepted) {
            if let Some(node) = self.cx.element(accepted).node {
                node.assign_tracked(item);
            }
        }
    }

    /// The proxy of element `index`, if it exists (`slice::get_mut`).
    #[inline]
    pub fn get_mut(&mut self, index: usize) -> Option<T::Proxy<'_>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let item = self.v.get_mut(index)?;
        Some(item.__proxy(self.cx.element(accepted)))
    }

    /// The proxy of element `index`.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like indexing a `Vec`.
    #[inline]
    pub fn at(&mut self, index: usize) -> T::Proxy<'_> {
        let len = self.v.len();
        match self.get_mut(index) {
            Some(p) => p,
            None => panic!("index {index} out of bounds for a Vec of length {len}"),
        }
    }

    /// The proxy of the first element (`slice::first_mut`).
    pub fn first_mut(&mut self) -> Option<T::Proxy<'_>> {
        self.get_mut(0)
    }

    /// The proxy of the last element (`slice::last_mut`).
    pub fn last_mut(&mut self) -> Option<T::Proxy<'_>> {
        let last = self.v.len().checked_sub(1)?;
        self.get_mut(last)
    }

    /// Every element's proxy, in order (`slice::iter_mut`). Prepares a dirty-tree slot for
    /// each element it hands out, so it costs `O(len)` now and at the next flush; use
    /// [`get_mut`](VecProxy::get_mut) when the index is known.
    ///
    /// A `for` loop over `&mut` the proxy does the same; over the proxy itself, it consumes
    /// it. Nested sequences flatten (`plan.iter_mut().flatten()`). On edition 2021, an
    /// `if let` on `xs.iter_mut().find(..)` as the tail expression of a block can fail to
    /// compile (E0597: the iterator, dropped after the block's locals, still borrows them);
    /// end it with `;`, or bind the iterator first. Edition 2024 drops it earlier and accepts
    /// it.
    pub fn iter_mut(&mut self) -> Elements<'_, std::slice::IterMut<'_, T>> {
        let slots = seq::element_slots(self.cx.node.as_deref_mut(), self.v.len());
        Elements::new(self.v.iter_mut(), slots)
    }

    /// The proxy of element `index`, keeping this proxy's lifetime (it is consumed): for
    /// chains that pass a proxy on, such as
    /// `plan.first_mut().and_then(|phase| phase.into_first_mut())`, where the borrowing
    /// [`get_mut`](VecProxy::get_mut) would return a proxy of the closure's own argument.
    pub fn into_get_mut(self, index: usize) -> Option<T::Proxy<'a>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let item = self.v.get_mut(index)?;
        Some(item.__proxy(self.cx.into_element(accepted)))
    }

    /// [`first_mut`](VecProxy::first_mut), consuming the proxy (see
    /// [`into_get_mut`](VecProxy::into_get_mut)).
    pub fn into_first_mut(self) -> Option<T::Proxy<'a>> {
        self.into_get_mut(0)
    }

    /// [`last_mut`](VecProxy::last_mut), consuming the proxy (see
    /// [`into_get_mut`](VecProxy::into_get_mut)).
    pub fn into_last_mut(self) -> Option<T::Proxy<'a>> {
        let last = self.v.len().checked_sub(1)?;
        self.into_get_mut(last)
    }

    /// Appends an element.
    pub fn push(&mut self, item: T) {
        self.record(self.v.len(), 0, 1);
        self.v.push(item);
    }

    /// Removes the last element.
    pub fn pop(&mut self) -> Option<T> {
        if self.v.is_empty() {
            return None;
        }
        self.record(self.v.len() - 1, 1, 0);
        self.v.pop()
    }

    /// Inserts an element at `index` (`0` is an unshift: still one op).
    ///
    /// # Panics
    ///
    /// If `index > len`, like `Vec::insert`.
    pub fn insert(&mut self, index: usize, item: T) {
        assert!(
            index <= self.v.len(),
            "insertion index (is {index}) should be <= len (is {})",
            self.v.len()
        );
        self.record(index, 0, 1);
        self.v.insert(index, item);
    }

    /// Removes the element at `index`, shifting the rest down.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like `Vec::remove`.
    pub fn remove(&mut self, index: usize) -> T {
        assert!(
            index < self.v.len(),
            "removal index (is {index}) should be < len (is {})",
            self.v.len()
        );
        self.record(index, 1, 0);
        self.v.remove(index)
    }

    /// Removes the element at `index`, replacing it with the last one: the element there is
    /// reassigned and the last position removed (an `s` and a `p`), never the whole array;
    /// at the next to last index, where the result is a removal, one `p` that removes it.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like `Vec::swap_remove`.
    pub fn swap_remove(&mut self, index: usize) -> T {
        let len = self.v.len();
        assert!(
            index < len,
            "swap_remove index (is {index}) should be < len (is {len})"
        );
        if index + 2 == len {
            // The last element moves into the gap right before it: the same array as a
            // removal there, which one `p` of nothing says.
            self.record(index, 1, 0);
            return self.v.swap_remove(index);
        }
        if index + 1 < len {
            self.touch(index);
        }
        self.record(len - 1, 1, 0);
        self.v.swap_remove(index)
    }

    /// Swaps two elements: each position is reassigned (compared at flush).
    ///
    /// # Panics
    ///
    /// If either index is out of bounds, like `slice::swap`.
    pub fn swap(&mut self, a: usize, b: usize) {
        if a != b {
            self.touch(a);
            self.touch(b);
        }
        self.v.swap(a, b);
    }

    /// Shortens the vector to `len`.
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

    /// Moves every element of `other` to the end (`Vec::append`).
    pub fn append(&mut self, other: &mut Vec<T>) {
        self.record(self.v.len(), 0, other.len());
        self.v.append(other);
    }

    /// Appends clones of `items` (`Vec::extend_from_slice`).
    pub fn extend_from_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.record(self.v.len(), 0, items.len());
        self.v.extend_from_slice(items);
    }

    /// Splits off the elements from `at` (`Vec::split_off`).
    ///
    /// # Panics
    ///
    /// If `at > len`.
    pub fn split_off(&mut self, at: usize) -> Vec<T> {
        let len = self.v.len();
        assert!(
            at <= len,
            "`at` split index (is {at}) should be <= len (is {len})"
        );
        self.record(at, len - at, 0);
        self.v.split_off(at)
    }

    /// Removes a range and returns it as an iterator (`Vec::drain`).
    ///
    /// # Panics
    ///
    /// If the range is out of bounds.
    pub fn drain(&mut self, r: impl RangeBounds<usize>) -> std::vec::Drain<'_, T> {
        let (start, end) = range(r, self.v.len());
        self.record(start, end - start, 0);
        self.v.drain(start..end)
    }

    /// Replaces a range with `items`, returning what was removed (`Vec::splice`): one `p`.
    ///
    /// # Panics
    ///
    /// If the range is out of bounds.
    pub fn splice(
        &mut self,
        r: impl RangeBounds<usize>,
        items: impl IntoIterator<Item = T>,
    ) -> std::vec::Splice<'_, std::vec::IntoIter<T>> {
        let (start, end) = range(r, self.v.len());
        let items: Vec<T> = items.into_iter().collect();
        self.record(start, end - start, items.len());
        self.v.splice(start..end, items)
    }

    /// Keeps the elements for which `keep` returns true: one splice per removed run.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let flags: Vec<bool> = self.v.iter().map(&mut keep).collect();
        for (start, end) in seq::removed_runs(&flags) {
            self.record(start, end - start, 0);
            self.v.drain(start..end);
        }
    }

    /// Keeps the elements for which `keep` returns true, letting it change them
    /// (`Vec::retain_mut`): compared with the accepted array at flush.
    pub fn retain_mut(&mut self, keep: impl FnMut(&mut T) -> bool) {
        self.rewrite(|v| v.retain_mut(keep));
    }

    /// Resizes to `len`, filling with clones of `value`.
    pub fn resize(&mut self, len: usize, value: T)
    where
        T: Clone,
    {
        if len <= self.v.len() {
            return self.truncate(len);
        }
        self.record(self.v.len(), 0, len - self.v.len());
        self.v.resize(len, value);
    }

    /// Resizes to `len`, filling with `f()` (`Vec::resize_with`).
    pub fn resize_with(&mut self, len: usize, f: impl FnMut() -> T) {
        if len <= self.v.len() {
            return self.truncate(len);
        }
        self.record(self.v.len(), 0, len - self.v.len());
        self.v.resize_with(len, f);
    }

    /// Replaces the whole vector; compared element by element with the accepted one at flush.
    pub fn set(&mut self, items: Vec<T>) {
        self.rewrite(|v| *v = items);
    }

    /// Any other change (sorting, reversing, deduplicating, moving elements): the accepted
    /// and the changed vectors are compared at flush. Correct, not necessarily minimal, and
    /// never larger than one `s` of the whole array. Costs one serialization of the array.
    pub fn rewrite<R>(&mut self, f: impl FnOnce(&mut Vec<T>) -> R) -> R {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
        }
        f(self.v)
    }

    /// Sorts with a comparator (see [`rewrite`](VecProxy::rewrite)).
    pub fn sort_by(&mut self, cmp: impl FnMut(&T, &T) -> std::cmp::Ordering) {
        self.rewrite(|v| v.sort_by(cmp));
    }

    /// Sorts by a key (see [`rewrite`](VecProxy::rewrite)).
    pub fn sort_by_key<K: Ord>(&mut self, key: impl FnMut(&T) -> K) {
        self.rewrite(|v| v.sort_by_key(key));
    }

    /// Sorts (see [`rewrite`](VecProxy::rewrite)).
    pub fn sort(&mut self)
    where
        T: Ord,
    {
        self.rewrite(|v| v.sort());
    }

    /// Sorts without keeping equal elements' order (see [`rewrite`](VecProxy::rewrite)).
    pub fn sort_unstable(&mut self)
    where
        T: Ord,
    {
        self.rewrite(|v| v.sort_unstable());
    }

    /// Removes consecutive repeated elements (see [`rewrite`](VecProxy::rewrite)).
    pub fn dedup(&mut self)
    where
        T: PartialEq,
    {
        self.rewrite(|v| v.dedup());
    }

    /// Removes consecutive elements with equal keys (see [`rewrite`](VecProxy::rewrite)).
    pub fn dedup_by_key<K: PartialEq>(&mut self, key: impl FnMut(&mut T) -> K) {
        self.rewrite(|v| v.dedup_by_key(key));
    }

    /// Reverses the order (see [`rewrite`](VecProxy::rewrite)).
    pub fn reverse(&mut self) {
        self.rewrite(|v| v.reverse());
    }
}

impl<T> Deref for VecProxy<'_, T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        self.v
    }
}

impl<T: Tracked> DerefMut for VecProxy<'_, T> {
    /// Any change through `&mut Vec<T>` (see [`rewrite`](VecProxy::rewrite)).
    fn deref_mut(&mut self) -> &mut Vec<T> {
        if let Some(node) = self.cx.node.as_deref_mut() {
            node.assign_tracked(&*self.v);
            fallback::fell_back(Some(node));
        }
        self.v
    }
}

impl<'a, T: Tracked> IntoIterator for VecProxy<'a, T> {
    type Item = T::Proxy<'a>;
    type IntoIter = Elements<'a, std::slice::IterMut<'a, T>>;

    /// Every element's proxy, consuming this one (what lets nested sequences flatten).
    fn into_iter(mut self) -> Self::IntoIter {
        let slots = seq::element_slots(self.cx.node.take(), self.v.len());
        Elements::new(self.v.iter_mut(), slots)
    }
}

impl<'b, T: Tracked> IntoIterator for &'b mut VecProxy<'_, T> {
    type Item = T::Proxy<'b>;
    type IntoIter = Elements<'b, std::slice::IterMut<'b, T>>;

    /// [`VecProxy::iter_mut`].
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T> Index<usize> for VecProxy<'_, T> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.v[index]
    }
}

impl<T: Tracked> IndexMut<usize> for VecProxy<'_, T> {
    /// `v[i] = x` or any change through `&mut v[i]`: element `i` is compared with its
    /// accepted value at flush.
    fn index_mut(&mut self, index: usize) -> &mut T {
        self.touch(index);
        &mut self.v[index]
    }
}

impl<T: Tracked> Extend<T> for VecProxy<'_, T> {
    /// Appends every item: one `p`.
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        let mut items: Vec<T> = items.into_iter().collect();
        self.append(&mut items);
    }
}

impl<T: serde::Serialize> fmt::Debug for VecProxy<'_, T> {
    /// The value as JSON (what the replicas hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::debug::debug_json(&*self.v, f)
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for VecProxy<'_, T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        *self.v == *other
    }
}

impl<T: Tracked> Tracked for Vec<T> {
    type Proxy<'a>
        = VecProxy<'a, T>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> VecProxy<'a, T> {
        VecProxy { v: self, cx }
    }

    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        fallback::flush_counted(node, path, out, |node, path, out| {
            seq::flush(self.as_slice(), node, path, out)
        })
    }

    fn __assign<'a>(proxy: &mut VecProxy<'a, T>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}
