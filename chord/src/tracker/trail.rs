//! Where a flush walk is: the segments from the root to the node being flushed.

use std::ops::Deref;

use crate::path::{NonEmptyPath, Path, Seg};

/// The path of the location a flush walk is at, extended and shortened as the walk goes
/// down and up. Unlike [`Path`], whose segments are shared behind a reference count (so
/// that every push checks, atomically, whether they are shared), a trail owns its segments:
/// a step down is a plain push. An op or an error that needs the path takes a [`Path`] of it
/// ([`to_path`](Trail::to_path)). Not a public API (the derive's generated code passes it
/// on).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Trail(Vec<Seg>);

impl Trail {
    /// An empty trail (the root) with room for `segments` segments.
    pub(crate) fn with_capacity(segments: usize) -> Trail {
        Trail(Vec::with_capacity(segments))
    }

    /// A trail of these segments.
    pub(crate) fn of(segments: Vec<Seg>) -> Trail {
        Trail(segments)
    }

    /// One step down.
    #[inline]
    pub(crate) fn push(&mut self, seg: Seg) {
        self.0.push(seg);
    }

    /// One step up.
    #[inline]
    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }

    /// Runs `f` one step down, at member `name`, lending the name to the trail instead of
    /// copying it: it is back in `name` when `f` returns, whatever `f` left pushed.
    #[inline]
    pub(crate) fn with_member<R>(
        &mut self,
        name: &mut String,
        f: impl FnOnce(&mut Trail) -> R,
    ) -> R {
        let depth = self.0.len();
        self.0
            .push(Seg::Key(std::borrow::Cow::Owned(std::mem::take(name))));
        let r = f(self);
        self.0.truncate(depth + 1);
        if let Some(Seg::Key(std::borrow::Cow::Owned(lent))) = self.0.pop() {
            *name = lent;
        }
        r
    }

    /// Back to the root (after an error, which may leave segments pushed).
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// The path of the location.
    pub(crate) fn to_path(&self) -> Path {
        Path::from(self.0.clone())
    }

    /// The path of the location, unless it is the root.
    pub(crate) fn non_empty(&self) -> Option<NonEmptyPath> {
        NonEmptyPath::try_from(self.to_path()).ok()
    }
}

impl Deref for Trail {
    type Target = [Seg];
    fn deref(&self) -> &[Seg] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lent_member_name_comes_back_whatever_was_left_pushed() {
        let mut trail = Trail::of(vec![Seg::Key("agents".into())]);
        let mut name = "a-7".to_owned();
        let seen = trail.with_member(&mut name, |t| {
            let seen = t.to_path().to_string();
            // (As a failed flush below may leave its segments.)
            t.push(Seg::Index(3));
            t.push(Seg::Key("log".into()));
            seen
        });
        assert_eq!(
            seen,
            Path::root()
                .child(Seg::Key("agents".into()))
                .child(Seg::Key("a-7".into()))
                .to_string()
        );
        assert_eq!(name, "a-7");
        assert_eq!(trail.len(), 1);
        assert_eq!(trail.to_path().to_string(), "agents");
    }
}
