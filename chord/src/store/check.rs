//! "Acknowledged means recoverable": what a store refuses before it writes anything.
//!
//! Two checks, one for each boundary:
//!
//! - [`CheckedBatch::new`], run by [`Store::append`](super::Store::append) on the batch
//!   *text*: it must be one line, at most [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES), parse
//!   with serde_json exactly as recovery parses it (the same nesting limit), follow the wire
//!   grammar ([`WireOp::from_value`](crate::WireOp::from_value) on each element), follow the
//!   decoder's rules as far as they do not depend on earlier batches, and break no bound of
//!   [`Limits::default`] that every state breaks (see [`ops`]).
//! - [`ops`], run by [`LogWriter`](super::LogWriter) on the *unencoded* ops, which still carry
//!   every path in full: the same static bounds, exactly.
//!
//! # What can be checked without the state
//!
//! Recovery applies with [`apply`](crate::apply), i.e. with [`Limits::default`]. Some of its
//! bounds are broken by an op whatever document it is applied to, and are refused here:
//!
//! - **Depth.** An `r` value nested deeper than `max_depth` (120); an `s` whose path length
//!   plus its value's nesting exceeds it; a `p` whose path length plus one plus an item's
//!   nesting exceeds it. `apply` checks these before it looks at the document.
//! - **Splice size.** A `p` inserting more than `max_array_len` items: whatever it removes,
//!   the array ends up longer than the bound.
//! - **Append size.** An `a` whose text alone is longer than `max_string_len`.
//! - **Paths.** No path longer than the grammar allows and no reserved segment (the wire
//!   grammar, and `validate::check_paths` for ops built in memory).
//!
//! Others depend on the state and so cannot be checked statically; a batch breaking them is
//! acknowledged, and recovery reports it by record ([`Error::Replay`](super::Error::Replay)):
//!
//! - **Growth.** `max_array_len` for an `s` one past the end or a `p` that removes fewer items
//!   than it inserts, and `max_string_len` for an `a`: both depend on the current length.
//! - **Structure.** A missing parent, an index past the end, an `a` on a number, an op other
//!   than `r` on an address with no value yet, a `t` splitting a surrogate pair.
//! - **The per-batch work budget**, where the applier has one: what a batch costs depends on
//!   the sizes of the strings and arrays it shifts.
//! - **Ids from earlier batches.** The store sees one batch: an id used before any `r` of the
//!   batch may have been defined by an earlier one. (After an `r`, which clears the id
//!   table, every id must be defined in the batch itself, and that is checked.)

use std::collections::HashMap;

use serde_json::Value;

#[cfg(any(feature = "streams", test))]
use super::BASE;
use super::{is_base_tag, Address, Error, Result, MAX_RECORD_BYTES};
use crate::error::ErrorKind;
use crate::{Limits, Op, PathRef, WireOp};

/// Batch text (and its tag) that passed the checks recovery relies on: what a backend's
/// [`Store::append_checked`](super::Store::append_checked) takes, so that it never checks a
/// batch twice.
///
/// [`CheckedBatch::new`] runs every check on text from anywhere (it is what
/// [`Store::append`](super::Store::append) does); a [`LogWriter`](super::LogWriter) builds one
/// from the text its encoder wrote for ops it checked before encoding, without parsing it
/// again.
///
/// ```
/// use chord::store::{Address, CheckedBatch, Error};
/// let at = Address::new("lanes", "main");
/// let ok = CheckedBatch::new(&at, r#"[["r",{"n":1}]]"#, Some("base"))?;
/// assert_eq!(ok.text(), r#"[["r",{"n":1}]]"#);
/// // A short form with nothing before it can never be decoded.
/// assert!(matches!(CheckedBatch::new(&at, r#"[["d"]]"#, None), Err(Error::Unrecoverable { .. })));
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CheckedBatch<'a> {
    text: &'a str,
    tag: Option<&'a str>,
}

impl<'a> CheckedBatch<'a> {
    /// Checks batch text for `address`: everything recovery will do with it that does not
    /// depend on the records before it (see the module documentation of `store` for what
    /// cannot be checked without them).
    ///
    /// # Errors
    ///
    /// [`Error::RecordTooLarge`] for text longer than [`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES)
    /// with its tag; [`Error::InvalidBatch`] for text that is not one line of parseable JSON
    /// array text, or is tagged [`BASE`](super::BASE) without starting with an `r`;
    /// [`Error::Unrecoverable`] for a batch that breaks the wire grammar, the decoder's rules
    /// or a static bound.
    pub fn new(address: &Address, text: &'a str, tag: Option<&'a str>) -> Result<Self> {
        batch(address, text, tag)?;
        Ok(CheckedBatch { text, tag })
    }

    /// Like [`CheckedBatch::new`] for text from outside the process, tagged [`BASE`] when its
    /// first op is an `r`: the text is parsed once, for the check and the tag alike. (The
    /// protocol's write side is its caller.)
    #[cfg(any(feature = "streams", test))]
    pub(crate) fn tagging_bases(address: &Address, text: &'a str) -> Result<Self> {
        let tag = batch(address, text, None)?.then_some(BASE);
        if tag.is_some() {
            size(address, text, tag, MAX_RECORD_BYTES)?;
        }
        Ok(CheckedBatch { text, tag })
    }

    /// Text a [`LogWriter`](super::LogWriter)'s encoder wrote for ops that passed [`ops`],
    /// or text this crate checked already (the write side checks every batch of a body
    /// before it appends any): only its size is checked, against `bound`.
    pub(crate) fn encoded(
        address: &Address,
        text: &'a str,
        tag: Option<&'a str>,
        bound: usize,
    ) -> Result<Self> {
        size(address, text, tag, bound)?;
        Ok(CheckedBatch { text, tag })
    }

    /// The batch's JSON text, one line.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The record's tag ([`BASE`](super::BASE) for a base batch).
    pub fn tag(&self) -> Option<&'a str> {
        self.tag
    }
}

/// Refuses a record longer than `bound` (at most [`MAX_RECORD_BYTES`]).
fn size(address: &Address, batch: &str, tag: Option<&str>, bound: usize) -> Result<()> {
    let size = batch.len() + tag.map_or(0, str::len);
    if size > bound.min(MAX_RECORD_BYTES) {
        return Err(Error::RecordTooLarge {
            address: address.clone(),
            size,
            bound: bound.min(MAX_RECORD_BYTES),
            base: is_base_tag(tag),
        });
    }
    Ok(())
}

/// The checks of [`CheckedBatch::new`].
/// Checks batch text; whether its first op is an `r` (a base batch).
fn batch(address: &Address, batch: &str, tag: Option<&str>) -> Result<bool> {
    let invalid = |reason: String| Err(Error::InvalidBatch { reason });
    size(address, batch, tag, MAX_RECORD_BYTES)?;
    if batch.contains('\n') {
        return invalid("a batch must be JSON text on one line".into());
    }
    if !batch.trim_start().starts_with('[') {
        return invalid("a batch must be a JSON array".into());
    }
    // Exactly what recovery does (`Decoder::apply_str`): serde_json's parser, with its
    // nesting limit, straight into wire ops, one op at a time (no JSON tree of the batch, and
    // never all its ops).
    let unrecoverable = |source: crate::Error| Error::Unrecoverable {
        address: address.clone(),
        source,
    };
    let mut check = WireCheck::default();
    let mut first_is_replace = None;
    let mut failed = None;
    let parsed = crate::wire::de::parse(batch, crate::wire::de::Mode::Decode, &mut |i, op| {
        if i == 0 {
            first_is_replace = Some(matches!(op, WireOp::Replace(_)));
        }
        // The first op the check refuses is the one reported; the rest is still parsed, as
        // a JSON or grammar error later in the text comes first.
        if failed.is_none() {
            failed = check.op(i, &op).err();
        }
        Ok(())
    });
    if let Err(e) = parsed {
        return match e.kind() {
            ErrorKind::Json(e) => invalid(format!("invalid JSON: {e}")),
            _ => Err(unrecoverable(e)),
        };
    }
    let base = first_is_replace == Some(true);
    if let Some(tag) = tag.filter(|t| is_base_tag(Some(t))) {
        if !base {
            return invalid(format!(
                "a record tagged {tag:?} must start with an `r` op: recovery starts there with \
                 no value"
            ));
        }
    }
    match failed {
        Some(e) => Err(unrecoverable(e)),
        None => Ok(base),
    }
}

/// Checks ops before they are encoded: the static bounds of [`Limits::default`] and the path
/// rules (see the module documentation for what cannot be checked here).
///
/// # Errors
///
/// The first op that recovery could never apply, with its position and path.
pub(crate) fn ops(batch: &[Op]) -> crate::Result<()> {
    for (i, op) in batch.iter().enumerate() {
        let at = |e: crate::Error| match op.path() {
            Some(p) if e.path().is_none() => e.at_op(i).at_path(p.clone()),
            _ => e.at_op(i),
        };
        crate::validate::check_paths(op).map_err(at)?;
        let path_len = op.path().map_or(0, |p| p.len());
        match op {
            Op::Replace(v) => fits(v, 0).map_err(at)?,
            Op::Set(_, v) => fits(v, path_len).map_err(at)?,
            Op::Append(_, text) => append_fits(text).map_err(at)?,
            Op::Splice { items, .. } => splice_fits(items, path_len).map_err(at)?,
            Op::Delete(_) | Op::Truncate(..) => {}
        }
    }
    Ok(())
}

/// The decoder's rules that hold whatever came before, plus the static bounds, on a wire
/// batch, op by op as it is parsed. Path lengths are known for inline paths, short forms whose path is known, and
/// ids defined in this batch; otherwise a lower bound is used (1 for the verbs that need a
/// non-empty path, 0 for `p`), so nothing recoverable is ever refused.
#[derive(Default)]
struct WireCheck {
    /// Path lengths of the ids defined in this batch.
    ids: HashMap<usize, usize>,
    /// Whether an `r` cleared the id table: from then on, only ids defined here resolve.
    cleared: bool,
    /// The previous op's path length, for short forms: `None` when there is none (an `r`
    /// resets it, as at the start of a batch), `Some(None)` when its length is unknown.
    previous: Option<Option<usize>>,
}

impl WireCheck {
    /// Checks the op at position `i`, after every op before it.
    fn op(&mut self, i: usize, op: &WireOp) -> crate::Result<()> {
        let (ids, cleared, previous) = (&mut self.ids, &mut self.cleared, &mut self.previous);
        let mut resolve = |path: &Option<PathRef>| -> crate::Result<Option<usize>> {
            let len = match path {
                None => previous.ok_or(ErrorKind::NoPreviousPath)?,
                Some(PathRef::Path(p)) => Some(p.len()),
                Some(PathRef::Id(id)) => match ids.get(id) {
                    Some(&len) => Some(len),
                    None if *cleared => return Err(ErrorKind::UnknownId(*id).into()),
                    None => None,
                },
            };
            *previous = Some(len);
            Ok(len)
        };
        let non_empty = |len: Option<usize>, verb: char| -> crate::Result<usize> {
            match len {
                Some(0) => Err(ErrorKind::EmptyPath { verb }.into()),
                Some(len) => Ok(len),
                None => Ok(1),
            }
        };
        let result = match op {
            WireOp::Define { id, path } => {
                self.ids.insert(*id, path.len());
                Ok(())
            }
            WireOp::Replace(v) => {
                self.ids.clear();
                self.cleared = true;
                self.previous = None;
                fits(v, 0)
            }
            WireOp::Set(p, v) => resolve(p)
                .and_then(|len| non_empty(len, 's'))
                .and_then(|len| fits(v, len)),
            WireOp::Delete(p) => resolve(p).and_then(|len| non_empty(len, 'd')).map(drop),
            WireOp::Append(p, text) => resolve(p)
                .and_then(|len| non_empty(len, 'a'))
                .and_then(|_| append_fits(text)),
            WireOp::Truncate(p, _) => resolve(p).and_then(|len| non_empty(len, 't')).map(drop),
            WireOp::Splice { path, items, .. } => {
                resolve(path).and_then(|len| splice_fits(items, len.unwrap_or(0)))
            }
        };
        result.map_err(|e| e.at_op(i))
    }
}

/// Whether `value`, placed `at` containers deep, keeps the document within the default depth.
fn fits(value: &Value, at: usize) -> crate::Result<()> {
    Limits::default().check_value(value, at)
}

fn append_fits(text: &str) -> crate::Result<()> {
    Limits::default().check_text(text)
}

fn splice_fits(items: &[Value], path_len: usize) -> crate::Result<()> {
    Limits::default().check_items(items, path_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_from_outside_is_tagged_a_base_when_it_starts_with_r() {
        let at = Address::new("lanes", "main");
        let tag = |text| CheckedBatch::tagging_bases(&at, text).map(|c| c.tag());
        assert_eq!(tag(r#"[["r",{"n":1}],["s",["n"],2]]"#).unwrap(), Some(BASE));
        // The verb as JSON spells it, escapes included.
        assert_eq!(tag(r#" [ [ "\u0072" , 1 ] ]"#).unwrap(), Some(BASE));
        assert_eq!(tag(r#"[["s",["n"],2],["r",{}]]"#).unwrap(), None);
        assert_eq!(tag("[]").unwrap(), None);
        assert!(matches!(tag(r#"{"r":1}"#), Err(Error::InvalidBatch { .. })));
        assert!(matches!(
            tag(r#"[["d"]]"#),
            Err(Error::Unrecoverable { .. })
        ));
    }

    fn nested(n: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..n {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn the_static_check_agrees_with_apply() {
        let doc = Some(json!({"a": {"b": []}}));
        for n in 110..125 {
            let value = nested(n);
            let batches = [
                vec![Op::Replace(value.clone())],
                vec![Op::Set(crate::path!["a", "b"], value.clone())],
                vec![Op::Splice {
                    path: crate::path!["a", "b"].into(),
                    index: 0,
                    remove: 0,
                    items: vec![value.clone()],
                }],
            ];
            for batch in batches {
                let mut copy = doc.clone();
                let applied = crate::apply(&mut copy, batch.iter()).is_ok();
                assert_eq!(ops(&batch).is_ok(), applied, "{n}: {batch:?}");
            }
        }
    }
}
