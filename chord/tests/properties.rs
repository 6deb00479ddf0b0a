//! Property tests for chord's core.
//!
//! - Random streams of valid ops round-trip through one [`Encoder`], JSON text and one
//!   [`Decoder`], and a fresh decoder started at any base batch decodes the rest.
//! - [`apply`] and the decoder never panic, whatever they are given.
//! - A batch that fails leaves its target exactly as it was, key order included.
//!
//! Valid ops are generated against the current document by a small generator driven by a
//! vector of random choices (`support/generator.rs`), and an independent model of the op
//! semantics (`support/model.rs`, not borrowed from chord) tracks what the document must
//! become. The strategies and the runner are in `support/strategies.rs`.

#[path = "support/generator.rs"]
mod generator;
#[path = "support/model.rs"]
mod model;
#[path = "support/strategies.rs"]
mod strategies;

use std::cell::RefCell;

use chord::{
    apply, apply_with, batch_from_value, display_batch, is_base, parse_batch, Decoder, Encoder,
    ErrorKind, Limits, Op, WireOp,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

use generator::{op_features, undo_kind, wire_features, Gen, UNDO_KINDS};
use model::{model_apply, text_of};
use strategies::{batch_like, check, decoder_input, fail, stream_input, wild_doc, wild_op};

// ---------------------------------------------------------------------------------------------
// Round trip
// ---------------------------------------------------------------------------------------------

fn round_trip(
    start: &Option<Value>,
    batches: &[Vec<Op>],
    states: &[Option<Value>],
    seen: &mut Vec<&'static str>,
) -> Result<(), TestCaseError> {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    let mut replica = start.clone();
    // Decoded and applied op by op as the text is read.
    let mut streamer = Decoder::new();
    let mut streamed = start.clone();
    let mut copy = start.clone();
    let mut model = start.clone();
    let mut texts = Vec::new();
    for (k, (batch, state)) in batches.iter().zip(states).enumerate() {
        for (position, op) in batch.iter().enumerate() {
            op_features(&model, op, position, seen);
            model_apply(&mut model, op);
        }
        if batch.is_empty() {
            seen.push("empty batch");
        }
        if k > 0 && is_base(batch) {
            seen.push("base batch after the first");
        }
        let text = encoder.encode(batch).to_json();
        let wire: Vec<WireOp> =
            serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        wire_features(&wire, seen);
        prop_assert_eq!(WireOp::is_base(&wire), is_base(batch));
        let decoded = decoder.decode_str(&text).map_err(fail)?;
        prop_assert_eq!(&decoded, batch, "wire {}", text);
        apply(&mut replica, decoded).map_err(fail)?;
        apply(&mut copy, batch).map_err(fail)?;
        let applied = streamer
            .apply_str(&text, &mut streamed, &Limits::default())
            .map_err(fail)?;
        prop_assert_eq!(applied.ops, batch.len());
        prop_assert_eq!(applied.base, is_base(batch));
        prop_assert_eq!(text_of(&streamed), text_of(&copy));
        prop_assert_eq!(&replica, &copy);
        prop_assert_eq!(text_of(&replica), text_of(&copy));
        prop_assert_eq!(
            text_of(&copy),
            text_of(state),
            "chord and the model disagree"
        );
        texts.push(text);
    }
    // Recovery: a fresh decoder and an empty replica, starting at any base batch.
    for (k, batch) in batches.iter().enumerate() {
        if !is_base(batch) {
            continue;
        }
        if k > 0 {
            seen.push("recovery from a later base batch");
        }
        let mut decoder = Decoder::new();
        let mut replica = None;
        for (text, batch) in texts[k..].iter().zip(&batches[k..]) {
            let decoded = decoder.decode_str(text).map_err(fail)?;
            prop_assert_eq!(&decoded, batch, "recovering from batch {}", k);
            apply(&mut replica, decoded).map_err(fail)?;
        }
        prop_assert_eq!(
            text_of(&replica),
            text_of(&copy),
            "recovering from batch {}",
            k
        );
    }
    Ok(())
}

#[test]
fn valid_streams_round_trip_through_one_encoder_and_one_decoder() {
    let seen = RefCell::new(std::collections::BTreeMap::<&str, usize>::new());
    check(4096, stream_input(), |(start, roots, values, raw)| {
        let (batches, states) = Gen::new(&roots, &values, raw).stream(&start);
        let mut features = Vec::new();
        let result = round_trip(&start, &batches, &states, &mut features);
        let mut seen = seen.borrow_mut();
        for f in features {
            *seen.entry(f).or_default() += 1;
        }
        result
    });
    let seen = seen.borrow();
    for feature in [
        "base batch",
        "base batch after the first",
        "r in the middle of a batch",
        "empty batch",
        "numeric segment on an object",
        "set one past the end",
        "set an existing element",
        "set an existing member",
        "set a new member",
        "delete a member",
        "delete a missing member",
        "remove an element",
        "append",
        "append astral text",
        "truncate",
        "truncate astral text",
        "truncate beyond the end",
        "splice",
        "splice with clamping",
        "splice the root",
        "path interned",
        "path omitted",
        "id from an earlier batch",
        "recovery from a later base batch",
    ] {
        assert!(
            seen.contains_key(feature),
            "no stream exercised {feature:?}: {seen:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Atomicity
// ---------------------------------------------------------------------------------------------

/// Whether `op`, valid just before, is still valid applied again to `doc` (what it made):
/// a set, an append or an `r` always is; a member's delete is then a no-op; a splice that
/// inserts without removing inserts again; a cut must fall between characters.
fn repeatable(doc: &Option<Value>, op: &Op) -> bool {
    match op {
        Op::Replace(_) | Op::Set(..) | Op::Append(..) => true,
        Op::Splice { remove: 0, .. } => true,
        Op::Splice { .. } => false,
        Op::Delete(path) => {
            let (parent, _) = path.split_last();
            matches!(
                doc.as_ref().and_then(|d| model::node(d, parent)),
                Some(Value::Object(_))
            )
        }
        Op::Truncate(path, n) => match doc.as_ref().and_then(|d| model::node(d, path)) {
            Some(Value::String(s)) => {
                let units: Vec<u16> = s.encode_utf16().collect();
                units.get(*n).is_none_or(|u| !(0xDC00..=0xDFFF).contains(u))
            }
            _ => false,
        },
    }
}

#[test]
fn a_failed_batch_leaves_the_target_exactly_as_it_was() {
    let undone = RefCell::new([0usize; UNDO_KINDS.len()]);
    let repeated = RefCell::new(0usize);
    let failures = RefCell::new(std::collections::BTreeMap::<String, usize>::new());
    check(4096, stream_input(), |(start, roots, values, raw)| {
        let mut gen = Gen::new(&roots, &values, raw);
        let mut doc = start.clone();
        let mut ops = Vec::new();
        for _ in 0..gen.ch.below(7) {
            let before = doc.clone();
            gen.push(&mut ops, &mut doc);
            undone.borrow_mut()[undo_kind(&before, &ops[ops.len() - 1])] += 1;
            // The same op again, at once: the applier's undo log folds an op that changes
            // the location the previous one changed into its entry, which rollback must
            // still undo exactly.
            for _ in 0..gen.ch.below(3) {
                let again = ops[ops.len() - 1].clone();
                if repeatable(&doc, &again) {
                    model_apply(&mut doc, &again);
                    ops.push(again);
                    *repeated.borrow_mut() += 1;
                }
            }
        }
        let failing_at = ops.len();

        // The prefix alone applies, and chord agrees with the model on it.
        let mut prefix_only = start.clone();
        apply(&mut prefix_only, &ops).map_err(fail)?;
        prop_assert_eq!(text_of(&prefix_only), text_of(&doc));

        let (bad, kind, path) = gen.failing(&doc);
        *failures
            .borrow_mut()
            .entry(
                format!("{kind:?}")
                    .split([' ', '('])
                    .next()
                    .unwrap_or("")
                    .to_owned(),
            )
            .or_default() += 1;
        ops.push(bad);
        for _ in 0..gen.ch.below(3) {
            let op = gen.op(&doc);
            ops.push(op);
        }

        let mut target = start.clone();
        let err = match apply(&mut target, ops) {
            Ok(()) => return Err(TestCaseError::fail("the batch should have failed")),
            Err(e) => e,
        };
        prop_assert_eq!(err.op_index(), Some(failing_at), "{}", err);
        prop_assert_eq!(err.kind(), &kind, "{}", err);
        prop_assert_eq!(err.path(), Some(&path), "{}", err);
        prop_assert_eq!(&target, &start);
        prop_assert_eq!(
            text_of(&target),
            text_of(&start),
            "key order must be restored"
        );
        Ok(())
    });
    for (name, count) in UNDO_KINDS.iter().zip(undone.borrow().iter()) {
        assert!(*count > 0, "no generated batch rolled back {name:?}");
    }
    assert!(
        *repeated.borrow() > 1000,
        "{} ops repeated",
        repeated.borrow()
    );
    let failures = failures.borrow();
    for kind in [
        "ReservedSegment",
        "IndexOutOfRange",
        "Missing",
        "KeyOnArray",
        "NotAString",
        "NotAnArray",
        "NotAContainer",
        "SplitsCharacter",
        "NoValue",
    ] {
        assert!(
            failures.contains_key(kind),
            "no batch failed with {kind}: {failures:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// apply never panics
// ---------------------------------------------------------------------------------------------

fn tight() -> Limits {
    Limits::default()
        .max_depth(3)
        .max_array_len(4)
        .max_string_len(8)
}

/// Applies `ops` to a copy of `doc` with default and tight limits: no panic, and on error the
/// copy is unchanged and the error names an op of the batch.
fn apply_checked(doc: &Option<Value>, ops: &[Op]) -> Result<(), TestCaseError> {
    for limits in [Limits::default(), tight()] {
        let mut target = doc.clone();
        if let Err(e) = apply_with(&mut target, ops, &limits) {
            prop_assert!(e.op_index().is_some_and(|i| i < ops.len()), "{}", e);
            prop_assert_eq!(text_of(&target), text_of(doc));
            prop_assert!(!e.to_string().is_empty());
        }
    }
    Ok(())
}

#[test]
fn apply_never_panics_on_untrusted_json() {
    check(4096, (batch_like(), wild_doc()), |(batch, doc)| {
        let text = batch.to_string();
        let parsed = batch_from_value(batch.clone());
        prop_assert_eq!(parse_batch(&text).is_ok(), parsed.is_ok());
        if let Value::Array(items) = &batch {
            for item in items {
                // Neither grammar panics on any element.
                let _ = Op::from_value(item.clone()).map(|op| op.to_string());
                let _ = WireOp::from_value(item.clone());
            }
        }
        match parsed {
            Ok(ops) => {
                apply_checked(&doc, &ops)?;
                apply_checked(&None, &ops)?;
                // What parses serializes back to the same ops.
                let again = batch_from_value(
                    serde_json::to_value(&ops).map_err(|e| TestCaseError::fail(e.to_string()))?,
                )
                .map_err(fail)?;
                prop_assert_eq!(again, ops);
            }
            Err(e) => {
                if let Value::Array(items) = &batch {
                    prop_assert!(e.op_index().is_some_and(|i| i < items.len()), "{}", e);
                }
            }
        }
        Ok(())
    });
}

#[test]
fn apply_never_panics_on_ops_built_in_memory() {
    check(4096, (vec(wild_op(), 0..6), wild_doc()), |(ops, doc)| {
        apply_checked(&doc, &ops)?;
        apply_checked(&None, &ops)?;
        // The readable forms never panic either.
        prop_assert!(!display_batch(&ops).to_string().is_empty());
        let whole = format!("{:#}", display_batch(&ops));
        prop_assert!(!whole.is_empty());

        // Encoding and decoding in memory (no text, so any float survives) is the identity,
        // except that the decoder refuses reserved segments.
        let reserved = ops
            .iter()
            .any(|op| op.path().is_some_and(|p| p.reserved_segment().is_some()));
        let wire = Encoder::new().encode(&ops).to_wire_ops();
        match Decoder::new().decode(wire) {
            Ok(decoded) => {
                prop_assert!(!reserved);
                prop_assert_eq!(decoded, ops);
            }
            Err(e) => {
                prop_assert!(reserved, "{}", e);
                let refused = matches!(e.kind(), ErrorKind::ReservedSegment { .. });
                prop_assert!(refused, "{}", e);
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// The decoder never panics, and stays poisoned
// ---------------------------------------------------------------------------------------------

/// An outcome as the two ways of applying a batch must agree on it.
type Outcome = Result<(), (ErrorKind, Option<usize>, Option<chord::Path>)>;

fn outcome(result: chord::Result<()>) -> Outcome {
    result.map_err(|e| (e.kind().clone(), e.op_index(), e.path().cloned()))
}

#[test]
fn applying_as_the_text_is_read_agrees_with_decoding_first() {
    let seen = RefCell::new(std::collections::BTreeMap::<&str, usize>::new());
    check(
        2048,
        (stream_input(), wild_doc(), vec(decoder_input(), 0..3)),
        |((start, roots, values, raw), wild, junk)| {
            // A valid stream's batches, then text of any kind: applied to the stream's own
            // start (they apply) and to another document (most ops then cannot).
            let (batches, _) = Gen::new(&roots, &values, raw).stream(&start);
            let mut encoder = Encoder::new();
            let mut texts: Vec<String> = batches
                .iter()
                .map(|b| encoder.encode(b).to_json())
                .collect();
            texts.extend(junk);
            for (doc, limits) in [
                (&start, Limits::default()),
                (&wild, Limits::default()),
                (&start, tight()),
            ] {
                // Decoding first, then applying the ops: the reference.
                let mut first = Decoder::new();
                let mut want = doc.clone();
                // Applying each op as it is read.
                let mut streaming = Decoder::new();
                let mut got = doc.clone();
                for text in &texts {
                    let expected = first
                        .decode_str(text)
                        .and_then(|ops| apply_with(&mut want, ops, &limits));
                    let actual = streaming.apply_str(text, &mut got, &limits).map(drop);
                    *seen
                        .borrow_mut()
                        .entry(match (&expected, first.is_poisoned()) {
                            (Ok(()), _) => "applied",
                            (Err(_), true) => "refused by the decoder",
                            (Err(_), false) => "refused by the applier",
                        })
                        .or_default() += 1;
                    prop_assert_eq!(outcome(actual), outcome(expected), "{}", text);
                    prop_assert_eq!(streaming.is_poisoned(), first.is_poisoned());
                    prop_assert_eq!(text_of(&got), text_of(&want), "{}", text);
                }
            }
            Ok(())
        },
    );
    let seen = seen.borrow();
    for what in [
        "applied",
        "refused by the decoder",
        "refused by the applier",
    ] {
        assert!(
            seen.get(what).copied().unwrap_or(0) > 100,
            "{what}: {seen:?}"
        );
    }
}

#[test]
fn the_decoder_never_panics_and_stays_poisoned() {
    check(
        4096,
        (vec(decoder_input(), 1..8), wild_doc()),
        |(texts, doc)| {
            let mut decoder = Decoder::new();
            let mut replica = doc;
            let mut failed = false;
            for text in &texts {
                let result = decoder.decode_str(text);
                if failed {
                    let err = result.err().map(|e| e.kind().clone());
                    prop_assert_eq!(err, Some(ErrorKind::DecoderPoisoned), "after {:?}", text);
                    continue;
                }
                match result {
                    Ok(ops) => {
                        // What the decoder yields is valid under the decoded grammar.
                        let value = serde_json::to_value(&ops)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                        prop_assert_eq!(batch_from_value(value).map_err(fail)?, ops.clone());
                        let before = replica.clone();
                        if apply(&mut replica, &ops).is_err() {
                            prop_assert_eq!(text_of(&replica), text_of(&before));
                        }
                    }
                    Err(e) => {
                        prop_assert_ne!(e.kind(), &ErrorKind::DecoderPoisoned);
                        failed = true;
                    }
                }
            }
            if failed {
                for result in [
                    decoder.decode_str("[]"),
                    decoder.decode_value(json!([["r", {}]])),
                    decoder.decode(vec![]),
                ] {
                    let err = result.err().map(|e| e.kind().clone());
                    prop_assert_eq!(err, Some(ErrorKind::DecoderPoisoned));
                }
            }
            Ok(())
        },
    );
}
