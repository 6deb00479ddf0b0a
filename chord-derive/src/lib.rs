//! The derive macro behind `chord::Tracked`.
//!
//! Use it through the `chord` crate, which re-exports it; this crate is an implementation
//! detail whose version is pinned exactly by `chord`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

/// Derives typed tracking proxies for a struct.
///
/// Tracking is being built; until it lands the derive accepts its input and emits nothing.
#[proc_macro_derive(Tracked, attributes(chord))]
pub fn derive_tracked(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
