//! The op vocabulary: six verbs, always JSON tuples.

use std::fmt;

use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::Value;

use crate::path::{NonEmptyPath, Path, Seg};

/// One change to a JSON document.
///
/// In memory, on the wire and on disk an op is a JSON tuple; there is no keyed form:
///
/// | variant | JSON |
/// | --- | --- |
/// | `Replace(v)` | `["r", v]` |
/// | `Set(path, v)` | `["s", path, v]` |
/// | `Delete(path)` | `["d", path]` |
/// | `Append(path, text)` | `["a", path, text]` |
/// | `Truncate(path, n)` | `["t", path, n]` |
/// | `Splice { path, index, remove, items }` | `["p", path, index, remove, items]` |
///
/// `Set`, `Delete`, `Append` and `Truncate` take a [`NonEmptyPath`], so they cannot name the
/// root; only `Splice` may (a tracked value can itself be an array). Character counts in
/// `Truncate` are UTF-16 code units, so a JavaScript replica agrees.
///
/// Deserializing an op *is* validation: see [`crate::parse_batch`] for the rules and for
/// errors that name the op's position in its batch.
///
/// # Examples
///
/// ```
/// use chord::{path, Op};
/// let op = Op::Splice { path: path!["transcript"].into(), index: 3, remove: 0, items: vec![serde_json::json!({"role": "user"})] };
/// assert_eq!(serde_json::to_string(&op).unwrap(), r#"["p",["transcript"],3,0,[{"role":"user"}]]"#);
/// let back: Op = serde_json::from_str(r#"["p",["transcript"],3,0,[{"role":"user"}]]"#).unwrap();
/// assert_eq!(back, op);
/// assert!(serde_json::from_str::<Op>(r#"["s",["__proto__","x"],1]"#).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `["r", v]`: replace the whole value. The only op that starts a base batch.
    Replace(Value),
    /// `["s", path, v]`: set a member, an existing element, or the element one past the end.
    Set(NonEmptyPath, Value),
    /// `["d", path]`: delete a member (a missing member is a no-op) or remove an element.
    Delete(NonEmptyPath),
    /// `["a", path, text]`: append text to an existing string.
    Append(NonEmptyPath, String),
    /// `["t", path, n]`: drop `n` UTF-16 code units from the front of an existing string.
    Truncate(NonEmptyPath, usize),
    /// `["p", path, index, remove, items]`: remove `remove` elements at `index` and insert
    /// `items` there, like JavaScript's `Array.prototype.splice` (both clamp to the length).
    Splice {
        /// The array; may be the root.
        path: Path,
        /// Where to start.
        index: usize,
        /// How many elements to remove.
        remove: usize,
        /// What to insert.
        items: Vec<Value>,
    },
}

impl Op {
    /// The verb letter: `r`, `s`, `d`, `a`, `t` or `p`.
    pub fn verb(&self) -> char {
        match self {
            Op::Replace(_) => 'r',
            Op::Set(..) => 's',
            Op::Delete(_) => 'd',
            Op::Append(..) => 'a',
            Op::Truncate(..) => 't',
            Op::Splice { .. } => 'p',
        }
    }

    /// The path the op applies to; `None` for `r`.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Op::Replace(_) => None,
            Op::Set(p, _) | Op::Delete(p) | Op::Append(p, _) | Op::Truncate(p, _) => {
                Some(p.as_path())
            }
            Op::Splice { path, .. } => Some(path),
        }
    }

    /// The op as its JSON tuple.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The op re-rooted: the location at `from` becomes the location at `to`, so an op at or
    /// under `from` is the same change at or under `to` (its path's prefix `from` replaced by
    /// `to`). `None` when the op is not at or under `from`.
    ///
    /// One rule for the verbs, whatever the paths: an `r` is the `s` of the root (path `[]`).
    /// So an op that lands on the root is an `r` when it was an `s` or an `r`, stays a `p`
    /// (the root may be an array), and is `None` when it is a `d`, an `a` or a `t`, which no
    /// op expresses at the root; an `r` moved off the root is an `s` of `to`. Every other
    /// field of the op is kept.
    pub(crate) fn rerooted(self, from: &[Seg], to: &[Seg]) -> Option<Op> {
        let segments = match &self {
            Op::Replace(_) => &[][..],
            op => op.path()?.segments(),
        };
        let path: Path = to
            .iter()
            .chain(segments.strip_prefix(from)?)
            .cloned()
            .collect();
        Some(match self {
            Op::Replace(v) | Op::Set(_, v) => match NonEmptyPath::try_from(path) {
                Ok(p) => Op::Set(p, v),
                Err(_) => Op::Replace(v),
            },
            Op::Delete(_) => Op::Delete(path.try_into().ok()?),
            Op::Append(_, text) => Op::Append(path.try_into().ok()?, text),
            Op::Truncate(_, n) => Op::Truncate(path.try_into().ok()?, n),
            Op::Splice {
                index,
                remove,
                items,
                ..
            } => Op::Splice {
                path,
                index,
                remove,
                items,
            },
        })
    }
}

impl Serialize for Op {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_op(self, OpPath::Inline, s)
    }
}

/// How an op's path is written: inline, as an interned id, or omitted (wire short form).
#[derive(Clone, Copy, Debug)]
pub(crate) enum OpPath {
    Inline,
    Id(usize),
    Omitted,
}

pub(crate) fn serialize_op<S: Serializer>(op: &Op, form: OpPath, s: S) -> Result<S::Ok, S::Error> {
    let args = match op {
        Op::Replace(_) | Op::Set(..) | Op::Append(..) | Op::Truncate(..) => 1,
        Op::Delete(_) => 0,
        Op::Splice { .. } => 3,
    };
    let has_path = !matches!(op, Op::Replace(_)) && !matches!(form, OpPath::Omitted);
    let mut seq = s.serialize_seq(Some(1 + usize::from(has_path) + args))?;
    let verb = op.verb();
    seq.serialize_element(verb.encode_utf8(&mut [0; 4]) as &str)?;
    if has_path {
        match form {
            OpPath::Id(id) => seq.serialize_element(&id)?,
            _ => match op.path() {
                Some(p) => seq.serialize_element(p)?,
                None => unreachable!("has_path excludes r"),
            },
        }
    }
    match op {
        Op::Replace(v) | Op::Set(_, v) => seq.serialize_element(v)?,
        Op::Delete(_) => {}
        Op::Append(_, text) => seq.serialize_element(text)?,
        Op::Truncate(_, n) => seq.serialize_element(n)?,
        Op::Splice {
            index,
            remove,
            items,
            ..
        } => {
            seq.serialize_element(index)?;
            seq.serialize_element(remove)?;
            seq.serialize_element(items)?;
        }
    }
    seq.end()
}

/// Longest payload preview the readable form prints before eliding.
const PREVIEW: usize = 72;

struct Preview<'a>(&'a Value, bool);

impl fmt::Display for Preview<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = self.0.to_string();
        if self.1 || json.len() <= PREVIEW {
            return f.write_str(&json);
        }
        let mut cut = PREVIEW;
        while !json.is_char_boundary(cut) {
            cut -= 1;
        }
        write!(f, "{}… ({} bytes)", &json[..cut], json.len())
    }
}

/// The readable form, for logs and tools (the tuple stays the only data form).
///
/// Long payloads are elided to a preview; the alternate flag (`{:#}`) prints them whole.
///
/// ```
/// use chord::{path, Op};
/// assert_eq!(Op::Append(path!["messages", 0, "content"], "tok ".into()).to_string(),
///            r#"append messages[0].content += "tok ""#);
/// assert_eq!(Op::Truncate(path!["out"], 4).to_string(), "truncate out by 4");
/// assert_eq!(Op::Delete(path!["config", "model"]).to_string(), "delete config.model");
/// ```
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = f.alternate();
        match self {
            Op::Replace(v) => write!(f, "replace {}", Preview(v, full)),
            Op::Set(p, v) => write!(f, "set {p} = {}", Preview(v, full)),
            Op::Delete(p) => write!(f, "delete {p}"),
            Op::Append(p, text) => {
                let v = Value::String(text.clone());
                write!(f, "append {p} += {}", Preview(&v, full))
            }
            Op::Truncate(p, n) => write!(f, "truncate {p} by {n}"),
            Op::Splice {
                path,
                index,
                remove,
                items,
            } => {
                write!(f, "splice {path} at {index}: remove {remove}")?;
                if !items.is_empty() {
                    let v = Value::Array(items.clone());
                    write!(f, ", insert {} {}", items.len(), Preview(&v, full))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::path;

    fn segs(p: Path) -> Vec<Seg> {
        p.segments().to_vec()
    }

    fn splice(path: Path) -> Op {
        Op::Splice {
            path,
            index: 1,
            remove: 2,
            items: vec![json!(3)],
        }
    }

    #[test]
    fn the_prefix_is_replaced_and_the_rest_kept() {
        let from = segs(path!["state"].into());
        let to = segs(path!["runs", 0].into());
        let cases = [
            (
                Op::Set(path!["state", "n"], json!(1)),
                Op::Set(path!["runs", 0, "n"], json!(1)),
            ),
            (
                Op::Delete(path!["state", 2]),
                Op::Delete(path!["runs", 0, 2]),
            ),
            (
                Op::Append(path!["state", "text"], "tok".into()),
                Op::Append(path!["runs", 0, "text"], "tok".into()),
            ),
            (
                Op::Truncate(path!["state", "text"], 4),
                Op::Truncate(path!["runs", 0, "text"], 4),
            ),
            (
                splice(path!["state", "xs"].into()),
                splice(path!["runs", 0, "xs"].into()),
            ),
            (
                splice(path!["state"].into()),
                splice(path!["runs", 0].into()),
            ),
        ];
        for (op, moved) in cases {
            assert_eq!(op.clone().rerooted(&from, &to), Some(moved.clone()), "{op}");
            // ...and back.
            assert_eq!(moved.rerooted(&to, &from), Some(op));
        }
    }

    #[test]
    fn an_op_outside_the_prefix_is_none() {
        let from = segs(path!["state", "a"].into());
        for op in [
            Op::Set(path!["state", "b"], json!(1)),
            Op::Set(path!["state"], json!({})),
            Op::Delete(path!["messages"]),
            splice(Path::root()),
            Op::Replace(json!({})),
        ] {
            assert_eq!(op.clone().rerooted(&from, &[]), None, "{op}");
        }
    }

    #[test]
    fn a_set_of_the_root_is_a_replace_and_back() {
        let from = segs(path!["state"].into());
        assert_eq!(
            Op::Set(path!["state"], json!({"n": 1})).rerooted(&from, &[]),
            Some(Op::Replace(json!({"n": 1})))
        );
        assert_eq!(
            Op::Replace(json!({"n": 1})).rerooted(&[], &from),
            Some(Op::Set(path!["state"], json!({"n": 1})))
        );
        assert_eq!(
            Op::Replace(json!(1)).rerooted(&[], &[]),
            Some(Op::Replace(json!(1)))
        );
        assert_eq!(
            splice(path!["state"].into()).rerooted(&from, &[]),
            Some(splice(Path::root()))
        );
    }

    #[test]
    fn what_the_root_cannot_take_is_none() {
        let from = segs(path!["state"].into());
        for op in [
            Op::Delete(path!["state"]),
            Op::Append(path!["state"], "x".into()),
            Op::Truncate(path!["state"], 1),
        ] {
            assert_eq!(op.clone().rerooted(&from, &[]), None, "{op}");
        }
    }
}
