//! The overlap probe on rolling windows: what [`chord::diff`] costs per slide for a nested
//! string whose next state drops from its front and appends at its end (the overlap probe,
//! then the `t`/`a` ops, or a `s` where the probe finds nothing), on the rolling-window inputs
//! of `testdata/bench/README.md`:
//!
//! - `W4`: `text50k.txt`, dropping 4 characters and appending `!!!!` per slide; 2,000 slides.
//! - `W4r`: the same slide over 50,000 `a`s, where every position is a candidate; 2,000 slides.
//! - `W4L_percentages`: a 50 KB build log of one repeated line, dropping 10 lines and
//!   appending 10 whose percentages progress, as a build's do; 50 slides.
//! - `W4L_distinct_lines`: the same log, appending lines that never repeat; 50 slides.
//! - `W4L_x2000_percentages`: the percentages over 2,000 slides.
//!
//! For each workload the states are built first and, once, the `s` ops and the op bytes over
//! all its slides are printed (outside any timing); then one slide is timed, the slides taken
//! in turn: criterion's `time` is per slide.
//!
//! ```sh
//! cargo bench -p chord-bench --bench overlap
//! cargo bench -p chord-bench --bench overlap -- W4L    # the build logs only
//! ```

use std::hint::black_box;
use std::time::Duration;

use chord::{diff, Op};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

/// One slide: the next state of the window from the current one and the slide's number.
type Step = fn(&str, usize) -> String;

/// Drop 4 characters from the front, append `!!!!`.
fn slide(s: &str, _: usize) -> String {
    format!("{}!!!!", &s[4..])
}

/// The byte offset just after the first 10 lines of `s`.
fn ten_lines(s: &str) -> usize {
    (0..10).fold(0, |at, _| at + s[at..].find('\n').unwrap() + 1)
}

/// Drop 10 lines, append 10 lines: the percentages of a progressing build...
fn log_pct(s: &str, step: usize) -> String {
    let mut next = s[ten_lines(s)..].to_owned();
    for j in 0..10 {
        let pct = (step * 10 + j) % 100;
        next.push_str(&format!("[{pct:3}%] Building CXX object src/foo.o\n"));
    }
    next
}

/// ... or lines that never repeat.
fn log_distinct(s: &str, step: usize) -> String {
    let mut next = s[ten_lines(s)..].to_owned();
    for j in 0..10 {
        next.push_str(&format!("[ 13%] Building CXX object src/f{step}_{j}.o\n"));
    }
    next
}

/// The states of a workload, each as the document `{"out": <state>}`.
fn build_states(start: &str, step: Step, steps: usize) -> Vec<Value> {
    let mut texts = vec![start.to_owned()];
    for i in 0..steps {
        let next = step(&texts[i], i);
        texts.push(next);
    }
    texts.into_iter().map(|s| json!({ "out": s })).collect()
}

/// Prints the `s` ops and the op bytes of all the slides of a workload.
fn print_sizes(name: &str, states: &[Value]) {
    let (mut sets, mut bytes) = (0, 0);
    for pair in states.windows(2) {
        for op in diff(&pair[0], &pair[1]) {
            sets += usize::from(matches!(op, Op::Set(..)));
            bytes += op.to_value().to_string().len();
        }
    }
    let slides = states.len() - 1;
    eprintln!("{name}: {slides} slides; {sets} set(s), {bytes} op bytes");
}

fn rolling_window(c: &mut Criterion) {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/bench");
    let text50k = std::fs::read_to_string(data.join("text50k.txt")).unwrap();
    let line = "[ 12%] Building CXX object src/foo.o\n";
    let log = line.repeat(50_000_usize.div_ceil(line.len()));
    let a50k = "a".repeat(50_000);
    let workloads: [(&str, &str, Step, usize); 5] = [
        ("W4", &text50k, slide, 2_000),
        ("W4r", &a50k, slide, 2_000),
        ("W4L_percentages", &log, log_pct, 50),
        ("W4L_distinct_lines", &log, log_distinct, 50),
        ("W4L_x2000_percentages", &log, log_pct, 2_000),
    ];

    let mut group = c.benchmark_group("rolling_window");
    for (name, start, step, steps) in workloads {
        // Built when criterion runs this benchmark (not when a filter leaves it out), and
        // dropped before the next one: 2,000 slides of 50 KB are 100 MB.
        let mut built: Option<Vec<Value>> = None;
        let mut at = 0;
        group.bench_function(name, |b| {
            let states = built.get_or_insert_with(|| {
                let states = build_states(start, step, steps);
                print_sizes(name, &states);
                states
            });
            b.iter(|| {
                let (before, after) = (&states[at], &states[at + 1]);
                at = (at + 1) % steps;
                diff(black_box(before), black_box(after))
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = rolling_window
}
criterion_main!(benches);
