//! The JavaScript `follow()` against chord's server over real HTTP, in Node, with both
//! transports: its own (`fetch` + SSE parsing) and the official `@durable-streams/client`
//! (installed by `scripts/test` from `js/package.json`). The server ends every SSE response
//! after 100 ms, so the followers reconnect many times; each starts once from a base batch and
//! ends equal to the producer. The producer writes a checkpoint every 7 batches: no follower
//! receives one (a follower that has the value reads the batches, never a base again), and a
//! subscription to a part no batch changes is called once, for the first base, and never
//! again.

#[path = "support/local.rs"]
mod local;

use std::process::{Command, Stdio};
use std::time::Duration;

use chord::store::{
    Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store, CHECKPOINT,
};
use chord::streams::{self, LogBuilder, Retention, Streams};
use chord::{path, NonEmptyPath, Op};
use serde_json::{json, Value};

#[test]
fn javascript_followers_resume_over_both_transports() {
    let root = local::js_installed();
    let runtime = local::runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    // Every base kept while the test runs: a follower that reconnects is never behind the
    // oldest kept one (which answers 410, and it would start over from a base, as it should).
    let log = LogBuilder::new()
        .retention(Retention::Bases(1000))
        .build(store);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::EveryBatches(7));
    let lane = Address::new("lanes", "main");
    let mut value = Some(json!({"text": "", "n": 0, "fixed": {"k": 1}}));
    writer
        .append(&lane, &[Op::Replace(value.clone().unwrap())])
        .unwrap();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Streams::new(&log)
            .sse_lifetime(Duration::from_millis(100))
            .router();
        tokio::spawn(streams::serve(listener, app, std::future::pending()));
        addr
    });
    let url = format!("http://{addr}{}", streams::stream_path(&lane));
    let last = 60u64;
    let followers: Vec<_> = ["sse", "durable-streams"]
        .into_iter()
        .map(|kind| {
            let child = Command::new("node")
                .args(["js/tools/follow.mjs", &url, &last.to_string(), kind])
                .current_dir(&root)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("`node` (Node.js 20 or later) is needed: {e}"));
            (kind, child)
        })
        .collect();
    let mut text = String::new();
    for n in 1..=last {
        let chunk = format!("t{n} ");
        text.push_str(&chunk);
        let ops = [
            Op::Append(path!["text"], chunk),
            Op::Set(NonEmptyPath::new("n"), json!(n)),
        ];
        chord::apply(&mut value, ops.to_vec()).unwrap();
        writer
            .append_checkpointed(&lane, &ops, || Ok(value.clone().unwrap()))
            .unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let expected = json!({"text": text, "n": last, "fixed": {"k": 1}});
    let records = log
        .read_list(&lane, &ReadOptions::asc().limit(1000))
        .unwrap()
        .records;
    let checkpoints = records
        .iter()
        .filter(|r| r.tag.as_deref() == Some(CHECKPOINT))
        .count();
    assert_eq!(checkpoints, 8, "one every 7 batches");
    for (kind, child) in followers {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{kind}: {stdout}\n{stderr}");
        let got: Value = serde_json::from_str(stdout.trim()).unwrap();
        println!("{kind}: {}", got["stats"]);
        assert_eq!(got["value"], expected, "{kind}");
        assert_eq!(
            got["stats"]["starts"], 1,
            "{kind}: one start from a base batch"
        );
        assert_eq!(
            got["stats"]["bases"], 1,
            "{kind}: no base batch after the first, checkpoints included"
        );
        assert_eq!(
            got["fixedCalls"], 1,
            "{kind}: a subscription to a part no batch changes is called for the first base only"
        );
    }
}
