//! What `chord serve` tells a person at its start: every metric family answers the first
//! scrape (before anything was counted), `--listen` takes a host name, and an address that
//! cannot be listened on is named with its host, port and the address tried; a refused
//! batch's answer says why, with every cause of its error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::metrics;
use chord::Op;
use serde_json::json;

/// The tests of this binary run one at a time: they open logs for writing in this process
/// (taking the log's lock) while others spawn `chord`, and a child forked while a log is open
/// holds a copy of its descriptor, and so its lock, until it executes `chord`: a server
/// started on that log in that moment would find it locked.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A log with `lanes/main`.
fn write_log(path: &Path) {
    let mut writer = LogWriter::new(
        JsonlStore::open(path, Durability::EveryAppend).unwrap(),
        Checkpoint::Never,
    );
    writer
        .append(
            &Address::new("lanes", "main"),
            &[Op::Replace(json!({"n": 0}))],
        )
        .unwrap();
}

/// `chord serve` started with `args`; its address once it says it listens, or its stderr.
fn serve(args: &[&str]) -> Result<(Server, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chord"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chord serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    match line.trim().strip_prefix("listening on http://") {
        Some(addr) => Ok((Server(child), addr.to_owned())),
        None => {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            child.wait().unwrap();
            Err(err)
        }
    }
}

/// A running `chord serve`.
#[derive(Debug)]
struct Server(Child);

/// A server a failed test leaves running is killed, not left holding its port, its log's
/// lock or its database connections.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stop(mut server: Server) {
    let child = &mut server.0;
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success());
}

/// One request; its status and body.
fn call(addr: &str, method: &str, target: &str, headers: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), body.to_owned())
}

/// The families `chord serve` records whose labels are known before anything happens:
/// every name of the library's table but the two labeled by stream.
fn families() -> Vec<&'static str> {
    vec![
        metrics::APPENDS,
        metrics::APPEND_SECONDS,
        metrics::APPEND_BYTES,
        metrics::APPEND_ERRORS,
        metrics::SSE_OPEN,
        metrics::SSE_ENDED,
        metrics::CACHE_MISSES,
        metrics::GONE,
        metrics::COMPACTIONS,
        metrics::TAIL_CACHE_BYTES,
        metrics::READ_ERRORS,
        metrics::REJECTED_BATCHES,
        metrics::DRAIN_CUT,
        metrics::NOT_READY,
        metrics::REQUESTS,
        metrics::REQUEST_SECONDS,
        metrics::FALLBACKS,
    ]
}

#[test]
fn every_metric_family_answers_the_first_scrape() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_log(&log);
    let (child, addr) = serve(&[log.to_str().unwrap(), "--public", "--listen", "127.0.0.1:0"])
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, text) = call(&addr, "GET", "/metrics", "", "");
    stop(child);
    assert_eq!(status, 200, "{text}");
    for family in families() {
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family}:\n{text}"
        );
        let kind = if family.ends_with("_seconds") && family != metrics::FOLLOWER_LAG {
            "histogram"
        } else if family.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        assert!(
            text.contains(&format!("# TYPE {family} {kind}\n")),
            "{family} is not a {kind}:\n{text}"
        );
        let sample = if kind == "histogram" {
            format!("{family}_count")
        } else {
            family.to_owned()
        };
        let zeros: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.strip_prefix(sample.as_str())
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
            })
            .collect();
        assert!(!zeros.is_empty(), "no sample of {family}:\n{text}");
        // Nothing was counted before this scrape but the scrape itself, which is not a
        // stream request.
        for line in zeros {
            assert!(line.ends_with(" 0"), "{line}");
        }
    }
    for kind in metrics::REQUEST_KINDS {
        assert!(
            text.contains(&format!(
                "{}_count{{kind=\"{kind}\"}} 0",
                metrics::REQUEST_SECONDS
            )),
            "{kind}:\n{text}"
        );
    }
    promtool_check(&text);
}

/// `promtool check metrics` on the scrape, when promtool is installed (CI installs it).
fn promtool_check(text: &str) {
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "promtool is not installed (apt-get install prometheus)"
        );
        eprintln!("SKIPPED promtool check metrics: promtool is not installed");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics:\n{said}\n{text}"
    );
}

#[test]
fn listen_takes_a_host_name() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_log(&log);
    let (child, addr) = serve(&[log.to_str().unwrap(), "--public", "--listen", "localhost:0"])
        .unwrap_or_else(|e| panic!("{e}"));
    let taken: std::net::SocketAddr = addr.parse().expect("the address taken, resolved");
    assert!(taken.ip().is_loopback(), "{taken}");
    assert_ne!(taken.port(), 0);
    let (status, _) = call(&addr, "GET", "/healthz", "", "");
    assert_eq!(status, 200);
    stop(child);
}

#[test]
fn an_address_that_cannot_be_listened_on_is_named() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_log(&log);
    let log = log.to_str().unwrap();
    // The port taken on every address `localhost` may resolve to.
    let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = v4.local_addr().unwrap().port();
    let _v6 = std::net::TcpListener::bind(("::1", port));
    for listen in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let e = serve(&[log, "--public", "--listen", &listen]).expect_err("refused");
        assert!(
            e.contains(&format!("--listen {listen}: cannot listen on "))
                && e.contains(&format!(":{port}: "))
                && e.to_lowercase().contains("in use"),
            "{listen}: {e}"
        );
    }
    for (listen, why) in [
        ("localhost", "no port"),
        ("localhost:65536", "65536"),
        ("::1:8080", "brackets"),
    ] {
        let e = serve(&[log, "--public", "--listen", listen]).expect_err("refused");
        assert!(e.contains("--listen") && e.contains(why), "{listen}: {e}");
    }
}

/// A path through `__proto__` is refused with the op and the segment, which the store's
/// error keeps in its cause.
#[test]
fn a_refused_batch_says_why() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_log(&log);
    let writers = dir.path().join("writers");
    std::fs::write(&writers, "w1\n").unwrap();
    let (child, addr) = serve(&[
        log.to_str().unwrap(),
        "--public",
        "--listen",
        "127.0.0.1:0",
        "--write-token-file",
        writers.to_str().unwrap(),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let (status, body) = call(
        &addr,
        "POST",
        "/streams/lanes/main",
        "Authorization: Bearer w1\r\nContent-Type: application/json\r\n",
        r#"[[["s",["__proto__","x"],1]]]"#,
    );
    stop(child);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.starts_with(
            "message 0: refused a batch for lanes/main that recovery could not read back: "
        ) && body.contains("__proto__"),
        "{body}"
    );
}
