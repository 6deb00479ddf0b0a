//! The JSONL backend's own guarantees: its file format (checksums included), torn-tail repair
//! at every byte offset, corrupt records reported by file and line, read-only access beside a
//! writer. Damage of every kind, bit by bit and line by line: `store_integrity.rs`.

use std::fs;
use std::path::Path;

use chord::store::{
    recover, replay, Address, Checkpoint, Durability, Error, JsonlStore, LogWriter, ReadOptions,
    Record, Store, BASE,
};
use chord::{path, Op};
use serde_json::{json, Value};

/// Removes the acknowledged mark of the log at `path`: these tests cut a log to stand for
/// writes a crash interrupted before they were flushed, which the mark of a real crash would
/// not hold (it is written after the flush).
fn forget_mark(path: &Path) {
    let _ = fs::remove_file(format!("{}-ack", path.display()));
}

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
        "{\"chord\":2,\"c\":\"ad243606\"}\n",
        "{\"def\":0,\"ns\":\"a/very/long/namespace\",\"key\":\"and-an-even-longer-key-for-this-value\",\"c\":\"3f268fc9\"}\n",
        "{\"s\":1,\"a\":0,\"t\":\"base\",\"b\":[[\"r\",{\"x\":1}]],\"c\":\"d425d5db\"}\n",
        "{\"s\":2,\"a\":0,\"b\":[[\"s\",[\"x\"],2]],\"c\":\"7dfa7e12\"}\n",
        "{\"def\":1,\"ns\":\"ns\",\"key\":\"k\\\"ey\",\"c\":\"67fa3dac\"}\n",
        "{\"s\":3,\"a\":1,\"t\":\"base\",\"b\":[[\"r\",[]]],\"c\":\"916b65ad\"}\n",
        "{\"s\":4,\"a\":0,\"t\":\"note\",\"b\":[[\"s\",[\"x\"],3]],\"c\":\"79fd91d3\"}\n",
    );
    assert_eq!(text, expected);
    // The checksum, recomputed from its definition: CRC-32C of the bytes before
    // `,"c":"…"}`, continued from the previous line's.
    let mut crc = 0;
    for line in text.lines() {
        let (checked, suffix) = line.split_at(line.len() - 16);
        crc = crc32c::crc32c_append(crc, checked.as_bytes());
        assert_eq!(suffix, format!(",\"c\":\"{crc:08x}\"}}"), "{line}");
    }
}

/// `checked` (a line without its checksum suffix) sealed with a valid checksum continuing
/// `previous` (the line before it, or `None` for the first line).
fn seal(checked: &[u8], previous: Option<&[u8]>) -> Vec<u8> {
    let seed = previous.map_or(0, |line| {
        let hex = std::str::from_utf8(&line[line.len() - 10..line.len() - 2]).unwrap();
        u32::from_str_radix(hex, 16).unwrap()
    });
    let crc = crc32c::crc32c_append(seed, checked);
    let mut line = checked.to_vec();
    line.extend_from_slice(format!(",\"c\":\"{crc:08x}\"}}").as_bytes());
    line
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
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .starts_with("{\"lease\":1024,\"c\":"),
        "{text}"
    );
    assert_eq!(text.matches("lease").count(), 1);

    // Simulate a crash that lost the unflushed tail: cut the last two records. Seqs 2 and 3
    // were handed out, so a restart must not hand them out again.
    let keep: Vec<&str> = text.lines().take(4).collect();
    fs::write(&path, keep.join("\n") + "\n").unwrap();
    forget_mark(&path);
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
    let end = bytes.len() as u64;
    let mut cuts = 0;
    for len in def_at..end {
        fs::write(&path, &bytes[..len as usize]).unwrap();
        forget_mark(&path);
        // The torn line starts at the definition line while that line is incomplete, at the
        // record line after that; a cut exactly between lines leaves nothing torn, and so
        // does a cut just before a `\n`: the line is complete (its checksum verifies), and
        // the writer restores its terminator.
        let torn_at = if len < record_at { def_at } else { record_at };
        let complete = len + 1 == record_at || len + 1 == end;
        let mut log =
            JsonlStore::open(&path, every()).unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        match log.torn_tail() {
            None => assert!(
                len == def_at || len == record_at || complete,
                "cut at {len}"
            ),
            Some(torn) => {
                assert_eq!(
                    (torn.offset, torn.len),
                    (torn_at, len - torn_at),
                    "cut at {len}"
                );
                cuts += 1;
            }
        }
        assert_eq!(log.unterminated_line().is_some(), complete, "cut at {len}");
        // Repaired: the file ends at the last complete line, every earlier record intact.
        let repaired = if complete { len + 1 } else { torn_at.min(len) };
        assert_eq!(fs::metadata(&path).unwrap().len(), repaired);
        assert_eq!(fs::read(&path).unwrap(), bytes[..repaired as usize]);
        assert_eq!(
            log.addresses().unwrap(),
            if len + 1 == end {
                vec![a.clone(), b.clone(), c.clone()]
            } else {
                vec![a.clone(), b.clone()]
            },
            "cut at {len}"
        );
        assert_eq!([all_records(&log, &a), all_records(&log, &b)], lists);
        assert_eq!(
            [recover(&log, &a).unwrap(), recover(&log, &b).unwrap()],
            values
        );
        let expected_c = (len + 1 == end).then(|| json!({"text": "naïve 😀 last"}));
        assert_eq!(recover(&log, &c).unwrap(), expected_c);
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
    assert_eq!(cuts, end - def_at - 4);
}

#[test]
fn torn_header_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    drop(JsonlStore::open(&path, every()).unwrap());
    let header = fs::read(&path).unwrap();
    assert!(header.starts_with(b"{\"chord\":2,\"c\":\""), "{header:?}");
    for len in 0..header.len() {
        fs::write(&path, &header[..len]).unwrap();
        forget_mark(&path);
        let mut log = JsonlStore::open(&path, every()).unwrap();
        assert!(log.is_empty());
        log.append(&Address::new("n", "k"), "[]", None).unwrap();
        drop(log);
        assert!(fs::read(&path).unwrap().starts_with(&header));
    }
}

#[test]
fn read_only_ignores_a_torn_tail_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let (bytes, _, record_at) = build_log(&path);
    let cut = &bytes[..bytes.len() - 3];
    fs::write(&path, cut).unwrap();
    forget_mark(&path);
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
    let line = |i: usize| lines[i].as_bytes();
    // Line k with its checksum intact, and with its first flipped bit.
    let mut flipped = line(k).to_vec();
    flipped[7] ^= 0x10;
    let sealed = |checked: &str| seal(checked.as_bytes(), Some(line(k - 1)));
    let cases: Vec<(usize, Vec<u8>, &str)> = vec![
        (k, b"garbage".to_vec(), "no checksum"),
        (k, b"".to_vec(), "no checksum"),
        (k, b"[1,2,3]".to_vec(), "no checksum"),
        (k, b"\xff\xfe{}".to_vec(), "no checksum"),
        (k, b"\0\0\0\0\0\0".to_vec(), "no checksum"),
        (k, line(k)[..line(k).len() - 1].to_vec(), "no checksum"),
        (k, flipped, "checksum mismatch"),
        // A line from elsewhere in the log: its checksum continues another line.
        (k, line(k - 2).to_vec(), "checksum mismatch"),
        // Lines with valid checksums that still make no sense.
        (
            k,
            sealed(r#"{"s":999,"a":0,"b":[["s",["n"],1]"#),
            "expected",
        ),
        (
            k,
            sealed(r#"{"s":1,"a":0,"b":[]"#),
            "is not greater than the previous seq",
        ),
        (
            k,
            sealed(r#"{"s":999,"a":7,"b":[]"#),
            "address id 7 is not defined",
        ),
        (k, sealed(r#"{"s":999,"a":0"#), "missing field `b`"),
        (
            k,
            sealed(r#"{"s":999,"a":0,"b":{"r":1}"#),
            "not a JSON array",
        ),
        (
            k,
            sealed(r#"{"s":999,"a":0,"b":[],"x":1"#),
            "unknown field `x`",
        ),
        (
            k,
            sealed(r#"{"s":999,"a":0,"b":[],"b":[]"#),
            "duplicate field `b`",
        ),
        (
            k,
            sealed(r#"{"s":999,"a":0,"b":[],"c":"00000000""#),
            "duplicate field `c`",
        ),
        (k, sealed(r#"{"s":-4,"a":0,"b":[]"#), "invalid value"),
        (
            k,
            seal(b"{\"s\":999,\"a\":0,\"b\":[\"\xff\"]", Some(line(k - 1))),
            "not UTF-8",
        ),
        (k, sealed(r#"{"chord":2"#), "a header in the middle"),
        (
            k,
            sealed(r#"{"def":0,"ns":"lanes","key":"a""#),
            "out of order",
        ),
        (k, sealed(r#"{"def":0,"ns":"lanes""#), "missing field `key`"),
        (0, seal(br#"{"s":1,"a":0,"b":[]"#, None), "not a chord log"),
        (0, b"{\"s\":1,\"a\":0,\"b\":[]}".to_vec(), "not a chord log"),
        // The last complete line is a record like any other: damage there is an error too,
        // never mistaken for a torn write.
        (lines.len() - 1, b"{\"s\":".to_vec(), "no checksum"),
    ];
    for (index, replacement, reason) in cases {
        let mut damaged = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            damaged.extend_from_slice(if i == index {
                &replacement
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
            assert!(r.contains(reason), "line {}: {err}", index + 1);
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

/// A torn header is always the start of the same bytes; any other unterminated first line is
/// some other file, never cut off.
#[test]
fn a_file_that_is_not_a_log_is_never_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let huge = "y".repeat(chord::store::MAX_RECORD_BYTES + 1);
    for text in [
        "hello",
        "{\"chord\":1",
        "{\"chord\":2,\"c\":\"0000",
        huge.as_str(),
    ] {
        fs::write(&path, text).unwrap();
        for result in [
            JsonlStore::open(&path, every()),
            JsonlStore::open_read_only(&path),
        ] {
            let err = result.unwrap_err();
            assert!(matches!(err, Error::Corrupt { line: 1, .. }), "{err}");
            assert!(err.to_string().contains("not a chord log"), "{err}");
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
}
