//! Code generation: the proxy struct, its accessors, and the `Tracked` implementation.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{DeriveInput, GenericParam, Generics, Lifetime, LifetimeParam, Type, WherePredicate};

use crate::ast::{Field, Input, Shape};
use crate::attr::Ctxt;
use crate::{fallback, valid};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::default();
    let parsed = Input::from_syn(&cx, input);
    valid::check(&cx, &parsed);
    if let Err(e) = cx.finish() {
        return fallback::expand(input, e);
    }
    match &parsed.shape {
        _ if parsed.attrs.opaque => opaque(input),
        Shape::Struct(fields) => tracked_struct(&parsed, fields),
        Shape::Other(_) => unreachable!("validated: only opaque types reach here"),
    }
}

/// Whether `ty` mentions the type parameter `param`.
fn mentions(ty: &Type, param: &syn::Ident) -> bool {
    fn walk(tokens: TokenStream, param: &syn::Ident) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == *param,
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), param),
            _ => false,
        })
    }
    walk(ty.to_token_stream(), param)
}

/// The user's generics with a bound on every type parameter: `Tracked` where a tracked field
/// uses it, `Serialize` where only opaque fields do.
fn bounded(generics: &Generics, fields: &[Field]) -> Generics {
    let mut generics = generics.clone();
    let params: Vec<syn::Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in params {
        let tracked = fields
            .iter()
            .any(|f| !f.attrs.skip && !f.attrs.opaque && mentions(f.ty, &param));
        let opaque = fields
            .iter()
            .any(|f| !f.attrs.skip && f.attrs.opaque && mentions(f.ty, &param));
        let bound: WherePredicate = if tracked {
            syn::parse_quote!(#param: ::chord::Tracked)
        } else if opaque {
            syn::parse_quote!(#param: ::chord::__private::serde::Serialize)
        } else {
            continue;
        };
        where_clause.predicates.push(bound);
    }
    generics
}

fn with_lifetime(generics: &Generics, lifetime: &Lifetime) -> Generics {
    let mut generics = generics.clone();
    generics.params.insert(
        0,
        GenericParam::Lifetime(LifetimeParam::new(lifetime.clone())),
    );
    generics
}

fn tracked_struct(input: &Input, fields: &[Field]) -> TokenStream {
    let original = input.original;
    let name = &original.ident;
    let vis = &original.vis;
    let proxy = input
        .attrs
        .proxy
        .clone()
        .unwrap_or_else(|| format_ident!("{}Proxy", name));
    let a = Lifetime::new("'__a", Span::call_site());

    let (_, ty_generics, plain_where) = original.generics.split_for_impl();
    let bounded = bounded(&original.generics, fields);
    let (impl_generics, _, where_clause) = bounded.split_for_impl();
    let proxy_generics = with_lifetime(&bounded, &a);
    let (proxy_impl_generics, proxy_ty_generics, _) = proxy_generics.split_for_impl();
    let proxy_def_generics = with_lifetime(&original.generics, &a);
    let (proxy_def_params, _, _) = proxy_def_generics.split_for_impl();
    let proxy_def_params = proxy_def_params.to_token_stream();

    let accessors = fields.iter().map(accessor);
    let flushes = fields.iter().filter(|f| !f.attrs.skip).map(|f| {
        let ident = f.ident;
        let index = f.index;
        let json = &f.json_name;
        let present = present(f, quote!(self));
        let span = f.ty.span();
        let call = if f.attrs.opaque {
            quote_spanned!(span=> ::chord::__private::flush_opaque_field)
        } else {
            quote_spanned!(span=> ::chord::__private::flush_field)
        };
        quote_spanned! {span=>
            #index => #call(&self.#ident, __node, __path, #json, #present, __out),
        }
    });

    let doc_struct = format!(
        "Records changes to a [`{name}`] as intent; obtained from `chord::Tracker::state` \
         or a parent proxy. Derefs to the value for reading."
    );
    let doc_set = format!(
        "Replaces the whole `{name}`; at flush it is compared with the accepted value, so \
         only what differs is sent."
    );
    quote! {
        #[doc = #doc_struct]
        #vis struct #proxy #proxy_def_params #plain_where {
            __value: &#a mut #name #ty_generics,
            __cx: ::chord::__private::Cx<#a>,
        }

        #[automatically_derived]
        impl #proxy_impl_generics #proxy #proxy_ty_generics #where_clause {
            #(#accessors)*

            #[doc = #doc_set]
            ///
            /// # Errors
            ///
            /// The value is not faithful JSON (a non-finite float, a non-string map key);
            /// nothing is changed then.
            pub fn set(&mut self, value: #name #ty_generics) -> ::chord::__private::Result<()> {
                ::chord::__private::assign(self.__value, value, &mut self.__cx)
            }
        }

        #[automatically_derived]
        impl #proxy_impl_generics ::chord::__private::core::ops::Deref for #proxy #proxy_ty_generics #where_clause {
            type Target = #name #ty_generics;
            fn deref(&self) -> &Self::Target {
                self.__value
            }
        }

        #[automatically_derived]
        impl #impl_generics ::chord::Tracked for #name #ty_generics #where_clause {
            type Proxy<#a> = #proxy #proxy_ty_generics where Self: #a;

            fn __proxy<#a>(&#a mut self, cx: ::chord::__private::Cx<#a>) -> Self::Proxy<#a> {
                #proxy { __value: self, __cx: cx }
            }

            fn __flush(
                &self,
                node: &mut ::chord::__private::Node,
                path: &mut ::chord::__private::Path,
                out: &mut ::chord::__private::Vec<::chord::__private::Op>,
            ) -> ::chord::__private::Result<()> {
                ::chord::__private::flush_struct(self, node, path, out, |__index, __node, __path, __out| {
                    match __index {
                        #(#flushes)*
                        _ => ::chord::__private::core::result::Result::Ok(()),
                    }
                })
            }
        }
    }
}

/// `Some(present now)` for a field serde may skip, else `None`.
fn present(f: &Field, value: TokenStream) -> TokenStream {
    let ident = f.ident;
    match &f.attrs.skip_if {
        Some(pred) => quote_spanned! {pred.span()=>
            ::chord::__private::core::option::Option::Some(!#pred(&#value.#ident))
        },
        None => quote!(::chord::__private::core::option::Option::None),
    }
}

fn accessor(f: &Field) -> TokenStream {
    let ident = f.ident;
    let ty = f.ty;
    let vis = &f.original.vis;
    if f.attrs.skip {
        let doc = format!("`{ident}` is not serialized, so changes to it are not tracked.");
        return quote! {
            #[doc = #doc]
            #vis fn #ident(&mut self) -> &mut #ty {
                &mut self.__value.#ident
            }
        };
    }
    let index = f.index;
    let json = &f.json_name;
    let present = present(f, quote!(self.__value));
    if f.attrs.opaque {
        let doc = format!(
            "Tracks `{ident}` (JSON `{json}`) as one value: set or update it, and it is compared at flush."
        );
        return quote! {
            #[doc = #doc]
            #vis fn #ident(&mut self) -> ::chord::__private::LeafProxy<'_, #ty> {
                let __cx = self.__cx.field(#index, #json, #present);
                ::chord::__private::LeafProxy::new(&mut self.__value.#ident, __cx)
            }
        };
    }
    let doc = format!("Records changes to `{ident}` (JSON `{json}`).");
    let call = quote_spanned! {ty.span()=>
        <#ty as ::chord::Tracked>::__proxy(&mut self.__value.#ident, __cx)
    };
    let ret = quote_spanned! {ty.span()=> ::chord::Proxy<'_, #ty> };
    quote! {
        #[doc = #doc]
        #vis fn #ident(&mut self) -> #ret {
            let __cx = self.__cx.field(#index, #json, #present);
            #call
        }
    }
}

/// A type tracked as one JSON value.
fn opaque(input: &DeriveInput) -> TokenStream {
    let name = &input.ident;
    let mut generics = input.generics.clone();
    let params: Vec<syn::Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in params {
        where_clause
            .predicates
            .push(syn::parse_quote!(#param: ::chord::__private::serde::Serialize));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::chord::Tracked for #name #ty_generics #where_clause {
            type Proxy<'__a> = ::chord::__private::LeafProxy<'__a, Self> where Self: '__a;

            fn __proxy<'__a>(&'__a mut self, cx: ::chord::__private::Cx<'__a>) -> Self::Proxy<'__a> {
                ::chord::__private::LeafProxy::new(self, cx)
            }

            fn __flush(
                &self,
                node: &mut ::chord::__private::Node,
                path: &mut ::chord::__private::Path,
                out: &mut ::chord::__private::Vec<::chord::__private::Op>,
            ) -> ::chord::__private::Result<()> {
                ::chord::__private::flush_leaf(self, node, path, out)
            }
        }
    }
}
