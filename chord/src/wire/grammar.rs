//! The wire grammar ([`WireOp`]): the decoded grammar's pieces plus interned ids, `#` path
//! definitions and short forms that omit the previous op's path.
//!
//! The tree-based validator ([`wire_op`], over a parsed `Value`) and the one the streaming
//! parser (`wire::de`) feeds ([`wire_op_from_elems`]) are the same grammar with the same
//! order of checks and the same errors.

use serde::de::{Deserialize, Deserializer};
use serde_json::{Number, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::path::Path;
use crate::validate::{arity, count, each, items, next, not_a_path, path, text, tuple};
use crate::wire::op::{PathRef, WireOp};

pub(crate) fn wire_batch_from_value(value: Value) -> Result<Vec<WireOp>> {
    each(value, wire_op)
}

fn path_ref(value: Value) -> Result<PathRef> {
    match value {
        Value::Number(_) => Ok(PathRef::Id(count(value, "id")?)),
        v => Ok(PathRef::Path(path(v)?)),
    }
}

/// Validates one wire op: the decoded grammar plus ids, `#` definitions and short forms.
pub(crate) fn wire_op(value: Value) -> Result<WireOp> {
    let (verb, args) = tuple(value)?;
    let mut it = args.into_iter();
    let n = it.len();
    let op = match (verb.as_str(), n) {
        ("r", 1) => WireOp::Replace(next(&mut it)),
        ("#", 2) => WireOp::Define {
            id: count(next(&mut it), "id")?,
            path: path(next(&mut it))?,
        },
        ("s", 1) => WireOp::Set(None, next(&mut it)),
        ("s", 2) => WireOp::Set(Some(path_ref(next(&mut it))?), next(&mut it)),
        ("d", 0) => WireOp::Delete(None),
        ("d", 1) => WireOp::Delete(Some(path_ref(next(&mut it))?)),
        ("a", 1) => WireOp::Append(None, text(next(&mut it))?),
        ("a", 2) => {
            let path = path_ref(next(&mut it))?;
            WireOp::Append(Some(path), text(next(&mut it))?)
        }
        ("t", 1) => WireOp::Truncate(None, count(next(&mut it), "count")?),
        ("t", 2) => {
            let path = path_ref(next(&mut it))?;
            WireOp::Truncate(Some(path), count(next(&mut it), "count")?)
        }
        ("p", 3 | 4) => WireOp::Splice {
            path: if n == 4 {
                Some(path_ref(next(&mut it))?)
            } else {
                None
            },
            index: count(next(&mut it), "index")?,
            remove: count(next(&mut it), "remove")?,
            items: items(next(&mut it))?,
        },
        ("r", _) => return Err(arity(&verb, it.as_slice(), "2")),
        ("#", _) => return Err(arity(&verb, it.as_slice(), "3")),
        ("s" | "a" | "t", _) => return Err(arity(&verb, it.as_slice(), "2 or 3")),
        ("d", _) => return Err(arity(&verb, it.as_slice(), "1 or 2")),
        ("p", _) => return Err(arity(&verb, it.as_slice(), "4 or 5")),
        _ => return Err(ErrorKind::UnknownVerb(verb).into()),
    };
    Ok(op)
}

/// One element of a wire op tuple after the verb, as the streaming parser (`wire::de`) read it.
pub(crate) enum Elem {
    /// Read whole.
    Val(Value),
    /// Read where only a path reference (or, for `#`, a path) may stand.
    Ref(Ref),
    /// Read and dropped: only its JSON type is known.
    Skip(&'static str),
}

/// An element read as a path reference: an id, an inline path (checked as it was read), or
/// something else.
pub(crate) enum Ref {
    Number(Number),
    Path(Result<Path>),
    Other(&'static str),
}

/// Validates one wire op read by the streaming parser (`wire::de`): `verb`, its first elements
/// after the verb as read, and how many elements followed the verb. The same grammar, the same
/// order of checks and the same errors as [`wire_op`]; an element read without being built
/// (a check's payload) stands for a `null` value, an empty text or no items.
pub(crate) fn wire_op_from_elems(verb: String, elems: Vec<Elem>, n: usize) -> Result<WireOp> {
    let mut it = elems.into_iter();
    let mut next = || it.next().unwrap_or(Elem::Skip("null"));
    let op = match (verb.as_str(), n) {
        ("r", 1) => WireOp::Replace(elem_value(next())),
        ("#", 2) => WireOp::Define {
            id: elem_count(next(), "id")?,
            path: elem_path(next())?,
        },
        ("s", 1) => WireOp::Set(None, elem_value(next())),
        ("s", 2) => WireOp::Set(Some(elem_path_ref(next())?), elem_value(next())),
        ("d", 0) => WireOp::Delete(None),
        ("d", 1) => WireOp::Delete(Some(elem_path_ref(next())?)),
        ("a", 1) => WireOp::Append(None, elem_text(next())?),
        ("a", 2) => {
            let path = elem_path_ref(next())?;
            WireOp::Append(Some(path), elem_text(next())?)
        }
        ("t", 1) => WireOp::Truncate(None, elem_count(next(), "count")?),
        ("t", 2) => {
            let path = elem_path_ref(next())?;
            WireOp::Truncate(Some(path), elem_count(next(), "count")?)
        }
        ("p", 3 | 4) => WireOp::Splice {
            path: if n == 4 {
                Some(elem_path_ref(next())?)
            } else {
                None
            },
            index: elem_count(next(), "index")?,
            remove: elem_count(next(), "remove")?,
            items: elem_items(next())?,
        },
        ("r", _) => return Err(arity_of(&verb, n, "2")),
        ("#", _) => return Err(arity_of(&verb, n, "3")),
        ("s" | "a" | "t", _) => return Err(arity_of(&verb, n, "2 or 3")),
        ("d", _) => return Err(arity_of(&verb, n, "1 or 2")),
        ("p", _) => return Err(arity_of(&verb, n, "4 or 5")),
        _ => return Err(ErrorKind::UnknownVerb(verb).into()),
    };
    Ok(op)
}

fn arity_of(verb: &str, n: usize, expected: &'static str) -> Error {
    ErrorKind::Arity {
        verb: verb.to_owned(),
        found: n + 1,
        expected,
    }
    .into()
}

fn elem_value(elem: Elem) -> Value {
    match elem {
        Elem::Val(v) => v,
        Elem::Ref(_) | Elem::Skip(_) => Value::Null,
    }
}

fn elem_count(elem: Elem, field: &'static str) -> Result<usize> {
    match elem {
        Elem::Val(v) => count(v, field),
        Elem::Ref(Ref::Number(n)) => count(Value::Number(n), field),
        // Counts are always read whole (an error quotes them); nothing else reaches here.
        Elem::Ref(_) | Elem::Skip(_) => count(Value::Null, field),
    }
}

fn elem_path_ref(elem: Elem) -> Result<PathRef> {
    match elem {
        Elem::Val(v) => path_ref(v),
        Elem::Ref(Ref::Number(n)) => Ok(PathRef::Id(count(Value::Number(n), "id")?)),
        Elem::Ref(Ref::Path(p)) => Ok(PathRef::Path(p?)),
        Elem::Ref(Ref::Other(found)) | Elem::Skip(found) => Err(not_a_path(found)),
    }
}

fn elem_path(elem: Elem) -> Result<Path> {
    match elem {
        Elem::Val(v) => path(v),
        Elem::Ref(Ref::Number(_)) => Err(not_a_path("a number")),
        Elem::Ref(Ref::Path(p)) => p,
        Elem::Ref(Ref::Other(found)) | Elem::Skip(found) => Err(not_a_path(found)),
    }
}

fn elem_text(elem: Elem) -> Result<String> {
    match elem {
        Elem::Val(v) => text(v),
        Elem::Ref(Ref::Other("a string")) | Elem::Skip("a string") => Ok(String::new()),
        Elem::Ref(_) | Elem::Skip(_) => Err(ErrorKind::TextNotString.into()),
    }
}

fn elem_items(elem: Elem) -> Result<Vec<Value>> {
    match elem {
        Elem::Val(v) => items(v),
        Elem::Skip("an array") => Ok(Vec::new()),
        Elem::Ref(_) | Elem::Skip(_) => Err(ErrorKind::ItemsNotArray.into()),
    }
}

impl WireOp {
    /// Builds a wire op from its JSON tuple, validating it with the wire grammar.
    ///
    /// # Errors
    ///
    /// Unknown verb, wrong arity, a bad path, id or count, a reserved segment.
    pub fn from_value(value: Value) -> crate::Result<WireOp> {
        wire_op(value)
    }
}

impl<'de> Deserialize<'de> for WireOp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<WireOp, D::Error> {
        let value = Value::deserialize(d)?;
        wire_op(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_stop_where_javascript_numbers_stop_being_exact() {
        assert!(wire_op(json!(["#", 9_007_199_254_740_991u64, ["a"]])).is_ok());
        assert!(wire_op(json!(["#", 9_007_199_254_740_992u64, ["a"]])).is_err());
    }

    #[test]
    fn wire_grammar_is_separate() {
        assert!(wire_op(json!(["s", 1])).is_ok());
        assert!(crate::validate::op(json!(["s", 1])).is_err());
        assert!(matches!(
            wire_op(json!(["s", []])),
            Ok(WireOp::Set(None, Value::Array(_)))
        ));
        assert!(wire_op(json!(["#", 0, ["__proto__"]])).is_err());
        assert!(wire_op(json!(["a", 0, 5])).is_err());
    }
}
