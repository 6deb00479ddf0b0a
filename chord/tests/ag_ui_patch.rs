//! `ag_ui::Patcher`: each flush's JSON Patch, applied strictly with the `json-patch` crate to
//! the value before the flush, gives the value after it.
//!
//! - `every_flush_patches_the_previous_snapshot_into_the_next`: the struct with every field
//!   kind and the steps calling every modelled proxy method, the fallbacks, enums and maps
//!   (`support/all_fields.rs`, shared with `proxy_properties.rs`): 256 cases of 400 steps
//!   with a flush after one step in eight (about 50 flushes a case, over 10,000 flushes a
//!   run; the test asserts the count). Each flush's patch goes through JSON text, as a client
//!   receives it, and must turn the previous snapshot into `serde_json::to_value(&state)`.
//! - `any_valid_stream_patches_each_state_into_the_next`: streams of valid ops on arbitrary
//!   documents (`support/generator.rs`: clamped splice and truncate counts, deletes of
//!   missing members, indices naming members, `r` mid-batch, root arrays), keys renamed to
//!   ones that need escaping; 4,096 cases of up to 12 batches. Each batch's patch takes the
//!   state before it to the state after it, as chord's independent model computes them.
//! - `any_batch_the_applier_takes_patches_the_same`: arbitrary documents and in-memory ops
//!   (huge counts, reserved names), 1,024 cases: when `chord::apply` takes the batch, the
//!   patch takes the document to the same value; when it refuses it, the patcher refuses the
//!   same op for the same reason and its value is unchanged.
//! - One named test for each case the conversion has to get right.

use chord::ag_ui::Patcher;
use chord::{path, Op, Path, Seg, Tracker};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

#[path = "support/all_fields.rs"]
mod all_fields;
// Valid streams of ops on arbitrary documents (with the model of op semantics they use), and
// arbitrary documents and ops; this test uses a few of their functions.
#[path = "support/generator.rs"]
#[allow(dead_code)]
mod generator;
#[path = "support/model.rs"]
#[allow(dead_code)]
mod model;
#[path = "support/strategies.rs"]
#[allow(dead_code)]
mod strategies;

use all_fields::{run, step, All};
use generator::Gen;

// ---------------------------------------------------------------------------------------------
// The tricky cases, one by one
// ---------------------------------------------------------------------------------------------

/// The patch of `ops` on `before` is `want` (written out by hand), it applies strictly to
/// `before`, and it gives what chord's own applier makes of `before`.
#[track_caller]
fn check(before: Value, ops: &[Op], want: Value) {
    let mut patcher = Patcher::new(before.clone());
    let delta = patcher.patch(ops).unwrap();
    assert_eq!(serde_json::to_value(&delta).unwrap(), want);
    let mut chord = Some(before.clone());
    chord::apply(&mut chord, ops).unwrap();
    let mut client = before;
    json_patch::patch(&mut client, &delta).unwrap();
    assert_eq!(Some(&client), chord.as_ref());
    assert_eq!(Some(patcher.value()), chord.as_ref());
}

#[test]
fn push_is_an_add_at_the_end() {
    check(
        json!({"xs": [1]}),
        &[Op::Set(path!["xs", 1], json!(2))],
        json!([{"op": "add", "path": "/xs/-", "value": 2}]),
    );
}

#[test]
fn set_past_the_end_then_at_the_new_last_index() {
    // The third `s` names the element the first one pushed: now a `replace`.
    check(
        json!({"xs": []}),
        &[
            Op::Set(path!["xs", 0], json!("a")),
            Op::Set(path!["xs", 1], json!("b")),
            Op::Set(path!["xs", 0], json!("c")),
        ],
        json!([
            {"op": "add", "path": "/xs/-", "value": "a"},
            {"op": "add", "path": "/xs/-", "value": "b"},
            {"op": "replace", "path": "/xs/0", "value": "c"},
        ]),
    );
}

#[test]
fn set_of_a_new_member_is_an_add_and_of_an_existing_one_a_replace() {
    check(
        json!({"m": {"a": 1}}),
        &[
            Op::Set(path!["m", "a"], json!(2)),
            Op::Set(path!["m", "b"], json!(3)),
            Op::Set(path!["m", 7], json!(4)), // an index on an object names the member "7"
        ],
        json!([
            {"op": "replace", "path": "/m/a", "value": 2},
            {"op": "add", "path": "/m/b", "value": 3},
            {"op": "add", "path": "/m/7", "value": 4},
        ]),
    );
}

#[test]
fn delete_of_a_missing_member_says_nothing() {
    check(
        json!({"m": {"a": 1}, "xs": [1, 2]}),
        &[
            Op::Delete(path!["m", "gone"]),
            Op::Delete(path!["m", "a"]),
            Op::Delete(path!["m", "a"]), // missing by now
            Op::Delete(path!["xs", 0]),
        ],
        json!([
            {"op": "remove", "path": "/m/a"},
            {"op": "remove", "path": "/xs/0"},
        ]),
    );
}

#[test]
fn append_replaces_the_whole_new_string() {
    check(
        json!({"answer": "Hel", "n": 0}),
        &[
            Op::Append(path!["answer"], "lo".into()),
            Op::Append(path!["answer"], "".into()), // nothing changes: nothing said
            Op::Set(path!["n"], json!(1)),
            Op::Append(path!["answer"], " 😀".into()),
        ],
        json!([
            {"op": "replace", "path": "/answer", "value": "Hello"},
            {"op": "replace", "path": "/n", "value": 1},
            {"op": "replace", "path": "/answer", "value": "Hello 😀"},
        ]),
    );
    // Appends in a row: the last string once.
    check(
        json!({"answer": ""}),
        &[
            Op::Append(path!["answer"], "a".into()),
            Op::Append(path!["answer"], "b".into()),
        ],
        json!([{"op": "replace", "path": "/answer", "value": "ab"}]),
    );
}

#[test]
fn truncate_counts_utf16_units_and_replaces_the_whole_new_string() {
    check(
        json!({"log": "😀ab"}),
        &[
            Op::Truncate(path!["log"], 2), // the emoji is two UTF-16 units
            Op::Truncate(path!["log"], 0),
        ],
        json!([{"op": "replace", "path": "/log", "value": "ab"}]),
    );
}

#[test]
fn a_rolling_window_is_one_replace() {
    // A `t` then an `a` of one string: the string is carried once, not twice.
    check(
        json!({"out": "abcdef"}),
        &[
            Op::Truncate(path!["out"], 2),
            Op::Append(path!["out"], "gh".into()),
        ],
        json!([{"op": "replace", "path": "/out", "value": "cdefgh"}]),
    );
    // A new member written twice: one `add` of the last value.
    check(
        json!({"m": {}}),
        &[
            Op::Set(path!["m", "k"], json!(1)),
            Op::Set(path!["m", "k"], json!(2)),
            Op::Set(path!["m", "j"], json!(3)),
            Op::Set(path!["m", "k"], json!(4)), // not the location just written: kept apart
        ],
        json!([
            {"op": "add", "path": "/m/k", "value": 2},
            {"op": "add", "path": "/m/j", "value": 3},
            {"op": "replace", "path": "/m/k", "value": 4},
        ]),
    );
}

#[test]
fn splice_counts_clamp_to_the_array() {
    check(
        json!({"xs": [1, 2, 3]}),
        &[
            // Index 2, remove "10": one element removed, one inserted.
            Op::Splice {
                path: path!["xs"].into(),
                index: 2,
                remove: 10,
                items: vec![json!(9)],
            },
            // Index 10 is the end: two pushes.
            Op::Splice {
                path: path!["xs"].into(),
                index: 10,
                remove: 5,
                items: vec![json!(7), json!(8)],
            },
        ],
        json!([
            {"op": "replace", "path": "/xs/2", "value": 9},
            {"op": "add", "path": "/xs/-", "value": 7},
            {"op": "add", "path": "/xs/-", "value": 8},
        ]),
    );
}

#[test]
fn splice_in_the_middle_is_index_wise() {
    let splice = |index, remove, items: Vec<Value>| Op::Splice {
        path: path!["xs"].into(),
        index,
        remove,
        items,
    };
    check(
        json!({"xs": [0, 1, 2, 3, 4]}),
        &[splice(1, 1, vec![json!("a"), json!("b")])],
        json!([
            {"op": "replace", "path": "/xs/1", "value": "a"},
            {"op": "add", "path": "/xs/2", "value": "b"},
        ]),
    );
    check(
        json!({"xs": [0, 1, 2, 3, 4]}),
        &[splice(1, 3, vec![json!("a")])],
        json!([
            {"op": "replace", "path": "/xs/1", "value": "a"},
            {"op": "remove", "path": "/xs/2"},
            {"op": "remove", "path": "/xs/2"},
        ]),
    );
    check(
        json!({"xs": [0, 1]}),
        &[splice(0, 0, vec![json!("a")]), splice(1, 0, vec![])],
        json!([{"op": "add", "path": "/xs/0", "value": "a"}]),
    );
}

#[test]
fn splice_of_the_whole_array_is_one_replace() {
    check(
        json!({"xs": [1, 2, 3]}),
        &[Op::Splice {
            path: path!["xs"].into(),
            index: 0,
            remove: 3,
            items: vec![],
        }],
        json!([{"op": "replace", "path": "/xs", "value": []}]),
    );
    // One element for one: the element's own `replace` is as small.
    check(
        json!({"xs": [1]}),
        &[Op::Splice {
            path: path!["xs"].into(),
            index: 0,
            remove: 1,
            items: vec![json!(2)],
        }],
        json!([{"op": "replace", "path": "/xs/0", "value": 2}]),
    );
}

#[test]
fn splice_of_a_root_array() {
    check(
        json!([1]),
        &[Op::Splice {
            path: Path::root(),
            index: 1,
            remove: 0,
            items: vec![json!(2)],
        }],
        json!([{"op": "add", "path": "/-", "value": 2}]),
    );
}

#[test]
fn keys_are_escaped() {
    check(
        json!({"a/b": {"m~n": {}}, "": {}}),
        &[
            Op::Set(path!["a/b", "m~n", "~1"], json!(1)),
            Op::Set(path!["", "/"], json!(2)),
        ],
        json!([
            {"op": "add", "path": "/a~1b/m~0n/~01", "value": 1},
            {"op": "add", "path": "//~1", "value": 2},
        ]),
    );
}

#[test]
fn replace_is_a_replace_of_the_root() {
    check(
        json!({"a": 1}),
        &[Op::Replace(json!([1])), Op::Set(path![0], json!(2))],
        json!([
            {"op": "replace", "path": "", "value": [1]},
            {"op": "replace", "path": "/0", "value": 2},
        ]),
    );
}

#[test]
fn an_op_that_does_not_apply_leaves_the_mirror_unchanged() {
    let before = json!({"xs": [1], "s": "abc"});
    let mut patcher = Patcher::new(before.clone());
    let ops = [
        Op::Set(path!["xs", 1], json!(2)),
        Op::Append(path!["s"], "d".into()),
        Op::Delete(path!["m", "k"]),
    ];
    let err = patcher.patch(&ops).unwrap_err();
    assert_eq!(err.op_index(), 2);
    assert_eq!(err.path(), Some(&Path::from(vec![Seg::from("m")])));
    assert_eq!(err.kind(), &chord::ErrorKind::Missing);
    assert_eq!(
        err.to_string(),
        "op 2 at m does not apply to the patcher's value: no such member or element"
    );
    assert_eq!(patcher.value(), &before);
    // A surrogate pair cut in half, and an index past the end.
    let err = patcher
        .patch(&[
            Op::Truncate(path!["s"], 0),
            Op::Set(path!["xs", 2], json!(0)),
        ])
        .unwrap_err();
    assert_eq!(err.op_index(), 1);
    assert_eq!(
        err.kind(),
        &chord::ErrorKind::IndexOutOfRange { index: 2, len: 1 }
    );
    assert_eq!(patcher.value(), &before);
    // Still usable afterwards.
    let delta = patcher.patch(&[Op::Set(path!["xs", 1], json!(2))]).unwrap();
    assert_eq!(delta.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// A tracker's flushes
// ---------------------------------------------------------------------------------------------

/// A producer, the patcher following its flushes, and the snapshot at its last flush.
struct Run {
    t: Tracker<All>,
    patcher: Option<Patcher>,
    last: Value,
    flushes: usize,
}

impl Run {
    fn flush(&mut self) -> Result<(), TestCaseError> {
        let ops = self
            .t
            .flush()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = serde_json::to_value(self.t.get()).unwrap();
        let Some(patcher) = &mut self.patcher else {
            // The first flush is the base batch: what a STATE_SNAPSHOT carries.
            prop_assert!(matches!(ops.as_slice(), [Op::Replace(v)] if *v == want));
            self.patcher = Some(Patcher::new(want.clone()));
            self.last = want;
            return Ok(());
        };
        let delta = patcher
            .patch(&ops)
            .map_err(|e| TestCaseError::fail(format!("{e}: {ops:?}")))?;
        // As a client gets it: JSON text, parsed back.
        let text = serde_json::to_string(&delta).unwrap();
        let received: json_patch::Patch = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&received.0, &delta);
        let mut client = std::mem::take(&mut self.last);
        json_patch::patch(&mut client, &received)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text} for {ops:?}")))?;
        prop_assert_eq!(&client, &want, "patch {} for {:?}", text, ops);
        prop_assert_eq!(patcher.value(), &want);
        self.last = want;
        self.flushes += 1;
        Ok(())
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn every_flush_patches_the_previous_snapshot_into_the_next() {
    let flushes = std::cell::Cell::new(0usize);
    let steps = proptest::collection::vec((step(), 0u8..8), 400);
    let result = runner(256).run(&steps, |steps| {
        let mut r = Run {
            t: chord::track(All::default()),
            patcher: None,
            last: Value::Null,
            flushes: 0,
        };
        r.flush()?;
        for (step, flush) in &steps {
            run(&mut r.t, step);
            if *flush == 0 {
                r.flush()?;
            }
        }
        r.flush()?;
        flushes.set(flushes.get() + r.flushes);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let flushes = flushes.get();
    eprintln!("{flushes} flushes patched");
    assert!(flushes > 10_000, "only {flushes} flushes");
}

// ---------------------------------------------------------------------------------------------
// Any batch, on any document
// ---------------------------------------------------------------------------------------------

/// Keys that need escaping in a JSON Pointer, swapped in for two ordinary keys.
fn escaping(key: &str) -> &str {
    match key {
        "x" => "a/~b",
        "b" => "~1/",
        other => other,
    }
}

fn escape_value(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (escaping(&k).to_owned(), escape_value(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(escape_value).collect()),
        other => other,
    }
}

fn escape_path(path: &[Seg]) -> Vec<Seg> {
    path.iter()
        .map(|seg| match seg {
            Seg::Key(k) => Seg::from(escaping(k)),
            Seg::Index(i) => Seg::Index(*i),
        })
        .collect()
}

fn escape_op(op: Op) -> Op {
    let ne = |p: &[Seg]| strategies::non_empty(escape_path(p));
    match op {
        Op::Replace(v) => Op::Replace(escape_value(v)),
        Op::Set(p, v) => Op::Set(ne(&p), escape_value(v)),
        Op::Delete(p) => Op::Delete(ne(&p)),
        Op::Append(p, s) => Op::Append(ne(&p), s),
        Op::Truncate(p, n) => Op::Truncate(ne(&p), n),
        Op::Splice {
            path,
            index,
            remove,
            items,
        } => Op::Splice {
            path: Path::from(escape_path(&path)),
            index,
            remove,
            items: items.into_iter().map(escape_value).collect(),
        },
    }
}

#[test]
fn any_valid_stream_patches_each_state_into_the_next() {
    let batches = std::cell::Cell::new(0usize);
    let result = runner(4096).run(
        &strategies::stream_input(),
        |(start, roots, values, raw)| {
            let Some(start) = start else {
                return Ok(()); // a patcher starts from a value
            };
            let start = escape_value(start);
            let roots: Vec<Value> = roots.into_iter().map(escape_value).collect();
            let values: Vec<Value> = values.into_iter().map(escape_value).collect();
            let (stream, states) = Gen::new(&roots, &values, raw).stream(&Some(start.clone()));
            let mut patcher = Patcher::new(start.clone());
            let mut client = start;
            for (batch, state) in stream.iter().zip(&states) {
                let delta = patcher
                    .patch(batch)
                    .map_err(|e| TestCaseError::fail(format!("{e}: {batch:?}")))?;
                json_patch::patch(&mut client, &delta).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {} for {batch:?}", json!(delta)))
                })?;
                prop_assert_eq!(
                    Some(&client),
                    state.as_ref(),
                    "{} for {:?}",
                    json!(delta),
                    batch
                );
                prop_assert_eq!(Some(patcher.value()), state.as_ref());
                batches.set(batches.get() + 1);
            }
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("{} batches patched", batches.get());
    assert!(batches.get() > 10_000, "only {} batches", batches.get());
}

#[test]
fn any_batch_the_applier_takes_patches_the_same() {
    let input = (
        strategies::wild_doc(),
        proptest::collection::vec(strategies::wild_op(), 1..6),
    );
    let taken = std::cell::Cell::new(0usize);
    let result = runner(1024).run(&input, |(doc, ops)| {
        let Some(doc) = doc else {
            return Ok(()); // a patcher starts from a value
        };
        let doc = escape_value(doc);
        let ops: Vec<Op> = ops.into_iter().map(escape_op).collect();
        let mut chord = Some(doc.clone());
        let applied = chord::apply(&mut chord, &ops);
        let mut patcher = Patcher::new(doc.clone());
        match (applied, patcher.patch(&ops)) {
            (Ok(()), Ok(delta)) => {
                let mut client = doc;
                json_patch::patch(&mut client, &delta).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {} for {ops:?}", json!(delta)))
                })?;
                prop_assert_eq!(Some(&client), chord.as_ref());
                prop_assert_eq!(Some(patcher.value()), chord.as_ref());
                taken.set(taken.get() + 1);
            }
            (Err(e), Ok(delta)) => {
                // The patcher has no limits; the applier's default ones may refuse.
                prop_assert_eq!(e.kind().category(), chord::Category::Limit, "{:?}", delta);
            }
            (Ok(()), Err(e)) => prop_assert!(false, "patcher refused {:?}: {}", ops, e),
            (Err(e), Err(p)) => {
                prop_assert_eq!(e.op_index(), Some(p.op_index()));
                prop_assert_eq!(e.kind(), p.kind());
                prop_assert_eq!(patcher.value(), &doc);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Most arbitrary batches do not apply; the other property covers those that do.
    eprintln!("{} of 1024 batches applied", taken.get());
    assert!(taken.get() > 20, "only {} batches applied", taken.get());
}
