//! Runs the steps of one workload and nothing else, for instruction counts under callgrind
//! (which, unlike wall-clock time, do not depend on what else the machine is doing):
//!
//! ```sh
//! cargo bench -p chord-bench --bench steps --no-run   # prints the binary's path
//! valgrind --tool=callgrind <binary> W5 chord 5000    # make + 5000 steps
//! valgrind --tool=callgrind <binary> W5 chord 0       # make only: subtract it
//! ```
//!
//! `scripts/compare-steps OLD_COMMIT` does this for every chord workload at the current
//! tree and at `OLD_COMMIT`, side by side. Arguments: workload, library (as in
//! `chord_bench::cases`), and the number of steps (default: the workload's own); steps past the
//! workload's reuse count continue on fresh copies, as the timing bench does.

use std::hint::black_box;

// `scripts/compare-steps` builds this file in trees from before the benchmark member too,
// with this line replaced by a module of their `chord/tests/support/workloads.rs`.
use chord_bench::cases::cases;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (Some(workload), Some(lib)) = (args.first(), args.get(1)) else {
        // The workloads, with the steps each runs on one copy.
        for case in cases() {
            println!("{} {} {}", case.workload, case.lib, case.reuse);
        }
        return;
    };
    let case = cases()
        .into_iter()
        .find(|c| c.workload == workload && c.lib == lib)
        .unwrap_or_else(|| panic!("no workload {workload} {lib}"));
    let steps: usize = args
        .get(2)
        .map(|n| n.parse().expect("a number of steps"))
        .unwrap_or(case.steps);
    let mut run = (case.make)();
    let mut on_copy = 0;
    for _ in 0..steps {
        if on_copy == case.reuse {
            run = (case.make)();
            on_copy = 0;
        }
        black_box(run.step(on_copy));
        on_copy += 1;
    }
}
