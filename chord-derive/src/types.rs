//! What the derive reads from a type as the user spelled it: whether it mentions a type
//! parameter, whether it is an `Option`, whether a `skip_serializing_if` predicate is
//! `Option::is_none`. Both the `Tracked` expansion and the TypeScript declaration ask.

use proc_macro2::{Ident, TokenStream};
use quote::ToTokens;
use syn::Type;

/// Whether `ty` mentions the type parameter `param`.
pub(crate) fn mentions(ty: &Type, param: &Ident) -> bool {
    fn walk(tokens: TokenStream, param: &Ident) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == *param,
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), param),
            _ => false,
        })
    }
    walk(ty.to_token_stream(), param)
}

/// Whether a `skip_serializing_if` predicate is `Option::is_none` (spelled with or without
/// `std::option::` or `core::option::`): the field is then an `Option`, absent only when
/// `None`, which nothing but an assignment changes.
pub(crate) fn is_option_is_none(pred: &syn::ExprPath) -> bool {
    let spelled = pred.to_token_stream().to_string().replace(' ', "");
    let spelled = spelled.trim_start_matches("::");
    ["std::", "core::", ""].iter().any(|krate| {
        spelled
            .strip_prefix(krate)
            .is_some_and(|rest| rest == "option::Option::is_none" || rest == "Option::is_none")
    })
}

/// Whether a field's type is spelled `Option<..>` (or `std::option::Option<..>`).
pub(crate) fn is_option(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Option" && !s.arguments.is_none()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_option_is_none;

    #[test]
    fn option_is_none_is_recognised_however_spelled() {
        let is = |s: &str| is_option_is_none(&syn::parse_str(s).unwrap());
        for yes in [
            "Option::is_none",
            "option::Option::is_none",
            "std::option::Option::is_none",
            "::core::option::Option::is_none",
        ] {
            assert!(is(yes), "{yes}");
        }
        for no in [
            "Vec::is_empty",
            "is_none",
            "my::Option::is_none",
            "Option::is_some",
            "crate::Option::is_none",
        ] {
            assert!(!is(no), "{no}");
        }
    }
}
