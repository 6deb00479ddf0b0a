//! Load, on loopback and bounded in time: many Rust replicas over real HTTP connections on one
//! stream, a producer appending at a steady rate, and one reader that never reads; and the
//! cost of a reconnect after a cut.
//!
//! Defaults: 1,000 subscribers, 50 batches a second for 10 seconds, every batch sent as soon
//! as it is appended. `CHORD_LOAD_SUBSCRIBERS`, `CHORD_LOAD_RATE`, `CHORD_LOAD_SECONDS` and
//! `CHORD_LOAD_COALESCE_MS` (the server's [`Streams::coalesce`] window) change them.
//! `CHORD_LOAD_REPLICA_PROCESS=1` runs the replicas in a child process (this test binary,
//! its ignored helper `replicas_for_a_load_test`), so that each process holds one end of every connection
//! (10,000 subscribers under a 20,000-descriptor limit); flush-to-applied latency is then not
//! measured (the two processes share no clock the test trusts). The
//! figures (server CPU per subscriber per batch, peak memory, flush-to-applied latency, the
//! reconnect's bytes and time) are printed; only correctness is asserted: every replica ends
//! equal to the producer's value without ever starting again from a base batch, the stalled
//! reader costs the others nothing, a resumed replica receives less than the base batch.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chord::replica::Replica;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{self, Log, Streams};
use chord::track;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A bound on waiting for things that should happen, so a broken build fails rather than
/// hangs; nothing is asserted about how long anything took.
const PATIENCE: Duration = Duration::from_secs(180);

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A field of `/proc/self/status`, in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time (user and system) used so far by this process's threads whose name starts with
/// `prefix`, from `/proc/self/task/*/stat`.
fn cpu_time(prefix: &str) -> Duration {
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // "tid (name) state ...": the name may hold spaces, so split around the parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ticks += field(11) + field(12);
    }
    // Linux reports them in USER_HZ: 100 a second.
    Duration::from_millis(ticks * 10)
}

/// Raises the soft open-file limit to what `needed` connections take, if the hard limit
/// allows; the limit then in force.
fn raise_fd_limit(needed: u64) -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= needed {
        return soft;
    }
    let hard = limit.maximum.unwrap_or(u64::MAX);
    // Beyond the hard limit where the process may raise it (as root), else up to it.
    let beyond = Rlimit {
        current: Some(needed),
        maximum: Some(needed.max(hard)),
    };
    if needed > hard && setrlimit(Resource::Nofile, beyond).is_ok() {
        return needed;
    }
    let wanted = needed.min(hard);
    let raised = Rlimit {
        current: Some(wanted),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => wanted,
        Err(_) => soft,
    }
}

/// One batch of a busy agent lane (about 1 KB on the wire): a streamed token, eight lines of
/// build output kept in a 16 KiB rolling window, a counter; every 50 batches a finished
/// message moves to the transcript.
fn step(producer: &mut chord::Tracker<Value>, i: u64) {
    let mut state = producer.state();
    {
        let mut text = state.member("text").unwrap();
        text.as_text().unwrap().push_str(&format!("token{i} "));
    }
    {
        let mut out = state.member("output").unwrap();
        let mut out = out.as_text().unwrap();
        for line in 0..8 {
            out.push_str(&format!(
                "[{i:>6}.{line}] Compiling crate_{:03} v0.{}.{line} (/build/workspace/crates/crate_{i}/src/lib.rs)\n",
                i % 997,
                i % 13
            ));
        }
        out.keep_last(16 * 1024);
    }
    state.member("n").unwrap().set(i);
    if i.is_multiple_of(50) {
        let text = {
            let mut text = state.member("text").unwrap();
            let mut text = text.as_text().unwrap();
            text.edit(std::mem::take)
        };
        let mut transcript = state.member("transcript").unwrap();
        transcript
            .push(json!({"role": "assistant", "text": text}))
            .unwrap();
        let mut items = transcript.as_array().unwrap();
        if items.len() > 20 {
            items.remove(0);
        }
    }
}

/// A log in `dir` served by `server`'s runtime; the writer, the log, and where it listens.
fn serve_log(
    server: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    coalesce: Duration,
) -> (LogWriter<Log<JsonlStore>>, SocketAddr) {
    let grouped = Durability::Grouped {
        max_batches: 64,
        max_delay: Duration::from_millis(5),
    };
    let log = Log::new(JsonlStore::open(dir.join("log.jsonl"), grouped).unwrap());
    let writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let addr = server.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Streams::new(&log).coalesce(coalesce).router();
        tokio::spawn(streams::serve(listener, app, std::future::pending()));
        addr
    });
    (writer, addr)
}

fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

#[test]
fn a_thousand_subscribers_on_one_stream() {
    let subscribers = env("CHORD_LOAD_SUBSCRIBERS", 1_000) as usize;
    let rate = env("CHORD_LOAD_RATE", 50).max(1);
    let seconds = env("CHORD_LOAD_SECONDS", 10);
    let coalesce = Duration::from_millis(env("CHORD_LOAD_COALESCE_MS", 0));
    let batches = rate * seconds;
    let elsewhere = env("CHORD_LOAD_REPLICA_PROCESS", 0) == 1;
    let ends = if elsewhere { 1 } else { 2 };
    let fds = raise_fd_limit(ends * subscribers as u64 + 256);
    assert!(
        fds >= ends * subscribers as u64 + 64,
        "{subscribers} subscribers need about {} open files and the hard limit allows {fds}: \
         lower CHORD_LOAD_SUBSCRIBERS, raise the limit (ulimit -n) or set \
         CHORD_LOAD_REPLICA_PROCESS=1",
        ends * subscribers as u64 + 64
    );

    // The server and the replicas run on separate runtimes, so that each side's CPU time can
    // be told apart by thread name.
    let server = runtime("load-server");
    let clients = runtime("load-client");
    let rss_start = status_kb("VmRSS");

    let dir = tempfile::tempdir().unwrap();
    let (mut writer, addr) = serve_log(&server, dir.path(), coalesce);
    let lane = Address::new("lanes", "main");
    let mut producer =
        track(json!({"status": "running", "text": "", "output": "", "n": 0, "transcript": []}));
    writer.append(&lane, &producer.flush().unwrap()).unwrap();
    let url = format!("http://{addr}{}", streams::stream_path(&lane));

    // Every replica connects and receives its base batch (here, or in the child).
    let connecting = Instant::now();
    let mut child = elsewhere.then(|| ReplicaProcess::start(&url, subscribers));
    let replicas = if elsewhere {
        Vec::new()
    } else {
        connect_live(&clients, &url, subscribers)
    };
    let connected_in = connecting.elapsed();
    let rss_connected = status_kb("VmRSS");

    // When each replica applied each batch (by the counter `n` it carries).
    let applied: Arc<Mutex<Vec<(u64, Instant)>>> = Arc::default();
    for replica in &replicas {
        let mut changes = replica.watch();
        let applied = Arc::clone(&applied);
        clients.spawn(async move {
            let mut seen = 0;
            while changes.changed().await.is_ok() {
                let at = Instant::now();
                let n = changes
                    .borrow()
                    .value
                    .as_ref()
                    .and_then(|v| v["n"].as_u64());
                if let Some(n) = n.filter(|&n| n > seen) {
                    // Every batch up to `n` is applied now (several arrive together when
                    // the server coalesces, or when this task ran late).
                    applied
                        .lock()
                        .unwrap()
                        .extend((seen + 1..=n).map(|k| (k, at)));
                    seen = n;
                }
            }
        });
    }

    // The stalled reader: a small receive buffer, a request, then never a read.
    let _stalled = clients.block_on(async {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        let request = format!(
            "GET {}?offset=-1&live=sse HTTP/1.1\r\nHost: load\r\n\r\n",
            streams::stream_path(&lane)
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        stream
    });

    // The producer: `rate` batches a second, each appended once.
    let server_cpu_before = cpu_time("load-server");
    let client_cpu_before = cpu_time("load-client");
    let started = Instant::now();
    let mut append_total = Duration::ZERO;
    let mut append_max = Duration::ZERO;
    let mut wire_bytes = 0usize;
    let mut flushed = vec![started; batches as usize + 1];
    for i in 1..=batches {
        step(&mut producer, i);
        let t = Instant::now();
        flushed[i as usize] = t;
        let ops = producer.flush().unwrap();
        writer.append(&lane, &ops).unwrap();
        let took = t.elapsed();
        wire_bytes += chord::Encoder::new().encode(&ops).to_json().len();
        append_total += took;
        append_max = append_max.max(took);
        let next = started + Duration::from_secs_f64(i as f64 / rate as f64);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let elapsed = started.elapsed();
    let server_cpu = cpu_time("load-server").saturating_sub(server_cpu_before);
    let client_cpu = cpu_time("load-client").saturating_sub(client_cpu_before);

    // Every replica converges to the producer's value.
    let expected = serde_json::to_value(producer.get()).unwrap();
    let converging = Instant::now();
    let child_report = child.as_mut().map(|c| c.converge(&expected));
    converge(&replicas, &expected);
    let converged_in = converging.elapsed();
    let client_cpu = match &child_report {
        Some(report) => report.cpu,
        None => client_cpu,
    };

    let mut latencies: Vec<Duration> = applied
        .lock()
        .unwrap()
        .iter()
        .map(|&(n, at)| at.saturating_duration_since(flushed[n as usize]))
        .collect();
    latencies.sort();
    let Counts {
        restarted,
        resumed,
        applied: applied_batches,
    } = match &child_report {
        Some(report) => report.counts,
        None => Counts::of(&replicas),
    };
    if elsewhere {
        println!("  (replicas in a child process: latency not measured)");
    }
    let per_batch = |d: Duration| d.as_secs_f64() * 1e6 / batches as f64;
    println!(
        "load: {subscribers} subscribers + 1 stalled, {batches} batches (about {} bytes each on the wire) at {rate}/s over {elapsed:.2?}, coalescing window {coalesce:?}",
        wire_bytes / batches.max(1) as usize
    );
    println!(
        "  connect: {connected_in:.2?} for all subscribers; converged {converged_in:.2?} after the last batch"
    );
    println!(
        "  fan-out per batch: append on the producer's thread (store + tail cache + wake) {:.1} us mean, {:.1?} max; \
         server CPU (SSE + HTTP write, {subscribers} connections, batch framed once) {:.0} us = {:.2} us per subscriber; \
         replica CPU (read + parse + decode + apply, all {subscribers}) {:.0} us = {:.1} us per replica",
        per_batch(append_total),
        append_max,
        per_batch(server_cpu),
        per_batch(server_cpu) / subscribers as f64,
        per_batch(client_cpu),
        per_batch(client_cpu) / subscribers as f64,
    );
    if !elsewhere {
        println!(
            "  flush to applied: p50 {:.2?}, p99 {:.2?}, max {:.2?} over {} (replica, batch) pairs",
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies.last().copied().unwrap_or_default(),
            latencies.len()
        );
    }
    let sides = if elsewhere {
        "the server's side only"
    } else {
        "client and server sides together"
    };
    println!(
        "  memory: VmHWM {} MiB peak; VmRSS {} MiB at start, {} MiB with every replica connected ({:.1} KiB per connection, {sides})",
        status_kb("VmHWM") / 1024,
        rss_start / 1024,
        rss_connected / 1024,
        (rss_connected.saturating_sub(rss_start)) as f64 / subscribers as f64
    );
    println!(
        "  replicas restarted from a base: {restarted}; resumes: {resumed}; batches applied by replicas: {applied_batches}"
    );
    // Nothing is queued per reader: the stalled one held no one back, and no replica had to
    // start again from a base batch.
    assert_eq!(restarted, 0, "no replica had to start again");
}

/// A proxy that can be cut: while `cut` is set it closes every connection it holds and refuses
/// new ones. Counts the bytes it forwards to clients.
async fn cuttable_proxy(
    listener: TcpListener,
    upstream: SocketAddr,
    cut: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if cut.load(Ordering::SeqCst) {
            continue; // dropped: refused
        }
        let cut = Arc::clone(&cut);
        let bytes = Arc::clone(&bytes);
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            let up = async {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            };
            let down = async {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if cut.load(Ordering::SeqCst) {
                        return;
                    }
                    bytes.fetch_add(n as u64, Ordering::SeqCst);
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            };
            let watch_cut = async {
                while !cut.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::select! {
                () = up => {}
                () = down => {}
                () = watch_cut => {}
            }
        });
    }
}

/// A 1 MB lane appended to 50 times a second; a replica cut off for a second resumes from its
/// offset: it receives the batches it missed and no base batch. A fresh start (what a
/// reconnect without an offset costs: the whole lane as a base batch) is measured beside it.
#[test]
fn a_replica_cut_for_a_second_resumes_with_the_batches_it_missed() {
    let rate = 50u64;
    let server = runtime("cut-server");
    let clients = runtime("cut-client");
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, addr) = serve_log(&server, dir.path(), Duration::ZERO);
    let lane = Address::new("lanes", "big");
    let history: String = (0..1_000_000 / 64)
        .map(|i| format!("{i:>10} {}\n", "x".repeat(52)))
        .collect();
    let mut producer = track(json!({"history": history, "text": "", "n": 0}));
    writer.append(&lane, &producer.flush().unwrap()).unwrap();
    let base_bytes = history.len();

    let cut = Arc::new(AtomicBool::new(false));
    let forwarded = Arc::new(AtomicU64::new(0));
    let proxy = clients.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        tokio::spawn(cuttable_proxy(
            listener,
            addr,
            Arc::clone(&cut),
            Arc::clone(&forwarded),
        ));
        proxy
    });
    let path = streams::stream_path(&lane);
    let replica = {
        let _entered = clients.enter();
        Replica::builder(&format!("http://{proxy}{path}"))
            .backoff(Duration::from_millis(20), Duration::from_millis(40))
            .connect()
            .unwrap()
    };
    let mut n = 0u64;
    let mut produce = |writer: &mut LogWriter<Log<JsonlStore>>, count: u64| {
        for _ in 0..count {
            n += 1;
            let mut state = producer.state();
            state
                .member("text")
                .unwrap()
                .as_text()
                .unwrap()
                .push_str(&format!("token{n} "));
            state.member("n").unwrap().set(n);
            writer.append(&lane, &producer.flush().unwrap()).unwrap();
            std::thread::sleep(Duration::from_millis(1000 / rate));
        }
        n
    };
    let reach = |replica: &Replica, n: u64| {
        clients.block_on(async {
            let done = replica.wait_until(|s| s.value.as_ref().is_some_and(|v| v["n"] == n));
            tokio::time::timeout(PATIENCE, done)
                .await
                .expect("the replica caught up");
        })
    };
    let now = produce(&mut writer, rate);
    reach(&replica, now);

    // The cut: a second without a connection, the producer going on.
    cut.store(true, Ordering::SeqCst);
    wait("the replica to notice the cut", || !replica.is_live());
    let now = produce(&mut writer, rate);
    let before = forwarded.load(Ordering::SeqCst);
    let reconnecting = Instant::now();
    cut.store(false, Ordering::SeqCst);
    reach(&replica, now);
    let resume_time = reconnecting.elapsed();
    let resume_bytes = forwarded.load(Ordering::SeqCst) - before;
    let stats = replica.stats();

    // Beside it, a fresh start: the latest base batch and everything after it.
    let before = forwarded.load(Ordering::SeqCst);
    let starting = Instant::now();
    let fresh = {
        let _entered = clients.enter();
        Replica::connect(&format!("http://{proxy}{path}")).unwrap()
    };
    reach(&fresh, now);
    let fresh_time = starting.elapsed();
    let fresh_bytes = forwarded.load(Ordering::SeqCst) - before;
    println!(
        "reconnect after a 1 s cut, a {base_bytes}-byte lane at {rate} batches/s: resumed from the offset: {resume_bytes} bytes in {resume_time:.2?}; \
         a fresh start (the base batch and what follows it, what a reconnect cost before offsets): {fresh_bytes} bytes in {fresh_time:.2?}"
    );
    assert_eq!(stats.subscriptions, 1, "{stats:?}");
    assert_eq!(stats.bases, 1, "no base batch after the first: {stats:?}");
    assert!(stats.resumes >= 1, "{stats:?}");
    assert!(
        resume_bytes < base_bytes as u64 / 10,
        "{resume_bytes} bytes to resume"
    );
    assert!(
        fresh_bytes > base_bytes as u64,
        "{fresh_bytes} bytes to start"
    );
}

/// The replicas of a load test in a child process: this test binary running
/// [`replicas_for_a_load_test`], which says `ready` once every replica is live, then reads
/// the producer's final value on its standard input and reports once every replica holds it.
struct ReplicaProcess {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

/// What the child reports: its CPU time from `ready` to the value, and its replicas' stats.
struct ReplicaReport {
    cpu: Duration,
    counts: Counts,
}

/// Replicas that started again from a base, resumes, and batches applied, over all replicas.
#[derive(Clone, Copy)]
struct Counts {
    restarted: u64,
    resumed: u64,
    applied: u64,
}

impl Counts {
    fn of(replicas: &[Replica]) -> Counts {
        let stats: Vec<_> = replicas.iter().map(Replica::stats).collect();
        Counts {
            restarted: stats.iter().filter(|s| s.subscriptions > 1).count() as u64,
            resumed: stats.iter().map(|s| s.resumes).sum(),
            applied: stats.iter().map(|s| s.batches).sum(),
        }
    }
}

/// `n` replicas of `url` on `clients`, once every one is live (has its base batch).
fn connect_live(clients: &tokio::runtime::Runtime, url: &str, n: usize) -> Vec<Replica> {
    let replicas: Vec<Replica> = {
        let _entered = clients.enter();
        (0..n).map(|_| Replica::connect(url).unwrap()).collect()
    };
    wait("every replica to start", || {
        replicas.iter().all(|r| r.is_live())
    });
    replicas
}

/// Waits until every replica holds `expected`.
fn converge(replicas: &[Replica], expected: &Value) {
    wait("every replica to reach the producer's value", || {
        replicas
            .iter()
            .all(|r| r.value().as_ref() == Some(expected))
    });
}

impl ReplicaProcess {
    fn start(url: &str, subscribers: usize) -> ReplicaProcess {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "replicas_for_a_load_test",
                "--ignored",
                "--nocapture",
            ])
            .env("CHORD_LOAD_CHILD_URL", url)
            .env("CHORD_LOAD_SUBSCRIBERS", subscribers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            let line = lines
                .next()
                .expect("the replica process ended early")
                .unwrap();
            if line == "ready" {
                break;
            }
        }
        ReplicaProcess { child, lines }
    }

    fn converge(&mut self, expected: &Value) -> ReplicaReport {
        use std::io::Write;
        let mut stdin = self.child.stdin.take().unwrap();
        writeln!(stdin, "{expected}").unwrap();
        drop(stdin);
        let report = loop {
            let line = self
                .lines
                .next()
                .expect("no report from the replicas")
                .unwrap();
            if let Some(rest) = line.strip_prefix("replicas: ") {
                break rest.to_owned();
            }
        };
        let field = |name: &str| -> u64 {
            report
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {report:?}"))
        };
        let result = ReplicaReport {
            cpu: Duration::from_micros(field("cpu_us")),
            counts: Counts {
                restarted: field("restarted"),
                resumed: field("resumed"),
                applied: field("applied"),
            },
        };
        assert!(
            self.child.wait().unwrap().success(),
            "the replica process failed"
        );
        result
    }
}

/// The replica side of a load test whose replicas run in a child process (see
/// [`ReplicaProcess`]); does nothing unless started as that child.
#[test]
#[ignore = "the replicas of a_thousand_subscribers_on_one_stream, started by it"]
fn replicas_for_a_load_test() {
    let Ok(url) = std::env::var("CHORD_LOAD_CHILD_URL") else {
        return;
    };
    let subscribers = env("CHORD_LOAD_SUBSCRIBERS", 1_000) as usize;
    raise_fd_limit(subscribers as u64 + 256);
    let clients = runtime("load-client");
    let replicas = connect_live(&clients, &url, subscribers);
    println!("ready");
    let cpu_before = cpu_time("load-client");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let cpu = cpu_time("load-client").saturating_sub(cpu_before);
    let expected: Value = serde_json::from_str(&line).unwrap();
    converge(&replicas, &expected);
    let Counts {
        restarted,
        resumed,
        applied,
    } = Counts::of(&replicas);
    println!(
        "replicas: cpu_us={} restarted={restarted} resumed={resumed} applied={applied}",
        cpu.as_micros()
    );
}

fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
