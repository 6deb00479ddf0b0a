//! Streams an agent lane's ops through the wire codec to a replica and prints each batch.
//!
//! Run with `cargo run --release --example agent_lane`.

use chord::{apply, display_batch, path, Decoder, Encoder, Op};
use serde_json::json;

fn main() -> Result<(), chord::Error> {
    let mut batches = vec![vec![Op::Replace(json!({
        "status": "thinking",
        "message": {"role": "assistant", "text": ""},
        "toolOutput": "",
        "transcript": [],
    }))]];
    for chunk in ["Let me ", "check the ", "build."] {
        batches.push(vec![Op::Append(path!["message", "text"], chunk.into())]);
    }
    batches.push(vec![
        Op::Set(path!["status"], json!("running tool")),
        Op::Append(
            path!["toolOutput"],
            "[ 12%] Building CXX object src/foo.o\n".into(),
        ),
    ]);
    batches.push(vec![
        Op::Truncate(path!["toolOutput"], 38),
        Op::Append(path!["toolOutput"], "[100%] Built target foo\n".into()),
        Op::Splice {
            path: path!["transcript"].into(),
            index: 0,
            remove: 0,
            items: vec![json!({"role": "tool", "text": "build ok"})],
        },
        Op::Set(path!["status"], json!("idle")),
    ]);

    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    let mut replica = None;
    let mut wire_bytes = 0;
    for batch in &batches {
        let wire = encoder.encode(batch).to_json();
        wire_bytes += wire.len();
        println!("{}\n  wire: {wire}", display_batch(batch));
        apply(&mut replica, decoder.decode_str(&wire)?)?;
    }
    println!(
        "\nreplica: {}\nwire bytes in total: {wire_bytes}",
        replica.unwrap_or_default()
    );
    Ok(())
}
