//! chord against the alternatives a Rust user would pick, side by side on the workloads of
//! `testdata/bench/README.md` and the shapes S1-S6 of `BENCHMARKS.md`: muon (derive `Observe`, one `observe!` per step) and
//! json-patch (`diff` of a clone taken before the step).
//!
//! ```sh
//! cargo bench -p chord-bench --bench workloads -- --warm-up-time 1 --measurement-time 3
//! cargo bench -p chord-bench --bench workloads -- '^W5/'    # one workload (sizes and timings)
//! scripts/bench-table                                       # three runs: medians and spread
//! ```
//!
//! Ends with the run's table: the median per step of every library, chord over the floor
//! (W1, W5 and the shapes S1-S6: the step's mutation on plain data and chord's ops written
//! into a reused buffer) and
//! muon over chord. chord's step is `flush_into` a reused buffer; `W1-fresh`, `W3`, `W7` are a
//! step on a fresh copy (the spec's form: the path goes inline), `W1`, `W3-steady`,
//! `W7-steady` a step on a stream that sent ops on that path before (the path has an id).
//!
//! First prints, for every workload and library, the ops emitted and the wire bytes over the
//! whole workload (computed once, outside any timing), then times one step (mutate, flush,
//! encode, serialize to wire text): criterion's `time` is per step. Building a fresh copy of
//! the initial state and draining its base batch happens outside the timed region; for W1
//! 1,000 steps share one copy, for W5big 10,000 (see `Case::reuse`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};

use chord_bench::cases::{cases, totals, Case};
use chord_bench::workloads::Run;

/// Filters given on the command line (criterion's), to skip the size pass of the workloads
/// they leave out. Matched as plain text once the anchors `^` and `$` are taken off.
fn filters() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<f64>().is_err())
        .map(|a| a.trim_start_matches('^').trim_end_matches('$').to_owned())
        .collect()
}

fn selected(case: &Case, filters: &[String]) -> bool {
    let id = format!("{}/{}", case.workload, case.lib);
    filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()))
}

fn print_sizes(cases: &[Case], filters: &[String]) {
    eprintln!(
        "{:<11} {:<13} {:>6} {:>7} {:>15} {:>12}",
        "workload", "library", "steps", "ops", "bytes", "bytes/step"
    );
    for case in cases.iter().filter(|c| selected(c, filters)) {
        let t = totals(case);
        let approx = if t.extrapolated { "~" } else { "" };
        eprintln!(
            "{:<11} {:<13} {:>6} {:>7} {:>15} {:>12}",
            case.workload,
            case.lib,
            case.steps,
            t.ops,
            format!("{approx}{}", t.bytes),
            format!("{approx}{}", t.bytes / case.steps),
        );
    }
    eprintln!();
}

/// Times one step of `case`. One criterion iteration is one step; steps run in workload
/// order, and a fresh copy is made (untimed) when a copy has done `case.reuse` steps. Cases
/// of a single step on a fresh copy (W2, W3, W7) time a batch of fresh copies at once.
fn bench_case(g: &mut BenchmarkGroup<'_, WallTime>, case: &Case) {
    let make = case.make;
    let reuse = case.reuse;
    let mut current: Option<(Box<dyn Run>, usize)> = None;
    g.bench_function(case.lib, |b| {
        b.iter_custom(|iters| {
            let mut left = iters as usize;
            let mut total = Duration::ZERO;
            if reuse == 1 {
                while left > 0 {
                    let n = left.min(64);
                    let mut fresh: Vec<Box<dyn Run>> = (0..n).map(|_| make()).collect();
                    let start = Instant::now();
                    for run in &mut fresh {
                        black_box(run.step(0));
                    }
                    total += start.elapsed();
                    left -= n;
                }
                return total;
            }
            while left > 0 {
                if current.as_ref().is_none_or(|(_, done)| *done >= reuse) {
                    current = None; // free the old copy before making the next
                    current = Some((make(), 0));
                }
                let Some((run, done)) = current.as_mut() else {
                    unreachable!()
                };
                let n = left.min(reuse - *done);
                let start = Instant::now();
                for _ in 0..n {
                    black_box(run.step(*done));
                    *done += 1;
                }
                total += start.elapsed();
                left -= n;
            }
            total
        })
    });
}

fn main() {
    let cases = cases();
    let filters = filters();
    // `cargo bench` passes `--bench` (`cargo test` does not); with `-- --test` criterion runs
    // each case once and keeps no estimates, so there is no summary to print.
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let measured = bench_mode && !std::env::args().any(|a| a == "--test");
    if bench_mode {
        print_sizes(&cases, &filters);
    }

    let mut c = Criterion::default().configure_from_args();
    let mut workloads: Vec<&str> = cases.iter().map(|c| c.workload).collect();
    workloads.dedup();
    for w in workloads {
        let mut g = c.benchmark_group(w);
        match w {
            // One step per fresh copy: building copies dominates the wall time, so measure
            // for less time (still hundreds of thousands of steps).
            "W1-fresh" | "W2" | "W3" | "W7" | "W7-steady" => {
                g.warm_up_time(Duration::from_millis(100));
                g.measurement_time(Duration::from_millis(300));
            }
            // Each fresh copy is 10 MB or 10,000 entries; json-patch takes milliseconds a step.
            // S2's steps are 200 map edits each, on a map of 10,000 made afresh every 100.
            "W5big" | "W6big" | "S2" => {
                g.sample_size(20);
                g.measurement_time(Duration::from_secs(2));
            }
            _ => {}
        }
        for case in cases.iter().filter(|c| c.workload == w) {
            bench_case(&mut g, case);
        }
        g.finish();
    }
    c.final_summary();
    if measured {
        summary(&cases, &filters);
    }
}

/// Where criterion keeps its results (it finds the target directory the same way).
fn criterion_dir() -> Option<std::path::PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let out = std::process::Command::new(std::env::var_os("CARGO")?)
                .args(["metadata", "--format-version", "1", "--no-deps"])
                .output()
                .ok()?;
            let meta: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            Some(meta["target_directory"].as_str()?.into())
        })?;
    Some(target.join("criterion"))
}

/// The median time per step of one case in this run, in ns, from criterion's estimates.
fn median_ns(dir: &std::path::Path, workload: &str, lib: &str) -> Option<f64> {
    let file = dir.join(workload).join(lib).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn show(ns: Option<f64>) -> String {
    match ns {
        None => "-".into(),
        Some(ns) if ns < 1_000.0 => format!("{ns:.1} ns"),
        Some(ns) if ns < 1_000_000.0 => format!("{:.2} µs", ns / 1e3),
        Some(ns) => format!("{:.2} ms", ns / 1e6),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// The run's table: every workload's median per step for each library, chord over the floor
/// (the least a step can cost, where the workload has one) and muon over chord (above 1: chord
/// is faster). Also written as JSON lines to `$CHORD_BENCH_SUMMARY` when set (for
/// `scripts/bench-table`, which runs this three times).
fn summary(cases: &[Case], filters: &[String]) {
    let Some(dir) = criterion_dir() else {
        eprintln!("(no summary: criterion's directory not found)");
        return;
    };
    let mut workloads: Vec<&str> = cases.iter().map(|c| c.workload).collect();
    workloads.dedup();
    let mut lines = String::new();
    println!(
        "\n{:<11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>11}",
        "workload", "floor", "chord", "muon", "json-patch", "chord/floor", "muon/chord"
    );
    for w in workloads {
        let libs: Vec<&Case> = cases
            .iter()
            .filter(|c| c.workload == w && selected(c, filters))
            .collect();
        if libs.is_empty() {
            continue;
        }
        let get = |lib: &str| median_ns(&dir, w, lib);
        // W4's chord rows are named by the API used; the window form is the one compared.
        let chord = get("chord").or_else(|| get("chord-window"));
        let (floor, muon, patch) = (get("floor"), get("muon"), get("json-patch"));
        println!(
            "{:<11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>11}",
            w,
            show(floor),
            show(chord),
            show(muon),
            show(patch),
            ratio(chord, floor),
            ratio(muon, chord)
        );
        for case in libs {
            if let Some(ns) = get(case.lib) {
                let line = serde_json::json!({"workload": w, "lib": case.lib, "ns": ns});
                lines.push_str(&format!("{line}\n"));
            }
        }
    }
    if let Some(path) = std::env::var_os("CHORD_BENCH_SUMMARY") {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        if let Err(e) = file.and_then(|mut f| f.write_all(lines.as_bytes())) {
            eprintln!("writing the summary: {e}");
        }
    }
}
