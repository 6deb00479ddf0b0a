//! Dead ops: within one batch, an op whose target a later op overwrites carries bytes no
//! replica keeps. This pass drops them, and picks the smaller of two equivalent batches.
//!
//! It runs where dead ops can arise: a location edited and then reassigned in one flush
//! interval, whose early edits are followed by the difference between the edited and the new
//! value (see `Before::Edited`).

use std::collections::HashMap;

use crate::op::Op;
use crate::path::Seg;

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

/// How far back [`fold_into_sets`] looks for a `s` to fold an op into.
const FOLD_WINDOW: usize = 64;

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
        // The nearest earlier kept op that is a `s` at or above `target`; stop at any op
        // in the way.
        let mut found = None;
        for k in (j.saturating_sub(FOLD_WINDOW)..j).rev() {
            if !keep[k] {
                continue;
            }
            let Some(at) = ops[k].path().map(|p| p.segments()) else {
                break; // an `r`
            };
            let related = target.starts_with(at) || at.starts_with(&target);
            if !related {
                continue;
            }
            if matches!(ops[k], Op::Set(..)) && target.starts_with(at) {
                found = Some(k);
            }
            break;
        }
        let Some(k) = found else { continue };
        let Op::Set(at, value) = &ops[k] else {
            continue;
        };
        // The op, moved under a wrapper that stands for the `s`'s location, applied to its
        // value.
        let depth = at.len();
        let mut wrapper = Some(serde_json::json!({ "v": value }));
        let moved = moved_under_wrapper(&ops[j], depth);
        if let Some(moved) = moved {
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
    }
    let mut keep = keep.into_iter();
    ops.retain(|_| keep.next().unwrap_or(true));
}

/// `op` with the first `depth` segments of its path replaced by the one segment `"v"`.
fn moved_under_wrapper(op: &Op, depth: usize) -> Option<Op> {
    use crate::path::{NonEmptyPath, Path};
    let under = |p: &Path| -> Path {
        let mut segs = vec![Seg::from("v")];
        segs.extend(p.segments()[depth..].iter().cloned());
        Path::from(segs)
    };
    let non_empty = |p: &Path| NonEmptyPath::try_from(under(p)).ok();
    Some(match op {
        Op::Replace(_) => return None,
        Op::Set(p, v) => Op::Set(non_empty(p.as_path())?, v.clone()),
        Op::Delete(p) => Op::Delete(non_empty(p.as_path())?),
        Op::Append(p, t) => Op::Append(non_empty(p.as_path())?, t.clone()),
        Op::Truncate(p, n) => Op::Truncate(non_empty(p.as_path())?, *n),
        Op::Splice {
            path,
            index,
            remove,
            items,
        } => Op::Splice {
            path: under(path),
            index: *index,
            remove: *remove,
            items: items.clone(),
        },
    })
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
}
