//! What the code `#[derive(Tracked)]` generates names, under one path it can spell
//! (`::chord::__private::...`). Not a public API: anything here may change in any release.
//! Only re-exports: each item lives in the module of its concept.

pub use crate::proxy::hints::{
    AppendOrCopyTheText, AssignThroughTheProxy, NoOtherRhs, NoRhs, WriteStarToReadTheOperand,
    WriteStarToReadTheValue,
};
pub use crate::proxy::leaf::{flush_json_field, flush_opaque_field};
pub use crate::proxy::{debug_json, flush_leaf, LeafProxy};
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
    pub use crate::typescript::{
        enumeration, fields, structure, tuple, Declarations, EnumRepr, Fields, Member, Probe,
        TsParam, TsType, TypeScript, ViaTypeScript, ViaUnknown,
    };
}
