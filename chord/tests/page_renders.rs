//! What a page re-renders per batch, counted in headless Chromium: the main example's page
//! (framework-free, each part subscribed to its slice) and the same lane rendered with React
//! and `chord-replica/react`, both following a lane served by chord's streams with a
//! 1,000-entry transcript, an answer streaming token by token and a 50 KB rolling tool
//! window (cut at the front, appended at the end).
//!
//! The producer writes a checkpoint every 5 batches, which a page that has the value never
//! receives. Asserted: render counts per part per batch (the transcript renders 0 times while
//! only the answer changes, the answer once per batch, checkpoints or not), never times. The page's text nodes take
//! the batch's appends and cuts (`Text.appendData` / `deleteData`, counted in the page)
//! instead of the whole string.
//!
//! A producer restart (a new writer on the same log, writing a base of the value it
//! recovered) re-renders no React component whose slice the base did not change, and calls
//! none of the replica's listeners of those slices.
//!
//! The React page is `js/test-react/lane-page.mjs`, bundled with the esbuild pinned in
//! `js/package.json` (`js/node_modules`, which `scripts/test` installs).
//!
//! `measure_renders_old_and_new_page` (ignored) is the measurement behind
//! `js/PERFORMANCE.md`: renders and main-thread time per batch at 50 tokens/s, old page and
//! new, and the JS heap after the run.
//!
//! Chromium is Debian's `chromium` (or `$CHROMIUM`); without it the test prints a `SKIPPED`
//! line, and fails under `CI=true`.

#![cfg(feature = "live")]

#[allow(dead_code)]
#[path = "../../demo/src/main.rs"]
mod agent_lane;
#[path = "support/browser.rs"]
mod browser;
#[path = "support/local.rs"]
mod local;
#[path = "support/skip.rs"]
mod skip;

use std::path::{Path as FsPath, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agent_lane::server::{lane, router, LaneServer};
use axum::http::header;
use axum::routing::get;
use browser::{Browser, PATIENCE};
use chord::store::{replay, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{Log, LogBuilder, Retention, Streams};
use chord::{path, Op, Path};
use serde_json::{json, Value};

/// Entries of the transcript in the base batch.
const TRANSCRIPT: usize = 1_000;
/// The tool's output window: 50 KB of lines, rolled by cutting the front and appending.
const WINDOW: usize = 50 * 1024;
/// Batches of each kind the test sends.
const EACH: usize = 12;

/// The React page: the bundle of `js/test-react/lane-page.mjs` in a root element, styled by
/// the example page's stylesheet so that both lay out the same lane alike.
fn react_page() -> String {
    let page = include_str!("../../demo/src/agent_lane/page.html");
    let style = &page[page.find("<style>").unwrap()..page.find("</style>").unwrap() + 8];
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>chord · agent lane (React)</title>\n{style}\n</head>\n\
         <body><div id=\"root\"></div><script type=\"module\" src=\"/lane-react.js\"></script></body></html>\n"
    )
}

fn repo() -> PathBuf {
    FsPath::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One line of tool output, numbered.
fn line(n: usize) -> String {
    format!("[{n:06}] compiling crate_{n} v0.1.0 (/build/crate_{n})\n")
}

/// The lane's first state: 1,000 transcript entries, an answer begun, a 50 KB window.
fn base_lane() -> (Value, usize) {
    let transcript: Vec<Value> = (0..TRANSCRIPT)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "text": format!("message {i}: {}", "lorem ipsum ".repeat(8))})
        })
        .collect();
    let mut window = String::new();
    let mut lines = 0;
    while window.len() < WINDOW {
        window.push_str(&line(lines));
        lines += 1;
    }
    let lane = json!({
        "status": "thinking",
        "streamingMessage": {"role": "assistant", "text": ""},
        "transcript": transcript,
        "tools": [{"name": "cargo build", "outputWindow": window, "exitCode": null, "details": {"step": 0}}],
        "usage": {"inputTokens": 1200, "outputTokens": 0},
    });
    (lane, lines)
}

/// Writes the lane's batches into the log, keeping the producer's value to compare with.
struct Producer {
    writer: LogWriter<Log<JsonlStore>>,
    value: Option<Value>,
    lines: usize,
    tokens: usize,
    batches: u64,
}

impl Producer {
    fn write(&mut self, ops: Vec<Op>) {
        chord::apply(&mut self.value, ops.clone()).unwrap();
        let value = self.value.clone().unwrap();
        self.writer
            .append_checkpointed(&lane(), &ops, || Ok(value))
            .unwrap();
        self.batches += 1;
    }

    fn base(&mut self) {
        let (lane, lines) = base_lane();
        self.lines = lines;
        self.write(vec![Op::Replace(lane)]);
    }

    /// The producer restarts: a new writer on the same log, the value recovered from the log,
    /// `change` made to it, and that value written as the new writer's first batch, a base
    /// (what a restarted producer's tracker flushes first). A reader that resumed gets it as
    /// any batch.
    fn restart(&mut self, change: impl FnOnce(&mut Value)) {
        let log = self.writer.store().clone();
        let mut recovered = replay(&log, &lane(), None).unwrap().value.unwrap();
        assert_eq!(
            Some(&recovered),
            self.value.as_ref(),
            "the log recovers the value"
        );
        change(&mut recovered);
        self.writer = LogWriter::new(log, Checkpoint::EveryBatches(5));
        self.write(vec![Op::Replace(recovered)]);
    }

    /// A token appended to the streaming answer.
    fn token(&mut self) -> Vec<Op> {
        self.tokens += 1;
        vec![Op::Append(
            path!["streamingMessage", "text"],
            format!(" tok{}", self.tokens),
        )]
    }

    /// The window rolled: its first line cut, a new line appended.
    fn roll(&mut self) -> Vec<Op> {
        let window = self.value.as_ref().unwrap()["tools"][0]["outputWindow"]
            .as_str()
            .unwrap();
        let first = window.find('\n').unwrap() + 1;
        let next = line(self.lines);
        self.lines += 1;
        vec![
            Op::Truncate(path!["tools", 0, "outputWindow"], first),
            Op::Append(path!["tools", 0, "outputWindow"], next),
        ]
    }

    /// The output token count.
    fn usage(&self) -> Vec<Op> {
        vec![Op::Set(
            path!["usage", "outputTokens"],
            json!(self.tokens as u64),
        )]
    }

    /// The streamed answer moves to the transcript; a new answer begins.
    fn finish_message(&mut self) -> Vec<Op> {
        let value = self.value.as_ref().unwrap();
        let message = value["streamingMessage"].clone();
        let len = value["transcript"].as_array().unwrap().len();
        vec![
            Op::Splice {
                path: Path::from(path!["transcript"]),
                index: len,
                remove: 0,
                items: vec![message],
            },
            Op::Set(
                path!["streamingMessage"],
                json!({"role": "assistant", "text": ""}),
            ),
        ]
    }
}

/// The lane's log and its server: the example's router (page, module, stream) plus the
/// React page and its bundle when given.
struct Served {
    runtime: tokio::runtime::Runtime,
    server: Option<LaneServer>,
    producer: Producer,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(extra: Vec<(&'static str, String, &'static str)>) -> Served {
        let runtime = local::runtime();
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("lane.jsonl"), Durability::EveryAppend).unwrap();
        // Every base kept while the test runs: a page that reconnects is never behind the
        // oldest kept one (which would make it start over from a base).
        let log = LogBuilder::new()
            .retention(Retention::Bases(1000))
            .build(store);
        // A checkpoint every 5 batches: a page that has the value never receives one, so it
        // has no base batch to read and compare with its value for it.
        let writer = LogWriter::new(log.clone(), Checkpoint::EveryBatches(5));
        let mut producer = Producer {
            writer,
            value: None,
            lines: 0,
            tokens: 0,
            batches: 0,
        };
        producer.base();
        let mut app = router(Streams::new(&log));
        for (route, body, content_type) in extra {
            app = app.route(
                route,
                get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) }),
            );
        }
        let server = runtime.block_on(LaneServer::start_app(0, app)).unwrap();
        Served {
            runtime,
            server: Some(server),
            producer,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.server.as_ref().unwrap().addr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = self.runtime.block_on(server.stop());
        }
    }
}

/// `js/test-react/lane-page.mjs` bundled for the browser with the pinned esbuild, or why not.
fn react_bundle() -> Result<String, String> {
    let js = repo().join("js");
    let esbuild = js.join("node_modules/.bin/esbuild");
    if !esbuild.exists() {
        return Err(format!(
            "{} is missing: run `npm install` in js/ (scripts/test does)",
            esbuild.display()
        ));
    }
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("lane-react.js");
    let status = Command::new(&esbuild)
        .current_dir(&js)
        .args([
            "test-react/lane-page.mjs",
            "--bundle",
            "--format=esm",
            "--log-level=warning",
            "--define:process.env.NODE_ENV=\"production\"",
        ])
        .arg(format!("--outfile={}", file.display()))
        .status()
        .map_err(|e| format!("running {}: {e}", esbuild.display()))?;
    if !status.success() {
        return Err(format!("esbuild failed ({status})"));
    }
    Ok(std::fs::read_to_string(file).unwrap())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a JSON value the page builds.
fn read(browser: &mut Browser, tab: &str, expression: &str) -> Value {
    let text = browser.evaluate(tab, &format!("JSON.stringify({expression})"));
    serde_json::from_str(text.as_str().unwrap_or("null")).unwrap_or(Value::Null)
}

/// Waits until the page has applied `batches` batches (and rendered what they changed).
fn wait_applied(browser: &mut Browser, tab: &str, batches: u64) {
    wait_for(&format!("the page to apply {batches} batches"), || {
        read(browser, tab, "window.__chord?.batches ?? 0") == json!(batches)
    });
    // React renders in a task after the batch: let it run before counting.
    browser.evaluate_async(tab, "new Promise((r) => setTimeout(() => r(true), 0))");
}

/// Each part's render count.
fn renders(browser: &mut Browser, tab: &str) -> Value {
    read(browser, tab, "window.__renders")
}

/// How many renders of each part between two readings.
fn delta(before: &Value, after: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (part, n) in after.as_object().unwrap() {
        let was = before[part].as_u64().unwrap_or(0);
        out.insert(part.clone(), json!(n.as_u64().unwrap() - was));
    }
    Value::Object(out)
}

/// Sends `n` batches made by `make`, one at a time, each once the page applied the last; the
/// render counts of the parts over those batches.
fn phase(
    served: &mut Served,
    browser: &mut Browser,
    tab: &str,
    n: usize,
    mut make: impl FnMut(&mut Producer) -> Vec<Op>,
) -> Value {
    let before = renders(browser, tab);
    for _ in 0..n {
        let ops = make(&mut served.producer);
        served.producer.write(ops);
        wait_applied(browser, tab, served.producer.batches);
    }
    delta(&before, &renders(browser, tab))
}

/// Counts of the parts, from a JSON object of them, with zeros for the parts not named.
fn expect(parts: &[&str], counts: &[(&str, u64)]) -> Value {
    let mut out = serde_json::Map::new();
    for part in parts {
        let n = counts
            .iter()
            .find(|(p, _)| p == part)
            .map_or(0, |(_, n)| *n);
        out.insert((*part).into(), json!(n));
    }
    Value::Object(out)
}

/// The text the page shows for the answer and the tool window, and the transcript's rows.
const SHOWN: &str = r#"({
    answer: document.querySelector('#streaming .text')?.textContent ?? null,
    window: document.querySelector('.output')?.textContent ?? null,
    rows: document.getElementById('transcript')?.children.length ?? null,
    firstRowKept: document.getElementById('transcript')?.firstElementChild?.dataset.mark === 'kept',
})"#;

#[test]
fn the_page_renders_only_the_parts_a_batch_changed() {
    let Some(mut browser) = Browser::launch_or_skip("page_renders") else {
        return;
    };
    let mut served = Served::start(Vec::new());
    let tab = browser.open(&served.url("/"));
    wait_applied(&mut browser, &tab, 1);
    wait_for("the transcript", || {
        read(&mut browser, &tab, SHOWN)["rows"] == json!(TRANSCRIPT)
    });
    // The first row is marked: a transcript rebuilt would lose the mark. Text edits are
    // counted: the page should append and cut text nodes, not set them whole.
    browser.evaluate(
        &tab,
        r#"(() => {
            document.getElementById('transcript').firstElementChild.dataset.mark = 'kept';
            window.__edits = { appendData: 0, deleteData: 0 };
            for (const name of ['appendData', 'deleteData']) {
                const original = Text.prototype[name];
                Text.prototype[name] = function (...args) { window.__edits[name] += 1; return original.apply(this, args); };
            }
            return true;
        })()"#,
    );
    let parts = ["status", "usage", "transcript", "answer", "tools", "state"];
    let per_batch_before = read(&mut browser, &tab, "window.__batches.length")
        .as_u64()
        .unwrap() as usize;

    // Only the answer changes: the answer renders once per batch, nothing else.
    let answer = phase(&mut served, &mut browser, &tab, EACH, Producer::token);
    // Only the tool window rolls: the tools render once per batch.
    let tools = phase(&mut served, &mut browser, &tab, EACH, Producer::roll);
    // A token and the usage.
    let usage = phase(&mut served, &mut browser, &tab, EACH, |p| {
        let mut ops = p.token();
        ops.extend(p.usage());
        ops
    });
    let edits = read(&mut browser, &tab, "window.__edits");
    // The answer joins the transcript: the transcript appends one row.
    let finish = phase(&mut served, &mut browser, &tab, 1, Producer::finish_message);

    let batches: Vec<Value> = read(&mut browser, &tab, "window.__batches")
        .as_array()
        .unwrap()[per_batch_before..]
        .to_vec();
    println!("renders per phase: answer {answer}, tools {tools}, usage {usage}, finish {finish}");
    let one = |part: &str| json!({ part: 1 });
    for (i, b) in batches.iter().enumerate() {
        let want = match i / EACH {
            0 => one("answer"),
            1 => one("tools"),
            2 => json!({"answer": 1, "usage": 1}),
            _ => json!({"transcript": 1, "answer": 1}),
        };
        assert_eq!(b, &want, "the parts batch {i} rendered");
    }
    assert_eq!(batches.len(), 3 * EACH + 1);
    // The state pane is not a part that renders per batch (it is rewritten at most every
    // 250 ms), so the totals leave it out.
    let without_state = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("state");
        v
    };
    let parts = &parts[..5];
    let each = EACH as u64;
    assert_eq!(
        without_state(&answer),
        expect(parts, &[("answer", each)]),
        "the transcript renders 0 times while only the answer changes"
    );
    assert_eq!(without_state(&tools), expect(parts, &[("tools", each)]));
    assert_eq!(
        without_state(&usage),
        expect(parts, &[("answer", each), ("usage", each)])
    );
    assert_eq!(
        without_state(&finish),
        expect(parts, &[("transcript", 1), ("answer", 1)])
    );
    // Every token was appended to the answer's text node, and every roll cut and appended
    // the window's: 2 * EACH appends of tokens, EACH of lines, EACH cuts.
    assert_eq!(
        edits,
        json!({"appendData": 3 * EACH, "deleteData": EACH}),
        "the page edits its text nodes by the batch's ops"
    );

    let expected = served.producer.value.clone().unwrap();
    let shown = read(&mut browser, &tab, SHOWN);
    assert_eq!(shown["answer"], expected["streamingMessage"]["text"]);
    assert_eq!(shown["window"], expected["tools"][0]["outputWindow"]);
    assert_eq!(shown["rows"], json!(TRANSCRIPT + 1));
    assert_eq!(
        shown["firstRowKept"], true,
        "the transcript was appended to, not rebuilt"
    );
    wait_for("the state pane", || {
        let text = read(
            &mut browser,
            &tab,
            "document.getElementById('state').textContent",
        );
        serde_json::from_str::<Value>(text.as_str().unwrap_or("")).ok() == Some(expected.clone())
    });
    let replica = read(&mut browser, &tab, "window.__replica.value");
    assert_eq!(replica, expected, "the page's replica equals the producer");
    if let Ok(path) = std::env::var("CHORD_PAGE_SCREENSHOT") {
        browser.screenshot(&tab, &path);
        println!("screenshot: {path}");
    }
    browser.close();
}

/// The React page following a served lane, its base applied and the stream live; `None`
/// (the test skipped) without Chromium or the bundler.
fn react_lane(test: &str) -> Option<(Browser, Served, String)> {
    let mut browser = Browser::launch_or_skip(test)?;
    let bundle = match react_bundle() {
        Ok(bundle) => bundle,
        Err(why) => {
            skip::skip(test, &why);
            return None;
        }
    };
    let served = Served::start(vec![
        ("/react.html", react_page(), "text/html; charset=utf-8"),
        ("/lane-react.js", bundle, "text/javascript; charset=utf-8"),
    ]);
    let tab = browser.open(&served.url("/react.html"));
    wait_applied(&mut browser, &tab, 1);
    wait_for("the transcript", || {
        read(&mut browser, &tab, SHOWN)["rows"] == json!(TRANSCRIPT)
    });
    wait_for("the stream to be live", || {
        read(&mut browser, &tab, "window.__chord.live") == json!(true)
    });
    Some((browser, served, tab))
}

#[test]
fn the_react_page_renders_only_the_components_a_batch_changed() {
    let Some((mut browser, mut served, tab)) = react_lane("page_renders (React)") else {
        return;
    };
    let parts = [
        "status",
        "usage",
        "connection",
        "transcript",
        "answer",
        "tools",
    ];
    let each = EACH as u64;
    let answer = phase(&mut served, &mut browser, &tab, EACH, Producer::token);
    let tools = phase(&mut served, &mut browser, &tab, EACH, Producer::roll);
    let usage = phase(&mut served, &mut browser, &tab, EACH, |p| {
        let mut ops = p.token();
        ops.extend(p.usage());
        ops
    });
    let finish = phase(&mut served, &mut browser, &tab, 1, Producer::finish_message);
    println!(
        "React renders per phase: answer {answer}, tools {tools}, usage {usage}, finish {finish}"
    );
    assert_eq!(
        answer,
        expect(&parts, &[("answer", each)]),
        "the transcript renders 0 times while only the answer changes"
    );
    assert_eq!(tools, expect(&parts, &[("tools", each)]));
    assert_eq!(usage, expect(&parts, &[("answer", each), ("usage", each)]));
    assert_eq!(finish, expect(&parts, &[("transcript", 1), ("answer", 1)]));

    let expected = served.producer.value.clone().unwrap();
    let shown = read(&mut browser, &tab, SHOWN);
    assert_eq!(shown["answer"], expected["streamingMessage"]["text"]);
    assert_eq!(shown["window"], expected["tools"][0]["outputWindow"]);
    assert_eq!(shown["rows"], json!(TRANSCRIPT + 1));
    let value = read(&mut browser, &tab, "window.__store.getValue()");
    assert_eq!(value, expected, "the store's value equals the producer");
    if let Ok(path) = std::env::var("CHORD_REACT_SCREENSHOT") {
        browser.screenshot(&tab, &path);
        println!("screenshot: {path}");
    }
    browser.close();
}

/// A producer that restarts writes a base batch of the value it recovered from the log, which
/// the page, resumed at the tail, receives: the components whose slice it did not change do
/// not render, and the replica's listeners of those slices are not called.
#[test]
fn a_producer_restart_re_renders_no_unchanged_component() {
    let Some((mut browser, mut served, tab)) = react_lane("page_renders (React, restart)") else {
        return;
    };
    let parts = [
        "status",
        "usage",
        "connection",
        "transcript",
        "answer",
        "tools",
    ];
    let slices = ["status", "usage", "transcript", "answer", "tools"];
    phase(&mut served, &mut browser, &tab, 3, Producer::token);
    let batches = served.producer.batches;

    // Restarted with the value it had: nothing renders, no listener is called.
    let rendered = renders(&mut browser, &tab);
    let listened = read(&mut browser, &tab, "window.__listened");
    served.producer.restart(|_| {});
    wait_applied(&mut browser, &tab, served.producer.batches);
    let restart = delta(&rendered, &renders(&mut browser, &tab));
    let heard = delta(&listened, &read(&mut browser, &tab, "window.__listened"));
    println!("a restart with the same value: renders {restart}, listeners {heard}");
    assert_eq!(
        restart,
        expect(&parts, &[]),
        "a restart re-renders 0 unchanged components"
    );
    assert_eq!(
        heard,
        expect(&slices, &[]),
        "a restart calls 0 listeners of unchanged parts"
    );

    // Restarted with one part changed: that part's component renders, and its listener runs.
    let rendered = renders(&mut browser, &tab);
    let listened = read(&mut browser, &tab, "window.__listened");
    served
        .producer
        .restart(|lane| lane["status"] = json!("resumed"));
    wait_applied(&mut browser, &tab, served.producer.batches);
    let restart = delta(&rendered, &renders(&mut browser, &tab));
    let heard = delta(&listened, &read(&mut browser, &tab, "window.__listened"));
    println!("a restart with the status changed: renders {restart}, listeners {heard}");
    assert_eq!(restart, expect(&parts, &[("status", 1)]));
    assert_eq!(heard, expect(&slices, &[("status", 1)]));

    // The restarted producer's batches go on applying, one component each.
    let answer = phase(&mut served, &mut browser, &tab, 3, Producer::token);
    assert_eq!(answer, expect(&parts, &[("answer", 3)]));
    assert_eq!(served.producer.batches, batches + 5);
    let value = read(&mut browser, &tab, "window.__store.getValue()");
    assert_eq!(
        Some(value),
        served.producer.value.clone(),
        "the store's value equals the producer"
    );
    assert_eq!(
        read(
            &mut browser,
            &tab,
            "window.__store.getStatus().stats.starts"
        ),
        json!(1),
        "the page resumed through the restarts"
    );
    browser.close();
}

/// The React binding's own tests (`js/test-react/`: render counts with react-test-renderer,
/// server rendering, the types), run by Node as part of the Rust suite.
#[test]
fn the_react_binding_passes_its_node_tests() {
    let js = repo().join("js");
    if !js.join("node_modules/react").exists() {
        let why = "js/node_modules has no react: run `npm install` in js/ (scripts/test does)";
        skip::skip("the React binding's node tests", why);
        return;
    }
    let out = Command::new("node")
        .current_dir(&js)
        .args(["--test", "test-react/"])
        .output()
        .expect("running node (Node 18 or later)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test js/test-react/ failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("# fail 0"), "{stdout}");
}

/// The page before it subscribed: it rebuilt every part from the whole value on every batch.
/// Read from the repository's history for the measurement only.
const OLD_PAGE_COMMIT: &str = "9114261";

/// A renderer metric of the page's tab (`Performance.getMetrics`): seconds or bytes.
fn metric(browser: &mut Browser, tab: &str, name: &str) -> f64 {
    let metrics = browser.call(Some(tab), "Performance.getMetrics", json!({}));
    metrics["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no metric {name}: {metrics}"))
}

/// The JS heap in use after a full collection, in bytes.
fn heap_after_gc(browser: &mut Browser, tab: &str) -> f64 {
    browser.call(Some(tab), "HeapProfiler.collectGarbage", json!({}));
    browser.call(Some(tab), "Runtime.getHeapUsage", json!({}))["usedSize"]
        .as_f64()
        .unwrap()
}

/// Not a test: the figures of `js/PERFORMANCE.md`. For each page (the old whole-value page,
/// the new subscribed one, the React one), a fresh browser follows a fresh lane while the
/// producer writes 50 batches a second for `CHORD_MEASURE_SECS` seconds (default 60): each a
/// token appended to the answer and the usage set, every 5th also the tool window rolled,
/// every 250th the answer moved into the transcript. Prints renders per batch of each part,
/// the renderer's main-thread time per batch (`Performance.getMetrics` TaskDuration, which
/// includes the SSE parsing, the replica, the DOM, style and layout) and the JS heap after a
/// full collection, at the start and the end.
///
/// `cargo test -p chord-delta --all-features --test page_renders -- --ignored --nocapture measure`
#[test]
#[ignore = "a measurement, not a test: js/PERFORMANCE.md"]
fn measure_renders_old_and_new_page() {
    let secs: u64 = std::env::var("CHORD_MEASURE_SECS")
        .ok()
        .map_or(60, |s| s.parse().expect("CHORD_MEASURE_SECS: seconds"));
    let old = Command::new("git")
        .current_dir(repo())
        .args([
            "show",
            &format!("{OLD_PAGE_COMMIT}:chord/examples/agent_lane/page.html"),
        ])
        .output()
        .unwrap();
    assert!(old.status.success(), "git show: {old:?}");
    let old = String::from_utf8(old.stdout).unwrap();
    let bundle = react_bundle().unwrap();
    let pages = ["/old.html", "/", "/react.html"];
    let only = std::env::var("CHORD_MEASURE_PAGES").ok();
    for page in pages {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|p| p == page))
        {
            continue;
        }
        let mut served = Served::start(vec![
            ("/old.html", old.clone(), "text/html; charset=utf-8"),
            ("/react.html", react_page(), "text/html; charset=utf-8"),
            (
                "/lane-react.js",
                bundle.clone(),
                "text/javascript; charset=utf-8",
            ),
        ]);
        let mut browser = Browser::launch();
        let tab = browser.open(&served.url(page));
        browser.call(Some(&tab), "Performance.enable", json!({}));
        wait_applied(&mut browser, &tab, 1);
        wait_for("the transcript", || {
            read(&mut browser, &tab, SHOWN)["rows"] == json!(TRANSCRIPT)
        });
        std::thread::sleep(Duration::from_millis(500));
        let heap_start = heap_after_gc(&mut browser, &tab);
        let task_start = metric(&mut browser, &tab, "TaskDuration");
        let layout_start = metric(&mut browser, &tab, "LayoutDuration")
            + metric(&mut browser, &tab, "RecalcStyleDuration");
        let renders_start = renders(&mut browser, &tab);
        let first = served.producer.batches;
        let started = Instant::now();
        let mut next = started;
        let mut n = 0u64;
        while started.elapsed() < Duration::from_secs(secs) {
            let p = &mut served.producer;
            let mut ops = p.token();
            ops.extend(p.usage());
            if n % 5 == 4 {
                ops.extend(p.roll());
            }
            if n % 250 == 249 {
                ops.extend(p.finish_message());
            }
            p.write(ops);
            n += 1;
            next += Duration::from_millis(20);
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let wrote = served.producer.batches;
        let caught_up = Instant::now();
        wait_applied(&mut browser, &tab, wrote);
        let lag = caught_up.elapsed();
        let batches = (wrote - first) as f64;
        let task = metric(&mut browser, &tab, "TaskDuration") - task_start;
        let layout = metric(&mut browser, &tab, "LayoutDuration")
            + metric(&mut browser, &tab, "RecalcStyleDuration")
            - layout_start;
        let heap_end = heap_after_gc(&mut browser, &tab);
        let per_part = if page == "/old.html" {
            "every part, the whole transcript rebuilt (render(lane) on every batch)".to_owned()
        } else {
            let d = delta(&renders_start, &renders(&mut browser, &tab));
            d.as_object()
                .unwrap()
                .iter()
                .map(|(part, k)| format!("{part} {:.3}", k.as_u64().unwrap() as f64 / batches))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "MEASURE page {page}: {secs} s, {batches} batches ({:.1}/s), caught up {lag:?} after the last\n  \
             renders per batch: {per_part}\n  \
             main thread per batch: task {:.3} ms (style+layout {:.3} ms); busy {:.1}% of the run and catch-up\n  \
             JS heap after GC: {:.2} MiB at the start, {:.2} MiB at the end",
            batches / secs as f64,
            task * 1e3 / batches,
            layout * 1e3 / batches,
            task * 100.0 / (secs as f64 + lag.as_secs_f64()),
            heap_start / 1048576.0,
            heap_end / 1048576.0,
        );
        browser.close();
    }
}
