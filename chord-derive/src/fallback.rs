//! What is emitted beside a compile error: the errors, plus a stand-in `Tracked`
//! implementation that asks for nothing more of the type, so that code using it reports the
//! real mistake only, not twenty follow-on errors about a missing trait.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub(crate) fn expand(input: &DeriveInput, error: syn::Error) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let errors = error.to_compile_error();
    let typescript = crate::typescript::fallback(input);
    quote! {
        #errors
        #typescript

        #[automatically_derived]
        impl #impl_generics ::chord::Tracked for #name #ty_generics #where_clause {
            type Proxy<'__a> = () where Self: '__a;

            fn __proxy<'__a>(&'__a mut self, _: ::chord::__private::Cx<'__a>) {}

            fn __flush(
                &self,
                _: &mut ::chord::__private::Node,
                _: &::chord::__private::Trail<'_>,
                _: &mut ::chord::__private::Out<'_>,
            ) -> ::chord::__private::Result<()> {
                ::chord::__private::core::result::Result::Ok(())
            }

            fn __assign<'__a>(_: &mut (), _: Self) where Self: '__a {}
        }
    }
}
