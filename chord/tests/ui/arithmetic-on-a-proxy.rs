use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Operation {
    run_id: u64,
    started_ms: u64,
    label: String,
    failed: bool,
}

fn main() {
    let mut t = chord::track(Operation {
        run_id: 7,
        started_ms: 0,
        label: String::new(),
        failed: false,
    });
    let mut o = t.state();
    let started: u64 = o.run_id * 1000;
    o.started_ms.set(started);
    let _ = o.label + "!";
    let _ = !o.failed;
}
