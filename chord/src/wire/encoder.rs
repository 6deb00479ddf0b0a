//! The stateful encoder: interning on second use, omission within a batch, a bounded table.

use serde::ser::{Serialize, SerializeSeq, Serializer};

use crate::op::{serialize_op, Op, OpPath};
use crate::path::{Path, Segments};
use crate::wire::op::{PathRef, WireOp};

use crate::json_write::{write_last_str, write_uint};
use crate::wire::table::{write_path, CachedCell, Form, Table};
use crate::wire::Numbers;

/// Encodes one stream's batches into wire form. Use one encoder per stream (per subscriber,
/// per stored value): ids it defines are only meaningful to a decoder that saw them.
///
/// Encoding does not validate: ops built in memory are well-formed by type.
///
/// Cost: per op, its path written as JSON into a reused buffer, hashed (foldhash) and looked
/// up once. Memory is bounded whatever the stream: at most [`MAX_IDS`](crate::wire::MAX_IDS)
/// ids (recycled by a clock, second chance, redefining an id the wire allows), each path at
/// most [`MAX_ID_PATH_UNITS`](crate::wire::MAX_ID_PATH_UNITS) of key text, and an array of
/// hashes of paths seen once (512 bytes, growing to 32 KiB for streams that touch thousands of
/// paths). Every `r` clears the table.
///
/// # Examples
///
/// ```
/// use chord::{path, Encoder, Op};
/// let mut enc = Encoder::new();
/// let first = [Op::Set(path!["a"], 1.into()), Op::Set(path!["a"], 2.into())];
/// assert_eq!(enc.encode(&first).to_json(), r#"[["s",["a"],1],["s",2]]"#);
/// let second = [Op::Set(path!["a"], 3.into())];
/// assert_eq!(enc.encode(&second).to_json(), r##"[["#",0,["a"]],["s",0,3]]"##);
/// ```
#[derive(Debug, Default)]
pub struct Encoder {
    pub(crate) table: Table,
    /// How the values' numbers are spelled.
    pub(crate) numbers: Numbers,
}

/// One encoded batch, borrowing the ops it was made from. Serialize it (it implements
/// [`Serialize`]), turn it into text with [`to_json`](WireBatch::to_json), or into owned
/// [`WireOp`]s with [`to_wire_ops`](WireBatch::to_wire_ops).
#[derive(Debug)]
pub struct WireBatch<'a> {
    items: Vec<Item<'a>>,
    numbers: Numbers,
}

#[derive(Debug)]
enum Item<'a> {
    Define(usize, &'a Path),
    Op(&'a Op, OpPath),
}

impl Encoder {
    /// A fresh encoder with an empty id table.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// The same encoder, spelling the numbers of the values it writes as `numbers` says
    /// ([`Numbers::Serde`] unless told otherwise). Applies to [`encode_into`](Encoder::encode_into),
    /// [`WireBatch::to_json`] and a tracker's [`flush_into`](crate::Tracker::flush_into); a
    /// [`WireBatch`] serialized through serde is spelled by the serializer given.
    pub fn numbers(mut self, numbers: Numbers) -> Encoder {
        self.numbers = numbers;
        self
    }

    /// Forgets every id, as an `r` does.
    pub fn reset(&mut self) {
        self.table.reset();
    }

    /// Encodes the next batch of the stream.
    pub fn encode<'a>(&mut self, batch: &'a [Op]) -> WireBatch<'a> {
        let mut items = Vec::with_capacity(batch.len());
        self.table.begin();
        for op in batch {
            let Some(path) = op.path() else {
                self.table.reset();
                items.push(Item::Op(op, OpPath::Inline));
                continue;
            };
            let form = match self.table.form(path) {
                Form::Omitted => OpPath::Omitted,
                Form::Inline => OpPath::Inline,
                Form::Id(id) => OpPath::Id(id),
                Form::Define(id) => {
                    items.push(Item::Define(id, path));
                    OpPath::Id(id)
                }
            };
            items.push(Item::Op(op, form));
        }
        WireBatch {
            items,
            numbers: self.numbers,
        }
    }

    /// Encodes the next batch of the stream straight into `out` as wire JSON text (the same
    /// bytes as [`encode`](Encoder::encode)`(batch).to_json()`), appended to what `out`
    /// holds. Writes nothing for an empty batch. Returns the number of bytes written.
    ///
    /// ```
    /// use chord::{path, Encoder, Op};
    /// let mut enc = Encoder::new();
    /// let mut out = Vec::new();
    /// enc.encode_into(&[Op::Append(path!["text"], "hi".into())], &mut out);
    /// assert_eq!(out, br#"[["a",["text"],"hi"]]"#);
    /// ```
    pub fn encode_into(&mut self, batch: &[Op], out: &mut Vec<u8>) -> usize {
        let start = out.len();
        if batch.is_empty() {
            return 0;
        }
        self.table.begin();
        out.push(b'[');
        for op in batch {
            self.write(op, out);
        }
        out.push(b']');
        out.len() - start
    }

    /// Writes one op of the current batch (and the definition it needs first), each preceded
    /// by a comma unless it is the batch's first.
    pub(crate) fn write(&mut self, op: &Op, out: &mut Vec<u8>) {
        match op.path() {
            Some(path) => self.head(out, op.verb(), path, None),
            None => {
                self.table.reset();
                write_head(out, op.verb(), Form::Inline, &[]);
            }
        }
        write_args(out, op, self.numbers);
    }

    /// An op's opening through the table: its path's definition first when this op makes
    /// one, then `["v"` and the path as the table says. `cached` is the id the path's
    /// dirty-tree node remembers (a flush straight to bytes): when it still holds, the path
    /// is neither written nor hashed, and it is updated with what the table decided. (Always
    /// inline: a streaming flush's one op opens here.)
    #[inline(always)]
    pub(crate) fn head<P: Segments + ?Sized>(
        &mut self,
        out: &mut Vec<u8>,
        verb: char,
        path: &P,
        cached: Option<&CachedCell>,
    ) {
        if let Some(cell) = cached {
            if let Some(form) = self.table.form_cached(cell, path) {
                return write_head(out, verb, form, &[]);
            }
        }
        self.head_by_path(out, verb, path, cached)
    }

    /// [`head`](Encoder::head) when no cached id holds: the path is looked up (and defined
    /// when this op makes it). Out of line: a streaming step's path is cached.
    #[inline(never)]
    fn head_by_path<P: Segments + ?Sized>(
        &mut self,
        out: &mut Vec<u8>,
        verb: char,
        path: &P,
        cached: Option<&CachedCell>,
    ) {
        let form = self.table.form(path);
        if let (Some(cell), Some(c)) = (cached, self.table.cache(form)) {
            cell.set(c);
        }
        let key = self.table.key();
        if let Form::Define(id) = form {
            write_define(out, id, key);
        }
        write_head(out, verb, form, key);
    }
}

/// A comma between items of a batch (`out` ends with the batch's `[` before the first).
#[inline]
fn separate(out: &mut Vec<u8>) {
    if out.last() != Some(&b'[') {
        out.push(b',');
    }
}

/// `["#",id,path]`, `key` being the path's JSON.
fn write_define(out: &mut Vec<u8>, id: usize, key: &[u8]) {
    separate(out);
    out.extend_from_slice(b"[\"#\",");
    write_uint(out, id as u64);
    out.push(b',');
    out.extend_from_slice(key);
    out.push(b']');
}

/// An op's opening: `["v"` and its path as `form` says (`key` is the path's JSON).
#[inline(always)]
fn write_head(out: &mut Vec<u8>, verb: char, form: Form, key: &[u8]) {
    separate(out);
    out.extend_from_slice(&[b'[', b'"', verb as u8, b'"']);
    match form {
        Form::Omitted => {}
        Form::Inline => {
            if !key.is_empty() {
                out.push(b',');
                out.extend_from_slice(key);
            }
        }
        // A one-digit id goes with its comma in one copy of a known length, cheaper on the
        // per-append path than a push and `write_uint`.
        Form::Id(id) | Form::Define(id) if id < 10 => {
            out.extend_from_slice(&[b',', b'0' + id as u8])
        }
        // (And a two-digit one in one copy too: a struct of many fields has ids past 9.)
        Form::Id(id) | Form::Define(id) if id < 100 => {
            out.extend_from_slice(&[b',', b'0' + (id / 10) as u8, b'0' + (id % 10) as u8])
        }
        Form::Id(id) | Form::Define(id) => {
            out.push(b',');
            write_uint(out, id as u64);
        }
    }
}

/// An op's arguments after its path, and its closing bracket.
fn write_args(out: &mut Vec<u8>, op: &Op, numbers: Numbers) {
    match op {
        Op::Replace(v) | Op::Set(_, v) => write_value(out, v, numbers),
        Op::Delete(_) => {}
        Op::Append(_, text) => return write_last_str(out, text),
        Op::Truncate(_, n) => {
            out.push(b',');
            write_uint(out, *n as u64);
        }
        Op::Splice {
            index,
            remove,
            items,
            ..
        } => {
            out.push(b',');
            write_uint(out, *index as u64);
            out.push(b',');
            write_uint(out, *remove as u64);
            out.push(b',');
            write_json(out, items, numbers);
        }
    }
    out.push(b']');
}

/// `,` and a value's JSON.
fn write_value(out: &mut Vec<u8>, v: &serde_json::Value, numbers: Numbers) {
    out.push(b',');
    write_json(out, v, numbers);
}

/// Any serializable value as JSON. Values that reach here were checked (or are `Value`s,
/// which always serialize), so the error cannot occur.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T, numbers: Numbers) {
    let _ = crate::wire::write_json(out, v, numbers);
}

impl WireBatch<'_> {
    /// The batch as wire JSON text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(64);
        out.push(b'[');
        for item in &self.items {
            match *item {
                Item::Define(id, path) => {
                    let mut key = Vec::new();
                    write_path(&mut key, path);
                    write_define(&mut out, id, &key);
                }
                Item::Op(op, form) => {
                    let mut key = Vec::new();
                    let form = match form {
                        OpPath::Omitted => Form::Omitted,
                        OpPath::Id(id) => Form::Id(id),
                        OpPath::Inline => {
                            if let Some(path) = op.path() {
                                write_path(&mut key, path);
                            }
                            Form::Inline
                        }
                    };
                    write_head(&mut out, op.verb(), form, &key);
                    write_args(&mut out, op, self.numbers);
                }
            }
        }
        out.push(b']');
        // Every byte written is JSON text from strings and serde_json: UTF-8.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Number of wire ops, definitions included.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The batch as owned wire ops (payloads are cloned).
    pub fn to_wire_ops(&self) -> Vec<WireOp> {
        self.items
            .iter()
            .map(|item| match *item {
                Item::Define(id, path) => WireOp::Define {
                    id,
                    path: path.clone(),
                },
                Item::Op(op, form) => {
                    let path = match form {
                        OpPath::Omitted => None,
                        OpPath::Id(id) => Some(PathRef::Id(id)),
                        OpPath::Inline => op.path().map(|p| PathRef::Path(p.clone())),
                    };
                    match op {
                        Op::Replace(v) => WireOp::Replace(v.clone()),
                        Op::Set(_, v) => WireOp::Set(path, v.clone()),
                        Op::Delete(_) => WireOp::Delete(path),
                        Op::Append(_, t) => WireOp::Append(path, t.clone()),
                        Op::Truncate(_, n) => WireOp::Truncate(path, *n),
                        Op::Splice {
                            index,
                            remove,
                            items,
                            ..
                        } => WireOp::Splice {
                            path,
                            index: *index,
                            remove: *remove,
                            items: items.clone(),
                        },
                    }
                }
            })
            .collect()
    }
}

impl Serialize for WireBatch<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for item in &self.items {
            seq.serialize_element(item)?;
        }
        seq.end()
    }
}

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Item::Define(id, path) => ("#", id, path).serialize(s),
            Item::Op(op, form) => serialize_op(op, form, s),
        }
    }
}
