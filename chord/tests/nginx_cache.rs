//! chord behind nginx, with the shipped configuration (`examples/nginx/nginx.conf`): catch-up
//! reads cached and collapsed, live reads passed through uncached and unbuffered, private reads
//! never shared, each page's origin its own entry.
//!
//! Each test starts Debian's nginx as a child process (no daemon, no privileges needed) with
//! a configuration generated from the shipped file by substitution ([`test_config`]): its TLS
//! and its listening address replaced by plain HTTP on a free loopback port, its upstream
//! nodes by in-process chord servers, its paths by a temporary directory. Every substitution
//! must find what it replaces, so the file and this test cannot drift apart. The origin
//! counts every request it is sent (a tower layer around the router), which is what the
//! tests assert on: how many reads reached a node, never how long anything took.
//!
//! nginx is `$CHORD_TEST_NGINX`, or `nginx` on the `PATH` (or in `/usr/sbin`); without it
//! each test prints a `SKIPPED` line, and under `CI=true` it fails (`scripts/test` installs
//! Debian's `nginx` package).

#[path = "support/skip.rs"]
mod skip;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{self, Log, Streams};
use chord::{path, Op};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Barrier;

/// The configuration a deployment uses; the tests run it, substituted.
const SHIPPED: &str = include_str!("../../examples/nginx/nginx.conf");

/// What a deployment whose streams every reader may see sets (docs/deployment.md).
const PUBLIC: &str = "public, max-age=60, stale-while-revalidate=300";

/// A bound on waiting for things that should happen, so a broken build fails rather than
/// hangs; nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(120);

/// How many readers join the stream at once.
const READERS: usize = 1_000;

/// The most origin reads of one URL the joining readers may cause: nginx's cache lock lets one
/// through and holds the rest, so anything near the number of readers means no collapsing.
const MOST_ORIGIN_READS: usize = 50;

/// The nginx binary, or why there is none.
fn nginx() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CHORD_TEST_NGINX") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("CHORD_TEST_NGINX={} is no file", path.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            "no nginx on the PATH nor in /usr/sbin (apt-get install nginx, or set \
             CHORD_TEST_NGINX)"
                .to_owned()
        })
}

/// The nginx binary; `None` (after a `SKIPPED` line) without one, unless under `CI=true`.
fn nginx_or_skip(test: &str) -> Option<PathBuf> {
    match nginx() {
        Ok(path) => Some(path),
        Err(why) => {
            skip::skip(test, &why);
            None
        }
    }
}

/// Replaces the one occurrence of `from` in `text`; fails the test when there is not
/// exactly one (the shipped configuration changed under the test).
fn replace_once(text: &mut String, from: &str, to: &str) {
    let found = text.matches(from).count();
    assert_eq!(
        found, 1,
        "examples/nginx/nginx.conf should hold {from:?} once, holds it {found} times: \
         update nginx_cache.rs's test_config with it"
    );
    *text = text.replacen(from, to, 1);
}

/// The shipped configuration for a test: plain HTTP on `127.0.0.1:port`, the upstream nodes
/// `nodes`, every path in `dir`. Nothing else changes.
fn test_config(dir: &Path, port: u16, nodes: &[SocketAddr]) -> String {
    let dir = dir.display();
    let mut text = SHIPPED.to_owned();
    // A master running as root starts its workers as this user; one that is not root keeps
    // its own, and the directive would only draw a warning.
    let user = if rustix::process::geteuid().is_root() {
        "user root;\n"
    } else {
        ""
    };
    replace_once(&mut text, "user www-data;\n", user);
    replace_once(&mut text, "/run/nginx.pid", &format!("{dir}/nginx.pid"));
    replace_once(
        &mut text,
        "/var/log/nginx/chord.error.log",
        &format!("{dir}/error.log"),
    );
    replace_once(
        &mut text,
        "/var/log/nginx/chord.access.log",
        &format!("{dir}/access.log"),
    );
    replace_once(&mut text, "/var/cache/nginx/chord", &format!("{dir}/cache"));
    // The compiled-in temporary directories are the system's (`/var/lib/nginx`).
    let temp: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
        .iter()
        .map(|kind| format!("    {kind}_temp_path {dir}/{kind}_temp;\n"))
        .collect();
    replace_once(&mut text, "http {\n", &format!("http {{\n{temp}"));
    // TLS and HTTP/2 off, a free port: the backlog holds the readers all connecting at once.
    replace_once(
        &mut text,
        "        listen 443 ssl http2;\n        listen [::]:443 ssl http2;\n",
        &format!("        listen 127.0.0.1:{port} backlog=4096;\n"),
    );
    let mut out = String::new();
    let (mut tls, mut servers) = (0, 0);
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("ssl_") {
            tls += 1;
        } else if let Some(node) = trimmed.strip_prefix("server 10.0.0.") {
            // The first node's line, its parameters kept, becomes the test's nodes; the
            // others go.
            if servers == 0 {
                let parameters = node.split_once(' ').map_or(";", |(_, rest)| rest);
                for node in nodes {
                    out.push_str(&format!("        server {node} {parameters}\n"));
                }
            }
            servers += 1;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert_eq!(
        tls, 5,
        "examples/nginx/nginx.conf's ssl_ directives changed"
    );
    assert_eq!(
        servers, 3,
        "examples/nginx/nginx.conf's upstream nodes changed"
    );
    out
}

/// nginx, running with [`test_config`] until dropped.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx in front of `nodes` and waits until it accepts connections.
    fn start(binary: &Path, nodes: &[SocketAddr]) -> Nginx {
        // A port found free may be taken before nginx binds it: then try another.
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let conf = dir.path().join("nginx.conf");
            std::fs::write(&conf, test_config(dir.path(), port, nodes)).unwrap();
            let out = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
            let child = Command::new(binary)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(&conf)
                .args(["-e", "stderr", "-g", "daemon off;"])
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
            let mut nginx = Nginx {
                child,
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                dir,
            };
            let started = Instant::now();
            loop {
                if let Some(status) = nginx.child.try_wait().unwrap() {
                    let log = nginx.log();
                    if log.contains("Address already in use") {
                        break;
                    }
                    panic!("nginx exited ({status}) at start:\n{log}");
                }
                if std::net::TcpStream::connect(nginx.addr).is_ok() {
                    return nginx;
                }
                assert!(
                    started.elapsed() < PATIENCE,
                    "nginx never listened:\n{}",
                    nginx.log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("no free port for nginx after 5 tries");
    }

    /// The access log's lines (the shipped `chord` format), as requests: what each asked
    /// for and whether a node answered it.
    fn access(&self) -> Vec<Logged> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines().map(Logged::parse).collect()
    }

    /// What nginx wrote to its standard error and its error log.
    fn log(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name));
        format!(
            "{}{}",
            read("stderr.log").unwrap_or_default(),
            read("error.log").unwrap_or_default()
        )
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM to the master: it stops its workers and exits (a SIGKILL would orphan them).
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of the access log in the shipped `chord` format:
/// `addr [time] "GET /target HTTP/1.1" 200 123 cache=HIT upstream=- rt=0.000`.
#[derive(Debug)]
struct Logged {
    method: String,
    target: String,
    status: u16,
    cache: String,
    /// Whether a node was sent the request (`upstream=` names one, not `-`).
    origin: bool,
}

impl Logged {
    fn parse(line: &str) -> Logged {
        let request = line
            .split('"')
            .nth(1)
            .unwrap_or_else(|| panic!("an access log line without a request: {line}"));
        let mut parts = request.split(' ');
        let field = |name: &str| {
            line.split(' ')
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in the access log line {line}"))
                .to_owned()
        };
        let status = line
            .split('"')
            .nth(2)
            .and_then(|after| after.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in the access log line {line}"));
        Logged {
            method: parts.next().unwrap_or_default().to_owned(),
            target: parts.next().unwrap_or_default().to_owned(),
            status,
            cache: field("cache="),
            origin: field("upstream=") != "-",
        }
    }
}

/// Requests the origin was sent and the body bytes it sent back, by `"METHOD path?query"`.
#[derive(Clone, Default)]
struct Counts {
    requests: Arc<Mutex<HashMap<String, usize>>>,
    sent: Arc<Mutex<HashMap<String, u64>>>,
}

impl Counts {
    fn of(&self, method: &str, target: &str) -> usize {
        let key = format!("{method} {target}");
        self.requests
            .lock()
            .unwrap()
            .get(&key)
            .copied()
            .unwrap_or(0)
    }

    /// The body bytes the origin's router handed its connections for `target`.
    fn sent(&self, method: &str, target: &str) -> u64 {
        let key = format!("{method} {target}");
        self.sent.lock().unwrap().get(&key).copied().unwrap_or(0)
    }

    /// The body bytes sent for `target` once the origin sends no more: the same count three
    /// times in a row, half a second apart.
    async fn settled(&self, method: &str, target: &str) -> u64 {
        let started = Instant::now();
        let (mut sent, mut same) = (0, 0);
        while same < 3 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.sent(method, target);
            same = if now == sent && now > 0 { same + 1 } else { 0 };
            sent = now;
            assert!(
                started.elapsed() < PATIENCE,
                "the origin never stopped sending {method} {target}"
            );
        }
        sent
    }

    /// Waits until the origin was sent `n` requests for `target`.
    async fn reach(&self, method: &str, target: &str, n: usize) {
        let started = Instant::now();
        while self.of(method, target) < n {
            assert!(
                started.elapsed() < PATIENCE,
                "the origin never saw {n} of {method} {target}: {:?}",
                self.requests.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// `router` with every request it is sent, and every body byte it answers, counted in
/// `counts`. A body's bytes are counted as the connection takes them, so a response whose
/// reader stopped stops growing.
fn counted(router: Router, counts: &Counts) -> Router {
    let counts = counts.clone();
    router.layer(middleware::from_fn(move |request: Request, next: Next| {
        let counts = counts.clone();
        async move {
            let key = format!(
                "{} {}",
                request.method(),
                request.uri().path_and_query().map_or("", |p| p.as_str())
            );
            *counts
                .requests
                .lock()
                .unwrap()
                .entry(key.clone())
                .or_default() += 1;
            let (parts, body) = next.run(request).await.into_parts();
            let body = body.map_frame(move |frame| {
                if let Some(data) = frame.data_ref() {
                    *counts.sent.lock().unwrap().entry(key.clone()).or_default() +=
                        data.len() as u64;
                }
                frame
            });
            Response::from_parts(parts, Body::new(body))
        }
    }))
}

/// A log with one stream (a base batch and appends of about 1 KB each), served by counted
/// nodes.
struct Origin {
    dir: tempfile::TempDir,
    writer: LogWriter<Log<JsonlStore>>,
    log: Log<JsonlStore>,
    lane: Address,
    counts: Counts,
}

/// Appends after the base batch.
const BATCHES: usize = 400;

impl Origin {
    fn new() -> Origin {
        Origin::of(BATCHES)
    }

    /// A base batch and `batches` appends of about 1 KB each.
    fn of(batches: usize) -> Origin {
        let dir = tempfile::tempdir().unwrap();
        let grouped = Durability::Grouped {
            max_batches: 64,
            max_delay: Duration::from_millis(5),
        };
        let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), grouped).unwrap());
        let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
        let lane = Address::new("lanes", "main");
        writer
            .append(&lane, &[Op::Replace(json!({"text": ""}))])
            .unwrap();
        let mut origin = Origin {
            dir,
            writer,
            log,
            lane,
            counts: Counts::default(),
        };
        origin.grow(batches);
        origin
    }

    /// Appends `batches` batches of about 1 KB each.
    fn grow(&mut self, batches: usize) {
        for i in 0..batches {
            let chunk = format!("[{i:>5}] {}\n", "token ".repeat(170));
            self.writer
                .append(&self.lane, &[Op::Append(path!["text"], chunk)])
                .unwrap();
        }
    }

    /// The bytes of the log's file.
    fn size(&self) -> u64 {
        std::fs::metadata(self.dir.path().join("log.jsonl"))
            .unwrap()
            .len()
    }

    /// Serves the log on `nodes` listeners (the upstream's nodes), with `cache_control` on
    /// catch-up reads (`None`: chord's default).
    async fn serve(&self, nodes: usize, cache_control: Option<&'static str>) -> Vec<SocketAddr> {
        self.serve_with(nodes, |streams| match cache_control {
            Some(value) => streams.cache_control(HeaderValue::from_static(value)),
            None => streams,
        })
        .await
    }

    /// Serves the log on `nodes` listeners, its [`Streams`] configured by `configure`.
    async fn serve_with(
        &self,
        nodes: usize,
        configure: impl FnOnce(Streams) -> Streams,
    ) -> Vec<SocketAddr> {
        let streams = configure(Streams::new(&self.log).long_poll(Duration::from_secs(30)));
        let app = counted(streams.router(), &self.counts);
        let mut addrs = Vec::new();
        for _ in 0..nodes {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addrs.push(listener.local_addr().unwrap());
            tokio::spawn(streams::serve(
                listener,
                app.clone(),
                std::future::pending(),
            ));
        }
        addrs
    }

    fn path(&self) -> String {
        streams::stream_path(&self.lane)
    }

    /// Appends one batch carrying `marker`, off the runtime's worker.
    fn append(&mut self, marker: &str) {
        let ops = [Op::Append(path!["text"], marker.into())];
        tokio::task::block_in_place(|| self.writer.append(&self.lane, &ops).unwrap());
    }
}

/// A response, read to its end (HTTP/1.0: no chunked encoding, the connection closes).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn parse(raw: &[u8]) -> Reply {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no end of headers in {:?}", String::from_utf8_lossy(raw)));
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {head:?}"));
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        Reply {
            status,
            headers,
            body: raw[end + 4..].to_vec(),
        }
    }
}

fn request(method: &str, target: &str) -> String {
    format!("{method} {target} HTTP/1.0\r\nHost: streams.test\r\n\r\n")
}

/// One request to `addr`, its whole response.
async fn send(addr: SocketAddr, method: &str, target: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(request(method, target).as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("a response within the patience")
        .unwrap();
    Reply::parse(&raw)
}

/// Reads from `stream` into `seen` until it holds `needle`.
async fn read_until(stream: &mut TcpStream, seen: &mut Vec<u8>, needle: &str) {
    let found = |seen: &[u8]| String::from_utf8_lossy(seen).contains(needle);
    let waiting = async {
        let mut buf = [0u8; 16 * 1024];
        while !found(seen) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "the connection closed before {needle:?}: {:?}",
                String::from_utf8_lossy(seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(PATIENCE, waiting)
        .await
        .unwrap_or_else(|_| panic!("no {needle:?} within the patience"));
}

/// Raises the soft open-file limit to `needed` (or the hard limit, if lower); the limit then
/// in force.
fn raise_fd_limit(needed: u64) -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if soft >= needed {
        return soft;
    }
    let raised = Rlimit {
        current: Some(needed.min(hard)),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => needed.min(hard),
        Err(_) => soft,
    }
}

/// The number of batches in a catch-up body (a JSON array of wire batches).
fn batches(body: &[u8]) -> usize {
    let value: Value = serde_json::from_slice(body).expect("a catch-up body is a JSON array");
    value.as_array().expect("a JSON array").len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_readers_joining_at_once_cost_the_origin_a_few_reads() {
    let Some(binary) = nginx_or_skip("nginx_cache::a_thousand_readers_joining_at_once") else {
        return;
    };
    // Each reader holds a socket here and one or two files in an nginx worker (which inherits
    // the limit).
    let needed = 2 * READERS as u64 + 256;
    let fds = raise_fd_limit(needed);
    assert!(
        fds >= needed,
        "{READERS} readers need about {needed} open files and the hard limit allows {fds}: \
         raise it (ulimit -n)"
    );
    let origin = Origin::new();
    let nodes = origin.serve(2, Some(PUBLIC)).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let path = origin.path();

    // A fresh reader's two ways in: the oldest base kept (`-1`), and the latest base, named
    // by a `HEAD` (which nginx always sends on, as a `HEAD`).
    let head = send(proxy.addr, "HEAD", &path).await;
    assert_eq!(head.status, 200, "{}", proxy.log());
    assert_eq!(head.header("x-cache-status"), Some("BYPASS"));
    assert_eq!(origin.counts.of("HEAD", &path), 1);
    let base = head
        .header(streams::BASE_OFFSET_HEADER)
        .expect("a HEAD names the latest base")
        .to_owned();
    let targets = [format!("{path}?offset=-1"), format!("{path}?offset={base}")];

    // Every reader connects first, then all send their requests together.
    let barrier = Arc::new(Barrier::new(READERS));
    let mut readers = Vec::with_capacity(READERS);
    for i in 0..READERS {
        let target = targets[i % 2].clone();
        let barrier = Arc::clone(&barrier);
        let addr = proxy.addr;
        readers.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            barrier.wait().await;
            stream
                .write_all(request("GET", &target).as_bytes())
                .await
                .unwrap();
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await.unwrap();
            (i % 2, Reply::parse(&raw))
        }));
    }
    let mut replies = Vec::with_capacity(READERS);
    for reader in readers {
        replies.push(
            tokio::time::timeout(PATIENCE, reader)
                .await
                .expect("every reader answered within the patience")
                .unwrap(),
        );
    }
    let origin_reads = targets.clone().map(|t| origin.counts.of("GET", &t));

    // What each URL holds, read from a node directly (not through nginx).
    let mut expected = Vec::new();
    for target in &targets {
        let direct = send(nodes[0], "GET", target).await;
        assert_eq!(direct.status, 200);
        assert_eq!(batches(&direct.body), 1 + BATCHES);
        expected.push(direct.body);
    }
    let mut statuses: HashMap<String, usize> = HashMap::new();
    for (which, reply) in &replies {
        assert_eq!(reply.status, 200, "{}", proxy.log());
        assert!(
            reply.body == expected[*which],
            "a reader through nginx got {} bytes of {}, not the {} bytes the node serves",
            reply.body.len(),
            targets[*which],
            expected[*which].len()
        );
        let status = reply.header("x-cache-status").unwrap_or("none").to_owned();
        *statuses.entry(status).or_default() += 1;
    }
    println!(
        "nginx_cache: {READERS} readers joining at once ({} bytes each; half at offset=-1, \
         half at offset={base}) cost the origin {} and {} reads; cache statuses {statuses:?}",
        expected[0].len(),
        origin_reads[0],
        origin_reads[1]
    );
    for (target, reads) in targets.iter().zip(origin_reads) {
        assert!(
            (1..MOST_ORIGIN_READS).contains(&reads),
            "{READERS} readers of {target} through nginx cost the origin {reads} reads: \
             the cache and its lock should let a few through ({statuses:?})"
        );
    }
}

/// The Node side of [`a_thousand_javascript_followers_cost_the_origin_a_request_per_url`], run
/// from `js/`: `node -e JOINERS <url> <n> <marker>`. Starts `n` followers of `url` at once
/// (the package's `follow`, nothing else), prints `joined` once each has its value, then
/// waits for a batch ending in `marker` to reach every one of them, stops them, and prints
/// their values (the distinct ones), stats, and when the last of them had the batch (`at`,
/// milliseconds since the Unix epoch, read every 10 ms) as JSON.
const JOINERS: &str = r#"
import { follow, Replica } from './chord-replica.mjs';

const [url, count, marker] = process.argv.slice(1);
const errors = [];
const followers = Array.from({ length: Number(count) }, () =>
  follow(url, { replica: new Replica(), backoffMin: 50, backoffMax: 1000, onError: (e) => errors.push(e.message) }));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const report = () => JSON.stringify({
  values: [...new Set(followers.map((f) => JSON.stringify(f.replica.value ?? null)))].map((v) => JSON.parse(v)),
  starts: followers.map((f) => f.stats.starts).reduce((a, b) => a + b, 0),
  bases: followers.map((f) => f.stats.bases).reduce((a, b) => a + b, 0),
  errors: [...new Set(errors)],
  at: typeof at === 'undefined' ? null : at,
});
const timer = setTimeout(() => { console.error(report()); process.exit(1); }, 120_000);
while (!followers.every((f) => f.offset !== null)) await sleep(10);
console.log('joined');
while (!followers.every((f) => f.replica.value?.text?.endsWith(marker))) await sleep(10);
const at = Date.now();
for (const f of followers) f.stop();
await Promise.all(followers.map((f) => f.done));
console.log(report());
clearTimeout(timer);
process.exit(0);
"#;

/// The most requests of one catch-up URL that 1,000 joining followers may cost the nodes.
const MOST_JOIN_READS: usize = 10;

/// 1,000 of the JavaScript package's followers join a public stream through the shipped
/// nginx at once: each joins with `GET ?offset=base` (the same URL for all, so the cache
/// answers it) and no `HEAD`, then reads live from where that answer ends. Counted from
/// nginx's access log (and checked against the nodes' own count): every catch-up URL reached
/// a node at most [`MOST_JOIN_READS`] times; only the live reads, one per follower, all
/// reached a node. Each follower holds the stream's value, and a batch appended after they
/// joined reaches every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_javascript_followers_cost_the_origin_a_request_per_url() {
    use std::io::BufRead;

    let Some(binary) = nginx_or_skip("nginx_cache::a_thousand_javascript_followers") else {
        return;
    };
    // Each follower holds two sockets (its catch-up's and its live read's, the first given
    // back) in Node, and a live read two files in an nginx worker.
    let needed = 3 * READERS as u64 + 256;
    let fds = raise_fd_limit(needed);
    assert!(
        fds >= needed,
        "{READERS} followers need about {needed} open files and the hard limit allows {fds}: \
         raise it (ulimit -n)"
    );
    // A small stream: what is counted is requests, not bytes, and 1,000 replicas share
    // one Node process.
    const APPENDS: usize = 40;
    let mut origin = Origin::of(APPENDS);
    let nodes = origin.serve(2, Some(PUBLIC)).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let path = origin.path();
    let url = format!("http://{}{path}", proxy.addr);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new("node")
        .args(["--input-type=module", "-e", JOINERS, &url])
        .args([&READERS.to_string(), "[the end]"])
        .current_dir(root.join("js"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_line = || tokio::task::block_in_place(|| lines.next());
    let joined = next_line();
    if !matches!(&joined, Some(Ok(line)) if line == "joined") {
        let out = child.wait_with_output().unwrap();
        panic!(
            "the followers never joined ({joined:?}): {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            proxy.log()
        );
    }
    origin.append("[the end]");
    let report = next_line();
    let status = tokio::task::block_in_place(|| child.wait()).unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        status.success(),
        "the followers failed: {report:?}\n{stderr}"
    );
    let report: Value = serde_json::from_str(&report.unwrap().unwrap()).unwrap();

    // Every follower holds the stream's value, the late batch included, from one start.
    let mut text: String = (0..APPENDS)
        .map(|i| format!("[{i:>5}] {}\n", "token ".repeat(170)))
        .collect();
    text.push_str("[the end]");
    assert_eq!(
        report["values"],
        json!([{ "text": text }]),
        "{}",
        report["errors"]
    );
    assert_eq!(report["starts"], READERS, "{report}");
    assert_eq!(report["bases"], READERS, "one base each: {report}");

    // What reached the nodes, from nginx's access log. The live reads end when the
    // followers stop; their lines are written as nginx sees the connections close.
    let live = |l: &Logged| l.target.contains("live=");
    let started = Instant::now();
    let logged = loop {
        let logged = proxy.access();
        if logged.iter().filter(|l| live(l)).count() >= READERS {
            break logged;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "nginx logged {} live reads of {READERS}",
            logged.iter().filter(|l| live(l)).count()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut to_origin: HashMap<String, usize> = HashMap::new();
    let mut statuses: HashMap<String, usize> = HashMap::new();
    for l in logged.iter().filter(|l| !live(l)) {
        assert_eq!(l.method, "GET", "a follower sent {l:?}");
        *statuses.entry(l.cache.clone()).or_default() += 1;
        if l.origin {
            *to_origin.entry(l.target.clone()).or_default() += 1;
        }
    }
    let joins = format!("{path}?offset=base");
    let catch_ups = logged.iter().filter(|l| !live(l)).count();
    let live_to_origin = logged.iter().filter(|l| live(l) && l.origin).count();
    println!(
        "nginx_cache: {READERS} JavaScript followers joining at once sent {catch_ups} catch-up \
         reads (cache statuses {statuses:?}); the nodes were sent {to_origin:?} of them and \
         {live_to_origin} live reads; no HEAD"
    );
    assert_eq!(
        logged.iter().filter(|l| l.target == joins).count(),
        READERS,
        "each follower joined with {joins}"
    );
    assert!(
        logged.iter().all(|l| l.method != "HEAD"),
        "a follower sent a HEAD"
    );
    assert_eq!(origin.counts.of("HEAD", &path), 0);
    for (target, reads) in &to_origin {
        assert!(
            *reads <= MOST_JOIN_READS,
            "{READERS} followers cost the nodes {reads} requests of {target} ({statuses:?})"
        );
        // The log and the nodes agree.
        assert_eq!(origin.counts.of("GET", target), *reads, "{target}");
    }
    assert!(to_origin.contains_key(&joins), "{to_origin:?}");
    assert_eq!(live_to_origin, READERS, "live reads are never cached");
}

/// How many followers of each kind join in the first crowd, and in the second.
const CROWDS: [usize; 2] = [1_000, 300];

/// How long after the first crowd the second joins: within the `max-age` of the shipped
/// policy, so the second crowd joins from the first crowd's cached answer, 45 s old.
const LATER: Duration = Duration::from_secs(45);

/// A producer appending a token every 50 ms (20 batches a second) with a checkpoint every 6
/// batches, and two crowds of followers joining through the shipped nginx 45 s apart, each
/// with [`CROWDS`] JavaScript followers (`follow`) and as many Rust replicas
/// (`chord::replica`). The second crowd joins from the first crowd's cached answer to
/// `offset=base`, whose `Stream-Next-Offset` is 45 s (about 900 batches, some 150 checkpoints)
/// old: the log's time floor still serves it, so no live read meets `410`. Counted from
/// nginx's log: every catch-up URL reached a node at most [`MOST_JOIN_READS`] times, no
/// answer was a `410`; each follower started once from one base; and once the producer
/// appends its last batch, every follower of both crowds holds the producer's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_crowds_joining_from_a_cached_answer_meet_no_gone() {
    use std::io::BufRead;
    use std::sync::atomic::{AtomicBool, Ordering};

    let Some(binary) = nginx_or_skip("nginx_cache::two_crowds_joining_from_a_cached_answer") else {
        return;
    };
    let followers: usize = CROWDS.iter().sum::<usize>() * 2;
    // Per follower: its socket here or in Node, and two files in an nginx worker; per
    // live read a node's socket here.
    let needed = 4 * followers as u64 + 256;
    let fds = raise_fd_limit(needed);
    assert!(
        fds >= needed,
        "{followers} followers need about {needed} open files and the hard limit allows \
         {fds}: raise it (ulimit -n)"
    );
    let dir = tempfile::tempdir().unwrap();
    let grouped = Durability::Grouped {
        max_batches: 64,
        max_delay: Duration::from_millis(5),
    };
    // The defaults: four bases and the 6-minute time floor.
    let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), grouped).unwrap());
    let lane = Address::new("lanes", "main");
    let mut writer = LogWriter::new(log.clone(), Checkpoint::EveryBatches(6));
    writer
        .append(&lane, &[Op::Replace(json!({"text": "", "n": 0}))])
        .unwrap();
    let counts = Counts::default();
    let streams = Streams::new(&log).cache_control(HeaderValue::from_static(PUBLIC));
    let app = counted(streams.router(), &counts);
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        nodes.push(listener.local_addr().unwrap());
        tokio::spawn(streams::serve(
            listener,
            app.clone(),
            std::future::pending(),
        ));
    }
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let path = streams::stream_path(&lane);
    let url = format!("http://{}{path}", proxy.addr);

    // The producer: a token every 50 ms until told to stop, then the last batch.
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (stop, lane) = (Arc::clone(&stop), lane.clone());
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) {
                n += 1;
                let token = format!("[{n}]");
                text.push_str(&token);
                let ops = [
                    Op::Append(path!["text"], token),
                    Op::Set(path!["n"], json!(n)),
                ];
                writer.append(&lane, &ops).unwrap();
                std::thread::sleep(Duration::from_millis(50));
            }
            text.push_str("[the end]");
            writer
                .append(&lane, &[Op::Append(path!["text"], "[the end]".into())])
                .unwrap();
            json!({"text": text, "n": n})
        })
    };

    // A crowd: `n` JavaScript followers in a Node process of their own, and `n` Rust
    // replicas here; returned once every one of them has joined.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crowd = |n: usize| {
        let mut child = Command::new("node")
            .args(["--input-type=module", "-e", JOINERS, &url])
            .args([&n.to_string(), "[the end]"])
            .current_dir(root.join("js"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));
        let replicas: Vec<chord::replica::Replica> = (0..n)
            .map(|_| chord::replica::Replica::connect(&url).unwrap())
            .collect();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let joined = tokio::task::block_in_place(|| lines.next());
        if !matches!(&joined, Some(Ok(line)) if line == "joined") {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the JavaScript followers never joined ({joined:?}): {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                proxy.log()
            );
        }
        (child, lines, replicas)
    };
    let live_count = |replicas: &[chord::replica::Replica]| {
        replicas.iter().filter(|r| r.watch().borrow().live).count()
    };
    let first = crowd(CROWDS[0]);
    let started = Instant::now();
    while live_count(&first.2) < CROWDS[0] {
        assert!(
            started.elapsed() < PATIENCE,
            "the first crowd's replicas never went live"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(LATER).await;
    let second = crowd(CROWDS[1]);
    let started = Instant::now();
    while live_count(&second.2) < CROWDS[1] {
        assert!(
            started.elapsed() < PATIENCE,
            "the second crowd's replicas never went live"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The last batch, and every follower of both crowds holding it: each Rust replica
    // watched from now on, noting when it had it.
    let reached: Vec<_> = first
        .2
        .iter()
        .chain(&second.2)
        .map(|replica| {
            let mut changes = replica.watch();
            tokio::spawn(async move {
                let ended = |s: &chord::replica::State| {
                    s.value
                        .as_ref()
                        .and_then(|v| v["text"].as_str())
                        .is_some_and(|t| t.ends_with("[the end]"))
                };
                while !ended(&changes.borrow_and_update()) {
                    if changes.changed().await.is_err() {
                        break;
                    }
                }
                std::time::SystemTime::now()
            })
        })
        .collect();
    stop.store(true, Ordering::Release);
    let last = tokio::task::block_in_place(|| producer.join().unwrap());
    let appended = std::time::SystemTime::now();
    let mut reports = Vec::new();
    for (n, (mut child, mut lines, replicas)) in [(CROWDS[0], first), (CROWDS[1], second)] {
        let report = tokio::task::block_in_place(|| lines.next());
        let status = tokio::task::block_in_place(|| child.wait()).unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(
            status.success(),
            "the followers failed: {report:?}\n{stderr}"
        );
        let report: Value = serde_json::from_str(&report.unwrap().unwrap()).unwrap();
        assert_eq!(report["values"], json!([last]), "{}", report["errors"]);
        assert_eq!(report["starts"], n, "one start each: {report}");
        assert_eq!(report["bases"], n, "one base each: {report}");
        for replica in &replicas {
            let reached = tokio::time::timeout(
                PATIENCE,
                replica.wait_until(|s| s.value.as_ref() == Some(&last)),
            )
            .await;
            let stats = replica.stats();
            assert!(
                reached.is_ok(),
                "a Rust replica never got the last batch: {stats:?}"
            );
            assert_eq!(
                (stats.subscriptions, stats.bases),
                (1, 1),
                "a Rust replica started once, from one base: {stats:?}"
            );
        }
        reports.push(report);
    }
    // How long after the last batch was appended the last follower of each kind had it (a
    // measurement: the Node process reads its followers every 10 ms).
    let after = |at: std::time::SystemTime| at.duration_since(appended).unwrap_or_default();
    let mut rust = Duration::ZERO;
    for waiting in reached {
        rust = rust.max(after(waiting.await.unwrap()));
    }
    let javascript: Vec<Duration> = reports
        .iter()
        .map(|r| {
            let at = r["at"]
                .as_u64()
                .expect("the time the followers had the last batch");
            after(std::time::UNIX_EPOCH + Duration::from_millis(at))
        })
        .collect();

    // What reached the nodes, from nginx's log (the live reads are logged as they end).
    let live = |l: &Logged| l.target.contains("live=");
    let total = 2 * CROWDS.iter().sum::<usize>();
    let logged = proxy.access();
    let gone: Vec<&Logged> = logged.iter().filter(|l| l.status == 410).collect();
    let mut to_origin: HashMap<String, usize> = HashMap::new();
    for l in logged.iter().filter(|l| !live(l)) {
        if l.origin {
            *to_origin.entry(l.target.clone()).or_default() += 1;
        }
    }
    let joins = format!("{path}?offset=base");
    println!(
        "nginx_cache: two crowds of {CROWDS:?} JavaScript followers and as many Rust replicas, \
         45 s apart, at 20 batches a second and a checkpoint every 6: {} requests logged, \
         {} answered 410; the nodes were sent {to_origin:?} catch-up reads; the last \
         JavaScript follower of each crowd held the last batch {javascript:?} after it was \
         appended, the last Rust replica {rust:?}",
        logged.len(),
        gone.len(),
    );
    // What the live reads cost the nodes, by the offset they started at: the second crowd's
    // replay of the window its cached answer is behind.
    let mut live_reads: Vec<(u64, usize, u64)> = counts
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(key, n)| {
            let offset = key.split("offset=").nth(1)?.split('&').next()?;
            key.contains("live=sse").then(|| {
                let sent = counts.sent.lock().unwrap().get(key).copied().unwrap_or(0);
                (seq(offset), *n, sent)
            })
        })
        .collect();
    live_reads.sort_unstable();
    println!(
        "nginx_cache: live reads by the record they started after (seq, reads, bytes sent \
         until the end): {live_reads:?}; the last batch is record {}",
        chord::store::Store::read_list(&log, &lane, &chord::store::ReadOptions::desc().limit(1))
            .unwrap()
            .records[0]
            .seq
    );
    assert!(gone.is_empty(), "answers of 410: {gone:?}");
    assert_eq!(
        logged.iter().filter(|l| l.target == joins).count(),
        total,
        "each follower joined once, with {joins}"
    );
    for (target, reads) in &to_origin {
        assert!(
            *reads <= MOST_JOIN_READS,
            "{total} followers cost the nodes {reads} requests of {target}"
        );
    }
    assert_eq!(counts.of("GET", &joins), to_origin[&joins]);
}

/// With a read hook, nothing a request with a credential was answered reaches a request
/// without it through the shipped nginx, whatever cache policy the server was given: every
/// read varies on the credential, so nginx keys what it stores by it. For each policy, a
/// reader with a token reads (twice: the second may come from the cache), then requests
/// without a token and with another token are refused (`401`/`403`), never served the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorized_read_never_reaches_a_request_without_its_credential() {
    let Some(binary) = nginx_or_skip("nginx_cache::an_authorized_read_never_reaches") else {
        return;
    };
    let policies = [
        PUBLIC,
        "max-age=60",
        "s-maxage=60",
        "must-revalidate, max-age=60",
        "private, max-age=60",
        "no-cache",
        "no-store",
    ];
    let origin = Origin::of(4);
    let path = origin.path();
    for policy in policies {
        let nodes = origin
            .serve_with(1, |streams| {
                streams
                    .reads(
                        |r| match r.headers.get("authorization").and_then(|v| v.to_str().ok()) {
                            Some("Bearer reader") => streams::Access::Allow,
                            Some(_) => streams::Access::Forbidden,
                            None => streams::Access::Unauthorized,
                        },
                    )
                    .cache_control(HeaderValue::from_static(policy))
            })
            .await;
        let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
        for target in [
            format!("{path}?offset=-1"),
            format!("{path}?offset=base"),
            format!("{path}?offset=0000000000000001"),
        ] {
            let ask = |token: Option<&str>| {
                let auth =
                    token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
                format!("GET {target} HTTP/1.0\r\nHost: streams.test\r\n{auth}\r\n")
            };
            let exchange = |text: String| async move {
                let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
                stream.write_all(text.as_bytes()).await.unwrap();
                let mut raw = Vec::new();
                stream.read_to_end(&mut raw).await.unwrap();
                Reply::parse(&raw)
            };
            for _ in 0..2 {
                let reply = exchange(ask(Some("reader"))).await;
                assert_eq!(reply.status, 200, "{policy}: {target}: {}", proxy.log());
                assert!(!reply.body.is_empty());
            }
            for (token, status) in [(None, 401), (Some("someone-else"), 403), (None, 401)] {
                let reply = exchange(ask(token)).await;
                assert_eq!(
                    (reply.status, reply.body.len()),
                    (status, 0),
                    "{policy}: {target} with {token:?} was answered from what a reader with a \
                     token was given (cache {:?})",
                    reply.header("x-cache-status")
                );
            }
        }
    }
}

/// A node that can be stopped (drained, as on SIGTERM) and started again on its address, as
/// a rolling restart does to each node in turn.
struct Node {
    addr: SocketAddr,
    app: Router,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Node {
    /// Serves `app` on `addr` (port 0: a free one).
    async fn start(addr: SocketAddr, app: Router) -> Node {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = streams::Server::new().drain(Duration::from_secs(5));
        let task = tokio::spawn(server.serve(listener, app.clone(), async {
            let _ = stopped.await;
        }));
        Node {
            addr,
            app,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Drains and stops the node; returns once it has closed its connections.
    async fn stop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        let stopped = tokio::time::timeout(PATIENCE, self.task.take().unwrap()).await;
        stopped.expect("the node drained").unwrap().unwrap();
    }

    /// The node started again on its address.
    async fn restart(&mut self) {
        *self = Node::start(self.addr, self.app.clone()).await;
    }
}

/// The seq of an offset (16 hex digits).
fn seq(offset: &str) -> u64 {
    u64::from_str_radix(offset, 16).unwrap_or_else(|_| panic!("not an offset: {offset}"))
}

/// What a reader behind nginx saw: answers of 500 or more, and how many batches it got.
#[derive(Default)]
struct Seen {
    failures: Vec<String>,
    batches: usize,
    requests: usize,
}

/// Three nodes behind the shipped configuration restarted in turn (each drained, down for
/// half a second while batches are appended, then up again) under 40 readers: long-polls
/// following the tail and catch-up reads from the start, through nginx, as fast as they can.
/// No answer of 500 or more reaches a reader, each long-poll reader receives every batch
/// once, and nginx's log shows requests it sent on to another node because the first was
/// down (so the restarts did meet requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_nginx_gives_readers_no_5xx() {
    let Some(binary) = nginx_or_skip("nginx_cache::a_rolling_restart") else {
        return;
    };
    let mut origin = Origin::of(10);
    // chord's default cache policy (private): every read reaches a node.
    let app = counted(
        Streams::new(&origin.log)
            .long_poll(Duration::from_secs(30))
            .router(),
        &origin.counts,
    );
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(Node::start(SocketAddr::from(([127, 0, 0, 1], 0)), app.clone()).await);
    }
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &addrs));
    let path = origin.path();
    // Offsets read from a node directly, not through what is under test.
    let tail = send(nodes[0].addr, "GET", &format!("{path}?offset=now")).await;
    let start = tail.header("stream-next-offset").unwrap().to_owned();

    // Readers run until the long-polls reach `target` (the last seq, once the roll is over).
    let target = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
    let mut readers = Vec::new();
    for i in 0..40 {
        let (target, path, start, addr) =
            (Arc::clone(&target), path.clone(), start.clone(), proxy.addr);
        readers.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            let mut next = start;
            let began = Instant::now();
            while seq(&next) < target.load(std::sync::atomic::Ordering::SeqCst) {
                assert!(
                    began.elapsed() < PATIENCE,
                    "reader {i} never reached the tail"
                );
                let long_poll = i % 4 != 0;
                let at = if long_poll {
                    format!("{path}?offset={next}&live=long-poll")
                } else {
                    format!("{path}?offset=-1")
                };
                let reply = send(addr, "GET", &at).await;
                seen.requests += 1;
                if reply.status >= 500 {
                    seen.failures.push(format!("{} for {at}", reply.status));
                    continue;
                }
                if long_poll {
                    assert!(
                        matches!(reply.status, 200 | 204),
                        "{} for {at}",
                        reply.status
                    );
                    if reply.status == 200 {
                        seen.batches += batches(&reply.body);
                    }
                    next = reply.header("stream-next-offset").unwrap().to_owned();
                } else {
                    assert_eq!(reply.status, 200, "{at}");
                    // A catch-up reader follows the tail only through `target`.
                    next = reply.header("stream-next-offset").unwrap().to_owned();
                }
            }
            seen
        }));
    }

    // The roll: each node drained and stopped, batches appended while it is down, then
    // started again, batches appended while it is up.
    let mut appended = 0;
    for node in &mut nodes {
        node.stop().await;
        for _ in 0..10 {
            origin.append("+");
            appended += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        node.restart().await;
        for _ in 0..10 {
            origin.append("+");
            appended += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The last batch after the target is set, so that no long-poll waits at the tail.
    target.store(
        seq(&start) + appended + 1,
        std::sync::atomic::Ordering::SeqCst,
    );
    origin.append("+");
    appended += 1;
    let last = send(nodes[0].addr, "GET", &format!("{path}?offset=now")).await;
    assert_eq!(
        seq(last.header("stream-next-offset").unwrap()),
        seq(&start) + appended
    );

    let mut failures = Vec::new();
    let mut requests = 0;
    for (i, reader) in readers.into_iter().enumerate() {
        let seen = reader.await.unwrap();
        requests += seen.requests;
        failures.extend(seen.failures);
        if i % 4 != 0 {
            assert_eq!(
                seen.batches as u64, appended,
                "long-poll reader {i}: every batch once"
            );
        }
    }
    // Requests nginx sent on to another node: their `upstream=` names two or more.
    let access = std::fs::read_to_string(proxy.dir.path().join("access.log")).unwrap();
    let retried = access
        .lines()
        .filter(|l| {
            l.split(" upstream=")
                .nth(1)
                .is_some_and(|u| u.contains(", "))
        })
        .count();
    println!(
        "nginx_cache: a rolling restart of 3 nodes under 40 readers: {requests} requests, \
         {} answered 5xx, {retried} sent on to another node by nginx",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} answers of 5xx reached readers, e.g. {:?}\n{}",
        failures.len(),
        &failures[..failures.len().min(5)],
        proxy.log()
    );
    assert!(
        retried > 0,
        "no request met a node that was down: the roll tested nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_reads_pass_through_uncached() {
    let Some(binary) = nginx_or_skip("nginx_cache::live_reads_pass_through") else {
        return;
    };
    let mut origin = Origin::new();
    let nodes = origin.serve(2, Some(PUBLIC)).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let path = origin.path();
    let next = |reply: &Reply| {
        reply
            .header("stream-next-offset")
            .expect("a stream-next-offset")
            .to_owned()
    };
    let tail = next(&send(proxy.addr, "HEAD", &path).await);

    // SSE: connected (its first control event arrived), then a batch is appended.
    let sse = format!("{path}?offset={tail}&live=sse");
    let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
    stream
        .write_all(request("GET", &sse).as_bytes())
        .await
        .unwrap();
    let mut seen = Vec::new();
    read_until(&mut stream, &mut seen, "event: control").await;
    let head = Reply::parse(&seen);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("x-cache-status"), Some("BYPASS"));
    origin.append("appended while an SSE reader waited");
    read_until(
        &mut stream,
        &mut seen,
        "appended while an SSE reader waited",
    )
    .await;
    drop(stream);

    // Long-poll: two readers at the same URL both wait at a node (neither is collapsed into
    // the other nor answered from the cache), and both get the batch appended meanwhile.
    let tail = next(&send(proxy.addr, "HEAD", &path).await);
    let poll = format!("{path}?offset={tail}&live=long-poll&cursor=7");
    let polls: Vec<_> = (0..2)
        .map(|_| {
            let (addr, poll) = (proxy.addr, poll.clone());
            tokio::spawn(async move { send(addr, "GET", &poll).await })
        })
        .collect();
    origin.counts.reach("GET", &poll, 2).await;
    origin.append("appended while two long-polls waited");
    for poll in polls {
        let reply = poll.await.unwrap();
        assert_eq!(reply.status, 200, "{}", proxy.log());
        assert_eq!(reply.header("x-cache-status"), Some("BYPASS"));
        let body = String::from_utf8(reply.body).unwrap();
        assert!(
            body.contains("appended while two long-polls waited"),
            "{body}"
        );
    }
    // Asked again, the same long-poll goes to a node again: nothing of it was stored.
    let again = send(proxy.addr, "GET", &poll).await;
    assert_eq!(again.status, 200);
    assert_eq!(origin.counts.of("GET", &poll), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_reads_are_never_served_from_the_cache() {
    let Some(binary) = nginx_or_skip("nginx_cache::private_reads_are_never_served") else {
        return;
    };
    let origin = Origin::new();
    // chord's default `Cache-Control`: `private`, for one reader's browser only.
    let nodes = origin.serve(1, None).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let target = format!("{}?offset=-1", origin.path());
    for n in 1..=3 {
        let reply = send(proxy.addr, "GET", &target).await;
        assert_eq!(reply.status, 200, "{}", proxy.log());
        assert_eq!(
            reply.header("cache-control"),
            Some("private, max-age=60, stale-while-revalidate=300")
        );
        assert_eq!(reply.header("x-cache-status"), Some("MISS"));
        assert_eq!(batches(&reply.body), 1 + BATCHES);
        assert_eq!(origin.counts.of("GET", &target), n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_reads_are_served_from_the_cache_by_url() {
    let Some(binary) = nginx_or_skip("nginx_cache::public_reads_are_served") else {
        return;
    };
    let origin = Origin::new();
    let nodes = origin.serve(1, Some(PUBLIC)).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let target = format!("{}?offset=-1", origin.path());
    let first = send(proxy.addr, "GET", &target).await;
    assert_eq!(first.status, 200, "{}", proxy.log());
    assert_eq!(first.header("x-cache-status"), Some("MISS"));
    for _ in 0..3 {
        let reply = send(proxy.addr, "GET", &target).await;
        assert_eq!(reply.header("x-cache-status"), Some("HIT"));
        assert!(reply.body == first.body);
    }
    assert_eq!(origin.counts.of("GET", &target), 1);
    // Another offset is another URL, another entry.
    let other = format!("{}?offset=0000000000000001", origin.path());
    let reply = send(proxy.addr, "GET", &other).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("x-cache-status"), Some("MISS"));
    assert_eq!(batches(&reply.body), BATCHES);
    assert_eq!(origin.counts.of("GET", &other), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_on_other_origins_get_an_entry_each() {
    let Some(binary) = nginx_or_skip("nginx_cache::pages_on_other_origins") else {
        return;
    };
    let pages = ["https://a.example", "https://b.example"];
    let origin = Origin::new();
    // A policy naming its origins answers each page with its own origin, and `Vary: origin`:
    // a page must never be handed the answer another page's origin was given.
    let nodes = origin
        .serve_with(1, |streams| {
            streams
                .cache_control(HeaderValue::from_static(PUBLIC))
                .cors(Some(
                    streams::default_cors().allow_origin(pages.map(HeaderValue::from_static)),
                ))
        })
        .await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));
    let target = format!("{}?offset=-1", origin.path());
    for (round, expected) in [(0, "MISS"), (1, "HIT"), (2, "HIT")] {
        for page in pages {
            let mut stream = TcpStream::connect(proxy.addr).await.unwrap();
            let ask =
                format!("GET {target} HTTP/1.0\r\nHost: streams.test\r\nOrigin: {page}\r\n\r\n");
            stream.write_all(ask.as_bytes()).await.unwrap();
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await.unwrap();
            let reply = Reply::parse(&raw);
            assert_eq!(reply.status, 200, "{}", proxy.log());
            assert_eq!(
                reply.header("access-control-allow-origin"),
                Some(page),
                "round {round}"
            );
            assert_eq!(
                reply.header("x-cache-status"),
                Some(expected),
                "round {round}, {page}"
            );
        }
    }
    // One read of a node per page's origin.
    assert_eq!(origin.counts.of("GET", &target), pages.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_sse_reader_holds_the_node_back() {
    let Some(binary) = nginx_or_skip("nginx_cache::a_stalled_sse_reader") else {
        return;
    };
    // The stream grows by rounds of about 4 MB until the reader's connection takes no more:
    // how much the sockets on the way hold depends on the kernel's buffer tuning.
    const ROUND: usize = 4_000;
    const ROUNDS: usize = 16;
    let mut origin = tokio::task::block_in_place(|| Origin::of(ROUND));
    let nodes = origin.serve(1, Some(PUBLIC)).await;
    let proxy = tokio::task::block_in_place(|| Nginx::start(&binary, &nodes));

    // A reader that asks for the whole stream over SSE and never reads.
    let target = format!("{}?offset=-1&live=sse", origin.path());
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let _stalled = {
        let mut stream = socket.connect(proxy.addr).await.unwrap();
        stream
            .write_all(request("GET", &target).as_bytes())
            .await
            .unwrap();
        stream
    };
    let mut sent = origin.counts.settled("GET", &target).await;
    for _ in 0..ROUNDS {
        let size = origin.size();
        tokio::task::block_in_place(|| origin.grow(ROUND));
        let grown = origin.size() - size;
        let before = sent;
        sent = origin.counts.settled("GET", &target).await;
        // Buffering on, nginx would take every round off the node (into memory, then
        // temporary files); off, the reader's full connection holds the node back.
        if sent - before < grown / 4 {
            println!(
                "nginx_cache: a stalled SSE reader through nginx took {sent} bytes of a {}-byte \
                 stream off the node, then {} of the {grown} appended",
                origin.size(),
                sent - before
            );
            return;
        }
    }
    panic!(
        "a stalled SSE reader through nginx took {sent} bytes of a {}-byte stream off the \
         node, and every round appended since: nginx buffers SSE",
        origin.size()
    );
}

#[test]
fn the_deployment_guide_sets_what_the_tests_run() {
    // The `Cache-Control` the tests give their nodes is the one docs/deployment.md and the
    // configuration's header tell a deployment to set.
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deployment.md"),
    )
    .unwrap();
    assert!(
        guide.contains(&format!("\"{PUBLIC}\"")),
        "docs/deployment.md"
    );
    assert!(
        SHIPPED.contains(&format!("\"{PUBLIC}\"")),
        "examples/nginx/nginx.conf"
    );
}
