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
    let mut app = AiSdk::new(&log_in(&dir), answering).router();
    let (status, headers, text) = call(
        &mut app,
        Method::POST,
        "/",
        &[JSON],
        Some(body("c1", "submit-message", "hi")),
    )
    .await;
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
    // Ended: nothing is in progress, and the chat's next turn is run t2.
    let (status, _, _) = call(&mut app, Method::GET, "/c1/stream", &[], None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, text) = call(
        &mut app,
        Method::POST,
        "/",
        &[JSON],
        Some(body("c1", "regenerate-message", "again")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(chunks(&events(&text))[0]["messageId"], "t2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_from_every_chunk_gets_exactly_the_chunks_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = AiSdk::new(&log_in(&dir), answering).router();
    let (_, _, text) = call(
        &mut app,
        Method::POST,
        "/",
        &[JSON],
        Some(body("c", "submit-message", "hi")),
    )
    .await;
    let all = events(&text);
    let n = all.len() - 1; // the chunks before [DONE]
    for i in 0..n {
        let id = all[i].0.clone().unwrap();
        let (status, _, text) = call(
            &mut app,
            Method::GET,
            "/c/stream",
            &[("last-event-id", &id)],
            None,
        )
        .await;
        if i + 1 == n {
            assert_eq!(
                status,
                StatusCode::NO_CONTENT,
                "after the terminal chunk: nothing"
            );
            continue;
        }
        assert_eq!(status, StatusCode::OK, "after {id}: {text}");
        assert_eq!(events(&text), all[i + 1..], "after {id}");
    }
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
        tokio::spawn(async move {
            call(
                &mut app,
                Method::POST,
                "/",
                &[JSON],
                Some(body("c", "submit-message", "one")),
            )
            .await
        })
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
    let (status, _, why) = call(
        &mut app,
        Method::POST,
        "/",
        &[JSON],
        Some(body("c", "submit-message", "two")),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{why}");
    assert!(why.contains("in progress"), "{why}");
    // A reloaded page (no Last-Event-ID) reads the run in progress from its start.
    let reader = {
        let mut app = app.clone();
        tokio::spawn(async move { call(&mut app, Method::GET, "/c/stream", &[], None).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    release.send(()).unwrap();
    let (status, _, text) = reader.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let (_, _, posted) = first.await.unwrap();
    assert_eq!(
        events(&text),
        events(&posted),
        "the same chunks, the same ids"
    );
    assert_eq!(chunks(&events(&text)).last().unwrap()["type"], "finish");
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
    let (_, _, text) = call(
        &mut app,
        Method::POST,
        "/",
        &[JSON],
        Some(body("c", "submit-message", "x")),
    )
    .await;
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
