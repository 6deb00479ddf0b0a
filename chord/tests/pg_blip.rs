//! A database blip costs readers nothing: when the producer's PostgreSQL session ends under
//! an append (before the write reaches the server, or after it committed but before the
//! acknowledgement came back), the writer sends the same batch again, the store recognises
//! it by its position, and the stored log reads as one unbroken stream: a single base (the
//! first record), one record per flush that changed something, no duplicate, no gap, and
//! each record brings a reader exactly to the producer's state after that flush.
//!
//! Readers here are a fresh decoder over the stored log from its start, and a live
//! [`PostgresTail`](chord::store::PostgresTail) on another store that follows the writes as
//! they commit.
//!
//! Runs against the server named by `CHORD_TEST_POSTGRES_URL` (see `support/postgres.rs`);
//! each test in a schema of its own.

#[path = "support/postgres.rs"]
mod pg;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chord::store::{
    recover, Address, Checkpoint, Durability, Durable, Error, LogWriter, PostgresCut,
    PostgresStore, ReadOptions, Record, Store, BASE, CHECKPOINT,
};
use chord::{Decoder, Tracked};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The producer's value: text that grows, so that a batch applied twice shows.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
struct Lane {
    step: u64,
    text: String,
}

fn at() -> Address {
    Address::new("lanes", "main")
}

/// Step `n` of the producer.
fn advance(lane: &mut Durable<Lane, PostgresStore>, n: u64) {
    let mut state = lane.state();
    state.step.set(n);
    state.text.push_str(&format!("t{n} "));
}

/// The producer's state after step `n`, written out independently of the tracker.
fn expected(n: u64) -> Value {
    let text: String = (1..=n).map(|i| format!("t{i} ")).collect();
    json!({"step": n, "text": text})
}

fn open(schema: &str, app: &str) -> PostgresStore {
    PostgresStore::open(
        &format!("{}&application_name={app}", pg::schema_url(schema)),
        Durability::EveryAppend,
    )
    .unwrap()
}

fn open_reader(schema: &str) -> PostgresStore {
    PostgresStore::open_read_only(&format!(
        "{}&application_name=blip-reader",
        pg::schema_url(schema)
    ))
    .unwrap()
}

/// A producer at step 0 (its first flush, a base, stored).
fn producer(schema: &str, app: &str) -> Durable<Lane, PostgresStore> {
    let writer = LogWriter::new(open(schema, app), Checkpoint::Never);
    let mut lane = Durable::open(writer, at(), Lane::default).unwrap();
    let first = lane.flush().unwrap();
    assert!(first.is_some(), "the first flush writes the base");
    lane
}

/// Every record of `address` from a fresh read-only store, oldest first.
fn stored(schema: &str, address: &Address) -> Vec<Record> {
    let reader = open_reader(schema);
    let mut out = Vec::new();
    let mut options = ReadOptions::asc().limit(1000);
    loop {
        let page = reader.read_list(address, &options).unwrap();
        out.extend(page.records);
        match page.next_cursor {
            Some(c) => options.cursor = Some(c),
            None => return out,
        }
    }
}

/// What a reader that decodes the log from its start sees: the first record is the only
/// base, and record `k` brings it to the producer's state after step `k` (so a duplicate,
/// a gap or a resent base shows as a wrong state or a wrong count).
fn assert_one_unbroken_stream(records: &[Record], steps: u64) {
    assert_eq!(
        records.len() as u64,
        steps + 1,
        "one record per flush that changed something (the base, then one a step): {:#?}",
        records
            .iter()
            .map(|r| (r.seq, &r.batch))
            .collect::<Vec<_>>()
    );
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "out of order: {seqs:?}"
    );
    let mut decoder = Decoder::new();
    let mut doc = None;
    for (k, record) in records.iter().enumerate() {
        let is_base = record.tag.as_deref() == Some(BASE);
        assert_eq!(
            is_base,
            k == 0,
            "record {k} (seq {}): only the first is a base: {}",
            record.seq,
            record.batch
        );
        let ops = decoder.decode_str(&record.batch).unwrap();
        assert_eq!(
            chord::is_base(&ops),
            k == 0,
            "record {k} starts with r: {}",
            record.batch
        );
        chord::apply(&mut doc, &ops).unwrap();
        assert_eq!(doc, Some(expected(k as u64)), "after record {k}");
    }
}

/// Steps 1..=`steps`, the session cut as `cut` says at each step in `cuts`; a failed flush is
/// retried with nothing changed (what the cluster node does), or, with `step_on`, after the
/// next step's changes.
fn run_with_cuts(schema: &str, cut: PostgresCut, cuts: &[u64], steps: u64, step_on: bool) {
    let mut lane = producer(schema, "blip-writer");
    let mut failed = 0;
    let mut n = 0;
    while n < steps {
        n += 1;
        advance(&mut lane, n);
        if cuts.contains(&n) {
            lane.writer().store().cut_next_write(cut);
            let err = lane.flush().unwrap_err();
            assert!(matches!(err, Error::Postgres { .. }), "{err}");
            assert_eq!(lane.writer().held(lane.address()), 1, "the batch is held");
            failed += 1;
            if step_on && n < steps {
                // New changes while the batch is held: both go, in order, as two records.
                n += 1;
                advance(&mut lane, n);
            }
        }
        let seq = lane.flush().unwrap();
        assert!(seq.is_some(), "step {n} is stored");
        assert_eq!(lane.writer().held(lane.address()), 0);
    }
    assert_eq!(failed, cuts.len());
    let records = stored(schema, &at());
    assert_one_unbroken_stream(&records, steps);
    let recovered = recover(&open_reader(schema), &at()).unwrap();
    assert_eq!(recovered, Some(serde_json::to_value(lane.get()).unwrap()));
    assert_eq!(recovered, Some(expected(steps)));
}

#[test]
fn a_write_cut_before_it_reaches_the_server_is_sent_again_as_the_same_batch() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("blip_before");
    run_with_cuts(&schema, PostgresCut::BeforeWrite, &[3, 4, 9], 12, false);
}

#[test]
fn a_commit_whose_acknowledgement_was_lost_is_not_written_twice() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("blip_after");
    run_with_cuts(&schema, PostgresCut::AfterCommit, &[2, 5, 6, 11], 12, false);
}

#[test]
fn changes_made_while_a_batch_is_held_follow_it_in_order() {
    if !pg::available() {
        return;
    }
    let before = pg::fresh_schema("blip_step_before");
    run_with_cuts(&before, PostgresCut::BeforeWrite, &[2, 7], 12, true);
    let after = pg::fresh_schema("blip_step_after");
    run_with_cuts(&after, PostgresCut::AfterCommit, &[2, 7], 12, true);
}

/// Another writer took the address while a batch was held: the stream cannot go on, and the
/// held batch is never written after the other writer's records.
#[test]
fn a_held_batch_is_dropped_when_another_writer_took_the_address() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("blip_taken");
    let mut lane = producer(&schema, "blip-taken");
    advance(&mut lane, 1);
    lane.writer()
        .store()
        .cut_next_write(PostgresCut::AfterCommit);
    assert!(lane.flush().is_err());
    assert_eq!(lane.writer().held(lane.address()), 1);
    // The session, and the lock with it, is gone: another node takes the lane.
    let mut other = open(&schema, "blip-other");
    other.claim(&at(), Duration::from_secs(10)).unwrap();
    let theirs = other
        .append(&at(), r#"[["s",["step"],100]]"#, None)
        .unwrap();
    let err = lane.flush().unwrap_err();
    assert!(matches!(err, Error::AddressLocked { .. }), "{err}");
    assert_eq!(lane.writer().held(lane.address()), 0, "the stream ended");
    drop(other);
    let err = lane.flush().unwrap_err();
    assert!(matches!(err, Error::Fenced { .. }), "{err}");
    let records = stored(&schema, &at());
    assert_eq!(records.len(), 3, "base, step 1 (committed once), theirs");
    assert_eq!(records.last().unwrap().seq, theirs);
    assert_eq!(
        recover(&open_reader(&schema), &at()).unwrap(),
        Some(json!({"step": 100, "text": "t1 "}))
    );
}

/// The server ends the writer's session from outside, again and again, at random moments
/// (`pg_terminate_backend` from a second connection), while a live tail on another store
/// follows: the tail and a fresh decoder see one unbroken stream.
#[test]
fn sessions_ended_from_outside_leave_one_unbroken_stream_for_a_live_follower() {
    if !pg::available() {
        return;
    }
    const STEPS: u64 = 200;
    let schema = pg::fresh_schema("blip_outside");
    let app = "blip-outside";
    let mut lane = producer(&schema, app);
    let until = Arc::new(AtomicU64::new(0));
    let follower = {
        let (store, until) = (open_reader(&schema), Arc::clone(&until));
        std::thread::spawn(move || {
            let mut tail = store.tail(&at(), None).unwrap();
            let mut got: Vec<Record> = Vec::new();
            let give_up = Instant::now() + Duration::from_secs(120);
            loop {
                let target = until.load(Ordering::Acquire);
                if target != 0 && tail.cursor() >= Some(target) {
                    return got;
                }
                assert!(Instant::now() < give_up, "the tail never caught up");
                if let Ok(records) = tail.next(Some(Duration::from_millis(200))) {
                    got.extend(records);
                }
            }
        })
    };
    let stop = Arc::new(AtomicU64::new(0));
    let cutter = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut admin = pg::client();
            let mut cuts = 0i64;
            let mut i = 0u64;
            while stop.load(Ordering::Acquire) == 0 {
                i += 1;
                // Uneven gaps, so that cuts land between appends and inside them.
                std::thread::sleep(Duration::from_micros(3_000 + (i * 7919) % 9_000));
                cuts += admin
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                         WHERE application_name = $1",
                        &[&app],
                    )
                    .unwrap()
                    .get::<_, i64>(0);
            }
            cuts
        })
    };
    let mut failures = 0;
    let mut last = 0;
    for n in 1..=STEPS {
        advance(&mut lane, n);
        loop {
            match lane.flush() {
                Ok(seq) => {
                    last = seq.unwrap_or(last);
                    break;
                }
                Err(Error::Postgres { .. }) => {
                    failures += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(other) => panic!("step {n}: {other}"),
            }
        }
    }
    stop.store(1, Ordering::Release);
    let cuts = cutter.join().unwrap();
    until.store(last, Ordering::Release);
    let followed = follower.join().unwrap();
    assert!(cuts >= 5, "only {cuts} sessions ended");
    assert!(
        failures >= 1,
        "no append failed: the test cut nothing that mattered"
    );
    let records = stored(&schema, &at());
    assert_one_unbroken_stream(&records, STEPS);
    assert_eq!(
        followed, records,
        "the live follower read the log as stored"
    );
    assert_eq!(
        recover(&open_reader(&schema), &at()).unwrap(),
        Some(expected(STEPS))
    );
}

/// What happens at one flush of [`any_schedule_of_cuts_leaves_one_unbroken_stream`].
#[derive(Clone, Copy, Debug)]
enum Blip {
    /// The flush goes through.
    None,
    /// The session ends under it (before the write or after the commit), and the producer
    /// retries with nothing changed, or takes its next step first (`step_on`).
    Cut { cut: PostgresCut, step_on: bool },
}

fn blip() -> impl Strategy<Value = Blip> {
    prop_oneof![
        2 => Just(Blip::None),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(after, step_on)| Blip::Cut {
            cut: if after { PostgresCut::AfterCommit } else { PostgresCut::BeforeWrite },
            step_on,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any schedule of cuts, the first flush (the base) included, under the checkpoint policy
    /// `every` (0: never): one change per step, each bringing a reader to the producer's
    /// state after that step; a base only at the first; a checkpoint only after a change and
    /// where the policy asked, restating the state after that change.
    #[test]
    fn any_schedule_of_cuts_leaves_one_unbroken_stream(
        schedule in proptest::collection::vec(blip(), 1..24),
        every in prop_oneof![Just(0u64), 2u64..6],
    ) {
        if !pg::available() {
            return Ok(());
        }
        let schema = pg::fresh_schema("blip_any");
        let policy = match every {
            0 => Checkpoint::Never,
            n => Checkpoint::EveryBatches(n),
        };
        let writer = LogWriter::new(open(&schema, "blip-any"), policy);
        let mut lane = Durable::open(writer, at(), Lane::default).unwrap();
        let steps = schedule.len() as u64 - 1;
        let mut n = 0;
        let mut i = 0;
        // Flush `n` (0: the base) with `schedule[i]`'s blip.
        loop {
            if let Blip::Cut { cut, step_on } = schedule[i] {
                lane.writer().store().cut_next_write(cut);
                let err = lane.flush().unwrap_err();
                prop_assert!(matches!(err, Error::Postgres { .. }), "{}", err);
                prop_assert!(lane.writer().held(lane.address()) >= 1);
                if step_on && n < steps {
                    n += 1;
                    i += 1;
                    advance(&mut lane, n);
                    // A cut scheduled here is spent on the held batches' resend.
                    if let Blip::Cut { cut, .. } = schedule[i] {
                        lane.writer().store().cut_next_write(cut);
                        prop_assert!(lane.flush().is_err());
                    }
                }
            }
            lane.flush().unwrap();
            prop_assert_eq!(lane.writer().held(lane.address()), 0);
            if n == steps {
                break;
            }
            n += 1;
            i += 1;
            advance(&mut lane, n);
        }
        let records = stored(&schema, &at());
        // The changes, as a reader that has the value reads them (checkpoints left out).
        let changes: Vec<&Record> = records
            .iter()
            .filter(|r| r.tag.as_deref() != Some(CHECKPOINT))
            .collect();
        prop_assert_eq!(changes.len() as u64, steps + 1);
        let mut decoder = Decoder::new();
        let mut doc = None;
        for (k, record) in changes.iter().enumerate() {
            let is_base = record.tag.as_deref() == Some(BASE);
            prop_assert_eq!(is_base, k == 0, "record {}: {}", k, record.batch);
            let ops = decoder.decode_str(&record.batch).unwrap();
            chord::apply(&mut doc, &ops).unwrap();
            prop_assert_eq!(doc.as_ref(), Some(&expected(k as u64)), "after record {}", k);
        }
        // Each checkpoint follows a change and restates the value after it, only where the
        // policy asked, and a reader starting from it reaches the producer's state.
        let mut change = 0u64;
        let mut since_base = 0u64;
        for (i, record) in records.iter().enumerate() {
            if record.tag.as_deref() != Some(CHECKPOINT) {
                if i > 0 {
                    change += 1;
                }
                since_base += 1;
                continue;
            }
            prop_assert!(every > 0, "a checkpoint without a policy");
            prop_assert!(i > 0 && records[i - 1].tag.is_none(), "record {}: follows a change", i);
            prop_assert!(since_base + 1 >= every, "record {}: before the policy asked", i);
            since_base = 1;
            let mut fresh = Decoder::new();
            let mut value = None;
            chord::apply(&mut value, fresh.decode_str(&record.batch).unwrap()).unwrap();
            prop_assert_eq!(value.as_ref(), Some(&expected(change)), "checkpoint {}", i);
            for later in records[i + 1..].iter().filter(|r| r.tag.is_none()) {
                chord::apply(&mut value, fresh.decode_str(&later.batch).unwrap()).unwrap();
            }
            prop_assert_eq!(value.as_ref(), Some(&expected(steps)), "from checkpoint {}", i);
        }
        prop_assert_eq!(recover(&open_reader(&schema), &at()).unwrap(), Some(expected(steps)));
    }
}

/// Grouped durability: a group write cut (before it reaches the server or after it
/// committed) neither poisons the store nor loses or doubles a record: the group waits, in
/// doubt, and the next write takes the locks again, learns from the addresses' newest
/// records whether it committed, and writes it again if not; the background thread retries
/// by itself.
#[test]
fn a_cut_group_write_is_written_again_once_and_the_store_goes_on() {
    if !pg::available() {
        return;
    }
    for (label, cut) in [
        ("blip_group_before", PostgresCut::BeforeWrite),
        ("blip_group_after", PostgresCut::AfterCommit),
    ] {
        let schema = pg::fresh_schema(label);
        let grouped = Durability::Grouped {
            max_batches: 1000,
            // Long enough that the cut is armed before the background thread writes.
            max_delay: Duration::from_millis(300),
        };
        let url = format!("{}&application_name=blip-group", pg::schema_url(&schema));
        let store = PostgresStore::open(&url, grouped).unwrap();
        let mut lane = Durable::open(
            LogWriter::new(store, Checkpoint::Never),
            at(),
            Lane::default,
        )
        .unwrap();
        lane.flush().unwrap();
        lane.sync().unwrap();
        let mut n = 0;
        let mut last = 0;
        for round in 0..4 {
            for _ in 0..5 {
                n += 1;
                advance(&mut lane, n);
                last = lane.flush().unwrap().unwrap();
            }
            lane.writer().store().cut_next_write(cut);
            if round % 2 == 0 {
                // Written by `sync`, which fails; the next `sync` resolves it.
                let err = lane.sync().unwrap_err();
                assert!(matches!(err, Error::Postgres { .. }), "{err}");
                lane.sync().unwrap();
            } else {
                // Written by the background thread, which retries by itself.
                assert_eq!(lane.flush().unwrap(), None, "nothing changed");
                let give_up = Instant::now() + Duration::from_secs(20);
                while lane.writer().store().durable_seq() < Some(last) {
                    assert!(Instant::now() < give_up, "the group was never written");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        let records = stored(&schema, &at());
        assert_one_unbroken_stream(&records, n);
        assert_eq!(
            recover(&open_reader(&schema), &at()).unwrap(),
            Some(expected(n))
        );
    }
}

/// While the database stays away, what a writer holds is bounded: past the record bound in
/// bytes it lets go, and the stream starts again from a base once the database is back, with
/// nothing lost.
#[test]
fn held_batches_stay_within_the_record_bound() {
    if !pg::available() {
        return;
    }
    const BOUND: usize = 400;
    let schema = pg::fresh_schema("blip_bound");
    let writer =
        LogWriter::new(open(&schema, "blip-bound"), Checkpoint::Never).max_record_bytes(BOUND);
    let mut lane = Durable::open(writer, at(), Lane::default).unwrap();
    lane.flush().unwrap();
    let mut most = 0;
    let mut n = 0;
    // Every write fails (the session ends before each one), each flush with new changes.
    loop {
        n += 1;
        advance(&mut lane, n);
        lane.writer()
            .store()
            .cut_next_write(PostgresCut::BeforeWrite);
        assert!(lane.flush().is_err());
        let held = lane.writer().held(lane.address());
        if held == 0 {
            break;
        }
        most = most.max(held);
        assert!(n < 1000, "the writer never let go");
    }
    // Each batch here is at least 20 bytes: no more than BOUND / 20 were ever held.
    assert!((2..=BOUND / 20).contains(&most), "{most} batches held");
    // The database is back: the next flush is a base with the whole value.
    n += 1;
    advance(&mut lane, n);
    let seq = lane.flush().unwrap().unwrap();
    let records = stored(&schema, &at());
    let last = records.last().unwrap();
    assert_eq!((last.seq, last.tag.as_deref()), (seq, Some(BASE)));
    assert_eq!(
        recover(&open_reader(&schema), &at()).unwrap(),
        Some(expected(n))
    );
}
