//! A chord cluster over PostgreSQL, in real processes: one producer node, three server
//! nodes (the third also a standby producer), 300 Rust replicas following the lane over SSE
//! through a load balancer. A server node is killed (`kill -9`) mid-stream: its readers
//! resume on another node from their offsets. Then the producer is killed: the standby
//! claims the address, recovers and continues, now feeding its own readers from its appends. Every reader ends equal to the producer's final value, having started once from
//! a base batch and received no base batch since, and never held a state the producer did
//! not have.
//!
//! The nodes are `examples/cluster_node.rs`, run as this test binary (`child_node`). Runs
//! against the server in `CHORD_TEST_POSTGRES_URL` (see `support/postgres.rs`).
//!
//! `flush_to_replica_latency` (ignored; run it with `--ignored --nocapture`) measures how
//! long a flushed batch takes to reach a replica through another node, and through the
//! producer's own node.

#[allow(dead_code)]
#[path = "../examples/cluster_node.rs"]
mod cluster_node;

#[path = "support/cluster.rs"]
mod cluster;

#[path = "support/postgres.rs"]
mod pg;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chord::store::{recover, Address, Durability, PostgresStore, Store, BASE};
use chord::streams::{Log, Offset, Streams};
use cluster::{
    expected_states, front, producer_args, runtime, server_args, wait_for, Checked, Node,
};
use http_body_util::BodyExt;

/// The producer's steps (one flushed batch each).
const STEPS: u64 = 240;

/// Readers.
const READERS: usize = 300;

/// The node process of the tests below, which start it (not a test: it does nothing unless
/// `CHORD_CLUSTER_NODE` is set).
#[test]
#[ignore = "the node process of the cluster tests, started by them"]
fn child_node() {
    cluster::child_node();
}

#[test]
fn readers_survive_kill_9_of_a_server_node_and_of_the_producer() {
    if !pg::available() {
        return;
    }
    let db = pg::fresh_url("cluster");
    let states = Arc::new(expected_states(STEPS));
    let runtime = runtime();

    // The producer takes one step, then goes on as far as the test says.
    let mut args = producer_args(&format!("{db}&application_name=producer"), STEPS, 20);
    args.push("--go-on-stdin".into());
    let mut producer = Node::start("producer", &args);
    wait_for("the producer's first batch", || producer.acked() >= 1);
    // Three server nodes; the third is also the standby producer, which claims the lane as
    // soon as the producer's session is gone, and from then on feeds its readers from its
    // own appends instead of its follower.
    let mut servers: Vec<Node> = (1..=2)
        .map(|i| Node::start(&format!("server {i}"), &server_args(&db)))
        .collect();
    servers.push(Node::start(
        "server 3 (standby)",
        &producer_args(&format!("{db}&application_name=standby"), STEPS, 20),
    ));
    let addrs: Vec<_> = servers.iter().map(Node::addr).collect();

    // Three fronts, each preferring one server and falling back to the next ones.
    let fronts: Vec<_> = (0..3)
        .map(|i| {
            let order = (0..3).map(|k| addrs[(i + k) % 3]).collect();
            runtime.block_on(front(order))
        })
        .collect();
    let readers: Vec<Checked> = runtime.block_on(async {
        (0..READERS)
            .map(|r| {
                let url = format!("http://{}/streams/lanes/main", fronts[r % 3]);
                Checked::follow(&url, Arc::clone(&states))
            })
            .collect()
    });
    let first_step = producer.acked();
    wait_for("every reader to follow", || {
        readers.iter().all(|r| r.replica.is_live() && r.at() >= 1)
    });

    // kill -9 the server the first third of the readers are on, mid-stream (the producer
    // writes on to two thirds meanwhile, then waits).
    let (third, two_thirds) = (STEPS / 3, 2 * STEPS / 3);
    producer.go(Some(two_thirds));
    wait_for("the producer to be a third through", || {
        producer.acked() >= third
    });
    servers[0].kill();
    let killed_at = producer.acked();
    assert!(killed_at < two_thirds, "not mid-stream: {killed_at}");
    wait_for("the first server's readers to resume elsewhere", || {
        readers
            .iter()
            .step_by(3)
            .all(|r| r.replica.stats().resumes >= 1 && r.replica.is_live())
    });

    // kill -9 the producer, mid-stream; the standby takes over.
    wait_for("the producer to be two thirds through", || {
        producer.acked() >= two_thirds
    });
    let standby = &servers[2];
    assert!(
        !standby.said(|s| s.claimed),
        "the standby claimed a lane the producer held"
    );
    producer.go(None);
    wait_for("the producer to go on", || {
        producer.acked() >= two_thirds + 5
    });
    producer.kill();
    let producer_acked = producer.acked();
    assert!(
        producer_acked < STEPS,
        "not mid-stream: the producer finished before the kill"
    );
    wait_for("the standby to claim the lane", || {
        standby.said(|s| s.claimed)
    });
    wait_for("the standby to finish", || {
        standby.said(|s| s.done.is_some())
    });
    let (done_step, _) = standby.said(|s| s.done).unwrap();
    assert_eq!(done_step, STEPS);
    let standby_first = standby.said(|s| s.acks.first().map(|a| a.0)).unwrap();
    assert!(
        standby_first > producer_acked,
        "the standby went on from what the producer acknowledged ({producer_acked}), \
         not from {standby_first}"
    );

    // The log holds the producer's value, and every reader comes to it.
    let store = PostgresStore::open_read_only(&db).unwrap();
    let lane = Address::new("lanes", "main");
    let expected = &states[STEPS as usize];
    assert_eq!(recover(&store, &lane).unwrap().as_ref(), Some(expected));
    wait_for("every reader to reach the final value", || {
        readers.iter().all(|r| r.at() == STEPS)
    });
    let mut resumed = 0;
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
            "reader {i}: no base batch after the first: {stats:?}"
        );
        if i % 3 == 0 {
            assert!(stats.resumes >= 1, "reader {i} resumed: {stats:?}");
            resumed += 1;
        }
    }
    println!(
        "{READERS} readers from step {first_step}; server 1 killed at step {killed_at} \
         ({resumed} readers resumed on the others); producer killed at step \
         {producer_acked}, the standby went on from {standby_first} to {STEPS}"
    );
    drop(readers);
    drop(servers);
}

/// A long-poll or catch-up read in process: (status, batches, `Stream-Next-Offset`).
fn get(
    runtime: &tokio::runtime::Runtime,
    app: &axum::Router,
    uri: &str,
) -> (StatusCode, Vec<String>, Option<String>) {
    runtime.block_on(async {
        let request = Request::get(uri).body(Body::empty()).unwrap();
        let mut app = app.clone();
        let response = tower_service::Service::call(&mut app, request)
            .await
            .unwrap();
        let status = response.status();
        let next = response
            .headers()
            .get("stream-next-offset")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let batches = match serde_json::from_slice::<Vec<serde_json::Value>>(&body) {
            Ok(batches) => batches.iter().map(|b| b.to_string()).collect(),
            Err(_) => Vec::new(),
        };
        (status, batches, next)
    })
}

/// A `Log` over a read-only store on one "node" serves what another store writes: its live
/// readers are fed by the log's follower (a long-poll waiting at the tail gets the record
/// committed elsewhere), and a reader arriving with an offset the cache has not reached is
/// caught up from the database instead of being told 410; an offset past the database's
/// newest record still is.
#[test]
fn a_log_over_a_read_only_store_serves_what_another_node_writes() {
    if !pg::available() {
        return;
    }
    let db = pg::fresh_url("follow");
    let lane = Address::new("lanes", "main");
    let mut writer = PostgresStore::open(&db, Durability::EveryAppend).unwrap();
    let set = |n: u64| format!(r#"[["s",["n"],{n}]]"#);
    let mut last = writer
        .append(&lane, r#"[["r",{"n":0}]]"#, Some(BASE))
        .unwrap();
    for n in 1..=5 {
        last = writer.append(&lane, &set(n), None).unwrap();
    }
    let runtime = runtime();
    let node = Log::new(PostgresStore::open_read_only(&db).unwrap());
    let app = Streams::new(&node)
        .long_poll(Duration::from_millis(300))
        .router();
    let at = |seq: u64| format!("/streams/lanes/main?offset={}", Offset::from_seq(seq));
    // At the tail, nothing new: 204; the live read started the follower.
    let (status, _, _) = get(&runtime, &app, &format!("{}&live=long-poll", at(last)));
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Written elsewhere: the follower brings it to the cache, which never reloads meanwhile.
    let six = writer.append(&lane, &set(6), None).unwrap();
    let (status, batches, next) = get(&runtime, &app, &format!("{}&live=long-poll", at(last)));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(batches, [set(6)]);
    assert_eq!(next, Some(Offset::from_seq(six).to_string()));
    // A reader that read two more records on another node resumes here from its offset.
    let seven = writer.append(&lane, &set(7), None).unwrap();
    let eight = writer.append(&lane, &set(8), None).unwrap();
    let (status, batches, next) = get(&runtime, &app, &format!("{}&live=long-poll", at(seven)));
    assert_eq!(status, StatusCode::OK, "resumed, not gone");
    assert_eq!(batches, [set(8)]);
    assert_eq!(next, Some(Offset::from_seq(eight).to_string()));
    let (status, batches, _) = get(&runtime, &app, &at(last));
    assert_eq!(
        (status, batches),
        (StatusCode::OK, vec![set(6), set(7), set(8)])
    );
    // An offset no node ever handed out is still beyond the tail.
    let (status, _, _) = get(&runtime, &app, &at(eight + 1000));
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(
        recover(&node, &lane).unwrap(),
        Some(serde_json::json!({"n": 8}))
    );
}

/// A node that produced an address, and lost it to another node without an error of its own
/// (its connections were cut, and it had nothing more to write), still serves what the new
/// producer writes: its live readers are fed by its follower too.
#[test]
fn a_node_that_lost_its_address_serves_the_new_producer() {
    if !pg::available() {
        return;
    }
    let db = pg::fresh_url("handover");
    let lane = Address::new("lanes", "main");
    let set = |n: u64| format!(r#"[["s",["n"],{n}]]"#);
    let node = Log::new(
        PostgresStore::open(
            &format!("{db}&application_name=handover-a"),
            Durability::EveryAppend,
        )
        .unwrap(),
    );
    let mut own = node.clone();
    own.append(&lane, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
    let last = own.append(&lane, &set(1), None).unwrap();
    let runtime = runtime();
    let app = Streams::new(&node).router();
    // A live reader at the tail: once it has been told it is up to date, it waits on the
    // cache, and only the follower can bring it anything.
    let uri = format!(
        "/streams/lanes/main?offset={}&live=sse",
        Offset::from_seq(last)
    );
    let mut events = runtime.block_on(async {
        let request = Request::get(uri).body(Body::empty()).unwrap();
        let mut app = app.clone();
        let response = tower_service::Service::call(&mut app, request)
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body()
    });
    let mut read_until = |needle: &str| {
        runtime.block_on(async {
            let mut text = String::new();
            while !text.contains(needle) {
                let frame = tokio::time::timeout(cluster::PATIENCE, events.frame())
                    .await
                    .expect("an event in time")
                    .expect("the stream goes on")
                    .unwrap();
                if let Ok(data) = frame.into_data() {
                    text.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
            text
        })
    };
    read_until("\"upToDate\":true");
    // Its connections are cut (its lock goes with them); another node takes the lane over.
    let mut admin = pg::client();
    let cut: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = 'handover-a'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(cut >= 1);
    let mut other = PostgresStore::open(&db, Durability::EveryAppend).unwrap();
    other.claim(&lane, Duration::from_secs(60)).unwrap();
    let two = other.append(&lane, &set(2), None).unwrap();
    let next = format!("\"streamNextOffset\":\"{}\"", Offset::from_seq(two));
    let text = read_until(&next);
    assert!(text.contains(&set(2)), "{text}");
    // Its own next append is refused: the lane is the other node's now.
    assert!(own.append(&lane, &set(99), None).is_err());
}

fn micros_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// p50 and p99 of `samples` (µs), in ms.
fn percentiles(samples: &mut [u128]) -> (f64, f64, usize) {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i] as f64 / 1000.0
    };
    (at(0.5), at(0.99), samples.len())
}

/// Flush to replica, across nodes (producer process → PostgreSQL → server process → SSE →
/// replica) and in one node (the producer's own server → SSE → replica), in one run: one
/// replica on each, in this process; the producer's wall clock before each flush against
/// the replica's when the step first shows. Prints the figures; asserts only correctness.
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn flush_to_replica_latency() {
    if !pg::available() {
        return;
    }
    const STEPS: u64 = 1000;
    let db = pg::fresh_url("latency");
    let states = Arc::new(expected_states(STEPS));
    let runtime = runtime();
    let server = Node::start("server", &server_args(&db));
    let server_addr = server.addr();
    // The producer writes its first batch, then waits until both replicas follow.
    let mut args = producer_args(&db, STEPS, 20);
    args.push("--go-on-stdin".into());
    let mut producer = Node::start("producer", &args);
    let producer_addr = producer.addr();
    wait_for("the first batch", || producer.acked() >= 1);
    let (across, one) = runtime.block_on(async {
        let watch = |addr| {
            let url = format!("http://{addr}/streams/lanes/main");
            let checked = Checked::follow(&url, Arc::clone(&states));
            let mut changes = checked.replica.watch();
            let seen = tokio::spawn(async move {
                let mut seen: Vec<(u64, u128)> = Vec::new();
                let mut last = 0;
                while changes.changed().await.is_ok() {
                    let now = micros_now();
                    let step = changes
                        .borrow_and_update()
                        .value
                        .as_ref()
                        .map_or(0, |v| v["step"].as_u64().unwrap_or(0));
                    for s in last + 1..=step {
                        seen.push((s, now));
                    }
                    last = last.max(step);
                    if last >= STEPS {
                        return seen;
                    }
                }
                seen
            });
            (checked, seen)
        };
        (watch(server_addr), watch(producer_addr))
    });
    let ((across_replica, across_seen), (one_replica, one_seen)) = (across, one);
    wait_for("both replicas to follow", || {
        across_replica.at() >= 1 && one_replica.at() >= 1
    });
    producer.go(None);
    let (across, one) =
        runtime.block_on(async { (across_seen.await.unwrap(), one_seen.await.unwrap()) });
    for (name, r) in [("across", &across_replica), ("one", &one_replica)] {
        // Its checker watches the same value, independently of the timing task.
        wait_for("the replica's checker to see the last step", || {
            r.at() == STEPS
        });
        assert!(r.wrong.lock().unwrap().is_empty(), "{name}: a wrong state");
    }
    // A replica may hold the last step before the producer has printed its acknowledgement.
    wait_for("the producer to finish", || {
        producer.said(|s| s.done.is_some())
    });
    let acks: std::collections::HashMap<u64, (u128, u128)> =
        producer.said(|s| s.acks.iter().map(|a| (a.0, (a.2, a.3))).collect());
    // From before the flush (`from_ack`: from its return) to the replica holding the step.
    let latencies = |seen: &[(u64, u128)], from_ack: bool| {
        let mut out: Vec<u128> = seen
            .iter()
            .filter(|(step, _)| *step > 1) // the first step was written before they followed
            .filter_map(|(step, at)| {
                let (before, after) = acks.get(step)?;
                Some(at.saturating_sub(if from_ack { *after } else { *before }))
            })
            .collect();
        assert_eq!(out.len() as u64, STEPS - 1, "a sample per step");
        percentiles(&mut out)
    };
    let mut flushes: Vec<u128> = acks.values().map(|(b, a)| a - b).collect();
    let (f50, f99, _) = percentiles(&mut flushes);
    println!("flush to replica, {STEPS} batches at 50/s, p50 / p99:");
    println!("  the flush itself (commit in PostgreSQL): {f50:.2} / {f99:.2} ms");
    for (name, seen) in [
        (
            "across nodes (producer process -> PostgreSQL -> server process -> SSE)",
            &across,
        ),
        (
            "in one node (producer and server in one process -> SSE)",
            &one,
        ),
    ] {
        let (p50, p99, n) = latencies(seen, false);
        let (a50, a99, _) = latencies(seen, true);
        println!(
            "  {name}: {p50:.2} / {p99:.2} ms ({a50:.2} / {a99:.2} ms after the flush \
             returned; {n} samples)"
        );
    }
    drop(server);
}
