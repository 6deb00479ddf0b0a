//! A Durable Streams server over a JSONL log, for clients and test suites to talk to.
//!
//! ```sh
//! cargo run --example streams_server -- [--port N] [--log PATH] [--writes]
//! ```
//!
//! Serves every address of the log at `/streams/{namespace}/{key}`, and the namespace `v1` at
//! `/v1/stream/{key}` too (the path the protocol's conformance suite uses). `--writes` enables
//! the protocol's write side for every request (an authorization hook that allows all: for
//! local testing only), with streams that are not chord logs held in memory (`Memory`).
//! `/healthz` and `/readyz` answer the liveness and readiness probes (`Health`). Ctrl-C
//! drains: SSE responses end at an event boundary, catch-up reads in flight finish. Prints
//! `listening on http://...` once it accepts connections.

use std::time::Duration;

use chord::store::{Durability, JsonlStore};
use chord::streams::{serve, Health, Log, Memory, Streams};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let port: u16 = value("--port").map_or(Ok(0), |p| p.parse())?;
    let path = value("--log").map_or_else(
        || std::env::temp_dir().join(format!("chord-streams-{}.jsonl", std::process::id())),
        Into::into,
    );
    let grouped = Durability::Grouped {
        max_batches: 64,
        max_delay: Duration::from_millis(5),
    };
    let log = Log::new(JsonlStore::open(&path, grouped)?);
    let streams = || {
        let s = Streams::new(&log).long_poll(Duration::from_secs(2));
        if args.iter().any(|a| a == "--writes") {
            s.writes(|_| true).backend(Memory::new())
        } else {
            s
        }
    };
    let app = streams()
        .router()
        .merge(streams().namespace_router("/v1/stream", "v1"))
        .merge(Health::new(&log).router());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "listening on http://{} (log {})",
        listener.local_addr()?,
        path.display()
    );
    serve(listener, app, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
