//! The dirty tree: what changed since the last flush, and nothing else.
//!
//! A node exists only for a location touched since the last flush. It holds the *intent*
//! recorded there (an assignment with the accepted value, string edits, array splices) and the
//! nodes of touched children. Flushing turns nodes into ops and resets the tree, so the
//! tracker's memory is proportional to what changed, never to the state's size.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use hashbrown::HashTable;
use serde_json::Value;

use crate::diff::{json_fits, json_len};
use crate::op::Op;
use crate::path::{NonEmptyPath, Path, Seg};
use crate::tracker::edit::{SeqEdit, TextEdit};
pub(crate) use crate::tracker::scalar::Scalar;
use crate::tracker::Out;
use crate::tracker::Tracked;
use crate::tracker::{Step, Trail};
use crate::wire::table::CachedCell;

/// One touched location in the dirty tree.
#[doc(hidden)]
#[derive(Debug)]
pub struct Node {
    pub(crate) state: State,
    /// For fields serde may skip (`skip_serializing_if`): whether the field was present in the
    /// JSON at the last flush. Captured when the node is created.
    pub(crate) present: Option<bool>,
    /// For an enum: the variant (by declaration index) the replicas hold, captured when the
    /// value is first reassigned in a flush interval.
    pub(crate) variant: Option<u32>,
    pub(crate) children: Children,
    /// Whether this node handed out a child's node since the last flush: only then can
    /// anything below be recorded, so flush and reset skip the children of an untouched
    /// node (a struct of twenty fields costs one field's walk when one field changed).
    pub(crate) touched: bool,
    /// Whether the value was reached through a plain `&mut` (a container proxy's `DerefMut`)
    /// since the last flush: its flush is then a counted fallback (see `tracker::fallback`).
    pub(crate) fell_back: bool,
    /// The id the last stream encoder that wrote this location's path gave it (see
    /// `wire::table::Cached`); kept across flushes, and, untrusted, when the node is recycled.
    pub(crate) wire: CachedCell,
    /// The tracker's [`Risk`], shared by all its nodes.
    pub(crate) risk: Risk,
    /// Where a record here is noted for the flush: the written set of the struct whose field
    /// this node is (none for the root, an element or a member, whose parents find them by
    /// their list of touched children).
    pub(crate) up: Up,
}

/// Which fields of one struct node were written since the last flush: a bit per field, set
/// by the write (through the field node's [`Up`]) and cleared by the flush or reset that
/// visits it, so that flush and reset visit the written fields alone and a struct of sixty
/// fields costs what its changed fields cost. Shared (an `Arc`) between the struct's node
/// and its fields' nodes: the write holds only the field's node.
#[derive(Debug)]
pub(crate) struct Written {
    /// Fields 0..64.
    first: AtomicU64,
    /// Fields from 64 on, 64 a word (none, unallocated, for most structs).
    more: Box<[AtomicU64]>,
    /// The struct node's own place: a field's write marks every struct above it.
    up: Up,
}

impl Written {
    fn new(count: usize, up: Up) -> Written {
        Written {
            first: AtomicU64::new(0),
            more: (64..count.max(64))
                .step_by(64)
                .map(|_| AtomicU64::new(0))
                .collect(),
            up,
        }
    }

    /// Sets field `i`'s bit; whether it was clear.
    #[inline(always)]
    fn set(&self, i: u32) -> bool {
        let word = match (i / 64) as usize {
            0 => &self.first,
            w => &self.more[w - 1],
        };
        let bit = 1u64 << (i % 64);
        let v = word.load(Ordering::Relaxed);
        if v & bit != 0 {
            return false;
        }
        word.store(v | bit, Ordering::Relaxed);
        true
    }

    /// The written fields' indices, in order, clearing the bits when `clear`.
    #[inline]
    fn take(
        &self,
        clear: bool,
        mut each: impl FnMut(usize) -> crate::Result<()>,
    ) -> crate::Result<()> {
        // (The first word on its own: most structs have no more.)
        #[inline(always)]
        fn word(
            word: &AtomicU64,
            base: usize,
            clear: bool,
            each: &mut impl FnMut(usize) -> crate::Result<()>,
        ) -> crate::Result<()> {
            let mut bits = word.load(Ordering::Relaxed);
            if bits != 0 && clear {
                word.store(0, Ordering::Relaxed);
            }
            while bits != 0 {
                let i = base + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                each(i)?;
            }
            Ok(())
        }
        word(&self.first, 0, clear, &mut each)?;
        for (w, more) in self.more.iter().enumerate() {
            word(more, (w + 1) * 64, clear, &mut each)?;
        }
        Ok(())
    }

    /// The bits of fields 0..64, cleared when `clear`.
    #[inline(always)]
    pub(crate) fn first(&self, clear: bool) -> u64 {
        let bits = self.first.load(Ordering::Relaxed);
        if bits != 0 && clear {
            self.first.store(0, Ordering::Relaxed);
        }
        bits
    }

    /// Whether the struct has fields beyond the first 64.
    #[inline(always)]
    pub(crate) fn has_more(&self) -> bool {
        !self.more.is_empty()
    }

    /// [`take`](Written::take) of the fields beyond the first 64.
    pub(crate) fn take_more(
        &self,
        clear: bool,
        mut each: impl FnMut(usize) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for (w, word) in self.more.iter().enumerate() {
            let mut bits = word.load(Ordering::Relaxed);
            if bits != 0 && clear {
                word.store(0, Ordering::Relaxed);
            }
            while bits != 0 {
                let i = (w + 1) * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                each(i)?;
            }
        }
        Ok(())
    }

    /// Whether any field was written.
    fn any(&self) -> bool {
        std::iter::once(&self.first)
            .chain(&*self.more)
            .any(|w| w.load(Ordering::Relaxed) != 0)
    }
}

/// A node's place in the written set of the struct above it (see [`Written`]).
#[derive(Debug, Default)]
pub(crate) struct Up(Option<(Arc<Written>, u32)>);

impl Up {
    /// Notes a record at the node: its bit and, up to the first one already set, those of
    /// the structs above. (A set bit means every bit above it is set too: bits are cleared
    /// from the top down, by the walk that visits them.)
    #[inline(always)]
    pub(crate) fn mark(&self) {
        let mut at = self;
        while let Some((written, i)) = &at.0 {
            if !written.set(*i) {
                return;
            }
            at = &written.up;
        }
    }

    fn share(&self) -> Up {
        Up(self.0.as_ref().map(|(w, i)| (Arc::clone(w), *i)))
    }
}

/// Whether a record made since the last flush may make the next flush fail: one flag per
/// tracker, shared by all its nodes, set by the records whose flush serializes a value (an
/// assignment, a splice that inserts, a field serde skips that may appear, an enum's
/// variant), which a non-finite float or a failing `Serialize` can refuse. Text edits and
/// removals never fail.
///
/// A flush that cannot fail forgets each node's record as soon as the node is written, in
/// the walk that writes it (see [`Node::reset_flushed`]); one that may fail walks once to
/// write and, when everything was written, once more to forget ([`Node::reset`]), so that a
/// failed flush keeps every record for the next one.
#[derive(Debug, Clone)]
pub(crate) struct Risk(Arc<AtomicBool>);

impl Risk {
    /// A tracker's flag, clear.
    pub(crate) fn new() -> Risk {
        Risk(Arc::new(AtomicBool::new(false)))
    }

    /// Notes a record whose flush may fail.
    #[inline]
    pub(crate) fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the next flush may fail.
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// After a flush (or a reset) that left no record behind.
    #[inline]
    pub(crate) fn clear(&self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// The touched children of a node, in the order they were first touched (which is the order
/// their ops are emitted in). Looked up by a scan while there are few, through an index once
/// there are many, so one flush interval that edits thousands of elements stays linear.
#[derive(Debug, Default)]
pub(crate) struct Children {
    /// The children (`..live`), then spares: nodes of children cleared at a flush, reset,
    /// for the next interval's new children, so that a token appended to
    /// `messages[0].content` at every flush finds `messages[0]`'s node (and its fields)
    /// already allocated. At most [`SPARE`] spares, each holding no spares of its own; a
    /// spare keeps the key it had, so a member's name is copied into the room of an earlier
    /// one, and reused in place, so a node is not moved to be reused.
    list: Vec<(Key, Node)>,
    /// How many of `list` are children; the rest are spares.
    live: usize,
    /// (Boxed: most nodes have none, and a node's size is what a struct's field list
    /// allocates per field.)
    index: Option<Box<ChildIndex>>,
    /// The children are a struct's fields, `Key::Field(0..n)` in order: kept across flushes.
    fields: bool,
    /// With `fields`: which of them were written since the last flush.
    pub(crate) written: Option<Arc<Written>>,
}

/// How many children a scan handles before an index is built.
const SCAN: usize = 16;

/// The positions in a child list by key: each entry is a position and its key's hash, the
/// key itself read from the list (no copy of a member's name per child), and a table that
/// grows moves the hashes it holds instead of hashing every key again.
///
/// Hashed with foldhash, cheaper than SipHash on the short keys a list holds (an element's
/// number, a map member's name), with a random seed per index, so that map keys chosen from
/// outside cannot be picked to collide ahead of time.
#[derive(Debug)]
struct ChildIndex {
    table: HashTable<(u64, usize)>,
    hasher: foldhash::quality::RandomState,
}

impl ChildIndex {
    /// An index of every child of `list`.
    fn of(list: &[(Key, Node)]) -> ChildIndex {
        let mut index = ChildIndex {
            table: HashTable::with_capacity(list.len()),
            hasher: foldhash::quality::RandomState::default(),
        };
        for (at, (key, _)) in list.iter().enumerate() {
            index.insert(key.as_ref(), at);
        }
        index
    }

    /// A key's hash: the same for a [`Key`] and for its [`KeyRef`].
    #[inline]
    fn hash(&self, key: KeyRef<'_>) -> u64 {
        use std::hash::Hasher;
        let mut h = self.hasher.build_hasher();
        match key {
            KeyRef::Field(i) => {
                h.write_u8(0);
                h.write_u32(i);
            }
            KeyRef::Name(name) => {
                h.write_u8(1);
                h.write(name.as_bytes());
            }
            KeyRef::Index(i) => {
                h.write_u8(2);
                h.write_usize(i);
            }
        }
        h.finish()
    }

    /// The position of `key` in `list`, the list this index was built for.
    #[inline(never)]
    fn get(&self, list: &[(Key, Node)], key: KeyRef<'_>) -> Option<usize> {
        let hash = self.hash(key);
        self.table
            .find(hash, |&(h, at)| h == hash && list[at].0.as_ref() == key)
            .map(|&(_, at)| at)
    }

    /// Records that the list holds `key` (not yet indexed) at `at`.
    fn insert(&mut self, key: KeyRef<'_>, at: usize) {
        let hash = self.hash(key);
        self.table.insert_unique(hash, (hash, at), |&(h, _)| h);
    }
}

#[cfg(test)]
mod child_index_tests {
    use super::*;

    fn key(n: usize) -> Key {
        match n % 3 {
            0 => Key::Name(format!("row-{n}")),
            1 => Key::Index(n),
            _ => Key::Field(u32::try_from(n).unwrap()),
        }
    }

    #[test]
    fn children_are_found_before_and_after_the_index_is_built() {
        let risk = Risk::new();
        let mut children = Children::default();
        for n in 0..100 {
            assert_eq!(
                children.position(key(n).as_ref()),
                None,
                "{n} not yet added"
            );
            assert_eq!(children.push(key(n), &risk), n);
            // Every child so far, by a scan (up to `SCAN`) or through the index.
            for m in (0..=n).rev().step_by(7) {
                assert_eq!(children.position(key(m).as_ref()), Some(m), "{m} of {n}");
            }
        }
        assert!(children.index.is_some());
        // The same number as another variant, and a name never added.
        assert_eq!(children.position(KeyRef::Index(3)), None);
        assert_eq!(children.position(KeyRef::Name("row-1")), None);
        children.clear();
        assert_eq!(children.position(key(0).as_ref()), None);
        assert_eq!(children.push(key(5), &risk), 0);
        assert_eq!(children.position(key(5).as_ref()), Some(0));
    }

    #[test]
    fn spares_are_reused_in_place_and_never_seen_as_children() {
        let risk = Risk::new();
        let mut children = Children::default();
        for name in ["a", "b", "c", "d", "e", "f"] {
            children.push_member(name, &risk);
        }
        children.list[0].1.touched = true;
        children.clear();
        assert_eq!(children.iter().count(), 0, "no child after a clear");
        assert_eq!(children.list.len(), SPARE, "at most SPARE spares kept");
        assert!(
            children.list.iter().all(|(_, n)| !n.touched),
            "spares are reset"
        );
        for name in ["a", "b", "c"] {
            assert_eq!(
                children.position(KeyRef::Name(name)),
                None,
                "{name} is gone"
            );
        }
        // A new member takes a spare's place and its name's room; a field takes the next.
        assert_eq!(children.push_member("zz", &risk), 0);
        assert_eq!(children.push(Key::Field(7), &risk), 1);
        let keys: Vec<_> = children.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, [Key::Name("zz".into()), Key::Field(7)]);
        assert_eq!(children.position(KeyRef::Name("zz")), Some(0));
        assert_eq!(
            children.position(KeyRef::Name("c")),
            None,
            "a spare's old name"
        );
        assert_eq!(children.list.len(), SPARE, "the other spares wait");
        // A struct's fields leave no spares behind.
        children.make_fields(2, &risk, &Up::default());
        assert_eq!(children.list.len(), 2);
        assert_eq!(children.iter().count(), 2);
    }
}

/// How many cleared child nodes a node keeps for reuse.
const SPARE: usize = 4;

/// The longest member name whose room a spare node keeps, in bytes.
const SPARE_NAME: usize = 64;

/// The most children whose room a node's list keeps once cleared.
const KEEP_CAPACITY: usize = 1024;

impl Children {
    /// (Always inline, with the index built and read out of line: a scan of a few children
    /// is what a streaming flush interval does at every step.)
    #[inline(always)]
    fn position(&mut self, key: KeyRef<'_>) -> Option<usize> {
        if self.live > SCAN && self.index.is_none() {
            self.build_index();
        }
        let live = &self.list[..self.live];
        match (&self.index, key) {
            (Some(index), _) => index.get(live, key),
            // (Compared by variant first: no string comparison for an element or a field.)
            (None, KeyRef::Index(i)) => live
                .iter()
                .position(|(k, _)| matches!(k, Key::Index(j) if *j == i)),
            (None, KeyRef::Field(i)) => live
                .iter()
                .position(|(k, _)| matches!(k, Key::Field(j) if *j == i)),
            (None, KeyRef::Name(name)) => live
                .iter()
                .position(|(k, _)| matches!(k, Key::Name(n) if n == name)),
        }
    }

    /// Indexes the children once there are more than a scan should go through.
    #[cold]
    #[inline(never)]
    fn build_index(&mut self) {
        self.index = Some(Box::new(ChildIndex::of(&self.list[..self.live])));
    }

    /// Adds a clean child at `key` (a spare node when there is one), sharing `risk`.
    fn push(&mut self, key: Key, risk: &Risk) -> usize {
        let at = self.live;
        match self.list.get_mut(at) {
            Some((spare, node)) => {
                *spare = key;
                node.not_a_field(risk);
            }
            None => self.list.push((key, Node::under(risk))),
        }
        self.added(at)
    }

    /// [`push`](Children::push) of map member `name`: a spare's key, when it was a name,
    /// takes the new one without allocating.
    fn push_member(&mut self, name: &str, risk: &Risk) -> usize {
        let at = self.live;
        match self.list.get_mut(at) {
            Some((Key::Name(room), node)) => {
                room.clear();
                room.push_str(name);
                node.not_a_field(risk);
            }
            Some((spare, node)) => {
                *spare = Key::Name(name.to_owned());
                node.not_a_field(risk);
            }
            None => self
                .list
                .push((Key::Name(name.to_owned()), Node::under(risk))),
        }
        self.added(at)
    }

    /// Counts the child just placed at `at` (the end of the children) as one.
    #[inline]
    fn added(&mut self, at: usize) -> usize {
        self.live = at + 1;
        if let Some(index) = &mut self.index {
            index.insert(self.list[at].0.as_ref(), at);
        }
        at
    }

    /// Replaces the children with `count` clean field nodes (the first time a struct's
    /// proxy is handed out, or when an enum changed variant).
    #[cold]
    #[inline(never)]
    fn make_fields(&mut self, count: usize, risk: &Risk, up: &Up) {
        self.clear();
        // (Fresh nodes, no spares: a field node's own fields' written set names its place,
        // made for it here.)
        self.list.clear();
        self.live = 0;
        self.list.reserve_exact(count);
        if count <= 1 {
            // One field: it is written exactly when the struct is, so its node takes the
            // struct's place in the written set above, and the struct needs none of its own
            // (the flush looks at its one field).
            if count == 1 {
                self.list
                    .push((Key::Field(0), Node::with_up(risk, up.share())));
            }
            self.live = count;
            self.fields = true;
            return;
        }
        let written = Arc::new(Written::new(count, up.share()));
        for i in 0..count {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let up = Up(Some((Arc::clone(&written), i)));
            self.list.push((Key::Field(i), Node::with_up(risk, up)));
        }
        self.live = count;
        self.written = Some(written);
        self.fields = true;
    }

    /// Removes every child, keeping up to [`SPARE`] of their nodes (reset) for reuse.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.fields = false;
        self.written = None;
        if self.live > 0 {
            self.clear_list();
        }
    }

    /// [`clear`](Children::clear)'s work when there are children (kept out of line: the
    /// common case, a leaf, has none).
    #[inline(never)]
    fn clear_list(&mut self) {
        // The first children become the spares, in place; the others, and spares beyond
        // `SPARE`, are dropped.
        for (key, node) in self.list.iter_mut().take(self.live.min(SPARE)) {
            node.reset();
            node.distrust_wire();
            node.children.drop_spares();
            // (A long name's room is not kept: spares are for the short keys of a stream.)
            if matches!(key, Key::Name(name) if name.capacity() > SPARE_NAME) {
                *key = Key::Index(0);
            }
        }
        self.list.truncate(SPARE);
        self.live = 0;
        // A list that grew past what a steady stream touches in one interval is freed, so one
        // huge flush does not leave its capacity behind for good; smaller ones keep theirs,
        // so a steady stream does not reallocate them every flush.
        if self.list.capacity() > KEEP_CAPACITY {
            self.list.shrink_to(SPARE);
        }
        self.index = None;
        self.fields = false;
        self.written = None;
    }

    /// Drops the spare nodes (of a node that becomes a spare itself, or of a struct's fields).
    fn drop_spares(&mut self) {
        self.list.truncate(self.live);
    }

    /// The children, mutably.
    #[inline]
    fn live_mut(&mut self) -> &mut [(Key, Node)] {
        &mut self.list[..self.live]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(Key, Node)> {
        self.list[..self.live].iter()
    }

    /// (Sliced, not taken: one bounds check, not a count at every step of the flush walk's
    /// way through a struct of many fields.)
    #[inline]
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut (Key, Node)> {
        self.live_mut().iter_mut()
    }
}

/// How a child is addressed under its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// A struct field, by declaration index.
    Field(u32),
    /// A map member.
    Name(String),
    /// An array element, by its index in the accepted array.
    Index(usize),
}

/// A [`Key`] borrowed: what a lookup needs (a member's name need not be copied to find it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyRef<'a> {
    Field(u32),
    Name(&'a str),
    Index(usize),
}

impl Key {
    #[inline]
    pub(crate) fn as_ref(&self) -> KeyRef<'_> {
        match self {
            Key::Field(i) => KeyRef::Field(*i),
            Key::Name(name) => KeyRef::Name(name),
            Key::Index(i) => KeyRef::Index(*i),
        }
    }
}

/// What is known about the accepted value of a reassigned location.
#[derive(Debug)]
pub(crate) enum Before {
    /// Not present in the accepted JSON.
    Absent,
    /// Present, content no longer known (edits were recorded before the reassignment).
    Existed,
    /// Present with this JSON.
    Value(Value),
    /// Present with this value, kept typed: a reassigned `bool`, `char`, `()` or integer of
    /// up to 64 bits.
    Scalar(Scalar),
    /// Edited since the last flush, then reassigned: the ops that turned the accepted value
    /// into `.1` (recorded relative to this node, each path starting with [`HERE`]), and the
    /// value the reassignment replaced.
    Edited(Vec<Op>, Value),
}

/// The placeholder first segment of ops recorded relative to a node; replaced by the node's
/// path at flush, when that path is known (splices elsewhere may have moved it since).
const HERE: Seg = Seg::Index(usize::MAX);

// (`repr(u8)`: a plain tag, read by one compare, where the niche in `Before`'s values would
// make every test of the state decode it.)
#[derive(Debug, Default)]
#[repr(u8)]
pub(crate) enum State {
    /// Nothing recorded at this level (children may still be dirty).
    #[default]
    Clean,
    /// The whole value was reassigned; flush diffs the accepted JSON against the current one.
    /// Children are subsumed.
    Assigned(Before),
    /// String edits (append, drop from the front, or a whole-string baseline).
    Text(TextEdit),
    /// Array splices; children are keyed by accepted index.
    Seq(SeqEdit),
}

impl Node {
    /// A clean node of the tracker whose flag is `risk`.
    pub(crate) fn under(risk: &Risk) -> Node {
        Node::with_up(risk, Up::default())
    }

    /// [`under`](Node::under), noting its records at `up` (a struct's field). (Built in
    /// place, not built and then changed: a struct's first proxy makes one per field.)
    #[inline]
    fn with_up(risk: &Risk, up: Up) -> Node {
        Node {
            state: State::Clean,
            present: None,
            variant: None,
            children: Children::default(),
            touched: false,
            fell_back: false,
            wire: Default::default(),
            risk: risk.clone(),
            up,
        }
    }

    /// Makes a spare that was a struct's field a clean node of a keyed child (an element, a
    /// member), whose records no struct's written set notes.
    #[inline]
    fn not_a_field(&mut self, risk: &Risk) {
        if self.up.0.is_some() {
            *self = Node::under(risk);
        }
    }

    /// Notes a record at this node in the written sets of the structs above it.
    #[inline]
    pub(crate) fn mark_written(&self) {
        self.up.mark();
    }

    /// Whether recording below this node is pointless because the node's own state already
    /// covers everything under it.
    #[inline]
    pub(crate) fn subsumes_children(&self) -> bool {
        matches!(self.state, State::Assigned(_))
    }

    /// Starts recording at a clean node: `state` replaces `Clean`, which owns nothing, so the
    /// old value is forgotten, not dropped (an assignment calls the drop glue, at every
    /// first edit of a flush interval).
    #[inline(always)]
    pub(crate) fn start(&mut self, state: State) {
        debug_assert!(matches!(self.state, State::Clean));
        std::mem::forget(std::mem::replace(&mut self.state, state));
        self.mark_written();
    }

    /// The child at `key`, created clean if absent; `None` when this node subsumes children.
    /// (Always inline: an element's proxy is handed out through it at every step.)
    #[inline(always)]
    pub(crate) fn child(&mut self, key: Key) -> Option<&mut Node> {
        if self.subsumes_children() {
            return None;
        }
        self.touch();
        let at = match self.children.position(key.as_ref()) {
            Some(at) => at,
            None => self.children.push(key, &self.risk),
        };
        Some(&mut self.children.list[at].1)
    }

    /// The child of map member `name`, created clean if absent (its name copied only
    /// then); `None` when this node subsumes children.
    #[inline]
    pub(crate) fn member(&mut self, name: &str) -> Option<&mut Node> {
        if self.subsumes_children() {
            return None;
        }
        self.touch();
        let at = match self.children.position(KeyRef::Name(name)) {
            Some(at) => at,
            None => self.children.push_member(name, &self.risk),
        };
        Some(&mut self.children.list[at].1)
    }

    /// The field nodes of a struct (or enum variant) with `count` fields, created once and
    /// kept across flushes.
    #[inline]
    pub(crate) fn fields(&mut self, count: usize) -> &mut [(Key, Node)] {
        self.touched = true;
        let c = &mut self.children;
        if !(c.fields && c.list.len() == count) {
            c.make_fields(count, &self.risk, &self.up);
        }
        // (Sliced to `count`: a derived proxy that takes `count` fields knows it never runs
        // out, and hands out each field's node without a test.)
        &mut c.list[..count]
    }

    /// The fields of a struct's node and its written set (`None` when the struct has one
    /// field or none, or no field was handed out since the node was made or reassigned).
    #[inline(always)]
    pub(crate) fn written_fields(&mut self) -> Option<(&mut [(Key, Node)], &Written)> {
        let Children { list, written, .. } = &mut self.children;
        Some((list, written.as_deref()?))
    }

    /// Forgets everything recorded (after a flush), keeping the allocations of struct field
    /// nodes: the next interval's proxies reuse them.
    ///
    /// A few keyed children (elements, members) are kept too when nothing moved them (no
    /// splice here): an element edited at every flush, as `messages[0].content` is while a
    /// reply streams, keeps its node and the path id cached on it. A later splice here
    /// distrusts those ids (see [`record_splice`](crate::tracker::seq::record_splice)).
    #[inline]
    pub(crate) fn reset(&mut self) {
        self.variant = None;
        let touched = self.touched;
        if self.forget_own() && touched {
            // (Untouched, the children were reset already: nothing reached them since.)
            self.reset_children();
        }
    }

    /// [`reset`](Node::reset) of a node that a flush which cannot fail has just written,
    /// everything below it included: the walk reset the children it wrote, and the others
    /// hold nothing (no record is below an untouched node; a struct's walk clears the
    /// `present` of the fields it skips; a `variant` is kept only with a reassignment, which
    /// may fail). So only this node's own record is forgotten, and the children are not
    /// visited again.
    #[inline]
    pub(crate) fn reset_flushed(&mut self) {
        debug_assert!(self.variant.is_none());
        self.forget_own();
    }

    /// What both resets forget of this node: its state, presence and touch, and its
    /// children unless they are kept (struct fields; up to [`SPARE`] keyed children when
    /// nothing moved them). Returns whether the children were kept. (Always inline: it runs
    /// for every flushed node, and out of line it costs a call per node on the flush path.)
    #[inline(always)]
    fn forget_own(&mut self) -> bool {
        self.present = None;
        self.touched = false;
        self.fell_back = false;
        let keep = if matches!(self.state, State::Clean) {
            self.children.fields || self.children.live <= SPARE
        } else {
            self.state = State::Clean;
            self.children.fields
        };
        if !keep {
            self.children.clear();
        }
        keep
    }

    /// [`reset`](Node::reset) of the children that hold anything.
    #[inline(never)]
    fn reset_children(&mut self) {
        let Children { list, written, .. } = &mut self.children;
        if let Some(written) = written {
            // A struct's fields: those written alone.
            let _ = written.take(true, |i| {
                list[i].1.reset();
                Ok(())
            });
            return;
        }
        for (_, child) in self.children.live_mut() {
            if child.touched
                || !matches!(child.state, State::Clean)
                || child.present.is_some()
                || child.variant.is_some()
            {
                child.reset();
            }
        }
    }

    /// Whether something may be recorded here or below: a cheap over-approximation of
    /// [`is_dirty`](Node::is_dirty) (a touched node may have recorded nothing) that flush
    /// uses to skip what certainly holds nothing.
    #[inline]
    pub(crate) fn may_be_dirty(&self) -> bool {
        self.touched || !matches!(self.state, State::Clean)
    }

    /// The children at `keys` (created when absent), in the order of `keys`, all borrowed
    /// at once (for iterators that hand out every element's proxy); `None` where a key is
    /// `None` or this node subsumes its children. Keys must be distinct.
    pub(crate) fn children_at(&mut self, keys: Vec<Option<Key>>) -> Vec<Option<&mut Node>> {
        let mut out: Vec<Option<&mut Node>> = Vec::with_capacity(keys.len());
        out.resize_with(keys.len(), || None);
        if self.subsumes_children() {
            return out;
        }
        self.touch();
        let mut wanted_at: Vec<Option<usize>> = Vec::new();
        for (i, key) in keys.into_iter().enumerate() {
            let Some(key) = key else { continue };
            let at = match self.children.position(key.as_ref()) {
                Some(at) => at,
                None => self.children.push(key, &self.risk),
            };
            if wanted_at.len() <= at {
                wanted_at.resize(at + 1, None);
            }
            wanted_at[at] = Some(i);
        }
        for (at, (_, node)) in self.children.live_mut().iter_mut().enumerate() {
            if let Some(Some(i)) = wanted_at.get(at) {
                out[*i] = Some(node);
            }
        }
        out
    }

    /// Marks the cached path ids here and below to be checked before use (the node may stand
    /// for another place when it is reused, or after a splice moved it).
    pub(crate) fn distrust_wire(&mut self) {
        self.wire.set(self.wire.get().untrusted());
        for (_, child) in self.children.live_mut() {
            child.distrust_wire();
        }
    }

    /// Whether anything is recorded here or below.
    pub(crate) fn is_dirty(&self) -> bool {
        if !matches!(self.state, State::Clean) {
            return true;
        }
        if !self.touched {
            return false;
        }
        match &self.children.written {
            Some(written) => {
                written.any() && {
                    let mut dirty = false;
                    let _ = written.take(false, |i| {
                        dirty |= self.children.list[i].1.is_dirty();
                        Ok(())
                    });
                    dirty
                }
            }
            None => self.children.iter().any(|(_, n)| n.is_dirty()),
        }
    }

    /// Notes that a child's node was handed out: something may be recorded below.
    #[inline(always)]
    fn touch(&mut self) {
        // (Once a flush interval: a node with keyed children is touched only here, and its
        // flush or reset, which its mark brings about, clears it.)
        if !self.touched {
            self.touched = true;
            self.mark_written();
        }
    }

    /// Records a reassignment of the whole value at this node. `accepted` produces the JSON
    /// of the value being replaced; it is only called when that is still the accepted value
    /// (when edits were recorded here since the last flush, the accepted value is no longer
    /// known, and flush sends the new value whole; see [`assign_tracked`](Node::assign_tracked)).
    pub(crate) fn assign(&mut self, accepted: impl FnOnce() -> Option<Value>) {
        self.risk.mark();
        self.mark_written();
        if matches!(self.state, State::Assigned(_)) {
            return; // the first baseline stays: it is what the replica has
        }
        let before = if self.is_dirty() {
            Before::Existed
        } else {
            match accepted() {
                Some(v) => Before::Value(v),
                None => Before::Existed,
            }
        };
        self.state = State::Assigned(before);
        self.children.clear();
    }

    /// Records a reassignment of `current`, the value at this node. When edits were recorded
    /// here since the last flush, they are turned into ops now (relative to this node) and
    /// kept, so that flush can send them followed by the difference between `current` and the
    /// new value: an append and then a reassignment of the struct holding the text stay an
    /// append and a few sets, not the whole struct.
    pub(crate) fn assign_tracked<T: Tracked + ?Sized>(&mut self, current: &T) {
        self.risk.mark();
        self.mark_written();
        if matches!(self.state, State::Assigned(_)) {
            return;
        }
        if !self.is_dirty() {
            return self.assign(|| serde_json::to_value(current).ok());
        }
        let here = Trail::ROOT.child(Step::from(&HERE));
        // (Not fallbacks of a flush: the edits are kept, and the flush of the reassignment
        // counts what it sends.)
        let mut uncounted = Vec::new();
        // The accepted value, when every record here knows what it replaced: the current
        // value with each record undone. The reassignment is then compared with it, as one
        // recorded on a clean node is: a value set back to what the replicas hold sends
        // nothing, and a changed one the snapshot diff.
        let mut restores = Vec::new();
        let mut undo = Out::undo(&mut restores, &mut uncounted);
        if current.__flush(self, &here, &mut undo).is_ok() && !undo.undo_failed() {
            if let Some(accepted) = serde_json::to_value(current)
                .ok()
                .and_then(|v| restored(v, restores))
            {
                self.state = State::Assigned(Before::Value(accepted));
                self.children.clear();
                return;
            }
        }
        uncounted.clear();
        let mut early = Vec::new();
        let before = match (
            current.__flush(self, &here, &mut Out::ops(&mut early, &mut uncounted)),
            serde_json::to_value(current),
        ) {
            (Ok(()), Ok(value)) => Before::Edited(early, value),
            _ => Before::Existed,
        };
        self.state = State::Assigned(before);
        self.children.clear();
    }
    /// Records a reassignment of a leaf whose value is `accepted`: one that cannot fail to
    /// flush unless its new value is an integer beyond ±(2^53 − 1) (see
    /// [`settle_scalar`](Node::settle_scalar)), so the risk is not marked.
    #[inline]
    pub(crate) fn assign_scalar(&mut self, accepted: Scalar) {
        if matches!(self.state, State::Clean) && !self.touched {
            self.start(State::Assigned(Before::Scalar(accepted)));
            return;
        }
        self.mark_written();
        if matches!(self.state, State::Assigned(_)) {
            return;
        }
        let before = if self.is_dirty() {
            self.risk.mark(); // (flushed through the general path)
            Before::Existed
        } else {
            Before::Scalar(accepted)
        };
        self.state = State::Assigned(before);
        self.children.clear();
    }

    /// After a leaf's reassignment recorded by [`assign_scalar`](Node::assign_scalar): a new
    /// value that a replica may not hold exactly makes the flush one that may fail.
    #[inline]
    pub(crate) fn settle_scalar(&self, now: Scalar) {
        if !now.safe() {
            self.risk.mark();
        }
    }

    /// Records a reassignment where the accepted value is known to be absent or unknown.
    pub(crate) fn assign_before(&mut self, before: Before) {
        self.risk.mark();
        self.mark_written();
        if matches!(self.state, State::Assigned(_)) {
            return;
        }
        self.state = State::Assigned(before);
        self.children.clear();
    }
}

/// Emits what an assignment at `path` amounts to, given the accepted and current JSON
/// (`None` = absent).
pub(crate) fn flush_assigned(
    path: &Trail<'_>,
    before: &Before,
    after: Option<Value>,
    out: &mut Out<'_>,
) {
    if out.undoing() {
        return undo_assigned(path, before, out);
    }
    if let Before::Scalar(s) = before {
        return flush_assigned(path, &Before::Value(s.value()), after, out);
    }
    match (before, after) {
        (Before::Absent, None) => {}
        (_, None) => out.delete(path),
        (Before::Value(b), Some(a)) => {
            let whole_path = path.to_path();
            let mut ops = Vec::new();
            crate::diff::diff_into(&whole_path, b, &a, &mut ops);
            // A reassignment that moved many members (a sort of an array of structs) can
            // diff into more bytes than the new value, or than one `s` of a member (an
            // enum that changed variant, member by member).
            crate::tracker::compact::cap_members(&whole_path, &mut ops, &a);
            write_smaller(whole_path, ops, a, out);
        }
        (Before::Edited(early, b), Some(a)) => {
            let mut rest = Vec::new();
            let whole_path = path.to_path();
            crate::diff::diff_into(&whole_path, b, &a, &mut rest);
            match rebased(&whole_path, early) {
                // At the root a whole replacement is an `r` (an early edit's too), which must
                // stand alone.
                Some(mut ops)
                    if !ops
                        .iter()
                        .chain(&rest)
                        .any(|op| matches!(op, Op::Replace(_))) =>
                {
                    ops.extend(rest);
                    // Splices of one stretch of an array compose; early edits the
                    // reassignment overwrote are dead; a member's ops that
                    // add up to more than one `s` of it become that `s`; and when what is
                    // left is still larger than one `s` of the new value, the `s` is sent.
                    crate::tracker::compact::compose_splices(&mut ops);
                    crate::tracker::compact::drop_dead(&mut ops);
                    crate::tracker::compact::fold_into_sets(&mut ops);
                    crate::tracker::compact::cap_members(&whole_path, &mut ops, &a);
                    write_smaller(whole_path, ops, a, out);
                }
                // (or edits of a tracked root string, which no op but `r` can express)
                _ => set(path, a, out),
            }
        }
        (Before::Absent | Before::Existed, Some(a)) => set(path, a, out),
        (Before::Scalar(_), _) => unreachable!("turned into a value above"),
    }
}

/// In an undo walk (see [`Out::undo`]): what restores the accepted value of a location
/// reassigned since the last flush, when it is known.
pub(crate) fn undo_assigned(path: &Trail<'_>, before: &Before, out: &mut Out<'_>) {
    match before {
        Before::Absent => out.restore(path, None),
        Before::Value(v) => out.restore(path, Some(v.clone())),
        Before::Scalar(s) => out.restore(path, Some(s.value())),
        Before::Existed | Before::Edited(..) => out.cannot_undo(),
    }
}

/// The accepted JSON of a location whose current JSON is `current`, given what restores it
/// (see [`Out::undo`]); `None` when a restore does not fit `current`.
fn restored(mut current: Value, restores: Vec<crate::tracker::out::Restore>) -> Option<Value> {
    for (segs, value) in restores {
        let Some((last, up)) = segs.split_last() else {
            current = value?;
            continue;
        };
        let mut at = &mut current;
        for seg in up {
            at = match (seg, at) {
                (Seg::Key(k), Value::Object(m)) => m.get_mut(k.as_ref())?,
                (Seg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
                _ => return None,
            };
        }
        match (last, at, value) {
            (Seg::Key(k), Value::Object(m), Some(v)) => {
                m.insert(k.to_string(), v);
            }
            (Seg::Key(k), Value::Object(m), None) => {
                m.remove(k.as_ref());
            }
            (Seg::Index(i), Value::Array(a), Some(v)) if *i < a.len() => a[*i] = v,
            _ => return None,
        }
    }
    Some(current)
}

/// Writes `ops`, or one `s` of `value` at `path` when that is smaller as JSON (never at the
/// root, which takes no `s`): what a location's flush sends at most.
fn write_smaller(path: Path, ops: Vec<Op>, value: Value, out: &mut Out<'_>) {
    if ops.len() > 1 {
        if let Ok(p) = NonEmptyPath::try_from(path) {
            let whole = [Op::Set(p, value)];
            if json_len(&whole) < json_len(&ops) {
                return out.extend(whole);
            }
        }
    }
    out.extend(ops);
}

/// Runs `flush` for the location at `path` into ops of its own, then writes them, or one `s`
/// of `value` (the location's current value) when that is smaller as JSON. The `s` is
/// measured only up to the ops' size, so the comparison costs no more than the ops; the root,
/// which takes no `s`, keeps its ops.
pub(crate) fn capped<V: serde::Serialize + ?Sized>(
    value: &V,
    path: &Trail<'_>,
    out: &mut Out<'_>,
    flush: impl FnOnce(&Trail<'_>, &mut Out<'_>) -> crate::Result<()>,
) -> crate::Result<()> {
    let mut ops = Vec::new();
    let mut own = Out::ops(&mut ops, out.fallbacks).resetting(out.reset);
    flush(path, &mut own)?;
    if ops.len() > 1 && !path.is_empty() {
        let sent = json_len(&ops);
        // `["s",` path `,` value `]`
        let head = 7 + serde_json::to_string(&path.to_path()).map_or(usize::MAX / 2, |p| p.len());
        if sent
            .checked_sub(head)
            .is_some_and(|room| json_fits(value, room))
        {
            set(path, crate::tracker::to_json(value, path)?, out);
            return Ok(());
        }
    }
    out.extend(ops);
    Ok(())
}

/// Flushes a reassigned value (out of line: the walk through a struct or an array that
/// holds edits is the hot path).
#[inline(never)]
pub(crate) fn flush_reassigned<T: serde::Serialize + ?Sized>(
    value: &T,
    before: &Before,
    path: &Trail<'_>,
    out: &mut Out<'_>,
) -> crate::Result<()> {
    flush_assigned(
        path,
        before,
        Some(crate::tracker::to_json(value, path)?),
        out,
    );
    Ok(())
}

/// `ops` recorded relative to a node (paths starting with [`HERE`]), moved to `path`
/// ([`Op::rerooted`]). `None` when one would be a `d`, `a` or `t` of the root, which no op
/// can express.
fn rebased(path: &Path, ops: &[Op]) -> Option<Vec<Op>> {
    ops.iter()
        .map(|op| op.clone().rerooted(&[HERE], path.segments()))
        .collect()
}

/// `s` of a whole value, or `r` at the root.
pub(crate) fn set(path: &Trail<'_>, value: Value, out: &mut Out<'_>) {
    out.set(path, value);
}
