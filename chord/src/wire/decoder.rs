//! The stateful decoder: resolves ids and short forms, then validates with the decoded grammar.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path};
use crate::validate;
use crate::wire::op::{PathRef, WireOp};

/// Decodes one stream's wire batches back into ops. Use a fresh decoder for every stream,
/// and start it at a base batch (or at the stream's beginning).
///
/// A decoder that fails on a batch is *poisoned*: later batches may reference ids the failed
/// batch defined, so it refuses them with [`ErrorKind::DecoderPoisoned`]. Recover by
/// resubscribing (or re-reading from the last base batch) with a fresh decoder.
///
/// # Examples
///
/// ```
/// use chord::{path, Decoder, Op};
/// let mut dec = Decoder::new();
/// let ops = dec.decode_str(r##"[["#",0,["out"]],["a",0,"b"],["t",2]]"##).unwrap();
/// assert_eq!(ops, vec![Op::Append(path!["out"], "b".into()), Op::Truncate(path!["out"], 2)]);
/// // The id lives on across batches; omission does not.
/// assert!(dec.decode_str(r#"[["a",0,"c"]]"#).is_ok());
/// assert!(dec.decode_str(r#"[["a","c"]]"#).is_err());
/// ```
#[derive(Debug, Default)]
pub struct Decoder {
    ids: HashMap<usize, Path>,
    poisoned: bool,
}

impl Decoder {
    /// A fresh decoder with no ids.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decodes one wire batch given as JSON text.
    ///
    /// # Errors
    ///
    /// Invalid JSON; any wire-grammar violation (with the op's position); an unknown id; a
    /// short form with no previous path in the batch; a resolved path that breaks the decoded
    /// grammar (`s`, `d`, `a`, `t` on the root).
    pub fn decode_str(&mut self, json: &str) -> Result<Vec<Op>> {
        self.check_poisoned()?;
        let value: Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(e) => return Err(self.poison(e.into())),
        };
        self.decode_value(value)
    }

    /// Decodes one wire batch given as a parsed JSON value.
    ///
    /// # Errors
    ///
    /// As [`decode_str`](Decoder::decode_str).
    pub fn decode_value(&mut self, value: Value) -> Result<Vec<Op>> {
        self.check_poisoned()?;
        match validate::wire_batch_from_value(value) {
            Ok(batch) => self.decode(batch),
            Err(e) => Err(self.poison(e)),
        }
    }

    /// Decodes one batch of wire ops.
    ///
    /// # Errors
    ///
    /// As [`decode_str`](Decoder::decode_str).
    pub fn decode(&mut self, batch: Vec<WireOp>) -> Result<Vec<Op>> {
        self.check_poisoned()?;
        let mut out = Vec::with_capacity(batch.len());
        let mut previous: Option<Path> = None;
        for (i, wire) in batch.into_iter().enumerate() {
            match self.decode_op(wire, &mut previous) {
                Ok(Some(op)) => out.push(op),
                Ok(None) => {}
                Err(e) => return Err(self.poison(e.at_op(i))),
            }
        }
        Ok(out)
    }

    /// Refuses every batch once poisoned, before looking at it: a poisoned decoder answers
    /// [`ErrorKind::DecoderPoisoned`] whatever it is given, invalid JSON included.
    fn check_poisoned(&self) -> Result<()> {
        if self.poisoned {
            return Err(ErrorKind::DecoderPoisoned.into());
        }
        Ok(())
    }

    fn poison(&mut self, e: Error) -> Error {
        self.poisoned = true;
        e
    }

    fn decode_op(&mut self, wire: WireOp, previous: &mut Option<Path>) -> Result<Option<Op>> {
        let op = match wire {
            WireOp::Define { id, path } => {
                if let Some((position, segment)) = path.reserved_segment() {
                    let kind = ErrorKind::ReservedSegment {
                        segment: segment.to_owned(),
                        position,
                    };
                    return Err(Error::from(kind).at_path(path));
                }
                self.ids.insert(id, path);
                return Ok(None);
            }
            WireOp::Replace(v) => {
                self.ids.clear();
                *previous = None;
                Op::Replace(v)
            }
            WireOp::Set(p, v) => Op::Set(self.non_empty(p, previous, 's')?, v),
            WireOp::Delete(p) => Op::Delete(self.non_empty(p, previous, 'd')?),
            WireOp::Append(p, t) => Op::Append(self.non_empty(p, previous, 'a')?, t),
            WireOp::Truncate(p, n) => Op::Truncate(self.non_empty(p, previous, 't')?, n),
            WireOp::Splice {
                path,
                index,
                remove,
                items,
            } => Op::Splice {
                path: self.resolve(path, previous)?,
                index,
                remove,
                items,
            },
        };
        validate::check_paths(&op)?;
        Ok(Some(op))
    }

    fn resolve(&self, path: Option<PathRef>, previous: &mut Option<Path>) -> Result<Path> {
        let resolved = match path {
            None => previous.clone().ok_or(ErrorKind::NoPreviousPath)?,
            Some(PathRef::Path(p)) => p,
            Some(PathRef::Id(id)) => self.ids.get(&id).cloned().ok_or(ErrorKind::UnknownId(id))?,
        };
        *previous = Some(resolved.clone());
        Ok(resolved)
    }

    fn non_empty(
        &self,
        path: Option<PathRef>,
        previous: &mut Option<Path>,
        verb: char,
    ) -> Result<NonEmptyPath> {
        NonEmptyPath::try_from(self.resolve(path, previous)?)
            .map_err(|_| ErrorKind::EmptyPath { verb }.into())
    }
}
