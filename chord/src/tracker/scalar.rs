//! A leaf's value kept typed: what a reassigned `bool`, `char`, `()` or integer of up to 64
//! bits held, compared and written without a `serde_json::Value`.

use serde_json::Value;

/// The value of a leaf that JSON carries without a serializer: compared with the accepted
/// one at flush without building a `Value` for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Unit,
    Bool(bool),
    Char(char),
    Int(i64),
    UInt(u64),
}

impl Scalar {
    /// Whether every replica holds it exactly, so that its flush cannot fail: an integer
    /// within ±(2^53 − 1), or any other scalar.
    #[inline]
    pub(crate) fn safe(self) -> bool {
        use crate::safe_integer::MAX_SAFE_INTEGER;
        match self {
            Scalar::Int(i) => i.unsigned_abs() <= MAX_SAFE_INTEGER,
            Scalar::UInt(u) => u <= MAX_SAFE_INTEGER,
            _ => true,
        }
    }

    /// Its JSON.
    pub(crate) fn value(self) -> Value {
        match self {
            Scalar::Unit => Value::Null,
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Char(c) => Value::String(c.to_string()),
            Scalar::Int(i) => Value::from(i),
            Scalar::UInt(u) => Value::from(u),
        }
    }
}
