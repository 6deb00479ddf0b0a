//! A store that ends before what it acknowledged is an error at open, never an older state.
//!
//! A writer *process* appends under `Durability::EveryAppend`, printing each acknowledged seq,
//! and is killed with SIGKILL. Then the files it left are damaged the way a disk or a copy
//! can damage them without touching any record's checksum: the SQLite `-wal` file gets a bit
//! flipped or is cut short (SQLite then drops the damaged frame and every later one), a JSONL
//! log loses bytes or lines off its end. Every such trial must fail with
//! `Error::RolledBack` naming the acknowledged seq, and the undamaged files must open with
//! every acknowledged record.

#![cfg(unix)]

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use chord::store::{Address, Durability, Error, JsonlStore, Store, BASE};

/// Records the writer appends before it is killed.
const RECORDS: u64 = 60;

fn address() -> Address {
    Address::new("lanes", "main")
}

/// The writer process (not a test: it does nothing unless `CHORD_ROLLBACK_STORE` is set).
#[test]
#[ignore = "the writer process of the tests below, started by them"]
fn rollback_writer() {
    let Some(path) = std::env::var_os("CHORD_ROLLBACK_STORE") else {
        return;
    };
    let mut store: Box<dyn Store> = match std::env::var("CHORD_ROLLBACK_KIND").as_deref() {
        #[cfg(feature = "sqlite")]
        Ok("sqlite") => {
            Box::new(chord::store::SqliteStore::open(&path, Durability::EveryAppend).unwrap())
        }
        _ => Box::new(JsonlStore::open(&path, Durability::EveryAppend).unwrap()),
    };
    let a = address();
    let seq = store.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
    println!("acked {seq}");
    for n in 1..RECORDS {
        let seq = store
            .append(&a, &format!(r#"[["s",["n"],{n}]]"#), None)
            .unwrap();
        println!("acked {seq}");
    }
    println!("done");
    // Wait to be killed, holding the store open: nothing is closed cleanly.
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// The writer process, killed when dropped so that a failing check never leaves it running.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the writer on `path` until it has appended every record, SIGKILLs it, and returns the
/// last seq it printed as acknowledged.
fn write_and_kill(path: &Path, kind: &str) -> u64 {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "rollback_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CHORD_ROLLBACK_STORE", path)
        .env("CHORD_ROLLBACK_KIND", kind)
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Writer(child);
    let stdout = child.0.stdout.take().unwrap();
    let mut acked = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(seq) = line.split("acked ").nth(1) {
            acked = Some(seq.trim().parse::<u64>().unwrap());
        }
        if line.ends_with("done") {
            break;
        }
    }
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    acked.expect("the writer acknowledged nothing")
}

/// A small deterministic generator (the SQLite trials').
#[cfg(feature = "sqlite")]
struct Rng(u64);

#[cfg(feature = "sqlite")]
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The files of a store at `path` as the killed writer left them, to restore before each
/// trial: the store's own file, its mark and (SQLite) its `-wal`.
struct Files {
    path: PathBuf,
    saved: Vec<(PathBuf, Vec<u8>)>,
}

impl Files {
    fn save(path: &Path, suffixes: &[&str]) -> Files {
        let saved = suffixes
            .iter()
            .map(|s| {
                let file = PathBuf::from(format!("{}{s}", path.display()));
                let bytes = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                (file, bytes)
            })
            .collect();
        Files {
            path: path.to_path_buf(),
            saved,
        }
    }

    fn bytes(&self, suffix: &str) -> &[u8] {
        let name = format!("{}{suffix}", self.path.display());
        let (_, bytes) = self
            .saved
            .iter()
            .find(|(p, _)| p.to_str() == Some(&name))
            .unwrap();
        bytes
    }

    /// Writes every saved file back, `suffix`'s replaced by `damaged`, and removes SQLite's
    /// shared-memory index (rebuilt from the `-wal` at open).
    fn restore(&self, suffix: &str, damaged: &[u8]) {
        let name = format!("{}{suffix}", self.path.display());
        for (file, bytes) in &self.saved {
            let bytes = if file.to_str() == Some(&name) {
                damaged
            } else {
                bytes
            };
            fs::write(file, bytes).unwrap();
        }
        let _ = fs::remove_file(format!("{}-shm", self.path.display()));
    }
}

/// Checks that `opened` is the rolled-back error for a store that acknowledged `acked`, and
/// returns the seq it found.
fn rolled_back<T: std::fmt::Debug>(
    opened: Result<T, Error>,
    path: &Path,
    acked: u64,
    trial: &str,
) -> Option<u64> {
    match opened {
        Err(
            ref err @ Error::RolledBack {
                acknowledged,
                found,
                ..
            },
        ) => {
            assert_eq!(acknowledged, acked, "{trial}: {err}");
            assert!(found.is_none_or(|f| f < acked), "{trial}: {err}");
            let text = err.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(
                text.contains(&format!("seq {acked} was acknowledged")),
                "{text}"
            );
            found
        }
        other => panic!("{trial}: expected RolledBack, got {other:?}"),
    }
}

#[cfg(feature = "sqlite")]
#[test]
fn damage_to_the_sqlite_wal_after_a_kill_is_an_error_at_open() {
    use chord::store::{recover, SqliteStore};
    use serde_json::json;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let acked = write_and_kill(&path, "sqlite");
    assert_eq!(acked, RECORDS, "one seq per record from 1");
    let files = Files::save(&path, &["", "-wal", "-ack"]);
    let wal = files.bytes("-wal").to_vec();
    assert!(wal.len() > 32 * 1024, "the appends are in the WAL");

    // Undamaged, the store opens with every acknowledged record.
    files.restore("-wal", &wal);
    {
        let db = SqliteStore::open(&path, Durability::EveryAppend).unwrap();
        assert_eq!(db.durable_seq(), Some(acked));
        let n = RECORDS - 1;
        assert_eq!(recover(&db, &address()).unwrap(), Some(json!({ "n": n })));
    }

    // `CHORD_TRIALS=n` runs more (or fewer) trials of each kind.
    let trials: usize = std::env::var("CHORD_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut found = Vec::new();
    for t in 0..trials {
        let bit = rng.below(wal.len() * 8);
        let mut damaged = wal.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        files.restore("-wal", &damaged);
        let trial = format!("flip {t}: byte {} bit {}", bit / 8, bit % 8);
        let opened = SqliteStore::open(&path, Durability::EveryAppend);
        found.push(rolled_back(opened, &path, acked, &trial));
    }
    for t in 0..trials {
        let len = rng.below(wal.len());
        files.restore("-wal", &wal[..len]);
        let trial = format!("cut {t}: to {len} of {} bytes", wal.len());
        let opened = SqliteStore::open(&path, Durability::EveryAppend);
        found.push(rolled_back(opened, &path, acked, &trial));
    }
    let highest = found.iter().flatten().max();
    println!(
        "{} trials, each RolledBack (acknowledged {acked}, highest found {highest:?})",
        found.len()
    );
}

#[test]
fn a_jsonl_log_cut_at_its_end_after_a_kill_is_an_error_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let acked = write_and_kill(&path, "jsonl");
    let files = Files::save(&path, &["", "-ack"]);
    let log = files.bytes("").to_vec();
    let lines: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();

    files.restore("", &log);
    {
        let store = JsonlStore::open_read_only(&path).unwrap();
        assert_eq!(store.durable_seq(), Some(acked));
    }

    // Only the final `\n` gone: the record is complete and verifies, so it is kept.
    files.restore("", &log[..log.len() - 1]);
    {
        let store = JsonlStore::open_read_only(&path).unwrap();
        assert_eq!(store.durable_seq(), Some(acked));
    }

    // Every other cut inside the last line (a torn tail, or the whole line at its boundary),
    // and whole lines off the end.
    let last_start = lines[lines.len() - 2];
    let mut cuts: Vec<usize> = (last_start..log.len() - 1).collect();
    cuts.extend(lines[lines.len() - 6..lines.len() - 2].iter().copied());
    let mut trials = 0;
    for &len in &cuts {
        for writer in [false, true] {
            files.restore("", &log[..len]);
            let trial = format!("cut to {len} of {} bytes (writer: {writer})", log.len());
            let found = if writer {
                rolled_back(
                    JsonlStore::open(&path, Durability::EveryAppend),
                    &path,
                    acked,
                    &trial,
                )
            } else {
                rolled_back(JsonlStore::open_read_only(&path), &path, acked, &trial)
            };
            assert!(found.is_some(), "{trial}");
            assert_eq!(fs::read(&path).unwrap(), &log[..len], "{trial}: changed");
            trials += 1;
        }
    }
    println!("{trials} trials, each RolledBack (acknowledged {acked})");
}

/// The mark is written only after the store's flush, so a writer that appended and was
/// killed leaves a store that opens: no false alarm, and a mark that follows the store.
#[test]
fn an_undamaged_store_reopens_after_every_kill_and_the_mark_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let acked = write_and_kill(&path, "jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(store.durable_seq(), Some(acked));
    let seq = store
        .append(&address(), r#"[["s",["n"],-1]]"#, None)
        .unwrap();
    drop(store);
    // Cut that record off again: the reopened store ends before what it acknowledged.
    let log = fs::read(&path).unwrap();
    let end = log[..log.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    fs::write(&path, &log[..end]).unwrap();
    let found = rolled_back(
        JsonlStore::open_read_only(&path),
        &path,
        seq,
        "after a reopen",
    );
    assert_eq!(found, Some(acked));
    // Deleting the mark accepts the store as it is.
    fs::remove_file(format!("{}-ack", path.display())).unwrap();
    let store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(store.durable_seq(), Some(acked));
}

/// A damaged mark is an error, never a mark of a different seq.
#[test]
fn a_damaged_mark_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    store
        .append(&address(), r#"[["r",{}]]"#, Some(BASE))
        .unwrap();
    drop(store);
    let mark = PathBuf::from(format!("{}-ack", path.display()));
    let bytes = fs::read(&mark).unwrap();
    for bit in 0..bytes.len() * 8 {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        fs::write(&mark, &damaged).unwrap();
        match JsonlStore::open_read_only(&path) {
            Err(Error::CorruptMark { path: p, .. }) => assert_eq!(p, mark),
            other => panic!("bit {bit}: expected CorruptMark, got {other:?}"),
        }
    }
}

/// Compaction rewrites a JSONL log into a new file; the mark goes on with the new file.
#[test]
fn the_mark_goes_on_across_a_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let a = address();
    let mut store = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    for n in 0..3 {
        store
            .append(&a, &format!(r#"[["r",{{"n":{n}}}]]"#), Some(BASE))
            .unwrap();
        store.append(&a, r#"[["s",["n"],9]]"#, None).unwrap();
    }
    assert_eq!(store.compact(&a, 1).unwrap().removed, 4);
    let last = store.append(&a, r#"[["s",["n"],10]]"#, None).unwrap();
    drop(store);
    let log = fs::read(&path).unwrap();
    let end = log[..log.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    fs::write(&path, &log[..end]).unwrap();
    let found = rolled_back(JsonlStore::open_read_only(&path), &path, last, "compacted");
    assert_eq!(found, Some(last - 1));
}
