//! The applier: six verbs over `serde_json::Value`, strict, safe and atomic per batch.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path, Seg};
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
    work: usize,
}

impl Default for Limits {
    /// Nesting depth 120, arrays up to 16,777,216 elements, strings up to 256 MiB, and
    /// 16,777,216 (2^24) units of work per batch (see [`Limits::max_work`]).
    ///
    /// The depth leaves room under serde_json's parser limit (128 levels) for the batch and
    /// op tuple that carry a document on the wire, so any document `apply` accepts can also
    /// be encoded and decoded.
    fn default() -> Self {
        Limits {
            depth: 120,
            array_len: 1 << 24,
            string_len: 256 << 20,
            work: 1 << 24,
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

    /// Maximum work one batch may do beyond reading its own payloads, so that a small batch
    /// cannot freeze a replica with ops that each cost the size of a large container.
    ///
    /// Units, per op (the JavaScript replica counts the same way):
    ///
    /// - every op but `r`: one per path segment walked, plus the length of every key in the
    ///   path (each is hashed at its step);
    /// - `d` of an element: the elements after it (they shift down);
    /// - `d` of a member: the members after it (object keys keep their order, so the later
    ///   ones shift; deleting the last member costs nothing);
    /// - `p`: the items removed and inserted, plus the tail after them when the array's
    ///   length changes (it shifts);
    /// - `t`: the bytes left after the cut (they shift to the front);
    /// - `s`, `a` and `r` cost nothing beyond the walk: their cost is their payload's size.
    ///
    /// A batch that goes over is refused with [`ErrorKind::LimitExceeded`] (`max_work`) and
    /// rolled back; the rollback costs at most what the batch did. An honest producer stays
    /// far below: the tracker emits one splice per array, a `t` per string, and clears a map
    /// from its last member backwards.
    ///
    /// ```
    /// use chord::{apply_with, path, ErrorKind, Limits, Op};
    /// let front = || Op::Delete(path!["xs", 0]);
    /// // Each delete walks "xs" (1 + 2) and 0 (1), then shifts the elements after it: 4 + 3,
    /// // then 4 + 2: 13 units for the two.
    /// let mut doc = Some(serde_json::json!({"xs": [1, 2, 3, 4]}));
    /// let err = apply_with(&mut doc, [front(), front()], &Limits::default().max_work(12))
    ///     .unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::LimitExceeded { limit: "max_work", max: 12 }));
    /// assert_eq!(doc, Some(serde_json::json!({"xs": [1, 2, 3, 4]}))); // rolled back
    /// apply_with(&mut doc, [front(), front()], &Limits::default().max_work(13)).unwrap();
    /// assert_eq!(doc, Some(serde_json::json!({"xs": [3, 4]})));
    /// ```
    pub fn max_work(mut self, units: usize) -> Self {
        self.work = units;
        self
    }

    /// Refuses `value` placed `at` containers deep when the document would nest deeper than
    /// the limit: a bound an op breaks whatever document it meets. Checked by `apply` before
    /// it looks at the document, and by the stores before they acknowledge a batch.
    pub(crate) fn check_value(&self, value: &Value, at: usize) -> Result<()> {
        check_depth(value, at, self)
    }

    /// Refuses splice items that break a bound whatever array they meet: more items than an
    /// array may hold, or an item too deep for a path of `path_len` segments.
    pub(crate) fn check_items(&self, items: &[Value], path_len: usize) -> Result<()> {
        if items.len() > self.array_len {
            return Err(limit("max_array_len", self.array_len));
        }
        items
            .iter()
            .try_for_each(|item| check_depth(item, path_len + 1, self))
    }

    /// Refuses append text longer on its own than a string may be.
    pub(crate) fn check_text(&self, text: &str) -> Result<()> {
        if text.len() > self.string_len {
            return Err(limit("max_string_len", self.string_len));
        }
        Ok(())
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
/// Cost: proportional to the ops' payloads and paths, plus the shifting that `d`, `t` and
/// `p` do inside one container, which [`Limits::max_work`] bounds per batch. Never
/// proportional to the document's size otherwise.
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
    let mut budget = Budget {
        used: 0,
        max: limits.work,
    };
    let mut ops = ops.into_iter().map(IntoOp::into_op).enumerate().peekable();
    while let Some((i, op)) = ops.next() {
        let result = match op {
            // Deletes under one parent go together: a run of member deletes (a map being
            // cleared, say) is one ordered pass over the object.
            Op::Delete(first) => {
                let mut run = vec![first];
                while let Some((_, Op::Delete(next))) = ops.next_if(|(_, next)| {
                    matches!(next, Op::Delete(p) if p.split_last().0 == run[0].split_last().0)
                }) {
                    run.push(next);
                }
                delete_run(target, &run, limits, &mut budget, &mut undo)
                    .map_err(|(k, e)| (i + k, e, Some(run[k].as_path().clone())))
            }
            op => {
                let path = op.path().cloned();
                validate::check_paths(&op)
                    .and_then(|()| step(target, op, limits, &mut budget, &mut undo))
                    .map_err(|e| (i, e, path))
            }
        };
        if let Err((i, e, path)) = result {
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

/// Runs at least this long of member deletes under one object take one ordered pass over it
/// (`O(members + run)`); shorter ones delete one by one (`O(members after each)`), which is
/// cheaper near the end of a large object.
const DELETE_RUN: usize = 16;

/// Applies `d` ops that share a parent. On an object with a long enough run, one pass removes
/// every named member, keeping the others' order; otherwise each op applies on its own.
///
/// An error comes with the position in the run of the op it concerns.
fn delete_run(
    target: &mut Option<Value>,
    run: &[NonEmptyPath],
    limits: &Limits,
    budget: &mut Budget,
    undo: &mut Vec<Undo>,
) -> std::result::Result<(), (usize, Error)> {
    let (parent, _) = run[0].split_last();
    let is_object = |target: &mut Option<Value>| {
        matches!(
            target.as_mut().map(|root| walk(root, parent)),
            Some(Ok(Value::Object(_)))
        )
    };
    if run.len() < DELETE_RUN || !is_object(target) {
        for (k, path) in run.iter().enumerate() {
            let op = Op::Delete(path.clone());
            validate::check_paths(&op)
                .and_then(|()| step(target, op, limits, budget, undo))
                .map_err(|e| (k, e))?;
        }
        return Ok(());
    }
    for (k, path) in run.iter().enumerate() {
        validate::check_paths(&Op::Delete(path.clone()))
            .and_then(|()| budget.spend(walk_cost(path)))
            .map_err(|e| (k, e))?;
    }
    let Some(Ok(Value::Object(map))) = target.as_mut().map(|root| walk(root, parent)) else {
        unreachable!("checked above")
    };
    budget.spend(map.len()).map_err(|e| (run.len() - 1, e))?;
    let keys: std::collections::HashSet<Cow<'_, str>> =
        run.iter().map(|p| key_of(p.split_last().1)).collect();
    let mut removed = Vec::new();
    let mut position = 0;
    map.retain(|k, v| {
        let keep = !keys.contains(k.as_str());
        if !keep {
            removed.push((position, k.clone(), std::mem::take(v)));
        }
        position += 1;
        keep
    });
    if !removed.is_empty() {
        undo.push(Undo::DeleteKeys(run[0].as_path().clone(), removed));
    }
    Ok(())
}

/// How to put back what one op changed. Paths are the op's own (shared, not copied: see
/// [`Path`]); the parent of a member or element is every segment but the last.
enum Undo {
    Root(Option<Value>),
    /// A member was set; `None` means it did not exist (it was added at the end).
    SetKey(Path, Option<Value>),
    /// An element was set; `None` means it was pushed one past the end.
    SetIndex(Path, Option<Value>),
    /// A member was removed from this position.
    DeleteKey(Path, usize, String, Value),
    /// Members removed in one pass from the parent of this path, with their positions
    /// before the pass, in ascending order.
    DeleteKeys(Path, Vec<(usize, String, Value)>),
    DeleteIndex(Path, Value),
    /// The string's byte length before an append.
    Append(Path, usize),
    /// The prefix a truncate removed.
    Truncate(Path, String),
    /// Where a splice happened, how many items it inserted, what it removed.
    Splice(Path, usize, usize, Vec<Value>),
}

/// The parent segments and the last segment of a non-empty path.
fn split(path: &Path) -> Option<(&[Seg], &Seg)> {
    path.split_last().map(|(last, parent)| (parent, last))
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
        // the later ops the document is in the same shape again, so the walks succeed. Each
        // costs what its forward op cost, so a rollback stays within the work budget too.
        match u {
            Undo::Root(_) => {}
            Undo::SetKey(path, previous) => {
                let Some((parent, last)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    let key = key_of(last);
                    match previous {
                        Some(v) => {
                            map.insert(key.into_owned(), v);
                        }
                        None => {
                            // Added at the end, so this removes the last member: O(1).
                            map.shift_remove(key.as_ref());
                        }
                    }
                }
            }
            Undo::SetIndex(path, previous) => {
                let Some((parent, Seg::Index(index))) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Array(arr)) = walk(root, parent) {
                    match previous {
                        Some(v) if *index < arr.len() => arr[*index] = v,
                        Some(_) => {}
                        None => {
                            arr.pop();
                        }
                    }
                }
            }
            Undo::DeleteKey(path, position, key, value) => {
                let Some((parent, _)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    let position = position.min(map.len());
                    map.shift_insert(position, key, value);
                }
            }
            Undo::DeleteKeys(path, removed) => {
                let Some((parent, _)) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = walk(root, parent) {
                    // One merge of the kept and the removed members, in their old order.
                    let kept = std::mem::take(map);
                    let mut kept = kept.into_iter();
                    for (position, key, value) in removed {
                        while map.len() < position {
                            match kept.next() {
                                Some((k, v)) => map.insert(k, v),
                                None => break,
                            };
                        }
                        map.insert(key, value);
                    }
                    map.extend(kept);
                }
            }
            Undo::DeleteIndex(path, value) => {
                let Some((parent, Seg::Index(index))) = split(&path) else {
                    continue;
                };
                if let Ok(Value::Array(arr)) = walk(root, parent) {
                    arr.insert((*index).min(arr.len()), value);
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

/// The work one batch has done so far, against [`Limits::max_work`].
struct Budget {
    used: usize,
    max: usize,
}

impl Budget {
    fn spend(&mut self, units: usize) -> Result<()> {
        self.used = self.used.saturating_add(units);
        if self.used > self.max {
            return Err(limit("max_work", self.max));
        }
        Ok(())
    }
}

/// What walking a path costs: one unit per segment plus the length of every key, which is
/// hashed at each step.
fn walk_cost(path: &[Seg]) -> usize {
    path.iter()
        .map(|seg| match seg {
            Seg::Key(k) => 1 + k.len(),
            Seg::Index(_) => 1,
        })
        .sum()
}

fn step(
    target: &mut Option<Value>,
    op: Op,
    limits: &Limits,
    budget: &mut Budget,
    undo: &mut Vec<Undo>,
) -> Result<()> {
    if let Op::Replace(v) = op {
        limits.check_value(&v, 0)?;
        undo.push(Undo::Root(target.replace(v)));
        return Ok(());
    }
    let root = target.as_mut().ok_or(ErrorKind::NoValue)?;
    if let Some(path) = op.path() {
        budget.spend(walk_cost(path))?;
    }
    match op {
        Op::Replace(_) => unreachable!("handled above"),
        Op::Set(path, value) => {
            let (parent, last) = path.split_last();
            limits.check_value(&value, path.len())?;
            match walk(root, parent)? {
                Value::Object(map) => {
                    let key = key_of(last);
                    let previous = match map.get_mut(key.as_ref()) {
                        Some(slot) => Some(std::mem::replace(slot, value)),
                        None => {
                            map.insert(key.into_owned(), value);
                            None
                        }
                    };
                    undo.push(Undo::SetKey(path.into(), previous));
                }
                Value::Array(arr) => {
                    let index = index_of(last, arr.len())?;
                    if index == arr.len() {
                        check_len(arr.len() + 1, limits)?;
                        arr.push(value);
                        undo.push(Undo::SetIndex(path.into(), None));
                    } else {
                        let previous = std::mem::replace(&mut arr[index], value);
                        undo.push(Undo::SetIndex(path.into(), Some(previous)));
                    }
                }
                other => return Err(not_a_container(other)),
            }
        }
        Op::Delete(path) => {
            let (parent, last) = path.split_last();
            match walk(root, parent)? {
                Value::Object(map) => {
                    let key = key_of(last);
                    // A missing member is a no-op, found by hash alone.
                    let Some((found, _)) = map.get_key_value(key.as_ref()) else {
                        return Ok(());
                    };
                    // Its position, counted from the end by address: the members after it
                    // are exactly the ones the ordered removal shifts, so finding it costs no
                    // more than removing it (and deleting the last member is O(1)).
                    let found: *const String = found;
                    let after = map
                        .keys()
                        .rev()
                        .position(|k| std::ptr::eq(k, found))
                        .unwrap_or(0);
                    budget.spend(after)?;
                    let position = map.len() - 1 - after;
                    if let Some((k, v)) = map.shift_remove_entry(key.as_ref()) {
                        undo.push(Undo::DeleteKey(path.into(), position, k, v));
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
                    budget.spend(arr.len() - index - 1)?;
                    let removed = arr.remove(index);
                    undo.push(Undo::DeleteIndex(path.into(), removed));
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
            budget.spend(s.len() - cut)?;
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
                limits.check_value(item, path.len() + 1)?;
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
            let tail = if inserted == remove {
                0
            } else {
                arr.len() - index - remove
            };
            budget.spend(remove.saturating_add(inserted).saturating_add(tail))?;
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
