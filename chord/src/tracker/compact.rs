//! Dead ops: within one batch, an op whose target a later op overwrites carries bytes no
//! replica keeps. This pass drops them, and picks the smaller of two equivalent batches.
//!
//! It runs where dead ops can arise: a location edited and then reassigned in one flush
//! interval, whose early edits are followed by the difference between the edited and the new
//! value (see `Before::Edited`).

use std::collections::HashMap;

use serde_json::Value;

use crate::diff::{json_fits, json_len};
use crate::op::Op;
use crate::path::{Path, Seg};

/// How far a later op's overwrite reaches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cover {
    /// `s` (or `r`): everything at or under the path.
    Inclusive,
    /// `d` of an array element: everything under it, and edits (`a`, `t`, `p`) of the
    /// element itself; a `s` there may be what created it, so it stays.
    Strict,
}

/// Removes from `ops` every op that a later op in the same slice overwrites, keeping the
/// batch's effect on every value it applies to. Later splices move the positions an
/// overwrite covers back to where they were before them.
pub(crate) fn drop_dead(ops: &mut Vec<Op>) {
    if !ops.iter().skip(1).any(|op| {
        matches!(
            op,
            Op::Set(..) | Op::Delete(..) | Op::Replace(..) | Op::Splice { .. }
        )
    }) {
        return;
    }
    let mut covered: HashMap<Vec<Seg>, Cover> = HashMap::new();
    let mut keep = vec![true; ops.len()];
    for (i, op) in ops.iter().enumerate().rev() {
        let (segs, edit) = match op {
            Op::Replace(_) => {
                covered.insert(Vec::new(), Cover::Inclusive);
                continue;
            }
            Op::Set(p, _) | Op::Delete(p) => (p.segments(), false),
            Op::Append(p, _) | Op::Truncate(p, _) => (p.segments(), true),
            Op::Splice { path, .. } => (path.segments(), true),
        };
        if dead(&covered, segs, edit) {
            keep[i] = false;
            continue;
        }
        match op {
            Op::Set(p, _) => {
                covered.insert(p.segments().to_vec(), Cover::Inclusive);
            }
            Op::Delete(p) => match p.split_last() {
                (array, Seg::Index(at)) => {
                    shift(&mut covered, array, *at, 0, 1);
                    covered.insert(p.segments().to_vec(), Cover::Strict);
                }
                _ => {
                    // A missing member's delete is a no-op, so whatever came before is dead.
                    covered.insert(p.segments().to_vec(), Cover::Inclusive);
                }
            },
            Op::Splice {
                path,
                index,
                remove,
                items,
            } => {
                shift(&mut covered, path.segments(), *index, items.len(), *remove);
                for k in 0..*remove {
                    let mut element = path.segments().to_vec();
                    element.push(Seg::Index(index + k));
                    covered.insert(element, Cover::Strict);
                }
            }
            _ => {}
        }
    }
    if keep.iter().all(|k| *k) {
        return;
    }
    let mut flags = keep.into_iter();
    ops.retain(|_| flags.next().unwrap_or(true));
}

/// Whether an op at `segs` is overwritten by what `covered` holds (`edit`: the op is an
/// `a`, `t` or `p`, which needs its target to exist and creates nothing).
fn dead(covered: &HashMap<Vec<Seg>, Cover>, segs: &[Seg], edit: bool) -> bool {
    if covered.is_empty() {
        return false;
    }
    (0..=segs.len()).any(|k| match covered.get(&segs[..k]) {
        Some(Cover::Inclusive) => true,
        Some(Cover::Strict) => k < segs.len() || edit,
        None => false,
    })
}

/// Moves covered positions under the array at `array` from after a splice at `index` (which
/// inserted `inserted` and removed `removed` elements) to before it. Positions inside the
/// inserted range did not exist before: no earlier op can have aimed at them.
fn shift(
    covered: &mut HashMap<Vec<Seg>, Cover>,
    array: &[Seg],
    index: usize,
    inserted: usize,
    removed: usize,
) {
    let depth = array.len();
    let moved: Vec<Vec<Seg>> = covered
        .keys()
        .filter(|k| {
            k.len() > depth
                && k[..depth] == *array
                && matches!(k[depth], Seg::Index(j) if j >= index)
        })
        .cloned()
        .collect();
    let mut back = Vec::with_capacity(moved.len());
    for key in moved {
        let cover = covered.remove(&key).unwrap_or(Cover::Strict);
        let Seg::Index(j) = key[depth] else { continue };
        if j < index + inserted {
            continue;
        }
        let mut key = key;
        key[depth] = Seg::Index(j - inserted + removed);
        back.push((key, cover));
    }
    covered.extend(back);
}

/// How far back [`fold_into_sets`] and [`compose_splices`] look for an op to merge a later
/// one into.
const FOLD_WINDOW: usize = 64;

/// The nearest op before `ops[j]`, among the last [`FOLD_WINDOW`] and those `keep` still
/// keeps, whose path is `target`, an ancestor of it or under it: the first op a merge of
/// `ops[j]` into an earlier one would have to move past. `None` when there is none in the
/// window, or an `r` (which touches everything) comes first.
fn nearest_related(ops: &[Op], keep: &[bool], j: usize, target: &[Seg]) -> Option<usize> {
    for k in (j.saturating_sub(FOLD_WINDOW)..j).rev() {
        if !keep[k] {
            continue;
        }
        let at = ops[k].path()?.segments(); // `None`: an `r`
        if target.starts_with(at) || at.starts_with(target) {
            return Some(k);
        }
    }
    None
}

/// Folds each op into an earlier `s` of its path or of an ancestor's, when no op between them
/// touches that location, an ancestor of it or anything under it: the `s` then carries the
/// value the op would have made, and the op goes. The batch's effect is the same on every
/// value it applies to; it only gets shorter (a `s` followed by an `a` of its string, or by
/// edits of its members, is one `s`).
pub(crate) fn fold_into_sets(ops: &mut Vec<Op>) {
    if !ops.iter().any(|op| matches!(op, Op::Set(..))) {
        return;
    }
    let mut keep = vec![true; ops.len()];
    for j in 1..ops.len() {
        let Some(target) = ops[j].path().map(|p| p.segments().to_vec()) else {
            continue;
        };
        // The nearest earlier kept op related to `target` must be a `s` at or above it; any
        // other op in the way stops the fold.
        let Some(k) = nearest_related(ops, &keep, j, &target) else {
            continue;
        };
        let Op::Set(at, value) = &ops[k] else {
            continue;
        };
        // The op, moved under a wrapper whose member stands for the `s`'s location (`None`:
        // the op is not at or under it), applied to its value.
        let Some(moved) = ops[j].clone().rerooted(at.segments(), &[WRAPPED]) else {
            continue;
        };
        let mut wrapper = Some(serde_json::json!({ "v": value }));
        if crate::apply(&mut wrapper, [moved]).is_ok() {
            if let (Some(serde_json::Value::Object(mut map)), Op::Set(_, value)) =
                (wrapper, &mut ops[k])
            {
                if let Some(v) = map.remove("v") {
                    *value = v;
                    keep[j] = false;
                }
            }
        }
    }
    let mut keep = keep.into_iter();
    ops.retain(|_| keep.next().unwrap_or(true));
}

/// The member of the wrapper object [`fold_into_sets`] applies a folded op in: it stands for
/// the location of the `s` the op folds into.
const WRAPPED: Seg = Seg::Key(std::borrow::Cow::Borrowed("v"));

/// Replaces the ops of each member of the object at `at` (every op in `ops` lies under `at`)
/// with one `s` of the member's value in `value`, the object's value after them, where that
/// is smaller as JSON: a location's batch is then at most one `s` per member it touched, as
/// it is where no reassignment intervened. Members of an object are independent (an op on
/// one never moves another), so each member's ops are judged on their own; the `s` takes the
/// place of the member's first op. Left alone: a batch with an op of the object itself (an
/// `r`, its `s` or splice), a member without a value now, and a member whose ops delete it
/// (a `d` and a later `s` move the key to the end; one `s` would keep its place).
pub(crate) fn cap_members(at: &Path, ops: &mut Vec<Op>, value: &Value) {
    let depth = at.segments().len();
    let Value::Object(members) = value else {
        return;
    };
    if ops.len() < 2 {
        return;
    }
    // For each member, in the order of its first op, the indices of its ops.
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        let Some(path) = op.path() else { return };
        let Some(Seg::Key(key)) = path.segments().get(depth) else {
            return; // the object itself, or not an object's member
        };
        let key = key.as_ref();
        match index.get(key) {
            Some(&g) => groups[g].1.push(i),
            None => {
                index.insert(key, groups.len());
                groups.push((key, vec![i]));
            }
        }
    }
    if groups.len() == ops.len() {
        return; // one op per member: nothing to cap
    }
    let mut replace: Vec<(usize, Op)> = Vec::new();
    let mut drop = vec![false; ops.len()];
    for (key, indices) in &groups {
        if indices.len() < 2 {
            continue;
        }
        let Some(member) = members.get(*key) else {
            continue;
        };
        let deletes_it = indices
            .iter()
            .any(|&i| matches!(&ops[i], Op::Delete(p) if p.segments().len() == depth + 1));
        if deletes_it {
            continue;
        }
        let path = at.child(Seg::Key(key.to_string().into()));
        let sent: usize = indices
            .iter()
            .map(|&i| json_len(std::slice::from_ref(&ops[i])))
            .sum();
        // `["s",` path `,` value `]`, the value measured only up to what the ops take.
        let head = 7 + serde_json::to_string(&path).map_or(usize::MAX / 2, |p| p.len());
        if sent
            .checked_sub(head)
            .is_some_and(|room| json_fits(member, room))
        {
            replace.push((indices[0], Op::Set(path, member.clone())));
            for &i in &indices[1..] {
                drop[i] = true;
            }
        }
    }
    if replace.is_empty() {
        return;
    }
    for (i, op) in replace {
        ops[i] = op;
    }
    let mut flags = drop.into_iter();
    ops.retain(|_| !flags.next().unwrap_or(false));
}

/// Composes each splice with the nearest earlier op related to its array when that is a
/// splice of the same array whose inserted range the later one's removal overlaps or
/// touches: the two become one splice (none when they cancel, an insertion removed again).
/// Edits of the array's elements or of its ancestors in between stop the search: they name
/// positions the composition would move.
pub(crate) fn compose_splices(ops: &mut Vec<Op>) {
    if ops
        .iter()
        .filter(|op| matches!(op, Op::Splice { .. }))
        .nth(1)
        .is_none()
    {
        return;
    }
    let mut keep = vec![true; ops.len()];
    for j in 1..ops.len() {
        let Op::Splice { path: target, .. } = &ops[j] else {
            continue;
        };
        let target = target.segments();
        // The nearest earlier kept op related to the array must be a splice of it.
        let Some(k) = nearest_related(ops, &keep, j, target) else {
            continue;
        };
        if !matches!(&ops[k], Op::Splice { path, .. } if path.segments() == target) {
            continue;
        }
        let (
            Op::Splice {
                index: i,
                remove: r1,
                items: first,
                ..
            },
            Op::Splice {
                index: j_at,
                remove: r2,
                items: second,
                ..
            },
        ) = (&ops[k], &ops[j])
        else {
            continue;
        };
        let (i, r1, n1, j_at, r2) = (*i, *r1, first.len(), *j_at, *r2);
        // The later removal `[j_at, j_at + r2)` must overlap or touch the inserted `[i, i + n1)`
        // (positions after the first splice), so that the two cover one contiguous stretch.
        let end = j_at.saturating_add(r2);
        if j_at > i + n1 || end < i {
            continue;
        }
        let start = i.min(j_at);
        let removed = (i - start) + r1 + (end.max(i + n1) - (i + n1));
        let mut items = Vec::with_capacity(n1 + second.len());
        items.extend_from_slice(&first[..j_at.saturating_sub(i).min(n1)]);
        items.extend_from_slice(second);
        items.extend_from_slice(&first[end.saturating_sub(i).min(n1)..]);
        keep[j] = false;
        if removed == 0 && items.is_empty() {
            keep[k] = false;
        } else if let Op::Splice {
            index,
            remove,
            items: kept,
            ..
        } = &mut ops[k]
        {
            *index = start;
            *remove = removed;
            *kept = items;
        }
    }
    let mut keep = keep.into_iter();
    ops.retain(|_| keep.next().unwrap_or(true));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;
    use serde_json::json;

    fn compact(mut ops: Vec<Op>) -> Vec<Op> {
        drop_dead(&mut ops);
        ops
    }

    #[test]
    fn an_append_before_a_set_of_the_same_string_is_dead() {
        let ops = vec![
            Op::Append(path!["a"], "x".into()),
            Op::Set(path!["a"], json!(null)),
        ];
        assert_eq!(compact(ops), vec![Op::Set(path!["a"], json!(null))]);
    }

    #[test]
    fn edits_inside_a_later_set_element_are_dead_but_others_stay() {
        let ops = vec![
            Op::Append(path!["l", 0, "t"], "x".into()),
            Op::Append(path!["l", 1, "t"], "y".into()),
            Op::Set(path!["l", 0], json!({"t": "z"})),
        ];
        assert_eq!(
            compact(ops),
            vec![
                Op::Append(path!["l", 1, "t"], "y".into()),
                Op::Set(path!["l", 0], json!({"t": "z"})),
            ]
        );
    }

    #[test]
    fn a_splice_between_moves_the_covered_index() {
        // The set aims at element 1 after an unshift: element 0 before it.
        let ops = vec![
            Op::Append(path!["l", 0], "x".into()),
            Op::Append(path!["l", 1], "y".into()),
            Op::Splice {
                path: path!["l"].into(),
                index: 0,
                remove: 0,
                items: vec![json!("n")],
            },
            Op::Set(path!["l", 1], json!("z")),
        ];
        let out = compact(ops);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Op::Append(path!["l", 1], "y".into()));
    }

    #[test]
    fn a_set_that_may_create_an_element_survives_its_delete() {
        let ops = vec![Op::Set(path!["l", 2], json!(1)), Op::Delete(path!["l", 2])];
        assert_eq!(compact(ops.clone()), ops);
    }

    #[test]
    fn edits_of_removed_elements_are_dead() {
        let ops = vec![
            Op::Append(path!["l", 3, "t"], "x".into()),
            Op::Splice {
                path: path!["l"].into(),
                index: 2,
                remove: 2,
                items: vec![],
            },
        ];
        assert_eq!(compact(ops).len(), 1);
    }

    /// Arrays of distinct numbers and two valid splices of one of them, applied in turn.
    fn two_splices() -> impl proptest::strategy::Strategy<Value = (Value, Op, Op)> {
        use proptest::prelude::*;
        (
            0usize..8,
            0usize..9,
            0usize..4,
            0usize..4,
            0usize..9,
            0usize..4,
            0usize..4,
        )
            .prop_map(|(len, i, r1, n1, j, r2, n2)| {
                let array: Vec<Value> = (0..len).map(|k| json!(k)).collect();
                let i = i.min(len);
                let r1 = r1.min(len - i);
                let after_first = len - r1 + n1;
                let j = j.min(after_first);
                let r2 = r2.min(after_first - j);
                let splice = |index, remove, from: usize, n: usize| Op::Splice {
                    path: path!["l"].into(),
                    index,
                    remove,
                    items: (from..from + n).map(|k| json!(k)).collect(),
                };
                (
                    json!({"l": array, "m": 1}),
                    splice(i, r1, 100, n1),
                    splice(j, r2, 200, n2),
                )
            })
    }

    /// An array of distinct numbers and a run of splices of it, each valid after the ones
    /// before it, with a `s` elsewhere after those `between` marks.
    fn spliced_runs() -> impl proptest::strategy::Strategy<Value = (Value, Vec<Op>)> {
        use proptest::prelude::*;
        (
            0usize..6,
            proptest::collection::vec((0usize..8, 0usize..3, 0usize..3, any::<bool>()), 2..6),
        )
            .prop_map(|(len, steps)| {
                let array: Vec<Value> = (0..len).map(|k| json!(k)).collect();
                let mut len = len;
                let mut ops = Vec::new();
                for (step, (i, r, n, between)) in steps.into_iter().enumerate() {
                    let i = i.min(len);
                    let r = r.min(len - i);
                    let from = 100 * (step + 1);
                    ops.push(Op::Splice {
                        path: path!["l"].into(),
                        index: i,
                        remove: r,
                        items: (from..from + n).map(|k| json!(k)).collect(),
                    });
                    len = len - r + n;
                    if between {
                        ops.push(Op::Set(path!["m"], json!(step)));
                    }
                }
                (json!({"l": array, "m": 1}), ops)
            })
    }

    /// Ops of an object, its string member and a sibling, each valid after the ones before
    /// it: sets at every depth, appends, a truncate and an `r`.
    fn object_edits() -> impl proptest::strategy::Strategy<Value = Vec<Op>> {
        use proptest::prelude::*;
        proptest::collection::vec(0u8..7, 1..10).prop_map(|kinds| {
            kinds
                .into_iter()
                .enumerate()
                .map(|(k, kind)| match kind {
                    0 => Op::Set(path!["o"], json!({"t": format!("s{k}"), "n": k})),
                    1 => Op::Set(path!["o", "t"], json!(format!("t{k}"))),
                    2 | 3 => Op::Append(path!["o", "t"], format!("{k}")),
                    4 => Op::Truncate(path!["o", "t"], 1),
                    5 => Op::Set(path!["o", "n"], json!(k)),
                    _ => Op::Replace(json!({"o": {"t": "r", "n": k}, "m": k})),
                })
                .collect()
        })
    }

    /// Checks that `pass` changes no effect of `ops` on `value` and never adds an op.
    fn same_effect(
        pass: fn(&mut Vec<Op>),
        value: Value,
        mut ops: Vec<Op>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut want = Some(value.clone());
        crate::apply(&mut want, &ops).unwrap();
        let n = ops.len();
        pass(&mut ops);
        let mut got = Some(value);
        crate::apply(&mut got, &ops).unwrap();
        proptest::prop_assert_eq!(got, want);
        proptest::prop_assert!(ops.len() <= n);
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Composed splices do what the two did, on every array they apply to.
        #[test]
        fn composed_splices_have_the_same_effect(
            (value, first, second) in two_splices(),
            between in proptest::prelude::any::<bool>(),
        ) {
            let mut ops = vec![first, second];
            if between {
                // An op elsewhere does not stop the composition.
                ops.insert(1, Op::Set(path!["m"], json!(2)));
            }
            same_effect(compose_splices, value, ops)?;
        }

        /// A run of splices composes to what it did, on every array it applies to.
        #[test]
        fn composed_runs_of_splices_have_the_same_effect((value, ops) in spliced_runs()) {
            same_effect(compose_splices, value, ops)?;
        }

        /// Folding ops into earlier sets changes no effect and never adds an op.
        #[test]
        fn folded_ops_have_the_same_effect(ops in object_edits()) {
            let value = json!({"o": {"t": "", "n": 0}, "m": 0});
            same_effect(fold_into_sets, value, ops)?;
        }

        /// Capping members changes no effect and never makes a batch larger.
        #[test]
        fn capped_members_have_the_same_effect_and_are_no_larger(
            (value, first, second) in two_splices(),
            appends in proptest::collection::vec("[a-z]{0,12}", 0..4),
        ) {
            let mut ops = vec![first, second];
            for text in &appends {
                ops.push(Op::Append(path!["t"], text.clone()));
            }
            let mut value = value;
            value["t"] = json!("");
            let mut after = Some(value.clone());
            crate::apply(&mut after, &ops).unwrap();
            let after = after.unwrap();
            let before_len = json_len(&ops);
            cap_members(&Path::root(), &mut ops, &after);
            let mut got = Some(value);
            crate::apply(&mut got, &ops).unwrap();
            proptest::prop_assert_eq!(got.as_ref(), Some(&after));
            proptest::prop_assert!(json_len(&ops) <= before_len);
        }
    }

    #[test]
    fn an_insertion_removed_again_composes_to_nothing() {
        let splice = |index, remove, items: Vec<Value>| Op::Splice {
            path: path!["l"].into(),
            index,
            remove,
            items,
        };
        let mut ops = vec![
            splice(3, 0, vec![json!("x")]),
            Op::Set(path!["m"], json!(1)),
            splice(3, 1, vec![]),
        ];
        compose_splices(&mut ops);
        assert_eq!(ops, vec![Op::Set(path!["m"], json!(1))]);
        // An edit of an element in between stops it.
        let mut ops = vec![
            splice(3, 0, vec![json!("x")]),
            Op::Set(path!["l", 3], json!(1)),
            splice(3, 1, vec![]),
        ];
        compose_splices(&mut ops);
        assert_eq!(ops.len(), 3);
    }

    #[test]
    fn a_members_ops_larger_than_its_set_become_the_set() {
        let mut ops = vec![
            Op::Truncate(path!["t"], 3),
            Op::Set(path!["n"], json!(1)),
            Op::Append(path!["t"], "~".into()),
        ];
        cap_members(&Path::root(), &mut ops, &json!({"t": "~", "n": 1}));
        assert_eq!(
            ops,
            vec![
                Op::Set(path!["t"], json!("~")),
                Op::Set(path!["n"], json!(1))
            ]
        );
    }
}
