//! Paths: where in a JSON document an op applies.
//!
//! A path is a list of segments. A [`Seg::Key`] names an object member, a [`Seg::Index`] an
//! array element (or, on an object, the member spelled with those digits). Three names are
//! reserved and refused as segments everywhere: [`RESERVED`].

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// Segment names that are refused in every path: walking through them is how prototype
/// pollution reaches a JavaScript replica. They remain allowed as keys *inside* values.
///
/// ```
/// assert_eq!(chord::RESERVED, ["__proto__", "constructor", "prototype"]);
/// ```
// One list for the runtime and the derive (which refuses these as JSON field names): it lives
// in chord-derive and reaches here as an array expression.
pub const RESERVED: [&str; 3] = chord_derive::__reserved_names!();

/// The most segments a path may have in a parsed op, on every grammar (decoded and wire) and in
/// the JavaScript replica alike. No document within the depth limits has a deeper location
/// (serde_json's parser stops at 128 levels), and a bounded path keeps every per-op cost
/// bounded.
pub const MAX_PATH_SEGMENTS: usize = 128;

/// One step of a [`Path`]: an object key or an array index.
///
/// `Seg::Index(0)` and `Seg::Key("0".into())` are different segments: the first addresses
/// element 0 of an array (or the member `"0"` of an object), the second only an object member.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    /// An object member. Field names of derived structs are borrowed (`'static`), so building
    /// paths for them allocates nothing; keys read from data are owned.
    Key(Cow<'static, str>),
    /// An array element, or on an object the member spelled with these digits.
    Index(usize),
}

impl Seg {
    /// Whether this segment is one of the [`RESERVED`] names.
    ///
    /// ```
    /// use chord::Seg;
    /// assert!(Seg::from("__proto__").is_reserved());
    /// assert!(!Seg::from("proto").is_reserved());
    /// ```
    pub fn is_reserved(&self) -> bool {
        match self {
            Seg::Key(k) => RESERVED.contains(&k.as_ref()),
            Seg::Index(_) => false,
        }
    }
}

impl From<&str> for Seg {
    fn from(k: &str) -> Self {
        Seg::Key(Cow::Owned(k.to_owned()))
    }
}

impl From<String> for Seg {
    fn from(k: String) -> Self {
        Seg::Key(Cow::Owned(k))
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Self {
        Seg::Index(i)
    }
}

impl Serialize for Seg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Seg::Key(k) => s.serialize_str(k),
            Seg::Index(i) => s.serialize_u64(*i as u64),
        }
    }
}

impl fmt::Display for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seg::Key(k) => write!(f, "{k:?}"),
            Seg::Index(i) => write!(f, "{i}"),
        }
    }
}

/// A location in a JSON document; the empty path is the root.
///
/// Serializes as a JSON array (`["transcript", 3, "text"]`). Its `Display` is a readable
/// form for logs: `transcript[3].text`, with `$` for the root and quoted brackets for keys
/// that are not identifiers (`meta["two words"]`); a key longer than 64 bytes shows its first
/// 64 and its length, so an error about a hostile path stays one short line.
///
/// # Examples
///
/// ```
/// use chord::{path, Path};
/// let p: Path = path!["transcript", 3, "text"].into();
/// assert_eq!(p.to_string(), "transcript[3].text");
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"["transcript",3,"text"]"#);
/// assert_eq!(Path::root().to_string(), "$");
/// ```
///
/// # Cost
///
/// A path is shared, not copied, when cloned: `clone` is `O(1)` (a reference count), and
/// [`push`](Path::push)/[`pop`](Path::pop) copy the segments only when the path is shared.
/// That is what keeps a decoded batch's memory proportional to its input: every op that
/// reuses a path (by id or by omission) holds the same segments.
#[derive(Clone, Default)]
pub struct Path(Option<Arc<Vec<Seg>>>);

impl Path {
    /// The root path (no segments).
    pub const fn root() -> Path {
        Path(None)
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Seg] {
        match &self.0 {
            Some(segs) => segs,
            None => &[],
        }
    }

    /// Appends a segment. Copies the segments first when this path shares them.
    pub fn push(&mut self, seg: impl Into<Seg>) {
        Arc::make_mut(self.0.get_or_insert_with(Default::default)).push(seg.into());
    }

    /// Removes and returns the last segment. Copies the segments first when this path shares
    /// them.
    pub fn pop(&mut self) -> Option<Seg> {
        self.0.as_mut().and_then(|segs| Arc::make_mut(segs).pop())
    }

    /// Whether two paths share their segments (a clone of one another), not merely equal.
    ///
    /// ```
    /// use chord::{path, Path};
    /// let p: Path = path!["a", 1].into();
    /// assert!(p.shares_with(&p.clone()));
    /// assert!(!p.shares_with(&path!["a", 1].into()));
    /// ```
    pub fn shares_with(&self, other: &Path) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// This path extended by one segment.
    pub fn child(&self, seg: impl Into<Seg>) -> NonEmptyPath {
        let mut segs = Vec::with_capacity(self.len() + 1);
        segs.extend_from_slice(self);
        segs.push(seg.into());
        NonEmptyPath(Path::from(segs))
    }

    /// The first reserved segment and its position, if any.
    pub fn reserved_segment(&self) -> Option<(usize, &str)> {
        self.iter().enumerate().find_map(|(i, s)| match s {
            Seg::Key(k) if RESERVED.contains(&k.as_ref()) => Some((i, k.as_ref())),
            _ => None,
        })
    }
}

impl Deref for Path {
    type Target = [Seg];
    fn deref(&self) -> &[Seg] {
        self.segments()
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.segments() == other.segments()
    }
}

impl Eq for Path {}

impl std::hash::Hash for Path {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.segments().hash(state);
    }
}

impl PartialOrd for Path {
    fn partial_cmp(&self, other: &Path) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Path {
    fn cmp(&self, other: &Path) -> std::cmp::Ordering {
        self.segments().cmp(other.segments())
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Path").field(&self.segments()).finish()
    }
}

impl From<Vec<Seg>> for Path {
    fn from(segs: Vec<Seg>) -> Self {
        if segs.is_empty() {
            Path(None)
        } else {
            Path(Some(Arc::new(segs)))
        }
    }
}

impl From<NonEmptyPath> for Path {
    fn from(p: NonEmptyPath) -> Self {
        p.0
    }
}

impl FromIterator<Seg> for Path {
    fn from_iter<I: IntoIterator<Item = Seg>>(iter: I) -> Self {
        Path::from(iter.into_iter().collect::<Vec<Seg>>())
    }
}

impl Serialize for Path {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for seg in self.iter() {
            seq.serialize_element(seg)?;
        }
        seq.end()
    }
}

/// Keys longer than this many bytes are shortened in a path's `Display`.
const DISPLAY_KEY: usize = 64;

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("$");
        }
        for (i, seg) in self.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) if k.len() > DISPLAY_KEY => {
                    // A key from data can be megabytes long; a log line names it, not copies it.
                    let mut end = DISPLAY_KEY;
                    while !k.is_char_boundary(end) {
                        end -= 1;
                    }
                    let shown = serde_json::Value::from(&k[..end]).to_string();
                    write!(f, "[{}...\"({} bytes)]", &shown[..shown.len() - 1], k.len())?;
                }
                Seg::Key(k) if is_identifier(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Key(k) => write!(f, "[{}]", serde_json::Value::from(k.as_ref()))?,
            }
        }
        Ok(())
    }
}

/// A path with at least one segment: what `s`, `d`, `a` and `t` take, so that a set or
/// delete of the root cannot be constructed.
///
/// Build one with [`path!`](crate::path), [`NonEmptyPath::new`], [`Path::child`], or
/// `TryFrom<Path>`.
///
/// ```
/// use chord::{NonEmptyPath, Path};
/// assert!(NonEmptyPath::try_from(Path::root()).is_err());
/// let p = NonEmptyPath::new("config").child("model");
/// assert_eq!(p.to_string(), "config.model");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NonEmptyPath(Path);

impl NonEmptyPath {
    /// A path of one segment.
    pub fn new(first: impl Into<Seg>) -> NonEmptyPath {
        NonEmptyPath(Path::from(vec![first.into()]))
    }

    /// This path extended by one segment.
    pub fn child(&self, seg: impl Into<Seg>) -> NonEmptyPath {
        self.0.child(seg)
    }

    /// The parent's segments and the last segment.
    pub fn split_last(&self) -> (&[Seg], &Seg) {
        match self.0.segments().split_last() {
            Some((last, parent)) => (parent, last),
            None => unreachable!("a NonEmptyPath always has a segment"),
        }
    }

    /// The path as a possibly-empty [`Path`].
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    #[doc(hidden)]
    pub fn __from_parts(first: Seg, rest: Vec<Seg>) -> NonEmptyPath {
        let mut segs = Vec::with_capacity(rest.len() + 1);
        segs.push(first);
        segs.extend(rest);
        NonEmptyPath(Path::from(segs))
    }
}

impl Deref for NonEmptyPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl TryFrom<Path> for NonEmptyPath {
    type Error = Path;
    /// Fails, handing the path back, when it is the root.
    fn try_from(p: Path) -> Result<Self, Path> {
        if p.is_empty() {
            Err(p)
        } else {
            Ok(NonEmptyPath(p))
        }
    }
}

impl Serialize for NonEmptyPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl fmt::Display for NonEmptyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Builds a path from string and integer segments.
///
/// `path![]` is the root [`Path`]; `path![a, b, ...]` is a [`NonEmptyPath`].
///
/// ```
/// use chord::{path, Seg};
/// let p = path!["messages", 0, "content"];
/// assert_eq!(p.segments(), &[Seg::from("messages"), Seg::Index(0), Seg::from("content")]);
/// assert!(path![].is_empty());
/// ```
#[macro_export]
macro_rules! path {
    () => {
        $crate::Path::root()
    };
    ($first:expr $(, $rest:expr)* $(,)?) => {
        $crate::NonEmptyPath::__from_parts(
            $crate::Seg::from($first),
            ::std::vec![$($crate::Seg::from($rest)),*],
        )
    };
}

/// One segment of a path, borrowed: what a flush walk's trail holds (a derived field's
/// name, a map member's key, an element's index) and what the wire table reads. Not a public
/// API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// A field or variant name written in the program.
    Field(&'static str),
    /// A member whose name is data.
    Key(&'a str),
    /// An element.
    Index(usize),
}

impl Step<'_> {
    /// The owned segment (a member's key copied).
    pub(crate) fn to_seg(self) -> Seg {
        match self {
            Step::Field(name) => Seg::Key(Cow::Borrowed(name)),
            Step::Key(key) => Seg::Key(Cow::Owned(key.to_owned())),
            Step::Index(i) => Seg::Index(i),
        }
    }

    /// The length of the segment in a path's JSON, ignoring escapes: a key with its quotes,
    /// an index's digits.
    pub(crate) fn json_len(self) -> usize {
        match self {
            Step::Field(k) | Step::Key(k) => k.len() + 2,
            Step::Index(i) => i.checked_ilog10().map_or(1, |d| d as usize + 1),
        }
    }
}

impl<'s> From<&'s Seg> for Step<'s> {
    #[inline]
    fn from(seg: &'s Seg) -> Step<'s> {
        match seg {
            Seg::Key(Cow::Borrowed(name)) => Step::Field(name),
            Seg::Key(key) => Step::Key(key),
            Seg::Index(i) => Step::Index(*i),
        }
    }
}

/// A path as its holder keeps it: segments in a slice, or a flush walk's trail of frames.
/// What the wire table and the value checks read, a segment at a time, so that a walk's
/// trail is never copied into segments unless an op or an error needs a [`Path`].
pub(crate) trait Segments {
    /// Calls `f` with each segment, root first.
    fn each_step(&self, f: &mut impl FnMut(Step<'_>));

    /// The path.
    fn to_path(&self) -> Path {
        let mut segs = Vec::new();
        self.each_step(&mut |step| segs.push(step.to_seg()));
        Path::from(segs)
    }

    /// The length of the path as an op writes it in full: `[`, `]`, the commas and each
    /// segment's JSON (`[]` at the root), ignoring escapes.
    fn json_len(&self) -> usize {
        let (mut count, mut len) = (0, 0);
        self.each_step(&mut |step| {
            count += 1;
            len += step.json_len();
        });
        1 + count.max(1) + len
    }
}

impl Segments for [Seg] {
    #[inline]
    fn each_step(&self, f: &mut impl FnMut(Step<'_>)) {
        for seg in self {
            f(Step::from(seg));
        }
    }
}

impl Segments for Path {
    #[inline]
    fn each_step(&self, f: &mut impl FnMut(Step<'_>)) {
        self.segments().each_step(f)
    }

    fn to_path(&self) -> Path {
        self.clone()
    }
}
