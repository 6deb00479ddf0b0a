//! The Durable Streams router over a JSONL log, called in process: catch-up, resume, the base
//! offset, retention, long-poll, SSE, HEAD, the error statuses, and the write side's hook.
//! Also (`mod protocol`) the streams that are not chord logs, held by a `Backend`, and
//! (`mod read_hook`) the read authorization hook on every read route.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, Store};
use chord::streams::{Compaction, Log, LogBuilder, Retention, Streams, BASE_OFFSET_HEADER};
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
    /// A log keeping `retention`'s bases and nothing more for time (no time floor: what
    /// these tests read of retention is its count of bases).
    fn new(retention: Retention, tail_records: usize) -> Fixture {
        Fixture::with(
            LogBuilder::new()
                .retention(retention)
                .keep_for(Duration::ZERO)
                .tail_records(tail_records),
        )
    }

    fn with(builder: LogBuilder) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let log = builder.build(store);
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

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
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

/// The seqs of the lane's records in the store.
fn stored_seqs(f: &Fixture) -> Vec<u64> {
    let page = f
        .log
        .read_list(&f.lane, &chord::store::ReadOptions::asc().limit(1000))
        .unwrap();
    page.records.iter().map(|r| r.seq).collect()
}

#[tokio::test]
async fn compaction_removes_what_retention_no_longer_serves_and_gone_stays_gone() {
    // A cache of 2 records: older reads go to the store.
    let mut f = Fixture::with(
        LogBuilder::new()
            .retention(Retention::Bases(2))
            .keep_for(Duration::ZERO)
            .tail_records(2)
            .compaction(Compaction::EveryBases(1)),
    );
    f.base(); // 1
    f.push("a"); // 2
    f.push("b"); // 3
    f.base(); // 4
    f.push("c"); // 5
    assert_eq!(
        stored_seqs(&f),
        [1, 2, 3, 4, 5],
        "two bases: nothing to remove"
    );
    let app = f.app();
    let first = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(first.batches().len(), 5);
    // A reader that had read up to "a".
    let early = chord::streams::Offset::from_seq(2).to_string();
    assert_eq!(
        get(&app, &format!("/streams/lanes/main?offset={early}"))
            .await
            .batches()
            .len(),
        3
    );
    f.base(); // 6: the oldest base and what follows it, up to the next base, go
    f.push("d"); // 7
    assert_eq!(stored_seqs(&f), [4, 5, 6, 7]);
    assert_eq!(f.log.compaction_failure(), None);
    let size = f.log.with_store(|s| s.size());
    let on_disk = std::fs::metadata(f.log.with_store(|s| s.path().to_owned()))
        .unwrap()
        .len();
    assert_eq!(size, on_disk);

    // From the start: the oldest kept base on, the state as written.
    let app = f.app();
    let all = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(all.status, StatusCode::OK);
    let batches = all.batches();
    assert_eq!(batches.len(), 4);
    let (mut decoder, mut replica) = (Decoder::new(), None);
    apply_all(&mut decoder, &mut replica, &batches);
    assert_eq!(replica, Some(f.value()));
    // A reader resuming inside what was kept is served from the store (the cache holds 2).
    let after_base = chord::streams::Offset::from_seq(4).to_string();
    let resumed = get(&app, &format!("/streams/lanes/main?offset={after_base}")).await;
    assert_eq!(resumed.status, StatusCode::OK);
    assert_eq!(resumed.batches().len(), 3);
    assert!(resumed.batches()[0].contains("\"c\""));
    // Offsets in the compacted range: 410; its last seq (the floor) reads on from the base.
    let gone = get(&app, &format!("/streams/lanes/main?offset={early}")).await;
    assert_eq!(gone.status, StatusCode::GONE);
    let floor = chord::streams::Offset::from_seq(3).to_string();
    let from_floor = get(&app, &format!("/streams/lanes/main?offset={floor}")).await;
    assert_eq!(from_floor.batches(), batches);

    // Opened again, the log reads the same, its checksum chain verified.
    let path = f.log.with_store(|s| s.path().to_owned());
    let store = JsonlStore::open_read_only(&path).unwrap();
    let seqs: Vec<u64> = store
        .read_list(
            &Address::new("lanes", "main"),
            &chord::store::ReadOptions::asc(),
        )
        .unwrap()
        .records
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, [4, 5, 6, 7]);
}

/// A store compacted behind the tail cache's back (its floor not moved yet): a reader whose
/// offset the cache still allows reads the store, finds its place gone, and gets 410, never
/// the records after the gap as if they followed its offset.
#[tokio::test]
async fn a_reader_in_a_range_compacted_behind_the_cache_gets_gone_not_a_gap() {
    let mut f = Fixture::with(
        LogBuilder::new()
            .retention(Retention::Bases(3))
            .keep_for(Duration::ZERO)
            .tail_records(1)
            .compaction(Compaction::Off),
    );
    f.base(); // 1
    f.push("a"); // 2
    f.push("b"); // 3
    f.base(); // 4
    f.push("c"); // 5
    f.push("d"); // 6
    let app = f.app();
    let before = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(
        before.batches().len(),
        6,
        "Compaction::Off: everything stays"
    );
    // Offset 2 (after "a"): served before the compaction.
    let offset = chord::streams::Offset::from_seq(2).to_string();
    let served = get(&app, &format!("/streams/lanes/main?offset={offset}")).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.batches().len(), 4);

    let done = f.log.with_store(|s| s.compact(&f.lane, 1)).unwrap();
    assert_eq!((done.removed, done.oldest_kept), (3, Some(4)));
    let gone = get(&app, &format!("/streams/lanes/main?offset={offset}")).await;
    assert_eq!(gone.status, StatusCode::GONE, "{}", gone.text());
    // Within what is kept, reads go on.
    let kept = chord::streams::Offset::from_seq(4).to_string();
    let ok = get(&app, &format!("/streams/lanes/main?offset={kept}")).await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.batches().len(), 2);
}

/// Over any backend: the log compacts on its retention, the route answers 410 in the
/// compacted range and serves the rest, the state as written.
fn compacted_route_serves_the_rest<S: Store + Send + 'static>(store: S) {
    let log = LogBuilder::new()
        .retention(Retention::Bases(2))
        .keep_for(Duration::ZERO)
        .tail_records(2)
        .compaction(Compaction::EveryBases(1))
        .build(store);
    let mut writer = log.clone();
    let lane = Address::new("lanes", "main");
    let mut seqs = Vec::new();
    for (i, base) in [true, false, false, true, false, true, false]
        .into_iter()
        .enumerate()
    {
        let seq = if base {
            writer.append(
                &lane,
                &format!(r#"[["r",{{"n":{i}}}]]"#),
                Some(chord::store::BASE),
            )
        } else {
            writer.append(&lane, &format!(r#"[["s",["n"],{i}]]"#), None)
        };
        seqs.push(seq.unwrap());
    }
    let page = log
        .read_list(&lane, &chord::store::ReadOptions::asc())
        .unwrap();
    let stored: Vec<u64> = page.records.iter().map(|r| r.seq).collect();
    assert_eq!(stored, seqs[3..], "from the second newest base on");
    assert_eq!(log.compaction_failure(), None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Streams::new(&log).router();
        let offset = |seq: u64| chord::streams::Offset::from_seq(seq).to_string();
        for gone in [seqs[0], seqs[1]] {
            let reply = get(
                &app,
                &format!("/streams/lanes/main?offset={}", offset(gone)),
            )
            .await;
            assert_eq!(reply.status, StatusCode::GONE, "offset {gone}");
        }
        let all = get(&app, "/streams/lanes/main?offset=-1").await;
        assert_eq!(all.status, StatusCode::OK);
        let batches = all.batches();
        assert_eq!(batches.len(), 4);
        let (mut decoder, mut value) = (Decoder::new(), None);
        apply_all(&mut decoder, &mut value, &batches);
        assert_eq!(value, Some(json!({"n": 6})));
        let resumed = get(
            &app,
            &format!("/streams/lanes/main?offset={}", offset(seqs[3])),
        )
        .await;
        assert_eq!(resumed.status, StatusCode::OK);
        assert_eq!(resumed.batches(), batches[1..]);
    });
}

#[test]
fn compacted_route_over_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    compacted_route_serves_the_rest(JsonlStore::open(path, Durability::EveryAppend).unwrap());
}

#[cfg(feature = "sqlite")]
#[test]
fn compacted_route_over_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let store = chord::store::SqliteStore::open(path, Durability::EveryAppend).unwrap();
    compacted_route_serves_the_rest(store);
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

#[cfg(feature = "postgres")]
#[test]
fn compacted_route_over_postgres() {
    if !pg::available() {
        return;
    }
    let url = pg::fresh_url("compactroute");
    let store = chord::store::PostgresStore::open(&url, Durability::EveryAppend).unwrap();
    compacted_route_serves_the_rest(store);
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

/// Opens `lanes/main` from its start with `live=sse`, checks the response is an event stream,
/// and returns its body.
async fn sse_from_the_start(app: &axum::Router) -> Body {
    let request = Request::get("/streams/lanes/main?offset=-1&live=sse")
        .body(Body::empty())
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response.into_body()
}

/// The next frame of an SSE body, as text.
async fn next_text(body: &mut Body) -> String {
    let frame = body.frame().await.unwrap().unwrap();
    String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
}

#[tokio::test]
async fn sse_sends_data_and_control_events_then_follows_the_tail() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    f.push("a");
    let app = f.app();
    let mut body = sse_from_the_start(&app).await;
    let mut text = String::new();
    while !text.contains("upToDate") {
        text.push_str(&next_text(&mut body).await);
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
    let text = next_text(&mut body).await;
    // The path's second use: the encoder defines an id for it.
    let expected = r##"event: data
data: [[["#",0,["text"]],["a",0,"b"]]]

event: control
"##;
    assert!(text.starts_with(expected), "{text}");
    assert!(text.ends_with("\"upToDate\":true}\n\n"), "{text}");
}

#[tokio::test]
async fn a_coalescing_window_sends_the_batches_appended_within_it_in_one_data_event() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let app = Streams::new(&f.log)
        .coalesce(Duration::from_secs(2))
        .router();
    let mut body = sse_from_the_start(&app).await;
    // The base goes at once: nothing was sent before it.
    let first = next_text(&mut body).await;
    assert!(first.starts_with("event: data\ndata: [[[\"r\""), "{first}");

    // A batch within the window is held (without a window it would come at once)...
    f.push("a");
    let held = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
    assert!(held.is_err(), "sent within the window: {held:?}");
    // ... and goes with the ones appended after it, in one data event, when the window ends.
    f.push("b");
    f.push("c");
    let second = next_text(&mut body).await;
    let events: Vec<&str> = second.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.len(), 2, "one data and one control event: {second}");
    assert!(events[1].ends_with("\"upToDate\":true}"), "{second}");

    let batches = |event: &str| -> Vec<String> {
        let json = event.strip_prefix("event: data\ndata: ").unwrap();
        let v: Vec<Value> = serde_json::from_str(json).unwrap();
        v.iter().map(Value::to_string).collect()
    };
    assert_eq!(batches(events[0]).len(), 3, "{second}");
    let mut decoder = Decoder::new();
    let mut value = None;
    apply_all(
        &mut decoder,
        &mut value,
        &batches(first.split("\n\n").next().unwrap()),
    );
    apply_all(&mut decoder, &mut value, &batches(events[0]));
    assert_eq!(value, Some(f.value()));
}

#[tokio::test]
async fn an_idle_sse_response_sends_keep_alive_comments_between_events() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let app = Streams::new(&f.log)
        .keep_alive(Duration::from_millis(50))
        .router();
    let mut body = sse_from_the_start(&app).await;
    assert!(next_text(&mut body).await.starts_with("event: data\n"));
    assert_eq!(next_text(&mut body).await, ": keep-alive\n\n");
    f.push("a");
    assert!(next_text(&mut body)
        .await
        .starts_with("event: data\ndata: [[[\"a\""));
    assert_eq!(next_text(&mut body).await, ": keep-alive\n\n");
    assert_eq!(next_text(&mut body).await, ": keep-alive\n\n");
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

/// A protocol parameter given twice is refused, on a chord log and on a stream of the
/// backend alike, whichever order the values come in: the server never picks one of two
/// offsets (a cache in front could key the URL by the other).
#[tokio::test]
async fn a_repeated_protocol_parameter_is_400() {
    let mut f = Fixture::new(Retention::default(), 100);
    f.base();
    let app = Streams::new(&f.log)
        .backend(chord::streams::Memory::new())
        .writes(|_| true)
        .router();
    let created = call(
        &app,
        Method::PUT,
        "/streams/other/plain",
        &[("content-type", "text/plain")],
        "x",
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    for stream in ["/streams/lanes/main", "/streams/other/plain"] {
        // Each once: served.
        let once = get(&app, &format!("{stream}?offset=-1&cursor=1")).await;
        assert_eq!(once.status, StatusCode::OK, "{stream}");
        for query in [
            "offset=now&offset=-1",
            "offset=-1&offset=now",
            "offset=-1&offset=-1",
            "offset=-1&live=sse&live=long-poll",
            "offset=-1&live=long-poll&cursor=1&cursor=2",
        ] {
            let reply = get(&app, &format!("{stream}?{query}")).await;
            let name = query.rsplit('&').next().unwrap().split('=').next().unwrap();
            assert_eq!(
                (reply.status, reply.text()),
                (
                    StatusCode::BAD_REQUEST,
                    format!("multiple {name} parameters not allowed\n").as_str()
                ),
                "{stream}?{query}"
            );
        }
        // Other parameters may repeat (an application's own, or a token the hook reads).
        let other = get(&app, &format!("{stream}?offset=-1&x=1&x=2")).await;
        assert_eq!(other.status, StatusCode::OK, "{stream}");
    }
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

/// Protocol streams that are not chord logs (`Streams::backend`, `Memory`): bytes and
/// JSON-mode framing, close, DELETE, idempotent producers, TTL and expiry, SSE, the
/// authorization hook, and chord logs keeping their own rules beside them.
mod protocol {
    use super::*;
    use chord::streams::Memory;

    struct Fixture {
        _dir: tempfile::TempDir,
        log: Log<JsonlStore>,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let store =
                JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
            Fixture {
                _dir: dir,
                log: Log::new(store),
            }
        }

        /// Writes allowed to `Bearer ok`; long-polls that would wait an hour (a test that
        /// finishes shows the server did not wait).
        fn app(&self) -> Router {
            Streams::new(&self.log)
                .long_poll(Duration::from_secs(3600))
                .writes(|r| {
                    r.headers
                        .get("authorization")
                        .is_some_and(|v| v == "Bearer ok")
                })
                .backend(Memory::new().max_stream_bytes(STREAM_BOUND))
                .router()
        }
    }

    const AUTH: (&str, &str) = ("authorization", "Bearer ok");
    const TEXT: (&str, &str) = ("content-type", "text/plain");
    const JSON: (&str, &str) = ("content-type", "application/json");

    /// What a message costs a stream beside its bytes: its handle.
    const H: usize = std::mem::size_of::<axum::body::Bytes>();

    /// The fixture's bound on one stream: 64 bytes, in up to 16 messages.
    const STREAM_BOUND: usize = 64 + 16 * H;

    #[tokio::test]
    async fn bytes_streams_are_created_appended_and_read_from_any_offset() {
        let f = Fixture::new();
        let app = f.app();
        let r = call(&app, Method::PUT, "/streams/t/a", &[AUTH, TEXT], "hello ").await;
        assert_eq!(r.status, StatusCode::CREATED);
        let first = r.header("stream-next-offset").unwrap().to_owned();
        let r = call(&app, Method::PUT, "/streams/t/a", &[AUTH, TEXT], "").await;
        assert_eq!(r.status, StatusCode::OK, "same configuration: idempotent");
        let r = call(&app, Method::PUT, "/streams/t/a", &[AUTH, JSON], "").await;
        assert_eq!(r.status, StatusCode::CONFLICT, "another content type");
        let r = call(&app, Method::POST, "/streams/t/a", &[AUTH, TEXT], "world").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        assert!(r.header("stream-next-offset").unwrap() > first.as_str());
        let r = call(&app, Method::POST, "/streams/t/a", &[AUTH, JSON], "1").await;
        assert_eq!(r.status, StatusCode::CONFLICT, "content type mismatch");
        let r = call(&app, Method::POST, "/streams/t/a", &[AUTH, TEXT], "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "empty append");
        // With the two messages there, one more byte than the bound leaves.
        let big = "x".repeat(STREAM_BOUND - 11 - 3 * H + 1);
        let r = call(&app, Method::POST, "/streams/t/a", &[AUTH, TEXT], &big).await;
        assert_eq!(
            r.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "the backend's bound"
        );

        let r = call(&app, Method::GET, "/streams/t/a?offset=-1", &[], "").await;
        assert_eq!((r.status, r.text()), (StatusCode::OK, "hello world"));
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.header("stream-up-to-date"), Some("true"));
        let uri = format!("/streams/t/a?offset={first}");
        let r = call(&app, Method::GET, &uri, &[], "").await;
        assert_eq!(r.text(), "world");
        let r = call(&app, Method::GET, "/streams/t/a?offset=zz", &[], "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let r = call(&app, Method::POST, "/streams/t/none", &[AUTH, TEXT], "x").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn json_streams_hold_messages_and_flatten_one_array_level() {
        let f = Fixture::new();
        let app = f.app();
        let r = call(&app, Method::PUT, "/streams/j/a", &[AUTH, JSON], "[1, [2]]").await;
        assert_eq!(r.status, StatusCode::CREATED);
        let r = call(
            &app,
            Method::POST,
            "/streams/j/a",
            &[AUTH, JSON],
            r#"{"a": 1}"#,
        )
        .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = call(&app, Method::POST, "/streams/j/a", &[AUTH, JSON], "[]").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "an empty array");
        let r = call(&app, Method::POST, "/streams/j/a", &[AUTH, JSON], "{").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "invalid JSON");
        let r = call(&app, Method::GET, "/streams/j/a", &[], "").await;
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v, json!([1, [2], {"a": 1}]));
    }

    #[tokio::test]
    async fn a_closed_stream_refuses_appends_and_readers_see_the_end() {
        let f = Fixture::new();
        let app = f.app();
        call(&app, Method::PUT, "/streams/c/a", &[AUTH, TEXT], "last").await;
        let close = [AUTH, ("stream-closed", "true")];
        let r = call(&app, Method::POST, "/streams/c/a", &close, "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        assert_eq!(r.header("stream-closed"), Some("true"));
        let r = call(&app, Method::POST, "/streams/c/a", &close, "").await;
        assert_eq!(
            r.status,
            StatusCode::NO_CONTENT,
            "closing again is idempotent"
        );
        let r = call(&app, Method::POST, "/streams/c/a", &[AUTH, TEXT], "more").await;
        assert_eq!(r.status, StatusCode::CONFLICT);
        assert_eq!(r.header("stream-closed"), Some("true"));
        let tail = r.header("stream-next-offset").unwrap().to_owned();

        let r = call(&app, Method::GET, "/streams/c/a?offset=-1", &[], "").await;
        assert_eq!(
            (r.text(), r.header("stream-closed")),
            ("last", Some("true"))
        );
        // At the tail of a closed stream a long-poll answers at once (it would wait an hour).
        let uri = format!("/streams/c/a?offset={tail}&live=long-poll");
        let r = call(&app, Method::GET, &uri, &[], "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        assert_eq!(r.header("stream-closed"), Some("true"));
        let r = call(&app, Method::HEAD, "/streams/c/a", &[], "").await;
        assert_eq!(r.header("stream-closed"), Some("true"));
        // SSE sends the data, then a control event with streamClosed, then ends.
        let r = call(
            &app,
            Method::GET,
            "/streams/c/a?offset=-1&live=sse",
            &[],
            "",
        )
        .await;
        let text = r.text();
        assert!(text.starts_with("event: data\ndata:last\n\n"), "{text}");
        assert!(text.contains("\"streamClosed\":true"), "{text}");
    }

    #[tokio::test]
    async fn binary_sse_is_base64() {
        let f = Fixture::new();
        let app = f.app();
        let headers = [
            AUTH,
            ("content-type", "application/octet-stream"),
            ("stream-closed", "true"),
        ];
        call(&app, Method::PUT, "/streams/b/a", &headers, "foo").await;
        let r = call(
            &app,
            Method::GET,
            "/streams/b/a?offset=-1&live=sse",
            &[],
            "",
        )
        .await;
        assert_eq!(r.header("stream-sse-data-encoding"), Some("base64"));
        assert!(
            r.text().starts_with("event: data\ndata:Zm9v\n\n"),
            "{}",
            r.text()
        );
    }

    #[tokio::test]
    async fn producers_are_deduplicated_and_fenced() {
        let f = Fixture::new();
        let app = f.app();
        call(&app, Method::PUT, "/streams/p/a", &[AUTH, TEXT], "").await;
        let send = |epoch: &'static str, seq: &'static str, body: &'static str| {
            let app = app.clone();
            async move {
                let headers = [
                    AUTH,
                    TEXT,
                    ("producer-id", "p1"),
                    ("producer-epoch", epoch),
                    ("producer-seq", seq),
                ];
                call(&app, Method::POST, "/streams/p/a", &headers, body).await
            }
        };
        assert_eq!(send("0", "0", "a").await.status, StatusCode::OK);
        assert_eq!(
            send("0", "0", "a").await.status,
            StatusCode::NO_CONTENT,
            "a retry"
        );
        let r = send("0", "2", "c").await;
        assert_eq!(r.status, StatusCode::CONFLICT, "a gap");
        assert_eq!(r.header("producer-expected-seq"), Some("1"));
        assert_eq!(send("0", "1", "b").await.status, StatusCode::OK);
        assert_eq!(send("1", "1", "x").await.status, StatusCode::BAD_REQUEST);
        assert_eq!(send("1", "0", "c").await.status, StatusCode::OK);
        let r = send("0", "2", "zombie").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(r.header("producer-epoch"), Some("1"));
        let headers = [AUTH, TEXT, ("producer-id", "p1")];
        let r = call(&app, Method::POST, "/streams/p/a", &headers, "x").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "headers go together");
        let r = call(&app, Method::GET, "/streams/p/a", &[], "").await;
        assert_eq!(r.text(), "abc");
    }

    #[tokio::test]
    async fn delete_ttl_expiry_and_the_hook() {
        let f = Fixture::new();
        let app = f.app();
        let r = call(&app, Method::PUT, "/streams/d/a", &[TEXT], "x").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        let r = call(&app, Method::GET, "/streams/d/a", &[], "").await;
        assert_eq!(
            r.status,
            StatusCode::NOT_FOUND,
            "a refused request changes nothing"
        );
        call(&app, Method::PUT, "/streams/d/a", &[AUTH, TEXT], "x").await;
        let r = call(&app, Method::DELETE, "/streams/d/a", &[TEXT], "").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        let r = call(&app, Method::DELETE, "/streams/d/a", &[AUTH], "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = call(&app, Method::GET, "/streams/d/a", &[], "").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        let r = call(&app, Method::DELETE, "/streams/d/a", &[AUTH], "").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);

        let both = [
            AUTH,
            ("stream-ttl", "60"),
            ("stream-expires-at", "2999-01-01T00:00:00Z"),
        ];
        let r = call(&app, Method::PUT, "/streams/d/b", &both, "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let r = call(
            &app,
            Method::PUT,
            "/streams/d/b",
            &[AUTH, ("stream-ttl", "060")],
            "",
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let r = call(
            &app,
            Method::PUT,
            "/streams/d/b",
            &[AUTH, ("stream-ttl", "60")],
            "",
        )
        .await;
        assert_eq!(r.header("stream-ttl"), Some("60"));
        let past = [AUTH, ("stream-expires-at", "2000-01-01T00:00:00Z")];
        let r = call(&app, Method::PUT, "/streams/d/c", &past, "").await;
        assert_eq!(r.status, StatusCode::CREATED);
        let r = call(&app, Method::GET, "/streams/d/c", &[], "").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "expired");
    }

    #[tokio::test]
    async fn chord_logs_keep_their_rules_beside_a_backend() {
        let f = Fixture::new();
        let lane = Address::new("lanes", "main");
        let mut writer = LogWriter::new(f.log.clone(), Checkpoint::Never);
        writer
            .append(&lane, &[Op::Replace(json!({"n": 1}))])
            .unwrap();
        let app = f.app();
        let r = call(&app, Method::PUT, "/streams/lanes/main", &[AUTH, TEXT], "x").await;
        assert_eq!(
            r.status,
            StatusCode::CONFLICT,
            "a chord log is application/json"
        );
        let r = call(
            &app,
            Method::POST,
            "/streams/lanes/main",
            &[AUTH, JSON],
            "[1]",
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "not a wire batch");
        let r = call(&app, Method::DELETE, "/streams/lanes/main", &[AUTH], "").await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        let r = call(&app, Method::GET, "/streams/lanes/main", &[], "").await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.header("chord-base-offset").is_some());
    }

    /// `Memory::max_bytes`: 100 bytes of messages in all, each message also counted with its
    /// handle, filled across three streams; each create, append or fork beyond is 507 and
    /// changes nothing; a delete makes room again.
    #[tokio::test]
    async fn the_bytes_of_all_streams_are_bounded_and_a_delete_makes_room() {
        const FULL: &str = "the server holds as many bytes as it may\n";
        let f = Fixture::new();
        let app = Streams::new(&f.log)
            .writes(|_| true)
            .backend(
                Memory::new()
                    .max_stream_bytes(64 + 2 * H)
                    .max_bytes(100 + 4 * H),
            )
            .router();
        let a40 = "a".repeat(40);
        let r = call(&app, Method::PUT, "/streams/m/a", &[TEXT], &a40).await;
        assert_eq!(r.status, StatusCode::CREATED);
        let r = call(&app, Method::PUT, "/streams/m/b", &[TEXT], &"b".repeat(30)).await;
        assert_eq!(r.status, StatusCode::CREATED);
        let r = call(&app, Method::POST, "/streams/m/b", &[TEXT], &"b".repeat(20)).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = call(&app, Method::PUT, "/streams/m/c", &[TEXT], &"c".repeat(10)).await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "exactly the bound: 100 + 4 messages"
        );
        let tail = call(&app, Method::HEAD, "/streams/m/a", &[], "").await;
        let tail = tail.header("stream-next-offset").unwrap().to_owned();

        // Full: one byte more is refused, whoever asks and however.
        let producer = [
            TEXT,
            ("producer-id", "p"),
            ("producer-epoch", "0"),
            ("producer-seq", "0"),
        ];
        let fork = [("stream-forked-from", "/streams/m/a")];
        let refused = [
            (Method::POST, "/streams/m/a", &[TEXT][..], "x"),
            (Method::POST, "/streams/m/a", &producer, "x"),
            (Method::PUT, "/streams/m/d", &[TEXT], "d"),
            (Method::PUT, "/streams/m/e", &fork, ""),
        ];
        for (method, uri, headers, body) in refused {
            let r = call(&app, method.clone(), uri, headers, body).await;
            assert_eq!(
                (r.status, r.text()),
                (StatusCode::INSUFFICIENT_STORAGE, FULL),
                "{method} {uri} {headers:?}"
            );
        }
        for uri in ["/streams/m/d", "/streams/m/e"] {
            let r = get(&app, uri).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{uri} was not created");
        }
        // A PUT of a stream already there creates nothing: answered as ever.
        let r = call(&app, Method::PUT, "/streams/m/a", &[TEXT], "zzz").await;
        assert_eq!(r.status, StatusCode::OK);
        // Every stream reads back whole and unchanged.
        let r = get(&app, "/streams/m/a?offset=-1").await;
        assert_eq!(r.text(), a40);
        assert_eq!(r.header("stream-next-offset"), Some(tail.as_str()));
        let r = get(&app, "/streams/m/b?offset=-1").await;
        assert_eq!(r.text(), "b".repeat(50));
        let r = get(&app, "/streams/m/c?offset=-1").await;
        assert_eq!(r.text(), "c".repeat(10));

        // A delete gives its stream's two messages back (50 bytes).
        let r = call(&app, Method::DELETE, "/streams/m/b", &[], "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        // The refused producer request advanced nothing: its seq 0 is still the next.
        let r = call(&app, Method::POST, "/streams/m/a", &producer, "x").await;
        assert_eq!(r.status, StatusCode::OK);
        // A fork's inherited messages count: a's first, 40 bytes; 91 in 4 messages now.
        let at_tail = [fork[0], ("stream-fork-offset", tail.as_str())];
        let r = call(&app, Method::PUT, "/streams/m/e", &at_tail, "").await;
        assert_eq!(r.status, StatusCode::CREATED);
        let r = get(&app, "/streams/m/e?offset=-1").await;
        assert_eq!(r.text(), a40);
        // 9 bytes left: less than a message's handle, so even one byte is refused.
        let r = call(&app, Method::POST, "/streams/m/c", &[TEXT], "c").await;
        assert_eq!(
            (r.status, r.text()),
            (StatusCode::INSUFFICIENT_STORAGE, FULL)
        );
        // Deleting the fork gives its message back: 49 bytes in one message fit, no more.
        let r = call(&app, Method::DELETE, "/streams/m/e", &[], "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = call(&app, Method::POST, "/streams/m/c", &[TEXT], &"c".repeat(50)).await;
        assert_eq!(
            (r.status, r.text()),
            (StatusCode::INSUFFICIENT_STORAGE, FULL),
            "one byte over"
        );
        let r = call(&app, Method::POST, "/streams/m/c", &[TEXT], &"c".repeat(49)).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "exactly the bound");
        let r = get(&app, "/streams/m/c?offset=-1").await;
        assert_eq!(r.text(), "c".repeat(59));
    }

    #[tokio::test]
    async fn forks_copy_up_to_their_point_and_outlive_a_deleted_source() {
        let f = Fixture::new();
        let app = f.app();
        let r = call(&app, Method::PUT, "/streams/f/src", &[AUTH, TEXT], "hello").await;
        let one = r.header("stream-next-offset").unwrap().to_owned();
        call(
            &app,
            Method::POST,
            "/streams/f/src",
            &[AUTH, TEXT],
            " world",
        )
        .await;
        let fork = [
            AUTH,
            ("stream-forked-from", "/streams/f/src"),
            ("stream-fork-offset", "0000000000000000"),
            ("stream-fork-sub-offset", "3"),
        ];
        let r = call(&app, Method::PUT, "/streams/f/a", &fork, "").await;
        assert_eq!(r.status, StatusCode::CREATED);
        assert_eq!(r.header("content-type"), Some("text/plain"), "inherited");
        let r = call(&app, Method::PUT, "/streams/f/a", &fork, "").await;
        assert_eq!(r.status, StatusCode::OK, "idempotent");
        let r = call(&app, Method::GET, "/streams/f/a", &[], "").await;
        assert_eq!(r.text(), "hel");
        // A sibling path names the source too; the fork point defaults to the tail.
        let sibling = [AUTH, ("stream-forked-from", "/streams/f/src")];
        call(&app, Method::PUT, "/streams/f/b", &sibling, "").await;
        call(&app, Method::POST, "/streams/f/src", &[AUTH, TEXT], "!").await;
        let r = call(&app, Method::GET, "/streams/f/b", &[], "").await;
        assert_eq!(
            r.text(),
            "hello world",
            "appends after the fork point stay out"
        );
        let at_one = [
            AUTH,
            ("stream-forked-from", "/streams/f/src"),
            ("stream-fork-offset", one.as_str()),
            ("stream-fork-sub-offset", "99"),
        ];
        let r = call(&app, Method::PUT, "/streams/f/c", &at_one, "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "past the next boundary");
        let r = call(
            &app,
            Method::PUT,
            "/streams/f/c",
            &[AUTH, ("stream-fork-sub-offset", "0")],
            "",
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::BAD_REQUEST,
            "a sub-offset without a source"
        );

        // Deleting the source while forks live: 410 and its path blocked, until they go.
        let r = call(&app, Method::DELETE, "/streams/f/src", &[AUTH], "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = call(&app, Method::GET, "/streams/f/src", &[], "").await;
        assert_eq!(r.status, StatusCode::GONE);
        let r = call(&app, Method::PUT, "/streams/f/src", &[AUTH, TEXT], "").await;
        assert_eq!(r.status, StatusCode::CONFLICT);
        let r = call(&app, Method::GET, "/streams/f/a", &[], "").await;
        assert_eq!(r.text(), "hel", "the fork still reads");
        call(&app, Method::DELETE, "/streams/f/a", &[AUTH], "").await;
        call(&app, Method::DELETE, "/streams/f/b", &[AUTH], "").await;
        let r = call(&app, Method::GET, "/streams/f/src", &[], "").await;
        assert_eq!(
            r.status,
            StatusCode::NOT_FOUND,
            "cleaned up with its last fork"
        );
    }
}

#[tokio::test]
async fn reads_from_another_origin_carry_the_cross_origin_policy() {
    let mut f = Fixture::new(Retention::Bases(4), 64);
    f.base();
    f.push("hello");
    let page = [("origin", "https://page.example")];
    let url = "/streams/lanes/main?offset=-1";

    // The default: any origin may read without credentials and sees the protocol's headers.
    let app = f.app();
    for method in [Method::GET, Method::HEAD] {
        let r = call(&app, method.clone(), url, &page, "").await;
        assert_eq!(r.status, StatusCode::OK, "{method}");
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("*"),
            "{method}"
        );
        let exposed = r.header("access-control-expose-headers").unwrap_or("");
        for name in [
            "stream-next-offset",
            "stream-up-to-date",
            "chord-base-offset",
            "etag",
        ] {
            assert!(
                exposed.contains(name),
                "{method}: {name} not in {exposed:?}"
            );
        }
        assert_eq!(r.header("access-control-allow-credentials"), None);
    }
    let preflight = [
        ("origin", "https://page.example"),
        ("access-control-request-method", "GET"),
        (
            "access-control-request-headers",
            "authorization, if-none-match",
        ),
    ];
    let r = call(&app, Method::OPTIONS, url, &preflight, "").await;
    assert!(r.status.is_success(), "{}", r.status);
    let allowed = r.header("access-control-allow-headers").unwrap_or("");
    assert!(allowed.contains("authorization") && allowed.contains("if-none-match"));
    // An `OPTIONS` that is not a preflight (no `Origin`, or no method asked for) is answered
    // with the methods served, as without a policy, not with the policy's 200.
    for headers in [&[][..], &[("origin", "https://page.example")][..]] {
        let r = call(&app, Method::OPTIONS, url, headers, "").await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{headers:?}");
        assert!(
            r.header("allow").unwrap_or("").contains("GET"),
            "{headers:?}"
        );
        assert_eq!(
            r.header("access-control-allow-methods"),
            None,
            "{headers:?}"
        );
    }

    // A named origin with credentials: that origin is granted, another is not.
    let named = Streams::new(&f.log)
        .cors(Some(
            chord::streams::default_cors()
                .allow_origin(axum::http::HeaderValue::from_static("https://page.example"))
                .allow_credentials(true),
        ))
        .router();
    let r = call(&named, Method::GET, url, &page, "").await;
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://page.example")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    let other = [("origin", "https://elsewhere.example")];
    let r = call(&named, Method::GET, url, &other, "").await;
    // Whatever it says, it does not grant that origin (a browser compares the two).
    assert_ne!(
        r.header("access-control-allow-origin"),
        Some("https://elsewhere.example")
    );
    assert_ne!(r.header("access-control-allow-origin"), Some("*"));

    // No policy: same-origin pages only.
    let none = Streams::new(&f.log).cors(None).router();
    let r = call(&none, Method::GET, url, &page, "").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = call(&none, Method::OPTIONS, url, &preflight, "").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(r.header("allow").unwrap().contains("GET"));
    assert_eq!(r.header("access-control-allow-origin"), None);
}

/// The read authorization hook (`Streams::reads`): every read route goes through it, a
/// refused reader gets a status and nothing of the stream, an allowed one reads as before.
mod read_hook {
    use super::*;
    use chord::streams::{default_cors, Access, Memory, ReadKind, EXPOSED_HEADERS};
    use std::sync::{Arc, Mutex};

    /// What the hook saw of one request.
    #[derive(Clone, Debug, PartialEq)]
    struct Seen {
        read: ReadKind,
        address: Address,
        authorization: Option<String>,
        cookie: Option<String>,
        query: Option<String>,
    }

    const READER: (&str, &str) = ("authorization", "Bearer reader");
    const STRANGER: (&str, &str) = ("authorization", "Bearer stranger");
    const ORIGIN: (&str, &str) = ("origin", "https://page.example");

    /// `Bearer reader`, a `session=reader` cookie or `?token=reader` reads; another bearer
    /// token is forbidden; no credential is unauthorized. Every call is recorded.
    fn hooked(f: &Fixture, seen: &Arc<Mutex<Vec<Seen>>>) -> Streams {
        let seen = Arc::clone(seen);
        Streams::new(&f.log)
            .long_poll(Duration::from_millis(50))
            .sse_lifetime(Duration::from_millis(100))
            .backend(Memory::new())
            .writes(|_| true)
            .reads(move |r| {
                let header =
                    |name: &str| r.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
                let s = Seen {
                    read: r.read,
                    address: r.address.clone(),
                    authorization: header("authorization"),
                    cookie: header("cookie"),
                    query: r.uri.query().map(str::to_owned),
                };
                seen.lock().unwrap().push(s.clone());
                let token = s
                    .query
                    .as_deref()
                    .unwrap_or("")
                    .split('&')
                    .any(|p| p == "token=reader");
                match (s.authorization.as_deref(), s.cookie.as_deref()) {
                    (Some("Bearer reader"), _) | (_, Some("session=reader")) => Access::Allow,
                    _ if token => Access::Allow,
                    (Some(_), _) => Access::Forbidden,
                    (None, _) => Access::Unauthorized,
                }
            })
    }

    /// A chord log with records (the backend's stream is created per router, in its `Memory`).
    async fn fixture() -> Fixture {
        let mut f = Fixture::with(LogBuilder::new());
        f.base();
        f.push("hello");
        f
    }

    /// Every read the router serves, as (what the hook is told, URI after the path).
    const READS: [(ReadKind, Method, &str); 4] = [
        (ReadKind::Head, Method::HEAD, "?offset=-1"),
        (ReadKind::CatchUp, Method::GET, "?offset=-1"),
        (ReadKind::LongPoll, Method::GET, "?offset=-1&live=long-poll"),
        (ReadKind::Sse, Method::GET, "?offset=-1&live=sse"),
    ];

    /// The streams read: a chord log, a backend's stream, and one that does not exist.
    const PATHS: [&str; 3] = [
        "/streams/lanes/main",
        "/streams/t/bytes",
        "/streams/lanes/none",
    ];

    fn assert_refused(r: &Reply, status: StatusCode, what: &str) {
        assert_eq!(r.status, status, "{what}");
        assert!(r.body.is_empty(), "{what}: body {:?}", r.text());
        for name in EXPOSED_HEADERS {
            if ["content-type", "cache-control"].contains(name) {
                continue;
            }
            assert_eq!(r.header(name), None, "{what}: {name} on a refusal");
        }
        assert_ne!(r.header("content-type"), Some("application/json"), "{what}");
        assert_eq!(r.header("cache-control"), Some("no-store"), "{what}");
        // The cross-origin policy's headers stay, so that the page sees the status.
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{what}");
    }

    #[tokio::test]
    async fn every_read_route_refused_answers_its_status_and_nothing_of_the_stream() {
        let f = fixture().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = hooked(&f, &seen).router();
        let put = call(
            &app,
            Method::PUT,
            "/streams/t/bytes",
            &[("content-type", "text/plain")],
            "bytes",
        )
        .await;
        assert_eq!(put.status, StatusCode::CREATED);
        for path in PATHS {
            for (_, method, query) in READS {
                let uri = format!("{path}{query}");
                let what = format!("{method} {uri}");
                let r = call(&app, method.clone(), &uri, &[ORIGIN], "").await;
                assert_refused(&r, StatusCode::UNAUTHORIZED, &what);
                assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{what}");
                let r = call(&app, method.clone(), &uri, &[ORIGIN, STRANGER], "").await;
                assert_refused(&r, StatusCode::FORBIDDEN, &what);
                assert_eq!(r.header("www-authenticate"), None, "{what}");
            }
        }
        // Each refusal was the hook's: two calls per read, none served without it.
        assert_eq!(seen.lock().unwrap().len(), PATHS.len() * READS.len() * 2);
    }

    #[tokio::test]
    async fn every_read_route_allowed_is_served_and_the_hook_sees_the_request() {
        let f = fixture().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = hooked(&f, &seen).router();
        let put = call(
            &app,
            Method::PUT,
            "/streams/t/bytes",
            &[("content-type", "text/plain")],
            "bytes",
        )
        .await;
        assert_eq!(put.status, StatusCode::CREATED);
        let mut expected = Vec::new();
        for path in PATHS {
            let (namespace, key) = path["/streams/".len()..].split_once('/').unwrap();
            for (kind, method, query) in READS {
                let uri = format!("{path}{query}");
                let what = format!("{method} {uri}");
                let r = call(&app, method.clone(), &uri, &[ORIGIN, READER], "").await;
                if path.ends_with("none") {
                    assert_eq!(r.status, StatusCode::NOT_FOUND, "{what}");
                } else {
                    assert_eq!(r.status, StatusCode::OK, "{what}");
                    if kind == ReadKind::Sse {
                        assert!(r.text().contains("event: control"), "{what}: {}", r.text());
                    } else {
                        assert!(r.header("stream-next-offset").is_some(), "{what}");
                    }
                    if kind == ReadKind::CatchUp && path.ends_with("bytes") {
                        assert_eq!(r.text(), "bytes", "{what}");
                    }
                }
                expected.push(Seen {
                    read: kind,
                    address: Address::new(namespace, key),
                    authorization: Some("Bearer reader".into()),
                    cookie: None,
                    query: Some(query[1..].to_owned()),
                });
            }
        }
        assert_eq!(*seen.lock().unwrap(), expected);

        // The chord log's records reach an allowed reader whole.
        let r = call(
            &app,
            Method::GET,
            "/streams/lanes/main?offset=-1",
            &[READER],
            "",
        )
        .await;
        let (mut decoder, mut value) = (Decoder::new(), None);
        apply_all(&mut decoder, &mut value, &r.batches());
        assert_eq!(value, Some(f.value()));

        // A cookie, or a token in the query (what an EventSource can send), is seen too.
        seen.lock().unwrap().clear();
        let cookie = ("cookie", "session=reader");
        let r = call(
            &app,
            Method::GET,
            "/streams/lanes/main?offset=-1&live=sse",
            &[cookie],
            "",
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        let r = call(
            &app,
            Method::GET,
            "/streams/lanes/main?offset=-1&live=sse&token=reader",
            &[],
            "",
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.text().starts_with("event: data\n"), "{}", r.text());
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].cookie.as_deref(), Some("session=reader"));
        assert_eq!(
            seen[1].query.as_deref(),
            Some("offset=-1&live=sse&token=reader")
        );
        assert_eq!(seen.len(), 2);
    }

    #[tokio::test]
    async fn the_one_namespace_router_goes_through_the_hook_too() {
        let f = fixture().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = hooked(&f, &seen).namespace_router("/v1/stream", "lanes");
        for (kind, method, query) in READS {
            let uri = format!("/v1/stream/main{query}");
            let r = call(&app, method.clone(), &uri, &[], "").await;
            assert_refused(&r, StatusCode::UNAUTHORIZED, &uri);
            let r = call(&app, method.clone(), &uri, &[READER], "").await;
            assert_eq!(r.status, StatusCode::OK, "{uri}");
            let seen = seen.lock().unwrap();
            assert_eq!(seen.last().unwrap().read, kind);
            assert_eq!(seen.last().unwrap().address, Address::new("lanes", "main"));
        }
    }

    #[tokio::test]
    async fn without_a_hook_every_reader_reads_and_a_bad_request_is_answered_before_it() {
        let f = fixture().await;
        let open = Streams::new(&f.log)
            .long_poll(Duration::from_millis(50))
            .sse_lifetime(Duration::from_millis(100))
            .router();
        for (_, method, query) in READS {
            let uri = format!("/streams/lanes/main{query}");
            let r = call(&open, method.clone(), &uri, &[], "").await;
            assert_eq!(r.status, StatusCode::OK, "{uri}");
        }
        // A malformed request says nothing of a stream: 400 before the hook is asked.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = hooked(&f, &seen).router();
        for uri in ["/streams/lanes/main?live=websocket", "/streams/lanes/%00"] {
            assert_eq!(
                get(&app, uri).await.status,
                StatusCode::BAD_REQUEST,
                "{uri}"
            );
        }
        assert!(seen.lock().unwrap().is_empty());
        // A preflight carries no credential: the policy answers it, not the hook.
        let preflight = [
            ORIGIN,
            ("access-control-request-method", "GET"),
            ("access-control-request-headers", "authorization"),
        ];
        let r = call(&app, Method::OPTIONS, "/streams/lanes/main", &preflight, "").await;
        assert!(r.status.is_success(), "{}", r.status);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_credentialed_origin_sees_the_refusal_and_the_read() {
        let f = fixture().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = hooked(&f, &seen)
            .cors(Some(
                default_cors()
                    .allow_origin(axum::http::HeaderValue::from_static("https://page.example"))
                    .allow_credentials(true),
            ))
            .router();
        let uri = "/streams/lanes/main?offset=-1";
        let r = call(&app, Method::GET, uri, &[ORIGIN], "").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("https://page.example")
        );
        assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
        assert!(r.body.is_empty() && r.header("stream-next-offset").is_none());
        let r = call(
            &app,
            Method::GET,
            uri,
            &[ORIGIN, ("cookie", "session=reader")],
            "",
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("https://page.example")
        );
        assert!(r.header("stream-next-offset").is_some());
    }

    #[tokio::test]
    async fn with_a_read_hook_a_kept_read_is_revalidated_through_it() {
        let f = fixture().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let uri = "/streams/lanes/main?offset=-1";
        let r = get(&f.app(), uri).await;
        assert_eq!(
            r.header("cache-control"),
            Some("private, max-age=60, stale-while-revalidate=300")
        );
        let app = hooked(&f, &seen).router();
        let r = call(&app, Method::GET, uri, &[READER], "").await;
        assert_eq!(r.header("cache-control"), Some("private, no-cache"));
        // The revalidation of a kept read: refused without the credential, 304 with it.
        let etag = ("if-none-match", r.header("etag").unwrap().to_owned());
        let etag = (etag.0, etag.1.as_str());
        let r = call(&app, Method::GET, uri, &[etag], "").await;
        assert_refused(
            &r,
            StatusCode::UNAUTHORIZED,
            "a revalidation without a credential",
        );
        let r = call(&app, Method::GET, uri, &[etag, READER], "").await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED);
        // A Cache-Control set explicitly holds, before the hook or after it.
        let public = axum::http::HeaderValue::from_static("public, max-age=5");
        for app in [
            hooked(&f, &seen).cache_control(public.clone()).router(),
            Streams::new(&f.log)
                .cache_control(public.clone())
                .reads(|_| true)
                .router(),
        ] {
            let r = call(&app, Method::GET, uri, &[READER], "").await;
            assert_eq!(r.header("cache-control"), Some("public, max-age=5"));
        }
    }

    #[tokio::test]
    async fn a_write_hook_answers_401_or_403_as_the_read_hook_does() {
        let f = fixture().await;
        let app = Streams::new(&f.log)
            .writes(|r| match r.headers.get("authorization") {
                None => Access::Unauthorized,
                Some(v) if v == "Bearer writer" => Access::Allow,
                Some(_) => Access::Forbidden,
            })
            .router();
        let batch = r#"[["a",["text"],"!"]]"#;
        let json = ("content-type", "application/json");
        let r = call(&app, Method::POST, "/streams/lanes/main", &[json], batch).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_eq!(
            r.header("connection"),
            Some("close"),
            "its body is left unread"
        );
        assert!(r.body.is_empty());
        let r = call(
            &app,
            Method::POST,
            "/streams/lanes/main",
            &[json, STRANGER],
            batch,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(r.header("connection"), Some("close"));
        let r = call(
            &app,
            Method::POST,
            "/streams/lanes/main",
            &[json, ("authorization", "Bearer writer")],
            batch,
        )
        .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
    }
}
