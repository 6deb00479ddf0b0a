//! How long a replica takes to apply (or refuse) the hostile batches that used to freeze it,
//! and the honest batches beside them. Run in release mode:
//!
//! ```sh
//! cargo run --release -p chord-delta --example hostile_batches
//! ```
//!
//! Each batch is applied to a fresh copy of its document with the default `Limits`; a refused
//! batch is rolled back, and the time includes the rollback.

use std::time::Instant;

use chord::{apply, path, Encoder, Op};
use serde_json::{json, Map, Value};

fn run(name: &str, doc: Value, ops: Vec<Op>) {
    // Its size on the wire, where a reused path is sent once and then by id.
    let wire = Encoder::new().encode(&ops).to_json().len();
    let mut doc = Some(doc);
    let start = Instant::now();
    let result = apply(&mut doc, ops);
    let took = start.elapsed();
    let outcome = match result {
        Ok(()) => "applied".to_owned(),
        Err(e) => format!(
            "refused at op {}: {:?}",
            e.op_index().unwrap_or(0),
            e.kind()
        ),
    };
    println!("| {name} | {wire} B | {outcome} | {took:.1?} |");
}

fn main() {
    let object = || {
        Value::Object(
            (0..100_000)
                .map(|i| (format!("k{i}"), json!(i)))
                .collect::<Map<_, _>>(),
        )
    };
    println!("| batch | wire size | outcome | time |");
    println!("| --- | --- | --- | --- |");
    let mut ops = vec![];
    for i in 0..40_000 {
        ops.push(Op::Delete(path![format!("k{i}")]));
        ops.push(Op::Set(path!["x"], json!(1)));
    }
    run(
        "40,000 front deletes on a 100k-member object, each after a set",
        object(),
        ops,
    );
    let ops = (0..40_000)
        .map(|i| Op::Delete(path![format!("k{i}")]))
        .collect();
    run(
        "40,000 front deletes on a 100k-member object, in a run",
        object(),
        ops,
    );
    let ops = (0..40_000)
        .map(|i| Op::Delete(path![format!("missing{i}")]))
        .collect();
    run(
        "40,000 deletes of missing members of a 100k-member object",
        object(),
        ops,
    );
    let ops = (0..100_000)
        .map(|i| Op::Delete(path![format!("k{i}")]))
        .collect();
    run(
        "clearing a 100k-member object (100,000 deletes)",
        object(),
        ops,
    );
    let array = || json!({"xs": (0..100_000).collect::<Vec<u32>>()});
    let ops = (0..50_000).map(|_| Op::Delete(path!["xs", 0])).collect();
    run("50,000 front deletes on a 100k-element array", array(), ops);
    let ops = vec![Op::Splice {
        path: path!["xs"].into(),
        index: 0,
        remove: 50_000,
        items: vec![],
    }];
    run("one splice removing the same 50,000", array(), ops);
    let text = || json!({"s": "ab".repeat(400_000)});
    let ops = (0..400_000).map(|_| Op::Truncate(path!["s"], 1)).collect();
    run("400,000 one-unit truncates of 800 KB", text(), ops);
    let key = "x".repeat(1 << 20);
    let ops = (0..2_000)
        .map(|_| Op::Set(path![key.as_str()], json!(2)))
        .collect();
    run(
        "2,000 sets through a 1 MB key",
        json!({ key.clone(): 1 }),
        ops,
    );
}
