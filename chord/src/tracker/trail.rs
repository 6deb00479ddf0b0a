//! Where a flush walk is: the segments from the root to the node being flushed.

pub use crate::path::Step;
use crate::path::{NonEmptyPath, Path, Segments};

/// The path of the location a flush walk is at: one frame per segment, each on the stack of
/// the call that went down through it, pointing at its parent's. A step down is a frame
/// (no push onto a shared vector, nothing to undo on the way up). The wire table reads a
/// path it has no id for frame by frame; the segments are copied out only for an op built
/// as an [`Op`](crate::Op) or an error. Not a public API (the derive's generated code passes
/// it on).
#[doc(hidden)]
#[derive(Debug)]
pub struct Trail<'a>(Option<(&'a Trail<'a>, Step<'a>)>);

impl Trail<'static> {
    /// The root.
    pub(crate) const ROOT: Trail<'static> = Trail(None);
}

impl Trail<'_> {
    /// One step down.
    #[inline(always)]
    pub(crate) fn child<'b>(&'b self, step: Step<'b>) -> Trail<'b> {
        Trail(Some((self, step)))
    }

    /// Whether this is the root.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The path of the location.
    pub(crate) fn to_path(&self) -> Path {
        Segments::to_path(self)
    }

    /// The path of the location, unless it is the root.
    pub(crate) fn non_empty(&self) -> Option<NonEmptyPath> {
        NonEmptyPath::try_from(self.to_path()).ok()
    }
}

impl Segments for Trail<'_> {
    /// (The parent's segments first: one call per frame, nothing gathered.)
    fn each_step(&self, f: &mut impl FnMut(Step<'_>)) {
        if let Some((up, step)) = self.0 {
            up.each_step(f);
            f(step);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Seg;

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
        let segs = log.to_path().segments().to_vec();
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
