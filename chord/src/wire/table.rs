//! The encoder's path table: which paths have ids, which were seen once, and how ids are
//! recycled so that both ends of a stream hold a bounded table.
//!
//! A path is identified by its JSON text (`["messages",0,"content"]`): exact (the JSON of a
//! path is one-to-one), compact (a short byte string, not a tree of segments) and what an
//! inline path or a definition writes anyway.
//!
//! - **Ids** live in `0..MAX_IDS`. While fewer are in use the next definition takes the next
//!   number; then a clock hand picks one not used since it last passed (second chance) and
//!   the definition *redefines* it, which the wire allows. The decoder needs no rule but the
//!   bound: it refuses an id at or beyond [`MAX_IDS`](crate::wire::MAX_IDS), so its table
//!   holds at most that many paths too.
//! - **Seen once** is a direct-mapped array of 64-bit hashes (64 slots at first, doubling up
//!   to 4,096 while more than half are written): a path whose hash is in its slot is taken as
//!   seen. Losing an entry to a collision costs one more inline path;
//!   a false "seen" (two paths with one 64-bit hash) costs one definition. Neither changes
//!   what a replica decodes, so the array needs no keys and never grows.
//!
//! **Hashing.** foldhash with a fixed seed, not SipHash: a path hash is computed for every
//! op, and SipHash was an eighth of a token append. Fixed, so that the same ops always encode
//! to the same bytes (logs and tests are reproducible). A producer's paths can carry keys from
//! outside (map members), so collisions could be forced; that is safe here because a table of
//! at most `MAX_IDS` entries bounds what a probe can cost, and a collision in the seen-once
//! array only writes a path inline once more.
//!
//! **Rollback.** A flush straight to bytes can fail half way (a value that is not JSON);
//! what the batch changed (definitions, paths seen) is undone, so the table is exactly as
//! before and a retry writes the same bytes.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use crate::json_write::{plain, write_str, write_uint};
use crate::path::{Segments, Step};
use crate::wire::{MAX_IDS, MAX_ID_PATH_UNITS};

/// Slots of the seen-once array at most (a power of two): 32 KiB.
const SEEN_SLOTS: usize = 4096;

/// Slots of the seen-once array when it is first needed: a stream that touches few paths (most
/// of them) keeps 512 bytes for it, not 32 KiB.
const SEEN_FIRST: usize = 64;

/// How an op names its path on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// The previous op's path in the same batch: no path.
    Omitted,
    /// Written out.
    Inline,
    /// An id defined earlier in the stream.
    Id(usize),
    /// An id defined by this op: write `["#", id, path]` first, then use the id.
    Define(usize),
}

/// The previous op's path in the batch.
#[derive(Clone, Copy, Debug)]
enum Prev {
    None,
    /// Written inline: its JSON is in `Table::previous`.
    Key,
    /// Named by this id.
    Id(usize),
}

/// A path's id as a table gave it, remembered by the path's dirty-tree node so that the next
/// op there skips writing and hashing the path. Trusted as is while the table's epoch has
/// not moved (no id changed meaning) and the node still stands for the same place (a node
/// recycled for another element is marked untrusted); otherwise checked, segment by segment
/// against the id's JSON, before use. A miss costs the slow path, never a wrong id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cached {
    /// 0: nothing cached.
    uid: u64,
    epoch: u32,
    id: u32,
    trusted: bool,
}

impl Cached {
    /// The same id, to be checked against the path before use.
    pub(crate) fn untrusted(self) -> Cached {
        Cached {
            trusted: false,
            ..self
        }
    }
}

/// Where a dirty-tree node keeps its [`Cached`] id: two relaxed atomics rather than a `Cell`,
/// so that a tracker stays `Sync` (shared behind an `RwLock`, say); on x86-64 and AArch64 a
/// relaxed load or store of a `u64` compiles to a plain move. Only a flush (which holds the tracker mutably)
/// writes it, so the two words never mix two writes; a reader that did see a mix would
/// still only miss or check, as for any stale entry.
#[derive(Debug, Default)]
pub(crate) struct CachedCell {
    /// The table's uid, with `trusted` in the top bit (uids count up from 1 and never get
    /// there).
    uid: AtomicU64,
    /// The id in the high half, the epoch in the low half.
    slot: AtomicU64,
}

const TRUSTED: u64 = 1 << 63;

impl CachedCell {
    #[inline]
    pub(crate) fn get(&self) -> Cached {
        let uid = self.uid.load(Ordering::Relaxed);
        let slot = self.slot.load(Ordering::Relaxed);
        Cached {
            uid: uid & !TRUSTED,
            trusted: uid & TRUSTED != 0,
            id: (slot >> 32) as u32,
            epoch: slot as u32,
        }
    }

    /// The id cached here, when it is table `uid`'s and trusted in `epoch` (the common case,
    /// read without decoding the rest).
    #[inline]
    pub(crate) fn trusted_id(&self, uid: u64, epoch: u32) -> Option<usize> {
        if self.uid.load(Ordering::Relaxed) != uid | TRUSTED {
            return None;
        }
        let slot = self.slot.load(Ordering::Relaxed);
        (slot as u32 == epoch).then_some((slot >> 32) as usize)
    }

    #[inline]
    pub(crate) fn set(&self, c: Cached) {
        let trusted = if c.trusted { TRUSTED } else { 0 };
        self.uid.store(c.uid | trusted, Ordering::Relaxed);
        self.slot.store(
            u64::from(c.id) << 32 | u64::from(c.epoch),
            Ordering::Relaxed,
        );
    }
}

impl Clone for CachedCell {
    fn clone(&self) -> Self {
        let cell = CachedCell::default();
        cell.set(self.get());
        cell
    }
}

/// [`Table::grow_after`] for a seen-once array of `slots` slots.
fn grow_after(slots: usize) -> usize {
    if slots < SEEN_SLOTS {
        slots / 2
    } else {
        usize::MAX
    }
}

/// Table identities (0 is no table).
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// The most undo entries whose room a table keeps from one batch to the next.
const KEEP_UNDO: usize = 4096;

/// What a failed batch must undo.
#[derive(Debug)]
enum Undo {
    /// A slot of the seen-once array held `old`.
    Seen { slot: usize, old: u64 },
    /// The clock hand cleared this id's used bit.
    Used(usize),
    /// A new id was taken (the table grew by one).
    Grew,
    /// `id` was redefined; it held `old`, and the clock hand was at `hand`.
    Redefined {
        id: usize,
        old: Vec<u8>,
        used: bool,
        hand: usize,
    },
}

#[derive(Debug)]
pub(crate) struct Table {
    hasher: FixedState,
    /// Ids by hash of their path's JSON.
    index: HashTable<u32>,
    /// The JSON of each id's path.
    paths: Vec<Vec<u8>>,
    /// Used since the clock hand last passed.
    used: Vec<bool>,
    hand: usize,
    /// Doubles (at a batch's start) while more than half full, up to `SEEN_SLOTS`.
    seen: Vec<u64>,
    /// Hashes written into `seen` since it last grew.
    seen_writes: usize,
    /// `seen` grows at the next batch once `seen_writes` is above this (half its slots;
    /// never once it has `SEEN_SLOTS`).
    grow_after: usize,
    /// The ids this table may use: `MAX_IDS`, smaller in tests.
    limit: usize,
    /// The path of the previous op in the batch.
    prev: Prev,
    /// Its JSON, when `prev` is `Prev::Key`.
    previous: Vec<u8>,
    /// Tells tables apart, for [`Cached`] ids.
    uid: u64,
    /// Moves whenever an id may stop naming its path (reset, redefinition, rollback).
    epoch: u32,
    /// The current op's path JSON (reused buffer).
    key: Vec<u8>,
    undo: Vec<Undo>,
}

impl Default for Table {
    fn default() -> Table {
        Table::with_limit(MAX_IDS)
    }
}

impl Table {
    pub(crate) fn with_limit(limit: usize) -> Table {
        Table {
            hasher: FixedState::with_seed(0x6368_6f72_642e_7773),
            index: HashTable::new(),
            paths: Vec::new(),
            used: Vec::new(),
            hand: 0,
            // Allocated with the stream, not by its first op.
            seen: vec![0; SEEN_FIRST],
            seen_writes: 0,
            grow_after: grow_after(SEEN_FIRST),
            limit: limit.clamp(1, MAX_IDS),
            prev: Prev::None,
            previous: Vec::with_capacity(64),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed).max(1),
            epoch: 0,
            key: Vec::with_capacity(64),
            undo: Vec::with_capacity(8),
        }
    }

    /// Forgets every id and every path seen (an `r`).
    pub(crate) fn reset(&mut self) {
        self.index.clear();
        self.paths.clear();
        self.used.clear();
        self.hand = 0;
        self.seen.fill(0);
        self.seen_writes = 0;
        self.undo.clear();
        self.prev = Prev::None;
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Starts a batch: omission never crosses one, and a failed batch undoes what it defined.
    #[inline]
    pub(crate) fn begin(&mut self) {
        self.prev = Prev::None;
        self.undo.clear();
        // A batch of many paths leaves a long undo log: its room is freed at the next batch
        // (a steady stream's batches fit in what is kept).
        if self.undo.capacity() > KEEP_UNDO {
            self.shrink_undo();
        }
        // Grown between batches only: the undo log names slots.
        if self.seen_writes > self.grow_after {
            self.grow_seen();
        }
    }

    /// Frees the room of a long undo log (out of line: `begin` starts every batch).
    #[cold]
    #[inline(never)]
    fn shrink_undo(&mut self) {
        self.undo = Vec::with_capacity(8);
    }

    /// Doubles the table of hashes of paths seen once.
    #[cold]
    #[inline(never)]
    fn grow_seen(&mut self) {
        let slots = self.seen.len() * 2;
        let mut seen = vec![0; slots];
        for &hash in self.seen.iter().filter(|&&h| h != 0) {
            seen[hash as usize & (slots - 1)] = hash;
        }
        self.seen = seen;
        self.seen_writes = 0;
        self.grow_after = grow_after(slots);
    }

    /// Undoes the definitions of the batch begun last.
    pub(crate) fn rollback(&mut self) {
        while let Some(undo) = self.undo.pop() {
            let id = match undo {
                Undo::Seen { slot, old } => {
                    self.seen[slot] = old;
                    self.seen_writes -= 1;
                    continue;
                }
                Undo::Used(id) => {
                    self.used[id] = true;
                    continue;
                }
                Undo::Grew => self.paths.len() - 1,
                Undo::Redefined { id, .. } => id,
            };
            let hash = self.hash(&self.paths[id]);
            if let Ok(entry) = self.index.find_entry(hash, |&i| i as usize == id) {
                entry.remove();
            }
            match undo {
                Undo::Seen { .. } | Undo::Used(_) => {}
                Undo::Grew => {
                    self.paths.pop();
                    self.used.pop();
                }
                Undo::Redefined {
                    id,
                    old,
                    used,
                    hand,
                } => {
                    let hash = self.hash(&old);
                    self.paths[id] = old;
                    self.used[id] = used;
                    self.hand = hand;
                    self.insert(hash, id);
                }
            }
        }
        self.prev = Prev::None;
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Bytes held (for the memory figures in the docs and tests).
    #[cfg(test)]
    pub(crate) fn ids(&self) -> usize {
        self.paths.len()
    }

    /// The id of the path whose JSON is `key`, through the index.
    #[cfg(test)]
    fn lookup(&self, key: &[u8]) -> Option<usize> {
        let hash = self.hash(key);
        let found = self.index.find(hash, |&i| self.paths[i as usize] == *key);
        found.map(|&i| i as usize)
    }

    /// The JSON of the path [`form`](Table::form) was last asked about (kept as the previous
    /// op's path when written inline).
    pub(crate) fn key(&self) -> &[u8] {
        match self.prev {
            Prev::Key => &self.previous,
            _ => &self.key,
        }
    }

    /// Decides how the next op of the batch names `path`, updating the table.
    pub(crate) fn form<P: Segments + ?Sized>(&mut self, path: &P) -> Form {
        self.key.clear();
        write_path(&mut self.key, path);
        let same = match self.prev {
            Prev::None => false,
            Prev::Key => self.key == self.previous,
            Prev::Id(id) => self.paths[id] == self.key,
        };
        if same {
            return Form::Omitted;
        }

        let hash = self.hash(&self.key);
        let (paths, key) = (&self.paths, &self.key);
        if let Some(&id) = self.index.find(hash, |&i| paths[i as usize] == *key) {
            self.used[id as usize] = true;
            self.prev = Prev::Id(id as usize);
            return Form::Id(id as usize);
        }
        let form = self.first_sights(path, hash);
        match form {
            Form::Define(id) => self.prev = Prev::Id(id),
            _ => {
                // (Swapped, not copied: `key` is rewritten by the next op anyway.)
                std::mem::swap(&mut self.previous, &mut self.key);
                self.prev = Prev::Key;
            }
        }
        form
    }

    /// The form of a path without an id: inline the first time, defined the second.
    fn first_sights<P: Segments + ?Sized>(&mut self, path: &P, hash: u64) -> Form {
        let slot = hash as usize & (self.seen.len() - 1);
        if self.seen[slot] != hash {
            self.seen_writes += 1;
            let old = std::mem::replace(&mut self.seen[slot], hash);
            self.undo.push(Undo::Seen { slot, old });
            return Form::Inline;
        }
        if !internable(path) {
            return Form::Inline;
        }
        let id = self.take_id();
        self.paths[id].clear();
        self.paths[id].extend_from_slice(&self.key);
        self.used[id] = true;
        self.insert(hash, id);
        Form::Define(id)
    }

    /// The form of `path` through the id remembered in `cached` from an earlier batch:
    /// `Some(form)` (the id or, after an op on the same path, omission) when the id is this
    /// table's and still names `path` (trusted, or checked, and then trusted again);
    /// `None` otherwise (ask [`form`](Table::form)). (Always inline: a streaming flush's
    /// path is cached, and this is all of its lookup.)
    #[inline(always)]
    pub(crate) fn form_cached<P: Segments + ?Sized>(
        &mut self,
        cached: &CachedCell,
        path: &P,
    ) -> Option<Form> {
        let id = match cached.trusted_id(self.uid, self.epoch) {
            Some(id) => id,
            None => self.check_cached(cached, path)?,
        };
        let same = match self.prev {
            Prev::None => false,
            Prev::Key => self.paths[id] == self.previous,
            Prev::Id(prev) => prev == id,
        };
        if same {
            return Some(Form::Omitted);
        }
        self.used[id] = true;
        self.prev = Prev::Id(id);
        Some(Form::Id(id))
    }

    /// [`form_cached`](Table::form_cached) of an id not trusted in this epoch: the id, when
    /// it is this table's and still names `path` (it is then trusted again). (Out of line:
    /// the rare case of a node reused or moved.)
    #[inline(never)]
    fn check_cached<P: Segments + ?Sized>(&self, cached: &CachedCell, path: &P) -> Option<usize> {
        let c = cached.get();
        let id = c.id as usize;
        if c.uid != self.uid {
            return None;
        }
        if !(c.trusted && c.epoch == self.epoch) {
            if !self.paths.get(id).is_some_and(|json| path_is(path, json)) {
                return None;
            }
            cached.set(Cached {
                epoch: self.epoch,
                trusted: true,
                ..c
            });
        }
        Some(id)
    }

    /// The id `form` gave a path, to remember on the path's dirty-tree node.
    #[inline]
    pub(crate) fn cache(&self, form: Form) -> Option<Cached> {
        match form {
            Form::Id(id) | Form::Define(id) => Some(Cached {
                uid: self.uid,
                epoch: self.epoch,
                id: id as u32,
                trusted: true,
            }),
            Form::Omitted | Form::Inline => None,
        }
    }

    /// A free id, or the one the clock hand evicts (its entry removed, the undo recorded).
    fn take_id(&mut self) -> usize {
        if self.paths.len() < self.limit {
            self.paths.push(Vec::new());
            self.used.push(false);
            self.undo.push(Undo::Grew);
            return self.paths.len() - 1;
        }
        let hand = self.hand;
        // Second chance: at most one full turn clears every bit, so this ends.
        while self.used[self.hand] {
            self.used[self.hand] = false;
            self.undo.push(Undo::Used(self.hand));
            self.hand = (self.hand + 1) % self.limit;
        }
        let id = self.hand;
        self.hand = (self.hand + 1) % self.limit;
        self.epoch = self.epoch.wrapping_add(1); // the id is about to name another path
        let hash = self.hash(&self.paths[id]);
        if let Ok(entry) = self.index.find_entry(hash, |&i| i as usize == id) {
            entry.remove();
        }
        let old = std::mem::take(&mut self.paths[id]);
        self.undo.push(Undo::Redefined {
            id,
            old,
            used: false,
            hand,
        });
        id
    }

    fn insert(&mut self, hash: u64, id: usize) {
        let (paths, hasher) = (&self.paths, &self.hasher);
        // Rehashing (when the index grows) must give each entry the hash it is found by.
        self.index
            .insert_unique(hash, id as u32, |&i| hash_of(hasher, &paths[i as usize]));
    }

    fn hash(&self, key: &[u8]) -> u64 {
        hash_of(&self.hasher, key)
    }
}

/// The hash of a path's JSON: never 0, the empty slot of the seen-once array.
fn hash_of(hasher: &FixedState, key: &[u8]) -> u64 {
    hasher.hash_one(key) | 1
}

/// Whether `path` may get an id: its keys hold at most [`MAX_ID_PATH_UNITS`] UTF-16 code units
/// in all (the decoder refuses a definition beyond that, so both ends agree).
pub(crate) fn internable<P: Segments + ?Sized>(path: &P) -> bool {
    let mut units = 0;
    path.each_step(&mut |step| {
        if let Step::Field(k) | Step::Key(k) = step {
            units += crate::utf16::utf16_len(k);
        }
    });
    units <= MAX_ID_PATH_UNITS
}

/// Whether `json` is exactly what [`write_path`] writes for `path`, compared without writing.
/// A key that JSON escapes answers `false` (a miss, never a wrong match: written verbatim
/// it could spell another path).
pub(crate) fn path_is<P: Segments + ?Sized>(path: &P, json: &[u8]) -> bool {
    let Some(mut rest) = json.strip_prefix(b"[") else {
        return false;
    };
    let mut same = true;
    let mut first = true;
    path.each_step(&mut |step| {
        if !same {
            return;
        }
        if !std::mem::take(&mut first) {
            match rest.strip_prefix(b",") {
                Some(r) => rest = r,
                None => {
                    same = false;
                    return;
                }
            }
        }
        let after = match step {
            Step::Field(k) | Step::Key(k) => {
                let k = k.as_bytes();
                let quoted = rest.len() >= k.len() + 2
                    && rest[0] == b'"'
                    && &rest[1..=k.len()] == k
                    && rest[k.len() + 1] == b'"';
                if !(quoted && plain(k)) {
                    same = false;
                    return;
                }
                k.len() + 2
            }
            Step::Index(n) => {
                let mut digits = itoa::Buffer::new();
                let digits = digits.format(n as u64).as_bytes();
                if !rest.starts_with(digits) {
                    same = false;
                    return;
                }
                digits.len()
            }
        };
        rest = &rest[after..];
    });
    same && rest == b"]"
}

/// Writes `path` as JSON, exactly as serde_json writes it.
pub(crate) fn write_path<P: Segments + ?Sized>(out: &mut Vec<u8>, path: &P) {
    out.push(b'[');
    let mut first = true;
    path.each_step(&mut |step| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        match step {
            Step::Field(k) | Step::Key(k) => write_str(out, k),
            Step::Index(n) => write_uint(out, n as u64),
        }
    });
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;
    use crate::path::{Path, Seg};

    fn p(segs: Path) -> Path {
        segs
    }

    #[test]
    fn paths_are_written_as_serde_json_writes_them() {
        for path in [
            Path::root(),
            p(path!["a", 0, "b"].into()),
            p(path!["quo\"te", "back\\slash", "nl\n", "é☃"].into()),
        ] {
            let mut out = Vec::new();
            write_path(&mut out, &path);
            assert_eq!(out, serde_json::to_vec(&path).unwrap());
        }
    }

    #[test]
    fn second_sight_defines_and_third_uses_the_id() {
        let mut t = Table::default();
        let a: Path = path!["a"].into();
        let b: Path = path!["b"].into();
        t.begin();
        assert_eq!(t.form(&a), Form::Inline);
        assert_eq!(t.form(&a), Form::Omitted);
        assert_eq!(t.form(&b), Form::Inline);
        assert_eq!(t.form(&a), Form::Define(0));
        assert_eq!(t.form(&b), Form::Define(1));
        t.begin();
        assert_eq!(t.form(&a), Form::Id(0));
        assert_eq!(t.form(&b), Form::Id(1));
    }

    #[test]
    fn ids_are_recycled_by_second_chance_and_stay_in_bounds() {
        let mut t = Table::with_limit(2);
        let paths: Vec<Path> = (0..3).map(|i| path!["k", i].into()).collect();
        // Seen, then defined (seen again first if another path took its seen slot).
        let define = |t: &mut Table, path: &Path| {
            t.begin();
            match t.form(path) {
                Form::Inline => {
                    t.begin();
                    t.form(path)
                }
                form => form,
            }
        };
        assert_eq!(define(&mut t, &paths[0]), Form::Define(0));
        assert_eq!(define(&mut t, &paths[1]), Form::Define(1));
        // Both used since the hand last passed: one turn clears them, then 0 goes.
        assert_eq!(define(&mut t, &paths[2]), Form::Define(0));
        t.begin();
        assert_eq!(t.form(&paths[1]), Form::Id(1));
        t.begin();
        assert_eq!(t.form(&paths[2]), Form::Id(0));
        // paths[0] lost its id; defined again, it evicts the id not used since the hand
        // passed.
        assert_eq!(define(&mut t, &paths[0]), Form::Define(1));
        assert_eq!(t.ids(), 2);
    }

    #[test]
    fn rollback_restores_redefined_and_new_ids() {
        let mut t = Table::with_limit(1);
        let (a, b): (Path, Path) = (path!["a"].into(), path!["b"].into());
        t.begin();
        t.form(&a);
        t.begin();
        assert_eq!(t.form(&a), Form::Define(0));
        t.begin();
        t.form(&b);
        t.begin();
        assert_eq!(t.form(&b), Form::Define(0)); // a's id redefined...
        t.rollback(); // ...and restored
        t.begin();
        assert_eq!(t.form(&a), Form::Id(0));

        let mut t = Table::default();
        t.begin();
        t.form(&a);
        t.begin();
        assert_eq!(t.form(&a), Form::Define(0));
        t.rollback();
        assert_eq!(t.ids(), 0);
        t.begin();
        assert_eq!(t.form(&a), Form::Define(0));
    }

    #[test]
    fn every_id_stays_findable_as_the_index_grows() {
        // (The index once rehashed with another hash than it looked up with.)
        let mut t = Table::default();
        let paths: Vec<Path> = (0..300).map(|i| path!["k", i].into()).collect();
        for _ in 0..2 {
            for p in &paths {
                t.begin();
                t.form(p);
            }
        }
        assert!(t.ids() > 56, "the index grew several times: {}", t.ids());
        for (i, key) in t.paths.iter().enumerate() {
            assert_eq!(t.lookup(key), Some(i), "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn path_is_matches_exactly_what_write_path_writes() {
        let paths: Vec<Path> = vec![
            Path::root(),
            path!["a"].into(),
            path!["a", 1].into(),
            path!["a", 12].into(),
            path!["a", "b"].into(),
            path!["a\",\"b"].into(),
            path!["é☃", 0, "x"].into(),
        ];
        for p in &paths {
            let mut json = Vec::new();
            write_path(&mut json, p);
            // A key JSON escapes is never matched (a miss), every other path is.
            let escaped = p
                .iter()
                .any(|s| matches!(s, Seg::Key(k) if k.contains('"')));
            assert_eq!(path_is(p, &json), !escaped, "{p}");
            for q in &paths {
                let mut other = Vec::new();
                write_path(&mut other, q);
                if other != json {
                    assert!(!path_is(q, &json), "{q} matched {p}'s JSON");
                }
            }
        }
    }

    #[test]
    fn long_paths_stay_inline() {
        let mut t = Table::default();
        let long: Path = path!["x".repeat(MAX_ID_PATH_UNITS + 1)].into();
        for _ in 0..3 {
            t.begin();
            assert_eq!(t.form(&long), Form::Inline);
        }
    }
}
