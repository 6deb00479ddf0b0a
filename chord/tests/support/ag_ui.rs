//! What the AG-UI door's tests share: a run's input, a log in a folder, a raw HTTP request.

// Each binary uses what it needs.
#![allow(dead_code)]

use std::time::Duration;

use chord::store::JsonlStore;
use chord::streams::Log;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a test waits for what must happen before it calls it a failure: a hang, not a
/// timing, is what it catches.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A `RunAgentInput` for run `run` of thread `thread`, with the client's `state` (JSON).
pub fn input(thread: &str, run: &str, state: &str) -> String {
    format!(
        r#"{{"threadId":"{thread}","runId":"{run}","state":{state},"messages":[],"tools":[],"context":[],"forwardedProps":{{}}}}"#
    )
}

/// A log of runs in a JSONL file in `dir`.
pub fn log_in(dir: &std::path::Path) -> Log<JsonlStore> {
    Log::new(JsonlStore::open(dir.join("runs.jsonl"), Default::default()).unwrap())
}

/// A raw HTTP/1 request; the status and, for a `200`, whatever of the body came within
/// `read_for`.
pub async fn raw(
    addr: std::net::SocketAddr,
    head: &str,
    body: &str,
    read_for: Duration,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let until = tokio::time::Instant::now() + read_for;
    while let Ok(Ok(n)) = tokio::time::timeout_at(until, stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}
