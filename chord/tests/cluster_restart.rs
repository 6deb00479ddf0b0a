//! PostgreSQL restarted mid-stream under a chord cluster: one producer node, two server
//! nodes, replicas on all three. The producer's flushes fail while the server is away and
//! are retried; the nodes' listeners and followers reconnect; the replicas resume. Every
//! acknowledged append survives, no replica ever holds a state the producer did not have,
//! and every replica ends equal to the producer's final value.
//!
//! This restarts the server every PostgreSQL test uses, so it is its own test binary with a
//! single test (cargo runs test binaries one after another; `child_node` is the node process
//! and touches nothing unless `CHORD_CLUSTER_NODE` is set), and it runs only when asked:
//! with `CHORD_TEST_POSTGRES_RESTART=1`, or under `CI=true`. It restarts the cluster that
//! `pg_lsclusters` lists on the URL's port (`pg_ctlcluster <version> <name> restart`), so the
//! server must be this machine's and the test must be allowed to run that (root or the
//! cluster's owner); when it cannot, it is skipped with a notice, and under `CI=true` it fails.

#[allow(dead_code)]
#[path = "../examples/cluster_node.rs"]
mod cluster_node;

#[path = "support/cluster.rs"]
mod cluster;

#[path = "support/postgres.rs"]
mod pg;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chord::store::{recover, Address, PostgresStore, ReadOptions, Store};
use cluster::{
    expected_states, front, producer_args, runtime, server_args, wait_for, Checked, Node,
};

const STEPS: u64 = 200;

/// The node process of the test below (does nothing unless `CHORD_CLUSTER_NODE` is set).
#[test]
fn child_node() {
    cluster::child_node();
}

/// Why the test cannot restart the server: skipped with this notice, or under `CI=true` a
/// failure.
fn cannot(why: &str) -> Option<Vec<String>> {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, so the PostgreSQL restart test must run, but {why}");
    }
    eprintln!("skipping the PostgreSQL restart test: {why}");
    None
}

/// The command that restarts the test server, when this test may and can run it.
fn restart_command(url: &str) -> Option<Vec<String>> {
    let asked = std::env::var("CHORD_TEST_POSTGRES_RESTART").as_deref() == Ok("1")
        || std::env::var("CI").as_deref() == Ok("true");
    if !asked {
        eprintln!(
            "skipping the PostgreSQL restart test: it restarts the server every test shares; \
             set CHORD_TEST_POSTGRES_RESTART=1 to run it"
        );
        return None;
    }
    let config: postgres::Config = url.parse().ok()?;
    let local = config.get_hosts().iter().all(|h| match h {
        postgres::config::Host::Tcp(h) => ["127.0.0.1", "localhost", "::1"].contains(&h.as_str()),
        postgres::config::Host::Unix(_) => true,
    });
    if !local {
        return cannot(&format!("{url} is not on this machine"));
    }
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let listed = match Command::new("pg_lsclusters").arg("--no-header").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => return cannot(&format!("pg_lsclusters failed: {}", out.status)),
        Err(e) => return cannot(&format!("pg_lsclusters: {e}")),
    };
    // `15 main 5432 online postgres /var/lib/... /var/log/...`
    let Some((version, name)) = listed.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        (words.len() >= 4 && words[2] == port.to_string() && words[3].starts_with("online"))
            .then(|| (words[0].to_owned(), words[1].to_owned()))
    }) else {
        return cannot(&format!(
            "pg_lsclusters lists no cluster online on port {port}"
        ));
    };
    Some(vec![
        "pg_ctlcluster".into(),
        "--skip-systemctl-redirect".into(),
        version,
        name,
        "restart".into(),
    ])
}

/// When the server started, as it says; `None` while it does not answer.
fn started_at(url: &str) -> Option<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).ok()?;
    let row = client
        .query_one("SELECT pg_postmaster_start_time()::text", &[])
        .ok()?;
    Some(row.get(0))
}

#[test]
fn a_database_restart_mid_stream_loses_no_acknowledged_append() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let Some(restart) = restart_command(&url) else {
        return;
    };
    let db = pg::fresh_url("restart");
    let states = Arc::new(expected_states(STEPS));
    let runtime = runtime();
    // The producer takes one step, then waits until the readers follow.
    let mut args = producer_args(&format!("{db}&application_name=producer"), STEPS, 20);
    args.push("--go-on-stdin".into());
    let mut producer = Node::start("producer", &args);
    wait_for("the producer's first batch", || producer.acked() >= 1);
    // The servers end each SSE response after 200 ms: their readers come back through the
    // outage too (a request that needs the database meanwhile is answered 500).
    let servers: Vec<Node> = (1..=2)
        .map(|i| {
            let mut args = server_args(&db);
            args.extend(["--sse-lifetime-ms".into(), "200".into()]);
            Node::start(&format!("server {i}"), &args)
        })
        .collect();
    let nodes = [producer.addr(), servers[0].addr(), servers[1].addr()];
    let fronts: Vec<_> = (0..3)
        .map(|i| {
            let order = (0..3).map(|k| nodes[(i + k) % 3]).collect();
            runtime.block_on(front(order))
        })
        .collect();
    let readers: Vec<Checked> = runtime.block_on(async {
        (0..30)
            .map(|r| {
                let url = format!("http://{}/streams/lanes/main", fronts[r % 3]);
                Checked::follow(&url, Arc::clone(&states))
            })
            .collect()
    });
    wait_for("every reader to follow", || {
        readers.iter().all(|r| r.replica.is_live() && r.at() >= 1)
    });
    producer.go(None);
    wait_for("the producer to be a third through", || {
        producer.acked() >= STEPS / 3
    });

    let before = started_at(&url).expect("the server answers");
    let at_restart = producer.acked();
    let status = Command::new(&restart[0])
        .args(&restart[1..])
        .status()
        .unwrap();
    assert!(status.success(), "{restart:?}: {status}");
    // Back when it accepts connections again (pg_ctlcluster waits for that, but be sure).
    let mut after = None;
    let deadline = Instant::now() + cluster::PATIENCE;
    while after.is_none() {
        assert!(Instant::now() < deadline, "the server never came back");
        after = started_at(&url);
        if after.is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_ne!(after, Some(before), "the server did not restart");
    assert!(
        at_restart < STEPS,
        "the producer finished before the restart"
    );

    wait_for("the producer to finish", || {
        producer.said(|s| s.done.is_some() || s.exited)
    });
    assert_eq!(producer.said(|s| s.done.map(|d| d.0)), Some(STEPS));
    // Every acknowledged append is in the log.
    let store = PostgresStore::open_read_only(&db).unwrap();
    let lane = Address::new("lanes", "main");
    let mut stored = std::collections::HashSet::new();
    let mut options = ReadOptions::asc().limit(1000);
    loop {
        let page = store.read_list(&lane, &options).unwrap();
        stored.extend(page.records.iter().map(|r| r.seq));
        match page.next_cursor {
            Some(c) => options.cursor = Some(c),
            None => break,
        }
    }
    let acks = producer.said(|s| s.acks.clone());
    assert_eq!(acks.len() as u64, STEPS, "one acknowledgement per step");
    for (step, seq, _, _) in &acks {
        assert!(
            stored.contains(seq),
            "step {step}'s acknowledged seq {seq} is lost"
        );
    }
    let expected = &states[STEPS as usize];
    assert_eq!(recover(&store, &lane).unwrap().as_ref(), Some(expected));
    wait_for("every reader to reach the final value", || {
        readers.iter().all(|r| r.at() == STEPS)
    });
    let mut breaks = 0;
    for (i, r) in readers.iter().enumerate() {
        assert_eq!(r.replica.value().as_ref(), Some(expected), "reader {i}");
        let wrong = r.wrong.lock().unwrap();
        assert!(
            wrong.is_empty(),
            "reader {i} held states no producer had: {wrong:?}"
        );
        breaks += r.replica.stats().breaks;
    }
    println!(
        "restarted PostgreSQL at step {at_restart} of {STEPS}; {} records stored, {} \
         acknowledged; {breaks} replica connections ended and resumed",
        stored.len(),
        acks.len()
    );
}
