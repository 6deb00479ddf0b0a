//! Storage benchmarks.
//!
//! - `append/<backend>/<durability>`: one small delta batch appended per iteration, for the
//!   JSONL, SQLite and PostgreSQL backends under both durability policies.
//! - `recover/<backend>/<records>`: recovering one value from a history of 10,000 and 100,000
//!   records with a base batch every 100: it replays at most 100 records either way, so the
//!   time must not grow with the history.
//! - `open/jsonl/<records>`: opening a JSONL log read-only, which reads the whole file once to
//!   build its index (so this one does grow with the file).
//!
//! - after the criterion groups, a table of single-append latencies (p50, p99, max over 2,000
//!   appends) per backend and policy, and for grouped appends the time until the batch is
//!   durable (`durable_seq` reaches it).
//!
//! Run: `cargo bench -p chord-bench --features sqlite,postgres --bench store` (a backend whose
//! feature is off is skipped). Logs go to a temporary directory on the default temp disk;
//! PostgreSQL runs against `CHORD_TEST_POSTGRES_URL` (skipped when it is not set), each case in
//! a schema `chord_bench_*` of its own, dropped at the end.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use chord::store::{recover, Address, Checkpoint, Durability, JsonlStore, LogWriter, Store};
use chord::{path, Op};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use serde_json::json;

const GROUPED: Durability = Durability::Grouped {
    max_batches: 64,
    max_delay: Duration::from_millis(5),
};

fn policies() -> [(&'static str, Durability); 2] {
    [
        ("every_append", Durability::EveryAppend),
        ("grouped", GROUPED),
    ]
}

type Open = fn(&Path, Durability) -> Box<dyn Store>;

fn backends() -> Vec<(&'static str, Open)> {
    let mut out: Vec<(&'static str, Open)> = Vec::new();
    out.push(("jsonl", |dir, d| {
        Box::new(JsonlStore::open(dir.join("log.jsonl"), d).unwrap())
    }));
    #[cfg(feature = "sqlite")]
    out.push(("sqlite", |dir, d| {
        Box::new(chord::store::SqliteStore::open(dir.join("log.db"), d).unwrap())
    }));
    #[cfg(feature = "postgres")]
    if postgres_url().is_some() {
        out.push(("postgres", |dir, d| {
            let name = dir.file_name().unwrap().to_string_lossy();
            let schema = format!("chord_bench_{}", name.trim_start_matches('.'));
            let url = postgres_url().unwrap();
            let sep = if url.contains('?') { '&' } else { '?' };
            Box::new(
                chord::store::PostgresStore::open(&format!("{url}{sep}schema={schema}"), d)
                    .unwrap(),
            )
        }));
    }
    out
}

/// The server the PostgreSQL cases run against.
#[cfg(feature = "postgres")]
fn postgres_url() -> Option<String> {
    std::env::var("CHORD_TEST_POSTGRES_URL").ok()
}

/// Drops the schemas the PostgreSQL cases made.
fn drop_bench_schemas() {
    #[cfg(feature = "postgres")]
    if let Some(url) = postgres_url() {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let rows = client
            .query(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'chord\\_bench\\_%'",
                &[],
            )
            .unwrap();
        for row in rows {
            let name: String = row.get(0);
            client
                .batch_execute(&format!("DROP SCHEMA \"{name}\" CASCADE"))
                .unwrap();
        }
    }
}

/// p50, p99 and max of single appends, and for grouped appends the time until each is
/// durable: printed as a table after the criterion groups.
fn latencies() {
    const N: usize = 2_000;
    let address = Address::new("bench", "latency");
    println!("\nlatency of one append ({N} appends each; grouped: 64 batches or 5 ms)");
    println!(
        "{:<10} {:<13} {:>10} {:>10} {:>10} {:>14} {:>14}",
        "backend", "durability", "p50", "p99", "max", "durable p50", "durable p99"
    );
    for (backend, open) in backends() {
        for (policy, durability) in policies() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path(), durability);
            store
                .append(&address, r#"[["r",{"text":""}]]"#, Some("base"))
                .unwrap();
            store.sync().unwrap();
            let mut append = Vec::with_capacity(N);
            let mut durable = Vec::with_capacity(N);
            for _ in 0..N {
                let start = Instant::now();
                let seq = store
                    .append(&address, r#"[["a",["text"],"token "]]"#, None)
                    .unwrap();
                append.push(start.elapsed());
                if durability != Durability::EveryAppend {
                    // Waits for the group to reach the disk (at most about 5 ms).
                    while store.durable_seq() < Some(seq) {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    durable.push(start.elapsed());
                }
            }
            let q = |v: &mut Vec<Duration>, p: f64| -> String {
                if v.is_empty() {
                    return "-".into();
                }
                v.sort();
                let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
                format!("{:.1?}", v[i])
            };
            println!(
                "{:<10} {:<13} {:>10} {:>10} {:>10} {:>14} {:>14}",
                backend,
                policy,
                q(&mut append, 0.5),
                q(&mut append, 0.99),
                q(&mut append, 1.0),
                q(&mut durable, 0.5),
                q(&mut durable, 0.99),
            );
        }
    }
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    let address = Address::new("bench", "tokens");
    // What a streaming token append encodes to once its path has an id.
    let batch = r#"[["a",0,"token "]]"#;
    for (backend, open) in backends() {
        for (policy, durability) in policies() {
            let dir = tempfile::tempdir().unwrap();
            let mut store = open(dir.path(), durability);
            store
                .append(&address, r#"[["r",{"text":""}]]"#, Some("base"))
                .unwrap();
            store
                .append(&address, r##"[["#",0,["text"]],["a",0,"x"]]"##, None)
                .unwrap();
            group.bench_function(BenchmarkId::new(backend, policy), |b| {
                b.iter(|| store.append(&address, black_box(batch), None).unwrap());
            });
            store.sync().unwrap();
        }
    }
    group.finish();
}

/// Writes a rolling 4 KB text window of `records` batches, a base batch every 100.
fn history(store: Box<dyn Store>, records: usize) -> Box<dyn Store> {
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(100));
    let address = Address::new("bench", "window");
    let mut text = String::new();
    for i in 0..records {
        let chunk = format!("{i:>8} {}\n", "output ".repeat(12));
        text.push_str(&chunk);
        let cut = text.len().saturating_sub(4096);
        text.drain(..cut);
        let batch = if writer.wants_base(&address) {
            vec![Op::Replace(json!({ "out": text }))]
        } else {
            vec![
                Op::Truncate(path!["out"], cut),
                Op::Append(path!["out"], chunk),
            ]
        };
        writer.append(&address, &batch).unwrap();
    }
    writer.sync().unwrap();
    writer.into_store()
}

fn recovery(c: &mut Criterion) {
    let mut group = c.benchmark_group("recover");
    let address = Address::new("bench", "window");
    for (backend, open) in backends() {
        for records in [10_000, 100_000] {
            let dir = tempfile::tempdir().unwrap();
            let store = history(open(dir.path(), GROUPED), records);
            let replayed = chord::store::replay(&*store, &address, None).unwrap();
            assert!(replayed.batches <= 100);
            group.bench_function(BenchmarkId::new(backend, records), |b| {
                b.iter(|| recover(&*store, black_box(&address)).unwrap());
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("open");
    for records in [10_000, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        drop(history(backends()[0].1(dir.path(), GROUPED), records));
        let log = dir.path().join("log.jsonl");
        group.throughput(Throughput::Bytes(std::fs::metadata(&log).unwrap().len()));
        group.bench_function(BenchmarkId::new("jsonl", records), |b| {
            b.iter(|| JsonlStore::open_read_only(black_box(&log)).unwrap());
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = append, recovery
}

fn main() {
    drop_bench_schemas();
    benches();
    Criterion::default().configure_from_args().final_summary();
    // Only on a real run (`cargo bench`), not when `cargo test` checks the bench.
    if std::env::args().any(|a| a == "--bench") {
        latencies();
    }
    drop_bench_schemas();
}
