//! Replays the conformance vectors generated from the TypeScript reference implementation
//! (`testdata/conformance/vectors.jsonl`, format in its README) against chord.
//!
//! Every case of the commands chord's core covers must match: the `ok` value exactly (encoded
//! wire JSON byte for byte), or an error where the reference errs. Where chord deliberately
//! differs, the case is listed in `DEVIATIONS` with the reason, and the test checks chord's own
//! behaviour for it instead.

#[path = "support/vectors.rs"]
mod vectors;

use std::collections::BTreeMap;

use chord::{apply, batch_from_value, is_base, Decoder, Encoder, ErrorKind, Op, WireOp};
use serde_json::Value;

use vectors::{assert_expected, deviates, expect_ok, Deviations};

/// Cases where chord chooses differently from the reference, and why.
const DEVIATIONS: &Deviations = &[
    (
        "t counts UTF-16 code units",
        "The reference's `t` cuts a surrogate pair in half and leaves a lone surrogate, which is \
         not a Unicode scalar value: no Rust String (and no strict JSON parser, serde_json \
         included) can hold it. chord refuses a cut inside a pair with SplitsCharacter; counts \
         are still UTF-16 units.",
    ),
    (
        "encode: does not validate ops",
        "The reference encodes [\"s\", [], 1] without validating. In chord a set of the root \
         cannot be constructed (Set takes a NonEmptyPath), so the input is refused when parsed.",
    ),
];

/// The ops of a batch as JSON, for comparison.
fn ops_json(ops: &[Op]) -> Value {
    serde_json::to_value(ops).unwrap()
}

fn run_apply(case: &Value) -> Result<Value, String> {
    let mut target = if case["targetIsNull"] == Value::Bool(true) {
        Some(Value::Null)
    } else {
        match &case["target"] {
            Value::Null => None,
            v => Some(v.clone()),
        }
    };
    let before = target.clone();
    let ops = batch_from_value(case["ops"].clone()).map_err(|e| e.to_string())?;
    let ops_before = ops.clone();
    match apply(&mut target, &ops) {
        Ok(()) => {
            // applyImmutable: the ops (payloads included) must be untouched.
            assert_eq!(ops, ops_before, "apply modified its ops");
            Ok(target.unwrap_or(Value::Null))
        }
        Err(e) => {
            assert_eq!(
                target, before,
                "a failed batch must leave the target unchanged"
            );
            Err(e.to_string())
        }
    }
}

fn run_encode(case: &Value) -> Result<Value, String> {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    for batch in case["batches"].as_array().unwrap() {
        let ops = batch_from_value(batch.clone()).map_err(|e| e.to_string())?;
        let text = enc.encode(&ops).to_json();
        out.push(text);
    }
    Ok(Value::String(format!("[{}]", out.join(","))))
}

fn run_decode(case: &Value) -> Result<Value, String> {
    let mut dec = Decoder::new();
    let mut out = Vec::new();
    for batch in case["batches"].as_array().unwrap() {
        // Go through text, as a replica does.
        let ops = dec
            .decode_str(&batch.to_string())
            .map_err(|e| e.to_string())?;
        out.push(ops_json(&ops));
    }
    Ok(Value::Array(out))
}

fn run_is_base(case: &Value) -> Result<Value, String> {
    let wire: Vec<WireOp> = serde_json::from_value(case["ops"].clone()).unwrap();
    let answer = WireOp::is_base(&wire);
    // Where the batch is also a valid decoded batch, both predicates must agree.
    if let Ok(ops) = batch_from_value(case["ops"].clone()) {
        assert_eq!(is_base(&ops), answer);
    }
    Ok(Value::Bool(answer))
}

fn check(case: &Value) {
    let name = vectors::name(case);
    let cmd = vectors::cmd(case);
    let got: Result<Value, String> = match cmd {
        "apply" | "applyImmutable" => run_apply(case),
        "validOp" => chord::Op::from_value(case["op"].clone())
            .map(|_| Value::Bool(true))
            .map_err(|e| e.to_string()),
        "validWireOp" => WireOp::from_value(case["op"].clone())
            .map(|_| Value::Bool(true))
            .map_err(|e| e.to_string()),
        "encode" => run_encode(case),
        "decode" => run_decode(case),
        "isBase" => run_is_base(case),
        other => panic!("unexpected command {other}"),
    };
    if deviates(DEVIATIONS, name) {
        check_deviation(name, got);
        return;
    }
    match (expect_ok(case), got) {
        (Some(want), Ok(got)) if cmd == "encode" => {
            // Byte for byte: the expected wire batches, serialized compactly in their key order.
            let want = serde_json::to_string(want).unwrap();
            assert_eq!(got.as_str().unwrap(), want, "case {name:?}");
        }
        (_, got) => assert_expected(case, got),
    }
}

fn check_deviation(name: &str, got: Result<Value, String>) {
    match name {
        "encode: does not validate ops" => {
            let err = got.expect_err("chord refuses a root set when it is parsed");
            assert!(err.contains("non-empty path"), "{err}");
        }
        other => panic!("deviation {other:?} has no check"),
    }
}

#[test]
fn conformance_vectors() {
    let all = vectors::read();
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    let mut deferred = 0;
    for case in &all.cases {
        match vectors::cmd(case) {
            // The tracker's overlap probe and diff: replayed by tests/conformance_tracker.rs
            // (and the probe alone by the unit tests of src/overlap.rs).
            "overlap" | "diff" => deferred += 1,
            cmd => {
                check(case);
                *ran.entry(cmd.to_owned()).or_default() += 1;
            }
        }
    }

    // The only line serde_json cannot read holds a lone surrogate (see DEVIATIONS).
    let unparsable = &all.unparsable;
    assert_eq!(unparsable.len(), 1, "{unparsable:?}");
    assert!(unparsable[0].contains("t counts UTF-16 code units"));
    let mut doc = Some(serde_json::json!({"s": "\u{10000}b"}));
    let before = doc.clone();
    let err = apply(&mut doc, [Op::Truncate(chord::path!["s"], 1)]).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::SplitsCharacter { count: 1 }
    ));
    assert_eq!(doc, before);
    apply(&mut doc, [Op::Truncate(chord::path!["s"], 2)]).unwrap();
    assert_eq!(doc, Some(serde_json::json!({"s": "b"})));
    *ran.entry("apply".into()).or_default() += 1;

    let expected: BTreeMap<String, usize> = [
        ("apply", 97),
        ("applyImmutable", 1),
        ("decode", 22),
        ("encode", 15),
        ("isBase", 15),
        ("validOp", 51),
        ("validWireOp", 55),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(ran, expected, "every case of these commands must run");
    assert_eq!(deferred, 20);
}
