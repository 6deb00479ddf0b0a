//! Faults: connections cut at random points (mid-headers, mid-chunk, mid-event), connections
//! that go silent, server-side disconnects, and streams that do not decode or apply. Every
//! replica resubscribes and converges to the producer's value.
//!
//! `CHORD_FAULT_SEED` replays a run (the seed is printed); `CHORD_FAULT_REPLICAS` and
//! `CHORD_FAULT_BATCHES` size it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chord::hub::{Address, Hub};
use chord::replica::{Break, Replica};
use chord::sse::{self, Sse};
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();

    let hub = Hub::builder().queue(128).build();
    let lane = Address::new("lanes", "main");
    let (server_addr, proxy_addr, chaos, faults) = runtime.block_on(async {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = server.local_addr().unwrap();
        let app = Sse::new(hub.clone())
            .keep_alive(Duration::from_millis(50))
            .router();
        tokio::spawn(sse::serve(server, app, std::future::pending()));
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
    hub.publish(&lane, &producer.flush().unwrap()).unwrap();

    let url = format!("http://{proxy_addr}{}", sse::stream_path(&lane));
    let direct = format!("http://{server_addr}{}", sse::stream_path(&lane));
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

    for i in 1..=batches {
        step(&mut producer, i, &mut rng);
        hub.publish(&lane, &producer.flush().unwrap()).unwrap();
        // Server-side faults: the value is dropped and published anew, which ends every
        // subscription, and the producer sometimes checkpoints with a base batch.
        match rng.below(500) {
            0 => {
                hub.remove(&lane);
                producer.rebase();
                hub.publish(&lane, &producer.flush().unwrap()).unwrap();
            }
            1 => {
                producer.rebase();
                hub.publish(&lane, &producer.flush().unwrap()).unwrap();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(2));
    }

    // The network heals; every replica must reach the producer's value.
    chaos.store(false, Ordering::Relaxed);
    let expected = serde_json::to_value(producer.get()).unwrap();
    assert_eq!(hub.get(&lane), Some(expected.clone()));
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
    let subscriptions: u64 = followers.iter().map(|r| r.stats().subscriptions).sum();
    let breaks: u64 = followers.iter().map(|r| r.stats().breaks).sum();
    println!(
        "proxy: {} connections, {} cut, {} frozen; replicas: {subscriptions} subscriptions, {breaks} breaks; hub: {:?}",
        faults.connections.load(Ordering::Relaxed),
        faults.cut.load(Ordering::Relaxed),
        faults.frozen.load(Ordering::Relaxed),
        hub.stats()
    );
    assert!(
        faults.cut.load(Ordering::Relaxed) > 0,
        "the proxy cut connections"
    );
    assert!(
        breaks >= faults.cut.load(Ordering::Relaxed) / 2,
        "replicas noticed the cuts"
    );
}

/// Answers the first connection with `broken`, closing it after, and every later one with
/// `good`, kept open.
async fn canned_server(listener: TcpListener, broken: Vec<u8>, good: Vec<u8>) {
    let mut held = Vec::new();
    for i in 0.. {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        // Read the request head before answering.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        if i == 0 {
            let _ = conn.write_all(&broken).await;
        } else {
            let _ = conn.write_all(&good).await;
            held.push(conn);
        }
    }
}

fn stream(events: &[&[u8]]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    for event in events {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(event);
        out.extend_from_slice(b"\n\n");
    }
    out
}

#[test]
fn every_kind_of_break_ends_in_a_resubscription() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let base: &[u8] = br#"[["r",{"text":"a","n":1}]]"#;
    let cases: Vec<(&str, Vec<u8>, Break)> = vec![
        (
            "an error status",
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_vec(),
            Break::Status(503),
        ),
        (
            "not an event stream",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi".to_vec(),
            Break::NotEventStream,
        ),
        (
            "not HTTP",
            b"SSH-2.0-OpenSSH\r\n\r\n".to_vec(),
            Break::Connection(String::new()),
        ),
        (
            "a first batch that is not a base batch",
            stream(&[br#"[["s",["n"],2]]"#]),
            Break::NotBase,
        ),
        (
            "an id the stream never defined",
            stream(&[base, br#"[["a",7,"x"]]"#]),
            Break::Decode(String::new()),
        ),
        (
            "not JSON",
            stream(&[base, b"[[\"a\""]),
            Break::Decode(String::new()),
        ),
        (
            "a reserved segment",
            stream(&[base, br#"[["s",["__proto__"],1]]"#]),
            Break::Decode(String::new()),
        ),
        (
            "a path that does not resolve",
            stream(&[base, br#"[["a",["nope"],"x"]]"#]),
            Break::Apply(String::new()),
        ),
        (
            "bytes that are not UTF-8",
            stream(&[base, b"\xff\xfe"]),
            Break::Events(String::new()),
        ),
        ("a stream that ends", stream(&[base]), Break::Ended),
        (
            "a stream cut inside an event",
            {
                let s = stream(&[base, br#"[["a",["text"],"b"]]"#]);
                s[..s.len() - 12].to_vec()
            },
            Break::Ended,
        ),
    ];
    let good = stream(&[base, br#"[["a",["text"],"b"],["s",["n"],2]]"#]);
    let kind = |b: &Break| std::mem::discriminant(b);
    runtime.block_on(async {
        for (what, broken, expected) in cases {
            let delivers_base = broken.windows(base.len()).any(|w| w == base);
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(canned_server(listener, broken, good.clone()));
            let replica = Replica::builder(&format!("http://{addr}/streams/lanes/main"))
                .backoff(Duration::from_millis(1), Duration::from_millis(5))
                .connect()
                .unwrap();
            let reached = tokio::time::timeout(
                PATIENCE,
                replica.wait_until(|s| s.value == Some(json!({"text": "ab", "n": 2}))),
            )
            .await;
            let stats = replica.stats();
            assert!(reached.is_ok(), "{what}: never recovered: {stats:?}");
            assert!(replica.is_live(), "{what}");
            assert_eq!(stats.breaks, 1, "{what}: {stats:?}");
            let seen = stats.last_break.unwrap();
            assert_eq!(kind(&seen), kind(&expected), "{what}: {seen}");
            assert_eq!(stats.subscriptions, 1 + u64::from(delivers_base), "{what}");
            println!("{what}: {seen}");
            server.abort();
        }
    });
}
