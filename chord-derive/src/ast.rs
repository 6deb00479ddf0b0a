//! A typed, borrowed view of the derive input that keeps the original tokens for spans.

use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::attr::{self, Ctxt};

pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: attr::Container,
    pub(crate) shape: Shape<'a>,
}

pub(crate) enum Shape<'a> {
    /// A struct with named fields.
    Struct(Vec<Field<'a>>),
    /// Anything else; only trackable as an opaque value.
    Other(&'static str),
}

pub(crate) struct Field<'a> {
    pub(crate) original: &'a syn::Field,
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) attrs: attr::Field,
    /// Position among the struct's fields: the key of its node in the dirty tree.
    pub(crate) index: u32,
    /// The member name serde writes.
    pub(crate) json_name: String,
}

impl<'a> Input<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Input<'a> {
        let attrs = attr::container(cx, &input.attrs);
        let shape = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => Shape::Struct(
                    named
                        .named
                        .iter()
                        .enumerate()
                        .map(|(i, f)| Field::from_syn(cx, f, i, &attrs))
                        .collect(),
                ),
                Fields::Unnamed(_) => Shape::Other("tuple structs"),
                Fields::Unit => Shape::Other("unit structs"),
            },
            Data::Enum(_) => Shape::Other("enums"),
            Data::Union(_) => Shape::Other("unions"),
        };
        Input {
            original: input,
            attrs,
            shape,
        }
    }
}

impl<'a> Field<'a> {
    fn from_syn(
        cx: &Ctxt,
        field: &'a syn::Field,
        index: usize,
        container: &attr::Container,
    ) -> Field<'a> {
        let ident = field.ident.as_ref().expect("named fields have identifiers");
        let attrs = attr::field(cx, &field.attrs);
        let unraw = ident.to_string().trim_start_matches("r#").to_owned();
        let json_name = match (&attrs.rename, container.rename_all) {
            (Some(name), _) => name.clone(),
            (None, Some(rule)) => rule.apply_to_field(&unraw),
            (None, None) => unraw,
        };
        Field {
            original: field,
            ident,
            ty: &field.ty,
            attrs,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            json_name,
        }
    }
}
