//! The one error type of chord's data boundary: parsing, validating, decoding and applying.

use std::fmt;

use crate::path::Path;

/// An error from parsing, validating, decoding or applying ops.
///
/// It says *what* went wrong ([`kind`](Error::kind)) and *where*: the position of the op in
/// its batch ([`op_index`](Error::op_index)) and, when the problem is at a location in the
/// document, the [`path`](Error::path).
///
/// ```
/// use chord::{apply, path, Op};
/// let mut doc = Some(serde_json::json!({"xs": [1, 2, 3]}));
/// let err = apply(&mut doc, [Op::Set(path!["xs", 1], 9.into()), Op::Set(path!["xs", 5], 9.into())])
///     .unwrap_err();
/// assert_eq!(err.op_index(), Some(1));
/// assert_eq!(err.to_string(), "op 1 at xs[5]: index 5 is past the end of an array of length 3 (an op may write at most one past the end)");
/// // The batch is atomic: the first op was rolled back.
/// assert_eq!(doc, Some(serde_json::json!({"xs": [1, 2, 3]})));
/// ```
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    op: Option<usize>,
    path: Option<Path>,
}

/// What went wrong. `#[non_exhaustive]`: new kinds may appear in minor releases.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not valid JSON text.
    Json(String),
    /// A batch is not a JSON array of ops.
    NotABatch,
    /// An op is not a JSON array.
    NotATuple,
    /// An op's first element is missing or not a string.
    MissingVerb,
    /// An op's verb is not one of the six (or, on the wire, `#`).
    UnknownVerb(String),
    /// An op has the wrong number of elements for its verb.
    Arity {
        /// The op's verb.
        verb: String,
        /// How many elements the op had.
        found: usize,
        /// What the grammar accepts, e.g. `"3"` or `"2 or 3"`.
        expected: &'static str,
    },
    /// A wire-only form (an interned id, a `#` definition, a short form) reached a place
    /// that takes decoded ops. Decode wire batches with a [`Decoder`](crate::Decoder) first.
    WireForm(&'static str),
    /// A path is not an array of strings and non-negative integers.
    InvalidPath(String),
    /// `s`, `d`, `a` or `t` named the root; only `r` and `p` may.
    EmptyPath {
        /// The op's verb.
        verb: char,
    },
    /// A path walks through a reserved segment (`__proto__`, `constructor`, `prototype`).
    ReservedSegment {
        /// The reserved name.
        segment: String,
        /// Its position in the path.
        position: usize,
    },
    /// A count (index, remove count, truncate count, id) is not a non-negative integer.
    InvalidCount {
        /// Which field: `"index"`, `"remove"`, `"count"` or `"id"`.
        field: &'static str,
        /// The JSON that was found.
        found: String,
    },
    /// Splice items are not a JSON array.
    ItemsNotArray,
    /// Append text is not a JSON string.
    TextNotString,
    /// A wire op referenced an id that is not defined in this stream.
    UnknownId(usize),
    /// A short-form wire op had no previous path in its batch to reuse.
    NoPreviousPath,
    /// The decoder failed on an earlier batch; the stream must restart from a base batch with
    /// a fresh decoder.
    DecoderPoisoned,
    /// An op other than `r` was applied to a stream that has no value yet.
    NoValue,
    /// A parent on the path does not exist.
    Missing,
    /// A path walks into a string, number, boolean or null.
    NotAContainer {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A string segment was used on an array.
    KeyOnArray,
    /// An array index is beyond the end.
    IndexOutOfRange {
        /// The index.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// `a` or `t` targeted something that is not a string.
    NotAString {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A member operation targeted something that is not an object.
    NotAnObject {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// `p` targeted something that is not an array.
    NotAnArray {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// `t` would cut a character in half (between the two UTF-16 units of a surrogate pair).
    SplitsCharacter {
        /// The requested count, in UTF-16 code units.
        count: usize,
    },
    /// A configured [`Limits`](crate::Limits) bound was exceeded.
    LimitExceeded {
        /// Which limit.
        limit: &'static str,
        /// The bound.
        max: usize,
    },
    /// A value cannot be represented in JSON (a non-finite float, a non-string map key, ...).
    NotJson(String),
}

/// The broad class of an [`ErrorKind`], for callers that branch on what to do rather than on
/// every variant. `#[non_exhaustive]`.
///
/// ```
/// use chord::{Category, Decoder};
/// let err = Decoder::new().decode_str(r#"[["a",7,"x"]]"#).unwrap_err();
/// assert_eq!(err.kind().category(), Category::Decode);
/// let err = chord::parse_batch("[[\"x\"]]").unwrap_err();
/// assert_eq!(err.kind().category(), Category::Parse);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Category {
    /// The text or JSON is not a well-formed batch (either grammar): the producer is broken
    /// or hostile; retrying the same input cannot help.
    Parse,
    /// The wire stream's state does not fit (an unknown id, a short form with nothing before
    /// it, a poisoned decoder): restart the stream from a base batch with a fresh decoder.
    Decode,
    /// A well-formed op does not fit the document (a missing parent, a wrong type, an index
    /// past the end): the replica and the producer disagree; resynchronise from a base batch.
    Apply,
    /// A configured bound was exceeded ([`Limits`](crate::Limits)).
    Limit,
    /// A tracked value cannot be carried as JSON (found at flush or when recorded).
    Track,
}

impl ErrorKind {
    /// The broad class of this kind.
    pub fn category(&self) -> Category {
        use ErrorKind::*;
        match self {
            Json(_)
            | NotABatch
            | NotATuple
            | MissingVerb
            | UnknownVerb(_)
            | Arity { .. }
            | WireForm(_)
            | InvalidPath(_)
            | EmptyPath { .. }
            | ReservedSegment { .. }
            | InvalidCount { .. }
            | ItemsNotArray
            | TextNotString => Category::Parse,
            UnknownId(_) | NoPreviousPath | DecoderPoisoned => Category::Decode,
            NoValue
            | Missing
            | NotAContainer { .. }
            | KeyOnArray
            | IndexOutOfRange { .. }
            | NotAString { .. }
            | NotAnObject { .. }
            | NotAnArray { .. }
            | SplitsCharacter { .. } => Category::Apply,
            LimitExceeded { .. } => Category::Limit,
            NotJson(_) => Category::Track,
        }
    }
}

pub(crate) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            Json(msg) => write!(f, "invalid JSON: {msg}"),
            NotABatch => f.write_str("a batch must be a JSON array of ops"),
            NotATuple => f.write_str("an op must be a JSON array such as [\"s\", [\"a\"], 1]"),
            MissingVerb => f.write_str("an op must start with its verb as a string"),
            UnknownVerb(v) => write!(
                f,
                "unknown verb {v:?} (expected one of r, s, d, a, t, p)"
            ),
            Arity {
                verb,
                found,
                expected,
            } => write!(
                f,
                "`{verb}` takes {expected} elements, found {found}"
            ),
            WireForm(what) => write!(
                f,
                "{what} is a wire form; decode wire batches with a Decoder before using them"
            ),
            InvalidPath(why) => write!(f, "invalid path: {why}"),
            EmptyPath { verb } => write!(
                f,
                "`{verb}` needs a non-empty path (only `r` and `p` may target the root)"
            ),
            ReservedSegment { segment, position } => write!(
                f,
                "path segment {position} is the reserved name {segment:?}"
            ),
            InvalidCount { field, found } => {
                write!(f, "{field} must be a non-negative integer, found {found}")
            }
            ItemsNotArray => f.write_str("splice items must be a JSON array"),
            TextNotString => f.write_str("append text must be a JSON string"),
            UnknownId(id) => write!(f, "path id {id} is not defined in this stream"),
            NoPreviousPath => f.write_str(
                "short form with no previous path in this batch (omission never crosses a batch)",
            ),
            DecoderPoisoned => f.write_str(
                "the decoder failed on an earlier batch; restart from a base batch with a fresh decoder",
            ),
            NoValue => f.write_str("there is no value yet: a stream must start with an `r` op"),
            Missing => f.write_str("no such member or element"),
            NotAContainer { found } => {
                write!(f, "cannot walk into {found}: only objects and arrays have children")
            }
            KeyOnArray => f.write_str("a string segment cannot address an array element"),
            IndexOutOfRange { index, len } => write!(
                f,
                "index {index} is past the end of an array of length {len} (an op may write at most one past the end)"
            ),
            NotAString { found } => write!(f, "expected a string, found {found}"),
            NotAnArray { found } => write!(f, "expected an array, found {found}"),
            NotAnObject { found } => write!(f, "expected an object, found {found}"),
            SplitsCharacter { count } => write!(
                f,
                "truncating {count} UTF-16 units would split a surrogate pair"
            ),
            LimitExceeded { limit, max } => write!(f, "exceeds the {limit} limit of {max}"),
            NotJson(why) => write!(f, "not representable in JSON: {why}"),
        }
    }
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Inner {
            kind,
            op: None,
            path: None,
        }))
    }

    pub(crate) fn at_op(mut self, index: usize) -> Error {
        self.0.op = Some(index);
        self
    }

    pub(crate) fn at_path(mut self, path: Path) -> Error {
        self.0.path = Some(path);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The position of the failing op in its batch, when the error concerns one op.
    pub fn op_index(&self) -> Option<usize> {
        self.0.op
    }

    /// Where in the document the problem is, when it is at a location.
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_ref()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(ErrorKind::Json(e.to_string()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.0.op, &self.0.path) {
            (Some(op), Some(path)) => write!(f, "op {op} at {path}: ")?,
            (Some(op), None) => write!(f, "op {op}: ")?,
            (None, Some(path)) => write!(f, "at {path}: ")?,
            (None, None) => {}
        }
        self.0.kind.fmt(f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("op", &self.0.op)
            .field("path", &self.0.path)
            .finish()
    }
}

impl std::error::Error for Error {}

/// `Result` with chord's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
