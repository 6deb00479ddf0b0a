//! Proxies: the handles through which tracked values are mutated and intent is recorded.
//!
//! A proxy borrows the value and its place in the tracker's dirty tree for one statement or
//! one scope, and mirrors the methods of the type it wraps. A derived struct's proxy is a
//! struct of its fields' proxies (`lane.usage.output_tokens += 1`); every other proxy derefs
//! to the value it wraps for reading (recording nothing), and through `DerefMut` for any
//! change it does not model: the location is then compared with the accepted value at flush
//! (its JSON is taken once, when `&mut` is first taken in a flush interval).

pub(crate) mod debug;
mod deque;
mod elements;
pub(crate) mod hints;
pub(crate) mod leaf;
pub(crate) mod map;
mod option;
mod text;
mod value;
mod vec;

pub use deque::DequeProxy;
pub use elements::Elements;
pub use leaf::LeafProxy;
pub use map::{Entry, MapLike, MapProxy};
pub use option::OptionProxy;
pub use text::TextProxy;
pub use value::ValueProxy;
pub use vec::VecProxy;
