//! The AG-UI example agent (`chord/examples/ag_ui_agent.rs`) against the real clients:
//!
//! - the official client, `@ag-ui/client`'s `HttpAgent` (js/test-ag-ui/official-client.mjs):
//!   every event parses with `@ag-ui/core`'s event schemas, the lifecycle is in order, the
//!   client's state at the end equals the producer's and its text equals the answer;
//! - `chord-replica/ag-ui`'s `ResumableHttpAgent` (js/test-ag-ui/resume.mjs) through a proxy
//!   that cuts the connection mid-run, and across a restart of the server on the same log:
//!   each resumed client ends with the events, state and text of an uninterrupted reader; one
//!   whose server was killed mid-answer (its producer with it) ends with the restarted
//!   server's `RUN_ERROR`, having seen each event of the run's log once;
//! - js/README.md's React page with that client (js/test-ag-ui/react-page.mjs), rendered in
//!   Node through a proxy that cuts once: it shows the producer's plan, tools and answer;
//! - the AG-UI conformance validator, `ag-ui-validate` 0.4.0 (Python), with
//!   `--features shared-state`: no error-level finding.
//!
//! The example runs as this test binary started again (the ignored `child_example`), so it is
//! built with the test and can be killed and started again on the same `--dir` and port.
//! Node.js and js/node_modules (`scripts/test` installs them), and the validator's virtualenv
//! (`scripts/test` makes it in target/ag-ui-validate), are needed: without them a test prints
//! `SKIPPED ...`, and under `CI=true` fails.

#[allow(dead_code)]
#[path = "../examples/ag_ui_agent.rs"]
mod ag_ui_agent;
#[path = "support/ag_ui_example.rs"]
mod example;
#[path = "support/skip.rs"]
mod skip;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use example::{report, Example};
use serde_json::Value;

/// The example's process when `CHORD_AG_UI_EXAMPLE` is set (it does nothing otherwise).
#[test]
#[ignore = "the example server of the tests below, started by them"]
fn child_example() {
    example::child_main(ag_ui_agent::run);
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether Node.js and the official client are installed; otherwise skips `test`.
fn node_ready(test: &str) -> bool {
    if Command::new("node").arg("--version").output().is_err() {
        skip::skip(test, "`node` (Node.js 20 or later) is not on PATH");
        return false;
    }
    if !root().join("js/node_modules/@ag-ui/client").exists() {
        skip::skip(
            test,
            "js/node_modules/@ag-ui/client is missing (scripts/test installs js/'s development dependencies)",
        );
        return false;
    }
    true
}

/// Starts `node js/test-ag-ui/<script> <args>` with the answer in its environment.
fn node(script: &str, args: &[&str]) -> Child {
    Command::new("node")
        .arg(format!("js/test-ag-ui/{script}"))
        .args(args)
        .env("CHORD_AG_UI_ANSWER", ag_ui_agent::ANSWER)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting node: {e}"))
}

#[test]
fn the_official_client_runs_the_example() {
    if !node_ready("the_official_client_runs_the_example") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 5);
    let seen = report(
        "official-client.mjs",
        node("official-client.mjs", &[&example.url]),
        None,
    );
    assert_eq!(seen["text"], ag_ui_agent::ANSWER);
    let types = &seen["types"];
    for kind in [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ] {
        assert!(types[kind].as_u64() >= Some(1), "no {kind}: {types}");
    }
    // One content delta per token of the answer, never the whole text again.
    assert_eq!(
        types["TEXT_MESSAGE_CONTENT"].as_u64(),
        Some(ag_ui_agent::ANSWER.split_inclusive(' ').count() as u64),
        "{types}"
    );
}

#[test]
fn the_readme_react_page_shows_the_run() {
    if !node_ready("the_readme_react_page_shows_the_run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 10);
    let seen = report(
        "react-page.mjs",
        node("react-page.mjs", &[&example.url]),
        None,
    );
    assert_eq!(seen["answer"], ag_ui_agent::ANSWER);
    assert_eq!(seen["connections"], 2, "cut once, resumed once: {seen}");
}

#[test]
fn resumed_clients_end_as_uninterrupted_ones() {
    if !node_ready("resumed_clients_end_as_uninterrupted_ones") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 20);
    let seen = report(
        "resume.mjs cuts",
        node("resume.mjs", &["cuts", &example.url]),
        None,
    );
    let cuts = seen["cuts"].as_array().expect("the cut runs");
    assert_eq!(cuts.len(), 5, "{seen}");
    for cut in cuts {
        assert_eq!(
            cut["reconnects"].as_u64(),
            Some(cut["cuts"].as_array().unwrap().len() as u64),
            "{cut}"
        );
    }
}

#[test]
fn a_client_resumes_from_a_restarted_server() {
    if !node_ready("a_client_resumes_from_a_restarted_server") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut example = Example::start(dir.path(), 0, 10);
    let mut child = node("resume.mjs", &["restart", &example.url]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The client holds its connection; the run is over on the server.
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "FINISHED" {
        let _ = child.kill();
        panic!("resume.mjs restart said {line:?} instead of FINISHED");
    }
    let port = example.port;
    example.kill();
    // Down for a while: the client's attempts meanwhile are refused, and it tries again.
    std::thread::sleep(Duration::from_millis(400));
    // The same port and log: the client's next attempts reach the restarted server.
    let restarted = Example::start(dir.path(), port, 10);
    assert_eq!(restarted.url, example.url);
    let seen = report("resume.mjs restart", child, Some(stdout));
    assert!(
        seen["restart"]["reconnects"].as_u64() >= Some(2),
        "the client's attempts while the server was down: {seen}"
    );
}

#[test]
fn a_run_whose_server_was_killed_mid_run_ends_with_run_error() {
    if !node_ready("a_run_whose_server_was_killed_mid_run_ends_with_run_error") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Slow steps: the run is far from over when the server is killed.
    let mut example = Example::start(dir.path(), 0, 100);
    let mut child = node("resume.mjs", &["killed", &example.url]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "HOLDING" {
        let _ = child.kill();
        panic!("resume.mjs killed said {line:?} instead of HOLDING");
    }
    let port = example.port;
    // The producer dies with the server, mid-run.
    example.kill();
    std::thread::sleep(Duration::from_millis(200));
    let _restarted = Example::start(dir.path(), port, 100);
    let seen = report("resume.mjs killed", child, Some(stdout));
    let killed = &seen["killed"];
    assert!(killed["reconnects"].as_u64() >= Some(1), "{seen}");
    // Killed mid-answer: part of the text had gone out, not all of it.
    let text = killed["text"].as_u64().unwrap_or_default();
    assert!(
        text > 0 && text < ag_ui_agent::ANSWER.len() as u64,
        "the run was not mid-answer when killed: {seen}"
    );
}

/// The validator's command: `CHORD_AG_UI_VALIDATE`, or the virtualenv scripts/test makes.
fn validator() -> PathBuf {
    std::env::var_os("CHORD_AG_UI_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/ag-ui-validate/bin/ag-ui-validate"))
}

#[test]
fn the_conformance_validator_finds_no_error() {
    let test = "the_conformance_validator_finds_no_error";
    let command = validator();
    if !command.exists() {
        skip::skip(
            test,
            &format!(
                "{} is missing (scripts/test makes it: python3 -m venv target/ag-ui-validate; \
                 pip install 'ag-ui-validate[transport]==0.4.0')",
                command.display()
            ),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 5);
    let out = Command::new(&command)
        .args([
            &example.url,
            "--features",
            "shared-state",
            "--json",
            "--timeout",
            "60",
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", command.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("ag-ui-validate's report is not JSON ({e}); it said:\n{stdout}\n{stderr}")
    });
    println!("ag-ui-validate: {}", report["summary"]);
    let diagnostics = report["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for d in &diagnostics {
        println!(
            "  {} {} event {} ({}): {}",
            d["severity"], d["rule"], d["eventIndex"], d["eventType"], d["message"]
        );
    }
    let errors: Vec<&Value> = diagnostics
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(
        errors.is_empty() && report["summary"]["errors"] == 0,
        "ag-ui-validate found errors:\n{}",
        serde_json::to_string_pretty(&errors).unwrap()
    );
    assert_eq!(
        report["internalErrors"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    // It saw a whole run, with shared state.
    assert!(report["eventCount"].as_u64() > Some(10), "{report}");
    assert_eq!(report["features"]["shared-state"], "exercised", "{report}");
    assert!(out.status.success(), "exit {}: {stderr}", out.status);
}
