//! Proptest strategies for `tests/properties.rs`: JSON values and starting documents, the
//! untrusted inputs (op-shaped JSON, in-memory ops, decoder text) the never-panic properties
//! feed chord, and the runner the properties share.
//!
//! Included by `tests/properties.rs` as `mod strategies`, next to `mod model` and
//! `mod generator` (`support/model.rs`, `support/generator.rs`).

use chord::{NonEmptyPath, Op, Path, Seg};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Values and documents
// ---------------------------------------------------------------------------------------------

/// Characters for generated text: ASCII, JSON escapes, two- and three-byte characters, the
/// largest BMP scalar, and astral characters (two UTF-16 units each).
pub const CHARS: &[char] = &[
    'a',
    'b',
    'z',
    ' ',
    '"',
    '\\',
    '\n',
    '\u{0}',
    'é',
    'ß',
    '中',
    '\u{7FF}',
    '\u{FFFF}',
    '😀',
    '𝄞',
    '\u{10FFFF}',
];

/// Keys inside values; the reserved names are fine there.
const VALUE_KEYS: &[&str] = &[
    "a",
    "b",
    "c",
    "x",
    "0",
    "1",
    "7",
    "10",
    "01",
    "",
    "two words",
    "é",
    "😀",
    "__proto__",
    "constructor",
    "prototype",
];

/// Keys a valid op may write through: everything but the reserved names.
pub const PATH_KEYS: &[&str] = &[
    "a",
    "b",
    "c",
    "x",
    "0",
    "1",
    "7",
    "10",
    "01",
    "",
    "two words",
    "é",
    "😀",
];

fn text() -> impl Strategy<Value = String> {
    vec(select(CHARS), 0..8).prop_map(String::from_iter)
}

/// Floats that survive a trip through JSON text unchanged: dyadic fractions with short
/// decimal forms, and the extremes. (serde_json parses arbitrary float text exactly only with
/// its `float_roundtrip` feature; the wild strategy below uses arbitrary floats where no
/// equality after a text round trip is asserted.)
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (any::<i16>(), 0u32..=16).prop_map(|(m, e)| f64::from(m) / f64::from(1u32 << e)),
        1 => select(vec![f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, -0.0, 1e300, 0.1, 1.5]),
    ]
}

fn object(members: Vec<(&str, Value)>) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// Arbitrary JSON; `wild` allows every float (including ones that do not survive text).
fn json(wild: bool) -> BoxedStrategy<Value> {
    let float = if wild {
        any::<f64>().boxed()
    } else {
        float().boxed()
    };
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-20i64..20).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        float.prop_map(Value::from),
        text().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((select(VALUE_KEYS), inner), 0..5).prop_map(object),
        ]
    })
    .boxed()
}

/// A container to start a document from.
fn root(wild: bool) -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => vec((select(VALUE_KEYS), json(wild)), 0..6).prop_map(object),
        1 => vec(json(wild), 0..6).prop_map(Value::Array),
    ]
}

/// A starting document: usually a container, sometimes nothing yet.
fn start() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![1 => Just(None), 3 => root(false).prop_map(Some)]
}

/// Everything a generated stream needs: values to draw from and the random choices.
pub fn stream_input() -> impl Strategy<Value = (Option<Value>, Vec<Value>, Vec<Value>, Vec<u32>)> {
    (
        start(),
        vec(root(false), 1..4),
        vec(json(false), 1..8),
        vec(any::<u32>(), 0..1024),
    )
}

pub fn non_empty(segs: Vec<Seg>) -> NonEmptyPath {
    NonEmptyPath::try_from(Path::from(segs)).expect("the generator builds non-empty paths")
}

// ---------------------------------------------------------------------------------------------
// Untrusted input: for apply, the grammars and the decoder
// ---------------------------------------------------------------------------------------------

/// A path segment as untrusted JSON: good ones, reserved ones, and every kind of bad one.
fn seg_like() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => select(VALUE_KEYS).prop_map(Value::from),
        3 => (0u64..4).prop_map(Value::from),
        1 => select(vec![
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(usize::MAX),
            json!(1u64 << 32),
            json!(1.5),
            json!(1e300),
            json!(null),
            json!(true),
            json!([0]),
            json!({"a": 0}),
        ]),
    ]
}

/// A count (index, remove, truncate count, id) as untrusted JSON.
fn count_like() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (0u64..5).prop_map(Value::from),
        1 => select(vec![
            json!(-1),
            json!(u64::MAX),
            json!(usize::MAX - 1),
            json!(i64::MIN),
            json!(1.5),
            json!(2.0),
            json!(1e300),
            json!(-0.0),
            json!("3"),
            json!(null),
            json!([]),
        ]),
    ]
}

/// Something shaped like an op tuple (decoded or wire), often valid, often not.
fn op_like() -> impl Strategy<Value = Value> {
    let verb = select(vec!["r", "s", "d", "a", "t", "p", "#", "x", "", "S"]);
    let arg = prop_oneof![
        3 => vec(seg_like(), 0..4).prop_map(Value::Array),
        2 => count_like(),
        2 => json(true),
        1 => text().prop_map(Value::from),
    ];
    (verb, vec(arg, 0..6)).prop_map(|(verb, args)| {
        Value::Array(std::iter::once(Value::from(verb)).chain(args).collect())
    })
}

pub fn batch_like() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => vec(op_like(), 0..6).prop_map(Value::Array),
        1 => json(true),
    ]
}

pub fn wild_doc() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => root(true).prop_map(Some),
        1 => json(true).prop_map(Some),
        1 => Just(None),
    ]
}

fn wild_seg() -> impl Strategy<Value = Seg> {
    prop_oneof![
        4 => select(VALUE_KEYS).prop_map(Seg::from),
        4 => (0usize..4).prop_map(Seg::Index),
        1 => select(vec![usize::MAX, usize::MAX - 1, isize::MAX as usize, 1 << 32, 1 << 20])
            .prop_map(Seg::Index),
    ]
}

fn wild_count() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..6,
        1 => select(vec![usize::MAX, usize::MAX - 1, isize::MAX as usize, 1 << 32]),
    ]
}

/// Any op, as a caller could build it in memory: reserved names, huge indices and counts.
pub fn wild_op() -> impl Strategy<Value = Op> {
    let path = || vec(wild_seg(), 0..4).prop_map(Path::from);
    let ne_path = || vec(wild_seg(), 1..4).prop_map(non_empty);
    prop_oneof![
        1 => json(true).prop_map(Op::Replace),
        3 => (ne_path(), json(true)).prop_map(|(p, v)| Op::Set(p, v)),
        2 => ne_path().prop_map(Op::Delete),
        2 => (ne_path(), text()).prop_map(|(p, t)| Op::Append(p, t)),
        2 => (ne_path(), wild_count()).prop_map(|(p, n)| Op::Truncate(p, n)),
        2 => (path(), wild_count(), wild_count(), vec(json(true), 0..3)).prop_map(
            |(path, index, remove, items)| Op::Splice {
                path,
                index,
                remove,
                items,
            }
        ),
    ]
}

pub fn decoder_input() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => vec(op_like(), 0..5).prop_map(|ops| Value::Array(ops).to_string()),
        1 => json(true).prop_map(|v| v.to_string()),
        1 => any::<String>(),
        1 => "[\\[\\]\"#0-9a-z,{}:. -]{0,24}",
        1 => (vec(op_like(), 1..4), any::<prop::sample::Index>()).prop_map(|(ops, cut)| {
            let text = Value::Array(ops).to_string();
            let cut = cut.index(text.len() + 1);
            let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            text[..cut].to_owned()
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// Running a property
// ---------------------------------------------------------------------------------------------

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs a property over `cases` inputs, panicking with proptest's report on failure.
pub fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    if let Err(e) = TestRunner::new(config(cases)).run(&strategy, test) {
        panic!("{e}");
    }
}

pub fn fail(e: chord::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}
