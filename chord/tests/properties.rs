//! Property tests for chord's core.
//!
//! - Random streams of valid ops round-trip through one [`Encoder`], JSON text and one
//!   [`Decoder`], and a fresh decoder started at any base batch decodes the rest.
//! - [`apply`] and the decoder never panic, whatever they are given.
//! - A batch that fails leaves its target exactly as it was, key order included.
//!
//! Valid ops are generated against the current document by a small generator driven by a
//! vector of random choices, and an independent model of the op semantics (written here, not
//! borrowed from chord) tracks what the document must become.

use std::cell::RefCell;

use chord::{
    apply, apply_with, batch_from_value, display_batch, is_base, parse_batch, Decoder, Encoder,
    ErrorKind, Limits, NonEmptyPath, Op, Path, PathRef, Seg, WireOp, RESERVED,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// Characters for generated text: ASCII, JSON escapes, two- and three-byte characters, the
/// largest BMP scalar, and astral characters (two UTF-16 units each).
const CHARS: &[char] = &[
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
const PATH_KEYS: &[&str] = &[
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
fn stream_input() -> impl Strategy<Value = (Option<Value>, Vec<Value>, Vec<Value>, Vec<u32>)> {
    (
        start(),
        vec(root(false), 1..4),
        vec(json(false), 1..8),
        vec(any::<u32>(), 0..1024),
    )
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs a property over `cases` inputs, panicking with proptest's report on failure.
fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    if let Err(e) = TestRunner::new(config(cases)).run(&strategy, test) {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// The model: what each valid op must do, written independently of chord's applier
// ---------------------------------------------------------------------------------------------

fn key_name(seg: &Seg) -> String {
    match seg {
        Seg::Key(k) => k.to_string(),
        Seg::Index(i) => i.to_string(),
    }
}

fn index(seg: &Seg) -> usize {
    match seg {
        Seg::Index(i) => *i,
        Seg::Key(k) => panic!("the generator put key {k:?} on an array"),
    }
}

fn node<'v>(root: &'v Value, segs: &[Seg]) -> Option<&'v Value> {
    let mut at = root;
    for seg in segs {
        at = match (at, seg) {
            (Value::Object(m), seg) => m.get(&key_name(seg))?,
            (Value::Array(a), Seg::Index(i)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

fn node_mut<'v>(root: &'v mut Value, segs: &[Seg]) -> &'v mut Value {
    let mut at = root;
    for seg in segs {
        at = match at {
            Value::Object(m) => m.get_mut(&key_name(seg)).expect("generated parent exists"),
            Value::Array(a) => &mut a[index(seg)],
            other => panic!("the generator walked into {other}"),
        };
    }
    at
}

fn string_mut<'v>(root: &'v mut Value, segs: &[Seg]) -> &'v mut String {
    match node_mut(root, segs) {
        Value::String(s) => s,
        other => panic!("the generator appended to {other}"),
    }
}

/// Applies one op the generator promised is valid.
fn model_apply(doc: &mut Option<Value>, op: &Op) {
    if let Op::Replace(v) = op {
        *doc = Some(v.clone());
        return;
    }
    let root = doc
        .as_mut()
        .expect("generated ops other than r have a value");
    match op {
        Op::Replace(_) => {}
        Op::Set(p, v) => {
            let (parent, last) = p.split_last();
            match node_mut(root, parent) {
                Value::Object(m) => {
                    m.insert(key_name(last), v.clone());
                }
                Value::Array(a) => {
                    let i = index(last);
                    if i == a.len() {
                        a.push(v.clone());
                    } else {
                        a[i] = v.clone();
                    }
                }
                other => panic!("the generator set into {other}"),
            }
        }
        Op::Delete(p) => {
            let (parent, last) = p.split_last();
            match node_mut(root, parent) {
                Value::Object(m) => {
                    m.shift_remove(&key_name(last));
                }
                Value::Array(a) => {
                    a.remove(index(last));
                }
                other => panic!("the generator deleted from {other}"),
            }
        }
        Op::Append(p, t) => string_mut(root, p).push_str(t),
        Op::Truncate(p, n) => {
            let s = string_mut(root, p);
            let units: Vec<u16> = s.encode_utf16().collect();
            let rest = &units[(*n).min(units.len())..];
            *s = String::from_utf16(rest).expect("generated counts fall between characters");
        }
        Op::Splice {
            path,
            index,
            remove,
            items,
        } => {
            let Value::Array(a) = node_mut(root, path) else {
                panic!("the generator spliced a non-array");
            };
            let at = (*index).min(a.len());
            let remove = (*remove).min(a.len() - at);
            a.splice(at..at + remove, items.iter().cloned());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The generator: valid, applicable ops against the current document
// ---------------------------------------------------------------------------------------------

/// Random choices, read in order; zeros once they run out.
struct Choices {
    raw: Vec<u32>,
    at: usize,
}

impl Choices {
    fn next(&mut self) -> u32 {
        let v = self.raw.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next() as usize % n
        }
    }

    fn chance(&mut self, num: u32, den: u32) -> bool {
        self.next() % den < num
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What is at one addressable location of a document.
enum Shape {
    Object(Vec<String>),
    Array(usize),
    Text(String),
    Scalar,
}

/// Every location a path may walk to (nothing under a reserved key), depth first.
fn nodes(root: &Value) -> Vec<(Vec<Seg>, Shape)> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), root)];
    while let Some((segs, v)) = stack.pop() {
        let shape = match v {
            Value::Object(m) => {
                for (k, child) in m {
                    if !RESERVED.contains(&k.as_str()) {
                        let mut s = segs.clone();
                        s.push(Seg::Key(k.clone().into()));
                        stack.push((s, child));
                    }
                }
                Shape::Object(m.keys().cloned().collect())
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    let mut s = segs.clone();
                    s.push(Seg::Index(i));
                    stack.push((s, child));
                }
                Shape::Array(a.len())
            }
            Value::String(s) => Shape::Text(s.clone()),
            _ => Shape::Scalar,
        };
        out.push((segs, shape));
    }
    out
}

/// The index a key spells, when it is the canonical decimal form of one.
fn canonical_index(k: &str) -> Option<usize> {
    k.parse::<usize>().ok().filter(|n| n.to_string() == k)
}

fn non_empty(segs: Vec<Seg>) -> NonEmptyPath {
    NonEmptyPath::try_from(Path::from(segs)).expect("the generator builds non-empty paths")
}

fn with(segs: &[Seg], last: Seg) -> Vec<Seg> {
    let mut out = segs.to_vec();
    out.push(last);
    out
}

/// UTF-16 offsets at which `s` may be cut: between characters, and its length.
fn boundaries(s: &str) -> Vec<usize> {
    let mut at = 0;
    let mut out = vec![0];
    for c in s.chars() {
        at += c.len_utf16();
        out.push(at);
    }
    out
}

/// Kinds of undo record a prefix op can leave; the atomicity property counts each.
const UNDO_KINDS: [&str; 13] = [
    "replace",
    "replace on no value",
    "set existing key",
    "set new key",
    "set existing index",
    "push one past the end",
    "delete last key",
    "delete inner key",
    "delete missing key",
    "delete index",
    "append",
    "truncate",
    "splice",
];

/// Which undo kind `op` leaves when applied to `doc` (which it is valid for).
fn undo_kind(doc: &Option<Value>, op: &Op) -> usize {
    let named = |name: &str| {
        UNDO_KINDS
            .iter()
            .position(|k| *k == name)
            .expect("a listed kind")
    };
    let Some(root) = doc else {
        return named("replace on no value");
    };
    match op {
        Op::Replace(_) => named("replace"),
        Op::Set(p, _) | Op::Delete(p) => {
            let (parent, last) = p.split_last();
            let set = matches!(op, Op::Set(..));
            match node(root, parent) {
                Some(Value::Object(m)) => match m.keys().position(|k| *k == key_name(last)) {
                    Some(_) if set => named("set existing key"),
                    None if set => named("set new key"),
                    Some(i) if i + 1 == m.len() => named("delete last key"),
                    Some(_) => named("delete inner key"),
                    None => named("delete missing key"),
                },
                Some(Value::Array(a)) if set && index(last) == a.len() => {
                    named("push one past the end")
                }
                Some(Value::Array(_)) if set => named("set existing index"),
                _ => named("delete index"),
            }
        }
        Op::Append(..) => named("append"),
        Op::Truncate(..) => named("truncate"),
        Op::Splice { .. } => named("splice"),
    }
}

struct Gen<'a> {
    ch: Choices,
    roots: &'a [Value],
    values: &'a [Value],
    /// The previous op's path, so that one string is often written several times running.
    last: Option<Path>,
}

impl<'a> Gen<'a> {
    fn new(roots: &'a [Value], values: &'a [Value], raw: Vec<u32>) -> Gen<'a> {
        Gen {
            ch: Choices { raw, at: 0 },
            roots,
            values,
            last: None,
        }
    }

    fn text(&mut self) -> String {
        let n = self.ch.below(6);
        (0..n).map(|_| *self.ch.pick(CHARS)).collect()
    }

    fn value(&mut self) -> Value {
        if self.ch.chance(1, 3) {
            Value::String(self.text())
        } else {
            let values = self.values;
            self.ch.pick(values).clone()
        }
    }

    fn replace(&mut self) -> Op {
        let pool = if self.ch.chance(7, 8) {
            self.roots
        } else {
            self.values
        };
        Op::Replace(self.ch.pick(pool).clone())
    }

    /// Spells each object key that is a canonical index either way, at random: a numeric
    /// segment on an object addresses the member with those digits.
    fn respell(&mut self, segs: &[Seg]) -> Vec<Seg> {
        segs.iter()
            .map(|seg| match seg {
                Seg::Key(k) => match canonical_index(k) {
                    Some(i) if self.ch.chance(1, 2) => Seg::Index(i),
                    _ => seg.clone(),
                },
                Seg::Index(_) => seg.clone(),
            })
            .collect()
    }

    fn string_op(&mut self, segs: &[Seg], s: &str) -> Op {
        let path = non_empty(self.respell(segs));
        if self.ch.chance(2, 3) {
            return Op::Append(path, self.text());
        }
        let bounds = boundaries(s);
        let len = bounds[bounds.len() - 1];
        let count = match self.ch.below(8) {
            0 => len + self.ch.below(3),
            // The largest count the wire carries (JavaScript's MAX_SAFE_INTEGER).
            1 => (1 << 53) - 1,
            _ => *self.ch.pick(&bounds),
        };
        Op::Truncate(path, count)
    }

    /// One valid op for `doc`.
    fn op(&mut self, doc: &Option<Value>) -> Op {
        let Some(root) = doc else {
            return self.replace();
        };
        if self.ch.chance(1, 14) {
            return self.replace();
        }
        if let Some(last) = self.last.clone() {
            if let Some(Value::String(s)) = node(root, &last) {
                if self.ch.chance(1, 2) {
                    return self.string_op(&last, s);
                }
            }
        }
        let nodes = nodes(root);
        for _ in 0..6 {
            let kind = self.ch.below(10);
            if let Some(op) = self.try_kind(kind, &nodes) {
                return op;
            }
        }
        self.replace()
    }

    fn try_kind(&mut self, kind: usize, nodes: &[(Vec<Seg>, Shape)]) -> Option<Op> {
        let objects: Vec<(&[Seg], &[String])> = nodes
            .iter()
            .filter_map(|(s, shape)| match shape {
                Shape::Object(keys) => Some((s.as_slice(), keys.as_slice())),
                _ => None,
            })
            .collect();
        let arrays: Vec<(&[Seg], usize)> = nodes
            .iter()
            .filter_map(|(s, shape)| match shape {
                Shape::Array(len) => Some((s.as_slice(), *len)),
                _ => None,
            })
            .collect();
        let strings: Vec<(&[Seg], &str)> = nodes
            .iter()
            .filter_map(|(s, shape)| match shape {
                Shape::Text(t) if !s.is_empty() => Some((s.as_slice(), t.as_str())),
                _ => None,
            })
            .collect();
        let op = match kind {
            // Set an existing member.
            0 => {
                let with_keys: Vec<(&[Seg], Vec<&String>)> = objects
                    .iter()
                    .map(|(s, keys)| {
                        let keys = keys
                            .iter()
                            .filter(|k| !RESERVED.contains(&k.as_str()))
                            .collect::<Vec<_>>();
                        (*s, keys)
                    })
                    .filter(|(_, keys)| !keys.is_empty())
                    .collect();
                if with_keys.is_empty() {
                    return None;
                }
                let (parent, keys) = self.ch.pick(&with_keys);
                let key = (*self.ch.pick(keys)).clone();
                let path = non_empty(self.respell(&with(parent, Seg::Key(key.into()))));
                Op::Set(path, self.value())
            }
            // Set a member that is probably new (a number on an object names its digits).
            1 | 9 => {
                if objects.is_empty() {
                    return None;
                }
                let (parent, _) = *self.ch.pick(&objects);
                let last = if self.ch.chance(1, 4) {
                    Seg::Index(self.ch.below(12))
                } else {
                    Seg::from(*self.ch.pick(PATH_KEYS))
                };
                let path = non_empty(with(&self.respell(parent), last));
                Op::Set(path, self.value())
            }
            // Set an existing element, or the one past the end.
            2 | 3 => {
                let candidates: Vec<_> = arrays
                    .iter()
                    .filter(|(_, len)| kind == 3 || *len > 0)
                    .collect();
                if candidates.is_empty() {
                    return None;
                }
                let (parent, len) = **self.ch.pick(&candidates);
                let i = if kind == 3 { len } else { self.ch.below(len) };
                let path = non_empty(with(&self.respell(parent), Seg::Index(i)));
                Op::Set(path, self.value())
            }
            // Delete a member, existing or not.
            4 => {
                if objects.is_empty() {
                    return None;
                }
                let (parent, keys) = *self.ch.pick(&objects);
                let writable: Vec<&String> = keys
                    .iter()
                    .filter(|k| !RESERVED.contains(&k.as_str()))
                    .collect();
                let key = if !writable.is_empty() && self.ch.chance(2, 3) {
                    (*self.ch.pick(&writable)).clone()
                } else {
                    (*self.ch.pick(PATH_KEYS)).to_owned()
                };
                Op::Delete(non_empty(self.respell(&with(parent, Seg::Key(key.into())))))
            }
            // Remove an element.
            5 => {
                let candidates: Vec<_> = arrays.iter().filter(|(_, len)| *len > 0).collect();
                if candidates.is_empty() {
                    return None;
                }
                let (parent, len) = **self.ch.pick(&candidates);
                let i = self.ch.below(len);
                Op::Delete(non_empty(with(&self.respell(parent), Seg::Index(i))))
            }
            // Append or truncate.
            6 | 7 => {
                if strings.is_empty() {
                    return None;
                }
                let (segs, s) = *self.ch.pick(&strings);
                self.string_op(segs, s)
            }
            // Splice any array, the root included, with clamping.
            _ => {
                if arrays.is_empty() {
                    return None;
                }
                let (segs, len) = *self.ch.pick(&arrays);
                let index = self.ch.below(len + 3);
                let remove = if self.ch.chance(1, 6) {
                    (1 << 53) - 1 // the largest count the wire carries
                } else {
                    self.ch.below(len + 3)
                };
                let items = (0..self.ch.below(4)).map(|_| self.value()).collect();
                Op::Splice {
                    path: Path::from(self.respell(segs)),
                    index,
                    remove,
                    items,
                }
            }
        };
        Some(op)
    }

    /// Appends one valid op for `doc` to `batch` and applies it to the model.
    fn push(&mut self, batch: &mut Vec<Op>, doc: &mut Option<Value>) {
        let op = self.op(doc);
        model_apply(doc, &op);
        self.last = op.path().cloned();
        batch.push(op);
    }

    /// A stream of batches from `start`, with the model's document after each batch.
    fn stream(&mut self, start: &Option<Value>) -> (Vec<Vec<Op>>, Vec<Option<Value>>) {
        let mut doc = start.clone();
        let mut batches = Vec::new();
        let mut states = Vec::new();
        for _ in 0..1 + self.ch.below(12) {
            let mut batch = Vec::new();
            if !self.ch.chance(1, 20) {
                let len = 1 + self.ch.below(6);
                if doc.is_none() || self.ch.chance(1, 5) {
                    let op = self.replace();
                    model_apply(&mut doc, &op);
                    self.last = None;
                    batch.push(op);
                }
                while batch.len() < len {
                    self.push(&mut batch, &mut doc);
                }
            }
            batches.push(batch);
            states.push(doc.clone());
        }
        (batches, states)
    }

    /// An op that must fail on `doc`, the error it must raise, and the path that error names.
    fn failing(&mut self, doc: &Option<Value>) -> (Op, ErrorKind, Path) {
        const KINDS: usize = 11;
        let first = self.ch.below(KINDS);
        for k in 0..KINDS {
            if let Some(found) = self.try_failing((first + k) % KINDS, doc) {
                return found;
            }
        }
        unreachable!("a reserved segment fails on every document")
    }

    /// An op whose path walks through a reserved name: refused before anything is walked,
    /// even on a stream with no value yet.
    fn reserved(&mut self, doc: &Option<Value>) -> (Op, ErrorKind, Path) {
        let mut path = match doc {
            Some(root) => {
                let nodes = nodes(root);
                let (segs, _) = self.ch.pick(&nodes);
                self.respell(segs)
            }
            None => Vec::new(),
        };
        let position = path.len();
        let segment = *self.ch.pick(&RESERVED);
        path.push(Seg::from(segment));
        if self.ch.chance(1, 2) {
            path.push(Seg::from("x"));
        }
        let op = match self.ch.below(5) {
            0 => Op::Set(non_empty(path.clone()), self.value()),
            1 => Op::Delete(non_empty(path.clone())),
            2 => Op::Append(non_empty(path.clone()), self.text()),
            3 => Op::Truncate(non_empty(path.clone()), 1),
            _ => Op::Splice {
                path: Path::from(path.clone()),
                index: 0,
                remove: 1,
                items: vec![],
            },
        };
        let kind = ErrorKind::ReservedSegment {
            segment: segment.to_owned(),
            position,
        };
        (op, kind, Path::from(path))
    }

    fn try_failing(&mut self, kind: usize, doc: &Option<Value>) -> Option<(Op, ErrorKind, Path)> {
        if kind == 0 {
            return Some(self.reserved(doc));
        }
        let Some(root) = doc else {
            // Only `r` gives a stream its value.
            let path = non_empty(vec![Seg::from(*self.ch.pick(PATH_KEYS))]);
            let op = match self.ch.below(5) {
                0 => Op::Set(path.clone(), self.value()),
                1 => Op::Delete(path.clone()),
                2 => Op::Append(path.clone(), self.text()),
                3 => Op::Truncate(path.clone(), self.ch.below(3)),
                _ => Op::Splice {
                    path: Path::root(),
                    index: 0,
                    remove: 0,
                    items: vec![],
                },
            };
            let path = op.path().cloned().unwrap_or_default();
            return Some((op, ErrorKind::NoValue, path));
        };
        let nodes = nodes(root);
        let pick_node = |ch: &mut Choices, want: &dyn Fn(&[Seg], &Shape) -> bool| {
            let found: Vec<&(Vec<Seg>, Shape)> = nodes.iter().filter(|(p, s)| want(p, s)).collect();
            if found.is_empty() {
                None
            } else {
                Some(*ch.pick(&found))
            }
        };
        let json_type = |v: Option<&Value>| match v {
            Some(Value::Null) => "null",
            Some(Value::Bool(_)) => "a boolean",
            Some(Value::Number(_)) => "a number",
            Some(Value::String(_)) => "a string",
            Some(Value::Array(_)) => "an array",
            Some(Value::Object(_)) => "an object",
            None => unreachable!("listed nodes exist"),
        };
        let found = match kind {
            // An index past the one-past-the-end slot: a gap.
            1 => {
                let (segs, shape) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Array(_)))?;
                let Shape::Array(len) = *shape else {
                    unreachable!()
                };
                let index = match self.ch.below(3) {
                    0 => len + 1,
                    1 => len + 2 + self.ch.below(5),
                    _ => usize::MAX,
                };
                let path = with(&self.respell(segs), Seg::Index(index));
                let op = Op::Set(non_empty(path.clone()), self.value());
                (op, ErrorKind::IndexOutOfRange { index, len }, path.into())
            }
            // A missing parent is never created.
            2 => {
                let (segs, shape) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Object(_)))?;
                let Shape::Object(keys) = shape else {
                    unreachable!()
                };
                let missing = PATH_KEYS
                    .iter()
                    .find(|k| !keys.iter().any(|have| have == *k))?;
                let parent = with(&self.respell(segs), Seg::from(*missing));
                let path = non_empty(with(&parent, Seg::from("x")));
                let op = match self.ch.below(3) {
                    0 => Op::Set(path, self.value()),
                    1 => Op::Delete(path),
                    _ => Op::Splice {
                        path: path.into(),
                        index: 0,
                        remove: 0,
                        items: vec![json!(1)],
                    },
                };
                (op, ErrorKind::Missing, parent.into())
            }
            // A string segment on an array, as the last segment or walked through.
            3 => {
                let (segs, _) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Array(_)))?;
                let at = with(&self.respell(segs), Seg::from(*self.ch.pick(PATH_KEYS)));
                let op = if self.ch.chance(1, 2) {
                    Op::Set(non_empty(at.clone()), self.value())
                } else {
                    Op::Append(non_empty(with(&at, Seg::from("y"))), self.text())
                };
                (op, ErrorKind::KeyOnArray, at.into())
            }
            // `a` and `t` on something that is not a string.
            4 => {
                let (segs, _) = pick_node(&mut self.ch, &|p, s| {
                    !p.is_empty() && !matches!(s, Shape::Text(_))
                })?;
                let found = json_type(node(root, segs));
                let path = non_empty(self.respell(segs));
                let op = if self.ch.chance(1, 2) {
                    Op::Truncate(path.clone(), self.ch.below(3))
                } else {
                    Op::Append(path.clone(), self.text())
                };
                (op, ErrorKind::NotAString { found }, path.into())
            }
            // Removing the element one past the end.
            5 => {
                let (segs, shape) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Array(_)))?;
                let Shape::Array(len) = *shape else {
                    unreachable!()
                };
                let index = len + self.ch.below(3);
                let path = with(&self.respell(segs), Seg::Index(index));
                (
                    Op::Delete(non_empty(path.clone())),
                    ErrorKind::IndexOutOfRange { index, len },
                    path.into(),
                )
            }
            // Splicing something that is not an array (the root included).
            6 => {
                let (segs, _) = pick_node(&mut self.ch, &|_, s| !matches!(s, Shape::Array(_)))?;
                let found = json_type(node(root, segs));
                let path = Path::from(self.respell(segs));
                let op = Op::Splice {
                    path: path.clone(),
                    index: 0,
                    remove: 0,
                    items: vec![json!(1)],
                };
                (op, ErrorKind::NotAnArray { found }, path)
            }
            // Walking into a scalar.
            7 => {
                let (segs, _) = pick_node(&mut self.ch, &|_, s| {
                    matches!(s, Shape::Text(_) | Shape::Scalar)
                })?;
                let found = json_type(node(root, segs));
                let at = with(&self.respell(segs), Seg::Index(self.ch.below(2)));
                let path = if self.ch.chance(1, 2) {
                    at.clone()
                } else {
                    with(&at, Seg::from("y"))
                };
                let op = Op::Set(non_empty(path), self.value());
                (op, ErrorKind::NotAContainer { found }, at.into())
            }
            // Truncating between the two halves of a surrogate pair.
            8 => {
                let (segs, shape) = pick_node(&mut self.ch, &|p, s| {
                    !p.is_empty()
                        && matches!(s, Shape::Text(t) if t.chars().any(|c| c.len_utf16() == 2))
                })?;
                let Shape::Text(s) = shape else {
                    unreachable!()
                };
                let inside: Vec<usize> = s
                    .chars()
                    .scan(0, |at, c| {
                        let start = *at;
                        *at += c.len_utf16();
                        Some((start, c.len_utf16()))
                    })
                    .filter(|(_, units)| *units == 2)
                    .map(|(start, _)| start + 1)
                    .collect();
                let count = *self.ch.pick(&inside);
                let path = non_empty(self.respell(segs));
                (
                    Op::Truncate(path.clone(), count),
                    ErrorKind::SplitsCharacter { count },
                    path.into(),
                )
            }
            // `a` on a member that does not exist.
            9 => {
                let (segs, shape) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Object(_)))?;
                let Shape::Object(keys) = shape else {
                    unreachable!()
                };
                let missing = PATH_KEYS
                    .iter()
                    .find(|k| !keys.iter().any(|have| have == *k))?;
                let path = with(&self.respell(segs), Seg::from(*missing));
                let op = Op::Append(non_empty(path.clone()), self.text());
                (op, ErrorKind::Missing, path.into())
            }
            // Setting through a key on a scalar root, or a set under a scalar member.
            _ => {
                let (segs, _) = pick_node(&mut self.ch, &|_, s| matches!(s, Shape::Scalar))?;
                let found = json_type(node(root, segs));
                let path = with(&self.respell(segs), Seg::from("k"));
                let op = Op::Delete(non_empty(path.clone()));
                (op, ErrorKind::NotAContainer { found }, path.into())
            }
        };
        Some(found)
    }
}

fn text_of(doc: &Option<Value>) -> String {
    serde_json::to_string(doc).expect("a Value serializes")
}

fn fail(e: chord::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

// ---------------------------------------------------------------------------------------------
// Round trip
// ---------------------------------------------------------------------------------------------

/// What a generated op exercises, given the document it applies to.
fn op_features(doc: &Option<Value>, op: &Op, position: usize, seen: &mut Vec<&'static str>) {
    let root = match (doc, op) {
        (_, Op::Replace(_)) if position == 0 => return seen.push("base batch"),
        (_, Op::Replace(_)) => return seen.push("r in the middle of a batch"),
        (Some(root), _) => root,
        (None, _) => return,
    };
    let path = op.path().expect("only r has no path");
    for (depth, seg) in path.iter().enumerate() {
        if let (Some(Value::Object(_)), Seg::Index(_)) = (node(root, &path[..depth]), seg) {
            seen.push("numeric segment on an object");
        }
    }
    let parent = || node(root, &path[..path.len() - 1]);
    let last = || &path[path.len() - 1];
    let feature = match op {
        Op::Replace(_) => unreachable!("handled above"),
        Op::Set(..) => match parent() {
            Some(Value::Array(a)) if index(last()) == a.len() => "set one past the end",
            Some(Value::Array(_)) => "set an existing element",
            Some(Value::Object(m)) if m.contains_key(&key_name(last())) => "set an existing member",
            _ => "set a new member",
        },
        Op::Delete(..) => match parent() {
            Some(Value::Object(m)) if m.contains_key(&key_name(last())) => "delete a member",
            Some(Value::Object(_)) => "delete a missing member",
            _ => "remove an element",
        },
        Op::Append(_, t) if t.chars().any(|c| c.len_utf16() == 2) => "append astral text",
        Op::Append(..) => "append",
        Op::Truncate(p, n) => {
            let Some(Value::String(s)) = node(root, p) else {
                unreachable!("generated truncates target strings")
            };
            let len = s.encode_utf16().count();
            if *n > len {
                "truncate beyond the end"
            } else if *n > 0 && *n < len && s.chars().any(|c| c.len_utf16() == 2) {
                "truncate astral text"
            } else {
                "truncate"
            }
        }
        Op::Splice {
            path,
            index,
            remove,
            ..
        } => {
            if path.is_empty() {
                seen.push("splice the root");
            }
            let Some(Value::Array(a)) = node(root, path) else {
                unreachable!("generated splices target arrays")
            };
            if *index > a.len() || *remove > a.len() - (*index).min(a.len()) {
                "splice with clamping"
            } else {
                "splice"
            }
        }
    };
    seen.push(feature);
}

/// What the encoder did with a batch.
fn wire_features(wire: &[WireOp], seen: &mut Vec<&'static str>) {
    let mut defined = Vec::new();
    for op in wire {
        let path = match op {
            WireOp::Define { id, .. } => {
                defined.push(*id);
                seen.push("path interned");
                continue;
            }
            WireOp::Replace(_) => continue,
            WireOp::Set(p, _)
            | WireOp::Delete(p)
            | WireOp::Append(p, _)
            | WireOp::Truncate(p, _) => p,
            WireOp::Splice { path, .. } => path,
        };
        match path {
            None => seen.push("path omitted"),
            Some(PathRef::Id(id)) if !defined.contains(id) => seen.push("id from an earlier batch"),
            Some(_) => {}
        }
    }
}

fn round_trip(
    start: &Option<Value>,
    batches: &[Vec<Op>],
    states: &[Option<Value>],
    seen: &mut Vec<&'static str>,
) -> Result<(), TestCaseError> {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    let mut replica = start.clone();
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

#[test]
fn a_failed_batch_leaves_the_target_exactly_as_it_was() {
    let undone = RefCell::new([0usize; UNDO_KINDS.len()]);
    let failures = RefCell::new(std::collections::BTreeMap::<String, usize>::new());
    check(4096, stream_input(), |(start, roots, values, raw)| {
        let mut gen = Gen::new(&roots, &values, raw);
        let mut doc = start.clone();
        let mut ops = Vec::new();
        for _ in 0..gen.ch.below(7) {
            let before = doc.clone();
            gen.push(&mut ops, &mut doc);
            undone.borrow_mut()[undo_kind(&before, &ops[ops.len() - 1])] += 1;
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

fn batch_like() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => vec(op_like(), 0..6).prop_map(Value::Array),
        1 => json(true),
    ]
}

fn wild_doc() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => root(true).prop_map(Some),
        1 => json(true).prop_map(Some),
        1 => Just(None),
    ]
}

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
fn wild_op() -> impl Strategy<Value = Op> {
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

fn decoder_input() -> impl Strategy<Value = String> {
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
