//! PostgreSQL restarted mid-stream under a chord cluster: one producer node, two server
//! nodes, replicas on all three. The producer's flushes fail while the server is away and
//! are retried; the nodes' listeners and followers reconnect; the replicas resume. Every
//! acknowledged append survives, no replica ever holds a state the producer did not have,
//! and every replica ends equal to the producer's final value.
//!
//! The test restarts the server every PostgreSQL test uses, so it is ignored and runs only
//! when asked for by name, alone: `cargo test -p chord-delta --all-features --test
//! cluster_restart -- --ignored --exact
//! a_database_restart_mid_stream_loses_no_acknowledged_append` (`.ci/run` runs it so, after
//! every other test).
//!
//! It restarts the cluster that `pg_lsclusters` lists on the URL's port (`pg_ctlcluster
//! <version> <name> restart`, whose fast shutdown cuts every connected client), so the server
//! must be this machine's, the test must be allowed to run that (root or the cluster's owner),
//! and no other client may be connected when it starts. When any of these does not hold, it
//! fails and says which. `child_node` is the node process it starts: ignored too, and it does
//! nothing unless `CHORD_CLUSTER_NODE` is set.

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

/// The node process of the test below, which starts it (not a test: it does nothing unless
/// `CHORD_CLUSTER_NODE` is set).
#[test]
#[ignore = "the node process of the cluster test, started by it"]
fn child_node() {
    cluster::child_node();
}

/// The command that restarts the test server; panics saying why when the test cannot run it.
fn restart_command(url: &str) -> Vec<String> {
    let config: postgres::Config = url
        .parse()
        .unwrap_or_else(|e| panic!("{} is not a PostgreSQL URL: {e}", pg::URL_VAR));
    let local = config.get_hosts().iter().all(|h| match h {
        postgres::config::Host::Tcp(h) => ["127.0.0.1", "localhost", "::1"].contains(&h.as_str()),
        postgres::config::Host::Unix(_) => true,
    });
    assert!(
        local,
        "{url} is not on this machine, so the test cannot restart it"
    );
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let listed = match Command::new("pg_lsclusters").arg("--no-header").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => panic!("pg_lsclusters failed: {}", out.status),
        Err(e) => panic!("pg_lsclusters (Debian's postgresql-common) cannot run: {e}"),
    };
    // `15 main 5432 online postgres /var/lib/... /var/log/...`
    let (version, name) = listed
        .lines()
        .find_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (words.len() >= 4 && words[2] == port.to_string() && words[3].starts_with("online"))
                .then(|| (words[0].to_owned(), words[1].to_owned()))
        })
        .unwrap_or_else(|| panic!("pg_lsclusters lists no cluster online on port {port}"));
    // The restart cuts every connection: refuse while anyone else is connected. A connection
    // this process just closed may stay listed for a moment, so look again for a while.
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let mut others = Vec::new();
    for _ in 0..20 {
        others = client
            .query(
                "SELECT format('pid %s (%s, %s)', pid, usename, \
                 coalesce(nullif(application_name, ''), 'no application name')) \
                 FROM pg_stat_activity \
                 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
                &[],
            )
            .expect("list the server's clients")
            .iter()
            .map(|row| row.get::<_, String>(0))
            .collect();
        if others.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        others.is_empty(),
        "restarting cluster {version}/{name} would cut the connections of {} other client(s) \
         ({}); run this test when nothing else uses the server",
        others.len(),
        others.join(", ")
    );
    vec![
        "pg_ctlcluster".into(),
        "--skip-systemctl-redirect".into(),
        version,
        name,
        "restart".into(),
    ]
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
#[ignore = "restarts this machine's PostgreSQL cluster, which every PostgreSQL test shares: \
            run it alone, by name, with --ignored (.ci/run does)"]
fn a_database_restart_mid_stream_loses_no_acknowledged_append() {
    let url = pg::required("the PostgreSQL restart test");
    let restart = restart_command(&url);
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
