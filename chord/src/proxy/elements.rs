//! The element proxies of a sequence, handed out one by one: what `iter_mut` and `for x in
//! &mut xs` iterate, and what a sequence proxy turns into when iterated by value (so that
//! nested sequences flatten: `plan.iter_mut().flatten()`).

use std::vec;

use crate::tracker::{Cx, Node, Tracked};

/// An iterator over the element proxies of a [`VecProxy`](super::VecProxy) or a
/// [`DequeProxy`](super::DequeProxy), in order.
///
/// Made by `iter_mut`, by iterating `&mut` a sequence proxy, or by iterating the proxy itself
/// (which it consumes). Each element gets a dirty-tree slot, prepared when the iterator is
/// made (`O(len)`).
///
/// ```
/// use chord::{track, Tracked};
/// #[derive(Tracked, serde::Serialize, Default)]
/// struct Step { done: bool }
/// #[derive(Tracked, serde::Serialize, Default)]
/// struct Agent { plan: Vec<Vec<Step>> }
///
/// let mut agent = track(Agent { plan: vec![vec![Step::default()], vec![Step::default()]] });
/// agent.flush()?;
/// let mut state = agent.state();
/// // Nested sequences flatten; the first step not done, wherever it is.
/// if let Some(mut step) = state.plan.iter_mut().flatten().find(|s| !*s.done) {
///     *step.done = true;
/// }
/// for phase in &mut state.plan {
///     for mut step in phase {
///         *step.done = true;
///     }
/// }
/// let ops = agent.flush()?;
/// assert_eq!(
///     chord::display_batch(&ops).to_string(),
///     "batch, 2 ops\n  set plan[0][0].done = true\n  set plan[1][0].done = true"
/// );
/// # Ok::<(), chord::Error>(())
/// ```
pub struct Elements<'a, I> {
    items: I,
    slots: vec::IntoIter<Option<&'a mut Node>>,
}

impl<'a, I> Elements<'a, I> {
    pub(crate) fn new(items: I, slots: vec::IntoIter<Option<&'a mut Node>>) -> Elements<'a, I> {
        Elements { items, slots }
    }
}

impl<'a, T: Tracked + 'a, I: Iterator<Item = &'a mut T>> Iterator for Elements<'a, I> {
    type Item = T::Proxy<'a>;

    fn next(&mut self) -> Option<T::Proxy<'a>> {
        let item = self.items.next()?;
        Some(item.__proxy(Cx::root(self.slots.next().flatten())))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl<'a, T: Tracked + 'a, I: ExactSizeIterator<Item = &'a mut T>> ExactSizeIterator
    for Elements<'a, I>
{
}

impl<I> std::fmt::Debug for Elements<'_, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elements").finish_non_exhaustive()
    }
}
