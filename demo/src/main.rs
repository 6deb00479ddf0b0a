//! An agent lane streamed to a replica: the main demo.
//!
//! A simulated agent answers a request: it streams assistant text token by token, runs a
//! build tool whose output is kept in a rolling window, updates the tool's free-form details,
//! pushes finished messages onto the transcript and changes its status. After every event the
//! producer flushes; each batch is printed in the readable op form with its size on the wire,
//! encoded for the wire, decoded and applied by a replica, which is checked against the
//! producer's state. At the end the wire bytes are compared with sending a full JSON snapshot
//! after every event.
//!
//! Every batch is also appended to a durable JSONL log (a base batch every 50 batches, so
//! recovery never replays more than 50); at the end the lane is recovered from the log, as
//! after a crash, and checked against the producer. The log is a temporary file removed at
//! exit, or the file `--log PATH` names, kept (look inside it with the `chord` CLI).
//!
//! Run with `cargo run --release -p chord-demo` (`-- --help` lists the flags); the demo is a
//! package of its own (`demo/`), so its build pulls only what it runs.
//!
//! With its `live` feature (on by default) it also serves the lane on 127.0.0.1 (see
//! `agent_lane/server.rs`):
//! Server-Sent Events, a web page that renders the lane, and a Rust replica following it over
//! HTTP, checked against the producer. `-- --serve` keeps the server running with the agent
//! looping slowly, for a browser or a JavaScript replica, and prints its URL; `-- --port N`
//! (or `CHORD_PORT=N`) picks the port, an ephemeral one by default.
//!
//! `-- --types PATH` writes the TypeScript declarations of the lane's JSON (what a replica's
//! value is) to PATH and exits: `agent_lane/lane.d.ts` is that file, checked in, and
//! `chord/tests/typescript.rs` fails when it is not what the types declare now.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
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

/// The TypeScript declarations of the lane's JSON: `--types` writes them, and
/// `agent_lane/lane.d.ts` holds them.
pub(crate) fn lane_declarations() -> Result<String, chord::typescript::Error> {
    chord::typescript::declarations::<LaneView>()
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

/// The flags, as `--help` prints them.
const USAGE: &str = "\
usage: agent_lane [--quiet | --wire] [--log PATH] [--serve] [--port N]
       agent_lane --types PATH

  --quiet      print the summary only, not each batch
  --wire       print each batch's wire text too (the JSON a replica receives)
  --log PATH   write the lane's durable log to PATH and keep it (default: a temporary
               file, removed at exit)
  --serve      keep serving the lane on 127.0.0.1, the agent starting over every few
               seconds; prints the page's and the stream's URL (needs the live feature,
               on by default)
  --port N     the port to serve on (default: $CHORD_PORT, else a free one; needs the
               live feature)
  --types PATH write the TypeScript declarations of the lane's JSON to PATH and exit
               (demo/src/agent_lane/lane.d.ts is that file)
  -h, --help   print this";

/// What each flush prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Nothing: only the summary.
    Quiet,
    /// The event, the batch's size on the wire and its ops in readable form.
    Readable,
    /// As `Readable`, and the wire text.
    Wire,
}

/// The command line.
#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) output: Output,
    pub(crate) log: Option<PathBuf>,
    pub(crate) serve: bool,
    pub(crate) port: Option<u16>,
    pub(crate) types: Option<PathBuf>,
}

impl Args {
    /// Parses the flags after the program's name; `Err` holds what to print (the usage for
    /// `--help`, else what is wrong followed by the usage).
    pub(crate) fn parse(
        mut args: impl Iterator<Item = String>,
    ) -> Result<Args, (String, std::process::ExitCode)> {
        let wrong = |what: String| (format!("agent_lane: {what}\n\n{USAGE}"), 2.into());
        let mut parsed = Args {
            output: Output::Readable,
            log: None,
            serve: false,
            port: None,
            types: None,
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-h" | "--help" => return Err((USAGE.to_owned(), 0.into())),
                "--quiet" => parsed.output = Output::Quiet,
                "--wire" => parsed.output = Output::Wire,
                "--serve" => parsed.serve = true,
                "--types" => match args.next() {
                    Some(path) => parsed.types = Some(PathBuf::from(path)),
                    None => return Err(wrong("--types needs a path".into())),
                },
                "--log" => match args.next() {
                    Some(path) => parsed.log = Some(PathBuf::from(path)),
                    None => return Err(wrong("--log needs a path".into())),
                },
                "--port" => {
                    let port = args
                        .next()
                        .ok_or_else(|| wrong("--port needs a number".into()))?;
                    let port = port
                        .parse()
                        .map_err(|e| wrong(format!("--port {port}: {e}")))?;
                    parsed.port = Some(port);
                }
                other => return Err(wrong(format!("unknown argument `{other}`"))),
            }
        }
        if (parsed.serve || parsed.port.is_some()) && !cfg!(feature = "live") {
            return Err(wrong(
                "--serve and --port need the `live` feature (on by default): cargo run --release \
                 -p chord-demo -- --serve"
                    .into(),
            ));
        }
        Ok(parsed)
    }
}

/// Where the lane's log lives: a file the user named, or a temporary directory removed when
/// this is dropped.
pub(crate) struct LogFile {
    path: PathBuf,
    temporary: Option<tempfile::TempDir>,
}

impl LogFile {
    /// `path`, kept; or, with `None`, a file in a fresh temporary directory.
    pub(crate) fn new(path: Option<PathBuf>) -> std::io::Result<LogFile> {
        match path {
            Some(path) => Ok(LogFile {
                path,
                temporary: None,
            }),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("chord-agent-lane-")
                    .tempdir()?;
                Ok(LogFile {
                    path: dir.path().join("lane.jsonl"),
                    temporary: Some(dir),
                })
            }
        }
    }

    /// The log file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary directory holding it, when it is temporary.
    #[cfg_attr(not(feature = "live"), allow(dead_code))]
    pub(crate) fn temporary_dir(&self) -> Option<&Path> {
        self.temporary.as_ref().map(|d| d.path())
    }
}

/// A producer connected to one replica over the wire codec, with byte accounting.
pub(crate) struct Stream {
    lane: Tracker<LaneView>,
    encoder: Encoder,
    decoder: Decoder,
    replica: Option<Value>,
    output: Output,
    batches: usize,
    ops: usize,
    wire_bytes: usize,
    snapshot_bytes: usize,
    /// A pause after each batch, so that a person (or a browser) can watch.
    pace: Duration,
    /// The durable log every batch is appended to, and where the lane lives in it.
    log: LogWriter<LaneStore>,
    log_file: LogFile,
    address: Address,
}

impl Stream {
    /// A producer writing to `log_file`, which it starts afresh (an existing file there is
    /// replaced: the demo does not continue an earlier run's log).
    pub(crate) fn new(
        output: Output,
        log_file: LogFile,
    ) -> Result<Stream, Box<dyn std::error::Error>> {
        match std::fs::remove_file(log_file.path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot replace {}: {e}", log_file.path().display()).into())
            }
            _ => {}
        }
        let store = JsonlStore::open(log_file.path(), Durability::EveryAppend).map_err(|e| {
            format!(
                "cannot open the lane's log {}: {e}",
                log_file.path().display()
            )
        })?;
        Ok(Stream {
            lane: track(LaneView::default()),
            encoder: Encoder::new(),
            decoder: Decoder::new(),
            replica: None,
            output,
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
            log_file,
            address: Address::new("lanes", "main"),
        })
    }

    /// Says once how to read what each flush prints.
    pub(crate) fn legend(&self) {
        if self.output == Output::Quiet {
            return;
        }
        println!(
            "Each batch: [its size on the wire in bytes], the event that caused it, its ops in readable form.\n\
             On the wire (--wire prints it) a batch is a JSON array of ops, e.g. [\"s\", path, value]; \
             a path used again is named once by [\"#\", id, path] and then by the bare id \
             ([\"a\", 3, \"...\"]), and a path equal to the previous op's is left out.\n"
        );
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
        if self.output != Output::Quiet {
            println!("-- [{:>3} B] {event}: {}", wire.len(), display_batch(&ops));
        }
        if self.output == Output::Wire {
            println!("  wire: {wire}");
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
        let path = self.log_file.path().display();
        println!(
            "\ndurable log {path}: {records} records, {size} bytes; recovery replayed {} batches from the base at seq {}",
            r.batches,
            r.base_seq.unwrap_or_default(),
        );
        if self.log_file.temporary.is_some() {
            println!("  a temporary file, removed at exit (--log PATH keeps one)");
        } else {
            println!("  look inside: cargo run -p chord-delta-cli -- show {path} lanes main");
        }
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

fn main() -> std::process::ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err((text, code)) => {
            if code == std::process::ExitCode::SUCCESS {
                println!("{text}");
            } else {
                eprintln!("{text}");
            }
            return code;
        }
    };
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent_lane: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The demo: the agent's turn, checked, then the summary (with `live`, also served).
pub(crate) fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = &args.types {
        std::fs::write(path, lane_declarations()?)?;
        println!(
            "wrote the TypeScript declarations of the lane to {}",
            path.display()
        );
        return Ok(());
    }
    let log_file = LogFile::new(args.log.clone())?;
    let s = Stream::new(args.output, log_file)?;
    s.legend();
    #[cfg(feature = "live")]
    return server::main(s, &args);
    #[cfg(not(feature = "live"))]
    {
        let mut s = s;
        run_agent(&mut s)?;
        s.summary()
    }
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
