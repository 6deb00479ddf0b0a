//! End to end: the main example's server on loopback behind a proxy that the test cuts, its
//! page in headless Chromium, the agent running; the page follows the lane's Durable Stream,
//! resumes from its offset after every cut without a base batch, and ends equal to the
//! server's state.
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
//! messages ending in NUL on file descriptors 3 and 4), which needs no WebSocket client and
//! no port. Set `CHORD_E2E_SCREENSHOT=/path/shot.png` to keep a screenshot of the page.
//!
//! Another test pastes the browser quickstart of `js/README.md` into a page served from a
//! second origin (another port), as a reader pastes it into their own app's page, and checks
//! that it shows the producer's state; two more check the demo's flags and that its temporary
//! log is removed.

#[allow(dead_code)]
#[path = "../../demo/src/main.rs"]
mod agent_lane;
#[path = "support/browser.rs"]
mod browser;
#[path = "support/local.rs"]
mod local;
#[path = "support/markdown.rs"]
mod markdown;
#[path = "support/skip.rs"]
mod skip;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_lane::server::{lane, LaneServer};
use agent_lane::{run_agent, Args, LogFile, Output, Stream};
use browser::{Browser, PATIENCE};
use chord::store::{recover, ReadOptions, Store, BASE};
use chord::streams::Streams;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the page shows, read in the page.
const READ_PAGE: &str = r#"JSON.stringify({
    value: window.__replica ? window.__replica.value ?? null : null,
    chord: window.__chord ?? null,
    status: document.getElementById('status')?.textContent ?? null,
    connection: document.getElementById('connection')?.textContent ?? null,
    transcript: document.getElementById('transcript')?.textContent ?? null,
    streaming: document.getElementById('streaming')?.hidden ?? null,
    output: [...document.querySelectorAll('.output')].map((e) => e.textContent),
    state: document.getElementById('state')?.textContent ?? null,
})"#;

/// A TCP proxy whose open connections the test can cut, all at once.
#[derive(Clone, Default)]
struct Proxy {
    open: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> (Proxy, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let proxy = Proxy::default();
        let open = Arc::clone(&proxy.open);
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                open.lock().unwrap().push(task);
            }
        });
        (proxy, addr)
    }

    /// Closes every connection open now (aborting a copy drops both sockets).
    fn cut(&self) {
        for task in self.open.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[test]
fn the_page_follows_the_lane_and_resumes_after_cuts_without_a_base_batch() {
    let runtime = local::runtime();
    // The lane is in the log before the page opens.
    let log_file = LogFile::new(None).unwrap();
    let mut s = Stream::new(Output::Quiet, log_file).unwrap();
    s.serve(Duration::from_millis(4)).unwrap();
    let log = s.log();
    let server = runtime
        .block_on(LaneServer::start(0, Streams::new(&log)))
        .unwrap();
    let (proxy, proxy_addr) = runtime.block_on(Proxy::start(server.addr));

    let mut browser = Browser::launch();
    let page = browser.open(&format!("http://{proxy_addr}/"));
    let read = |browser: &mut Browser| -> Value {
        let text = browser.evaluate(&page, READ_PAGE);
        serde_json::from_str(text.as_str().unwrap_or("null")).unwrap()
    };
    wait_for("the page to start", || {
        read(&mut browser)["chord"]["starts"] == 1
    });

    // The agent's turn, about 150 batches, while the page follows; the connection is cut
    // three times mid-stream, each time once the page has resumed and received a batch since.
    let agent = std::thread::spawn(move || {
        run_agent(&mut s).unwrap();
        s
    });
    for cut in 1..=3u64 {
        let batches = read(&mut browser)["chord"]["batches"].as_u64().unwrap();
        wait_for("a batch since the last cut", || {
            let chord = read(&mut browser)["chord"].clone();
            chord["live"] == true
                && (chord["batches"].as_u64().unwrap() > batches || agent.is_finished())
        });
        proxy.cut();
        wait_for("the page to resume", || {
            read(&mut browser)["chord"]["resumes"].as_u64().unwrap() >= cut
        });
    }
    let s = agent.join().unwrap();
    let expected = s.state();
    assert_eq!(
        recover(&log, &lane()).unwrap(),
        Some(expected.clone()),
        "the log holds the producer's state"
    );

    let shown = wait_for_page(&mut browser, &page, &expected);
    let chord = &shown["chord"];
    println!("page after the turn: {chord}");
    assert_eq!(chord["errors"], 0, "no batch failed in the page");
    assert_eq!(chord["starts"], 1, "one start from a base batch");
    assert!(chord["resumes"].as_u64().unwrap() >= 3, "{chord}");
    let connections = chord["connections"].as_array().unwrap();
    let first = &connections[0];
    assert_eq!(first["fresh"], true, "{first}");
    assert_eq!(first["firstBase"], true, "{first}");
    for resumed in &connections[1..] {
        assert_eq!(
            resumed["fresh"], false,
            "resumed from its offset: {resumed}"
        );
    }
    // The only base batches the page received are the first and the producer's checkpoints
    // (the log's other base records): none was sent because of a cut, every resume went on
    // with what it had missed.
    let records = log
        .read_list(&lane(), &ReadOptions::asc().limit(100_000))
        .unwrap()
        .records;
    let logged_bases = records
        .iter()
        .filter(|r| r.tag.as_deref() == Some(BASE))
        .count();
    let received: u64 = connections
        .iter()
        .map(|c| c["bases"].as_u64().unwrap())
        .sum();
    assert_eq!(received, logged_bases as u64, "{chord}");
    let bytes: u64 = connections
        .iter()
        .map(|c| c["bytes"].as_u64().unwrap())
        .sum();
    let logged: usize = records.iter().map(|r| r.batch.len()).sum();
    println!("page received {bytes} bytes of events for {logged} bytes of batches in the log");
    assert!(
        chord["batches"].as_u64().unwrap() > 1,
        "the page followed deltas, not only a base batch: {chord}"
    );
    // What a person sees: status, transcript, tool output window, the streaming slot emptied.
    assert_eq!(shown["status"], "done");
    assert_eq!(shown["connection"], "live");
    let transcript = shown["transcript"].as_str().unwrap();
    assert!(transcript.contains("Why does the build fail on CI but not locally?"));
    assert!(transcript.contains("compare the compiler output."));
    assert_eq!(shown["streaming"], true, "no message is streaming any more");
    let output = shown["output"][0].as_str().unwrap();
    assert!(
        output.ends_with("error: linker `cc` not found\n"),
        "{output}"
    );
    let state: Value = serde_json::from_str(shown["state"].as_str().unwrap()).unwrap();
    assert_eq!(state, expected, "the rendered state equals the server's");
    if let Ok(path) = std::env::var("CHORD_E2E_SCREENSHOT") {
        browser.screenshot(&page, &path);
        println!("screenshot: {path}");
    }

    browser.close();
    runtime.block_on(server.stop()).unwrap();
}

/// The demo's flags: `--help` lists every one, an unknown one is an error with the usage.
#[test]
fn the_demo_lists_its_flags_and_refuses_unknown_ones() {
    let parse = |args: &[&str]| Args::parse(args.iter().map(|a| a.to_string()));
    let (help, code) = parse(&["--help"]).unwrap_err();
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    for flag in [
        "--quiet",
        "--wire",
        "--log PATH",
        "--serve",
        "--port N",
        "--help",
    ] {
        assert!(help.contains(flag), "--help does not list {flag}:\n{help}");
    }
    let (wrong, code) = parse(&["--verbose"]).unwrap_err();
    assert_eq!(code, std::process::ExitCode::from(2));
    assert!(
        wrong.starts_with("agent_lane: unknown argument `--verbose`\n") && wrong.ends_with(&help),
        "{wrong}"
    );
    let (wrong, _) = parse(&["--port", "http"]).unwrap_err();
    assert!(
        wrong.starts_with("agent_lane: --port http: invalid digit"),
        "{wrong}"
    );
    let (wrong, _) = parse(&["--log"]).unwrap_err();
    assert!(
        wrong.starts_with("agent_lane: --log needs a path"),
        "{wrong}"
    );

    let args = parse(&["--log", "lane.jsonl", "--wire", "--serve", "--port", "8080"]).unwrap();
    assert_eq!(args.output, Output::Wire);
    assert_eq!(
        args.log.as_deref(),
        Some(std::path::Path::new("lane.jsonl"))
    );
    assert!(args.serve);
    assert_eq!(args.port, Some(8080));
    let args = parse(&[]).unwrap();
    assert_eq!(args.output, Output::Readable);
    assert!(args.log.is_none() && !args.serve && args.port.is_none());
}

/// A temporary log is gone once its `LogFile` is dropped; a named one stays.
#[test]
fn the_demo_removes_its_temporary_log() {
    let temporary = LogFile::new(None).unwrap();
    let path = temporary.path().to_path_buf();
    let mut s = Stream::new(Output::Quiet, temporary).unwrap();
    run_agent(&mut s).unwrap();
    assert!(path.exists());
    drop(s);
    assert!(!path.exists(), "{} is left behind", path.display());

    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("lane.jsonl");
    let mut s = Stream::new(Output::Quiet, LogFile::new(Some(named.clone())).unwrap()).unwrap();
    run_agent(&mut s).unwrap();
    drop(s);
    assert!(
        std::fs::metadata(&named).unwrap().len() > 0,
        "the named log is kept"
    );
}

/// The address the README's browser quickstart uses (the demo's), which the test replaces with
/// its server's.
const README_ADDRESS: &str = "http://127.0.0.1:8080";

/// The browser quickstart of `js/README.md`, as a reader pastes it into a page of their own
/// app: the page is served from a second origin (another port), so its module and stream are
/// cross-origin, and it shows the lane and ends equal to the producer.
#[test]
fn the_readme_browser_block_follows_the_lane_in_a_page() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("js/README.md")).unwrap();
    let blocks = markdown::blocks(&readme, "html");
    assert_eq!(blocks.len(), 1, "js/README.md has one browser quickstart");
    assert!(
        blocks[0].contains(README_ADDRESS),
        "the browser quickstart does not use {README_ADDRESS}, so this test cannot point it at \
         its server:\n{}",
        blocks[0]
    );

    let runtime = local::runtime();
    let mut s = Stream::new(Output::Quiet, LogFile::new(None).unwrap()).unwrap();
    s.serve(Duration::from_millis(2)).unwrap();
    let server = runtime
        .block_on(LaneServer::start(0, Streams::new(&s.log())))
        .unwrap();
    // The block as it is, but for the address: the demo's server is the test's.
    let page = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"></head><body>\n{}</body></html>\n",
        blocks[0].replace(README_ADDRESS, &format!("http://{}", server.addr))
    );
    let site = axum::Router::new().route(
        "/quickstart.html",
        axum::routing::get(move || async move { axum::response::Html(page) }),
    );
    let origin = runtime.block_on(LaneServer::start_app(0, site)).unwrap();
    assert_ne!(
        origin.addr, server.addr,
        "the page has an origin of its own"
    );
    let mut browser = Browser::launch();
    let tab = browser.open(&format!("http://{}/quickstart.html", origin.addr));
    let shown = |browser: &mut Browser| -> Value {
        let text = browser.evaluate(&tab, "document.getElementById('lane')?.textContent ?? ''");
        serde_json::from_str(text.as_str().unwrap_or("")).unwrap_or(Value::Null)
    };
    wait_for("the page to show the lane", || {
        shown(&mut browser).is_object()
    });
    run_agent(&mut s).unwrap();
    let expected = s.state();
    let start = Instant::now();
    loop {
        let value = shown(&mut browser);
        if value == expected {
            break;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the quickstart page never showed the producer's state.\npage: {value:#}\nserver: {expected:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    browser.close();
    runtime.block_on(origin.stop()).unwrap();
    runtime.block_on(server.stop()).unwrap();
}

/// Polls the page until its replica equals `expected`; what the page shows then.
fn wait_for_page(browser: &mut Browser, page: &str, expected: &Value) -> Value {
    let start = Instant::now();
    loop {
        let text = browser.evaluate(page, READ_PAGE);
        let shown: Value = serde_json::from_str(text.as_str().unwrap_or("null")).unwrap();
        // The replica's value, and the JSON pane that shows it (rewritten at most every
        // 250 ms, after the batches): both must have reached the server's state.
        let state: Option<Value> = shown["state"]
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok());
        if &shown["value"] == expected && state.as_ref() == Some(expected) {
            return shown;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the page's replica never reached the server's state.\npage: {shown:#}\nserver: {expected:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The child half of [`the_demo_removes_its_temporary_log_when_stopped`]: the demo itself,
/// serving (`--serve`, an ephemeral port) until a signal stops it. Runs only when its parent
/// starts it.
#[test]
#[ignore = "the demo as a child process: run by the_demo_removes_its_temporary_log_when_stopped"]
fn demo_child() {
    if std::env::var_os("CHORD_DEMO_CHILD").is_none() {
        return;
    }
    let args = Args::parse(["--serve"].map(String::from).into_iter()).unwrap();
    agent_lane::run(args).unwrap();
}

/// `--serve` with no `--log` keeps the lane's log in a temporary directory; stopped by
/// SIGTERM (a service manager, `kill`) or SIGINT (Ctrl-C), the demo removes it and exits with
/// the shell's code for the signal (143, 130).
#[cfg(unix)]
#[test]
fn the_demo_removes_its_temporary_log_when_stopped() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    for (signal, code) in [
        (rustix::process::Signal::TERM, 143),
        (rustix::process::Signal::INT, 130),
    ] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "demo_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CHORD_DEMO_CHILD", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The log's path, from the line the demo prints once it serves.
        let mut log = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("the lane's log: ") {
                let path = rest.split(" (temporary").next().unwrap();
                assert!(rest.contains("(temporary"), "{line}");
                log = Some(std::path::PathBuf::from(path));
                break;
            }
        }
        let log = log.expect("the demo printed where its log is");
        let dir = log.parent().unwrap().to_owned();
        assert!(
            dir.exists(),
            "{} exists while the demo serves",
            dir.display()
        );
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal:?}: {status}");
        assert!(
            !dir.exists(),
            "{signal:?} left the temporary log behind: {}",
            dir.display()
        );
    }
}
