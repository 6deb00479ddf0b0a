//! The structural diff: the ops that turn one JSON value into another, with the rules the
//! tracker's flush applies to a dirty subtree.
//!
//! A differ sees two values, not the mutations between them, so the rules recover intent
//! where the shape of the change shows it: a string that kept its front is an append, one
//! that kept a part of its tail at its front is a rolling window (see [`crate::overlap`]); an
//! array edited at one place is one splice, however long it is.

use serde_json::{Map, Value};

use crate::op::Op;
use crate::overlap::{overlap, overlap_at_least, OverlapConfig};
use crate::path::{NonEmptyPath, Path, Seg, Segments, RESERVED};
use crate::utf16;

/// The ops that turn `before` into `after`: replaying them with [`apply`](fn@crate::apply) on
/// `before` gives a value equal to `after`. Equal values give no ops.
///
/// The rules, applied from the root down:
///
/// - **Strings**: when `after` starts with all of `before`, an `a` of the rest. When it starts
///   with a suffix of `before` (a rolling window), a `t` of what was dropped (in UTF-16 code
///   units) then an `a` of what was added, if anything, unless one `s` of `after` is smaller
///   as JSON (a short string). Otherwise a `s`.
/// - **Objects**: a `d` for each member that is gone (in `before`'s order), then, in
///   `after`'s order, the diff of each member present in both and a `s` of each new one.
/// - **Arrays**: the common prefix and suffix are kept. What lies between is paired by
///   position: the pairs' diffs, then one splice inserting the extra elements or removing the
///   surplus. When nothing in between pairs up, or every pair would be replaced whole, it is
///   one splice instead: an insertion at the front is one `p`, however long the array.
/// - **Anything else** (a number, a change of type): a `s`.
///
/// At the root, where only `r` and `p` may go, a value that would be set whole is an `r`; so
/// is a root array rewritten entirely. Nested, an array rewritten entirely is a `s`. Ops
/// carry owned copies of `after`'s parts.
///
/// A member named like a [reserved](crate::RESERVED) segment cannot be addressed by a path,
/// so an object whose reserved members differ is set whole.
///
/// Object key order is not compared: values equal up to key order give no ops, and a replica
/// may hold its keys in another order (JSON objects are unordered).
///
/// Cost: proportional to the parts of the two values that are compared, at worst their size
/// (times their nesting depth, since a differing element is compared before it is diffed),
/// and to the size of the ops. A string pair costs a comparison of `before`, plus a bounded
/// probe when it is not an append.
///
/// # Examples
///
/// ```
/// use chord::{apply, diff, path, Op};
/// use serde_json::json;
///
/// let before = json!({"out": "abc: a rolling window of output", "items": [1, 2, 3], "done": false});
/// let after = json!({"out": ": a rolling window of outputxyz", "items": [0, 1, 2, 3], "done": true});
/// let ops = diff(&before, &after);
/// assert_eq!(ops, vec![
///     Op::Truncate(path!["out"], 3),
///     Op::Append(path!["out"], "xyz".into()),
///     Op::Splice { path: path!["items"].into(), index: 0, remove: 0, items: vec![json!(0)] },
///     Op::Set(path!["done"], json!(true)),
/// ]);
///
/// let mut replica = Some(before);
/// apply(&mut replica, &ops)?;
/// assert_eq!(replica, Some(after));
/// # Ok::<(), chord::Error>(())
/// ```
pub fn diff(before: &Value, after: &Value) -> Vec<Op> {
    let mut out = Vec::new();
    diff_into(&Path::root(), before, after, &mut out);
    out
}

/// [`diff`] of the subtree at `path`: appends to `out` the ops that turn `before` into
/// `after` where they live at `path` (the root is [`Path::root`]).
pub(crate) fn diff_into(path: &Path, before: &Value, after: &Value, out: &mut Vec<Op>) {
    let mut differ = Differ {
        segs: path.segments().to_vec(),
        cfg: OverlapConfig::default(),
        out,
    };
    differ.value(before, after);
}

fn string_ops(
    path: &NonEmptyPath,
    before: &str,
    after: &str,
    cfg: &OverlapConfig,
    out: &mut Vec<Op>,
) {
    match string_edit(before, after, cfg) {
        StringEdit::Same => {}
        StringEdit::Set => out.push(Op::Set(path.clone(), Value::String(after.to_owned()))),
        StringEdit::Window { kept } => out.extend(window_ops(path, before, after, kept)),
    }
}

/// What turns one string into another, decided before any op is built (a `s` needs no
/// path copy when written straight to the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringEdit {
    /// The strings are equal: no op.
    Same,
    /// One `s` of the new string.
    Set,
    /// The old string's last `kept` bytes open the new one: [`window_ops`] says what to send.
    Window {
        /// Bytes of the old string kept, a character boundary of both.
        kept: usize,
    },
}

/// How the string `before` at `path` becomes `after` (see [`diff`]): nothing, an `a`, a `t`
/// and possibly an `a`, or a `s`, with the default overlap bounds. (The same edit as
/// [`diff`]'s, found without looking for overlaps too short to beat a `s` at `path`.)
pub(crate) fn diff_string_edit<P: Segments + ?Sized>(
    path: &P,
    before: &str,
    after: &str,
) -> StringEdit {
    let cfg = OverlapConfig::default();
    if before == after {
        return StringEdit::Same;
    }
    let kept = overlap_at_least(
        before,
        after,
        &cfg,
        least_useful_overlap(path.json_len(), after),
    );
    if kept == 0 && !before.is_empty() {
        return StringEdit::Set;
    }
    StringEdit::Window { kept }
}

/// A length in bytes below which an overlap of `after`'s front, followed by appended text,
/// loses to a `s` of `after` at `path` ([`usize::MAX`] when every one does).
///
/// With `kept` bytes kept, `P` the path's JSON length, `d` the digits of the `t`'s count (at
/// least 1) and `esc(x)` the length of `x` as escaped inside a JSON string: the `t` and `a` are
/// `["t",P,d]` and `["a",P,"rest"]`, the `s` is `["s",P,"kept"+"rest"]`, and the `s` is smaller
/// exactly when `esc(after[..kept]) < 7 + P + d`. So it is whenever `esc(after[..kept])`
/// is below `8 + P`; this returns the shortest prefix of `after` that reaches that, counting
/// `P` low (keys without their escapes) and `esc` high (6 for any byte that needs escaping).
fn least_useful_overlap(path_len: usize, after: &str) -> usize {
    let reach = 8 + path_len;
    let mut esc = 0;
    for (at, &b) in after.as_bytes().iter().enumerate() {
        esc += if crate::json_write::needs_escape(b) {
            6
        } else {
            1
        };
        if esc >= reach {
            return at + 1;
        }
    }
    usize::MAX
}

fn string_edit(before: &str, after: &str, cfg: &OverlapConfig) -> StringEdit {
    if before == after {
        return StringEdit::Same;
    }
    let kept = overlap(before, after, cfg);
    if kept == 0 && !before.is_empty() {
        return StringEdit::Set;
    }
    StringEdit::Window { kept }
}

/// The ops of a [`StringEdit::Window`] at `path`: a `t` of what was dropped and an `a` of
/// what was added, or one `s` of `after` when that is smaller.
pub(crate) fn window_ops(path: &NonEmptyPath, before: &str, after: &str, kept: usize) -> Vec<Op> {
    let dropped = &before[..before.len() - kept];
    let mut ops = Vec::with_capacity(2);
    if !dropped.is_empty() {
        ops.push(Op::Truncate(path.clone(), utf16::utf16_len(dropped)));
    }
    if after.len() > kept {
        ops.push(Op::Append(path.clone(), after[kept..].to_owned()));
    }
    smaller_than_set(path, after, ops)
}

/// `window` (a `t` and/or an `a` that turn the old string into `after`), or one `s` of
/// `after` when that is smaller as JSON. Only short strings can win as an `s` (the `t` and `a`
/// never carry more than the new text), so longer ones are not measured.
pub(crate) fn smaller_than_set(path: &NonEmptyPath, after: &str, window: Vec<Op>) -> Vec<Op> {
    let appended = match window.last() {
        Some(Op::Append(_, text)) => text.len(),
        _ => 0,
    };
    let truncates = matches!(window.first(), Some(Op::Truncate(..)));
    // An `a` alone is never larger than the `s` of the whole string.
    if !truncates || after.len() - appended > 256 {
        return window;
    }
    let whole = vec![Op::Set(path.clone(), Value::String(after.to_owned()))];
    if json_len(&whole) < json_len(&window) {
        whole
    } else {
        window
    }
}

/// The length of `ops` as JSON text with full paths (what a fresh decoder receives): the
/// measure by which two equivalent batches are compared, here and by the tracker's flush.
pub(crate) fn json_len(ops: &[Op]) -> usize {
    ops.iter()
        .map(|op| {
            serde_json::to_vec(op)
                .map(|v| v.len())
                .unwrap_or(usize::MAX / 2)
        })
        .sum()
}

/// Whether `value` is shorter than `room` bytes as compact JSON, found by writing at most
/// `room` of them.
pub(crate) fn json_fits<T: serde::Serialize + ?Sized>(value: &T, room: usize) -> bool {
    struct Within(usize);
    impl std::io::Write for Within {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            match self.0.checked_sub(bytes.len()) {
                Some(left) if left > 0 => {
                    self.0 = left;
                    Ok(bytes.len())
                }
                _ => Err(std::io::ErrorKind::WriteZero.into()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Within(room), value).is_ok()
}

/// One diff in progress: the path being visited (as a stack of segments) and the ops so far.
struct Differ<'o> {
    segs: Vec<Seg>,
    cfg: OverlapConfig,
    out: &'o mut Vec<Op>,
}

impl Differ<'_> {
    fn path(&self) -> Option<NonEmptyPath> {
        NonEmptyPath::try_from(Path::from(self.segs.clone())).ok()
    }

    /// `s` of the whole value here, or `r` at the root.
    fn set(&mut self, value: Value) {
        let op = match self.path() {
            Some(path) => Op::Set(path, value),
            None => Op::Replace(value),
        };
        self.out.push(op);
    }

    fn value(&mut self, before: &Value, after: &Value) {
        match (before, after) {
            (Value::String(b), Value::String(a)) if b == a => {}
            (Value::String(b), Value::String(a)) => match self.path() {
                Some(path) => string_ops(&path, b, a, &self.cfg, self.out),
                None => self.set(after.clone()),
            },
            (Value::Object(b), Value::Object(a)) => self.object(b, a),
            (Value::Array(b), Value::Array(a)) => self.array(b, a),
            _ if before == after => {}
            _ => self.set(after.clone()),
        }
    }

    fn child(&mut self, seg: Seg, before: &Value, after: &Value) {
        self.segs.push(seg);
        self.value(before, after);
        self.segs.pop();
    }

    fn object(&mut self, before: &Map<String, Value>, after: &Map<String, Value>) {
        if RESERVED.iter().any(|k| before.get(*k) != after.get(*k)) {
            self.set(Value::Object(after.clone()));
            return;
        }
        for key in before.keys() {
            if !after.contains_key(key) {
                self.segs.push(Seg::Key(key.clone().into()));
                if let Some(path) = self.path() {
                    self.out.push(Op::Delete(path));
                }
                self.segs.pop();
            }
        }
        for (key, a) in after {
            match before.get(key) {
                Some(b) => self.child(Seg::Key(key.clone().into()), b, a),
                None => {
                    self.segs.push(Seg::Key(key.clone().into()));
                    self.set(a.clone());
                    self.segs.pop();
                }
            }
        }
    }

    fn array(&mut self, before: &[Value], after: &[Value]) {
        let prefix = before.iter().zip(after).take_while(|(b, a)| b == a).count();
        // Counted after the prefix only, so the two never overlap.
        let suffix = before[prefix..]
            .iter()
            .rev()
            .zip(after[prefix..].iter().rev())
            .take_while(|(b, a)| b == a)
            .count();
        // The differing middle: before[prefix..b_end] became after[prefix..a_end].
        let (b_end, a_end) = (before.len() - suffix, after.len() - suffix);
        let (removed, inserted) = (b_end - prefix, a_end - prefix);
        if removed == 0 && inserted == 0 {
            return;
        }
        let paired = removed.min(inserted);
        let mark = self.out.len();
        let mut retained = false;
        for at in prefix..prefix + paired {
            let ops_before = self.out.len();
            self.child(Seg::Index(at), &before[at], &after[at]);
            retained |= !self.set_whole(&self.out[ops_before..], at);
        }
        if paired == 0 || !retained {
            // Nothing kept: one splice of the whole middle. The whole-element sets already
            // built carry the first `paired` new elements.
            let mut items = Vec::with_capacity(inserted);
            for op in self.out.drain(mark..) {
                if let Op::Set(_, v) = op {
                    items.push(v);
                }
            }
            items.extend_from_slice(&after[prefix + paired..a_end]);
            self.splice(prefix, removed, items, before.len());
        } else if removed != inserted {
            let at = prefix + paired;
            let items = after[at..a_end].to_vec();
            self.splice(at, removed - paired, items, before.len());
        }
    }

    /// Whether `ops` is exactly one `s` of the whole element `index` of the array here.
    fn set_whole(&self, ops: &[Op], index: usize) -> bool {
        match ops {
            [Op::Set(path, _)] => match path.split_last() {
                (parent, Seg::Index(i)) => *i == index && parent == self.segs.as_slice(),
                _ => false,
            },
            _ => false,
        }
    }

    /// A splice of the array here, normalised to `r` or `s` when it rewrites all of a
    /// non-empty array. (Growing an empty array stays a splice, as the tracker records it.)
    fn splice(&mut self, index: usize, remove: usize, items: Vec<Value>, len: usize) {
        if index == 0 && remove == len && len > 0 {
            self.set(Value::Array(items));
            return;
        }
        self.out.push(Op::Splice {
            path: Path::from(self.segs.clone()),
            index,
            remove,
            items,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;
    use serde_json::json;

    /// The diff, checked to replay onto `before` as `after`.
    fn check(before: Value, after: Value) -> Vec<Op> {
        let ops = diff(&before, &after);
        let mut replica = Some(before);
        crate::apply(&mut replica, &ops).unwrap();
        assert_eq!(replica, Some(after));
        ops
    }

    fn items(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"id": i, "name": format!("item{i}")}))
            .collect()
    }

    #[test]
    fn equal_values_give_nothing() {
        let v = json!({"a": [1, {"b": "c"}], "d": null});
        assert!(diff(&v, &v.clone()).is_empty());
        // Key order is not compared.
        assert!(diff(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})).is_empty());
    }

    #[test]
    fn strings_keep_their_intent() {
        let ops = check(json!({"s": "Hel"}), json!({"s": "Hello"}));
        assert_eq!(ops, [Op::Append(path!["s"], "lo".into())]);
        let ops = check(json!({"s": ""}), json!({"s": "x"}));
        assert_eq!(ops, [Op::Append(path!["s"], "x".into())]);
        // A rolling window keeps its intent while the kept text is longer than the ops...
        let kept = "k".repeat(40);
        let ops = check(
            json!({ "s": format!("abc{kept}") }),
            json!({ "s": format!("{kept}xyz") }),
        );
        assert_eq!(
            ops,
            [
                Op::Truncate(path!["s"], 3),
                Op::Append(path!["s"], "xyz".into())
            ]
        );
        // ...and is one `s` when that is smaller: `["s",["s"],"defghxyz"]` is 23 bytes,
        // `["t",["s"],3]` + `["a",["s"],"xyz"]` 33.
        let ops = check(json!({"s": "abcdefgh"}), json!({"s": "defghxyz"}));
        assert_eq!(ops, [Op::Set(path!["s"], json!("defghxyz"))]);
        let ops = check(json!({"s": "idle"}), json!({"s": "error"}));
        assert_eq!(ops, [Op::Set(path!["s"], json!("error"))]);
        // Dropping from the front only.
        let ops = check(json!({"s": "abcdef"}), json!({"s": "def"}));
        assert_eq!(ops, [Op::Truncate(path!["s"], 3)]);
        let ops = check(json!({"s": "abc"}), json!({"s": "xyz"}));
        assert_eq!(ops, [Op::Set(path!["s"], json!("xyz"))]);
        let ops = check(json!({"s": "abc"}), json!({"s": ""}));
        assert_eq!(ops, [Op::Set(path!["s"], json!(""))]);
        // `t` counts UTF-16 code units: "😀é" is 3 units, 6 bytes.
        let ops = check(
            json!({ "s": format!("😀é{kept}") }),
            json!({ "s": format!("{kept}😀") }),
        );
        assert_eq!(
            ops,
            [
                Op::Truncate(path!["s"], 3),
                Op::Append(path!["s"], "😀".into())
            ]
        );
        // At the root a string can only be replaced.
        assert_eq!(
            check(json!("ab"), json!("abc")),
            [Op::Replace(json!("abc"))]
        );
        assert!(check(json!("ab"), json!("ab")).is_empty());
    }

    /// What a tracker's flush sends for a reassigned string: its edit, then the ops.
    fn diff_string(path: &NonEmptyPath, before: &str, after: &str, out: &mut Vec<Op>) {
        match diff_string_edit(path.segments(), before, after) {
            StringEdit::Same => {}
            StringEdit::Set => out.push(Op::Set(path.clone(), json!(after))),
            StringEdit::Window { kept } => out.extend(window_ops(path, before, after, kept)),
        }
    }

    #[test]
    fn diff_string_is_the_nested_string_rule() {
        let at = path!["out"];
        assert_eq!(
            diff_string_edit(at.segments(), "abc", "xyz"),
            StringEdit::Set
        );
        assert_eq!(
            diff_string_edit(at.segments(), "", "xyz"),
            StringEdit::Window { kept: 0 }
        );
        let mut out = Vec::new();
        let kept = "k".repeat(40);
        diff_string(
            &path!["out"],
            &format!("abc{kept}"),
            &format!("{kept}xyz"),
            &mut out,
        );
        diff_string(&path!["out"], "same", "same", &mut out);
        diff_string(&path!["log"], "a", "ab", &mut out);
        assert_eq!(
            out,
            [
                Op::Truncate(path!["out"], 3),
                Op::Append(path!["out"], "xyz".into()),
                Op::Append(path!["log"], "b".into()),
            ]
        );
    }

    #[test]
    fn objects_delete_then_visit_after_in_order() {
        let ops = check(
            json!({"a": 1, "gone": true, "b": {"c": "x"}, "also": 0}),
            json!({"new": [], "b": {"c": "xy"}, "a": 2}),
        );
        assert_eq!(
            ops,
            [
                Op::Delete(path!["gone"]),
                Op::Delete(path!["also"]),
                Op::Set(path!["new"], json!([])),
                Op::Append(path!["b", "c"], "y".into()),
                Op::Set(path!["a"], json!(2)),
            ]
        );
    }

    #[test]
    fn type_changes_and_scalars_are_set() {
        let ops = check(
            json!({"a": 1, "b": "s", "c": [1]}),
            json!({"a": 1.5, "b": 2, "c": {}}),
        );
        assert_eq!(
            ops,
            [
                Op::Set(path!["a"], json!(1.5)),
                Op::Set(path!["b"], json!(2)),
                Op::Set(path!["c"], json!({})),
            ]
        );
        assert_eq!(check(json!(1), json!(null)), [Op::Replace(json!(null))]);
        assert_eq!(check(json!({}), json!([])), [Op::Replace(json!([]))]);
    }

    #[test]
    fn array_edits_at_one_place_are_one_splice() {
        // Insert at the front of 100 items.
        let before = json!({"items": items(100)});
        let mut after = before.clone();
        after["items"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"id": -1, "name": "new"}));
        let ops = check(before.clone(), after);
        assert_eq!(
            ops,
            [Op::Splice {
                path: path!["items"].into(),
                index: 0,
                remove: 0,
                items: vec![json!({"id": -1, "name": "new"})]
            }]
        );
        // Pop the last item.
        let mut after = before.clone();
        after["items"].as_array_mut().unwrap().pop();
        let ops = check(before.clone(), after);
        assert_eq!(
            ops,
            [Op::Splice {
                path: path!["items"].into(),
                index: 99,
                remove: 1,
                items: vec![]
            }]
        );
        // Remove from the middle, insert in the middle.
        let ops = check(json!([1, 2, 3, 4]), json!([1, 4]));
        assert_eq!(
            ops,
            [Op::Splice {
                path: Path::root(),
                index: 1,
                remove: 2,
                items: vec![]
            }]
        );
        let ops = check(json!([1, 4]), json!([1, 2, 3, 4]));
        assert_eq!(
            ops,
            [Op::Splice {
                path: Path::root(),
                index: 1,
                remove: 0,
                items: vec![json!(2), json!(3)]
            }]
        );
    }

    #[test]
    fn retained_elements_are_diffed_in_place_then_the_tail_spliced() {
        let ops = check(
            json!({"view": {"messages": [{"text": "a"}, {"text": "b"}]}}),
            json!({"view": {"messages": [{"text": "ax"}, {"text": "b"}, {"text": "c"}]}}),
        );
        assert_eq!(
            ops,
            [
                Op::Append(path!["view", "messages", 0, "text"], "x".into()),
                Op::Splice {
                    path: path!["view", "messages"].into(),
                    index: 2,
                    remove: 0,
                    items: vec![json!({"text": "c"})]
                },
            ]
        );
        // Surplus elements are removed after the pairs.
        let ops = check(
            json!([{"t": "a"}, 1, 2, 3, "end"]),
            json!([{"t": "ab"}, 9, "end"]),
        );
        assert_eq!(
            ops,
            [
                Op::Append(path![0, "t"], "b".into()),
                Op::Set(path![1], json!(9)),
                Op::Splice {
                    path: Path::root(),
                    index: 2,
                    remove: 2,
                    items: vec![]
                },
            ]
        );
        // An equal pair in the middle is retained too.
        let ops = check(json!([1, "x", 3]), json!([7, "x", 9]));
        assert_eq!(
            ops,
            [Op::Set(path![0], json!(7)), Op::Set(path![2], json!(9))]
        );
    }

    #[test]
    fn whole_replacements_are_one_splice_or_a_set() {
        // Every pair replaced whole: one splice of the middle.
        let ops = check(json!([0, 1, 2, 5]), json!([0, 7, 8, 9, 5]));
        assert_eq!(
            ops,
            [Op::Splice {
                path: Path::root(),
                index: 1,
                remove: 2,
                items: vec![json!(7), json!(8), json!(9)]
            }]
        );
        // A splice covering the whole array: `r` at the root, `s` nested.
        assert_eq!(
            check(json!([1, 2, 3]), json!([9])),
            [Op::Replace(json!([9]))]
        );
        assert_eq!(check(json!([1, 2, 3]), json!([])), [Op::Replace(json!([]))]);
        assert_eq!(
            check(json!([]), json!([1])),
            [Op::Splice {
                path: Path::root(),
                index: 0,
                remove: 0,
                items: vec![json!(1)]
            }]
        );
        assert_eq!(
            check(json!({"xs": [1, 2]}), json!({"xs": ["a", "b", "c"]})),
            [Op::Set(path!["xs"], json!(["a", "b", "c"]))]
        );
        assert_eq!(
            check(json!({"xs": []}), json!({"xs": [1]})),
            [Op::Splice {
                path: path!["xs"].into(),
                index: 0,
                remove: 0,
                items: vec![json!(1)]
            }]
        );
        // A root array that only grew at the end is a partial splice, never an `r`.
        assert_eq!(
            check(json!([1, 2, 3]), json!([1, 2, 3, 4])),
            [Op::Splice {
                path: Path::root(),
                index: 3,
                remove: 0,
                items: vec![json!(4)]
            }]
        );
    }

    #[test]
    fn the_suffix_does_not_overlap_the_prefix() {
        let ops = check(json!(["a", "a"]), json!(["a", "a", "a"]));
        assert_eq!(
            ops,
            [Op::Splice {
                path: Path::root(),
                index: 2,
                remove: 0,
                items: vec![json!("a")]
            }]
        );
        let ops = check(json!(["a", "b", "a"]), json!(["a"]));
        assert_eq!(
            ops,
            [Op::Splice {
                path: Path::root(),
                index: 1,
                remove: 2,
                items: vec![]
            }]
        );
    }

    #[test]
    fn reserved_members_are_never_walked_through() {
        let ops = check(
            json!({"cfg": {"__proto__": {"x": 1}, "y": 2}}),
            json!({"cfg": {"__proto__": {"x": 2}, "y": 2}}),
        );
        assert_eq!(
            ops,
            [Op::Set(
                path!["cfg"],
                json!({"__proto__": {"x": 2}, "y": 2})
            )]
        );
        let ops = check(json!({"a": 1}), json!({"a": 1, "constructor": 0}));
        assert_eq!(ops, [Op::Replace(json!({"a": 1, "constructor": 0}))]);
        // Equal reserved members do not stop the rest of the object from being diffed.
        let ops = check(
            json!({"prototype": [1], "s": "a"}),
            json!({"prototype": [1], "s": "ab"}),
        );
        assert_eq!(ops, [Op::Append(path!["s"], "b".into())]);
    }

    #[test]
    fn diff_into_works_where_the_subtree_lives() {
        let mut out = Vec::new();
        diff_into(
            &path!["lanes", 2].into(),
            &json!({"out": "abc", "xs": [1]}),
            &json!({"out": "abcd", "xs": []}),
            &mut out,
        );
        assert_eq!(
            out,
            [
                Op::Append(path!["lanes", 2, "out"], "d".into()),
                Op::Set(path!["lanes", 2, "xs"], json!([])),
            ]
        );
    }

    /// Strings that often share a part: `before`'s tail opening `after`, with text that JSON
    /// escapes, characters of several bytes, and runs that make candidates occur often.
    fn string_pair() -> impl proptest::strategy::Strategy<Value = (String, String)> {
        use proptest::prelude::*;
        let text = || {
            prop_oneof![
                "[ab]{0,40}",
                "[ab\"\\\\\n\u{1}é😀 ]{0,60}",
                ("[ab ]{1,3}", 0usize..40).prop_map(|(unit, n)| unit.repeat(n)),
                "\\PC{0,30}",
            ]
        };
        (text(), 0usize..80, text()).prop_map(|(before, cut, add)| {
            let mut at = cut.min(before.len());
            while !before.is_char_boundary(at) {
                at -= 1;
            }
            let after = format!("{}{add}", &before[at..]);
            (before, after)
        })
    }

    fn any_path() -> impl proptest::strategy::Strategy<Value = NonEmptyPath> {
        use proptest::prelude::*;
        let seg = prop_oneof![
            "[a-z\"\\\\é]{0,12}".prop_map(Seg::from),
            (0usize..100_000).prop_map(Seg::Index),
        ];
        proptest::collection::vec(seg, 1..4)
            .prop_map(|segs| NonEmptyPath::try_from(Path::from(segs)).unwrap())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// A tracker's reassigned string sends what `diff` sends for it, though its probe
        /// skips the overlaps too short to matter.
        #[test]
        fn a_reassigned_string_sends_the_diffs_ops(
            (before, after) in string_pair(),
            path in any_path(),
        ) {
            let mut want = Vec::new();
            string_ops(&path, &before, &after, &OverlapConfig::default(), &mut want);
            let mut got = Vec::new();
            diff_string(&path, &before, &after, &mut got);
            proptest::prop_assert_eq!(got, want);
        }
    }
}
