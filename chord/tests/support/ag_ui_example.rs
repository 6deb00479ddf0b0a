//! The AG-UI example (`chord/examples/ag_ui_agent.rs`) as a child process of a test binary:
//! the binary starts itself again with `CHORD_AG_UI_EXAMPLE` set, and its ignored
//! `child_example` test runs the example (so the example is built with the test, and can be
//! killed and started again on the same `--dir` and port).

// Each binary uses what it needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The variable that makes the test binary's `child_example` run the example (its
/// arguments, as a JSON array).
pub const CHILD_VAR: &str = "CHORD_AG_UI_EXAMPLE";

/// A generous bound on what takes seconds (the example's start, a client's run), so that a
/// hang fails instead.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The example's `run`: its `main`, given its arguments.
pub type Main = fn(Vec<String>) -> Result<(), Box<dyn std::error::Error>>;

/// The body of a test binary's `child_example`: runs the example (`run`) when
/// `CHORD_AG_UI_EXAMPLE` is set, with those arguments; does nothing otherwise.
pub fn child_main(run: Main) {
    let Ok(args) = std::env::var(CHILD_VAR) else {
        return;
    };
    let mut argv = vec!["ag_ui_agent".to_owned()];
    argv.extend(serde_json::from_str::<Vec<String>>(&args).expect("the example's arguments"));
    if let Err(e) = run(argv) {
        eprintln!("ag_ui_agent failed: {e}");
        std::process::exit(2);
    }
}

/// The example, running; killed when dropped.
pub struct Example {
    child: Child,
    /// Where it serves: `http://127.0.0.1:PORT/`.
    pub url: String,
    /// Its port.
    pub port: u16,
}

impl Example {
    /// Starts the example on `port` (0: any) with its log in `dir`; returns once it prints
    /// its URL.
    pub fn start(dir: &Path, port: u16, delay_ms: u64) -> Example {
        let args = [
            "--port".to_owned(),
            port.to_string(),
            "--dir".to_owned(),
            dir.display().to_string(),
            "--delay-ms".to_owned(),
            delay_ms.to_string(),
        ];
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_example",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VAR, serde_json::to_string(&args).unwrap())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting this test binary again as the example");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The harness starts its line `test child_example ... ` before the example
                // prints.
                if let Some(at) = line.find("http://") {
                    let _ = tx.send(line[at..].trim().to_owned());
                }
            }
        });
        let url = match rx.recv_timeout(PATIENCE) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!("the example printed no URL (its output is above)");
            }
        };
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
            "the example printed {url:?}, not http://127.0.0.1:PORT/"
        );
        let port = url["http://127.0.0.1:".len()..url.len() - 1]
            .parse()
            .unwrap_or_else(|_| panic!("no port in {url:?}"));
        Example { child, url, port }
    }

    /// Kills it (SIGKILL: nothing is flushed or closed on the way out).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for `child` (a client script, bounded by [`PATIENCE`]); returns the JSON object its
/// last stdout line holds, failing with what it said if it failed. `stdout`: the child's
/// stdout when the caller read from it already.
pub fn report(
    name: &str,
    mut child: Child,
    stdout: Option<BufReader<std::process::ChildStdout>>,
) -> serde_json::Value {
    let (tx, rx) = mpsc::channel();
    let mut out = stdout.unwrap_or_else(|| BufReader::new(child.stdout.take().unwrap()));
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut text);
        let _ = tx.send(text);
    });
    let text = match rx.recv_timeout(PATIENCE) {
        Ok(text) => text,
        Err(_) => {
            let _ = child.kill();
            panic!("{name} did not finish in {PATIENCE:?}");
        }
    };
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{name} failed ({status}); it printed:\n{text}"
    );
    let last = text.lines().last().unwrap_or_default();
    let value: serde_json::Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{name}: its last line is not JSON ({e}):\n{text}"));
    println!("{name}: {value}");
    value
}

/// `GET url` of an example (plain HTTP on 127.0.0.1): its status and body, unchunked.
pub fn get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("GET {url}: {e}"));
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).expect("a UTF-8 response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response's head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("GET {url}: no status in {head:?}"));
    let chunked = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

/// A chunked body's data.
fn unchunk(mut body: &str) -> String {
    let mut data = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("a chunk's size line");
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return data;
        }
        data.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}
