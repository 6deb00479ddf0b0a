//! The AG-UI door keeps the promises of the live layer it stands on: the same headers on every
//! answer, its requests in the request metrics, runs and readers bounded with agents off the
//! reads' pool, bounded memory per open response whatever the state's size, a typed client
//! state, and a run that needs no router. (The memory of open streams is measured in
//! `ag_ui_memory.rs`, a binary of its own with a counting allocator.)

#[path = "support/ag_ui.rs"]
mod support;

use support::{input, log_in, raw, PATIENCE};

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chord::ag_ui::{AgUi, AgentError, Outcome, Run, RunAgentInput};
use chord::store::{Address, Checkpoint, JsonlStore, LogWriter, Store};
use chord::streams::metrics as m;
use chord::streams::{Log, Server};
use chord::Tracked;
use http_body_util::BodyExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_service::Service;

#[derive(Tracked, Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
struct Plan {
    steps: Vec<String>,
    n: u32,
}

/// An endpoint whose agent takes a step (`steps: ["think"]`, `n: 1`) and flushes, then
/// waits as a slow model does, until the returned sender sends or goes.
fn gated(log: &Log<JsonlStore>) -> (AgUi<Plan, JsonlStore>, mpsc::Sender<()>) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let app = AgUi::new(
        log,
        move |_: &RunAgentInput, run: &mut Run<Plan, Log<JsonlStore>>| {
            run.state().steps.push("think".into());
            run.state().n.set(1);
            run.flush()?;
            let _ = gate.lock().unwrap().recv(); // a slow model
            Ok::<(), AgentError>(())
        },
    );
    (app, release)
}

async fn call(
    app: &mut axum::Router,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(path);
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let (parts, body) = response.into_parts();
    // An event stream of a finished run ends; a bounded read keeps a live one from hanging.
    let text = match tokio::time::timeout(Duration::from_secs(2), body.collect()).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        _ => String::new(),
    };
    (parts.status, parts.headers, text)
}

fn finishing(_: &RunAgentInput, run: &mut Run<Plan, Log<JsonlStore>>) -> Result<(), AgentError> {
    run.state().steps.push("search".into());
    run.flush()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_of_every_verb_and_route_carries_the_layers_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let mut app = AgUi::new(&log, finishing).router();
    let (status, _, _) = call(&mut app, Method::POST, "/", Some(input("t", "r", "{}"))).await;
    assert_eq!(status, 200);
    let verbs = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::TRACE,
        Method::CONNECT,
    ];
    let paths = ["/", "/runs/t/r", "/runs/t/r/state", "/nope", "/runs/t"];
    let mut answers = 0;
    for verb in &verbs {
        for path in paths {
            let (status, headers, _) = call(&mut app, verb.clone(), path, None).await;
            for (name, value) in [
                ("x-content-type-options", "nosniff"),
                ("cross-origin-resource-policy", "cross-origin"),
            ] {
                assert_eq!(
                    headers.get(name).and_then(|v| v.to_str().ok()),
                    Some(value),
                    "{verb} {path} answered {status} without {name}"
                );
            }
            answers += 1;
        }
    }
    assert_eq!(answers, 45);
}

#[test]
fn ag_ui_requests_are_counted_under_kinds_of_their_own() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let log = log_in(dir.path());
            let mut app = AgUi::new(&log, finishing).router();
            let (status, _, _) =
                call(&mut app, Method::POST, "/", Some(input("t", "r", "{}"))).await;
            assert_eq!(status, 200);
            assert_eq!(
                call(&mut app, Method::GET, "/runs/t/r/state", None).await.0,
                200
            );
            assert_eq!(
                call(&mut app, Method::GET, "/runs/t/x/state", None).await.0,
                404
            );
            assert_eq!(call(&mut app, Method::GET, "/runs/t/x", None).await.0, 404);
        })
    });
    let mut counted = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (_, key) = key.into_parts();
        if key.name() != m::REQUESTS {
            continue;
        }
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
                .unwrap_or_default()
        };
        if let DebugValue::Counter(n) = value {
            counted.push((label("kind"), label("status"), n));
        }
    }
    counted.sort();
    assert_eq!(
        counted,
        [
            ("ag_ui_events".to_owned(), "404".to_owned(), 1),
            ("ag_ui_run".to_owned(), "200".to_owned(), 1),
            ("ag_ui_state".to_owned(), "200".to_owned(), 1),
            ("ag_ui_state".to_owned(), "404".to_owned(), 1),
        ]
    );
    for kind in ["ag_ui_run", "ag_ui_events", "ag_ui_state"] {
        assert!(m::REQUEST_KINDS.contains(&kind), "{kind}");
    }
}

#[test]
fn runs_in_flight_are_bounded_and_agents_leave_the_reads_pool_free() {
    // A small blocking pool: were agents run on it (as an LLM's slow steps are), four of them
    // would leave no thread for the endpoint's store reads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        let (app, release) = gated(&log);
        let app = app.max_runs(6).router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(Server::new().serve(listener, app, std::future::pending()));
        // Six runs in flight: the bound.
        let mut streams = Vec::new();
        for i in 0..6 {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let body = input("t", &format!("r{i}"), "{}");
            let request = format!(
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
                .await
                .expect("a run's response starts")
                .unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&buf[..n]));
            streams.push(stream);
        }
        // One more: refused, nothing started or stored.
        let (status, text) = raw(addr, "POST /", &input("t", "r6", "{}"), Duration::from_secs(2)).await;
        assert_eq!(status, 503, "{text}");
        assert!(text.to_ascii_lowercase().contains("retry-after: 1"), "{text}");
        assert!(!log.addresses().unwrap().contains(&Address::new("ag-ui/t", "r6")));
        // With the bound reached, reads of the runs are answered.
        let state = tokio::time::timeout(
            PATIENCE,
            raw(addr, "GET /runs/t/r0/state", "", Duration::from_millis(500)),
        )
        .await
        .expect("a run's state answers while the bound is reached");
        assert_eq!(state.0, 200, "{}", state.1);
        assert!(state.1.contains(r#""steps":["think"]"#), "{}", state.1);
        let events = tokio::time::timeout(
            PATIENCE,
            raw(addr, "GET /runs/t/r1", "", Duration::from_millis(500)),
        )
        .await
        .expect("a run's events answer while the bound is reached");
        assert_eq!(events.0, 200, "{}", events.1);
        assert!(events.1.contains("STATE_SNAPSHOT"), "{}", events.1);
        // The runs end; the bound has room again.
        for _ in 0..6 {
            release.send(()).unwrap();
        }
        drop(streams);
        let mut started = 0;
        for _ in 0..100 {
            let (status, _) = raw(addr, "POST /", &input("t", "r7", "{}"), Duration::from_millis(300)).await;
            if status == 200 {
                started += 1;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(started, 1, "a run starts once the others ended");
        release.send(()).unwrap();
        server.abort();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_event_streams_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let (app, release) = gated(&log);
    let app = app.max_readers(3).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(Server::new().serve(listener, app, std::future::pending()));
    // The run's own response, held open: one reader of three.
    let mut post = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = input("t", "r", "{}");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    post.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(PATIENCE, post.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut open = vec![post];
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /runs/t/r HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        open.push(stream);
    }
    let (status, text) = raw(addr, "GET /runs/t/r", "", Duration::from_millis(500)).await;
    assert_eq!(status, 503, "{text}");
    assert!(text.to_ascii_lowercase().contains("retry-after"), "{text}");
    drop(open);
    release.send(()).unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_state_is_typed_and_a_misfit_is_refused_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let mut app = AgUi::new(&log, finishing).router();
    // A state that is the agent's: the run starts with it.
    let given = r#"{"steps":["given"],"n":7}"#;
    assert_eq!(
        call(&mut app, Method::POST, "/", Some(input("t", "a", given)))
            .await
            .0,
        200
    );
    let (_, _, state) = call(&mut app, Method::GET, "/runs/t/a/state", None).await;
    assert_eq!(state, r#"{"steps":["given","search"],"n":7}"#);
    // None, null or {}: the initial state.
    for (run, none) in [("b", "null"), ("c", "{}")] {
        assert_eq!(
            call(&mut app, Method::POST, "/", Some(input("t", run, none)))
                .await
                .0,
            200
        );
        let (_, _, state) =
            call(&mut app, Method::GET, &format!("/runs/t/{run}/state"), None).await;
        assert_eq!(state, r#"{"steps":["search"],"n":0}"#);
    }
    // A misfit, or a member named twice: 400 naming it, nothing stored.
    for (run, body, said) in [
        (
            "d",
            input("t", "d", r#"{"steps":["a",3],"n":1}"#),
            "state.steps[1]",
        ),
        ("e", input("t", "e", r#"{"steps":[]}"#), "missing field `n`"),
        (
            "f",
            input("t", "f", r#"{"steps":[],"n":1,"n":2}"#),
            "duplicate member name \"n\"",
        ),
        (
            "g",
            r#"{"threadId":"t","runId":"g","runId":"h","messages":[]}"#.to_owned(),
            "duplicate member name \"runId\"",
        ),
    ] {
        let (status, _, text) = call(&mut app, Method::POST, "/", Some(body)).await;
        assert_eq!(status, 400, "{run}: {text}");
        assert!(text.contains(said), "{run}: {text}");
        assert!(!log
            .addresses()
            .unwrap()
            .contains(&Address::new("ag-ui/t", run)));
    }
}

/// A state without `Default`.
#[derive(Tracked, Serialize, Deserialize)]
struct Seeded {
    seed: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_without_default_is_served_from_its_initial_value() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let mut app = AgUi::with_initial(
        &log,
        |input: &RunAgentInput| Seeded {
            seed: format!("for {}", input.run_id),
        },
        |_: &RunAgentInput, run: &mut Run<Seeded, Log<JsonlStore>>| {
            *run.state().seed += "!";
            run.flush()?;
            Ok::<(), AgentError>(())
        },
    )
    .router();
    assert_eq!(
        call(&mut app, Method::POST, "/", Some(input("t", "r", "{}")))
            .await
            .0,
        200
    );
    let (_, _, state) = call(&mut app, Method::GET, "/runs/t/r/state", None).await;
    assert_eq!(state, r#"{"seed":"for r!"}"#);
}

#[test]
fn a_run_is_produced_without_the_router() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
    let writer = LogWriter::new(store, Checkpoint::Never);
    let address = Address::new("ag-ui/t", "r");
    let mut run = Run::new(writer, address.clone(), "t", "r", Plan::default());
    run.flush().unwrap();
    run.state().steps.push("a".into());
    let id = run.start_message();
    run.append(&id, "half");
    run.flush().unwrap();
    run.fail("the model is away").unwrap();
    assert_eq!(
        run.envelope().outcome,
        Outcome::error(chord::ag_ui::codes::AGENT_FAILED, "the model is away")
    );
    assert!(run.envelope().messages[0].ended, "an open message is ended");
    drop(run);
    let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
    let stored = chord::store::recover(&store, &address).unwrap().unwrap();
    assert_eq!(stored["outcome"]["status"], "error");
    assert_eq!(stored["outcome"]["code"], "AGENT_FAILED");
    assert_eq!(stored["state"]["steps"][0], "a");
    let _ = store.addresses();
}

/// Reads a response's events until it ends; the `RUN_ERROR` among them, if any.
async fn run_error(addr: std::net::SocketAddr, path: &str) -> Option<serde_json::Value> {
    let (status, text) = raw(addr, &format!("GET {path}"), "", PATIENCE).await;
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .find(|e| e["type"] == "RUN_ERROR")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_error_says_what_failed_when_the_producer_is_gone_or_the_log_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    {
        // A run whose producer went without ending it (a server that stopped mid-run).
        let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
        let writer = LogWriter::new(store, Checkpoint::Never);
        let mut run = Run::new(
            writer,
            Address::new("ag-ui/t", "gone"),
            "t",
            "gone",
            Plan::default(),
        );
        run.flush().unwrap();
        drop(run);
        // And a log at a run's address that is not a run's.
        let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
        let mut writer = LogWriter::new(store, Checkpoint::Never);
        writer
            .append(
                &Address::new("ag-ui/t", "bad"),
                &[chord::Op::Replace(serde_json::json!(5))],
            )
            .unwrap();
    }
    let log = log_in(dir.path());
    let app = AgUi::new(&log, finishing).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(Server::new().serve(listener, app, std::future::pending()));
    let gone = run_error(addr, "/runs/t/gone").await.expect("a RUN_ERROR");
    assert_eq!(gone["code"], "PRODUCER_GONE", "{gone}");
    let bad = run_error(addr, "/runs/t/bad").await.expect("a RUN_ERROR");
    assert_eq!(bad["code"], "LOG_UNREADABLE", "{bad}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_ends_open_event_streams_at_an_event_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let (app, release) = gated(&log);
    let app = app.router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(Server::new().drain(PATIENCE).serve(listener, app, async {
        let _ = stopped.await;
    }));
    let (status, _) = raw(
        addr,
        "POST /",
        &input("t", "r", "{}"),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(status, 200);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /runs/t/r HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("STATE_DELTA") {
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    stop.send(()).unwrap();
    // The response ends (the chunked body's last chunk) though the run goes on.
    let ended = tokio::time::timeout(PATIENCE, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            if n == 0 || got.ends_with(b"0\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the drain ended the event stream");
    let text = String::from_utf8_lossy(&got);
    let body = text
        .split("\r\n\r\n")
        .skip(1)
        .collect::<Vec<_>>()
        .join("\r\n\r\n");
    assert!(
        !body.contains("RUN_FINISHED"),
        "the run had not ended: {body}"
    );
    release.send(()).unwrap();
    let _ = tokio::time::timeout(PATIENCE, server).await;
}

/// One event of a response: its id and its JSON text.
type Received = (Option<String>, String);

/// Reads a response's events as they come, up to `cut` of them (then drops the response,
/// as a client whose connection broke).
async fn events_of(
    app: &mut axum::Router,
    request: Request<Body>,
    cut: Option<usize>,
) -> (StatusCode, Vec<Received>) {
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let asked = format!(
        "{} {:?}",
        request.uri(),
        request.headers().get("last-event-id")
    );
    let response = tokio::time::timeout(PATIENCE, app.call(request))
        .await
        .unwrap_or_else(|_| panic!("no response head within the patience: {asked}"))
        .unwrap();
    let status = response.status();
    let mut body = response.into_body();
    if status != StatusCode::OK {
        let text = body.collect().await.unwrap().to_bytes();
        return (
            status,
            vec![(None, String::from_utf8_lossy(&text).into_owned())],
        );
    }
    let mut pending = String::new();
    let mut got = Vec::new();
    // Keep-alive comments are frames too: the patience runs from the last event.
    let mut until = tokio::time::Instant::now() + PATIENCE;
    while let Some(frame) = tokio::time::timeout_at(until, body.frame())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no next event within the patience: {asked}, after {:?}",
                got.last()
            )
        })
    {
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        pending.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = pending.find("\n\n") {
            let block: String = pending.drain(..end + 2).collect();
            let mut id = None;
            let mut json = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    json = Some(v.to_owned());
                }
            }
            if let Some(json) = json {
                until = tokio::time::Instant::now() + PATIENCE;
                got.push((id, json));
                if cut == Some(got.len()) {
                    return (status, got);
                }
            }
        }
    }
    (status, got)
}

/// What a client holds after applying `events`: the state, each message's text, the
/// terminal event. Panics on what a client could not apply.
fn applied(events: &[Received]) -> (serde_json::Value, Vec<(String, String)>, String) {
    let mut state = serde_json::Value::Null;
    let mut messages: Vec<(String, String)> = Vec::new();
    let mut end = String::new();
    for (_, json) in events {
        let e: serde_json::Value = serde_json::from_str(json).unwrap();
        match e["type"].as_str().unwrap() {
            "STATE_SNAPSHOT" => state = e["snapshot"].clone(),
            "STATE_DELTA" => {
                let delta: json_patch::Patch = serde_json::from_value(e["delta"].clone()).unwrap();
                json_patch::patch(&mut state, &delta).unwrap();
            }
            "TEXT_MESSAGE_START" => {
                let id = e["messageId"].as_str().unwrap().to_owned();
                assert!(
                    messages.iter().all(|m| m.0 != id),
                    "a message started twice"
                );
                messages.push((id, String::new()));
            }
            "TEXT_MESSAGE_CONTENT" => {
                let id = e["messageId"].as_str().unwrap();
                let m = messages.iter_mut().find(|m| m.0 == id).unwrap();
                m.1.push_str(e["delta"].as_str().unwrap());
            }
            "RUN_FINISHED" | "RUN_ERROR" => end = json.clone(),
            _ => {}
        }
    }
    (state, messages, end)
}

/// An event id as `(offset, k)`, ordered as the log is.
fn place(id: &Option<String>) -> (String, u64) {
    let id = id.as_deref().expect("every event has an id");
    let (offset, k) = id.split_once(':').unwrap();
    (offset.to_owned(), k.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_joining_and_resuming_at_random_moments_gets_the_runs_events_exactly_once() {
    // (seed, checkpoints, bases kept): every base kept, so each reader, whenever it joins and
    // wherever it is cut, is sent exactly the run's events. (With fewer kept, a reader's
    // position can be compacted away during the run; resumes after the run are tested by
    // `a_resume_from_every_event_of_a_run_gets_exactly_the_events_after_it`.)
    let settings = [
        (1u64, Checkpoint::Never, 64),
        (7, Checkpoint::EveryBatches(5), 64),
        (13, Checkpoint::EveryBatches(2), 64),
    ];
    for (seed, every, bases) in settings {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
        let log: Log<JsonlStore> = chord::streams::LogBuilder::new()
            .retention(chord::streams::Retention::Bases(bases))
            .build(store);
        let app = AgUi::new(
            &log,
            |_: &RunAgentInput, run: &mut Run<Plan, Log<JsonlStore>>| {
                let answer = run.start_message();
                for i in 0..60u32 {
                    run.state().steps.push(format!("step {i}"));
                    run.state().n.set(i);
                    run.append(&answer, &format!("t{i} "));
                    run.flush()?;
                    std::thread::sleep(Duration::from_millis(3));
                }
                Ok::<(), AgentError>(())
            },
        )
        .checkpoint(every)
        .router();
        let post = Request::post("/")
            .header("content-type", "application/json")
            .body(Body::from(input("t", "r", "{}")))
            .unwrap();
        // The run's own response, read whole: what every reader must be sent.
        let mut reference_app = app.clone();
        let reference =
            tokio::spawn(async move { events_of(&mut reference_app, post, None).await });
        let mut state = seed;
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut readers = Vec::new();
        for _ in 0..24 {
            let wait = next(200);
            let cut = (next(3) > 0).then(|| 1 + next(60) as usize);
            let mut app = app.clone();
            readers.push(tokio::spawn(async move {
                let bases = bases;
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let get = || Request::get("/runs/t/r");
                let (status, mut seen) =
                    events_of(&mut app, get().body(Body::empty()).unwrap(), cut).await;
                assert_eq!(status, 200, "{seen:?}");
                // Cut: resume from the last id, as an EventSource does, until the run's end;
                // an id the run no longer keeps (`410`) starts over without one, from nothing.
                while !seen.last().is_some_and(|(_, e)| e.contains("RUN_FINISHED")) {
                    let last = seen.last().and_then(|(id, _)| id.clone()).unwrap();
                    let request = get()
                        .header("last-event-id", last)
                        .body(Body::empty())
                        .unwrap();
                    let (status, more) = events_of(&mut app, request, None).await;
                    if status == 410 && bases < 64 {
                        let (status, again) =
                            events_of(&mut app, get().body(Body::empty()).unwrap(), None).await;
                        assert_eq!(status, 200, "{again:?}");
                        seen = again;
                        continue;
                    }
                    assert_eq!(status, 200, "{more:?} after {:?}", seen.last());
                    seen.extend(more);
                }
                seen
            }));
        }
        let (status, whole) = reference.await.unwrap();
        assert_eq!(status, 200);
        assert!(whole.last().unwrap().1.contains("RUN_FINISHED"));
        let held = applied(&whole);
        for reader in readers {
            let seen = reader.await.unwrap();
            let places: Vec<_> = seen.iter().map(|(id, _)| place(id)).collect();
            assert!(
                places.windows(2).all(|w| w[0] < w[1]),
                "seed {seed}: ids in the log's order, none twice: {places:?}"
            );
            assert_eq!(
                applied(&seen),
                held,
                "seed {seed}: a reader ends holding the run"
            );
            if bases == 64 {
                assert_eq!(seen, whole, "seed {seed}: the same events, ids and bytes");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_from_every_event_of_a_run_gets_exactly_the_events_after_it() {
    // (checkpoints, bases kept): an id before what retention keeps answers `410`, every other
    // id exactly the events after it.
    for (every, bases) in [
        (Checkpoint::Never, 1000),
        (Checkpoint::EveryBatches(2), 1000),
        (Checkpoint::EveryBatches(5), 1000),
        (Checkpoint::EveryBatches(2), 4),
        (Checkpoint::EveryBatches(5), 4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default()).unwrap();
        let log: Log<JsonlStore> = chord::streams::LogBuilder::new()
            .retention(chord::streams::Retention::Bases(bases))
            .build(store);
        let mut app = AgUi::new(
            &log,
            |_: &RunAgentInput, run: &mut Run<Plan, Log<JsonlStore>>| {
                let answer = run.start_message();
                for i in 0..30u32 {
                    run.state().steps.push(format!("step {i}"));
                    run.state().n.set(i);
                    run.append(&answer, &format!("t{i} "));
                    run.flush()?;
                }
                Ok::<(), AgentError>(())
            },
        )
        .checkpoint(every)
        .router();
        let post = Request::post("/")
            .header("content-type", "application/json")
            .body(Body::from(input("t", "r", "{}")))
            .unwrap();
        let (status, first) = events_of(&mut app, post, None).await;
        assert_eq!(status, 200);
        // What a reader with nothing is sent now that the run is over: the reference.
        let get = Request::get("/runs/t/r").body(Body::empty()).unwrap();
        let (status, whole) = events_of(&mut app, get, None).await;
        assert_eq!(status, 200);
        assert!(
            whole.last().unwrap().1.contains("RUN_FINISHED"),
            "{whole:?}"
        );
        if bases == 1000 {
            assert_eq!(first, whole);
        }
        let mut resumed = 0;
        for (i, (id, _)) in first.iter().enumerate() {
            let request = Request::get("/runs/t/r")
                .header("last-event-id", id.clone().unwrap())
                .body(Body::empty())
                .unwrap();
            let (status, rest) = events_of(&mut app, request, None).await;
            if i + 1 == first.len() {
                assert_eq!(status, 204, "{every:?}: after the terminal event");
                continue;
            }
            if status == 410 {
                assert!(
                    bases < 1000,
                    "{every:?}: {id:?} is gone though every base is kept"
                );
                continue;
            }
            assert_eq!(status, 200, "{every:?} {bases}: after {id:?}: {rest:?}");
            assert_eq!(rest, first[i + 1..], "{every:?} {bases}: after {id:?}");
            resumed += 1;
        }
        assert!(resumed > 5, "{every:?} {bases}: only {resumed} ids resumed");
    }
}
