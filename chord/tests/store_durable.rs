//! The durable tracker: flush → encode → tag → append in one call, the checkpoint policy
//! answered with base batches, and recovery of exactly what was last flushed.

use chord::store::{replay, Address, Checkpoint, Durability, Durable, JsonlStore, LogWriter};
use chord::Tracked;
use serde::{Deserialize, Serialize};

#[derive(Tracked, Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Tool {
    output_window: String,
    lines: u64,
}

fn text50k() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/bench/text50k.txt");
    std::fs::read_to_string(path).expect("bench data")
}

#[test]
fn a_rolling_window_with_a_rebase_every_50_replays_at_most_50_batches() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lane.jsonl");
    let at = Address::new("tools", "bash");
    let start = Tool {
        output_window: text50k(),
        lines: 0,
    };
    let store = JsonlStore::open(&log, Durability::EveryAppend).unwrap();
    let mut tool = Durable::new(
        start,
        LogWriter::new(store, Checkpoint::EveryBatches(50)),
        at.clone(),
    );
    let mut worst = 0;
    let mut bases = 0;
    for i in 0..500u64 {
        let mut s = tool.state();
        s.output_window
            .push_str(&format!("line {i}: compiling module {i}\n"));
        s.output_window.keep_last(50_000);
        s.lines.set(i + 1);
        tool.flush().unwrap();
        let r = replay(tool.writer().store(), &at, None).unwrap();
        assert_eq!(
            r.value.as_ref(),
            Some(&serde_json::to_value(tool.get()).unwrap())
        );
        worst = worst.max(r.batches);
        if r.batches == 1 {
            bases += 1;
        }
    }
    println!(
        "500 durable writes, rebase every 50: at most {worst} batches to replay, {bases} bases"
    );
    assert!(worst <= 50, "replayed {worst} batches");
    assert!(bases >= 10);
}

#[test]
fn reopening_continues_from_the_recovered_value_without_a_new_base() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lane.jsonl");
    let at = Address::new("tools", "bash");
    let open = || {
        let store = JsonlStore::open(&log, Durability::EveryAppend).unwrap();
        Durable::open(
            LogWriter::new(store, Checkpoint::Never),
            at.clone(),
            Tool::default,
        )
        .unwrap()
    };
    let mut tool = open();
    for i in 0..10 {
        tool.state().output_window.push_str(&format!("{i}\n"));
        tool.flush().unwrap();
    }
    let before = tool.get().clone();
    drop(tool);

    let mut tool = open();
    assert_eq!(tool.get(), &before);
    tool.state().output_window.push_str("after restart\n");
    tool.flush().unwrap();
    let r = replay(tool.writer().store(), &at, None).unwrap();
    // One base (the first flush, carrying "0\n"), nine deltas, and one after the restart:
    // reopening wrote no base.
    assert_eq!(r.batches, 11);
    assert_eq!(r.value, Some(serde_json::to_value(tool.get()).unwrap()));
    drop(tool);

    let tool = open();
    assert_eq!(
        tool.output_window,
        format!("{}after restart\n", before.output_window)
    );
}

#[test]
fn a_value_json_cannot_carry_is_refused_and_nothing_is_stored() {
    #[derive(Tracked, Serialize, Deserialize, Default)]
    struct Gauge {
        value: f64,
    }
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("g.jsonl"), Durability::EveryAppend).unwrap();
    let at = Address::new("g", "cpu");
    let mut g = Durable::new(
        Gauge::default(),
        LogWriter::new(store, Checkpoint::Never),
        at,
    );
    g.flush().unwrap();
    g.state().value.update(|v| *v = f64::INFINITY);
    let err = g.flush().unwrap_err();
    assert!(err.to_string().contains("flushing g/cpu"), "{err}");
    assert_eq!(g.writer().store().len(), 1, "only the first base is stored");
}

mod v1 {
    #[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default, Debug)]
    pub struct Lane {
        pub status: String,
    }
}

mod v2 {
    #[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default, Debug)]
    pub struct Lane {
        pub status: String,
        #[serde(default)]
        pub items: Vec<String>,
    }
}

/// A writer of the log at `log`, with no checkpoints: reopening a lane replays everything.
fn writer_of(log: &std::path::Path) -> LogWriter<JsonlStore> {
    LogWriter::new(
        JsonlStore::open(log, Durability::EveryAppend).unwrap(),
        Checkpoint::Never,
    )
}

#[test]
fn a_type_that_gained_a_field_brings_the_log_to_its_own_json() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lane.jsonl");
    let at = Address::new("lanes", "main");
    let writer = || writer_of(&log);
    // Written by the old type.
    let mut lane = Durable::open(writer(), at.clone(), v1::Lane::default).unwrap();
    lane.state().status.push_str("running");
    lane.flush().unwrap();
    drop(lane);

    // Opened by the new one: the log holds no `items`, the typed value does.
    let mut lane = Durable::open(writer(), at.clone(), v2::Lane::default).unwrap();
    lane.state().items.push("first".into());
    lane.flush().unwrap();
    let stored = chord::store::recover(lane.writer().store(), &at).unwrap();
    assert_eq!(stored, Some(serde_json::to_value(lane.get()).unwrap()));
    drop(lane);

    // And it opens again, with the value flushed.
    let lane = Durable::open(writer(), at.clone(), v2::Lane::default).unwrap();
    assert_eq!(lane.items, ["first"]);
    assert_eq!(lane.status, "running");
}

#[test]
fn an_unchanged_type_resumes_without_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lane.jsonl");
    let at = Address::new("lanes", "main");
    let writer = || writer_of(&log);
    let mut lane = Durable::open(writer(), at.clone(), v2::Lane::default).unwrap();
    lane.state().status.push_str("idle");
    lane.flush().unwrap();
    drop(lane);
    let mut lane = Durable::open(writer(), at.clone(), v2::Lane::default).unwrap();
    assert_eq!(
        lane.flush().unwrap(),
        None,
        "nothing changed, nothing written"
    );
}

#[test]
fn a_store_error_prints_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("log.jsonl");
    let err = JsonlStore::open(&missing, Durability::EveryAppend).unwrap_err();
    let mut chain = vec![err.to_string()];
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        chain.push(e.to_string());
        source = e.source();
    }
    assert!(chain.len() >= 2, "{chain:?}");
    let whole = chain.join(" | caused by: ");
    let cause = &chain[1];
    assert_eq!(whole.matches(cause.as_str()).count(), 1, "{whole}");
}
