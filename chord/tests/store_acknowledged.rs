//! Acknowledged means recoverable: a store and a writer refuse, before writing anything, every
//! batch recovery could not read back or apply, so an `Ok` from `append` or `flush` never
//! leaves a log that can no longer be recovered. Every backend (PostgreSQL when
//! `CHORD_TEST_POSTGRES_URL` names a server, see `support/postgres.rs`).

use chord::store::{recover, Address, Checkpoint, Durable, Error, LogWriter, Store, BASE};
use chord::{path, ErrorKind, Op, Tracked};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

#[path = "support/backends.rs"]
mod backends;

/// `[[...[1]...]]`, `n` arrays deep.
fn nested(n: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..n {
        v = Value::Array(vec![v]);
    }
    v
}

fn limit_of(err: &Error) -> Option<&'static str> {
    match err {
        Error::Unrecoverable { source, .. } => match source.kind() {
            ErrorKind::LimitExceeded { limit, .. } => Some(limit),
            _ => None,
        },
        _ => None,
    }
}

#[derive(Tracked, Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
struct Facet {
    state: Value,
}

/// The reported failure: a `Value` field set to an array 121 deep flushed fine, and then the
/// log could not be recovered ("exceeds the max_depth limit of 120").
#[test]
fn durable_refuses_a_value_too_deep_to_recover_and_the_log_stays_recoverable() {
    for (name, backend) in backends::available() {
        let dir = tempfile::tempdir().unwrap();
        let at = Address::new("facets", "deep");
        let open = || {
            let writer = LogWriter::new(backend.open(dir.path()), Checkpoint::EveryBatches(10));
            Durable::open(writer, at.clone(), Facet::default).unwrap()
        };
        let mut facet = open();
        // 119 arrays in the field: 120 levels in the document, the most it may have.
        facet.state().state.set(nested(119));
        facet.flush().unwrap();
        facet.state().state.set(nested(121));
        let err = facet.flush().unwrap_err();
        assert_eq!(limit_of(&err), Some("max_depth"), "{}: {err}", name);
        let cause = std::error::Error::source(&err).map(ToString::to_string);
        assert!(
            cause
                .as_deref()
                .is_some_and(|c| c.contains("exceeds the max_depth limit of 120")),
            "{err}: {cause:?}"
        );
        // After a refused flush the next one is a base batch; it is refused as well while the
        // value is too deep...
        assert_eq!(limit_of(&facet.flush().unwrap_err()), Some("max_depth"));
        // ... and what was acknowledged before is still what the log recovers.
        drop(facet);
        let mut facet = open();
        assert_eq!(facet.state, nested(119), "{}", name);
        facet.state().state.set(json!({"ok": true}));
        facet.flush().unwrap();
        drop(facet);
        assert_eq!(open().state, json!({"ok": true}), "{}", name);
    }
}

#[test]
fn the_writer_checks_path_length_plus_depth_statically() {
    for (name, backend) in backends::available() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = LogWriter::new(backend.open(dir.path()), Checkpoint::Never);
        let a = Address::new("w", "a");
        // A chain of objects 100 deep, then values under it.
        let mut doc = json!(null);
        for _ in 0..100 {
            doc = json!({ "k": doc });
        }
        writer.append(&a, &[Op::Replace(doc.clone())]).unwrap();
        let mut long = chord::NonEmptyPath::new("k");
        for _ in 1..100 {
            long = long.child("k");
        }
        // 100 segments + 20 levels = 120: fine. 100 + 21: never applies, refused.
        writer
            .append(&a, &[Op::Set(long.clone(), nested(20))])
            .unwrap();
        let err = writer
            .append(&a, &[Op::Set(long.clone(), nested(21))])
            .unwrap_err();
        assert_eq!(limit_of(&err), Some("max_depth"), "{}: {err}", name);
        let Error::Unrecoverable { source, address } = &err else {
            unreachable!()
        };
        assert_eq!((address, source.op_index()), (&a, Some(0)));
        assert_eq!(source.path().map(|p| p.len()), Some(100));
        // A splice's items sit one level below its path.
        writer
            .append(&a, &[Op::Set(long.clone(), json!([]))])
            .unwrap();
        let splice = |n| Op::Splice {
            path: long.clone().into(),
            index: 0,
            remove: 0,
            items: vec![nested(n)],
        };
        writer.append(&a, &[splice(19)]).unwrap();
        let err = writer.append(&a, &[splice(20)]).unwrap_err();
        assert_eq!(limit_of(&err), Some("max_depth"), "{err}");
        // The op's position in its batch is named.
        let err = writer
            .append(&a, &[Op::Set(path!["k", "x"], json!(1)), splice(20)])
            .unwrap_err();
        let Error::Unrecoverable { source, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(source.op_index(), Some(1));
        // Everything acknowledged recovers.
        let value = recover(writer.store(), &a).unwrap().unwrap();
        let mut at = &value;
        for _ in 0..100 {
            at = &at["k"];
        }
        assert_eq!(at, &json!([nested(19)]), "{}", name);
    }
}

#[test]
fn the_writer_refuses_a_first_batch_that_is_not_a_base() {
    for (name, backend) in backends::available() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = LogWriter::new(backend.open(dir.path()), Checkpoint::Never);
        let a = Address::new("w", "a");
        let err = writer
            .append(&a, &[Op::Set(path!["n"], json!(1))])
            .unwrap_err();
        let Error::Unrecoverable { source, .. } = &err else {
            panic!("{}: {err}", name)
        };
        assert_eq!(source.kind(), &ErrorKind::NoValue);
        assert!(writer.store().addresses().unwrap().is_empty());
        writer.append(&a, &[Op::Replace(json!({"n": 0}))]).unwrap();
        writer.append(&a, &[Op::Set(path!["n"], json!(1))]).unwrap();
        assert_eq!(recover(writer.store(), &a).unwrap(), Some(json!({"n": 1})));
    }
}

/// What `Store::append` refuses, whoever calls it: text recovery cannot parse (serde_json's
/// nesting limit included), ops the wire grammar or the decoder refuse whatever came before,
/// and ops no state can apply.
#[test]
fn the_store_refuses_what_recovery_cannot_read_back_and_writes_nothing() {
    for (name, backend) in backends::available() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = backend.open(dir.path());
        let a = Address::new("s", "a");
        store
            .append(&a, r#"[["r",{"t":"x","xs":[]}]]"#, Some(BASE))
            .unwrap();
        let good = recover(&*store, &a).unwrap();
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let invalid: Vec<(String, Option<&str>)> = vec![
            // 100,000 deep: serde_json refuses it at 128, recovery could never read it.
            (deep(100_000), None),
            (deep(129), None),
            (format!("[[\"r\",{}]]", deep(127)), Some(BASE)),
            // Tagged base without starting with `r`: recovery would start there with no value.
            (r#"[["s",["t"],"y"]]"#.into(), Some(BASE)),
            (r#"[]"#.into(), Some(BASE)),
        ];
        for (batch, tag) in &invalid {
            let err = store.append(&a, batch, *tag).unwrap_err();
            assert!(
                matches!(err, Error::InvalidBatch { .. }),
                "{}: {}: {err}",
                name,
                &batch[..batch.len().min(40)]
            );
        }
        let unrecoverable: Vec<(String, ErrorKind)> = vec![
            (
                r#"[["zz",["t"]]]"#.into(),
                ErrorKind::UnknownVerb("zz".into()),
            ),
            (r#"[["s",[],1]]"#.into(), ErrorKind::EmptyPath { verb: 's' }),
            (r#"[["a","x"]]"#.into(), ErrorKind::NoPreviousPath),
            (r#"[["r",{}],["a",0,"x"]]"#.into(), ErrorKind::UnknownId(0)),
            (
                r##"[["#",0,["t"]],["r",{}],["a",0,"x"]]"##.into(),
                ErrorKind::UnknownId(0),
            ),
            (
                r##"[["#",0,[]],["a",0,"x"]]"##.into(),
                ErrorKind::EmptyPath { verb: 'a' },
            ),
            (
                format!("[[\"r\",{}]]", deep(121)),
                ErrorKind::LimitExceeded {
                    limit: "max_depth",
                    max: 120,
                },
            ),
            (
                format!("[[\"s\",[\"xs\"],{}]]", deep(120)),
                ErrorKind::LimitExceeded {
                    limit: "max_depth",
                    max: 120,
                },
            ),
            // An id from an earlier batch could name a path of any length, but never an empty
            // one: one segment at least.
            (
                format!("[[\"s\",3,{}]]", deep(120)),
                ErrorKind::LimitExceeded {
                    limit: "max_depth",
                    max: 120,
                },
            ),
            (
                format!("[[\"p\",[\"xs\"],0,0,[{}]]]", deep(119)),
                ErrorKind::LimitExceeded {
                    limit: "max_depth",
                    max: 120,
                },
            ),
        ];
        for (batch, kind) in &unrecoverable {
            let err = store.append(&a, batch, None).unwrap_err();
            let Error::Unrecoverable { source, address } = &err else {
                panic!("{}: {batch}: {err}", name)
            };
            assert_eq!((source.kind(), address), (kind, &a), "{batch}: {err}");
            assert!(
                err.to_string().contains("recovery could not read back"),
                "{err}"
            );
        }
        assert_eq!(recover(&*store, &a).unwrap(), good, "{}", name);
        // What may be fine, depending on earlier batches, is accepted: an id defined before,
        // the deepest values that fit.
        let ok = [
            r##"[["#",0,["t"]],["a",0,"y"],["a","z"]]"##.to_owned(),
            r#"[["a",0,"!"]]"#.to_owned(),
            format!("[[\"s\",[\"xs\"],{}]]", deep(119)),
            format!("[[\"s\",[\"xs\"],{}]]", deep(119)),
        ];
        for batch in &ok {
            store.append(&a, batch, None).unwrap();
        }
        store
            .append(&a, &format!("[[\"r\",{}]]", deep(120)), Some(BASE))
            .unwrap();
        drop(store);
        let store = backend.open(dir.path());
        let r = chord::store::replay(&*store, &a, None).unwrap();
        assert_eq!(r.batches, 1, "{}", name);
        assert_eq!(r.value.map(|v| v.to_string()), Some(deep(120)));
    }
}
