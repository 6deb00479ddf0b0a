//! A scripted agent served to the Vercel AI SDK's `useChat`: a plan with steps in the state,
//! a tool run whose output grows, and an answer streamed token by token both into the
//! state's `answer` and as the assistant message's text; with a page that shows them.
//!
//! ```text
//! cargo run --release --example ai_sdk_chat -- --port 8789
//! ```
//!
//! Prints one line, `http://127.0.0.1:PORT/`, once it accepts connections, and serves until
//! SIGINT or SIGTERM. Options:
//!
//! - `--port N`: the port (default 8789; 0: any free port);
//! - `--dir PATH`: where the chats' log (`chats.jsonl`) is kept (default: a temporary
//!   directory, removed at exit); a server started again on the same directory serves the
//!   chats it holds, and clients resume them (a run whose server was killed mid-run ends,
//!   when resumed, with an `error` chunk saying its producer is gone);
//! - `--delay-ms N`: the pause between two steps of the agent (default 40);
//! - `--types PATH`: writes the TypeScript declarations of the state's JSON (`Research`, from
//!   its Rust types: `chord::typescript`) to PATH and exits. They are committed as
//!   `chord/examples/ai_sdk_chat/research.d.ts`, for a page written in TypeScript
//!   (`ChordUIMessage<Research>`, `createChatState<Research>()`); a test fails when they are
//!   not what the Rust types declare now.
//!
//! Routes: `POST /api/chat` (`useChat`'s request: the chat's next run, its UI message
//! stream), `GET /api/chat/{chatId}/stream` (the run in progress, resumed; after
//! `Last-Event-ID` when sent), `GET /api/chat/{chatId}/state` (the latest run's state as
//! JSON), and the page: `GET /` (`?chat=ID` names the chat; without it the page picks one and
//! puts it in the address, so that a reload resumes the same chat) and `GET /page.js`.
//!
//! The page (`chord/examples/ai_sdk_chat/page.jsx`) is React with `@ai-sdk/react`'s
//! `useChat({ resume: true })` on chord-replica/ai-sdk's `ChordChatTransport` (which resumes a
//! cut stream by itself, after the last SSE id): it shows each message's text and the typed
//! state (the plan, the tool's output, the answer), kept by `createChatState()` from the
//! persistent `data-state` part and the transient `data-chord` batches, each part read with
//! chord-replica/react's `useChord`. Its bundle, `chord/examples/ai_sdk_chat/page.js` (React,
//! `@ai-sdk/react`, `ai` and chord-replica, minified by esbuild: 485,563 bytes,
//! `wc -c chord/examples/ai_sdk_chat/page.js`), is committed, so that `cargo run --example`
//! needs no Node.js; `scripts/build-ai-sdk-page` builds it again from js/test-ai-sdk's
//! install.
//!
//! Needs `tokio` (features `macros`, `rt-multi-thread`, `net`, `signal`) and `axum`.

use std::path::PathBuf;
use std::time::Duration;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use chord::ag_ui::{AgentError, Run};
use chord::ai_sdk::{AiSdk, ChatInput};
use chord::store::{Durability, JsonlStore, Store};
use chord::streams::{LogBuilder, Retention, Server};
use chord::Tracked;
use serde::{Deserialize, Serialize};

/// The chat's typed state: what the page shows beside the message.
#[derive(Tracked, Serialize, Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Research {
    /// What the user asked (the last user message).
    pub question: String,
    /// The plan: each step and where it stands.
    pub plan: Vec<Step>,
    /// The tools run, with their output.
    pub tools: Vec<ToolRun>,
    /// The answer, as streamed: the same text as the assistant message's.
    pub answer: String,
    /// Steps done, counted.
    pub done: u32,
}

/// A step of the plan.
#[derive(Tracked, Serialize, Deserialize, Debug)]
pub struct Step {
    /// What the step does.
    pub title: String,
    /// `pending`, `running` or `done`.
    pub status: String,
}

/// A tool run, its output growing line by line.
#[derive(Tracked, Serialize, Deserialize, Debug)]
pub struct ToolRun {
    /// The tool.
    pub name: String,
    /// Its command.
    pub command: String,
    /// What it printed so far.
    pub output: String,
    /// Whether it has ended.
    pub done: bool,
}

/// The answer the agent streams, one token (a word and the space after it) at a time.
pub const ANSWER: &str = "chord streams a typed Rust state to useChat: every flush is a small \
                          batch of ops in a transient data part, the answer goes out as text \
                          deltas, and a reloaded page resumes the run where it was.";

/// The lines the tool prints, one a step.
pub const TOOL_OUTPUT: &[&str] = &[
    "Compiling chord-delta\n",
    "Compiling chord-demo\n",
    "Finished release profile\n",
    "http://127.0.0.1:8789/\n",
];

/// The plan's steps.
const PLAN: [&str; 3] = ["read the question", "run the example", "write the answer"];

/// Marks step `i` `status`, counting it when done.
fn mark<S: Store>(run: &mut Run<Research, S>, i: usize, status: &str) {
    let mut state = run.state();
    if let Some(mut step) = state.plan.get_mut(i) {
        step.status.set(status.to_owned());
    }
    if status == "done" {
        state.done += 1;
    }
}

/// The scripted agent: the plan, a tool run, the answer.
fn agent<S: Store>(
    input: &ChatInput,
    run: &mut Run<Research, S>,
    delay: Duration,
) -> Result<(), AgentError> {
    let pause = || std::thread::sleep(delay);
    {
        let mut state = run.state();
        state.question.set(input.text.clone());
        for title in PLAN {
            state.plan.push(Step {
                title: title.to_owned(),
                status: "pending".to_owned(),
            });
        }
    }
    mark(run, 0, "running");
    run.flush()?;
    pause();
    mark(run, 0, "done");
    mark(run, 1, "running");
    run.state().tools.push(ToolRun {
        name: "shell".to_owned(),
        command: "cargo run --release --example ai_sdk_chat".to_owned(),
        output: String::new(),
        done: false,
    });
    run.flush()?;
    pause();
    for line in TOOL_OUTPUT {
        if let Some(mut tool) = run.state().tools.get_mut(0) {
            tool.output.push_str(line);
        }
        run.flush()?;
        pause();
    }
    if let Some(mut tool) = run.state().tools.get_mut(0) {
        tool.done.set(true);
    }
    mark(run, 1, "done");
    mark(run, 2, "running");
    run.flush()?;
    pause();
    let message = run.start_message();
    for token in ANSWER.split_inclusive(' ') {
        // The same token to the message (a text-delta) and to the state (a data-chord batch).
        run.append(&message, token);
        run.state().answer.push_str(token);
        run.flush()?;
        pause();
    }
    run.end_message(&message);
    mark(run, 2, "done");
    run.flush()?;
    Ok(())
}

/// The page: its bundle loaded by a module script.
const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>chord × useChat</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; }
main { display: grid; grid-template-columns: 1fr 1fr; gap: 2rem; }
.message { margin: .5rem 0; } .role { font-weight: 600; margin-right: .5rem; }
pre { background: #f4f4f4; padding: .5rem; white-space: pre-wrap; }
.pending { color: #888; } .running { color: #b60; } .done { color: #070; }
</style>
</head>
<body>
<div id="root">Loading…</div>
<script type="module" src="/page.js"></script>
</body>
</html>
"#;

/// The page's bundle (see the top of this file).
const BUNDLE: &str = include_str!("ai_sdk_chat/page.js");

struct Options {
    port: u16,
    dir: Option<PathBuf>,
    delay: Duration,
    types: Option<PathBuf>,
}

/// The TypeScript declarations of the state's JSON, as `--types` writes them.
///
/// # Errors
///
/// A type TypeScript cannot declare (none here).
pub fn declarations() -> Result<String, chord::typescript::Error> {
    chord::typescript::declarations::<Research>()
}

fn options(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        port: 8789,
        dir: None,
        delay: Duration::from_millis(40),
        types: None,
    };
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--port" => {
                let v = value("--port")?;
                options.port = v.parse().map_err(|_| format!("--port {v}: not a port"))?;
            }
            "--dir" => options.dir = Some(PathBuf::from(value("--dir")?)),
            "--types" => options.types = Some(PathBuf::from(value("--types")?)),
            "--delay-ms" => {
                let v = value("--delay-ms")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--delay-ms {v}: not a number"))?;
                options.delay = Duration::from_millis(ms);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (expected --port N, --dir PATH, --delay-ms N, \
                     --types PATH)"
                ))
            }
        }
    }
    Ok(options)
}

fn main() {
    if let Err(e) = run(std::env::args().collect()) {
        eprintln!("ai_sdk_chat: {e}");
        std::process::exit(2);
    }
}

/// Runs the example with `args` as its command line (`args[0]`, the program's name, is
/// skipped): parses the options, prints the URL once it accepts connections, and serves until
/// SIGINT or SIGTERM. Tests call it in a child process of their own.
///
/// # Errors
///
/// A bad argument, the log that cannot be opened, the port that cannot be bound.
pub fn run(args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let options = options(args)?;
    if let Some(path) = &options.types {
        std::fs::write(path, declarations()?)
            .map_err(|e| format!("--types {}: {e}", path.display()))?;
        return Ok(());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(options))
}

async fn serve(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let temp;
    let dir = match &options.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            dir.clone()
        }
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_owned()
        }
    };
    let store = JsonlStore::open(dir.join("chats.jsonl"), Durability::EveryAppend)?;
    // Every run stays resumable from any of its chunks: the log keeps 64 checkpoints of each
    // run (a run's checkpoint comes every 256 KiB of its changes).
    let log = LogBuilder::new()
        .retention(Retention::Bases(64))
        .build(store);
    let delay = options.delay;
    let chat = AiSdk::new(
        &log,
        move |input: &ChatInput, run: &mut Run<Research, _>| agent(input, run, delay),
    )
    .router();
    let app = axum::Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route(
            "/page.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    BUNDLE,
                )
                    .into_response()
            }),
        )
        .nest("/api/chat", chat);

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| {
            format!(
                "--port {port}: cannot listen on 127.0.0.1:{port}: {e}",
                port = options.port
            )
        })?;
    let port = listener.local_addr()?.port();
    println!("http://127.0.0.1:{port}/");
    std::io::Write::flush(&mut std::io::stdout())?;
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    Server::new()
        .drain(Duration::from_secs(2))
        .serve(listener, app, shutdown)
        .await?;
    drop(log);
    Ok(())
}
