//! The `chord::typescript::TypeScript` implementation: the declaration of the type's JSON,
//! built from the same view of its serde attributes (`ast`, `attr`) that its paths come from,
//! so that the declared type is the JSON chord sends.
//!
//! A field's type is asked for its TypeScript type through a probe that falls back to
//! `unknown` when the type has no `TypeScript` implementation, so that deriving `Tracked`
//! never fails for want of one. A generic type is declared once, generically: in its fields'
//! types, each type parameter the JSON uses is replaced by a placeholder
//! (`chord::__private::ts::TsParam<I>`) that writes the parameter's name.

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::{Attribute, Expr, GenericArgument, Lit, Meta, PathArguments, Type, WherePredicate};

use crate::ast::{Field, Input, Shape, Style};
use crate::types::{is_option, is_option_is_none, mentions};

/// The implementation for a type the derive accepted.
pub(crate) fn expand(input: &Input) -> TokenStream {
    let original = input.original;
    let ident = &original.ident;
    let rust_name = unraw(ident);
    let ts_name = input
        .attrs
        .rename
        .clone()
        .unwrap_or_else(|| rust_name.clone());

    let fields: Vec<&Field> = match &input.shape {
        Shape::Struct(_, fields) => fields.iter().collect(),
        Shape::Enum(variants) => variants.iter().flat_map(|v| v.fields.iter()).collect(),
        Shape::Union => Vec::new(),
    };
    // The type parameters the JSON depends on: those of the fields declared from their Rust
    // type (not skipped, not written by a function, not named by `#[chord(ts)]`).
    let params: Vec<Ident> = if input.attrs.ts.is_some() {
        Vec::new()
    } else {
        original
            .generics
            .type_params()
            .map(|p| p.ident.clone())
            .filter(|p| {
                fields
                    .iter()
                    .any(|f| declared_from_type(f) && mentions(f.ty, p))
            })
            .collect()
    };
    let subst = Subst { params: &params };

    let ts = quote!(::chord::__private::ts);
    let vec = quote!(::chord::__private::Vec::from);
    let body = match (&input.attrs.ts, &input.shape) {
        (Some(text), _) => quote!(#ts::TsType::raw(#text)),
        (None, Shape::Union) => quote!(#ts::TsType::unknown()),
        (None, Shape::Struct(style, fields)) => match style {
            Style::Unit => quote!(#ts::TsType::null()),
            Style::Newtype => fields
                .iter()
                .find(|f| f.tracked())
                .map(|f| field_type(f, &subst))
                .unwrap_or_else(|| quote!(#ts::TsType::unknown())),
            Style::Tuple => {
                let elements = elements(fields, &subst);
                quote!(#ts::tuple(#vec([#(#elements),*])))
            }
            Style::Named => {
                let members = members(fields, &subst);
                let serde_name = input.attrs.rename.clone().unwrap_or(rust_name.clone());
                let tag = match &input.attrs.tag {
                    Some(tag) => quote! {
                        ::chord::__private::core::option::Option::Some((#tag, #serde_name))
                    },
                    None => quote!(::chord::__private::core::option::Option::None),
                };
                let object = quote!(#ts::structure(#tag, #vec([#(#members),*])));
                with_flattened(object, fields, &subst)
            }
        },
        (None, Shape::Enum(variants)) => {
            let a = &input.attrs;
            let repr = match (&a.tag, &a.content) {
                _ if a.untagged => quote!(#ts::EnumRepr::Untagged),
                (Some(tag), Some(content)) => quote!(#ts::EnumRepr::Adjacent(#tag, #content)),
                (Some(tag), None) => quote!(#ts::EnumRepr::Internal(#tag)),
                (None, _) => quote!(#ts::EnumRepr::External),
            };
            let variants = variants.iter().map(|v| {
                let name = &v.json_name;
                let fields = match v.style {
                    Style::Unit => quote!(#ts::Fields::Unit),
                    Style::Newtype => {
                        let t = v
                            .fields
                            .iter()
                            .find(|f| f.tracked())
                            .map(|f| field_type(f, &subst))
                            .unwrap_or_else(|| quote!(#ts::TsType::unknown()));
                        quote!(#ts::Fields::Newtype(#t))
                    }
                    Style::Tuple => {
                        let elements = elements(&v.fields, &subst);
                        quote!(#ts::Fields::Tuple(#vec([#(#elements),*])))
                    }
                    Style::Named if v.fields.iter().any(Field::flattened) => {
                        // The variant's members and its flattened fields' together, as
                        // the one type of its content.
                        let members = members(&v.fields, &subst);
                        let object = quote!(#ts::TsType::object(#vec([#(#members),*])));
                        let t = with_flattened(object, &v.fields, &subst);
                        quote!(#ts::Fields::Newtype(#t))
                    }
                    Style::Named => {
                        let members = members(&v.fields, &subst);
                        quote!(#ts::Fields::Named(#vec([#(#members),*])))
                    }
                };
                quote!((#name, #fields))
            });
            quote!(#ts::enumeration(#repr, #vec([#(#variants),*])))
        }
    };

    let mut generics = original.generics.clone();
    let where_clause = generics.make_where_clause();
    for p in &params {
        let bound: WherePredicate = syn::parse_quote!(#p: #ts::TypeScript);
        where_clause.predicates.push(bound);
    }
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    let (_, ty_generics, _) = original.generics.split_for_impl();
    let param_names = params.iter().map(unraw);
    let doc = match docs(&original.attrs) {
        Some(doc) => quote!(::chord::__private::core::option::Option::Some(#doc)),
        None => quote!(::chord::__private::core::option::Option::None),
    };
    quote! {
        #[automatically_derived]
        impl #impl_generics #ts::TypeScript for #ident #ty_generics #where_clause {
            fn ts_type(__decls: &mut #ts::Declarations) -> #ts::TsType {
                #ts::declare_generic(
                    __decls,
                    ::chord::__private::core::concat!(
                        ::chord::__private::core::module_path!(), "::", #rust_name),
                    #ts_name,
                    &[#(#param_names),*],
                    #doc,
                    |__decls| #body,
                );
                #ts::TsType::named(#ts_name, #vec([
                    #(<#params as #ts::TypeScript>::ts_type(__decls)),*
                ]))
            }
        }
    }
}

/// The stand-in beside a compile error: `unknown`, asking nothing of the type.
pub(crate) fn fallback(input: &syn::DeriveInput) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::chord::__private::ts::TypeScript for #name #ty_generics #where_clause {
            fn ts_type(_: &mut ::chord::__private::ts::Declarations) -> ::chord::__private::ts::TsType {
                ::chord::__private::ts::TsType::unknown()
            }
        }
    }
}

fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

/// Whether a serialized field's TypeScript type comes from its Rust type.
fn declared_from_type(f: &Field) -> bool {
    f.tracked() && f.attrs.with.is_none() && f.attrs.ts.is_none()
}

/// The doc comment among `attrs`, one line per `///` line.
fn docs(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(e) => match &e.lit {
                    Lit::Str(s) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect();
    let doc = lines.join("\n");
    (!doc.trim().is_empty()).then_some(doc)
}

/// `T` of a type spelled `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let PathArguments::AngleBracketed(args) = &p.path.segments.last()?.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// The expression of a serialized field's TypeScript type (`Option<T>` skipped when `None`
/// is `T`: it is never written as `null`).
fn field_type(f: &Field, subst: &Subst) -> TokenStream {
    let ts = quote!(::chord::__private::ts);
    if let Some(text) = &f.attrs.ts {
        return quote!(#ts::TsType::raw(#text));
    }
    if f.attrs.with.is_some() {
        return quote!(#ts::TsType::unknown());
    }
    let mut ty = f.ty;
    if f.attrs.skip_if.as_ref().is_some_and(is_option_is_none) && is_option(ty) {
        if let Some(inner) = option_inner(ty) {
            ty = inner;
        }
    }
    match subst.apply(ty) {
        Some(ty) => quote! {{
            #[allow(unused_imports)]
            use #ts::{ViaTypeScript as _, ViaUnknown as _};
            (&#ts::Probe::<#ty>(::chord::__private::core::marker::PhantomData)).ts_type(__decls)
        }},
        None => quote!(#ts::TsType::unknown()),
    }
}

/// `object` (a `TsType` expression) intersected with the types of the flattened fields, whose
/// members serde writes among the object's.
fn with_flattened(object: TokenStream, fields: &[Field], subst: &Subst) -> TokenStream {
    let ts = quote!(::chord::__private::ts);
    let vec = quote!(::chord::__private::Vec::from);
    let flattened: Vec<TokenStream> = fields
        .iter()
        .filter(|f| f.flattened())
        .map(|f| field_type(f, subst))
        .collect();
    if flattened.is_empty() {
        return object;
    }
    quote!(#ts::TsType::intersection(#vec([#object, #(#flattened),*])))
}

/// The `Member` expressions of the serialized named fields (a flattened field's members are
/// its type's: see `with_flattened`).
fn members(fields: &[Field], subst: &Subst) -> Vec<TokenStream> {
    let ts = quote!(::chord::__private::ts);
    fields
        .iter()
        .filter(|f| f.tracked() && !f.flattened())
        .map(|f| {
            let name = f.json_name().unwrap_or_default();
            let ty = field_type(f, subst);
            let optional = f.attrs.skip_if.is_some().then(|| quote!(.optional()));
            let doc = docs(&f.original.attrs).map(|d| quote!(.doc(#d)));
            quote!(#ts::Member::new(#name, #ty) #optional #doc)
        })
        .collect()
}

/// The `(type, may be skipped)` expressions of the serialized unnamed fields.
fn elements(fields: &[Field], subst: &Subst) -> Vec<TokenStream> {
    fields
        .iter()
        .filter(|f| f.tracked())
        .map(|f| {
            let ty = field_type(f, subst);
            let optional = f.attrs.skip_if.is_some();
            quote!((#ty, #optional))
        })
        .collect()
}

/// Replaces the declaration's type parameters by placeholders in a field's type.
struct Subst<'a> {
    params: &'a [Ident],
}

impl Subst<'_> {
    /// The type with placeholders, or `None` when it uses a parameter in a way a placeholder
    /// cannot stand for (`T::Assoc`, `<T as Trait>::Assoc`, `Self`): the field is `unknown`.
    fn apply(&self, ty: &Type) -> Option<TokenStream> {
        if self.params.is_empty() {
            return Some(ty.to_token_stream());
        }
        let mut ok = true;
        let out = self.walk(ty.to_token_stream(), &mut ok);
        ok.then_some(out)
    }

    fn walk(&self, tokens: TokenStream, ok: &mut bool) -> TokenStream {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                TokenTree::Ident(id) => {
                    let after_path_or_tick = i > 0
                        && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':' || p.as_char() == '\'');
                    match self.params.iter().position(|p| p == id) {
                        Some(index) if !after_path_or_tick => {
                            let before_path = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                            if before_path {
                                *ok = false;
                            }
                            out.extend(quote!(::chord::__private::ts::TsParam<#index>));
                        }
                        _ => {
                            if id == "Self" || id == "as" {
                                *ok = false;
                            }
                            out.extend([t.clone()]);
                        }
                    }
                }
                TokenTree::Group(g) => {
                    let mut group = Group::new(g.delimiter(), self.walk(g.stream(), ok));
                    group.set_span(g.span());
                    out.extend([TokenTree::Group(group)]);
                }
                _ => out.extend([t.clone()]),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subst(ty: &str, params: &[&str]) -> Option<String> {
        let params: Vec<Ident> = params
            .iter()
            .map(|p| Ident::new(p, proc_macro2::Span::call_site()))
            .collect();
        let ty: Type = syn::parse_str(ty).unwrap();
        Subst { params: &params }
            .apply(&ty)
            .map(|t| t.to_string().replace(' ', ""))
    }

    #[test]
    fn parameters_are_replaced_where_they_stand_for_a_type() {
        assert_eq!(
            subst("Vec<T>", &["T"]).as_deref(),
            Some("Vec<::chord::__private::ts::TsParam<0usize>>")
        );
        assert_eq!(
            subst("(U, [T; 3])", &["T", "U"]).as_deref(),
            Some("(::chord::__private::ts::TsParam<1usize>,[::chord::__private::ts::TsParam<0usize>;3])")
        );
        // A type named like a parameter inside a path, or a lifetime, is left alone.
        assert_eq!(
            subst("m::T<&'T str>", &["T"]).as_deref(),
            Some("m::T<&'Tstr>")
        );
        assert_eq!(subst("String", &[]).as_deref(), Some("String"));
        for unsupported in ["T::Item", "<T as Iterator>::Item", "Box<Self>"] {
            assert_eq!(subst(unsupported, &["T"]), None, "{unsupported}");
        }
    }

    /// The expansion for `source`, spaces removed.
    fn expansion(source: &str) -> String {
        let input: syn::DeriveInput = syn::parse_str(source).unwrap();
        let cx = crate::attr::Ctxt::default();
        let parsed = Input::from_syn(&cx, &input);
        cx.finish().unwrap();
        expand(&parsed).to_string().replace(' ', "")
    }

    #[test]
    fn only_the_parameters_the_json_uses_are_declared_and_bounded() {
        let out = expansion(
            "struct Holder<T, U, V> { value: T, #[serde(skip)] cache: V,              #[serde(serialize_with = \"f\")] written: U }",
        );
        assert!(out.contains("&[\"T\"]"), "{out}");
        assert!(
            out.contains("T:::chord::__private::ts::TypeScript"),
            "{out}"
        );
        for unused in ["U:::chord", "V:::chord", "\"U\"", "\"V\""] {
            assert!(!out.contains(unused), "{unused} in {out}");
        }
        // The field's type with its placeholder; the one a function writes is `unknown`.
        assert!(
            out.contains("Probe::<::chord::__private::ts::TsParam<0usize>>"),
            "{out}"
        );
        assert!(
            out.contains("Member::new(\"written\",::chord::__private::ts::TsType::unknown())"),
            "{out}"
        );
    }

    #[test]
    fn serde_names_and_representations_reach_the_expansion() {
        let out = expansion(
            "#[serde(tag = \"t\", content = \"c\", rename = \"Reply\", rename_all = \"kebab-case\")]              enum Answer { TextPart(String), #[serde(rename = \"end\")] Done }",
        );
        assert!(out.contains("EnumRepr::Adjacent(\"t\",\"c\")"), "{out}");
        assert!(
            out.contains("(\"text-part\",::chord::__private::ts::Fields::Newtype("),
            "{out}"
        );
        assert!(
            out.contains("(\"end\",::chord::__private::ts::Fields::Unit)"),
            "{out}"
        );
        // Declared under serde's name, located by the Rust one.
        assert!(out.contains("\"::\",\"Answer\"),\"Reply\""), "{out}");
    }

    #[test]
    fn doc_comments_are_read_line_by_line() {
        let input: syn::DeriveInput =
            syn::parse_str("/// One.\n///\n/// Two.\n#[serde(rename = \"x\")]\nstruct S;").unwrap();
        assert_eq!(docs(&input.attrs).as_deref(), Some(" One.\n\n Two."));
        let bare: syn::DeriveInput = syn::parse_str("struct S;").unwrap();
        assert_eq!(docs(&bare.attrs), None);
    }
}
