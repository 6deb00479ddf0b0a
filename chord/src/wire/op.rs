//! The wire's op type: the decoded verbs with an optional or interned path, plus `#`
//! definitions.

use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::Value;

use crate::path::Path;

/// How a wire op names its path: inline, or by an id defined earlier in the stream.
#[derive(Clone, Debug, PartialEq)]
pub enum PathRef {
    /// The path written out.
    Path(Path),
    /// An id from a `["#", id, path]` definition.
    Id(usize),
}

impl Serialize for PathRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PathRef::Path(p) => p.serialize(s),
            PathRef::Id(id) => s.serialize_u64(*id as u64),
        }
    }
}

/// An op as it crosses a boundary: the decoded verbs with an optional or interned path, plus
/// `#` definitions. A `None` path is the short form: the previous op's path in the batch.
///
/// Deserializing validates with the wire grammar (which accepts what the decoded grammar
/// refuses: ids, `#`, short forms; it still refuses bad paths, counts and reserved segments).
///
/// ```
/// use chord::{PathRef, WireOp};
/// let op: WireOp = serde_json::from_str(r#"["a",0,"x"]"#).unwrap();
/// assert_eq!(op, WireOp::Append(Some(PathRef::Id(0)), "x".into()));
/// assert!(serde_json::from_str::<WireOp>(r##"["#",0,["__proto__"]]"##).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)] // the variants mirror `Op`'s, documented there
pub enum WireOp {
    /// `["#", id, path]`: defines (or redefines) an id for the rest of the stream.
    Define {
        id: usize,
        path: Path,
    },
    Replace(Value),
    Set(Option<PathRef>, Value),
    Delete(Option<PathRef>),
    Append(Option<PathRef>, String),
    Truncate(Option<PathRef>, usize),
    Splice {
        path: Option<PathRef>,
        index: usize,
        remove: usize,
        items: Vec<Value>,
    },
}

impl WireOp {
    /// Whether a wire batch is a base batch: its first op is an `r` (which encodes to itself).
    pub fn is_base(batch: &[WireOp]) -> bool {
        matches!(batch.first(), Some(WireOp::Replace(_)))
    }

    /// The op's path reference, if its verb takes one (`None` for `r` and `#`).
    #[cfg(test)]
    pub(crate) fn path_ref_mut(&mut self) -> Option<&mut Option<PathRef>> {
        match self {
            WireOp::Define { .. } | WireOp::Replace(_) => None,
            WireOp::Set(p, _)
            | WireOp::Delete(p)
            | WireOp::Append(p, _)
            | WireOp::Truncate(p, _)
            | WireOp::Splice { path: p, .. } => Some(p),
        }
    }
}

impl Serialize for WireOp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn begin<S: Serializer>(
            s: S,
            verb: &str,
            path: &Option<PathRef>,
            args: usize,
        ) -> Result<S::SerializeSeq, S::Error> {
            let mut seq = s.serialize_seq(Some(1 + usize::from(path.is_some()) + args))?;
            seq.serialize_element(verb)?;
            if let Some(p) = path {
                seq.serialize_element(p)?;
            }
            Ok(seq)
        }
        let seq = match self {
            WireOp::Define { id, path } => {
                let mut seq = begin(s, "#", &None, 2)?;
                seq.serialize_element(id)?;
                seq.serialize_element(path)?;
                seq
            }
            WireOp::Replace(v) => {
                let mut seq = begin(s, "r", &None, 1)?;
                seq.serialize_element(v)?;
                seq
            }
            WireOp::Set(p, v) => {
                let mut seq = begin(s, "s", p, 1)?;
                seq.serialize_element(v)?;
                seq
            }
            WireOp::Delete(p) => begin(s, "d", p, 0)?,
            WireOp::Append(p, text) => {
                let mut seq = begin(s, "a", p, 1)?;
                seq.serialize_element(text)?;
                seq
            }
            WireOp::Truncate(p, n) => {
                let mut seq = begin(s, "t", p, 1)?;
                seq.serialize_element(n)?;
                seq
            }
            WireOp::Splice {
                path,
                index,
                remove,
                items,
            } => {
                let mut seq = begin(s, "p", path, 3)?;
                seq.serialize_element(index)?;
                seq.serialize_element(remove)?;
                seq.serialize_element(items)?;
                seq
            }
        };
        seq.end()
    }
}
