//! Peak heap of decoding, checking and applying one wire batch, as a multiple of the batch's
//! bytes, measured with a counting global allocator (its own test binary, as a global
//! allocator applies to the whole binary).
//!
//! Each case is one batch of a million ops of one verb, with its path written in full, by an
//! interned id, or omitted (the short form). The peak counts everything allocated while the
//! call runs above what was live before it: the ops it returns included. What a replica and
//! recovery do, [`Decoder::apply_str`], holds one op at a time; [`Decoder::decode_str`]
//! returns every op, so it cannot go below the vector of them.

#[path = "support/counting.rs"]
mod counting;

use std::sync::atomic::Ordering::Relaxed;

use counting::{LIVE, ONE_AT_A_TIME, PEAK};

use chord::store::{Address, CheckedBatch};
use chord::{Decoder, NonEmptyPath, Op, Path};
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// Ops in each measured batch.
const OPS: usize = 1_000_000;

/// One more op than a power of two: where a vector grown by doubling holds twice what it
/// needs.
const AWKWARD: usize = (1 << 20) + 1;

/// How an op names its path.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// `["k"]` written in every op.
    Full,
    /// `["#",0,["k"]]` first, then the id `0` in every op.
    Id,
    /// The path in the first op, omitted in every later one.
    Short,
    /// No path at all (`r`).
    Root,
}

/// One batch of `OPS` ops of `verb` (`args` is what follows the path, with its comma), its
/// path in `form`.
fn batch(verb: &str, args: &str, form: Form) -> String {
    batch_of(OPS, verb, args, form)
}

/// One batch of `ops` ops, as [`batch`].
fn batch_of(ops: usize, verb: &str, args: &str, form: Form) -> String {
    let mut text = String::with_capacity(ops * (verb.len() + args.len() + 12));
    text.push('[');
    if let Form::Id = form {
        text.push_str(r##"["#",0,["k"]],"##);
    }
    for i in 0..ops {
        if i > 0 {
            text.push(',');
        }
        text.push_str("[\"");
        text.push_str(verb);
        text.push('"');
        match (form, i) {
            (Form::Full, _) | (Form::Short, 0) => text.push_str(r#",["k"]"#),
            (Form::Id, _) => text.push_str(",0"),
            (Form::Short | Form::Root, _) => {}
        }
        text.push_str(args);
        text.push(']');
    }
    text.push(']');
    text
}

/// The peak heap above what was live before `f` ran, while it ran, and what it returned.
fn peak<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let out = f();
    (PEAK.load(Relaxed) - before, out)
}

/// A measured case: its batch text, and the largest peak it may reach when decoded into a
/// vector of ops, as a multiple of its bytes: today's figures plus about a fifth (parsing
/// through a JSON tree of the batch cost 30-61x on every case; the vector of ops alone, the
/// floor printed beside each figure, is most of what is left).
struct Case {
    name: String,
    ops: usize,
    text: String,
    decode: f64,
}

/// Largest peak of [`Decoder::check_str`] and of a store's check of a batch
/// ([`CheckedBatch::new`]) on any case, as a multiple of the batch's bytes: both read one op
/// at a time and keep nothing of it.
const CHECK: f64 = 0.01;

fn cases() -> Vec<Case> {
    let mut cases = vec![Case {
        name: "r {\"a\":1}".into(),
        ops: OPS,
        text: batch("r", r#",{"a":1}"#, Form::Root),
        decode: 21.0,
    }];
    // (verb, what follows the path, the bound for full paths, ids, short forms)
    let verbs: [(&str, &str, [f64; 3]); 5] = [
        ("s", ",1", [7.5, 10.5, 13.0]),
        ("d", "", [9.0, 13.0, 17.5]),
        ("a", r#","x""#, [6.5, 9.0, 10.5]),
        ("t", ",1", [7.5, 10.5, 13.0]),
        ("p", ",0,0,[1]", [10.0, 12.0, 14.0]),
    ];
    for (verb, args, bounds) in verbs {
        for (form, decode) in [Form::Full, Form::Id, Form::Short].into_iter().zip(bounds) {
            cases.push(Case {
                name: format!("{verb} {form:?}"),
                ops: OPS,
                text: batch(verb, args, form),
                decode,
            });
        }
    }
    cases.push(Case {
        name: format!("d Short, {AWKWARD} ops"),
        ops: AWKWARD,
        text: batch_of(AWKWARD, "d", "", Form::Short),
        decode: 17.5,
    });
    cases
}

/// `Op` with its values, a splice and an append's text boxed: what a smaller op would cost.
#[allow(dead_code)]
enum BoxedOp {
    Replace(Box<Value>),
    Set(NonEmptyPath, Box<Value>),
    Delete(NonEmptyPath),
    Append(NonEmptyPath, Box<str>),
    Truncate(NonEmptyPath, usize),
    Splice(Box<(Path, usize, usize, Vec<Value>)>),
}

#[test]
fn decoding_a_batch_costs_a_bounded_multiple_of_its_bytes() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let at = Address::new("lanes", "main");
    let op = std::mem::size_of::<Op>();
    eprintln!(
        "size_of::<Op>() = {op} bytes (with its payloads boxed: {} bytes)",
        std::mem::size_of::<BoxedOp>()
    );
    let mut failed = Vec::new();
    for case in cases() {
        let bytes = case.text.len();
        let ratio = |peak: usize| peak as f64 / bytes as f64;
        let (decode, ops) = peak(|| Decoder::new().decode_str(&case.text));
        let ops = ops.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(ops.len(), case.ops, "{}", case.name);
        drop(ops);
        let (check, checked) = peak(|| Decoder::new().check_str(&case.text));
        checked.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let (store, checked) = peak(|| CheckedBatch::new(&at, &case.text, None).map(drop));
        checked.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        // The vector of ops alone: what no decode into a `Vec<Op>` can go below.
        let floor = (case.ops * op) as f64 / bytes as f64;
        eprintln!(
            "{:>10}: {:>5.2} bytes an op; peak decode {:>5.2}x (floor {:>5.2}x), check {:.3}x, \
             store check {:>5.2}x",
            case.name,
            bytes as f64 / case.ops as f64,
            ratio(decode),
            floor,
            ratio(check),
            ratio(store),
        );
        assert!(ratio(decode) >= floor, "{}: below the floor", case.name);
        for (what, got, max) in [
            ("decode", ratio(decode), case.decode),
            ("check", ratio(check), CHECK),
            ("store check", ratio(store), CHECK),
        ] {
            if got > max {
                failed.push(format!("{} {what}: {got:.2}x > {max}x", case.name));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Largest peak of [`Decoder::apply_str`] on any case, as a multiple of the batch's bytes. The
/// goal is 4x for every verb and form; one op at a time and a folded undo log keep it near
/// zero (the growth of the appended string is most of it), so a bound well under the goal
/// catches an applier that starts holding something per op.
const APPLY: f64 = 0.5;

#[test]
fn applying_a_batch_as_it_is_read_costs_far_less_than_its_bytes() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // (verb, what follows the path, the document the batch applies to, what it becomes)
    let verbs: [(&str, &str, Value, Value); 5] = [
        ("s", ",1", json!({"k": 0}), json!({"k": 1})),
        ("d", "", json!({"k": 0, "j": 1}), json!({"j": 1})),
        (
            "a",
            r#","x""#,
            json!({"k": ""}),
            json!({"k": "x".repeat(OPS)}),
        ),
        // A cut of one unit of an empty string: the cut itself costs nothing.
        ("t", ",1", json!({"k": ""}), json!({"k": ""})),
        // The first element replaced: a splice that shifts nothing.
        ("p", ",0,1,[1]", json!({"k": [0, 2]}), json!({"k": [1, 2]})),
    ];
    let mut cases = vec![(
        "r {\"a\":1}".to_owned(),
        batch("r", r#",{"a":1}"#, Form::Root),
        None,
        json!({"a": 1}),
    )];
    for (verb, args, start, end) in verbs {
        for form in [Form::Full, Form::Id, Form::Short] {
            cases.push((
                format!("{verb} {form:?}"),
                batch(verb, args, form),
                Some(start.clone()),
                end.clone(),
            ));
        }
    }
    let mut failed = Vec::new();
    for (name, text, start, end) in cases {
        let bytes = text.len();
        let mut doc = start;
        let mut decoder = Decoder::new();
        let (applied, result) =
            peak(|| decoder.apply_str(&text, &mut doc, &chord::Limits::default()));
        let result = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(result.ops, OPS, "{name}");
        assert_eq!(doc, Some(end), "{name}");
        let ratio = applied as f64 / bytes as f64;
        eprintln!(
            "{name:>10}: {:>5.2} bytes an op; peak decode and apply {ratio:.3}x",
            bytes as f64 / OPS as f64
        );
        if ratio > APPLY {
            failed.push(format!("{name}: {ratio:.2}x > {APPLY}x"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
