//! Checkpoints beside their batch, as readers of the stream server meet them: a `LogWriter`
//! with a checkpoint policy stores each flush's changes, then the value after them tagged
//! `checkpoint`. A reader that has the value (resuming from any offset it was handed) never
//! receives a checkpoint, and decodes on with the decoder it has; a reader with no value
//! starts at the latest one (the base offset's token, `….base`) or the oldest kept (`-1`);
//! recovery and compaction start from checkpoints as from any base.
//!
//! Called in process, and through the Rust replica over a socket.

#[path = "support/local.rs"]
mod local;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use chord::store::{
    recover, Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Record, Store,
    BASE, CHECKPOINT,
};
use chord::streams::{Compaction, Log, LogBuilder, Retention, Streams};
use chord::{path, Decoder, NonEmptyPath, Op};
use http_body_util::BodyExt;
use serde_json::{json, Value};

struct Reply {
    status: StatusCode,
    next: Option<String>,
    base: Option<String>,
    cache: Option<String>,
    batches: Vec<String>,
}

async fn get(app: &Router, uri: &str) -> Reply {
    let request = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (status, next, base, cache) = (
        response.status(),
        header("stream-next-offset"),
        header("chord-base-offset"),
        header("cache-control"),
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let batches = if status == StatusCode::OK {
        let array: Vec<Box<serde_json::value::RawValue>> = serde_json::from_slice(&body).unwrap();
        array.iter().map(|b| b.get().to_owned()).collect()
    } else {
        Vec::new()
    };
    Reply {
        status,
        next,
        base,
        cache,
        batches,
    }
}

fn is_replace(batch: &str) -> bool {
    batch.starts_with(r#"[["r","#)
}

/// A lane written through a `LogWriter` with a checkpoint every `every` batches: 40 batches,
/// each an append and a counter, and a part (`fixed`) no batch changes.
struct Lane {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
    writer: LogWriter<Log<JsonlStore>>,
    value: Option<Value>,
    at: Address,
}

impl Lane {
    fn new(builder: LogBuilder, every: u64) -> Lane {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        let log = builder.build(store);
        let mut writer = LogWriter::new(log.clone(), Checkpoint::EveryBatches(every));
        let at = Address::new("lanes", "main");
        let value = json!({"text": "", "n": 0, "fixed": {"k": [1, 2, 3]}});
        writer.append(&at, &[Op::Replace(value.clone())]).unwrap();
        Lane {
            _dir: dir,
            log,
            writer,
            value: Some(value),
            at,
        }
    }

    fn write(&mut self, n: u64) {
        let ops = vec![
            Op::Append(path!["text"], format!("t{n} ")),
            Op::Set(NonEmptyPath::new("n"), json!(n)),
        ];
        chord::apply(&mut self.value, ops.clone()).unwrap();
        let value = self.value.clone().unwrap();
        self.writer
            .append_checkpointed(&self.at, &ops, || Ok(value))
            .unwrap();
    }

    /// A change appending `bytes` bytes of text.
    fn write_big(&mut self, n: u64, bytes: usize) {
        let ops = vec![
            Op::Append(path!["text"], "x".repeat(bytes)),
            Op::Set(NonEmptyPath::new("n"), json!(n)),
        ];
        chord::apply(&mut self.value, ops.clone()).unwrap();
        let value = self.value.clone().unwrap();
        self.writer
            .append_checkpointed(&self.at, &ops, || Ok(value))
            .unwrap();
    }

    fn records(&self) -> Vec<Record> {
        self.log
            .read_list(&self.at, &ReadOptions::asc().limit(10_000))
            .unwrap()
            .records
    }

    fn app(&self) -> Router {
        Streams::new(&self.log)
            .long_poll(Duration::from_millis(200))
            .router()
    }
}

/// `batches` decoded and applied in order with `decoder` onto `value`.
fn apply_all(decoder: &mut Decoder, value: &mut Option<Value>, batches: &[String]) {
    for batch in batches {
        chord::apply(value, decoder.decode_str(batch).unwrap()).unwrap();
    }
}

#[tokio::test]
async fn a_reader_resuming_from_any_offset_never_receives_a_checkpoint_and_decodes_on() {
    // Every record kept and served: the reader may resume from any of them.
    let every = LogBuilder::new()
        .retention(Retention::Bases(100))
        .compaction(Compaction::Off);
    let mut lane = Lane::new(every, 5);
    for n in 1..=40 {
        lane.write(n);
    }
    let records = lane.records();
    let checkpoints: Vec<&Record> = records
        .iter()
        .filter(|r| r.tag.as_deref() == Some(CHECKPOINT))
        .collect();
    assert_eq!(checkpoints.len(), 8, "one every 5 batches");
    for c in &checkpoints {
        assert!(is_replace(&c.batch), "a checkpoint restates the value");
    }
    assert_eq!(recover(&lane.log, &lane.at).unwrap(), lane.value);

    // A reader that followed from the first base: its decoder saw every batch but the
    // checkpoints, which it skipped. From every offset it could hold, it reads on with that
    // decoder and ends at the producer's value, never receiving an `r`.
    let app = lane.app();
    let first = get(&app, "/streams/lanes/main?offset=0000000000000000").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(
        is_replace(&first.batches[0]),
        "the stream starts with its base"
    );
    assert!(
        first.batches[1..].iter().all(|b| !is_replace(b)),
        "no checkpoint after the base"
    );
    assert_eq!(first.batches.len(), 41, "the base and 40 changes");
    let mut reads = 0;
    for resume_at in records
        .iter()
        .filter(|r| r.tag.as_deref() != Some(CHECKPOINT))
    {
        let mut decoder = Decoder::new();
        let mut value = None;
        let had: Vec<String> = records
            .iter()
            .filter(|r| r.seq <= resume_at.seq && r.tag.as_deref() != Some(CHECKPOINT))
            .map(|r| r.batch.clone())
            .collect();
        apply_all(&mut decoder, &mut value, &had);
        let uri = format!("/streams/lanes/main?offset={:016x}", resume_at.seq);
        let reply = get(&app, &uri).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}");
        assert!(
            reply.batches.iter().all(|b| !is_replace(b)),
            "{uri}: a checkpoint reached a resuming reader"
        );
        apply_all(&mut decoder, &mut value, &reply.batches);
        assert_eq!(value, lane.value, "{uri}");
        reads += 1;
    }
    assert_eq!(reads, 41);

    // Where the reader stands after the last change: past the checkpoint after it, up to
    // date, nothing to read.
    let last = get(
        &app,
        &format!(
            "/streams/lanes/main?offset={:016x}",
            records[records.len() - 2].seq
        ),
    )
    .await;
    assert_eq!(last.batches, Vec::<String>::new());
    assert_eq!(
        last.next.as_deref(),
        Some(format!("{:016x}", records.last().unwrap().seq).as_str())
    );
}

#[tokio::test]
async fn a_reader_with_no_value_starts_at_the_latest_checkpoint_through_the_base_token() {
    let mut lane = Lane::new(LogBuilder::new(), 5);
    for n in 1..=23 {
        lane.write(n);
    }
    let records = lane.records();
    let latest = records
        .iter()
        .rfind(|r| r.tag.as_deref() == Some(CHECKPOINT))
        .unwrap();
    let app = lane.app();
    let head = get(&app, "/streams/lanes/main?offset=now").await;
    let token = head.base.expect("the base offset");
    let before = records[records.iter().position(|r| r.seq == latest.seq).unwrap() - 1].seq;
    assert_eq!(token, format!("{before:016x}.base"));
    let fresh = get(&app, &format!("/streams/lanes/main?offset={token}")).await;
    assert_eq!(fresh.status, StatusCode::OK);
    assert_eq!(fresh.batches[0], latest.batch, "the checkpoint first");
    assert!(fresh.batches[1..].iter().all(|b| !is_replace(b)));
    assert_eq!(fresh.batches.len(), 1 + 3, "then the 3 changes after it");
    let mut decoder = Decoder::new();
    let mut value = None;
    apply_all(&mut decoder, &mut value, &fresh.batches);
    assert_eq!(value, lane.value);
    // The same offset without the token is a resuming reader's: the checkpoint left out.
    let resuming = get(&app, &format!("/streams/lanes/main?offset={before:016x}")).await;
    assert_eq!(resuming.batches, fresh.batches[1..]);
    // `offset=base` reads what the token does, without asking for the token first, and is
    // a catch-up read like any other to a cache (the read's policy, not `no-store`).
    let latest = get(&app, "/streams/lanes/main?offset=base").await;
    assert_eq!(latest.status, StatusCode::OK);
    assert_eq!(latest.batches, fresh.batches);
    assert_eq!(latest.next, fresh.next);
    assert_eq!(latest.cache, fresh.cache);
    assert_ne!(latest.cache.as_deref(), Some("no-store"));
    // A long-poll from the last change, with only a checkpoint after it, waits and answers
    // 204 at the tail: the checkpoint is nothing to it.
    lane.write(24);
    lane.write(25);
    let records = lane.records();
    assert_eq!(records.last().unwrap().tag.as_deref(), Some(CHECKPOINT));
    let change = records[records.len() - 2].seq;
    let poll = get(
        &app,
        &format!("/streams/lanes/main?offset={change:016x}&live=long-poll"),
    )
    .await;
    assert_eq!(poll.status, StatusCode::NO_CONTENT);
    assert_eq!(
        poll.next.as_deref(),
        Some(format!("{:016x}", records.last().unwrap().seq).as_str())
    );
    // `offset=base` has moved on to the new checkpoint: it alone, then nothing.
    let latest = get(&app, "/streams/lanes/main?offset=base").await;
    assert_eq!(latest.batches, [records.last().unwrap().batch.clone()]);
    let mut decoder = Decoder::new();
    let mut value = None;
    apply_all(&mut decoder, &mut value, &latest.batches);
    assert_eq!(value, lane.value);
}

#[tokio::test]
async fn compaction_keeps_from_a_checkpoint_and_the_oldest_kept_is_where_minus_one_starts() {
    let builder = LogBuilder::new()
        .retention(Retention::Bases(2))
        .keep_for(Duration::ZERO)
        .compaction(Compaction::EveryBases(1));
    let mut lane = Lane::new(builder, 4);
    for n in 1..=30 {
        lane.write(n);
    }
    let records = lane.records();
    assert_eq!(
        records[0].tag.as_deref(),
        Some(CHECKPOINT),
        "compacted to the oldest kept checkpoint"
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r.tag.as_deref() == Some(CHECKPOINT))
            .count(),
        2,
        "the retention's two bases"
    );
    assert!(records.iter().all(|r| r.tag.as_deref() != Some(BASE)));
    assert_eq!(recover(&lane.log, &lane.at).unwrap(), lane.value);
    let app = lane.app();
    let oldest = get(&app, "/streams/lanes/main?offset=-1").await;
    assert_eq!(
        oldest.batches[0], records[0].batch,
        "-1 starts at the oldest checkpoint"
    );
    assert!(oldest.batches[1..].iter().all(|b| !is_replace(b)));
    let mut decoder = Decoder::new();
    let mut value = None;
    apply_all(&mut decoder, &mut value, &oldest.batches);
    assert_eq!(value, lane.value);
    // From an offset whose records went: the oldest checkpoint first (a base is what such a
    // reader needs), never a gap.
    let behind = get(&app, "/streams/lanes/main?offset=0000000000000001").await;
    assert_eq!(behind.batches, oldest.batches);
    // A 410 names the latest base, where a reader with no value starts over.
    let head = get(&app, "/streams/lanes/main?offset=now").await;
    let gone = get(&app, "/streams/lanes/main?offset=00000000ffffffff").await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert_eq!(gone.base, head.base);
    assert!(head.base.is_some_and(|b| b.ends_with(".base")));
}

#[test]
fn the_rust_replica_follows_across_checkpoints_with_one_base() {
    let runtime = local::runtime();
    // Every base kept: a replica that reconnects is never behind the oldest one (which would
    // make it start over from a base, as it should).
    let mut lane = Lane::new(LogBuilder::new().retention(Retention::Bases(100)), 3);
    let app = Streams::new(&lane.log)
        .sse_lifetime(Duration::from_millis(150))
        .router();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(chord::streams::serve(listener, app, std::future::pending()));
        addr
    });
    let replica = runtime.block_on(async {
        chord::replica::Replica::connect(&format!("http://{addr}/streams/lanes/main")).unwrap()
    });
    let mut watch = replica.watch();
    for n in 1..=45 {
        lane.write(n);
        std::thread::sleep(Duration::from_millis(5));
    }
    let expected = lane.value.clone();
    runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(30),
            watch.wait_for(|s| s.value == expected),
        )
        .await
        .expect("the replica catches up")
        .unwrap();
    });
    let stats = replica.stats();
    assert_eq!(
        stats.bases, 1,
        "one base, the first: no checkpoint reached it"
    );
    assert!(stats.batches >= 45, "{stats:?}");
    assert!(
        lane.records()
            .iter()
            .filter(|r| r.tag.as_deref() == Some(CHECKPOINT))
            .count()
            >= 3
    );
}

#[tokio::test]
async fn a_catch_up_longer_than_a_chunk_leaves_checkpoints_out_all_the_way() {
    // 1.2 MB of changes and, beside every third, a checkpoint of the whole value: a catch-up
    // from the first base is sent a chunk at a time (256 KiB), and none of its chunks holds a
    // checkpoint.
    let every = LogBuilder::new()
        .retention(Retention::Bases(100))
        .compaction(Compaction::Off)
        .tail_records(8);
    let mut lane = Lane::new(every, 3);
    for n in 1..=60 {
        lane.write_big(n, 20_000);
    }
    let records = lane.records();
    let checkpoints = records
        .iter()
        .filter(|r| r.tag.as_deref() == Some(CHECKPOINT))
        .count();
    assert_eq!(checkpoints, 20);
    let app = lane.app();
    let all = get(&app, "/streams/lanes/main?offset=0000000000000000").await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(
        all.batches.len(),
        61,
        "the base and 60 changes, no checkpoint"
    );
    assert!(all.batches[1..].iter().all(|b| !is_replace(b)));
    let mut decoder = Decoder::new();
    let mut value = None;
    apply_all(&mut decoder, &mut value, &all.batches);
    assert_eq!(value, lane.value);
}
