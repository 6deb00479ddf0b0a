//! A chord cluster on this machine for the tests: node processes (`examples/cluster_node.rs`,
//! run as this test binary's ignored `child_node` with `CHORD_CLUSTER_NODE` set), a load balancer in
//! front of them, and replicas that check every state they hold.

#![allow(dead_code)] // each test binary uses part of it

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

use super::cluster_node::{advance, Lane};

/// The variable that makes this test binary's `child_node` run a node (its arguments, as a
/// JSON array).
pub const CHILD_VAR: &str = "CHORD_CLUSTER_NODE";

/// The tests' runtime for replicas and in-process servers: two workers, as the machine has.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs the node named by [`CHILD_VAR`], if any (the body of every cluster test binary's
/// `child_node`).
pub fn child_node() {
    let Ok(args) = std::env::var(CHILD_VAR) else {
        return;
    };
    let mut argv = vec!["cluster_node".to_owned()];
    argv.extend(serde_json::from_str::<Vec<String>>(&args).expect("node arguments"));
    if let Err(e) = super::cluster_node::run(argv) {
        eprintln!("node failed: {e}");
        std::process::exit(2);
    }
}

/// A generous bound on what should take moments, so a broken build fails instead of
/// hanging. Nothing is asserted about how long anything took.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until `done` holds, looking every few milliseconds; panics naming `what` after
/// `PATIENCE`.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a node process said on its standard output.
#[derive(Debug, Default)]
pub struct Said {
    pub addr: Option<SocketAddr>,
    pub claimed: bool,
    /// (step, seq, wall clock in µs before the flush, and once it returned), per
    /// acknowledged flush.
    pub acks: Vec<(u64, u64, u128, u128)>,
    pub done: Option<(u64, u64)>,
    pub exited: bool,
}

/// A node process, killed (SIGKILL) when dropped.
pub struct Node {
    pub name: String,
    child: Child,
    said: Arc<Mutex<Said>>,
}

impl Node {
    /// Starts a node with `args` (as `cluster_node` takes them).
    pub fn start(name: &str, args: &[String]) -> Node {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_node",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VAR, serde_json::to_string(args).unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let said = Arc::new(Mutex::new(Said::default()));
        let out = BufReader::new(child.stdout.take().unwrap());
        let shared = Arc::clone(&said);
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let mut said = shared.lock().unwrap();
                // The test harness starts its line `test child_node ... ` before the node
                // prints.
                let line = match line.find("listening on ") {
                    Some(at) => &line[at..],
                    None => &line,
                };
                let words: Vec<&str> = line.split(' ').collect();
                match words.as_slice() {
                    ["listening", "on", url] => {
                        said.addr = url.trim_start_matches("http://").parse().ok();
                    }
                    ["claimed"] => said.claimed = true,
                    ["ack", step, seq, before, after] => said.acks.push((
                        step.parse().unwrap(),
                        seq.parse().unwrap(),
                        before.parse().unwrap(),
                        after.parse().unwrap(),
                    )),
                    ["done", step, seq] => {
                        said.done = Some((step.parse().unwrap(), seq.parse().unwrap()));
                    }
                    _ => {}
                }
            }
            shared.lock().unwrap().exited = true;
        });
        Node {
            name: name.to_owned(),
            child,
            said,
        }
    }

    /// Looks at what it said.
    pub fn said<T>(&self, f: impl FnOnce(&Said) -> T) -> T {
        f(&self.said.lock().unwrap())
    }

    /// The address it serves on, once it listens.
    pub fn addr(&self) -> SocketAddr {
        wait_for(&format!("{} to listen", self.name), || {
            self.said(|s| s.addr.is_some() || s.exited)
        });
        self.said(|s| s.addr)
            .unwrap_or_else(|| panic!("{} exited before listening", self.name))
    }

    /// The last step it acknowledged (0: none).
    pub fn acked(&self) -> u64 {
        self.said(|s| s.acks.last().map_or(0, |a| a.0))
    }

    /// Tells a producer started with `--go-on-stdin` to go on, up to step `until` (`None`:
    /// to the end).
    pub fn go(&mut self, until: Option<u64>) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        let line = match until {
            Some(step) => format!("go {step}\n"),
            None => "go\n".to_owned(),
        };
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments of a node serving the store at `db`.
pub fn server_args(db: &str) -> Vec<String> {
    vec!["--db".into(), db.into()]
}

/// The arguments of a node producing `lanes/main` up to `steps`, a batch every `every_ms`.
pub fn producer_args(db: &str, steps: u64, every_ms: u64) -> Vec<String> {
    let mut args = server_args(db);
    args.extend([
        "--produce".into(),
        steps.to_string(),
        "--every-ms".into(),
        every_ms.to_string(),
    ]);
    args
}

/// A load balancer's front: each connection goes to the first of `backends` that accepts it
/// (a node that was killed refuses at once). Runs on the current runtime.
pub async fn front(backends: Vec<SocketAddr>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                continue;
            };
            let backends = backends.clone();
            tokio::spawn(async move {
                for backend in backends {
                    if let Ok(mut server) = TcpStream::connect(backend).await {
                        let _ = server.set_nodelay(true);
                        let _ = client.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The lane after each step, `states[i]` after step `i`: what every producer, whichever
/// took over, must have written.
pub fn expected_states(steps: u64) -> Vec<Value> {
    let mut lane = chord::track(Lane::default());
    let mut out = vec![serde_json::to_value(lane.get()).unwrap()];
    for step in 1..=steps {
        advance(&mut lane.state(), step);
        lane.flush().unwrap();
        out.push(serde_json::to_value(lane.get()).unwrap());
    }
    out
}

/// A replica, and a task that checks every state it holds against the producer's.
pub struct Checked {
    pub replica: chord::replica::Replica,
    /// The newest step it held.
    pub step: Arc<AtomicU64>,
    /// States it held that no producer ever had.
    pub wrong: Arc<Mutex<Vec<String>>>,
}

impl Checked {
    /// Follows `url` on the current runtime.
    pub fn follow(url: &str, states: Arc<Vec<Value>>) -> Checked {
        let replica = chord::replica::Replica::builder(url)
            .backoff(Duration::from_millis(20), Duration::from_millis(500))
            .idle_timeout(Duration::from_secs(20))
            .connect()
            .unwrap();
        let step = Arc::new(AtomicU64::new(0));
        let wrong = Arc::new(Mutex::new(Vec::new()));
        let mut changes = replica.watch();
        let (at, bad) = (Arc::clone(&step), Arc::clone(&wrong));
        tokio::spawn(async move {
            loop {
                {
                    let state = changes.borrow_and_update();
                    if let Some(value) = &state.value {
                        let n = value["step"].as_u64().unwrap_or(u64::MAX);
                        match states.get(n as usize) {
                            Some(expected) if expected == value => {
                                at.store(n, Ordering::Release);
                            }
                            _ => bad.lock().unwrap().push(format!("step {n}: {value}")),
                        }
                    }
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        });
        Checked {
            replica,
            step,
            wrong,
        }
    }

    pub fn at(&self) -> u64 {
        self.step.load(Ordering::Acquire)
    }
}

impl Node {
    /// `kill -TERM` (what an orchestrator sends before it kills), then waits, at most
    /// [`PATIENCE`], for the process to exit; whether it exited with success.
    pub fn terminate(&mut self) -> bool {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit after SIGTERM",
                self.name
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `GET path` from `addr` over a connection of its own: the status and the body (a response
/// with a `Content-Length`, as the health routes answer).
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_owned())
}
