//! Every kind of store, created and inspected from the command line: `chord serve` of a
//! path that does not exist creates the kind its name (or `--store`) says, and refuses a
//! name that says none; an empty SQLite database becomes a store only with `--create`, and
//! another application's never; `addresses`, `show`, `recover` and `stats` read a SQLite
//! store as its JSONL twin; a build without SQLite names the feature; a URL of an unknown
//! scheme is refused by name, never read as a path.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use chord::store::{Address, Checkpoint, LogWriter, Store};
use chord::{path, Op};
use serde_json::{json, Value};

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
const JSONL_HEADER: &[u8] = b"{\"chord\":2";

/// The tests of this binary run one at a time: they open logs for writing in this process
/// (taking the log's lock) while others spawn `chord`, and a child forked while a log is open
/// holds a copy of its descriptor, and so its lock, until it executes `chord`: a server
/// started on that log in that moment would find it locked.
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

/// Runs `chord`, which must fail; its stderr.
fn fails(args: &[&str]) -> String {
    let out = chord(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes two values: a lane of ten batches with a base every four, and a tool's output.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
fn write_to(store: impl Store) {
    let mut writer = LogWriter::new(store, Checkpoint::EveryBatches(4));
    let lane = Address::new("lanes", "main");
    let tool = Address::new("tools", "build");
    for i in 0..10 {
        let batch = if writer.wants_base(&lane) {
            vec![Op::Replace(json!({"text": format!("tok{i} ")}))]
        } else {
            vec![Op::Append(path!["text"], format!("tok{i} "))]
        };
        writer.append(&lane, &batch).unwrap();
        if i % 3 == 0 {
            writer
                .append(&tool, &[Op::Replace(json!({"out": i}))])
                .unwrap();
        }
    }
}

fn first_bytes(path: &Path, n: usize) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.truncate(n);
    bytes
}

/// A running `chord serve` with writes on (token `w1`), and its address.
struct Served {
    child: Child,
    addr: String,
}

/// A server a failed test leaves running is killed, not left holding its port, its log's
/// lock or its database connections.
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `chord serve LOG --public --write-token-file ... ARGS` on a free port; the
    /// stderr of a server that did not start.
    fn start(dir: &Path, log: &Path, args: &[&str]) -> Result<Served, String> {
        let tokens = dir.join("writers");
        std::fs::write(&tokens, "w1\n").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_chord"))
            .arg("serve")
            .arg(log)
            .args(["--public", "--listen", "127.0.0.1:0", "--write-token-file"])
            .arg(&tokens)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run chord serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        match line.trim().strip_prefix("listening on http://") {
            Some(addr) => Ok(Served {
                addr: addr.to_owned(),
                child,
            }),
            None => {
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                child.wait().unwrap();
                Err(err)
            }
        }
    }

    /// Creates `lanes/main` through the server with its first batch and appends another;
    /// the statuses.
    fn append(&self) -> (u16, u16) {
        (self.call("PUT", FIRST), self.call("POST", SECOND))
    }

    /// One request to `lanes/main` with the write token; its status.
    fn call(&self, method: &str, body: &str) -> u16 {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "{method} /streams/lanes/main HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Authorization: Bearer w1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer[9..12].parse().unwrap()
    }

    /// Sends `SIGTERM` and waits for a clean exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        assert!(self.child.wait().unwrap().success());
    }
}

/// The first message of a new lane (one batch), as a writer sends it, and a second.
const FIRST: &str = r#"[["r",{"text":"hi"}]]"#;
const SECOND: &str = r#"[[["a",["text"],"!"]]]"#;

#[test]
fn serving_a_missing_path_creates_the_kind_its_name_says() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut kinds = vec![("lanes.jsonl", JSONL_HEADER)];
    if cfg!(feature = "sqlite") {
        kinds.extend([
            ("lanes.sqlite", SQLITE_MAGIC),
            ("lanes.sqlite3", SQLITE_MAGIC),
            ("lanes.db", SQLITE_MAGIC),
        ]);
    }
    for (name, magic) in kinds {
        let log = dir.path().join(name);
        let served = Served::start(dir.path(), &log, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(served.append(), (201, 204), "{name}");
        served.stop();
        assert_eq!(first_bytes(&log, magic.len()), magic, "{name}");
        // And it reads back as what it is.
        let got: Value = serde_json::from_str(&stdout(&chord(&[
            "recover",
            log.to_str().unwrap(),
            "lanes",
            "main",
        ])))
        .unwrap();
        assert_eq!(got, json!({"text": "hi!"}), "{name}");
    }
}

#[test]
fn a_name_of_no_kind_is_refused_naming_the_choices_unless_store_says() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lanes.log");
    let e = Served::start(dir.path(), &log, &[]).err().expect("refused");
    for choice in [
        "lanes.log",
        ".jsonl",
        ".sqlite",
        ".sqlite3",
        ".db",
        "--store",
    ] {
        assert!(e.contains(choice), "{choice}: {e}");
    }
    assert!(!log.exists(), "created {}", log.display());

    let mut kinds = vec![("jsonl", JSONL_HEADER)];
    if cfg!(feature = "sqlite") {
        kinds.push(("sqlite", SQLITE_MAGIC));
    }
    for (kind, magic) in kinds {
        let log = dir.path().join(format!("{kind}.log"));
        let served = Served::start(dir.path(), &log, &["--store", kind]).unwrap();
        assert_eq!(served.append(), (201, 204), "{kind}");
        served.stop();
        assert_eq!(first_bytes(&log, magic.len()), magic, "{kind}");
    }
}

/// A `.sqlite` file of 0 bytes is an empty SQLite database, never a JSONL log: refused
/// unasked, a SQLite store with `--create`.
#[cfg(feature = "sqlite")]
#[test]
fn an_empty_sqlite_file_becomes_a_store_only_with_create() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lanes.sqlite");
    std::fs::File::create(&log).unwrap();
    let e = Served::start(dir.path(), &log, &[]).err().expect("refused");
    assert!(
        e.contains("lanes.sqlite") && e.contains("empty SQLite database") && e.contains("--create"),
        "{e}"
    );
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 0, "wrote to it");

    let served = Served::start(dir.path(), &log, &["--create"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(served.append(), (201, 204));
    served.stop();
    assert_eq!(first_bytes(&log, SQLITE_MAGIC.len()), SQLITE_MAGIC);
}

/// A SQLite database without a table (what remains when every table was dropped, and what a
/// damaged schema looks like): refused unasked, a store with `--create`. One with another
/// application's tables is refused either way, and left alone.
#[cfg(feature = "sqlite")]
#[test]
fn a_sqlite_database_without_chord_tables_is_a_store_only_when_empty_and_asked() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("empty.db");
    rusqlite::Connection::open(&log)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); DROP TABLE t;")
        .unwrap();
    let e = fails(&["stats", log.to_str().unwrap()]);
    assert!(
        e.contains("empty.db") && e.contains("pages, no table") && e.contains("--create"),
        "{e}"
    );
    let e = Served::start(dir.path(), &log, &[]).err().expect("refused");
    assert!(e.contains("empty.db") && e.contains("--create"), "{e}");
    let served = Served::start(dir.path(), &log, &["--create"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(served.append(), (201, 204));
    served.stop();
    let listed: Value =
        serde_json::from_str(&stdout(&chord(&["addresses", log.to_str().unwrap()]))).unwrap();
    assert_eq!(
        listed,
        json!([{"namespace": "lanes", "key": "main", "records": 2}])
    );

    let other = dir.path().join("app.db");
    let app = rusqlite::Connection::open(&other).unwrap();
    app.execute_batch("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ann');")
        .unwrap();
    drop(app);
    for args in [&[][..], &["--create"][..]] {
        let e = Served::start(dir.path(), &other, args)
            .err()
            .expect("refused");
        assert!(
            e.contains("app.db")
                && e.contains("other tables (users)")
                && e.contains("not a chord store"),
            "{args:?}: {e}"
        );
    }
    let e = fails(&["stats", other.to_str().unwrap()]);
    assert!(e.contains("other tables (users)"), "{e}");
    let tables: i64 = rusqlite::Connection::open(&other)
        .unwrap()
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1, "chord's tables were added");
}

/// `addresses`, `show`, `recover` and `stats` say of a SQLite store what they say of a JSONL
/// log with the same records, and change nothing in it.
#[cfg(feature = "sqlite")]
#[test]
fn every_command_reads_a_sqlite_store_as_its_jsonl_twin() {
    let _serial = serial();
    use chord::store::{Durability, JsonlStore};
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("twin.jsonl");
    write_to(JsonlStore::open(&jsonl, Durability::EveryAppend).unwrap());
    let db = dir.path().join("twin.sqlite");
    write_to(chord::store::SqliteStore::open(&db, Durability::EveryAppend).unwrap());
    let before = std::fs::read(&db).unwrap();
    let (jsonl, db_path) = (jsonl.to_str().unwrap(), db.to_str().unwrap());

    let stats =
        |log: &str| -> Value { serde_json::from_str(&stdout(&chord(&["stats", log]))).unwrap() };
    let (file, sqlite) = (stats(jsonl), stats(db_path));
    for field in [
        "records",
        "addresses",
        "base_batches",
        "replay",
        "bytes_by_verb",
    ] {
        assert_eq!(sqlite[field], file[field], "{field}");
    }
    assert_eq!(sqlite["records"], 14);
    assert_eq!(sqlite["log"], db_path);
    for args in [
        &["addresses"][..],
        &["recover", "lanes", "main"][..],
        &["recover", "tools", "build"][..],
    ] {
        let run = |log: &str| {
            let mut all = vec![args[0], log];
            all.extend(&args[1..]);
            stdout(&chord(&all))
        };
        assert_eq!(run(db_path), run(jsonl), "{args:?}");
    }
    // Seqs are the store's own; the ops and tags are the same.
    let ops = |log: &str| -> Vec<(Value, Value)> {
        stdout(&chord(&["show", log, "lanes", "main"]))
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["tag"].clone(), v["ops"].clone())
            })
            .collect()
    };
    let shown = ops(db_path);
    assert_eq!(shown.len(), 10);
    assert_eq!(shown, ops(jsonl));
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "reading changed the database"
    );
}

#[test]
fn a_file_whose_contents_are_another_kind_than_its_name_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.jsonl");
    let mut f = std::fs::File::create(&db).unwrap();
    f.write_all(SQLITE_MAGIC).unwrap();
    f.write_all(&[0; 84]).unwrap();
    drop(f);
    let e = fails(&["stats", db.to_str().unwrap()]);
    assert!(
        e.contains("log.jsonl")
            && e.contains("its name says a JSONL log, but it is a SQLite database"),
        "{e}"
    );
    let text = dir.path().join("log.sqlite");
    std::fs::write(&text, "{\"chord\":2}\n").unwrap();
    let e = fails(&["stats", text.to_str().unwrap()]);
    assert!(
        e.contains("log.sqlite")
            && e.contains("says a SQLite database, but it is a JSONL log")
            && e.contains("not SQLite's header"),
        "{e}"
    );
    let e = fails(&["--store", "jsonl", "stats", text.to_str().unwrap()]);
    assert!(!e.contains("says"), "--store jsonl reads it as JSONL: {e}");
}

#[test]
fn an_unknown_url_scheme_is_refused_by_name() {
    let _serial = serial();
    for command in [&["stats"][..], &["addresses"][..], &["recover"][..]] {
        let mut args = command.to_vec();
        args.push("mysql://me@127.0.0.1:3306/app");
        if command[0] == "recover" {
            args.extend(["lanes", "main"]);
        }
        let e = fails(&args);
        assert!(
            e.contains("mysql://me@127.0.0.1:3306/app")
                && e.contains("unknown scheme `mysql://`")
                && e.contains("postgres://")
                && !e.contains("No such file"),
            "{args:?}: {e}"
        );
    }
    let e = fails(&["serve", "sqlite://lanes.db", "--public"]);
    assert!(e.contains("unknown scheme `sqlite://`"), "{e}");
}

/// A build without the `sqlite` feature says which feature to install, for a database it is
/// given to read or to serve, and for one it would create.
#[cfg(not(feature = "sqlite"))]
#[test]
fn a_build_without_sqlite_names_the_feature() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lanes.sqlite");
    let mut bytes = SQLITE_MAGIC.to_vec();
    bytes.resize(512, 0);
    std::fs::write(&db, bytes).unwrap();
    let db = db.to_str().unwrap();
    for args in [
        &["stats", db][..],
        &["addresses", db][..],
        &["recover", db, "lanes", "main"][..],
        &["show", db, "lanes", "main"][..],
        &["serve", db, "--public"][..],
    ] {
        let e = fails(args);
        assert!(
            e.contains("lanes.sqlite")
                && e.contains("this build has no SQLite support: install with --features sqlite"),
            "{args:?}: {e}"
        );
    }
    let new = dir.path().join("new.db");
    let e = Served::start(dir.path(), &new, &[]).err().expect("refused");
    assert!(e.contains("--features sqlite"), "{e}");
    assert!(!new.exists());
}
