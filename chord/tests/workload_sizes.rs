//! chord's structural targets on the benchmark workloads (`testdata/bench/README.md`):
//! the ops each step emits, checked op by op, with every stream decoded and applied to a
//! replica that must end equal to the state. Prints the ops and wire bytes per workload
//! (`cargo test --test workload_sizes -- --nocapture`); the workloads bench of `chord-bench`
//! (`benches/workloads.rs`) prints the same table for muon and json-patch too.

#[path = "support/workloads.rs"]
mod workloads;

use std::collections::BTreeMap;

use chord::{apply, Decoder, Op, Tracked};
use serde::Serialize;

use workloads::*;

/// The verbs of a batch, e.g. `"ta"`.
fn verbs(ops: &[Op]) -> String {
    ops.iter().map(Op::verb).collect()
}

/// What a stream emitted: totals, and how many steps had each shape of batch.
struct Report {
    ops: usize,
    bytes: usize,
    shapes: BTreeMap<String, usize>,
}

/// Runs `steps` steps of `run`, checking each batch with `check`, decoding and applying every
/// wire batch to a replica, and comparing the replica with the state at the end.
fn stream<T: Tracked + Serialize>(
    name: &str,
    mut run: ChordRun<T>,
    steps: usize,
    check: impl Fn(usize, &[Op]),
) -> Report {
    let mut replica = Some(serde_json::to_value(run.t.get()).unwrap());
    let mut decoder = Decoder::new();
    let mut report = Report {
        ops: 0,
        bytes: 0,
        shapes: BTreeMap::new(),
    };
    for i in 0..steps {
        let (ops, wire) = run.step_ops(i);
        check(i, &ops);
        *report.shapes.entry(verbs(&ops)).or_default() += 1;
        report.ops += ops.len();
        if !ops.is_empty() {
            report.bytes += wire.len();
            let decoded = decoder.decode_str(&wire).unwrap();
            assert_eq!(decoded, ops, "{name} step {i}: the wire round-trips");
            apply(&mut replica, decoded).unwrap();
        }
    }
    assert!(
        replica.as_ref() == Some(&serde_json::to_value(run.t.get()).unwrap()),
        "{name}: the replica equals the state after {steps} steps"
    );
    let shapes: Vec<String> = report
        .shapes
        .iter()
        .map(|(s, n)| format!("{n}×[{s}]"))
        .collect();
    eprintln!(
        "{name:<20} steps {steps:>5}  ops {:>5}  bytes {:>11}  batches {}",
        report.ops,
        report.bytes,
        shapes.join(" ")
    );
    report
}

fn one(verb: char) -> impl Fn(usize, &[Op]) {
    move |i, ops| assert_eq!(verbs(ops), verb.to_string(), "step {i}: {ops:?}")
}

fn any(_: usize, _: &[Op]) {}

#[test]
fn w1_one_append() {
    let r = stream("W1", chord_w1(), 1, one('a'));
    assert_eq!(r.bytes, r#"[["a",["text"],"x"]]"#.len());
}

#[test]
fn w2_unshift_is_one_splice() {
    stream("W2", chord_w2(), 1, |_, ops| match ops {
        [Op::Splice {
            index: 0,
            remove: 0,
            items,
            ..
        }] => assert_eq!(items.len(), 1),
        other => panic!("W2: {other:?}"),
    });
}

#[test]
fn w3_pop_is_one_splice() {
    stream("W3", chord_w3(), 1, |_, ops| match ops {
        [Op::Splice {
            index: 99,
            remove: 1,
            items,
            ..
        }] => assert!(items.is_empty()),
        other => panic!("W3: {other:?}"),
    });
}

/// A truncate of `n` UTF-16 units followed by an append of `appended`.
fn window(n: usize, appended: impl Fn(usize) -> String) -> impl Fn(usize, &[Op]) {
    move |i, ops| match ops {
        [Op::Truncate(p1, dropped), Op::Append(p2, text)] => {
            assert_eq!(p1, p2);
            assert_eq!(*dropped, n, "step {i}");
            assert_eq!(*text, appended(i), "step {i}");
        }
        other => panic!("step {i}: expected t + a, got {other:?}"),
    }
}

#[test]
fn w4_rolling_window_is_truncate_plus_append() {
    let bang = |_| "!!!!".to_owned();
    stream("W4 window", chord_w4_window(false), 2000, window(4, bang));
    stream("W4r window", chord_w4_window(true), 2000, window(4, bang));
}

#[test]
fn w4l_build_log_is_truncate_plus_append() {
    let lines = |i: usize| {
        let first = *W4L_LINES + 10 * i;
        (first..first + 10).map(log_line).collect::<String>()
    };
    // Each line is 40 or 41 bytes (the percentage is padded to 3), so check the count of
    // dropped units against the lines actually dropped.
    let r = stream("W4L window", chord_w4l_window(), 50, |i, ops| match ops {
        [Op::Truncate(_, n), Op::Append(_, text)] => {
            let dropped: usize = (10 * i..10 * i + 10).map(|k| log_line(k).len()).sum();
            assert_eq!(*n, dropped, "step {i}");
            assert_eq!(*text, lines(i), "step {i}");
        }
        other => panic!("step {i}: expected t + a, got {other:?}"),
    });
    assert_eq!(r.ops, 100);
}

/// Whole assignment goes through the overlap detector: reported, not asserted, because the
/// detector (`chord::diff`) may not have landed yet; without it an assignment that is not a
/// pure append is sent as `s` of the whole string.
#[test]
fn w4_by_assignment_is_reported() {
    let w4 = stream("W4 assign", chord_w4_assign(false), 2000, any);
    let w4r = stream("W4r assign", chord_w4_assign(true), 2000, any);
    let w4l = stream("W4L assign", chord_w4l_assign(), 50, any);
    for r in [&w4, &w4r, &w4l] {
        let shapes: Vec<&str> = r.shapes.keys().map(String::as_str).collect();
        assert!(
            shapes.iter().all(|s| ["s", "ta", "a"].contains(s)),
            "unexpected batches {shapes:?}"
        );
    }
}

#[test]
fn w5_one_append_per_step() {
    let r = stream("W5", chord_w5(0), 5000, one('a'));
    assert_eq!(r.bytes, 80_056, "the TypeScript reference's figure");
    stream("W5 last 500", chord_w5(W5_TAIL_FROM), 500, one('a'));
}

#[test]
fn w5big_one_append_per_step() {
    stream("W5big", chord_w5big(), 1000, one('a'));
}

#[test]
fn w6_one_splice_per_step() {
    let r = stream("W6", chord_w6(0), 1000, one('p'));
    assert_eq!(r.bytes, 249_086, "the TypeScript reference's figure");
    stream("W6big", chord_w6(W6BIG_ENTRIES), 1000, one('p'));
}

#[test]
fn w7_clear_is_one_op() {
    stream("W7", chord_w7(), 1, |_, ops| {
        assert_eq!(ops.len(), 1, "{ops:?}");
    });
}
