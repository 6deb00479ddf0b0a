//! What an open AG-UI event stream costs: 400 of them, to a run whose state is about a
//! megabyte, hold a bounded amount above idle (the frames of each record are made once and
//! shared; a reader at the tail holds no copy of the state). A binary of its own: the
//! counting allocator counts every allocation of the process.

#[path = "support/ag_ui.rs"]
mod support;

use support::{input, log_in, raw, PATIENCE};

#[path = "support/counting.rs"]
mod counting;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use chord::ag_ui::{AgUi, AgentError, Run, RunAgentInput};
use chord::store::JsonlStore;
use chord::streams::{Log, Server};
use chord::Tracked;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// The state of the memory test: about a megabyte.
#[derive(Tracked, Serialize, Deserialize, Default)]
struct Big {
    rows: Vec<String>,
    n: u32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hundred_open_streams_of_a_megabyte_state_share_its_frames() {
    // The binary's only test: the counters count nothing else.
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(gate));
    let app = AgUi::new(
        &log,
        move |_: &RunAgentInput, run: &mut Run<Big, Log<JsonlStore>>| {
            for i in 0..1000 {
                run.state()
                    .rows
                    .push(format!("{i:04} {}", "x".repeat(1000)));
            }
            run.flush()?;
            let id = run.start_message();
            run.append(&id, "ready");
            run.flush()?;
            let _ = gate.lock().unwrap().recv();
            Ok::<(), AgentError>(())
        },
    )
    .max_readers(1000)
    .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(Server::new().serve(listener, app, std::future::pending()));
    let (status, first) = raw(
        addr,
        "POST /",
        &input("t", "r", "{}"),
        Duration::from_secs(3),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        first.contains("ready"),
        "the run's first response saw its text"
    );
    let idle = counting::LIVE.load(Relaxed);
    // Each reader is read until it has the text after the state (the whole snapshot went by),
    // through a small buffer: the test's clients hold next to nothing.
    let mut readers = Vec::new();
    for _ in 0..400 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /runs/t/r HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        readers.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 2048];
            let mut window: Vec<u8> = Vec::new();
            let mut total = 0usize;
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "the stream ended early");
                total += n;
                window.extend_from_slice(&buf[..n]);
                if window.windows(5).any(|w| w == b"ready") {
                    break;
                }
                let keep = window.len().saturating_sub(8);
                window.drain(..keep);
            }
            (stream, total)
        }));
    }
    let mut open = Vec::new();
    for reader in readers {
        let (stream, total) = tokio::time::timeout(PATIENCE, reader)
            .await
            .unwrap()
            .unwrap();
        assert!(
            total > 1_000_000,
            "each reader was sent the whole state: {total}"
        );
        open.push(stream);
    }
    let held = counting::LIVE.load(Relaxed).saturating_sub(idle);
    println!(
        "400 open streams of a 1 MB state: {} KiB above idle",
        held / 1024
    );
    assert!(
        held < 64 << 20,
        "400 open streams hold {} MiB above idle",
        held >> 20
    );
    drop(open);
    release.send(()).unwrap();
    server.abort();
}
