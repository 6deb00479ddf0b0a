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

/// Flushes after `edit`; returns the batch's bytes, the snapshot diff's, and one `s` of
/// `field`'s.
fn measure(edit: impl FnOnce(&mut Tracker<Lane>), field: &str) -> (usize, usize, usize) {
    let mut t = track(lane());
    let mut replica = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();
    let before = serde_json::to_value(t.get()).unwrap();
    edit(&mut t);
    let ops = t.flush().unwrap();
    apply(&mut replica, &ops).unwrap();
    let after = serde_json::to_value(t.get()).unwrap();
    assert_eq!(replica.as_ref(), Some(&after));
    let snapshot = bytes(&diff(&before, &after));
    let set = bytes(&[Op::Set(
        chord::NonEmptyPath::new(field),
        after[field].clone(),
    )]);
    (bytes(&ops), snapshot, set)
}

#[test]
fn a_sort_of_structs_is_at_most_one_set() {
    let (sent, _snapshot, set) = measure(|t| t.state().calls.sort_by_key(|c| c.id), "calls");
    assert!(sent <= set, "sent {sent} B, one s {set} B");
}

#[test]
fn swap_remove_of_the_next_to_last_is_one_removal() {
    let (sent, snapshot, _) = measure(
        |t| {
            t.state().calls.swap_remove(1);
        },
        "calls",
    );
    assert!(
        sent <= snapshot,
        "sent {sent} B, snapshot diff {snapshot} B"
    );
}

#[test]
fn an_element_replaced_by_splices_is_one_set_of_it() {
    let (sent, snapshot, _) = measure(
        |t| {
            let mut s = t.state();
            s.xs.splice(0..0, [9]);
            s.xs.splice(1..2, []);
        },
        "xs",
    );
    // One `s` of the element replaced, `["s",["xs",0],9]`.
    let element = bytes(&[Op::Set(chord::path!["xs", 0], 9.into())]);
    assert!(
        sent <= snapshot.min(element),
        "sent {sent} B, snapshot diff {snapshot} B, one s of the element {element} B"
    );
}

/// An insertion, then the whole value edited through the root's fallback (`Tracker::edit`)
/// removing the element again: the two splices cancel, and nothing of `xs` is sent.
#[test]
fn an_insertion_removed_across_a_whole_value_edit_sends_nothing() {
    let (sent, snapshot, _) = measure(
        |t| {
            t.state().xs.insert(1, 7);
            t.edit(|lane| {
                lane.xs.remove(1);
                lane.calls[0].done = false;
            });
        },
        "xs",
    );
    let done = bytes(&[Op::Set(chord::path!["calls", 0, "done"], false.into())]);
    assert_eq!(snapshot, done);
    assert!(
        sent <= snapshot,
        "sent {sent} B, snapshot diff {snapshot} B"
    );
}

/// Edits of one field on both sides of a whole-value edit at the root: the field's ops are
/// capped at one `s` of it, as without the root edit.
#[test]
fn a_field_edited_on_both_sides_of_a_whole_value_edit_is_at_most_one_set() {
    let (sent, _snapshot, set) = measure(
        |t| {
            let mut s = t.state();
            for mut c in s.calls.iter_mut() {
                *c.name = format!("renamed {}", *c.id);
            }
            t.edit(|lane| lane.calls.reverse());
        },
        "calls",
    );
    assert!(sent <= set, "sent {sent} B, one s {set} B");
}
