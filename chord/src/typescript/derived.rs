//! What the TypeScript implementations `#[derive(Tracked)]` generates call (through
//! `chord::__private::ts`): a struct's or an enum's type in serde's representation, and the
//! probe that finds the type of a field.

use super::{Declarations, Member, TsType, TypeScript};

/// Declares `name` once, as [`Declarations::declare`] does, for a generic declaration with
/// type parameters `params` (within `body`, [`TsParam`] refers to them) and a JSDoc comment.
pub fn declare_generic(
    decls: &mut Declarations,
    rust: &str,
    name: &str,
    params: &[&str],
    doc: Option<&str>,
    body: impl FnOnce(&mut Declarations) -> TsType,
) {
    decls.declare_generic(rust, name, params, doc, body);
}

/// serde's representation of an enum.
#[derive(Clone, Copy)]
pub enum EnumRepr {
    /// `{ "Variant": ... }`, a unit variant as its name.
    External,
    /// `{ tag: "Variant", ...fields }`.
    Internal(&'static str),
    /// `{ tag: "Variant", content: ... }`.
    Adjacent(&'static str, &'static str),
    /// The variant's own JSON.
    Untagged,
}

/// The serialized fields of a struct or variant.
pub enum Fields {
    /// None: `null`.
    Unit,
    /// One unnamed field: its JSON.
    Newtype(TsType),
    /// Unnamed fields, each with whether serde may skip it: an array.
    Tuple(Vec<(TsType, bool)>),
    /// Named fields: an object.
    Named(Vec<Member>),
}

/// The most optional elements of a tuple whose every combination is declared; beyond, the
/// tuple is an array of any of its element types.
const MAX_OPTIONAL_ELEMENTS: usize = 4;

/// A tuple whose elements marked `true` serde may skip: the union of the arrays each
/// combination of skips leaves (a skipped element shifts those after it).
pub fn tuple(elements: Vec<(TsType, bool)>) -> TsType {
    let optional: Vec<usize> = (0..elements.len()).filter(|&i| elements[i].1).collect();
    if optional.is_empty() {
        return TsType::tuple(elements.into_iter().map(|(t, _)| t).collect());
    }
    if optional.len() > MAX_OPTIONAL_ELEMENTS {
        return TsType::array(TsType::union(
            elements.into_iter().map(|(t, _)| t).collect(),
        ));
    }
    let mut alternatives = Vec::new();
    for mask in (0..1u32 << optional.len()).rev() {
        let skipped = |i: usize| {
            optional
                .iter()
                .position(|&o| o == i)
                .is_some_and(|bit| mask & (1 << bit) == 0)
        };
        alternatives.push(TsType::tuple(
            (0..elements.len())
                .filter(|&i| !skipped(i))
                .map(|i| elements[i].0.clone())
                .collect(),
        ));
    }
    TsType::union(alternatives)
}

/// The JSON of a struct or variant's fields, as serde writes them untagged.
pub fn fields(fields: Fields) -> TsType {
    match fields {
        Fields::Unit => TsType::null(),
        Fields::Newtype(t) => t,
        Fields::Tuple(elements) => tuple(elements),
        Fields::Named(members) => TsType::object(members),
    }
}

/// A struct with named fields, with `#[serde(tag = "...")]` (`tag`: the tag's name and the
/// struct's) or without.
pub fn structure(tag: Option<(&'static str, &'static str)>, mut members: Vec<Member>) -> TsType {
    if let Some((tag, name)) = tag {
        members.insert(0, Member::new(tag, TsType::literal(name)));
    }
    TsType::object(members)
}

/// An enum: the union of its variants (`name`, fields) in serde's representation `repr`.
pub fn enumeration(repr: EnumRepr, variants: Vec<(&'static str, Fields)>) -> TsType {
    let alternatives = variants.into_iter().map(|(name, f)| match (repr, f) {
        (EnumRepr::External, Fields::Unit) => TsType::literal(name),
        (EnumRepr::External, f) => TsType::object(vec![Member::new(name, fields(f))]),
        (EnumRepr::Internal(tag), f) => {
            let tag = Member::new(tag, TsType::literal(name));
            match f {
                Fields::Unit => TsType::object(vec![tag]),
                Fields::Named(mut members) => {
                    members.insert(0, tag);
                    TsType::object(members)
                }
                // The inner value's members beside the tag (serde refuses anything but a map
                // or a struct there at runtime, and a unit is the tag alone).
                Fields::Newtype(t) if t == TsType::null() => TsType::object(vec![tag]),
                Fields::Newtype(t) => TsType::intersection(vec![TsType::object(vec![tag]), t]),
                // serde refuses a tuple variant under an internal tag at compile time.
                Fields::Tuple(_) => TsType::never(),
            }
        }
        (EnumRepr::Adjacent(tag, _), Fields::Unit) => {
            TsType::object(vec![Member::new(tag, TsType::literal(name))])
        }
        (EnumRepr::Adjacent(tag, content), f) => TsType::object(vec![
            Member::new(tag, TsType::literal(name)),
            Member::new(content, fields(f)),
        ]),
        (EnumRepr::Untagged, f) => fields(f),
    });
    TsType::union(alternatives.collect())
}

/// Stands for a generic declaration's `I`-th type parameter in its fields' types. It has the
/// std traits a struct's definition may ask of a parameter (`T: Ord` for a `BTreeSet<T>`
/// field); not `Serialize`, which would list it among serde's types in compile errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TsParam<const I: usize>;

impl<const I: usize> TypeScript for TsParam<I> {
    fn ts_type(decls: &mut Declarations) -> TsType {
        decls.param(I)
    }
}

/// Asks for `T`'s TypeScript type: through [`TypeScript`] when `T` implements it
/// ([`ViaTypeScript`]), else `unknown` ([`ViaUnknown`], found one autoref further).
pub struct Probe<T: ?Sized>(pub std::marker::PhantomData<T>);

/// The probe's first choice.
pub trait ViaTypeScript {
    /// `T::ts_type`.
    fn ts_type(&self, decls: &mut Declarations) -> TsType;
}

impl<T: TypeScript + ?Sized> ViaTypeScript for Probe<T> {
    fn ts_type(&self, decls: &mut Declarations) -> TsType {
        T::ts_type(decls)
    }
}

/// The probe's fallback.
pub trait ViaUnknown {
    /// `unknown`.
    fn ts_type(&self, decls: &mut Declarations) -> TsType;
}

impl<T: ?Sized> ViaUnknown for &Probe<T> {
    fn ts_type(&self, _: &mut Declarations) -> TsType {
        TsType::unknown()
    }
}
