//! Physical compaction (`Store::compact`) for every backend: exactly the records before the
//! `n`-th newest base of one address go, with nothing else touched; seqs stay and are never
//! reused; appends and recovery go on; reopening reads back the same records. Then what only
//! the JSONL file has: its size, its chain re-verified, a crash at each step of the rewrite
//! (a stale temp file, the rename not done), the writer's lock carried to the new file, and
//! damage found on the way never rechained into a valid-looking file. A proptest runs random
//! appends and compactions against a model, reopening in between.
//!
//! PostgreSQL (feature `postgres`) runs when `CHORD_TEST_POSTGRES_URL` names a server (see
//! `support/postgres.rs`): each test works in a fresh schema.

use std::collections::BTreeMap;
use std::path::Path;

use chord::store::{
    recover, Address, Compacted, Durability, Error, JsonlStore, ReadOptions, Record, Store, BASE,
};
use proptest::prelude::*;

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

#[path = "support/backends.rs"]
mod backends;

#[cfg(feature = "postgres")]
use backends::POSTGRES;
#[cfg(feature = "sqlite")]
use backends::SQLITE;
use backends::{Backend, JSONL, LAZY};

/// Every record of `address`, oldest first, paging through three at a time.
fn all(store: &dyn Store, address: &Address) -> Vec<Record> {
    paged(store, address, ReadOptions::asc().limit(3))
}

/// Every record of `address` in the order and pages `options` say.
fn paged(store: &dyn Store, address: &Address, options: ReadOptions) -> Vec<Record> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .read_list(address, &options.clone().cursor(cursor))
            .expect("read");
        out.extend(page.records);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn base(n: u64) -> String {
    format!(r#"[["r",{{"n":{n},"log":""}}]]"#)
}

fn set(n: u64) -> String {
    format!(r#"[["s",["n"],{n}]]"#)
}

/// The expected lists, as appended.
type Model = BTreeMap<Address, Vec<Record>>;

fn append(store: &mut dyn Store, model: &mut Model, address: &Address, is_base: bool, n: u64) {
    let (batch, tag) = if is_base {
        (base(n), Some(BASE))
    } else {
        (set(n), None)
    };
    let seq = store.append(address, &batch, tag).expect("append");
    model.entry(address.clone()).or_default().push(Record {
        seq,
        batch,
        tag: tag.map(str::to_owned),
    });
}

/// What the model says compaction keeps: (removed, oldest kept).
fn model_compact(model: &mut Model, address: &Address, keep: usize) -> Compacted {
    let Some(list) = model.get_mut(address) else {
        return Compacted::default();
    };
    let bases: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].tag.as_deref() == Some(BASE))
        .collect();
    let Some(first) = bases.len().checked_sub(keep) else {
        return Compacted::default();
    };
    let cut = bases[first];
    let oldest_kept = Some(list[cut].seq);
    list.drain(..cut);
    Compacted {
        removed: cut as u64,
        oldest_kept,
    }
}

fn lanes() -> (Address, Address) {
    (Address::new("lanes", "a"), Address::new("lanes", "b"))
}

/// Two addresses interleaved; `a`: B s s B s B s s B s (4 bases), `b`: B s B s s.
fn fill(store: &mut dyn Store, model: &mut Model) {
    let (a, b) = lanes();
    let plan_a = [
        true, false, false, true, false, true, false, false, true, false,
    ];
    let plan_b = [true, false, true, false, false];
    for (i, &is_base) in plan_a.iter().enumerate() {
        append(store, model, &a, is_base, i as u64);
        if let Some(&is_base) = plan_b.get(i) {
            append(store, model, &b, is_base, 100 + i as u64);
        }
    }
}

fn removes_exactly_before_the_nth_newest_base(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let mut model = Model::new();
    fill(&mut *store, &mut model);
    let (a, b) = lanes();
    let b_before = all(&*store, &b);

    // `a` has 4 bases: keeping 2 removes B s s B s (5 records); its 3rd base is kept.
    let done = store.compact(&a, 2).expect("compact");
    assert_eq!(done, model_compact(&mut model, &a, 2));
    assert_eq!(done.removed, 5);
    assert_eq!(all(&*store, &a), model[&a]);
    assert_eq!(all(&*store, &a).len(), 5);
    assert_eq!(all(&*store, &a)[0].tag.as_deref(), Some(BASE));
    let mut desc = paged(&*store, &a, ReadOptions::desc().limit(2));
    desc.reverse();
    assert_eq!(desc, model[&a]);
    assert_eq!(all(&*store, &b), b_before, "another address is untouched");

    // Again with the same retention: nothing more to remove.
    let again = store.compact(&a, 2).expect("compact");
    assert_eq!((again.removed, again.oldest_kept), (0, done.oldest_kept));
    // More bases asked for than there are: nothing removed, no oldest kept.
    assert_eq!(store.compact(&a, 3).unwrap(), Compacted::default());
    assert_eq!(store.compact(&a, 30).unwrap(), Compacted::default());
    assert_eq!(all(&*store, &a), model[&a]);
    // An address with no records, and a request to keep no base.
    let none = Address::new("lanes", "none");
    assert_eq!(store.compact(&none, 1).unwrap(), Compacted::default());
    assert!(matches!(
        store.compact(&a, 0),
        Err(Error::KeepsNoBase { address }) if address == a
    ));
    assert_eq!(all(&*store, &a), model[&a]);

    // Keeping 1: down to the newest base and what follows it.
    let done = store.compact(&a, 1).expect("compact");
    assert_eq!(done, model_compact(&mut model, &a, 1));
    assert_eq!((done.removed, all(&*store, &a).len()), (3, 2));
    assert_eq!(all(&*store, &a), model[&a]);
    assert_eq!(store.addresses().unwrap(), vec![a.clone(), b.clone()]);
}

fn appends_continue_and_recovery_is_unchanged(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let mut model = Model::new();
    fill(&mut *store, &mut model);
    let (a, b) = lanes();
    let before = (recover(&*store, &a).unwrap(), recover(&*store, &b).unwrap());
    let newest = model.values().flatten().map(|r| r.seq).max().unwrap();

    model_compact(&mut model, &a, 1);
    model_compact(&mut model, &b, 1);
    store.compact(&a, 1).unwrap();
    store.compact(&b, 1).unwrap();
    assert_eq!(
        (recover(&*store, &a).unwrap(), recover(&*store, &b).unwrap()),
        before
    );
    append(&mut *store, &mut model, &a, false, 7);
    let seq = model[&a].last().unwrap().seq;
    assert!(
        seq > newest,
        "seq {seq} after compaction, newest before {newest}"
    );
    drop(store);

    let mut store = backend.open(dir.path());
    assert_eq!(all(&*store, &a), model[&a]);
    assert_eq!(all(&*store, &b), model[&b]);
    append(&mut *store, &mut model, &b, true, 8);
    assert!(model[&b].last().unwrap().seq > seq);
    assert_eq!(
        recover(&*store, &a).unwrap(),
        Some(serde_json::json!({"n": 7, "log": ""}))
    );
    assert_eq!(
        recover(&*store, &b).unwrap(),
        Some(serde_json::json!({"n": 8, "log": ""}))
    );
}

fn grouped_compaction_is_durable_and_seqs_are_not_reused(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open_with(dir.path(), LAZY);
    let mut model = Model::new();
    fill(&mut *store, &mut model);
    let (a, _) = lanes();
    let newest = model.values().flatten().map(|r| r.seq).max().unwrap();
    store.compact(&a, 2).unwrap();
    model_compact(&mut model, &a, 2);
    assert_eq!(store.durable_seq(), Some(newest), "compaction syncs first");
    assert_eq!(all(&*store, &a), model[&a]);
    drop(store);
    let mut store = backend.open_with(dir.path(), LAZY);
    assert_eq!(all(&*store, &a), model[&a]);
    let seq = store.append(&a, &set(1), None).unwrap();
    assert!(seq > newest);
}

macro_rules! suite {
    ($backend:ident) => {
        suite!(
            $backend:
            removes_exactly_before_the_nth_newest_base,
            appends_continue_and_recovery_is_unchanged,
            grouped_compaction_is_durable_and_seqs_are_not_reused,
        );
    };
    ($backend:ident: $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                if (super::$backend.available)() {
                    super::$case(&super::$backend);
                }
            }
        )*
    };
}

mod jsonl {
    suite!(JSONL);
}

#[cfg(feature = "sqlite")]
mod sqlite {
    suite!(SQLITE);
}

#[cfg(feature = "postgres")]
mod postgres {
    suite!(POSTGRES);
}

/// The rows of each address in the SQLite file, counted by hand.
#[cfg(feature = "sqlite")]
#[test]
fn sqlite_rows_are_deleted_and_the_oldest_kept_is_unlinked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let mut store = chord::store::SqliteStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, _) = lanes();
    let done = store.compact(&a, 2).unwrap();
    let kept = done.oldest_kept.unwrap();
    drop(store);
    let db = rusqlite::Connection::open(&path).unwrap();
    let count = |id: i64| -> i64 {
        db.query_row(
            "SELECT count(*) FROM chord_records WHERE address = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!((count(1), count(2)), (5, 5));
    let (min, prev): (i64, i64) = db
        .query_row(
            "SELECT seq, prev FROM chord_records WHERE address = 1 ORDER BY seq LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((min as u64, prev), (kept, 0));
}

/// The rows of each address in the PostgreSQL schema, counted by hand; a reader on another
/// connection reads the compacted list, checked.
#[cfg(feature = "postgres")]
#[test]
fn postgres_rows_are_deleted_and_other_nodes_read_the_rest() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema("compactrows");
    let url = pg::schema_url(&schema);
    let mut store = chord::store::PostgresStore::open(&url, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, b) = lanes();
    let done = store.compact(&a, 2).unwrap();
    model_compact(&mut model, &a, 2);
    let reader = chord::store::PostgresStore::open_read_only(&url).unwrap();
    assert_eq!(all(&reader, &a), model[&a]);
    assert_eq!(all(&reader, &b), model[&b]);
    let mut client = pg::client();
    let rows: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM \"{schema}\".chord_records r
                 JOIN \"{schema}\".chord_addresses a ON a.id = r.address
                 WHERE a.key = 'a'"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 5);
    let (min, prev): (i64, i64) = {
        let row = client
            .query_one(
                &format!(
                    "SELECT r.seq, r.prev FROM \"{schema}\".chord_records r
                     JOIN \"{schema}\".chord_addresses a ON a.id = r.address
                     WHERE a.key = 'a' ORDER BY r.seq LIMIT 1"
                ),
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((min as u64, prev), (done.oldest_kept.unwrap(), 0));
    // A read-only store cannot compact.
    let mut reader = reader;
    assert!(matches!(reader.compact(&a, 1), Err(Error::ReadOnly { .. })));
}

fn temp_of(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".compact");
    path.with_file_name(name)
}

#[test]
fn jsonl_file_shrinks_and_its_chain_verifies_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, b) = lanes();
    let size = std::fs::metadata(&path).unwrap().len();
    let removed_bytes: u64 = {
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = model_compact(&mut model.clone(), &a, 2)
            .oldest_kept
            .unwrap();
        text.lines()
            .filter(|l| l.contains("\"a\":0,") && seq_of(l).is_some_and(|s| s < cut))
            .map(|l| l.len() as u64 + 1)
            .sum()
    };
    store.compact(&a, 2).unwrap();
    model_compact(&mut model, &a, 2);
    assert_eq!(store.size(), size - removed_bytes);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        size - removed_bytes
    );
    assert_eq!(store.count(&a), 5);
    assert!(!temp_of(&path).exists());

    // The lock went with the new file: a second writer is still refused.
    assert!(matches!(
        JsonlStore::open(&path, Durability::EveryAppend),
        Err(Error::Locked { .. })
    ));
    // A reader verifies the whole chain of the new file.
    let reader = JsonlStore::open_read_only(&path).unwrap();
    assert_eq!(all(&reader, &a), model[&a]);
    assert_eq!(all(&reader, &b), model[&b]);
    assert_eq!(reader.len(), 10);
    drop(store);
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(all(&store, &a), model[&a]);
}

/// The seq of a record line.
fn seq_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("{\"s\":")?;
    rest[..rest.find(',')?].parse().ok()
}

#[test]
fn jsonl_crash_before_the_rename_keeps_the_old_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, b) = lanes();
    drop(store);
    let old = std::fs::read(&path).unwrap();
    // The new file as the compaction writes it: take it from a real compaction.
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    store.compact(&a, 2).unwrap();
    drop(store);
    let new = std::fs::read(&path).unwrap();
    assert!(new.len() < old.len());

    // Crashed after the temp file was complete, before the rename: the old log, whole.
    std::fs::write(&path, &old).unwrap();
    std::fs::write(temp_of(&path), &new).unwrap();
    let reader = JsonlStore::open_read_only(&path).unwrap();
    assert_eq!(
        all(&reader, &a),
        model[&a],
        "a reader ignores the temp file"
    );
    assert!(temp_of(&path).exists(), "and leaves it alone");
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(all(&store, &a), model[&a]);
    assert_eq!(all(&store, &b), model[&b]);
    assert!(
        !temp_of(&path).exists(),
        "a writer removes the stale temp file"
    );
    drop(store);

    // Crashed halfway through writing the temp file: the same.
    std::fs::write(temp_of(&path), &new[..new.len() / 2]).unwrap();
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert!(!temp_of(&path).exists());
    assert_eq!(all(&store, &a), model[&a]);
    // And a compaction after that one works (no temp file in the way).
    store.compact(&a, 2).unwrap();
    drop(store);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        new,
        "the same bytes as the first time"
    );

    // Crashed after the rename: the new log, whole (the temp name no longer exists).
    model_compact(&mut model, &a, 2);
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(all(&store, &a), model[&a]);
    assert_eq!(all(&store, &b), model[&b]);
}

#[test]
fn jsonl_reader_opened_before_compaction_keeps_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, _) = lanes();
    let reader = JsonlStore::open_read_only(&path).unwrap();
    store.compact(&a, 1).unwrap();
    assert_eq!(all(&reader, &a), model[&a], "it reads the file it opened");
    model_compact(&mut model, &a, 1);
    assert_eq!(all(&store, &a), model[&a]);
}

#[test]
fn jsonl_damage_is_never_rechained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let (a, b) = lanes();
    // Damage a record of `b` (kept by a compaction of `a`) behind the store's back.
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen("\"n\":102", "\"n\":902", 1);
    assert_ne!(damaged, text);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, damaged.as_bytes()))
        .unwrap();
    let err = store.compact(&a, 2).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        damaged,
        "nothing rewritten"
    );
    assert!(!temp_of(&path).exists());
    assert_eq!(all(&store, &a), model[&a], "the store goes on as before");
    drop(store);
    assert!(matches!(
        JsonlStore::open_read_only(&path),
        Err(Error::Corrupt { .. })
    ));
    let _ = b;
}

#[test]
fn jsonl_read_only_store_cannot_compact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    let mut model = Model::new();
    fill(&mut store, &mut model);
    let mut reader = JsonlStore::open_read_only(&path).unwrap();
    assert!(matches!(
        reader.compact(&lanes().0, 1),
        Err(Error::ReadOnly { .. })
    ));
}

/// One step of the proptest: an append (address, base or not) or a compaction.
#[derive(Clone, Debug)]
enum Step {
    Append { address: u8, base: bool },
    Compact { address: u8, keep: usize },
    Reopen,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..3u8, prop::bool::weighted(0.3))
            .prop_map(|(address, base)| Step::Append { address, base }),
        2 => (0..3u8, 1..4usize).prop_map(|(address, keep)| Step::Compact { address, keep }),
        1 => Just(Step::Reopen),
    ]
}

fn run_steps(backend: &Backend, steps: &[Step], durability: Durability) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open_with(dir.path(), durability);
    let mut model = Model::new();
    let addresses: Vec<Address> = (0..3).map(|i| Address::new("p", format!("k{i}"))).collect();
    let mut newest = 0;
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Append { address, base } => {
                let address = &addresses[*address as usize];
                // An address starts with a base, as a writer's does.
                let base = *base || !model.contains_key(address);
                append(&mut *store, &mut model, address, base, i as u64);
                let seq = model[address].last().unwrap().seq;
                assert!(seq > newest, "seq {seq} after {newest}");
                newest = seq;
            }
            Step::Compact { address, keep } => {
                let address = &addresses[*address as usize];
                let done = store.compact(address, *keep).expect("compact");
                assert_eq!(done, model_compact(&mut model, address, *keep));
            }
            Step::Reopen => {
                drop(store);
                store = backend.open_with(dir.path(), durability);
            }
        }
    }
    drop(store);
    let store = backend.open_with(dir.path(), durability);
    for address in &addresses {
        let expected = model.get(address).cloned().unwrap_or_default();
        assert_eq!(all(&*store, address), expected, "{address}");
        if !expected.is_empty() {
            assert!(recover(&*store, address).unwrap().is_some());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn jsonl_random_appends_and_compactions_read_back(
        steps in prop::collection::vec(step(), 1..60),
        grouped in any::<bool>(),
    ) {
        run_steps(&JSONL, &steps, if grouped { LAZY } else { Durability::EveryAppend });
    }
}

#[cfg(feature = "sqlite")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn sqlite_random_appends_and_compactions_read_back(
        steps in prop::collection::vec(step(), 1..60),
    ) {
        run_steps(&SQLITE, &steps, Durability::EveryAppend);
    }
}

/// The figures in the report: a JSONL log of about 100 MB compacted. Run with
/// `cargo test --release -p chord-delta --test store_compact -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement (about 100 MB of disk), not a check"]
fn measure_jsonl_compaction_of_a_100_mb_log() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let filler = "x".repeat(1000);
    for addresses in [1usize, 8] {
        let path = dir.path().join(format!("log-{addresses}.jsonl"));
        let mut store = JsonlStore::open(&path, LAZY).unwrap();
        let lanes: Vec<Address> = (0..addresses)
            .map(|i| Address::new("lanes", format!("k{i}")))
            .collect();
        // 100,000 records of about 1 KB, a base every 100 per address.
        let started = Instant::now();
        for i in 0..100_000usize {
            let lane = &lanes[i % addresses];
            let n = i / addresses;
            if n % 100 == 0 {
                let batch = format!(r#"[["r",{{"n":{n},"f":"{filler}"}}]]"#);
                store.append(lane, &batch, Some(BASE)).unwrap();
            } else {
                let batch = format!(r#"[["s",["f"],"{filler}{n}"]]"#);
                store.append(lane, &batch, None).unwrap();
            }
        }
        store.sync().unwrap();
        let appended = started.elapsed();
        let before = std::fs::metadata(&path).unwrap().len();
        let state = recover(&store, &lanes[0]).unwrap();
        let started = Instant::now();
        let done = store.compact(&lanes[0], 4).unwrap();
        let took = started.elapsed();
        let after = std::fs::metadata(&path).unwrap().len();
        assert_eq!(recover(&store, &lanes[0]).unwrap(), state);
        let started = Instant::now();
        let again = store.compact(&lanes[0], 4).unwrap();
        let noop = started.elapsed();
        assert_eq!(again.removed, 0);
        drop(store);
        let started = Instant::now();
        let reopened = JsonlStore::open_read_only(&path).unwrap();
        let reopen = started.elapsed();
        println!(
            "{addresses} address(es): appended 100000 records in {appended:.2?}; file {before} B; \
             compact(k0, 4) removed {} records in {took:.2?}; file {after} B; nothing to \
             remove: {noop:.2?}; reopen (verify) {reopen:.2?}, {} records",
            done.removed,
            reopened.len()
        );
    }
}

/// The SQLite figures in the report: 100,000 records of about 1 KB, one address, a base every
/// 100, compacted to the last 4 bases. Run with `cargo test --release -p chord-delta
/// --features sqlite --test store_compact -- --ignored --nocapture`.
#[cfg(feature = "sqlite")]
#[test]
#[ignore = "a measurement (about 100 MB of disk), not a check"]
fn measure_sqlite_compaction_of_100000_records() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let mut store = chord::store::SqliteStore::open(&path, LAZY).unwrap();
    let lane = Address::new("lanes", "k0");
    let filler = "x".repeat(1000);
    for n in 0..100_000usize {
        if n % 100 == 0 {
            let batch = format!(r#"[["r",{{"n":{n},"f":"{filler}"}}]]"#);
            store.append(&lane, &batch, Some(BASE)).unwrap();
        } else {
            let batch = format!(r#"[["s",["f"],"{filler}{n}"]]"#);
            store.append(&lane, &batch, None).unwrap();
        }
    }
    store.sync().unwrap();
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let wal = dir.path().join("log.db-wal");
    let before = (size(&path), size(&wal));
    let state = recover(&store, &lane).unwrap();
    let started = Instant::now();
    let done = store.compact(&lane, 4).unwrap();
    let took = started.elapsed();
    assert_eq!(recover(&store, &lane).unwrap(), state);
    let started = Instant::now();
    store.compact(&lane, 4).unwrap();
    let noop = started.elapsed();
    println!(
        "sqlite: compact(k0, 4) removed {} records in {took:.2?} (db, wal before: {before:?} B; \
         after: {:?} B); nothing to remove: {noop:.2?}",
        done.removed,
        (size(&path), size(&wal))
    );
}
