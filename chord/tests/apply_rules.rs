//! One small test per rule of the applier and the wire codec, each named after its rule.
//!
//! Every failing batch is checked for atomicity: the target must serialize to exactly what it
//! did before (key order included).

use chord::{
    apply, apply_with, display_batch, is_base, parse_batch, path, Decoder, Encoder, Error,
    ErrorKind, IntoOp, Limits, Op, Path, PathRef, Seg, WireOp,
};
use serde_json::{json, Value};

fn text_of(target: &Option<Value>) -> String {
    serde_json::to_string(target).expect("a Value serializes")
}

/// Applies a batch that must fail with `limits`, checks that it left `target` untouched, and
/// returns the error.
fn refused_with<I>(target: &mut Option<Value>, ops: I, limits: &Limits) -> Error
where
    I: IntoIterator,
    I::Item: IntoOp,
{
    let before = text_of(target);
    let err = apply_with(target, ops, limits).expect_err("the batch must fail");
    assert_eq!(text_of(target), before, "a failed batch changed its target");
    err
}

fn refused<I>(target: &mut Option<Value>, ops: I) -> Error
where
    I: IntoIterator,
    I::Item: IntoOp,
{
    refused_with(target, ops, &Limits::default())
}

fn splice(path: impl Into<Path>, index: usize, remove: usize, items: Vec<Value>) -> Op {
    Op::Splice {
        path: path.into(),
        index,
        remove,
        items,
    }
}

fn segs(path: &[Seg]) -> Path {
    Path::from(path.to_vec())
}

// ---------------------------------------------------------------------------------------------
// Indices
// ---------------------------------------------------------------------------------------------

#[test]
fn set_writes_an_existing_element() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    apply(&mut doc, [Op::Set(path!["xs", 1], json!(9))]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [1, 9, 3]})));
}

#[test]
fn set_one_past_the_end_appends() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    apply(&mut doc, [Op::Set(path!["xs", 3], json!(4))]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [1, 2, 3, 4]})));
}

#[test]
fn set_beyond_one_past_the_end_is_a_gap_error() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    let err = refused(&mut doc, [Op::Set(path!["xs", 4], json!(5))]);
    assert_eq!(err.kind(), &ErrorKind::IndexOutOfRange { index: 4, len: 3 });
    assert_eq!(err.op_index(), Some(0));
    assert_eq!(err.path(), Some(&path!["xs", 4].into()));
}

#[test]
fn a_huge_index_is_an_error_without_allocating() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    let huge = usize::MAX;
    let err = refused(&mut doc, [Op::Set(path!["xs", huge], json!(1))]);
    assert_eq!(
        err.kind(),
        &ErrorKind::IndexOutOfRange {
            index: huge,
            len: 3
        }
    );
    let err = refused(&mut doc, [Op::Delete(path!["xs", huge])]);
    assert_eq!(
        err.kind(),
        &ErrorKind::IndexOutOfRange {
            index: huge,
            len: 3
        }
    );
    // Walking through a huge index names the segment where the walk stopped.
    let err = refused(&mut doc, [Op::Set(path!["xs", huge, "a"], json!(1))]);
    assert_eq!(
        err.kind(),
        &ErrorKind::IndexOutOfRange {
            index: huge,
            len: 3
        }
    );
    assert_eq!(err.path(), Some(&path!["xs", huge].into()));
    // A huge splice index or count clamps instead.
    apply(&mut doc, [splice(path!["xs"], huge, huge, vec![json!(4)])]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [1, 2, 3, 4]})));
}

#[test]
fn missing_parents_are_errors_never_created() {
    let mut doc = Some(json!({"a": {}, "xs": []}));
    let err = refused(&mut doc, [Op::Set(path!["a", "b", "c"], json!(1))]);
    assert_eq!(err.kind(), &ErrorKind::Missing);
    assert_eq!(err.path(), Some(&path!["a", "b"].into()));
    let err = refused(&mut doc, [Op::Set(path!["xs", 0, "k"], json!(1))]);
    assert_eq!(err.kind(), &ErrorKind::IndexOutOfRange { index: 0, len: 0 });
    assert_eq!(err.path(), Some(&path!["xs", 0].into()));
    let err = refused(&mut doc, [splice(path!["nope"], 0, 0, vec![json!(1)])]);
    assert_eq!(err.kind(), &ErrorKind::Missing);
    assert_eq!(err.path(), Some(&path!["nope"].into()));
}

#[test]
fn a_numeric_segment_on_an_object_addresses_the_digit_key() {
    let mut doc = Some(json!({"m": {"0": "zero"}}));
    apply(
        &mut doc,
        [
            Op::Set(path!["m", 0], json!("z")),
            Op::Set(path!["m", 12], json!(1)),
            Op::Append(path!["m", 0], "!".into()),
        ],
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"m": {"0": "z!", "12": 1}})));
    // The string spelling addresses the same member.
    apply(&mut doc, [Op::Delete(path!["m", "12"])]).unwrap();
    apply(&mut doc, [Op::Truncate(path!["m", "0"], 1)]).unwrap();
    assert_eq!(doc, Some(json!({"m": {"0": "!"}})));
}

#[test]
fn a_string_segment_on_an_array_is_an_error() {
    let mut doc = Some(json!({"xs": [1]}));
    let err = refused(&mut doc, [Op::Set(path!["xs", "0"], json!(2))]);
    assert_eq!(err.kind(), &ErrorKind::KeyOnArray);
    assert_eq!(err.path(), Some(&path!["xs", "0"].into()));
    let err = refused(&mut doc, [Op::Set(path!["xs", "a", "b"], json!(2))]);
    assert_eq!(err.kind(), &ErrorKind::KeyOnArray);
    assert_eq!(err.path(), Some(&path!["xs", "a"].into()));
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_of_a_missing_member_is_a_no_op() {
    let mut doc = Some(json!({"a": 1}));
    apply(&mut doc, [Op::Delete(path!["b"])]).unwrap();
    assert_eq!(doc, Some(json!({"a": 1})));
    // The parent must still exist.
    let err = refused(&mut doc, [Op::Delete(path!["z", "b"])]);
    assert_eq!(err.kind(), &ErrorKind::Missing);
    assert_eq!(err.path(), Some(&path!["z"].into()));
}

#[test]
fn delete_of_an_element_shifts_the_rest_down() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    apply(&mut doc, [Op::Delete(path!["xs", 0])]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [2, 3]})));
    let err = refused(&mut doc, [Op::Delete(path!["xs", 2])]);
    assert_eq!(err.kind(), &ErrorKind::IndexOutOfRange { index: 2, len: 2 });
}

#[test]
fn delete_keeps_the_order_of_the_other_members() {
    let mut doc = Some(json!({"a": 1, "b": 2, "c": 3}));
    apply(&mut doc, [Op::Delete(path!["a"])]).unwrap();
    assert_eq!(text_of(&doc), r#"{"b":2,"c":3}"#);
}

// ---------------------------------------------------------------------------------------------
// Append and truncate
// ---------------------------------------------------------------------------------------------

#[test]
fn truncate_counts_utf16_code_units() {
    // é is two bytes and one unit; 😀 is four bytes and two units.
    let mut doc = Some(json!({"s": "é😀ab"}));
    apply(&mut doc, [Op::Truncate(path!["s"], 1)]).unwrap();
    assert_eq!(doc, Some(json!({"s": "😀ab"})));
    apply(&mut doc, [Op::Truncate(path!["s"], 2)]).unwrap();
    assert_eq!(doc, Some(json!({"s": "ab"})));
    assert_eq!(chord::utf16_len("é😀ab"), 5);
}

#[test]
fn truncate_inside_a_surrogate_pair_is_an_error() {
    let mut doc = Some(json!({"s": "a😀b"}));
    let err = refused(&mut doc, [Op::Truncate(path!["s"], 2)]);
    assert_eq!(err.kind(), &ErrorKind::SplitsCharacter { count: 2 });
    assert_eq!(
        err.to_string(),
        "op 0 at s: truncating 2 UTF-16 units would split a surrogate pair"
    );
    apply(&mut doc, [Op::Truncate(path!["s"], 3)]).unwrap();
    assert_eq!(doc, Some(json!({"s": "b"})));
}

#[test]
fn truncate_beyond_the_length_empties_the_string() {
    let mut doc = Some(json!({"s": "abc", "e": "😀"}));
    apply(
        &mut doc,
        [
            Op::Truncate(path!["s"], 10),
            Op::Truncate(path!["e"], usize::MAX),
        ],
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"s": "", "e": ""})));
}

#[test]
fn append_and_truncate_need_an_existing_string() {
    let mut doc = Some(json!({"n": 1, "o": {}, "z": null}));
    let err = refused(&mut doc, [Op::Append(path!["missing"], "x".into())]);
    assert_eq!(err.kind(), &ErrorKind::Missing);
    assert_eq!(err.path(), Some(&path!["missing"].into()));
    let err = refused(&mut doc, [Op::Append(path!["n"], "x".into())]);
    assert_eq!(err.kind(), &ErrorKind::NotAString { found: "a number" });
    assert_eq!(
        err.to_string(),
        "op 0 at n: expected a string, found a number"
    );
    let err = refused(&mut doc, [Op::Truncate(path!["o"], 1)]);
    assert_eq!(err.kind(), &ErrorKind::NotAString { found: "an object" });
    let err = refused(&mut doc, [Op::Truncate(path!["z"], 0)]);
    assert_eq!(err.kind(), &ErrorKind::NotAString { found: "null" });
    let err = refused(&mut doc, [Op::Truncate(path!["o", "x"], 1)]);
    assert_eq!(err.kind(), &ErrorKind::Missing);
}

#[test]
fn append_adds_text_at_the_end() {
    let mut doc = Some(json!({"s": "a"}));
    apply(&mut doc, [Op::Append(path!["s"], "😀b".into())]).unwrap();
    assert_eq!(doc, Some(json!({"s": "a😀b"})));
}

// ---------------------------------------------------------------------------------------------
// Splice
// ---------------------------------------------------------------------------------------------

#[test]
fn splice_clamps_index_and_remove_count() {
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    apply(&mut doc, [splice(path!["xs"], 10, 0, vec![json!(4)])]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [1, 2, 3, 4]})));
    apply(&mut doc, [splice(path!["xs"], 1, usize::MAX, vec![])]).unwrap();
    assert_eq!(doc, Some(json!({"xs": [1]})));
    apply(
        &mut doc,
        [splice(path!["xs"], 0, 5, vec![json!(7), json!(8)])],
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"xs": [7, 8]})));
}

#[test]
fn splice_inserts_in_the_middle() {
    let mut doc = Some(json!({"xs": [1, 4]}));
    apply(
        &mut doc,
        [splice(path!["xs"], 1, 0, vec![json!(2), json!(3)])],
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"xs": [1, 2, 3, 4]})));
}

#[test]
fn splice_on_a_root_array() {
    let mut doc = Some(json!([1, 2]));
    apply(
        &mut doc,
        [
            splice(path![], 0, 1, vec![json!(0)]),
            splice(path![], 2, 0, vec![json!(3)]),
        ],
    )
    .unwrap();
    assert_eq!(doc, Some(json!([0, 2, 3])));
}

#[test]
fn splice_on_an_object_root_is_an_error() {
    let mut doc = Some(json!({"a": 1}));
    let err = refused(&mut doc, [splice(path![], 0, 0, vec![json!(1)])]);
    assert_eq!(err.kind(), &ErrorKind::NotAnArray { found: "an object" });
    assert_eq!(
        err.to_string(),
        "op 0 at $: expected an array, found an object"
    );
    let err = refused(&mut doc, [splice(path!["a"], 0, 0, vec![])]);
    assert_eq!(err.kind(), &ErrorKind::NotAnArray { found: "a number" });
}

// ---------------------------------------------------------------------------------------------
// Replace and the empty stream
// ---------------------------------------------------------------------------------------------

#[test]
fn replace_gives_a_stream_its_value() {
    let mut doc = None;
    apply(
        &mut doc,
        [Op::Replace(json!({"a": 1})), Op::Set(path!["b"], json!(2))],
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"a": 1, "b": 2})));
    apply(&mut doc, [Op::Replace(json!([]))]).unwrap();
    assert_eq!(doc, Some(json!([])));
}

#[test]
fn ops_other_than_replace_need_a_value() {
    let ops = [
        Op::Set(path!["x"], json!(1)),
        Op::Delete(path!["x"]),
        Op::Append(path!["x"], "a".into()),
        Op::Truncate(path!["x"], 1),
        splice(path![], 0, 0, vec![]),
    ];
    for op in ops {
        let mut doc = None;
        let err = refused(&mut doc, [&op]);
        assert_eq!(err.kind(), &ErrorKind::NoValue, "{op}");
        assert_eq!(doc, None);
    }
    let err = refused(&mut None, [Op::Set(path!["x"], json!(1))]);
    assert_eq!(
        err.to_string(),
        "op 0 at x: there is no value yet: a stream must start with an `r` op"
    );
    let err = refused(&mut None, [splice(path![], 0, 0, vec![])]);
    assert_eq!(
        err.to_string(),
        "op 0 at $: there is no value yet: a stream must start with an `r` op"
    );
    // A JSON null is a value, not the absence of one.
    let err = refused(&mut Some(Value::Null), [Op::Set(path!["x"], json!(1))]);
    assert_eq!(err.kind(), &ErrorKind::NotAContainer { found: "null" });
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

fn limit(limit: &'static str, max: usize) -> ErrorKind {
    ErrorKind::LimitExceeded { limit, max }
}

#[test]
fn max_depth_bounds_set() {
    let limits = Limits::default().max_depth(2);
    let mut doc = Some(json!({"a": {}}));
    let ops = [
        Op::Set(path!["a", "k"], json!(1)),
        Op::Set(path!["a", "b"], json!({"c": 1})),
    ];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_depth", 2));
    assert_eq!(err.op_index(), Some(1));
    assert_eq!(
        err.to_string(),
        "op 1 at a.b: exceeds the max_depth limit of 2"
    );
    // An empty container counts as a level; a scalar does not.
    let err = refused_with(&mut doc, [Op::Set(path!["a", "b"], json!([]))], &limits);
    assert_eq!(err.kind(), &limit("max_depth", 2));
    apply_with(&mut doc, [Op::Set(path!["a", "b"], json!(1))], &limits).unwrap();
    assert_eq!(doc, Some(json!({"a": {"b": 1}})));
}

#[test]
fn max_depth_bounds_splice() {
    let limits = Limits::default().max_depth(2);
    let mut doc = Some(json!({"xs": []}));
    let ops = [
        splice(path!["xs"], 0, 0, vec![json!(1)]),
        splice(path!["xs"], 0, 0, vec![json!([1])]),
    ];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_depth", 2));
    assert_eq!(err.op_index(), Some(1));
}

#[test]
fn max_depth_bounds_replace() {
    let limits = Limits::default().max_depth(1);
    let mut doc = None;
    let ops = [Op::Replace(json!({"a": 1})), Op::Replace(json!({"a": {}}))];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_depth", 1));
    assert_eq!(err.to_string(), "op 1: exceeds the max_depth limit of 1");
    assert_eq!(doc, None);
    // Depth 0 allows only a scalar document.
    let none = Limits::default().max_depth(0);
    let err = refused_with(&mut doc, [Op::Replace(json!([]))], &none);
    assert_eq!(err.kind(), &limit("max_depth", 0));
    apply_with(&mut doc, [Op::Replace(json!("text"))], &none).unwrap();
    assert_eq!(doc, Some(json!("text")));
}

#[test]
fn max_array_len_bounds_growth() {
    let limits = Limits::default().max_array_len(3);
    let mut doc = Some(json!({"xs": [1, 2, 3]}));
    let ops = [
        Op::Set(path!["xs", 0], json!(0)),
        Op::Set(path!["xs", 3], json!(4)),
    ];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_array_len", 3));
    assert_eq!(err.op_index(), Some(1));
    let ops = [
        Op::Delete(path!["xs", 0]),
        splice(path!["xs"], 0, 0, vec![json!(1), json!(2)]),
    ];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_array_len", 3));
    // Replacing elements in place keeps the length.
    apply_with(
        &mut doc,
        [splice(path!["xs"], 0, 1, vec![json!(9)])],
        &limits,
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"xs": [9, 2, 3]})));
}

#[test]
fn a_shrinking_splice_is_not_refused_by_max_array_len() {
    // An array can be longer than the limit (a value given by the caller, or one an `r`
    // brought in); ops that do not grow it must still apply.
    let limits = Limits::default().max_array_len(3);
    let mut doc = Some(json!({"xs": [1, 2, 3, 4, 5]}));
    apply_with(&mut doc, [splice(path!["xs"], 0, 1, vec![])], &limits).unwrap();
    apply_with(
        &mut doc,
        [splice(path!["xs"], 0, 2, vec![json!(0)])],
        &limits,
    )
    .unwrap();
    assert_eq!(doc, Some(json!({"xs": [0, 4, 5]})));
}

#[test]
fn max_string_len_bounds_append_in_bytes() {
    let limits = Limits::default().max_string_len(4);
    let mut doc = Some(json!({"s": "ab"}));
    // "abc" plus a two-byte é is five bytes, though only four UTF-16 units.
    let ops = [
        Op::Append(path!["s"], "c".into()),
        Op::Append(path!["s"], "é".into()),
    ];
    let err = refused_with(&mut doc, ops, &limits);
    assert_eq!(err.kind(), &limit("max_string_len", 4));
    assert_eq!(
        err.to_string(),
        "op 1 at s: exceeds the max_string_len limit of 4"
    );
    apply_with(&mut doc, [Op::Append(path!["s"], "cd".into())], &limits).unwrap();
    assert_eq!(doc, Some(json!({"s": "abcd"})));
}

#[test]
fn an_empty_append_is_not_refused_by_max_string_len() {
    let limits = Limits::default().max_string_len(2);
    let mut doc = Some(json!({"s": "abcdef"}));
    apply_with(&mut doc, [Op::Append(path!["s"], String::new())], &limits).unwrap();
    assert_eq!(doc, Some(json!({"s": "abcdef"})));
}

// ---------------------------------------------------------------------------------------------
// Reserved segments
// ---------------------------------------------------------------------------------------------

fn reserved(segment: &str, position: usize) -> ErrorKind {
    ErrorKind::ReservedSegment {
        segment: segment.into(),
        position,
    }
}

#[test]
fn reserved_segments_are_refused_at_apply_even_for_ops_built_in_memory() {
    let cases = [
        (
            Op::Set(path!["__proto__", "x"], json!(1)),
            reserved("__proto__", 0),
        ),
        (
            Op::Delete(path!["a", "constructor"]),
            reserved("constructor", 1),
        ),
        (
            Op::Append(path!["a", "prototype", "x"], "x".into()),
            reserved("prototype", 1),
        ),
        (
            Op::Truncate(path!["constructor"], 1),
            reserved("constructor", 0),
        ),
        (
            splice(path!["a", "__proto__"], 0, 0, vec![]),
            reserved("__proto__", 1),
        ),
    ];
    for (op, kind) in cases {
        let mut doc = Some(json!({"a": {}}));
        let err = refused(&mut doc, [&op]);
        assert_eq!(err.kind(), &kind, "{op}");
        assert_eq!(err.path(), op.path(), "{op}");
        // Checked before anything else, so even a stream with no value says so.
        let err = refused(&mut None, [&op]);
        assert_eq!(err.kind(), &kind, "{op}");
    }
    let mut doc = Some(json!({"a": {}}));
    let err = refused(&mut doc, [Op::Set(path!["a", "__proto__"], json!(1))]);
    assert_eq!(
        err.to_string(),
        r#"op 0 at a.__proto__: path segment 1 is the reserved name "__proto__""#
    );
}

#[test]
fn reserved_names_are_fine_as_keys_inside_values() {
    let mut doc = Some(json!({}));
    let value = json!({"__proto__": {"polluted": true}, "constructor": 1, "prototype": []});
    apply(&mut doc, [Op::Set(path!["a"], value.clone())]).unwrap();
    assert_eq!(doc, Some(json!({ "a": value })));
}

// ---------------------------------------------------------------------------------------------
// Error text
// ---------------------------------------------------------------------------------------------

#[test]
fn error_display_names_the_op_index_and_the_path() {
    let mut doc = Some(json!({"xs": [1, 2, 3], "n": 1, "two words": "x"}));
    let err = refused(
        &mut doc,
        [
            Op::Set(path!["xs", 1], json!(9)),
            Op::Set(path!["xs", 5], json!(9)),
        ],
    );
    assert_eq!(
        err.to_string(),
        "op 1 at xs[5]: index 5 is past the end of an array of length 3 \
         (an op may write at most one past the end)"
    );
    let err = refused(&mut doc, [Op::Set(path!["a", "b"], json!(1))]);
    assert_eq!(err.to_string(), "op 0 at a: no such member or element");
    let err = refused(&mut doc, [Op::Set(path!["xs", "0"], json!(1))]);
    assert_eq!(
        err.to_string(),
        r#"op 0 at xs["0"]: a string segment cannot address an array element"#
    );
    let err = refused(&mut doc, [Op::Set(path!["n", "k", "j"], json!(1))]);
    assert_eq!(
        err.to_string(),
        "op 0 at n.k: cannot walk into a number: only objects and arrays have children"
    );
    let err = refused(&mut doc, [Op::Set(path!["two words", 0], json!(1))]);
    assert_eq!(
        err.to_string(),
        r#"op 0 at ["two words"][0]: cannot walk into a string: only objects and arrays have children"#
    );
}

#[test]
fn parse_errors_name_the_op_index() {
    let err = parse_batch(r#"[["s",["a"],1],["s","a",9]]"#).unwrap_err();
    assert_eq!(err.op_index(), Some(1));
    assert_eq!(
        err.to_string(),
        "op 1: invalid path: expected an array of segments, found a string"
    );
    let err = parse_batch(r#"[["t",["a"],-1]]"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op 0: count must be a non-negative integer, found -1"
    );
}

// ---------------------------------------------------------------------------------------------
// The readable form
// ---------------------------------------------------------------------------------------------

#[test]
fn ops_display_in_a_readable_form() {
    let cases = [
        (Op::Replace(json!({"x": 1})), r#"replace {"x":1}"#),
        (
            Op::Set(path!["config", "model"], json!("gpt")),
            r#"set config.model = "gpt""#,
        ),
        (Op::Delete(path!["xs", 2]), "delete xs[2]"),
        (
            Op::Append(path!["meta", "two words"], "hi".into()),
            r#"append meta["two words"] += "hi""#,
        ),
        (Op::Truncate(path!["out"], 4), "truncate out by 4"),
        (
            splice(path![], 0, 1, vec![json!(1), json!(2)]),
            "splice $ at 0: remove 1, insert 2 [1,2]",
        ),
        (
            splice(path!["xs"], 3, 0, vec![]),
            "splice xs at 3: remove 0",
        ),
        (Op::Set(path![0, "a"], json!(null)), "set [0].a = null"),
    ];
    for (op, want) in cases {
        assert_eq!(op.to_string(), want);
    }
}

#[test]
fn long_payloads_are_elided_and_the_alternate_form_prints_them_whole() {
    // 70 characters of text are 72 bytes of JSON: the longest payload printed whole.
    let op = Op::Set(path!["a"], json!("x".repeat(70)));
    assert_eq!(op.to_string(), format!("set a = \"{}\"", "x".repeat(70)));
    // 100 characters are 102 bytes: the first 72 are kept.
    let op = Op::Set(path!["a"], json!("x".repeat(100)));
    assert_eq!(
        op.to_string(),
        format!("set a = \"{}… (102 bytes)", "x".repeat(71))
    );
    assert_eq!(
        format!("{op:#}"),
        format!("set a = \"{}\"", "x".repeat(100))
    );
    // The cut backs off to a character boundary: byte 72 is inside the 36th é.
    let op = Op::Append(path!["a"], "é".repeat(50));
    assert_eq!(
        op.to_string(),
        format!("append a += \"{}… (102 bytes)", "é".repeat(35))
    );
}

#[test]
fn display_batch_counts_ops_and_marks_base_batches() {
    assert_eq!(display_batch(&[]).to_string(), "batch, 0 ops");
    assert_eq!(
        display_batch(&[Op::Delete(path!["a"])]).to_string(),
        "batch, 1 op\n  delete a"
    );
    let long = "x".repeat(100);
    let batch = [Op::Replace(json!(long)), Op::Delete(path!["a"])];
    assert_eq!(
        display_batch(&batch).to_string(),
        format!(
            "base batch, 2 ops\n  replace \"{}… (102 bytes)\n  delete a",
            "x".repeat(71)
        )
    );
    assert_eq!(
        format!("{:#}", display_batch(&batch)),
        format!("base batch, 2 ops\n  replace \"{long}\"\n  delete a")
    );
    // An `r` later in a batch does not make it a base batch.
    let batch = [Op::Delete(path!["a"]), Op::Replace(json!(1))];
    assert_eq!(
        display_batch(&batch).to_string(),
        "batch, 2 ops\n  delete a\n  replace 1"
    );
}

// ---------------------------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------------------------

/// Encodes `batches` with one encoder, checks each against `want`, and checks that one decoder
/// turns them back into the originals.
fn encodes_as(batches: &[Vec<Op>], want: &[&str]) {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    assert_eq!(batches.len(), want.len());
    for (batch, want) in batches.iter().zip(want) {
        let wire = encoder.encode(batch);
        assert_eq!(wire.to_json(), *want);
        assert_eq!(wire.len(), wire.to_wire_ops().len());
        assert_eq!(&decoder.decode_str(want).unwrap(), batch);
    }
}

fn set(path: chord::NonEmptyPath, v: i32) -> Op {
    Op::Set(path, json!(v))
}

#[test]
fn the_encoder_interns_a_path_on_its_second_use() {
    encodes_as(
        &[
            vec![set(path!["a"], 1)],
            vec![set(path!["a"], 2)],
            vec![set(path!["a"], 3)],
        ],
        &[
            r#"[["s",["a"],1]]"#,
            r##"[["#",0,["a"]],["s",0,2]]"##,
            r#"[["s",0,3]]"#,
        ],
    );
}

#[test]
fn the_encoder_omits_a_repeated_path_within_a_batch_only() {
    let out = || path!["out"];
    encodes_as(
        &[
            vec![
                Op::Append(out(), "a".into()),
                Op::Append(out(), "b".into()),
                Op::Truncate(out(), 1),
                Op::Delete(path!["x"]),
                Op::Delete(path!["x"]),
            ],
            // Omitted ops do not count as uses: this is the path's second.
            vec![Op::Append(out(), "c".into())],
        ],
        &[
            r#"[["a",["out"],"a"],["a","b"],["t",1],["d",["x"]],["d"]]"#,
            r##"[["#",0,["out"]],["a",0,"c"]]"##,
        ],
    );
    // Not adjacent: the second use in the batch interns instead.
    encodes_as(
        &[vec![
            Op::Append(out(), "1".into()),
            set(path!["x"], 1),
            Op::Append(out(), "2".into()),
        ]],
        &[r##"[["a",["out"],"1"],["s",["x"],1],["#",0,["out"]],["a",0,"2"]]"##],
    );
}

#[test]
fn the_encoder_resets_at_every_replace_even_mid_batch() {
    encodes_as(
        &[
            vec![set(path!["a"], 1)],
            vec![
                set(path!["a"], 2),
                Op::Replace(json!({})),
                set(path!["a"], 3),
            ],
            vec![set(path!["b"], 1), set(path!["a"], 4)],
        ],
        &[
            r#"[["s",["a"],1]]"#,
            r##"[["#",0,["a"]],["s",0,2],["r",{}],["s",["a"],3]]"##,
            r##"[["s",["b"],1],["#",0,["a"]],["s",0,4]]"##,
        ],
    );
    // Omission does not reach across an `r` either.
    encodes_as(
        &[vec![
            set(path!["a"], 1),
            Op::Replace(json!({})),
            set(path!["a"], 2),
        ]],
        &[r#"[["s",["a"],1],["r",{}],["s",["a"],2]]"#],
    );
}

#[test]
fn the_encoder_numbers_ids_in_order_of_second_use() {
    encodes_as(
        &[
            vec![set(path!["a"], 1), set(path!["b"], 1), set(path!["c"], 1)],
            vec![set(path!["c"], 2), set(path!["a"], 2)],
            vec![set(path!["b"], 3), set(path!["a"], 3)],
        ],
        &[
            r#"[["s",["a"],1],["s",["b"],1],["s",["c"],1]]"#,
            r##"[["#",0,["c"]],["s",0,2],["#",1,["a"]],["s",1,2]]"##,
            r##"[["#",2,["b"]],["s",2,3],["s",1,3]]"##,
        ],
    );
}

#[test]
fn an_index_segment_and_a_digit_key_are_different_paths() {
    encodes_as(
        &[
            vec![set(path!["m", 0], 1), set(path!["m", "0"], 2)],
            vec![set(path!["m", "0"], 3)],
            vec![set(path!["m", 0], 4)],
        ],
        &[
            r#"[["s",["m",0],1],["s",["m","0"],2]]"#,
            r##"[["#",0,["m","0"]],["s",0,3]]"##,
            r##"[["#",1,["m",0]],["s",1,4]]"##,
        ],
    );
    assert_ne!(Seg::Index(0), Seg::Key("0".into()));
}

#[test]
fn root_splices_are_shortened_like_any_path() {
    encodes_as(
        &[
            vec![
                splice(path![], 0, 0, vec![json!(1)]),
                splice(path![], 1, 0, vec![json!(2)]),
            ],
            vec![splice(path![], 2, 0, vec![json!(3)])],
        ],
        &[
            r#"[["p",[],0,0,[1]],["p",1,0,[2]]]"#,
            r##"[["#",0,[]],["p",0,2,0,[3]]]"##,
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------------

fn decode_error(decoder: &mut Decoder, wire: &str) -> Error {
    decoder
        .decode_str(wire)
        .expect_err("the batch must be refused")
}

#[test]
fn the_decoder_refuses_an_unknown_id() {
    let err = decode_error(&mut Decoder::new(), r#"[["s",["a"],1],["s",3,1]]"#);
    assert_eq!(err.kind(), &ErrorKind::UnknownId(3));
    assert_eq!(err.op_index(), Some(1));
    assert_eq!(
        err.to_string(),
        "op 1: path id 3 is not defined in this stream"
    );
}

#[test]
fn ids_live_across_batches_until_a_replace() {
    let mut decoder = Decoder::new();
    let ops = decoder
        .decode_str(r##"[["#",0,["a"]],["s",0,1]]"##)
        .unwrap();
    assert_eq!(ops, vec![set(path!["a"], 1)]);
    let ops = decoder.decode_str(r#"[["s",0,2]]"#).unwrap();
    assert_eq!(ops, vec![set(path!["a"], 2)]);
    let err = decode_error(&mut decoder, r#"[["r",{}],["s",0,3]]"#);
    assert_eq!(err.kind(), &ErrorKind::UnknownId(0));
    assert_eq!(err.op_index(), Some(1));
}

#[test]
fn the_decoder_refuses_a_short_form_with_no_previous_path() {
    let err = decode_error(&mut Decoder::new(), r#"[["a","x"]]"#);
    assert_eq!(err.kind(), &ErrorKind::NoPreviousPath);
    assert_eq!(err.op_index(), Some(0));
    // Omission never crosses a batch...
    let mut decoder = Decoder::new();
    decoder.decode_str(r#"[["s",["a"],1]]"#).unwrap();
    let err = decode_error(&mut decoder, r#"[["s",2]]"#);
    assert_eq!(err.kind(), &ErrorKind::NoPreviousPath);
    // ...nor an `r`.
    let err = decode_error(&mut Decoder::new(), r#"[["s",["a"],1],["r",{}],["s",2]]"#);
    assert_eq!(err.kind(), &ErrorKind::NoPreviousPath);
    assert_eq!(err.op_index(), Some(2));
}

#[test]
fn the_decoder_refuses_a_definition_with_a_reserved_segment() {
    let err = decode_error(&mut Decoder::new(), r##"[["#",0,["a","__proto__"]]]"##);
    assert_eq!(err.kind(), &reserved("__proto__", 1));
    assert_eq!(err.op_index(), Some(0));
    // Wire ops built in memory are checked too, in definitions and inline paths.
    let constructor = segs(&[Seg::from("constructor")]);
    let err = Decoder::new()
        .decode(vec![WireOp::Define {
            id: 0,
            path: constructor.clone(),
        }])
        .unwrap_err();
    assert_eq!(err.kind(), &reserved("constructor", 0));
    assert_eq!(err.path(), Some(&constructor));
    let prototype = segs(&[Seg::from("a"), Seg::from("prototype")]);
    let err = Decoder::new()
        .decode(vec![WireOp::Set(Some(PathRef::Path(prototype)), json!(1))])
        .unwrap_err();
    assert_eq!(err.kind(), &reserved("prototype", 1));
}

#[test]
fn the_decoder_refuses_a_set_that_resolves_to_the_root() {
    let err = decode_error(&mut Decoder::new(), r##"[["#",0,[]],["s",0,1]]"##);
    assert_eq!(err.kind(), &ErrorKind::EmptyPath { verb: 's' });
    assert_eq!(err.op_index(), Some(1));
    assert_eq!(
        err.to_string(),
        "op 1: `s` needs a non-empty path (only `r` and `p` may target the root)"
    );
    let err = decode_error(&mut Decoder::new(), r#"[["p",[],0,0,[]],["s",1]]"#);
    assert_eq!(err.kind(), &ErrorKind::EmptyPath { verb: 's' });
    let err = decode_error(&mut Decoder::new(), r#"[["d",[]]]"#);
    assert_eq!(err.kind(), &ErrorKind::EmptyPath { verb: 'd' });
    // A root splice through an id is fine.
    let ops = Decoder::new()
        .decode_str(r##"[["#",0,[]],["p",0,0,0,[1]]]"##)
        .unwrap();
    assert_eq!(ops, vec![splice(path![], 0, 0, vec![json!(1)])]);
}

#[test]
fn a_decoder_that_failed_is_poisoned() {
    let mut decoder = Decoder::new();
    decode_error(&mut decoder, r#"[["s",9,1]]"#);
    for wire in [r#"[["r",{}]]"#, "[]", "not json", r#"[["zz"]]"#] {
        let err = decode_error(&mut decoder, wire);
        assert_eq!(err.kind(), &ErrorKind::DecoderPoisoned, "{wire}");
    }
    let err = decoder.decode_value(json!([["r", {}]])).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::DecoderPoisoned);
    let err = decoder
        .decode(vec![WireOp::Replace(json!({}))])
        .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::DecoderPoisoned);
    // Invalid JSON poisons too; a fresh decoder starts clean.
    let mut decoder = Decoder::new();
    decode_error(&mut decoder, "[");
    assert_eq!(
        decode_error(&mut decoder, "[]").kind(),
        &ErrorKind::DecoderPoisoned
    );
    assert!(Decoder::new().decode_str(r#"[["r",{}]]"#).is_ok());
}

#[test]
fn is_base_is_a_token_comparison_on_either_vocabulary() {
    let base: Vec<WireOp> = serde_json::from_str(r#"[["r",{}],["s",["a"],1]]"#).unwrap();
    assert!(WireOp::is_base(&base));
    let later: Vec<WireOp> = serde_json::from_str(r#"[["s",["a"],1],["r",{}]]"#).unwrap();
    assert!(!WireOp::is_base(&later));
    assert!(!WireOp::is_base(&[]));
    assert!(is_base(&[Op::Replace(json!(null))]));
    assert!(!is_base(&[splice(path![], 0, 0, vec![])]));
}

// ---------------------------------------------------------------------------------------------
// Rollback of every kind of change
// ---------------------------------------------------------------------------------------------

/// Applies `ops` and then an op that fails (a missing parent on an object, a string segment on
/// an array): the batch must fail at that op and leave `start` exactly as it was.
fn rolls_back(start: Option<Value>, mut ops: Vec<Op>) {
    let failing = ops.len();
    ops.push(Op::Set(path!["missing", "x"], json!(1)));
    let mut doc = start.clone();
    let err = refused(&mut doc, ops);
    assert_eq!(err.op_index(), Some(failing), "{err}");
    assert!(
        matches!(err.kind(), ErrorKind::Missing | ErrorKind::KeyOnArray),
        "{err}"
    );
    assert_eq!(doc, start);
}

#[test]
fn rollback_restores_a_set_existing_member_in_place() {
    rolls_back(
        Some(json!({"a": 1, "b": 2, "c": 3})),
        vec![set(path!["b"], 9)],
    );
}

#[test]
fn rollback_removes_a_set_new_member() {
    rolls_back(
        Some(json!({"a": 1})),
        vec![set(path!["z"], 1), set(path!["y"], 2)],
    );
}

#[test]
fn rollback_restores_a_set_existing_element() {
    rolls_back(Some(json!({"xs": [1, 2]})), vec![set(path!["xs", 0], 9)]);
}

#[test]
fn rollback_removes_an_element_set_one_past_the_end() {
    rolls_back(Some(json!({"xs": [1, 2]})), vec![set(path!["xs", 2], 3)]);
}

#[test]
fn rollback_restores_a_deleted_member_at_its_position() {
    rolls_back(
        Some(json!({"a": 1, "b": 2, "c": 3})),
        vec![Op::Delete(path!["a"])],
    );
    // Deleted and set again: the member goes back to the front, not the end.
    rolls_back(
        Some(json!({"a": 1, "b": 2, "c": 3})),
        vec![
            Op::Delete(path!["a"]),
            set(path!["a"], 5),
            Op::Delete(path!["b"]),
        ],
    );
}

#[test]
fn rollback_restores_a_deleted_element() {
    rolls_back(
        Some(json!({"xs": [1, 2, 3]})),
        vec![Op::Delete(path!["xs", 1])],
    );
}

#[test]
fn rollback_undoes_an_append() {
    rolls_back(
        Some(json!({"s": "é"})),
        vec![
            Op::Append(path!["s"], "😀".into()),
            Op::Append(path!["s"], "x".into()),
        ],
    );
}

#[test]
fn rollback_undoes_a_truncate() {
    rolls_back(
        Some(json!({"s": "é😀b"})),
        vec![
            Op::Truncate(path!["s"], 3),
            Op::Append(path!["s"], "c".into()),
        ],
    );
}

#[test]
fn rollback_undoes_a_splice() {
    rolls_back(
        Some(json!({"xs": [1, 2, 3]})),
        vec![
            splice(path!["xs"], 0, 1, vec![json!(7), json!(8), json!(9)]),
            splice(path!["xs"], 10, 10, vec![json!(0)]),
            splice(path!["xs"], 1, 2, vec![]),
        ],
    );
    rolls_back(
        Some(json!([1, 2])),
        vec![splice(path![], 1, 1, vec![json!(3)])],
    );
}

#[test]
fn rollback_undoes_a_replace() {
    rolls_back(
        Some(json!({"a": 1})),
        vec![
            set(path!["a"], 2),
            Op::Replace(json!({"b": 1})),
            set(path!["b"], 3),
        ],
    );
}

#[test]
fn rollback_undoes_a_replace_of_no_value() {
    rolls_back(None, vec![Op::Replace(json!({"a": 1})), set(path!["a"], 2)]);
}

#[test]
fn rollback_undoes_every_kind_at_once() {
    rolls_back(
        Some(json!({"a": 1, "b": {"s": "x😀"}, "xs": [1, 2], "c": 3})),
        vec![
            set(path!["a"], 2),
            set(path!["n"], 1),
            Op::Delete(path!["a"]),
            Op::Append(path!["b", "s"], "y".into()),
            Op::Truncate(path!["b", "s"], 1),
            set(path!["xs", 0], 0),
            set(path!["xs", 2], 3),
            Op::Delete(path!["xs", 1]),
            splice(path!["xs"], 0, 1, vec![json!("p")]),
            Op::Delete(path!["missing"]),
        ],
    );
}

#[test]
fn a_document_at_the_default_depth_limit_crosses_the_wire() {
    // 120 nested arrays: the deepest document the default limits accept.
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!([deep]);
    }
    let mut doc = None;
    apply(&mut doc, [Op::Replace(deep.clone())]).unwrap();
    let wire = chord::Encoder::new()
        .encode(&[Op::Replace(deep.clone())])
        .to_json();
    let ops = chord::Decoder::new().decode_str(&wire).unwrap();
    assert_eq!(ops, vec![Op::Replace(deep.clone())]);
    // One level more is refused by apply, before it could become undecodable.
    let deeper = json!([deep]);
    let err = apply(&mut doc, [Op::Replace(deeper)]).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::LimitExceeded {
            limit: "max_depth",
            max: 120
        }
    ));
}
