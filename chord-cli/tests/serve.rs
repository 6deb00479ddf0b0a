//! `chord serve` end to end: the built binary serving a JSONL log on an ephemeral port, one
//! request of each kind made over plain HTTP/1.1, `/metrics` scraped and parsed strictly (every
//! family with its `# HELP` and `# TYPE`, every request counted under its own kind and status
//! by exactly what was sent, the latency histograms with their buckets, sum and count), then
//! `SIGTERM`: the open SSE response ends cleanly and the process exits 0. And the errors a
//! mistyped command gets, each naming its flag or its log.

#[path = "../../chord/tests/support/postgres.rs"]
mod pg;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, PostgresStore};
use chord::streams::metrics::{LATENCY_BUCKETS, REQUEST_KINDS};
use chord::{path, Op};
use serde_json::json;

/// How long a socket read may block before the test gives up (a hang, not a timing check).
const PATIENCE: Duration = Duration::from_secs(60);

const READ_TOKEN: &str = "r34d-t0ken";
const WRITE_TOKEN: &str = "wr1te-t0ken";

/// Writes `lanes/main`: a base batch and three appends to its text.
fn write_lane(store: impl chord::store::Store) {
    let mut writer = LogWriter::new(store, Checkpoint::Never);
    let lane = Address::new("lanes", "main");
    writer
        .append(&lane, &[Op::Replace(json!({"text": "hello"}))])
        .unwrap();
    for n in 0..3 {
        writer
            .append(&lane, &[Op::Append(path!["text"], format!(" {n}"))])
            .unwrap();
    }
}

/// A running `chord serve`, its address, and its stderr as it comes.
struct Served {
    child: Child,
    addr: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// A server a failed test leaves running is killed, not left holding its port, its log's
/// lock or its database connections.
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `chord serve` with `args` on an ephemeral port and waits for its
    /// `listening on` line.
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chord"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run chord serve");
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no `listening on` line but {line:?}; stderr: {}",
                stderr.join().unwrap()
            );
        };
        Served {
            addr: addr.to_owned(),
            child,
            stderr: Some(stderr),
        }
    }

    /// Sends `SIGTERM` and waits for the exit: its status code and stderr.
    fn terminate(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        (status.code(), self.stderr.take().unwrap().join().unwrap())
    }
}

/// One response, read whole (`Connection: close`).
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Sends one HTTP/1.1 request and reads its response to the end.
fn call(addr: &str, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = connect(addr, method, target, headers, body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status = head[9..12].parse().unwrap();
    Answer {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    }
}

fn connect(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    s.write_all(request.as_bytes()).unwrap();
    s
}

/// Opens an SSE response and reads until its head and first `data` event have come; the
/// connection stays open.
fn open_sse(addr: &str, target: &str) -> (TcpStream, Vec<u8>) {
    let mut s = connect(addr, "GET", target, &[], "");
    let mut seen = Vec::new();
    let mut buf = [0; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: data") {
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the SSE response ended early: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(
        seen.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    (s, seen)
}

/// One series of the exposition: its name and labels.
type Series = (String, BTreeMap<String, String>);

/// The text exposition, parsed strictly: every line a `# HELP`, a `# TYPE` or a sample.
#[derive(Debug, Default)]
struct Exposition {
    help: BTreeMap<String, String>,
    types: BTreeMap<String, String>,
    samples: BTreeMap<Series, f64>,
}

impl Exposition {
    fn parse(text: &str) -> Exposition {
        let mut e = Exposition::default();
        for line in text.lines().filter(|l| !l.is_empty()) {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP name text");
                assert!(!help.trim().is_empty(), "empty help: {line}");
                assert!(
                    e.help.insert(name.into(), help.into()).is_none(),
                    "twice: {line}"
                );
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "{line}"
                );
                assert!(
                    e.types.insert(name.into(), kind.into()).is_none(),
                    "twice: {line}"
                );
            } else {
                assert!(!line.starts_with('#'), "a comment of no known kind: {line}");
                let (series, value) = line.rsplit_once(' ').expect("a sample: series value");
                let value: f64 = match value {
                    "+Inf" => f64::INFINITY,
                    v => v.parse().unwrap_or_else(|_| panic!("value of {line}")),
                };
                let (name, labels) = match series.split_once('{') {
                    None => (series, BTreeMap::new()),
                    Some((name, rest)) => (name, labels(rest.strip_suffix('}').expect(line))),
                };
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                    "{line}"
                );
                let before = e.samples.insert((name.into(), labels), value);
                assert!(before.is_none(), "a series twice: {line}");
            }
        }
        e
    }

    /// The family a sample's name belongs to: a histogram's `_bucket`, `_sum` and `_count`
    /// are its own.
    fn family<'a>(&self, name: &'a str) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if self
                    .types
                    .get(base)
                    .is_some_and(|t| t == "histogram" || t == "summary")
                {
                    return base;
                }
            }
        }
        name
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples.get(&(name.to_owned(), labels)).copied()
    }

    /// The samples named `name`, by their labels.
    fn series(&self, name: &str) -> Vec<(&BTreeMap<String, String>, f64)> {
        self.samples
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|((_, labels), v)| (labels, *v))
            .collect()
    }
}

/// `a="x",b="y"` (values with `\"` and `\\` escapes).
fn labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").expect("label=\"value\"");
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect("a closing quote") {
                (i, '"') => break i,
                (_, '\\') => value.push(chars.next().expect("an escape").1),
                (_, c) => value.push(c),
            }
        };
        assert!(
            out.insert(name.to_owned(), value).is_none(),
            "label twice: {text}"
        );
        rest = after[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&after[end + 1..]);
    }
    out
}

fn token_file(dir: &Path, name: &str, token: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("# who may {name}\n\n{token}\n")).unwrap();
    path.display().to_string()
}

#[test]
fn each_request_counts_under_its_kind_and_the_server_drains_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_lane(JsonlStore::open(&log, Durability::EveryAppend).unwrap());
    let reads = token_file(dir.path(), "read", READ_TOKEN);
    let writes = token_file(dir.path(), "write", WRITE_TOKEN);
    let served = Served::start(&[
        log.to_str().unwrap(),
        "--read-token-file",
        &reads,
        "--write-token-file",
        &writes,
        "--drain",
        "30",
    ]);
    let addr = served.addr.clone();
    let bearer = format!("Bearer {READ_TOKEN}");
    let reader = [("Authorization", bearer.as_str())];
    let lane = "/streams/lanes/main";

    // What each kind of request is sent, and answered.
    for _ in 0..3 {
        let r = call(&addr, "GET", &format!("{lane}?offset=-1"), &reader, "");
        assert_eq!(r.status, 200, "{}", r.head);
        assert!(String::from_utf8_lossy(&r.body).contains("hello"));
    }
    for _ in 0..2 {
        let r = call(&addr, "GET", "/streams/lanes/none?offset=-1", &reader, "");
        assert_eq!(r.status, 404, "{}", r.head);
    }
    for _ in 0..4 {
        let r = call(&addr, "GET", &format!("{lane}?offset=-1"), &[], "");
        assert_eq!(r.status, 401, "{}", r.head);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    let wrong = [("Authorization", "Bearer not-the-token")];
    assert_eq!(
        call(&addr, "GET", &format!("{lane}?offset=-1"), &wrong, "").status,
        401
    );
    for _ in 0..2 {
        let r = call(&addr, "HEAD", lane, &reader, "");
        assert_eq!(r.status, 200, "{}", r.head);
        assert!(r.header("stream-next-offset").is_some(), "{}", r.head);
    }
    // From the start: records are there, so the long-poll answers at once.
    let r = call(
        &addr,
        "GET",
        &format!("{lane}?offset=-1&live=long-poll"),
        &reader,
        "",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    // An EventSource's way: the token in the query. Kept open until the shutdown.
    let (mut sse, mut sse_seen) = open_sse(
        &addr,
        &format!("{lane}?offset=-1&live=sse&token={READ_TOKEN}"),
    );
    let writer_bearer = format!("Bearer {WRITE_TOKEN}");
    let writer = [
        ("Authorization", writer_bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let batch = r#"[["a",["text"],"!"]]"#;
    assert_eq!(call(&addr, "POST", lane, &writer, batch).status, 204);
    let refused = [
        ("Content-Type", "application/json"),
        ("Authorization", bearer.as_str()),
    ];
    assert_eq!(call(&addr, "POST", lane, &refused, batch).status, 401);
    assert_eq!(call(&addr, "DELETE", lane, &writer, "").status, 405);
    let preflight = [
        ("Origin", "https://app.example"),
        ("Access-Control-Request-Method", "GET"),
        ("Access-Control-Request-Headers", "authorization"),
    ];
    let r = call(&addr, "OPTIONS", lane, &preflight, "");
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));

    // The probes, and the scrape: a token needed, as for reads.
    assert_eq!(call(&addr, "GET", "/healthz", &[], "").status, 200);
    assert_eq!(call(&addr, "GET", "/readyz", &[], "").status, 200);
    assert_eq!(call(&addr, "GET", "/metrics", &[], "").status, 401);
    let scrape = call(&addr, "GET", "/metrics", &reader, "");
    assert_eq!(scrape.status, 200, "{}", scrape.head);
    assert!(scrape
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    let text = String::from_utf8(scrape.body.clone()).unwrap();
    let e = Exposition::parse(&text);

    // Every family has its help text and type.
    let families: BTreeSet<&str> = e.samples.keys().map(|(n, _)| e.family(n)).collect();
    for family in &families {
        assert!(
            e.help.contains_key(*family),
            "no # HELP for {family}:\n{text}"
        );
        assert!(
            e.types.contains_key(*family),
            "no # TYPE for {family}:\n{text}"
        );
    }
    assert_eq!(e.types["chord_requests_total"], "counter");
    assert_eq!(e.types["chord_request_seconds"], "histogram");
    assert_eq!(e.types["chord_append_seconds"], "histogram");
    assert!(e.help["chord_request_seconds"].contains("response head"));

    // Each request under its own kind and status, exactly as many as were sent, and nothing
    // else (no stream name among the labels).
    let expected: BTreeMap<(&str, &str), f64> = [
        (("catch_up", "200"), 3.0),
        (("catch_up", "404"), 2.0),
        (("catch_up", "401"), 5.0),
        (("head", "200"), 2.0),
        (("long_poll", "200"), 1.0),
        (("sse", "200"), 1.0),
        (("append", "204"), 1.0),
        (("append", "401"), 1.0),
        (("delete", "405"), 1.0),
        (("options", "200"), 1.0),
    ]
    .into_iter()
    .collect();
    // Zero series are there from the start (`register_metrics`): what was sent is the rest.
    let counted: BTreeMap<(&str, &str), f64> = e
        .series("chord_requests_total")
        .into_iter()
        .filter(|&(_, v)| v > 0.0)
        .map(|(labels, v)| {
            assert_eq!(labels.len(), 2, "{labels:?}");
            ((labels["kind"].as_str(), labels["status"].as_str()), v)
        })
        .collect();
    assert_eq!(counted, expected, "\n{text}");

    // The latency histogram: one sample per request of each kind, in the buckets chord sets.
    let mut bounds: Vec<String> = LATENCY_BUCKETS.iter().map(|b| b.to_string()).collect();
    bounds.push("+Inf".into());
    let mut kinds: BTreeMap<&str, f64> = BTreeMap::new();
    for ((kind, _), n) in &expected {
        *kinds.entry(kind).or_default() += n;
    }
    for (kind, n) in &kinds {
        let count = e.value("chord_request_seconds_count", &[("kind", kind)]);
        assert_eq!(count, Some(*n), "{kind}");
        let sum = e
            .value("chord_request_seconds_sum", &[("kind", kind)])
            .unwrap();
        assert!(sum.is_finite() && sum >= 0.0, "{kind}: sum {sum}");
        let mut last = 0.0;
        for le in &bounds {
            let v = e
                .value(
                    "chord_request_seconds_bucket",
                    &[("kind", kind), ("le", le)],
                )
                .unwrap_or_else(|| panic!("{kind}: no bucket le={le}\n{text}"));
            assert!(v >= last, "{kind}: buckets are cumulative");
            last = v;
        }
        assert_eq!(last, *n, "{kind}: the +Inf bucket holds every sample");
    }
    let buckets = e.series("chord_request_seconds_bucket").len();
    assert_eq!(
        buckets,
        REQUEST_KINDS.len() * bounds.len(),
        "no bucket but chord's, for every kind from the start"
    );

    // What the append and the SSE response did, in the library's own metrics.
    assert_eq!(e.value("chord_appends_total", &[]), Some(1.0));
    assert_eq!(e.value("chord_append_seconds_count", &[]), Some(1.0));
    assert_eq!(e.value("chord_sse_open", &[]), Some(1.0));
    eprintln!(
        "scrape: {} bytes, {} families, {} series",
        text.len(),
        families.len(),
        e.samples.len()
    );
    promtool_check(&text);

    // The shutdown: the SSE reader's response ends (a chunked body's last chunk, not a cut),
    // and the process exits 0.
    let (code, stderr) = served.terminate();
    sse.read_to_end(&mut sse_seen).unwrap();
    let seen = String::from_utf8_lossy(&sse_seen);
    assert!(
        seen.ends_with("0\r\n\r\n"),
        "the SSE response was cut:\n{seen}"
    );
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(stderr.contains("drained"), "{stderr}");
}

/// `promtool check metrics` on the scrape, when promtool is installed (Debian's `prometheus`
/// package has it; `scripts/test` installs it); a visible `SKIPPED` line otherwise, and a
/// failure under `CI=true`.
#[test]
fn every_answer_of_every_route_carries_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_lane(JsonlStore::open(&log, Durability::EveryAppend).unwrap());
    let served = Served::start(&[log.to_str().unwrap(), "--public"]);
    let verbs = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND",
    ];
    let targets = [
        "/streams/lanes/main?offset=-1",
        "/streams/lanes/none",
        "/metrics",
        "/healthz",
        "/readyz",
        "/",
        "/nope",
        "/streams",
        "/streams/lanes",
        "/metrics/x",
    ];
    let mut answers = 0;
    for verb in verbs {
        for target in targets {
            let mut s = connect(&served.addr, verb, target, &[], "");
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            // The head only: a `HEAD` answer has no body to read to its end.
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
            for header in [
                "x-content-type-options: nosniff",
                "cross-origin-resource-policy: cross-origin",
            ] {
                assert!(
                    head.contains(header),
                    "{verb} {target} without {header}:\n{head}"
                );
            }
            answers += 1;
        }
    }
    assert_eq!(answers, 90);
    let _ = served.terminate();
}

fn promtool_check(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "promtool is not installed (apt-get install prometheus; scripts/test does)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED promtool check metrics: promtool is not installed (apt-get install \
             prometheus); the scrape was checked by this test's own parser"
        );
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
        out.status.success(),
        "promtool check metrics failed:\n{said}\n{text}"
    );
    assert!(
        said.trim().is_empty(),
        "promtool check metrics found problems:\n{said}"
    );
}

fn fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_chord"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_flags_and_logs_are_refused_naming_what_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_lane(JsonlStore::open(&log, Durability::EveryAppend).unwrap());
    let log = log.to_str().unwrap();

    let e = fails(&[log]);
    assert!(
        e.contains("--public") && e.contains("--read-token-file"),
        "{e}"
    );
    let e = fails(&[log, "--public", "--read-token-file", "x"]);
    assert!(e.contains("cannot be used with"), "{e}");

    let missing = dir.path().join("no-such-tokens");
    let e = fails(&[log, "--read-token-file", missing.to_str().unwrap()]);
    assert!(
        e.contains("--read-token-file") && e.contains("no-such-tokens"),
        "{e}"
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "# nobody\n").unwrap();
    let e = fails(&[
        log,
        "--public",
        "--write-token-file",
        empty.to_str().unwrap(),
    ]);
    assert!(
        e.contains("--write-token-file") && e.contains("no token"),
        "{e}"
    );
    let tokens = token_file(dir.path(), "read", READ_TOKEN);
    // With tokens, only a policy that keeps shared caches out starts.
    for shared in [
        "public, max-age=60",
        "max-age=60",
        "s-maxage=60",
        "must-revalidate, max-age=60",
        "private=\"set-cookie\", max-age=60",
    ] {
        let e = fails(&[log, "--read-token-file", &tokens, "--cache-control", shared]);
        assert!(
            e.contains("--cache-control") && e.contains("shared cache") && e.contains("--public"),
            "{shared}: {e}"
        );
    }
    let e = fails(&[log, "--public", "--cache-control", "max-age=\u{7f}"]);
    assert!(e.contains("--cache-control"), "{e}");
    let e = fails(&[log, "--public", "--cors-origin", "https://app.example/page"]);
    assert!(
        e.contains("--cors-origin") && e.contains("not an origin"),
        "{e}"
    );
    let e = fails(&[log, "--public", "--listen", "nowhere"]);
    assert!(e.contains("--listen"), "{e}");

    let gone = dir.path().join("gone.jsonl");
    let e = fails(&[gone.to_str().unwrap(), "--public"]);
    assert!(
        e.contains("gone.jsonl") && e.contains("No such file"),
        "{e}"
    );
    let e = fails(&[dir.path().to_str().unwrap(), "--public"]);
    assert!(e.contains("not a regular file"), "{e}");
    // Nothing listens on port 1: the cause is printed.
    let e = fails(&["postgres://postgres@127.0.0.1:1/test", "--public"]);
    assert!(e.contains("127.0.0.1:1") && e.contains("refused"), "{e}");

    // The address taken: the second server is refused, naming it.
    let first = Served::start(&[log, "--public"]);
    // A token given twice is refused, whichever would have been read.
    let r = call(
        &first.addr,
        "GET",
        "/streams/lanes/main?offset=-1&token=a&token=b",
        &[],
        "",
    );
    assert_eq!(r.status, 400, "{}", r.head);
    assert_eq!(r.body, b"multiple token parameters not allowed\n");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let e = fails(&[log, "--public", "--listen", &first.addr]);
    assert!(e.contains("--listen") && e.contains(&first.addr), "{e}");
    let (code, stderr) = first.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_postgresql_store_is_served() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("serve");
    let url = pg::schema_url(&schema);
    write_lane(PostgresStore::open(&url, Durability::EveryAppend).unwrap());
    let served = Served::start(&[&url, "--public"]);
    let r = call(
        &served.addr,
        "GET",
        "/streams/lanes/main?offset=-1",
        &[],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(String::from_utf8_lossy(&r.body).contains("hello"));
    assert_eq!(call(&served.addr, "GET", "/readyz", &[], "").status, 200);
    let (code, stderr) = served.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

/// A SQLite database is served (with the `sqlite` feature): opened with its writer's lock,
/// its lane read back over HTTP, and an append taken through the server.
#[cfg(feature = "sqlite")]
#[test]
fn a_sqlite_store_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lanes.sqlite");
    write_lane(chord::store::SqliteStore::open(&db, Durability::EveryAppend).unwrap());
    let tokens = dir.path().join("writers");
    std::fs::write(&tokens, "w1\n").unwrap();
    let served = Served::start(&[
        db.to_str().unwrap(),
        "--public",
        "--write-token-file",
        tokens.to_str().unwrap(),
    ]);
    let r = call(
        &served.addr,
        "GET",
        "/streams/lanes/main?offset=-1",
        &[],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(String::from_utf8_lossy(&r.body).contains("hello"));
    let r = call(
        &served.addr,
        "POST",
        "/streams/lanes/main",
        &[
            ("authorization", "Bearer w1"),
            ("content-type", "application/json"),
        ],
        r#"[[["a",["text"],"!"]]]"#,
    );
    assert_eq!(r.status, 204, "{}", r.head);
    let (code, stderr) = served.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    // The append is in the database.
    let store = chord::store::SqliteStore::open(&db, Durability::EveryAppend).unwrap();
    let value = chord::store::recover(&store, &Address::new("lanes", "main")).unwrap();
    assert!(value.unwrap().to_string().contains('!'));
}

/// A fork writes the new stream and reads its source, and a chord log is not forked: a
/// write token that may not read is refused (401, as a refused read of the source), a token
/// that may both is told forks are not served (501); neither creates anything.
#[test]
fn a_fork_is_authorized_as_a_write_and_a_read_then_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_lane(JsonlStore::open(&log, Durability::EveryAppend).unwrap());
    let readers = dir.path().join("readers");
    std::fs::write(&readers, format!("{READ_TOKEN}\nboth\n")).unwrap();
    let writers = dir.path().join("writers");
    std::fs::write(&writers, format!("{WRITE_TOKEN}\nboth\n")).unwrap();
    let served = Served::start(&[
        log.to_str().unwrap(),
        "--read-token-file",
        readers.to_str().unwrap(),
        "--write-token-file",
        writers.to_str().unwrap(),
    ]);
    let fork = |token: &str| {
        call(
            &served.addr,
            "PUT",
            "/streams/lanes/copy",
            &[
                ("authorization", &format!("Bearer {token}")),
                ("content-type", "application/json"),
                ("stream-forked-from", "/streams/lanes/main"),
            ],
            "",
        )
    };
    let r = fork(WRITE_TOKEN);
    assert_eq!(r.status, 401, "a write token alone: {}", r.head);
    let r = fork("both");
    assert_eq!(
        (r.status, String::from_utf8_lossy(&r.body).into_owned()),
        (
            501,
            "a chord log is not forked (it has one writer, its producer): only protocol streams \
             are\n"
                .into()
        ),
        "{}",
        r.head
    );
    let r = call(
        &served.addr,
        "GET",
        "/streams/lanes/copy?offset=-1",
        &[("authorization", &format!("Bearer {READ_TOKEN}"))],
        "",
    );
    assert_eq!(r.status, 404, "nothing was created: {}", r.head);
    let (code, stderr) = served.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

/// With writes on, `chord serve` keeps protocol streams of any content type beside the chord
/// logs, in a journal next to the log: they outlive a restart, deletes included. A `PUT` of a
/// base batch still makes a chord log (in the log, not the journal), `Chord-Kind` says which
/// kind a `PUT` makes, and an append to nothing says how to create a stream.
#[test]
fn protocol_streams_outlive_a_restart_beside_the_chord_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agent.jsonl");
    write_lane(JsonlStore::open(&log, Durability::EveryAppend).unwrap());
    let writers = dir.path().join("writers");
    std::fs::write(&writers, "w1\n").unwrap();
    let args = [
        log.to_str().unwrap(),
        "--public",
        "--write-token-file",
        writers.to_str().unwrap(),
    ];
    let auth = ("authorization", "Bearer w1");
    let text = ("content-type", "text/plain");
    let json = ("content-type", "application/json");
    let body = |a: &Answer| String::from_utf8_lossy(&a.body).into_owned();
    let served = Served::start(&args);
    let addr = served.addr.clone();
    let r = call(&addr, "PUT", "/streams/notes/a", &[auth, text], "hello");
    assert_eq!(r.status, 201, "{}", r.head);
    let r = call(&addr, "POST", "/streams/notes/a", &[auth, text], ", world");
    assert_eq!(r.status, 204, "{}", r.head);
    // A base batch, no Chord-Kind: a chord log.
    let r = call(
        &addr,
        "PUT",
        "/streams/lanes/new",
        &[auth, json],
        r#"[["r",{"n":1}]]"#,
    );
    assert_eq!(r.status, 201, "{}", r.head);
    // The same body as a protocol stream, asked for by name.
    let kind = ("chord-kind", "stream");
    let r = call(
        &addr,
        "PUT",
        "/streams/raw/b",
        &[auth, json, kind],
        r#"[["r",1]]"#,
    );
    assert_eq!(r.status, 201, "{}", r.head);
    // A chord log asked for by name keeps its validation, and says why it refuses.
    let log_kind = ("chord-kind", "log");
    let r = call(
        &addr,
        "PUT",
        "/streams/lanes/bad",
        &[auth, json, log_kind],
        r#"[{"a":1}]"#,
    );
    assert_eq!(r.status, 400, "{}", r.head);
    assert!(
        body(&r).contains("message 0: invalid batch text: a batch must be a JSON array"),
        "{}",
        body(&r)
    );
    let r = call(
        &addr,
        "PUT",
        "/streams/x/y",
        &[auth, text, ("chord-kind", "table")],
        "",
    );
    assert_eq!(r.status, 400, "{}", r.head);
    assert!(
        body(&r).contains("`log`") && body(&r).contains("`stream`"),
        "{}",
        body(&r)
    );
    let r = call(&addr, "PUT", "/streams/lanes/main", &[auth, text, kind], "");
    assert_eq!(r.status, 409, "a chord log is there: {}", body(&r));
    let r = call(&addr, "POST", "/streams/notes/missing", &[auth, text], "x");
    assert_eq!(r.status, 404, "{}", r.head);
    assert!(
        body(&r).contains("create it first with a PUT"),
        "{}",
        body(&r)
    );
    let r = call(&addr, "PUT", "/streams/notes/gone", &[auth, text], "bye");
    assert_eq!(r.status, 201, "{}", r.head);
    let r = call(&addr, "DELETE", "/streams/notes/gone", &[auth], "");
    assert_eq!(r.status, 204, "{}", r.head);
    let (code, stderr) = served.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let journal = std::fs::read_to_string(dir.path().join("agent.jsonl.streams")).unwrap();
    assert!(
        journal.contains("\"notes\"") && !journal.contains("\"lanes\""),
        "{journal}"
    );

    let served = Served::start(&args);
    let addr = served.addr.clone();
    let r = call(&addr, "GET", "/streams/notes/a?offset=-1", &[], "");
    assert_eq!(
        (r.status, body(&r)),
        (200, "hello, world".to_owned()),
        "{}",
        r.head
    );
    assert_eq!(r.header("content-type"), Some("text/plain"));
    let r = call(&addr, "GET", "/streams/raw/b?offset=-1", &[], "");
    assert_eq!(
        (r.status, body(&r)),
        (200, r#"[["r",1]]"#.to_owned()),
        "{}",
        r.head
    );
    let r = call(&addr, "GET", "/streams/notes/gone?offset=-1", &[], "");
    assert_eq!(r.status, 404, "deleted before the restart: {}", r.head);
    let r = call(&addr, "GET", "/streams/lanes/new?offset=-1", &[], "");
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(body(&r).contains(r#"{"n":1}"#), "{}", body(&r));
    let (code, stderr) = served.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

/// Over PostgreSQL, protocol streams live in the schema's table and outlive the node; the
/// first node with writes holds them, and a second one on the same schema starts anyway,
/// saying so, and takes the chord logs' writes only.
#[test]
fn over_postgresql_one_node_holds_the_protocol_streams() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("serve_protocol");
    let url = pg::schema_url(&schema);
    write_lane(PostgresStore::open(&url, Durability::EveryAppend).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let writers = dir.path().join("writers");
    std::fs::write(&writers, "w1\n").unwrap();
    let args = [
        url.as_str(),
        "--public",
        "--write-token-file",
        writers.to_str().unwrap(),
    ];
    let auth = ("authorization", "Bearer w1");
    let text = ("content-type", "text/plain");
    let first = Served::start(&args);
    let r = call(
        &first.addr,
        "PUT",
        "/streams/notes/a",
        &[auth, text],
        "kept",
    );
    assert_eq!(r.status, 201, "{}", r.head);
    let second = Served::start(&args);
    let r = call(&second.addr, "PUT", "/streams/notes/b", &[auth, text], "no");
    assert_eq!(r.status, 501, "no protocol streams here: {}", r.head);
    assert!(
        String::from_utf8_lossy(&r.body).contains("this server keeps chord logs only"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let r = call(
        &second.addr,
        "POST",
        "/streams/lanes/main",
        &[auth, ("content-type", "application/json")],
        r#"[["a",["text"],"!"]]"#,
    );
    assert_eq!(r.status, 204, "a chord log's append: {}", r.head);
    let (code, stderr) = second.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("another node holds the protocol streams"),
        "{stderr}"
    );
    let (code, stderr) = first.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let again = Served::start(&args);
    let r = call(&again.addr, "GET", "/streams/notes/a?offset=-1", &[], "");
    assert_eq!(
        (r.status, String::from_utf8_lossy(&r.body).into_owned()),
        (200, "kept".to_owned()),
        "{}",
        r.head
    );
    let (code, stderr) = again.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
