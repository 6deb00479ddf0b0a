//! How many lanes one node serves: `LANES` lanes, each flushed `RATE` times a second, each
//! flush read by `READERS` readers, on a PostgreSQL or a JSONL store; prints the p50/p99/max
//! flush-to-reader latency and what the node and the database spent. `scripts/measure-capacity`
//! runs a sweep of it.
//!
//! ```sh
//! cargo run --release --features postgres --example capacity -- \
//!     --store pg|jsonl [--db URL] [--lanes 1000] [--rate 20] [--readers 2] [--seconds 10] \
//!     [--workers 4] [--group BATCHES:MS]
//! ```
//!
//! Each of `--workers` producer threads owns its share of the lanes and one store (for
//! PostgreSQL one writer connection), and flushes each lane on a fixed schedule (the lanes'
//! flushes spread evenly over the period): the lane's tracker is changed as an agent streaming
//! tokens changes it, flushed, encoded and appended by a [`LogWriter`]. Once the record is
//! durable (at once under `EveryAppend`; with `--group N:MS`, `Durability::Grouped`, when its
//! group commits) its text goes to the readers, as a node's tail cache hands it to its SSE
//! readers: two reader threads, each holding a decoder and a value per reader of its lanes,
//! decode and apply it. The latency of a reader is from when the flush was *due* (not when it
//! started, so a producer falling behind shows) to when that reader applied it.
//!
//! Prints one line, `key=value` pairs: the configuration, `flushes` done and the `target`,
//! latency `p50_ms p99_ms max_ms` over every reader's every record, the node's CPU
//! (`node_cpu`: user+system seconds per wall second, of this process), and for PostgreSQL the
//! server's CPU (`db_cpu`, every `postgres` process on this machine) and `commits_s`
//! (`pg_stat_database.xact_commit` of the database, per second).

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, PostgresStore, Store};
use chord::{Decoder, Tracked, Tracker};
use serde::{Deserialize, Serialize};

/// A lane as an agent streams it.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
struct Lane {
    step: u64,
    status: String,
    streaming: String,
    tokens: u64,
}

/// Bytes of streamed text a lane keeps.
const WINDOW: usize = 1024;

/// One flush of a lane: a few tokens streamed.
fn advance(lane: &mut LaneProxy<'_>, step: u64) {
    lane.step.set(step);
    lane.tokens += 3;
    lane.streaming.push_str(&format!("token{step} "));
    lane.streaming.keep_last(WINDOW);
    if step.is_multiple_of(50) {
        lane.status.set(format!("message {}", step / 50));
    }
}

#[derive(Clone)]
struct Config {
    store: String,
    db: String,
    lanes: usize,
    rate: f64,
    readers: usize,
    seconds: f64,
    workers: usize,
    group: Option<(usize, u64)>,
}

fn config(args: &[String]) -> Result<Config, String> {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let number = |flag: &str, default: f64| -> Result<f64, String> {
        value(flag).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{flag} {v}: not a number"))
        })
    };
    let group = match value("--group") {
        None => None,
        Some(g) => {
            let (n, ms) = g
                .split_once(':')
                .ok_or_else(|| format!("--group {g}: BATCHES:MS"))?;
            let n = n.parse().map_err(|_| format!("--group {g}: BATCHES:MS"))?;
            let ms = ms.parse().map_err(|_| format!("--group {g}: BATCHES:MS"))?;
            Some((n, ms))
        }
    };
    Ok(Config {
        store: value("--store").unwrap_or_else(|| "pg".into()),
        db: value("--db")
            .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test?schema=capacity".into()),
        lanes: number("--lanes", 1000.0)? as usize,
        rate: number("--rate", 20.0)?,
        readers: number("--readers", 2.0)? as usize,
        seconds: number("--seconds", 10.0)?,
        workers: (number("--workers", 4.0)? as usize).max(1),
        group,
    })
}

/// A record for the readers: the lane, its text, when its flush was due (`None`: before the
/// clock started, not measured).
type Delivery = (usize, String, Option<Instant>);

/// User plus system CPU seconds of a process (`/proc/PID/stat`), 0 when unreadable.
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds of every `postgres` process on this machine.
fn postgres_cpu() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .map(|pid| cpu_seconds(&pid))
        .sum()
}

/// The machine's busy and total CPU time so far (`/proc/stat`, in ticks of all cores).
fn machine_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else {
        return (0.0, 0.0);
    };
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: f64 = ticks.iter().sum();
    // idle and iowait are the 4th and 5th.
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    (total - idle, total)
}

/// Cores of the machine.
fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

/// The database's committed transactions so far.
fn commits(admin: &mut Option<postgres::Client>) -> i64 {
    admin
        .as_mut()
        .and_then(|c| {
            c.query_one(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
                &[],
            )
            .ok()
        })
        .map_or(0, |r| r.get(0))
}

fn open(
    config: &Config,
    worker: usize,
    dir: &std::path::Path,
) -> Result<Box<dyn Store + Send>, chord::store::Error> {
    let durability = match config.group {
        None => Durability::EveryAppend,
        Some((max_batches, ms)) => Durability::Grouped {
            max_batches: max_batches.max(1),
            max_delay: Duration::from_millis(ms),
        },
    };
    Ok(match config.store.as_str() {
        "jsonl" => Box::new(JsonlStore::open(
            dir.join(format!("worker{worker}.jsonl")),
            durability,
        )?),
        _ => Box::new(PostgresStore::open(&config.db, durability)?),
    })
}

/// One producer thread: its lanes, flushed on schedule until `end`.
fn produce(
    config: &Config,
    worker: usize,
    dir: &std::path::Path,
    ready: &Barrier,
    clock: mpsc::Receiver<(Instant, Instant)>,
    readers: &[mpsc::Sender<Delivery>],
) -> Result<u64, chord::store::Error> {
    let mine: Vec<usize> = (worker..config.lanes).step_by(config.workers).collect();
    // Before the clock starts: the store, and each lane's first flush, its base (its address
    // created). The barrier is passed whatever happens, so that no thread waits for ever.
    let setup = (|| {
        let mut writer = LogWriter::new(open(config, worker, dir)?, Checkpoint::Never);
        let mut lanes: Vec<(Address, Tracker<Lane>)> = Vec::new();
        for &lane in &mine {
            let address = Address::new("capacity", format!("lane{lane}"));
            let mut tracker = Tracker::new(Lane::default());
            advance(&mut tracker.state(), 0);
            let ops = tracker
                .flush()
                .map_err(|source| chord::store::Error::Flush {
                    address: address.clone(),
                    source,
                })?;
            writer.append(&address, &ops)?;
            let _ = readers[lane % readers.len()].send((lane, encode_again(&ops), None));
            lanes.push((address, tracker));
        }
        writer.sync()?;
        Ok::<_, chord::store::Error>((writer, lanes))
    })();
    ready.wait();
    let (mut writer, mut lanes) = setup?;
    let Ok((start, end)) = clock.recv() else {
        return Ok(0);
    };
    let period = Duration::from_secs_f64(1.0 / config.rate);
    let spacing = period.div_f64(config.lanes as f64);
    // Records appended and not yet durable (grouped), oldest first: (seq, lane, text, due).
    let mut waiting: Vec<(u64, usize, String, Instant)> = Vec::new();
    let mut flushes = 0;
    let deliver = |lane: usize, text: String, due: Instant| {
        let _ = readers[lane % readers.len()].send((lane, text, Some(due)));
    };
    for round in 0u64.. {
        for (k, &lane) in mine.iter().enumerate() {
            let due = start + period * round as u32 + spacing * lane as u32;
            if due >= end {
                return finish(&mut writer, waiting, flushes, deliver);
            }
            loop {
                let now = Instant::now();
                if now >= due {
                    break;
                }
                release(&writer, &mut waiting, &deliver);
                std::thread::sleep((due - now).min(Duration::from_millis(1)));
            }
            let (address, tracker) = &mut lanes[k];
            advance(&mut tracker.state(), round + 1);
            let ops = tracker
                .flush()
                .map_err(|source| chord::store::Error::Flush {
                    address: address.clone(),
                    source,
                })?;
            let Some(seq) = writer.append(address, &ops)? else {
                continue;
            };
            flushes += 1;
            let text = encode_again(&ops);
            waiting.push((seq, lane, text, due));
            release(&writer, &mut waiting, &deliver);
        }
    }
    Ok(flushes)
}

/// The text a reader decodes. The writer's own encoded text is not handed out by its API, so
/// readers get the ops encoded again on their own (a fresh encoder per batch): the decode and
/// apply work of the stored text, without reading the store back; the node's CPU includes
/// this second encode.
fn encode_again(ops: &[chord::Op]) -> String {
    chord::Encoder::new().encode(ops).to_json()
}

/// Hands durable records to the readers.
fn release(
    writer: &LogWriter<Box<dyn Store + Send>>,
    waiting: &mut Vec<(u64, usize, String, Instant)>,
    deliver: &impl Fn(usize, String, Instant),
) {
    if waiting.is_empty() {
        return;
    }
    let durable = writer.store().durable_seq().unwrap_or(0);
    let done = waiting.iter().take_while(|w| w.0 <= durable).count();
    for (_, lane, text, due) in waiting.drain(..done) {
        deliver(lane, text, due);
    }
}

fn finish(
    writer: &mut LogWriter<Box<dyn Store + Send>>,
    mut waiting: Vec<(u64, usize, String, Instant)>,
    flushes: u64,
    deliver: impl Fn(usize, String, Instant),
) -> Result<u64, chord::store::Error> {
    writer.sync()?;
    release(writer, &mut waiting, &deliver);
    Ok(flushes)
}

/// One reader thread: `readers` decoders and values per lane it serves; the latency of each.
fn read(rx: mpsc::Receiver<Delivery>, readers: usize) -> Vec<u32> {
    let mut lanes: HashMap<usize, Vec<(Decoder, Option<serde_json::Value>)>> = HashMap::new();
    let mut samples = Vec::new();
    for (lane, text, due) in rx {
        let readers = lanes
            .entry(lane)
            .or_insert_with(|| (0..readers).map(|_| (Decoder::new(), None)).collect());
        for (decoder, doc) in readers.iter_mut() {
            // A decoder per batch text: each text was encoded on its own (see `encode_again`).
            *decoder = Decoder::new();
            let ops = decoder.decode_str(&text).expect("decodes");
            chord::apply(doc, &ops).expect("applies");
            if let Some(due) = due {
                samples.push(due.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
        }
    }
    samples
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let config = config(&args)?;
    let dir = tempfile::tempdir()?;
    // The measuring connection: the URL without chord's own `schema` parameter.
    let (base, query) = config.db.split_once('?').unwrap_or((&config.db, ""));
    let mut schema = "public".to_owned();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("schema=") {
            Some(name) => schema = name.to_owned(),
            None => rest.push(pair),
        }
    }
    let admin_url = match rest.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", rest.join("&")),
    };
    let mut admin = match config.store.as_str() {
        "jsonl" => None,
        _ => Some(postgres::Client::connect(&admin_url, postgres::NoTls)?),
    };
    if let Some(admin) = &mut admin {
        // A fresh schema each run.
        admin.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))?;
    }
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..2).map(|_| mpsc::channel()).unzip();
    let readers = config.readers;
    let reading: Vec<_> = receivers
        .into_iter()
        .map(|rx| std::thread::spawn(move || read(rx, readers)))
        .collect();
    // Stores open before the clock starts; the first flush of each lane is its base.
    let ready = Arc::new(Barrier::new(config.workers + 1));
    let mut clocks = Vec::new();
    let producers: Vec<_> = (0..config.workers)
        .map(|w| {
            let (config, dir, senders) =
                (config.clone(), dir.path().to_path_buf(), senders.clone());
            let ready = Arc::clone(&ready);
            let (clock, rx) = mpsc::channel();
            clocks.push(clock);
            std::thread::spawn(move || produce(&config, w, &dir, &ready, rx, &senders))
        })
        .collect();
    drop(senders);
    // Every store open and every lane's base stored: the clock starts.
    ready.wait();
    let start = Instant::now() + Duration::from_millis(100);
    let end = start + Duration::from_secs_f64(config.seconds);
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    let (cpu0, db0, commits0) = (cpu_seconds("self"), postgres_cpu(), commits(&mut admin));
    let machine0 = machine_cpu();
    for clock in clocks {
        let _ = clock.send((start, end));
    }
    // Measured at the end of the schedule, while the writers' server processes still live.
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let wall = start.elapsed().as_secs_f64();
    let (cpu1, db1, commits1) = (cpu_seconds("self"), postgres_cpu(), commits(&mut admin));
    let machine1 = machine_cpu();
    let mut flushes = 0;
    for p in producers {
        flushes += p.join().map_err(|_| "a producer panicked")??;
    }
    let mut samples: Vec<u32> = Vec::new();
    for r in reading {
        samples.extend(r.join().map_err(|_| "a reader panicked")?);
    }
    samples.sort_unstable();
    let q = |p: f64| {
        samples
            .get(((samples.len().saturating_sub(1)) as f64 * p).round() as usize)
            .map_or(f64::NAN, |&us| f64::from(us) / 1000.0)
    };
    let target = (config.lanes as f64 * config.rate * config.seconds).round() as u64;
    let group = config.group.map_or_else(
        || "every_append".to_owned(),
        |(n, ms)| format!("grouped:{n}:{ms}"),
    );
    print!(
        "store={} durability={group} lanes={} rate={} readers={} workers={} seconds={} \
         flushes={flushes} target={target} p50_ms={:.1} p99_ms={:.1} max_ms={:.1} node_cpu={:.2} \
         machine_cpu={:.2}",
        config.store,
        config.lanes,
        config.rate,
        config.readers,
        config.workers,
        config.seconds,
        q(0.5),
        q(0.99),
        q(1.0),
        (cpu1 - cpu0) / wall,
        (machine1.0 - machine0.0) / (machine1.1 - machine0.1).max(1e-9) * cores(),
    );
    if admin.is_some() {
        print!(
            " db_cpu={:.2} commits_s={:.0}",
            (db1 - db0) / wall,
            (commits1 - commits0) as f64 / wall
        );
    }
    println!();
    Ok(())
}
