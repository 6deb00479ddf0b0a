//! Every workload in every library, as the benchmarks run them: the rows of the workloads
//! bench and of `scripts/bench-table`'s tables, and what the steps bench counts.

use crate::alternatives::*;
use crate::workloads::*;

/// One workload in one library, as the benchmark runs it.
pub struct Case {
    /// `W1` ... `W7`, `W4r`, `W4L`, `W5big`, `W6big`, `W5-last500`, and the shapes `S1` ... `S6`.
    pub workload: &'static str,
    /// `floor`, `chord`, `chord-assign`, `chord-window`, `chord-deref`, `muon`, `json-patch`.
    pub lib: &'static str,
    /// Steps in the workload.
    pub steps: usize,
    /// Timing: steps run on one copy before a fresh copy is made (untimed). Equal to `steps`
    /// except for W1 (1,000 appends per fresh 40 KB copy: the step does not depend on the
    /// 1,000 bytes added), W5big (10,000 steps per copy: the text has room for them) and
    /// W6big (10,000 steps per copy: making and freeing 10,000 entries between every 1,000
    /// steps would leave the allocator's clean-up inside the timed steps).
    pub reuse: usize,
    /// Sizes: steps actually run when counting ops and bytes; fewer than `steps` only where
    /// one step takes tens of milliseconds (json-patch on W5big), and then extrapolated.
    pub size_steps: usize,
    /// A fresh stream, its base batch drained.
    pub make: fn() -> Box<dyn Run>,
}

/// Every workload in every library, in the order of `BENCHMARKS.md`'s table.
pub fn cases() -> Vec<Case> {
    // The workloads' shared inputs, built now rather than inside the first step that needs
    // them: a measured step never pays for reading or building them, and a run of N steps
    // and a run of none differ by the steps alone.
    let _ = (
        TEXT40K.len(),
        TEXT50K.len(),
        W6_ENTRIES.len(),
        *W4L_LINES,
        CH_ENTRIES.len(),
        MU_ENTRIES.len(),
        S1_TEXTS.len(),
        S2_KEYS.len(),
        S3_PICKS.len(),
        S5_KEYS.len(),
        S5_LINES.len(),
        S6_STEPS_DATA.len(),
    );
    fn case(
        workload: &'static str,
        lib: &'static str,
        steps: usize,
        make: fn() -> Box<dyn Run>,
    ) -> Case {
        Case {
            workload,
            lib,
            steps,
            reuse: steps,
            size_steps: steps,
            make,
        }
    }
    let reuse = |mut c: Case, reuse: usize| {
        c.reuse = reuse;
        c
    };
    let sample = |mut c: Case, size_steps: usize| {
        c.size_steps = size_steps;
        c
    };
    vec![
        // W1 as the spec has it (one step on a fresh copy: the path goes inline) and in the
        // steady state (1,000 steps on one copy: the path has an id).
        case("W1-fresh", "floor", 1, || Box::new(floor_w1(false))),
        case("W1-fresh", "chord", 1, || Box::new(chord_w1())),
        case("W1-fresh", "muon", 1, || Box::new(muon_w1())),
        reuse(case("W1", "floor", 1, || Box::new(floor_w1(true))), 1000),
        reuse(case("W1", "chord", 1, || Box::new(chord_w1())), 1000),
        reuse(case("W1", "muon", 1, || Box::new(muon_w1())), 1000),
        reuse(case("W1", "json-patch", 1, || Box::new(patch_w1())), 1000),
        case("W2", "chord", 1, || Box::new(chord_w2())),
        case("W2", "muon", 1, || Box::new(muon_w2())),
        case("W2", "json-patch", 1, || Box::new(patch_w2())),
        case("W3", "chord", 1, || Box::new(chord_w3())),
        case("W3", "muon", 1, || Box::new(muon_w3())),
        case("W3", "json-patch", 1, || Box::new(patch_w3())),
        // Steady: a copy whose stream popped before (the path has an id), 50 pops a copy.
        reuse(
            case("W3-steady", "chord", 1, || {
                Box::new(chord_w3().warmed(&[w3_pop, w3_pop]))
            }),
            50,
        ),
        reuse(case("W3-steady", "muon", 1, || Box::new(muon_w3())), 50),
        case("W4", "chord-window", 2000, || {
            Box::new(chord_w4_window(false))
        }),
        case("W4", "chord-assign", 2000, || {
            Box::new(chord_w4_assign(false))
        }),
        case("W4", "muon", 2000, || Box::new(muon_w4(false))),
        case("W4", "json-patch", 2000, || Box::new(patch_w4(false))),
        case("W4r", "chord-window", 2000, || {
            Box::new(chord_w4_window(true))
        }),
        case("W4r", "chord-assign", 2000, || {
            Box::new(chord_w4_assign(true))
        }),
        case("W4r", "muon", 2000, || Box::new(muon_w4(true))),
        case("W4r", "json-patch", 2000, || Box::new(patch_w4(true))),
        case("W4L", "chord-window", 50, || Box::new(chord_w4l_window())),
        case("W4L", "chord-assign", 50, || Box::new(chord_w4l_assign())),
        case("W4L", "muon", 50, || Box::new(muon_w4l())),
        case("W4L", "json-patch", 50, || Box::new(patch_w4l())),
        case("W5", "floor", 5000, || Box::new(floor_w5(0))),
        case("W5", "chord", 5000, || Box::new(chord_w5(0))),
        case("W5", "muon", 5000, || Box::new(muon_w5(0))),
        case("W5", "json-patch", 5000, || Box::new(patch_w5(0))),
        case("W5-last500", "floor", 500, || {
            Box::new(floor_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "chord", 500, || {
            Box::new(chord_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "muon", 500, || {
            Box::new(muon_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "json-patch", 500, || {
            Box::new(patch_w5(W5_TAIL_FROM))
        }),
        reuse(
            case("W5big", "chord", 1000, || Box::new(chord_w5big())),
            10_000,
        ),
        reuse(
            case("W5big", "muon", 1000, || Box::new(muon_w5big())),
            10_000,
        ),
        sample(
            reuse(
                case("W5big", "json-patch", 1000, || Box::new(patch_w5big())),
                10_000,
            ),
            20,
        ),
        // W5big's step on a 50 KB message: what W5big's cost per step is compared with.
        reuse(
            case("W5big-50KB", "chord", 1000, || {
                Box::new(chord_w5big_on(50_000))
            }),
            10_000,
        ),
        reuse(
            case("W5big-50KB", "muon", 1000, || {
                Box::new(muon_w5big_on(50_000))
            }),
            10_000,
        ),
        case("W6", "chord", 1000, || Box::new(chord_w6(0))),
        case("W6", "muon", 1000, || Box::new(muon_w6(0))),
        case("W6", "json-patch", 1000, || Box::new(patch_w6(0))),
        reuse(
            case("W6big", "chord", 1000, || Box::new(chord_w6(W6BIG_ENTRIES))),
            10_000,
        ),
        reuse(
            case("W6big", "muon", 1000, || Box::new(muon_w6(W6BIG_ENTRIES))),
            10_000,
        ),
        case("W6big", "json-patch", 1000, || {
            Box::new(patch_w6(W6BIG_ENTRIES))
        }),
        case("W7", "chord", 1, || Box::new(chord_w7())),
        case("W7", "muon", 1, || Box::new(muon_w7())),
        case("W7", "json-patch", 1, || Box::new(patch_w7())),
        // Steady: the list's path has an id (a push and a pop sent before the clear).
        case("W7-steady", "chord", 1, || {
            Box::new(chord_w7().warmed(&[w7_push, w7_pop]))
        }),
        case("W7-steady", "muon", 1, || Box::new(muon_w7())),
        // The shapes: a step that touches little of a large or deep state.
        case("S1", "floor", S1_STEPS, || Box::new(floor_s1())),
        case("S1", "chord", S1_STEPS, || Box::new(chord_s1())),
        case("S1", "chord-deref", S1_STEPS, || Box::new(chord_s1_deref())),
        case("S1", "muon", S1_STEPS, || Box::new(muon_s1())),
        case("S1", "json-patch", S1_STEPS, || Box::new(patch_s1())),
        case("S2", "floor", S2_STEPS, || Box::new(floor_s2())),
        case("S2", "chord", S2_STEPS, || Box::new(chord_s2())),
        case("S2", "muon", S2_STEPS, || Box::new(muon_s2())),
        case("S2", "json-patch", S2_STEPS, || Box::new(patch_s2())),
        case("S3", "floor", S3_STEPS, || Box::new(floor_s3())),
        case("S3", "chord", S3_STEPS, || Box::new(chord_s3())),
        case("S3", "muon", S3_STEPS, || Box::new(muon_s3())),
        case("S3", "json-patch", S3_STEPS, || Box::new(patch_s3())),
        case("S4", "floor", S4_STEPS, || Box::new(floor_s4())),
        case("S4", "chord", S4_STEPS, || Box::new(chord_s4())),
        case("S4", "muon", S4_STEPS, || Box::new(muon_s4())),
        case("S4", "json-patch", S4_STEPS, || Box::new(patch_s4())),
        case("S5", "floor", S5_STEPS, || Box::new(floor_s5())),
        case("S5", "chord", S5_STEPS, || Box::new(chord_s5())),
        case("S5", "muon", S5_STEPS, || Box::new(muon_s5())),
        case("S5", "json-patch", S5_STEPS, || Box::new(patch_s5())),
        case("S6", "floor", S6_STEPS, || Box::new(floor_s6())),
        case("S6", "chord", S6_STEPS, || Box::new(chord_s6())),
        case("S6", "muon", S6_STEPS, || Box::new(muon_s6())),
        case("S6", "json-patch", S6_STEPS, || Box::new(patch_s6())),
    ]
}

/// Ops and bytes over a whole workload.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    /// Ops emitted, all steps.
    pub ops: usize,
    /// Wire bytes, all steps.
    pub bytes: usize,
    /// Whether the totals were extrapolated from `size_steps` steps.
    pub extrapolated: bool,
}

/// Runs `case` once from a fresh copy and adds up what it emitted.
pub fn totals(case: &Case) -> Totals {
    let mut run = (case.make)();
    let mut t = Totals::default();
    for i in 0..case.size_steps {
        let e = run.sizes(i);
        t.ops += e.ops;
        t.bytes += e.bytes;
    }
    if case.size_steps < case.steps {
        t.ops = t.ops * case.steps / case.size_steps;
        t.bytes = (t.bytes as u128 * case.steps as u128 / case.size_steps as u128) as usize;
        t.extrapolated = true;
    }
    t
}

#[cfg(test)]
mod tests {
    use crate::workloads::*;

    /// Runs chord's case and the floor side by side, handing `check` each step's wire texts
    /// (chord's, the floor's).
    fn side_by_side<T: chord::Tracked, S>(
        mut chord: ChordRun<T>,
        mut floor: ShapeFloor<S>,
        steps: usize,
        mut check: impl FnMut(usize, &str, &str),
    ) {
        for i in 0..steps {
            let (ops, wire) = chord.step_ops(i);
            let e = floor.step(i);
            assert_eq!(e.ops, ops.len(), "step {i}: as many ops as chord's");
            assert_eq!(e.bytes, floor.wire().len());
            check(i, &wire, std::str::from_utf8(floor.wire()).unwrap());
        }
    }

    /// The batch's ops as JSON values, in an order that does not depend on the map's.
    fn sorted_ops(wire: &str) -> Vec<serde_json::Value> {
        let serde_json::Value::Array(mut ops) = serde_json::from_str(wire).unwrap() else {
            panic!("a batch is an array: {wire}");
        };
        ops.sort_by_key(|op| op.to_string());
        ops
    }

    // S1, S2 and S5 send their paths inline at every step: the floor writes chord's bytes.

    #[test]
    fn s1_floor_writes_chord_wire() {
        side_by_side(chord_s1(), floor_s1(), S1_STEPS, |i, c, f| {
            assert_eq!(c, f, "S1 step {i}");
        });
    }

    #[test]
    fn s2_floor_writes_chord_ops() {
        side_by_side(chord_s2(), floor_s2(), S2_STEPS, |i, c, f| {
            assert_eq!(c.len(), f.len(), "S2 step {i}");
            assert_eq!(sorted_ops(c), sorted_ops(f), "S2 step {i}");
        });
    }

    /// S6 repeats an entry now and then (2,000 entries, 1,000 steps), whose path chord sends
    /// as an id from then on: those steps are compared by their ops' values.
    #[test]
    fn s6_floor_writes_chord_ops() {
        let (mut same, mut repeats) = (0, 0);
        side_by_side(chord_s6(), floor_s6(), S6_STEPS, |i, c, f| {
            if c == f {
                same += 1;
                return;
            }
            repeats += 1;
            let ops =
                |wire: &str| -> Vec<serde_json::Value> { serde_json::from_str(wire).unwrap() };
            let (c, f) = (ops(c), ops(f));
            let set = c.iter().find(|op| op[0] == "s").expect("a set");
            assert_eq!(set[2], f[0][2], "S6 step {i}: the same text set");
        });
        assert!(
            same > 500,
            "S6: {same} steps write the floor's bytes, {repeats} repeat"
        );
    }

    #[test]
    fn s5_floor_writes_chord_wire() {
        side_by_side(chord_s5(), floor_s5(), S5_STEPS, |i, c, f| {
            assert_eq!(c, f, "S5 step {i}");
        });
    }

    // S3 and S4 repeat their paths, which chord sends as ids once defined: the floor writes
    // the steady form throughout.

    #[test]
    fn s3_floor_writes_as_many_bytes_as_chord_once_steady() {
        let (mut chord, mut floor) = (0, 0);
        side_by_side(chord_s3(), floor_s3(), S3_STEPS, |i, c, f| {
            // (Steps that define an id, the first time a field repeats, are left out.)
            if !c.contains('#') && !c.contains("[\"f") {
                chord += c.len();
                floor += f.len();
            }
            let values = |wire: &str| {
                let ops: Vec<serde_json::Value> = serde_json::from_str(wire).unwrap();
                let sets = ops.iter().filter(|op| op[0] == "s");
                let mut v: Vec<_> = sets.map(|op| op[2].clone()).collect();
                v.sort_by_key(|v| v.to_string());
                v
            };
            assert_eq!(values(c), values(f), "S3 step {i}: the same values set");
        });
        let diff = (chord as f64 - floor as f64).abs() / chord as f64;
        assert!(diff < 0.01, "S3: chord {chord} bytes, the floor {floor}");
    }

    #[test]
    fn s4_floor_writes_chord_wire_once_steady() {
        side_by_side(chord_s4(), floor_s4(), S4_STEPS, |i, c, f| {
            if i >= 2 {
                assert_eq!(c, f, "S4 step {i}");
            }
        });
    }
}
