//! What an authorized write costs the server in memory, measured with a counting global
//! allocator (its own test binary, as a global allocator applies to the whole binary): a
//! 16 MB body, accepted or refused, one batch or many, peaks the server at most 4x the body
//! above what it held before. The body is checked and split as it is read, never built into
//! a JSON tree, and each batch is stored as the bytes it was sent as.

#[path = "support/counting.rs"]
mod counting;

use std::sync::atomic::Ordering::Relaxed;

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use axum::Router;
use chord::store::{Address, Durability, JsonlStore, ReadOptions, Store};
use chord::streams::{Log, Streams};
use counting::{LIVE, ONE_AT_A_TIME, PEAK};
use http_body_util::BodyExt;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// The body size of the issue that found the tree: 16 MB.
const BODY: usize = 16 << 20;

/// The most a write may hold at its peak, as a multiple of its body.
const MAX_RATIO: f64 = 4.0;

struct Server {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
    app: Router,
}

fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let log = Log::new(store);
    let app = Streams::new(&log).writes(|_| true).router();
    Server {
        _dir: dir,
        log,
        app,
    }
}

async fn post(app: &Router, method: &str, uri: &str, body: Bytes) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("content-length", body.len().to_string())
        .body(Body::from(body))
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    let status = response.status();
    let text = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&text).into_owned())
}

/// The server's peak heap above what it held before, while it answers `body` posted to a
/// stream that holds a base batch: `(status, answer, peak bytes)`. The body is allocated
/// before the count starts (it is the client's), and a small write first warms what every
/// write keeps (the blocking pool's threads, the tail cache).
async fn peak_of_post(s: &Server, uri: &str, body: Bytes) -> (StatusCode, String, usize) {
    let warm = Bytes::from_static(br#"[["s",["n"],1]]"#);
    assert_eq!(
        post(&s.app, "POST", uri, warm).await.0,
        StatusCode::NO_CONTENT
    );
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    // The request is given a second handle on the body, so that the client's copy stays
    // allocated throughout: the server reading it cannot free it, which would hide as much
    // of what the server holds.
    let (status, text) = post(&s.app, "POST", uri, body.clone()).await;
    let peak = PEAK.load(Relaxed) - before;
    drop(body);
    (status, text, peak)
}

/// A server with `lanes/main` holding a base batch.
async fn with_base() -> Server {
    let s = server();
    let base = Bytes::from_static(br#"[["r",{"a":{},"n":0,"log":""}]]"#);
    let (status, text) = post(&s.app, "PUT", "/streams/lanes/main", base).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    s
}

/// A runtime like `#[tokio::test]`'s, for tests that hold [`ONE_AT_A_TIME`] across it.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn check(what: &str, body_len: usize, peak: usize) {
    let ratio = peak as f64 / body_len as f64;
    eprintln!(
        "{what}: body {body_len} B, peak {peak} B above idle, {ratio:.2}x the body (at most {MAX_RATIO}x)"
    );
    assert!(
        ratio <= MAX_RATIO,
        "{what}: the server peaked at {peak} B above idle for a {body_len} B body ({ratio:.2}x)"
    );
}

/// `[first, more, more, ...]` of about [`BODY`] bytes.
fn repeated(first: &str, more: &str) -> Bytes {
    let mut body = String::with_capacity(BODY + 64);
    body.push('[');
    body.push_str(first);
    while body.len() + more.len() + 2 <= BODY {
        body.push(',');
        body.push_str(more);
    }
    body.push(']');
    Bytes::from(body)
}

#[test]
fn one_batch_of_millions_of_short_deletes_peaks_under_4x_its_body() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = with_base().await;
        // One batch: a delete, then 2.8 million short forms repeating its path.
        let body = repeated(r#"["d",["a"]]"#, r#"["d"]"#);
        let len = body.len();
        let (status, text, peak) = peak_of_post(&s, "/streams/lanes/main", body).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{text}");
        check("one batch of short deletes", len, peak);
        // Stored as sent.
        let at = Address::new("lanes", "main");
        let newest = s.log.read_list(&at, &ReadOptions::desc().limit(1)).unwrap();
        assert_eq!(newest.records[0].batch.len(), len);
        assert!(newest.records[0]
            .batch
            .starts_with(r#"[["d",["a"]],["d"],["d"]"#));
    });
}

#[test]
fn many_batches_peak_under_4x_their_body_and_are_stored_as_sent() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = with_base().await;
        // 250 batches of 64 KiB, each an append to a string; one of them spelled over lines.
        let text = "x".repeat(64 << 10);
        let batch = format!(r#"[["a",["log"],"{text}"]]"#);
        let spread = format!("[\n  [\"a\", [\"log\"],\r\n \"{text}\"]\n]");
        let mut body = String::from("[");
        for i in 0..250 {
            if i > 0 {
                body.push(',');
            }
            body.push_str(if i == 7 { &spread } else { &batch });
        }
        body.push(']');
        let len = body.len();
        let (status, answer, peak) =
            peak_of_post(&s, "/streams/lanes/main", Bytes::from(body)).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{answer}");
        check("250 batches of 64 KiB", len, peak);
        let at = Address::new("lanes", "main");
        let records = s
            .log
            .read_list(&at, &ReadOptions::asc().limit(1000))
            .unwrap()
            .records;
        // The base, the warm-up, the 250.
        assert_eq!(records.len(), 2 + 250);
        assert!(
            records[2..].iter().all(|r| r.batch == batch),
            "each stored on one line as sent"
        );
    });
}

#[test]
fn a_refused_body_peaks_under_4x_and_appends_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = with_base().await;
        // Many batches, the last one not a wire batch: nothing of the body is appended.
        let mut body = repeated(r#"[["s",["n"],1]]"#, r#"[["s",["n"],2]]"#).to_vec();
        body.truncate(body.len() - 1);
        body.extend_from_slice(br#",[["q",["n"]]]]"#);
        let len = body.len();
        let (status, text, peak) = peak_of_post(&s, "/streams/lanes/main", Bytes::from(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        assert!(text.starts_with("message "), "{text}");
        check("a refused body of short batches", len, peak);
        let at = Address::new("lanes", "main");
        let records = s
            .log
            .read_list(&at, &ReadOptions::asc().limit(1000))
            .unwrap()
            .records;
        assert_eq!(records.len(), 2, "the base and the warm-up only");
    });
}

/// A server whose write side keeps streams that are not chord logs in memory
/// (`streams::Memory` with its default bounds), with `t/json` a JSON stream.
async fn memory_server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let log = Log::new(store);
    let app = Streams::new(&log)
        .writes(|_| true)
        .backend(chord::streams::Memory::new())
        .router();
    let s = Server {
        _dir: dir,
        log,
        app,
    };
    let (status, text) = post(&s.app, "PUT", "/streams/t/json", Bytes::from_static(b"[]")).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    s
}

#[test]
fn a_json_stream_of_tiny_messages_is_refused_for_what_they_would_cost_before_any_is_built() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = memory_server().await;
        // 8 million one-byte messages: 16 MB of body, over 256 MB as messages (each has a
        // handle), more than a stream may hold.
        let body = repeated("1", "1");
        let len = body.len();
        let (status, text, peak) = peak_of_post(&s, "/streams/t/json", body).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
        check("a JSON body of 8 million tiny messages", len, peak);
    });
}

#[test]
fn a_json_stream_of_short_messages_peaks_under_4x_its_body() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = memory_server().await;
        // 250,000 messages of 64 bytes.
        let message = format!("\"{}\"", "m".repeat(62));
        let body = repeated(&message, &message);
        let len = body.len();
        let (status, text, peak) = peak_of_post(&s, "/streams/t/json", body).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{text}");
        check("a JSON body of 250,000 messages of 64 bytes", len, peak);
    });
}

#[test]
fn with_a_reader_at_the_tail_the_cache_keeps_the_batch_and_its_event() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(async {
        let s = with_base().await;
        // A read loads the address's tail cache, which keeps the newest record whatever its
        // size, as its batch and as the SSE event every reader at the tail is sent.
        let (status, _) = post(&s.app, "GET", "/streams/lanes/main?offset=-1", Bytes::new()).await;
        assert_eq!(status, StatusCode::OK);
        let body = repeated(r#"["d",["a"]]"#, r#"["d"]"#);
        let len = body.len();
        let (status, text, peak) = peak_of_post(&s, "/streams/lanes/main", body).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{text}");
        check("one batch, a reader at the tail", len, peak);
    });
}
