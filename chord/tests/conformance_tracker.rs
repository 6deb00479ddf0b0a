//! Replays the tracker's conformance vectors, the `overlap` and `diff` cases of
//! `testdata/conformance/vectors.jsonl` (format in its README), against chord.
//!
//! Every case must match, except those listed in `DEVIATIONS` with the reason; for those the
//! test checks chord's own behaviour instead. Every `diff` is also replayed with `apply` and
//! through the wire codec.

use chord::{apply, diff, Decoder, Encoder, Op};
use serde_json::{json, Value};

/// The overlap detector is crate-private; this test compiles the very same source file.
#[path = "../src/overlap.rs"]
mod overlap;

use overlap::{overlap, OverlapConfig};

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance/vectors.jsonl")
}

/// Cases where chord chooses differently from the reference, and why.
const DEVIATIONS: &[(&str, &str)] = &[(
    "diff: root array is rewritten by splice-all, so it emits r",
    "The reference's harness rewrote the root array with a splice of all of it, which its \
     tracker normalises to an `r`. chord's diff compares the values and sees the common prefix: \
     the array only grew at the end, so it emits [\"p\",[],4,0,[4]], smaller and equivalent. \
     (A root `p` is always a partial modification, as the design requires.)",
)];

fn deviation(name: &str) -> bool {
    DEVIATIONS.iter().any(|(n, _)| *n == name)
}

fn count(case: &Value, key: &str) -> Option<usize> {
    case.get(key).map(|v| {
        let n = v
            .as_u64()
            .unwrap_or_else(|| panic!("{key} is a count: {v}"));
        usize::try_from(n).unwrap()
    })
}

fn run_overlap(case: &Value) {
    let name = case["name"].as_str().unwrap();
    let prev = case["prev"].as_str().unwrap();
    let next = case["next"].as_str().unwrap();
    let defaults = OverlapConfig::default();
    let cfg = OverlapConfig {
        scan: count(case, "scan").unwrap_or(defaults.scan),
        probe: count(case, "probe").unwrap_or(defaults.probe),
        max_candidates: count(case, "maxCandidates").unwrap_or(defaults.max_candidates),
    };
    let want = count(&case["expect"], "ok").expect("overlap cases expect a count");
    // Every overlap case is ASCII, where bytes and UTF-16 units coincide.
    assert!(prev.is_ascii() && next.is_ascii(), "case {name:?}");
    assert_eq!(overlap(prev, next, &cfg), want, "case {name:?}");

    // With the default bounds, the crate's own diff must reach the same answer.
    if cfg == defaults {
        let before = json!({ "s": prev });
        let after = json!({ "s": next });
        let ops = diff(&before, &after);
        let kept = match ops.as_slice() {
            [] | [Op::Append(..)] => prev.len(),
            [Op::Truncate(_, n)] | [Op::Truncate(_, n), Op::Append(..)] => prev.len() - n,
            [Op::Set(..)] => 0,
            other => panic!("case {name:?}: unexpected ops {other:?}"),
        };
        assert_eq!(kept, want, "case {name:?}: diff gave {ops:?}");
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
    let name = case["name"].as_str().unwrap();
    let (before, after) = (&case["before"], &case["after"]);
    let ops = diff(before, after);
    replay(before, after, &ops, name);
    let got = serde_json::to_value(&ops).unwrap();
    if deviation(name) {
        check_deviation(name, &got);
        return;
    }
    let want = case["expect"].get("ok").expect("diff cases expect ops");
    assert_eq!(&got, want, "case {name:?}");
}

fn check_deviation(name: &str, got: &Value) {
    match name {
        "diff: root array is rewritten by splice-all, so it emits r" => {
            assert_eq!(got, &json!([["p", [], 4, 0, [4]]]));
        }
        other => panic!("deviation {other:?} has no check"),
    }
}

#[test]
fn tracker_conformance_vectors() {
    let text = std::fs::read_to_string(vectors_path()).expect("conformance vectors readable");
    let (mut overlaps, mut diffs) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        // The one line serde_json cannot read (a lone surrogate) is an `apply` case, covered
        // by tests/conformance.rs.
        let Ok(case) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match case["cmd"].as_str().unwrap() {
            "overlap" => {
                run_overlap(&case);
                overlaps += 1;
            }
            "diff" => {
                run_diff(&case);
                diffs += 1;
            }
            _ => {}
        }
    }
    assert_eq!(
        (overlaps, diffs),
        (12, 8),
        "every overlap and diff case must run"
    );
}
