//! Batches carry no dead bytes: an op a later op in the same batch overwrites is not sent,
//! the smaller of `t` + `a` and `s` is chosen, a rewrite after splices is bounded by one `s`
//! of the array, and `swap_remove` never resends the array. Expected batches are written out
//! by hand.

use chord::{apply, path, track, Op, Tracked, Tracker};
use serde::Serialize;
use serde_json::json;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Lane {
    note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    draft: Option<String>,
    status: String,
    out: String,
    items: Vec<Item>,
    nums: Vec<u32>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Item {
    name: String,
    n: u32,
}

fn item(name: &str, n: u32) -> Item {
    Item {
        name: name.into(),
        n,
    }
}

/// A tracker of `lane` whose base batch is flushed, and the replica holding it.
fn start(lane: Lane) -> (Tracker<Lane>, Option<serde_json::Value>) {
    let mut t = track(lane);
    let base = t.flush().unwrap();
    let mut replica = None;
    apply(&mut replica, &base).unwrap();
    (t, replica)
}

/// Flushes, checks the batch against `want` and that it brings the replica along.
fn check(t: &mut Tracker<Lane>, replica: &mut Option<serde_json::Value>, want: Vec<Op>) {
    let ops = t.flush().unwrap();
    assert_eq!(ops, want);
    apply(replica, &ops).unwrap();
    assert_eq!(
        replica.as_ref(),
        Some(&serde_json::to_value(t.get()).unwrap())
    );
}

#[test]
fn an_append_then_a_reassignment_sends_the_reassignment_only() {
    let (mut t, mut r) = start(Lane {
        note: Some("a".into()),
        draft: Some("b".into()),
        ..Lane::default()
    });
    let mut lane = t.state();
    lane.note.as_mut().unwrap().push_str("xyz");
    lane.note.set(None);
    lane.draft.as_mut().unwrap().push_str("xyz");
    lane.draft.set(None);
    check(
        &mut t,
        &mut r,
        vec![
            Op::Set(path!["note"], json!(null)),
            Op::Delete(path!["draft"]),
        ],
    );
}

#[test]
fn inner_edits_then_a_reverse_send_no_dead_ops() {
    let items: Vec<Item> = (0..6).map(|i| item(&format!("item{i}"), i)).collect();
    let (mut t, mut r) = start(Lane {
        items,
        ..Lane::default()
    });
    let mut lane = t.state();
    for i in [0, 1, 4, 5] {
        lane.items.get_mut(i).unwrap().name.push_str("!");
    }
    lane.items.reverse();
    let ops = t.flush().unwrap();
    // Every element moved: the edits made before the reverse are all overwritten, so the
    // batch is the reversed array's difference alone, no larger than one `s` of it.
    assert!(
        !ops.iter().any(|op| matches!(op, Op::Append(..))),
        "dead appends sent: {ops:?}"
    );
    let whole = serde_json::to_string(&json!(["s", ["items"], t.items])).unwrap();
    assert!(serde_json::to_string(&ops).unwrap().len() <= whole.len() + 2);
    apply(&mut r, &ops).unwrap();
    assert_eq!(r, Some(serde_json::to_value(t.get()).unwrap()));
}

#[test]
fn a_short_window_is_one_set() {
    let (mut t, mut r) = start(Lane {
        out: "o".repeat(500),
        ..Lane::default()
    });
    let mut lane = t.state();
    lane.out.push_str("abc");
    lane.out.keep_last(3);
    // `["s",["out"],"abc"]` is 17 bytes; `t` 500 + `a` "abc" would be 33.
    check(&mut t, &mut r, vec![Op::Set(path!["out"], json!("abc"))]);
}

#[test]
fn a_long_window_keeps_truncate_and_append() {
    let (mut t, mut r) = start(Lane {
        out: "o".repeat(500),
        ..Lane::default()
    });
    let mut lane = t.state();
    lane.out.push_str("abc");
    lane.out.keep_last(300);
    check(
        &mut t,
        &mut r,
        vec![
            Op::Truncate(path!["out"], 203),
            Op::Append(path!["out"], "abc".into()),
        ],
    );
}

#[test]
fn a_short_string_change_is_one_set() {
    let (mut t, mut r) = start(Lane {
        status: "idle".into(),
        ..Lane::default()
    });
    t.state().status.set("error");
    check(
        &mut t,
        &mut r,
        vec![Op::Set(path!["status"], json!("error"))],
    );
}

#[test]
fn a_rewrite_after_splices_is_bounded_by_one_set() {
    let (mut t, mut r) = start(Lane {
        nums: (0..40).collect(),
        ..Lane::default()
    });
    let mut lane = t.state();
    for k in 0..10 {
        lane.nums.insert(k * 3, 100 + k as u32);
    }
    lane.nums.push(7);
    lane.nums.sort();
    let ops = t.flush().unwrap();
    let whole = serde_json::to_vec(&[Op::Set(path!["nums"], json!(t.nums))])
        .unwrap()
        .len();
    assert!(
        serde_json::to_vec(&ops).unwrap().len() <= whole,
        "{ops:?} is larger than one set ({whole} bytes)"
    );
    apply(&mut r, &ops).unwrap();
    assert_eq!(r, Some(serde_json::to_value(t.get()).unwrap()));
}

#[test]
fn swap_remove_from_the_middle_is_a_set_and_a_splice() {
    let (mut t, mut r) = start(Lane {
        nums: (0..100).collect(),
        ..Lane::default()
    });
    let removed = t.state().nums.swap_remove(3);
    assert_eq!(removed, 3);
    check(
        &mut t,
        &mut r,
        // Splices first, then edits at the indices after them.
        vec![
            Op::Splice {
                path: path!["nums"].into(),
                index: 99,
                remove: 1,
                items: vec![],
            },
            Op::Set(path!["nums", 3], json!(99)),
        ],
    );
}

#[test]
fn swap_remove_from_a_short_array_is_one_set_when_that_is_smaller() {
    let (mut t, mut r) = start(Lane {
        nums: (0..10).collect(),
        ..Lane::default()
    });
    t.state().nums.swap_remove(3);
    // A `p` and an `s` (39 bytes as JSON) against one `s` of the nine numbers left (34).
    check(
        &mut t,
        &mut r,
        vec![Op::Set(path!["nums"], json!([0, 1, 2, 9, 4, 5, 6, 7, 8]))],
    );
}
