//! Replays the tracker's conformance vectors, the `overlap` and `diff` cases of
//! `testdata/conformance/vectors.jsonl` (format in its README), against chord.
//!
//! Every case must match, except those listed in `DEVIATIONS` with the reason; for those the
//! test checks chord's own behaviour instead. Every `diff` is also replayed with `apply` and
//! through the wire codec. The overlap detector is crate-private: its answer on every
//! `overlap` case is checked by the unit tests of `src/overlap.rs`, and here, through the
//! public `diff`, on the cases that keep the default bounds.

#[path = "support/vectors.rs"]
mod vectors;

use chord::{apply, diff, Decoder, Encoder, Op};
use serde_json::{json, Value};

use vectors::{assert_expected, count, deviates, name, Deviations};

/// Cases where chord chooses differently from the reference, and why.
const DEVIATIONS: &Deviations = &[
    (
        "diff: truncate+append",
        "The reference always sends a rolling window as `t` + `a`. chord sends one `s` of the \
         new string when that is smaller as JSON: here `[\"s\",[\"s\"],\"defghxyz\"]` (23 \
         bytes) against `t` 3 + `a` \"xyz\" (33 bytes). Longer kept text keeps the window.",
    ),
    (
        "diff: root array is rewritten by splice-all, so it emits r",
        "The reference's harness rewrote the root array with a splice of all of it, which its \
     tracker normalises to an `r`. chord's diff compares the values and sees the common prefix: \
     the array only grew at the end, so it emits [\"p\",[],4,0,[4]], smaller and equivalent. \
     (A root `p` is always a partial modification, as the design requires.)",
    ),
];

/// The bounds of the reference's overlap probe, which are chord's defaults too
/// (`OverlapConfig::default` in src/overlap.rs): the keys an `overlap` case may set them with.
const DEFAULT_BOUNDS: [(&str, usize); 3] = [("scan", 1 << 16), ("probe", 64), ("maxCandidates", 8)];

/// An `overlap` case through the crate's diff. The probe itself, under each case's bounds, is
/// replayed by the unit tests of src/overlap.rs (it is crate-private); where a case keeps the
/// default bounds, the crate's own diff of a nested string must reach the same answer.
fn run_overlap(case: &Value) {
    let name = name(case);
    let prev = case["prev"].as_str().unwrap();
    let next = case["next"].as_str().unwrap();
    let want = count(&case["expect"], "ok").expect("overlap cases expect a count");
    // Every overlap case is ASCII, where bytes and UTF-16 units coincide.
    assert!(prev.is_ascii() && next.is_ascii(), "case {name:?}");

    let defaults = DEFAULT_BOUNDS
        .iter()
        .all(|&(key, default)| count(case, key).is_none_or(|n| n == default));
    if defaults {
        let before = json!({ "s": prev });
        let after = json!({ "s": next });
        let ops = diff(&before, &after);
        let kept = match ops.as_slice() {
            [] | [Op::Append(..)] => prev.len(),
            [Op::Truncate(_, n)] | [Op::Truncate(_, n), Op::Append(..)] => prev.len() - n,
            [Op::Set(..)] => 0,
            other => panic!("case {name:?}: unexpected ops {other:?}"),
        };
        if kept == 0 && want > 0 {
            // chord sends one `s` where it is smaller than the `t` + `a` the overlap gives
            // (the reference always sends the window): check that this is why.
            let path = chord::path!["s"];
            let mut window = vec![Op::Truncate(path.clone(), prev.len() - want)];
            if next.len() > want {
                window.push(Op::Append(path, next[want..].to_owned()));
            }
            let size = |ops: &[Op]| serde_json::to_string(ops).unwrap().len();
            assert!(
                size(&ops) < size(&window),
                "case {name:?}: diff gave {ops:?}, not smaller than {window:?}"
            );
        } else {
            assert_eq!(kept, want, "case {name:?}: diff gave {ops:?}");
        }
        replay(&before, &after, &ops, name);
    }
}

/// `ops` turn `before` into `after`, and cross the wire unchanged.
fn replay(before: &Value, after: &Value, ops: &[Op], name: &str) {
    let mut replica = Some(before.clone());
    apply(&mut replica, ops).unwrap_or_else(|e| panic!("case {name:?}: {e}"));
    assert_eq!(replica.as_ref(), Some(after), "case {name:?}");
    let wire = Encoder::new().encode(ops).to_json();
    let decoded = Decoder::new().decode_str(&wire).unwrap();
    assert_eq!(decoded, ops, "case {name:?}");
}

fn run_diff(case: &Value) {
    let name = name(case);
    let (before, after) = (&case["before"], &case["after"]);
    let ops = diff(before, after);
    replay(before, after, &ops, name);
    let got = serde_json::to_value(&ops).unwrap();
    if deviates(DEVIATIONS, name) {
        check_deviation(name, &got);
        return;
    }
    assert_expected(case, Ok(got));
}

fn check_deviation(name: &str, got: &Value) {
    match name {
        "diff: root array is rewritten by splice-all, so it emits r" => {
            assert_eq!(got, &json!([["p", [], 4, 0, [4]]]));
        }
        "diff: truncate+append" => {
            assert_eq!(got, &json!([["s", ["s"], "defghxyz"]]));
        }
        other => panic!("deviation {other:?} has no check"),
    }
}

#[test]
fn tracker_conformance_vectors() {
    // The one line serde_json cannot read (a lone surrogate) is an `apply` case, covered by
    // tests/conformance.rs.
    let all = vectors::read();
    let (mut overlaps, mut diffs) = (0, 0);
    for case in all.of("overlap") {
        run_overlap(case);
        overlaps += 1;
    }
    for case in all.of("diff") {
        run_diff(case);
        diffs += 1;
    }
    assert_eq!(
        (overlaps, diffs),
        (12, 8),
        "every overlap and diff case must run"
    );
}
