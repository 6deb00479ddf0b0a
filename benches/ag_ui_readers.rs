//! What one AG-UI reader costs the server per event: heap bytes allocated (and allocations)
//! while readers read a finished run's events, counted by a counting allocator.
//!
//! The run: a scripted agent whose state starts at about 64 KB (a plan of 200 steps), then
//! 200 flushes, each marking a step done and appending a token to the answer. After it
//! finished, `READERS` readers (default 50, or the first argument) each read the run's events
//! from the start, one after another, in process through the router. The first reader is
//! shown apart: it reads what no reader read before (with shared frames, it makes them); the
//! figure per event per reader is over the other readers.
//!
//! `cargo bench -p chord-bench --features ag-ui --bench ag_ui_readers [-- READERS]`
//!
//! The code compiles against chord before and after its AG-UI door moved onto the live layer
//! (the agent is generic over the store its run is written to), so the same file measures
//! both.

use std::sync::atomic::Ordering::Relaxed;

use axum::body::Body;
use axum::http::Request;
use chord::ag_ui::{AgUi, AgentError, Run, RunAgentInput};
use chord::store::{JsonlStore, Store};
use chord::streams::Log;
use chord::Tracked;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use tower_service::Service;

/// The tests' counting allocator: bytes and allocations counted as they are made.
#[path = "../chord/tests/support/counting.rs"]
mod counting;

use counting::{ALLOCATED as BYTES, ALLOCATIONS as CALLS};

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

#[derive(Tracked, Serialize, Deserialize, Default)]
struct Plan {
    steps: Vec<Step>,
}

#[derive(Tracked, Serialize, Deserialize, Default)]
struct Step {
    title: String,
    done: bool,
}

const STEPS: usize = 200;

fn agent<S: Store>(_: &RunAgentInput, run: &mut Run<Plan, S>) -> Result<(), AgentError> {
    for i in 0..STEPS {
        run.state().steps.push(Step {
            title: format!("step {i:03}: {}", "x".repeat(300)),
            done: false,
        });
    }
    run.flush()?;
    let answer = run.start_message();
    for i in 0..STEPS {
        if let Some(mut step) = run.state().steps.get_mut(i) {
            step.done.set(true);
        }
        run.append(&answer, "token ");
        run.flush()?;
    }
    Ok(())
}

/// What a response's body held: its events (`data:` lines) and whether the run finished in
/// it. Read frame by frame, keeping nothing: what is counted is the server's.
async fn read(app: &mut axum::Router, request: Request<Body>) -> (usize, bool) {
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let mut body = response.into_body();
    let (mut events, mut finished) = (0, false);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            // Each frame holds whole events.
            events += data.windows(7).filter(|w| w == b"\ndata: ").count()
                + usize::from(data.starts_with(b"data: "));
            finished |= data.windows(12).any(|w| w == b"RUN_FINISHED");
        }
    }
    (events, finished)
}

fn main() {
    let readers: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
        let log = Log::new(store);
        let mut app = AgUi::new(&log, agent).router();
        let input = r#"{"threadId":"t","runId":"r","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}"#;
        let post = Request::post("/")
            .header("content-type", "application/json")
            .body(Body::from(input))
            .unwrap();
        let (_, finished) = read(&mut app, post).await;
        assert!(finished, "the run finished");
        let get = || Request::get("/runs/t/r").body(Body::empty()).unwrap();
        let mut per_reader = Vec::new();
        let mut events = 0;
        for _ in 0..readers {
            let (bytes, calls) = (BYTES.load(Relaxed), CALLS.load(Relaxed));
            let (read_events, finished) = read(&mut app, get()).await;
            per_reader.push((BYTES.load(Relaxed) - bytes, CALLS.load(Relaxed) - calls));
            events = read_events;
            assert!(finished);
        }
        let (first_bytes, first_calls) = per_reader[0];
        let rest = &per_reader[1..];
        let n = rest.len().max(1) as f64;
        let bytes = rest.iter().map(|r| r.0).sum::<usize>() as f64 / n;
        let calls = rest.iter().map(|r| r.1).sum::<usize>() as f64 / n;
        println!("readers: {readers}, events per reader: {events}");
        println!(
            "first reader: {first_bytes} bytes in {first_calls} allocations ({:.0} bytes, {:.1} allocations per event)",
            first_bytes as f64 / events as f64,
            first_calls as f64 / events as f64
        );
        println!(
            "every other reader: {bytes:.0} bytes in {calls:.0} allocations ({:.0} bytes, {:.1} allocations per event)",
            bytes / events as f64,
            calls / events as f64
        );
    });
}
