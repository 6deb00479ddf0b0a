//! A typed, borrowed view of the derive input that keeps the original tokens for spans.

use proc_macro2::Span;
use syn::{Data, DeriveInput, Fields, Ident, Member, Type};

use crate::attr::{self, Ctxt};
use crate::case::RenameRule;

pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: attr::Container,
    pub(crate) shape: Shape<'a>,
}

pub(crate) enum Shape<'a> {
    Struct(Style, Vec<Field<'a>>),
    Enum(Vec<Variant<'a>>),
    Union,
}

/// How a struct or variant writes its fields, as serde does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `{ a, b }`: a JSON object.
    Named,
    /// `(A, B)`: a JSON array.
    Tuple,
    /// `(A)`: the inner value's JSON.
    Newtype,
    /// No fields: `null` (a struct) or the variant's name.
    Unit,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) style: Style,
    pub(crate) fields: Vec<Field<'a>>,
    /// The variant name serde writes.
    pub(crate) json_name: String,
}

/// Where a field's JSON is under its parent's.
pub(crate) enum Seg {
    /// An object member.
    Key(String),
    /// An array element (a tuple's field).
    Index(usize),
    /// The parent's own location (a newtype's only field, or a flattened field, whose
    /// members are the parent's).
    Same,
}

pub(crate) struct Field<'a> {
    pub(crate) original: &'a syn::Field,
    /// `self.member` / `Type { member: .. }`.
    pub(crate) member: Member,
    /// The name bound to the field in generated patterns.
    pub(crate) binding: Ident,
    pub(crate) ty: &'a Type,
    pub(crate) attrs: attr::Field,
    /// Position among the fields serde writes: the key of its node in the dirty tree.
    pub(crate) index: usize,
    pub(crate) seg: Seg,
}

impl Field<'_> {
    /// Whether serde writes it (and so chord tracks it).
    pub(crate) fn tracked(&self) -> bool {
        !self.attrs.skip
    }

    /// Whether serde writes its members among its parent's (`#[serde(flatten)]` on a named
    /// field: serde itself refuses it anywhere else).
    pub(crate) fn flattened(&self) -> bool {
        self.tracked() && self.attrs.flatten.is_some() && matches!(self.member, Member::Named(_))
    }

    /// The member name serde writes, for a named field.
    pub(crate) fn json_name(&self) -> Option<&str> {
        match &self.seg {
            Seg::Key(k) => Some(k),
            _ => None,
        }
    }
}

impl<'a> Input<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Input<'a> {
        let attrs = attr::container(cx, &input.attrs);
        let shape = match &input.data {
            Data::Struct(data) => {
                let (style, fields) = fields_from_syn(cx, &data.fields, attrs.rename_all);
                Shape::Struct(style, fields)
            }
            Data::Enum(data) => Shape::Enum(
                data.variants
                    .iter()
                    .map(|v| {
                        let vattrs = attr::variant(cx, &v.attrs);
                        let json_name = match (&vattrs.rename, attrs.rename_all) {
                            (Some(name), _) => name.clone(),
                            (None, Some(rule)) => rule.apply_to_variant(&unraw(&v.ident)),
                            (None, None) => unraw(&v.ident),
                        };
                        let rule = vattrs.rename_all.or(attrs.rename_all_fields);
                        let (style, fields) = fields_from_syn(cx, &v.fields, rule);
                        Variant {
                            ident: &v.ident,
                            style,
                            fields,
                            json_name,
                        }
                    })
                    .collect(),
            ),
            Data::Union(_) => Shape::Union,
        };
        Input {
            original: input,
            attrs,
            shape,
        }
    }
}

fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

fn fields_from_syn<'a>(
    cx: &Ctxt,
    fields: &'a Fields,
    rename_all: Option<RenameRule>,
) -> (Style, Vec<Field<'a>>) {
    let style = match fields {
        Fields::Named(_) => Style::Named,
        Fields::Unnamed(f) if f.unnamed.len() == 1 => Style::Newtype,
        Fields::Unnamed(_) => Style::Tuple,
        Fields::Unit => Style::Unit,
    };
    let mut index = 0;
    let out = fields
        .iter()
        .enumerate()
        .map(|(position, field)| {
            let attrs = attr::field(cx, &field.attrs);
            let (member, binding, seg) = match &field.ident {
                Some(ident) => {
                    let json = match (&attrs.rename, rename_all) {
                        (Some(name), _) => name.clone(),
                        (None, Some(rule)) => rule.apply_to_field(&unraw(ident)),
                        (None, None) => unraw(ident),
                    };
                    (
                        Member::Named(ident.clone()),
                        Ident::new(&format!("__field_{}", unraw(ident)), Span::call_site()),
                        if attrs.flatten.is_some() {
                            Seg::Same
                        } else {
                            Seg::Key(json)
                        },
                    )
                }
                None => (
                    Member::Unnamed(syn::Index::from(position)),
                    Ident::new(&format!("__field_{position}"), Span::call_site()),
                    if style == Style::Newtype {
                        Seg::Same
                    } else {
                        Seg::Index(index)
                    },
                ),
            };
            let f = Field {
                original: field,
                member,
                binding,
                ty: &field.ty,
                index,
                seg,
                attrs,
            };
            if f.tracked() {
                index += 1;
            }
            f
        })
        .collect();
    (style, out)
}
