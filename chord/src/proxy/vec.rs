use std::ops::{Bound, Deref, RangeBounds};

use crate::error::Result;
use crate::op::Op;
use crate::path::Path;
use crate::tracker::{seq, Cx, Node, Tracked};

/// The proxy of a `Vec<T>`. Every structural change is recorded as a splice where it
/// happens: `push`, `insert(0, ..)` (an unshift), `remove`, `truncate`, `drain`, `retain`...
/// each cost one `p` op and `O(1)` recorded state, never one write per shifted index.
/// Reordering methods (`sort_by`, `reverse`, `rewrite`) compare before and after at flush.
///
/// ```
/// use chord::{path, track, Op};
/// let mut t = track(vec![1, 2, 3]);
/// t.flush().unwrap();
/// t.state().insert(0, 0).unwrap();
/// assert_eq!(t.flush().unwrap(), vec![Op::Splice { path: path![], index: 0, remove: 0, items: vec![0.into()] }]);
/// ```
pub struct VecProxy<'a, T> {
    v: &'a mut Vec<T>,
    cx: Cx<'a>,
}

fn range(r: impl RangeBounds<usize>, len: usize) -> (usize, usize) {
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
        "range {start}..{end} out of bounds for a Vec of length {len}"
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

    /// The proxy of element `index`.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like indexing a `Vec`.
    pub fn at(&mut self, index: usize) -> T::Proxy<'_> {
        let len = self.v.len();
        match self.get_mut(index) {
            Some(p) => p,
            None => panic!("index {index} out of bounds for a Vec of length {len}"),
        }
    }

    /// The proxy of element `index`, if it exists.
    pub fn get_mut(&mut self, index: usize) -> Option<T::Proxy<'_>> {
        let accepted = seq::accepted_index(self.cx.node.as_deref(), index);
        let item = self.v.get_mut(index)?;
        Some(item.__proxy(self.cx.element(index, accepted)))
    }

    /// The proxy of the last element.
    pub fn last_mut(&mut self) -> Option<T::Proxy<'_>> {
        let last = self.v.len().checked_sub(1)?;
        self.get_mut(last)
    }

    /// Appends an element.
    ///
    /// # Errors
    ///
    /// The element is not faithful JSON (a non-finite float, a non-string map key); nothing
    /// is changed then.
    pub fn push(&mut self, item: T) -> Result<()> {
        self.cx.check(&item)?;
        self.record(self.v.len(), 0, 1);
        self.v.push(item);
        Ok(())
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
    /// # Errors
    ///
    /// As [`push`](VecProxy::push).
    ///
    /// # Panics
    ///
    /// If `index > len`, like `Vec::insert`.
    pub fn insert(&mut self, index: usize, item: T) -> Result<()> {
        assert!(
            index <= self.v.len(),
            "insertion index {index} is past the end"
        );
        self.cx.check(&item)?;
        self.record(index, 0, 1);
        self.v.insert(index, item);
        Ok(())
    }

    /// Removes the element at `index`, shifting the rest down.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like `Vec::remove`.
    pub fn remove(&mut self, index: usize) -> T {
        assert!(
            index < self.v.len(),
            "removal index {index} is out of bounds"
        );
        self.record(index, 1, 0);
        self.v.remove(index)
    }

    /// Removes the element at `index`, replacing it with the last one.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds, like `Vec::swap_remove`.
    pub fn swap_remove(&mut self, index: usize) -> T {
        let len = self.v.len();
        assert!(index < len, "swap_remove index {index} is out of bounds");
        if index + 1 < len {
            // The last element moves into `index`: replace it there, then drop the tail.
            self.record(index, 1, 1);
            self.record(len - 1, 1, 0);
        } else {
            self.record(index, 1, 0);
        }
        self.v.swap_remove(index)
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

    /// Appends every element of `items`.
    ///
    /// # Errors
    ///
    /// An element is not faithful JSON; nothing is changed then.
    pub fn extend(&mut self, items: impl IntoIterator<Item = T>) -> Result<()> {
        let items: Vec<T> = items.into_iter().collect();
        self.splice(self.v.len().., items).map(drop)
    }

    /// Removes a range and returns it.
    ///
    /// # Panics
    ///
    /// If the range is out of bounds.
    pub fn drain(&mut self, r: impl RangeBounds<usize>) -> Vec<T> {
        let (start, end) = range(r, self.v.len());
        self.record(start, end - start, 0);
        self.v.drain(start..end).collect()
    }

    /// Replaces a range with `items`, returning what was removed: one `p` op.
    ///
    /// # Errors
    ///
    /// An item is not faithful JSON; nothing is changed then.
    ///
    /// # Panics
    ///
    /// If the range is out of bounds.
    pub fn splice(
        &mut self,
        r: impl RangeBounds<usize>,
        items: impl IntoIterator<Item = T>,
    ) -> Result<Vec<T>> {
        let (start, end) = range(r, self.v.len());
        let items: Vec<T> = items.into_iter().collect();
        for item in &items {
            self.cx.check(item)?;
        }
        self.record(start, end - start, items.len());
        Ok(self.v.splice(start..end, items).collect())
    }

    /// Keeps the elements for which `keep` returns true: one splice per removed run.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let flags: Vec<bool> = self.v.iter().map(&mut keep).collect();
        let mut i = flags.len();
        while i > 0 {
            if flags[i - 1] {
                i -= 1;
                continue;
            }
            let end = i;
            while i > 0 && !flags[i - 1] {
                i -= 1;
            }
            self.record(i, end - i, 0);
            self.v.drain(i..end);
        }
    }

    /// Resizes to `len`, filling with clones of `value`.
    ///
    /// # Errors
    ///
    /// `value` is not faithful JSON; nothing is changed then.
    pub fn resize(&mut self, len: usize, value: T) -> Result<()>
    where
        T: Clone,
    {
        if len <= self.v.len() {
            self.truncate(len);
            return Ok(());
        }
        self.cx.check(&value)?;
        self.record(self.v.len(), 0, len - self.v.len());
        self.v.resize(len, value);
        Ok(())
    }

    /// Replaces the whole vector; compared element by element with the accepted one at flush.
    ///
    /// # Errors
    ///
    /// An element is not faithful JSON; nothing is changed then.
    pub fn set(&mut self, items: Vec<T>) -> Result<()> {
        self.cx.check(&items)?;
        self.rewrite(|v| *v = items);
        Ok(())
    }

    /// Any other change (sorting, reversing, deduplicating, moving elements): the accepted
    /// and the changed vectors are compared at flush. Correct, not necessarily minimal.
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

    /// Removes consecutive repeated elements (see [`rewrite`](VecProxy::rewrite)).
    pub fn dedup(&mut self)
    where
        T: PartialEq,
    {
        self.rewrite(|v| v.dedup());
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

impl<T: Tracked> Tracked for Vec<T> {
    type Proxy<'a>
        = VecProxy<'a, T>
    where
        T: 'a;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> VecProxy<'a, T> {
        VecProxy { v: self, cx }
    }

    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        seq::flush(self, node, path, out)
    }
}
