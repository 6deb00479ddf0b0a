//! End to end: the main example's server on loopback, its page in headless Chromium, the
//! agent running; the page's replica must equal the server's state, also after the server
//! ends its stream and the page resubscribes.
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
//! messages ending in NUL on file descriptors 3 and 4), which needs no WebSocket client and
//! no port. Set `CHORD_E2E_SCREENSHOT=/path/shot.png` to keep a screenshot of the page.

#[allow(dead_code)]
#[path = "../examples/agent_lane.rs"]
mod agent_lane;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_lane::server::{lane, LaneServer};
use agent_lane::{run_agent, Stream};
use serde_json::{json, Value};

/// A generous bound on waiting for something that should take moments, so a broken build
/// fails instead of hanging. Nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(60);

/// What the page shows, read in the page.
const READ_PAGE: &str = r#"JSON.stringify({
    value: window.__replica ? window.__replica.value ?? null : null,
    chord: window.__chord ?? null,
    status: document.getElementById('status').textContent,
    connection: document.getElementById('connection').textContent,
    transcript: document.getElementById('transcript').textContent,
    streaming: document.getElementById('streaming').hidden,
    output: [...document.querySelectorAll('.output')].map((e) => e.textContent),
    state: document.getElementById('state').textContent,
})"#;

#[test]
fn the_page_renders_the_lane_live_and_equals_the_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(LaneServer::start(0)).unwrap();

    // The lane exists before the page opens; the agent waits for the page to subscribe.
    let mut s = Stream::new(true);
    s.publish_to(&server.hub, Duration::from_millis(4)).unwrap();

    let mut browser = Browser::launch();
    let page = browser.open(&server.url());
    wait_for("the page to subscribe", || {
        server.hub.subscribers(&lane()) == 1
    });

    // The agent's turn, about 150 batches, while the page follows.
    run_agent(&mut s).unwrap();
    let expected = server.hub.get(&lane()).unwrap();
    assert_eq!(expected, s.state(), "the hub holds the producer's state");

    let shown = wait_for_page(&mut browser, &page, &expected);
    let chord = &shown["chord"];
    println!("page after the turn: {chord}");
    assert_eq!(chord["errors"], 0, "no batch failed in the page");
    assert_eq!(chord["subscriptions"], 1);
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

    // The server ends the stream (the value is removed, then published anew): the page
    // resubscribes and rebuilds from the new stream's base batch, then follows a new turn.
    assert!(server.hub.remove(&lane()));
    s.restart().unwrap();
    let empty = server.hub.get(&lane()).unwrap();
    assert_ne!(empty, expected);
    let shown = wait_for_page(&mut browser, &page, &empty);
    println!("page after a resubscription: {}", shown["chord"]);
    assert!(shown["chord"]["subscriptions"].as_u64().unwrap() >= 2);
    run_agent(&mut s).unwrap();
    let shown = wait_for_page(&mut browser, &page, &server.hub.get(&lane()).unwrap());
    assert_eq!(shown["chord"]["errors"], 0);

    browser.close();
    runtime.block_on(server.stop()).unwrap();
}

/// Polls the page until its replica equals `expected`; what the page shows then.
fn wait_for_page(browser: &mut Browser, page: &str, expected: &Value) -> Value {
    let start = Instant::now();
    loop {
        let text = browser.evaluate(page, READ_PAGE);
        let shown: Value = serde_json::from_str(text.as_str().unwrap_or("null")).unwrap();
        if &shown["value"] == expected {
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

/// Headless Chromium on a DevTools pipe.
struct Browser {
    child: Child,
    to: ChildStdin,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn launch() -> Browser {
        let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        if !std::path::Path::new(&chromium).exists() {
            panic!(
                "{chromium} is missing: this test needs Debian's `chromium` package, which \
                 `.ci/run` installs (apt-get install chromium); set CHROMIUM to use another"
            );
        }
        let profile = tempfile::tempdir().unwrap();
        // The shell hands our pipes to Chromium as descriptors 3 (commands) and 4 (replies).
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#)
            .arg(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1200,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {chromium}: {e}"));
        let to = child.stdin.take().unwrap();
        let mut replies = BufReader::new(child.stdout.take().unwrap());
        let (tx, from) = mpsc::channel();
        std::thread::spawn(move || {
            let mut message = Vec::new();
            while replies.read_until(0, &mut message).unwrap_or(0) > 0 {
                if message.last() == Some(&0) {
                    message.pop();
                }
                if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                    if tx.send(value).is_err() {
                        return;
                    }
                }
                message.clear();
            }
        });
        Browser {
            child,
            to,
            from,
            next_id: 0,
            _profile: profile,
        }
    }

    /// Sends a command (to a page's session, or to the browser) and waits for its result.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .and_then(|()| self.to.flush())
            .unwrap_or_else(|e| panic!("Chromium stopped taking commands ({method}): {e}"));
        let start = Instant::now();
        loop {
            let left = PATIENCE.saturating_sub(start.elapsed());
            let reply = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no reply from Chromium to {method}: {e}"));
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    panic!("Chromium refused {method}: {error}");
                }
                return reply["result"].clone();
            }
        }
    }

    /// Opens `url` in a new tab; the tab's session id.
    fn open(&mut self, url: &str) -> String {
        let target = self.call(None, "Target.createTarget", json!({"url": url}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        attached["sessionId"].as_str().unwrap().to_owned()
    }

    /// Evaluates an expression in the page; its value.
    fn evaluate(&mut self, session: &str, expression: &str) -> Value {
        let result = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if let Some(thrown) = result.get("exceptionDetails") {
            panic!("the page threw: {thrown}");
        }
        result["result"]["value"].clone()
    }

    fn screenshot(&mut self, session: &str, path: &str) {
        let shot = self.call(
            Some(session),
            "Page.captureScreenshot",
            json!({"format": "png"}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        std::fs::write(path, png).unwrap();
    }

    fn close(mut self) {
        self.next_id += 1;
        let message = json!({"id": self.next_id, "method": "Browser.close"});
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        let _ = self.to.write_all(&bytes).and_then(|()| self.to.flush());
        let start = Instant::now();
        while let Ok(None) = self.child.try_wait() {
            if start.elapsed() > Duration::from_secs(10) {
                break; // Drop kills it
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // After a failed assertion: do not leave Chromium running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}
