//! chord's side of the shapes S1-S6: each step's ops, checked against what the step did (the
//! element, keys, fields, counter and agent it touched, taken from the workload's inputs), and
//! every wire batch decoded and applied to a replica that must end equal to the state. The
//! muon side is checked by `tests/alternatives.rs`.

use std::collections::{BTreeMap, BTreeSet};

use chord::{apply, path, Decoder, Op, Seg, Tracked};
use chord_bench::cases::cases;
use chord_bench::workloads::*;
use serde::Serialize;
use serde_json::{json, Value};

/// Runs `steps` steps, checking each batch with `check`; the wire text is decoded, compared
/// with the ops and applied to a replica, which must equal the state at the end.
fn stream<T: Tracked + Serialize>(
    name: &str,
    mut run: ChordRun<T>,
    steps: usize,
    mut check: impl FnMut(usize, &[Op]),
) {
    let mut replica = Some(serde_json::to_value(run.t.get()).unwrap());
    let mut decoder = Decoder::new();
    for i in 0..steps {
        let (ops, wire) = run.step_ops(i);
        check(i, &ops);
        let decoded = decoder.decode_str(&wire).unwrap();
        assert_eq!(decoded, ops, "{name} step {i}: the wire round-trips");
        apply(&mut replica, decoded).unwrap();
    }
    assert!(
        replica.as_ref() == Some(&serde_json::to_value(run.t.get()).unwrap()),
        "{name}: the replica equals the state after {steps} steps"
    );
}

/// Every shape has a chord and a muon case (so `tests/alternatives.rs` checks muon's).
#[test]
fn every_shape_is_a_case_in_both_libraries() {
    let cases = cases();
    for shape in ["S1", "S2", "S3", "S4", "S5", "S6"] {
        for lib in ["chord", "muon"] {
            assert!(
                cases.iter().any(|c| c.workload == shape && c.lib == lib),
                "no case {shape} {lib}"
            );
        }
    }
}

fn s1_check(i: usize, ops: &[Op]) {
    let k = s1_index(i);
    assert_eq!(
        ops,
        [Op::Set(
            path!["transcript", k, "text"],
            json!(format!("replaced text of transcript entry {k:05}."))
        )],
        "S1 step {i}"
    );
}

#[test]
fn s1_one_set_of_the_element_text() {
    stream("S1", chord_s1(), S1_STEPS, s1_check);
}

/// S6: one `s` of the entry's new text, the entry and text taken from the workload's inputs.
#[test]
fn s6_one_set_of_the_entry_text() {
    stream("S6", chord_s6(), S6_STEPS, |i, ops| {
        let (k, text) = &S6_STEPS_DATA[i];
        assert_eq!(
            ops,
            [Op::Set(path!["transcript", *k, "text"], json!(text))],
            "S6 step {i}"
        );
    });
}

#[test]
fn s1_by_deref_one_set_of_the_element_text() {
    stream("S1 deref", chord_s1_deref(), S1_STEPS, s1_check);
}

#[test]
fn s2_a_delete_per_removed_key_and_a_set_per_inserted_one() {
    stream("S2", chord_s2(), S2_STEPS, |i, ops| {
        assert_eq!(ops.len(), 200, "S2 step {i}");
        let (mut deleted, mut set) = (BTreeSet::new(), BTreeSet::new());
        for op in ops {
            let key = |p: &[Seg]| match p {
                [Seg::Key(rows), Seg::Key(key)] if rows == "rows" => key.to_string(),
                other => panic!("S2 step {i}: path {other:?}"),
            };
            match op {
                Op::Delete(p) => assert!(deleted.insert(key(p.segments()))),
                Op::Set(p, v) => {
                    let k = key(p.segments());
                    let n: usize = k.trim_start_matches("row-").parse().unwrap();
                    assert_eq!(*v, json!({"id": n, "name": k}), "S2 step {i}");
                    assert!(set.insert(k));
                }
                other => panic!("S2 step {i}: {other:?}"),
            }
        }
        let keys = |from: usize| (from..from + 100).map(|n| format!("row-{n:06}")).collect();
        assert_eq!(
            deleted,
            keys(i * 100),
            "S2 step {i}: the oldest 100 removed"
        );
        assert_eq!(set, keys(10_000 + i * 100), "S2 step {i}: 100 new inserted");
    });
}

#[test]
fn s3_a_set_per_changed_field() {
    let mut values: Vec<i64> = (0..60).map(|k| k * 1000).collect();
    stream("S3", chord_s3(), S3_STEPS, |i, ops| {
        let picks = S3_PICKS[i];
        assert_eq!(BTreeSet::from(picks).len(), 3, "S3 step {i}: 3 fields");
        let expected: BTreeMap<String, Value> = picks
            .iter()
            .map(|&k| {
                values[k] += 1;
                (format!("f{k:02}"), json!(values[k]))
            })
            .collect();
        let got: BTreeMap<String, Value> = ops
            .iter()
            .map(|op| match op {
                Op::Set(p, v) => match p.segments() {
                    [Seg::Key(f)] => (f.to_string(), v.clone()),
                    other => panic!("S3 step {i}: path {other:?}"),
                },
                other => panic!("S3 step {i}: {other:?}"),
            })
            .collect();
        assert_eq!(got.len(), ops.len(), "S3 step {i}: one op per field");
        assert_eq!(got, expected, "S3 step {i}");
    });
}

#[test]
fn s4_one_set_eight_levels_down() {
    stream("S4", chord_s4(), S4_STEPS, |i, ops| {
        let inner = "inner";
        let p = path![inner, inner, inner, inner, inner, inner, inner, "count"];
        assert_eq!(ops, [Op::Set(p, json!(i + 1))], "S4 step {i}");
    });
}

#[test]
fn s5_one_push_onto_the_agent_log() {
    stream("S5", chord_s5(), S5_STEPS, |i, ops| {
        let agent = format!("agent-{:04}", (i * 389) % 1000);
        match ops {
            [Op::Splice {
                path,
                index: 10,
                remove: 0,
                items,
            }] => {
                assert_eq!(
                    *path,
                    *path!["agents", agent.as_str(), "log"],
                    "S5 step {i}"
                );
                assert_eq!(*items, [json!(s5_line(10 + i))], "S5 step {i}");
            }
            other => panic!("S5 step {i}: {other:?}"),
        }
    });
}
