//! Attributes: `#[chord(..)]`, and the `#[serde(..)]` attributes that change the JSON shape.
//!
//! serde attributes that only affect deserialization (`default`, `alias`, ...) are skipped;
//! those that would make chord's paths differ from the JSON are refused here, at the
//! attribute, with what to do instead.

use std::cell::RefCell;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, ExprPath, Ident, LitStr, Token};

use crate::case::{RenameRule, RULES};

/// Collects errors so that every attribute mistake is reported at once (serde's `Ctxt`).
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Option<syn::Error>>,
    /// A mistake serde's derive refuses too: it then writes no `Serialize` implementation,
    /// so the derive's own output would only add errors about that.
    serde_refuses: std::cell::Cell<bool>,
}

impl Ctxt {
    pub(crate) fn error(&self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn push(&self, e: syn::Error) {
        let mut errors = self.errors.borrow_mut();
        match errors.as_mut() {
            Some(all) => all.combine(e),
            None => *errors = Some(e),
        }
    }

    /// Notes that serde's derive refuses this input as well.
    pub(crate) fn serde_refuses(&self) {
        self.serde_refuses.set(true);
    }

    /// Whether serde's derive refuses this input as well.
    pub(crate) fn refused_by_serde(&self) -> bool {
        self.serde_refuses.get()
    }

    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        match self.errors.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Type-level attributes.
#[derive(Default)]
pub(crate) struct Container {
    pub(crate) rename_all: Option<RenameRule>,
    /// `rename_all_fields`: the rule for the fields of every struct variant.
    pub(crate) rename_all_fields: Option<RenameRule>,
    /// `tag = "..."`: internally (or, with `content`, adjacently) tagged.
    pub(crate) tag: Option<String>,
    pub(crate) content: Option<String>,
    pub(crate) untagged: bool,
    pub(crate) opaque: bool,
    pub(crate) proxy: Option<Ident>,
    /// `rename = "..."`: the name serde knows the type by (the value of a struct's `tag`,
    /// and its TypeScript name).
    pub(crate) rename: Option<String>,
    /// `#[chord(ts = "...")]`: the type's TypeScript declaration, as written.
    pub(crate) ts: Option<LitStr>,
}

/// Variant-level attributes.
#[derive(Default)]
pub(crate) struct Variant {
    pub(crate) rename: Option<String>,
    pub(crate) rename_all: Option<RenameRule>,
}

/// How a field's JSON is written by a function of the user's (tracked as one value).
pub(crate) enum With {
    /// `with = "module"`: `module::serialize`.
    Module(ExprPath),
    /// `serialize_with = "function"`.
    Function(ExprPath),
}

/// Field-level attributes.
#[derive(Default)]
pub(crate) struct Field {
    pub(crate) rename: Option<String>,
    pub(crate) skip: bool,
    pub(crate) skip_if: Option<ExprPath>,
    pub(crate) opaque: bool,
    pub(crate) with: Option<With>,
    /// `#[serde(flatten)]` (where it is written): the field's members are written among its
    /// parent's.
    pub(crate) flatten: Option<Span>,
    /// `#[chord(ts = "...")]`: the field's TypeScript type, as written.
    pub(crate) ts: Option<LitStr>,
}

/// Skips the value of a serde attribute chord has no use for.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// Reads `name = "x"` or `name(serialize = "x", deserialize = "y")`: the serialize side.
fn serialize_name(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") {
            found = Some(inner.value()?.parse()?);
        } else {
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    Ok(found)
}

fn refused(cx: &Ctxt, meta: &ParseNestedMeta, name: &str, why: &str) {
    cx.error(&meta.path, format!("unsupported `#[serde({name})]`: {why}"));
}

/// Reads a `rename_all`-style rule, reporting an unknown one under its literal.
fn rule(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<RenameRule>> {
    let Some(lit) = serialize_name(meta)? else {
        return Ok(None);
    };
    match RenameRule::from_str(&lit.value()) {
        Some(rule) => Ok(Some(rule)),
        None => {
            let names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
            cx.serde_refuses();
            cx.error(
                &lit,
                format!(
                    "unknown rename rule `{}`: expected one of {}",
                    lit.value(),
                    names.join(", ")
                ),
            );
            Ok(None)
        }
    }
}

pub(crate) fn variant(cx: &Ctxt, attrs: &[Attribute]) -> Variant {
    let mut out = Variant::default();
    for attr in attrs {
        if attr.path().is_ident("serde") {
            let result = attr.parse_nested_meta(|meta| {
                let name = meta.path.to_token_stream().to_string();
                match name.as_str() {
                    "rename" => {
                        if let Some(lit) = serialize_name(&meta)? {
                            out.rename = Some(lit.value());
                        }
                    }
                    "rename_all" => out.rename_all = rule(cx, &meta)?,
                    "untagged" | "with" | "serialize_with" | "skip" | "skip_serializing" => {
                        skip_value(&meta)?;
                        refused(
                            cx,
                            &meta,
                            &name,
                            "chord cannot follow this variant's JSON; mark the enum `#[chord(opaque)]` to track it as one value",
                        );
                    }
                    _ => skip_value(&meta)?,
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        } else if attr.path().is_ident("chord") {
            let result = attr.parse_nested_meta(|meta| {
                skip_value(&meta)?;
                cx.error(
                    &meta.path,
                    format!(
                        "unknown chord attribute `{}`: chord has no attributes for variants",
                        meta.path.to_token_stream()
                    ),
                );
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        }
    }
    out
}

pub(crate) fn container(cx: &Ctxt, attrs: &[Attribute]) -> Container {
    let mut out = Container::default();
    for attr in attrs {
        if attr.path().is_ident("serde") {
            let result = attr.parse_nested_meta(|meta| {
                let name = meta.path.to_token_stream().to_string();
                match name.as_str() {
                    "rename" => {
                        if let Some(lit) = serialize_name(&meta)? {
                            out.rename = Some(lit.value());
                        }
                    }
                    "rename_all" => out.rename_all = rule(cx, &meta)?,
                    "rename_all_fields" => out.rename_all_fields = rule(cx, &meta)?,
                    "tag" => out.tag = Some(meta.value()?.parse::<LitStr>()?.value()),
                    "content" => out.content = Some(meta.value()?.parse::<LitStr>()?.value()),
                    "untagged" => out.untagged = true,
                    "transparent" => refused(
                        cx,
                        &meta,
                        "transparent",
                        "the struct's JSON is its only field's, so field paths would lie; remove it, or mark the type `#[chord(opaque)]`",
                    ),
                    "into" => {
                        skip_value(&meta)?;
                        refused(
                            cx,
                            &meta,
                            "into",
                            "the JSON is another type's, so field paths would lie; mark the type `#[chord(opaque)]` to track it as one value",
                        );
                    }
                    "remote" => {
                        skip_value(&meta)?;
                        refused(cx, &meta, "remote", "derive `Tracked` on the type itself");
                    }
                    _ => skip_value(&meta)?,
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        } else if attr.path().is_ident("chord") {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("opaque") {
                    out.opaque = true;
                } else if meta.path.is_ident("ts") {
                    out.ts = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("proxy") {
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<Ident>() {
                        Ok(ident) => out.proxy = Some(ident),
                        Err(_) => cx.error(&lit, "`proxy` must name a type, e.g. `#[chord(proxy = \"LaneProxy\")]`"),
                    }
                } else {
                    skip_value(&meta)?;
                    cx.error(
                        &meta.path,
                        format!(
                            "unknown chord attribute `{}`: on a type, chord accepts `opaque`, `proxy = \"Name\"` and `ts = \"...\"`",
                            meta.path.to_token_stream()
                        ),
                    );
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        }
    }
    out
}

pub(crate) fn field(cx: &Ctxt, attrs: &[Attribute]) -> Field {
    let mut out = Field::default();
    for attr in attrs {
        if attr.path().is_ident("serde") {
            let result = attr.parse_nested_meta(|meta| {
                let name = meta.path.to_token_stream().to_string();
                match name.as_str() {
                    "rename" => {
                        if let Some(lit) = serialize_name(&meta)? {
                            out.rename = Some(lit.value());
                        }
                    }
                    "skip" | "skip_serializing" => out.skip = true,
                    "skip_serializing_if" => {
                        let lit: LitStr = meta.value()?.parse()?;
                        match lit.parse::<ExprPath>() {
                            Ok(path) => out.skip_if = Some(path),
                            Err(e) => cx.push(syn::Error::new_spanned(&lit, e)),
                        }
                    }
                    "flatten" => out.flatten = Some(meta.path.span()),
                    "with" | "serialize_with" => {
                        let lit: LitStr = meta.value()?.parse()?;
                        match lit.parse::<ExprPath>() {
                            Ok(path) if name == "with" => out.with = Some(With::Module(path)),
                            Ok(path) => out.with = Some(With::Function(path)),
                            Err(e) => cx.push(syn::Error::new_spanned(&lit, e)),
                        }
                    }
                    "getter" => {
                        skip_value(&meta)?;
                        refused(
                            cx,
                            &meta,
                            "getter",
                            "chord tracks the fields themselves; remove it",
                        );
                    }
                    _ => skip_value(&meta)?,
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        } else if attr.path().is_ident("chord") {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("opaque") {
                    out.opaque = true;
                } else if meta.path.is_ident("ts") {
                    out.ts = Some(meta.value()?.parse()?);
                } else {
                    skip_value(&meta)?;
                    cx.error(
                        &meta.path,
                        format!(
                            "unknown chord attribute `{}`: on a field, chord accepts `opaque` and `ts = \"...\"`",
                            meta.path.to_token_stream()
                        ),
                    );
                }
                Ok(())
            });
            if let Err(e) = result {
                cx.push(e);
            }
        }
    }
    out
}
