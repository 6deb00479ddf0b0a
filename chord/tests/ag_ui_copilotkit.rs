//! chord's AG-UI example agent (`chord/examples/ag_ui_agent.rs`) rendered by a CopilotKit page
//! through CopilotKit's runtime, in headless Chromium:
//!
//! - the runtime is `@copilotkit/runtime` 1.75's `CopilotRuntime`, served by its node HTTP
//!   endpoint, with one agent: `chord-replica/ag-ui`'s `ResumableHttpAgent` on the example, over
//!   the `@ag-ui/client` CopilotKit pins (0.0.59), through a proxy that cuts the connection
//!   once mid-run (`js/test-copilotkit/server.mjs`);
//! - the page is `@copilotkit/react-core` 1.74's `CopilotKit` provider on that runtime, a run
//!   started with `copilotkit.runAgent({ agent })` and the state `useCoAgent` gives, rendered
//!   (`js/test-copilotkit/page.jsx`, bundled with esbuild when the server starts).
//!
//! Asserted: the page ends showing exactly the state the example's server holds for the run
//! (`GET /runs/{threadId}/{runId}/state`, the ids read from what the runtime sent), and the
//! answer; the runtime's agent resumed the cut run once, with `Last-Event-ID`, on the same run.
//!
//! The example runs as this test binary started again (the ignored `child_example`). Node.js,
//! js/test-copilotkit/node_modules (`scripts/test` installs them, with a copy of js/ as
//! `chord-replica`) and Chromium (Debian's `chromium`, or `$CHROMIUM`) are needed: without
//! them the test prints `SKIPPED ...`, and under `CI=true` fails.

#[allow(dead_code)]
#[path = "../examples/ag_ui_agent.rs"]
mod ag_ui_agent;
#[path = "support/browser.rs"]
mod browser;
#[path = "support/ag_ui_example.rs"]
mod example;
#[path = "support/skip.rs"]
mod skip;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use browser::Browser;
use example::{get, Example, PATIENCE};
use serde_json::Value;

/// Bytes of chord's answer the proxy passes to the runtime before it cuts the connection:
/// past the response's headers and first events, well before the run's end.
const CUT: usize = 2500;

/// The example's process when `CHORD_AG_UI_EXAMPLE` is set (it does nothing otherwise).
#[test]
#[ignore = "the example server of the test below, started by it"]
fn child_example() {
    example::child_main(ag_ui_agent::run);
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` with its stdout piped; returns it and the first stdout line `pick`
/// accepts (bounded by [`PATIENCE`]). Later lines are printed.
fn start(mut command: Command, what: &str, pick: fn(&str) -> Option<String>) -> (Killed, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let child = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            match pick(&line) {
                Some(found) => {
                    let _ = tx.send(found);
                }
                None => println!("{line}"),
            }
        }
    });
    let found = rx
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{what} printed no URL (its output is above)"));
    (child, found)
}

/// `node js/test-copilotkit/server.mjs`: the runtime and the page, in front of `chord`; its
/// URL.
fn copilotkit_server(chord: &str) -> (Killed, String) {
    let mut command = Command::new("node");
    command
        .arg("js/test-copilotkit/server.mjs")
        .args([chord, &CUT.to_string()])
        .current_dir(root())
        // Nothing leaves this machine: CopilotKit's telemetry is off.
        .env("COPILOTKIT_TELEMETRY_DISABLED", "true")
        .env("DO_NOT_TRACK", "1")
        .stderr(Stdio::inherit());
    start(command, "js/test-copilotkit/server.mjs", |line| {
        let value: Value = serde_json::from_str(line).ok()?;
        value["url"].as_str().map(str::to_owned)
    })
}

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of js/ that `chord-replica`'s copy in js/test-copilotkit/node_modules must hold
/// as they are: the ones the runtime runs.
const COPIED: &[&str] = &["package.json", "ag-ui.mjs", "chord-replica.mjs"];

/// Whether Node.js and js/test-copilotkit's install, with an up-to-date copy of js/, are
/// there; otherwise skips `test`.
fn node_ready(test: &str) -> bool {
    if Command::new("node").arg("--version").output().is_err() {
        skip::skip(test, "`node` (Node.js 20 or later) is not on PATH");
        return false;
    }
    let modules = root().join("js/test-copilotkit/node_modules");
    for package in ["@copilotkit/runtime", "@copilotkit/react-core", "esbuild"] {
        if !modules.join(package).exists() {
            skip::skip(
                test,
                &format!(
                    "js/test-copilotkit/node_modules/{package} is missing (scripts/test installs it)"
                ),
            );
            return false;
        }
    }
    // chord-replica is installed as a copy (js/test-copilotkit/.npmrc): one older than js/
    // would test old code.
    let mut files: Vec<String> = COPIED.iter().map(|f| (*f).to_owned()).collect();
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
                    "js/test-copilotkit/node_modules/chord-replica/{file} differs from js/{file} \
                     (scripts/test installs js/ there again)"
                ),
            );
            return false;
        }
    }
    true
}

/// `GET url` answered 200 with JSON: the value.
fn get_json(url: &str) -> Value {
    let (status, body) = get(url);
    assert_eq!(status, 200, "GET {url}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {body}"))
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Evaluates `expression` in the page until it is true (bounded by [`PATIENCE`]).
fn wait_for(browser: &mut Browser, tab: &str, what: &str, expression: &str) {
    let start = Instant::now();
    while browser.evaluate(tab, expression) != Value::Bool(true) {
        let status = browser.evaluate(tab, "document.querySelector('#status')?.textContent");
        assert!(
            start.elapsed() < PATIENCE,
            "gave up waiting for {what}; the page's status: {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The text of the page's element `selector`.
fn text(browser: &mut Browser, tab: &str, selector: &str) -> String {
    let value = browser.evaluate(
        tab,
        &format!("document.querySelector('{selector}')?.textContent ?? null"),
    );
    value
        .as_str()
        .unwrap_or_else(|| panic!("the page has no {selector}"))
        .to_owned()
}

#[test]
fn a_copilotkit_page_shows_chords_state_through_the_runtime() {
    let test = "a_copilotkit_page_shows_chords_state_through_the_runtime";
    if !node_ready(test) {
        return;
    }
    let Some(mut browser) = Browser::launch_or_skip(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let example = Example::start(dir.path(), 0, 20);
    let chord = example.url.clone();
    let (_server, page) = copilotkit_server(&chord);

    let tab = browser.open(&page);
    // The button is enabled once CopilotKit has the runtime's agents.
    wait_for(
        &mut browser,
        &tab,
        "the page to reach the runtime",
        "document.querySelector('#ask')?.disabled === false",
    );
    browser.evaluate(&tab, "document.querySelector('#ask').click(), true");
    wait_for(
        &mut browser,
        &tab,
        "the run to end",
        "['done', 'error'].some((s) => document.querySelector('#status')?.textContent.startsWith(s))",
    );
    assert_eq!(text(&mut browser, &tab, "#status"), "done");

    // What the runtime's agent sent to chord: the run, then the same run again after the
    // cut, with the id of the last event it had.
    let report = get_json(&format!("{page}report"));
    println!("server.mjs report: {report}");
    let requests = report["requests"].as_array().expect("the requests");
    assert_eq!(requests.len(), 2, "one request, one resume: {report}");
    let (thread_id, run_id) = (
        requests[0]["threadId"].as_str().unwrap(),
        requests[0]["runId"].as_str().unwrap(),
    );
    assert_eq!(requests[0]["lastEventId"], "", "{report}");
    assert_eq!(requests[1]["threadId"], thread_id, "{report}");
    assert_eq!(requests[1]["runId"], run_id, "{report}");
    assert_ne!(requests[1]["lastEventId"], "", "{report}");
    assert_eq!(report["connections"][0]["passed"], CUT, "{report}");

    // The page shows the state chord's server holds for the run, exactly.
    let expected = get_json(&format!(
        "{chord}runs/{}/{}/state",
        segment(thread_id),
        segment(run_id)
    ));
    // The state compared is the whole run's: the plan done, both tools' output.
    assert_eq!(expected["question"], "What does chord do for AG-UI?");
    let plan = expected["plan"].as_array().expect("the plan");
    assert_eq!(plan.len(), 3, "{expected}");
    assert!(plan.iter().all(|s| s["status"] == "done"), "{expected}");
    assert_eq!(expected["tools"][1]["output"], "http://127.0.0.1:8788/\n");
    let shown: Value = serde_json::from_str(&text(&mut browser, &tab, "#state"))
        .expect("the page's #state is JSON");
    assert_eq!(shown, expected, "the page's state against chord's");
    // Its plan as a user sees it.
    let steps: Vec<String> = plan
        .iter()
        .map(|s| {
            format!(
                "{}: {}",
                s["title"].as_str().unwrap(),
                s["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(text(&mut browser, &tab, "#plan"), steps.concat());
    // And the answer, as CopilotKit assembled the text message.
    assert_eq!(text(&mut browser, &tab, "#answer"), ag_ui_agent::ANSWER);
    browser.close();
}
