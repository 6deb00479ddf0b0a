//! A database blip under a running cluster costs its readers nothing: a producer node
//! (`examples/cluster_node.rs`) writes a lane while the server ends its PostgreSQL sessions
//! again and again (`pg_terminate_backend` from another connection), and Rust replicas
//! follow the lane over SSE on the producer's node and on another node. Some flushes fail and
//! are retried; every replica ends at the producer's final value having received exactly one
//! base batch (its first), never held a state the producer did not have, and never started
//! again; the stored log holds one base.
//!
//! The nodes are this test binary (`child_node`). Runs against the server in
//! `CHORD_TEST_POSTGRES_URL` (see `support/postgres.rs`).

#[allow(dead_code)]
#[path = "../examples/cluster_node.rs"]
mod cluster_node;

#[path = "support/cluster.rs"]
mod cluster;

#[path = "support/postgres.rs"]
mod pg;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chord::store::{recover, Address, PostgresStore, ReadOptions, Store, BASE};
use cluster::{expected_states, producer_args, runtime, server_args, wait_for, Checked, Node};

/// The producer's steps (one flushed batch each, every 20 ms).
const STEPS: u64 = 150;

/// The node process of the test below, which starts it (not a test: it does nothing unless
/// `CHORD_CLUSTER_NODE` is set).
#[test]
#[ignore = "the node process of the cluster test, started by it"]
fn child_node() {
    cluster::child_node();
}

/// What the producer node said: its address, its acknowledged steps, its failed flushes.
#[derive(Default)]
struct Producer {
    addr: Option<std::net::SocketAddr>,
    acked: u64,
    done: bool,
    failed: u64,
}

#[test]
fn replicas_on_every_node_see_no_base_after_database_blips() {
    if !pg::available() {
        return;
    }
    let db = pg::fresh_url("blip_cluster");
    let app = "blip-producer";
    let states = Arc::new(expected_states(STEPS));
    let runtime = runtime();

    // The producer, its standard output and error read here (a failed flush says so on its
    // error output): one step, then on when told.
    let mut args = producer_args(&format!("{db}&application_name={app}"), STEPS, 20);
    args.push("--go-on-stdin".into());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_node",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(cluster::CHILD_VAR, serde_json::to_string(&args).unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let said = Arc::new(Mutex::new(Producer::default()));
    let out = BufReader::new(child.stdout.take().unwrap());
    let err = BufReader::new(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let child = Kill(child);
    {
        let (said, said_err) = (Arc::clone(&said), Arc::clone(&said));
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let mut said = said.lock().unwrap();
                if let Some(at) = line.find("listening on http://") {
                    said.addr = line[at + "listening on http://".len()..].parse().ok();
                }
                let words: Vec<&str> = line.split(' ').collect();
                match words.as_slice() {
                    ["ack", step, ..] => said.acked = step.parse().unwrap(),
                    ["done", ..] => said.done = true,
                    _ => {}
                }
            }
        });
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                if line.contains("flush of step") && line.contains("failed") {
                    said_err.lock().unwrap().failed += 1;
                }
            }
        });
    }
    wait_for("the producer's first batch", || {
        said.lock().unwrap().acked >= 1
    });
    let producer_addr = said.lock().unwrap().addr.expect("the producer listens");
    let server = Node::start("server", &server_args(&db));
    let readers: Vec<Checked> = runtime.block_on(async {
        [producer_addr, server.addr()]
            .iter()
            .flat_map(|addr| (0..3).map(move |_| format!("http://{addr}/streams/lanes/main")))
            .map(|url| Checked::follow(&url, Arc::clone(&states)))
            .collect()
    });
    wait_for("every reader to follow", || {
        readers.iter().all(|r| r.replica.is_live() && r.at() >= 1)
    });

    // The blips: the producer's sessions ended every few milliseconds while it writes.
    let stop = Arc::new(AtomicBool::new(false));
    let cuts = Arc::new(AtomicU64::new(0));
    let cutter = {
        let (stop, cuts) = (Arc::clone(&stop), Arc::clone(&cuts));
        std::thread::spawn(move || {
            let mut admin = pg::client();
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) {
                i += 1;
                std::thread::sleep(Duration::from_micros(4_000 + (i * 7919) % 12_000));
                let ended: i64 = admin
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                         WHERE application_name = $1",
                        &[&app],
                    )
                    .unwrap()
                    .get(0);
                cuts.fetch_add(ended as u64, Ordering::Relaxed);
            }
        })
    };
    use std::io::Write as _;
    writeln!(stdin, "go").unwrap();
    wait_for("the producer to be near the end", || {
        said.lock().unwrap().acked >= STEPS - 10
    });
    stop.store(true, Ordering::Release);
    cutter.join().unwrap();
    wait_for("the producer to finish", || said.lock().unwrap().done);
    let failed = said.lock().unwrap().failed;
    let cuts = cuts.load(Ordering::Relaxed);
    assert!(cuts >= 20, "only {cuts} sessions ended");
    assert!(
        failed >= 1,
        "no flush failed under {cuts} cuts: the test cut nothing that mattered"
    );

    let expected = &states[STEPS as usize];
    wait_for("every reader to reach the final value", || {
        readers.iter().all(|r| r.at() == STEPS)
    });
    for (i, r) in readers.iter().enumerate() {
        assert_eq!(r.replica.value().as_ref(), Some(expected), "reader {i}");
        let wrong = r.wrong.lock().unwrap();
        assert!(
            wrong.is_empty(),
            "reader {i} held states no producer had: {wrong:?}"
        );
        let stats = r.replica.stats();
        assert_eq!(stats.subscriptions, 1, "reader {i}: one start: {stats:?}");
        assert_eq!(
            stats.bases, 1,
            "reader {i}: no base batch after the first ({failed} failed flushes): {stats:?}"
        );
    }
    let store = PostgresStore::open_read_only(&db).unwrap();
    let lane = Address::new("lanes", "main");
    let mut bases = 0;
    let mut records = 0;
    let mut options = ReadOptions::asc().limit(1000);
    loop {
        let page = store.read_list(&lane, &options).unwrap();
        records += page.records.len() as u64;
        bases += page
            .records
            .iter()
            .filter(|r| r.tag.as_deref() == Some(BASE))
            .count();
        match page.next_cursor {
            Some(c) => options.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(bases, 1, "the log holds one base");
    assert_eq!(records, STEPS, "one record a step, none twice");
    assert_eq!(recover(&store, &lane).unwrap().as_ref(), Some(expected));
    let bytes: Vec<u64> = readers.iter().map(|r| r.replica.stats().bytes).collect();
    println!(
        "{cuts} sessions ended, {failed} flushes failed and were sent again; bytes each reader \
         received: {bytes:?}"
    );
    drop(child);
}
