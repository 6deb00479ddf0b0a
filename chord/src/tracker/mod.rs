//! The tracker: typed state, a dirty tree of recorded intent, and `flush`.

mod check;
pub(crate) mod compact;
mod cx;
mod edit;
pub(crate) mod fallback;
pub(crate) mod flatten;
pub(crate) mod js_safe;
mod node;
mod out;
mod scalar;
pub(crate) mod seq;
pub(crate) mod structs;
pub(crate) mod text;
mod trail;

use std::ops::Deref;
use std::sync::atomic::Ordering;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::Path;
use crate::Encoder;

pub(crate) use crate::path::Segments;
pub use cx::{Cx, Fields};
pub use fallback::{Fallbacks, FALLBACK_PATHS};
pub use node::Node;
pub(crate) use node::{
    capped, flush_assigned, flush_reassigned, undo_assigned, Before, Key, Risk, Scalar, State,
};
pub use out::Out;
pub use trail::{Step, Trail};

/// A type whose mutations chord can record as intent.
///
/// Derive it for your structs and enums with `#[derive(Tracked)]`; chord implements it for
/// `String`, `Vec<T>`, `VecDeque<T>`, `Option<T>`, `Box<T>`, `BTreeMap<String, T>`,
/// `HashMap<String, T>`, `BTreeSet<T>` and `HashSet<T>` (as arrays), `serde_json::Value` and
/// the primitive types (`u128`/`i128` included). Each implementation names the typed proxy
/// that [`Tracker::state`] hands out for it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be tracked",
    label = "this type does not implement `chord::Tracked`",
    note = "derive `Tracked` for it, or mark the field `#[chord(opaque)]` to track it as one JSON value"
)]
pub trait Tracked: Serialize {
    /// The proxy through which mutations of this type are recorded.
    type Proxy<'a>
    where
        Self: 'a;

    #[doc(hidden)]
    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> Self::Proxy<'a>;

    #[doc(hidden)]
    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()>;

    /// Replaces the value through its proxy, as the proxy's `set` does. A derived struct's
    /// `set` is its fields' `set`s, so each field is compared on its own.
    #[doc(hidden)]
    fn __assign<'a>(proxy: &mut Self::Proxy<'a>, value: Self)
    where
        Self: Sized + 'a;
}

/// The proxy type of a [`Tracked`] type: `Proxy<'a, LaneView>` is what
/// `tracker.state()` returns for a `Tracker<LaneView>`.
pub type Proxy<'a, T> = <T as Tracked>::Proxy<'a>;

/// Serializes `value` for an op at `path`, refusing what JSON cannot carry faithfully.
pub(crate) fn to_json<T: Serialize + ?Sized, P: Segments + ?Sized>(
    value: &T,
    path: &P,
) -> Result<Value> {
    let fail = |why: String| Error::from(ErrorKind::NotJson(why)).at_path(path.to_path());
    check::check(value).map_err(|e| fail(e.0))?;
    serde_json::to_value(value).map_err(|e| fail(e.to_string()))
}

/// Room [`Tracker::flush_into`] makes in its buffer before writing: a streaming append's
/// batch (`[["a",3,"token"]]`) fits.
const MIN_BATCH_BYTES: usize = 64;

/// Starts tracking `value`. The first [`flush`](Tracker::flush) is always a base batch
/// (`[["r", value]]`), carrying any mutations made before it.
///
/// ```
/// use chord::{track, Op};
/// let mut t = track(serde_json::json!({"x": 0}));
/// assert!(matches!(t.flush().unwrap().as_slice(), [Op::Replace(_)]));
/// ```
pub fn track<T: Tracked>(value: T) -> Tracker<T> {
    Tracker::new(value)
}

/// Owns a tracked value, hands out proxies that record intent, and turns what was recorded
/// into ops at [`flush`](Tracker::flush).
///
/// Reads go through `Deref` (`tracker.transcript.len()`) or [`get`](Tracker::get) and record
/// nothing. Memory beyond the value itself is proportional to what changed since the last
/// flush: there is no baseline copy of the state.
pub struct Tracker<T> {
    value: T,
    root: Node,
    base: bool,
    js_safe: bool,
    /// `check::UNSAFE_INTEGERS` at the last flush.
    unsafe_seen: u64,
    /// The whole-value fallbacks its flushes wrote.
    fallbacks: Fallbacks,
    /// Those of the flush under way (empty between flushes): counted once it is accepted,
    /// since a refused one is flushed again.
    pending: Vec<(Path, u64)>,
}

impl<T: Tracked> Tracker<T> {
    /// Starts tracking `value`; see [`track`].
    pub fn new(value: T) -> Tracker<T> {
        Tracker {
            value,
            root: Node::under(&Risk::new()),
            base: true,
            js_safe: true,
            unsafe_seen: check::UNSAFE_INTEGERS.load(Ordering::Relaxed),
            fallbacks: Fallbacks::default(),
            pending: Vec::new(),
        }
    }

    /// Tracks a value that every replica already holds (recovered from a durable log, say):
    /// unlike [`new`](Tracker::new), the first flush emits only what changes from here.
    ///
    /// ```
    /// let mut t = chord::Tracker::resume(serde_json::json!({"n": 1}));
    /// assert!(t.flush().unwrap().is_empty());
    /// ```
    pub fn resume(value: T) -> Tracker<T> {
        Tracker {
            value,
            root: Node::under(&Risk::new()),
            base: false,
            js_safe: true,
            unsafe_seen: check::UNSAFE_INTEGERS.load(Ordering::Relaxed),
            fallbacks: Fallbacks::default(),
            pending: Vec::new(),
        }
    }

    /// Tracks a value whose replicas hold `held`, JSON that may differ from the value's own:
    /// a log written before the type gained a `#[serde(default)]` field, say. The first
    /// flush emits what turns `held` into the value (the structural diff, as
    /// [`diff`](crate::diff) computes it; `r` only when the two differ at the root), then
    /// changes as usual. The first flush serializes the whole value once.
    ///
    /// ```
    /// use chord::{path, Op, Tracker};
    /// use serde_json::json;
    /// // The log knew `{"n": 1}`; the type now also has `items`.
    /// let value = json!({"n": 1, "items": []});
    /// let mut t = Tracker::resume_from(value, json!({"n": 1}));
    /// assert_eq!(t.flush().unwrap(), vec![Op::Set(path!["items"], json!([]))]);
    /// assert!(t.flush().unwrap().is_empty());
    /// ```
    pub fn resume_from(value: T, held: serde_json::Value) -> Tracker<T> {
        let mut root = Node::under(&Risk::new());
        root.assign_before(Before::Value(held));
        Tracker {
            value,
            root,
            base: false,
            js_safe: true,
            unsafe_seen: check::UNSAFE_INTEGERS.load(Ordering::Relaxed),
            fallbacks: Fallbacks::default(),
            pending: Vec::new(),
        }
    }

    /// The proxy through which to mutate the value: for a derived struct, a struct of the
    /// fields' proxies, so `lane.answer += token` and disjoint borrows of two fields work.
    pub fn state(&mut self) -> T::Proxy<'_> {
        let node = if self.base {
            None // the next flush sends everything anyway
        } else {
            Some(&mut self.root)
        };
        self.value.__proxy(Cx::root(node))
    }

    /// Changes the value with any code at all: the whole value is compared with what the
    /// replicas hold at the next flush (its JSON is taken once now, and the difference is
    /// computed then). The fallback for changes no proxy models; prefer the proxies, whose
    /// ops cost only what changed.
    ///
    /// ```
    /// use chord::{path, Op, Tracker};
    /// use serde_json::json;
    /// let mut t = Tracker::resume(json!({"n": 1, "s": "x"}));
    /// t.edit(|v| v["n"] = json!(2));
    /// assert_eq!(t.flush().unwrap(), vec![Op::Set(path!["n"], json!(2))]);
    /// ```
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        if !self.base {
            self.root.assign_tracked(&self.value);
        }
        f(&mut self.value)
    }

    /// Whether integers beyond ±(2^53 − 1) are refused at flush (on by default). A
    /// JavaScript replica holds numbers as doubles and would silently round such an integer
    /// while a Rust replica keeps it exactly, so the replicas of one stream would differ. Turn
    /// it off only when every replica is a Rust one (or reads numbers exactly).
    ///
    /// ```
    /// let mut t = chord::track(serde_json::json!({"id": 9_007_199_254_740_993u64}));
    /// let e = t.flush().unwrap_err();
    /// assert_eq!(e.path(), Some(&chord::path!["id"].into()));
    /// t.set_js_safe(false);
    /// assert_eq!(t.flush().unwrap().len(), 1);
    /// ```
    pub fn set_js_safe(&mut self, on: bool) {
        self.js_safe = on;
    }

    /// Whether JS-safe mode is on (see [`set_js_safe`](Tracker::set_js_safe)).
    pub fn js_safe(&self) -> bool {
        self.js_safe
    }

    /// The value, for reading.
    pub fn get(&self) -> &T {
        &self.value
    }

    /// Replaces the whole value: the next flush is `[["r", next]]`, and changes recorded
    /// before it are discarded (they describe a value that no longer exists).
    pub fn replace(&mut self, next: T) {
        self.value = next;
        self.rebase();
    }

    /// Makes the next flush a base batch without changing the value (a checkpoint, or the
    /// first batch for a new subscriber).
    pub fn rebase(&mut self) {
        self.base = true;
        self.forget();
        // (Every node too: what they captured of the JSON the replicas held, a skipped
        // field's presence, is not what the base batch sends.)
        self.root = Node::under(&self.root.risk);
    }

    /// Accepts the changes recorded since the last flush without emitting them (for when the
    /// replicas already have them by other means).
    pub fn discard(&mut self) {
        self.forget();
    }

    /// Forgets every record (after a flush that wrote them, or to discard them).
    fn forget(&mut self) {
        self.root.reset();
        self.root.risk.clear();
    }

    /// Whether the next flush has anything to emit.
    pub fn is_dirty(&self) -> bool {
        self.base || self.root.is_dirty()
    }

    /// Turns what was recorded since the last flush into the smallest honest batch of ops
    /// that takes a replica from the last flush to the current value. Empty when nothing
    /// changed. `r` appears only at index 0, and only for a base batch.
    ///
    /// # Errors
    ///
    /// A value that JSON cannot carry faithfully (a non-finite float, a non-string map key,
    /// an integer beyond 64 bits, or beyond ±(2^53 − 1) in [JS-safe
    /// mode](Tracker::set_js_safe), a failing `Serialize` implementation), naming its path.
    /// Nothing is accepted then: the recorded changes stay for the next flush.
    pub fn flush(&mut self) -> Result<Vec<Op>> {
        let mut out = Vec::new();
        if self.base {
            out.push(Op::Replace(to_json(&self.value, &Trail::ROOT)?));
        } else {
            let resetting = self.resetting();
            let mut to = Out::ops(&mut out, &mut self.pending).resetting(resetting);
            let walked = self.value.__flush(&mut self.root, &Trail::ROOT, &mut to);
            if resetting {
                self.walked_resetting(walked)?;
                self.fallbacks.add(&mut self.pending);
                return Ok(out);
            }
            walked.inspect_err(|_| {
                self.pending.clear();
            })?;
        }
        // Every value sent went through `check` (at flush, or for edits kept across a
        // reassignment, when they were recorded), which counts unsafe integers.
        let seen = check::UNSAFE_INTEGERS.load(Ordering::Relaxed);
        if self.js_safe && seen != self.unsafe_seen {
            js_safe::check(&out).inspect_err(|_| self.pending.clear())?;
        }
        self.unsafe_seen = seen;
        self.base = false;
        self.forget();
        self.fallbacks.add(&mut self.pending);
        Ok(out)
    }

    /// The whole-value fallbacks of this tracker's flushes so far: each location whose
    /// change came through a plain `&mut` of a container (`&mut *state.items`, or a helper
    /// taking `&mut Vec<T>`) and so was serialized and diffed whole at its flush. A helper
    /// that takes the field's proxy type (`&mut VecProxy<'_, T>`, `&mut DequeProxy<'_, T>`,
    /// `&mut MapProxy<'_, M>`, `&mut TextProxy<'_>`) records its edits as ops instead.
    /// Leaves (numbers, booleans) assigned through `*x = v` are never fallbacks.
    pub fn fallbacks(&self) -> &Fallbacks {
        &self.fallbacks
    }

    /// Returns the fallbacks counted so far and starts counting afresh.
    pub fn take_fallbacks(&mut self) -> Fallbacks {
        std::mem::take(&mut self.fallbacks)
    }

    /// Whether this flush forgets each record as it writes it: when nothing recorded can
    /// fail (text edits and removals; see `Risk`). Such a flush sends no value, so no
    /// unsafe integer either, and needs no JS-safe check.
    #[inline]
    fn resetting(&self) -> bool {
        !self.root.risk.is_set()
    }

    /// The end of a flush walk that forgot each record as it wrote it: the root's own
    /// record is forgotten too. Such a walk writes no value and cannot fail; should it fail
    /// all the same, the records it forgot are lost, so the next flush is a base batch.
    #[inline]
    fn walked_resetting(&mut self, walked: Result<()>) -> Result<()> {
        match walked {
            Ok(()) => {
                self.root.reset_flushed();
                Ok(())
            }
            Err(e) => self.lost(e),
        }
    }

    /// [`walked_resetting`](Tracker::walked_resetting) after a failure.
    #[cold]
    #[inline(never)]
    fn lost(&mut self, e: Error) -> Result<()> {
        self.pending.clear();
        self.base = true;
        self.forget();
        self.root = Node::under(&self.root.risk);
        Err(e)
    }

    /// Flushes straight to the wire: what [`flush`](Tracker::flush) would return, encoded by
    /// `encoder` (this stream's) and appended to `out` as wire JSON text, the same bytes as
    /// `encoder.encode(&tracker.flush()?).to_json()`, without building the ops: no path is
    /// cloned and no spliced element becomes a `serde_json::Value` on the way. Returns the
    /// number of bytes appended; 0 (and nothing appended) when nothing changed.
    ///
    /// Reuse one `out` across flushes (clear it after sending): it keeps its capacity.
    ///
    /// # Errors
    ///
    /// As [`flush`](Tracker::flush); then nothing is appended, the encoder is as it was (ids
    /// the failed batch defined are undone) and the recorded changes stay for the next flush.
    ///
    /// # Examples
    ///
    /// ```
    /// use chord::{track, Encoder, Tracked};
    /// #[derive(Tracked, serde::Serialize)]
    /// struct Lane { answer: String }
    ///
    /// let mut t = track(Lane { answer: String::new() });
    /// let mut enc = Encoder::new();
    /// let mut wire = Vec::new();
    /// t.flush_into(&mut enc, &mut wire)?;
    /// assert_eq!(wire, br#"[["r",{"answer":""}]]"#);
    /// for token in ["Hel", "lo"] {
    ///     wire.clear();
    ///     t.state().answer += token;
    ///     t.flush_into(&mut enc, &mut wire)?;
    /// }
    /// assert_eq!(wire, br##"[["#",0,["answer"]],["a",0,"lo"]]"##);
    /// # Ok::<(), chord::Error>(())
    /// ```
    pub fn flush_into(&mut self, encoder: &mut Encoder, out: &mut Vec<u8>) -> Result<usize> {
        if self.base {
            return self.flush_base_into(encoder, out);
        }
        let start = out.len();
        // One allocation for a small batch in a fresh buffer, not one per doubling from 8
        // bytes (a no-op on a buffer reused across flushes).
        out.reserve(MIN_BATCH_BYTES);
        encoder.table.begin();
        out.push(b'[');
        let resetting = self.resetting();
        let mut to = Out::wire(encoder, out, &mut self.pending).resetting(resetting);
        let flushed = self.value.__flush(&mut self.root, &Trail::ROOT, &mut to);
        if resetting {
            if let Err(e) = self.walked_resetting(flushed) {
                encoder.table.rollback();
                out.truncate(start);
                return Err(e);
            }
            self.fallbacks.add(&mut self.pending);
            return Ok(close_batch(out, start));
        }
        if let Err(e) = flushed {
            self.pending.clear();
            encoder.table.rollback();
            out.truncate(start);
            return Err(e);
        }
        let written = close_batch(out, start);
        let seen = check::UNSAFE_INTEGERS.load(Ordering::Relaxed);
        if self.js_safe && seen != self.unsafe_seen {
            encoder.table.rollback();
            out.truncate(start);
            self.pending.clear(); // (the flush below counts them)
            return self.flush_checked_into(encoder, out);
        }
        self.unsafe_seen = seen;
        self.forget();
        self.fallbacks.add(&mut self.pending);
        Ok(written)
    }

    /// [`flush_into`](Tracker::flush_into) of a base batch: `[["r",value]]`, after which
    /// the encoder starts afresh.
    #[inline(never)]
    fn flush_base_into(&mut self, encoder: &mut Encoder, out: &mut Vec<u8>) -> Result<usize> {
        let start = out.len();
        out.extend_from_slice(b"[[\"r\",");
        out::write_checked(out, &self.value, encoder.numbers, Path::root)
            .inspect_err(|_| out.truncate(start))?;
        out.extend_from_slice(b"]]");
        let seen = check::UNSAFE_INTEGERS.load(Ordering::Relaxed);
        if self.js_safe && seen != self.unsafe_seen {
            out.truncate(start);
            return self.flush_checked_into(encoder, out);
        }
        encoder.reset();
        self.unsafe_seen = seen;
        self.base = false;
        self.forget();
        Ok(out.len() - start)
    }

    /// [`flush_into`](Tracker::flush_into) after an integer beyond 2^53 went by (here, or
    /// in another tracker meanwhile): the ops are built, to find it with its path, and
    /// encoded when there is none. Nothing was sent yet.
    #[cold]
    #[inline(never)]
    fn flush_checked_into(&mut self, encoder: &mut Encoder, out: &mut Vec<u8>) -> Result<usize> {
        let ops = self.flush()?;
        Ok(encoder.encode_into(&ops, out))
    }

    /// Stops tracking and returns the value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

/// Closes the batch that `out` holds from `start` (its `[` written): `]` after its ops, or
/// nothing at all when it has none. Returns the bytes written.
#[inline]
fn close_batch(out: &mut Vec<u8>, start: usize) -> usize {
    if out.len() == start + 1 {
        out.truncate(start);
        0
    } else {
        out.push(b']');
        out.len() - start
    }
}

impl<T> Deref for Tracker<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Tracker<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("value", &self.value)
            .field("base_pending", &self.base)
            .finish_non_exhaustive()
    }
}
