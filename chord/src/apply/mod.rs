//! The applier: six verbs over `serde_json::Value`, strict, safe and atomic per batch.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path, Seg};
use crate::utf16;
use crate::validate;

mod undo;
mod walk;

use undo::{Undo, UndoLog};
use walk::{key_of, walk};

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
    let mut applier = Applier::new(limits);
    for (i, op) in ops.into_iter().map(IntoOp::into_op).enumerate() {
        if let Err(e) = applier.op(target, i, op) {
            applier.rollback(target);
            return Err(e);
        }
    }
    applier.finish(target)
}

/// One batch being applied, op by op: what [`apply_with`] does for a list of ops, and what a
/// [`Decoder`](crate::Decoder) does as it reads a batch's text, so that the batch's ops are
/// never all held at once.
///
/// Every op goes through [`op`](Applier::op); then [`finish`](Applier::finish) ends the batch,
/// or [`rollback`](Applier::rollback) puts the document back as it was before the first op.
/// The memory it holds: the undo log (one entry per location changed, see [`undo`]) and the
/// members of a pending run of deletes (one entry per distinct member).
pub(crate) struct Applier<'l> {
    limits: &'l Limits,
    budget: Budget,
    undo: UndoLog,
    /// Deletes under one object, not yet applied: they are applied together when an op that
    /// is not one of them comes, or the batch ends.
    run: Option<DeleteRun>,
}

/// Consecutive `d` ops of members of one object.
struct DeleteRun {
    /// The ops: their first position in the batch, their path, and how many ops in a row
    /// named that same path.
    paths: Vec<(usize, NonEmptyPath, usize)>,
    /// Every op of the run, repeated paths included.
    ops: usize,
}

impl<'l> Applier<'l> {
    pub(crate) fn new(limits: &'l Limits) -> Applier<'l> {
        Applier {
            limits,
            budget: Budget {
                used: 0,
                max: limits.work,
            },
            undo: UndoLog::default(),
            run: None,
        }
    }

    /// Applies the op at position `i` of the batch (or holds it in a run of deletes).
    ///
    /// # Errors
    ///
    /// The first op that cannot apply (this one, or one of the run it ends), with its
    /// position and path. The document is then partly changed: call
    /// [`rollback`](Applier::rollback).
    pub(crate) fn op(&mut self, target: &mut Option<Value>, i: usize, op: Op) -> Result<()> {
        if let Op::Delete(path) = op {
            let parent = path.split_last().0;
            if let Some(run) = &mut self.run {
                let first = &run.paths[0].1;
                if first.split_last().0 == parent {
                    run.ops += 1;
                    match run.paths.last_mut() {
                        Some((_, last, count)) if *last == path => *count += 1,
                        _ => run.paths.push((i, path, 1)),
                    }
                    return Ok(());
                }
            }
            self.end_run(target)?;
            // Deletes under one object go together: a run of member deletes (a map being
            // cleared, say) is one ordered pass over the object.
            let of_object = matches!(
                target.as_mut().map(|root| walk(root, parent)),
                Some(Ok(Value::Object(_)))
            );
            if of_object {
                self.run = Some(DeleteRun {
                    paths: vec![(i, path, 1)],
                    ops: 1,
                });
                return Ok(());
            }
            return self.one(target, i, Op::Delete(path));
        }
        self.end_run(target)?;
        self.one(target, i, op)
    }

    /// Ends the batch: applies a pending run of deletes.
    ///
    /// # Errors
    ///
    /// As [`op`](Applier::op); on error the document is rolled back.
    pub(crate) fn finish(mut self, target: &mut Option<Value>) -> Result<()> {
        match self.end_run(target) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback(target);
                Err(e)
            }
        }
    }

    /// Puts `target` back as it was before the batch's first op.
    pub(crate) fn rollback(self, target: &mut Option<Value>) {
        self.undo.rollback(target);
    }

    /// Applies one op on its own, its error given its position and path. Never held in a run
    /// of deletes, so a caller that looks at the document between ops (the AG-UI patcher)
    /// sees each op's effect at once; [`rollback`](Applier::rollback) still undoes them all.
    pub(crate) fn one(&mut self, target: &mut Option<Value>, i: usize, op: Op) -> Result<()> {
        let path = op.path().cloned();
        validate::check_paths(&op)
            .and_then(|()| step(target, op, self.limits, &mut self.budget, &mut self.undo))
            .map_err(|e| positioned(e, i, path))
    }

    /// Applies the pending run of deletes, if any. A long enough run takes one ordered pass
    /// over its object, keeping the other members' order; a short one applies op by op.
    fn end_run(&mut self, target: &mut Option<Value>) -> Result<()> {
        let Some(run) = self.run.take() else {
            return Ok(());
        };
        if run.ops < DELETE_RUN {
            for (i, path, count) in run.paths {
                for k in 0..count {
                    self.one(target, i + k, Op::Delete(path.clone()))?;
                }
            }
            return Ok(());
        }
        let at = |e: Error, i: usize, path: &NonEmptyPath| {
            positioned(e, i, Some(path.as_path().clone()))
        };
        for (i, path, count) in &run.paths {
            for k in 0..*count {
                validate::check_paths(&Op::Delete(path.clone()))
                    .and_then(|()| self.budget.spend(walk_cost(path)))
                    .map_err(|e| at(e, i + k, path))?;
            }
        }
        let (last_at, last, count) = &run.paths[run.paths.len() - 1];
        let (parent, _) = run.paths[0].1.split_last();
        let Some(Ok(Value::Object(map))) = target.as_mut().map(|root| walk(root, parent)) else {
            unreachable!("a run starts only at an object, and its deletes have not changed it")
        };
        self.budget
            .spend(map.len())
            .map_err(|e| at(e, last_at + count - 1, last))?;
        let keys: std::collections::HashSet<Cow<'_, str>> = run
            .paths
            .iter()
            .map(|(_, p, _)| key_of(p.split_last().1))
            .collect();
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
            self.undo
                .push(Undo::DeleteKeys(run.paths[0].1.as_path().clone(), removed));
        }
        Ok(())
    }
}

/// `e` placed at op `i`, and at its path when it names none of its own.
fn positioned(e: Error, i: usize, path: Option<Path>) -> Error {
    let e = e.at_op(i);
    match (e.path().is_some(), path) {
        (false, Some(p)) => e.at_path(p),
        _ => e,
    }
}

/// Runs at least this long of member deletes under one object take one ordered pass over it
/// (`O(members + run)`); shorter ones delete one by one (`O(members after each)`), which is
/// cheaper near the end of a large object.
const DELETE_RUN: usize = 16;

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
    undo: &mut UndoLog,
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

fn string_at<'v>(root: &'v mut Value, path: &[Seg]) -> Result<&'v mut String> {
    match walk(root, path)? {
        Value::String(s) => Ok(s),
        other => Err(ErrorKind::NotAString {
            found: json_type(other),
        }
        .into()),
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
