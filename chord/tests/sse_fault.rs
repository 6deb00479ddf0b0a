//! Faults: connections cut at random points (mid-headers, mid-chunk, mid-event), connections
//! that go silent, server-side ends, and streams that do not decode or apply. Every replica
//! converges to the producer's value; after a cut it resumes from its offset, never starting
//! from a base batch again.
//!
//! `CHORD_FAULT_SEED` replays a run (the seed is printed); `CHORD_FAULT_REPLICAS` and
//! `CHORD_FAULT_BATCHES` size it.

#[path = "support/local.rs"]
mod local;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chord::replica::{Break, Replica};
use chord::store::{recover, Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{self, Retention, Streams};
use chord::track;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PATIENCE: Duration = Duration::from_secs(60);

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: enough randomness for choosing faults, replayable from a seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the proxy did, for the report.
#[derive(Default)]
struct Faults {
    connections: AtomicU64,
    cut: AtomicU64,
    frozen: AtomicU64,
}

/// A TCP proxy that, while `chaos` is on, cuts each connection after a random number of
/// bytes from the server, or freezes it (stops forwarding, keeps it open), or leaves it be.
async fn chaos_proxy(
    listener: TcpListener,
    upstream: SocketAddr,
    seed: u64,
    chaos: Arc<AtomicBool>,
    faults: Arc<Faults>,
) {
    let mut rng = Rng::new(seed);
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        faults.connections.fetch_add(1, Ordering::Relaxed);
        // Budgets from 0 (cut before the response line) to a few dozen events.
        let budget = rng.below(6_000) as usize;
        let mode = rng.below(100);
        let chaos = Arc::clone(&chaos);
        let faults = Arc::clone(&faults);
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
                let mut buf = [0u8; 2048];
                let mut sent = 0usize;
                loop {
                    let n = match server_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if chaos.load(Ordering::Relaxed) && sent + n > budget {
                        let _ = client_write.write_all(&buf[..budget - sent]).await;
                        if mode < 80 {
                            faults.cut.fetch_add(1, Ordering::Relaxed);
                            return; // dropping both halves closes both connections
                        }
                        // Frozen: forward nothing more, keep both connections open.
                        faults.frozen.fetch_add(1, Ordering::Relaxed);
                        std::future::pending::<()>().await;
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    sent += n;
                }
            };
            tokio::select! {
                () = up => {}
                () = down => {}
            }
        });
    }
}

/// A lane-like value changing in every way the ops can express.
fn step(producer: &mut chord::Tracker<Value>, i: u64, rng: &mut Rng) {
    let mut state = producer.state();
    let mut out = state.member("output").unwrap();
    let mut text = out.as_text().unwrap();
    text.push_str(&format!(
        "line {i}: {}\n",
        "x".repeat(rng.below(40) as usize)
    ));
    text.keep_last(600);
    state.member("n").unwrap().set(i);
    match rng.below(10) {
        0 => state
            .member("transcript")
            .unwrap()
            .push(json!({"role": "assistant", "text": format!("message {i}")}))
            .unwrap(),
        1 => {
            let mut transcript = state.member("transcript").unwrap();
            let mut items = transcript.as_array().unwrap();
            if !items.is_empty() {
                items.remove(0);
            }
        }
        2 => state
            .member("details")
            .unwrap()
            .set(json!({"step": i, "ok": i.is_multiple_of(3)})),
        _ => {}
    }
}

#[test]
fn replicas_behind_a_faulty_network_converge() {
    let seed = env(
        "CHORD_FAULT_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    );
    let replicas = env("CHORD_FAULT_REPLICAS", 24) as usize;
    let batches = env("CHORD_FAULT_BATCHES", 1_500);
    println!("seed {seed} (CHORD_FAULT_SEED replays it), {replicas} replicas, {batches} batches");
    let runtime = local::runtime();
    let _entered = runtime.enter();

    let dir = tempfile::tempdir().unwrap();
    let grouped = Durability::Grouped {
        max_batches: 64,
        max_delay: Duration::from_millis(5),
    };
    let store = JsonlStore::open(dir.path().join("log.jsonl"), grouped).unwrap();
    // Enough bases kept that no replica's offset is ever dropped: every break resumes.
    let log = streams::LogBuilder::new()
        .retention(Retention::Bases(1_000))
        .tail_records(64)
        .build(store);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "main");
    let (server_addr, proxy_addr, chaos, faults) = runtime.block_on(async {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = server.local_addr().unwrap();
        // Server-side ends: every response ends after 150 ms, and the replica resumes.
        let app = Streams::new(&log)
            .keep_alive(Duration::from_millis(50))
            .sse_lifetime(Duration::from_millis(150))
            .router();
        tokio::spawn(streams::serve(server, app, std::future::pending()));
        let proxy = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy_addr = proxy.local_addr().unwrap();
        let chaos = Arc::new(AtomicBool::new(true));
        let faults = Arc::new(Faults::default());
        tokio::spawn(chaos_proxy(
            proxy,
            server_addr,
            seed,
            Arc::clone(&chaos),
            Arc::clone(&faults),
        ));
        (server_addr, proxy_addr, chaos, faults)
    });

    let mut rng = Rng::new(seed ^ 0xFEED);
    let mut producer = track(json!({"output": "", "n": 0, "transcript": [], "details": null}));
    writer.append(&lane, &producer.flush().unwrap()).unwrap();

    let url = format!("http://{proxy_addr}{}", streams::stream_path(&lane));
    let direct = format!("http://{server_addr}{}", streams::stream_path(&lane));
    let followers: Vec<Replica> = (0..replicas)
        .map(|i| {
            // One replica talks to the server directly: it sees only server-side faults.
            let url = if i == 0 { &direct } else { &url };
            Replica::builder(url)
                .backoff(Duration::from_millis(5), Duration::from_millis(200))
                .idle_timeout(Duration::from_millis(300))
                .connect()
                .unwrap()
        })
        .collect();
    // Every replica has its base batch before the producer goes on.
    runtime.block_on(async {
        for replica in &followers {
            let started = replica.wait_until(|s| s.value.is_some());
            tokio::time::timeout(PATIENCE, started).await.unwrap();
        }
    });

    let mut rebases = 0;
    for i in 1..=batches {
        step(&mut producer, i, &mut rng);
        writer.append(&lane, &producer.flush().unwrap()).unwrap();
        // The producer sometimes checkpoints with a base batch, in the stream.
        if rng.below(500) == 0 {
            producer.rebase();
            writer.append(&lane, &producer.flush().unwrap()).unwrap();
            rebases += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }

    // The network heals; every replica must reach the producer's value.
    chaos.store(false, Ordering::Relaxed);
    let expected = serde_json::to_value(producer.get()).unwrap();
    assert_eq!(recover(&log, &lane).unwrap(), Some(expected.clone()));
    runtime.block_on(async {
        for (i, replica) in followers.iter().enumerate() {
            let reached = tokio::time::timeout(
                PATIENCE,
                replica.wait_until(|s| s.value.as_ref() == Some(&expected)),
            )
            .await;
            assert!(
                reached.is_ok(),
                "replica {i} never converged (seed {seed}): {:?}\nreplica: {:?}\nproducer: {expected}",
                replica.stats(),
                replica.value()
            );
        }
    });
    let resumes: u64 = followers.iter().map(|r| r.stats().resumes).sum();
    let breaks: u64 = followers.iter().map(|r| r.stats().breaks).sum();
    let bytes: u64 = followers.iter().map(|r| r.stats().bytes).sum();
    println!(
        "proxy: {} connections, {} cut, {} frozen; replicas: {resumes} resumes, {breaks} breaks, {bytes} bytes; {rebases} bases written after the first",
        faults.connections.load(Ordering::Relaxed),
        faults.cut.load(Ordering::Relaxed),
        faults.frozen.load(Ordering::Relaxed),
    );
    for (i, replica) in followers.iter().enumerate() {
        let stats = replica.stats();
        // Started once from a base batch; every later connection resumed from its offset and
        // received only the bases the producer wrote into the stream.
        assert_eq!(
            stats.subscriptions, 1,
            "replica {i} restarted (seed {seed}): {stats:?}"
        );
        assert_eq!(
            stats.bases,
            1 + rebases,
            "replica {i} (seed {seed}): {stats:?}"
        );
        assert!(stats.resumes > 0, "replica {i} never resumed: {stats:?}");
    }
    assert!(
        faults.cut.load(Ordering::Relaxed) > 0,
        "the proxy cut connections"
    );
    assert!(
        breaks >= faults.cut.load(Ordering::Relaxed) / 2,
        "replicas noticed the cuts"
    );
}

/// Answers `HEAD` with a base offset, the first `GET` with `broken` (closing the connection
/// after it), and every later `GET` with `good`, kept open.
async fn canned_server(listener: TcpListener, broken: Vec<u8>, good: Vec<u8>) {
    let mut held = Vec::new();
    let mut gets = 0;
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        loop {
            // Read a request head before answering.
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match conn.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            if !head.ends_with(b"\r\n\r\n") {
                break; // the client closed the connection
            }
            if head.starts_with(b"HEAD ") {
                let answer = "HTTP/1.1 200 OK\r\nchord-base-offset: 0000000000000000\r\ncontent-length: 0\r\n\r\n";
                let _ = conn.write_all(answer.as_bytes()).await;
                continue;
            }
            let request_line = head.split(|b| *b == b'\n').next().unwrap_or_default();
            if !request_line.windows(8).any(|w| w == b"live=sse") {
                // A joiner's catch-up: an empty stream so far, so that the replica starts
                // from the live read's base, which is what this server's answers test.
                let answer = "HTTP/1.1 200 OK\r\nstream-next-offset: 0000000000000000\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n[]";
                let _ = conn.write_all(answer.as_bytes()).await;
                continue;
            }
            gets += 1;
            if gets == 1 {
                let _ = conn.write_all(&broken).await;
            } else {
                let _ = conn.write_all(&good).await;
                held.push(conn);
            }
            break;
        }
    }
}

/// A `text/event-stream` response: each batch a `data` event and its `control` event.
fn stream(events: &[&[u8]]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    for (i, event) in events.iter().enumerate() {
        out.extend_from_slice(b"event: data\ndata: [");
        out.extend_from_slice(event);
        out.extend_from_slice(b"]\n\nevent: control\ndata: ");
        let control = format!(
            "{{\"streamNextOffset\":\"{:016x}\",\"upToDate\":true}}\n\n",
            i + 1
        );
        out.extend_from_slice(control.as_bytes());
    }
    out
}

/// `stream(events)`, then a batch whose `control` event says `next` (JSON text) is the
/// offset after it.
fn stream_then_offset(events: &[&[u8]], batch: &[u8], next: &str) -> Vec<u8> {
    let mut out = stream(events);
    out.extend_from_slice(b"event: data\ndata: [");
    out.extend_from_slice(batch);
    out.extend_from_slice(b"]\n\nevent: control\ndata: ");
    out.extend_from_slice(format!("{{\"streamNextOffset\":{next}}}\n\n").as_bytes());
    out
}

/// What breaks, the response that breaks it, the break seen, then (starts, resumes).
type Case = (&'static str, Vec<u8>, Break, (u64, u64));

#[test]
fn every_kind_of_break_ends_in_a_resume_or_a_restart() {
    let runtime = local::runtime();
    let base: &[u8] = br#"[["r",{"text":"a","n":1}]]"#;
    // What breaks, how, and then (starts from a base batch, resumes from an offset).
    let cases: Vec<Case> = vec![
        (
            "an error status",
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_vec(),
            Break::Status(503),
            (1, 0),
        ),
        (
            "gone",
            b"HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n".to_vec(),
            Break::Status(410),
            (1, 0),
        ),
        (
            "not an event stream",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi".to_vec(),
            Break::NotEventStream,
            (1, 0),
        ),
        (
            "not HTTP",
            b"SSH-2.0-OpenSSH\r\n\r\n".to_vec(),
            Break::Connection(String::new()),
            (1, 0),
        ),
        (
            "a first batch that is not a base batch",
            stream(&[br#"[["s",["n"],2]]"#]),
            Break::NotBase,
            (2, 0),
        ),
        (
            "an id the stream never defined",
            stream(&[base, br#"[["a",7,"x"]]"#]),
            Break::Decode(String::new()),
            (2, 0),
        ),
        (
            "not JSON",
            stream(&[base, b"[[\"a\""]),
            Break::Decode(String::new()),
            (2, 0),
        ),
        (
            "a reserved segment",
            stream(&[base, br#"[["s",["__proto__"],1]]"#]),
            Break::Decode(String::new()),
            (2, 0),
        ),
        (
            "a path that does not resolve",
            stream(&[base, br#"[["a",["nope"],"x"]]"#]),
            Break::Apply(String::new()),
            (2, 0),
        ),
        (
            "bytes that are not UTF-8",
            {
                let mut s = stream(&[base]);
                s.extend_from_slice(b"event: data\ndata: \xff\xfe\n\n");
                s
            },
            Break::Events(String::new()),
            (1, 1),
        ),
        ("a stream that ends", stream(&[base]), Break::Ended, (1, 1)),
        (
            "an offset with a space",
            stream_then_offset(&[base], br#"[["s",["n"],7]]"#, r#""0000 0001""#),
            Break::BadOffset(String::new()),
            (2, 0),
        ),
        (
            "an offset with a CR/LF",
            stream_then_offset(&[base], br#"[["s",["n"],7]]"#, r#""1\r\nX-Evil: 1""#),
            Break::BadOffset(String::new()),
            (2, 0),
        ),
        (
            "an offset that is a number",
            stream_then_offset(&[base], br#"[["s",["n"],7]]"#, "2"),
            Break::BadOffset(String::new()),
            (2, 0),
        ),
        (
            "no offset",
            stream_then_offset(&[base], br#"[["s",["n"],7]]"#, "null"),
            Break::BadOffset(String::new()),
            (2, 0),
        ),
        (
            "a stream cut inside an event",
            {
                let s = stream(&[base, br#"[["a",["text"],"b"]]"#]);
                s[..s.len() - 12].to_vec()
            },
            Break::Ended,
            (1, 1),
        ),
    ];
    let good = stream(&[base, br#"[["a",["text"],"b"],["s",["n"],2]]"#]);
    let kind = |b: &Break| std::mem::discriminant(b);
    runtime.block_on(async {
        for (what, broken, expected, (starts, resumes)) in cases {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(canned_server(listener, broken, good.clone()));
            let replica = Replica::builder(&format!("http://{addr}/streams/lanes/main"))
                .backoff(Duration::from_millis(1), Duration::from_millis(5))
                .connect()
                .unwrap();
            let reached = tokio::time::timeout(
                PATIENCE,
                replica.wait_until(|s| s.live && s.value == Some(json!({"text": "ab", "n": 2}))),
            )
            .await;
            let stats = replica.stats();
            assert!(reached.is_ok(), "{what}: never recovered: {stats:?}");
            assert_eq!(stats.breaks, 1, "{what}: {stats:?}");
            let seen = stats.last_break.clone().unwrap();
            assert_eq!(kind(&seen), kind(&expected), "{what}: {seen}");
            assert_eq!(
                (stats.subscriptions, stats.resumes),
                (starts, resumes),
                "{what}: {stats:?}"
            );
            println!("{what}: {seen}");
            server.abort();
        }
    });
}

/// What [`gated`] saw of each request: its query, and, once answered, its status and the
/// base offset a `410` named.
#[derive(Clone, Debug)]
struct Asked {
    query: String,
    status: Option<u16>,
    base: Option<String>,
}

/// `router` with every request recorded in `asked`, and every live read waiting for a permit
/// of `live` first (recorded before it waits).
fn gated(
    router: axum::Router,
    asked: &Arc<std::sync::Mutex<Vec<Asked>>>,
    live: &Arc<tokio::sync::Semaphore>,
) -> axum::Router {
    let (asked, live) = (Arc::clone(asked), Arc::clone(live));
    router.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let (asked, live) = (Arc::clone(&asked), Arc::clone(&live));
            async move {
                let query = request.uri().query().unwrap_or_default().to_owned();
                let index = {
                    let mut asked = asked.lock().unwrap();
                    asked.push(Asked {
                        query: query.clone(),
                        status: None,
                        base: None,
                    });
                    asked.len() - 1
                };
                if query.contains("live=") {
                    live.acquire().await.unwrap().forget();
                }
                let response = next.run(request).await;
                let mut asked = asked.lock().unwrap();
                asked[index].status = Some(response.status().as_u16());
                asked[index].base = response
                    .headers()
                    .get(streams::BASE_OFFSET_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                response
            }
        },
    ))
}

/// A replica whose offset the log no longer serves meets one `410`, then joins again with
/// one catch-up read at the base that answer named and one live read, and is live only once
/// that live read answers; the base it joins with equals the value it holds, and its watchers
/// hear nothing of it (only of `live` going false and true). A producer's restart (a base
/// batch mid-stream equal to the value) tells them nothing either.
#[test]
fn a_gone_offset_costs_one_catch_up_at_the_named_base_and_an_equal_base_tells_no_watcher() {
    let runtime = local::runtime();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        // One base kept, no time floor: two new bases put any older offset out of reach.
        let log = streams::LogBuilder::new()
            .retention(Retention::Bases(1))
            .keep_for(Duration::ZERO)
            .build(store);
        let lane = Address::new("lanes", "main");
        let value = json!({"text": "a", "n": 1});
        let base = [chord::Op::Replace(value.clone())];
        let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
        writer.append(&lane, &base).unwrap();
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let live = Arc::new(tokio::sync::Semaphore::new(1_000));
        let app = gated(
            Streams::new(&log)
                .sse_lifetime(Duration::from_secs(1))
                .router(),
            &asked,
            &live,
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(streams::serve(listener, app, std::future::pending()));
        let replica = Replica::builder(&format!("http://{addr}/streams/lanes/main"))
            .backoff(Duration::from_millis(1), Duration::from_millis(5))
            .connect()
            .unwrap();
        let within =
            |what: &'static str| move |r: Result<_, _>| r.unwrap_or_else(|_| panic!("{what}"));
        within("live")(
            tokio::time::timeout(
                PATIENCE,
                replica.wait_until(|s| s.live && s.value.as_ref() == Some(&value)),
            )
            .await,
        );

        // Live reads held: the server ends the one open, and the replica's next one waits.
        let open = live.available_permits();
        live.acquire_many(open as u32).await.unwrap().forget();
        within("the break")(tokio::time::timeout(PATIENCE, replica.wait_until(|s| !s.live)).await);
        let mut changes = replica.watch();
        changes.borrow_and_update();
        // Two bases: the replica's offset is before the one base kept.
        writer.append(&lane, &base).unwrap();
        writer.append(&lane, &base).unwrap();
        let count =
            |f: &dyn Fn(&Asked) -> bool| asked.lock().unwrap().iter().filter(|a| f(a)).count();
        let gone_before = count(&|a| a.status == Some(410));
        assert_eq!(gone_before, 0);
        // The held live read goes through and meets 410; the replica then catches up at the
        // base it named, and its next live read waits again.
        live.add_permits(1);
        let waiting_live = |asked: &[Asked]| {
            asked
                .iter()
                .rposition(|a| a.status == Some(410))
                .is_some_and(|gone| {
                    asked[gone + 1..]
                        .iter()
                        .any(|a| a.query.contains("live=") && a.status.is_none())
                })
        };
        let started = std::time::Instant::now();
        while !waiting_live(&asked.lock().unwrap()) {
            assert!(started.elapsed() < PATIENCE, "{:?}", asked.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!changes.borrow().live, "live before its live read answered");
        assert!(
            !changes.has_changed().unwrap(),
            "the watchers were told of a base equal to the value held"
        );
        assert_eq!(changes.borrow().value.as_ref(), Some(&value));
        live.add_permits(1_000);
        within("live again")(tokio::time::timeout(PATIENCE, replica.wait_until(|s| s.live)).await);

        let asked_now = asked.lock().unwrap().clone();
        let gone: Vec<&Asked> = asked_now.iter().filter(|a| a.status == Some(410)).collect();
        assert_eq!(gone.len(), 1, "{asked_now:?}");
        let named = gone[0].base.clone().expect("the 410 names the latest base");
        let after: Vec<&Asked> = asked_now
            .iter()
            .skip_while(|a| a.status != Some(410))
            .skip(1)
            .collect();
        assert_eq!(
            after[0].query,
            format!("offset={named}"),
            "one catch-up at the named base: {asked_now:?}"
        );
        assert_eq!(after[0].status, Some(200));
        assert!(
            after[1].query.contains("live=sse") && after[1].status == Some(200),
            "then one live read: {asked_now:?}"
        );
        assert_eq!(
            asked_now
                .iter()
                .filter(|a| a.query == "offset=base")
                .count(),
            1,
            "the latest base was asked for once, at the first join: {asked_now:?}"
        );
        let stats = replica.stats();
        assert_eq!((stats.subscriptions, stats.bases), (2, 2), "{stats:?}");

        // A producer's restart: a base equal to the value, mid-stream. Applied (counted),
        // and no watcher told.
        changes.borrow_and_update();
        let batches = replica.stats().batches;
        writer.append(&lane, &base).unwrap();
        let started = std::time::Instant::now();
        while replica.stats().batches == batches {
            assert!(started.elapsed() < PATIENCE, "the base never arrived");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // What would tell them comes right after the count; give it time to.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let breaks = replica.stats().breaks;
        assert!(
            !changes.has_changed().unwrap() || replica.stats().breaks != breaks,
            "a base equal to the value told the watchers"
        );
    });
}
