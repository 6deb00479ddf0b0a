//! The generator for `tests/properties.rs`: valid, applicable ops against the current
//! document, driven by a vector of random choices and tracked through the model; ops that must
//! fail, with the error they must raise; and what each generated op exercises, so that the
//! properties can check that every feature was covered.
//!
//! Included by `tests/properties.rs` as `mod generator`, next to `mod strategies` and
//! `mod model` (`support/strategies.rs`, `support/model.rs`), which it uses.

use chord::{ErrorKind, Op, Path, PathRef, Seg, WireOp, RESERVED};
use serde_json::{json, Value};

use crate::model::{index, key_name, model_apply, node};
use crate::strategies::{non_empty, CHARS, PATH_KEYS};

/// Random choices, read in order; zeros once they run out.
pub struct Choices {
    raw: Vec<u32>,
    at: usize,
}

impl Choices {
    fn next(&mut self) -> u32 {
        let v = self.raw.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v
    }

    pub fn below(&mut self, n: usize) -> usize {
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
pub const UNDO_KINDS: [&str; 13] = [
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
pub fn undo_kind(doc: &Option<Value>, op: &Op) -> usize {
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

pub struct Gen<'a> {
    pub ch: Choices,
    roots: &'a [Value],
    values: &'a [Value],
    /// The previous op's path, so that one string is often written several times running.
    last: Option<Path>,
}

impl<'a> Gen<'a> {
    pub fn new(roots: &'a [Value], values: &'a [Value], raw: Vec<u32>) -> Gen<'a> {
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
    pub fn op(&mut self, doc: &Option<Value>) -> Op {
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
    pub fn push(&mut self, batch: &mut Vec<Op>, doc: &mut Option<Value>) {
        let op = self.op(doc);
        model_apply(doc, &op);
        self.last = op.path().cloned();
        batch.push(op);
    }

    /// A stream of batches from `start`, with the model's document after each batch.
    pub fn stream(&mut self, start: &Option<Value>) -> (Vec<Vec<Op>>, Vec<Option<Value>>) {
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
    pub fn failing(&mut self, doc: &Option<Value>) -> (Op, ErrorKind, Path) {
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

// ---------------------------------------------------------------------------------------------
// Coverage: what a generated stream exercises
// ---------------------------------------------------------------------------------------------

/// What a generated op exercises, given the document it applies to.
pub fn op_features(doc: &Option<Value>, op: &Op, position: usize, seen: &mut Vec<&'static str>) {
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
pub fn wire_features(wire: &[WireOp], seen: &mut Vec<&'static str>) {
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
