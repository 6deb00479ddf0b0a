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

mod decoder;
mod encoder;
pub(crate) mod op;

pub use decoder::Decoder;
pub use encoder::{Encoder, WireBatch};
pub use op::{PathRef, WireOp};
