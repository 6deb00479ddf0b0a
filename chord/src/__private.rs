//! What the code `#[derive(Tracked)]` generates names, under one path it can spell
//! (`::chord::__private::...`). Not a public API: anything here may change in any release.
//! Only re-exports: each item lives in the module of its concept.

pub use crate::proxy::debug::debug_json;
pub use crate::proxy::hints::{
    AppendOrCopyTheText, AssignThroughTheProxy, NoOtherRhs, NoRhs, WriteStarToReadTheOperand,
    WriteStarToReadTheValue,
};
pub use crate::proxy::leaf::{
    flush as flush_leaf, flush_json_field, flush_opaque_field, leaf_proxy, leaf_proxy_with_json,
};
pub use crate::proxy::LeafProxy;
pub use crate::tracker::flatten::{
    Flatten, FlattenCheck, FlattenOk, FlattenRefused, FlattenUntracked, Members, UniqueMembers,
};
pub use crate::tracker::structs::{
    flush_enum, flush_field, flush_field_with, flush_struct, record_enum, with_segs, FlushField,
};
pub use crate::tracker::{Cx, Fields, Node, Out, Step, Tracked, Trail};
pub use crate::{Error, Op, Path, Result, Seg};
pub use core;
pub use serde;
pub use serde_json;
pub use std::borrow::Cow;
pub use std::vec::Vec;

/// What the derive's `TypeScript` implementations call.
pub mod ts {
    pub use crate::typescript::derived::{
        declare_generic, enumeration, fields, structure, tuple, EnumRepr, Fields, Probe, TsParam,
        ViaTypeScript, ViaUnknown,
    };
    pub use crate::typescript::{Declarations, Member, TsType, TypeScript};
}
