//! TypeScript declarations of a tracked state's JSON, generated from its Rust types.
//!
//! In a browser, a replica's value is plain JSON: without declarations it is `unknown`, and
//! re-typing the Rust structs by hand drifts from them. [`declarations`] writes the
//! declarations of a type and of everything it references, deduplicated and in dependency
//! order, as a `.d.ts` file's text; [`write_declarations`] writes that file.
//!
//! ```
//! use chord::Tracked;
//! use serde::Serialize;
//!
//! /// What a browser renders.
//! #[derive(Tracked, Serialize)]
//! #[serde(rename_all = "camelCase")]
//! struct Lane {
//!     status: Status,
//!     #[serde(skip_serializing_if = "Option::is_none")]
//!     streaming_text: Option<String>,
//!     output_tokens: u64,
//! }
//!
//! #[derive(Tracked, Serialize)]
//! #[serde(tag = "state", rename_all = "camelCase")]
//! enum Status {
//!     Idle,
//!     Running { tool: String },
//! }
//!
//! let ts = chord::typescript::declarations::<Lane>()?;
//! assert!(ts.contains(
//!     "export type Status = { state: \"idle\" } | { state: \"running\"; tool: string };"
//! ));
//! assert!(ts.contains(
//!     "/** What a browser renders. */\n\
//!      export type Lane = {\n  \
//!        status: Status;\n  \
//!        streamingText?: string;\n  \
//!        outputTokens: number;\n\
//!      };"
//! ));
//! # Ok::<(), chord::typescript::Error>(())
//! ```
//!
//! A page then types the replica's value with the generated file, in TypeScript
//! (`import type { Lane } from "./lane"`) or in plain JavaScript with JSDoc
//! (`/** @type {import('./lane').Lane} */`).
//!
//! # Where the declarations come from
//!
//! `#[derive(Tracked)]` emits them. It already reads every serde attribute that shapes the
//! JSON (it must, for its paths to be the JSON's), so the declared type is the one that
//! chord's ops and `serde_json::to_value` produce, with no second derive on every type.
//! [ts-rs](https://docs.rs/ts-rs) and [specta](https://docs.rs/specta) were the
//! alternatives; both need their own derive beside `Tracked` on every type (and a second
//! reading of the serde attributes, which can disagree with the one chord's paths follow),
//! and both differ from the JSON chord sends where a page notices: ts-rs, by design, declares
//! a `skip_serializing_if` field as always present (unless it is also `#[serde(default)]`),
//! and specta declares the union of what a type serializes to and what it deserializes from
//! (`field?: T | null` for an `Option` chord never sends as `null`). Types the derive cannot
//! see (a field of another crate's type) are the price: they are `unknown` unless named.
//!
//! # How Rust types are declared
//!
//! | Rust | TypeScript |
//! | --- | --- |
//! | a struct with named fields | `{ name: T; ... }` with serde's names (`rename`, `rename_all`); a skipped field is left out; a `skip_serializing_if` field is optional (`name?: T`), and `Option<T>` skipped when `None` is `name?: T` |
//! | a tuple struct, a tuple | `[A, B]` |
//! | a newtype struct | its field's type |
//! | a unit struct, `()`, `PhantomData` | `null` |
//! | an enum | the union of its variants, in serde's representation: external (`"Unit"`, `{ Variant: T }`), `tag` (`{ tag: "Variant"; ... }`), `tag` + `content` (`{ tag: "Variant"; content: T }`), `untagged` (the variant's own JSON); `rename`, `rename_all`, `rename_all_fields` |
//! | `Option<T>` | `T \| null` |
//! | `Vec`, `VecDeque`, slices, arrays, `BTreeSet`, `HashSet` | `T[]` |
//! | `BTreeMap`, `HashMap` (chord sends string keys only) | `{ [key: string]: V }` |
//! | `String`, `str`, `char`, `PathBuf`, IP and socket addresses | `string` |
//! | `bool` | `boolean` |
//! | every integer and float type, `u64`, `i64`, `u128` included | `number` |
//! | [`serde_json::Value`] | `JsonValue`, declared as `null \| boolean \| number \| string \| JsonValue[] \| { [key: string]: JsonValue }` |
//! | `Box`, `Rc`, `Arc`, `Cow`, `&T`, `Wrapping`, `Reverse` | the inner type |
//! | `Duration` | `{ secs: number; nanos: number }` |
//! | a generic type | a generic declaration, `Page<T>`, used as `Page<string>` |
//! | a field whose type has no [`TypeScript`] implementation, a `#[serde(with = "...")]` field | `unknown` |
//!
//! Integers are `number` because that is what `JSON.parse` makes of them. In JS-safe mode
//! (a tracker's default, [`Tracker::set_js_safe`](crate::Tracker::set_js_safe)) chord refuses
//! to send an integer beyond ±(2^53 − 1), so every `number` a replica receives is exact; with
//! JS-safe mode off, a JavaScript replica rounds larger integers. An integer beyond 64 bits
//! is refused in both modes.
//!
//! A declared type takes its Rust name, or its `#[serde(rename = "...")]`; two types with
//! one name are an [`Error::NameClash`]. Rust doc comments on types and named fields become
//! JSDoc comments.
//!
//! # Types chord does not know
//!
//! A `#[chord(opaque)]` field, or a field of a type chord has no built-in for, is declared
//! through that type's [`TypeScript`] implementation, and as `unknown` when there is none
//! (never a compile error). For a type of your own, implement the trait:
//!
//! ```
//! use chord::typescript::{Declarations, TsType, TypeScript};
//!
//! /// Serialized as `"#rrggbb"` by a hand-written `Serialize`.
//! struct Color(u8, u8, u8);
//!
//! impl TypeScript for Color {
//!     fn ts_type(decls: &mut Declarations) -> TsType {
//!         // Declared once as `export type Color = string;`, referred to as `Color`.
//!         decls.declare(concat!(module_path!(), "::Color"), "Color", |_| TsType::string())
//!     }
//! }
//!
//! assert_eq!(
//!     chord::typescript::declarations::<Vec<Color>>()?,
//!     format!("{}export type Color = string;\n", chord::typescript::HEADER)
//! );
//! # Ok::<(), chord::typescript::Error>(())
//! ```
//!
//! For a type of another crate (which the orphan rule keeps you from implementing a trait of
//! chord's for), mark the field `#[chord(ts = "string")]`: the text is its TypeScript type,
//! as is. On a type, `#[chord(ts = "...")]` is the whole type's declaration (for an opaque
//! type with a hand-written `Serialize`, whose JSON the derive cannot see).
//!
//! # Writing the file
//!
//! The declarations depend on the application's types, so the application writes them: a
//! flag of its own (the repository's main example, `agent_lane`, takes
//! `--types PATH`), a build script, or a test that compares the checked-in file with
//! [`declarations`] so that it never drifts:
//!
//! ```no_run
//! # #[derive(chord::Tracked, serde::Serialize)] struct Lane { text: String }
//! // In a test: regenerate with `CHORD_WRITE_TYPES=1 cargo test`.
//! let path = "web/lane.d.ts";
//! if std::env::var_os("CHORD_WRITE_TYPES").is_some() {
//!     chord::typescript::write_declarations::<Lane>(path)?;
//! }
//! assert_eq!(std::fs::read_to_string(path)?, chord::typescript::declarations::<Lane>()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(crate) mod derived;

/// A Rust type whose JSON has a TypeScript type.
///
/// `#[derive(Tracked)]` implements it; chord implements it for the std and serde_json types
/// in the [module's table](self#how-rust-types-are-declared).
pub trait TypeScript {
    /// The TypeScript type of this type's JSON, declaring in `decls` the named types it
    /// refers to.
    fn ts_type(decls: &mut Declarations) -> TsType;
}

/// A TypeScript type expression, written with the precedence and layout a `.d.ts` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TsType(Repr);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Repr {
    Keyword(&'static str),
    /// A string literal type, held unquoted.
    Literal(String),
    /// A declared type, with its type arguments.
    Named(String, Vec<TsType>),
    Array(Box<TsType>),
    Tuple(Vec<TsType>),
    Object(Vec<Member>),
    /// An object with any string keys.
    Map(Box<TsType>),
    Union(Vec<TsType>),
    Intersection(Vec<TsType>),
    Raw(String),
}

/// A member of an object type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    name: String,
    optional: bool,
    ty: TsType,
    doc: Option<String>,
}

impl Member {
    /// A required member `name: ty`.
    pub fn new(name: impl Into<String>, ty: TsType) -> Member {
        Member {
            name: name.into(),
            optional: false,
            ty,
            doc: None,
        }
    }

    /// The member made optional (`name?: ty`): absent from some values.
    pub fn optional(mut self) -> Member {
        self.optional = true;
        self
    }

    /// The member with a JSDoc comment (empty text: none).
    pub fn doc(mut self, text: impl Into<String>) -> Member {
        let text = text.into();
        self.doc = (!text.trim().is_empty()).then_some(text);
        self
    }
}

impl TsType {
    /// `string`.
    pub fn string() -> TsType {
        TsType(Repr::Keyword("string"))
    }

    /// `number`.
    pub fn number() -> TsType {
        TsType(Repr::Keyword("number"))
    }

    /// `boolean`.
    pub fn boolean() -> TsType {
        TsType(Repr::Keyword("boolean"))
    }

    /// `null`.
    pub fn null() -> TsType {
        TsType(Repr::Keyword("null"))
    }

    /// `unknown`: any JSON.
    pub fn unknown() -> TsType {
        TsType(Repr::Keyword("unknown"))
    }

    /// `never`: no value (an enum without variants).
    pub fn never() -> TsType {
        TsType(Repr::Keyword("never"))
    }

    /// The string literal type of `text` (`"idle"`).
    pub fn literal(text: impl Into<String>) -> TsType {
        TsType(Repr::Literal(text.into()))
    }

    /// A declared type by name, with its type arguments (`Page<string>`).
    pub fn named(name: impl Into<String>, args: Vec<TsType>) -> TsType {
        TsType(Repr::Named(name.into(), args))
    }

    /// `item[]`.
    pub fn array(item: TsType) -> TsType {
        TsType(Repr::Array(Box::new(item)))
    }

    /// `[a, b]`.
    pub fn tuple(items: Vec<TsType>) -> TsType {
        TsType(Repr::Tuple(items))
    }

    /// `{ a: A; b?: B }` (`{ [key: string]: never }` when empty: only `{}`).
    pub fn object(members: Vec<Member>) -> TsType {
        TsType(Repr::Object(members))
    }

    /// `{ [key: string]: value }`: a map with string keys.
    pub fn map(value: TsType) -> TsType {
        TsType(Repr::Map(Box::new(value)))
    }

    /// `inner | null`.
    pub fn nullable(inner: TsType) -> TsType {
        TsType::union(vec![inner, TsType::null()])
    }

    /// `a | b`: nested unions are flattened and repeated members dropped (one member: that
    /// member; none: `never`).
    pub fn union(items: Vec<TsType>) -> TsType {
        let mut flat: Vec<TsType> = Vec::new();
        for item in items {
            let members = match item.0 {
                Repr::Union(members) => members,
                other => vec![TsType(other)],
            };
            for m in members {
                if !flat.contains(&m) {
                    flat.push(m);
                }
            }
        }
        match flat.len() {
            0 => TsType::never(),
            1 => flat.pop().unwrap_or_else(TsType::never),
            _ => TsType(Repr::Union(flat)),
        }
    }

    /// `a & b`.
    pub fn intersection(items: Vec<TsType>) -> TsType {
        match items.len() {
            1 => items.into_iter().next().unwrap_or_else(TsType::unknown),
            _ => TsType(Repr::Intersection(items)),
        }
    }

    /// A TypeScript type expression written as is (parenthesised where precedence needs it).
    pub fn raw(text: impl Into<String>) -> TsType {
        TsType(Repr::Raw(text.into()))
    }

    /// The expression on one line.
    pub fn inline(&self) -> String {
        let mut out = String::new();
        self.write_inline(&mut out, Ctx::Top);
        out
    }
}

impl std::fmt::Display for TsType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.inline())
    }
}

/// Where an expression stands, for its parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Alone: a declaration, a member, a tuple element, a type argument.
    Top,
    /// A member of a union.
    Union,
    /// A member of an intersection.
    Intersection,
    /// The element type of `T[]`.
    Array,
}

/// The width past which an object or a union is laid out over several lines.
const WIDTH: usize = 80;

/// Whether `name` can be written as a TypeScript identifier (else it is quoted).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A JSON string literal, which is also a TypeScript one.
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

fn member_name(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        quoted(name)
    }
}

fn write_doc(out: &mut String, doc: &str, indent: usize) {
    let pad = " ".repeat(indent);
    let lines: Vec<String> = doc
        .lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).replace("*/", "*\\/"))
        .collect();
    let lines: Vec<&str> = {
        let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        let end = lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |e| e + 1);
        lines[start..end.max(start)]
            .iter()
            .map(|l| l.trim_end())
            .collect()
    };
    match lines.as_slice() {
        [] => {}
        [one] => out.push_str(&format!("{pad}/** {one} */\n")),
        many => {
            out.push_str(&format!("{pad}/**\n"));
            for l in many {
                if l.is_empty() {
                    out.push_str(&format!("{pad} *\n"));
                } else {
                    out.push_str(&format!("{pad} * {l}\n"));
                }
            }
            out.push_str(&format!("{pad} */\n"));
        }
    }
}

impl TsType {
    fn needs_parens(&self, ctx: Ctx) -> bool {
        match &self.0 {
            Repr::Union(_) => matches!(ctx, Ctx::Intersection | Ctx::Array),
            Repr::Intersection(_) => ctx == Ctx::Array,
            Repr::Raw(text) => {
                ctx != Ctx::Top
                    && !text
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c))
            }
            _ => false,
        }
    }

    fn has_doc(&self) -> bool {
        match &self.0 {
            Repr::Object(members) => members.iter().any(|m| m.doc.is_some() || m.ty.has_doc()),
            Repr::Array(t) | Repr::Map(t) => t.has_doc(),
            Repr::Named(_, ts) | Repr::Tuple(ts) | Repr::Union(ts) | Repr::Intersection(ts) => {
                ts.iter().any(TsType::has_doc)
            }
            _ => false,
        }
    }

    fn write_inline(&self, out: &mut String, ctx: Ctx) {
        let parens = self.needs_parens(ctx);
        if parens {
            out.push('(');
        }
        match &self.0 {
            Repr::Keyword(k) => out.push_str(k),
            Repr::Literal(text) => out.push_str(&quoted(text)),
            Repr::Raw(text) => out.push_str(text),
            Repr::Named(name, args) => {
                out.push_str(name);
                if !args.is_empty() {
                    out.push('<');
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        a.write_inline(out, Ctx::Top);
                    }
                    out.push('>');
                }
            }
            Repr::Array(item) => {
                item.write_inline(out, Ctx::Array);
                out.push_str("[]");
            }
            Repr::Tuple(items) => {
                out.push('[');
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    t.write_inline(out, Ctx::Top);
                }
                out.push(']');
            }
            Repr::Object(members) if members.is_empty() => {
                out.push_str("{ [key: string]: never }");
            }
            Repr::Object(members) => {
                out.push_str("{ ");
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str("; ");
                    }
                    out.push_str(&member_name(&m.name));
                    out.push_str(if m.optional { "?: " } else { ": " });
                    m.ty.write_inline(out, Ctx::Top);
                }
                out.push_str(" }");
            }
            Repr::Map(value) => {
                out.push_str("{ [key: string]: ");
                value.write_inline(out, Ctx::Top);
                out.push_str(" }");
            }
            Repr::Union(items) | Repr::Intersection(items) => {
                let (sep, inner) = match &self.0 {
                    Repr::Union(_) => (" | ", Ctx::Union),
                    _ => (" & ", Ctx::Intersection),
                };
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    t.write_inline(out, inner);
                }
            }
        }
        if parens {
            out.push(')');
        }
    }

    /// Writes the expression starting at column `column` of a line indented `indent`: on one
    /// line when it fits and carries no doc comment, else objects and unions over several.
    fn write_pretty(&self, out: &mut String, indent: usize, column: usize, ctx: Ctx) {
        let mut line = String::new();
        self.write_inline(&mut line, ctx);
        if column + line.len() <= WIDTH && !self.has_doc() {
            out.push_str(&line);
            return;
        }
        let pad = " ".repeat(indent);
        match &self.0 {
            Repr::Object(members) if !members.is_empty() => {
                out.push_str("{\n");
                for m in members {
                    if let Some(doc) = &m.doc {
                        write_doc(out, doc, indent + 2);
                    }
                    let head = format!(
                        "{pad}  {}{}",
                        member_name(&m.name),
                        if m.optional { "?: " } else { ": " }
                    );
                    out.push_str(&head);
                    m.ty.write_pretty(out, indent + 2, head.len(), Ctx::Top);
                    out.push_str(";\n");
                }
                out.push_str(&pad);
                out.push('}');
            }
            Repr::Union(items) if ctx == Ctx::Top => {
                for t in items {
                    out.push_str(&format!("\n{pad}  | "));
                    t.write_pretty(out, indent + 2, indent + 4, Ctx::Union);
                }
            }
            Repr::Array(item) if !self.needs_parens(ctx) => {
                let parens = item.needs_parens(Ctx::Array);
                if parens {
                    out.push('(');
                }
                item.write_pretty(out, indent, column + usize::from(parens), Ctx::Top);
                if parens {
                    out.push(')');
                }
                out.push_str("[]");
            }
            Repr::Map(value) => {
                out.push_str(&format!("{{\n{pad}  [key: string]: "));
                value.write_pretty(out, indent + 2, indent + 17, Ctx::Top);
                out.push_str(&format!(";\n{pad}}}"));
            }
            Repr::Intersection(items) if !self.needs_parens(ctx) => {
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" & ");
                    }
                    t.write_pretty(out, indent, column, Ctx::Intersection);
                }
            }
            _ => out.push_str(&line),
        }
    }
}

/// What went wrong declaring a type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two Rust types would be declared under one TypeScript name.
    #[error(
        "two types are declared as `{name}`: `{first}` and `{second}`; name one differently \
         with `#[serde(rename = \"...\")]` on the type"
    )]
    NameClash {
        /// The TypeScript name.
        name: String,
        /// The Rust type declared first.
        first: String,
        /// The other one.
        second: String,
    },
    /// A type's name is not one TypeScript accepts for a declared type.
    #[error(
        "`{rust}` would be declared as `{name}`, which TypeScript does not accept as a type \
         name; name it with `#[serde(rename = \"...\")]`"
    )]
    InvalidName {
        /// The name.
        name: String,
        /// The Rust type.
        rust: String,
    },
    /// The file could not be written.
    #[error("cannot write the declarations to {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Names TypeScript refuses for a declared type.
const RESERVED_TYPE_NAMES: &[&str] = &[
    "any",
    "bigint",
    "boolean",
    "never",
    "null",
    "number",
    "object",
    "string",
    "symbol",
    "undefined",
    "unknown",
    "void",
];

struct Entry {
    name: String,
    rust: String,
    params: Vec<String>,
    doc: Option<String>,
    body: Option<TsType>,
}

/// The named types declared so far, in dependency order, and the errors met.
///
/// [`declarations`] covers the common case, one root type; `Declarations` gathers several:
///
/// ```
/// use chord::typescript::Declarations;
///
/// let mut decls = Declarations::new();
/// assert_eq!(decls.add::<Vec<Option<u64>>>().inline(), "(number | null)[]");
/// assert_eq!(decls.add::<serde_json::Value>().inline(), "JsonValue");
/// assert!(decls.to_file()?.contains("export type JsonValue ="));
/// # Ok::<(), chord::typescript::Error>(())
/// ```
#[derive(Default)]
pub struct Declarations {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
    /// Indices of the entries whose declarations are complete, each after those it uses.
    order: Vec<usize>,
    /// The type parameters of the generic declarations being written, innermost last.
    params: Vec<Vec<String>>,
    errors: Vec<Error>,
}

/// The first lines of every generated file.
pub const HEADER: &str = "\
// The TypeScript types of a chord state's JSON, generated from its Rust types by
// chord::typescript: change the Rust types and regenerate, do not edit this file.

";

impl Declarations {
    /// No declarations yet.
    pub fn new() -> Declarations {
        Declarations::default()
    }

    /// `T`'s type, declaring what it refers to.
    pub fn add<T: TypeScript + ?Sized>(&mut self) -> TsType {
        T::ts_type(self)
    }

    /// Declares `name` once as `export type name = body;` (`body` is called the first time
    /// only, and may refer to `name` itself) and returns a reference to it. `rust` names the
    /// Rust type (`concat!(module_path!(), "::Name")`), so that two types taking one name
    /// are an error.
    pub fn declare(
        &mut self,
        rust: &str,
        name: &str,
        body: impl FnOnce(&mut Declarations) -> TsType,
    ) -> TsType {
        self.declare_generic(rust, name, &[], None, body);
        TsType::named(name, Vec::new())
    }

    /// As [`declare`](Declarations::declare), for a generic declaration with type
    /// parameters `params` (within `body`, [`param`](Declarations::param) refers to them)
    /// and a JSDoc comment.
    pub(crate) fn declare_generic(
        &mut self,
        rust: &str,
        name: &str,
        params: &[&str],
        doc: Option<&str>,
        body: impl FnOnce(&mut Declarations) -> TsType,
    ) {
        if let Some(&i) = self.by_name.get(name) {
            if self.entries[i].rust != rust {
                let clash = Error::NameClash {
                    name: name.to_owned(),
                    first: self.entries[i].rust.clone(),
                    second: rust.to_owned(),
                };
                if !self
                    .errors
                    .iter()
                    .any(|e| e.to_string() == clash.to_string())
                {
                    self.errors.push(clash);
                }
            }
            return;
        }
        if !is_identifier(name) || RESERVED_TYPE_NAMES.contains(&name) {
            self.errors.push(Error::InvalidName {
                name: name.to_owned(),
                rust: rust.to_owned(),
            });
        }
        let index = self.entries.len();
        self.by_name.insert(name.to_owned(), index);
        self.entries.push(Entry {
            name: name.to_owned(),
            rust: rust.to_owned(),
            params: params.iter().map(|p| (*p).to_owned()).collect(),
            doc: doc.filter(|d| !d.trim().is_empty()).map(str::to_owned),
            body: None,
        });
        self.params
            .push(params.iter().map(|p| (*p).to_owned()).collect());
        let body = body(self);
        self.params.pop();
        self.entries[index].body = Some(body);
        self.order.push(index);
    }

    /// The `index`-th type parameter of the generic declaration being written.
    pub(crate) fn param(&self, index: usize) -> TsType {
        match self.params.last().and_then(|ps| ps.get(index)) {
            Some(name) => TsType::named(name.clone(), Vec::new()),
            None => TsType::unknown(),
        }
    }

    /// The text of a `.d.ts` file declaring every named type added so far, each after the
    /// types it uses (a type that refers to itself, directly or not, comes once, where it was
    /// completed), or the first error met.
    pub fn to_file(&self) -> Result<String, Error> {
        if let Some(e) = self.errors.first() {
            return Err(match e {
                Error::NameClash {
                    name,
                    first,
                    second,
                } => Error::NameClash {
                    name: name.clone(),
                    first: first.clone(),
                    second: second.clone(),
                },
                Error::InvalidName { name, rust } => Error::InvalidName {
                    name: name.clone(),
                    rust: rust.clone(),
                },
                Error::Write { path, source } => Error::Write {
                    path: path.clone(),
                    source: std::io::Error::new(source.kind(), source.to_string()),
                },
            });
        }
        let mut out = String::from(HEADER);
        for (n, &i) in self.order.iter().enumerate() {
            let e = &self.entries[i];
            if n > 0 {
                out.push('\n');
            }
            if let Some(doc) = &e.doc {
                write_doc(&mut out, doc, 0);
            }
            let head = if e.params.is_empty() {
                format!("export type {} = ", e.name)
            } else {
                format!("export type {}<{}> = ", e.name, e.params.join(", "))
            };
            out.push_str(&head);
            let body = e.body.clone().unwrap_or_else(TsType::unknown);
            let mut rhs = String::new();
            body.write_pretty(&mut rhs, 0, head.len(), Ctx::Top);
            if rhs.starts_with('\n') {
                out.truncate(out.len() - 1); // `=` then a line per alternative
            }
            out.push_str(&rhs);
            out.push_str(";\n");
        }
        Ok(out)
    }
}

/// The text of a `.d.ts` file declaring `T`'s JSON and every named type it refers to,
/// deduplicated, each after the types it uses.
pub fn declarations<T: TypeScript + ?Sized>() -> Result<String, Error> {
    let mut decls = Declarations::new();
    decls.add::<T>();
    decls.to_file()
}

/// Writes [`declarations`]`::<T>()` to `path` (a `.d.ts` file), replacing it.
pub fn write_declarations<T: TypeScript + ?Sized>(path: impl AsRef<Path>) -> Result<(), Error> {
    let text = declarations::<T>()?;
    let path = path.as_ref();
    std::fs::write(path, text).map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

// ---- The std and serde_json types. ----

macro_rules! keyword {
    ($kw:ident: $($t:ty),*) => {$(
        impl TypeScript for $t {
            fn ts_type(_: &mut Declarations) -> TsType {
                TsType::$kw()
            }
        }
    )*};
}

keyword!(boolean: bool);
keyword!(string: String, str, char, std::path::PathBuf, std::path::Path,
    std::net::IpAddr, std::net::Ipv4Addr, std::net::Ipv6Addr, std::net::SocketAddr,
    std::net::SocketAddrV4, std::net::SocketAddrV6);
keyword!(number: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64,
    serde_json::Number, std::num::NonZeroI8, std::num::NonZeroI16, std::num::NonZeroI32,
    std::num::NonZeroI64, std::num::NonZeroI128, std::num::NonZeroIsize, std::num::NonZeroU8,
    std::num::NonZeroU16, std::num::NonZeroU32, std::num::NonZeroU64, std::num::NonZeroU128,
    std::num::NonZeroUsize);
keyword!(null: ());

impl<T: ?Sized> TypeScript for std::marker::PhantomData<T> {
    fn ts_type(_: &mut Declarations) -> TsType {
        TsType::null()
    }
}

macro_rules! transparent {
    ($($t:ident)::+) => {
        impl<T: TypeScript + ?Sized> TypeScript for $($t)::+<T> {
            fn ts_type(decls: &mut Declarations) -> TsType {
                T::ts_type(decls)
            }
        }
    };
}

transparent!(Box);
transparent!(std::rc::Rc);
transparent!(std::sync::Arc);

impl<T: TypeScript> TypeScript for std::num::Wrapping<T> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

impl<T: TypeScript> TypeScript for std::cmp::Reverse<T> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

impl<T: TypeScript + ?Sized> TypeScript for &T {
    fn ts_type(decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

impl<T: TypeScript + ?Sized> TypeScript for &mut T {
    fn ts_type(decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

impl<T: TypeScript + ToOwned + ?Sized> TypeScript for std::borrow::Cow<'_, T> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

impl<T: TypeScript> TypeScript for Option<T> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::nullable(T::ts_type(decls))
    }
}

macro_rules! array {
    ($($t:ident)::+) => {
        impl<T: TypeScript> TypeScript for $($t)::+<T> {
            fn ts_type(decls: &mut Declarations) -> TsType {
                TsType::array(T::ts_type(decls))
            }
        }
    };
}

array!(Vec);
array!(std::collections::VecDeque);
array!(std::collections::LinkedList);
array!(std::collections::BinaryHeap);
array!(std::collections::BTreeSet);

impl<T: TypeScript, S> TypeScript for std::collections::HashSet<T, S> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::array(T::ts_type(decls))
    }
}

impl<T: TypeScript> TypeScript for [T] {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::array(T::ts_type(decls))
    }
}

impl<T: TypeScript, const N: usize> TypeScript for [T; N] {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::array(T::ts_type(decls))
    }
}

impl<K, V: TypeScript> TypeScript for std::collections::BTreeMap<K, V> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::map(V::ts_type(decls))
    }
}

impl<K, V: TypeScript, S> TypeScript for std::collections::HashMap<K, V, S> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::map(V::ts_type(decls))
    }
}

impl TypeScript for serde_json::Value {
    fn ts_type(decls: &mut Declarations) -> TsType {
        decls.declare("serde_json::Value", "JsonValue", |_| {
            let json = || TsType::named("JsonValue", Vec::new());
            TsType::union(vec![
                TsType::null(),
                TsType::boolean(),
                TsType::number(),
                TsType::string(),
                TsType::array(json()),
                TsType::map(json()),
            ])
        })
    }
}

impl TypeScript for serde_json::Map<String, serde_json::Value> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        TsType::map(serde_json::Value::ts_type(decls))
    }
}

impl TypeScript for std::time::Duration {
    fn ts_type(_: &mut Declarations) -> TsType {
        TsType::object(vec![
            Member::new("secs", TsType::number()),
            Member::new("nanos", TsType::number()),
        ])
    }
}

macro_rules! tuples {
    ($(($($t:ident),+))*) => {$(
        impl<$($t: TypeScript),+> TypeScript for ($($t,)+) {
            fn ts_type(decls: &mut Declarations) -> TsType {
                TsType::tuple(vec![$($t::ts_type(decls)),+])
            }
        }
    )*};
}

tuples! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
    (A, B, C, D, E, F, G, H, I)
    (A, B, C, D, E, F, G, H, I, J)
    (A, B, C, D, E, F, G, H, I, J, K)
    (A, B, C, D, E, F, G, H, I, J, K, L)
}

#[cfg(test)]
mod tests {
    use super::derived::tuple;
    use super::*;

    fn named(n: &str) -> TsType {
        TsType::named(n, Vec::new())
    }

    #[test]
    fn precedence_is_written_with_parentheses_only_where_needed() {
        let cases = [
            (
                TsType::array(TsType::nullable(TsType::string())),
                "(string | null)[]",
            ),
            (
                TsType::nullable(TsType::array(TsType::string())),
                "string[] | null",
            ),
            (
                TsType::nullable(TsType::nullable(TsType::number())),
                "number | null",
            ),
            (
                TsType::array(TsType::intersection(vec![named("A"), named("B")])),
                "(A & B)[]",
            ),
            (
                TsType::intersection(vec![
                    TsType::union(vec![named("A"), named("B")]),
                    named("C"),
                ]),
                "(A | B) & C",
            ),
            (TsType::array(TsType::raw("Date")), "Date[]"),
            (
                TsType::array(TsType::raw("`${number}px`")),
                "(`${number}px`)[]",
            ),
            (
                TsType::object(vec![
                    Member::new("a-b", TsType::literal("x\"y")),
                    Member::new("c", TsType::number()).optional(),
                ]),
                "{ \"a-b\": \"x\\\"y\"; c?: number }",
            ),
            (TsType::object(Vec::new()), "{ [key: string]: never }"),
            (TsType::union(Vec::new()), "never"),
        ];
        for (t, want) in cases {
            assert_eq!(t.inline(), want);
        }
    }

    #[test]
    fn tuples_with_skippable_elements_list_every_combination() {
        let t = tuple(vec![
            (TsType::string(), false),
            (TsType::number(), true),
            (TsType::boolean(), true),
        ]);
        assert_eq!(
            t.inline(),
            "[string, number, boolean] | [string, boolean] | [string, number] | [string]"
        );
        let many = tuple((0..5).map(|_| (TsType::number(), true)).collect());
        assert_eq!(many.inline(), "number[]");
    }

    #[test]
    fn a_name_taken_by_two_types_is_an_error() {
        let mut d = Declarations::new();
        d.declare("a::Lane", "Lane", |_| TsType::string());
        d.declare("b::Lane", "Lane", |_| TsType::number());
        let err = d.to_file().unwrap_err();
        assert!(matches!(err, Error::NameClash { .. }), "{err}");
        assert!(err.to_string().contains("`a::Lane` and `b::Lane`"), "{err}");

        let mut d = Declarations::new();
        d.declare("a::string", "string", |_| TsType::string());
        assert!(matches!(d.to_file(), Err(Error::InvalidName { .. })));
        let mut d = Declarations::new();
        d.declare("a::Lane", "my-lane", |_| TsType::string());
        assert!(matches!(d.to_file(), Err(Error::InvalidName { .. })));
    }

    #[test]
    fn dependencies_come_first_and_recursion_terminates() {
        let mut d = Declarations::new();
        d.declare("t::Tree", "Tree", |d| {
            let leaf = d.declare("t::Leaf", "Leaf", |_| TsType::string());
            let again = d.declare("t::Tree", "Tree", |_| unreachable!("declared once"));
            TsType::object(vec![
                Member::new("leaf", leaf),
                Member::new("kids", TsType::array(again)),
            ])
        });
        assert_eq!(
            d.to_file().unwrap(),
            format!(
                "{HEADER}export type Leaf = string;\n\nexport type Tree = {{ leaf: Leaf; kids: Tree[] }};\n"
            )
        );
    }

    #[test]
    fn long_unions_and_documented_objects_take_several_lines() {
        let mut d = Declarations::new();
        d.declare_generic("t::Event", "Event", &[], Some(" An event."), |_| {
            TsType::union(
                [
                    "started",
                    "stopped",
                    "restarted",
                    "crashed",
                    "recovered",
                    "paused",
                ]
                .into_iter()
                .map(|n| {
                    TsType::object(vec![
                        Member::new("kind", TsType::literal(n)),
                        Member::new("at", TsType::number()).doc(" When."),
                    ])
                })
                .collect(),
            )
        });
        let text = d.to_file().unwrap();
        let body = text.strip_prefix(HEADER).unwrap();
        assert!(
            body.starts_with(
                "/** An event. */\nexport type Event =\n  | {\n    kind: \"started\";\n    /** When. */\n    at: number;\n  }\n  | {\n"
            ),
            "{body}"
        );
    }
}
