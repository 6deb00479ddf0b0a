//! The alternatives' wire output describes the same change as chord's: each muon mutation and
//! each JSON Patch of the benchmark workloads, applied to a replica, makes it equal to the
//! state, so the byte counts the workloads bench compares with chord's are of honest updates.

use chord_bench::alternatives::*;
use chord_bench::cases::cases;
use chord_bench::workloads::W5_TAIL_FROM;
use muon::Adapter;
use serde::Serialize;
use serde_json::Value;

/// Every small workload in muon and in json-patch, applied step by step to a replica.
#[test]
fn alternatives_emit_correct_updates() {
    for case in cases() {
        let small = matches!(
            case.workload,
            "W1" | "W2"
                | "W3"
                | "W4L"
                | "W6"
                | "W7"
                | "W5-last500"
                | "S1"
                | "S2"
                | "S3"
                | "S4"
                | "S5"
                | "S6"
        );
        // (The floor is no library: it writes a fixed op, not the workload's update.)
        if !small || case.lib.starts_with("chord") || case.lib == "floor" {
            continue;
        }
        let name = format!("{}/{}", case.workload, case.lib);
        match case.lib {
            "muon" => check_muon(&name, case.workload, case.steps),
            "json-patch" => check_patch(&name, case.workload, case.steps),
            _ => unreachable!(),
        }
    }
}

fn check_muon(name: &str, workload: &str, steps: usize) {
    fn go<T: Serialize>(name: &str, mut run: MuonRun<T>, steps: usize) {
        let mut replica = serde_json::to_value(&run.v).unwrap();
        for i in 0..steps {
            let (m, wire) = run.step_mutation(i);
            let Some(m) = m else { continue };
            assert!(wire.is_some());
            muon::adapter::Json::mutate(&mut replica, m, &mut Default::default())
                .unwrap_or_else(|e| panic!("{name} step {i}: {e:?}"));
        }
        assert_eq!(replica, serde_json::to_value(&run.v).unwrap(), "{name}");
    }
    match workload {
        "W1" => go(name, muon_w1(), steps),
        "W2" => go(name, muon_w2(), steps),
        "W3" => go(name, muon_w3(), steps),
        "W4L" => go(name, muon_w4l(), steps),
        "W5-last500" => go(name, muon_w5(W5_TAIL_FROM), steps),
        "W6" => go(name, muon_w6(0), steps),
        "W7" => go(name, muon_w7(), steps),
        "S1" => go(name, muon_s1(), steps),
        "S2" => go(name, muon_s2(), steps),
        "S3" => go(name, muon_s3(), steps),
        "S4" => go(name, muon_s4(), steps),
        "S5" => go(name, muon_s5(), steps),
        "S6" => go(name, muon_s6(), steps),
        other => panic!("{other}"),
    }
}

fn check_patch(name: &str, workload: &str, steps: usize) {
    let mut run = match workload {
        "W1" => patch_w1(),
        "W2" => patch_w2(),
        "W3" => patch_w3(),
        "W4L" => patch_w4l(),
        "W5-last500" => patch_w5(W5_TAIL_FROM),
        "W6" => patch_w6(0),
        "W7" => patch_w7(),
        "S1" => patch_s1(),
        "S2" => patch_s2(),
        "S3" => patch_s3(),
        "S4" => patch_s4(),
        "S5" => patch_s5(),
        "S6" => patch_s6(),
        other => panic!("{other}"),
    };
    let mut replica: Value = run.v.clone();
    for i in 0..steps {
        let (_, wire) = run.step_patch(i);
        let patch: json_patch::Patch = serde_json::from_str(&wire).unwrap();
        json_patch::patch(&mut replica, &patch).unwrap_or_else(|e| panic!("{name} step {i}: {e}"));
    }
    assert_eq!(replica, run.v, "{name}");
}
