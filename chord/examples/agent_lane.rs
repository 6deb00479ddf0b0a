//! An agent lane streamed to a replica: the main demo.
//!
//! A simulated agent answers a request: it streams assistant text token by token, runs a
//! build tool whose output is kept in a rolling window, updates the tool's free-form details,
//! pushes finished messages onto the transcript and changes its status. After every event the
//! producer flushes; each batch is printed in the readable op form, encoded for the wire,
//! decoded and applied by a replica, which is checked against the producer's state. At the end
//! the wire bytes are compared with sending a full JSON snapshot after every event.
//!
//! Every batch is also appended to a durable JSONL log (a base batch every 50 batches, so
//! recovery never replays more than 50); at the end the lane is recovered from the log, as
//! after a crash, and checked against the producer. `-- --log PATH` picks the log file (a
//! fresh one in the temporary directory by default); look inside it with the `chord` CLI.
//!
//! Run with `cargo run --release --example agent_lane` (add `-- --quiet` for the summary only).
//!
//! With `--features live` it also serves the lane live on 127.0.0.1 (see `agent_lane/server.rs`):
//! Server-Sent Events, a web page that renders the lane, and a Rust replica following it over
//! HTTP. `-- --serve` keeps the server running with the agent looping slowly, for a browser;
//! `-- --port N` (or `CHORD_PORT=N`) picks the port, an ephemeral one by default.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use chord::store::{recover_as, replay, Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::{apply, display_batch, track, Decoder, Encoder, Tracked, Tracker};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[cfg(feature = "live")]
#[path = "agent_lane/server.rs"]
pub(crate) mod server;

/// What a browser renders for one agent lane.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct LaneView {
    status: Status,
    /// The assistant message being streamed, absent between messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    streaming_message: Option<Message>,
    transcript: Vec<Message>,
    tools: Vec<ToolState>,
    usage: Usage,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
#[chord(opaque)]
enum Status {
    #[default]
    Idle,
    Thinking,
    RunningTool,
    Done,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
struct Message {
    role: String,
    text: String,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ToolState {
    name: String,
    /// The last few KB of the tool's output.
    output_window: String,
    exit_code: Option<i32>,
    /// Free-form, tool-specific state.
    details: Value,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

/// How many bytes of tool output the lane keeps.
const WINDOW: usize = 2048;

/// The store the lane's log is written to: with `live`, shared with the stream server.
#[cfg(feature = "live")]
pub(crate) type LaneStore = chord::streams::Log<JsonlStore>;
#[cfg(not(feature = "live"))]
pub(crate) type LaneStore = JsonlStore;

/// The JSONL file's record count and size.
#[cfg(feature = "live")]
fn log_size(store: &LaneStore) -> (usize, u64) {
    store.with_store(|s| (s.len(), s.size()))
}
#[cfg(not(feature = "live"))]
fn log_size(store: &LaneStore) -> (usize, u64) {
    (store.len(), store.size())
}

/// A producer connected to one replica over the wire codec, with byte accounting.
pub(crate) struct Stream {
    lane: Tracker<LaneView>,
    encoder: Encoder,
    decoder: Decoder,
    replica: Option<Value>,
    quiet: bool,
    batches: usize,
    ops: usize,
    wire_bytes: usize,
    snapshot_bytes: usize,
    /// A pause after each batch, so that a person (or a browser) can watch.
    pace: Duration,
    /// The durable log every batch is appended to, and where the lane lives in it.
    log: LogWriter<LaneStore>,
    log_path: PathBuf,
    address: Address,
}

/// The log file: `--log PATH`, else a fresh file in the temporary directory.
fn log_path() -> PathBuf {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--log") {
        Some(i) if i + 1 < args.len() => PathBuf::from(&args[i + 1]),
        _ => std::env::temp_dir().join(format!("chord-agent-lane-{}.jsonl", std::process::id())),
    }
}

impl Stream {
    pub(crate) fn new(quiet: bool) -> Stream {
        let log_path = log_path();
        // A fresh log each run; `Durable::open` would recover and continue an existing one.
        let _ = std::fs::remove_file(&log_path);
        let store = match JsonlStore::open(&log_path, Durability::EveryAppend) {
            Ok(store) => store,
            Err(e) => panic!("cannot open the lane's log: {e}"),
        };
        Stream {
            lane: track(LaneView::default()),
            encoder: Encoder::new(),
            decoder: Decoder::new(),
            replica: None,
            quiet,
            batches: 0,
            ops: 0,
            wire_bytes: 0,
            snapshot_bytes: 0,
            pace: Duration::ZERO,
            #[cfg(feature = "live")]
            log: LogWriter::new(
                chord::streams::Log::new(store),
                Checkpoint::EveryBatches(50),
            ),
            #[cfg(not(feature = "live"))]
            log: LogWriter::new(store, Checkpoint::EveryBatches(50)),
            log_path,
            address: Address::new("lanes", "main"),
        }
    }

    fn flush(&mut self, event: &str) -> Result<(), Box<dyn std::error::Error>> {
        let ops = self.lane.flush()?;
        if ops.is_empty() {
            return Ok(());
        }
        // On disk when it returns. Every 50 batches the log's checkpoint policy stores the
        // whole lane instead, so recovery replays at most 50; live replicas keep the delta.
        let lane = self.lane.get();
        self.log
            .append_checkpointed(&self.address, &ops, || Ok(serde_json::to_value(lane)?))?;
        let wire = self.encoder.encode(&ops).to_json();
        apply(&mut self.replica, self.decoder.decode_str(&wire)?)?;
        let state = serde_json::to_value(self.lane.get())?;
        assert_eq!(self.replica.as_ref(), Some(&state), "the replica diverged");

        self.batches += 1;
        self.ops += ops.len();
        self.wire_bytes += wire.len();
        self.snapshot_bytes += state.to_string().len();
        if !self.quiet {
            println!("-- {event}: {}", display_batch(&ops));
            println!("   wire ({} bytes): {}", wire.len(), preview(&wire));
        }
        if !self.pace.is_zero() {
            std::thread::sleep(self.pace);
        }
        Ok(())
    }

    fn summary(&self) -> Result<(), Box<dyn std::error::Error>> {
        // As after a crash: read the lane back from the log alone.
        let store = self.log.store();
        let recovered = recover_as::<LaneView, _>(store, &self.address)?;
        assert_eq!(
            recovered.as_ref(),
            Some(self.lane.get()),
            "recovery diverged"
        );
        let r = replay(store, &self.address, None)?;
        let (records, size) = log_size(store);
        println!(
            "\ndurable log {}: {records} records, {size} bytes; recovery replayed {} batches from the base at seq {}",
            self.log_path.display(),
            r.batches,
            r.base_seq.unwrap_or_default(),
        );
        println!(
            "  look inside: cargo run -p chord-delta-cli -- show {} lanes main",
            self.log_path.display()
        );
        println!(
            "\n{} batches, {} ops: {} wire bytes, against {} bytes of full snapshots ({:.1}x smaller)",
            self.batches,
            self.ops,
            self.wire_bytes,
            self.snapshot_bytes,
            self.snapshot_bytes as f64 / self.wire_bytes as f64
        );
        println!("replica equals the producer after every batch; the recovered lane equals it too");
        Ok(())
    }
}

fn preview(s: &str) -> String {
    if s.len() <= 160 {
        return s.to_owned();
    }
    let mut cut = 160;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

#[cfg(not(feature = "live"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut s = Stream::new(std::env::args().any(|a| a == "--quiet"));
    run_agent(&mut s)?;
    s.summary()
}

#[cfg(feature = "live")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    server::main(Stream::new(std::env::args().any(|a| a == "--quiet")))
}

/// The agent's turn: a user message, a streamed answer, a failing build tool, the end.
pub(crate) fn run_agent(s: &mut Stream) -> Result<(), Box<dyn std::error::Error>> {
    s.flush("subscribe (base batch)")?;

    // The user asks; the agent starts thinking.
    let mut lane = s.lane.state();
    lane.transcript.push(Message {
        role: "user".into(),
        text: "Why does the build fail on CI but not locally?".into(),
    });
    lane.status.set(Status::Thinking);
    lane.usage.input_tokens += 812;
    s.flush("user message")?;

    // The assistant streams its answer token by token.
    let answer = "Let me look at the build log first. I'll run the build with the same \
                  flags CI uses and compare the compiler output.";
    s.lane.state().streaming_message.set(Some(Message {
        role: "assistant".into(),
        text: String::new(),
    }));
    for (i, token) in answer.split_inclusive(' ').enumerate() {
        let mut lane = s.lane.state();
        if let Some(mut message) = lane.streaming_message.as_mut() {
            message.text.push_str(token);
        }
        lane.usage.output_tokens += 1;
        s.flush(&format!("token {i}"))?;
    }

    // The tool runs: output lines stream into a rolling window, details change as it goes.
    let mut lane = s.lane.state();
    lane.status.set(Status::RunningTool);
    lane.tools.push(ToolState {
        name: "bash".into(),
        output_window: String::new(),
        exit_code: None,
        details: json!({"command": "cargo build --locked", "files": 0, "warnings": []}),
    });
    s.flush("tool starts")?;
    for step in 1..=120u32 {
        let mut lane = s.lane.state();
        let mut tool = lane.tools.last_mut().expect("the tool just started");
        writeln!(
            tool.output_window,
            "[{:>3}%] Building CXX object src/module_{step:03}.o",
            step * 100 / 120
        )?;
        tool.output_window.keep_last(WINDOW);
        let details = &mut tool.details;
        details.member("files").unwrap().set(step);
        if step % 40 == 0 {
            details
                .member("warnings")
                .unwrap()
                .push(json!({"file": format!("src/module_{step:03}.cc"), "line": step}))?;
        }
        s.flush(&format!("build step {step}"))?;
    }
    let mut lane = s.lane.state();
    let mut tool = lane.tools.last_mut().expect("the tool ran");
    tool.exit_code.set(Some(1));
    tool.output_window += "error: linker `cc` not found\n";
    s.flush("tool fails")?;

    // The message is finished: it moves to the transcript and the streaming slot empties.
    let mut lane = s.lane.state();
    if let Some(done) = lane.streaming_message.take() {
        lane.transcript.push(done);
    }
    lane.status.set(Status::Done);
    s.flush("message done")?;
    Ok(())
}
