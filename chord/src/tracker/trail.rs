//! Where a flush walk is: the segments from the root to the node being flushed.

pub use crate::path::Step;
use crate::path::{NonEmptyPath, Path, Seg, Segments};

/// The path of the location a flush walk is at: one frame per segment, each on the stack of
/// the call that went down through it, pointing at its parent's. A step down is a frame
/// (no push onto a shared vector, nothing to undo on the way up). The wire table reads a
/// path it has no id for frame by frame; the segments are copied out only for an op built
/// as an [`Op`](crate::Op) or an error. Not a public API (the derive's generated code passes
/// it on).
#[doc(hidden)]
#[derive(Debug)]
pub struct Trail<'a> {
    up: Option<&'a Trail<'a>>,
    step: Step<'a>,
    depth: usize,
}

impl Trail<'static> {
    /// The root.
    pub(crate) const ROOT: Trail<'static> = Trail {
        up: None,
        step: Step::Index(0), // (never read: the root has no segment)
        depth: 0,
    };
}

impl<'a> Trail<'a> {
    /// One step down.
    #[inline(always)]
    pub(crate) fn child<'b>(&'b self, step: Step<'b>) -> Trail<'b> {
        Trail {
            up: Some(self),
            step,
            depth: self.depth + 1,
        }
    }

    /// Whether this is the root.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.depth == 0
    }

    /// The segments, root first.
    pub(crate) fn segments(&self) -> Vec<Seg> {
        let mut segs = Vec::with_capacity(self.depth);
        let mut at = self;
        while let Some(up) = at.up {
            segs.push(at.step.to_seg());
            at = up;
        }
        segs.reverse();
        segs
    }

    /// The path of the location.
    pub(crate) fn to_path(&self) -> Path {
        Path::from(self.segments())
    }

    /// The path of the location, unless it is the root.
    pub(crate) fn non_empty(&self) -> Option<NonEmptyPath> {
        NonEmptyPath::try_from(self.to_path()).ok()
    }
}

impl Segments for Trail<'_> {
    /// (The parent's segments first: one call per frame, nothing gathered.)
    fn each_step(&self, f: &mut impl FnMut(Step<'_>)) {
        if let Some(up) = self.up {
            up.each_step(f);
            f(self.step);
        }
    }

    fn to_path(&self) -> Path {
        Trail::to_path(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trail_gathers_its_segments_root_first_and_owns_what_it_copies() {
        let key = String::from("a-7");
        let root = Trail::ROOT;
        let agents = root.child(Step::Field("agents"));
        let member = agents.child(Step::Key(&key));
        let log = member.child(Step::Index(3));
        assert!(root.is_empty());
        assert_eq!(log.json_len(), r#"["agents","a-7",3]"#.len());
        assert_eq!(root.json_len(), "[]".len());
        let segs = log.segments();
        assert_eq!(
            segs,
            vec![
                Seg::Key("agents".into()),
                Seg::Key("a-7".into()),
                Seg::Index(3)
            ]
        );
        // A field name stays borrowed; a member's key is copied (it lives in the data).
        assert!(matches!(&segs[0], Seg::Key(std::borrow::Cow::Borrowed(_))));
        assert!(matches!(&segs[1], Seg::Key(std::borrow::Cow::Owned(_))));
        assert_eq!(log.to_path().to_string(), r#"agents["a-7"][3]"#);
        assert!(root.non_empty().is_none());
        assert_eq!(
            member.non_empty().map(|p| p.to_string()),
            Some(r#"agents["a-7"]"#.into())
        );
    }
}
