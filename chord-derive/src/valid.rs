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
            names(cx, fields, None);
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
                if a.tag.is_some() && a.content.is_none() && v.style == Style::Tuple {
                    cx.error(
                        v.ident,
                        "an internally tagged enum cannot hold a tuple variant (serde refuses to write it); use named fields",
                    );
                }
                let tag = if a.content.is_none() { a.tag.as_deref() } else { None };
                names(cx, &v.fields, tag);
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

/// Reserved and duplicate JSON names among named fields (`tag`: an internal tag's name,
/// which the fields share an object with).
fn names(cx: &Ctxt, fields: &[Field], tag: Option<&str>) {
    let mut seen: HashMap<&str, &Field> = HashMap::new();
    if let Some(tag) = tag {
        for f in fields.iter().filter(|f| f.tracked()) {
            if f.json_name() == Some(tag) {
                cx.error(
                    &f.member,
                    format!("field `{}` serializes as `{tag}`, the enum's tag; paths would be ambiguous", member(f)),
                );
            }
        }
    }
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
