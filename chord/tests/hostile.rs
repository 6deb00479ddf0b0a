//! Hostile input: batches that are small on the wire but would cost a replica memory or time
//! proportional to something else (a path reused thousands of times, a large container shifted
//! by every op). Memory is measured with a counting allocator (its own test binary), time by
//! the applier's work budget, never by the clock.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;

use chord::{
    apply, apply_with, path, track, Decoder, Encoder, ErrorKind, Limits, Op, MAX_PATH_SEGMENTS,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// The system allocator, counting the bytes allocated by a thread while it measures (other
/// tests run on other threads at the same time).
struct Counting;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: the thread's locals may already be gone while it exits.
    let _ = MEASURING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATED.try_with(|n| n.set(n.get() + bytes));
        }
    });
}

// SAFETY: every call is forwarded to `System` unchanged; only the counter is added, and the
// thread-locals it touches are const-initialised, so counting never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated by this thread while `f` runs.
fn allocated_by<R>(f: impl FnOnce() -> R) -> (R, usize) {
    ALLOCATED.with(|n| n.set(0));
    MEASURING.with(|on| on.set(true));
    let r = f();
    MEASURING.with(|on| on.set(false));
    (r, ALLOCATED.with(Cell::get))
}

fn kind(e: &chord::Error) -> &ErrorKind {
    e.kind()
}

/// The batch was refused for going over its work budget.
fn assert_out_of_budget(err: &chord::Error) {
    assert!(
        matches!(
            err.kind(),
            ErrorKind::LimitExceeded {
                limit: "max_work",
                ..
            }
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Decoding: memory proportional to the input

/// `[["d", path], ["d"], ["d"], ...]`: one inline path, then `repeats` short forms.
fn short_forms(path: &Value, repeats: usize) -> String {
    let mut s = format!("[[\"d\",{path}]");
    for _ in 0..repeats {
        s.push_str(",[\"d\"]");
    }
    s.push(']');
    s
}

/// Bytes allocated decoding `wire` with a fresh decoder, and the ops.
fn decode_measured(wire: &str) -> (Vec<Op>, usize) {
    allocated_by(|| Decoder::new().decode_str(wire).unwrap())
}

#[test]
fn a_long_key_reused_by_short_forms_is_decoded_once() {
    // A 1 MB key followed by 2,000 short forms: decoding the key once per op would turn 1 MB
    // of input into 2 GB. The same batch with a one-byte key is the baseline: the long key may cost its own size a
    // few times over (the text, the parsed value, the path), never once per op.
    let long = short_forms(&json!(["x".repeat(1 << 20)]), 2_000);
    let short = short_forms(&json!(["x"]), 2_000);
    let (ops, long_bytes) = decode_measured(&long);
    let (_, short_bytes) = decode_measured(&short);
    assert_eq!(ops.len(), 2_001);
    let extra = long_bytes.saturating_sub(short_bytes);
    assert!(
        extra < 4 << 20,
        "a 1 MB key reused 2,000 times cost {extra} extra bytes to decode"
    );
    let first = ops[0].path().unwrap();
    assert!(ops.iter().all(|op| op.path().unwrap().shares_with(first)));
}

#[test]
fn a_deep_path_reused_by_ids_and_short_forms_is_decoded_once() {
    // The longest path the grammar allows, defined once, then used 20,000 times by id and by
    // omission, against the same batch over a one-segment path.
    let batch = |segments: usize| {
        let path = Value::Array(vec![json!(0); segments]);
        let mut wire = format!("[[\"#\",7,{path}]");
        for i in 0..20_000 {
            wire.push_str(if i % 2 == 0 { ",[\"d\",7]" } else { ",[\"d\"]" });
        }
        wire.push(']');
        wire
    };
    let (ops, deep_bytes) = decode_measured(&batch(MAX_PATH_SEGMENTS));
    let (_, flat_bytes) = decode_measured(&batch(1));
    assert_eq!(ops.len(), 20_000);
    // Copying the path per op would cost 20,000 x 128 segments (80 MB); sharing it costs
    // the one path.
    let extra = deep_bytes.saturating_sub(flat_bytes);
    assert!(
        extra < 64 << 10,
        "a 128-segment path reused 20,000 times cost {extra} extra bytes"
    );
}

#[test]
fn a_path_longer_than_the_grammar_allows_is_refused_before_it_is_resolved() {
    // The batch of the report: 100,000 zeros, then 20,000 short forms (320 KB).
    let path = Value::Array(vec![json!(0); 100_000]);
    let wire = short_forms(&path, 20_000);
    let err = Decoder::new().decode_str(&wire).unwrap_err();
    assert!(
        matches!(kind(&err), ErrorKind::InvalidPath(why) if why.contains("100000 segments")),
        "{err}"
    );
    assert_eq!(err.op_index(), Some(0));
    // The decoded grammar and the applier say the same.
    let long = Value::Array(vec![json!("k"); MAX_PATH_SEGMENTS + 1]);
    assert!(chord::parse_batch(&format!("[[\"d\",{long}]]")).is_err());
    let ok = Value::Array(vec![json!("k"); MAX_PATH_SEGMENTS]);
    assert!(chord::parse_batch(&format!("[[\"d\",{ok}]]")).is_ok());
    let segs: Vec<chord::Seg> = (0..=MAX_PATH_SEGMENTS).map(chord::Seg::Index).collect();
    let op = Op::Delete(chord::Path::from(segs).try_into().unwrap());
    let mut doc = Some(json!({}));
    let err = apply(&mut doc, [op]).unwrap_err();
    assert!(matches!(kind(&err), ErrorKind::InvalidPath(_)), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Applying: work bounded per batch

fn big_object(n: usize) -> Value {
    Value::Object(
        (0..n)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect::<Map<_, _>>(),
    )
}

/// What walking `["k<i>"]` costs: one segment plus the key's length.
fn walk(key: &str) -> usize {
    1 + key.len()
}

#[test]
fn deleting_missing_members_costs_only_the_walk() {
    // 40,000 deletes of members that do not exist, on a 100,000-member object: each is a
    // hash lookup. The budget is exactly the walks: one unit of shifting would refuse it.
    let mut doc = Some(big_object(100_000));
    let keys: Vec<String> = (0..40_000).map(|i| format!("missing{i}")).collect();
    let walks: usize = keys.iter().map(|k| walk(k)).sum();
    // Interleave with sets so that no two deletes form a run.
    let ops: Vec<Op> = keys
        .iter()
        .flat_map(|k| {
            [
                Op::Delete(path![k.as_str()]),
                Op::Set(path!["k99999"], json!(0)),
            ]
        })
        .collect();
    let set_walks = 40_000 * walk("k99999");
    let limits = Limits::default().max_work(walks + set_walks);
    apply_with(&mut doc, &ops, &limits).unwrap();
    assert_eq!(doc.as_ref().unwrap().as_object().unwrap().len(), 100_000);
}

#[test]
fn clearing_a_large_object_is_one_ordered_pass() {
    // 10,000 deletes in document order: one at a time each would shift every later member
    // (50 million moves in all); as one run it is one pass.
    let n = 10_000;
    let mut doc = Some(big_object(n));
    let ops: Vec<Op> = (0..n).map(|i| Op::Delete(path![format!("k{i}")])).collect();
    let walks: usize = (0..n).map(|i| walk(&format!("k{i}"))).sum();
    let limits = Limits::default().max_work(walks + n);
    apply_with(&mut doc, &ops, &limits).unwrap();
    assert_eq!(doc, Some(json!({})));
}

#[test]
fn a_member_deleted_again_and_again_costs_its_walks_and_one_pass() {
    // Ten members, each deleted three times in a row, then another member: one run of 31
    // deletes, so one ordered pass over the 100-member object (100 units) plus a walk for
    // every delete, repeats included, as if each were applied on its own.
    let n = 100;
    let keys: Vec<String> = (0..10)
        .map(|i| format!("k{i}"))
        .chain(["k50".into()])
        .collect();
    let named: Vec<&String> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| std::iter::repeat_n(k, if i < 10 { 3 } else { 1 }))
        .collect();
    let ops: Vec<Op> = named
        .iter()
        .map(|k| Op::Delete(path![k.as_str()]))
        .collect();
    assert_eq!(ops.len(), 31);
    let walks: usize = named.iter().map(|k| walk(k)).sum();
    let exact = Limits::default().max_work(walks + n);
    let mut doc = Some(big_object(n));
    apply_with(&mut doc, &ops, &exact).unwrap();
    let left = doc.as_ref().unwrap().as_object().unwrap();
    assert_eq!(left.len(), n - 11);
    assert!(!left.contains_key("k50") && left.contains_key("k51"));
    // One unit less: refused at the run's last op (the pass is paid for there), unchanged.
    let under = Limits::default().max_work(walks + n - 1);
    let mut doc = Some(big_object(n));
    let err = apply_with(&mut doc, &ops, &under).unwrap_err();
    assert_eq!(err.op_index(), Some(30), "{err}");
    assert_eq!(doc, Some(big_object(n)));
    // Too little for the walks: refused at the repeat where they run out.
    let short = Limits::default().max_work(walk("k0") * 2);
    let mut doc = Some(big_object(n));
    let err = apply_with(&mut doc, &ops, &short).unwrap_err();
    assert_eq!(err.op_index(), Some(2), "{err}");
    assert_eq!(doc, Some(big_object(n)));
}

#[test]
fn a_failed_batch_after_a_cleared_object_restores_its_order() {
    let n = 1_000;
    let original = big_object(n);
    let mut doc = Some(original.clone());
    // Every other member, then an op that fails.
    let mut ops: Vec<Op> = (0..n)
        .step_by(2)
        .map(|i| Op::Delete(path![format!("k{i}")]))
        .collect();
    ops.push(Op::Append(path!["k1"], "x".into()));
    let err = apply(&mut doc, &ops).unwrap_err();
    assert_eq!(err.op_index(), Some(n / 2));
    let keys: Vec<&String> = doc.as_ref().unwrap().as_object().unwrap().keys().collect();
    let expected: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    assert_eq!(keys, expected.iter().collect::<Vec<_>>());
    assert_eq!(doc, Some(original));
}

#[test]
fn front_deletes_on_a_large_array_run_out_of_budget_and_change_nothing() {
    // The report's batch: 50,000 deletes of element 0 of a 100,000-element array (10.5 s).
    let original = json!({ "xs": (0..100_000).collect::<Vec<u32>>() });
    let mut doc = Some(original.clone());
    let ops: Vec<Op> = (0..50_000).map(|_| Op::Delete(path!["xs", 0])).collect();
    let err = apply(&mut doc, &ops).unwrap_err();
    assert_out_of_budget(&err);
    // Each delete shifts ~100,000 elements: the budget (2^24) runs out at op 167.
    let at = err.op_index().unwrap();
    assert_eq!(at, 167, "refused at op {at}");
    assert_eq!(doc, Some(original));
    assert_eq!(err.kind().category(), chord::Category::Limit);
}

#[test]
fn single_unit_truncates_of_a_large_string_run_out_of_budget() {
    // 400,000 `["t", path, 1]` on 800 KB (8.6 s before).
    let original = json!({ "s": "ab".repeat(400_000) });
    let mut doc = Some(original.clone());
    let ops: Vec<Op> = (0..400_000).map(|_| Op::Truncate(path!["s"], 1)).collect();
    let err = apply(&mut doc, &ops).unwrap_err();
    assert_out_of_budget(&err);
    assert_eq!(doc, Some(original));
}

#[test]
fn the_budget_counts_each_verb_as_documented() {
    let doc = || Some(json!({"s": "abcdef", "xs": [1, 2, 3, 4, 5], "m": {"a": 1, "b": 2, "c": 3}}));
    // (op, its cost): the walk (segments + key bytes) plus the shifting.
    let cases: Vec<(Op, usize)> = vec![
        (Op::Truncate(path!["s"], 2), 2 + 4),
        (Op::Append(path!["s"], "xyz".into()), 2),
        (Op::Set(path!["m", "a"], json!(9)), 2 + 2),
        (Op::Delete(path!["m", "a"]), 2 + 2 + 2),
        (Op::Delete(path!["m", "c"]), 2 + 2),
        (Op::Delete(path!["xs", 1]), 3 + 1 + 3),
        (
            Op::Splice {
                path: path!["xs"].into(),
                index: 1,
                remove: 1,
                items: vec![json!(0), json!(0)],
            },
            3 + (1 + 2 + 3),
        ),
        (
            Op::Splice {
                path: path!["xs"].into(),
                index: 1,
                remove: 2,
                items: vec![json!(0), json!(0)],
            },
            3 + (2 + 2),
        ),
    ];
    for (op, cost) in cases {
        let mut at = doc();
        apply_with(&mut at, [&op], &Limits::default().max_work(cost)).unwrap();
        let mut under = doc();
        let err = apply_with(&mut under, [&op], &Limits::default().max_work(cost - 1)).unwrap_err();
        assert_out_of_budget(&err);
        assert_eq!(under, doc(), "{op}");
    }
}

#[test]
fn a_tracked_map_cleared_in_one_flush_applies_in_one_pass() {
    let n: usize = 10_000;
    let mut t = track(
        (0..n)
            .map(|i| (format!("k{i:05}"), i))
            .collect::<BTreeMap<String, usize>>(),
    );
    let mut enc = Encoder::new();
    let mut dec = Decoder::new();
    let mut replica = None;
    let base = t.flush().unwrap();
    apply(
        &mut replica,
        dec.decode_str(&enc.encode(&base).to_json()).unwrap(),
    )
    .unwrap();
    let keys: Vec<String> = t.keys().cloned().collect();
    for k in &keys {
        t.state().remove(k);
    }
    let ops = t.flush().unwrap();
    assert_eq!(ops.len(), n);
    let walks: usize = keys.iter().map(|k| walk(k)).sum();
    let decoded = dec.decode_str(&enc.encode(&ops).to_json()).unwrap();
    apply_with(
        &mut replica,
        decoded,
        &Limits::default().max_work(walks + n),
    )
    .unwrap();
    assert_eq!(replica, Some(json!({})));
}

// ---------------------------------------------------------------------------------------------
// Runs of deletes behave exactly like deletes one at a time

/// The model: deletes one at a time, by key, keeping the others' order.
fn model_delete(doc: &Value, keys: &[String]) -> Value {
    let mut map = doc.as_object().unwrap().clone();
    for k in keys {
        map.shift_remove(k);
    }
    Value::Object(map)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn delete_runs_match_one_at_a_time(
        n in 0usize..60,
        picks in proptest::collection::vec(0usize..80, 0..70),
        fail in any::<bool>(),
    ) {
        let doc = big_object(n);
        // Keys past `n` are missing; repeats delete twice.
        let keys: Vec<String> = picks.iter().map(|i| format!("k{i}")).collect();
        let mut ops: Vec<Op> = keys.iter().map(|k| Op::Delete(path![k.as_str()])).collect();
        if fail {
            ops.push(Op::Append(path!["missing-for-sure"], "x".into()));
        }
        let mut target = Some(doc.clone());
        let result = apply(&mut target, &ops);
        if fail {
            prop_assert!(result.is_err());
            prop_assert_eq!(target, Some(doc.clone()));
            // Order too, which `Value`'s equality ignores.
            let got: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
            let want: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            prop_assert_eq!(got, want);
        } else {
            prop_assert!(result.is_ok());
            let want = model_delete(&doc, &keys);
            let got = target.unwrap();
            prop_assert_eq!(
                got.as_object().unwrap().keys().collect::<Vec<_>>(),
                want.as_object().unwrap().keys().collect::<Vec<_>>()
            );
            prop_assert_eq!(got, want);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Proxies panic where std panics, with std's message

#[test]
#[should_panic(expected = "attempted to index slice from after maximum usize")]
fn drain_from_after_usize_max_panics_like_std() {
    use std::ops::Bound::{Excluded, Unbounded};
    let mut t = track(vec![1, 2, 3]);
    t.state().drain((Excluded(usize::MAX), Unbounded));
}

#[test]
#[should_panic(expected = "attempted to index slice up to maximum usize")]
fn drain_to_past_usize_max_panics_like_std() {
    let mut t = track(vec![1, 2, 3]);
    t.state().drain(0..=usize::MAX);
}

#[test]
fn an_error_about_a_huge_key_names_it_in_one_short_line() {
    let key = "x".repeat(1 << 20);
    let mut doc = Some(json!({}));
    let err = apply(&mut doc, [Op::Append(path![key.as_str(), "y"], "z".into())]).unwrap_err();
    assert_eq!(err.kind().category(), chord::Category::Apply);
    let shown = err.to_string();
    assert!(shown.len() < 200, "{shown}");
    assert!(shown.contains("(1048576 bytes)"), "{shown}");
    let path = chord::Path::from(vec![chord::Seg::from("é".repeat(40)), chord::Seg::Index(2)]);
    assert_eq!(
        path.to_string(),
        format!("[\"{}...\"(80 bytes)][2]", "é".repeat(32))
    );
}
