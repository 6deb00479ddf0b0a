//! Load, on loopback and bounded in time: many Rust replicas over real HTTP connections on one
//! stream, a producer publishing at a steady rate, and one subscriber that never reads.
//!
//! Defaults: 1,000 subscribers, 50 batches a second for 10 seconds, a queue of 512 batches (ten seconds of lag before a replica is cut).
//! `CHORD_LOAD_SUBSCRIBERS`, `CHORD_LOAD_RATE`, `CHORD_LOAD_SECONDS` and `CHORD_LOAD_QUEUE`
//! change them. The figures (peak memory, fan-out cost per batch) are printed; only
//! correctness is asserted: every replica ends equal to the producer's value, the stalled
//! subscriber is cut and its connection closed.

use std::time::{Duration, Instant};

use chord::hub::{Address, Hub};
use chord::replica::Replica;
use chord::sse::{self, Sse};
use chord::track;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket};

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

#[test]
fn a_thousand_subscribers_on_one_stream() {
    let subscribers = env("CHORD_LOAD_SUBSCRIBERS", 1_000) as usize;
    let rate = env("CHORD_LOAD_RATE", 50).max(1);
    let seconds = env("CHORD_LOAD_SECONDS", 10);
    let queue = env("CHORD_LOAD_QUEUE", 512) as usize;
    let batches = rate * seconds;
    let fds = raise_fd_limit(2 * subscribers as u64 + 256);
    assert!(
        fds >= 2 * subscribers as u64 + 64,
        "{subscribers} subscribers need about {} open files and the hard limit allows {fds}: \
         lower CHORD_LOAD_SUBSCRIBERS or raise the limit (ulimit -n)",
        2 * subscribers + 64
    );

    // The server and the replicas run on separate runtimes, so that each side's CPU time can
    // be told apart by thread name.
    let runtime = |name: &str| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()
            .unwrap()
    };
    let server = runtime("load-server");
    let clients = runtime("load-client");
    let rss_start = status_kb("VmRSS");

    let hub = Hub::builder().queue(queue).build();
    let lane = Address::new("lanes", "main");
    let mut producer =
        track(json!({"status": "running", "text": "", "output": "", "n": 0, "transcript": []}));
    hub.publish(&lane, &producer.flush().unwrap()).unwrap();
    let addr = server.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Sse::new(hub.clone()).router();
        tokio::spawn(sse::serve(listener, app, std::future::pending()));
        addr
    });
    let url = format!("http://{addr}{}", sse::stream_path(&lane));

    // Every replica connects and receives its base batch.
    let connecting = Instant::now();
    let replicas: Vec<Replica> = {
        let _entered = clients.enter();
        (0..subscribers)
            .map(|_| Replica::connect(&url).unwrap())
            .collect()
    };
    wait("every replica to subscribe", || {
        replicas.iter().all(|r| r.is_live()) && hub.subscribers(&lane) == subscribers
    });
    let connected_in = connecting.elapsed();
    let rss_connected = status_kb("VmRSS");

    // The stalled subscriber: a small receive buffer, a request, then never a read.
    let mut stalled = clients.block_on(async {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: load\r\n\r\n",
            sse::stream_path(&lane)
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        stream
    });
    wait("the stalled subscriber to subscribe", || {
        hub.subscribers(&lane) == subscribers + 1
    });

    // The producer: `rate` batches a second, each published once.
    let server_cpu_before = cpu_time("load-server");
    let client_cpu_before = cpu_time("load-client");
    let started = Instant::now();
    let mut publish_total = Duration::ZERO;
    let mut publish_max = Duration::ZERO;
    let mut stalled_cut_at = None;
    let mut wire_bytes = 0usize;
    for i in 1..=batches {
        step(&mut producer, i);
        let ops = producer.flush().unwrap();
        wire_bytes += chord::Encoder::new().encode(&ops).to_json().len();
        let t = Instant::now();
        let outcome = hub.publish(&lane, &ops).unwrap();
        let took = t.elapsed();
        publish_total += took;
        publish_max = publish_max.max(took);
        if outcome.cut > 0 && stalled_cut_at.is_none() {
            stalled_cut_at = Some(i);
        }
        let next = started + Duration::from_secs_f64(i as f64 / rate as f64);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let elapsed = started.elapsed();
    let server_cpu = cpu_time("load-server").saturating_sub(server_cpu_before);
    let client_cpu = cpu_time("load-client").saturating_sub(client_cpu_before);

    // A short run (small CHORD_LOAD_SECONDS) may not fill the stalled subscriber's buffers:
    // keep publishing at the same rate until its queue overflows.
    let mut extra = 0u64;
    while hub.stats().cut == 0 {
        let bound = 30 * rate + 2 * queue as u64;
        assert!(
            extra < bound,
            "the stalled subscriber was not cut after {bound} more batches"
        );
        extra += 1;
        step(&mut producer, batches + extra);
        let outcome = hub.publish(&lane, &producer.flush().unwrap()).unwrap();
        if outcome.cut > 0 {
            stalled_cut_at = Some(batches + extra);
        }
        std::thread::sleep(Duration::from_secs_f64(1.0 / rate as f64));
    }

    // Every replica converges to the producer's value.
    let expected = serde_json::to_value(producer.get()).unwrap();
    assert_eq!(hub.get(&lane), Some(expected.clone()));
    let converging = Instant::now();
    wait("every replica to reach the producer's value", || {
        replicas
            .iter()
            .all(|r| r.value().as_ref() == Some(&expected))
    });
    let converged_in = converging.elapsed();

    // The stalled subscriber was cut, and the server closed its connection: what it can
    // still read ends.
    let stalled_bytes = clients.block_on(async {
        let mut total = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match tokio::time::timeout(PATIENCE, stalled.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return total,
                Ok(Ok(n)) => total += n,
                Err(_) => panic!("the stalled subscriber's connection was never closed"),
            }
        }
    });

    let stats = hub.stats();
    let resubscribed = replicas
        .iter()
        .filter(|r| r.stats().subscriptions > 1)
        .count();
    let applied: u64 = replicas.iter().map(|r| r.stats().batches).sum();
    let per_batch = |d: Duration| d.as_secs_f64() * 1e6 / batches as f64;
    println!(
        "load: {subscribers} subscribers + 1 stalled, {batches} batches (about {} bytes each on the wire) at {rate}/s over {elapsed:.2?}, queue {queue}",
        wire_bytes / batches.max(1) as usize
    );
    println!(
        "  connect: {connected_in:.2?} for all subscribers; converged {converged_in:.2?} after the last batch"
    );
    println!(
        "  fan-out per batch: publish on the producer's thread (apply + {subscribers} queue pushes) {:.1} us mean, {:.1?} max; \
         server CPU (encode + SSE + HTTP write, {subscribers} connections) {:.0} us = {:.1} us per subscriber; \
         replica CPU (read + parse + decode + apply, all {subscribers}) {:.0} us = {:.1} us per replica",
        per_batch(publish_total),
        publish_max,
        per_batch(server_cpu),
        per_batch(server_cpu) / subscribers as f64,
        per_batch(client_cpu),
        per_batch(client_cpu) / subscribers as f64,
    );
    println!(
        "  memory: VmHWM {} MiB peak; VmRSS {} MiB at start, {} MiB with every replica connected ({:.1} KiB per connection, client and server sides together)",
        status_kb("VmHWM") / 1024,
        rss_start / 1024,
        rss_connected / 1024,
        (rss_connected.saturating_sub(rss_start)) as f64 / subscribers as f64
    );
    println!(
        "  stalled subscriber: cut at batch {} ({extra} batches after the run), {stalled_bytes} bytes left in its socket; \
         hub: {stats:?}; replicas resubscribed: {resubscribed}; batches applied by replicas: {applied}",
        stalled_cut_at.map_or("?".into(), |b| b.to_string())
    );
    assert!(stats.cut >= 1, "the stalled subscriber was cut");
    assert_eq!(
        hub.subscribers(&lane),
        subscribers,
        "every replica is subscribed, the stalled one is not"
    );
    // The others were unaffected: none fell a whole queue behind, none had to resubscribe.
    // (On a machine too busy to keep up, raise CHORD_LOAD_QUEUE.)
    assert_eq!(stats.cut, 1, "only the stalled subscriber was cut");
    assert_eq!(resubscribed, 0, "no replica had to resubscribe");
}

fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
