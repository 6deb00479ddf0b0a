//! Checks, where a value is recorded, that its JSON is exactly what a replica will hold.
//!
//! serde_json turns a non-finite float into `null` without a word and stringifies integer map
//! keys; either would make the producer's state and the replica differ. This serializer walks
//! a value without building anything and refuses what JSON cannot carry faithfully.

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::safe_integer::MAX_SAFE_INTEGER;

use serde::ser::{self, Serialize};

/// How many integers beyond ±(2^53 − 1) checked values have held, in any tracker, on any
/// thread. A flush in JS-safe mode looks for them in its batch only when this moved since the
/// tracker's last flush: finding none costs one atomic load, not a walk of every value sent.
pub(crate) static UNSAFE_INTEGERS: AtomicU64 = AtomicU64::new(0);

fn note(unsafe_integer: bool) {
    if unsafe_integer {
        UNSAFE_INTEGERS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why a value is not JSON.
#[derive(Debug)]
pub(crate) struct NotJson(pub(crate) String);

impl Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotJson {}

impl ser::Error for NotJson {
    fn custom<T: Display>(msg: T) -> Self {
        NotJson(msg.to_string())
    }
}

/// Checks that `value` serializes to JSON a replica reproduces exactly.
pub(crate) fn check<T: Serialize + ?Sized>(value: &T) -> Result<(), NotJson> {
    value.serialize(Checker)
}

struct Checker;

/// Map keys must serialize as strings.
struct KeyChecker;

type R = Result<(), NotJson>;

macro_rules! ok_scalars {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, _: $ty) -> R { Ok(()) })*
    };
}

impl ser::Serializer for Checker {
    type Ok = ();
    type Error = NotJson;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    ok_scalars!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_char: char, serialize_str: &str, serialize_bytes: &[u8]);

    fn serialize_i64(self, v: i64) -> R {
        note(v.unsigned_abs() > MAX_SAFE_INTEGER);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> R {
        note(v > MAX_SAFE_INTEGER);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> R {
        note(v.unsigned_abs() > u128::from(MAX_SAFE_INTEGER));
        if i64::try_from(v).is_ok() || u64::try_from(v).is_ok() {
            Ok(())
        } else {
            Err(NotJson(format!("the integer {v} does not fit in 64 bits")))
        }
    }
    fn serialize_u128(self, v: u128) -> R {
        note(v > u128::from(MAX_SAFE_INTEGER));
        if u64::try_from(v).is_ok() {
            Ok(())
        } else {
            Err(NotJson(format!("the integer {v} does not fit in 64 bits")))
        }
    }
    fn serialize_f32(self, v: f32) -> R {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> R {
        if v.is_finite() {
            Ok(())
        } else {
            Err(NotJson(format!(
                "the float {v} is not finite (serde_json would silently write null)"
            )))
        }
    }
    fn serialize_none(self) -> R {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> R {
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, NotJson> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, NotJson> {
        Ok(self)
    }
}

macro_rules! compound {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Checker {
            type Ok = ();
            type Error = NotJson;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                v.serialize(Checker)
            }
            fn end(self) -> R {
                Ok(())
            }
        })*
    };
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeStruct for Checker {
    type Ok = ();
    type Error = NotJson;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> R {
        v.serialize(Checker)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Checker {
    type Ok = ();
    type Error = NotJson;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> R {
        v.serialize(Checker)
    }
    fn end(self) -> R {
        Ok(())
    }
}

impl ser::SerializeMap for Checker {
    type Ok = ();
    type Error = NotJson;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> R {
        k.serialize(KeyChecker)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        v.serialize(Checker)
    }
    fn end(self) -> R {
        Ok(())
    }
}

fn bad_key(what: &str) -> R {
    Err(NotJson(format!(
        "a map key must be a string, found {what} (serde_json would stringify it)"
    )))
}

macro_rules! bad_keys {
    ($($method:ident: $ty:ty => $what:literal),*) => {
        $(fn $method(self, _: $ty) -> R { bad_key($what) })*
    };
}

impl ser::Serializer for KeyChecker {
    type Ok = ();
    type Error = NotJson;
    type SerializeSeq = ser::Impossible<(), NotJson>;
    type SerializeTuple = ser::Impossible<(), NotJson>;
    type SerializeTupleStruct = ser::Impossible<(), NotJson>;
    type SerializeTupleVariant = ser::Impossible<(), NotJson>;
    type SerializeMap = ser::Impossible<(), NotJson>;
    type SerializeStruct = ser::Impossible<(), NotJson>;
    type SerializeStructVariant = ser::Impossible<(), NotJson>;

    fn serialize_str(self, _: &str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
        Ok(()) // serialized as its name, a string
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    bad_keys!(serialize_bool: bool => "a boolean", serialize_i8: i8 => "an integer",
        serialize_i16: i16 => "an integer", serialize_i32: i32 => "an integer",
        serialize_i64: i64 => "an integer", serialize_u8: u8 => "an integer",
        serialize_u16: u16 => "an integer", serialize_u32: u32 => "an integer",
        serialize_u64: u64 => "an integer", serialize_f32: f32 => "a float",
        serialize_f64: f64 => "a float", serialize_char: char => "a char",
        serialize_bytes: &[u8] => "bytes");
    fn serialize_none(self) -> R {
        bad_key("None")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> R {
        bad_key("an Option")
    }
    fn serialize_unit(self) -> R {
        bad_key("()")
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        bad_key("a unit struct")
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> R {
        bad_key("an enum variant with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotJson> {
        Err(NotJson(
            "a map key must be a string, found a sequence".into(),
        ))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotJson> {
        Err(NotJson("a map key must be a string, found a tuple".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotJson> {
        Err(NotJson(
            "a map key must be a string, found a tuple struct".into(),
        ))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotJson> {
        Err(NotJson(
            "a map key must be a string, found an enum variant".into(),
        ))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotJson> {
        Err(NotJson("a map key must be a string, found a map".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotJson> {
        Err(NotJson("a map key must be a string, found a struct".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotJson> {
        Err(NotJson(
            "a map key must be a string, found an enum variant".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn refuses_what_json_cannot_carry() {
        assert!(check(&1.5f64).is_ok());
        assert!(check(&f64::NAN).is_err());
        assert!(check(&vec![1.0, f64::INFINITY]).is_err());
        assert!(check(&Some(f32::NEG_INFINITY)).is_err());
        let mut ints = BTreeMap::new();
        ints.insert(1u32, "x");
        assert!(check(&ints).is_err());
        let mut strings = HashMap::new();
        strings.insert("k".to_string(), vec![1u8]);
        assert!(check(&strings).is_ok());
        assert!(check(&u128::MAX).is_err());
        assert!(check(&(u64::MAX as u128)).is_ok());
        assert!(check(&serde_json::json!({"a": [1, "x", null]})).is_ok());
    }
}
