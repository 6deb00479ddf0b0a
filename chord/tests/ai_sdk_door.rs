//! The AI SDK door: a chat's `POST` answers the UI message stream (its chunks, their ids, the
//! header `useChat` checks), a resume from any event gets exactly the chunks after it, a chat
//! has one run in progress at a time, and bad input is refused saying why.

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use chord::ag_ui::{AgentError, Run};
use chord::ai_sdk::{AiSdk, ChatInput, Trigger};
use chord::store::{Durability, JsonlStore};
use chord::streams::Log;
use chord::Tracked;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tower_service::Service;

#[derive(Tracked, Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
struct Research {
    answer: String,
    steps: Vec<String>,
    tokens: u32,
}

const TOKENS: [&str; 5] = ["chord ", "streams ", "a run's ", "state ", "€ 😀"];

/// Streams `TOKENS` into a message and the state's `answer`, a flush each.
fn answering(
    input: &ChatInput,
    run: &mut Run<Research, Log<JsonlStore>>,
) -> Result<(), AgentError> {
    run.state().steps.push(format!("read {:?}", input.text));
    run.flush()?;
    let message = run.start_message();
    for token in TOKENS {
        run.append(&message, token);
        run.state().answer += token;
        run.state().tokens += 1;
        run.flush()?;
    }
    run.end_message(&message);
    run.flush()?;
    Ok(())
}

fn log_in(dir: &tempfile::TempDir) -> Log<JsonlStore> {
    let store = JsonlStore::open(dir.path().join("chats.jsonl"), Durability::default()).unwrap();
    Log::new(store)
}

fn body(chat: &str, trigger: &str, text: &str) -> String {
    json!({"id": chat, "trigger": trigger, "messageId": null, "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "earlier"}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "..."}]},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": text}]},
    ]})
    .to_string()
}

async fn call(
    app: &mut axum::Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let (parts, body) = response.into_parts();
    // A finished run's stream ends; a bounded read keeps a live one from hanging.
    let text = match tokio::time::timeout(Duration::from_secs(5), body.collect()).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        _ => String::new(),
    };
    (parts.status, parts.headers, text)
}

const JSON: (&str, &str) = ("content-type", "application/json");

/// `POST /` of a `useChat` body: the chat `chat`'s message `text` with `trigger`.
async fn post(
    app: &mut axum::Router,
    chat: &str,
    trigger: &str,
    text: &str,
) -> (StatusCode, HeaderMap, String) {
    let sent = body(chat, trigger, text);
    call(app, Method::POST, "/", &[JSON], Some(sent)).await
}

/// Resumes `GET path` after each of `sent`'s chunks but the last `skip_last`: each gets
/// exactly the chunks after it, and after the terminal one (when tried) `204`.
async fn resumes_exactly(
    app: &mut axum::Router,
    path: &str,
    sent: &[(Option<String>, String)],
    skip_last: usize,
) {
    let n = sent.len() - 1; // the chunks before [DONE]
    for i in 0..n.saturating_sub(skip_last) {
        let id = sent[i].0.clone().unwrap();
        let (status, _, text) = call(app, Method::GET, path, &[("last-event-id", &id)], None).await;
        if i + 1 == n {
            assert_eq!(
                status,
                StatusCode::NO_CONTENT,
                "after the terminal chunk: nothing"
            );
            continue;
        }
        assert_eq!(status, StatusCode::OK, "after {id}: {text}");
        assert_eq!(events(&text), sent[i + 1..], "after {id}");
    }
}

/// Request headers, by name.
type Headers = Vec<(&'static str, &'static str)>;

/// The SSE events of a stream: each `(id, data)`, parsed by hand as a client does.
fn events(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty() && !e.starts_with(':'))
        .map(|e| {
            let mut id = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (id, data)
        })
        .collect()
}

fn chunks(events: &[(Option<String>, String)]) -> Vec<Value> {
    events
        .iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect()
}

/// What `useChat` makes of chunks: the text of each text part, the persistent `data-state`,
/// and the state a replica holds applying each transient `data-chord` batch to the first.
fn assembled(chunks: &[Value]) -> (String, Value, Value) {
    let mut text = String::new();
    let mut part = Value::Null;
    let mut replica: Option<Value> = None;
    for c in chunks {
        match c["type"].as_str().unwrap() {
            "text-delta" => text.push_str(c["delta"].as_str().unwrap()),
            "data-state" => {
                assert_eq!(c["id"], "state");
                part = c["data"].clone();
                replica.get_or_insert_with(|| part.clone());
            }
            "data-chord" => {
                assert_eq!(c["transient"], true);
                let ops: Vec<chord::Op> = serde_json::from_value(c["data"].clone()).unwrap();
                chord::apply(&mut replica, ops).unwrap();
            }
            _ => {}
        }
    }
    (text, part, replica.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_post_answers_the_ui_message_stream_and_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let mut app = AiSdk::new(&log, answering).router();
    let (status, headers, text) = post(&mut app, "c1", "submit-message", "hi").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(headers["content-type"], "text/event-stream");
    for kind in ["ai_sdk_chat", "ai_sdk_stream", "ai_sdk_state"] {
        let known = chord::streams::metrics::REQUEST_KINDS.contains(&kind);
        assert!(known, "{kind} is a request kind of the metrics");
    }
    assert_eq!(
        headers["x-content-type-options"], "nosniff",
        "the live layer's headers"
    );
    let sent = events(&text);
    assert_eq!(sent.last().unwrap().1, "[DONE]");
    assert!(
        sent[..sent.len() - 1].iter().all(|(id, _)| id.is_some()),
        "every chunk has its id"
    );
    let got = chunks(&sent);
    let types: Vec<&str> = got.iter().map(|c| c["type"].as_str().unwrap()).collect();
    let mut expected = vec!["start", "data-state", "data-chord", "text-start"];
    for _ in TOKENS {
        expected.extend(["data-chord", "text-delta"]);
    }
    expected.extend(["text-end", "data-state", "finish"]);
    // The first token's record starts the message: its text-start goes with its delta.
    let mut sorted = types.clone();
    sorted.sort_unstable();
    let mut want = expected.clone();
    want.sort_unstable();
    assert_eq!(sorted, want, "{types:?}");
    assert_eq!(got[0], json!({"type": "start", "messageId": "t1"}));
    assert_eq!(types[types.len() - 2..], ["data-state", "finish"]);
    let (text, part, replica) = assembled(&got);
    assert_eq!(text, TOKENS.concat());
    let (_, _, state) = call(&mut app, Method::GET, "/c1/state", &[], None).await;
    let state: Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["answer"], TOKENS.concat());
    assert_eq!(part, state, "the last persistent part is the state");
    assert_eq!(
        replica, state,
        "the transient batches applied to the first part"
    );
    // Just ended: a resume without an id (a client cut before the end) gets the turn as it
    // ended, compactly: the text in one delta, the final state, the finish.
    let (status, _, replay) = call(&mut app, Method::GET, "/c1/stream", &[], None).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    let replayed = chunks(&events(&replay));
    let types: Vec<&str> = replayed
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "start",
            "data-state",
            "text-start",
            "text-delta",
            "text-end",
            "data-state",
            "finish"
        ]
    );
    assert_eq!(
        assembled(&replayed),
        (text.clone(), part.clone(), part.clone())
    );
    // Past the replay window: nothing in progress.
    let mut later = AiSdk::new(&log, answering)
        .replay_window(Duration::ZERO)
        .router();
    let (status, _, _) = call(&mut later, Method::GET, "/c1/stream", &[], None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // And the chat's next turn is run t2.
    let (status, _, text) = post(&mut app, "c1", "regenerate-message", "again").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(chunks(&events(&text))[0]["messageId"], "t2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_from_every_chunk_gets_exactly_the_chunks_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = AiSdk::new(&log_in(&dir), answering).router();
    let (_, _, text) = post(&mut app, "c", "submit-message", "hi").await;
    resumes_exactly(&mut app, "/c/stream", &events(&text), 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_runs_one_turn_at_a_time_and_a_page_without_an_id_reads_the_one_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let app = AiSdk::new(
        &log_in(&dir),
        move |input: &ChatInput, run: &mut Run<Research, Log<JsonlStore>>| {
            assert_eq!(input.trigger, Trigger::Submit);
            run.state().steps.push(input.text.clone());
            run.flush()?;
            let _ = gate.lock().unwrap().recv(); // a slow model
            Ok::<(), AgentError>(())
        },
    );
    let mut app = app.router();
    let first = {
        let mut app = app.clone();
        tokio::spawn(async move { post(&mut app, "c", "submit-message", "one").await })
    };
    // Until the run's first step is stored, a second POST may come before it.
    let mut state = String::new();
    for _ in 0..500 {
        state = call(&mut app, Method::GET, "/c/state", &[], None).await.2;
        if state.contains("one") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(state.contains("one"), "{state}");
    let (status, _, why) = post(&mut app, "c", "submit-message", "two").await;
    assert_eq!(status, StatusCode::CONFLICT, "{why}");
    assert!(why.contains("in progress"), "{why}");
    // A reloaded page (no Last-Event-ID) reads the run in progress: as it stands, then the
    // rest as it comes.
    let reader = {
        let mut app = app.clone();
        tokio::spawn(async move { call(&mut app, Method::GET, "/c/stream", &[], None).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    release.send(()).unwrap();
    let (status, _, text) = reader.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let (_, _, posted) = first.await.unwrap();
    let (reloaded, posted) = (chunks(&events(&text)), chunks(&events(&posted)));
    let types: Vec<&str> = reloaded
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "data-state", "data-state", "finish"]);
    assert_eq!(
        reloaded[1]["data"]["steps"],
        json!(["one"]),
        "the state so far"
    );
    assert_eq!(reloaded[0], posted[0], "the same message");
    assert_eq!(assembled(&reloaded), assembled(&posted));
}

/// A gate the agent waits at after each token past the `n`-th, opened by the test.
fn gated_answer(
    n: usize,
    gate: mpsc::Receiver<()>,
) -> impl Fn(&ChatInput, &mut Run<Research, Log<JsonlStore>>) -> Result<(), AgentError> {
    let gate = Mutex::new(gate);
    move |_, run| {
        let message = run.start_message();
        for (i, token) in TOKENS.iter().enumerate() {
            if i >= n {
                let _ = gate.lock().unwrap().recv();
            }
            run.append(&message, token);
            run.state().answer += *token;
            run.state().tokens += 1;
            run.flush()?;
        }
        run.end_message(&message);
        run.flush()?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_without_an_id_gets_the_message_so_far_in_one_delta_then_the_rest_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let (release, gate) = mpsc::channel::<()>();
    let mut app = AiSdk::new(&log, gated_answer(3, gate)).router();
    let first = {
        let mut app = app.clone();
        tokio::spawn(async move { post(&mut app, "c", "submit-message", "go").await })
    };
    let so_far = TOKENS[..3].concat();
    let mut state = Value::Null;
    for _ in 0..500 {
        let text = call(&mut app, Method::GET, "/c/state", &[], None).await.2;
        state = serde_json::from_str(&text).unwrap_or(Value::Null);
        if state["answer"] == so_far.as_str() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(state["answer"], so_far.as_str(), "{state}");
    // Two pages reload while the agent waits: the first makes the compact start, the second
    // is sent the same bytes.
    let mut readers = Vec::new();
    for _ in 0..2 {
        let mut app = app.clone();
        readers.push(tokio::spawn(async move {
            call(&mut app, Method::GET, "/c/stream", &[], None).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 3..TOKENS.len() {
        release.send(()).unwrap();
    }
    let mut reloads = Vec::new();
    for reader in readers {
        let (status, _, text) = reader.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{text}");
        reloads.push(events(&text));
    }
    assert_eq!(reloads[0], reloads[1], "the same chunks, the same ids");
    let reload = &reloads[0];
    let got = chunks(reload);
    let types: Vec<&str> = got.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[..4],
        ["start", "data-state", "text-start", "text-delta"]
    );
    assert_eq!(
        got[3]["delta"],
        so_far.as_str(),
        "the text so far in one delta"
    );
    assert_eq!(got[1]["data"], state, "the state so far in one part");
    let deltas = types.iter().filter(|t| **t == "text-delta").count();
    assert_eq!(deltas, 1 + TOKENS.len() - 3, "then each later token once");
    let ids: Vec<&String> = reload.iter().filter_map(|(id, _)| id.as_ref()).collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no id twice: {ids:?}");
    let (_, _, posted) = first.await.unwrap();
    let posted = chunks(&events(&posted));
    assert_eq!(
        assembled(&got),
        assembled(&posted),
        "the same message and state"
    );
    assert_eq!(assembled(&got).0, TOKENS.concat());
    // A page that reloaded resumes from any chunk it got: exactly the chunks after it (the
    // terminal one's 204 is the test above's).
    resumes_exactly(&mut app, "/c/stream", reload, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_racing_for_one_chat_start_one_turn_and_the_rest_are_told_409() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir);
    let (release, gate) = mpsc::channel::<()>();
    let app = AiSdk::new(&log, gated_answer(0, gate)).router();
    let mut posts = Vec::new();
    for i in 0..6 {
        let mut app = app.clone();
        posts.push(tokio::spawn(async move {
            let (status, _, text) =
                post(&mut app, "race", "submit-message", &format!("post {i}")).await;
            (status, text)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in TOKENS {
        let _ = release.send(());
    }
    let mut statuses = Vec::new();
    for post in posts {
        let (status, text) = post.await.unwrap();
        if status == StatusCode::CONFLICT {
            assert!(text.contains("in progress"), "{text}");
        }
        statuses.push(status);
    }
    let started = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((started, refused), (1, 5), "{statuses:?}");
    // One turn was counted: the next is t2.
    let (release, gate) = mpsc::channel::<()>();
    drop(release);
    let mut app = AiSdk::new(&log, gated_answer(0, gate)).router();
    let (_, _, text) = post(&mut app, "race", "submit-message", "next").await;
    assert_eq!(chunks(&events(&text))[0]["messageId"], "t2", "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_producer_is_gone_ends_with_an_error_chunk_and_the_chat_goes_on() {
    use chord::store::{Address, Checkpoint, LogWriter};
    let dir = tempfile::tempdir().unwrap();
    {
        // A server that stopped mid-turn: the chat's index counts turn t1, whose run is
        // stored running, with half an answer.
        let store =
            JsonlStore::open(dir.path().join("chats.jsonl"), Durability::default()).unwrap();
        let mut writer = LogWriter::new(store, Checkpoint::Never);
        writer
            .append(
                &Address::new("ai-sdk/gone", "chat"),
                &[chord::Op::Replace(json!({"turns": 1}))],
            )
            .unwrap();
        let mut run = Run::new(
            writer,
            Address::new("ai-sdk/gone", "t1"),
            "gone",
            "t1",
            Research::default(),
        );
        let message = run.start_message();
        run.append(&message, "half an ");
        run.state().answer += "half an ";
        run.flush().unwrap();
    }
    let log = log_in(&dir);
    let mut app = AiSdk::new(&log, answering).router();
    let (status, _, text) = call(&mut app, Method::GET, "/gone/stream", &[], None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let got = chunks(&events(&text));
    let types: Vec<&str> = got.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "start",
            "data-state",
            "text-start",
            "text-delta",
            "text-end",
            "error"
        ]
    );
    assert_eq!(got[3]["delta"], "half an ");
    let error = got[5]["errorText"].as_str().unwrap();
    assert!(error.starts_with("PRODUCER_GONE: "), "{error}");
    assert_eq!(events(&text).last().unwrap().1, "[DONE]");
    // The chat is not stuck: its next turn runs.
    let (status, _, text) = post(&mut app, "gone", "submit-message", "again").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(chunks(&events(&text))[0]["messageId"], "t2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorization_hook_sees_each_request_before_its_body() {
    use chord::ai_sdk::{ChatRequest, ChatRequestKind};
    use chord::live::Access;
    let dir = tempfile::tempdir().unwrap();
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let mut app = {
        let seen = std::sync::Arc::clone(&seen);
        AiSdk::new(&log_in(&dir), answering)
            .authorize(move |r: &ChatRequest<'_>| {
                seen.lock()
                    .unwrap()
                    .push((r.kind, r.chat.map(str::to_owned)));
                match r.headers.get("authorization").map(|v| v.as_bytes()) {
                    Some(b"Bearer good") => Access::Allow,
                    Some(_) => Access::Forbidden,
                    None => Access::Unauthorized,
                }
            })
            .router()
    };
    let good = ("authorization", "Bearer good");
    let bad = ("authorization", "Bearer bad");
    let posted = || Some(body("c", "submit-message", "hi"));
    let cases: Vec<(Method, &str, Headers, StatusCode)> = vec![
        (Method::POST, "/", vec![JSON], StatusCode::UNAUTHORIZED),
        (Method::POST, "/", vec![JSON, bad], StatusCode::FORBIDDEN),
        (Method::GET, "/c/stream", vec![], StatusCode::UNAUTHORIZED),
        (Method::GET, "/c/state", vec![bad], StatusCode::FORBIDDEN),
        (Method::POST, "/", vec![JSON, good], StatusCode::OK),
        (Method::GET, "/c/state", vec![good], StatusCode::OK),
    ];
    for (method, path, headers, status) in cases {
        let sent = (method == Method::POST).then(posted).flatten();
        let (got, _, text) = call(&mut app, method.clone(), path, &headers, sent).await;
        assert_eq!(got, status, "{method} {path} {headers:?}: {text}");
        if status != StatusCode::OK {
            assert!(text.is_empty(), "a refusal says nothing: {text}");
        }
    }
    let seen = seen.lock().unwrap().clone();
    let kinds: Vec<(ChatRequestKind, Option<String>)> = vec![
        (ChatRequestKind::Send, None),
        (ChatRequestKind::Send, None),
        (ChatRequestKind::Resume, Some("c".into())),
        (ChatRequestKind::State, Some("c".into())),
        (ChatRequestKind::Send, None),
        (ChatRequestKind::State, Some("c".into())),
    ];
    assert_eq!(seen, kinds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_saying_why_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = AiSdk::new(&log_in(&dir), answering)
        .body_limit(4096)
        .router();
    let cases: Vec<(Headers, String, StatusCode, &str)> = vec![
        (
            vec![("content-type", "text/plain")],
            body("c", "submit-message", "x"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "application/json",
        ),
        (
            vec![JSON],
            body("c", "submit-message", &"x".repeat(5000)),
            StatusCode::PAYLOAD_TOO_LARGE,
            "over 4096 bytes",
        ),
        (
            vec![JSON],
            "{\"id\": ".into(),
            StatusCode::BAD_REQUEST,
            "not a useChat request",
        ),
        (
            vec![JSON],
            r#"{"id": "c", "id": "d", "messages": []}"#.into(),
            StatusCode::BAD_REQUEST,
            "duplicate",
        ),
        (
            vec![JSON],
            body("c", "edit-message", "x"),
            StatusCode::BAD_REQUEST,
            "unknown `trigger`",
        ),
        (
            vec![JSON],
            json!({"id": "c", "messages": [{"role": "assistant", "parts": []}]}).to_string(),
            StatusCode::BAD_REQUEST,
            "no user message",
        ),
        (
            vec![JSON],
            body("", "submit-message", "x"),
            StatusCode::BAD_REQUEST,
            "empty",
        ),
    ];
    for (headers, body, status, says) in cases {
        let (got, h, why) = call(&mut app, Method::POST, "/", &headers, Some(body.clone())).await;
        assert_eq!(got, status, "{body:.80}: {why}");
        assert!(why.contains(says), "{body:.80}: {why}");
        assert_eq!(h["x-content-type-options"], "nosniff");
    }
    // Nothing was started by any of them.
    let (status, _, _) = call(&mut app, Method::GET, "/c/state", &[], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = call(&mut app, Method::GET, "/c/stream", &[], None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "no run in progress");
    // Hostile ids.
    let (status, _, why) = call(&mut app, Method::GET, "/c%07/stream", &[], None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{why}");
    let (_, _, text) = post(&mut app, "c", "submit-message", "x").await;
    assert!(text.contains("\"finish\""), "{text}");
    for bad in [
        "nonsense",
        "0000000000000001:99999999999",
        "ffffffffffffffff:0",
    ] {
        let (status, _, why) = call(
            &mut app,
            Method::GET,
            "/c/stream",
            &[("last-event-id", bad)],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {why}");
        assert!(why.contains("Last-Event-ID"), "{bad}: {why}");
    }
}

/// The chunks of a response as `(id, data)`, read as they come; with `cut`, the connection is
/// dropped after that many (a client cut mid-stream).
async fn chunks_of(
    app: &mut axum::Router,
    path: &str,
    last: Option<&str>,
    cut: Option<usize>,
) -> (StatusCode, Vec<(Option<String>, String)>) {
    let mut request = Request::get(path);
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    let request = request.body(Body::empty()).unwrap();
    std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let status = response.status();
    let mut body = response.into_body();
    let (mut pending, mut got) = (String::new(), Vec::new());
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .unwrap_or_else(|_| panic!("no next chunk in 30 s: {path} after {last:?}: {got:?}"));
        let Some(frame) = frame else { break };
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        pending.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = pending.find("\n\n") {
            let block: String = pending.drain(..end + 2).collect();
            got.extend(events(&block));
            if cut.is_some_and(|n| got.len() >= n) {
                return (status, got);
            }
        }
    }
    (status, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_reloading_and_cut_at_random_moments_ends_with_the_message_and_state_each_once() {
    // (seed, checkpoints): pages that reload (no id: the turn as it stands, then the rest)
    // at random moments, cut at random and resumed with their last id until the end, each
    // ending with the text and state of the run's own response, no chunk twice, ids in the
    // log's order, over checkpoints that make the compact starts come from bases, from the
    // mirror and from the log.
    for (seed, every) in [
        (3u64, chord::store::Checkpoint::Never),
        (11, chord::store::Checkpoint::EveryBatches(5)),
        (17, chord::store::Checkpoint::EveryBatches(2)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(&dir);
        let app = AiSdk::new(
            &log,
            |_: &ChatInput, run: &mut Run<Research, Log<JsonlStore>>| {
                let message = run.start_message();
                for i in 0..60u32 {
                    run.state().steps.push(format!("step {i}"));
                    run.state().tokens.set(i);
                    run.append(&message, &format!("t{i} "));
                    run.state().answer += &format!("t{i} ");
                    run.flush()?;
                    std::thread::sleep(Duration::from_millis(3));
                }
                run.end_message(&message);
                run.flush()?;
                Ok::<(), AgentError>(())
            },
        )
        .checkpoint(every)
        .router();
        let posted = {
            let mut app = app.clone();
            tokio::spawn(async move { post(&mut app, "crowd", "submit-message", "go").await })
        };
        let mut state = seed;
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut readers = Vec::new();
        for _ in 0..16 {
            let wait = 20 + next(150);
            let cut = (next(3) > 0).then(|| 1 + next(12) as usize);
            let mut app = app.clone();
            readers.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let (status, mut seen) = chunks_of(&mut app, "/crowd/stream", None, cut).await;
                if status == StatusCode::NO_CONTENT {
                    return None; // joined after the turn and its window: nothing to read
                }
                assert_eq!(status, StatusCode::OK, "{seen:?}");
                while seen.last().is_none_or(|(_, d)| d != "[DONE]") {
                    let last = seen.last().and_then(|(id, _)| id.clone()).unwrap();
                    let (status, more) =
                        chunks_of(&mut app, "/crowd/stream", Some(&last), None).await;
                    assert_eq!(status, StatusCode::OK, "after {last}: {more:?}");
                    seen.extend(more);
                }
                Some(seen)
            }));
        }
        let (status, _, whole) = posted.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        let whole = chunks(&events(&whole));
        let held = assembled(&whole);
        assert_eq!(
            held.0,
            (0..60).map(|i| format!("t{i} ")).collect::<String>()
        );
        let mut read = 0;
        for reader in readers {
            let Some(seen) = reader.await.unwrap() else {
                continue;
            };
            read += 1;
            let places: Vec<(String, u64)> = seen
                .iter()
                .filter_map(|(id, _)| id.as_deref())
                .map(|id| {
                    let (offset, k) = id.split_once(':').unwrap();
                    (offset.to_owned(), k.parse().unwrap())
                })
                .collect();
            assert!(
                places.windows(2).all(|w| w[0] < w[1]),
                "seed {seed}: ids in the log's order, none twice: {places:?}"
            );
            let got = chunks(&seen);
            let starts = got.iter().filter(|c| c["type"] == "start").count();
            assert_eq!(starts, 1, "seed {seed}: one start: {got:?}");
            assert_eq!(
                assembled(&got),
                held,
                "seed {seed}: a page ends with the message and state"
            );
        }
        assert!(read > 0, "seed {seed}: no page read the turn");
    }
}
