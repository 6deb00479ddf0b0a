//! The JSONL backend's own guarantees: its file format, torn-tail repair at every byte offset,
//! corrupt records reported by file and line, read-only access beside a writer.

use std::fs;
use std::path::Path;

use chord::store::{
    recover, replay, Address, Checkpoint, Durability, Error, JsonlStore, LogWriter, ReadOptions,
    Record, Store, BASE,
};
use chord::{path, Op};
use serde_json::{json, Value};

fn every() -> Durability {
    Durability::EveryAppend
}

fn all_records(store: &dyn Store, address: &Address) -> Vec<Record> {
    store
        .read_list(address, &ReadOptions::asc().limit(usize::MAX))
        .unwrap()
        .records
}

#[test]
fn file_format_interns_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut log = JsonlStore::open(&path, every()).unwrap();
    let long = Address::new(
        "a/very/long/namespace",
        "and-an-even-longer-key-for-this-value",
    );
    let other = Address::new("ns", "k\"ey");
    log.append(&long, r#"[["r",{"x":1}]]"#, Some(BASE)).unwrap();
    log.append(&long, r#"[["s",["x"],2]]"#, None).unwrap();
    log.append(&other, r#"[["r",[]]]"#, Some(BASE)).unwrap();
    log.append(&long, r#"[["s",["x"],3]]"#, Some("note"))
        .unwrap();
    drop(log);
    let text = fs::read_to_string(&path).unwrap();
    let expected = concat!(
        "{\"chord\":1}\n",
        "{\"def\":0,\"ns\":\"a/very/long/namespace\",\"key\":\"and-an-even-longer-key-for-this-value\"}\n",
        "{\"s\":1,\"a\":0,\"t\":\"base\",\"b\":[[\"r\",{\"x\":1}]]}\n",
        "{\"s\":2,\"a\":0,\"b\":[[\"s\",[\"x\"],2]]}\n",
        "{\"def\":1,\"ns\":\"ns\",\"key\":\"k\\\"ey\"}\n",
        "{\"s\":3,\"a\":1,\"t\":\"base\",\"b\":[[\"r\",[]]]}\n",
        "{\"s\":4,\"a\":0,\"t\":\"note\",\"b\":[[\"s\",[\"x\"],3]]}\n",
    );
    assert_eq!(text, expected);
}

#[test]
fn grouped_writers_lease_seqs_so_restarts_never_reuse_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let grouped = Durability::Grouped {
        max_batches: 100,
        max_delay: std::time::Duration::from_secs(3600),
    };
    let a = Address::new("ns", "k");
    let mut log = JsonlStore::open(&path, grouped).unwrap();
    let first: Vec<u64> = (0..3)
        .map(|i| {
            log.append(&a, &format!("[[\"s\",[\"n\"],{i}]]"), None)
                .unwrap()
        })
        .collect();
    assert_eq!(first, [1, 2, 3]);
    drop(log);
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().nth(1), Some("{\"lease\":1024}"));
    assert_eq!(text.matches("lease").count(), 1);

    // Simulate a crash that lost the unflushed tail: cut the last two records. Seqs 2 and 3
    // were handed out, so a restart must not hand them out again.
    let keep: Vec<&str> = text.lines().take(4).collect();
    fs::write(&path, keep.join("\n") + "\n").unwrap();
    let mut log = JsonlStore::open(&path, grouped).unwrap();
    assert_eq!(all_records(&log, &a).len(), 1);
    let next = log.append(&a, "[]", None).unwrap();
    assert_eq!(next, 1025);
    drop(log);
    let mut log = JsonlStore::open(&path, every()).unwrap();
    assert_eq!(log.append(&a, "[]", None).unwrap(), 2049);
}

/// A log whose last write defined a new address and appended its first record, both in one
/// write; returns the log's bytes and the offsets where that write's two lines start.
fn build_log(path: &Path) -> (Vec<u8>, u64, u64) {
    let store = JsonlStore::open(path, every()).unwrap();
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(4));
    let (a, b) = (Address::new("lanes", "a"), Address::new("lanes", "b"));
    let mut text = String::new();
    for i in 0..12 {
        let address = if i % 3 == 2 { &b } else { &a };
        let chunk = format!("tök {i} 😀 ");
        text.push_str(&chunk);
        let batch = if writer.wants_base(address) {
            vec![Op::Replace(json!({ "text": text, "i": i }))]
        } else {
            vec![
                Op::Append(path!["text"], chunk),
                Op::Set(path!["i"], i.into()),
            ]
        };
        writer.append(address, &batch).unwrap();
    }
    let before = fs::metadata(path).unwrap().len();
    let c = Address::new("lanes", "c");
    writer
        .append(&c, &[Op::Replace(json!({"text": "naïve 😀 last"}))])
        .unwrap();
    drop(writer);
    let bytes = fs::read(path).unwrap();
    let def_line_len = bytes[before as usize..]
        .iter()
        .position(|&b| b == b'\n')
        .unwrap() as u64
        + 1;
    (bytes, before, before + def_line_len)
}

#[test]
fn torn_tail_is_discarded_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.jsonl");
    let (bytes, def_at, record_at) = build_log(&original);
    let full = JsonlStore::open_read_only(&original).unwrap();
    let (a, b, c) = (
        Address::new("lanes", "a"),
        Address::new("lanes", "b"),
        Address::new("lanes", "c"),
    );
    let lists = [all_records(&full, &a), all_records(&full, &b)];
    let values = [recover(&full, &a).unwrap(), recover(&full, &b).unwrap()];
    assert!(values.iter().all(Option::is_some));
    assert_eq!(
        recover(&full, &c).unwrap(),
        Some(json!({"text": "naïve 😀 last"}))
    );
    assert!(full.torn_tail().is_none());

    let path = dir.path().join("log.jsonl");
    let mut cuts = 0;
    for len in def_at..bytes.len() as u64 {
        fs::write(&path, &bytes[..len as usize]).unwrap();
        // The torn line starts at the definition line while that line is incomplete, at the
        // record line after that; a cut exactly between lines leaves nothing torn.
        let torn_at = if len < record_at { def_at } else { record_at };
        let mut log =
            JsonlStore::open(&path, every()).unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        match log.torn_tail() {
            None => assert!(len == def_at || len == record_at, "cut at {len}"),
            Some(torn) => {
                assert_eq!(
                    (torn.offset, torn.len),
                    (torn_at, len - torn_at),
                    "cut at {len}"
                );
                cuts += 1;
            }
        }
        // Repaired: the file ends at the last complete line, every earlier record intact.
        assert_eq!(fs::metadata(&path).unwrap().len(), torn_at.min(len));
        assert_eq!(
            log.addresses().unwrap(),
            [a.clone(), b.clone()],
            "cut at {len}"
        );
        assert_eq!([all_records(&log, &a), all_records(&log, &b)], lists);
        assert_eq!(
            [recover(&log, &a).unwrap(), recover(&log, &b).unwrap()],
            values
        );
        assert_eq!(recover(&log, &c).unwrap(), None);
        // The repaired log takes new records and reopens cleanly.
        let seq = log
            .append(&c, r#"[["r",{"again":true}]]"#, Some(BASE))
            .unwrap();
        drop(log);
        let log = JsonlStore::open_read_only(&path).unwrap();
        assert!(log.torn_tail().is_none());
        assert_eq!(log.durable_seq(), Some(seq));
        assert_eq!(recover(&log, &c).unwrap(), Some(json!({"again": true})));
    }
    assert_eq!(cuts, bytes.len() as u64 - def_at - 2);
}

#[test]
fn torn_header_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let header = b"{\"chord\":1}\n";
    for len in 0..header.len() {
        fs::write(&path, &header[..len]).unwrap();
        let mut log = JsonlStore::open(&path, every()).unwrap();
        assert!(log.is_empty());
        log.append(&Address::new("n", "k"), "[]", None).unwrap();
        drop(log);
        assert!(fs::read(&path).unwrap().starts_with(header));
    }
}

#[test]
fn read_only_ignores_a_torn_tail_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let (bytes, _, record_at) = build_log(&path);
    let cut = &bytes[..bytes.len() - 3];
    fs::write(&path, cut).unwrap();
    let log = JsonlStore::open_read_only(&path).unwrap();
    let torn = log.torn_tail().unwrap();
    assert_eq!(torn.offset, record_at);
    assert_eq!(fs::read(&path).unwrap(), cut);
    let mut log = log;
    let err = log.append(&Address::new("n", "k"), "[]", None).unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    assert!(log.sync().is_err());
}

#[test]
fn read_only_opens_beside_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let a = Address::new("n", "k");
    let mut writer = JsonlStore::open(&path, every()).unwrap();
    writer.append(&a, r#"[["r",1]]"#, Some(BASE)).unwrap();
    let reader = JsonlStore::open_read_only(&path).unwrap();
    writer.append(&a, r#"[["r",2]]"#, Some(BASE)).unwrap();
    // The reader sees the log as it was when it opened.
    assert_eq!(recover(&reader, &a).unwrap(), Some(json!(1)));
    assert_eq!(recover(&writer, &a).unwrap(), Some(json!(2)));
    assert!(matches!(
        JsonlStore::open(&path, every()),
        Err(Error::Locked { .. })
    ));
}

#[test]
fn corrupt_records_are_errors_naming_file_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    let (bytes, _, _) = build_log(&good);
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A record line in the middle of the log.
    let k = lines
        .iter()
        .enumerate()
        .skip(lines.len() / 2)
        .find(|(_, l)| l.starts_with("{\"s\":"))
        .map(|(i, _)| i)
        .unwrap();
    let path = dir.path().join("log.jsonl");
    let cases: &[(usize, &[u8], &str)] = &[
        (k, b"garbage", "expected value"),
        (k, b"", "EOF while parsing"),
        (
            k,
            b"{\"s\":999,\"a\":0,\"b\":[[\"s\",[\"n\"],1]]",
            "EOF while parsing",
        ),
        (
            k,
            b"{\"s\":1,\"a\":0,\"b\":[]}",
            "is not greater than the previous seq",
        ),
        (
            k,
            b"{\"s\":999,\"a\":7,\"b\":[]}",
            "address id 7 is not defined",
        ),
        (k, b"{\"s\":999,\"a\":0}", "missing field `b`"),
        (
            k,
            b"{\"s\":999,\"a\":0,\"b\":{\"r\":1}}",
            "not a JSON array",
        ),
        (
            k,
            b"{\"s\":999,\"a\":0,\"b\":[],\"x\":1}",
            "unknown field `x`",
        ),
        (
            k,
            b"{\"s\":999,\"a\":0,\"b\":[],\"b\":[]}",
            "duplicate field `b`",
        ),
        (k, b"{\"s\":-4,\"a\":0,\"b\":[]}", "invalid value"),
        (k, b"[1,2,3]", "invalid type"),
        (k, b"{}", "not a log line"),
        (k, b"\xff\xfe{}", "not UTF-8"),
        (k, b"\0\0\0\0\0\0", "expected value"),
        (k, b"{\"chord\":1}", "a header in the middle"),
        (
            k,
            b"{\"def\":0,\"ns\":\"lanes\",\"key\":\"a\"}",
            "out of order",
        ),
        (k, b"{\"def\":0,\"ns\":\"lanes\"}", "missing field `key`"),
        (0, b"{\"chord\":2}", "format version 2 is not supported"),
        (0, b"{\"s\":1,\"a\":0,\"b\":[]}", "not a chord log"),
        // The last complete line is a record like any other: damage there is an error too,
        // never mistaken for a torn write.
        (lines.len() - 1, b"{\"s\":", "EOF while parsing"),
    ];
    for &(index, replacement, reason) in cases {
        let mut damaged = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            damaged.extend_from_slice(if i == index {
                replacement
            } else {
                line.as_bytes()
            });
            damaged.push(b'\n');
        }
        fs::write(&path, &damaged).unwrap();
        for result in [
            JsonlStore::open(&path, every()),
            JsonlStore::open_read_only(&path),
        ] {
            let err = result.unwrap_err();
            let Error::Corrupt {
                path: p,
                line,
                reason: r,
            } = &err
            else {
                panic!("line {}: not a corrupt-record error: {err}", index + 1);
            };
            assert_eq!((p.as_path(), *line), (path.as_path(), index as u64 + 1));
            assert!(r.contains(reason), "{err}");
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("{}:{}: ", path.display(), index + 1)),
                "{shown}"
            );
        }
        // A failed open repairs nothing.
        assert_eq!(fs::read(&path).unwrap(), damaged);
    }
}

#[test]
fn replay_len_from_the_index_agrees_with_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut log = JsonlStore::open(&path, every()).unwrap();
    let a = Address::new("n", "k");
    let mut seqs = Vec::new();
    for i in 0..40u64 {
        let (batch, tag) = if i % 7 == 3 {
            (format!("[[\"r\",{i}]]"), Some(BASE))
        } else {
            (format!("[[\"r\",{i}]]"), None)
        };
        seqs.push(log.append(&a, &batch, tag).unwrap());
    }
    for (i, &seq) in seqs.iter().enumerate() {
        let r = replay(&log, &a, Some(seq)).unwrap();
        assert_eq!(log.replay_len(&a, Some(seq)), r.batches, "at {i}");
        assert_eq!(r.value, Some(Value::from(i)));
    }
    assert_eq!(log.replay_len(&a, None), 40 - 38);
    assert_eq!(log.replay_len(&Address::new("n", "none"), None), 0);
    assert_eq!(log.len(), 40);
}
