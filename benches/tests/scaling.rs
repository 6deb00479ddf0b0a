//! A step's cost does not depend on the size of what it touches: for each shape S1-S5, the
//! instructions of one step (mutate, flush, wire bytes, as the steps bench runs it) on a small
//! and a large state, counted by callgrind, agree within 10%. Sizes: S1's transcript, S2's map
//! and S5's agents 100 and 100,000; S3's struct 10 and 300 fields; S4's eight levels with
//! labels of 100 and 100,000 bytes beside the path to the counter.
//!
//! Each count runs this test binary again under `valgrind --tool=callgrind`, with only the
//! test [`child`] selected and [`CASE_VAR`] naming the shape, the size and the steps. The
//! child builds the state and runs a few steps uncounted, then the steps, in [`measured`],
//! the one function callgrind counts (`--toggle-collect`): the steps alone, as
//! `benches/steps.rs` less its make-only run measures them, without the differences between
//! two runs of building 100,000 entries (a `HashMap`'s random seed changes its probes).
//! Instruction counts, unlike time, do not depend on what else the machine is doing. Without
//! valgrind each test is skipped with a `SKIPPED <test>: ...` line, except under `CI=true`,
//! where it fails.

use std::hint::black_box;
use std::io::Write;
use std::process::Command;
use std::sync::LazyLock;

use chord::Tracked;
use chord_bench::workloads::*;
use serde::Serialize;

/// The variable that makes [`child`] run a case: `<shape> <size> <steps>`.
const CASE_VAR: &str = "CHORD_SCALING_CASE";

/// The function whose instructions are counted, as callgrind names it.
const MEASURED: &str = "scaling::measured";

/// Steps run before the counted ones. The first step's allocation makes glibc's malloc
/// consolidate the small blocks that building the state freed (`malloc_consolidate`), once:
/// work proportional to the state built, not to the step.
const WARM_UP: usize = 10;

/// The largest difference allowed between a step's cost at the two sizes, as a fraction of
/// the smaller.
const TOLERANCE: f64 = 0.10;

/// Steps in S3's choice of fields (steps past it reuse it).
const S3_PICKED: usize = 1_000;

/// S3 at any width: a struct of the fields named, its field `k` starting at `k * 1,000`, and
/// a step that adds 1 to 3 of its fields (S3's seeded choice for this width).
macro_rules! wide {
    ($name:ident, $run:ident, $picks:ident; $($f:ident),* $(,)?) => {
        #[derive(Tracked, Serialize)]
        struct $name {
            $($f: i64,)*
        }

        static $picks: LazyLock<Vec<[usize; 3]>> =
            LazyLock::new(|| s3_picks_of([$(stringify!($f)),*].len(), S3_PICKED));

        /// S3 on this struct.
        fn $run() -> ChordRun<$name> {
            // Adds 1 to a field, by its index (a table, so that picking a field costs the
            // same at any width).
            type Bump = for<'a, 'b> fn(&'a mut chord::Proxy<'b, $name>);
            static BUMPS: &[Bump] = &[$(|w| w.$f += 1),*];
            let mut k = 0;
            let mut start = || {
                k += 1;
                (k - 1) * 1000
            };
            let value = $name { $($f: start(),)* };
            LazyLock::force(&$picks);
            ChordRun::drained(value, |t, i| {
                let mut s = t.state();
                for &k in &$picks[i % S3_PICKED] {
                    BUMPS[k](&mut s);
                }
            })
        }
    };
}

wide! { Wide10, wide10, PICKS10;
    f000, f001, f002, f003, f004, f005, f006, f007, f008, f009,
}

wide! { Wide300, wide300, PICKS300;
    f000, f001, f002, f003, f004, f005, f006, f007, f008, f009, f010, f011, f012, f013, f014,
    f015, f016, f017, f018, f019, f020, f021, f022, f023, f024, f025, f026, f027, f028, f029,
    f030, f031, f032, f033, f034, f035, f036, f037, f038, f039, f040, f041, f042, f043, f044,
    f045, f046, f047, f048, f049, f050, f051, f052, f053, f054, f055, f056, f057, f058, f059,
    f060, f061, f062, f063, f064, f065, f066, f067, f068, f069, f070, f071, f072, f073, f074,
    f075, f076, f077, f078, f079, f080, f081, f082, f083, f084, f085, f086, f087, f088, f089,
    f090, f091, f092, f093, f094, f095, f096, f097, f098, f099, f100, f101, f102, f103, f104,
    f105, f106, f107, f108, f109, f110, f111, f112, f113, f114, f115, f116, f117, f118, f119,
    f120, f121, f122, f123, f124, f125, f126, f127, f128, f129, f130, f131, f132, f133, f134,
    f135, f136, f137, f138, f139, f140, f141, f142, f143, f144, f145, f146, f147, f148, f149,
    f150, f151, f152, f153, f154, f155, f156, f157, f158, f159, f160, f161, f162, f163, f164,
    f165, f166, f167, f168, f169, f170, f171, f172, f173, f174, f175, f176, f177, f178, f179,
    f180, f181, f182, f183, f184, f185, f186, f187, f188, f189, f190, f191, f192, f193, f194,
    f195, f196, f197, f198, f199, f200, f201, f202, f203, f204, f205, f206, f207, f208, f209,
    f210, f211, f212, f213, f214, f215, f216, f217, f218, f219, f220, f221, f222, f223, f224,
    f225, f226, f227, f228, f229, f230, f231, f232, f233, f234, f235, f236, f237, f238, f239,
    f240, f241, f242, f243, f244, f245, f246, f247, f248, f249, f250, f251, f252, f253, f254,
    f255, f256, f257, f258, f259, f260, f261, f262, f263, f264, f265, f266, f267, f268, f269,
    f270, f271, f272, f273, f274, f275, f276, f277, f278, f279, f280, f281, f282, f283, f284,
    f285, f286, f287, f288, f289, f290, f291, f292, f293, f294, f295, f296, f297, f298, f299,
}

/// The case [`CASE_VAR`] names, its inputs built, its base batch drained.
fn make(shape: &str, size: usize) -> Box<dyn Run> {
    // The steps' shared inputs, built before any step.
    let _ = (S1_TEXTS.len(), S5_LINES.len());
    match (shape, size) {
        ("S1", n) => Box::new(chord_s1_sized(n)),
        ("S2", n) => Box::new(chord_s2_sized(n)),
        ("S3", 10) => Box::new(wide10()),
        ("S3", 300) => Box::new(wide300()),
        ("S4", n) => Box::new(chord_s4_sized(n)),
        ("S5", n) => Box::new(chord_s5_sized(n)),
        ("S5-lookups", n) => Box::new(S5Lookups::new(n)),
        other => panic!("no sized case {other:?}"),
    }
}

/// What S5's step costs a `BTreeMap` by itself, the control S5 is compared with: finding the
/// agent twice (as S5's step does: its `get_mut`, and its flush reading the member back) in
/// a plain map of as many agents, by a key formatted as S5's is.
struct S5Lookups {
    agents: std::collections::BTreeMap<String, ch::Agent>,
}

impl S5Lookups {
    fn new(n: usize) -> Self {
        S5Lookups {
            agents: s5_sized_agents(n),
        }
    }
}

impl Run for S5Lookups {
    fn step(&mut self, i: usize) -> Emitted {
        let key = s5_key((i * 389) % self.agents.len());
        black_box(self.agents.get_mut(&key).map(|a| a.log.len()));
        black_box(self.agents.get(&key).map(|a| a.log.len()));
        Emitted::default()
    }
}

/// Runs the case [`CASE_VAR`] names, when it names one (under callgrind, started by the
/// tests below); otherwise does nothing.
#[test]
fn child() {
    let Ok(case) = std::env::var(CASE_VAR) else {
        return;
    };
    let words: Vec<&str> = case.split(' ').collect();
    let [shape, size, steps] = words[..] else {
        panic!("{CASE_VAR}={case:?}: expected `<shape> <size> <steps>`");
    };
    let size: usize = size.parse().expect("a size");
    let steps: usize = steps.parse().expect("a number of steps");
    let mut run = make(shape, size);
    for i in 0..WARM_UP {
        black_box(run.step(i));
    }
    measured(&mut *run, steps);
}

/// The steps counted, after [`WARM_UP`]'s: the only function whose instructions callgrind
/// collects (with what it calls).
#[inline(never)]
fn measured(run: &mut dyn Run, steps: usize) {
    for i in WARM_UP..WARM_UP + steps {
        black_box(run.step(i));
    }
}

/// Whether valgrind runs here. Under `CI=true` its absence panics; otherwise a
/// `SKIPPED <test>` line says how to install it.
fn valgrind() -> bool {
    let runs = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a scaling test")
        .to_owned();
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, so {test} must run, but valgrind is missing (apt-get install valgrind)");
    }
    // Written to the stderr handle, which the harness does not capture, so the line shows in
    // a plain `cargo test`.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: valgrind is missing (apt-get install valgrind)"
    );
    false
}

/// Instructions of the child's counted `steps` steps of `shape` at `size`.
fn instructions(shape: &str, size: usize, steps: usize) -> u64 {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(format!("--toggle-collect={MEASURED}"))
        .arg(&exe)
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CASE_VAR, format!("{shape} {size} {steps}"))
        .output()
        .expect("valgrind runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{shape} {size} {steps}: the child failed:\n{}{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let ran = String::from_utf8_lossy(&out.stdout);
    assert!(
        ran.contains("test child ... ok"),
        "{shape} {size} {steps}: the child did not run:\n{ran}"
    );
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("Collected : ")
                .map(|(_, n)| n.trim().parse().ok())
        })
        .flatten()
        .unwrap_or_else(|| panic!("{shape} {size} {steps}: no `Collected :` in\n{stderr}"))
}

/// Instructions of one step of `shape` at `size`, over `steps` steps.
fn per_step(shape: &str, size: usize, steps: usize) -> u64 {
    let counted = instructions(shape, size, steps);
    assert!(
        counted > 0,
        "{shape} {size}: callgrind counted nothing in `{MEASURED}`"
    );
    counted / steps as u64
}

/// A step of `shape` costs the same, within [`TOLERANCE`], at `small` and at `large`, once
/// what the step of `control` (if any) grows by between the two sizes is taken off.
fn flat(shape: &str, control: Option<&str>, small: usize, large: usize, steps: usize) {
    if !valgrind() {
        return;
    }
    let a = per_step(shape, small, steps) as i64;
    let b = per_step(shape, large, steps) as i64;
    let (growth, of) = match control {
        Some(c) => {
            let growth = per_step(c, large, steps) as i64 - per_step(c, small, steps) as i64;
            (growth, format!(", less {c}'s growth ({growth:+})"))
        }
        None => (0, String::new()),
    };
    let change = (b - growth - a) as f64 / a.min(b - growth) as f64;
    eprintln!(
        "{shape}: {a} instructions a step at {small}, {b} at {large}{of}: {:+.1}%",
        change * 100.0
    );
    assert!(
        change.abs() <= TOLERANCE,
        "{shape}: a step costs {a} instructions at {small} and {b} at {large}{of}: {:+.1}%, \
         more than {:.0}% apart",
        change * 100.0,
        TOLERANCE * 100.0
    );
}

#[test]
fn s1_element_reassigned_in_100_or_100000_entries() {
    flat("S1", None, 100, 100_000, 1_000);
}

#[test]
fn s2_churn_in_a_map_of_100_or_100000() {
    flat("S2", None, 100, 100_000, 200);
}

/// Fails by design: a struct's step grows with its width, as `Tracker::state` builds every
/// field's proxy (proxies are eager); the flush and reset visit the written fields alone.
/// Run it with `--ignored`.
#[test]
#[ignore = "a struct's proxy is built field by field: O(fields)"]
fn s3_three_fields_changed_of_10_or_300() {
    flat("S3", None, 10, 300, 1_000);
}

#[test]
fn s4_counter_beside_labels_of_100_or_100000_bytes() {
    flat("S4", None, 100, 100_000, 1_000);
}

/// S5's map is a `BTreeMap`, whose lookups cost `O(log n)`: a step finds the agent twice
/// (its own `get_mut`, and the flush reading the member back), so the step grows with the
/// map by what those lookups do (the control `S5-lookups`), and by nothing else.
#[test]
fn s5_log_push_among_100_or_100000_agents() {
    flat("S5", Some("S5-lookups"), 100, 100_000, 1_000);
}
