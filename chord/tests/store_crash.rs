//! Crash test: a writer *process* is killed with SIGKILL at random moments, and reopening its
//! log must recover at least the last flush the writer saw acknowledged as durable, and
//! exactly one of the states the writer produced (never a mixture, never anything else).
//!
//! The writer is this test binary itself, re-run with `CHORD_CRASH_LOG` set: the ignored
//! helper `crash_writer` then writes until it is killed, printing after each append `wrote <i>` and,
//! whenever the store reports more batches durable, `durable <i>` for the newest of them.
//! Every state is a pure function of its index `i`, so the parent can check a recovered value
//! byte for byte. SIGKILL cannot undo a write already handed to the operating system, so the
//! recovered state may be newer than the last acknowledgment, never older.
//!
//! With `CHORD_CRASH_COMPACT` set, the writer also compacts the log to its last two bases
//! after each base it appends (`Store::compact`: a rewrite of the file and a rename), so the
//! kills land in compactions too: the log reopens as the old file or the new one, whole, and
//! the stale temp file is gone.
#![cfg(unix)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use chord::store::{
    recover, replay, Address, Checkpoint, Durability, Error, JsonlStore, LogWriter, Store,
};
use chord::{path, Op};
use serde_json::{json, Value};

const WINDOW: usize = 2048;

fn address() -> Address {
    Address::new("crash", "value")
}

/// Write `i`: a chunk appended to a rolling window; returns (chars cut, chunk).
fn step(text: &mut String, i: u64) -> (usize, String) {
    let chunk = format!("write {i}: {}\n", "·".repeat((i % 13) as usize));
    text.push_str(&chunk);
    let mut cut = text.len().saturating_sub(WINDOW);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    let units = chord::utf16_len(&text[..cut]);
    text.drain(..cut);
    (units, chunk)
}

fn value(text: &str, i: u64) -> Value {
    json!({ "i": i, "text": text })
}

/// The state after write `i`, computed from scratch.
fn state(i: u64) -> Value {
    let mut text = String::new();
    for j in 0..=i {
        step(&mut text, j);
    }
    value(&text, i)
}

fn durability(policy: &str) -> Durability {
    match policy {
        "grouped" => Durability::Grouped {
            max_batches: 16,
            max_delay: Duration::from_millis(2),
        },
        _ => Durability::EveryAppend,
    }
}

/// The writer process of `sigkill_recovers_the_last_durable_flush`, which starts it (not a
/// test: it does nothing unless `CHORD_CRASH_LOG` is set).
#[test]
#[ignore = "the writer process of sigkill_recovers_the_last_durable_flush, started by it"]
fn crash_writer() {
    let Some(log) = std::env::var_os("CHORD_CRASH_LOG") else {
        return;
    };
    let policy = std::env::var("CHORD_CRASH_POLICY").unwrap_or_default();
    let store = JsonlStore::open(&log, durability(&policy)).unwrap();
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(20));
    let a = address();
    let mut text = String::new();
    let mut pending = VecDeque::new();
    let compact = std::env::var_os("CHORD_CRASH_COMPACT").is_some();
    println!("ready");
    for i in 0.. {
        let (cut, chunk) = step(&mut text, i);
        let base = writer.wants_base(&a);
        let batch = if base {
            vec![Op::Replace(value(&text, i))]
        } else {
            vec![
                Op::Truncate(path!["text"], cut),
                Op::Append(path!["text"], chunk),
                Op::Set(path!["i"], i.into()),
            ]
        };
        let seq = writer.append(&a, &batch).unwrap().unwrap();
        if compact && base {
            writer.store_mut().compact(&a, 2).unwrap();
        }
        println!("wrote {i}");
        pending.push_back((seq, i));
        let durable = writer.store().durable_seq().unwrap_or(0);
        let mut newest = None;
        while pending.front().is_some_and(|&(s, _)| s <= durable) {
            newest = pending.pop_front().map(|(_, i)| i);
        }
        if let Some(i) = newest {
            println!("durable {i}");
        }
    }
}

/// A small deterministic generator, seeded from the clock: the kill moments differ per run,
/// and a failure prints the seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The writer process, killed when dropped so that a failing check never leaves it running.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_once(dir: &Path, run: usize, policy: &str, delay: Duration, compact: bool) {
    let log = dir.join(format!("crash-{run}.jsonl"));
    let mut command = Command::new(std::env::current_exe().unwrap());
    if compact {
        command.env("CHORD_CRASH_COMPACT", "1");
    }
    let child = command
        .args([
            "crash_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CHORD_CRASH_LOG", &log)
        .env("CHORD_CRASH_POLICY", policy)
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Writer(child);
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Wait for the writer to hold the log.
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            // The harness prints "test crash_writer ... " before the writer's first line.
            Ok(line) if line.ends_with("ready") => break,
            Ok(_) => {}
            Err(e) => panic!("run {run}: the writer never started: {e}"),
        }
    }
    std::thread::sleep(delay / 2);
    // While it writes: a second writer is refused; a reader sees a consistent prefix.
    let second = JsonlStore::open(&log, Durability::EveryAppend);
    assert!(
        matches!(second, Err(Error::Locked { .. })),
        "run {run}: {second:?}"
    );
    let reader_view = JsonlStore::open_read_only(&log).unwrap();
    if let Some(v) = recover(&reader_view, &address()).unwrap() {
        let i = v["i"].as_u64().unwrap();
        assert_eq!(v, state(i), "run {run}: a reader saw a state never written");
    }
    std::thread::sleep(delay / 2);
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    reader.join().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    let last = |prefix: &str| {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter_map(|n| n.parse::<u64>().ok())
            .max()
    };
    let acknowledged = last("durable ");
    let wrote = last("wrote ");

    let mut temp = log.file_name().unwrap().to_os_string();
    temp.push(".compact");
    let temp = log.with_file_name(temp);
    let stale = temp.exists();
    let mut store = JsonlStore::open(&log, Durability::EveryAppend).unwrap();
    let recovered = replay(&store, &address(), None).unwrap();
    let context = format!(
        "run {run} ({policy}, compact {compact}, killed after {delay:?}): acknowledged \
         {acknowledged:?}, wrote {wrote:?}, torn tail {:?}, {} records, temp file left \
         {stale}",
        store.torn_tail(),
        store.count(&address())
    );
    if compact {
        assert!(!temp.exists(), "{context}: a stale temp file");
        // Two bases and what follows the newer (a third during a compaction the kill cut).
        assert!(
            store.count(&address()) <= 3 * 21 + 1,
            "{context}: not compacted"
        );
    }
    eprintln!(
        "{context}: recovered {:?}",
        recovered.value.as_ref().map(|v| v["i"].clone())
    );
    match recovered.value {
        None => assert_eq!(acknowledged, None, "{context}: lost everything"),
        Some(v) => {
            let i = v["i"].as_u64().unwrap();
            assert!(
                acknowledged.is_none_or(|a| i >= a),
                "{context}: recovered {i}, older than acknowledged"
            );
            // At most the one write whose "wrote" line the kill cut off.
            assert!(
                i <= wrote.map_or(0, |w| w + 1),
                "{context}: recovered {i}, never written"
            );
            assert_eq!(v, state(i), "{context}: recovered state {i} differs");
            assert!(recovered.batches <= 20, "{context}: {}", recovered.batches);
        }
    }
    // The log goes on: a new writer continues the value, and seqs keep increasing.
    let before = store.durable_seq().unwrap_or(0);
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(20));
    let batch = if writer.wants_base(&address()) {
        vec![Op::Replace(json!({ "after": true }))]
    } else {
        vec![Op::Set(path!["after"], true.into())]
    };
    let seq = writer.append(&address(), &batch).unwrap().unwrap();
    assert!(seq > before, "{context}");
    store = writer.into_store();
    let v = recover(&store, &address()).unwrap().unwrap();
    assert_eq!(v["after"], true, "{context}");
}

#[test]
fn sigkill_recovers_the_last_durable_flush() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    for run in 0..10 {
        let policy = if run % 2 == 0 { "every" } else { "grouped" };
        let delay = Duration::from_millis(20 + rng.below(280));
        let result = std::panic::catch_unwind(|| run_once(dir.path(), run, policy, delay, false));
        if let Err(panic) = result {
            eprintln!("seed {seed}");
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn sigkill_during_compactions_leaves_the_old_or_the_new_log() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    for run in 0..10 {
        let policy = if run % 2 == 0 { "every" } else { "grouped" };
        let delay = Duration::from_millis(20 + rng.below(280));
        let result = std::panic::catch_unwind(|| run_once(dir.path(), run, policy, delay, true));
        if let Err(panic) = result {
            eprintln!("seed {seed}");
            std::panic::resume_unwind(panic);
        }
    }
}
