//! One node of a chord cluster: a Durable Streams server over a PostgreSQL store, and
//! optionally the producer of one agent lane.
//!
//! ```sh
//! cargo run --features streams,postgres --example cluster_node -- \
//!     --db 'postgres://postgres@127.0.0.1:5432/test?schema=demo' [--port N] \
//!     [--produce STEPS [--every-ms MS] [--checkpoint BATCHES]] [--key KEY] \
//!     [--sse-lifetime-ms MS] [--max-follower-lag-ms MS] [--drain-ms MS]
//! ```
//!
//! Every node serves every address of the store at `/streams/{namespace}/{key}`; its tail
//! caches are fed from PostgreSQL (`LISTEN`/`NOTIFY`), and by its own appends for the lane it
//! produces, so a reader may follow a lane on any node, and move between nodes keeping its
//! offset.
//!
//! With `--produce STEPS` the node also produces the lane `lanes/<KEY>` (default `main`): it
//! claims the address (a standby: waiting while another node holds it, serving meanwhile),
//! recovers it (`Durable::open`) and continues the agent's work from the recovered step up
//! to step `STEPS`, one flushed batch every `MS` milliseconds (default 10), then keeps
//! serving. `--checkpoint N` writes a
//! base batch every N batches (default 0: none after the first). A failed flush is retried:
//! after a lost connection the writer sends the same batch again (readers see no base and no
//! duplicate); a fenced producer exits with status 3. With `--go-on-stdin`
//! it takes one step, then waits for a line `go` (to the end) or `go STEP` (up to that step,
//! then it waits again) on its standard input.
//!
//! `--sse-lifetime-ms` ends each SSE response after that long (default 60 s), after which the
//! reader resumes.
//!
//! A load balancer probes `/healthz` (the process answers) and `/readyz` (the store answers
//! and the followers' lag is under `--max-follower-lag-ms`, default 5 s; else `503` with a
//! JSON body naming what failed). On Ctrl-C or `SIGTERM` the node drains: it stops
//! accepting, ends its SSE responses at an event boundary (their readers resume on another
//! node), lets catch-up reads in flight finish, and exits within `--drain-ms` (default 10 s).
//!
//! Prints `listening on http://ADDR` once it accepts connections; a producer prints
//! `claimed`, then `ack STEP SEQ BEFORE AFTER` after each acknowledged flush (the wall clock
//! just before the flush and once it returned, microseconds since the Unix epoch), and
//! `done STEP SEQ`.

use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chord::store::{Address, Checkpoint, Durability, Durable, Error, LogWriter, PostgresStore};
use chord::streams::{Health, Log, Server, Streams};
use chord::Tracked;
use serde::{Deserialize, Serialize};

/// The agent lane a producer writes: what a browser would render.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    /// The last step taken.
    pub step: u64,
    /// What the agent does now.
    pub status: String,
    /// The assistant message being streamed (the newest few hundred bytes).
    pub streaming: String,
    /// Finished messages.
    pub transcript: Vec<String>,
    /// The tool's output, a rolling window.
    pub output: String,
    /// Token counts.
    pub tokens: u64,
}

/// How many bytes of tool output and streamed text the lane keeps.
const WINDOW: usize = 1024;

/// Takes one step of the agent's work: a pure function of the lane and the step, so a
/// producer that recovers the lane continues exactly as the one before it would have.
pub fn advance(lane: &mut LaneProxy<'_>, step: u64) {
    lane.step.set(step);
    lane.tokens += 3;
    match step % 50 {
        0 => {
            let done = format!("message {} ({} tokens)", step / 50, step * 3);
            lane.transcript.push(done);
            lane.streaming.set(String::new());
            lane.status.set("thinking".to_owned());
        }
        1..=30 => {
            lane.streaming.push_str(&format!("token{step} "));
            lane.streaming.keep_last(WINDOW);
            lane.status.set("streaming".to_owned());
        }
        _ => {
            lane.output.push_str(&format!(
                "[{:>3}%] Building CXX object src/module_{step:05}.o\n",
                (step % 50) * 2
            ));
            lane.output.keep_last(WINDOW);
            lane.status.set("running_tool".to_owned());
        }
    }
}

fn micros_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// Produces `lanes/<key>` up to step `steps` through `log`.
fn produce(
    log: Log<PostgresStore>,
    address: Address,
    steps: u64,
    every: Duration,
    checkpoint: u64,
    go_on_stdin: bool,
) -> Result<(), Error> {
    // A standby waits for the lane here, while its node serves. A claim that waited would
    // hold the log's store, and every read that needs it, as long: it tries, and tries again
    // a little later (the lane is taken over within that much of the producer's end).
    loop {
        match log.with_store(|store| store.claim(&address, Duration::ZERO)) {
            Ok(()) => break,
            Err(Error::AddressLocked { .. }) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e),
        }
    }
    println!("claimed");
    let policy = match checkpoint {
        0 => Checkpoint::Never,
        n => Checkpoint::EveryBatches(n),
    };
    let writer = LogWriter::new(log, policy);
    let mut lane = Durable::open(writer, address, Lane::default)?;
    let mut step = lane.get().step;
    let mut seq = 0;
    // With `--go-on-stdin`: one step, then as far as each `go [STEP]` line says.
    let mut until = if go_on_stdin { step + 1 } else { steps };
    while step < steps {
        while step >= until {
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
                until = steps; // nobody to say when: go on to the end
                break;
            }
            until = match line.trim().strip_prefix("go").map(str::trim) {
                Some("") => steps,
                Some(n) => n.parse().unwrap_or(steps),
                None => until,
            };
        }
        step += 1;
        advance(&mut lane.state(), step);
        let mut started = micros_now();
        loop {
            match lane.flush() {
                Ok(stored) => {
                    seq = stored.unwrap_or(seq);
                    break;
                }
                Err(e @ (Error::Fenced { .. } | Error::AddressLocked { .. })) => return Err(e),
                Err(e) => {
                    // The database is away: the writer holds the batch and sends the same
                    // one again with the next flush (a base only when it cannot: another
                    // writer, a record that differs), so nothing unstored goes missing.
                    eprintln!("flush of step {step} failed, retrying: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                    started = micros_now();
                }
            }
        }
        println!("ack {step} {seq} {started} {}", micros_now());
        std::thread::sleep(every);
    }
    println!("done {step} {seq}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(std::env::args().collect())
}

/// The node, given its command line (the program's name first).
pub fn run(args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let db = value("--db").ok_or("--db postgres://... is required")?;
    let port: u16 = value("--port").map_or(Ok(0), |p| p.parse())?;
    let produce_steps: Option<u64> = value("--produce").map(|s| s.parse()).transpose()?;
    let every = Duration::from_millis(value("--every-ms").map_or(Ok(10), |s| s.parse())?);
    let checkpoint: u64 = value("--checkpoint").map_or(Ok(0), |s| s.parse())?;
    let go_on_stdin = args.iter().any(|a| a == "--go-on-stdin");
    let sse_lifetime = value("--sse-lifetime-ms")
        .map(|s| s.parse().map(Duration::from_millis))
        .transpose()?;
    let max_follower_lag = value("--max-follower-lag-ms")
        .map(|s| s.parse().map(Duration::from_millis))
        .transpose()?;
    let drain = value("--drain-ms")
        .map(|s| s.parse().map(Duration::from_millis))
        .transpose()?;
    let address = Address::new("lanes", value("--key").unwrap_or_else(|| "main".into()));

    // The store's client is synchronous (a runtime of its own per connection): opened
    // outside the server's runtime, which reads it from blocking threads.
    let store = match produce_steps {
        Some(_) => PostgresStore::open(&db, Durability::EveryAppend)?,
        None => PostgresStore::open_read_only(&db)?,
    };
    let log = Log::new(store);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener =
        runtime.block_on(async { tokio::net::TcpListener::bind(("127.0.0.1", port)).await })?;
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;

    if let Some(steps) = produce_steps {
        let log = log.clone();
        std::thread::spawn(move || {
            if let Err(e) = produce(log, address, steps, every, checkpoint, go_on_stdin) {
                eprintln!("the producer stops: {e}");
                let _ = std::io::stdout().flush();
                std::process::exit(3);
            }
            let _ = std::io::stdout().flush();
        });
    }
    let mut streams = Streams::new(&log);
    if let Some(lifetime) = sse_lifetime {
        streams = streams.sse_lifetime(lifetime);
    }
    let mut health = Health::new(&log);
    if let Some(lag) = max_follower_lag {
        health = health.max_follower_lag(lag);
    }
    let app = streams.router().merge(health.router());
    let mut server = Server::new();
    if let Some(deadline) = drain {
        server = server.drain(deadline);
    }
    runtime.block_on(server.serve(listener, app, shutdown()))?;
    Ok(())
}

/// Resolves at Ctrl-C or, on Unix, `SIGTERM` (what an orchestrator sends before it kills).
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
