//! Where a flush writes: a vector of ops, or wire bytes through the stream's encoder.
//!
//! One flush walk serves both [`Tracker::flush`](crate::Tracker::flush) and
//! [`Tracker::flush_into`](crate::Tracker::flush_into). The hot cases (an append, a splice's
//! items) are written to bytes without building an [`Op`]: no path clone, no `Value` per
//! spliced item; so is a reassigned string's `s`. Rarer ones (diffs of reassigned values,
//! windows) build their ops, and the encoder writes each as it comes.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::json_write::{write_last_str, write_uint, write_uint_between};
use crate::op::Op;
use crate::path::{Path, Seg};
use crate::tracker::check;
use crate::tracker::scalar::Scalar;
use crate::tracker::Trail;
use crate::wire::table::CachedCell;
use crate::wire::Numbers;
use crate::Encoder;

/// The destination of one flush. Not a public API (the derive's generated code passes it on).
#[doc(hidden)]
pub struct Out<'a> {
    sink: Sink<'a>,
    /// The walk forgets each node's record once written (a flush that cannot fail; see
    /// `Risk`).
    pub(crate) reset: bool,
    /// Where the fallbacks this flush writes are listed: each path and the bytes of its ops
    /// (see [`fallback`](super::fallback)); the tracker counts them once the flush succeeds.
    /// (Borrowed, not owned: a flush moves and drops nothing for them when there are none.)
    pub(crate) fallbacks: &'a mut Vec<(Path, u64)>,
}

enum Sink<'a> {
    Ops(&'a mut Vec<Op>),
    Wire {
        enc: &'a mut Encoder,
        buf: &'a mut Vec<u8>,
    },
    /// The walk that finds the accepted value of a location reassigned after edits (see
    /// [`Out::undo`]): each record there writes what restores the accepted value at its
    /// path; a record that cannot (its accepted value is not known) writes an op, and the
    /// walk has failed.
    Undo {
        restores: &'a mut Vec<Restore>,
        failed: bool,
    },
}

/// What restores the accepted value at a path relative to the walk's start (the path
/// without its first segment): the accepted JSON there, or `None` where it was absent.
pub(crate) type Restore = (Vec<Seg>, Option<Value>);

impl<'a> Out<'a> {
    /// Collects ops; lists fallbacks in `fallbacks`.
    pub(crate) fn ops(ops: &'a mut Vec<Op>, fallbacks: &'a mut Vec<(Path, u64)>) -> Out<'a> {
        Out {
            sink: Sink::Ops(ops),
            reset: false,
            fallbacks,
        }
    }

    /// Writes the batch's ops through `enc` into `buf`, after the batch's opening `[`; lists
    /// fallbacks in `fallbacks`.
    pub(crate) fn wire(
        enc: &'a mut Encoder,
        buf: &'a mut Vec<u8>,
        fallbacks: &'a mut Vec<(Path, u64)>,
    ) -> Out<'a> {
        Out {
            sink: Sink::Wire { enc, buf },
            reset: false,
            fallbacks,
        }
    }

    /// Collects, into `restores`, what restores the accepted value of each record below the
    /// node the walk starts at: the reverse of a flush, for a location reassigned after edits,
    /// whose accepted value is then known and compared with the new one. Fails (see
    /// [`undo_failed`](Out::undo_failed)) at a record whose accepted value is not known.
    pub(crate) fn undo(
        restores: &'a mut Vec<Restore>,
        fallbacks: &'a mut Vec<(Path, u64)>,
    ) -> Out<'a> {
        Out {
            sink: Sink::Undo {
                restores,
                failed: false,
            },
            reset: false,
            fallbacks,
        }
    }

    /// Whether this is an [`undo`](Out::undo) walk.
    #[inline]
    pub(crate) fn undoing(&self) -> bool {
        matches!(self.sink, Sink::Undo { .. })
    }

    /// Whether an [`undo`](Out::undo) walk met a record it cannot reverse.
    pub(crate) fn undo_failed(&self) -> bool {
        matches!(self.sink, Sink::Undo { failed: true, .. })
    }

    /// In an [`undo`](Out::undo) walk, notes that the accepted value at `path` (the walk's
    /// start first) was `value` (`None`: absent).
    pub(crate) fn restore(&mut self, path: &Trail<'_>, value: Option<Value>) {
        if let Sink::Undo { restores, .. } = &mut self.sink {
            restores.push((
                path.to_path().segments().iter().skip(1).cloned().collect(),
                value,
            ));
        }
    }

    /// In an [`undo`](Out::undo) walk, notes a record it cannot reverse.
    pub(crate) fn cannot_undo(&mut self) {
        if let Sink::Undo { failed, .. } = &mut self.sink {
            *failed = true;
        }
    }

    /// The same destination; `reset`: for a walk that forgets each node's record once
    /// written.
    pub(crate) fn resetting(self, reset: bool) -> Out<'a> {
        Out { reset, ..self }
    }

    /// Where the destination stands: what [`count_fallback`](Out::count_fallback) counts from.
    pub(crate) fn mark(&self) -> usize {
        match &self.sink {
            Sink::Ops(ops) => ops.len(),
            Sink::Wire { buf, .. } => buf.len(),
            Sink::Undo { .. } => 0,
        }
    }

    /// Counts what was written since `mark` as a fallback at `path`.
    #[cold]
    pub(crate) fn count_fallback(&mut self, path: Path, mark: usize) {
        let bytes = match &self.sink {
            Sink::Ops(ops) => crate::diff::json_len(&ops[mark..]),
            Sink::Wire { buf, .. } => buf.len() - mark,
            Sink::Undo { .. } => return,
        };
        self.fallbacks.push((path, bytes as u64));
    }

    /// One op.
    pub(crate) fn push(&mut self, op: Op) {
        match &mut self.sink {
            Sink::Ops(ops) => ops.push(op),
            Sink::Wire { enc, buf } => enc.write(&op, buf),
            Sink::Undo { failed, .. } => *failed = true,
        }
    }

    /// Ops, in order.
    pub(crate) fn extend(&mut self, ops: impl IntoIterator<Item = Op>) {
        for op in ops {
            self.push(op);
        }
    }

    /// `["s", path, value]`, or `["r", value]` at the root.
    pub(crate) fn set(&mut self, path: &Trail<'_>, value: Value) {
        self.set_at(None, path, value);
    }

    /// [`set`](Out::set) of the location whose node caches its path's id in `wire`.
    pub(crate) fn set_cached(&mut self, wire: &CachedCell, path: &Trail<'_>, value: Value) {
        self.set_at(Some(wire), path, value);
    }

    fn set_at(&mut self, wire: Option<&CachedCell>, path: &Trail<'_>, value: Value) {
        match &mut self.sink {
            Sink::Wire { enc, buf } if !path.is_empty() => {
                // (No `Op`: its path would be a copy of the trail's segments.)
                enc.head(buf, 's', path, wire);
                buf.push(b',');
                // (A `Value` always serializes.)
                let _ = crate::wire::write_json(buf, &value, enc.numbers);
                buf.push(b']');
            }
            _ => self.push(match path.non_empty() {
                Some(p) => Op::Set(p, value),
                None => Op::Replace(value),
            }),
        }
    }

    /// [`set_cached`](Out::set_cached) of a scalar leaf, written to the wire without building
    /// a `Value` (integers are written exactly, as either number spelling writes them).
    pub(crate) fn set_scalar(&mut self, wire: &CachedCell, path: &Trail<'_>, value: Scalar) {
        match &mut self.sink {
            Sink::Wire { enc, buf } if !path.is_empty() => {
                enc.head(buf, 's', path, Some(wire));
                match value {
                    Scalar::Unit => buf.extend_from_slice(b",null]"),
                    Scalar::Bool(true) => buf.extend_from_slice(b",true]"),
                    Scalar::Bool(false) => buf.extend_from_slice(b",false]"),
                    Scalar::Char(c) => write_last_str(buf, c.encode_utf8(&mut [0; 4])),
                    Scalar::Int(i) => {
                        let open: &[u8] = if i < 0 { b",-" } else { b"," };
                        write_uint_between(buf, open, i.unsigned_abs(), b"]");
                    }
                    Scalar::UInt(u) => write_uint_between(buf, b",", u, b"]"),
                }
            }
            _ => self.set_cached(wire, path, value.value()),
        }
    }

    /// `["s", path, text]`, or `["r", text]` at the root: [`set`](Out::set) of a string,
    /// written to the wire without building a `Value`.
    pub(crate) fn set_text(&mut self, path: &Trail<'_>, text: &str) {
        match &mut self.sink {
            Sink::Wire { enc, buf } if !path.is_empty() => {
                enc.head(buf, 's', path, None);
                write_last_str(buf, text);
            }
            _ => self.set(path, Value::String(text.to_owned())),
        }
    }

    /// [`set`](Out::set) of `value`, checked as every value sent is; on the wire, written
    /// without building a `Value`.
    pub(crate) fn set_checked<T: Serialize + ?Sized>(
        &mut self,
        path: &Trail<'_>,
        value: &T,
    ) -> Result<()> {
        match &mut self.sink {
            Sink::Wire { enc, buf } if !path.is_empty() => {
                enc.head(buf, 's', path, None);
                buf.push(b',');
                write_checked(buf, value, enc.numbers, || path.to_path())?;
                buf.push(b']');
            }
            _ => {
                let value = crate::tracker::to_json(value, path)?;
                self.set(path, value);
            }
        }
        Ok(())
    }

    /// `["d", path]`; nothing at the root (which cannot be deleted).
    pub(crate) fn delete(&mut self, path: &Trail<'_>) {
        match &mut self.sink {
            Sink::Wire { enc, buf } if !path.is_empty() => {
                enc.head(buf, 'd', path, None);
                buf.push(b']');
            }
            _ => {
                if let Some(p) = path.non_empty() {
                    self.push(Op::Delete(p));
                }
            }
        }
    }

    /// `["a", path, text]`; `path` is not the root; `wire` is the path's node's cached id.
    /// (Always inline: a streaming flush's one op.)
    #[inline(always)]
    pub(crate) fn append(&mut self, wire: &CachedCell, path: &Trail<'_>, text: &str) {
        match &mut self.sink {
            Sink::Ops(ops) => {
                if let Some(p) = path.non_empty() {
                    ops.push(Op::Append(p, text.to_owned()));
                }
            }
            Sink::Wire { enc, buf } => {
                enc.head(buf, 'a', path, Some(wire));
                write_last_str(buf, text);
            }
            Sink::Undo { failed, .. } => *failed = true,
        }
    }

    /// `["p", path, index, remove, items]`, the items given with their indices in the current
    /// array (for the path of an error), checked as every value sent is.
    pub(crate) fn splice<'v, T: Serialize + ?Sized + 'v>(
        &mut self,
        wire: &CachedCell,
        path: &Trail<'_>,
        index: usize,
        remove: usize,
        items: impl Iterator<Item = (usize, &'v T)>,
    ) -> Result<()> {
        match &mut self.sink {
            Sink::Ops(ops) => {
                let path = path.to_path();
                let mut values = Vec::new();
                for (at, item) in items {
                    values.push(crate::tracker::to_json(item, &Path::from(path.child(at)))?);
                }
                ops.push(Op::Splice {
                    path,
                    index,
                    remove,
                    items: values,
                });
            }
            Sink::Wire { enc, buf } => {
                enc.head(buf, 'p', path, Some(wire));
                buf.push(b',');
                write_uint(buf, index as u64);
                buf.push(b',');
                write_uint(buf, remove as u64);
                buf.extend_from_slice(b",[");
                for (i, (at, item)) in items.enumerate() {
                    if i > 0 {
                        buf.push(b',');
                    }
                    let at = || path.to_path().child(Seg::Index(at)).into();
                    write_checked(buf, item, enc.numbers, at)?;
                }
                buf.extend_from_slice(b"]]");
            }
            Sink::Undo { failed, .. } => *failed = true,
        }
        Ok(())
    }
}

/// Writes `value` as JSON after the check every value sent goes through (`tracker::to_json`'s,
/// without building a `Value`); an error names the path `at` gives.
pub(crate) fn write_checked<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    value: &T,
    numbers: Numbers,
    at: impl Fn() -> Path,
) -> Result<()> {
    let fail = |why: String| Error::from(ErrorKind::NotJson(why)).at_path(at());
    check::check(value).map_err(|e| fail(e.0))?;
    crate::wire::write_json(buf, value, numbers).map_err(|e| fail(e.to_string()))?;
    Ok(())
}
