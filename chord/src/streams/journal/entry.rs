//! One record of a journal: a change of one protocol stream, as JSON, written from a
//! [`Change`] or a [`Whole`] stream and read back as a [`Record`].
//!
//! ```text
//! {"op":"create","ns":"v1","key":"a","type":"text/plain","ttl":60,"expires":null,
//!  "fork":null,"messages":["hello"],"closed":false}
//! {"op":"append","ns":"v1","key":"a","messages":[{"base64":"AP8="}],
//!  "producer":["p",0,3],"seq":"0007","close":false}
//! {"op":"delete","ns":"v1","key":"a"}
//! ```
//!
//! A message is a JSON string when its bytes are UTF-8, else `{"base64": ...}`. A creation
//! written when the journal is rewritten (one a live stream) also carries the stream's state:
//! `closed_by`, `producers`, `seq` and `deleted`.

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{json, Map, Value};

use std::collections::HashMap;

use crate::store::Address;
use crate::streams::config::{parse_rfc3339, Config};

/// A change the protocol's writes make, written to the journal before it is applied.
pub(crate) enum Change<'a> {
    /// A stream created, with its first messages (a fork's inherited ones first).
    Create {
        address: &'a Address,
        config: &'a Config,
        messages: &'a [Bytes],
        closed: bool,
    },
    /// Messages appended (maybe none, for a close), with the producer and `Stream-Seq`.
    Append {
        address: &'a Address,
        messages: &'a [Bytes],
        producer: Option<&'a (String, u64, u64)>,
        stream_seq: Option<&'a str>,
        close: bool,
    },
    /// A stream deleted.
    Delete { address: &'a Address },
}

/// A live stream whole, as a rewritten journal keeps it.
pub(crate) struct Whole<'a> {
    pub(crate) address: &'a Address,
    pub(crate) config: &'a Config,
    pub(crate) messages: &'a [Bytes],
    pub(crate) closed: bool,
    /// The producer request that closed it: (id, epoch, seq).
    pub(crate) closed_by: Option<&'a (String, u64, u64)>,
    /// Each producer's (epoch, last seq).
    pub(crate) producers: &'a HashMap<String, (u64, u64)>,
    /// The last `Stream-Seq`.
    pub(crate) seq: Option<&'a str>,
    /// Deleted while forks of it exist.
    pub(crate) deleted: bool,
}

/// A record read back: a [`Change`] or a [`Whole`] stream (a creation with its state).
#[derive(Debug)]
pub(crate) enum Record {
    /// A stream created; when written by a rewrite, with the state its writes left.
    Create {
        address: Address,
        config: Config,
        messages: Vec<Bytes>,
        closed: bool,
        closed_by: Option<(String, u64, u64)>,
        producers: HashMap<String, (u64, u64)>,
        seq: Option<String>,
        deleted: bool,
    },
    /// Messages appended (maybe none, for a close), with the producer and `Stream-Seq`.
    Append {
        address: Address,
        messages: Vec<Bytes>,
        producer: Option<(String, u64, u64)>,
        seq: Option<String>,
        close: bool,
    },
    /// A stream deleted.
    Delete { address: Address },
}

/// A record, as JSON.
pub(super) struct Entry(Map<String, Value>);

fn message(m: &[u8]) -> Value {
    match std::str::from_utf8(m) {
        Ok(text) => Value::String(text.to_owned()),
        Err(_) => json!({ "base64": base64::engine::general_purpose::STANDARD.encode(m) }),
    }
}

fn messages(ms: &[Bytes]) -> Value {
    Value::Array(ms.iter().map(|m| message(m)).collect())
}

fn producer(p: &(String, u64, u64)) -> Value {
    json!([p.0, p.1, p.2])
}

impl Entry {
    fn new(op: &str, address: &Address) -> Entry {
        let mut m = Map::new();
        m.insert("op".into(), op.into());
        m.insert("ns".into(), address.namespace.clone().into());
        m.insert("key".into(), address.key.clone().into());
        Entry(m)
    }

    fn set(&mut self, field: &str, value: Value) {
        self.0.insert(field.into(), value);
    }

    fn create(address: &Address, config: &Config, ms: &[Bytes], closed: bool) -> Entry {
        let mut e = Entry::new("create", address);
        e.set("type", config.content_type.clone().into());
        e.set("ttl", config.ttl.into());
        e.set(
            "expires",
            config.expires_at.as_ref().map(|(at, _)| at.clone()).into(),
        );
        e.set(
            "fork",
            config
                .fork_of
                .as_ref()
                .map_or(Value::Null, |(from, at, sub)| {
                    json!([from.namespace, from.key, at, sub])
                }),
        );
        e.set("messages", messages(ms));
        e.set("closed", closed.into());
        e
    }

    /// The record of `change`.
    pub(super) fn of(change: &Change<'_>) -> Entry {
        match change {
            Change::Create {
                address,
                config,
                messages,
                closed,
            } => Entry::create(address, config, messages, *closed),
            Change::Append {
                address,
                messages: ms,
                producer: p,
                stream_seq,
                close,
            } => {
                let mut e = Entry::new("append", address);
                e.set("messages", messages(ms));
                e.set("producer", p.map_or(Value::Null, producer));
                e.set("seq", stream_seq.map(str::to_owned).into());
                e.set("close", (*close).into());
                e
            }
            Change::Delete { address } => Entry::new("delete", address),
        }
    }

    /// The record of a live stream as a rewritten journal keeps it: one creation, with
    /// everything its writes left.
    pub(super) fn whole(w: &Whole<'_>) -> Entry {
        let mut e = Entry::create(w.address, w.config, w.messages, w.closed);
        e.set("closed_by", w.closed_by.map_or(Value::Null, producer));
        let mut producers: Vec<_> = w.producers.iter().collect();
        producers.sort();
        e.set(
            "producers",
            producers
                .into_iter()
                .map(|(id, (epoch, seq))| json!([id, epoch, seq]))
                .collect(),
        );
        e.set("seq", w.seq.map(str::to_owned).into());
        e.set("deleted", w.deleted.into());
        e
    }

    /// The record's bytes (one line of JSON, no line break).
    pub(super) fn to_record(&self) -> Vec<u8> {
        serde_json::to_vec(&self.0).expect("JSON values serialize")
    }

    pub(super) fn from_record(record: &[u8]) -> Result<Entry, String> {
        match serde_json::from_slice(record) {
            Ok(Value::Object(m)) => Ok(Entry(m)),
            Ok(_) => Err("a record is a JSON object".into()),
            Err(e) => Err(format!("invalid JSON: {e}")),
        }
    }

    fn str(&self, field: &str) -> Result<&str, String> {
        self.0
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no string `{field}`"))
    }

    fn opt_str(&self, field: &str) -> Result<Option<String>, String> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{field}` is not a string")),
        }
    }

    fn flag(&self, field: &str) -> Result<bool, String> {
        match self.0.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("`{field}` is not true or false")),
        }
    }

    fn address(&self) -> Result<Address, String> {
        Ok(Address::new(self.str("ns")?, self.str("key")?))
    }

    fn messages(&self) -> Result<Vec<Bytes>, String> {
        let Some(Value::Array(ms)) = self.0.get("messages") else {
            return Err("no array `messages`".into());
        };
        ms.iter()
            .enumerate()
            .map(|(i, m)| match m {
                Value::String(s) => Ok(Bytes::from(s.clone())),
                Value::Object(o) => o
                    .get("base64")
                    .and_then(Value::as_str)
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .map(Bytes::from)
                    .ok_or_else(|| format!("message {i}: not a string or {{\"base64\": ...}}")),
                _ => Err(format!("message {i}: not a string or {{\"base64\": ...}}")),
            })
            .collect()
    }

    fn producer(v: Option<&Value>) -> Result<Option<(String, u64, u64)>, String> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(p)) => match p.as_slice() {
                [Value::String(id), epoch, seq] => match (epoch.as_u64(), seq.as_u64()) {
                    (Some(e), Some(s)) => Ok(Some((id.clone(), e, s))),
                    _ => Err("a producer's epoch and seq are integers".into()),
                },
                _ => Err("a producer is [id, epoch, seq]".into()),
            },
            Some(_) => Err("a producer is [id, epoch, seq]".into()),
        }
    }

    fn config(&self) -> Result<Config, String> {
        let ttl = match self.0.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or("`ttl` is not an integer")?),
        };
        let expires_at = match self.opt_str("expires")? {
            None => None,
            Some(at) => {
                let when = parse_rfc3339(&at).map_err(|why| format!("`expires`: {why}"))?;
                Some((at, when))
            }
        };
        let fork_of = match self.0.get("fork") {
            None | Some(Value::Null) => None,
            Some(Value::Array(f)) => match f.as_slice() {
                [Value::String(ns), Value::String(key), at, sub] => {
                    match (at.as_u64(), sub.as_u64()) {
                        (Some(at), Some(sub)) => Some((Address::new(ns, key), at, sub)),
                        _ => return Err("`fork`'s offsets are integers".into()),
                    }
                }
                _ => return Err("`fork` is [namespace, key, offset, sub-offset]".into()),
            },
            Some(_) => return Err("`fork` is [namespace, key, offset, sub-offset]".into()),
        };
        Ok(Config {
            content_type: self.str("type")?.to_owned(),
            ttl,
            expires_at,
            fork_of,
        })
    }

    /// What the record says.
    pub(super) fn decode(&self) -> Result<Record, String> {
        let address = self.address()?;
        Ok(match self.str("op")? {
            "create" => {
                let mut producers = HashMap::new();
                if let Some(Value::Array(ps)) = self.0.get("producers") {
                    for p in ps {
                        if let Some((id, epoch, seq)) = Entry::producer(Some(p))? {
                            producers.insert(id, (epoch, seq));
                        }
                    }
                }
                Record::Create {
                    address,
                    config: self.config()?,
                    messages: self.messages()?,
                    closed: self.flag("closed")?,
                    closed_by: Entry::producer(self.0.get("closed_by"))?,
                    producers,
                    seq: self.opt_str("seq")?,
                    deleted: self.flag("deleted")?,
                }
            }
            "append" => Record::Append {
                address,
                messages: self.messages()?,
                producer: Entry::producer(self.0.get("producer"))?,
                seq: self.opt_str("seq")?,
                close: self.flag("close")?,
            },
            "delete" => Record::Delete { address },
            other => return Err(format!("unknown op {other:?}")),
        })
    }
}
