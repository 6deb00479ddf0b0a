//! The decoded grammar ([`Op`]) and the pieces every grammar shares: paths, counts, texts.
//!
//! Untrusted JSON stops here. The wire grammar (`wire::grammar`) is built on these pieces and
//! has its own validator: a decoded op is never checked against the laxer wire grammar, where
//! `["s", value]` is a valid short form.

use serde::de::{Deserialize, Deserializer};
use serde_json::{Number, Value};

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path, Seg, MAX_PATH_SEGMENTS};
use crate::safe_integer;

/// Parses a batch of decoded ops from JSON text, validating every op.
///
/// The decoded grammar: a batch is an array of ops; each op is an array whose first element
/// is one of the six verbs, with exactly the arity the verb takes; a path is an array of
/// strings and non-negative integers, non-empty except for `p`, with no reserved segment
/// (`__proto__`, `constructor`, `prototype`) anywhere; index, remove and truncate counts are
/// non-negative integers; append text is a string and splice items an array. Wire forms
/// (interned ids, `#` definitions, short forms) are refused: decode them with a
/// [`Decoder`](crate::Decoder). Values are not inspected: a reserved name is fine as a key
/// inside a value.
///
/// # Errors
///
/// The first violation, with the op's position in the batch.
///
/// ```
/// let err = chord::parse_batch(r#"[["s",["a"],1],["zz",["a"]]]"#).unwrap_err();
/// assert_eq!(err.op_index(), Some(1));
/// assert_eq!(err.to_string(), r#"op 1: unknown verb "zz" (expected one of r, s, d, a, t, p)"#);
///
/// let err = chord::parse_batch(r#"[["p",["xs"],0,0,"not-an-array"]]"#).unwrap_err();
/// assert_eq!(err.to_string(), "op 0: splice items must be a JSON array");
/// ```
pub fn parse_batch(json: &str) -> Result<Vec<Op>> {
    batch_from_value(crate::json::value_from_str(json)?)
}

/// Like [`parse_batch`], from an already parsed JSON value.
///
/// # Errors
///
/// As [`parse_batch`].
pub fn batch_from_value(value: Value) -> Result<Vec<Op>> {
    each(value, op)
}

pub(crate) fn each<T>(value: Value, f: fn(Value) -> Result<T>) -> Result<Vec<T>> {
    let Value::Array(items) = value else {
        return Err(ErrorKind::NotABatch.into());
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| f(v).map_err(|e| e.at_op(i)))
        .collect()
}

/// Splits an op tuple into its verb and remaining elements.
pub(crate) fn tuple(value: Value) -> Result<(String, Vec<Value>)> {
    let Value::Array(mut items) = value else {
        return Err(ErrorKind::NotATuple.into());
    };
    if items.is_empty() {
        return Err(ErrorKind::MissingVerb.into());
    }
    match items.remove(0) {
        Value::String(verb) => Ok((verb, items)),
        _ => Err(ErrorKind::MissingVerb.into()),
    }
}

pub(crate) fn arity(verb: &str, args: &[Value], expected: &'static str) -> Error {
    ErrorKind::Arity {
        verb: verb.to_owned(),
        found: args.len() + 1,
        expected,
    }
    .into()
}

/// Validates one decoded op.
pub(crate) fn op(value: Value) -> Result<Op> {
    let (verb, args) = tuple(value)?;
    let mut it = args.into_iter();
    let n = it.len();
    let op = match (verb.as_str(), n) {
        ("r", 1) => Op::Replace(next(&mut it)),
        ("s", 2) => Op::Set(non_empty(decoded_path(next(&mut it))?, 's')?, next(&mut it)),
        ("d", 1) => Op::Delete(non_empty(decoded_path(next(&mut it))?, 'd')?),
        ("a", 2) => {
            let path = non_empty(decoded_path(next(&mut it))?, 'a')?;
            Op::Append(path, text(next(&mut it))?)
        }
        ("t", 2) => {
            let path = non_empty(decoded_path(next(&mut it))?, 't')?;
            Op::Truncate(path, count(next(&mut it), "count")?)
        }
        ("p", 4) => Op::Splice {
            path: decoded_path(next(&mut it))?,
            index: count(next(&mut it), "index")?,
            remove: count(next(&mut it), "remove")?,
            items: items(next(&mut it))?,
        },
        ("#", _) => return Err(ErrorKind::WireForm("a `#` path definition").into()),
        ("s" | "a" | "t" | "p", k) if k + 1 == short_arity(&verb) => {
            return Err(ErrorKind::WireForm("a short form without a path").into())
        }
        ("d", 0) => return Err(ErrorKind::WireForm("a short form without a path").into()),
        ("r", _) => return Err(arity(&verb, it.as_slice(), "2")),
        ("s" | "a" | "t", _) => return Err(arity(&verb, it.as_slice(), "3")),
        ("d", _) => return Err(arity(&verb, it.as_slice(), "2")),
        ("p", _) => return Err(arity(&verb, it.as_slice(), "5")),
        _ => return Err(ErrorKind::UnknownVerb(verb).into()),
    };
    Ok(op)
}

fn short_arity(verb: &str) -> usize {
    match verb {
        "p" => 4,
        "d" => 1,
        _ => 2,
    }
}

pub(crate) fn next(it: &mut std::vec::IntoIter<Value>) -> Value {
    it.next().unwrap_or(Value::Null)
}

fn non_empty(path: Path, verb: char) -> Result<NonEmptyPath> {
    NonEmptyPath::try_from(path).map_err(|_| ErrorKind::EmptyPath { verb }.into())
}

fn decoded_path(value: Value) -> Result<Path> {
    match value {
        Value::Number(_) => Err(ErrorKind::WireForm("an interned path id").into()),
        v => path(v),
    }
}

/// Validates an inline path: an array of strings and non-negative integers, no reserved names.
pub(crate) fn path(value: Value) -> Result<Path> {
    let Value::Array(segs) = value else {
        return Err(not_a_path(json_type(&value)));
    };
    check_segments(segs.len())?;
    let mut out = Vec::with_capacity(segs.len());
    for (i, seg) in segs.into_iter().enumerate() {
        let seg = match seg {
            Value::String(k) => Seg::Key(k.into()),
            Value::Number(ref n) => match safe_integer::to_usize(n) {
                Some(n) => Seg::Index(n),
                None => return Err(bad_index(i, n)),
            },
            other => return Err(bad_segment(i, json_type(&other))),
        };
        if seg.is_reserved() {
            if let Seg::Key(segment) = seg {
                return Err(ErrorKind::ReservedSegment {
                    segment: segment.into_owned(),
                    position: i,
                }
                .into());
            }
        }
        out.push(seg);
    }
    Ok(Path::from(out))
}

/// Segment `i` of a path is a number but not an index.
pub(crate) fn bad_index(i: usize, n: &Number) -> Error {
    ErrorKind::InvalidPath(format!(
        "segment {i} is {n}; indices are non-negative integers up to 2^53 - 1"
    ))
    .into()
}

/// Segment `i` of a path is `found` (a JSON type), neither a string nor a number.
pub(crate) fn bad_segment(i: usize, found: &str) -> Error {
    ErrorKind::InvalidPath(format!(
        "segment {i} is {found}; segments are strings or non-negative integers"
    ))
    .into()
}

pub(crate) fn count(value: Value, field: &'static str) -> Result<usize> {
    match &value {
        Value::Number(n) => safe_integer::to_usize(n),
        _ => None,
    }
    .ok_or_else(|| {
        ErrorKind::InvalidCount {
            field,
            found: value.to_string(),
        }
        .into()
    })
}

pub(crate) fn text(value: Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(ErrorKind::TextNotString.into()),
    }
}

pub(crate) fn items(value: Value) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(ErrorKind::ItemsNotArray.into()),
    }
}

/// A path element that is not an array of segments.
pub(crate) fn not_a_path(found: &str) -> Error {
    ErrorKind::InvalidPath(format!("expected an array of segments, found {found}")).into()
}

/// Refuses a path longer than [`MAX_PATH_SEGMENTS`], before looking at its segments.
pub(crate) fn check_segments(len: usize) -> Result<()> {
    if len > MAX_PATH_SEGMENTS {
        return Err(ErrorKind::InvalidPath(format!(
            "{len} segments; a path has at most {MAX_PATH_SEGMENTS}"
        ))
        .into());
    }
    Ok(())
}

/// Checks an op built in memory (not parsed): its path must not be longer than
/// [`MAX_PATH_SEGMENTS`] nor walk through a reserved name.
pub(crate) fn check_paths(op: &Op) -> Result<()> {
    if let Some(path) = op.path() {
        check_segments(path.len())?;
        if let Some((position, segment)) = path.reserved_segment() {
            return Err(Error::from(ErrorKind::ReservedSegment {
                segment: segment.to_owned(),
                position,
            })
            .at_path(path.clone()));
        }
    }
    Ok(())
}

// The decoded grammar is `Op`'s `Deserialize` and `from_value`: parsing is validation, and
// it lives here, above the type it builds.

impl Op {
    /// Builds an op from its JSON tuple, validating it with the decoded grammar.
    ///
    /// # Errors
    ///
    /// Any violation of the grammar described at [`crate::parse_batch`].
    pub fn from_value(value: Value) -> crate::Result<Op> {
        op(value)
    }
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Op, D::Error> {
        let value = Value::deserialize(d)?;
        op(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(v: Value) -> ErrorKind {
        op(v).unwrap_err().kind().clone()
    }

    #[test]
    fn decoded_errors_say_what_is_wrong() {
        assert_eq!(kind(json!(["zz"])), ErrorKind::UnknownVerb("zz".into()));
        assert_eq!(kind(json!([])), ErrorKind::MissingVerb);
        assert_eq!(kind(json!({"op": "s"})), ErrorKind::NotATuple);
        assert_eq!(
            kind(json!(["s", ["a"], 1, 2])),
            ErrorKind::Arity {
                verb: "s".into(),
                found: 4,
                expected: "3"
            }
        );
        assert_eq!(
            kind(json!(["s", 0, 1])),
            ErrorKind::WireForm("an interned path id")
        );
        assert_eq!(
            kind(json!(["s", 1])),
            ErrorKind::WireForm("a short form without a path")
        );
        assert_eq!(kind(json!(["d", []])), ErrorKind::EmptyPath { verb: 'd' });
        assert_eq!(
            kind(json!(["s", ["x", "constructor"], 1])),
            ErrorKind::ReservedSegment {
                segment: "constructor".into(),
                position: 1
            }
        );
        assert_eq!(
            kind(json!(["t", ["a"], 1.5])),
            ErrorKind::InvalidCount {
                field: "count",
                found: "1.5".into()
            }
        );
    }

    #[test]
    fn counts_stop_where_javascript_numbers_stop_being_exact() {
        assert!(op(json!(["t", ["a"], 9_007_199_254_740_991u64])).is_ok());
        assert!(matches!(
            kind(json!(["t", ["a"], 9_007_199_254_740_992u64])),
            ErrorKind::InvalidCount { field: "count", .. }
        ));
        assert!(matches!(
            kind(json!(["s", ["xs", 9_007_199_254_740_992u64], 1])),
            ErrorKind::InvalidPath(_)
        ));
    }
}
