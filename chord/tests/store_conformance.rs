//! One conformance suite for every storage backend: append, paging both ways, `stop_at_tag`
//! at page edges, recovery, reopen, durability, the one-writer lock, and the log writer with
//! its checkpoint policy.
//!
//! Each case is written once, as a function over a [`Backend`] (how to open a store in a
//! directory), and run against each backend by the `suite!` macro at the bottom. PostgreSQL
//! (feature `postgres`) runs when `CHORD_TEST_POSTGRES_URL` names a server (see
//! `support/postgres.rs`): each test directory maps to a schema of its own.

use std::time::{Duration, Instant};

use chord::store::{
    recover, recover_as, recover_at, replay, Address, Checkpoint, Durability, Error, JsonlStore,
    LogWriter, ReadOptions, Record, Store, BASE,
};
use chord::{path, Op};
use serde_json::json;

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

fn addr(key: &str) -> Address {
    Address::new("conformance", key)
}

fn set(n: u64) -> String {
    format!(r#"[["s",["n"],{n}]]"#)
}

fn base(n: u64) -> String {
    format!(r#"[["r",{{"n":{n}}}]]"#)
}

fn seqs(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

/// Appends `n` records to `address`: a base record wherever `is_base(i)`, a set otherwise.
fn fill(
    store: &mut dyn Store,
    address: &Address,
    n: u64,
    is_base: impl Fn(u64) -> bool,
) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let (batch, tag) = if is_base(i) {
                (base(i), Some(BASE))
            } else {
                (set(i), None)
            };
            store.append(address, &batch, tag).expect("append")
        })
        .collect()
}

/// Reads every page of a list with the given options and returns the pages' seqs.
fn pages(store: &dyn Store, address: &Address, mut options: ReadOptions) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    loop {
        let page = store.read_list(address, &options).expect("read");
        out.push(seqs(&page.records));
        match page.next_cursor {
            Some(c) => {
                assert_eq!(Some(c), page.records.last().map(|r| r.seq));
                options.cursor = Some(c);
            }
            None => return out,
        }
    }
}

fn append_and_read_back(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    // Batches are stored byte for byte, whatever JSON they hold: storage never parses ops.
    let texts = [
        r#"[["r",{"text":"héllo 😀","xs":[1,2.5,null]}]]"#,
        r##"[["#",0,["text"]],["a",0," wörld"],["a","!"]]"##,
        r#"[ ["s", ["xs", 0], {"nested": "\"quoted\"\\"}] ]"#,
        "[]",
    ];
    let tags = [Some(BASE), None, Some("custom"), None];
    let mut appended = Vec::new();
    for (text, tag) in texts.iter().zip(tags) {
        appended.push(store.append(&a, text, tag).unwrap());
    }
    assert!(appended.windows(2).all(|w| w[0] < w[1]), "{appended:?}");
    let page = store.read_list(&a, &ReadOptions::asc()).unwrap();
    assert_eq!(page.next_cursor, None);
    let expected: Vec<Record> = appended
        .iter()
        .zip(texts.iter().zip(tags))
        .map(|(&seq, (text, tag))| Record {
            seq,
            batch: (*text).to_owned(),
            tag: tag.map(str::to_owned),
        })
        .collect();
    assert_eq!(page.records, expected);
    let desc = store.read_list(&a, &ReadOptions::desc()).unwrap();
    let mut reversed = expected.clone();
    reversed.reverse();
    assert_eq!(desc.records, reversed);
}

fn seqs_are_global_across_addresses(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let (a, b) = (addr("a"), addr("b"));
    let mut seen = Vec::new();
    let mut in_a = Vec::new();
    let mut in_b = Vec::new();
    for i in 0..20 {
        let (address, list) = if i % 3 == 0 {
            (&b, &mut in_b)
        } else {
            (&a, &mut in_a)
        };
        let seq = store.append(address, &set(i), None).unwrap();
        seen.push(seq);
        list.push(seq);
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    let read = |x: &Address| seqs(&store.read_list(x, &ReadOptions::asc()).unwrap().records);
    assert_eq!(read(&a), in_a);
    assert_eq!(read(&b), in_b);
    // A cursor may be any seq, also one that belongs to another address.
    let page = store
        .read_list(&a, &ReadOptions::asc().cursor(Some(in_b[3])))
        .unwrap();
    let after: Vec<u64> = in_a.iter().copied().filter(|&s| s > in_b[3]).collect();
    assert_eq!(seqs(&page.records), after);
}

fn paging_ascending(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    let all = fill(&mut *store, &a, 25, |_| false);
    let got = pages(&*store, &a, ReadOptions::asc().limit(10));
    assert_eq!(
        got,
        [all[..10].to_vec(), all[10..20].to_vec(), all[20..].to_vec()]
    );
    // A last page that is exactly full says there is nothing more.
    let got = pages(&*store, &a, ReadOptions::asc().limit(5));
    assert_eq!(got.len(), 5);
    assert_eq!(got.concat(), all);
    // Limit 1 walks record by record; a huge limit reads everything at once.
    assert_eq!(pages(&*store, &a, ReadOptions::asc().limit(1)).len(), 25);
    assert_eq!(
        pages(&*store, &a, ReadOptions::asc().limit(usize::MAX)),
        std::slice::from_ref(&all)
    );
    // A cursor is exclusive; one past the end reads an empty page.
    let page = store
        .read_list(&a, &ReadOptions::asc().cursor(Some(all[7])).limit(3))
        .unwrap();
    assert_eq!(seqs(&page.records), &all[8..11]);
    assert_eq!(page.next_cursor, Some(all[10]));
    let page = store
        .read_list(&a, &ReadOptions::asc().cursor(Some(all[24])))
        .unwrap();
    assert!(page.records.is_empty());
    assert_eq!(page.next_cursor, None);
}

fn paging_descending(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    let mut all = fill(&mut *store, &a, 25, |_| false);
    all.reverse();
    let got = pages(&*store, &a, ReadOptions::desc().limit(10));
    assert_eq!(
        got,
        [all[..10].to_vec(), all[10..20].to_vec(), all[20..].to_vec()]
    );
    let got = pages(&*store, &a, ReadOptions::desc().limit(5));
    assert_eq!(got.len(), 5);
    assert_eq!(got.concat(), all);
    let page = store
        .read_list(&a, &ReadOptions::desc().cursor(Some(all[7])).limit(3))
        .unwrap();
    assert_eq!(seqs(&page.records), &all[8..11]);
    let page = store
        .read_list(&a, &ReadOptions::desc().cursor(Some(all[24])))
        .unwrap();
    assert!(page.records.is_empty());
    assert_eq!(page.next_cursor, None);
}

fn stop_at_tag_at_page_edges(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    // Records 0..30; bases at 0, 10 and 20.
    let all = fill(&mut *store, &a, 30, |i| i % 10 == 0);
    let read = |options: ReadOptions| store.read_list(&a, &options).unwrap();

    // Descending from the end: the base at 20 is the 10th record, exactly the page's last.
    let page = read(ReadOptions::desc().limit(10).stop_at_tag(BASE));
    assert_eq!(seqs(&page.records), rev(&all[20..]));
    assert_eq!(page.records.last().unwrap().tag.as_deref(), Some(BASE));
    assert_eq!(page.next_cursor, Some(all[20]));

    // One short: the base lies just past the limit, so the page is full and has no base; the
    // search never goes past the limit and the caller pages on.
    let page = read(ReadOptions::desc().limit(9).stop_at_tag(BASE));
    assert_eq!(seqs(&page.records), rev(&all[21..]));
    assert!(page.records.iter().all(|r| r.tag.is_none()));
    assert_eq!(page.next_cursor, Some(all[21]));
    let next = read(
        ReadOptions::desc()
            .limit(9)
            .stop_at_tag(BASE)
            .cursor(page.next_cursor),
    );
    assert_eq!(seqs(&next.records), [all[20]]);

    // The base is the page's first record: a page of one.
    let page = read(
        ReadOptions::desc()
            .limit(10)
            .stop_at_tag(BASE)
            .cursor(Some(all[21])),
    );
    assert_eq!(seqs(&page.records), [all[20]]);

    // The first record of the list is a base: the page stops there, with nothing beyond.
    let page = read(
        ReadOptions::desc()
            .limit(50)
            .stop_at_tag(BASE)
            .cursor(Some(all[10])),
    );
    assert_eq!(seqs(&page.records), rev(&all[..10]));
    assert_eq!(page.next_cursor, None);

    // Ascending stops at the next base after the cursor, included.
    let page = read(ReadOptions::asc().stop_at_tag(BASE).cursor(Some(all[0])));
    assert_eq!(seqs(&page.records), &all[1..11]);
    assert_eq!(page.next_cursor, Some(all[10]));
    // ... and at the very first record when it is tagged.
    let page = read(ReadOptions::asc().stop_at_tag(BASE));
    assert_eq!(seqs(&page.records), [all[0]]);

    // A tag no record carries never stops a page.
    let page = read(ReadOptions::desc().limit(100).stop_at_tag("nothing"));
    assert_eq!(page.records.len(), 30);
    assert_eq!(page.next_cursor, None);
}

fn rev(seqs: &[u64]) -> Vec<u64> {
    seqs.iter().rev().copied().collect()
}

fn empty_and_invalid_reads(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    for options in [ReadOptions::asc(), ReadOptions::desc().stop_at_tag(BASE)] {
        let page = store.read_list(&a, &options).unwrap();
        assert!(page.records.is_empty());
        assert_eq!(page.next_cursor, None);
    }
    store.append(&a, &base(0), Some(BASE)).unwrap();
    let err = store
        .read_list(&a, &ReadOptions::asc().limit(0))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOptions { .. }), "{err}");
    assert_eq!(store.addresses().unwrap(), [a]);
}

fn invalid_batches_are_refused(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let a = addr("a");
    for bad in [
        "",
        "not json",
        r#"{"s":1}"#,
        r#"[["s",["n"],1]"#,
        "[\n]",
        r#"[["a",["t"],"x"]] trailing"#,
    ] {
        let err = store.append(&a, bad, None).unwrap_err();
        assert!(matches!(err, Error::InvalidBatch { .. }), "{bad:?}: {err}");
    }
    assert!(store.addresses().unwrap().is_empty());
    let seq = store.append(&a, &set(1), None).unwrap();
    assert_eq!(
        seqs(&store.read_list(&a, &ReadOptions::asc()).unwrap().records),
        [seq]
    );
}

fn addresses_are_listed_sorted(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    let long = "k".repeat(300);
    let names = [
        Address::new("b", "1"),
        Address::new("a", "z"),
        Address::new("a", "b"),
        Address::new("ünï", "cödé"),
        Address::new("ns with spaces/and \"quotes\"", long.as_str()),
    ];
    for (i, a) in names.iter().enumerate() {
        store.append(a, &set(i as u64), None).unwrap();
        store.append(a, &set(i as u64), None).unwrap();
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    assert_eq!(store.addresses().unwrap(), sorted);
    drop(store);
    let store = backend.open(dir.path());
    assert_eq!(store.addresses().unwrap(), sorted);
    for a in &names {
        assert_eq!(
            store
                .read_list(a, &ReadOptions::asc())
                .unwrap()
                .records
                .len(),
            2
        );
    }
}

fn recovery(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open_with(dir.path(), LAZY);
    let a = addr("a");
    // 250 records with bases at 0 and 37: the last base is 212 records back, so recovery
    // pages (100 a page) past two pages without a base.
    let all = fill(&mut *store, &a, 250, |i| i == 0 || i == 37);
    let r = replay(&*store, &a, None).unwrap();
    assert_eq!(r.value, Some(json!({"n": 249})));
    assert_eq!(r.base_seq, Some(all[37]));
    assert_eq!(r.seq, Some(all[249]));
    assert_eq!(r.batches, 250 - 37);
    // At a given seq.
    assert_eq!(
        recover_at(&*store, &a, all[36]).unwrap(),
        Some(json!({"n": 36}))
    );
    assert_eq!(
        recover_at(&*store, &a, all[37]).unwrap(),
        Some(json!({"n": 37}))
    );
    assert_eq!(
        recover_at(&*store, &a, all[0]).unwrap(),
        Some(json!({"n": 0}))
    );
    assert_eq!(recover_at(&*store, &a, all[0] - 1).unwrap(), None);
    assert_eq!(
        recover_at(&*store, &a, u64::MAX).unwrap(),
        Some(json!({"n": 249}))
    );
    let r = replay(&*store, &a, Some(all[100])).unwrap();
    assert_eq!(
        (r.base_seq, r.seq, r.batches),
        (Some(all[37]), Some(all[100]), 64)
    );
    // Typed.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct N {
        n: u64,
    }
    assert_eq!(recover_as::<N, _>(&*store, &a).unwrap(), Some(N { n: 249 }));
    let err = recover_as::<Vec<String>, _>(&*store, &a).unwrap_err();
    assert!(matches!(err, Error::Deserialize { .. }), "{err}");
    assert_eq!(recover(&*store, &addr("nothing")).unwrap(), None);

    // A history that does not start with a base batch fails at its first record, by name.
    let b = addr("b");
    let first = store.append(&b, &set(1), None).unwrap();
    let err = recover(&*store, &b).unwrap_err();
    match &err {
        Error::Replay { address, seq, .. } => assert_eq!((address, *seq), (&b, first)),
        other => panic!("{other}"),
    }
    // So does a batch that refers to a path id never defined.
    let c = addr("c");
    store.append(&c, &base(1), Some(BASE)).unwrap();
    let bad = store.append(&c, r#"[["s",7,1]]"#, None).unwrap();
    assert!(matches!(recover(&*store, &c), Err(Error::Replay { seq, .. }) if seq == bad));
}

fn reopen(backend: &Backend) {
    for durability in [Durability::EveryAppend, LAZY] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (addr("a"), addr("b"));
        let mut store = backend.open_with(dir.path(), durability);
        let first = fill(&mut *store, &a, 30, |i| i % 10 == 0);
        let other = store.append(&b, &base(7), Some(BASE)).unwrap();
        let before = replay(&*store, &a, None).unwrap();
        let everything = pages(&*store, &a, ReadOptions::asc());
        drop(store);

        let mut store = backend.open_with(dir.path(), durability);
        assert_eq!(store.durable_seq(), Some(other));
        assert_eq!(pages(&*store, &a, ReadOptions::asc()), everything);
        assert_eq!(replay(&*store, &a, None).unwrap(), before);
        assert_eq!(recover(&*store, &b).unwrap(), Some(json!({"n": 7})));
        // Seqs continue after everything handed out before (gaps allowed), never reused.
        let next = store.append(&a, &set(99), None).unwrap();
        assert!(next > other && next > *first.last().unwrap(), "{next}");
        let later = store.append(&b, &set(100), None).unwrap();
        assert!(later > next);
        drop(store);
        let store = backend.open_with(dir.path(), durability);
        assert_eq!(recover(&*store, &a).unwrap(), Some(json!({"n": 99})));
        assert_eq!(recover(&*store, &b).unwrap(), Some(json!({"n": 100})));
        assert_eq!(store.addresses().unwrap(), [a, b]);
    }
}

fn durability_every_append(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    assert_eq!(store.durable_seq(), None);
    for i in 0..5 {
        let seq = store.append(&addr("a"), &set(i), None).unwrap();
        assert_eq!(store.durable_seq(), Some(seq));
    }
}

fn durability_grouped_by_count(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let grouped = Durability::Grouped {
        max_batches: 3,
        max_delay: Duration::from_secs(3600),
    };
    let mut store = backend.open_with(dir.path(), grouped);
    let a = addr("a");
    let s1 = store.append(&a, &set(1), None).unwrap();
    let before = store.durable_seq();
    assert!(!matches!(before, Some(d) if d >= s1), "{before:?}");
    store.append(&a, &set(2), None).unwrap();
    let s3 = store.append(&a, &set(3), None).unwrap();
    // The third waiting batch completes the group.
    assert_eq!(store.durable_seq(), Some(s3));
    let s4 = store.append(&a, &set(4), None).unwrap();
    assert_eq!(store.durable_seq(), Some(s3));
    assert_eq!(store.sync().unwrap(), Some(s4));
    assert_eq!(store.durable_seq(), Some(s4));
}

fn durability_grouped_by_delay(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let grouped = Durability::Grouped {
        max_batches: 1_000_000,
        max_delay: Duration::from_millis(5),
    };
    let mut store = backend.open_with(dir.path(), grouped);
    let seq = store.append(&addr("a"), &set(1), None).unwrap();
    // The background flush makes it durable with no further call; wait for it (the bound is
    // a few milliseconds; this only gives up after a minute, so it never fails on timing).
    let give_up = Instant::now() + Duration::from_secs(60);
    while store.durable_seq() != Some(seq) {
        assert!(Instant::now() < give_up, "never became durable");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether `err` refuses a second writer: of the whole log (the file backends), or of the
/// address (PostgreSQL, where writers of different addresses share one database).
fn refuses_a_writer(err: &Error) -> bool {
    #[cfg(feature = "postgres")]
    if matches!(err, Error::AddressLocked { .. }) {
        return true;
    }
    matches!(err, Error::Locked { .. })
}

fn second_writer_is_refused(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = backend.open(dir.path());
    store.append(&addr("a"), &base(1), Some(BASE)).unwrap();
    // Refused when it opens, or at the latest when it appends to the address.
    let err = match (backend.open)(dir.path(), Durability::EveryAppend) {
        Err(err) => err,
        Ok(mut second) => match second.append(&addr("a"), &set(3), None) {
            Err(err) => err,
            Ok(seq) => panic!("a second writer was let in (seq {seq})"),
        },
    };
    assert!(refuses_a_writer(&err), "{err}");
    assert!(err.to_string().contains("another writer"), "{err}");
    // The first writer is unaffected, and the lock goes with it.
    store.append(&addr("a"), &set(2), None).unwrap();
    drop(store);
    let store = backend.open(dir.path());
    assert_eq!(recover(&*store, &addr("a")).unwrap(), Some(json!({"n": 2})));
}

fn writer_encodes_tags_and_recovers(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let store = backend.open(dir.path());
    let mut writer = LogWriter::new(store, Checkpoint::Never);
    let a = addr("lane");
    assert!(writer.wants_base(&a));
    assert_eq!(writer.append(&a, &[]).unwrap(), None);
    let batches = [
        vec![Op::Replace(json!({"text": "", "items": []}))],
        vec![Op::Append(path!["text"], "Hel".into())],
        vec![
            Op::Append(path!["text"], "lo".into()),
            Op::Splice {
                path: path!["items"].into(),
                index: 0,
                remove: 0,
                items: vec![json!(1)],
            },
        ],
        vec![Op::Append(path!["text"], "!".into())],
    ];
    for batch in &batches {
        writer.append(&a, batch).unwrap();
    }
    assert!(!writer.wants_base(&a));
    let records = writer
        .store()
        .read_list(&a, &ReadOptions::asc())
        .unwrap()
        .records;
    let tags: Vec<Option<&str>> = records.iter().map(|r| r.tag.as_deref()).collect();
    assert_eq!(tags, [Some(BASE), None, None, None]);
    // One encoder spans the history: the third use of `text` goes by an interned id.
    assert_eq!(records[3].batch, r#"[["a",0,"!"]]"#);
    let expected = json!({"text": "Hello!", "items": [1]});
    assert_eq!(recover(writer.store(), &a).unwrap(), Some(expected.clone()));

    // A new writer (a restart) starts a fresh encoder; what it writes still decodes.
    let store = writer.into_store();
    let mut writer = LogWriter::new(store, Checkpoint::Never);
    assert!(!writer.wants_base(&a));
    writer
        .append(&a, &[Op::Append(path!["text"], "?".into())])
        .unwrap();
    writer
        .append(&a, &[Op::Append(path!["text"], "?".into())])
        .unwrap();
    let value = recover(writer.store(), &a).unwrap().unwrap();
    assert_eq!(value["text"], "Hello!??");
}

/// The measurement from the design: 500 writes into a 50 KB rolling window (each write a
/// `t` + `a` on one string), with a base batch whenever the policy asks, replay at most 50
/// batches; without a policy, all 500.
fn rolling_window_checkpoints(backend: &Backend) {
    const WINDOW: usize = 50 * 1024;
    for (policy, bound) in [(Checkpoint::EveryBatches(50), 50), (Checkpoint::Never, 500)] {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = LogWriter::new(backend.open_with(dir.path(), LAZY), policy);
        let a = addr("tool-output");
        let mut text = String::new();
        let mut bases = 0;
        let mut longest = 0;
        for i in 0..500 {
            let chunk = format!("{i:>5} {}\n", "output ".repeat(20));
            text.push_str(&chunk);
            let cut = text.len().saturating_sub(WINDOW);
            text.drain(..cut);
            let batch = if writer.wants_base(&a) {
                bases += 1;
                vec![Op::Replace(json!({ "out": text }))]
            } else {
                vec![
                    Op::Truncate(path!["out"], cut),
                    Op::Append(path!["out"], chunk),
                ]
            };
            writer.append(&a, &batch).unwrap();
            longest = longest.max(replay_len(writer.store(), &a));
            if i % 50 == 49 {
                let value = recover(writer.store(), &a).unwrap();
                assert_eq!(value, Some(json!({ "out": text })));
            }
        }
        assert!(longest <= bound, "{policy:?}: replayed {longest} batches");
        let r = replay(writer.store(), &a, None).unwrap();
        assert_eq!(r.value, Some(json!({ "out": text })));
        match policy {
            Checkpoint::Never => assert_eq!((bases, r.batches), (1, 500)),
            _ => assert_eq!((bases, r.batches), (10, 50)),
        }
    }
}

/// How many records recovery would replay: back to the last base, counted without decoding.
fn replay_len(store: &dyn Store, address: &Address) -> usize {
    let mut options = ReadOptions::desc().stop_at_tag(BASE);
    let mut n = 0;
    loop {
        let page = store.read_list(address, &options).unwrap();
        n += page.records.len();
        let found = page
            .records
            .last()
            .is_some_and(|r| r.tag.as_deref() == Some(BASE));
        match page.next_cursor {
            Some(c) if !found => options.cursor = Some(c),
            _ => return n,
        }
    }
}

fn checkpoint_policy_survives_restart(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let a = addr("a");
    let mut writer = LogWriter::new(backend.open(dir.path()), Checkpoint::EveryBatches(4));
    writer.append(&a, &[Op::Replace(json!({"n": 0}))]).unwrap();
    writer.append(&a, &[Op::Set(path!["n"], 1.into())]).unwrap();
    writer.append(&a, &[Op::Set(path!["n"], 2.into())]).unwrap();
    assert!(!writer.wants_base(&a));
    drop(writer);
    // A new writer reads back to the last base: one more batch, then a base is wanted.
    let mut writer = LogWriter::new(backend.open(dir.path()), Checkpoint::EveryBatches(4));
    assert!(!writer.wants_base(&a));
    writer.append(&a, &[Op::Set(path!["n"], 3.into())]).unwrap();
    assert!(writer.wants_base(&a));
    writer.append(&a, &[Op::Replace(json!({"n": 4}))]).unwrap();
    assert!(!writer.wants_base(&a));
    drop(writer);

    // By bytes: a base is wanted once 40 bytes of batches follow the last base.
    let writer = LogWriter::new(backend.open(dir.path()), Checkpoint::EveryBytes(40));
    assert!(!writer.wants_base(&a));
    let mut writer = writer;
    let big = "x".repeat(40);
    writer
        .append(&a, &[Op::Set(path!["s"], big.into())])
        .unwrap();
    assert!(writer.wants_base(&a));
    drop(writer);
    let writer = LogWriter::new(backend.open(dir.path()), Checkpoint::EveryBytes(40));
    assert!(writer.wants_base(&a));
}

macro_rules! suite {
    ($backend:ident) => {
        suite!(
            $backend:
            append_and_read_back,
            seqs_are_global_across_addresses,
            paging_ascending,
            paging_descending,
            stop_at_tag_at_page_edges,
            empty_and_invalid_reads,
            invalid_batches_are_refused,
            addresses_are_listed_sorted,
            recovery,
            reopen,
            durability_every_append,
            durability_grouped_by_count,
            durability_grouped_by_delay,
            second_writer_is_refused,
            writer_encodes_tags_and_recovers,
            rolling_window_checkpoints,
            checkpoint_policy_survives_restart,
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

/// Stores and writers can move to another thread, or be shared behind a lock.
#[test]
fn stores_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<JsonlStore>();
    check::<LogWriter<JsonlStore>>();
    #[cfg(feature = "sqlite")]
    check::<chord::store::SqliteStore>();
    #[cfg(feature = "postgres")]
    check::<chord::store::PostgresStore>();
}
