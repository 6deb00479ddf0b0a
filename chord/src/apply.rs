//! The applier: six verbs over `serde_json::Value`, strict, safe and atomic per batch.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{Path, Seg};
use crate::utf16;
use crate::validate;

/// Bounds on what one batch may make of a document, so that a hostile producer cannot exhaust
/// the replica. Exceeding one is an [`ErrorKind::LimitExceeded`] error and the batch is rolled
/// back.
///
/// ```
/// use chord::{apply_with, path, Limits, Op};
/// let limits = Limits::default().max_depth(2);
/// let mut doc = Some(serde_json::json!({"a": {}}));
/// let op = Op::Set(path!["a", "b"], serde_json::json!({"c": 1}));
/// assert!(apply_with(&mut doc, [op], &limits).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    depth: usize,
    array_len: usize,
    string_len: usize,
}

impl Default for Limits {
    /// Nesting depth 120, arrays up to 16,777,216 elements, strings up to 256 MiB.
    ///
    /// The depth leaves room under serde_json's parser limit (128 levels) for the batch and
    /// op tuple that carry a document on the wire, so any document `apply` accepts can also
    /// be encoded and decoded.
    fn default() -> Self {
        Limits {
            depth: 120,
            array_len: 1 << 24,
            string_len: 256 << 20,
        }
    }
}

impl Limits {
    /// Maximum nesting of objects and arrays in the resulting document.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Maximum length of any array an op grows.
    pub fn max_array_len(mut self, len: usize) -> Self {
        self.array_len = len;
        self
    }

    /// Maximum length, in bytes, of any string an op grows.
    pub fn max_string_len(mut self, len: usize) -> Self {
        self.string_len = len;
        self
    }
}

/// Something [`apply`] accepts as an op: an owned [`Op`] (its payload is moved into the
/// document) or a `&Op` (its payload is cloned).
pub trait IntoOp: sealed::Sealed {
    #[doc(hidden)]
    fn into_op(self) -> Op;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Op {}
    impl Sealed for &crate::Op {}
}

impl IntoOp for Op {
    fn into_op(self) -> Op {
        self
    }
}

impl IntoOp for &Op {
    fn into_op(self) -> Op {
        self.clone()
    }
}

/// Applies a batch of ops to a document, atomically, with the default [`Limits`].
///
/// `target` is `None` when the stream has no value yet; only an `r` can give it one. An `r`
/// replaces the value outright, so `target` holds the new value afterwards. Reserved path
/// segments are refused here too, even on ops built in memory.
///
/// Rules: `s` writes a member, an existing element, or the element exactly one past the end
/// (a gap is an error, so one op can never allocate a huge array); `d` removes a member (a
/// missing one is a no-op) or an element (the rest shift down); `a` and `t` need an existing
/// string, and `t` counts UTF-16 code units and refuses to split a surrogate pair; `p` needs
/// an array (the root included) and clamps its index and remove count to the length; a
/// numeric segment on an object names the member spelled with those digits; a string segment
/// on an array is an error; missing parents are errors, never created.
///
/// Cost: proportional to the ops' payloads and path depths, not to the document's size
/// (except `t` and `p`, which shift the string's or array's tail).
///
/// # Errors
///
/// The first op that cannot apply, with its position in the batch and the path. The batch is
/// atomic: on error, `target` is exactly what it was before the call.
///
/// # Examples
///
/// ```
/// use chord::{apply, path, Op};
/// use serde_json::json;
/// let mut doc = None;
/// apply(&mut doc, [
///     Op::Replace(json!({"out": "abcdef", "xs": [1]})),
///     Op::Truncate(path!["out"], 3),
///     Op::Append(path!["out"], "xyz".into()),
///     Op::Splice { path: path!["xs"].into(), index: 1, remove: 0, items: vec![json!(2)] },
/// ]).unwrap();
/// assert_eq!(doc, Some(json!({"out": "defxyz", "xs": [1, 2]})));
/// ```
pub fn apply<I>(target: &mut Option<Value>, ops: I) -> Result<()>
where
    I: IntoIterator,
    I::Item: IntoOp,
{
    apply_with(target, ops, &Limits::default())
}

/// [`apply`] with explicit [`Limits`].
///
/// # Errors
///
/// As [`apply`], plus [`ErrorKind::LimitExceeded`].
pub fn apply_with<I>(target: &mut Option<Value>, ops: I, limits: &Limits) -> Result<()>
where
    I: IntoIterator,
    I::Item: IntoOp,
{
    let mut undo = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        let op = op.into_op();
        let path = op.path().cloned();
        let result = validate::check_paths(&op).and_then(|()| step(target, op, limits, &mut undo));
        if let Err(e) = result {
            rollback(target, undo);
            let e = e.at_op(i);
            return Err(match (e.path().is_some(), path) {
                (false, Some(p)) => e.at_path(p),
                _ => e,
            });
        }
    }
    Ok(())
}

/// How to put back what one op changed.
enum Undo {
    Root(Option<Value>),
    /// A member was set; `None` means it did not exist (it was added at the end).
    SetKey(Path, String, Option<Value>),
    /// An element was set; `None` means it was pushed one past the end.
    SetIndex(Path, usize, Option<Value>),
    DeleteKey(Path, usize, String, Value),
    DeleteIndex(Path, usize, Value),
    /// The string's byte length before an append.
    Append(Path, usize),
    /// The prefix a truncate removed.
    Truncate(Path, String),
    /// Where a splice happened, how many items it inserted, what it removed.
    Splice(Path, usize, usize, Vec<Value>),
}

fn rollback(target: &mut Option<Value>, undo: Vec<Undo>) {
    for u in undo.into_iter().rev() {
        if let Undo::Root(previous) = u {
            *target = previous;
            continue;
        }
        let Some(root) = target.as_mut() else {
            continue;
        };
        // Every step below re-walks a path that the forward op just walked; after undoing
        // the later ops the document is in the same shape again, so the walks succeed.
        match u {
            Undo::Root(_) => {}
            Undo::SetKey(parent, key, previous) => {
                if let Ok(Value::Object(map)) = walk(root, &parent) {
                    match previous {
                        Some(v) => {
                            map.insert(key, v);
                        }
                        None => {
                            map.shift_remove(&key);
                        }
                    }
                }
            }
            Undo::SetIndex(parent, index, previous) => {
                if let Ok(Value::Array(arr)) = walk(root, &parent) {
                    match previous {
                        Some(v) if index < arr.len() => arr[index] = v,
                        Some(_) => {}
                        None => {
                            arr.pop();
                        }
                    }
                }
            }
            Undo::DeleteKey(parent, position, key, value) => {
                if let Ok(Value::Object(map)) = walk(root, &parent) {
                    let position = position.min(map.len());
                    map.shift_insert(position, key, value);
                }
            }
            Undo::DeleteIndex(parent, index, value) => {
                if let Ok(Value::Array(arr)) = walk(root, &parent) {
                    arr.insert(index.min(arr.len()), value);
                }
            }
            Undo::Append(path, len) => {
                if let Ok(Value::String(s)) = walk(root, &path) {
                    s.truncate(len);
                }
            }
            Undo::Truncate(path, mut removed) => {
                if let Ok(Value::String(s)) = walk(root, &path) {
                    removed.push_str(s);
                    *s = removed;
                }
            }
            Undo::Splice(path, index, inserted, removed) => {
                if let Ok(Value::Array(arr)) = walk(root, &path) {
                    let end = (index + inserted).min(arr.len());
                    arr.splice(index.min(end)..end, removed);
                }
            }
        }
    }
}

fn step(target: &mut Option<Value>, op: Op, limits: &Limits, undo: &mut Vec<Undo>) -> Result<()> {
    if let Op::Replace(v) = op {
        check_depth(&v, 0, limits)?;
        undo.push(Undo::Root(target.replace(v)));
        return Ok(());
    }
    let root = target.as_mut().ok_or(ErrorKind::NoValue)?;
    match op {
        Op::Replace(_) => unreachable!("handled above"),
        Op::Set(path, value) => {
            let (parent_segs, last) = path.split_last();
            check_depth(&value, path.len(), limits)?;
            let parent_path = Path::from(parent_segs.to_vec());
            match walk(root, &parent_path)? {
                Value::Object(map) => {
                    let key = key_of(last);
                    let previous = match map.get_mut(key.as_ref()) {
                        Some(slot) => Some(std::mem::replace(slot, value)),
                        None => {
                            map.insert(key.clone().into_owned(), value);
                            None
                        }
                    };
                    undo.push(Undo::SetKey(parent_path, key.into_owned(), previous));
                }
                Value::Array(arr) => {
                    let index = index_of(last, arr.len())?;
                    if index == arr.len() {
                        check_len(arr.len() + 1, limits)?;
                        arr.push(value);
                        undo.push(Undo::SetIndex(parent_path, index, None));
                    } else {
                        let previous = std::mem::replace(&mut arr[index], value);
                        undo.push(Undo::SetIndex(parent_path, index, Some(previous)));
                    }
                }
                other => return Err(not_a_container(other)),
            }
        }
        Op::Delete(path) => {
            let (parent_segs, last) = path.split_last();
            let parent_path = Path::from(parent_segs.to_vec());
            match walk(root, &parent_path)? {
                Value::Object(map) => {
                    let key = key_of(last);
                    if let Some(position) = map.keys().position(|k| *k == key) {
                        if let Some((k, v)) = map.shift_remove_entry(key.as_ref()) {
                            undo.push(Undo::DeleteKey(parent_path, position, k, v));
                        }
                    }
                }
                Value::Array(arr) => {
                    let index = index_of(last, arr.len())?;
                    if index == arr.len() {
                        return Err(ErrorKind::IndexOutOfRange {
                            index,
                            len: arr.len(),
                        }
                        .into());
                    }
                    let removed = arr.remove(index);
                    undo.push(Undo::DeleteIndex(parent_path, index, removed));
                }
                other => return Err(not_a_container(other)),
            }
        }
        Op::Append(path, text) => {
            let s = string_at(root, &path)?;
            // Only growth is bounded: an empty append leaves an over-long string alone.
            if !text.is_empty() && s.len() + text.len() > limits.string_len {
                return Err(limit("max_string_len", limits.string_len));
            }
            let len = s.len();
            s.push_str(&text);
            undo.push(Undo::Append(path.into(), len));
        }
        Op::Truncate(path, count) => {
            let s = string_at(root, &path)?;
            let cut = utf16::byte_offset(s, count)
                .map_err(|()| Error::from(ErrorKind::SplitsCharacter { count }))?;
            let removed: String = s.drain(..cut).collect();
            undo.push(Undo::Truncate(path.into(), removed));
        }
        Op::Splice {
            path,
            index,
            remove,
            items,
        } => {
            for item in &items {
                check_depth(item, path.len() + 1, limits)?;
            }
            let arr = match walk(root, &path)? {
                Value::Array(arr) => arr,
                other => {
                    return Err(ErrorKind::NotAnArray {
                        found: json_type(other),
                    }
                    .into())
                }
            };
            let index = index.min(arr.len());
            let remove = remove.min(arr.len() - index);
            // Only growth is bounded: a splice that shrinks an over-long array (one an `r`
            // brought in, say) must still apply.
            if items.len() > remove {
                check_len(arr.len() - remove + items.len(), limits)?;
            }
            let inserted = items.len();
            let removed: Vec<Value> = arr.splice(index..index + remove, items).collect();
            undo.push(Undo::Splice(path, index, inserted, removed));
        }
    }
    Ok(())
}

/// Walks `path` from `root`, through own members and existing elements only.
fn walk<'v>(root: &'v mut Value, path: &[Seg]) -> Result<&'v mut Value> {
    let mut at = root;
    for (depth, seg) in path.iter().enumerate() {
        let here =
            |kind: ErrorKind| Error::from(kind).at_path(path[..=depth].iter().cloned().collect());
        at = match at {
            Value::Object(map) => map
                .get_mut(key_of(seg).as_ref())
                .ok_or_else(|| here(ErrorKind::Missing))?,
            Value::Array(arr) => match seg {
                Seg::Key(_) => return Err(here(ErrorKind::KeyOnArray)),
                Seg::Index(i) => {
                    let len = arr.len();
                    arr.get_mut(*i)
                        .ok_or_else(|| here(ErrorKind::IndexOutOfRange { index: *i, len }))?
                }
            },
            other => {
                return Err(here(ErrorKind::NotAContainer {
                    found: json_type(other),
                }))
            }
        };
    }
    Ok(at)
}

fn string_at<'v>(root: &'v mut Value, path: &[Seg]) -> Result<&'v mut String> {
    match walk(root, path)? {
        Value::String(s) => Ok(s),
        other => Err(ErrorKind::NotAString {
            found: json_type(other),
        }
        .into()),
    }
}

/// The member name a segment addresses on an object.
fn key_of(seg: &Seg) -> Cow<'_, str> {
    match seg {
        Seg::Key(k) => Cow::Borrowed(k.as_ref()),
        Seg::Index(i) => Cow::Owned(i.to_string()),
    }
}

/// The element a segment addresses on an array of length `len`: existing, or one past the end.
fn index_of(seg: &Seg, len: usize) -> Result<usize> {
    match seg {
        Seg::Key(_) => Err(ErrorKind::KeyOnArray.into()),
        Seg::Index(i) if *i <= len => Ok(*i),
        Seg::Index(i) => Err(ErrorKind::IndexOutOfRange { index: *i, len }.into()),
    }
}

fn not_a_container(v: &Value) -> Error {
    ErrorKind::NotAContainer {
        found: json_type(v),
    }
    .into()
}

fn limit(limit: &'static str, max: usize) -> Error {
    ErrorKind::LimitExceeded { limit, max }.into()
}

fn check_len(len: usize, limits: &Limits) -> Result<()> {
    if len > limits.array_len {
        return Err(limit("max_array_len", limits.array_len));
    }
    Ok(())
}

/// Checks that `value`, placed `at` containers deep, keeps the document within the depth
/// limit. Iterative, so a hostile value cannot overflow the stack here.
fn check_depth(value: &Value, at: usize, limits: &Limits) -> Result<()> {
    let mut stack: Vec<(&Value, usize)> = vec![(value, at)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth + 1 > limits.depth {
            return Err(limit("max_depth", limits.depth));
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    Ok(())
}
