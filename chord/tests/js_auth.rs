//! The JavaScript `follow()` sends credentials to chord's server, whose read hook
//! ([`Streams::reads`]) lets in only `Authorization: Bearer t1`, over both transports (its own
//! `fetch` + SSE, and the official `@durable-streams/client`, installed by `scripts/test` from
//! `js/package.json`). A follower with a `headers` function reads the whole stream across many
//! reconnects (the server ends every SSE response after 100 ms), every request through the
//! hook with the token; one without a credential (401) and one whose token may read only
//! the metadata (a `HEAD`, 403 for any read) are refused the catch-up read they join with:
//! each stops with the status, and neither receives a byte of the stream. No follower sends
//! a `HEAD`.

#[path = "support/local.rs"]
mod local;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::header::AUTHORIZATION;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{self, Access, Log, ReadKind, Streams};
use chord::{path, NonEmptyPath, Op};
use serde_json::{json, Value};

/// The Node side, run from `js/`: `node -e FOLLOWER <url> <n> <transport> <credential>`.
/// With `t1` it follows until the value's `n` is the target, its token given by a function
/// (so that it is asked for every request); with `none` (no headers) or `t-meta` (fixed
/// headers) it waits for the follower to stop. Prints what it got as JSON.
const FOLLOWER: &str = r#"
import { durableStreamsTransport, follow, Replica, sseTransport } from './chord-replica.mjs';

const [url, target, kind, credential] = process.argv.slice(1);
const transport = kind === 'durable-streams'
  ? durableStreamsTransport(await import('@durable-streams/client'))
  : sseTransport;
let calls = 0;
const headers = credential === 't1'
  ? async () => { calls += 1; return { authorization: 'Bearer t1' }; }
  : credential === 'none' ? undefined : { authorization: `Bearer ${credential}` };
let changes = 0;
const replica = new Replica({ onChange: () => { changes += 1; } });
const errors = [];
const follower = follow(url, {
  replica, transport, headers, backoffMin: 5, backoffMax: 50,
  onError: (error, info) => errors.push({ status: error.status ?? null, stopped: info.stopped, message: error.message }),
});
const report = (extra) => JSON.stringify({
  value: replica.value ?? null, stats: follower.stats, calls, changes, errors, ...extra,
});
const timer = setTimeout(() => { console.error(report({ timedOut: true })); process.exit(1); }, 60_000);
if (credential === 't1') {
  while (replica.value?.n !== Number(target)) await new Promise((r) => setTimeout(r, 5));
  follower.stop();
  await follower.done;
  console.log(report({}));
} else {
  const status = await follower.done.then(() => null, (error) => error.status ?? String(error));
  console.log(report({ status }));
}
clearTimeout(timer);
process.exit(0);
"#;

/// What the read hook saw of one request: its kind, its `Authorization`, its answer.
type Seen = (ReadKind, Option<String>, Access);

fn spawn(root: &std::path::Path, url: &str, last: u64, kind: &str, credential: &str) -> Child {
    Command::new("node")
        .args(["--input-type=module", "-e", FOLLOWER, url])
        .args([&last.to_string(), kind, credential])
        .current_dir(root.join("js"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"))
}

fn output(what: &str, child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{what}: {e}: {stdout}\n{stderr}"))
}

#[test]
fn javascript_followers_send_credentials_and_refused_ones_get_nothing() {
    let root = local::js_installed();
    let runtime = local::runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let log = Log::new(store);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "main");
    writer
        .append(&lane, &[Op::Replace(json!({"text": "", "n": 0}))])
        .unwrap();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let record = Arc::clone(&seen);
        let app = Streams::new(&log)
            .sse_lifetime(Duration::from_millis(100))
            .reads(move |r| {
                let auth = r
                    .headers
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let access = match auth.as_deref().and_then(|v| v.strip_prefix("Bearer ")) {
                    None => Access::Unauthorized,
                    Some("t1") => Access::Allow,
                    Some("t-meta") if r.read == ReadKind::Head => Access::Allow,
                    Some(_) => Access::Forbidden,
                };
                record.lock().unwrap().push((r.read, auth, access));
                access
            })
            .router();
        tokio::spawn(streams::serve(listener, app, std::future::pending()));
        addr
    });
    let url = format!("http://{addr}{}", streams::stream_path(&lane));
    let last = 60u64;
    let transports = ["sse", "durable-streams"];
    let refused: Vec<_> = transports
        .iter()
        .flat_map(|kind| {
            ["none", "t-meta"].map(|credential| {
                let child = spawn(&root, &url, last, kind, credential);
                (*kind, credential, child)
            })
        })
        .collect();
    let allowed: Vec<_> = transports
        .iter()
        .map(|kind| (*kind, spawn(&root, &url, last, kind, "t1")))
        .collect();
    // The producer starts once both authorized followers read, so that they follow it live,
    // across reconnects.
    let reading = || {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(read, auth, _)| {
                matches!(read, ReadKind::Sse | ReadKind::LongPoll)
                    && auth.as_deref() == Some("Bearer t1")
            })
            .count()
    };
    let start = std::time::Instant::now();
    while reading() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the followers never read"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut text = String::new();
    for n in 1..=last {
        let chunk = format!("t{n} ");
        text.push_str(&chunk);
        let ops = [
            Op::Append(path!["text"], chunk),
            Op::Set(NonEmptyPath::new("n"), json!(n)),
        ];
        writer.append(&lane, &ops).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }

    let expected = json!({"text": text, "n": last});
    let mut calls = 0;
    for (kind, child) in allowed {
        let got = output(kind, child);
        println!("{kind} with t1: {}", got["stats"]);
        assert_eq!(got["value"], expected, "{kind}");
        assert_eq!(got["stats"]["starts"], 1, "{kind}: one start");
        assert_eq!(
            got["stats"]["bases"], 1,
            "{kind}: no base batch after the first"
        );
        assert_eq!(got["errors"], json!([]), "{kind}: never refused");
        calls += got["calls"].as_u64().unwrap();
    }
    for (kind, credential, child) in refused {
        let got = output(kind, child);
        let what = format!("{kind} with {credential}");
        println!("{what}: {got}");
        let status = if credential == "none" { 401 } else { 403 };
        assert_eq!(got["status"], status, "{what}: stopped with the status");
        assert_eq!(got["value"], Value::Null, "{what}: no value");
        assert_eq!(got["changes"], 0, "{what}: onChange never called");
        assert_eq!(got["stats"]["bytes"], 0, "{what}: no byte of the stream");
        assert_eq!(got["stats"]["batches"], 0, "{what}: no batch");
        let errors = got["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{what}: told once: {errors:?}");
        assert_eq!(errors[0]["status"], status, "{what}");
        assert_eq!(errors[0]["stopped"], true, "{what}");
    }

    let seen = seen.lock().unwrap();
    let of = |auth: Option<&str>| -> Vec<(ReadKind, Access)> {
        seen.iter()
            .filter(|(_, a, _)| a.as_deref() == auth)
            .map(|&(read, _, access)| (read, access))
            .collect()
    };
    // Without a credential: one catch-up read per follower (whatever its transport: the
    // follower joins with it), refused, never retried.
    assert_eq!(
        of(None),
        [(ReadKind::CatchUp, Access::Unauthorized); 2],
        "{seen:?}"
    );
    // The metadata token: its catch-up read refused, and nothing more.
    assert_eq!(
        of(Some("Bearer t-meta")),
        [(ReadKind::CatchUp, Access::Forbidden); 2],
        "{seen:?}"
    );
    // The authorized followers: every request carried the token, each from one call of the
    // function, across many reconnects (SSE responses end every 100 ms).
    let t1 = of(Some("Bearer t1"));
    assert_eq!(t1.len(), seen.len() - 2 - 2, "{seen:?}");
    assert!(t1.iter().all(|&(_, access)| access == Access::Allow));
    let heads = t1.iter().filter(|&&(r, _)| r == ReadKind::Head).count();
    let catch_ups = t1.iter().filter(|&&(r, _)| r == ReadKind::CatchUp).count();
    let sse = t1.iter().filter(|&&(r, _)| r == ReadKind::Sse).count();
    assert_eq!(heads, 0, "no HEAD: {t1:?}");
    assert!(
        catch_ups >= 2,
        "each follower joins with a catch-up read: {t1:?}"
    );
    assert!(sse >= 4, "reconnects through the hook: {t1:?}");
    let requests = t1.len() as u64;
    assert!(
        calls >= requests && calls <= requests + 2,
        "{calls} calls of the headers function for {requests} requests"
    );
}
