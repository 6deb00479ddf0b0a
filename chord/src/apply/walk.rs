//! Walking a document along a path: the one way the applier and its rollback reach a value.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{json_type, Error, ErrorKind, Result};
use crate::path::{Path, Seg};

/// Walks `path` from `root`, through own members and existing elements only.
pub(super) fn walk<'v>(root: &'v mut Value, path: &[Seg]) -> Result<&'v mut Value> {
    let mut at = root;
    for (depth, seg) in path.iter().enumerate() {
        let here =
            |kind: ErrorKind| Error::from(kind).at_path(path[..=depth].iter().cloned().collect());
        at = match at {
            Value::Object(map) => map
                .get_mut(key_of(seg).as_ref())
                .ok_or_else(|| here(ErrorKind::Missing))?,
            Value::Array(arr) => match seg {
                Seg::Key(_) => return Err(here(ErrorKind::KeyOnArray)),
                Seg::Index(i) => {
                    let len = arr.len();
                    arr.get_mut(*i)
                        .ok_or_else(|| here(ErrorKind::IndexOutOfRange { index: *i, len }))?
                }
            },
            other => {
                return Err(here(ErrorKind::NotAContainer {
                    found: json_type(other),
                }))
            }
        };
    }
    Ok(at)
}

/// The member name a segment addresses on an object.
pub(super) fn key_of(seg: &Seg) -> Cow<'_, str> {
    match seg {
        Seg::Key(k) => Cow::Borrowed(k.as_ref()),
        Seg::Index(i) => Cow::Owned(i.to_string()),
    }
}

/// The parent segments and the last segment of a non-empty path.
pub(super) fn split(path: &Path) -> Option<(&[Seg], &Seg)> {
    path.split_last().map(|(last, parent)| (parent, last))
}
