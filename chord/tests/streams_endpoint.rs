//! The Durable Streams router over a JSONL log, called in process: catch-up, resume, the base
//! offset, retention, long-poll, SSE, HEAD, the error statuses, and the write side's hook.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, Store};
use chord::streams::{Log, Retention, Streams, BASE_OFFSET_HEADER};
use chord::{apply, is_base, path, Decoder, Op};
use http_body_util::BodyExt;
use serde_json::{json, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
    writer: LogWriter<Log<JsonlStore>>,
    lane: Address,
    text: String,
}

impl Fixture {
    fn new(retention: Retention, tail_records: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let log = chord::streams::Builder::new()
            .retention(retention)
            .tail_records(tail_records)
            .build(store);
        let writer = LogWriter::new(log.clone(), Checkpoint::Never);
        Fixture {
            _dir: dir,
            log,
            writer,
            lane: Address::new("lanes", "main"),
            text: String::new(),
        }
    }

    fn base(&mut self) {
        let ops = [Op::Replace(json!({ "text": self.text }))];
        self.writer.append(&self.lane, &ops).unwrap();
    }

    fn push(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        let ops = [Op::Append(path!["text"], chunk.into())];
        self.writer.append(&self.lane, &ops).unwrap();
    }

    fn value(&self) -> Value {
        json!({ "text": self.text })
    }

    fn app(&self) -> Router {
        Streams::new(&self.log)
            .long_poll(Duration::from_millis(50))
            .router()
    }
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn batches(&self) -> Vec<String> {
        let v: Vec<Value> = serde_json::from_slice(&self.body).expect("a JSON array");
        v.iter().map(Value::to_string).collect()
    }
}

async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let request = request.body(Body::from(body.to_owned())).unwrap();
    let mut app = app.clone();
    let response = tower_service::Service::call(&mut app, request)
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(app: &Router, uri: &str) -> Reply {
    call(app, Method::GET, uri, &[], "").await
}

fn apply_all(decoder: &mut Decoder, value: &mut Option<Value>, batches: &[String]) {
    for b in batches {
        apply(value, decoder.decode_str(b).unwrap()).unwrap();
    }
}

#[tokio::test]
async fn catch_up_then_resume_gets_only_what_was_missed() {
    let mut f = Fixture::new(Retention::Bases(4), 3);
    f.base();
    for i in 0..6 {
        f.push(&format!("{i} "));
    }
    let app = f.app();
    let first = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(first.header("stream-up-to-date"), Some("true"));
    let batches = first.batches();
    assert_eq!(
        batches.len(),
        7,
        "older than the 3-record cache: read from the store"
    );
    let (mut decoder, mut replica) = (Decoder::new(), None);
    apply_all(&mut decoder, &mut replica, &batches);
    assert_eq!(replica, Some(f.value()));

    let next = first.header("stream-next-offset").unwrap().to_owned();
    f.push("more ");
    f.push("and more");
    let resumed = get(&app, &format!("/streams/lanes/main?offset={next}")).await;
    let batches = resumed.batches();
    assert_eq!(batches.len(), 2);
    assert!(
        batches.iter().all(|b| !b.starts_with("[[\"r\"")),
        "no base on resume"
    );
    apply_all(&mut decoder, &mut replica, &batches);
    assert_eq!(replica, Some(f.value()), "the same decoder goes on");

    // At the tail: an empty array, up to date, the same offset.
    let tail = resumed.header("stream-next-offset").unwrap().to_owned();
    let empty = get(&app, &format!("/streams/lanes/main?offset={tail}")).await;
    assert_eq!(
        (empty.status, empty.body.as_slice()),
        (StatusCode::OK, &b"[]"[..])
    );
    assert_eq!(empty.header("stream-next-offset"), Some(tail.as_str()));

    // The same chunk again with its ETag: 304.
    let etag = resumed.header("etag").unwrap().to_owned();
    let again = call(
        &app,
        Method::GET,
        &format!("/streams/lanes/main?offset={next}"),
        &[("if-none-match", &etag)],
        "",
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    assert!(resumed.header("cache-control").unwrap().contains("max-age"));
}

#[tokio::test]
async fn a_fresh_reader_starts_at_the_latest_base_and_retention_answers_gone() {
    let mut f = Fixture::new(Retention::Bases(2), 100);
    f.base();
    let very_first = get(&f.app(), "/streams/lanes/main?offset=-1").await;
    let early = very_first.header("stream-next-offset").unwrap().to_owned();
    f.push("a");
    f.base();
    f.push("b");
    f.base();
    f.push("c");
    f.push("d");
    let app = f.app();
    let head = call(&app, Method::HEAD, "/streams/lanes/main", &[], "").await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.header("cache-control"), Some("no-store"));
    let base = head.header(BASE_OFFSET_HEADER).unwrap().to_owned();
    let fresh = get(&app, &format!("/streams/lanes/main?offset={base}")).await;
    let batches = fresh.batches();
    assert_eq!(batches.len(), 3, "the latest base and what follows it");
    let (mut decoder, mut replica) = (Decoder::new(), None);
    let first = decoder.decode_str(&batches[0]).unwrap();
    assert!(is_base(&first));
    apply(&mut replica, first).unwrap();
    apply_all(&mut decoder, &mut replica, &batches[1..]);
    assert_eq!(replica, Some(f.value()));

    // Two bases kept: `-1` starts at the second; the first base's records are gone.
    let oldest = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(oldest.batches().len(), 5);
    assert!(oldest.batches()[0].starts_with("[[\"r\""));
    let gone = get(&app, &format!("/streams/lanes/main?offset={early}")).await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert_eq!(gone.header(BASE_OFFSET_HEADER), Some(base.as_str()));
    let beyond = get(&app, "/streams/lanes/main?offset=00000000ffffffff").await;
    assert_eq!(beyond.status, StatusCode::GONE);
}

#[tokio::test]
async fn long_poll_waits_for_the_next_record_or_answers_204() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let app = f.app();
    let tail = get(&app, "/streams/lanes/main?offset=-1").await;
    let next = tail.header("stream-next-offset").unwrap().to_owned();
    let timeout = get(
        &app,
        &format!("/streams/lanes/main?offset={next}&live=long-poll"),
    )
    .await;
    assert_eq!(timeout.status, StatusCode::NO_CONTENT);
    assert_eq!(timeout.header("stream-next-offset"), Some(next.as_str()));
    assert_eq!(timeout.header("stream-up-to-date"), Some("true"));
    assert!(timeout.header("stream-cursor").is_some());

    let app = Streams::new(&f.log)
        .long_poll(Duration::from_secs(600))
        .router();
    let uri = format!("/streams/lanes/main?offset={next}&live=long-poll");
    let waiting = tokio::spawn(async move { get(&app, &uri).await });
    // Whether the record lands before or during the wait, the answer is the same.
    f.push("x");
    let got = waiting.await.unwrap();
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.batches(), [r#"[["a",["text"],"x"]]"#]);
    assert!(got.header("stream-cursor").is_some());
}

#[tokio::test]
async fn sse_sends_data_and_control_events_then_follows_the_tail() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    f.push("a");
    let app = f.app();
    let request = Request::get("/streams/lanes/main?offset=-1&live=sse")
        .body(Body::empty())
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut text = String::new();
    while !text.contains("upToDate") {
        let frame = body.frame().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
    }
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(
        events[0],
        format!(
            "event: data\ndata: [{},{}]",
            r#"[["r",{"text":""}]]"#, r#"[["a",["text"],"a"]]"#
        )
    );
    assert!(events[1].starts_with("event: control\ndata: {\"streamNextOffset\":\""));
    assert!(events[1].contains("\"streamCursor\":\"") && events[1].ends_with("\"upToDate\":true}"));

    f.push("b");
    let frame = body.frame().await.unwrap().unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    // The path's second use: the encoder defines an id for it.
    let expected = r##"event: data
data: [[["#",0,["text"]],["a",0,"b"]]]

event: control
"##;
    assert!(text.starts_with(expected), "{text}");
    assert!(text.ends_with("\"upToDate\":true}\n\n"), "{text}");
}

#[tokio::test]
async fn bad_requests_are_400_and_unknown_streams_404() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let app = f.app();
    for uri in [
        "/streams/lanes/main?offset=12",
        "/streams/lanes/main?offset=zz",
        "/streams/lanes/main?offset=-1&live=websocket",
        "/streams/lanes/main?live=long-poll",
        "/streams/lanes/%00",
    ] {
        assert_eq!(
            get(&app, uri).await.status,
            StatusCode::BAD_REQUEST,
            "{uri}"
        );
    }
    assert_eq!(
        get(&app, "/streams/lanes/other").await.status,
        StatusCode::NOT_FOUND
    );
    let now = get(&app, "/streams/lanes/main?offset=now").await;
    assert_eq!(
        (now.status, now.body.as_slice()),
        (StatusCode::OK, &b"[]"[..])
    );
    assert_eq!(now.header("stream-up-to-date"), Some("true"));
}

#[tokio::test]
async fn the_write_side_is_off_by_default_and_a_refused_request_changes_nothing() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let batch = r#"[["a",["text"],"!"]]"#;
    let json = [("content-type", "application/json")];
    let off = f.app();
    for method in [Method::POST, Method::PUT, Method::DELETE] {
        let r = call(&off, method.clone(), "/streams/lanes/main", &json, batch).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
    let app = Streams::new(&f.log)
        .writes(|request| {
            request
                .headers
                .get("authorization")
                .is_some_and(|v| v == "Bearer ok")
        })
        .router();
    let before = f.log.read_list(&f.lane, &Default::default()).unwrap();
    for method in [Method::POST, Method::PUT, Method::DELETE] {
        for (path, auth) in [
            ("/streams/lanes/main", "Bearer no"),
            ("/streams/lanes/new", ""),
        ] {
            let headers = [
                ("content-type", "application/json"),
                ("authorization", auth),
            ];
            let r = call(&app, method.clone(), path, &headers, batch).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "{method} {path}");
        }
    }
    assert_eq!(
        f.log.read_list(&f.lane, &Default::default()).unwrap(),
        before
    );
    assert_eq!(f.log.addresses().unwrap(), [f.lane.clone()]);

    let ok = [
        ("content-type", "application/json"),
        ("authorization", "Bearer ok"),
    ];
    let r = call(&app, Method::POST, "/streams/lanes/main", &ok, batch).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = call(&app, Method::POST, "/streams/lanes/main", &ok, r#"[["x"]]"#).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "not a wire batch");
    let r = call(
        &app,
        Method::PUT,
        "/streams/lanes/new",
        &ok,
        r#"[["r",{"n":1}]]"#,
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let all = get(&app, "/streams/lanes/main?offset=-1").await.batches();
    let (mut decoder, mut replica) = (Decoder::new(), None);
    apply_all(&mut decoder, &mut replica, &all);
    assert_eq!(replica, Some(json!({"text": "!"})));
    assert_eq!(
        get(&app, "/streams/lanes/new").await.batches(),
        [r#"[["r",{"n":1}]]"#]
    );
}
