//! Rules that span several attributes or fields.

use std::collections::HashMap;

use crate::ast::{Input, Shape};
use crate::attr::Ctxt;

/// Path segments chord refuses everywhere (they walk a JavaScript replica's prototype chain).
/// The one list: the runtime's `chord::RESERVED` is this array, through `__reserved_names!`.
pub(crate) const RESERVED: [&str; 3] = ["__proto__", "constructor", "prototype"];

pub(crate) fn check(cx: &Ctxt, input: &Input) {
    let fields = match &input.shape {
        Shape::Other(what) => {
            if !input.attrs.opaque {
                cx.error(
                    &input.original.ident,
                    format!(
                        "`#[derive(Tracked)]` tracks structs with named fields; {what} are not supported yet: add `#[chord(opaque)]` to track the whole type as one JSON value"
                    ),
                );
            }
            return;
        }
        Shape::Struct(fields) => fields,
    };
    if input.attrs.opaque {
        return;
    }
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    for field in fields.iter().filter(|f| !f.attrs.skip) {
        if RESERVED.contains(&field.json_name.as_str()) {
            cx.error(
                field.ident,
                format!(
                    "the JSON name `{}` is reserved: chord refuses it as a path segment (it reaches a JavaScript replica's prototype chain); rename the field with `#[serde(rename = \"...\")]`",
                    field.json_name
                ),
            );
        }
        if let Some(first) = seen.insert(&field.json_name, field.ident) {
            cx.error(
                field.ident,
                format!(
                    "fields `{first}` and `{}` both serialize as `{}`; paths would be ambiguous",
                    field.ident, field.json_name
                ),
            );
        }
        if field.ident == "set" {
            cx.error(
                field.ident,
                "a field named `set` would clash with the proxy's `set` method (which replaces the whole struct); rename the Rust field and keep its JSON name with `#[serde(rename = \"set\")]`",
            );
        }
    }
}
