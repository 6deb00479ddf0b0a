//! A wire batch parsed straight from its text: serde visitors over the batch array, each op
//! tuple and each path, so no `Value` of the batch or of a tuple is ever built.
//!
//! The outcome is exactly that of parsing the whole text into a `Value` and validating it
//! afterwards (`grammar::wire_batch_from_value`, then the decoder): a JSON syntax error
//! anywhere wins over every grammar error, and the first op that breaks the wire grammar wins
//! over a decoding error (an unknown id, say) at an earlier op. So the visitors never stop at
//! a grammar error: they record it and parse the rest of the text, building nothing. Every
//! value, kept or not, is read through serde_json's `deserialize_any`, which bounds nesting
//! with the same recursion limit as a `Value` and checks numbers and strings the same way
//! (serde_json's `IgnoredAny` does neither: it skips any depth, numbers out of range and lone
//! surrogates, so it is not used).
//!
//! Memory: the ops built, plus one op's elements at a time. An element's role may depend on
//! the op's arity (`["s", x]` sets `x`, `["s", x, 1]` sets the path `x`), so in a position
//! that may hold a value (`s`, `a`, `t`, `p` at 1; counts) the element is read as a `Value`;
//! where it can only be a path (`d`, `#`) it is read segment by segment, at most
//! [`MAX_PATH_SEGMENTS`] kept. Values are built as serde_json builds a `Value`, except that
//! arrays and small objects get exactly the room they need ([`ValueSeed`]). A check
//! ([`Mode::Check`]) reads the values an op carries (`r`, `s`, an `a`'s text, a `p`'s items
//! in the long form) without building them.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::json::{KeySeed, Names, RawText, ValueSeed};
use crate::path::{Path, Seg, MAX_PATH_SEGMENTS, RESERVED};
use crate::safe_integer;
use crate::validate;
use crate::wire::grammar::{self, Elem, Ref};
use crate::wire::op::WireOp;

/// What an op's elements are read into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every value an op carries is built.
    Decode,
    /// The values an op carries are read and dropped; paths, ids and counts are built.
    Check,
}

/// How the element at `position` (1 is the one after the verb) of a `verb` op is read.
fn read_as(verb: &str, position: usize, mode: Mode) -> ReadAs {
    let check = mode == Mode::Check;
    let payload = if check { ReadAs::Skip } else { ReadAs::Val };
    let path_or_payload = if check { ReadAs::Ref } else { ReadAs::Val };
    match (verb, position) {
        ("r", 1) => payload,
        ("#", 1) => ReadAs::Val,
        ("#", 2) | ("d", 1) => ReadAs::Ref,
        ("s" | "a", 1) => path_or_payload,
        ("s" | "a", 2) => payload,
        ("t", 1 | 2) | ("p", 1..=3) => ReadAs::Val,
        ("p", 4) => payload,
        _ => ReadAs::Skip,
    }
}

#[derive(Clone, Copy)]
enum ReadAs {
    Val,
    Ref,
    Skip,
}

/// Parses the wire batch `json`, handing each op that follows the wire grammar to `sink` with
/// its position, until `sink` fails; then checks the rest of the text with the wire grammar
/// (and as JSON) without handing anything on.
///
/// # Errors
///
/// Invalid JSON; else the first op that breaks the wire grammar (with its position); else the
/// first error of `sink` (which gives it its position).
pub(crate) fn parse(
    json: &str,
    mode: Mode,
    sink: &mut dyn FnMut(usize, WireOp) -> Result<()>,
) -> Result<()> {
    let mut state = State {
        mode,
        sink,
        grammar: None,
        sink_failed: None,
    };
    let mut de = serde_json::Deserializer::from_str(json);
    let parsed = (&mut de)
        .deserialize_any(BatchVisitor(&mut state))
        .and_then(|()| de.end());
    parsed?;
    match (state.grammar, state.sink_failed) {
        (Some(e), _) | (None, Some(e)) => Err(e),
        (None, None) => Ok(()),
    }
}

/// The wire ops of `json`: the outcome of `grammar::wire_batch_from_value` on the parsed text,
/// parsed straight into wire ops, no JSON tree of the batch built.
#[cfg(test)]
pub(crate) fn wire_batch(json: &str) -> Result<Vec<WireOp>> {
    let mut ops = Vec::new();
    // The last inline path: the same path written out again right after it shares its
    // segments, as in a decoder.
    let mut last: Option<Path> = None;
    parse(json, Mode::Decode, &mut |_, mut op| {
        if let Some(Some(crate::wire::op::PathRef::Path(p))) = op.path_ref_mut() {
            match &last {
                Some(q) if q == p => *p = q.clone(),
                _ => last = Some(p.clone()),
            }
        }
        push(&mut ops, op);
        Ok(())
    })?;
    ops.shrink_to_fit();
    Ok(ops)
}

/// Pushes a decoded op, growing `ops` by a quarter when full rather than doubling it: the
/// ops are most of a decoded batch's memory, and a doubled vector may hold twice what it
/// needs. (Shrink it once the batch is read.)
pub(crate) fn push<T>(ops: &mut Vec<T>, op: T) {
    if ops.len() == ops.capacity() {
        ops.reserve_exact(ops.capacity() / 4 + 16);
    }
    ops.push(op);
}

struct State<'s> {
    mode: Mode,
    sink: &'s mut dyn FnMut(usize, WireOp) -> Result<()>,
    /// The first grammar error: from then on, the text is only parsed.
    grammar: Option<Error>,
    /// The sink's error: from then on, ops are only checked.
    sink_failed: Option<Error>,
}

struct BatchVisitor<'a, 's>(&'a mut State<'s>);

impl<'de> Visitor<'de> for BatchVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a batch of wire ops")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let state = self.0;
        let mut i = 0;
        loop {
            if state.grammar.is_some() {
                if seq.next_element_seed(Skip)?.is_none() {
                    return Ok(());
                }
                continue;
            }
            let mode = match state.sink_failed {
                Some(_) => Mode::Check,
                None => state.mode,
            };
            let Some(tuple) = seq.next_element_seed(TupleSeed(mode))? else {
                return Ok(());
            };
            match tuple.and_then(|(verb, elems, n)| grammar::wire_op_from_elems(verb, elems, n)) {
                Err(e) => state.grammar = Some(e.at_op(i)),
                Ok(op) if state.sink_failed.is_none() => {
                    if let Err(e) = (state.sink)(i, op) {
                        state.sink_failed = Some(e);
                    }
                }
                Ok(_) => {}
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        let state = self.0;
        let Some(Value::Array(items)) = object(map)? else {
            state.grammar = Some(ErrorKind::NotABatch.into());
            return Ok(());
        };
        // Already a tree: the tree's grammar on every op first, then the sink, as for text.
        let mut ops = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match grammar::wire_op(item) {
                Ok(op) => ops.push(op),
                Err(e) => {
                    state.grammar = Some(e.at_op(i));
                    return Ok(());
                }
            }
        }
        for (i, op) in ops.into_iter().enumerate() {
            if let Err(e) = (state.sink)(i, op) {
                state.sink_failed = Some(e);
                break;
            }
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        self.not_a_batch()
    }
}

impl BatchVisitor<'_, '_> {
    fn not_a_batch<E>(self) -> std::result::Result<(), E> {
        self.0.grammar = Some(ErrorKind::NotABatch.into());
        Ok(())
    }
}

/// An op tuple: its verb, its first four elements after the verb, and how many there are.
type Tuple = Result<(String, Vec<Elem>, usize)>;

struct TupleSeed(Mode);

impl<'de> DeserializeSeed<'de> for TupleSeed {
    type Value = Tuple;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Tuple, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TupleSeed {
    type Value = Tuple;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a wire op")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Tuple, A::Error> {
        let verb = match seq.next_element_seed(VerbSeed)? {
            Some(Some(verb)) => verb,
            Some(None) => {
                Skip.visit_seq(seq)?;
                return Ok(Err(ErrorKind::MissingVerb.into()));
            }
            None => return Ok(Err(ErrorKind::MissingVerb.into())),
        };
        let mut elems = Vec::new();
        let mut n = 0;
        loop {
            let elem = match read_as(&verb, n + 1, self.0) {
                ReadAs::Val => seq.next_element_seed(ValueSeed)?.map(Elem::Val),
                ReadAs::Ref => seq.next_element_seed(RefSeed)?.map(Elem::Ref),
                ReadAs::Skip => seq.next_element_seed(Skip)?.map(Elem::Skip),
            };
            let Some(elem) = elem else { break };
            n += 1;
            if n <= 4 {
                elems.push(elem);
            }
        }
        Ok(Ok((verb, elems, n)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Tuple, A::Error> {
        let Some(Value::Array(items)) = object(map)? else {
            return Ok(Err(ErrorKind::NotATuple.into()));
        };
        let mut items = items.into_iter();
        let Some(Value::String(verb)) = items.next() else {
            return Ok(Err(ErrorKind::MissingVerb.into()));
        };
        let n = items.len();
        Ok(Ok((verb, items.take(4).map(Elem::Val).collect(), n)))
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
    fn visit_unit<E>(self) -> std::result::Result<Tuple, E> {
        Ok(Err(ErrorKind::NotATuple.into()))
    }
}

/// An op's first element: the verb if it is a string, `None` (read and dropped) otherwise.
struct VerbSeed;

impl<'de> DeserializeSeed<'de> for VerbSeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for VerbSeed {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a verb")
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Self::Value, A::Error> {
        Skip.visit_seq(seq).map(|_| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
        Ok(match object(map)? {
            Some(Value::String(verb)) => Some(verb),
            _ => None,
        })
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

/// Reads any JSON value and drops it, answering its type (as `error::json_type` names it).
/// Through `deserialize_any`, so nesting, numbers and strings are checked as for a `Value`;
/// it allocates nothing (serde_json unescapes into its own reused buffer).
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = &'static str;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok("a boolean")
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok("a number")
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok("a number")
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok("a number")
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok("a string")
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok("null")
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok("an array")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
        Ok(object(map)?.map_or("an object", |v| json_type(&v)))
    }
}

/// Reads an object as a `Value` would, building nothing but its member names (to refuse a
/// repeated one): `None` for an ordinary object, read to its end; for one whose first key is
/// [`RAW_VALUE_TOKEN`], the `Value` its string holds, with the errors serde_json gives (the
/// rest of such an object is left unread, as there).
fn object<'de, A: MapAccess<'de>>(mut map: A) -> std::result::Result<Option<Value>, A::Error> {
    match map.next_key_seed(KeySeed)? {
        None => Ok(None),
        Some(None) => {
            let text = map.next_value_seed(RawText)?;
            serde_json::from_str(&text)
                .map(Some)
                .map_err(serde::de::Error::custom)
        }
        Some(Some(first)) => {
            let mut names = Names::default();
            names.add::<A::Error>(first)?;
            map.next_value_seed(Skip)?;
            while let Some(key) = map.next_key::<String>()? {
                names.add::<A::Error>(key)?;
                map.next_value_seed(Skip)?;
            }
            Ok(None)
        }
    }
}

/// Reads a path reference: a number, or a path checked segment by segment as it arrives
/// (the segment count first, then the first bad or reserved segment, as
/// `validate::path` reports them), keeping at most [`MAX_PATH_SEGMENTS`] segments.
struct RefSeed;

impl<'de> DeserializeSeed<'de> for RefSeed {
    type Value = Ref;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Ref, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RefSeed {
    type Value = Ref;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a path or an id")
    }

    fn visit_u64<E>(self, n: u64) -> std::result::Result<Ref, E> {
        Ok(Ref::Number(n.into()))
    }
    fn visit_i64<E>(self, n: i64) -> std::result::Result<Ref, E> {
        Ok(Ref::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> std::result::Result<Ref, E> {
        Ok(Number::from_f64(n).map_or(Ref::Other("a number"), Ref::Number))
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Ref, E> {
        Ok(Ref::Other("a boolean"))
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Ref, E> {
        Ok(Ref::Other("a string"))
    }
    fn visit_unit<E>(self) -> std::result::Result<Ref, E> {
        Ok(Ref::Other("null"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Ref, A::Error> {
        Ok(match object(map)? {
            None => Ref::Other("an object"),
            Some(Value::Number(n)) => Ref::Number(n),
            Some(v @ Value::Array(_)) => Ref::Path(validate::path(v)),
            Some(v) => Ref::Other(json_type(&v)),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Ref, A::Error> {
        let mut segs = Vec::new();
        let mut len = 0;
        let mut bad: Option<Error> = None;
        loop {
            let keep = bad.is_none() && len < MAX_PATH_SEGMENTS;
            let seg = if keep {
                seq.next_element_seed(SegSeed)?
            } else {
                seq.next_element_seed(Skip)?.map(|_| SegRead::Dropped)
            };
            let Some(seg) = seg else { break };
            let i = len;
            len += 1;
            let seg = match seg {
                SegRead::Dropped => continue,
                SegRead::Seg(Seg::Key(k)) if RESERVED.contains(&k.as_ref()) => {
                    bad = Some(
                        ErrorKind::ReservedSegment {
                            segment: k.into_owned(),
                            position: i,
                        }
                        .into(),
                    );
                    continue;
                }
                SegRead::Seg(seg) => seg,
                SegRead::BadNumber(n) => {
                    bad = Some(validate::bad_index(i, &n));
                    continue;
                }
                SegRead::Other(found) => {
                    bad = Some(validate::bad_segment(i, found));
                    continue;
                }
            };
            segs.push(seg);
        }
        let path = match validate::check_segments(len) {
            Err(e) => Err(e),
            Ok(()) => match bad {
                Some(e) => Err(e),
                None => Ok(Path::from(segs)),
            },
        };
        Ok(Ref::Path(path))
    }
}

/// One path segment as read.
enum SegRead {
    Seg(Seg),
    BadNumber(Number),
    Other(&'static str),
    /// Not kept: the path is already refused or already too long.
    Dropped,
}

struct SegSeed;

impl<'de> DeserializeSeed<'de> for SegSeed {
    type Value = SegRead;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<SegRead, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SegSeed {
    type Value = SegRead;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a path segment")
    }

    fn visit_str<E>(self, k: &str) -> std::result::Result<SegRead, E> {
        Ok(SegRead::Seg(Seg::from(k)))
    }
    fn visit_string<E>(self, k: String) -> std::result::Result<SegRead, E> {
        Ok(SegRead::Seg(Seg::from(k)))
    }
    fn visit_u64<E>(self, n: u64) -> std::result::Result<SegRead, E> {
        let number = Number::from(n);
        Ok(match safe_integer::to_usize(&number) {
            Some(i) => SegRead::Seg(Seg::Index(i)),
            None => SegRead::BadNumber(number),
        })
    }
    fn visit_i64<E>(self, n: i64) -> std::result::Result<SegRead, E> {
        let number = Number::from(n);
        Ok(match safe_integer::to_usize(&number) {
            Some(i) => SegRead::Seg(Seg::Index(i)),
            None => SegRead::BadNumber(number),
        })
    }
    fn visit_f64<E>(self, n: f64) -> std::result::Result<SegRead, E> {
        Ok(Number::from_f64(n).map_or(SegRead::Other("a number"), SegRead::BadNumber))
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<SegRead, E> {
        Ok(SegRead::Other("a boolean"))
    }
    fn visit_unit<E>(self) -> std::result::Result<SegRead, E> {
        Ok(SegRead::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<SegRead, A::Error> {
        Skip.visit_seq(seq).map(SegRead::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<SegRead, A::Error> {
        Ok(match object(map)? {
            None => SegRead::Other("an object"),
            Some(Value::String(k)) => SegRead::Seg(Seg::from(k)),
            Some(Value::Number(n)) => match safe_integer::to_usize(&n) {
                Some(i) => SegRead::Seg(Seg::Index(i)),
                None => SegRead::BadNumber(n),
            },
            Some(v) => SegRead::Other(json_type(&v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{LINEAR_NAMES, SMALL_OBJECT};
    use crate::{Decoder, Op};
    use proptest::prelude::*;

    /// JSON text built from pieces, so that it can hold what a `Value` cannot (numbers out of
    /// range, lone surrogates) and nesting near serde_json's recursion limit.
    #[derive(Clone, Debug)]
    enum J {
        Raw(&'static str),
        Arr(Vec<J>),
        Obj(Vec<(&'static str, J)>),
        /// `n` arrays around `1`.
        Deep(usize),
    }

    impl J {
        fn write(&self, out: &mut String) {
            match self {
                J::Raw(t) => out.push_str(t),
                J::Arr(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.write(out);
                    }
                    out.push(']');
                }
                J::Obj(members) => {
                    out.push('{');
                    for (i, (k, v)) in members.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(k);
                        out.push(':');
                        v.write(out);
                    }
                    out.push('}');
                }
                J::Deep(n) => {
                    out.push_str(&"[".repeat(*n));
                    out.push('1');
                    out.push_str(&"]".repeat(*n));
                }
            }
        }
    }

    const VERBS: &[&str] = &[
        r#""r""#, r#""s""#, r#""d""#, r#""a""#, r#""t""#, r#""p""#, r##""#""##, r#""zz""#, "0",
        "[]", "{}",
    ];
    const TOKENS: &[&str] = &[
        "0",
        "1",
        "2",
        "true",
        "null",
        r#""k""#,
        r#""x""#,
        r#""a\nb""#,
        r#""é😀""#,
        "[]",
        "{}",
        r#"["k"]"#,
        r#"["k",0]"#,
    ];
    /// What a `Value`, the grammar or a JavaScript number refuses.
    const HOSTILE: &[&str] = &[
        "1.5",
        "1.0",
        "-1",
        "1e400",
        "1024",
        "9007199254740991",
        "9007199254740992",
        "18446744073709551616",
        r#""__proto__""#,
        r#""constructor""#,
        r#""\ud800""#,
        r##"{"$serde_json::private::RawValue":"[\"k\"]"}"##,
        r##"{"$serde_json::private::RawValue":"\"r\""}"##,
        r##"{"$serde_json::private::RawValue":"{"}"##,
        r##"{"$serde_json::private::RawValue":5}"##,
        r##"{"$serde_json::private::RawValue":"[1]","b":2}"##,
    ];

    /// Objects serde_json's `Value` reads as the JSON text of their string (see
    /// `RAW_VALUE_TOKEN`), and where they may stand (`Q`).
    const RAW_VALUES: &[&str] = &[
        r##"{"$serde_json::private::RawValue":"[\"k\"]"}"##,
        r##"{"$serde_json::private::RawValue":"\"r\""}"##,
        r##"{"$serde_json::private::RawValue":"\"__proto__\""}"##,
        r##"{"$serde_json::private::RawValue":"0"}"##,
        r##"{"$serde_json::private::RawValue":"1.5"}"##,
        r##"{"$serde_json::private::RawValue":"{"}"##,
        r##"{"$serde_json::private::RawValue":"[[\"d\",[\"k\"]]]"}"##,
        r##"{"$serde_json::private::RawValue":"[\"d\",[\"k\"]]"}"##,
        r##"{"$serde_json::private::RawValue":"[[\"zz\"]]"}"##,
        r##"{"$serde_json::private::RawValue":5}"##,
        r##"{"$serde_json::private::RawValue":"[1]","b":2}"##,
        r##"{"b":2,"$serde_json::private::RawValue":"[1]"}"##,
    ];
    const AT: &[&str] = &[
        "Q",
        "[Q]",
        "[[Q]]",
        r#"[[Q,["k"],1]]"#,
        r#"[["d",Q]]"#,
        r#"[["d",[Q]]]"#,
        r#"[["d",["k",Q]]]"#,
        r#"[["s",Q]]"#,
        r#"[["s",Q,1]]"#,
        r#"[["s",["k"],Q]]"#,
        r#"[["r",Q]]"#,
        r#"[["r",1,Q]]"#,
        r#"[["zz"],Q]"#,
        r#"[["d",7],Q]"#,
        r##"[["#",0,Q]]"##,
        r##"[["#",Q,["k"]]]"##,
        r#"[["p",0,0,Q]]"#,
        r#"[["p",["k"],0,0,Q]]"#,
        r#"[["p",Q,0,0,[]]]"#,
        r#"[["a",Q]]"#,
        r#"[["a",["k"],Q]]"#,
        r#"[["t",Q]]"#,
    ];

    fn element() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            20 => prop::sample::select(TOKENS).prop_map(J::Raw),
            2 => prop::sample::select(HOSTILE).prop_map(J::Raw),
            1 => (118usize..132).prop_map(J::Deep),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                4 => prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
                1 => prop::collection::vec(
                    (prop::sample::select(&[r#""a""#, r#""__proto__""#, r#""k""#][..]), inner),
                    0..3
                )
                .prop_map(J::Obj),
            ]
        })
    }

    /// A path reference: an id below 3 or a short path, now and then anything.
    fn path_ref() -> impl Strategy<Value = J> {
        prop_oneof![
            3 => prop::sample::select(&["0", "1", "2"][..]).prop_map(J::Raw),
            6 => prop::collection::vec(
                prop::sample::select(&[r#""k""#, r#""x""#, "0", "1"][..]).prop_map(J::Raw),
                0..3
            )
            .prop_map(J::Arr),
            1 => element(),
        ]
    }

    /// An op shaped as the wire grammar wants it (with its path or in the short form), its
    /// elements now and then anything.
    fn shaped() -> impl Strategy<Value = J> {
        let count = || {
            prop_oneof![
                6 => prop::sample::select(&["0", "1", "2"][..]).prop_map(J::Raw),
                1 => element()
            ]
        };
        let text = || {
            prop_oneof![
                6 => prop::sample::select(&[r#""x""#, r#""é😀""#][..]).prop_map(J::Raw),
                1 => element()
            ]
        };
        let items = || {
            prop_oneof![
                6 => prop::collection::vec(element(), 0..3).prop_map(J::Arr),
                1 => element()
            ]
        };
        let op = |verb: &'static str, args: Vec<J>| {
            let mut items = vec![J::Raw(verb)];
            items.extend(args);
            J::Arr(items)
        };
        prop_oneof![
            (path_ref(), element()).prop_map(move |(p, v)| op(r#""s""#, vec![p, v])),
            element().prop_map(move |v| op(r#""s""#, vec![v])),
            element().prop_map(move |v| op(r#""r""#, vec![v])),
            path_ref().prop_map(move |p| op(r#""d""#, vec![p])),
            Just(op(r#""d""#, vec![])),
            (path_ref(), text()).prop_map(move |(p, t)| op(r#""a""#, vec![p, t])),
            text().prop_map(move |t| op(r#""a""#, vec![t])),
            (path_ref(), count()).prop_map(move |(p, n)| op(r#""t""#, vec![p, n])),
            count().prop_map(move |n| op(r#""t""#, vec![n])),
            (path_ref(), count(), count(), items())
                .prop_map(move |(p, i, r, x)| op(r#""p""#, vec![p, i, r, x])),
            (count(), count(), items()).prop_map(move |(i, r, x)| op(r#""p""#, vec![i, r, x])),
            (count(), path_ref()).prop_map(move |(id, p)| op(r##""#""##, vec![id, p])),
        ]
    }

    fn tuple() -> impl Strategy<Value = J> {
        prop_oneof![
            12 => shaped(),
            4 => (
                prop::sample::select(VERBS),
                prop::collection::vec(element(), 0..6),
            )
                .prop_map(|(verb, rest)| {
                    let mut items = vec![J::Raw(verb)];
                    items.extend(rest);
                    J::Arr(items)
                }),
            1 => element(),
        ]
    }

    fn batch() -> impl Strategy<Value = String> {
        prop_oneof![
            12 => prop::collection::vec(tuple(), 0..8).prop_map(|ops| {
                let mut text = String::new();
                J::Arr(ops).write(&mut text);
                text
            }),
            1 => element().prop_map(|j| {
                let mut text = String::new();
                j.write(&mut text);
                text
            }),
        ]
    }

    /// A batch, perhaps with one corruption: a character removed, inserted or the text cut.
    fn corrupted() -> impl Strategy<Value = String> {
        (
            batch(),
            0usize..4,
            any::<prop::sample::Index>(),
            prop::sample::select(&['[', ']', ',', '"', '{', '}', '1', ' ', '\\'][..]),
        )
            .prop_map(|(text, how, at, c)| {
                let chars: Vec<char> = text.chars().collect();
                let at = at.index(chars.len() + 1);
                let mut chars = chars;
                match how {
                    1 if at < chars.len() => {
                        chars.remove(at);
                    }
                    2 => chars.insert(at, c),
                    3 => chars.truncate(at),
                    _ => {}
                }
                chars.into_iter().collect()
            })
    }

    /// Whether JSON `text` (valid) has an object naming a member twice: a scan of its own,
    /// apart from the visitors under test, each key unescaped by serde_json.
    fn repeats_a_name(text: &str) -> bool {
        let bytes = text.as_bytes();
        // Per open container: the names of an object, `None` for an array.
        let mut stack: Vec<Option<Vec<String>>> = Vec::new();
        let mut key_next = false;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    let start = i;
                    i += 1;
                    while bytes[i] != b'"' {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    if key_next {
                        let name: String = serde_json::from_str(&text[start..=i]).unwrap();
                        let names = stack.last_mut().unwrap().as_mut().unwrap();
                        if names.contains(&name) {
                            return true;
                        }
                        names.push(name);
                        key_next = false;
                    }
                }
                b'{' => {
                    stack.push(Some(Vec::new()));
                    key_next = true;
                }
                b'[' => stack.push(None),
                b'}' | b']' => {
                    stack.pop();
                    key_next = false;
                }
                b',' => key_next = matches!(stack.last(), Some(Some(_))),
                _ => {}
            }
            i += 1;
        }
        false
    }

    /// The decoding this module replaces: the whole text into a `Value` (refused when an
    /// object names a member twice), then the wire grammar on the tree, then the decoder.
    fn tree_decode(dec: &mut Decoder, text: &str) -> Result<Vec<Op>> {
        if dec.poisoned {
            return Err(ErrorKind::DecoderPoisoned.into());
        }
        match tree_value(text) {
            Ok(value) => dec.decode_value(value),
            Err(e) => {
                dec.poisoned = true;
                Err(e)
            }
        }
    }

    /// `text` as a `Value`, an object naming a member twice refused.
    fn tree_value(text: &str) -> Result<Value> {
        let value = serde_json::from_str::<Value>(text)?;
        if repeats_a_name(text) {
            return Err(ErrorKind::Json(DUPLICATE.into()).into());
        }
        Ok(value)
    }

    /// What the error of a repeated member name says (where it is aside).
    const DUPLICATE: &str = "duplicate member name";

    /// An outcome to compare: a JSON error where either side found a repeated name is only a
    /// JSON error (the streaming parse stops at the repeat, before a syntax error after it
    /// that the tree reports; both are JSON errors).
    fn outcome<T>(r: &Result<T>) -> std::result::Result<(), (ErrorKind, Option<usize>, String)> {
        match r {
            Ok(_) => Ok(()),
            Err(e) => Err((e.kind().clone(), e.op_index(), e.to_string())),
        }
    }

    fn agree<T, U>(got: &Result<T>, want: &Result<U>) -> bool {
        match (got, want) {
            (Err(g), Err(w))
                if matches!(
                    (g.kind(), w.kind()),
                    (ErrorKind::Json(_), ErrorKind::Json(_))
                ) && (g.to_string().contains(DUPLICATE)
                    || w.to_string().contains(DUPLICATE)) =>
            {
                true
            }
            _ => outcome(got) == outcome(want),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Over a stream of batches (ids carry over, a failure poisons): the streaming decode
        /// gives what the tree gave, ops or the same error at the same op, and the check
        /// agrees with both.
        #[test]
        fn streaming_decode_and_check_agree_with_the_tree(
            batches in prop::collection::vec(prop_oneof![batch(), corrupted()], 1..4)
        ) {
            let (mut tree, mut streamed, mut checked) =
                (Decoder::new(), Decoder::new(), Decoder::new());
            for text in &batches {
                let want = tree_decode(&mut tree, text);
                let got = streamed.decode_str(text);
                let check = checked.check_str(text);
                prop_assert!(agree(&got, &want), "{}: {:?} {:?}", text, outcome(&got), outcome(&want));
                prop_assert!(agree(&check, &want), "{}: {:?} {:?}", text, outcome(&check), outcome(&want));
                if let (Ok(got), Ok(want)) = (&got, &want) {
                    prop_assert_eq!(got, want, "{}", text);
                }
                // The wire grammar alone (what a store's check reads), without the decoder.
                let tree_wire = tree_value(text).and_then(grammar::wire_batch_from_value);
                let wire = wire_batch(text);
                prop_assert!(agree(&wire, &tree_wire), "{}: {:?} {:?}", text, outcome(&wire), outcome(&tree_wire));
                if let (Ok(wire), Ok(tree_wire)) = (&wire, &tree_wire) {
                    prop_assert_eq!(wire, tree_wire, "{}", text);
                }
                // (A failed batch poisons: the ids it left are never read again.)
                if want.is_ok() {
                    prop_assert_eq!(&streamed.ids, &tree.ids);
                    prop_assert_eq!(&checked.ids, &tree.ids);
                }
            }
        }
    }

    #[test]
    fn the_generators_reach_every_outcome() {
        // Guards the property above against generators that never decode (or never fail).
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let (mut ok, mut json, mut grammar) = (0, 0, 0);
        for _ in 0..2000 {
            let text = batch().new_tree(&mut runner).unwrap().current();
            match Decoder::new()
                .decode_str(&text)
                .map_err(|e| e.kind().category())
            {
                Ok(ops) if !ops.is_empty() => ok += 1,
                Err(crate::Category::Parse) => grammar += 1,
                _ => {}
            }
            if let Err(e) = Decoder::new().decode_str(&text) {
                if matches!(e.kind(), ErrorKind::Json(_)) {
                    json += 1;
                }
            }
        }
        assert!(
            ok > 50 && json > 20 && grammar > 500,
            "ok {ok} json {json} grammar {grammar}"
        );
    }

    #[test]
    fn objects_a_value_reads_as_raw_json_are_read_so_everywhere() {
        for raw in RAW_VALUES {
            for at in AT {
                let text = at.replace('Q', raw);
                let want = tree_decode(&mut Decoder::new(), &text);
                let got = Decoder::new().decode_str(&text);
                assert!(agree(&got, &want), "{text}");
                if let (Ok(got), Ok(want)) = (&got, &want) {
                    assert_eq!(got, want, "{text}");
                }
                let check = Decoder::new().check_str(&text);
                assert!(agree(&check, &want), "{text}");
                let wire = wire_batch(&text);
                let tree_wire = tree_value(&text).and_then(grammar::wire_batch_from_value);
                assert!(agree(&wire, &tree_wire), "{text}");
            }
        }
    }

    #[test]
    fn values_are_read_as_serde_json_reads_them() {
        // Objects below, at and above the size built exactly, nested arrays and numbers of
        // every kind.
        for members in [0, 1, 3, SMALL_OBJECT, SMALL_OBJECT + 1, 3 * SMALL_OBJECT] {
            let object: Vec<String> = (0..members)
                .map(|i| format!(r#""k{i}":[{i},-1,1.5,{{"x":null}}]"#))
                .collect();
            let text = format!(
                r#"[["r",{{{}}}],["p",[],0,0,[[],[1],{{}}]]]"#,
                object.join(",")
            );
            let want = tree_decode(&mut Decoder::new(), &text).unwrap();
            assert_eq!(Decoder::new().decode_str(&text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn an_object_naming_a_member_twice_is_refused_wherever_it_is() {
        // Below, at and above the objects compared name by name, the repeat first, last, in
        // an escaped spelling, or after a value no reader accepts.
        let mut cases = Vec::new();
        for members in [1, 2, LINEAR_NAMES, LINEAR_NAMES + 1, 3 * LINEAR_NAMES] {
            let names: Vec<String> = (0..members).map(|i| format!(r#""k{i}":{i}"#)).collect();
            for repeat in [r#""k0":"again""#, r#""\u006b0":"again""#] {
                cases.push(format!("{{{},{repeat}}}", names.join(",")));
            }
        }
        cases.push(r#"{"a":1e400,"a":1}"#.to_owned());
        cases.push(r#"{"a":{"b":1,"b":2}}"#.to_owned());
        cases.push(r#"[{"a":1},{"b":1,"c":[{"d":1,"d":2}]}]"#.to_owned());
        for object in &cases {
            for at in AT {
                let text = at.replace('Q', object);
                for (what, result) in [
                    ("decoded", Decoder::new().decode_str(&text).map(|_| ())),
                    ("checked", Decoder::new().check_str(&text)),
                    ("parsed", crate::parse_batch(&text).map(|_| ())),
                ] {
                    let err = result.expect_err(&text);
                    assert!(
                        matches!(err.kind(), ErrorKind::Json(_)),
                        "{what} {text}: {err}"
                    );
                    if !object.contains("1e400") {
                        assert!(err.to_string().contains(DUPLICATE), "{what} {text}: {err}");
                    }
                }
            }
        }
        // The same name in different objects, and names differing only in case or
        // normalization, are no repeat.
        let fine = r#"[["r",{"a":{"a":1},"b":[{"a":2},{"a":3}],"\u00e9":1,"e\u0301":2,"A":4}]]"#;
        assert!(Decoder::new().decode_str(fine).is_ok());
        assert!(Decoder::new().check_str(fine).is_ok());
        // Where the repeat is: the end of the second name, as for a syntax error there.
        let err = Decoder::new()
            .decode_str(r#"[["r",{"a":1,"a":2}]]"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid JSON: duplicate member name "a" at line 1 column 16"#
        );
    }

    #[test]
    fn a_path_is_read_segment_by_segment() {
        let mut dec = Decoder::new();
        let long = format!(
            r#"[["d",[{}]]]"#,
            vec!["0"; MAX_PATH_SEGMENTS + 1].join(",")
        );
        assert_eq!(
            dec.decode_str(&long).unwrap_err().to_string(),
            "op 0: invalid path: 129 segments; a path has at most 128"
        );
        // The count wins over a bad segment, as on the tree; then the first bad segment.
        let both = format!(
            r#"[["d",[true,{}]]]"#,
            vec!["0"; MAX_PATH_SEGMENTS].join(",")
        );
        assert!(Decoder::new()
            .decode_str(&both)
            .unwrap_err()
            .to_string()
            .ends_with("129 segments; a path has at most 128"));
        assert_eq!(
            Decoder::new()
                .decode_str(r#"[["d",["a",{"x":1},"__proto__"]]]"#)
                .unwrap_err()
                .to_string(),
            "op 0: invalid path: segment 1 is an object; segments are strings or non-negative integers"
        );
        // A later grammar error wins over an earlier unknown id; invalid JSON over both.
        let err = Decoder::new()
            .decode_str(r#"[["d",5],["zz"]]"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"op 1: unknown verb "zz" (expected one of r, s, d, a, t, p)"#
        );
        let err = Decoder::new().decode_str(r#"[["d",5],["zz"]"#).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Json(_)), "{err}");
        // Paths written out again right after themselves share their segments.
        let ops = Decoder::new()
            .decode_str(r#"[["d",["k"]],["d",["k"]]]"#)
            .unwrap();
        assert!(ops[0].path().unwrap().shares_with(ops[1].path().unwrap()));
    }
}
