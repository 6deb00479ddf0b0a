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
///
/// One box, so a `Result` of it is a pointer wide. The message of each kind is written beside
/// its variant (`thiserror`); this type adds where (`op 1 at xs[5]: `) and keeps the
/// underlying error: for [`ErrorKind::Json`], the [`serde_json::Error`] is its
/// [`source`](std::error::Error::source), with its line, column and class, while the kind
/// keeps serde_json's message as text, so kinds stay `Clone` and `PartialEq` and
/// `to_string` alone says where the text broke.
///
/// ```
/// use std::error::Error as _;
/// let err = chord::parse_batch("[[\"r\", ").unwrap_err();
/// assert_eq!(err.kind().category(), chord::Category::Parse);
/// let json = err.source().unwrap().downcast_ref::<serde_json::Error>().unwrap();
/// assert!(json.is_eof());
/// assert_eq!(err.to_string(), format!("invalid JSON: {json}"));
/// ```
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    op: Option<usize>,
    path: Option<Path>,
    /// The error the kind came from, when there is one.
    source: Option<serde_json::Error>,
}

/// What went wrong. `#[non_exhaustive]`: new kinds may appear in minor releases.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not valid JSON text.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// A batch is not a JSON array of ops.
    #[error("a batch must be a JSON array of ops")]
    NotABatch,
    /// An op is not a JSON array.
    #[error("an op must be a JSON array such as [\"s\", [\"a\"], 1]")]
    NotATuple,
    /// An op's first element is missing or not a string.
    #[error("an op must start with its verb as a string")]
    MissingVerb,
    /// An op's verb is not one of the six (or, on the wire, `#`).
    #[error("unknown verb {0:?} (expected one of r, s, d, a, t, p)")]
    UnknownVerb(String),
    /// An op has the wrong number of elements for its verb.
    #[error("`{verb}` takes {expected} elements, found {found}")]
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
    #[error("{0} is a wire form; decode wire batches with a Decoder before using them")]
    WireForm(&'static str),
    /// A path is not an array of strings and non-negative integers.
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// `s`, `d`, `a` or `t` named the root; only `r` and `p` may.
    #[error("`{verb}` needs a non-empty path (only `r` and `p` may target the root)")]
    EmptyPath {
        /// The op's verb.
        verb: char,
    },
    /// A path walks through a reserved segment (`__proto__`, `constructor`, `prototype`).
    #[error("path segment {position} is the reserved name {segment:?}")]
    ReservedSegment {
        /// The reserved name.
        segment: String,
        /// Its position in the path.
        position: usize,
    },
    /// A count (index, remove count, truncate count, id) is not a non-negative integer.
    #[error("{field} must be a non-negative integer, found {found}")]
    InvalidCount {
        /// Which field: `"index"`, `"remove"`, `"count"` or `"id"`.
        field: &'static str,
        /// The JSON that was found.
        found: String,
    },
    /// Splice items are not a JSON array.
    #[error("splice items must be a JSON array")]
    ItemsNotArray,
    /// Append text is not a JSON string.
    #[error("append text must be a JSON string")]
    TextNotString,
    /// A wire op referenced an id that is not defined in this stream.
    #[error("path id {0} is not defined in this stream")]
    UnknownId(usize),
    /// A short-form wire op had no previous path in its batch to reuse.
    #[error("short form with no previous path in this batch (omission never crosses a batch)")]
    NoPreviousPath,
    /// The decoder failed on an earlier batch; the stream must restart from a base batch with
    /// a fresh decoder.
    #[error(
        "the decoder failed on an earlier batch; restart from a base batch with a fresh decoder"
    )]
    DecoderPoisoned,
    /// An op other than `r` was applied to a stream that has no value yet.
    #[error("there is no value yet: a stream must start with an `r` op")]
    NoValue,
    /// A parent on the path does not exist.
    #[error("no such member or element")]
    Missing,
    /// A path walks into a string, number, boolean or null.
    #[error("cannot walk into {found}: only objects and arrays have children")]
    NotAContainer {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A string segment was used on an array.
    #[error("a string segment cannot address an array element")]
    KeyOnArray,
    /// An array index is beyond the end.
    #[error("index {index} is past the end of an array of length {len} (an op may write at most one past the end)")]
    IndexOutOfRange {
        /// The index.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// `a` or `t` targeted something that is not a string.
    #[error("expected a string, found {found}")]
    NotAString {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A member operation targeted something that is not an object.
    #[error("expected an object, found {found}")]
    NotAnObject {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// `p` targeted something that is not an array.
    #[error("expected an array, found {found}")]
    NotAnArray {
        /// The JSON type that was found.
        found: &'static str,
    },
    /// `t` would cut a character in half (between the two UTF-16 units of a surrogate pair).
    #[error("truncating {count} UTF-16 units would split a surrogate pair")]
    SplitsCharacter {
        /// The requested count, in UTF-16 code units.
        count: usize,
    },
    /// A configured [`Limits`](crate::Limits) bound was exceeded.
    #[error("exceeds the {limit} limit of {max}")]
    LimitExceeded {
        /// Which limit.
        limit: &'static str,
        /// The bound.
        max: usize,
    },
    /// A value cannot be represented in JSON (a non-finite float, a non-string map key, ...).
    #[error("not representable in JSON: {0}")]
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

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Inner {
            kind,
            op: None,
            path: None,
            source: None,
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
        let mut error = Error::new(ErrorKind::Json(e.to_string()));
        error.0.source = Some(e);
        error
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
        fmt::Display::fmt(&self.0.kind, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("op", &self.0.op)
            .field("path", &self.0.path)
            .field("source", &self.0.source)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `Result` with chord's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
