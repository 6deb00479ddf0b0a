//! [`Patcher`]: a flush's ops as an RFC 6902 JSON Patch that applies strictly.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::Value;

use super::pointer::{element, end, pointer};
use crate::apply::{Applier, Limits};
use crate::error::{Error, ErrorKind};
use crate::op::Op;
use crate::path::{Path, Seg};

/// Turns each flush's ops into the RFC 6902 JSON Patch that takes the previous value to the
/// new one: the `delta` of an AG-UI `STATE_DELTA` event.
///
/// A flush's ops alone do not fix the patch: an `s` one past an array's end is an `add` but
/// at an existing index a `replace`; a `d` of a missing member is a no-op for chord and an
/// error for RFC 6902; `a` and `t` have no RFC 6902 form; `p` clamps its counts. So the
/// patcher keeps a mirror of the value, applies each op to it with chord's own applier, and
/// writes each op as what the mirror says it did:
///
/// | op | JSON Patch |
/// | --- | --- |
/// | `r` | `replace` of the root (`""`) |
/// | `s` of an existing member or element | `replace` |
/// | `s` of a new member | `add` |
/// | `s` one past an array's end | `add` at `/-` |
/// | `d` of a member or element | `remove` |
/// | `d` of a missing member | nothing |
/// | `a`, `t` | `replace` of the whole new string (nothing if the string is unchanged) |
/// | `p` | per element, with the counts clamped as chord clamps them: a `replace` for each element both removed and inserted, then a `remove` for each further element removed or an `add` for each further one inserted (`/-` at the end); one `replace` of the whole array when the splice rewrites all of it with more than one element |
///
/// A write of the location the operation just before it wrote is folded into that one (a
/// `t` then an `a` of one string, as a rolling window does, is one `replace`).
///
/// Applied strictly (every path exists, every `add` has its parent; what
/// [`json_patch::patch`] checks) to the value before the ops, the patch gives the value after
/// them. Keys are escaped as RFC 6901 says (`~` as `~0`, `/` as `~1`).
///
/// Cost: proportional to the ops' payloads and paths, like [`apply`](crate::apply), except
/// that `a` and `t` carry the whole new string (RFC 6902 has no string edit: stream text
/// that grows by appends as AG-UI text events instead). Memory: the mirror, one copy of the
/// state per patcher.
///
/// # Examples
///
/// ```
/// use chord::{ag_ui::Patcher, path, Op};
/// use serde_json::json;
///
/// let before = json!({"todo": ["a"], "answer": "Hel", "tags": {}});
/// let mut patcher = Patcher::new(before.clone());
/// let ops = [
///     Op::Set(path!["todo", 1], json!("b")),    // one past the end
///     Op::Append(path!["answer"], "lo".into()),  // no string edit in RFC 6902
///     Op::Delete(path!["tags", "gone"]),         // a missing member: nothing to say
///     Op::Set(path!["tags", "a/b"], json!(true)), // a new member, its key escaped
/// ];
/// let delta = patcher.patch(&ops).unwrap();
/// assert_eq!(serde_json::to_value(&delta).unwrap(), json!([
///     {"op": "add", "path": "/todo/-", "value": "b"},
///     {"op": "replace", "path": "/answer", "value": "Hello"},
///     {"op": "add", "path": "/tags/a~1b", "value": true},
/// ]));
/// let mut client = before;
/// json_patch::patch(&mut client, &delta).unwrap();
/// assert_eq!(client, json!({"todo": ["a", "b"], "answer": "Hello", "tags": {"a/b": true}}));
/// assert_eq!(&client, patcher.value());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Patcher {
    value: Value,
}

impl Patcher {
    /// A patcher for a client that holds `snapshot`: the value at the last flush (what the
    /// `STATE_SNAPSHOT` event carried).
    pub fn new(snapshot: Value) -> Patcher {
        Patcher { value: snapshot }
    }

    /// The mirror: the value the client holds once it has applied every patch so far.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The mirror, taken out of the patcher.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// The JSON Patch for one flush's ops (what [`Tracker::flush`](crate::Tracker::flush)
    /// returned), and the mirror moved on to the value after them. Empty when the ops change
    /// nothing a client can see.
    ///
    /// # Errors
    ///
    /// An op that does not apply to the mirror (a missing parent, a wrong type, an index
    /// past the end, a count that splits a character): the ops are not the next flush of the
    /// value this patcher mirrors. The error names the op's position and path. The call is
    /// atomic: on error the mirror is exactly what it was before it.
    ///
    /// ```
    /// use chord::{ag_ui::Patcher, path, Op};
    /// let mut patcher = Patcher::new(serde_json::json!({"xs": [1]}));
    /// let ops = [Op::Set(path!["xs", 1], 2.into()), Op::Set(path!["ys", 0], 1.into())];
    /// let err = patcher.patch(&ops).unwrap_err();
    /// assert_eq!(err.op_index(), 1);
    /// assert_eq!(err.to_string(), "op 1 at ys does not apply to the patcher's value: no such member or element");
    /// assert_eq!(patcher.value(), &serde_json::json!({"xs": [1]})); // unchanged
    /// ```
    pub fn patch(&mut self, ops: &[Op]) -> Result<Vec<PatchOperation>, PatchError> {
        let limits = unlimited();
        let mut applier = Applier::new(&limits);
        let mut doc = Some(std::mem::take(&mut self.value));
        let mut out = Vec::with_capacity(ops.len());
        let mut result = Ok(());
        for (i, op) in ops.iter().enumerate() {
            result = convert(&mut applier, &mut doc, i, op, &mut out);
            if result.is_err() {
                break;
            }
        }
        if result.is_err() {
            applier.rollback(&mut doc);
        }
        // The applier never takes the value away: only an `r` replaces it, with another.
        self.value = doc.unwrap_or(Value::Null);
        result.map(|()| out)
    }
}

/// The patcher mirrors what a tracker flushed, not input from outside: it refuses only what
/// cannot apply, never what is large.
fn unlimited() -> Limits {
    Limits::default()
        .max_depth(usize::MAX)
        .max_array_len(usize::MAX)
        .max_string_len(usize::MAX)
        .max_work(usize::MAX)
}

/// Op `i`: what it does, read from the mirror before it, written to `out`; then the op
/// applied to the mirror.
fn convert(
    applier: &mut Applier<'_>,
    doc: &mut Option<Value>,
    i: usize,
    op: &Op,
    out: &mut Vec<PatchOperation>,
) -> Result<(), PatchError> {
    if let Some(root) = doc.as_ref() {
        describe(root, op, out);
    }
    // On error the caller drops `out` whole, so what was written for this op goes too.
    applier
        .one(doc, i, op.clone())
        .map_err(|source| PatchError::new(i, op, source))?;
    // `a` and `t` say the whole new string, which exists only now.
    if let (Op::Append(path, _) | Op::Truncate(path, _), Some(root)) = (op, doc.as_ref()) {
        let unchanged = match op {
            Op::Append(_, text) => text.is_empty(),
            _ => matches!(op, Op::Truncate(_, 0)),
        };
        if !unchanged {
            if let Some(s) = get(root, path) {
                push_replace(out, pointer(path), s.clone());
            }
        }
    }
    Ok(())
}

/// The patch operations of `op` on `root` (the mirror before it), except those of `a` and
/// `t`, which need the value after it. An op that does not apply to `root` gets whatever is
/// written here, and the applier then refuses it.
fn describe(root: &Value, op: &Op, out: &mut Vec<PatchOperation>) {
    match op {
        Op::Replace(v) => push_replace(out, PointerBuf::new(), v.clone()),
        Op::Set(path, v) => {
            let (parent, last) = path.split_last();
            let value = v.clone();
            out.push(match get(root, parent) {
                Some(Value::Object(map)) if !map.contains_key(key(last).as_ref()) => {
                    add(pointer(path), value)
                }
                Some(Value::Array(arr)) if matches!(last, Seg::Index(i) if *i == arr.len()) => {
                    add(end(parent), value)
                }
                _ => {
                    push_replace(out, pointer(path), value);
                    return;
                }
            });
        }
        Op::Delete(path) => {
            let (parent, last) = path.split_last();
            let missing = match get(root, parent) {
                Some(Value::Object(map)) => !map.contains_key(key(last).as_ref()),
                _ => false,
            };
            if !missing {
                out.push(remove(pointer(path)));
            }
        }
        Op::Append(..) | Op::Truncate(..) => {}
        Op::Splice {
            path,
            index,
            remove: count,
            items,
        } => {
            let Some(Value::Array(arr)) = get(root, path) else {
                return;
            };
            splice(path, arr.len(), *index, *count, items, out);
        }
    }
}

/// A splice of an array of length `len`, its counts clamped as the applier clamps them.
fn splice(
    path: &Path,
    len: usize,
    index: usize,
    count: usize,
    items: &[Value],
    out: &mut Vec<PatchOperation>,
) {
    let index = index.min(len);
    let removed = count.min(len - index);
    let paired = removed.min(items.len());
    if index == 0 && removed == len && removed.max(items.len()) > 1 {
        // The whole array rewritten: one operation says it with no more than the items.
        push_replace(out, pointer(path), Value::Array(items.to_vec()));
        return;
    }
    for (k, item) in items[..paired].iter().enumerate() {
        push_replace(out, element(path, index + k), item.clone());
    }
    for _ in paired..removed {
        out.push(remove(element(path, index + paired)));
    }
    // The array's length before each insertion below is `len - removed + k`, so the
    // insertion lands at its end exactly when the splice's tail is empty.
    let at_end = index + removed == len;
    for (k, item) in items.iter().enumerate().skip(paired) {
        let at = if at_end {
            end(path)
        } else {
            element(path, index + k)
        };
        out.push(add(at, item.clone()));
    }
}

/// The value at `path` in `root`, walking own members and existing elements only (a
/// numeric segment on an object names the member spelled with its digits).
fn get<'v>(root: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    path.iter().try_fold(root, |at, seg| match (at, seg) {
        (Value::Object(map), seg) => map.get(key(seg).as_ref()),
        (Value::Array(arr), Seg::Index(i)) => arr.get(*i),
        _ => None,
    })
}

/// The member name a segment addresses on an object.
fn key(seg: &Seg) -> std::borrow::Cow<'_, str> {
    match seg {
        Seg::Key(k) => std::borrow::Cow::Borrowed(k.as_ref()),
        Seg::Index(i) => std::borrow::Cow::Owned(i.to_string()),
    }
}

/// Writes a `replace` of `path`, or, when the operation just before it wrote that same
/// path (an `add` or a `replace`), gives that one the new value instead: the two say no more
/// than the second value does, and a `t` then an `a` of one string (a rolling window) then
/// carries the string once.
fn push_replace(out: &mut Vec<PatchOperation>, path: PointerBuf, value: Value) {
    match out.last_mut() {
        Some(PatchOperation::Add(AddOperation { path: p, value: v }))
        | Some(PatchOperation::Replace(ReplaceOperation { path: p, value: v }))
            if *p == path =>
        {
            *v = value;
        }
        _ => out.push(replace(path, value)),
    }
}

fn add(path: PointerBuf, value: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation { path, value })
}

fn remove(path: PointerBuf) -> PatchOperation {
    PatchOperation::Remove(RemoveOperation { path })
}

fn replace(path: PointerBuf, value: Value) -> PatchOperation {
    PatchOperation::Replace(ReplaceOperation { path, value })
}

/// An op that does not apply to a [`Patcher`]'s mirror: which op, where, and why. The
/// patcher's value is then unchanged.
#[derive(Debug, thiserror::Error)]
#[error("op {index} at {} does not apply to the patcher's value: {}", display_path(.path), .source.kind())]
pub struct PatchError {
    index: usize,
    path: Option<Path>,
    source: Error,
}

impl PatchError {
    fn new(index: usize, op: &Op, source: Error) -> PatchError {
        // Where the applier stopped (a missing parent, say), else the op's own path.
        let path = source.path().or(op.path()).cloned();
        PatchError {
            index,
            path,
            source,
        }
    }

    /// The position of the op in the slice given to [`Patcher::patch`].
    pub fn op_index(&self) -> usize {
        self.index
    }

    /// Where in the value the op failed (a missing parent names the first segment that does
    /// not resolve); `None` for an `r`.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_ref()
    }

    /// Why: the applier's error kind, as [`apply`](crate::apply) would report it.
    pub fn kind(&self) -> &ErrorKind {
        self.source.kind()
    }
}

fn display_path(path: &Option<Path>) -> String {
    match path {
        Some(p) => p.to_string(),
        None => "the root".to_owned(),
    }
}
