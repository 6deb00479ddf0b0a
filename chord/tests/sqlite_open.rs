//! How a SQLite database becomes a store, and how one is read without a writer: what
//! `SqliteStore::contents` finds in each kind of file, a store started only in an empty
//! database (`create`, where `open` refuses pages without a table), and `open_read_only`,
//! which reads a store while changing nothing and refuses one a writer holds.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use chord::store::{recover, Address, Durability, Error, SqliteContents, SqliteStore, Store, BASE};
use serde_json::json;

fn lane() -> Address {
    Address::new("lanes", "main")
}

/// Every file in `dir`, its size and a hash of its bytes.
fn files(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                digest(&fs::read(e.path()).unwrap()),
            )
        })
        .collect()
}

fn digest(bytes: &[u8]) -> (usize, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    (bytes.len(), h.finish())
}

fn exec(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

#[test]
fn contents_tell_empty_chord_and_other_databases_apart() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.db");
    fs::File::create(&zero).unwrap();
    assert_eq!(
        SqliteStore::contents(&zero).unwrap(),
        SqliteContents::Empty { pages: 0 }
    );

    let dropped = dir.path().join("dropped.db");
    exec(&dropped, "CREATE TABLE t (x); DROP TABLE t;");
    let SqliteContents::Empty { pages } = SqliteStore::contents(&dropped).unwrap() else {
        panic!("a database whose only table was dropped is empty");
    };
    assert!(pages > 1, "{pages} pages");

    let other = dir.path().join("other.db");
    exec(&other, "CREATE TABLE users (x); CREATE TABLE accounts (y);");
    assert_eq!(
        SqliteStore::contents(&other).unwrap(),
        SqliteContents::Other {
            tables: vec!["accounts".to_owned(), "users".to_owned()]
        }
    );

    let store = dir.path().join("store.db");
    drop(SqliteStore::open(&store, Durability::EveryAppend).unwrap());
    assert_eq!(
        SqliteStore::contents(&store).unwrap(),
        SqliteContents::Chord
    );

    let text = dir.path().join("text.db");
    fs::write(
        &text,
        "not a database, but long enough to have a header of sorts\n",
    )
    .unwrap();
    let err = SqliteStore::contents(&text).unwrap_err();
    assert!(matches!(err, Error::Sqlite { .. }), "{err}");
    assert!(err.to_string().contains("text.db"), "{err}");

    let missing = dir.path().join("missing.db");
    let err = SqliteStore::contents(&missing).unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err}"
    );
    assert!(!missing.exists(), "looking created the file");
}

/// Pages without a table may be a damaged schema: `open` refuses them and leaves them alone;
/// `create` is how a caller who knows the database is empty starts a store in it.
#[test]
fn a_store_starts_in_an_empty_database_only_when_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    exec(&path, "CREATE TABLE t (x); DROP TABLE t;");
    let err = SqliteStore::open(&path, Durability::EveryAppend).unwrap_err();
    assert!(matches!(err, Error::CorruptDatabase { .. }), "{err}");
    assert!(err.to_string().contains("no table"), "{err}");
    assert!(
        matches!(
            SqliteStore::contents(&path).unwrap(),
            SqliteContents::Empty { .. }
        ),
        "open started a store"
    );

    let mut store = SqliteStore::create(&path, Durability::EveryAppend).unwrap();
    store
        .append(&lane(), r#"[["r",{"n":1}]]"#, Some(BASE))
        .unwrap();
    drop(store);
    let store = SqliteStore::open(&path, Durability::EveryAppend).unwrap();
    assert_eq!(recover(&store, &lane()).unwrap(), Some(json!({"n": 1})));
}

#[test]
fn a_read_only_store_reads_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let mut store = SqliteStore::open(&path, Durability::EveryAppend).unwrap();
    store
        .append(&lane(), r#"[["r",{"n":1}]]"#, Some(BASE))
        .unwrap();
    store.append(&lane(), r#"[["s",["n"],2]]"#, None).unwrap();
    drop(store);
    let before = files(dir.path());

    let mut reader = SqliteStore::open_read_only(&path).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.addresses().unwrap(), vec![lane()]);
    assert_eq!(recover(&reader, &lane()).unwrap(), Some(json!({"n": 2})));
    let err = reader
        .append(&lane(), r#"[["s",["n"],3]]"#, None)
        .unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    let err = reader.compact(&lane(), 1).unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    drop(reader);
    assert_eq!(files(dir.path()), before, "reading changed the directory");
}

#[test]
fn a_read_only_open_refuses_what_is_not_a_store_and_a_store_a_writer_holds() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.db");
    fs::File::create(&zero).unwrap();
    let err = SqliteStore::open_read_only(&zero).unwrap_err();
    assert!(matches!(err, Error::CorruptDatabase { .. }), "{err}");
    assert!(err.to_string().contains("not a chord store"), "{err}");
    assert_eq!(fs::metadata(&zero).unwrap().len(), 0, "reading wrote");

    let missing = dir.path().join("missing.db");
    assert!(matches!(
        SqliteStore::open_read_only(&missing).unwrap_err(),
        Error::Io { .. }
    ));
    assert!(!missing.exists(), "reading created the file");

    let path = dir.path().join("held.db");
    let mut writer = SqliteStore::open(&path, Durability::EveryAppend).unwrap();
    writer
        .append(&lane(), r#"[["r",{"n":1}]]"#, Some(BASE))
        .unwrap();
    let err = SqliteStore::open_read_only(&path).unwrap_err();
    assert!(matches!(err, Error::LockedByWriter { .. }), "{err}");
    assert!(err.to_string().contains("held.db"), "{err}");
    drop(writer);
    let reader = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(recover(&reader, &lane()).unwrap(), Some(json!({"n": 1})));
}
