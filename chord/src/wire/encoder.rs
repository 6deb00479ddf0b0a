//! The stateful encoder: interning on second use, omission within a batch.

use std::collections::HashMap;

use serde::ser::{Serialize, SerializeSeq, Serializer};

use crate::op::{serialize_op, Op, OpPath};
use crate::path::Path;
use crate::wire::op::{PathRef, WireOp};

/// Encodes one stream's batches into wire form. Use one encoder per stream (per subscriber,
/// per stored value): ids it defines are only meaningful to a decoder that saw them.
///
/// Encoding does not validate: ops built in memory are well-formed by type.
///
/// Cost: one hash lookup per op path; the id table holds each distinct path written since the
/// last `r`, and is cleared by every `r`.
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
    table: HashMap<Path, Slot>,
    next_id: usize,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    SeenOnce,
    Id(usize),
}

/// One encoded batch, borrowing the ops it was made from. Serialize it (it implements
/// [`Serialize`]), turn it into text with [`to_json`](WireBatch::to_json), or into owned
/// [`WireOp`]s with [`to_wire_ops`](WireBatch::to_wire_ops).
#[derive(Debug)]
pub struct WireBatch<'a> {
    items: Vec<Item<'a>>,
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

    /// Forgets every id, as an `r` does.
    pub fn reset(&mut self) {
        self.table.clear();
        self.next_id = 0;
    }

    /// Encodes the next batch of the stream.
    pub fn encode<'a>(&mut self, batch: &'a [Op]) -> WireBatch<'a> {
        let mut items = Vec::with_capacity(batch.len());
        let mut previous: Option<&Path> = None;
        for op in batch {
            let Some(path) = op.path() else {
                self.reset();
                previous = None;
                items.push(Item::Op(op, OpPath::Inline));
                continue;
            };
            if previous == Some(path) {
                items.push(Item::Op(op, OpPath::Omitted));
                continue;
            }
            previous = Some(path);
            let form = match self.table.get_mut(path) {
                None => {
                    self.table.insert(path.clone(), Slot::SeenOnce);
                    OpPath::Inline
                }
                Some(slot @ Slot::SeenOnce) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    *slot = Slot::Id(id);
                    items.push(Item::Define(id, path));
                    OpPath::Id(id)
                }
                Some(Slot::Id(id)) => OpPath::Id(*id),
            };
            items.push(Item::Op(op, form));
        }
        WireBatch { items }
    }
}

impl WireBatch<'_> {
    /// The batch as wire JSON text.
    pub fn to_json(&self) -> String {
        // Serializing `serde_json::Value`s, strings and integers into a `Vec` cannot fail.
        serde_json::to_string(self).unwrap_or_default()
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
