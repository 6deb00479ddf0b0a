//! A value that outgrows the record bound: the flush whose checkpoint base crosses it gets
//! `Error::RecordTooLarge`, the value goes on being written as changes, nothing is lost, and
//! once it is back under the bound the checkpoint is written again.

use chord::store::{
    is_base_tag, recover, recover_as, Address, Checkpoint, Durability, Durable, Error, JsonlStore,
    LogWriter, ReadOptions, Store, CHECKPOINT, MAX_RECORD_BYTES,
};
use chord::Tracked;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Tracked, Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
struct Lane {
    text: String,
    n: u64,
}

/// The seqs of `at`'s base records, oldest first.
fn bases(store: &impl Store, at: &Address) -> Vec<u64> {
    let page = store
        .read_list(at, &ReadOptions::asc().limit(10_000))
        .unwrap();
    assert_eq!(page.next_cursor, None);
    page.records
        .iter()
        .filter(|r| is_base_tag(r.tag.as_deref()))
        .map(|r| r.seq)
        .collect()
}

#[test]
fn a_checkpoint_over_a_small_bound_is_an_error_and_the_lane_goes_on() {
    const BOUND: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let at = Address::new("lanes", "main");
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let writer = LogWriter::new(store, Checkpoint::EveryBatches(3)).max_record_bytes(BOUND);
    assert_eq!(writer.record_bound(), BOUND);
    let mut lane = Durable::new(Lane::default(), writer, at.clone());
    lane.flush().unwrap();

    // Grow the text by 50 bytes a flush: each change fits, the whole value soon does not.
    let mut crossed = None;
    for i in 0..12u64 {
        lane.state().text.push_str(&format!("{i:02}").repeat(25));
        match lane.flush() {
            Ok(_) => {}
            Err(Error::RecordTooLarge {
                address,
                size,
                bound,
                base,
            }) => {
                assert_eq!(address, at);
                assert_eq!(bound, BOUND);
                assert!(base, "the checkpoint base is what did not fit");
                // `{"text":"…","n":0}` inside `[["r",…]]`, and the checkpoint's tag.
                let whole = serde_json::to_string(&json!([["r", lane.get()]])).unwrap();
                assert_eq!(size, whole.len() + CHECKPOINT.len());
                assert!(size > BOUND);
                crossed = Some(i);
                break;
            }
            Err(e) => panic!("flush {i}: {e}"),
        }
    }
    let crossed = crossed.expect("the value crossed the bound");
    let bases_before = bases(lane.writer().store(), &at);

    // The very next change, one field, is written; so is the one of the failed flush.
    lane.state().n += 1;
    let seq = lane.flush().unwrap().expect("a record");
    let stored = recover(lane.writer().store(), &at).unwrap().unwrap();
    assert_eq!(stored, serde_json::to_value(lane.get()).unwrap());
    assert_eq!(lane.get().text.len(), 50 * (crossed as usize + 1));

    // Over the bound, changes go on; a failed base comes once per interval, not every time.
    let mut failed = 0;
    for _ in 0..9 {
        lane.state().n += 1;
        match lane.flush() {
            Ok(Some(s)) => assert!(s > seq),
            Ok(None) => panic!("a change flushes a record"),
            Err(Error::RecordTooLarge { base: true, .. }) => failed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        (2..=4).contains(&failed),
        "{failed} failed bases in 9 flushes"
    );
    assert_eq!(bases(lane.writer().store(), &at), bases_before);

    // Back under the bound: the next checkpoint is written, and the policy holds again.
    lane.state().text.keep_last(20);
    for _ in 0..4 {
        lane.state().n += 1;
        lane.flush().unwrap();
    }
    let after = bases(lane.writer().store(), &at);
    assert!(after.len() > bases_before.len(), "{after:?}");
    let (value, writer) = lane.into_parts();
    drop(writer);

    let store = JsonlStore::open_read_only(&path).unwrap();
    assert_eq!(recover_as::<Lane, _>(&store, &at).unwrap(), Some(value));
}

/// A base batch a writer must write (the first one) over the bound is the same error, and
/// nothing is stored.
#[test]
fn a_first_base_over_the_bound_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let writer = LogWriter::new(store, Checkpoint::EveryBatches(3)).max_record_bytes(100);
    let at = Address::new("lanes", "big");
    let big = Lane {
        text: "x".repeat(100),
        n: 0,
    };
    let mut lane = Durable::new(big, writer, at.clone());
    for _ in 0..3 {
        let err = lane.flush().unwrap_err();
        assert!(
            matches!(
                err,
                Error::RecordTooLarge {
                    bound: 100,
                    base: true,
                    ..
                }
            ),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.starts_with("lanes/big: a record of "), "{text}");
        assert!(
            text.ends_with("is over the record bound of 100 bytes"),
            "{text}"
        );
    }
    assert!(lane.writer().store().is_empty());
    lane.state().text.truncate(10);
    lane.flush().unwrap();
    assert_eq!(
        recover(lane.writer().store(), &at).unwrap(),
        Some(json!({"text": "x".repeat(10), "n": 0}))
    );
}

/// At the store's own bound, [`MAX_RECORD_BYTES`]: a value grown past it by changes that each
/// fit gets the typed error at its checkpoint, and the next one-field change is written.
#[test]
fn a_checkpoint_over_the_default_bound_does_not_stop_the_lane() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let at = Address::new("lanes", "main");
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let writer = LogWriter::new(store, Checkpoint::EveryBatches(3));
    assert_eq!(writer.record_bound(), MAX_RECORD_BYTES);
    let mut lane = Durable::new(Lane::default(), writer, at.clone());
    lane.flush().unwrap();
    let half = "y".repeat(MAX_RECORD_BYTES / 2 + 1024);
    for _ in 0..2 {
        lane.state().text.push_str(&half);
        lane.flush().unwrap();
    }
    lane.state().n += 1;
    let err = lane.flush().unwrap_err();
    assert!(
        matches!(
            err,
            Error::RecordTooLarge { bound: MAX_RECORD_BYTES, base: true, size, .. }
                if size > MAX_RECORD_BYTES
        ),
        "{err}"
    );
    lane.state().n += 1;
    lane.flush().unwrap().expect("a record");
    drop(lane);
    let store = JsonlStore::open_read_only(&path).unwrap();
    let value = recover(&store, &at).unwrap().unwrap();
    assert_eq!(value["n"], 2);
    assert_eq!(value["text"].as_str().map(str::len), Some(2 * half.len()));
}
