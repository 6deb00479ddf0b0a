//! JSON text as chord reads it: I-JSON (RFC 7493). A value is read as serde_json reads a
//! `Value`, but an object that names a member twice is an error where the second name is
//! (see [`duplicate`]), and arrays and small objects are built holding only what they hold.
//! The wire decoder, the store's check and `parse_batch` all read JSON through here, so every
//! reader of a batch, and the JavaScript replica, which holds the same rule, refuse the same
//! text.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::Result;

/// The JSON value of `json`, as serde_json reads a `Value`, but refusing an object that names
/// a member twice (see [`duplicate`]).
pub(crate) fn value_from_str(json: &str) -> Result<Value> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = ValueSeed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads a JSON value exactly as serde_json's `Value` reads it (its `Deserialize`), but each
/// array, and each object of at most [`SMALL_OBJECT`] members, holding only what it holds:
/// serde_json grows them from room for four elements (three members) by doubling, so most
/// small arrays and objects of a document would carry unused room.
pub(crate) struct ValueSeed;

/// The most members an object is built with room for exactly that many; larger ones grow as
/// serde_json grows them.
pub(crate) const SMALL_OBJECT: usize = 16;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> std::result::Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> std::result::Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ValueSeed)? {
            items.push(item);
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let first = match map.next_key_seed(KeySeed)? {
            None => return Ok(Value::Object(Map::new())),
            Some(Some(key)) => key,
            Some(None) => {
                let text = map.next_value_seed(RawText)?;
                return serde_json::from_str(&text).map_err(serde::de::Error::custom);
            }
        };
        let mut small = vec![(first, map.next_value_seed(ValueSeed)?)];
        let mut large: Option<Map<String, Value>> = None;
        while let Some(key) = map.next_key::<String>()? {
            let repeated = match &large {
                Some(members) => members.contains_key(&key),
                None => small.iter().any(|(k, _)| *k == key),
            };
            if repeated {
                return Err(duplicate(&key));
            }
            let value = map.next_value_seed(ValueSeed)?;
            match &mut large {
                Some(members) => {
                    members.insert(key, value);
                }
                None if small.len() < SMALL_OBJECT => small.push((key, value)),
                None => {
                    let mut members = Map::with_capacity(2 * SMALL_OBJECT);
                    members.extend(small.drain(..));
                    members.insert(key, value);
                    large = Some(members);
                }
            }
        }
        let members = large.unwrap_or_else(|| {
            let mut members = Map::with_capacity(small.len());
            members.extend(small);
            members
        });
        Ok(Value::Object(members))
    }
}

/// The key by which serde_json's `Value` recognizes its private `RawValue`: an object whose
/// first key is this is read as the JSON text its string value holds (or is an error).
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The error of an object that names a member twice: JSON text chord reads must be I-JSON
/// (RFC 7493), whose objects name each member once, so that no reader can take a different
/// one of the two than another (serde_json keeps the last, as `JSON.parse` does, but a
/// reader checking each value would refuse a first one that is out of range). Raised where
/// the second name is read, so the error names its position, as a syntax error does.
pub(crate) fn duplicate<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("duplicate member name {key:?}"))
}

/// The most member names of an object checked for a repeat by comparing with each; larger
/// objects are checked with a hash set.
pub(crate) const LINEAR_NAMES: usize = 16;

/// The member names an object read so far holds, to refuse a repeated one.
#[derive(Default)]
pub(crate) struct Names {
    few: Vec<String>,
    many: Option<std::collections::HashSet<String>>,
}

impl Names {
    /// Adds `key`, or refuses it when the object named it already.
    pub(crate) fn add<E: serde::de::Error>(&mut self, key: String) -> std::result::Result<(), E> {
        let repeated = match &mut self.many {
            Some(many) => !many.insert(key.clone()),
            None if self.few.contains(&key) => true,
            None if self.few.len() < LINEAR_NAMES => {
                self.few.push(key.clone());
                false
            }
            None => {
                let mut many: std::collections::HashSet<String> = self.few.drain(..).collect();
                many.insert(key.clone());
                self.many = Some(many);
                false
            }
        };
        if repeated {
            Err(duplicate(&key))
        } else {
            Ok(())
        }
    }
}

/// An object's first key: `None` when it is [`RAW_VALUE_TOKEN`].
pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, k: &str) -> std::result::Result<Self::Value, E> {
        Ok((k != RAW_VALUE_TOKEN).then(|| k.to_owned()))
    }
}

/// The string value of a [`RAW_VALUE_TOKEN`] object, read as serde_json reads it.
pub(crate) struct RawText;

impl<'de> DeserializeSeed<'de> for RawText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for RawText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw value")
    }

    fn visit_str<E>(self, text: &str) -> std::result::Result<String, E> {
        Ok(text.to_owned())
    }
}
