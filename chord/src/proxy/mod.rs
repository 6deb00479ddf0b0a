//! Proxies: the handles through which tracked values are mutated and intent is recorded.
//!
//! A proxy borrows the value and its place in the tracker's dirty tree for one statement or
//! one scope. Every proxy derefs to the value it wraps for reading, and records nothing when
//! read.

mod leaf;
pub(crate) mod map;
mod option;
mod text;
mod value;
mod vec;

pub use leaf::LeafProxy;
pub use map::{MapLike, MapProxy};
pub use option::OptionProxy;
pub use text::TextProxy;
pub use value::ValueProxy;
pub use vec::VecProxy;

#[doc(hidden)]
pub use leaf::flush as flush_leaf;
