//! How encoded payloads spell numbers: as serde_json does (the default), or as JavaScript's
//! `JSON.stringify` does.

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// How an [`Encoder`](crate::Encoder) spells the numbers of the values it writes.
///
/// Integers are spelled alike either way. Many floats are not: serde_json writes `1.0`,
/// `-0.0`, `1e-6` and `1e+20`, where JavaScript writes `1`, `0`, `0.000001` and
/// `100000000000000000000` (`chord/tests/number_spelling.rs` lists them beside each other). Every spelling of both reads back as the same
/// number in JavaScript, so the replicas' values agree either way; what differs is the bytes,
/// and what a Rust replica decodes:
///
/// - [`Numbers::Serde`] (the default) keeps every replica equal to
///   `serde_json::to_value(&state)`, Rust replicas included: a float stays a float (`1.0`),
///   where `1` would decode to an integer, which `serde_json::Value` holds unequal to `1.0`.
/// - [`Numbers::JavaScript`] writes what `JSON.stringify` writes (ECMAScript's
///   `Number.prototype.toString`, through the `ryu-js` crate), so a stream is byte for byte
///   what a JavaScript producer would send and a JavaScript replica's text of the value is
///   the producer's. A Rust replica then decodes a float with no fraction as an integer.
///   Choose it when every reader is JavaScript, or compares values as numbers.
///
/// What stays different from `JSON.stringify` either way: object members keep their order
/// of insertion, where JavaScript puts integer-like keys (`"2"`, `"10"`) first in ascending
/// order; and integers beyond 2^53 are written exactly, where JavaScript has rounded them
/// already (see the tracker's JS-safe mode).
///
/// ```
/// use chord::{wire::Numbers, Encoder, Op};
/// let batch = [Op::Replace(serde_json::json!([1.0, -0.0, 1e-6, 1e20, 0.5]))];
/// let serde = Encoder::new().encode(&batch).to_json();
/// assert_eq!(serde, r#"[["r",[1.0,-0.0,1e-6,1e+20,0.5]]]"#);
/// let js = Encoder::new().numbers(Numbers::JavaScript).encode(&batch).to_json();
/// assert_eq!(js, r#"[["r",[1,0,0.000001,100000000000000000000,0.5]]]"#);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Numbers {
    /// As serde_json writes them.
    #[default]
    Serde,
    /// As JavaScript's `JSON.stringify` writes them.
    JavaScript,
}

/// serde_json's compact formatter with floats written as ECMAScript writes them.
struct JavaScriptFormatter;

impl Formatter for JavaScriptFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        // serde_json writes a non-finite float as `null` before it asks the formatter, and
        // chord refuses one before it gets here; `format` spells them as JavaScript would
        // anyway, never as JSON.
        w.write_all(ryu_js::Buffer::new().format(value).as_bytes())
    }

    fn write_f32<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        value: f32,
    ) -> std::io::Result<()> {
        // JavaScript has only doubles: the f32 as the double it is, which is also what
        // `serde_json::to_value` holds for it.
        self.write_f64(w, f64::from(value))
    }
}

/// Writes `value` as compact JSON with `numbers`' spelling.
pub(crate) fn write_json<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
    numbers: Numbers,
) -> serde_json::Result<()> {
    match numbers {
        Numbers::Serde => {
            let mut ser = serde_json::Serializer::with_formatter(&mut *out, CompactFormatter);
            value.serialize(&mut ser)
        }
        Numbers::JavaScript => {
            let mut ser = serde_json::Serializer::with_formatter(&mut *out, JavaScriptFormatter);
            value.serialize(&mut ser)
        }
    }
}
