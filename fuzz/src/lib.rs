//! The invariants the byte-input fuzz targets check, one function per target.
//!
//! `chord/tests/fuzz_corpus.rs` includes this file as a module and replays every seed in
//! `fuzz/corpus/{decode_apply,parse_apply,store_open}` through the same functions in a plain
//! `cargo test`, so the seeds and the invariants run in CI without nightly or libFuzzer. Keep
//! it to `std`, `chord`, `serde_json` and `crc32c`, which both builds have.

use std::path::Path;

use chord::store::{self, recover, Address, Durability, JsonlStore, Store, BASE};
use chord::{apply, apply_with, diff, display_batch, parse_batch};
use chord::{Decoder, Encoder, ErrorKind, Limits, Op};
use serde_json::{json, Value};

/// Larger inputs are skipped: every check is linear in its input, and this bound keeps one run
/// short (a hang is a finding, a slow large input is not).
pub const MAX_INPUT: usize = 64 << 10;

/// `decode_apply`: the input is a stream of wire batches, one per line (empty lines skipped),
/// decoded by one [`Decoder`] and applied in order to one document with the default
/// [`Limits`].
///
/// - Once the decoder fails, every later batch fails with `DecoderPoisoned`.
/// - A batch that fails to apply leaves the document exactly as it was (same JSON text, key
///   order included); one that applies leaves it within the depth limit.
/// - What decodes re-encodes: the decoded ops, encoded by one [`Encoder`] and decoded by a
///   second decoder, come back equal (the codec is lossless on every stream it accepts).
/// - [`diff`] of the document before and after an applied batch, applied to the one before,
///   gives the one after; and `display_batch` formats every decoded batch.
pub fn decode_apply(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let limits = Limits::default();
    let mut decoder = Decoder::new();
    let mut encoder = Encoder::new();
    let mut redecoder = Decoder::new();
    let mut doc: Option<Value> = None;
    let mut failed_at = None;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let result = decoder.decode_str(&String::from_utf8_lossy(line));
        if let Some(at) = failed_at {
            match result {
                Err(e) if matches!(e.kind(), ErrorKind::DecoderPoisoned) => continue,
                other => panic!("the decoder failed at batch {at}, then batch {i} gave {other:?}"),
            }
        }
        let ops = match result {
            Ok(ops) => ops,
            Err(_) => {
                failed_at = Some(i);
                continue;
            }
        };
        let wire = encoder.encode(&ops).to_json();
        match redecoder.decode_str(&wire) {
            Ok(again) => assert_eq!(again, ops, "re-encoded as {wire}"),
            Err(e) => panic!("batch {i} decoded to {ops:?}, re-encoded as {wire}: {e}"),
        }
        let _ = display_batch(&ops).to_string();
        let before = doc.clone();
        if apply_atomically(&mut doc, &ops, &limits, DEFAULT_DEPTH) {
            check_diff(before, &doc);
        }
    }
}

/// [`Limits::default`]'s depth.
const DEFAULT_DEPTH: usize = 120;

/// The depth limit of `parse_apply`.
const SMALL_DEPTH: usize = 6;

/// The document `parse_apply` starts from (4 levels deep): strings with two-byte and astral
/// characters, nested arrays and objects, a null.
pub fn start_document() -> Value {
    json!({
        "text": "h\u{e9}llo \u{1F600}",
        "xs": [1, 2, 3, [4, 5], "six"],
        "m": {"a": {"b": [], "c": "x"}, "k": "v", "0": 0},
        "n": null
    })
}

/// `parse_apply`: the input is one or more batches of the decoded grammar, one per line,
/// parsed with [`parse_batch`] and applied in order to [`start_document`] with small
/// [`Limits`] (depth 6, 10,000 units of work, arrays of 100, strings of 1,000 bytes).
///
/// - Parsed ops serialize back to JSON that parses to the same ops.
/// - A batch that fails leaves the document exactly as it was (same JSON text).
/// - A batch that applies leaves the document within the depth limit, and its JSON text
///   parses back to the same document.
/// - The default (larger) limits accept every batch the small ones accept, with the same
///   result: a second document, given only those batches, stays equal to the first.
/// - [`diff`] of the document before and after an applied batch, applied to the one before,
///   gives the one after.
pub fn parse_apply(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let small = Limits::default()
        .max_depth(SMALL_DEPTH)
        .max_work(10_000)
        .max_array_len(100)
        .max_string_len(1_000);
    let mut doc = Some(start_document());
    let mut large = doc.clone();
    for line in data.split(|&b| b == b'\n') {
        let Ok(ops) = parse_batch(&String::from_utf8_lossy(line)) else {
            continue;
        };
        let text = serde_json::to_string(&ops).expect("ops serialize");
        match parse_batch(&text) {
            Ok(again) => assert_eq!(again, ops, "serialized as {text}"),
            Err(e) => panic!("{ops:?} serialized as {text}, which does not parse: {e}"),
        }
        let before = doc.clone();
        if !apply_atomically(&mut doc, &ops, &small, SMALL_DEPTH) {
            continue;
        }
        check_diff(before, &doc);
        let text = serde_json::to_string(&doc).expect("a document serializes");
        let back: Option<Value> = serde_json::from_str(&text).expect("a document parses back");
        assert_eq!(back, doc, "the document does not survive its JSON text");
        if let Err(e) = apply_with(&mut large, &ops, &Limits::default()) {
            panic!("{ops:?} applied within small limits but not the default ones: {e}");
        }
        assert_eq!(
            same_text(&large),
            text,
            "the limits changed the result of {ops:?}"
        );
    }
}

/// Applies one batch, checking atomicity on failure and the depth limit on success. Returns
/// whether it applied.
fn apply_atomically(doc: &mut Option<Value>, ops: &[Op], limits: &Limits, depth: usize) -> bool {
    let before = same_text(doc);
    match apply_with(doc, ops, limits) {
        Ok(()) => {
            if let Some(v) = doc.as_ref() {
                let found = nesting(v);
                assert!(
                    found <= depth,
                    "a document {found} deep applied under max_depth({depth})"
                );
            }
            true
        }
        Err(e) => {
            assert_eq!(
                same_text(doc),
                before,
                "a failed batch ({e}) changed the document"
            );
            false
        }
    }
}

/// `diff(before, after)` takes `before` to `after` (up to key order, which `diff` does not
/// compare), and finds nothing between `after` and itself.
fn check_diff(before: Option<Value>, after: &Option<Value>) {
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    let ops = diff(&before, after);
    let mut replica = Some(before);
    if let Err(e) = apply(&mut replica, &ops) {
        panic!("diff gave {ops:?}, which does not apply: {e}");
    }
    assert_eq!(replica.as_ref(), Some(after), "diff gave {ops:?}");
    assert_eq!(diff(after, after), [], "diff of a document with itself");
}

/// A document's exact JSON text: key order and number spelling included (`Value`'s own
/// equality ignores key order).
fn same_text(doc: &Option<Value>) -> String {
    serde_json::to_string(doc).expect("a document serializes")
}

/// How many containers deep `v` is (a scalar is 0, `[]` is 1), without recursion.
fn nesting(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(depth + 1);
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    deepest
}

/// The checksum placeholder of `store_open` seeds: a line ending `,"c":"zzzzzzzz"}` gets its
/// real checksum before the file is written.
const PLACEHOLDER: &[u8] = b",\"c\":\"zzzzzzzz\"}";

/// The checksum suffix of a JSONL log line: `,"c":"` + 8 characters + `"}`.
const SUFFIX_LEN: usize = 16;

/// Computes the checksums that seeds leave as [`PLACEHOLDER`]s, so that hand-written seeds,
/// and the fuzzer's mutations of them, stay logs whose checksums verify: CRC-32C of the line
/// before its suffix, continued from the previous line's checksum (format version 2). A line
/// with a real checksum passes it on as is; a line with none passes the previous one on.
pub fn fill_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut seed = 0u32;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        let start = out.len();
        out.extend_from_slice(line);
        if line.len() < SUFFIX_LEN {
            continue;
        }
        let (checked, suffix) = line.split_at(line.len() - SUFFIX_LEN);
        if suffix == PLACEHOLDER {
            seed = crc32c::crc32c_append(seed, checked);
            let hex = format!("{seed:08x}");
            let at = start + checked.len() + 6;
            out[at..at + 8].copy_from_slice(hex.as_bytes());
        } else if suffix.starts_with(b",\"c\":\"") && suffix.ends_with(b"\"}") {
            if let Ok(stored) = std::str::from_utf8(&suffix[6..14]) {
                if let Ok(stored) = u32::from_str_radix(stored, 16) {
                    seed = stored;
                }
            }
        }
    }
    out
}

/// `store_open`: the input (after [`fill_checksums`]) is written to `path` as a JSONL log,
/// opened read-only, then for writing (which repairs a torn tail), and every address is
/// recovered.
///
/// - Nothing panics or hangs; each open and each recovery is an error or a value.
/// - The two opens agree: both fail, or both succeed with the same addresses and the same
///   recovered values (the writer's repair changes nothing that counts).
/// - A failed writable open leaves the file byte for byte as it was.
/// - A log the writer opened takes a new base record, and reopened read-only it shows the
///   same addresses and values as before, plus the new record.
pub fn store_open(data: &[u8], path: &Path) {
    if data.len() > MAX_INPUT {
        return;
    }
    let bytes = fill_checksums(data);
    std::fs::write(path, &bytes).expect("write the log");
    let read_only = JsonlStore::open_read_only(path).map(|s| view(&s));
    let writer = JsonlStore::open(path, Durability::EveryAppend);
    let (mut writer, mut want) = match (writer, read_only) {
        (Err(_), Err(_)) => {
            let after = std::fs::read(path).expect("read the log back");
            assert!(after == bytes, "a failed open changed the file");
            return;
        }
        (Ok(_), Err(e)) => panic!("the log opens for writing but not for reading: {e}"),
        (Err(e), Ok(_)) => panic!("the log opens for reading but not for writing: {e}"),
        (Ok(writer), Ok(read_only)) => {
            assert_eq!(view(&writer), read_only, "reader and writer disagree");
            (writer, read_only)
        }
    };
    let probe = Address::new("fuzz", "probe");
    let appended = match writer.append(&probe, r#"[["r",{"probe":1}]]"#, Some(BASE)) {
        Ok(_) => true,
        Err(store::Error::SeqsExhausted { .. }) => false,
        Err(e) => panic!("a repaired log refused an append: {e}"),
    };
    drop(writer);
    let reopened = match JsonlStore::open_read_only(path) {
        Ok(s) => s,
        Err(e) => panic!("a log the writer opened (appended: {appended}) does not reopen: {e}"),
    };
    let mut after = view(&reopened);
    if appended {
        want.retain(|(a, _)| *a != probe);
        let at = after.iter().position(|(a, _)| *a == probe);
        let found = at.map(|i| after.remove(i).1);
        assert_eq!(
            found,
            Some(Ok(Some(json!({"probe": 1})))),
            "the appended record"
        );
    }
    assert_eq!(after, want, "the reopened log differs");
}

/// What a store holds, as far as a reader can tell: each address with what recovering it
/// gives (an error as its message).
type View = Vec<(Address, Result<Option<Value>, String>)>;

fn view(store: &JsonlStore) -> View {
    let addresses = store.addresses().expect("the addresses of an open log");
    addresses
        .into_iter()
        .map(|a| {
            let value = recover(store, &a).map_err(|e| e.to_string());
            (a, value)
        })
        .collect()
}
