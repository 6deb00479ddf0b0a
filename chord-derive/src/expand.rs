//! Code generation: the proxy types, and the `Tracked` implementation.
//!
//! A struct's proxy is a struct of its fields' proxies, with the same field names (or
//! positions), so that `lane.usage.output_tokens += 1` and disjoint borrows of two fields
//! work as on the struct itself. The price: two fields with the same proxy type can be
//! swapped (`std::mem::swap(&mut s.a, &mut s.b)`), which swaps the handles, not the values.
//! Nothing goes out of sync (each handle still records for the field it points to), but it
//! is not what the line says. No layout refuses the swap and keeps both the operators on a
//! field (`s.a += 1`, which needs `&mut s.a`) and two fields borrowed at once (two `&mut` of
//! one type are all a swap needs), so the generated proxy's documentation says it instead.
//! (`std::mem::take` is refused: no proxy has a `Default`.) An enum's proxy holds the whole value (`set`, `Deref`, a
//! `DerefMut` fallback) and hands out, through `as_mut`, an enum of the current variant's
//! field proxies.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{
    DeriveInput, GenericParam, Generics, Ident, Lifetime, LifetimeParam, Type, WherePredicate,
};

use crate::ast::{Field, Input, Seg, Shape, Style, Variant};
use crate::attr::{Ctxt, With};
use crate::types::{is_option, is_option_is_none, mentions};
use crate::{fallback, typescript, valid};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::default();
    let parsed = Input::from_syn(&cx, input);
    valid::check(&cx, &parsed);
    // After a mistake the derive still expands, with the mistaken attribute ignored, so that
    // code using the type reports the mistake only, not what a stand-in proxy lacks. A union
    // (no fields to follow) and input serde refuses too (no `Serialize` to build on) get the
    // stand-in.
    let stand_in =
        cx.refused_by_serde() || (matches!(parsed.shape, Shape::Union) && !parsed.attrs.opaque);
    let errors = match cx.finish() {
        Ok(()) => None,
        Err(e) if stand_in => return fallback::expand(input, e),
        Err(e) => Some(e.to_compile_error()),
    };
    let tracked = match &parsed.shape {
        _ if parsed.attrs.opaque => opaque(input),
        Shape::Struct(Style::Unit, _) => opaque(input),
        Shape::Struct(_, fields) => tracked_struct(&parsed, fields),
        Shape::Enum(variants) if variants.iter().all(|v| v.fields.is_empty()) => opaque(input),
        Shape::Enum(variants) => tracked_enum(&parsed, variants),
        Shape::Union => unreachable!("validated: unions are opaque or refused"),
    };
    let typescript = typescript::expand(&parsed);
    quote!(#errors #tracked #typescript)
}

/// How chord follows a field.
enum Kind<'f> {
    /// Not serialized: handed out as `&mut T`.
    Skipped,
    /// One JSON value, serialized by serde.
    Opaque,
    /// One JSON value, written by the user's function.
    With(&'f With),
    /// Tracked through its own proxy.
    Tracked,
    /// `#[serde(flatten)]`: tracked through its own proxy, its members at the parent's path.
    Flatten,
}

fn kind<'f>(f: &'f Field) -> Kind<'f> {
    if f.attrs.skip {
        Kind::Skipped
    } else if f.flattened() {
        Kind::Flatten
    } else if let Some(with) = &f.attrs.with {
        Kind::With(with)
    } else if f.attrs.opaque {
        Kind::Opaque
    } else {
        Kind::Tracked
    }
}

/// The user's generics with a bound on every type parameter: `Tracked` where a tracked field
/// uses it, `Serialize` where only opaque fields do.
fn bounded<'f>(
    generics: &Generics,
    fields: impl Iterator<Item = &'f Field<'f>> + Clone,
) -> Generics {
    let mut generics = generics.clone();
    let params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in &params {
        let mut uses = fields.clone().filter(|f| mentions(f.ty, param));
        let tracked = uses
            .clone()
            .any(|f| matches!(kind(f), Kind::Tracked | Kind::Flatten));
        let opaque = uses.any(|f| matches!(kind(f), Kind::Opaque));
        let bound: WherePredicate = if tracked {
            syn::parse_quote!(#param: ::chord::Tracked)
        } else if opaque {
            syn::parse_quote!(#param: ::chord::__private::serde::Serialize)
        } else {
            continue;
        };
        where_clause.predicates.push(bound);
    }
    // A flattened field whose type depends on a parameter must be `Flatten` for it.
    for f in fields.filter(|f| matches!(kind(f), Kind::Flatten)) {
        if params.iter().any(|p| mentions(f.ty, p)) {
            let ty = f.ty;
            where_clause
                .predicates
                .push(syn::parse_quote_spanned!(ty.span()=> #ty: ::chord::__private::Flatten));
        }
    }
    generics
}

/// `generics` with the proxy's lifetime first, and the value outliving it.
fn with_lifetime(generics: &Generics, lifetime: &Lifetime, name: &Ident) -> Generics {
    let mut generics = generics.clone();
    let (_, ty_generics, _) = generics.split_for_impl();
    let outlives: WherePredicate = syn::parse_quote!(#name #ty_generics: #lifetime);
    generics.params.insert(
        0,
        GenericParam::Lifetime(LifetimeParam::new(lifetime.clone())),
    );
    generics.make_where_clause().predicates.push(outlives);
    generics
}

/// The type of a field's proxy.
fn proxy_type(f: &Field, a: &Lifetime) -> TokenStream {
    let ty = f.ty;
    match kind(f) {
        Kind::Skipped => quote!(&#a mut #ty),
        Kind::Opaque | Kind::With(_) => quote!(::chord::__private::LeafProxy<#a, #ty>),
        Kind::Tracked => quote_spanned!(ty.span()=> ::chord::Proxy<#a, #ty>),
        Kind::Flatten => quote_spanned!(ty.span()=> ::chord::Proxy<#a, #ty>),
    }
}

/// `Some(present now)` for a field serde may skip, else `None`; `value` is a reference.
fn present(f: &Field, value: TokenStream) -> TokenStream {
    match &f.attrs.skip_if {
        Some(pred) => quote_spanned! {pred.span()=>
            ::chord::__private::core::option::Option::Some(!#pred(#value))
        },
        None => quote!(::chord::__private::core::option::Option::None),
    }
}

fn present_binding(f: &Field) -> Ident {
    format_ident!("{}_present", f.binding)
}

/// The call that writes a field's JSON with the user's function.
fn with_call(with: &With) -> TokenStream {
    match with {
        With::Module(module) => quote!(#module::serialize),
        With::Function(function) => quote!(#function),
    }
}

/// `let __field_x_present = ...;` for the fields serde may skip (before the bindings move).
fn presents(fields: &[Field]) -> TokenStream {
    let lets = fields
        .iter()
        .filter(|f| f.tracked() && f.attrs.skip_if.is_some())
        .map(|f| {
            let name = present_binding(f);
            let binding = &f.binding;
            let value = present(f, quote!(&*#binding));
            quote!(let #name = #value;)
        });
    quote!(#(#lets)*)
}

/// The expression that builds a field's proxy from its binding (`&mut T`) and `__fields`.
fn construct(f: &Field) -> TokenStream {
    let binding = &f.binding;
    let ty = f.ty;
    let present = if f.attrs.skip_if.is_some() {
        let name = present_binding(f);
        quote!(#name)
    } else {
        quote!(::chord::__private::core::option::Option::None)
    };
    let cx = if f.attrs.skip_if.as_ref().is_some_and(is_option_is_none) && is_option(ty) {
        quote!(__fields.next_option(#present))
    } else {
        quote!(__fields.next(#present))
    };
    match kind(f) {
        Kind::Skipped => quote!(#binding),
        Kind::Opaque => quote!(::chord::__private::leaf_proxy(#binding, #cx)),
        Kind::With(with) => {
            let call = with_call(with);
            quote! {
                ::chord::__private::leaf_proxy_with_json(#binding, #cx, |__v: &#ty| {
                    #call(__v, ::chord::__private::serde_json::value::Serializer).ok()
                })
            }
        }
        Kind::Tracked | Kind::Flatten => quote_spanned! {ty.span()=>
            <#ty as ::chord::Tracked>::__proxy(#binding, #cx)
        },
    }
}

/// The pattern that binds every field of a struct or variant: `{ a: __field_a, 0: __field_0 }`.
fn pattern(fields: &[Field]) -> TokenStream {
    let members = fields.iter().map(|f| {
        let member = &f.member;
        let binding = &f.binding;
        quote!(#member: #binding)
    });
    quote!({ #(#members),* })
}

/// The segment expression of a field (`None` for a newtype's field).
fn seg(f: &Field) -> TokenStream {
    match &f.seg {
        Seg::Key(k) => quote! {
            ::chord::__private::core::option::Option::Some(::chord::__private::Step::Field(#k))
        },
        Seg::Index(i) => quote! {
            ::chord::__private::core::option::Option::Some(::chord::__private::Step::Index(#i))
        },
        Seg::Same => quote!(::chord::__private::core::option::Option::None),
    }
}

/// The match arms of a flush closure: field index to the field's flush. `value` turns a
/// field into a reference expression.
fn flush_arms(fields: &[Field], value: impl Fn(&Field) -> TokenStream) -> TokenStream {
    let arms = fields.iter().filter(|f| f.tracked()).map(|f| {
        let index = f.index as u32;
        let v = value(f);
        let seg = seg(f);
        let present = present(f, v.clone());
        let span = f.ty.span();
        let call = match kind(f) {
            Kind::Opaque => quote_spanned! {span=>
                ::chord::__private::flush_opaque_field(#v, __node, __path, #seg, #present, __out)
            },
            Kind::With(with) => {
                let call = with_call(with);
                quote! {
                    ::chord::__private::flush_json_field(
                        #call(#v, ::chord::__private::serde_json::value::Serializer),
                        __node, __path, #seg, #present, __out)
                }
            }
            _ => {
                let ty = f.ty;
                quote_spanned! {span=>
                    ::chord::__private::flush_field_with(#v, __node, __path, #seg, #present, __out,
                        <#ty as ::chord::Tracked>::__flush)
                }
            }
        };
        quote!(#index => #call,)
    });
    quote! {
        #(#arms)*
        _ => ::chord::__private::core::result::Result::Ok(()),
    }
}

/// `member` under `span`: code about a field that names it at its type's span reports a type
/// that is not `Tracked` as the very error the proxy's field does, which the compiler then
/// shows once.
fn respan(member: &syn::Member, span: Span) -> syn::Member {
    match member {
        syn::Member::Named(ident) => {
            let mut ident = ident.clone();
            ident.set_span(span);
            syn::Member::Named(ident)
        }
        syn::Member::Unnamed(index) => syn::Member::Unnamed(syn::Index {
            index: index.index,
            span,
        }),
    }
}

/// The most fields a struct may have for its proxy to be built inline.
const INLINE_PROXY_FIELDS: usize = 8;

fn tracked_count(fields: &[Field]) -> usize {
    fields.iter().filter(|f| f.tracked()).count()
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

    let (_, ty_generics, _) = original.generics.split_for_impl();
    let bounded = bounded(&original.generics, fields.iter());
    let (impl_generics, _, where_clause) = bounded.split_for_impl();
    let proxy_generics = with_lifetime(&bounded, &a, name);
    let (proxy_impl_generics, proxy_ty_generics, proxy_where) = proxy_generics.split_for_impl();

    let defs = fields.iter().map(|f| {
        let ty = proxy_type(f, &a);
        let fvis = &f.original.vis;
        let doc = match (&f.member, f.json_name(), kind(f)) {
            (_, _, Kind::Skipped) => {
                "Not serialized, so not tracked: plain `&mut` access.".to_owned()
            }
            (m, _, Kind::Flatten) => format!(
                "Records changes to `{}`, whose members serde writes among this struct's \
                 (`#[serde(flatten)]`): their paths are this struct's.",
                m.to_token_stream()
            ),
            (m, Some(json), _) => format!(
                "Records changes to `{}` (JSON `{json}`).",
                m.to_token_stream()
            ),
            (m, None, _) => format!("Records changes to field `{}`.", m.to_token_stream()),
        };
        match respan(&f.member, f.ty.span()) {
            syn::Member::Named(ident) => quote!(#[doc = #doc] #fvis #ident: #ty),
            syn::Member::Unnamed(_) => quote!(#[doc = #doc] #fvis #ty),
        }
    });
    // A last, private field that is always `Sized`: the proxy's size then never depends on
    // its fields' proxies, so a field whose type is not `Tracked` is reported once, at the
    // field, and not again wherever the proxy must be `Sized`.
    let tail = quote!(::chord::__private::core::marker::PhantomData<&#a ()>);
    let (def, tail_member) = match fields.first().map(|f| &f.member) {
        Some(syn::Member::Unnamed(_)) => (
            quote!(#vis struct #proxy #proxy_impl_generics (#(#defs,)* #tail) #proxy_where;),
            syn::Member::Unnamed(syn::Index::from(fields.len())),
        ),
        _ => (
            quote!(#vis struct #proxy #proxy_impl_generics #proxy_where { #(#defs,)* __chord_tail: #tail }),
            syn::Member::Named(format_ident!("__chord_tail")),
        ),
    };

    let pat = pattern(fields);
    let presents = presents(fields);
    let count = tracked_count(fields);
    // A small struct's proxy is built inline where it is asked for: a proxy nested in its
    // parent's is then built in place, not built and copied into the parent's, level by
    // level. (A wide one stays a call: inlined, its many fields cost more than the copy.)
    let proxy_inline = if count <= INLINE_PROXY_FIELDS {
        quote!(#[inline])
    } else {
        quote!()
    };
    let inits = fields.iter().map(|f| {
        let member = respan(&f.member, f.ty.span());
        let init = construct(f);
        quote_spanned!(f.ty.span()=> #member: #init)
    });
    // The statements of `set`, on the proxy `__proxy` (the `Tracked` impl's `__assign` has
    // them too, so that it does not need the inherent impl).
    let assigns: Vec<TokenStream> = fields
        .iter()
        .map(|f| {
            let member = respan(&f.member, f.ty.span());
            let binding = &f.binding;
            let ty = f.ty;
            match kind(f) {
                Kind::Skipped => quote!(*__proxy.#member = #binding;),
                Kind::Opaque | Kind::With(_) => quote!(__proxy.#member.set(#binding);),
                Kind::Tracked | Kind::Flatten => quote_spanned! {ty.span()=>
                    <#ty as ::chord::Tracked>::__assign(&mut __proxy.#member, #binding);
                },
            }
        })
        .collect();
    let arms = flush_arms(fields, |f| {
        let member = &f.member;
        quote!(&self.#member)
    });
    let debug_fields = fields.iter().filter(|f| f.tracked()).map(|f| {
        let label = f.member.to_token_stream().to_string();
        let member = respan(&f.member, f.ty.span());
        quote_spanned!(f.ty.span()=> .field(#label, &self.#member))
    });
    let proxy_name = proxy.to_string();
    // The inherent impl and the `Flatten` impl ask for their fields' types to be `Tracked`
    // (each bound under a binder, so that it is not a trivially false bound, an error of its
    // own): a field type that is not `Tracked` is then reported at the field only, and only
    // these impls go missing, which nothing else needs. (The `Tracked` impl cannot: for a
    // recursive type such bounds would be a cycle.)
    let type_params: Vec<&Ident> = original.generics.type_params().map(|p| &p.ident).collect();
    let field_bounds: Vec<WherePredicate> = fields
        .iter()
        .filter(|f| !type_params.iter().any(|p| mentions(f.ty, p)))
        .filter_map(|f| {
            let ty = f.ty;
            match kind(f) {
                Kind::Tracked | Kind::Flatten => Some(syn::parse_quote_spanned!(ty.span()=>
                    for<'__x> #ty: ::chord::Tracked)),
                _ => None,
            }
        })
        .collect();
    let mut inherent_generics = proxy_generics.clone();
    inherent_generics
        .make_where_clause()
        .predicates
        .extend(field_bounds.iter().cloned());
    let inherent_where = &inherent_generics.where_clause;
    // Only a struct with named fields writes members a parent can take in. The members of
    // its JSON object: its serialized named fields' (and its tag), and its
    // flattened fields' members, which it is `Flatten` only if they are (a bound under a
    // binder, as above, where the type names no parameter).
    let own: Vec<String> = input
        .attrs
        .tag
        .iter()
        .cloned()
        .chain(
            fields
                .iter()
                .filter(|f| f.tracked())
                .filter_map(|f| f.json_name().map(str::to_owned)),
        )
        .collect();
    let flattened_types: Vec<&Type> = fields
        .iter()
        .filter(|f| matches!(kind(f), Kind::Flatten))
        .map(|f| f.ty)
        .collect();
    let mut flatten_generics = bounded.clone();
    for ty in &flattened_types {
        if !type_params.iter().any(|p| mentions(ty, p)) {
            flatten_generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote_spanned!(ty.span()=>
                    for<'__x> #ty: ::chord::__private::Flatten));
        }
    }
    let flatten_where = &flatten_generics.where_clause;
    let flatten = match fields.first().map(|f| &f.member) {
        Some(syn::Member::Unnamed(_)) => quote!(),
        _ => quote! {
            #[automatically_derived]
            #[doc(hidden)]
            impl #impl_generics ::chord::__private::Flatten for #name #ty_generics #flatten_where {
                const MEMBERS: ::chord::__private::Members = ::chord::__private::Members {
                    own: &[#(#own),*],
                    flattened: &[#(&<#flattened_types as ::chord::__private::Flatten>::MEMBERS),*],
                };
            }
        },
    };
    // With a flattened field, compiling the flush refuses a member name that repeats.
    let unique_members = if flattened_types.is_empty() {
        quote!()
    } else {
        quote! {
            #[allow(unused_imports)] // (one of the three is used)
            use ::chord::__private::{FlattenOk as _, FlattenRefused as _, FlattenUntracked as _};
            (&&&::chord::__private::FlattenCheck::<Self>::NEW).unique_members();
        }
    };
    // A flattened field of a type named here is checked to be `Flatten` at the field; one
    // whose type depends on a type parameter, by a bound of the `Tracked` impl.
    let flatten_checks = fields
        .iter()
        .filter(|f| matches!(kind(f), Kind::Flatten))
        .filter(|f| !type_params.iter().any(|p| mentions(f.ty, p)))
        .map(|f| {
            let ty = f.ty;
            quote_spanned! {ty.span()=>
                const _: () = {
                    #[allow(dead_code)]
                    fn __chord_flatten_check() {
                        #[allow(unused_imports)] // (one of the three is used)
                        use ::chord::__private::{FlattenOk as _, FlattenRefused as _, FlattenUntracked as _};
                        (&&&::chord::__private::FlattenCheck::<#ty>::NEW).check();
                    }
                };
            }
        });
    // A field proxy whose type depends on a type parameter is `Debug` only if that
    // parameter's proxy is: the proxy's `Debug` asks for it rather than assume it.
    let mut debug_generics = proxy_generics.clone();
    let params: Vec<Ident> = original
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .collect();
    for f in fields.iter().filter(|f| f.tracked()) {
        if matches!(kind(f), Kind::Tracked | Kind::Flatten)
            && params.iter().any(|p| mentions(f.ty, p))
        {
            let ty = proxy_type(f, &a);
            debug_generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote!(#ty: ::chord::__private::core::fmt::Debug));
        }
    }
    let debug_where = &debug_generics.where_clause;

    let doc_struct = format!(
        "Records changes to a [`{name}`] as intent: a struct of its fields' proxies, obtained \
         from `chord::Tracker::state` or a parent proxy.\n\n\
         Each field is a *handle* to the field of the value, not the value: write through it \
         (`state.n += 1`, `*state.n = 5`, `state.text.push_str(..)`, `state.n.set(5)`). \
         `std::mem::swap(&mut state.a, &mut state.b)` (or `std::mem::replace(&mut state.a, \
         state.b)`) exchanges the handles, not the values: nothing changes, and `state.a` then \
         writes to `b`. To exchange two fields' values, \
         swap through the handles, `std::mem::swap(&mut *state.a, &mut *state.b)`, which \
         sends each field whole."
    );
    let doc_set = format!(
        "Replaces the whole `{name}`, field by field: each field is compared with its accepted \
         value at flush, so only what differs is sent."
    );
    quote! {
        #[doc = #doc_struct]
        #[allow(dead_code)]
        #def

        #[automatically_derived]
        impl #proxy_impl_generics #proxy #proxy_ty_generics #inherent_where {
            #[doc = #doc_set]
            #[allow(clippy::needless_update)]
            pub fn set(&mut self, value: #name #ty_generics) {
                <#name #ty_generics as ::chord::Tracked>::__assign(self, value);
            }
        }

        #[automatically_derived]
        impl #proxy_impl_generics ::chord::__private::core::fmt::Debug for #proxy #proxy_ty_generics #debug_where {
            /// The serialized fields' proxies (fields serde skips are left out).
            fn fmt(&self, f: &mut ::chord::__private::core::fmt::Formatter<'_>) -> ::chord::__private::core::fmt::Result {
                f.debug_struct(#proxy_name) #(#debug_fields)* .finish_non_exhaustive()
            }
        }

        #[automatically_derived]
        impl #impl_generics ::chord::Tracked for #name #ty_generics #where_clause {
            type Proxy<#a> = #proxy #proxy_ty_generics where Self: #a;

            #proxy_inline
            fn __proxy<#a>(&#a mut self, __cx: ::chord::__private::Cx<#a>) -> Self::Proxy<#a> {
                let #name #pat = self;
                #presents
                #[allow(unused_mut, unused_variables)]
                let mut __fields = __cx.fields(#count);
                #proxy { #(#inits,)* #tail_member: ::chord::__private::core::marker::PhantomData }
            }

            fn __flush(
                &self,
                node: &mut ::chord::__private::Node,
                path: &::chord::__private::Trail<'_>,
                out: &mut ::chord::__private::Out<'_>,
            ) -> ::chord::__private::Result<()> {
                #unique_members
                ::chord::__private::flush_struct(self, node, path, out, self)
            }

            #[allow(clippy::needless_update)]
            fn __assign<#a>(__proxy: &mut Self::Proxy<#a>, value: Self) where Self: #a {
                let #name #pat = value;
                #(#assigns)*
            }
        }

        #[automatically_derived]
        impl #impl_generics ::chord::__private::FlushField for #name #ty_generics #where_clause {
            #[inline(always)]
            fn __flush_field(
                &self,
                __index: u32,
                __node: &mut ::chord::__private::Node,
                __path: &::chord::__private::Trail<'_>,
                __out: &mut ::chord::__private::Out<'_>,
            ) -> ::chord::__private::Result<()> {
                match __index {
                    #arms
                }
            }
        }

        #flatten
        #(#flatten_checks)*
    }
}

/// The segments between an enum's path and a variant's fields, by serde representation.
fn variant_prefix(input: &Input, v: &Variant) -> TokenStream {
    let a = &input.attrs;
    let key = |k: &str| quote!(::chord::__private::Step::Field(#k));
    let segs: Vec<TokenStream> = if a.untagged {
        Vec::new()
    } else if let (Some(_), Some(content)) = (&a.tag, &a.content) {
        vec![key(content)]
    } else if a.tag.is_some() {
        Vec::new()
    } else {
        vec![key(&v.json_name)]
    };
    quote!(&[#(#segs),*])
}

fn tracked_enum(input: &Input, variants: &[Variant]) -> TokenStream {
    let original = input.original;
    let name = &original.ident;
    let vis = &original.vis;
    let proxy = input
        .attrs
        .proxy
        .clone()
        .unwrap_or_else(|| format_ident!("{}Proxy", name));
    let variant_enum = format_ident!("{}Mut", proxy.to_string().trim_end_matches("Proxy"));
    let a = Lifetime::new("'__a", Span::call_site());

    let (_, ty_generics, _) = original.generics.split_for_impl();
    let all_fields: Vec<&Field> = variants.iter().flat_map(|v| v.fields.iter()).collect();
    let bounded = bounded(&original.generics, all_fields.iter().copied());
    let (impl_generics, _, where_clause) = bounded.split_for_impl();
    let proxy_generics = with_lifetime(&bounded, &a, name);
    let (proxy_impl_generics, proxy_ty_generics, proxy_where) = proxy_generics.split_for_impl();

    let mut_variants = variants.iter().map(|v| {
        let ident = v.ident;
        let types = v.fields.iter().map(|f| proxy_type(f, &a));
        match v.style {
            Style::Unit => quote!(#ident),
            Style::Named => {
                let names = v.fields.iter().map(|f| &f.member);
                quote!(#ident { #(#names: #types),* })
            }
            Style::Tuple | Style::Newtype => quote!(#ident(#(#types),*)),
        }
    });
    let as_mut_arms = variants.iter().map(|v| {
        let ident = v.ident;
        if v.style == Style::Unit {
            return quote!(#name::#ident => #variant_enum::#ident,);
        }
        let pat = pattern(&v.fields);
        let presents = presents(&v.fields);
        let count = tracked_count(&v.fields);
        let inits = v.fields.iter().map(|f| {
            let member = &f.member;
            let init = construct(f);
            quote!(#member: #init)
        });
        quote! {
            #name::#ident #pat => {
                #presents
                #[allow(unused_mut, unused_variables)]
                let mut __fields = __cx.fields(#count);
                #variant_enum::#ident { #(#inits),* }
            }
        }
    });
    let flush_arms_all = variants.iter().enumerate().map(|(number, v)| {
        let number = number as u32;
        let ident = v.ident;
        let prefix = variant_prefix(input, v);
        let pat = match v.style {
            Style::Unit => quote!(),
            _ => pattern(&v.fields),
        };
        let arms = flush_arms(&v.fields, |f| {
            let binding = &f.binding;
            quote!(#binding)
        });
        quote! {
            #[allow(unused_variables)]
            #name::#ident #pat => ::chord::__private::flush_enum(self, #number, node, path, out, |__index, __node, __path, __out| {
                ::chord::__private::with_segs(__path, #prefix, |__path| match __index {
                    #arms
                })
            }),
        }
    });
    let numbers = variants.iter().enumerate().map(|(number, v)| {
        let number = number as u32;
        let ident = v.ident;
        let pat = match v.style {
            Style::Unit => quote!(),
            Style::Named => quote!({ .. }),
            Style::Tuple | Style::Newtype => quote!((..)),
        };
        quote!(#name::#ident #pat => #number,)
    });
    let variant_of = quote! {
        (|__v: &#name #ty_generics| -> u32 { match __v { #(#numbers)* } })
    };
    let doc_proxy = format!(
        "Records changes to a [`{name}`]: `set` replaces it (one `s` when the variant changes), \
         [`as_mut`]({proxy}::as_mut) edits inside the current variant field by field, and any \
         other change through `&mut` is compared at flush."
    );
    let doc_mut = format!("The current variant of a [`{name}`], with its fields' proxies.");
    let b = Lifetime::new("'__b", Span::call_site());
    let mut_generics = with_lifetime(&bounded, &b, name);
    let (_, mut_ty_generics, _) = mut_generics.split_for_impl();
    quote! {
        #[doc = #doc_proxy]
        #vis struct #proxy #proxy_impl_generics #proxy_where {
            __value: &#a mut #name #ty_generics,
            __cx: ::chord::__private::Cx<#a>,
        }

        #[doc = #doc_mut]
        #[allow(dead_code)]
        #vis enum #variant_enum #proxy_impl_generics #proxy_where {
            #(#mut_variants),*
        }

        #[automatically_derived]
        impl #proxy_impl_generics #proxy #proxy_ty_generics #proxy_where {
            /// Replaces the value: compared with the accepted one at flush (one `s` when the
            /// variant changes).
            pub fn set(&mut self, value: #name #ty_generics) {
                let __variant = #variant_of(&*self.__value);
                ::chord::__private::record_enum(&*self.__value, __variant, &mut self.__cx);
                *self.__value = value;
            }

            /// The current variant, with proxies for its fields: edits inside it are
            /// field-level ops.
            pub fn as_mut<#b>(&#b mut self) -> #variant_enum #mut_ty_generics {
                #[allow(unused_variables)]
                let __cx = self.__cx.same();
                match &mut *self.__value {
                    #(#as_mut_arms)*
                }
            }
        }

        #[automatically_derived]
        impl #proxy_impl_generics ::chord::__private::core::ops::Deref for #proxy #proxy_ty_generics #proxy_where {
            type Target = #name #ty_generics;
            fn deref(&self) -> &Self::Target {
                self.__value
            }
        }

        #[automatically_derived]
        impl #proxy_impl_generics ::chord::__private::core::ops::DerefMut for #proxy #proxy_ty_generics #proxy_where {
            /// Any change through `&mut`: compared with the accepted value at flush.
            fn deref_mut(&mut self) -> &mut Self::Target {
                let __variant = #variant_of(&*self.__value);
                ::chord::__private::record_enum(&*self.__value, __variant, &mut self.__cx);
                self.__value
            }
        }

        #[automatically_derived]
        impl #proxy_impl_generics ::chord::__private::core::fmt::Debug for #proxy #proxy_ty_generics #proxy_where {
            /// The value as JSON (what the replicas hold).
            fn fmt(&self, f: &mut ::chord::__private::core::fmt::Formatter<'_>) -> ::chord::__private::core::fmt::Result {
                ::chord::__private::debug_json(&*self.__value, f)
            }
        }

        #[automatically_derived]
        impl #impl_generics ::chord::Tracked for #name #ty_generics #where_clause {
            type Proxy<#a> = #proxy #proxy_ty_generics where Self: #a;

            fn __proxy<#a>(&#a mut self, __cx: ::chord::__private::Cx<#a>) -> Self::Proxy<#a> {
                #proxy { __value: self, __cx }
            }

            fn __flush(
                &self,
                node: &mut ::chord::__private::Node,
                path: &::chord::__private::Trail<'_>,
                out: &mut ::chord::__private::Out<'_>,
            ) -> ::chord::__private::Result<()> {
                match self {
                    #(#flush_arms_all)*
                }
            }

            fn __assign<#a>(proxy: &mut Self::Proxy<#a>, value: Self) where Self: #a {
                proxy.set(value);
            }
        }
    }
}

fn opaque(input: &DeriveInput) -> TokenStream {
    let name = &input.ident;
    let mut generics = input.generics.clone();
    let params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
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
                ::chord::__private::leaf_proxy(self, cx)
            }

            fn __flush(
                &self,
                node: &mut ::chord::__private::Node,
                path: &::chord::__private::Trail<'_>,
                out: &mut ::chord::__private::Out<'_>,
            ) -> ::chord::__private::Result<()> {
                ::chord::__private::flush_leaf(self, node, path, out)
            }

            fn __assign<'__a>(proxy: &mut Self::Proxy<'__a>, value: Self) where Self: '__a {
                proxy.set(value);
            }
        }
    }
}
