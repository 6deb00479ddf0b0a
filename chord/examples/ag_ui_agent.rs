//! A scripted AG-UI agent served by chord: a plan with steps in the state, tool calls with
//! their output in the state, and an answer streamed token by token as a text message.
//!
//! ```text
//! cargo run --example ag_ui_agent -- --port 8788
//! ```
//!
//! Prints one line, `http://127.0.0.1:PORT/`, once it accepts connections, and serves until
//! SIGINT or SIGTERM. Options:
//!
//! - `--port N`: the port (default 8788; 0: any free port);
//! - `--dir PATH`: where the runs' log (`runs.jsonl`) is kept (default: a temporary
//!   directory, removed at exit); a server started again on the same directory serves the
//!   runs it holds, and clients resume them;
//! - `--delay-ms N`: the pause between two steps of the agent (default 20).
//!
//! Routes: `POST /` (a `RunAgentInput`: start or resume a run), `GET /runs/{threadId}/{runId}`
//! (a run's events, honouring `Last-Event-ID`), `GET /runs/{threadId}/{runId}/state` (a
//! run's current state as JSON).
//!
//! Needs `tokio` (features `macros`, `rt-multi-thread`, `net`, `signal`).

use std::path::PathBuf;
use std::time::Duration;

use chord::ag_ui::{AgUi, AgentError, Run, RunAgentInput};
use chord::store::{Durability, JsonlStore, Store};
use chord::streams::{LogBuilder, Retention, Server};
use chord::Tracked;
use serde::{Deserialize, Serialize};

/// The agent's shared state: what the page shows beside the answer.
#[derive(Tracked, Serialize, Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase")]
struct Agent {
    /// What the user asked (the last user message).
    question: String,
    /// The plan: each step and where it stands.
    plan: Vec<Step>,
    /// The tools run, with their output.
    tools: Vec<ToolRun>,
}

#[derive(Tracked, Serialize, Deserialize, Debug)]
struct Step {
    title: String,
    /// `pending`, `running` or `done`.
    status: String,
}

#[derive(Tracked, Serialize, Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct ToolRun {
    id: String,
    name: String,
    args: serde_json::Value,
    output: String,
    done: bool,
}

/// The answer the agent streams, one token (a word and the space after it) at a time.
pub const ANSWER: &str = "chord streams typed Rust state to AG-UI clients: each change is a patch \
                      that applies, the answer's text goes out as text deltas, and a run \
                      survives a dropped connection.";

/// The scripted agent: plan, two tool calls, the answer.
fn agent<S: Store>(
    input: &RunAgentInput,
    run: &mut Run<Agent, S>,
    delay: Duration,
) -> Result<(), AgentError> {
    let pause = || std::thread::sleep(delay);
    let question = (input.messages.iter().rev())
        .find(|m| m.role == "user")
        .and_then(|m| m.content.as_ref())
        .and_then(|c| c.as_str())
        .unwrap_or("What does chord do for AG-UI?")
        .to_owned();
    {
        let mut state = run.state();
        state.question.set(question.clone());
        for title in ["search the docs", "run the example", "write the answer"] {
            state.plan.push(Step {
                title: title.to_owned(),
                status: "pending".to_owned(),
            });
        }
    }
    run.flush()?;
    pause();
    let tools = [
        (
            "search",
            serde_json::json!({ "query": question }),
            "3 pages found\n",
        ),
        (
            "shell",
            serde_json::json!({ "cmd": "cargo run --example ag_ui_agent" }),
            "http://127.0.0.1:8788/\n",
        ),
    ];
    for (i, (name, args, output)) in tools.into_iter().enumerate() {
        {
            let mut state = run.state();
            if let Some(mut step) = state.plan.get_mut(i) {
                step.status.set("running".to_owned());
            }
            state.tools.push(ToolRun {
                id: format!("tool-{}", i + 1),
                name: name.to_owned(),
                args,
                output: String::new(),
                done: false,
            });
        }
        run.flush()?;
        pause();
        for line in output.split_inclusive('\n') {
            if let Some(mut tool) = run.state().tools.get_mut(i) {
                tool.output.push_str(line);
            }
            run.flush()?;
            pause();
        }
        {
            let mut state = run.state();
            if let Some(mut tool) = state.tools.get_mut(i) {
                tool.done.set(true);
            }
            if let Some(mut step) = state.plan.get_mut(i) {
                step.status.set("done".to_owned());
            }
        }
        run.flush()?;
        pause();
    }
    if let Some(mut step) = run.state().plan.get_mut(2) {
        step.status.set("running".to_owned());
    }
    let message = run.start_message();
    run.flush()?;
    for token in ANSWER.split_inclusive(' ') {
        run.append(&message, token);
        run.flush()?;
        pause();
    }
    run.end_message(&message);
    if let Some(mut step) = run.state().plan.get_mut(2) {
        step.status.set("done".to_owned());
    }
    run.flush()?;
    Ok(())
}

struct Options {
    port: u16,
    dir: Option<PathBuf>,
    delay: Duration,
}

fn options(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        port: 8788,
        dir: None,
        delay: Duration::from_millis(20),
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
            "--delay-ms" => {
                let v = value("--delay-ms")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--delay-ms {v}: not a number"))?;
                options.delay = Duration::from_millis(ms);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (expected --port N, --dir PATH, --delay-ms N)"
                ))
            }
        }
    }
    Ok(options)
}

fn main() {
    if let Err(e) = run(std::env::args().collect()) {
        eprintln!("ag_ui_agent: {e}");
        std::process::exit(2);
    }
}

/// Runs the example with `args` as its command line (`args[0]`, the program's name, is
/// skipped): parses the options, prints the URL once it accepts connections, and serves
/// until SIGINT or SIGTERM. Tests call it in a child process of their own.
///
/// # Errors
///
/// A bad argument, the log that cannot be opened, the port that cannot be bound.
pub fn run(args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let options = options(args)?;
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
    let store = JsonlStore::open(dir.join("runs.jsonl"), Durability::EveryAppend)?;
    // Every run stays resumable from any of its events: the log keeps 64 checkpoints of each
    // run (a run's checkpoint comes every 256 KiB of its changes).
    let log = LogBuilder::new()
        .retention(Retention::Bases(64))
        .build(store);
    let delay = options.delay;
    let app = AgUi::new(
        &log,
        move |input: &RunAgentInput, run: &mut Run<Agent, _>| agent(input, run, delay),
    )
    .router();

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
