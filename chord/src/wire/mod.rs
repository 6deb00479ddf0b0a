//! The wire codec: paths shortened for transport and storage, one encoder/decoder pair per
//! stream.
//!
//! Two compressions exist only between [`Encoder::encode`] and [`Decoder::decode`]:
//!
//! - **Interning on second use.** The first time a path appears it is written inline. The
//!   second time, the encoder defines an id (`["#", id, path]`) and from then on writes the
//!   bare id. Paths written once (most of them) never pay for a definition.
//! - **Omission.** An op whose path equals the previous op's path *in the same batch* drops it;
//!   arity tells the reader (`["a", "x"]` is an append to the previous path).
//!
//! An `r` resets the id table, so a reader that starts at a base batch decodes with a fresh
//! decoder. Omission never crosses a batch; ids are the only state between batches.
//!
//! **Bounded tables.** Both ends hold at most [`MAX_IDS`] paths whatever the stream: ids are
//! numbers below `MAX_IDS`, and once all are taken the encoder redefines one not used lately
//! (`#` may redefine an id); a path gets an id only if its keys hold at most
//! [`MAX_ID_PATH_UNITS`] UTF-16 code units in all (longer ones stay inline). The decoder, and
//! the JavaScript replica's, refuse a definition that breaks either rule, so a hostile stream
//! cannot grow a reader's table either.
//!
//! ```
//! use chord::{path, Decoder, Encoder, Op};
//! let mut enc = Encoder::new();
//! let mut dec = Decoder::new();
//! let batches = [
//!     vec![Op::Replace(serde_json::json!({"out": ""}))],
//!     vec![Op::Append(path!["out"], "a".into())],
//!     vec![Op::Append(path!["out"], "b".into()), Op::Append(path!["out"], "c".into())],
//! ];
//! let wire: Vec<String> = batches.iter().map(|b| enc.encode(b).to_json()).collect();
//! assert_eq!(wire[2], r##"[["#",0,["out"]],["a",0,"b"],["a","c"]]"##);
//! for (text, batch) in wire.iter().zip(&batches) {
//!     assert_eq!(&dec.decode_str(text).unwrap(), batch);
//! }
//! ```

pub(crate) mod de;
mod decoder;
pub(crate) mod encoder;
pub(crate) mod grammar;
mod numbers;
pub(crate) mod op;
pub(crate) mod table;

/// Ids a stream may use: `0..MAX_IDS` (the encoder recycles them; decoders refuse others).
///
/// ```
/// let mut dec = chord::Decoder::new();
/// let define = |id: usize| format!(r##"[["#",{id},["a"]]]"##);
/// assert!(dec.decode_str(&define(chord::wire::MAX_IDS - 1)).is_ok());
/// assert!(dec.decode_str(&define(chord::wire::MAX_IDS)).is_err());
/// ```
pub const MAX_IDS: usize = 1024;

/// The most key text, in UTF-16 code units over all of a path's keys, that a path given an id
/// may hold. Bounds a decoder's table to `MAX_IDS` short paths.
pub const MAX_ID_PATH_UNITS: usize = 256;

pub use decoder::{Applied, Decoder};
pub use encoder::{Encoder, WireBatch};
pub(crate) use numbers::write_json;
pub use numbers::Numbers;
pub use op::{PathRef, WireOp};
