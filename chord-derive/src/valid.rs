//! Rules that span several attributes, fields or variants.

use std::collections::HashMap;

use crate::ast::{Field, Input, Seg, Shape, Style};
use crate::attr::Ctxt;

/// Path segments chord refuses everywhere (they walk a JavaScript replica's prototype chain).
/// The one list: the runtime's `chord::RESERVED` is this array, through `__reserved_names!`.
pub(crate) const RESERVED: [&str; 3] = ["__proto__", "constructor", "prototype"];

pub(crate) fn check(cx: &Ctxt, input: &Input) {
    if input.attrs.opaque {
        return;
    }
    match &input.shape {
        Shape::Union => cx.error(
            &input.original.ident,
            "`#[derive(Tracked)]` cannot follow a union's JSON: add `#[chord(opaque)]` to track the whole type as one JSON value",
        ),
        Shape::Struct(style, fields) => {
            newtype(cx, *style, fields);
            names(cx, fields);
            flattened(cx, fields);
        }
        Shape::Enum(variants) => {
            let a = &input.attrs;
            if let Some(content) = &a.content {
                if RESERVED.contains(&content.as_str()) {
                    cx.error(
                        &input.original.ident,
                        format!("the content name `{content}` is reserved: chord refuses it as a path segment (it reaches a JavaScript replica's prototype chain)"),
                    );
                }
            }
            let external = a.tag.is_none() && !a.untagged;
            for v in variants {
                newtype(cx, v.style, &v.fields);
                if external && v.style != Style::Unit && RESERVED.contains(&v.json_name.as_str()) {
                    cx.error(
                        v.ident,
                        format!("the variant name `{}` is reserved: chord refuses it as a path segment (it reaches a JavaScript replica's prototype chain); rename it with `#[serde(rename = \"...\")]`", v.json_name),
                    );
                }
                // (serde itself refuses a tuple variant under an internal tag, and a field
                // named like the tag.)
                names(cx, &v.fields);
                flattened(cx, &v.fields);
            }
        }
    }
}

/// A newtype's only field is its JSON: skipping it leaves nothing to follow.
fn newtype(cx: &Ctxt, style: Style, fields: &[Field]) {
    if style == Style::Newtype && fields.iter().any(|f| !f.tracked()) {
        cx.error(
            fields[0].original,
            "a newtype's only field cannot be skipped: its JSON is the whole value",
        );
    }
}

/// What cannot go with `#[serde(flatten)]`: a flattened field has no path of its own, so it
/// cannot be one opaque value, nor be written by a function, nor appear and disappear.
fn flattened(cx: &Ctxt, fields: &[Field]) {
    for f in fields.iter().filter(|f| f.flattened()) {
        let Some(span) = f.attrs.flatten else {
            continue;
        };
        let why = if f.attrs.opaque {
            "`#[chord(opaque)]` tracks a field as one value at its own path, and a flattened field has none (its members are its parent's); remove `#[chord(opaque)]` and derive `Tracked` on its type, whose fields chord then follows at the parent's paths"
        } else if f.attrs.with.is_some() {
            "chord cannot follow members a function writes into the parent; remove `#[serde(flatten)]`, or the function"
        } else if f.attrs.skip_if.is_some() {
            "a flattened field's members would appear and disappear among the parent's all at once, which chord cannot follow; remove `skip_serializing_if` (or `#[serde(flatten)]`)"
        } else {
            continue;
        };
        cx.push(syn::Error::new(
            span,
            format!("unsupported `#[serde(flatten)]` here: {why}"),
        ));
    }
}

/// Reserved and duplicate JSON names among named fields.
fn names(cx: &Ctxt, fields: &[Field]) {
    let mut seen: HashMap<&str, &Field> = HashMap::new();
    for field in fields.iter().filter(|f| f.tracked()) {
        let Seg::Key(json) = &field.seg else { continue };
        if RESERVED.contains(&json.as_str()) {
            cx.error(
                &field.member,
                format!(
                    "the JSON name `{json}` is reserved: chord refuses it as a path segment (it reaches a JavaScript replica's prototype chain); rename the field with `#[serde(rename = \"...\")]`"
                ),
            );
        }
        if let Some(first) = seen.insert(json, field) {
            cx.error(
                &field.member,
                format!(
                    "fields `{}` and `{}` both serialize as `{json}`; paths would be ambiguous",
                    member(first),
                    member(field)
                ),
            );
        }
    }
}

fn member(f: &Field) -> String {
    match &f.member {
        syn::Member::Named(i) => i.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}
