//! The AG-UI endpoint over HTTP: the events of a scripted run as a client applies them, a
//! connection dropped mid-run and resumed with `Last-Event-ID` (by POST and by GET), a server
//! restarted on the same log, a failing and a panicking producer, and bad input.
//!
//! The clients here are raw HTTP/1.1 over TCP, reading each SSE event as it arrives: what a
//! test waits for is an event, never a timer.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use chord::ag_ui::{AgUi, AgentError, Event, Run, RunAgentInput};
use chord::store::{recover, Address, Checkpoint, Durability, JsonlStore, Store, CHECKPOINT};
use chord::streams::{Log, LogBuilder, Retention, Server};
use chord::Tracked;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The test agent's state: a counter per token and the steps done, never the answer's text.
#[derive(Tracked, Serialize, Deserialize, Default, Debug)]
struct Steps {
    tokens: u32,
    done: Vec<String>,
}

/// The answer, token by token: the text a client must assemble.
const TOKENS: [&str; 8] = ["Ze", "bra ", "quo", "kka ", "xy", "lo", "phone", "!"];

fn answer() -> String {
    TOKENS.concat()
}

/// One HTTP response being read: its status, headers, and its body as SSE events.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    /// Decoded body text not yet parsed into events.
    pending: String,
    ended: bool,
}

/// One SSE event as received.
#[derive(Clone, Debug, PartialEq)]
struct Received {
    id: Option<String>,
    data: Value,
}

async fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or(""));
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
    }
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    Response {
        status,
        headers,
        reader,
        chunked,
        pending: String::new(),
        ended: false,
    }
}

fn input(thread: &str, run: &str) -> String {
    json!({"threadId": thread, "runId": run, "state": {}, "messages": [
        {"id": "u1", "role": "user", "content": "Say it"}],
        "tools": [], "context": [], "forwardedProps": {}})
    .to_string()
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Reads the next piece of the body into `pending`; false at its end.
    async fn more(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if !self.chunked {
            let mut rest = String::new();
            self.reader.read_to_string(&mut rest).await.unwrap();
            self.pending.push_str(&rest);
            self.ended = true;
            return !rest.is_empty();
        }
        let mut line = String::new();
        if self.reader.read_line(&mut line).await.unwrap() == 0 {
            self.ended = true;
            return false;
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            self.ended = true;
            return false;
        }
        let mut chunk = vec![0; size + 2];
        self.reader.read_exact(&mut chunk).await.unwrap();
        self.pending
            .push_str(std::str::from_utf8(&chunk[..size]).unwrap());
        true
    }

    /// The next event (comments skipped), or `None` once the body ended.
    async fn event(&mut self) -> Option<Received> {
        loop {
            while let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut id = None;
                let mut data = None;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str(v).unwrap());
                    } else {
                        assert!(line.starts_with(':') || line.is_empty(), "{line:?}");
                    }
                }
                if let Some(data) = data {
                    return Some(Received { id, data });
                }
            }
            if !self.more().await {
                assert!(self.pending.trim().is_empty(), "{:?}", self.pending);
                return None;
            }
        }
    }

    async fn text(mut self) -> String {
        while self.more().await {}
        self.pending
    }

    async fn all(mut self) -> Vec<Received> {
        let mut out = Vec::new();
        while let Some(e) = self.event().await {
            out.push(e);
        }
        out
    }
}

/// A client as AG-UI's: the state and messages the events build, checked as they come.
#[derive(Default, Debug)]
struct Client {
    state: Option<Value>,
    /// (id, text, ended), in order of start.
    messages: Vec<(String, String, bool)>,
    started: bool,
    ended: Option<Value>,
}

impl Client {
    fn apply(&mut self, e: &Received) {
        let event: Event = serde_json::from_value(e.data.clone())
            .unwrap_or_else(|err| panic!("not an AG-UI event ({err}): {}", e.data));
        assert!(e.id.is_some(), "every event has an id: {e:?}");
        assert!(
            self.ended.is_none(),
            "an event after the terminal one: {e:?}"
        );
        if !self.started {
            assert!(matches!(event, Event::RunStarted { .. }), "first: {e:?}");
            self.started = true;
            return;
        }
        match event {
            Event::RunStarted { .. } => panic!("RUN_STARTED twice"),
            Event::StateSnapshot { snapshot } => self.state = Some(snapshot),
            Event::StateDelta { delta } => {
                let text = serde_json::to_string(&delta).unwrap();
                for token in TOKENS {
                    assert!(!text.contains(token), "answer text in a delta: {text}");
                }
                let state = self.state.as_mut().expect("a snapshot before a delta");
                json_patch::patch(state, &delta)
                    .unwrap_or_else(|err| panic!("delta does not apply ({err}): {text}"));
            }
            Event::TextMessageStart { message_id, role } => {
                assert_eq!(role, "assistant");
                assert!(self.messages.iter().all(|m| m.0 != message_id), "id reused");
                self.messages.push((message_id, String::new(), false));
            }
            Event::TextMessageContent { message_id, delta } => {
                assert!(!delta.is_empty());
                let m = self.message(&message_id);
                assert!(!m.2, "content after the end");
                m.1.push_str(&delta);
            }
            Event::TextMessageEnd { message_id } => {
                let m = self.message(&message_id);
                assert!(!m.2, "ended twice");
                m.2 = true;
            }
            other => {
                assert!(other.is_terminal(), "{other:?}");
                self.ended = Some(e.data.clone());
            }
        }
    }

    fn message(&mut self, id: &str) -> &mut (String, String, bool) {
        let m = self.messages.iter_mut().find(|m| m.0 == id);
        m.unwrap_or_else(|| panic!("no message {id} started"))
    }

    fn text(&self) -> String {
        self.messages.iter().map(|m| m.1.as_str()).collect()
    }
}

/// Which way the test agent ends.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    Finish,
    Fail,
    Panic,
}

/// A server on `log` whose agent streams [`TOKENS`], with a counter in the state per token;
/// after half of them it waits for `gate` (when given).
struct TestServer {
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
}

async fn serve<S: Store + Send + 'static>(
    log: &Log<S>,
    ending: Ending,
    gate: Option<Arc<Mutex<mpsc::Receiver<()>>>>,
) -> TestServer {
    let gate = gate.map(|gate| (TOKENS.len() / 2 + 1, gate));
    serve_with(log, ending, gate, Checkpoint::EveryBytes(256 * 1024)).await
}

/// [`serve`] with the checkpoint policy given, and the gate waited for before the token at
/// the index given with it.
async fn serve_with<S: Store + Send + 'static>(
    log: &Log<S>,
    ending: Ending,
    gate: Option<(usize, Arc<Mutex<mpsc::Receiver<()>>>)>,
    checkpoint: Checkpoint,
) -> TestServer {
    let app = AgUi::new(
        log,
        move |_: &RunAgentInput, run: &mut Run<Steps, Log<S>>| -> Result<(), AgentError> {
            let id = run.start_message();
            for (i, token) in TOKENS.iter().enumerate() {
                if let Some((at, gate)) = &gate {
                    if i == *at {
                        gate.lock().unwrap().recv().unwrap();
                    }
                }
                *run.state().tokens += 1;
                run.append(&id, token);
                run.flush()?;
            }
            run.end_message(&id);
            run.state().done.push("answer".to_owned());
            run.flush()?;
            match ending {
                Ending::Finish => Ok(()),
                Ending::Fail => Err("the model is away".into()),
                Ending::Panic => panic!("a bug in the agent"),
            }
        },
    )
    .body_limit(4096)
    .checkpoint(checkpoint)
    .router();
    serve_router(app).await
}

async fn serve_router(app: axum::Router) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        Server::new().serve(listener, app, shutdown).await.unwrap();
    });
    TestServer {
        addr,
        stop: Some(stop),
        served,
    }
}

impl TestServer {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.served.await.unwrap();
    }
}

/// A JSONL store the test can close while handles to it remain (a producer's thread may
/// still hold one for a moment after its last write): closing drops it, which frees the
/// file for the next server as a process exit would.
#[derive(Clone)]
struct Closable(Arc<Mutex<Option<JsonlStore>>>);

impl Closable {
    fn with<T>(
        &self,
        f: impl FnOnce(&mut JsonlStore) -> chord::store::Result<T>,
    ) -> chord::store::Result<T> {
        match self.0.lock().unwrap().as_mut() {
            Some(store) => f(store),
            None => Err(chord::store::Error::Io {
                path: "closed".into(),
                action: "use",
                source: std::io::Error::other("the test closed the store"),
            }),
        }
    }

    fn close(&self) {
        self.0.lock().unwrap().take();
    }
}

impl Store for Closable {
    fn append_checked(
        &mut self,
        a: &Address,
        b: chord::store::CheckedBatch<'_>,
    ) -> chord::store::Result<u64> {
        self.with(|s| s.append_checked(a, b))
    }
    fn read_list(
        &self,
        a: &Address,
        o: &chord::store::ReadOptions,
    ) -> chord::store::Result<chord::store::Page> {
        self.with(|s| s.read_list(a, o))
    }
    fn addresses(&self) -> chord::store::Result<Vec<Address>> {
        self.with(|s| s.addresses())
    }
    fn sync(&mut self) -> chord::store::Result<Option<u64>> {
        self.with(|s| s.sync())
    }
    fn durable_seq(&self) -> Option<u64> {
        self.with(|s| Ok(s.durable_seq())).ok().flatten()
    }
    fn compact(
        &mut self,
        a: &Address,
        keep: usize,
    ) -> chord::store::Result<chord::store::Compacted> {
        self.with(|s| s.compact(a, keep))
    }
}

fn log_in(dir: &std::path::Path) -> Log<JsonlStore> {
    Log::new(JsonlStore::open(dir.join("runs.jsonl"), Durability::EveryAppend).unwrap())
}

/// The events a client that never dropped receives, checked, and the client they build.
async fn whole_run(addr: std::net::SocketAddr, thread: &str, run: &str) -> (Vec<Received>, Client) {
    let events = request(addr, "GET", &format!("/runs/{thread}/{run}"), &[], None)
        .await
        .all()
        .await;
    let mut client = Client::default();
    for e in &events {
        client.apply(e);
    }
    (events, client)
}

fn producer_state<S: Store>(log: &Log<S>, thread: &str, run: &str) -> Value {
    let address = Address::new(format!("ag-ui/{thread}"), run);
    recover(log, &address).unwrap().unwrap()["state"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_runs_events_build_the_producers_state_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let server = serve(&log, Ending::Finish, None).await;
    let json = [("content-type", "application/json")];
    let response = request(server.addr, "POST", "/", &json, Some(&input("t", "r"))).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("cache-control"), Some("no-cache"));
    assert_eq!(response.header("x-accel-buffering"), Some("no"));
    let events = response.all().await;
    let mut client = Client::default();
    for e in &events {
        client.apply(e);
    }
    let types: Vec<&str> = events
        .iter()
        .map(|e| e.data["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[..2], ["RUN_STARTED", "STATE_SNAPSHOT"]);
    assert_eq!(types.last(), Some(&"RUN_FINISHED"));
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "TEXT_MESSAGE_CONTENT")
            .count(),
        TOKENS.len()
    );
    assert_eq!(
        events.last().unwrap().data,
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    );
    assert_eq!(client.text(), answer());
    assert_eq!(client.messages.len(), 1);
    assert!(client.messages[0].2, "the message ended");
    let expected = json!({"tokens": TOKENS.len(), "done": ["answer"]});
    assert_eq!(client.state, Some(expected.clone()));
    assert_eq!(producer_state(&log, "t", "r"), expected);
    // The state route says the same.
    let state = request(server.addr, "GET", "/runs/t/r/state", &[], None).await;
    assert_eq!(state.status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&state.text().await).unwrap(),
        expected
    );
    // Ids are `<offset>:<k>`, each once, in order.
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_deref().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, ids);
    // A second POST of the same run starts no second producer: the same events again.
    let again = request(server.addr, "POST", "/", &json, Some(&input("t", "r"))).await;
    assert_eq!(again.all().await, events);
    server.stop().await;
}

/// Reads events of a fresh client until the `STATE_DELTA` (k = 0) of the record holding the
/// `n`-th text content, so the resume starts inside a record.
async fn read_until_mid_record(
    response: &mut Response,
    client: &mut Client,
    n: usize,
) -> Vec<Received> {
    let mut seen = Vec::new();
    let mut contents = 0;
    loop {
        let e = response.event().await.expect("the run goes on");
        client.apply(&e);
        seen.push(e.clone());
        match e.data["type"].as_str().unwrap() {
            "TEXT_MESSAGE_CONTENT" => contents += 1,
            "STATE_DELTA" if contents == n => return seen,
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_dropped_mid_run_resumes_by_post_and_by_get_with_nothing_lost_or_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let (release, gate) = mpsc::channel();
    let server = serve(&log, Ending::Finish, Some(Arc::new(Mutex::new(gate)))).await;
    let json = [("content-type", "application/json")];
    let body = input("t", "drop");
    let mut first = request(server.addr, "POST", "/", &json, Some(&body)).await;
    let mut client = Client::default();
    let seen = read_until_mid_record(&mut first, &mut client, 2).await;
    let last = seen.last().unwrap().id.clone().unwrap();
    assert!(last.ends_with(":0"), "{last}");
    drop(first); // the connection drops mid-run (the agent waits at its gate)
    release.send(()).unwrap();

    // By POST: the same input, with the last id seen.
    let mut by_post = Client {
        ..Default::default()
    };
    let mut by_get = Client::default();
    for e in &seen {
        by_post.apply(e);
        by_get.apply(e);
    }
    let headers = [
        ("content-type", "application/json"),
        ("last-event-id", last.as_str()),
    ];
    let post = request(server.addr, "POST", "/", &headers, Some(&body)).await;
    assert_eq!(post.status, 200);
    let after_post = post.all().await;
    // By GET, as `EventSource` reconnects.
    let get = request(
        server.addr,
        "GET",
        "/runs/t/drop",
        &[("last-event-id", &last)],
        None,
    )
    .await;
    assert_eq!(get.status, 200);
    let after_get = get.all().await;
    assert_eq!(after_post, after_get);
    assert_ne!(
        after_post[0].data["type"], "RUN_STARTED",
        "a resumed client is in its run"
    );
    for e in &after_post {
        by_post.apply(e);
    }
    for e in &after_get {
        by_get.apply(e);
    }

    let (whole, never_dropped) = whole_run(server.addr, "t", "drop").await;
    // Exactly the events the client lacked: none twice, none missing.
    let resumed: Vec<Received> = seen.iter().chain(&after_post).cloned().collect();
    assert_eq!(resumed, whole);
    for c in [&by_post, &by_get] {
        assert_eq!(c.state, never_dropped.state);
        assert_eq!(c.text(), never_dropped.text());
        assert_eq!(c.text(), answer());
        assert_eq!(c.ended, never_dropped.ended);
    }
    assert_eq!(by_post.state, Some(producer_state(&log, "t", "drop")));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumes_on_a_new_server_over_the_same_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = JsonlStore::open(dir.path().join("runs.jsonl"), Durability::EveryAppend).unwrap();
    let closable = Closable(Arc::new(Mutex::new(Some(file))));
    // Retention covers the whole run (a resume reads back to the checkpoint before its id).
    let log = LogBuilder::new()
        .retention(Retention::Bases(64))
        .build(closable.clone());
    // A checkpoint every other record: the resume reads back to one, not to the run's start.
    let every = Checkpoint::EveryBatches(2);
    let server = serve_with(&log, Ending::Finish, None, every).await;
    let json = [("content-type", "application/json")];
    let mut reading = request(
        server.addr,
        "POST",
        "/",
        &json,
        Some(&input("t", "restart")),
    )
    .await;
    let mut client = Client::default();
    let seen = read_until_mid_record(&mut reading, &mut client, 3).await;
    let last = seen.last().unwrap().id.clone().unwrap();
    // The producer finishes (a reader that never dropped sees its end), then the server
    // and its log go; the first client's read is cut with them.
    let (whole, never_dropped) = whole_run(server.addr, "t", "restart").await;
    assert!(never_dropped.ended.is_some());
    server.stop().await;
    drop(reading);
    let address = Address::new("ag-ui/t", "restart");
    let page = log
        .read_list(&address, &chord::store::ReadOptions::asc().limit(1000))
        .unwrap();
    let checkpoints = page
        .records
        .iter()
        .filter(|r| r.tag.as_deref() == Some(CHECKPOINT));
    assert!(checkpoints.count() >= 3, "the log holds checkpoints");
    closable.close();
    drop(log);

    // A new server on the same file, whose agent must not run.
    let file = JsonlStore::open(dir.path().join("runs.jsonl"), Durability::EveryAppend).unwrap();
    let log = LogBuilder::new()
        .retention(Retention::Bases(64))
        .build(file);
    let app = AgUi::new(
        &log,
        |_: &RunAgentInput, _: &mut Run<Steps, Log<JsonlStore>>| {
            Err::<(), _>("a second producer started")
        },
    )
    .checkpoint(every)
    .router();
    let server = serve_router(app).await;
    let get = request(
        server.addr,
        "GET",
        "/runs/t/restart",
        &[("last-event-id", &last)],
        None,
    )
    .await;
    assert_eq!(get.status, 200);
    let rest = get.all().await;
    for e in &rest {
        client.apply(e);
    }
    let resumed: Vec<Received> = seen.iter().chain(&rest).cloned().collect();
    assert_eq!(resumed, whole);
    assert_eq!(client.state, never_dropped.state);
    assert_eq!(client.text(), answer());
    assert_eq!(client.ended, never_dropped.ended);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_producer_ends_its_run_with_run_error() {
    for (ending, said, code) in [
        (Ending::Fail, "the model is away", "AGENT_FAILED"),
        (
            Ending::Panic,
            "the agent panicked: a bug in the agent",
            "AGENT_PANICKED",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        let server = serve(&log, ending, None).await;
        let json = [("content-type", "application/json")];
        let events = request(server.addr, "POST", "/", &json, Some(&input("t", "r")))
            .await
            .all()
            .await;
        let mut client = Client::default();
        for e in &events {
            client.apply(e);
        }
        assert_eq!(
            client.ended,
            Some(json!({"type": "RUN_ERROR", "message": said, "code": code}))
        );
        assert_eq!(
            client.text(),
            answer(),
            "what was made before the failure stays"
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_its_reason_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let server = serve(&log, Ending::Finish, None).await;
    let addr = server.addr;
    let json = [("content-type", "application/json")];
    let refused = |status: u16, reason: &'static str| {
        move |r: (u16, String)| {
            assert_eq!(r.0, status, "{}", r.1);
            assert!(r.1.contains(reason), "{reason:?} not in {:?}", r.1);
        }
    };
    async fn answer_of(r: Response) -> (u16, String) {
        let status = r.status;
        (status, r.text().await)
    }
    let post = |headers: Vec<(&'static str, String)>, body: String| async move {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        answer_of(request(addr, "POST", "/", &h, Some(&body)).await).await
    };
    let ct = || vec![("content-type", "application/json".to_owned())];
    refused(400, "not a RunAgentInput")(post(ct(), "{\"threadId\":".into()).await);
    refused(400, "missing field `runId`")(post(ct(), r#"{"threadId":"t"}"#.into()).await);
    refused(400, "invalid type")(
        post(ct(), r#"{"threadId":"t","runId":"r","messages":{}}"#.into()).await,
    );
    refused(400, "`runId` is empty")(post(ct(), r#"{"threadId":"t","runId":""}"#.into()).await);
    refused(400, "`threadId` holds a control character")(
        post(ct(), r#"{"threadId":"t\n","runId":"r"}"#.into()).await,
    );
    refused(415, "application/json")(
        post(vec![("content-type", "text/plain".into())], input("t", "r")).await,
    );
    let big =
        json!({"threadId": "t", "runId": "big", "state": {"x": "y".repeat(5000)}}).to_string();
    refused(413, "over 4096 bytes")(post(ct(), big).await);
    // A body of unknown length is cut at the bound too.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = "POST / HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = "y".repeat(3000);
    for _ in 0..2 {
        let _ = stream
            .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .await;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Last-Event-ID: malformed, unknown, for a run that does not exist.
    let with_id = |id: &str| {
        let mut h = ct();
        h.push(("last-event-id", id.to_owned()));
        h
    };
    refused(400, "malformed Last-Event-ID")(post(with_id("12:0"), input("t", "r")).await);
    refused(400, "unknown Last-Event-ID")(
        post(with_id("0000000000000001:0"), input("t", "new")).await,
    );
    let get = |path: String, id: &'static str| async move {
        let h = [("last-event-id", id)];
        answer_of(
            request(
                addr,
                "GET",
                &path,
                if id.is_empty() { &[] } else { &h },
                None,
            )
            .await,
        )
        .await
    };
    refused(404, "no such run")(get("/runs/t/none".into(), "").await);
    refused(404, "no such run")(get("/runs/t/none/state".into(), "").await);
    // A run to resume in: its events, then ids it never sent.
    let events = request(addr, "POST", "/", &json, Some(&input("t", "ok")))
        .await
        .all()
        .await;
    assert_eq!(events.last().unwrap().data["type"], "RUN_FINISHED");
    refused(400, "malformed Last-Event-ID")(get("/runs/t/ok".into(), "0000000000000001").await);
    refused(400, "malformed Last-Event-ID")(get("/runs/t/ok".into(), "0000000000000001:x").await);
    refused(400, "unknown Last-Event-ID")(get("/runs/t/ok".into(), "00000000000f0000:0").await);
    let first = events[0].id.clone().unwrap();
    let (offset, _) = first.split_once(':').unwrap();
    let beyond: &'static str = Box::leak(format!("{offset}:7").into_boxed_str());
    refused(400, "unknown Last-Event-ID")(get("/runs/t/ok".into(), beyond).await);
    // After the terminal event: nothing more, ever: `204`, which stops an `EventSource`.
    let last: &'static str = Box::leak(events.last().unwrap().id.clone().unwrap().into_boxed_str());
    let (status, rest) = get("/runs/t/ok".into(), last).await;
    assert_eq!((status, rest.as_str()), (204, ""));
    // One event before it: the terminal event alone.
    let (offset, k) = last.split_once(':').unwrap();
    let k: usize = k.parse().unwrap();
    if k > 0 {
        let before: &'static str = Box::leak(format!("{offset}:{}", k - 1).into_boxed_str());
        let (status, rest) = get("/runs/t/ok".into(), before).await;
        assert_eq!(status, 200);
        assert!(rest.contains("RUN_FINISHED"), "{rest}");
    }
    // Nothing was stored for the refused runs.
    let addresses = log.addresses().unwrap();
    assert_eq!(addresses, [Address::new("ag-ui/t", "ok")]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_is_refused_before_its_body_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let app = AgUi::new(
        &log,
        |_: &RunAgentInput, _: &mut Run<Steps, Log<JsonlStore>>| {
            Ok::<(), chord::ag_ui::AgentError>(())
        },
    )
    .authorize(|r: &chord::ag_ui::RunRequest<'_>| {
        r.headers
            .get("authorization")
            .map(|v| v == "Bearer ok")
            .unwrap_or(false)
    })
    .router();
    let server = serve_router(app).await;
    let json = [("content-type", "application/json")];
    let refused = request(server.addr, "POST", "/", &json, Some(&input("t", "r"))).await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.header("connection"), Some("close"));
    let get = request(server.addr, "GET", "/runs/t/r", &[], None).await;
    assert_eq!(get.status, 403);
    assert!(log.addresses().unwrap().is_empty());
    let allowed = [
        ("content-type", "application/json"),
        ("authorization", "Bearer ok"),
    ];
    let events = request(server.addr, "POST", "/", &allowed, Some(&input("t", "r")))
        .await
        .all()
        .await;
    assert_eq!(events.last().unwrap().data["type"], "RUN_FINISHED");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_run_sends_keep_alive_comments() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let app = AgUi::new(
        &log,
        move |_: &RunAgentInput, run: &mut Run<Steps, Log<JsonlStore>>| {
            *run.state().tokens += 1;
            run.flush()?;
            gate.lock().unwrap().recv()?; // quiet until the test has seen a keep-alive
            Ok::<(), AgentError>(())
        },
    )
    .keep_alive(std::time::Duration::from_millis(20))
    .router();
    let server = serve_router(app).await;
    let json = [("content-type", "application/json")];
    let mut response = request(server.addr, "POST", "/", &json, Some(&input("t", "quiet"))).await;
    while !response.pending.contains(": keep-alive\n\n") {
        assert!(response.more().await, "the body ended before a keep-alive");
    }
    release.send(()).unwrap();
    let mut client = Client::default();
    while let Some(e) = response.event().await {
        client.apply(&e);
    }
    assert_eq!(
        client.ended,
        Some(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "quiet"}))
    );
    assert_eq!(client.state, Some(json!({"tokens": 1, "done": []})));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_before_what_retention_keeps_is_gone_and_a_fresh_reader_starts_at_a_base() {
    let dir = tempfile::tempdir().unwrap();
    let file = JsonlStore::open(dir.path().join("runs.jsonl"), Durability::EveryAppend).unwrap();
    // One base kept and no time floor: a second base puts the run's start out of reach.
    let log = LogBuilder::new()
        .retention(Retention::Bases(1))
        .keep_for(std::time::Duration::ZERO)
        .build(file);
    let (release, gate) = mpsc::channel::<()>();
    // The agent waits before its first token, until the client holds the run's first event.
    let gate = Some((0, Arc::new(Mutex::new(gate))));
    let server = serve_with(&log, Ending::Finish, gate, Checkpoint::EveryBatches(2)).await;
    let json = [("content-type", "application/json")];
    let mut post = request(server.addr, "POST", "/", &json, Some(&input("t", "r"))).await;
    let first = post.event().await.expect("the run's first event");
    assert_eq!(first.data["type"], "RUN_STARTED");
    let first = first.id.unwrap();
    release.send(()).unwrap();
    drop(post);
    // The run's end, read from the log (a live reader may be passed by this retention).
    let address = Address::new("ag-ui/t", "r");
    for _ in 0..2_000 {
        let envelope = recover(&log, &address).unwrap().unwrap();
        if envelope.pointer("/outcome/status") != Some(&json!("running")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let envelope = recover(&log, &address).unwrap().unwrap();
    assert_eq!(
        envelope.pointer("/outcome/status"),
        Some(&json!("finished"))
    );
    let gone = request(
        server.addr,
        "GET",
        "/runs/t/r",
        &[("last-event-id", &first)],
        None,
    )
    .await;
    assert_eq!(gone.status, 410);
    assert!(gone.text().await.contains("compacted away"));
    // A reader with no id starts at the latest base kept, not at the run's first record,
    // and still ends with the whole answer, the producer's state and the run's end.
    let (fresh, client) = whole_run(server.addr, "t", "r").await;
    let seq = |id: &str| u64::from_str_radix(id.split(':').next().unwrap(), 16).unwrap();
    let fresh_first = fresh[0].id.clone().unwrap();
    assert!(
        seq(&fresh_first) > seq(&first),
        "it starts later than the run's start: {fresh_first} after {first}"
    );
    assert_eq!(client.text(), answer());
    assert_eq!(client.state, Some(producer_state(&log, "t", "r")));
    assert!(client.ended.is_some());
    server.stop().await;
}
