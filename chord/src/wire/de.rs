//! A wire batch parsed straight from its text: serde visitors over the batch array, each op
//! tuple and each path, so no `Value` of the batch or of a tuple is ever built.
//!
//! The outcome is exactly that of parsing the whole text into a `Value` and validating it
//! afterwards (`validate::wire_batch_from_value`, then the decoder): a JSON syntax error
//! anywhere wins over every grammar error, and the first op that breaks the wire grammar wins
//! over a decoding error (an unknown id, say) at an earlier op. So the visitors never stop at
//! a grammar error: they record it and parse the rest of the text, building nothing. Every
//! element is read through serde_json's `deserialize_any`, which bounds nesting with the same
//! recursion limit as a `Value` and checks numbers and strings the same way (serde_json's
//! `IgnoredAny` does neither, so it is not used).
//!
//! Memory: the ops built, plus one op's elements at a time. An element's role may depend on
//! the op's arity (`["s", x]` sets `x`, `["s", x, 1]` sets the path `x`), so in a position
//! that may hold a value (`s`, `a`, `t`, `p` at 1; counts) the element is read as a `Value`;
//! where it can only be a path (`d`, `#`) it is read segment by segment, at most
//! [`MAX_PATH_SEGMENTS`] kept. A check ([`Mode::Check`]) reads the values an op carries
//! (`r`, `s`, an `a`'s text, a `p`'s items in the long form) without building them.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::path::{Path, Seg, MAX_PATH_SEGMENTS, RESERVED};
use crate::validate;
use crate::wire::op::WireOp;

/// What an op's elements are read into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every value an op carries is built.
    Decode,
    /// The values an op carries are read and dropped; paths, ids and counts are built.
    Check,
}

/// One element of an op tuple after the verb, as read.
pub(crate) enum Elem {
    /// Read whole.
    Val(Value),
    /// Read where only a path reference (or, for `#`, a path) may stand.
    Ref(Ref),
    /// Read and dropped: only its JSON type is known.
    Skip(&'static str),
}

/// An element read as a path reference: an id, an inline path (checked as it was read), or
/// something else.
pub(crate) enum Ref {
    Number(Number),
    Path(Result<Path>),
    Other(&'static str),
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
            match tuple.and_then(|(verb, elems, n)| validate::wire_op_from_elems(verb, elems, n)) {
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
        Skip.visit_map(map)?;
        self.0.grammar = Some(ErrorKind::NotABatch.into());
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
                ReadAs::Val => seq.next_element_seed(PhantomData::<Value>)?.map(Elem::Val),
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
        Skip.visit_map(map)?;
        Ok(Err(ErrorKind::NotATuple.into()))
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
        Skip.visit_map(map).map(|_| None)
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
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok("an object")
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
        Skip.visit_map(map).map(Ref::Other)
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
        Ok(match validate::safe_integer(&number) {
            Some(i) => SegRead::Seg(Seg::Index(i)),
            None => SegRead::BadNumber(number),
        })
    }
    fn visit_i64<E>(self, n: i64) -> std::result::Result<SegRead, E> {
        let number = Number::from(n);
        Ok(match validate::safe_integer(&number) {
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
        Skip.visit_map(map).map(SegRead::Other)
    }
}
