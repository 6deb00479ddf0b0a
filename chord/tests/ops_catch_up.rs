//! A catch-up read (`GET ?offset=`, no `live`) of a multi-megabyte stream: one response
//! carries every record up to the tail, sent a chunk at a time, so that the official client's
//! catch-up-only read (`@durable-streams/client`, `live: false`), which returns after its
//! first response, gets the whole stream. Over the store (a tail cache of a few records) and
//! in process; and with the official client in Node over real HTTP, for a chord log and for
//! a protocol stream held in memory (`Memory`).

#[path = "support/local.rs"]
mod local;

use std::process::{Command, Stdio};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store};
use chord::streams::{self, Log, LogBuilder, Memory, Offset, Streams};
use chord::{path, Op};
use http_body_util::BodyExt;
use serde_json::{json, Value};

/// Bytes of text each append adds.
const PIECE: usize = 5000;
/// Appends after the base: about 3 MB of batches, a dozen catch-up chunks.
const APPENDS: usize = 600;
/// The most bytes of batches one read of the store returns (the router's chunk).
const CHUNK: usize = 256 * 1024;

struct Fixture {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
    lane: Address,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::default()).unwrap();
    // A small tail cache: most of the catch-up reads the store.
    let log = LogBuilder::new().tail_records(8).build(store);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "big");
    writer
        .append(&lane, &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    for n in 0..APPENDS {
        let piece: String = std::iter::repeat_n(char::from(b'a' + (n % 26) as u8), PIECE).collect();
        writer
            .append(&lane, &[Op::Append(path!["text"], piece)])
            .unwrap();
    }
    drop(writer);
    Fixture {
        _dir: dir,
        log,
        lane,
    }
}

/// Every record of the lane as stored: its seq and its batch, parsed.
fn records(f: &Fixture) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = f
            .log
            .read_list(&f.lane, &ReadOptions::asc().cursor(cursor))
            .unwrap();
        out.extend(
            page.records
                .iter()
                .map(|r| (r.seq, serde_json::from_str(&r.batch).unwrap())),
        );
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return out,
        }
    }
}

/// Every batch of the lane as stored, parsed, and the last seq.
fn stored(f: &Fixture) -> (Vec<Value>, u64) {
    let records = records(f);
    let last = records.last().unwrap().0;
    (records.into_iter().map(|(_, b)| b).collect(), last)
}

#[tokio::test]
async fn one_catch_up_response_carries_every_record_sent_a_chunk_at_a_time() {
    let f = fixture();
    let (batches, last) = stored(&f);
    let total: usize = batches.iter().map(|b| b.to_string().len()).sum();
    assert!(
        total > 10 * CHUNK,
        "{total} bytes: the stream spans many chunks"
    );
    let app = Streams::new(&f.log).router();
    let uri = format!("{}?offset=-1", streams::stream_path(&f.lane));
    let request = Request::get(&uri).body(Body::empty()).unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let h = response.headers().clone();
    assert_eq!(h["stream-up-to-date"], "true");
    assert_eq!(
        h["stream-next-offset"],
        Offset::from_seq(last).to_string().as_str()
    );
    let etag = h["etag"].to_str().unwrap().to_owned();
    // The body comes as several frames, none much more than a chunk: it is read and sent a
    // chunk at a time, never gathered whole.
    let mut body = response.into_body();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        frames.push(frame.unwrap().into_data().unwrap());
    }
    let largest = frames.iter().map(|f| f.len()).max().unwrap();
    let record = PIECE + 200;
    assert!(
        frames.len() >= total / (CHUNK + record),
        "{} frames for {total} bytes",
        frames.len()
    );
    assert!(largest <= CHUNK + record, "a frame of {largest} bytes");
    let whole: Vec<u8> = frames.concat();
    let got: Vec<Value> = serde_json::from_slice(&whole).expect("one JSON array");
    assert_eq!(got.len(), batches.len());
    assert!(got == batches, "every record, in order, as stored");

    // Unchanged since: the same response's ETag answers 304.
    let request = Request::get(&uri)
        .header("if-none-match", &etag)
        .body(Body::empty())
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);

    // From the middle: the rest, whole, no record twice.
    let (mid_seq, rest) = (
        records(&f)[batches.len() / 3].0,
        batches[batches.len() / 3 + 1..].to_vec(),
    );
    let uri = format!(
        "{}?offset={}",
        streams::stream_path(&f.lane),
        Offset::from_seq(mid_seq)
    );
    let request = Request::get(&uri).body(Body::empty()).unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let got: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
    assert!(got == rest, "{} records after the middle", got.len());
}

/// Reads the stream at `CHORD_URL` with the official client, catch-up only, and prints what
/// it got.
const CATCH_UP_ONLY: &str = r#"
import { stream } from '@durable-streams/client';
const res = await stream({ url: process.env.CHORD_URL, live: false, json: true });
const items = await res.json();
console.log(JSON.stringify({ upToDate: res.upToDate, offset: res.offset, items }));
"#;

#[test]
fn the_official_clients_catch_up_only_read_gets_every_record() {
    let root = local::js_installed();
    let runtime = local::runtime();
    let f = fixture();
    let (batches, last) = stored(&f);
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Streams::new(&f.log).router();
        tokio::spawn(streams::serve(listener, app, std::future::pending()));
        addr
    });
    let url = format!("http://{addr}{}", streams::stream_path(&f.lane));
    let out = Command::new("node")
        .args(["--input-type=module", "-e", CATCH_UP_ONLY])
        .env("CHORD_URL", &url)
        .current_dir(root.join("js"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = got["items"].as_array().unwrap();
    println!(
        "the official client got {} of {} records, {} bytes of output",
        items.len(),
        batches.len(),
        out.stdout.len()
    );
    assert_eq!(items.len(), batches.len(), "every record");
    assert!(items == &batches, "as stored, in order");
    assert_eq!(got["upToDate"], true);
    assert_eq!(got["offset"], Offset::from_seq(last).to_string());
}

/// Runs the official client's catch-up-only read of `url` in Node: what it printed.
fn catch_up_only(url: &str) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("node")
        .args(["--input-type=module", "-e", CATCH_UP_ONLY])
        .env("CHORD_URL", url)
        .current_dir(root.join("js"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_official_clients_catch_up_only_read_of_a_stream_in_memory_gets_every_message() {
    let runtime = local::runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::default()).unwrap();
    let log = Log::new(store);
    let app = Streams::new(&log)
        .writes(|_| true)
        .backend(Memory::new())
        .router();
    let path = "/streams/docs/big";
    // 3 MB of JSON messages, appended 100 at a time.
    let messages: Vec<Value> = (0..600)
        .map(|n| json!({"n": n, "text": "m".repeat(5000)}))
        .collect();
    let addr = runtime.block_on(async {
        let call = |request: Request<Body>| {
            let mut app = app.clone();
            async move {
                let r = tower_service::Service::call(&mut app, request)
                    .await
                    .unwrap();
                r.status()
            }
        };
        let put = Request::put(path)
            .header("content-type", "application/json")
            .body(Body::empty())
            .unwrap();
        assert!(call(put).await.is_success());
        for batch in messages.chunks(100) {
            let post = Request::post(path)
                .header("content-type", "application/json")
                .body(Body::from(Value::Array(batch.to_vec()).to_string()))
                .unwrap();
            assert!(call(post).await.is_success());
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(streams::serve(
            listener,
            app.clone(),
            std::future::pending(),
        ));
        addr
    });
    let got = catch_up_only(&format!("http://{addr}{path}"));
    let items = got["items"].as_array().unwrap();
    println!(
        "the official client got {} of {} messages",
        items.len(),
        messages.len()
    );
    assert_eq!(items.len(), messages.len(), "every message");
    assert!(items == &messages, "as appended, in order");
    assert_eq!(got["upToDate"], true);
}
