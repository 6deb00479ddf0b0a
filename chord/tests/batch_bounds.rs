//! Batches no larger than they need be, on the shapes where the tracker used to send more
//! than one `s` of the location or the snapshot diff: each batch's bytes (as JSON, paths in
//! full) against both, and the replica equal to the state.

use chord::{apply, diff, track, Op, Tracked, Tracker};
use serde::Serialize;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Call {
    id: u32,
    name: String,
    done: bool,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Lane {
    calls: Vec<Call>,
    xs: Vec<u32>,
}

fn lane() -> Lane {
    Lane {
        calls: (0..3)
            .map(|i| Call {
                id: 3 - i,
                name: format!("tool-{i}"),
                done: i == 0,
            })
            .collect(),
        xs: vec![1, 2, 3],
    }
}

fn bytes(ops: &[Op]) -> usize {
    ops.iter()
        .map(|op| serde_json::to_string(op).unwrap().len())
        .sum()
}

/// A batch's bytes and the two it is held to: the snapshot diff's and one `s` of the field's.
struct Sizes {
    sent: usize,
    snapshot: usize,
    set: usize,
}

/// Flushes after `edit` and measures the batch against the snapshot diff and one `s` of
/// `field`; the replica must equal the state.
#[track_caller]
fn measure(case: &str, field: &str, edit: impl FnOnce(&mut Tracker<Lane>)) -> Sizes {
    let mut t = track(lane());
    let mut replica = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();
    let before = serde_json::to_value(t.get()).unwrap();
    edit(&mut t);
    let ops = t.flush().unwrap();
    apply(&mut replica, &ops).unwrap();
    let after = serde_json::to_value(t.get()).unwrap();
    assert_eq!(replica.as_ref(), Some(&after), "{case}: replica differs");
    let snapshot = bytes(&diff(&before, &after));
    let set = bytes(&[Op::Set(
        chord::NonEmptyPath::new(field),
        after[field].clone(),
    )]);
    Sizes {
        sent: bytes(&ops),
        snapshot,
        set,
    }
}

/// What a batch must be no larger than.
#[derive(Clone, Copy)]
enum Limit {
    /// One `s` of the field.
    OneSet,
    /// The snapshot diff.
    SnapshotDiff,
    /// A batch the case names, of the given bytes.
    Named(&'static str, usize),
}

/// Measures the batch after `edit` (see [`measure`]) and asserts it is no larger than any of
/// `limits`; the message names `case` and every size. Returns the sizes for further checks.
#[track_caller]
fn assert_within(
    case: &str,
    field: &str,
    edit: impl FnOnce(&mut Tracker<Lane>),
    limits: &[Limit],
) -> Sizes {
    let sizes = measure(case, field, edit);
    let limits: Vec<(&str, usize)> = limits
        .iter()
        .map(|limit| match *limit {
            Limit::OneSet => ("one s", sizes.set),
            Limit::SnapshotDiff => ("snapshot diff", sizes.snapshot),
            Limit::Named(name, size) => (name, size),
        })
        .collect();
    let stated: Vec<String> = limits
        .iter()
        .map(|(name, size)| format!("{name} {size} B"))
        .collect();
    assert!(
        limits.iter().all(|&(_, size)| sizes.sent <= size),
        "{case}: sent {} B, {}",
        sizes.sent,
        stated.join(", ")
    );
    sizes
}

#[test]
fn a_sort_of_structs_is_at_most_one_set() {
    assert_within(
        "sort of structs",
        "calls",
        |t| t.state().calls.sort_by_key(|c| c.id),
        &[Limit::OneSet],
    );
}

#[test]
fn swap_remove_of_the_next_to_last_is_one_removal() {
    assert_within(
        "swap_remove(1)",
        "calls",
        |t| {
            t.state().calls.swap_remove(1);
        },
        &[Limit::SnapshotDiff],
    );
}

#[test]
fn an_element_replaced_by_splices_is_one_set_of_it() {
    // One `s` of the element replaced, `["s",["xs",0],9]`.
    let element = bytes(&[Op::Set(chord::path!["xs", 0], 9.into())]);
    assert_within(
        "element replaced by splices",
        "xs",
        |t| {
            let mut s = t.state();
            s.xs.splice(0..0, [9]);
            s.xs.splice(1..2, []);
        },
        &[
            Limit::SnapshotDiff,
            Limit::Named("one s of the element", element),
        ],
    );
}

/// An insertion, then the whole value edited through the root's fallback (`Tracker::edit`)
/// removing the element again: the two splices cancel, and nothing of `xs` is sent.
#[test]
fn an_insertion_removed_across_a_whole_value_edit_sends_nothing() {
    let sizes = assert_within(
        "insertion removed across a whole-value edit",
        "xs",
        |t| {
            t.state().xs.insert(1, 7);
            t.edit(|lane| {
                lane.xs.remove(1);
                lane.calls[0].done = false;
            });
        },
        &[Limit::SnapshotDiff],
    );
    let done = bytes(&[Op::Set(chord::path!["calls", 0, "done"], false.into())]);
    assert_eq!(sizes.snapshot, done);
}

/// Edits of one field on both sides of a whole-value edit at the root: the field's ops are
/// capped at one `s` of it, as without the root edit.
#[test]
fn a_field_edited_on_both_sides_of_a_whole_value_edit_is_at_most_one_set() {
    assert_within(
        "field edited on both sides of a whole-value edit",
        "calls",
        |t| {
            let mut s = t.state();
            for mut c in s.calls.iter_mut() {
                *c.name = format!("renamed {}", *c.id);
            }
            t.edit(|lane| lane.calls.reverse());
        },
        &[Limit::OneSet],
    );
}
