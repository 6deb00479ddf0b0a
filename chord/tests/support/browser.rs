//! Headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: JSON messages ending in NUL on file descriptors 3 and 4),
//! which needs no WebSocket client and no port. Shared by the browser tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A generous bound on waiting for something that should take moments, so a broken build
/// fails instead of hanging. Nothing is asserted about how long anything took.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The Chromium binary: `$CHROMIUM`, else Debian's.
fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

/// Headless Chromium on a DevTools pipe.
pub struct Browser {
    child: Child,
    to: ChildStdin,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium (`$CHROMIUM`, else Debian's `/usr/bin/chromium`); a missing one fails.
    pub fn launch() -> Browser {
        let chromium = chromium();
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
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
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
    pub fn open(&mut self, url: &str) -> String {
        let target = self.call(None, "Target.createTarget", json!({"url": url}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        attached["sessionId"].as_str().unwrap().to_owned()
    }

    /// Starts Chromium as [`launch`](Browser::launch) does, or, when it is missing and `CI`
    /// is not `true`, prints a `SKIPPED` line naming `test` and returns `None`. Under
    /// `CI=true` a missing Chromium fails the test.
    pub fn launch_or_skip(test: &str) -> Option<Browser> {
        let chromium = chromium();
        if !std::path::Path::new(&chromium).exists() {
            super::skip::skip(
                test,
                &format!("{chromium} is missing (apt-get install chromium, or set CHROMIUM)"),
            );
            return None;
        }
        Some(Browser::launch())
    }

    /// Evaluates an expression in the page, awaiting it if it is a promise; its value.
    pub fn evaluate_async(&mut self, session: &str, expression: &str) -> Value {
        let result = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(thrown) = result.get("exceptionDetails") {
            panic!("the page threw: {thrown}");
        }
        result["result"]["value"].clone()
    }

    /// Evaluates an expression in the page; its value.
    pub fn evaluate(&mut self, session: &str, expression: &str) -> Value {
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

    pub fn screenshot(&mut self, session: &str, path: &str) {
        let shot = self.call(
            Some(session),
            "Page.captureScreenshot",
            json!({"format": "png"}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        std::fs::write(path, png).unwrap();
    }

    pub fn close(mut self) {
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
