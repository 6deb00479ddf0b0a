//! The TypeScript declarations `chord::typescript` generates, checked by the TypeScript
//! compiler against the JSON serde_json writes: random values of types that cover every field
//! kind and enum representation must be accepted, and a value with a Rust field name in place
//! of its serde name, or without a required member, refused at its line; and random type
//! expressions, as `TsType` lays them out, mean what a fully parenthesised spelling means.
//!
//! The compiler is the repository's pinned one (`js/node_modules/.bin/tsc`, installed by
//! `scripts/test`); without it the tsc tests print `SKIPPED ...`, and fail under `CI=true`.

#[path = "support/skip.rs"]
mod skip;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use chord::typescript::{declarations, Declarations, TsType, TypeScript};
use chord::Tracked;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::Value;

/// Every field kind the derive declares.
#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct Everything {
    plain_text: String,
    #[serde(rename = "flag")]
    is_on: bool,
    small: u8,
    big: u64,
    signed: i64,
    wide: u128,
    ratio: f64,
    letter: char,
    maybe: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sometimes: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(skip)]
    hidden: u32,
    list: Vec<Inner>,
    queue: VecDeque<i32>,
    by_name: BTreeMap<String, Inner>,
    hashed: HashMap<String, Option<u8>>,
    set: BTreeSet<u16>,
    unique: HashSet<String>,
    json: Value,
    boxed: Box<Inner>,
    #[chord(opaque)]
    pair: (u8, String),
    #[chord(opaque)]
    color: Color,
    aspect: Aspect,
    #[serde(serialize_with = "pixels")]
    #[chord(ts = "`${number}px`")]
    width: u32,
    #[serde(serialize_with = "pixels")]
    written_by_function: u32,
    nothing: Unit,
    meters: Meters,
    point: Point,
    tree: Tree,
    external: External,
    internal: Internal,
    adjacent: Adjacent,
    untagged: Untagged,
    status: Status,
    tagged: Tagged,
    renamed: Original,
    page: Page<Inner>,
    numbers: Page<u64>,
    holder: Holder<bool, u8, NotTypeScript>,
    unknowable: Holder<bool, NotTypeScript, u8>,
}

fn pixels<S: serde::Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v}px"))
}

/// A documented struct.
#[derive(Tracked, Serialize, Clone, Debug)]
struct Inner {
    /// A documented field.
    id: String,
    count: i32,
}

/// Serialized as `"#rrggbb"` by hand; declared by its own `TypeScript` implementation.
#[derive(Clone, Debug)]
struct Color(u8, u8, u8);

impl Serialize for Color {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2))
    }
}

impl TypeScript for Color {
    fn ts_type(decls: &mut Declarations) -> TsType {
        decls.declare(concat!(module_path!(), "::Color"), "Color", |_| {
            TsType::raw("`#${string}`")
        })
    }
}

/// Serialized as `"16:9"` by hand; declared by `#[chord(ts)]` on the type.
#[derive(Tracked, Clone, Debug)]
#[chord(opaque, ts = "`${number}:${number}`")]
struct Aspect(u32, u32);

impl Serialize for Aspect {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}:{}", self.0, self.1))
    }
}

/// No `TypeScript` implementation: a field of it is `unknown`.
#[derive(Serialize, Clone, Debug)]
struct NotTypeScript;

#[derive(Tracked, Serialize, Clone, Debug)]
struct Unit;

#[derive(Tracked, Serialize, Clone, Debug)]
struct Meters(f64);

#[derive(Tracked, Serialize, Clone, Debug)]
struct Point(i32, i32);

#[derive(Tracked, Serialize, Clone, Debug)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Tracked, Serialize, Clone, Debug)]
enum External {
    Unit,
    #[serde(rename = "new")]
    Newtype(u32),
    Tuple(String, bool),
    Named {
        x: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        y: Option<String>,
    },
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Internal {
    Idle,
    RunningTool {
        tool_name: String,
        exit_code: Option<i32>,
    },
    Wrapped(Inner),
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Unit,
    Newtype(String),
    Tuple(u8, u8),
    #[serde(rename_all = "UPPERCASE")]
    Named {
        a: bool,
    },
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(untagged)]
enum Untagged {
    Unit,
    Newtype(u64),
    Tuple(String, String),
    Named { only: String },
}

#[derive(Tracked, Serialize, Clone, Copy, Debug)]
#[serde(rename_all = "SCREAMING-KEBAB-CASE")]
#[chord(opaque)]
enum Status {
    Idle,
    RunningTool,
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(tag = "type")]
struct Tagged {
    value: u8,
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(rename = "Renamed", rename_all = "kebab-case")]
struct Original {
    two_words: String,
}

#[derive(Tracked, Serialize, Clone, Debug)]
// Generic fields are opaque: the derive's proxy of a generic struct needs its fields'
// proxies to be `Debug`, which a type parameter's is not known to be.
struct Page<T> {
    #[chord(opaque)]
    items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[chord(opaque)]
    next: Option<Box<T>>,
}

#[derive(Tracked, Serialize, Clone, Debug)]
struct Holder<T, U, V> {
    #[chord(opaque)]
    value: T,
    #[chord(opaque)]
    other: Option<U>,
    #[serde(skip)]
    cache: Option<V>,
}

// ---- What tsc must accept or refuse. ----

/// The repository's pinned TypeScript compiler, or `None` (after a `SKIPPED` line) when it
/// is not installed and `CI` is not set.
fn tsc(test: &str) -> Option<PathBuf> {
    let tsc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../js/node_modules/.bin/tsc");
    if tsc.exists() {
        return Some(tsc);
    }
    skip::skip(
        test,
        &format!(
            "{} is missing (scripts/test installs it with npm)",
            tsc.display()
        ),
    );
    None
}

/// What tsc said about `values` (TypeScript importing the declarations of `T` from
/// `./types`): `Ok` when it accepted, else its diagnostics.
fn check<T: TypeScript + ?Sized>(tsc: &Path, values: &str) -> Result<(), String> {
    check_files(tsc, &declarations::<T>().unwrap(), values)
}

/// What tsc said about `values` importing the declarations `types` from `./types`.
fn check_files(tsc: &Path, types: &str, values: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("types.d.ts"), types).unwrap();
    std::fs::write(dir.path().join("values.ts"), values).unwrap();
    let config = serde_json::json!({
        "compilerOptions": {
            "strict": true,
            "exactOptionalPropertyTypes": true,
            "noEmit": true,
            "target": "es2022",
            "lib": ["es2022"],
            "module": "esnext",
            "moduleResolution": "bundler",
            "types": [],
            "skipLibCheck": false
        },
        "files": ["types.d.ts", "values.ts"]
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).unwrap();
    let out = Command::new(tsc)
        .arg("-p")
        .arg(dir.path())
        .arg("--pretty")
        .arg("false")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tsc.display()));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// `values.ts`: one `const` a value, typed `ty`.
fn values_file(ty: &str, values: &[Value]) -> String {
    let mut out = String::from("import type * as T from \"./types\";\n");
    for (i, v) in values.iter().enumerate() {
        out.push_str(&format!("export const v{i}: T.{ty} = {v};\n"));
    }
    out
}

// ---- Random values. ----

fn text() -> impl Strategy<Value = String> + Clone {
    "\\PC{0,6}"
}

fn inner() -> impl Strategy<Value = Inner> + Clone {
    (text(), any::<i32>()).prop_map(|(id, count)| Inner { id, count })
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = text().prop_map(|label| Tree {
        label,
        children: Vec::new(),
    });
    leaf.prop_recursive(3, 8, 3, |inner| {
        (text(), prop::collection::vec(inner, 0..3))
            .prop_map(|(label, children)| Tree { label, children })
    })
}

fn external() -> impl Strategy<Value = External> {
    prop_oneof![
        Just(External::Unit),
        any::<u32>().prop_map(External::Newtype),
        (text(), any::<bool>()).prop_map(|(a, b)| External::Tuple(a, b)),
        (any::<i32>(), prop::option::of(text())).prop_map(|(x, y)| External::Named { x, y }),
    ]
}

fn internal() -> impl Strategy<Value = Internal> {
    prop_oneof![
        Just(Internal::Idle),
        (text(), prop::option::of(any::<i32>())).prop_map(|(tool_name, exit_code)| {
            Internal::RunningTool {
                tool_name,
                exit_code,
            }
        }),
        inner().prop_map(Internal::Wrapped),
    ]
}

fn adjacent() -> impl Strategy<Value = Adjacent> {
    prop_oneof![
        Just(Adjacent::Unit),
        text().prop_map(Adjacent::Newtype),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Adjacent::Tuple(a, b)),
        any::<bool>().prop_map(|a| Adjacent::Named { a }),
    ]
}

fn untagged() -> impl Strategy<Value = Untagged> {
    prop_oneof![
        Just(Untagged::Unit),
        any::<u64>().prop_map(Untagged::Newtype),
        (text(), text()).prop_map(|(a, b)| Untagged::Tuple(a, b)),
        text().prop_map(|only| Untagged::Named { only }),
    ]
}

fn page<T: std::fmt::Debug + Clone>(
    item: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = Page<T>> {
    (
        prop::collection::vec(item.clone(), 0..3),
        prop::option::of(item.prop_map(Box::new)),
    )
        .prop_map(|(items, next)| Page { items, next })
}

prop_compose! {
    fn scalars()(
        plain_text in text(),
        is_on in any::<bool>(),
        small in any::<u8>(),
        big in any::<u64>(),
        signed in any::<i64>(),
        wide in any::<u64>().prop_map(u128::from),
        ratio in prop_oneof![any::<f64>().prop_filter("finite", |f| f.is_finite()), Just(-0.0), Just(1e20)],
        letter in any::<char>(),
        maybe in prop::option::of(any::<u32>()),
        sometimes in prop::option::of(text()),
        tags in prop::collection::vec(text(), 0..3),
        hidden in any::<u32>(),
    ) -> (String, bool, u8, u64, i64, u128, f64, char, Option<u32>, Option<String>, Vec<String>, u32) {
        (plain_text, is_on, small, big, signed, wide, ratio, letter, maybe, sometimes, tags, hidden)
    }
}

prop_compose! {
    fn collections()(
        list in prop::collection::vec(inner(), 0..3),
        queue in prop::collection::vec_deque(any::<i32>(), 0..3),
        by_name in prop::collection::btree_map(text(), inner(), 0..3),
        hashed in prop::collection::hash_map(text(), prop::option::of(any::<u8>()), 0..3),
        set in prop::collection::btree_set(any::<u16>(), 0..3),
        unique in prop::collection::hash_set(text(), 0..3),
        json in json(),
        boxed in inner().prop_map(Box::new),
        pair in (any::<u8>(), text()),
        color in any::<(u8, u8, u8)>().prop_map(|(r, g, b)| Color(r, g, b)),
        width in any::<u32>(),
        written_by_function in any::<u32>(),
    ) -> (Vec<Inner>, VecDeque<i32>, BTreeMap<String, Inner>, HashMap<String, Option<u8>>, BTreeSet<u16>, HashSet<String>, Value, Box<Inner>, (u8, String), Color, u32, u32) {
        (list, queue, by_name, hashed, set, unique, json, boxed, pair, color, width, written_by_function)
    }
}

prop_compose! {
    fn everything()(
        (plain_text, is_on, small, big, signed, wide, ratio, letter, maybe, sometimes, tags, hidden) in scalars(),
        (list, queue, by_name, hashed, set, unique, json, boxed, pair, color, width, written_by_function) in collections(),
        aspect in any::<(u32, u32)>().prop_map(|(w, h)| Aspect(w, h)),
        meters in any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Meters),
        point in any::<(i32, i32)>().prop_map(|(x, y)| Point(x, y)),
        tree in tree(),
        external in external(),
        internal in internal(),
        adjacent in adjacent(),
        untagged in untagged(),
        status in prop_oneof![Just(Status::Idle), Just(Status::RunningTool)],
        value in any::<u8>(),
        two_words in text(),
        page in page(inner()),
        numbers in page(any::<u64>()),
        holder in (any::<bool>(), prop::option::of(any::<u8>())).prop_map(|(value, other)| Holder {
            value,
            other,
            cache: None,
        }),
        unknowable in (any::<bool>(), any::<bool>()).prop_map(|(value, other)| Holder {
            value,
            other: other.then_some(NotTypeScript),
            cache: Some(1),
        }),
    ) -> Everything {
        Everything {
            plain_text, is_on, small, big, signed, wide, ratio, letter, maybe, sometimes, tags,
            hidden, list, queue, by_name, hashed, set, unique, json, boxed, pair, color, width,
            written_by_function, aspect, nothing: Unit, meters, point, tree, external, internal,
            adjacent, untagged, status, tagged: Tagged { value }, renamed: Original { two_words },
            page, numbers, holder, unknowable,
        }
    }
}

proptest! {
    // Each case is one tsc run (about a second) over a batch of values.
    #![proptest_config(ProptestConfig { cases: 4, max_shrink_iters: 16, ..ProptestConfig::default() })]

    #[test]
    fn tsc_accepts_what_serde_json_writes(values in prop::collection::vec(everything(), 24..32)) {
        let Some(tsc) = tsc("tsc_accepts_what_serde_json_writes") else { return Ok(()) };
        let json: Vec<Value> = values.iter().map(|v| serde_json::to_value(v).unwrap()).collect();
        let file = values_file("Everything", &json);
        if let Err(diagnostics) = check::<Everything>(&tsc, &file) {
            prop_assert!(false, "tsc refused:\n{diagnostics}\n--- types.d.ts:\n{}\n--- values.ts:\n{file}",
                declarations::<Everything>().unwrap());
        }
    }
}

/// One fixed value of every kind.
fn sample() -> Everything {
    let inner = || Inner {
        id: "i".into(),
        count: 1,
    };
    Everything {
        plain_text: "text".into(),
        is_on: true,
        small: 1,
        big: 2,
        signed: -3,
        wide: 4,
        ratio: 0.5,
        letter: 'x',
        maybe: None,
        sometimes: None,
        tags: Vec::new(),
        hidden: 0,
        list: vec![inner()],
        queue: VecDeque::from([1]),
        by_name: BTreeMap::from([("a".into(), inner())]),
        hashed: HashMap::new(),
        set: BTreeSet::from([1]),
        unique: HashSet::new(),
        json: serde_json::json!({"a": [1, null]}),
        boxed: Box::new(inner()),
        pair: (1, "p".into()),
        color: Color(1, 2, 3),
        width: 12,
        written_by_function: 3,
        aspect: Aspect(16, 9),
        nothing: Unit,
        meters: Meters(1.5),
        point: Point(1, 2),
        tree: Tree {
            label: "root".into(),
            children: Vec::new(),
        },
        external: External::Unit,
        internal: Internal::Idle,
        adjacent: Adjacent::Unit,
        untagged: Untagged::Unit,
        status: Status::RunningTool,
        tagged: Tagged { value: 1 },
        renamed: Original {
            two_words: "w".into(),
        },
        page: Page {
            items: vec![inner()],
            next: None,
        },
        numbers: Page {
            items: vec![1],
            next: Some(Box::new(2)),
        },
        holder: Holder {
            value: true,
            other: None,
            cache: None,
        },
        unknowable: Holder {
            value: true,
            other: Some(NotTypeScript),
            cache: None,
        },
    }
}

/// The line (1-based) of `values.ts` holding the `index`-th value.
fn line_of(index: usize) -> usize {
    index + 2
}

/// The lines tsc reports errors on, from `values.ts(LINE,COLUMN): error ...`.
fn error_lines(diagnostics: &str) -> BTreeSet<usize> {
    diagnostics
        .lines()
        .filter_map(|l| {
            let rest = l.split("values.ts(").nth(1)?;
            rest.split(',').next()?.parse().ok()
        })
        .collect()
}

#[test]
fn tsc_refuses_a_rust_field_name_and_a_missing_member_at_their_lines() {
    let Some(tsc) = tsc("tsc_refuses_a_rust_field_name_and_a_missing_member_at_their_lines") else {
        return;
    };
    let good = serde_json::to_value(sample()).unwrap();
    let mut rust_name = good.clone();
    let text = rust_name["plainText"].take();
    let object = rust_name.as_object_mut().unwrap();
    object.shift_remove("plainText");
    object.insert("plain_text".into(), text); // the Rust field name, not the serde one
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().shift_remove("flag");
    let mut nested = good.clone();
    nested["tree"]
        .as_object_mut()
        .unwrap()
        .shift_remove("children");

    let file = values_file(
        "Everything",
        &[good.clone(), rust_name, good.clone(), missing, nested, good],
    );
    let diagnostics = check::<Everything>(&tsc, &file).expect_err("tsc accepted wrong values");
    assert_eq!(
        error_lines(&diagnostics),
        BTreeSet::from([line_of(1), line_of(3), line_of(4)]),
        "{diagnostics}"
    );
    assert!(diagnostics.contains("plain_text"), "{diagnostics}");
    assert!(diagnostics.contains("'flag'"), "{diagnostics}");
    assert!(diagnostics.contains("'children'"), "{diagnostics}");
}

#[test]
fn tsc_refuses_values_of_the_wrong_variant_shape() {
    let Some(tsc) = tsc("tsc_refuses_values_of_the_wrong_variant_shape") else {
        return;
    };
    let good = serde_json::to_value(sample()).unwrap();
    let with = |key: &str, v: Value| {
        let mut value = good.clone();
        value[key] = v;
        value
    };
    let wrong = [
        // An internal tag's value, externally tagged.
        with(
            "internal",
            serde_json::json!({"RunningTool": {"toolName": "x"}}),
        ),
        // An adjacent variant's content beside its tag, not under `c`.
        with("adjacent", serde_json::json!({"t": "Newtype", "x": "s"})),
        // A `skip_serializing_if = "Option::is_none"` member is never `null`.
        with("sometimes", Value::Null),
        // A unit variant spelled with the Rust name, not `rename_all`'s.
        with("status", serde_json::json!("RunningTool")),
        // A number where the `#[chord(ts)]` type asks for a string.
        with("width", serde_json::json!(12)),
        // Nor a string outside the type's own declaration.
        with("aspect", serde_json::json!("16/9")),
        // An untagged unit variant is `null`, not its name.
        with("untagged", serde_json::json!("Unit")),
    ];
    // One run: every wrong value's line has an error, the good value's none.
    let mut values = vec![good.clone()];
    values.extend(wrong);
    let file = values_file("Everything", &values);
    let diagnostics = check::<Everything>(&tsc, &file).expect_err("tsc accepted wrong values");
    assert_eq!(
        error_lines(&diagnostics),
        (1..values.len()).map(line_of).collect::<BTreeSet<_>>(),
        "{diagnostics}\n--- values.ts:\n{file}"
    );
}

#[test]
fn declarations_follow_serde_representations() {
    let ts = declarations::<Everything>().unwrap();
    let expect = [
        "export type External =\n  | \"Unit\"\n  | { new: number }\n  | { Tuple: [string, boolean] }\n  | { Named: { x: number; y?: string } };",
        "export type Internal =\n  | { kind: \"idle\" }\n  | { kind: \"running_tool\"; toolName: string; exitCode: number | null }\n  | { kind: \"wrapped\" } & Inner;",
        "export type Adjacent =\n  | { t: \"Unit\" }\n  | { t: \"Newtype\"; c: string }\n  | { t: \"Tuple\"; c: [number, number] }\n  | { t: \"Named\"; c: { A: boolean } };",
        "export type Untagged = null | number | [string, string] | { only: string };",
        "export type Status = \"IDLE\" | \"RUNNING-TOOL\";",
        "export type Tagged = { type: \"Tagged\"; value: number };",
        "export type Renamed = { \"two-words\": string };",
        "export type Page<T> = { items: T[]; next?: T };",
        "export type Holder<T, U> = { value: T; other: U | null };",
        "export type Tree = { label: string; children: Tree[] };",
        "export type Unit = null;",
        "export type Meters = number;",
        "export type Point = [number, number];",
        "/** A documented struct. */\nexport type Inner = {\n  /** A documented field. */\n  id: string;\n  count: number;\n};",
        "export type JsonValue =\n  | null\n  | boolean\n  | number\n  | string\n  | JsonValue[]\n  | { [key: string]: JsonValue };",
        "export type Color = `#${string}`;",
        "export type Aspect = `${number}:${number}`;",
        "  width: `${number}px`;\n  writtenByFunction: unknown;\n",
        "  sometimes?: string;\n  tags?: string[];\n  list: Inner[];\n",
        "  hashed: { [key: string]: number | null };\n  set: number[];\n  unique: string[];\n  json: JsonValue;\n  boxed: Inner;\n  pair: [number, string];\n  color: Color;\n",
        "  page: Page<Inner>;\n  numbers: Page<number>;\n  holder: Holder<boolean, number>;\n  unknowable: unknown;\n};\n",
    ];
    for want in expect {
        assert!(ts.contains(want), "missing:\n{want}\n--- in:\n{ts}");
    }
    assert!(!ts.contains("hidden"), "{ts}");
    // Each declared once, after what it uses; the root last.
    let position = |name: &str| {
        let decl = format!("export type {name}");
        assert_eq!(ts.matches(&decl).count(), 1, "{name}:\n{ts}");
        ts.find(&decl).unwrap()
    };
    assert!(position("Inner") < position("Internal"));
    assert!(position("Inner") < position("Page"));
    assert!(position("Page") < position("Everything"));
    assert!(ts.trim_end().ends_with("};"), "{ts}");
    assert!(ts.rfind("export type").unwrap() == position("Everything"));
}

#[test]
fn two_types_named_alike_are_refused() {
    mod a {
        #[derive(chord::Tracked, serde::Serialize)]
        pub struct Lane {
            pub text: String,
        }
    }
    mod b {
        #[derive(chord::Tracked, serde::Serialize)]
        pub struct Lane {
            pub count: u32,
        }
    }
    #[derive(Tracked, Serialize)]
    struct Both {
        a: a::Lane,
        b: b::Lane,
    }
    let err = declarations::<Both>().unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, chord::typescript::Error::NameClash { .. }),
        "{message}"
    );
    assert!(
        message.contains("a::Lane") && message.contains("b::Lane"),
        "{message}"
    );
}

// ---- The layout of type expressions: the fewest parentheses, the same types. ----

/// A type expression, built both through `TsType` and by the fully parenthesised reference
/// printer below.
#[derive(Clone, Debug)]
enum Expr {
    Keyword(&'static str),
    Literal(String),
    Raw(&'static str),
    Array(Box<Expr>),
    Tuple(Vec<Expr>),
    Object(Vec<(String, bool, Expr)>),
    Map(Box<Expr>),
    Nullable(Box<Expr>),
    Union(Vec<Expr>),
    Intersection(Vec<Expr>),
}

impl Expr {
    fn ts(&self) -> TsType {
        use chord::typescript::Member;
        match self {
            Expr::Keyword("string") => TsType::string(),
            Expr::Keyword("number") => TsType::number(),
            Expr::Keyword("boolean") => TsType::boolean(),
            Expr::Keyword(_) => TsType::null(),
            Expr::Literal(s) => TsType::literal(s.clone()),
            Expr::Raw(s) => TsType::raw(*s),
            Expr::Array(e) => TsType::array(e.ts()),
            Expr::Tuple(es) => TsType::tuple(es.iter().map(Expr::ts).collect()),
            Expr::Object(ms) => TsType::object(
                ms.iter()
                    .map(|(name, optional, e)| {
                        let m = Member::new(name.clone(), e.ts());
                        if *optional {
                            m.optional()
                        } else {
                            m
                        }
                    })
                    .collect(),
            ),
            Expr::Map(e) => TsType::map(e.ts()),
            Expr::Nullable(e) => TsType::nullable(e.ts()),
            Expr::Union(es) => TsType::union(es.iter().map(Expr::ts).collect()),
            Expr::Intersection(es) => TsType::intersection(es.iter().map(Expr::ts).collect()),
        }
    }

    /// Every compound written inside parentheses: no precedence to get wrong.
    fn reference(&self) -> String {
        let all = |es: &[Expr], sep: &str| {
            es.iter()
                .map(|e| format!("({})", e.reference()))
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            Expr::Keyword(k) => (*k).to_owned(),
            Expr::Literal(s) => serde_json::to_string(s).unwrap(),
            Expr::Raw(s) => (*s).to_owned(),
            Expr::Array(e) => format!("Array<{}>", e.reference()),
            Expr::Tuple(es) => format!("[{}]", all(es, ", ")),
            Expr::Object(ms) => {
                let members: Vec<String> = ms
                    .iter()
                    .map(|(name, optional, e)| {
                        format!(
                            "{}{}: ({})",
                            serde_json::to_string(name).unwrap(),
                            if *optional { "?" } else { "" },
                            e.reference()
                        )
                    })
                    .collect();
                format!("{{ {} }}", members.join("; "))
            }
            Expr::Map(e) => format!("{{ [key: string]: ({}) }}", e.reference()),
            Expr::Nullable(e) => format!("({}) | null", e.reference()),
            Expr::Union(es) => all(es, " | "),
            Expr::Intersection(es) => all(es, " & "),
        }
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["string", "number", "boolean", "null"]).prop_map(Expr::Keyword),
        "[a-z-]{1,3}".prop_map(Expr::Literal),
        prop::sample::select(vec!["`x${number}`", "Date", "() => void"]).prop_map(Expr::Raw),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let member = ("[a-z_-]{1,4}", any::<bool>(), inner.clone());
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Array(Box::new(e))),
            prop::collection::vec(inner.clone(), 1..3).prop_map(Expr::Tuple),
            // Members named apart: a name written twice is a TypeScript error in either form.
            prop::collection::vec(member, 1..3).prop_map(|mut ms| {
                let mut seen = std::collections::HashSet::new();
                ms.retain(|(name, ..)| seen.insert(name.clone()));
                Expr::Object(ms)
            }),
            inner.clone().prop_map(|e| Expr::Map(Box::new(e))),
            inner.clone().prop_map(|e| Expr::Nullable(Box::new(e))),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Union),
            prop::collection::vec(inner, 2..4).prop_map(Expr::Intersection),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, max_shrink_iters: 16, ..ProptestConfig::default() })]

    /// What `chord::typescript` writes, on one line or over several, is the type the fully
    /// parenthesised reference writes: tsc finds each assignable to the other.
    #[test]
    fn layout_keeps_the_meaning_of_every_expression(exprs in prop::collection::vec(expr(), 32..48)) {
        let Some(tsc) = tsc("layout_keeps_the_meaning_of_every_expression") else { return Ok(()) };
        let mut decls = Declarations::new();
        let mut values = String::from(
            "import type * as T from \"./types\";\n\
             type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;\n",
        );
        for (i, e) in exprs.iter().enumerate() {
            let name = format!("X{i}");
            let ty = e.ts();
            let _ = decls.declare(&format!("layout::{name}"), &name, |_| ty.clone());
            values.push_str(&format!(
                "type R{i} = {};\nexport const same{i}: Same<T.{name}, R{i}> = true;\n\
                 export const inline{i}: Same<{}, R{i}> = true;\n",
                e.reference(),
                ty.inline(),
            ));
        }
        let types = decls.to_file().unwrap();
        if let Err(diagnostics) = check_files(&tsc, &types, &values) {
            prop_assert!(false, "{diagnostics}\n--- types.d.ts:\n{types}\n--- values.ts:\n{values}");
        }
    }
}

// The main example's state, whose declarations are checked in beside its page.
#[allow(dead_code)]
#[path = "../../demo/src/main.rs"]
mod agent_lane;

/// `demo/src/agent_lane/lane.d.ts` is what the demo's types declare now.
#[test]
fn the_examples_checked_in_declarations_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/src/agent_lane/lane.d.ts");
    let now = agent_lane::lane_declarations().unwrap();
    if std::env::var_os("CHORD_WRITE_TYPES").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == now,
        "{} is not what the example's types declare: regenerate it with \
         `cargo run -p chord-demo -- --types demo/src/agent_lane/lane.d.ts`\n\
         --- now:\n{now}",
        path.display()
    );
}
