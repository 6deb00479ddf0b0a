//! The lines of a JSONL log, format version 2: one JSON object per line, of four kinds, each
//! ending with its checksum.
//!
//! | line | meaning |
//! | --- | --- |
//! | `{"chord":2,"c":"…"}` | the header: a chord log, format version 2; always the first line |
//! | `{"def":0,"ns":"lanes","key":"main","c":"…"}` | defines address id 0, before its first record |
//! | `{"lease":2048,"c":"…"}` | a writer may hand out seqs up to 2048: a restart continues after it |
//! | `{"s":17,"a":0,"t":"base","b":[["r",{}]],"c":"…"}` | a record: seq, address id, tag (optional), batch |
//!
//! **The checksum** is the last field of every line, always spelled `,"c":"` + 8 lowercase hex
//! digits + `"}`: the 16 bytes before the `\n`. Its value is the CRC-32C (Castagnoli) of the
//! line's bytes before those 16 (from the `{` through the end of the previous field, exactly as
//! stored), *continued from the previous line's checksum* (the header starts from 0): it is
//! the CRC-32C of every line's checked bytes from the start of the file through this line.
//! So a changed bit anywhere in a line fails that line's checksum, and a line that is missing,
//! duplicated or moved fails the checksum of the line after it.
//!
//! The batch is kept as raw JSON text (`b`): parsed when it is appended (to refuse what
//! recovery could not read back), kept byte for byte.
//!
//! A definition line's text is the address text of [`record`](super::super::record), and a
//! record line's the record text without its `"p"` member: the SQL backends checksum the same
//! texts.

use std::fmt::{self, Write};

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::store::record;

/// The format version this code reads and writes.
pub(super) const VERSION: u64 = 2;

/// The checksum suffix: `,"c":"` + 8 hex digits + `"}`.
pub(super) const SUFFIX_LEN: usize = 16;
const SUFFIX_START: &[u8] = b",\"c\":\"";
const SUFFIX_END: &[u8] = b"\"}";

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
    /// Parses one line (without its newline). Call [`verify`] first: parsing ignores the
    /// checksum's value.
    pub(super) fn parse(text: &'a [u8]) -> Result<Line<'a>, String> {
        let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// Checks a line's checksum (`text` without its `\n`), continuing from `seed`, the previous
/// line's checksum (0 before the header). Returns this line's checksum.
pub(super) fn verify(text: &[u8], seed: u32) -> Result<u32, String> {
    let stored = stored_checksum(text).ok_or_else(|| {
        "no checksum: a line must end with ,\"c\":\"<8 lowercase hex digits>\"}".to_owned()
    })?;
    let computed = crc32c::crc32c_append(seed, &text[..text.len() - SUFFIX_LEN]);
    if computed != stored {
        return Err(format!(
            "checksum mismatch (stored {stored:08x}, computed {computed:08x}): this line was \
             changed, or a line before it is missing, was changed or was moved"
        ));
    }
    Ok(computed)
}

/// The checksum a line ends with, if it ends with a well-formed suffix.
fn stored_checksum(text: &[u8]) -> Option<u32> {
    let n = text.len();
    if n < SUFFIX_LEN + 1 || text[0] != b'{' {
        return None;
    }
    let suffix = &text[n - SUFFIX_LEN..];
    if !suffix.starts_with(SUFFIX_START) || !suffix.ends_with(SUFFIX_END) {
        return None;
    }
    let hex = &suffix[SUFFIX_START.len()..SUFFIX_START.len() + 8];
    let mut value = 0u32;
    for &b in hex {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        value = value << 4 | u32::from(digit);
    }
    Some(value)
}

/// Where, in an unterminated last segment, a complete line ends that is followed by more bytes
/// instead of its `\n` (a damaged terminator followed by a torn write): the length of that
/// line, if any.
pub(super) fn embedded_line(segment: &[u8], seed: u32) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find(&segment[from..], SUFFIX_START) {
        let end = from + at + SUFFIX_LEN;
        if end < segment.len() && verify(&segment[..end], seed).is_ok() {
            return Some(end);
        }
        from += at + 1;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Appends to `out` the line `text` (verified, without its `\n`) with its checksum made to
/// continue `seed` instead, and its `\n`: the same bytes but for the 8 hex digits. What
/// compaction writes for each line it keeps. Returns the new checksum.
pub(super) fn rechain(text: &[u8], seed: u32, out: &mut Vec<u8>) -> u32 {
    let checked = &text[..text.len() - SUFFIX_LEN];
    let crc = crc32c::crc32c_append(seed, checked);
    out.extend_from_slice(checked);
    out.extend_from_slice(SUFFIX_START);
    for shift in (0..8).rev() {
        out.push(b"0123456789abcdef"[(crc >> (shift * 4)) as usize & 0xf]);
    }
    out.extend_from_slice(SUFFIX_END);
    out.push(b'\n');
    crc
}

/// A finished line: its text (with the checksum and `\n`) and its checksum, the seed of the
/// next line.
pub(super) struct Written {
    pub(super) text: String,
    pub(super) crc: u32,
}

/// Ends `checked` (a line's bytes up to its checksum) with the checksum and `\n`.
fn finish(mut checked: String, seed: u32) -> Written {
    let crc = crc32c::crc32c_append(seed, checked.as_bytes());
    // Writing to a String cannot fail.
    let _ = writeln!(checked, ",\"c\":\"{crc:08x}\"}}");
    Written { text: checked, crc }
}

pub(super) fn header() -> Written {
    finish(format!("{{\"chord\":{VERSION}"), 0)
}

pub(super) fn define(seed: u32, id: u64, namespace: &str, key: &str) -> Written {
    let mut checked = String::with_capacity(namespace.len() + key.len() + 32);
    record::address_text(&mut checked, id, namespace, key);
    finish(checked, seed)
}

pub(super) fn lease(seed: u32, end: u64) -> Written {
    finish(format!("{{\"lease\":{end}"), seed)
}

pub(super) fn record(seed: u32, seq: u64, address: u64, tag: Option<&str>, batch: &str) -> Written {
    let mut line = String::with_capacity(batch.len() + 64);
    record::record_head(&mut line, seq, address, None, tag);
    line.push_str(batch);
    finish(line, seed)
}

/// The version a first line declares, read leniently (whatever its checksum), so that a log
/// of another version is named as such.
pub(super) fn declared_version(text: &[u8]) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_slice(text).ok()?;
    value.get("chord")?.as_u64()
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
    Checksum,
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
                    "c" => Field::Checksum,
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
        let mut checksum = None;
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
                Field::Checksum => set(&mut checksum, map.next_value::<IgnoredAny>()?, "c")?,
                Field::Batch => {
                    let raw: &'de RawValue = map.next_value()?;
                    if !raw.get().starts_with('[') {
                        return Err(de::Error::custom("the batch `b` is not a JSON array"));
                    }
                    // Syntax was checked by RawValue; the ops were checked when appended.
                    set(&mut batch, raw, "b")?;
                }
            }
        }
        let missing = |name: &str| de::Error::custom(format_args!("missing field `{name}`"));
        if checksum.is_none() {
            return Err(missing("c"));
        }
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
