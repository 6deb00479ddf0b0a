//! The lines of a JSONL log: one JSON object per line, of four kinds.
//!
//! | line | meaning |
//! | --- | --- |
//! | `{"chord":1}` | the header: a chord log, format version 1; always the first line |
//! | `{"def":0,"ns":"lanes","key":"main"}` | defines address id 0, before its first record |
//! | `{"lease":2048}` | a writer may hand out seqs up to 2048: a restart continues after it |
//! | `{"s":17,"a":0,"t":"base","b":[["r",{}]]}` | a record: seq, address id, tag (optional), batch |
//!
//! The batch is kept as raw JSON text (`b`), checked for syntax and never parsed into ops.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The format version this code reads and writes.
pub(super) const VERSION: u64 = 1;

/// One parsed line, borrowing the batch text from the line.
#[derive(Debug)]
pub(super) enum Line<'a> {
    Header {
        version: u64,
    },
    Define {
        id: u64,
        namespace: String,
        key: String,
    },
    Lease {
        end: u64,
    },
    Record(RecordLine<'a>),
}

#[derive(Debug)]
pub(super) struct RecordLine<'a> {
    pub(super) seq: u64,
    pub(super) address: u64,
    pub(super) tag: Option<String>,
    pub(super) batch: &'a RawValue,
}

impl<'a> Line<'a> {
    /// Parses one line (without its newline).
    pub(super) fn parse(text: &'a [u8]) -> Result<Line<'a>, String> {
        let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

pub(super) fn header() -> String {
    format!("{{\"chord\":{VERSION}}}\n")
}

pub(super) fn define(id: u64, namespace: &str, key: &str) -> String {
    format!(
        "{{\"def\":{id},\"ns\":{},\"key\":{}}}\n",
        json_string(namespace),
        json_string(key)
    )
}

pub(super) fn lease(end: u64) -> String {
    format!("{{\"lease\":{end}}}\n")
}

pub(super) fn record(seq: u64, address: u64, tag: Option<&str>, batch: &str) -> String {
    let mut line = format!("{{\"s\":{seq},\"a\":{address},");
    if let Some(tag) = tag {
        line.push_str("\"t\":");
        line.push_str(&json_string(tag));
        line.push(',');
    }
    line.push_str("\"b\":");
    line.push_str(batch);
    line.push_str("}\n");
    line
}

fn json_string(s: &str) -> String {
    // Serializing a string cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

enum Field {
    Chord,
    Def,
    Ns,
    Key,
    Lease,
    Seq,
    Address,
    Tag,
    Batch,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a log line field")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "chord" => Field::Chord,
                    "def" => Field::Def,
                    "ns" => Field::Ns,
                    "key" => Field::Key,
                    "lease" => Field::Lease,
                    "s" => Field::Seq,
                    "a" => Field::Address,
                    "t" => Field::Tag,
                    "b" => Field::Batch,
                    other => return Err(E::custom(format_args!("unknown field `{other}`"))),
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

impl<'de> Deserialize<'de> for Line<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Line<'de>, D::Error> {
        d.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

fn set<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::custom(format_args!("duplicate field `{name}`")));
    }
    Ok(())
}

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a log line: a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Line<'de>, A::Error> {
        let mut chord = None;
        let mut def = None;
        let mut ns = None;
        let mut key = None;
        let mut lease = None;
        let mut seq = None;
        let mut address = None;
        let mut tag = None;
        let mut batch: Option<&'de RawValue> = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Chord => set(&mut chord, map.next_value::<u64>()?, "chord")?,
                Field::Def => set(&mut def, map.next_value::<u64>()?, "def")?,
                Field::Ns => set(&mut ns, map.next_value::<String>()?, "ns")?,
                Field::Key => set(&mut key, map.next_value::<String>()?, "key")?,
                Field::Lease => set(&mut lease, map.next_value::<u64>()?, "lease")?,
                Field::Seq => set(&mut seq, map.next_value::<u64>()?, "s")?,
                Field::Address => set(&mut address, map.next_value::<u64>()?, "a")?,
                Field::Tag => set(&mut tag, map.next_value::<String>()?, "t")?,
                Field::Batch => {
                    let raw: &'de RawValue = map.next_value()?;
                    if !raw.get().starts_with('[') {
                        return Err(de::Error::custom("the batch `b` is not a JSON array"));
                    }
                    // Syntax was checked by RawValue; the ops themselves are not parsed.
                    set(&mut batch, raw, "b")?;
                }
            }
        }
        let missing = |name: &str| de::Error::custom(format_args!("missing field `{name}`"));
        let extra =
            |kind: &str| de::Error::custom(format_args!("unexpected fields in a {kind} line"));
        if let Some(version) = chord {
            if def.or(lease).or(seq).or(address).is_some() || ns.is_some() || key.is_some() {
                return Err(extra("header"));
            }
            if tag.is_some() || batch.is_some() {
                return Err(extra("header"));
            }
            return Ok(Line::Header { version });
        }
        if let Some(id) = def {
            if lease.or(seq).or(address).is_some() || tag.is_some() || batch.is_some() {
                return Err(extra("definition"));
            }
            return Ok(Line::Define {
                id,
                namespace: ns.ok_or_else(|| missing("ns"))?,
                key: key.ok_or_else(|| missing("key"))?,
            });
        }
        if ns.is_some() || key.is_some() {
            return Err(missing("def"));
        }
        if let Some(end) = lease {
            if seq.or(address).is_some() || tag.is_some() || batch.is_some() {
                return Err(extra("lease"));
            }
            return Ok(Line::Lease { end });
        }
        match (seq, address, batch) {
            (None, None, None) if tag.is_none() => Err(de::Error::custom(
                "an empty object is not a log line (header, def, lease or record)",
            )),
            (seq, address, batch) => Ok(Line::Record(RecordLine {
                seq: seq.ok_or_else(|| missing("s"))?,
                address: address.ok_or_else(|| missing("a"))?,
                tag,
                batch: batch.ok_or_else(|| missing("b"))?,
            })),
        }
    }
}
