//! A server's graceful drain at shutdown (`Server::drain`): readers following over SSE, chord's
//! Rust replica and the official JS client (`@durable-streams/client`, in Node), move to the
//! server that takes over without an error reaching them and without reading a base batch
//! again; a catch-up read in flight finishes, a long-poll in flight answers at once; what is
//! still open at the deadline is cut.

#[path = "support/local.rs"]
mod local;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use chord::replica::{Break, Replica};
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store};
use chord::streams::{self, Log, Offset, Server, Streams};
use chord::{path, NonEmptyPath, Op};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A generous bound on what should take moments, so that a broken drain fails the test
/// instead of hanging it. Nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    local::runtime()
}

fn log(dir: &tempfile::TempDir) -> Log<JsonlStore> {
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    Log::new(store)
}

/// A server on its own task, shut down by the sender; the task ends when `serve` returns.
struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(server: Server, app: axum::Router) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(server.serve(listener, app, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop: Some(stop),
        done,
    }
}

impl Running {
    /// Starts the shutdown; `finished` waits for its end.
    fn shut_down(&mut self) {
        let _ = self.stop.take().unwrap().send(());
    }

    async fn finished(self) {
        tokio::time::timeout(PATIENCE, self.done)
            .await
            .expect("the drain never ended")
            .unwrap()
            .unwrap();
    }
}

/// A load balancer's front: each connection goes to the first of `backends` that accepts it
/// (a server that stopped accepting refuses at once).
async fn front(backends: Vec<SocketAddr>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                continue;
            };
            let backends = backends.clone();
            tokio::spawn(async move {
                for backend in backends {
                    if let Ok(mut server) = TcpStream::connect(backend).await {
                        let _ = server.set_nodelay(true);
                        let _ = client.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Follows the stream at `CHORD_URL` over SSE with the official client from the start, until
/// it holds `CHORD_RECORDS` messages or its response fails; prints the messages and the
/// failure, if any.
const FOLLOW: &str = r#"
import { stream } from '@durable-streams/client';
const want = Number(process.env.CHORD_RECORDS);
const items = [];
let error = null;
const res = await stream({
  url: process.env.CHORD_URL,
  offset: '-1',
  live: 'sse',
  json: true,
  backoffOptions: { initialDelay: 5, maxDelay: 50, multiplier: 2 },
});
res.closed.catch((e) => { error = String(e?.stack ?? e); });
res.subscribeJson(async (batch) => { items.push(...batch.items); });
console.error('following');
const deadline = Date.now() + 60_000;
while (items.length < want && error === null && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 5));
}
console.log(JSON.stringify({ items, error }));
process.exit(0);
"#;

#[test]
fn sse_followers_move_to_the_next_server_without_an_error_or_a_second_base() {
    let root = local::js_installed();
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let log = log(&dir);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "main");
    writer
        .append(&lane, &[Op::Replace(json!({"text": "", "n": 0}))])
        .unwrap();
    let steps = 60u64;
    // The first server drains with no deadline worth the name: it returns only if every SSE
    // response ends by itself.
    let app = || Streams::new(&log).router();
    let mut first = runtime.block_on(start(Server::new().drain(Duration::from_secs(3600)), app()));
    let second = runtime.block_on(start(Server::new(), app()));
    let front = runtime.block_on(front(vec![first.addr, second.addr]));
    let url = format!("http://{front}{}", streams::stream_path(&lane));

    let replica = runtime.block_on(async {
        Replica::builder(&url)
            .backoff(Duration::from_millis(5), Duration::from_millis(50))
            .connect()
            .unwrap()
    });
    let node = Command::new("node")
        .args(["--input-type=module", "-e", FOLLOW])
        .env("CHORD_URL", &url)
        .env("CHORD_RECORDS", (steps + 1).to_string())
        .current_dir(root.join("js"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));

    let mut text = String::new();
    let mut step = |n: u64, writer: &mut LogWriter<Log<JsonlStore>>| {
        let chunk = format!("t{n} ");
        text.push_str(&chunk);
        let ops = [
            Op::Append(path!["text"], chunk),
            Op::Set(NonEmptyPath::new("n"), json!(n)),
        ];
        writer.append(&lane, &ops).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    };
    for n in 1..=steps / 2 {
        step(n, &mut writer);
    }
    // Both readers are live on the first server (the replica holds what was written).
    runtime.block_on(wait_for("the replica to follow", || {
        replica.value().is_some_and(|v| v["n"] == steps / 2)
    }));
    first.shut_down();
    for n in steps / 2 + 1..=steps {
        step(n, &mut writer);
    }
    runtime.block_on(first.finished());

    let expected = json!({"text": text, "n": steps});
    runtime.block_on(wait_for("the replica to catch up", || {
        replica.value().as_ref() == Some(&expected)
    }));
    let out = node.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(
        got["error"],
        Value::Null,
        "no error reached the JS application"
    );
    let stored: Vec<Value> = all_records(&log, &lane)
        .iter()
        .map(|r| serde_json::from_str(&r.batch).unwrap())
        .collect();
    let items = got["items"].as_array().unwrap();
    assert_eq!(items.len() as u64, steps + 1);
    assert!(
        items == &stored,
        "every record once, in order: one base, no batch twice"
    );
    let stats = replica.stats();
    println!("replica: {stats:?}");
    assert_eq!(stats.bases, 1, "the base batch was read once");
    assert_eq!(stats.subscriptions, 1, "one start; the rest resumed");
    assert!(stats.resumes >= 1, "it resumed on the second server");
    assert_eq!(
        stats.last_break,
        Some(Break::Ended),
        "the first server's response ended cleanly"
    );
}

/// Every record of `lane`, oldest first.
fn all_records(log: &Log<JsonlStore>, lane: &Address) -> Vec<chord::store::Record> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = log
            .read_list(lane, &ReadOptions::asc().cursor(cursor))
            .unwrap();
        out.extend(page.records);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return out,
        }
    }
}

/// Sends `request` on a fresh connection to `addr`, returns the connection after reading the
/// response's head (up to and with the blank line) and what of the body came with it.
async fn send(addr: SocketAddr, request: String) -> (TcpStream, String, Vec<u8>) {
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection ended before the response's head");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(got[..end].to_vec()).unwrap();
            return (conn, head, got[end + 4..].to_vec());
        }
    }
}

/// The body of a chunked response, and whether its last chunk came.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(line) = raw.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line]).unwrap(), 16).unwrap();
        if size == 0 {
            return (out, true);
        }
        let start = line + 2;
        if raw.len() < start + size + 2 {
            out.extend_from_slice(&raw[start.min(raw.len())..raw.len().min(start + size)]);
            return (out, false);
        }
        out.extend_from_slice(&raw[start..start + size]);
        raw = &raw[start + size + 2..];
    }
}

/// A lane of about 3 MB (a base and 600 appends of 5 KB): a catch-up read of it outlasts
/// what the connection's send buffer holds.
fn big_lane(log: &Log<JsonlStore>) -> Address {
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "big");
    writer
        .append(&lane, &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    for n in 0..600 {
        let piece: String = std::iter::repeat_n(char::from(b'a' + (n % 26) as u8), 5000).collect();
        writer
            .append(&lane, &[Op::Append(path!["text"], piece)])
            .unwrap();
    }
    lane
}

#[test]
fn a_catch_up_in_flight_finishes_and_a_long_poll_answers_at_once() {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let log = log(&dir);
    let lane = big_lane(&log);
    let path = streams::stream_path(&lane);
    let records = all_records(&log, &lane);
    let last = log
        .read_list(&lane, &ReadOptions::desc().limit(1))
        .unwrap()
        .records[0]
        .seq;
    runtime.block_on(async {
        // A long-poll that would wait an hour, and a catch-up read whose client reads only
        // its head before the drain starts.
        let app = Streams::new(&log)
            .long_poll(Duration::from_secs(3600))
            .router();
        let mut server = start(Server::new().drain(Duration::from_secs(3600)), app).await;
        let poll = format!(
            "GET {path}?offset={}&live=long-poll HTTP/1.1\r\nhost: x\r\n\r\n",
            Offset::from_seq(last)
        );
        let mut poll = tokio::spawn(send(server.addr, poll));
        let catch_up = format!("GET {path}?offset=-1 HTTP/1.1\r\nhost: x\r\n\r\n");
        let (mut conn, head, mut body) = send(server.addr, catch_up).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        // The long-poll waits (nothing new).
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !poll.is_finished(),
            "the long-poll answered before the drain"
        );
        server.shut_down();
        let (_, head, _) = tokio::time::timeout(PATIENCE, &mut poll)
            .await
            .expect("the long-poll never answered")
            .unwrap();
        assert!(head.starts_with("HTTP/1.1 204"), "{head}");
        // The catch-up goes on to its end, and its connection closes after it.
        conn.read_to_end(&mut body).await.unwrap();
        let (body, complete) = dechunk(&body);
        assert!(complete, "the catch-up response ended with its last chunk");
        let got: Vec<Value> = serde_json::from_slice(&body).unwrap();
        assert_eq!(got.len(), records.len(), "every record of the catch-up");
        server.finished().await;
    });
}

#[test]
fn the_deadline_cuts_a_response_still_in_flight() {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let log = log(&dir);
    let lane = big_lane(&log);
    let path = streams::stream_path(&lane);
    runtime.block_on(async {
        let app = Streams::new(&log).router();
        let mut server = start(Server::new().drain(Duration::from_millis(200)), app).await;
        // A client that reads the head of its catch-up, then nothing until the server is gone.
        let catch_up = format!("GET {path}?offset=-1 HTTP/1.1\r\nhost: x\r\n\r\n");
        let (mut conn, head, mut body) = send(server.addr, catch_up).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        server.shut_down();
        server.finished().await;
        // What was in flight: a part of the response, never its last chunk.
        let _ = conn.read_to_end(&mut body).await;
        let (body, complete) = dechunk(&body);
        assert!(!complete, "a cut response has no last chunk");
        assert!(body.len() < 3_000_000, "{} bytes arrived", body.len());
    });
}
