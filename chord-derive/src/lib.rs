//! The derive macro behind `chord::Tracked`.
//!
//! Use it through the `chord-delta` crate (library name `chord`), which re-exports it; this
//! crate is an implementation detail whose version `chord-delta` pins exactly. Like
//! serde_derive and thiserror's `impl/`, the derive parses the input into a typed view
//! (module `ast`), reads the attributes that change the JSON shape (`attr`), checks rules that
//! span several of them (`valid`), and only then generates code (`expand`). Errors are
//! collected, not returned one at a time, and come with a stand-in implementation
//! (`fallback`) so the user sees the real mistake only.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod ast;
mod attr;
mod case;
mod expand;
mod fallback;
mod types;
mod typescript;
mod valid;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// The reserved path segment names as an array expression, so that the derive (which refuses
/// them as field names) and the runtime (`chord::RESERVED`) share one list. Not for users.
#[doc(hidden)]
#[proc_macro]
pub fn __reserved_names(_input: TokenStream) -> TokenStream {
    let names = valid::RESERVED;
    quote::quote!([#(#names),*]).into()
}

/// Derives `chord::Tracked` for a struct with named fields: a typed proxy whose accessor
/// methods mirror the fields and record intent, and the flush that turns it into ops.
///
/// Attributes: `#[chord(opaque)]` on a field tracks it as one JSON value (set or update,
/// diffed at flush); on a type, makes the whole type such a value (enums, tuple structs).
/// `#[chord(proxy = "Name")]` names the generated proxy (default: `<Type>Proxy`).
/// `#[chord(ts = "...")]` on a field is its TypeScript type, on a type its TypeScript
/// declaration (see `chord::typescript`, whose `TypeScript` trait the derive implements too).
/// The serde attributes that change JSON names are honoured (`rename`, `rename_all`, `skip`,
/// `skip_serializing`, `skip_serializing_if`); a field with `with` or `serialize_with` is
/// tracked as one value, its JSON written by the function. `flatten` is followed on a field
/// whose type is a struct with named fields deriving `Tracked`: its fields' paths are the
/// parent's, and its proxy is the field's. Those that would make paths lie (`flatten` on
/// anything else, such as a map, `getter`, `transparent`, `into`, `remote`) are refused.
///
/// The proxy's fields are handles to the value's fields: write through them
/// (`state.n += 1`, `*state.n = 5`, `state.n.set(5)`). `std::mem::swap` of two of them
/// exchanges the handles, not the values; `std::mem::swap(&mut *state.a, &mut *state.b)`
/// exchanges the values.
#[proc_macro_derive(Tracked, attributes(chord))]
pub fn derive_tracked(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
