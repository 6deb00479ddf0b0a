//! Operating a chord cluster over PostgreSQL, in real processes (`examples/cluster_node.rs`):
//! each node answers `/healthz` and `/readyz`, and a server node sent `SIGTERM` mid-stream
//! drains and exits by itself; its readers, behind a load balancer, resume on the other node
//! from their offsets: none errs, none reads a base batch again, each ends equal to the
//! producer. Runs against the server in `CHORD_TEST_POSTGRES_URL` (see `support/postgres.rs`).

#[allow(dead_code)]
#[path = "../examples/cluster_node.rs"]
mod cluster_node;

#[path = "support/cluster.rs"]
mod cluster;

#[path = "support/postgres.rs"]
mod pg;

use std::sync::Arc;

use chord::replica::Break;
use cluster::{
    expected_states, front, http_get, producer_args, runtime, server_args, wait_for, Checked, Node,
};
use serde_json::Value;

/// The producer's steps (one flushed batch each).
const STEPS: u64 = 120;

/// Readers.
const READERS: usize = 20;

/// The node process of the tests below, which start it (not a test: it does nothing unless
/// `CHORD_CLUSTER_NODE` is set).
#[test]
#[ignore = "the node process of the cluster tests, started by them"]
fn child_node() {
    cluster::child_node();
}

#[test]
fn a_node_sent_sigterm_drains_and_its_readers_resume_without_a_break() {
    if !pg::available() {
        return;
    }
    let db = pg::fresh_url("opscluster");
    let states = Arc::new(expected_states(STEPS));
    let runtime = runtime();

    let mut args = producer_args(&format!("{db}&application_name=producer"), STEPS, 10);
    args.push("--go-on-stdin".into());
    let mut producer = Node::start("producer", &args);
    wait_for("the producer's first batch", || producer.acked() >= 1);
    // The first server drains with a deadline far beyond the test's patience: it exits in
    // time only if its SSE responses end by themselves.
    let mut draining = server_args(&db);
    draining.extend(["--drain-ms".into(), "3600000".into()]);
    let mut servers = [
        Node::start("server 1", &draining),
        Node::start("server 2", &server_args(&db)),
    ];
    let addrs: Vec<_> = servers.iter().map(Node::addr).collect();
    for addr in &addrs {
        let (status, body) = runtime.block_on(http_get(*addr, "/healthz"));
        assert_eq!(status, 200, "{body}");
        let (status, body) = runtime.block_on(http_get(*addr, "/readyz"));
        assert_eq!(status, 200, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["checks"]["store"]["ok"], true, "{body}");
    }
    // Every reader goes to the first server while it accepts.
    let front = runtime.block_on(front(addrs.clone()));
    let url = format!("http://{front}/streams/lanes/main");
    let readers: Vec<Checked> = runtime.block_on(async {
        (0..READERS)
            .map(|_| Checked::follow(&url, Arc::clone(&states)))
            .collect()
    });
    wait_for("every reader to follow", || {
        readers.iter().all(|r| r.replica.is_live() && r.at() >= 1)
    });
    // Live readers: the first server follows the lane, and says how far behind it is.
    let (status, body) = runtime.block_on(http_get(addrs[0], "/readyz"));
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert!(body["checks"]["follower"]["lag_ms"].is_u64(), "{body}");

    producer.go(Some(STEPS / 2));
    wait_for("the producer to be halfway", || {
        producer.acked() >= STEPS / 2
    });
    assert!(
        servers[0].terminate(),
        "the drained node exits with success"
    );
    producer.go(None);
    wait_for("the producer to finish", || {
        producer.said(|s| s.done.is_some())
    });
    wait_for("every reader to reach the last step", || {
        readers.iter().all(|r| r.at() == STEPS)
    });
    for (i, r) in readers.iter().enumerate() {
        let stats = r.replica.stats();
        assert!(
            r.wrong.lock().unwrap().is_empty(),
            "reader {i}: a wrong state"
        );
        assert_eq!(
            stats.bases, 1,
            "reader {i} read a base batch again: {stats:?}"
        );
        assert_eq!(stats.subscriptions, 1, "reader {i}: {stats:?}");
        assert_eq!(stats.resumes, 1, "reader {i} resumed once: {stats:?}");
        assert_eq!(
            stats.last_break,
            Some(Break::Ended),
            "reader {i}: the drained node's response ended cleanly"
        );
    }
    let (status, body) = runtime.block_on(http_get(addrs[1], "/readyz"));
    assert_eq!(status, 200, "{body}");
}
