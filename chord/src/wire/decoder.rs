//! The stateful decoder: resolves ids and short forms, then validates with the decoded grammar.

use serde_json::Value;

use crate::apply::{Applier, Limits};
use crate::error::{Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path};
use crate::validate;
use crate::wire::de::{self, Mode};
use crate::wire::grammar;
use crate::wire::op::{PathRef, WireOp};
use crate::wire::{table, MAX_IDS, MAX_ID_PATH_UNITS};

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
///
/// Memory: at most [`MAX_IDS`] paths of at most [`MAX_ID_PATH_UNITS`] key units each (a
/// definition beyond either is refused with [`ErrorKind::LimitExceeded`]), whatever the
/// stream sends.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Paths by id (`None`: not defined). Ids are below `MAX_IDS`, so a vector.
    pub(super) ids: Vec<Option<Path>>,
    pub(super) poisoned: bool,
}

/// What [`Decoder::apply_str`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// How many ops the batch decoded to (an id definition is not an op).
    pub ops: usize,
    /// Whether its first op was an `r`: a base batch, which [`is_base`](crate::is_base)
    /// says of decoded ops.
    pub base: bool,
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
    ///
    /// # Cost
    ///
    /// The text is parsed straight into ops, one op's elements at a time: no JSON tree of the
    /// batch is built. The memory is that of the ops returned (a path named again by an id or
    /// by omission, or written again in full right after itself, shares the earlier op's
    /// segments), plus the largest single op while it is read.
    pub fn decode_str(&mut self, json: &str) -> Result<Vec<Op>> {
        self.check_poisoned()?;
        let mut out = Vec::new();
        let mut previous = None;
        let parsed = de::parse(json, Mode::Decode, &mut |i, wire| {
            match self.decode_op(wire, &mut previous) {
                Ok(Some(op)) => de::push(&mut out, op),
                Ok(None) => {}
                Err(e) => return Err(e.at_op(i)),
            }
            Ok(())
        });
        match parsed {
            Ok(()) => {
                out.shrink_to_fit();
                Ok(out)
            }
            Err(e) => Err(self.poison(e)),
        }
    }

    /// Checks one wire batch given as JSON text exactly as [`decode_str`](Decoder::decode_str)
    /// would, and updates the id table as it would, without building the values the ops carry:
    /// `Ok` exactly when `decode_str` would return ops, and the same error otherwise (the
    /// decoder is poisoned by a failure, as there).
    ///
    /// For a reader that only needs to know whether a batch decodes: a server validating what
    /// it is sent, a store checking what it appends.
    ///
    /// # Cost
    ///
    /// The ids and paths of the batch, one at a time, plus the largest count or short-form
    /// splice's items while read; an `r`'s or `s`'s value, an `a`'s text and a long-form `p`'s
    /// items are parsed and dropped as they are read (nesting still bounded by serde_json's
    /// recursion limit).
    ///
    /// # Errors
    ///
    /// As [`decode_str`](Decoder::decode_str).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut dec = chord::Decoder::new();
    /// dec.check_str(r##"[["r",{"big":[1,2,3]}],["#",0,["big"]]]"##).unwrap();
    /// // The id defined by the checked batch is known to the next one.
    /// assert_eq!(dec.decode_str(r#"[["d",0]]"#).unwrap(), vec![chord::Op::Delete(chord::path!["big"])]);
    /// let err = dec.check_str(r#"[["a",7,"x"]]"#).unwrap_err();
    /// assert_eq!(err.to_string(), "op 0: path id 7 is not defined in this stream");
    /// ```
    pub fn check_str(&mut self, json: &str) -> Result<()> {
        self.check_poisoned()?;
        let mut previous = None;
        let parsed = de::parse(json, Mode::Check, &mut |i, wire| {
            self.decode_op(wire, &mut previous)
                .map(drop)
                .map_err(|e| e.at_op(i))
        });
        parsed.map_err(|e| self.poison(e))
    }

    /// Decodes one wire batch given as JSON text and applies it to `target` as it is read,
    /// atomically: what [`decode_str`](Decoder::decode_str) followed by
    /// [`apply_with`](crate::apply_with) does, without ever holding the batch's ops.
    ///
    /// The outcome is theirs exactly: on success `target` holds the new value; on a decoding
    /// error (invalid JSON, the wire grammar, an unknown id, ...) `target` is unchanged and
    /// the decoder poisoned ([`is_poisoned`](Decoder::is_poisoned)), as `decode_str` would
    /// leave it; on an apply error `target` is unchanged and the decoder is not poisoned (the
    /// ids the batch defines are known to the next one, as after a successful `decode_str`).
    /// A decoding error anywhere in the batch wins over an apply error at an earlier op, as
    /// when decoding comes first.
    ///
    /// # Cost
    ///
    /// One op at a time is decoded, applied and dropped, so the memory is that of the
    /// largest op while it is read, plus the batch's undo log: one entry per location the
    /// batch changes (an op that changes the location the previous op changed folds into its
    /// entry, and a later `r` drops every entry since the first), and one per distinct member
    /// of a run of deletes. A batch of a million ops rewriting one location holds a few
    /// entries, not a million ops.
    ///
    /// # Errors
    ///
    /// As [`decode_str`](Decoder::decode_str) and [`apply_with`](crate::apply_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use chord::{Decoder, Limits};
    /// use serde_json::json;
    /// let mut dec = Decoder::new();
    /// let mut doc = None;
    /// let applied = dec
    ///     .apply_str(r##"[["r",{"out":"a"}],["#",0,["out"]],["a",0,"b"]]"##, &mut doc, &Limits::default())
    ///     .unwrap();
    /// assert!(applied.base);
    /// assert_eq!(doc, Some(json!({"out": "ab"})));
    /// // An op that cannot apply leaves the value as it was; the decoder goes on.
    /// let err = dec.apply_str(r#"[["a",0,"c"],["a",["gone"],"x"]]"#, &mut doc, &Limits::default());
    /// assert_eq!(err.unwrap_err().to_string(), "op 1 at gone: no such member or element");
    /// assert_eq!(doc, Some(json!({"out": "ab"})));
    /// assert!(!dec.is_poisoned());
    /// ```
    pub fn apply_str(
        &mut self,
        json: &str,
        target: &mut Option<Value>,
        limits: &Limits,
    ) -> Result<Applied> {
        self.check_poisoned()?;
        let mut applier = Applier::new(limits);
        let mut applied = Applied {
            ops: 0,
            base: false,
        };
        let mut failed = None;
        let mut previous = None;
        let parsed = de::parse(json, Mode::Decode, &mut |i, wire| {
            let Some(op) = self
                .decode_op(wire, &mut previous)
                .map_err(|e| e.at_op(i))?
            else {
                return Ok(());
            };
            // An apply error names the op by its position among the decoded ops (id
            // definitions are not ops), as applying a decoded batch does.
            let k = applied.ops;
            if k == 0 {
                applied.base = matches!(op, Op::Replace(_));
            }
            applied.ops += 1;
            // After an op fails to apply, the rest is still decoded: a decoding error later
            // in the batch wins, and the ids it defines are kept.
            if failed.is_none() {
                failed = applier.op(target, k, op).err();
            }
            Ok(())
        });
        if let Err(e) = parsed {
            applier.rollback(target);
            return Err(self.poison(e));
        }
        match failed {
            Some(e) => {
                applier.rollback(target);
                Err(e)
            }
            None => applier.finish(target).map(|()| applied),
        }
    }

    /// Whether the decoder refuses every batch, after one failed to decode.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Decodes one wire batch given as a parsed JSON value.
    ///
    /// # Errors
    ///
    /// As [`decode_str`](Decoder::decode_str).
    pub fn decode_value(&mut self, value: Value) -> Result<Vec<Op>> {
        self.check_poisoned()?;
        match grammar::wire_batch_from_value(value) {
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
                Ok(Some(op)) => de::push(&mut out, op),
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
                if id >= MAX_IDS {
                    let limit = ErrorKind::LimitExceeded {
                        limit: "path id",
                        max: MAX_IDS - 1,
                    };
                    return Err(limit.into());
                }
                if !table::internable(&path) {
                    let limit = ErrorKind::LimitExceeded {
                        limit: "UTF-16 units of key text in a path with an id",
                        max: MAX_ID_PATH_UNITS,
                    };
                    return Err(Error::from(limit).at_path(path));
                }
                if self.ids.len() <= id {
                    self.ids.resize(id + 1, None);
                }
                self.ids[id] = Some(path);
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
            // The same path written out again right after itself shares the earlier
            // segments (the new copy is dropped at once).
            Some(PathRef::Path(p)) => match previous {
                Some(q) if *q == p => q.clone(),
                _ => p,
            },
            Some(PathRef::Id(id)) => self
                .ids
                .get(id)
                .and_then(Option::clone)
                .ok_or(ErrorKind::UnknownId(id))?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Encoder, Op};

    fn limit_of(result: Result<Vec<Op>>) -> &'static str {
        match result.map_err(|e| e.kind().clone()) {
            Err(ErrorKind::LimitExceeded { limit, .. }) => limit,
            other => panic!("expected a limit error, got {other:?}"),
        }
    }

    #[test]
    fn definitions_beyond_the_table_bounds_are_refused() {
        let define = |id: usize, path: &str| format!(r##"[["#",{id},{path}]]"##);
        assert_eq!(
            limit_of(Decoder::new().decode_str(&define(MAX_IDS, r#"["a"]"#))),
            "path id"
        );
        let half = "x".repeat(MAX_ID_PATH_UNITS / 2);
        let ok = define(0, &format!(r#"["{half}",7,"{half}"]"#));
        assert!(Decoder::new().decode_str(&ok).is_ok());
        // "é" is one UTF-16 unit in two UTF-8 bytes; "😀" two units in four bytes.
        let over = define(
            0,
            &format!(
                r#"["{half}","{}😀"]"#,
                "é".repeat(MAX_ID_PATH_UNITS / 2 - 1)
            ),
        );
        assert!(limit_of(Decoder::new().decode_str(&over)).starts_with("UTF-16 units"));
    }

    /// Every path of `paths` set `rounds` times, in order, through `enc` and a decoder.
    fn round_trip(enc: &mut Encoder, paths: usize, rounds: usize) -> Decoder {
        let mut dec = Decoder::new();
        for round in 0..rounds {
            for i in 0..paths {
                let batch = vec![Op::Set(crate::path!["k", i], (round * 100_000 + i).into())];
                let text = enc.encode(&batch).to_json();
                assert_eq!(dec.decode_str(&text).unwrap(), batch, "{text}");
            }
        }
        dec
    }

    #[test]
    fn an_encoder_with_more_paths_than_ids_stays_decodable() {
        // Many more distinct paths than ids: ids are taken, recycled and redefined; the
        // decoder follows every redefinition and its table stays within the bound.
        let mut enc = Encoder {
            table: crate::wire::table::Table::with_limit(8),
            numbers: crate::wire::Numbers::Serde,
        };
        let dec = round_trip(&mut enc, 64, 4);
        assert_eq!(enc.table.ids(), 8);
        assert!(dec.ids.len() <= 8);

        let mut enc = Encoder::new();
        let dec = round_trip(&mut enc, 3 * MAX_IDS, 3);
        assert!(enc.table.ids() <= MAX_IDS && dec.ids.len() <= MAX_IDS);
    }
}
