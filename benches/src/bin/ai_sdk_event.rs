//! What one AI SDK data part costs the server to make, per event, on a workload's last flush:
//! chord's `data-chord` chunk (the flush's ops applied to the door's copy of the state, as its
//! framing does, then written as JSON) against the `data-state` chunk a runtime that sends the
//! whole state per flush writes (the state to JSON). `scripts/ai-sdk-event` runs it under
//! callgrind at two event counts and takes the difference, so the figure is instructions per
//! event without the setup.
//!
//! `ai-sdk-event <W1|W5|W6|S6> <chord|state> <events>`

use std::hint::black_box;

use chord::{Op, Tracked};
use chord_bench::patch_bytes::data_chord;
use chord_bench::workloads::*;
use serde::Serialize;
use serde_json::{json, Value};

/// Runs every step of `run`, then makes `events` chunks of `form` from the last flush (its
/// ops, and the state after it, as the typed value a runtime holds); returns their bytes.
fn measure<T: Tracked + Serialize>(
    mut run: ChordRun<T>,
    steps: usize,
    form: &str,
    events: usize,
) -> usize {
    let mut ops = Vec::new();
    for i in 0..steps {
        let (flushed, _) = run.step_ops(i);
        if !flushed.is_empty() {
            ops = flushed;
        }
    }
    let mut mirror = Some(serde_json::to_value(run.t.get()).unwrap());
    let mut bytes = 0;
    for _ in 0..events {
        bytes += match form {
            "chord" => chord_event(&mut mirror, black_box(&ops)),
            "state" => state_event(black_box(run.t.get())),
            other => panic!("unknown form {other}: chord or state"),
        };
    }
    bytes
}

/// The door's part: the ops applied to its copy of the state, then the chunk as JSON.
#[inline(never)]
fn chord_event(mirror: &mut Option<Value>, ops: &[Op]) -> usize {
    chord::apply(mirror, ops.iter().cloned()).unwrap();
    serde_json::to_string(&data_chord(ops)).unwrap().len()
}

/// A whole-state runtime's part: the state as JSON in a `data-state` chunk.
#[inline(never)]
fn state_event<T: Serialize>(state: &T) -> usize {
    let chunk =
        json!({"type": "data-state", "id": "state", "data": serde_json::to_value(state).unwrap()});
    serde_json::to_string(&chunk).unwrap().len()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: ai-sdk-event <W1|W5|W6|S6> <chord|state> <events>";
    let (workload, form, events) = match args.as_slice() {
        [_, w, f, n] => (w.as_str(), f.as_str(), n.parse::<usize>().expect(usage)),
        _ => panic!("{usage}"),
    };
    let bytes = match workload {
        "W1" => measure(chord_w1(), 1000, form, events),
        "W5" => measure(chord_w5(0), 5000, form, events),
        "W6" => measure(chord_w6(0), 1000, form, events),
        "S6" => measure(chord_s6(), S6_STEPS, form, events),
        other => panic!("unknown workload {other}: {usage}"),
    };
    println!("{workload} {form} {events} events, {bytes} bytes");
}
