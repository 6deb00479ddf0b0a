//! Damage is never silent: every single-bit flip of a log, every deleted line, a damaged final
//! `\n`, logs of another format version, sequence numbers at the end of their range, huge and
//! endless lines, and paths that are not regular files. Whatever happens, opening and
//! recovering either fails with an error that says where and what, or returns exactly the
//! state that was acknowledged: never a different one.

#[path = "support/seal.rs"]
mod seal;

use seal::seal_lines;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chord::store::{
    recover, recover_at, Address, Checkpoint, Durability, Error, JsonlStore, LogWriter, Store,
    BASE, MAX_RECORD_BYTES,
};
use chord::{path, Op};
use serde_json::{json, Value};

/// Every address of a store and its recovered value: the state a log holds.
type Snapshot = Vec<(Address, Option<Value>)>;

fn snapshot(store: &dyn Store) -> Result<Snapshot, Error> {
    store
        .addresses()?
        .into_iter()
        .map(|a| {
            let value = recover(store, &a)?;
            Ok((a, value))
        })
        .collect()
}

/// A small log with three addresses, base batches, path ids, a lease line (grouped writer) and
/// non-ASCII text; returns its bytes.
fn build_log(path: &Path) -> Vec<u8> {
    let grouped = Durability::Grouped {
        max_batches: 1000,
        max_delay: Duration::from_secs(3600),
    };
    let store = JsonlStore::open(path, grouped).unwrap();
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(4));
    let names = ["main", "tool", "näme"];
    let mut texts = vec![String::new(); 3];
    for i in 0..20u64 {
        let k = (i as usize * 7 / 3) % 3;
        let address = Address::new("lanes", names[k]);
        let chunk = format!("w{i}·");
        texts[k].push_str(&chunk);
        let batch = if writer.wants_base(&address) {
            vec![Op::Replace(json!({ "text": texts[k], "n": i }))]
        } else {
            vec![
                Op::Append(path!["text"], chunk),
                Op::Set(path!["n"], i.into()),
            ]
        };
        writer.append(&address, &batch).unwrap();
    }
    drop(writer);
    fs::read(path).unwrap()
}

fn lines_of(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// Opens `path` both ways (read-only, then as a writer, which repairs) and checks that each
/// either fails or holds exactly `expected`. Returns how many of the two opened.
fn open_both(path: &Path, expected: &Snapshot, context: &str) -> usize {
    let mut opened = 0;
    for writer in [false, true] {
        let store = if writer {
            JsonlStore::open(path, Durability::EveryAppend)
        } else {
            JsonlStore::open_read_only(path)
        };
        let Ok(store) = store else { continue };
        match snapshot(&store) {
            Ok(state) => {
                assert_eq!(
                    &state, expected,
                    "{context}: a different state (writer: {writer})"
                );
                opened += 1;
            }
            Err(e) => assert!(
                matches!(e, Error::Corrupt { .. } | Error::Replay { .. }),
                "{context}: {e}"
            ),
        }
    }
    opened
}

/// The reported failure: single-bit flips gave silently wrong states. Now every flip of every
/// byte is an error, except a flip of the final `\n`, which keeps the (complete, verified)
/// record.
#[test]
fn every_single_bit_flip_is_an_error_or_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.jsonl");
    let bytes = build_log(&original);
    let expected = snapshot(&JsonlStore::open_read_only(&original).unwrap()).unwrap();
    assert_eq!(expected.len(), 3);
    let path = dir.path().join("log.jsonl");
    let mut same = Vec::new();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[i] ^= 1 << bit;
            fs::write(&path, &damaged).unwrap();
            let context = format!("byte {i} bit {bit}");
            // The writer's open (which repairs and flushes) on a sample; every flip read-only.
            let store = JsonlStore::open_read_only(&path);
            let opened = match store {
                Err(e) => {
                    // A flip of the header's version digit reads as another version.
                    assert!(
                        matches!(e, Error::Corrupt { .. } | Error::Version { .. }),
                        "{context}: {e}"
                    );
                    false
                }
                Ok(store) => match snapshot(&store) {
                    Ok(state) => {
                        assert_eq!(state, expected, "{context}: a different state");
                        true
                    }
                    Err(e) => panic!("{context}: opened, then failed: {e}"),
                },
            };
            if opened {
                same.push(i);
            }
            if i % 61 == 0 || opened {
                let both = open_both(&path, &expected, &context);
                assert_eq!(both > 0, opened, "{context}");
                if opened {
                    // The writer restored the terminator: the log is the original again.
                    assert_eq!(fs::read(&path).unwrap(), bytes, "{context}");
                }
            }
        }
    }
    // Only the eight flips of the last byte, the final `\n`, leave a log that opens.
    assert_eq!(same, vec![bytes.len() - 1; 8], "{} bytes", bytes.len());
}

/// The reported failure: deleting a line (a base, say) gave wrong states. Now a missing line
/// is an error at the line after it. Only the very last line can go unnoticed, as it must:
/// that is what an append that never happened looks like, and the log then holds exactly
/// the state before that append.
#[test]
fn every_deleted_line_is_an_error_except_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.jsonl");
    let bytes = build_log(&original);
    let full = JsonlStore::open_read_only(&original).unwrap();
    let lines = lines_of(&bytes);
    // The state before the last append: every address as of the seq before the last record.
    let last_seq = full.durable_seq().unwrap();
    let before_last: Snapshot = full
        .addresses()
        .unwrap()
        .into_iter()
        .map(|a| {
            let v = recover_at(&full, &a, last_seq - 1).unwrap();
            (a, v)
        })
        .collect();
    let path = dir.path().join("log.jsonl");
    for i in 0..lines.len() {
        let damaged: Vec<u8> = lines
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .flat_map(|(_, l)| l.iter().copied())
            .collect();
        fs::write(&path, &damaged).unwrap();
        if i + 1 == lines.len() {
            assert_eq!(open_both(&path, &before_last, "the last line"), 2);
            continue;
        }
        for result in [
            JsonlStore::open_read_only(&path),
            JsonlStore::open(&path, Durability::EveryAppend),
        ] {
            let err = result.unwrap_err();
            let Error::Corrupt { line, reason, .. } = &err else {
                panic!("line {}: {err}", i + 1)
            };
            // Reported where the gap is: at the line that now stands in its place.
            assert_eq!(*line, i as u64 + 1, "{err}");
            if i > 0 {
                assert!(reason.contains("checksum mismatch"), "{err}");
                assert!(reason.contains("missing"), "{err}");
            }
        }
        assert_eq!(
            fs::read(&path).unwrap(),
            damaged,
            "a failed open changes nothing"
        );
    }
}

/// The reported failure: flipping the final `\n` of an acknowledged, fsynced record made the
/// writer treat it as a torn tail and drop it silently.
#[test]
fn a_damaged_final_newline_keeps_the_record_and_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let bytes = build_log(&path);
    let expected = snapshot(&JsonlStore::open_read_only(&path).unwrap()).unwrap();
    let last_line = lines_of(&bytes).len() as u64;
    for bit in 0..8 {
        let mut damaged = bytes.clone();
        *damaged.last_mut().unwrap() ^= 1 << bit;
        fs::write(&path, &damaged).unwrap();
        let reader = JsonlStore::open_read_only(&path).unwrap();
        assert_eq!(reader.torn_tail(), None);
        assert_eq!(reader.unterminated_line(), Some(last_line));
        assert_eq!(snapshot(&reader).unwrap(), expected);
        assert_eq!(
            fs::read(&path).unwrap(),
            damaged,
            "a reader changes nothing"
        );
        let writer = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
        assert_eq!(writer.torn_tail(), None);
        assert_eq!(snapshot(&writer).unwrap(), expected);
        drop(writer);
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "bit {bit}: the `\\n` is restored"
        );
    }
    // A missing `\n` (a write that stopped just short of it) keeps the record too.
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let writer = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(snapshot(&writer).unwrap(), expected);
    drop(writer);
    assert_eq!(fs::read(&path).unwrap(), bytes);
    // A damaged `\n` followed by a torn write: two faults, and an error rather than a guess.
    let mut damaged = bytes.clone();
    *damaged.last_mut().unwrap() = b'#';
    damaged.extend_from_slice(b"{\"s\":99,\"a\":0,\"b\":[[\"a\",[\"te");
    fs::write(&path, &damaged).unwrap();
    let err = JsonlStore::open(&path, Durability::EveryAppend).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { line, .. } if *line == last_line),
        "{err}"
    );
    assert!(err.to_string().contains("terminator is damaged"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), damaged);
}

/// A log of another format version is refused with a clear error and left alone.
#[test]
fn other_format_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let v1 = "{\"chord\":1}\n{\"def\":0,\"ns\":\"n\",\"key\":\"k\"}\n{\"s\":1,\"a\":0,\"t\":\"base\",\"b\":[[\"r\",1]]}\n";
    let v3 = seal_lines(&["{\"chord\":3"]);
    for (text, found, age) in [(v1.to_owned(), 1, "an older"), (v3, 3, "a newer")] {
        fs::write(&path, &text).unwrap();
        for result in [
            JsonlStore::open(&path, Durability::EveryAppend),
            JsonlStore::open_read_only(&path),
        ] {
            let err = result.unwrap_err();
            assert!(
                matches!(err, Error::Version { found: f, supported: 2, .. } if f == found),
                "{err}"
            );
            let shown = err.to_string();
            assert!(
                shown.contains(&format!("format version {found} is not supported")),
                "{shown}"
            );
            assert!(shown.contains(age), "{shown}");
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
}

/// Writes `text` as the log at `path` in place of the one there: a different log, so the
/// acknowledged mark of the one it replaces goes with it.
fn replace_log(path: &Path, text: &[u8]) {
    fs::write(path, text).unwrap();
    let _ = fs::remove_file(format!("{}-ack", path.display()));
}

/// The reported failure: a seq or lease near `u64::MAX` overflowed (a debug panic; in release,
/// seq 0 handed out and a log that no longer opened).
#[test]
fn seqs_near_the_end_of_their_range_stop_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let a = Address::new("n", "k");
    let max = u64::MAX;
    let header = "{\"chord\":2";
    let def = "{\"def\":0,\"ns\":\"n\",\"key\":\"k\"";
    let record = |seq: u64| format!("{{\"s\":{seq},\"a\":0,\"t\":\"base\",\"b\":[[\"r\",0]]");
    let grouped = Durability::Grouped {
        max_batches: 1,
        max_delay: Duration::from_secs(3600),
    };

    // A record two before the end: one more append, then no seq is left.
    for durability in [Durability::EveryAppend, grouped] {
        replace_log(&path, seal_lines(&[header, def, &record(max - 1)]).as_ref());
        let mut log = JsonlStore::open(&path, durability).unwrap();
        assert_eq!(log.append(&a, "[[\"r\",1]]", Some(BASE)).unwrap(), max);
        let err = log.append(&a, "[[\"r\",2]]", Some(BASE)).unwrap_err();
        assert!(
            matches!(err, Error::SeqsExhausted { last: u64::MAX, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("no sequence number left"), "{err}");
        drop(log);
        let mut log = JsonlStore::open(&path, durability).unwrap();
        assert_eq!(recover(&log, &a).unwrap(), Some(json!(1)));
        assert_eq!(recover_at(&log, &a, max).unwrap(), Some(json!(1)));
        assert_eq!(recover_at(&log, &a, max - 1).unwrap(), Some(json!(0)));
        assert_eq!(log.durable_seq(), Some(max));
        assert!(matches!(
            log.append(&a, "[[\"r\",3]]", Some(BASE)),
            Err(Error::SeqsExhausted { .. })
        ));
    }

    // A lease at the very end (the three-line log of the report): opens, reads, refuses.
    let lease = format!("{{\"lease\":{max}");
    replace_log(&path, seal_lines(&[header, def, &lease]).as_ref());
    let log = JsonlStore::open_read_only(&path).unwrap();
    assert!(log.is_empty());
    let mut log = JsonlStore::open(&path, grouped).unwrap();
    assert!(matches!(
        log.append(&a, "[[\"r\",1]]", Some(BASE)),
        Err(Error::SeqsExhausted { .. })
    ));
    drop(log);
    // A lease that would run past the end is cut at it.
    replace_log(&path, seal_lines(&[header, def, &record(max - 3)]).as_ref());
    let mut log = JsonlStore::open(&path, grouped).unwrap();
    for seq in max - 2..=max {
        assert_eq!(log.append(&a, "[[\"r\",1]]", Some(BASE)).unwrap(), seq);
    }
    assert!(log.append(&a, "[[\"r\",1]]", Some(BASE)).is_err());
    drop(log);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("{{\"lease\":{max},")), "{text}");
    assert_eq!(
        recover(&JsonlStore::open_read_only(&path).unwrap(), &a).unwrap(),
        Some(json!(1))
    );
}

/// The reported failure: an unterminated final line was read whole into memory. Now a line
/// is never held past `MAX_RECORD_BYTES`: an unterminated longer one is a torn tail (no append
/// can write it, so it was never acknowledged), a terminated one is an error.
#[test]
fn an_endless_last_line_is_a_torn_tail_and_a_huge_line_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let bytes = build_log(&path);
    let expected = snapshot(&JsonlStore::open_read_only(&path).unwrap()).unwrap();
    let huge = 100 << 20;
    assert!(huge > MAX_RECORD_BYTES);
    {
        use std::io::Write;
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..huge >> 20 {
            file.write_all(&block).unwrap();
        }
    }
    let reader = JsonlStore::open_read_only(&path).unwrap();
    let torn = reader.torn_tail().unwrap();
    assert_eq!((torn.offset, torn.len), (bytes.len() as u64, huge as u64));
    assert_eq!(snapshot(&reader).unwrap(), expected);
    let writer = JsonlStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(writer.torn_tail(), Some(torn));
    drop(writer);
    assert_eq!(
        fs::read(&path).unwrap(),
        bytes,
        "cut back to the last complete line"
    );

    // The same line with a `\n`, followed by more: damage, reported by line.
    {
        use std::io::Write;
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        let block = vec![b'x'; 1 << 20];
        for _ in 0..(MAX_RECORD_BYTES >> 20) + 1 {
            file.write_all(&block).unwrap();
        }
        file.write_all(b"\n{}\n").unwrap();
    }
    let err = JsonlStore::open_read_only(&path).unwrap_err();
    let lines = lines_of(&bytes).len() as u64;
    assert!(
        matches!(&err, Error::Corrupt { line, .. } if *line == lines + 1),
        "{err}"
    );
    assert!(err.to_string().contains("a line holds at most"), "{err}");
}

/// Appends whose record would exceed `MAX_RECORD_BYTES` are refused, so every record a log
/// holds can be read back.
#[test]
fn records_longer_than_the_maximum_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let a = Address::new("n", "k");
    let text = "x".repeat(MAX_RECORD_BYTES);
    let batch = format!("[[\"r\",\"{text}\"]]");
    let err = log.append(&a, &batch, Some(BASE)).unwrap_err();
    assert!(
        matches!(err, Error::RecordTooLarge { size, bound: MAX_RECORD_BYTES, base: true, .. }
            if size == batch.len() + BASE.len()),
        "{err}"
    );
    assert!(log.is_empty());
    // Batch and tag exactly at the bound, but the line's own fields push it over.
    let batch = format!("[[\"r\",\"{}\"]]", &text[..MAX_RECORD_BYTES - 14]);
    assert_eq!(batch.len() + BASE.len(), MAX_RECORD_BYTES);
    let err = log.append(&a, &batch, Some(BASE)).unwrap_err();
    assert!(matches!(err, Error::InvalidBatch { .. }), "{err}");
    assert!(log.is_empty());
}

fn not_a_file(result: Result<impl std::fmt::Debug, Error>, found: &str) {
    match result {
        Err(err @ Error::NotAFile { .. }) => {
            assert!(err.to_string().contains(found), "{err}");
            assert!(err.to_string().contains("not a regular file"), "{err}");
        }
        other => panic!("{other:?}"),
    }
}

/// Runs `f` on another thread and fails if it does not return within a minute (opening a
/// FIFO for reading blocks until a writer comes).
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("blocked: the path was opened before it was checked")
}

/// The reported failure: `/dev/zero` was read until memory ran out, and a FIFO hung.
#[test]
#[cfg(unix)]
fn paths_that_are_not_regular_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let cases: Vec<(PathBuf, &str)> = vec![
        (fifo, "a FIFO"),
        (PathBuf::from("/dev/zero"), "a character device"),
        (dir.path().to_path_buf(), "a directory"),
    ];
    for (path, found) in cases {
        let p = path.clone();
        not_a_file(
            within_a_minute(move || JsonlStore::open_read_only(p)),
            found,
        );
        let p = path.clone();
        not_a_file(
            within_a_minute(move || JsonlStore::open(p, Durability::EveryAppend)),
            found,
        );
        #[cfg(feature = "sqlite")]
        {
            let p = path.clone();
            not_a_file(
                within_a_minute(move || {
                    chord::store::SqliteStore::open(p, Durability::EveryAppend)
                }),
                found,
            );
        }
    }
}

/// Reads every record of every address, so that each is checked.
#[cfg(feature = "sqlite")]
fn read_all(store: &dyn Store) -> Result<usize, Error> {
    let mut n = 0;
    for a in store.addresses()? {
        let mut options = chord::store::ReadOptions::asc().limit(7);
        loop {
            let page = store.read_list(&a, &options)?;
            n += page.records.len();
            match page.next_cursor {
                Some(c) => options.cursor = Some(c),
                None => break,
            }
        }
    }
    Ok(n)
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use chord::store::SqliteStore;

    fn build(path: &Path) -> (Snapshot, Vec<Address>) {
        let store = SqliteStore::open(path, Durability::EveryAppend).unwrap();
        let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(4));
        let names: Vec<Address> = ["a", "b", "c"]
            .iter()
            .map(|k| Address::new("lanes", *k))
            .collect();
        for i in 0..20u64 {
            let address = &names[(i as usize * 7 / 3) % 3];
            let batch = if writer.wants_base(address) {
                vec![Op::Replace(json!({ "text": format!("t{i}"), "n": i }))]
            } else {
                vec![
                    Op::Append(path!["text"], format!("+{i}")),
                    Op::Set(path!["n"], i.into()),
                ]
            };
            writer.append(address, &batch).unwrap();
        }
        // One address with a single record.
        let d = Address::new("lanes", "d");
        writer.append(&d, &[Op::Replace(json!("only"))]).unwrap();
        let state = snapshot(writer.store()).unwrap();
        drop(writer);
        let mut all = names;
        all.push(d);
        (state, all)
    }

    fn exec(path: &Path, sql: &str) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn.execute_batch(sql).unwrap();
    }

    /// Changes made behind the store's back, the way damage or a careless hand would: each is
    /// an error naming the address and seq (or the database), never a different state.
    #[test]
    fn tampered_rows_are_errors_never_a_different_state() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("original.db");
        let (expected, _) = build(&original);
        let q = |sql: &str| -> i64 {
            let conn = rusqlite::Connection::open(&original).unwrap();
            conn.query_row(sql, [], |r| r.get(0)).unwrap()
        };
        let a_last = q("SELECT last FROM chord_addresses WHERE key = 'a'");
        let a_prev = q(&format!(
            "SELECT prev FROM chord_records WHERE address = 1 AND seq = {a_last}"
        ));
        let a_base = q("SELECT max(seq) FROM chord_records WHERE address = 1 AND tag = 'base'");
        let cases: Vec<(String, &str)> = vec![
            (
                format!("UPDATE chord_records SET batch = replace(batch, '\"n\"', '\"m\"') WHERE seq = {a_last}"),
                "checksum mismatch",
            ),
            (
                format!("UPDATE chord_records SET tag = NULL WHERE seq = {a_base}"),
                "checksum mismatch",
            ),
            (
                format!("UPDATE chord_records SET seq = seq + 1000 WHERE seq = {a_last}"),
                "checksum mismatch",
            ),
            (
                format!("UPDATE chord_records SET prev = 0 WHERE seq = {a_last}"),
                "checksum mismatch",
            ),
            (
                format!("DELETE FROM chord_records WHERE seq = {a_prev}"),
                "missing",
            ),
            (
                format!("DELETE FROM chord_records WHERE seq = {a_last}"),
                "missing",
            ),
            (
                format!("DELETE FROM chord_records WHERE seq = {a_base}"),
                "missing",
            ),
            ("DELETE FROM chord_records WHERE address = 4".into(), "missing"),
            (
                format!("UPDATE chord_records SET address = 2 WHERE seq = {a_last}"),
                "missing",
            ),
            ("UPDATE chord_addresses SET last = last - 1 WHERE id = 1".into(), "missing"),
            ("UPDATE chord_addresses SET key = 'z' WHERE id = 2".into(), "checksum"),
            ("DELETE FROM chord_addresses WHERE id = 4".into(), "missing"),
            ("DELETE FROM chord_addresses WHERE id = 2".into(), "missing or out of place"),
            ("UPDATE chord_meta SET value = 1 WHERE name = 'format'".into(), "version 1"),
            ("UPDATE chord_meta SET value = -1 WHERE name = 'lease_end'".into(), "lease_end"),
        ];
        let path = dir.path().join("log.db");
        for (sql, reason) in &cases {
            fs::copy(&original, &path).unwrap();
            exec(&path, sql);
            let err = match SqliteStore::open(&path, Durability::EveryAppend) {
                Err(e) => e,
                Ok(store) => {
                    // Each address either recovers exactly what it held, or fails.
                    let mut first = None;
                    for (a, value) in &expected {
                        match recover(&store, a) {
                            Ok(v) => assert_eq!(&v, value, "{sql}: {a}: a different state"),
                            Err(e) => {
                                first.get_or_insert(e);
                            }
                        }
                    }
                    first
                        .or_else(|| read_all(&store).err())
                        .unwrap_or_else(|| panic!("{sql}: not detected"))
                }
            };
            assert!(
                matches!(
                    err,
                    Error::CorruptRecord { .. }
                        | Error::CorruptDatabase { .. }
                        | Error::Version { .. }
                ),
                "{sql}: {err}"
            );
            assert!(err.to_string().contains(reason), "{sql}: {err}");
            if let Error::CorruptRecord { address, seq, .. } = &err {
                assert!(
                    err.to_string()
                        .contains(&format!("{address}: record {seq}")),
                    "{err}"
                );
            }
        }
    }

    /// A database of format version 1 (no checksums) is refused, and left alone.
    #[test]
    fn a_version_1_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        exec(
            &path,
            "CREATE TABLE chord_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
             CREATE TABLE chord_addresses (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL,
                 key TEXT NOT NULL, UNIQUE (namespace, key));
             CREATE TABLE chord_records (address INTEGER NOT NULL, seq INTEGER NOT NULL, tag TEXT,
                 batch TEXT NOT NULL, PRIMARY KEY (address, seq)) WITHOUT ROWID;
             INSERT INTO chord_addresses VALUES (1, 'n', 'k');
             INSERT INTO chord_records VALUES (1, 1, 'base', '[[\"r\",1]]');",
        );
        let err = SqliteStore::open(&path, Durability::EveryAppend).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Version {
                    found: 1,
                    supported: 2,
                    ..
                }
            ),
            "{err}"
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM chord_records", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    /// Single-bit flips anywhere in the database file (a deterministic sample): SQLite's own
    /// checks or the checksums and links catch each one that matters.
    #[test]
    fn bit_flips_in_the_database_file_are_errors_or_the_same_state() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("original.db");
        let (expected, _) = build(&original);
        assert!(
            !dir.path().join("original.db-wal").exists(),
            "checkpointed on close"
        );
        let bytes = fs::read(&original).unwrap();
        // Most of a small database is empty page space: flip bits where the bytes are.
        let used: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] != 0).collect();
        let path = dir.path().join("log.db");
        // `CHORD_FLIPS=n` samples more (or fewer) bits, from another seed.
        let samples: u64 = std::env::var("CHORD_FLIPS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ samples;
        let (mut same, mut errors) = (0, 0);
        for _ in 0..samples {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bit = used[(x >> 3) as usize % used.len()] * 8 + (x % 8) as usize;
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            for suffix in ["-wal", "-shm"] {
                let _ = fs::remove_file(dir.path().join(format!("log.db{suffix}")));
            }
            fs::write(&path, &damaged).unwrap();
            let context = format!("byte {} bit {}", bit / 8, bit % 8);
            let Ok(store) = SqliteStore::open(&path, Durability::EveryAppend) else {
                errors += 1;
                continue;
            };
            let mut failed = read_all(&store).is_err();
            for (a, value) in &expected {
                match recover(&store, a) {
                    Ok(v) => assert_eq!(&v, value, "{context}: {a}: a different state"),
                    Err(_) => failed = true,
                }
            }
            match store.addresses() {
                Ok(list) if !failed => {
                    let want: Vec<&Address> = expected.iter().map(|(a, _)| a).collect();
                    assert_eq!(list.iter().collect::<Vec<_>>(), want, "{context}");
                    same += 1;
                }
                _ => errors += 1,
            }
        }
        println!("{same} flips left the same state, {errors} were errors");
        assert!(errors > 0);
    }

    /// Seqs end at `i64::MAX` in SQLite: the last one is handed out and read back, then
    /// appends stop with a clear error.
    #[test]
    fn seqs_near_the_end_of_their_range_stop_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.db");
        let a = Address::new("n", "k");
        drop(SqliteStore::open(&path, Durability::EveryAppend).unwrap());
        exec(
            &path,
            &format!(
                "UPDATE chord_meta SET value = {} WHERE name = 'lease_end'",
                i64::MAX - 2
            ),
        );
        let mut db = SqliteStore::open(&path, Durability::EveryAppend).unwrap();
        let max = i64::MAX as u64;
        assert_eq!(db.append(&a, "[[\"r\",1]]", Some(BASE)).unwrap(), max - 1);
        // A refused append takes no seq.
        assert!(db.append(&a, "[[\"s\",[],2]]", None).is_err());
        assert_eq!(db.append(&a, "[[\"r\",2]]", Some(BASE)).unwrap(), max);
        let err = db.append(&a, "[[\"r\",3]]", Some(BASE)).unwrap_err();
        assert!(matches!(err, Error::SeqsExhausted { .. }), "{err}");
        assert_eq!(recover(&db, &a).unwrap(), Some(json!(2)));
        assert_eq!(recover_at(&db, &a, max - 1).unwrap(), Some(json!(1)));
        assert_eq!(recover_at(&db, &a, u64::MAX).unwrap(), Some(json!(2)));
        assert_eq!(read_all(&db).unwrap(), 2);
        drop(db);
        let grouped = Durability::Grouped {
            max_batches: 1,
            max_delay: Duration::from_secs(3600),
        };
        let mut db = SqliteStore::open(&path, grouped).unwrap();
        assert!(matches!(
            db.append(&a, "[[\"r\",3]]", Some(BASE)),
            Err(Error::SeqsExhausted { .. })
        ));
        assert_eq!(recover(&db, &a).unwrap(), Some(json!(2)));
    }
}
