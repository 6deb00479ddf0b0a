//! The PostgreSQL backend beyond the shared conformance suite (`store_conformance.rs`): the
//! live tail across stores and processes, one writer per address with takeover after a
//! `kill -9`, fencing, and connections cut mid-stream by the server.
//!
//! Runs against the server named by `CHORD_TEST_POSTGRES_URL` (see `support/postgres.rs`);
//! each test in a schema of its own. The child processes are this test binary, re-run with
//! `CHORD_PG_CHILD` set to run its ignored `child_writer`.

#[path = "support/postgres.rs"]
mod pg;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use chord::store::{
    recover, Address, Checkpoint, Durability, Durable, Error, LogWriter, PostgresStore,
    ReadOptions, Record, Store, BASE,
};
use chord::Decoder;
use serde_json::{json, Value};

fn lane() -> Address {
    Address::new("lanes", "main")
}

/// The producer's state after step `i`: a pure function, so any process can check it.
fn state(i: u64) -> Value {
    json!({"n": i, "text": "token ".repeat((i % 7) as usize)})
}

fn base(n: u64) -> String {
    format!(r#"[["r",{{"n":{n}}}]]"#)
}

fn set(n: u64) -> String {
    format!(r#"[["s",["n"],{n}]]"#)
}

/// Every record of `address`, oldest first.
fn all_records(store: &dyn Store, address: &Address) -> Vec<Record> {
    let mut out = Vec::new();
    let mut options = ReadOptions::asc().limit(1000);
    loop {
        let page = store.read_list(address, &options).unwrap();
        out.extend(page.records);
        match page.next_cursor {
            Some(c) => options.cursor = Some(c),
            None => return out,
        }
    }
}

/// Applies records in order with one decoder, as a live replica does.
fn replicate(records: &[Record]) -> Option<Value> {
    let mut decoder = Decoder::new();
    let mut doc = None;
    for r in records {
        let ops = decoder.decode_str(&r.batch).unwrap();
        chord::apply(&mut doc, &ops).unwrap();
    }
    doc
}

/// A store on the test schema, its connections named `app` (so a test can cut exactly
/// them).
fn open(schema: &str, app: &str, durability: Durability) -> PostgresStore {
    PostgresStore::open(
        &format!("{}&application_name={app}", pg::schema_url(schema)),
        durability,
    )
    .unwrap()
}

fn open_reader(schema: &str, app: &str) -> PostgresStore {
    PostgresStore::open_read_only(&format!(
        "{}&application_name={app}",
        pg::schema_url(schema)
    ))
    .unwrap()
}

/// Ends every connection the server has for application `app`; how many.
fn cut(app: &str) -> i64 {
    let mut client = pg::client();
    let row = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&app],
        )
        .unwrap();
    row.get(0)
}

/// Collects a tail's records on a thread until it has read up to the seq `until` holds (0:
/// not known yet).
fn follow(
    store: PostgresStore,
    address: Address,
    until: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Vec<Record>> {
    std::thread::spawn(move || {
        let mut tail = store.tail(&address, None).unwrap();
        let mut got = Vec::new();
        let give_up = Instant::now() + Duration::from_secs(120);
        loop {
            let target = until.load(Ordering::Acquire);
            if target != 0 && tail.cursor() >= Some(target) {
                return got;
            }
            assert!(Instant::now() < give_up, "the tail never caught up");
            // Errors (a cut connection) are retried: the tail keeps its cursor.
            if let Ok(records) = tail.next(Some(Duration::from_millis(200))) {
                got.extend(records);
            }
        }
    })
}

fn assert_in_order_without_gaps(got: &[Record], stored: &[Record]) {
    let seqs: Vec<u64> = got.iter().map(|r| r.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "out of order: {seqs:?}"
    );
    assert_eq!(got, stored, "the tail read something other than the log");
}

#[test]
fn a_tail_on_another_store_wakes_on_each_commit() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("tail");
    let mut writer = open(&schema, "tail-writer", Durability::EveryAppend);
    let reader = open_reader(&schema, "tail-reader");
    let a = lane();
    let mut tail = reader.tail(&a, None).unwrap();
    // Nothing written: the wait ends at its timeout, empty.
    assert!(tail
        .next(Some(Duration::from_millis(20)))
        .unwrap()
        .is_empty());
    let until = Arc::new(AtomicU64::new(0));
    let collected = follow(
        open_reader(&schema, "tail-reader"),
        a.clone(),
        until.clone(),
    );
    let mut last = writer.append(&a, &base(0), Some(BASE)).unwrap();
    for i in 1..200 {
        last = writer.append(&a, &set(i), None).unwrap();
        if i % 50 == 0 {
            std::thread::sleep(Duration::from_millis(20)); // let the tail fall asleep
        }
    }
    until.store(last, Ordering::Release);
    let got = collected.join().unwrap();
    let stored = all_records(&writer, &a);
    assert_eq!(stored.len(), 200);
    assert_in_order_without_gaps(&got, &stored);
    // The first tail, from the beginning, reads the same, in pages of its limit.
    tail.set_limit(64);
    let mut again = Vec::new();
    while tail.cursor() < Some(last) {
        let page = tail.next(Some(Duration::from_secs(60))).unwrap();
        assert!(!page.is_empty() && page.len() <= 64);
        again.extend(page);
    }
    assert_eq!(again, stored);
    assert_eq!(replicate(&got), Some(json!({"n": 199})));
}

#[test]
fn a_tail_sees_a_grouped_batch_when_its_group_commits() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("grouped");
    let lazy = Durability::Grouped {
        max_batches: 1_000_000,
        max_delay: Duration::from_secs(3600),
    };
    let mut writer = open(&schema, "grouped-writer", lazy);
    let reader = open_reader(&schema, "grouped-reader");
    let a = lane();
    let mut tail = reader.tail(&a, None).unwrap();
    let s1 = writer.append(&a, &base(1), Some(BASE)).unwrap();
    let s2 = writer.append(&a, &set(2), None).unwrap();
    // Not committed: another node sees nothing yet.
    assert!(tail
        .next(Some(Duration::from_millis(20)))
        .unwrap()
        .is_empty());
    assert_eq!(
        reader.read_list(&a, &ReadOptions::asc()).unwrap().records,
        []
    );
    assert_eq!(writer.sync().unwrap(), Some(s2));
    let got = tail.next(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(got.iter().map(|r| r.seq).collect::<Vec<_>>(), [s1, s2]);
    assert_eq!(reader.durable_seq(), None); // it read through the tail, not the store
    assert_eq!(recover(&reader, &a).unwrap(), Some(json!({"n": 2})));
    assert_eq!(reader.durable_seq(), Some(s2));
}

#[test]
fn a_second_writer_is_refused_naming_the_holder_and_waits_for_it() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("second");
    let a = lane();
    let mut first = open(&schema, "second-first", Durability::EveryAppend);
    first.append(&a, &base(1), Some(BASE)).unwrap();
    let mut second = open(&schema, "second-second", Durability::EveryAppend);
    let err = second.append(&a, &set(2), None).unwrap_err();
    let Error::AddressLocked {
        address, holder, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(address, &a);
    let holder = holder.as_deref().unwrap_or_default();
    assert!(holder.contains("second-first"), "{holder}");
    assert!(err.to_string().contains("another writer holds"), "{err}");
    // Other addresses are free: one writer per address, not per database.
    second
        .append(&Address::new("lanes", "other"), &base(1), Some(BASE))
        .unwrap();
    // A claim that waits is refused when its wait ends...
    let err = second.claim(&a, Duration::from_millis(50)).unwrap_err();
    assert!(matches!(err, Error::AddressLocked { .. }), "{err}");
    // ... and granted as soon as the holder lets go.
    let waiting = std::thread::spawn(move || {
        second.claim(&a, Duration::from_secs(60)).unwrap();
        second
    });
    std::thread::sleep(Duration::from_millis(50));
    drop(first);
    let mut second = waiting.join().unwrap();
    second.append(&lane(), &set(3), None).unwrap();
    assert_eq!(recover(&second, &lane()).unwrap(), Some(json!({"n": 3})));
}

#[test]
fn a_writer_whose_address_was_taken_over_is_fenced() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("fenced");
    let a = lane();
    let mut old = open(&schema, "fenced-old", Durability::EveryAppend);
    let s1 = old.append(&a, &base(1), Some(BASE)).unwrap();
    // The old writer's connection is cut: its lock goes, and a new writer takes over.
    assert!(cut("fenced-old") >= 1);
    let mut new = open(&schema, "fenced-new", Durability::EveryAppend);
    new.claim(&a, Duration::from_secs(60)).unwrap();
    let s2 = new.append(&a, &set(2), None).unwrap();
    drop(new);
    // The old writer may learn of the cut from its next append (an error: stored or not,
    // it cannot tell) ...
    match old.append(&a, &set(98), None) {
        Err(Error::Postgres { .. } | Error::Fenced { .. }) => {}
        other => panic!("{other:?}"),
    }
    // ... then it reconnects, takes the free lock, and finds a record it did not write.
    for _ in 0..2 {
        let err = old.append(&a, &set(99), None).unwrap_err();
        match &err {
            Error::Fenced {
                expected, found, ..
            } => assert_eq!((*expected, *found), (s1, s2)),
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("another writer appended"), "{err}");
    }
    // Its other addresses are unaffected.
    old.append(&Address::new("lanes", "b"), &base(5), Some(BASE))
        .unwrap();
    assert_eq!(recover(&old, &a).unwrap(), Some(json!({"n": 2})));
}

#[test]
fn cut_connections_lose_no_acknowledged_append_and_readers_resume() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("cut");
    let a = lane();
    let (wapp, rapp) = ("cut-writer", "cut-reader");
    let mut writer = open(&schema, wapp, Durability::EveryAppend);
    let until = Arc::new(AtomicU64::new(0));
    let collected = follow(open_reader(&schema, rapp), a.clone(), until.clone());
    let mut acknowledged = Vec::new();
    let mut failures = 0;
    let mut n = 0;
    let mut cuts = 0;
    while n < 300 {
        let (batch, tag) = if n == 0 {
            (base(0), Some(BASE))
        } else {
            (set(n), None)
        };
        match writer.append(&a, &batch, tag) {
            Ok(seq) => {
                acknowledged.push(seq);
                n += 1;
            }
            // The cut came during this append: it may or may not be stored; write it again.
            Err(Error::Postgres { .. }) => failures += 1,
            Err(other) => panic!("{other}"),
        }
        if n % 40 == 39 && acknowledged.len() as u64 == n {
            cuts += cut(wapp) + cut(rapp);
        }
    }
    assert!(cuts >= 7, "{cuts} connections cut");
    let last = *acknowledged.last().unwrap();
    until.store(last, Ordering::Release);
    let got = collected.join().unwrap();
    let stored = all_records(&writer, &a);
    let seqs: Vec<u64> = stored.iter().map(|r| r.seq).collect();
    for seq in &acknowledged {
        assert!(seqs.contains(seq), "acknowledged {seq} is lost");
    }
    // Only a batch whose commit was in doubt may be there twice, and only as a retry.
    assert!(stored.len() <= acknowledged.len() + failures);
    assert_in_order_without_gaps(&got, &stored);
    assert_eq!(recover(&writer, &a).unwrap(), Some(json!({"n": 299})));
    assert_eq!(replicate(&got), Some(json!({"n": 299})));
}

/// The writer process of `kill_9_the_writer_and_another_process_takes_over`, which starts
/// it (not a test: it does nothing unless `CHORD_PG_CHILD` names a schema).
#[test]
#[ignore = "the writer process of kill_9_the_writer_and_another_process_takes_over, started by it"]
fn child_writer() {
    let Ok(schema) = std::env::var("CHORD_PG_CHILD") else {
        return;
    };
    let url = format!("{}&application_name=child-writer", pg::schema_url(&schema));
    let mut store = PostgresStore::open(&url, Durability::EveryAppend).unwrap();
    store.claim(&lane(), Duration::from_secs(60)).unwrap();
    let writer = LogWriter::new(store, Checkpoint::EveryBatches(10));
    let mut lane = Durable::open(writer, lane(), || state(0)).unwrap();
    let give_up = Instant::now() + Duration::from_secs(120);
    for i in 1..100_000 {
        lane.state().set(state(i));
        let seq = lane.flush().unwrap().unwrap();
        println!("wrote {i} {seq}");
        std::thread::sleep(Duration::from_millis(2));
        if Instant::now() > give_up {
            break;
        }
    }
}

/// The child process, killed when dropped so that a failing check never leaves it running.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn kill_9_the_writer_and_another_process_takes_over() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("takeover");
    let a = lane();
    let until = Arc::new(AtomicU64::new(0));
    let collected = follow(
        open_reader(&schema, "takeover-reader"),
        a.clone(),
        until.clone(),
    );
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CHORD_PG_CHILD", &schema)
            .env(pg::URL_VAR, pg::url().unwrap())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (lines, acks) = mpsc::channel();
    let stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("wrote ") {
                let mut parts = rest.split(' ').map(|p| p.parse::<u64>().unwrap());
                let (i, seq) = (parts.next().unwrap(), parts.next().unwrap());
                if lines.send((i, seq)).is_err() {
                    return;
                }
            }
        }
    });
    let mut acked = (0, 0);
    while acked.0 < 40 {
        acked = acks.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    // A second writer in this process is refused while the child lives.
    let mut standby = open(&schema, "takeover-standby", Durability::EveryAppend);
    let err = standby.claim(&a, Duration::ZERO).unwrap_err();
    match &err {
        Error::AddressLocked { holder, .. } => {
            assert!(
                holder.as_deref().unwrap_or("").contains("child-writer"),
                "{err}"
            );
        }
        other => panic!("{other}"),
    }
    // kill -9, mid-stream.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    while let Ok(ack) = acks.try_recv() {
        acked = ack;
    }
    // The standby takes the address over as soon as the server lets the dead session go,
    // and recovers the typed value: at least the last acknowledged step.
    let done = Arc::new(AtomicBool::new(false));
    standby.claim(&a, Duration::from_secs(60)).unwrap();
    let writer = LogWriter::new(standby, Checkpoint::Never);
    let mut lane = Durable::open(writer, a.clone(), || state(0)).unwrap();
    let recovered = lane.get()["n"].as_u64().unwrap();
    assert!(
        recovered >= acked.0,
        "recovered {recovered} < acknowledged {}",
        acked.0
    );
    assert_eq!(*lane.get(), state(recovered));
    let before = lane
        .writer()
        .store()
        .read_list(&a, &ReadOptions::desc().limit(1));
    let before = before.unwrap().records[0].seq;
    let mut last = 0;
    for i in recovered + 1..=recovered + 20 {
        lane.state().set(state(i));
        last = lane.flush().unwrap().unwrap();
    }
    done.store(true, Ordering::Release);
    until.store(last, Ordering::Release);
    let got = collected.join().unwrap();
    let stored = all_records(lane.writer().store(), &a);
    assert_in_order_without_gaps(&got, &stored);
    // Existing readers continue without a new base: the takeover writes deltas.
    let after: Vec<&Record> = stored.iter().filter(|r| r.seq > before).collect();
    assert_eq!(after.len(), 20);
    assert!(
        after.iter().all(|r| r.tag.is_none()),
        "a base after the takeover"
    );
    // A reader that followed from the start, through both writers, ends equal to the value.
    assert_eq!(replicate(&got), Some(state(recovered + 20)));
    assert_eq!(
        recover(lane.writer().store(), &a).unwrap(),
        Some(state(recovered + 20))
    );
}

/// Seqs come in leases; a writer taking over an address from a writer with a newer lease
/// must not write a seq below the address's newest record.
#[test]
fn a_takeover_by_a_writer_with_an_older_lease_keeps_seqs_increasing() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("lease");
    let (x, y) = (Address::new("lanes", "x"), Address::new("lanes", "y"));
    let mut first = open(&schema, "lease-first", Durability::EveryAppend);
    first.append(&x, &base(1), Some(BASE)).unwrap(); // the older lease
    let mut second = open(&schema, "lease-second", Durability::EveryAppend);
    let newer = second.append(&y, &base(2), Some(BASE)).unwrap();
    drop(second);
    let next = first.append(&y, &set(3), None).unwrap();
    assert!(next > newer, "{next} after {newer}");
    assert_eq!(recover(&first, &y).unwrap(), Some(json!({"n": 3})));
    // The older lease goes on serving the address it was not replaced for only while it is
    // above that address's records: seqs of each address increase.
    let on_x = first.append(&x, &set(4), None).unwrap();
    assert!(on_x > next);
    assert_eq!(recover(&first, &x).unwrap(), Some(json!({"n": 4})));
}

/// A store dropped on a tokio runtime's worker (the last `Log` handle of a server, a task
/// that opened one): its connections close without the PostgreSQL client's own runtime
/// panicking inside the caller's ("Cannot start a runtime from within a runtime"), and the
/// writer's locks are let go at once, as in a plain drop.
#[test]
fn a_store_dropped_inside_a_tokio_runtime_closes_cleanly() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("drop_in_runtime");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for read_only in [false, true] {
        let mut store = if read_only {
            open_reader(&schema, "drop_in_runtime")
        } else {
            open(&schema, "drop_in_runtime", Durability::EveryAppend)
        };
        if !read_only {
            store.append(&lane(), &base(1), None).unwrap();
        }
        // Reading fills the reader pool: its connections are dropped too.
        assert!(!all_records(&store, &lane()).is_empty());
        let dropped =
            runtime.block_on(async move { tokio::spawn(async move { drop(store) }).await });
        assert!(dropped.is_ok(), "read_only {read_only}: {dropped:?}");
    }
    // The writer's lock on the address went with it: another writer takes it at once.
    let mut again = open(&schema, "drop_in_runtime", Durability::EveryAppend);
    again.append(&lane(), &set(2), None).unwrap();
}
