//! The `chord` binary end to end: a real log written through the library, the built binary
//! run on it, its output parsed.

#[path = "../../chord/tests/support/seal.rs"]
mod seal;

#[path = "../../chord/tests/support/postgres.rs"]
mod pg;

use seal::seal_lines;
use std::path::Path;
use std::process::{Command, Output};

use chord::store::{
    recover, recover_at, Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store,
};
use chord::{path, Op};
use serde_json::{json, Value};

/// The tests of this binary run one at a time. They open logs for writing in this process
/// (taking the log's lock) while others spawn `chord`: a child forked while a log is open holds
/// a copy of its descriptor, and so its lock, until it executes `chord`; a test that closed
/// the log and reopened it in that moment found it locked (`Locked`, seen once in CI).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn chord(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chord"))
        .args(args)
        .output()
        .expect("run chord")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "status {:?}, stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn lane() -> Address {
    Address::new("lanes", "main")
}

fn tool() -> Address {
    Address::new("tools", "build output")
}

/// A log with two values; returns the batches written to the lane.
fn write_log(path: &Path) -> Vec<Vec<Op>> {
    write_to(JsonlStore::open(path, Durability::EveryAppend).unwrap())
}

/// Writes the two values of [`write_log`] into any store.
fn write_to(store: impl Store) -> Vec<Vec<Op>> {
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(4));
    let mut lane_batches = Vec::new();
    let mut text = String::new();
    for i in 0..10 {
        let chunk = format!("tok{i} ");
        text.push_str(&chunk);
        let batch = if writer.wants_base(&lane()) {
            vec![Op::Replace(json!({"text": text, "steps": []}))]
        } else {
            vec![
                Op::Append(path!["text"], chunk),
                Op::Splice {
                    path: path!["steps"].into(),
                    index: 0,
                    remove: 0,
                    items: vec![json!(i)],
                },
                Op::Delete(path!["gone"]),
            ]
        };
        writer.append(&lane(), &batch).unwrap();
        lane_batches.push(batch);
        if i % 3 == 0 {
            let batch = if writer.wants_base(&tool()) {
                vec![Op::Replace(json!({"out": ""}))]
            } else {
                vec![Op::Set(path!["out"], format!("line {i}").into())]
            };
            writer.append(&tool(), &batch).unwrap();
        }
    }
    lane_batches
}

#[test]
fn addresses_as_json_and_text() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let log = log.to_str().unwrap();
    // Piped stdout: JSON by default.
    let listed: Value = serde_json::from_str(&stdout(&chord(&["addresses", log]))).unwrap();
    assert_eq!(
        listed,
        json!([
            {"namespace": "lanes", "key": "main", "records": 10},
            {"namespace": "tools", "key": "build output", "records": 4},
        ])
    );
    let text = stdout(&chord(&["--format", "text", "addresses", log]));
    assert_eq!(
        text,
        "lanes\tmain\t10 records\ntools\tbuild output\t4 records\n"
    );
}

#[test]
fn show_decodes_every_record() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let batches = write_log(&log);
    let out = stdout(&chord(&["show", log.to_str().unwrap(), "lanes", "main"]));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), batches.len());
    let store = JsonlStore::open_read_only(&log).unwrap();
    let records = store
        .read_list(&lane(), &ReadOptions::asc())
        .unwrap()
        .records;
    for ((line, batch), record) in lines.iter().zip(&batches).zip(&records) {
        assert_eq!(line["ops"], serde_json::to_value(batch).unwrap());
        assert_eq!(line["seq"], record.seq);
        assert_eq!(line["tag"], json!(record.tag));
    }

    let text = stdout(&chord(&[
        "show",
        "--format",
        "text",
        log.to_str().unwrap(),
        "lanes",
        "main",
    ]));
    let first = records[0].seq;
    assert!(
        text.starts_with(&format!(
            "#{first} base batch, 1 op\n  replace {{\"text\":\"tok0 \",\"steps\":[]}}\n"
        )),
        "{text}"
    );
    assert!(text.contains("batch, 3 ops\n  append text += \"tok1 \"\n  splice steps at 0: remove 0, insert 1 [1]\n  delete gone\n"), "{text}");
}

#[test]
fn recover_latest_and_at_a_seq() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let path = log.to_str().unwrap();
    let store = JsonlStore::open_read_only(&log).unwrap();
    let expected = recover(&store, &lane()).unwrap().unwrap();
    let got: Value =
        serde_json::from_str(&stdout(&chord(&["recover", path, "lanes", "main"]))).unwrap();
    assert_eq!(got, expected);
    let out = chord(&["recover", path, "lanes", "main"]);
    assert_eq!(stdout(&out).lines().count(), 1, "compact JSON when piped");

    let records = store
        .read_list(&lane(), &ReadOptions::asc())
        .unwrap()
        .records;
    for record in &records {
        let seq = record.seq.to_string();
        let got: Value = serde_json::from_str(&stdout(&chord(&[
            "recover", path, "lanes", "main", "--at", &seq,
        ])))
        .unwrap();
        assert_eq!(Some(got), recover_at(&store, &lane(), record.seq).unwrap());
    }

    // Text: indented JSON, and how it was recovered on stderr.
    let out = chord(&["--format", "text", "recover", path, "tools", "build output"]);
    let text = stdout(&out);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"out": "line 9"})
    );
    assert!(text.contains("\n  \"out\""), "{text}");
    assert!(
        stderr(&out).contains("replayed 4 records from the base batch at #"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stats_counts_records_bases_bytes_and_replay() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let stats: Value =
        serde_json::from_str(&stdout(&chord(&["stats", log.to_str().unwrap()]))).unwrap();
    assert_eq!(stats["records"], 14);
    assert_eq!(stats["addresses"], 2);
    // Lane: bases at writes 0, 4 and 8 (every 4 batches); tool: its first batch only.
    assert_eq!(stats["base_batches"], 4);
    assert_eq!(stats["bytes"], std::fs::metadata(&log).unwrap().len());
    assert_eq!(stats["replay"]["max"], 4);
    let by = &stats["replay"]["by_address"];
    assert_eq!(
        by[0],
        json!({"namespace": "lanes", "key": "main", "records": 10, "base_batches": 3, "replay": 2})
    );
    assert_eq!(by[1]["replay"], 4);
    assert_eq!(stats["torn_tail"], Value::Null);
    // Bytes by verb add up to the ops as stored.
    let store = JsonlStore::open_read_only(&log).unwrap();
    let mut total = 0;
    for a in [lane(), tool()] {
        for record in store.read_list(&a, &ReadOptions::asc()).unwrap().records {
            let ops: Vec<Value> = serde_json::from_str(&record.batch).unwrap();
            total += ops
                .iter()
                .map(|op| op.to_string().len() as u64)
                .sum::<u64>();
        }
    }
    let verbs = stats["bytes_by_verb"].as_object().unwrap();
    let keys: Vec<&str> = verbs.keys().map(String::as_str).collect();
    assert_eq!(keys, ["r", "s", "d", "a", "t", "p", "#"]);
    assert_eq!(
        verbs.values().map(|v| v.as_u64().unwrap()).sum::<u64>(),
        total
    );
    assert!(verbs["#"].as_u64().unwrap() > 0, "path ids were defined");
    assert_eq!(verbs["t"], 0);

    let text = stdout(&chord(&[
        "--format",
        "text",
        "stats",
        log.to_str().unwrap(),
    ]));
    assert!(
        text.contains("records        14 in 2 addresses, 4 base batches"),
        "{text}"
    );
    assert!(text.contains("replay         at most 4 records"), "{text}");
}

#[test]
fn works_beside_a_live_writer_and_reports_a_torn_tail() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let path = log.to_str().unwrap();
    {
        // A writer holds the log: the CLI reads without the lock.
        let _writer = JsonlStore::open(&log, Durability::EveryAppend).unwrap();
        let listed: Value = serde_json::from_str(&stdout(&chord(&["addresses", path]))).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 2);
    }
    // A writer caught mid-append: the start of a line it has not finished (nor acknowledged,
    // so the store's acknowledged mark still matches the complete records).
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(br#"{"s":99,"#);
    std::fs::write(&log, &bytes).unwrap();
    let out = chord(&["stats", path]);
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(stats["records"], 14);
    assert!(stats["torn_tail"]["bytes"].as_u64().unwrap() > 0);
    assert!(
        stderr(&out).contains("ignoring an incomplete last line"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "the CLI never changes a log"
    );
}

#[test]
fn errors_are_reported_with_a_nonzero_exit() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let path = log.to_str().unwrap();

    let out = chord(&["recover", path, "lanes", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("chord: "), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no records for lanes/nope"),
        "{}",
        stderr(&out)
    );

    let out = chord(&["recover", path, "lanes", "main", "--at", "0"]);
    assert_eq!(out.status.code(), Some(1));

    let missing = dir.path().join("missing.jsonl");
    let out = chord(&["stats", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("missing.jsonl"), "{}", stderr(&out));

    // A damaged record in the middle: the file, the line and the reason.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[5] = "{\"s\":3,";
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = chord(&["show", path, "lanes", "main"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{path}:6: corrupt record: no checksum")),
        "{}",
        stderr(&out)
    );

    // Usage errors are clap's: exit code 2.
    assert_eq!(chord(&["recover", path]).status.code(), Some(2));
    assert_eq!(chord(&["frobnicate"]).status.code(), Some(2));
}

/// Runs `chord` and kills it if it has not finished within a minute.
fn chord_within_a_minute(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chord"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run chord");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > give_up {
            child.kill().unwrap();
            panic!("chord {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// The reported failures: `chord stats /dev/zero` read until memory ran out and aborted, and
/// a FIFO hung. Both are refused, with a message, before anything is read.
#[test]
#[cfg(unix)]
fn paths_that_are_not_regular_files_are_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let dir_path = dir.path().to_str().unwrap().to_owned();
    for (path, what) in [
        ("/dev/zero", "a character device"),
        (fifo.to_str().unwrap(), "a FIFO"),
        (dir_path.as_str(), "a directory"),
    ] {
        for command in ["stats", "addresses"] {
            let out = chord_within_a_minute(&[command, path]);
            assert_eq!(out.status.code(), Some(1), "{command} {path}");
            let err = stderr(&out);
            assert!(
                err.starts_with(&format!("chord: {path}: not a regular file ({what})")),
                "{err}"
            );
        }
    }
}

/// The reported failure: a three-line log with a lease at `u64::MAX` made `chord` panic (an
/// overflow). Such a log is read like any other.
#[test]
fn seqs_at_the_end_of_their_range_are_read_without_overflow() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let max = u64::MAX;
    let lease = format!("{{\"lease\":{max}");
    let record = format!("{{\"s\":{max},\"a\":0,\"t\":\"base\",\"b\":[[\"r\",{{\"n\":1}}]]");
    std::fs::write(
        &log,
        seal_lines(&[
            "{\"chord\":2",
            "{\"def\":0,\"ns\":\"n\",\"key\":\"k\"",
            &lease,
            &record,
        ]),
    )
    .unwrap();
    let path = log.to_str().unwrap();
    let stats: Value = serde_json::from_str(&stdout(&chord(&["stats", path]))).unwrap();
    assert_eq!(stats["records"], 1);
    let got: Value = serde_json::from_str(&stdout(&chord(&["recover", path, "n", "k"]))).unwrap();
    assert_eq!(got, json!({"n": 1}));
    let at = max.to_string();
    let got: Value =
        serde_json::from_str(&stdout(&chord(&["recover", path, "n", "k", "--at", &at]))).unwrap();
    assert_eq!(got, json!({"n": 1}));
    // The three-line log of the report: no record at all.
    std::fs::write(
        &log,
        seal_lines(&[
            "{\"chord\":2",
            "{\"def\":0,\"ns\":\"n\",\"key\":\"k\"",
            &lease,
        ]),
    )
    .unwrap();
    let stats: Value = serde_json::from_str(&stdout(&chord(&["stats", path]))).unwrap();
    assert_eq!(stats["records"], 0);
}

#[test]
fn damage_and_old_formats_are_errors_and_a_damaged_last_newline_a_warning() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let path = log.to_str().unwrap();
    let bytes = std::fs::read(&log).unwrap();
    let expected: Value =
        serde_json::from_str(&stdout(&chord(&["recover", path, "lanes", "main"]))).unwrap();

    // One flipped bit in the middle: the line and the checksum are named.
    let mut damaged = bytes.clone();
    damaged[bytes.len() / 2] ^= 0x04;
    std::fs::write(&log, &damaged).unwrap();
    let out = chord(&["recover", path, "lanes", "main"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("checksum"), "{}", stderr(&out));

    // A damaged final newline: the record counts, with a warning.
    let mut damaged = bytes.clone();
    *damaged.last_mut().unwrap() ^= 0x01;
    std::fs::write(&log, &damaged).unwrap();
    let out = chord(&["recover", path, "lanes", "main"]);
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got, expected);
    assert!(
        stderr(&out).contains("the last line has no newline"),
        "{}",
        stderr(&out)
    );
    let stats: Value = serde_json::from_str(&stdout(&chord(&["stats", path]))).unwrap();
    assert_eq!(
        stats["unterminated_line"],
        bytes.split(|&b| b == b'\n').count() - 1
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        damaged,
        "the CLI never changes a log"
    );

    // A log written by an older chord.
    std::fs::write(&log, "{\"chord\":1}\n").unwrap();
    let out = chord(&["stats", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("log format version 1 is not supported"),
        "{}",
        stderr(&out)
    );
}

/// `chord stats`, `addresses` and `recover` read a PostgreSQL store named by its URL, and say
/// of it what they say of a JSONL log with the same records.
#[test]
fn a_postgres_store_reads_as_its_jsonl_twin() {
    if !pg::available() {
        return;
    }
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    write_log(&log);
    let schema = pg::fresh_schema("cli");
    let url = pg::schema_url(&schema);
    write_to(chord::store::PostgresStore::open(&url, Durability::EveryAppend).unwrap());
    let stats = |target: &str| -> Value {
        serde_json::from_str(&stdout(&chord(&["stats", target]))).unwrap()
    };
    let (file, db) = (stats(log.to_str().unwrap()), stats(&url));
    for field in [
        "records",
        "addresses",
        "base_batches",
        "replay",
        "bytes_by_verb",
    ] {
        assert_eq!(db[field], file[field], "{field}");
    }
    assert_eq!(db["records"], 14);
    assert_eq!(db["bytes"], Value::Null);
    assert!(db["log"]
        .as_str()
        .unwrap()
        .ends_with(&format!("schema={schema}")));
    assert_eq!(
        stdout(&chord(&["addresses", &url])),
        stdout(&chord(&["addresses", log.to_str().unwrap()]))
    );
    let recovered = stdout(&chord(&["recover", &url, "lanes", "main"]));
    assert_eq!(
        recovered,
        stdout(&chord(&["recover", log.to_str().unwrap(), "lanes", "main"]))
    );
    let text = stdout(&chord(&["--format", "text", "stats", &url]));
    assert!(text.contains("14 in 2 addresses"), "{text}");
    // Addresses as chord names them, not a namespace and a key split by a tab.
    assert!(
        text.contains("  lanes/main\n") && !text.contains('\t'),
        "{text}"
    );
    // A server that does not answer is an error naming the database, never its password.
    let out = chord(&["stats", "postgres://me:secret@127.0.0.1:1/nothing"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("127.0.0.1:1/nothing") && !err.contains("secret"),
        "{err}"
    );
    // And why: the cause after what failed.
    assert!(
        err.contains("connect failed: ") && err.to_lowercase().contains("connection refused"),
        "{err}"
    );
}

/// A file that is not a chord log: one message, what is wrong and why, each said once.
#[test]
fn a_file_that_is_not_a_log_is_named_with_its_two_reasons_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello\nworld\n").unwrap();
    let path = path.to_str().unwrap();
    let out = chord(&["addresses", path]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "chord: {path}:1: corrupt record: not a chord log, or its header is damaged (the \
             first line must be the header {{\"chord\":2,\"c\":\"…\"}}): no checksum: a line \
             must end with ,\"c\":\"<8 lowercase hex digits>\"}}"
        )
    );
}
