//! The tail caches' index: which addresses' tails are loaded and who feeds them, loading a
//! tail from the store, catching it up, trimming the caches to their bound, and the reads of
//! the store behind them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::RandomState;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashlink::LinkedHashMap;

use super::follower::Following;
use super::{lock, Shared, Want};
use crate::live::tail::{Tail, TAIL_OVERHEAD};
use crate::store::{is_base_tag, Address, ReadOptions, Record, Result, Store};

/// The tail caches and who feeds them. Locked after the store, never before.
#[derive(Default)]
pub(super) struct Index {
    /// The loaded tails, the least recently used first: a read moves its address to the back,
    /// and [`Shared::trim`] evicts from the front. A map with its own order (rather than an
    /// LRU cache that evicts by count) since what goes is decided by bytes, and a tail still in
    /// use by a reader or a follower is emptied rather than dropped. Hashed as std's maps are
    /// (SipHash, keyed per map), since the addresses come from request paths.
    pub(super) tails: LinkedHashMap<Address, Arc<Tail>, RandomState>,
    /// Addresses whose cache this log's appends feed (shared stores only).
    pub(super) own: HashSet<Address>,
    /// The running followers (shared stores only).
    pub(super) followers: HashMap<Address, Following>,
    /// Per address, the base records appended since its last compaction (see
    /// [`Compaction`](crate::streams::Compaction)); none yet: due at the first.
    pub(super) bases_since: HashMap<Address, usize>,
    /// Per address, when this log appended each base record within the retention's time
    /// floor, oldest first (see [`Index::bases_within`]).
    pub(super) base_times: HashMap<Address, VecDeque<Instant>>,
    /// Why the last automatic compaction failed, when it did.
    pub(super) compaction_failure: Option<String>,
}

impl Index {
    /// Notes a base record of `address` appended now, forgetting those older than `window`.
    pub(super) fn seen_base(&mut self, address: &Address, window: Duration) {
        let now = Instant::now();
        let times = self.base_times.entry(address.clone()).or_default();
        while times
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) > window)
        {
            times.pop_front();
        }
        times.push_back(now);
    }

    /// How many base records of `address` this log appended within `window` before `now`.
    pub(super) fn bases_within(&self, address: &Address, window: Duration, now: Instant) -> usize {
        self.base_times.get(address).map_or(0, |times| {
            times
                .iter()
                .filter(|at| now.saturating_duration_since(**at) <= window)
                .count()
        })
    }
}

impl<S> Shared<S> {
    /// Empties tail caches, the least recently used first, until all of them together hold
    /// at most the log's bound. `keep` (the address just read or written) goes last, and
    /// keeps its newest record. A tail only the index holds (no reader waiting, no follower,
    /// no read in progress: every other handle is cloned under the index's lock, which the
    /// caller holds) is forgotten; one still held is emptied, and its readers read the store.
    pub(super) fn trim(&self, index: &mut Index, keep: Option<&Address>) {
        self.trim_to_bound(index, keep);
        crate::live::metrics::tail_cache_bytes(self.usage.bytes());
    }

    fn trim_to_bound(&self, index: &mut Index, keep: Option<&Address>) {
        let Some(mut over) = self.usage.bytes().checked_sub(self.cache_bytes) else {
            return;
        };
        let mut forget = Vec::new();
        for (address, tail) in index.tails.iter() {
            if over == 0 {
                break;
            }
            if Some(address) == keep {
                continue;
            }
            let freed = if Arc::strong_count(tail) == 1 {
                forget.push(address.clone());
                tail.cost()
            } else {
                tail.free(usize::MAX, false)
            };
            over = over.saturating_sub(freed);
        }
        for address in &forget {
            index.tails.remove(address);
        }
        if let Some(tail) = keep.and_then(|a| index.tails.get(a)) {
            if over > 0 {
                tail.free(over, true);
            }
        }
    }
}

impl<S: Store + Send + 'static> Shared<S> {
    /// The tail of `address`, loaded from the store on first use; `None` when the address
    /// has no records. Reads the store when loading: call it off the async runtime's workers.
    ///
    /// Over a shared store (see [`Log`](super::Log)), a tail that nobody feeds is loaded
    /// afresh, a live read starts (or keeps) the address's follower, and a read from an offset
    /// past the cache's last record reads the store up to it first.
    pub(crate) fn tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>> {
        if let Some(tail) = self.fed_tail(address, want) {
            return Ok(Some(tail));
        }
        let tail = self.load_tail(address, want);
        if let Ok(Some(_)) = &tail {
            self.trim(&mut lock(&self.index), Some(address));
        }
        tail
    }

    /// [`tail`](Shared::tail) when the cache cannot answer alone: loads, catches up, starts
    /// the follower.
    fn load_tail(&self, address: &Address, want: Want) -> Result<Option<Arc<Tail>>> {
        // Appends wait while the tail loads, so none slips between the read and the insert.
        let store = lock(&self.store);
        let mut index = lock(&self.index);
        let shared = self.live.is_some();
        let own = index.own.contains(address);
        let mut following = index.followers.contains_key(address);
        let tail = match index.tails.to_back(address) {
            Some(tail) if !shared || following || own => Arc::clone(tail),
            _ => {
                // Not loaded yet, or nobody fed it since it was: read it afresh (a follower
                // of another tail, if any, stops at its next look).
                index.followers.remove(address);
                following = false;
                let newest = self.newest(&*store, address)?;
                if newest.is_empty() {
                    index.tails.remove(address);
                    return Ok(None);
                }
                let fixed = TAIL_OVERHEAD + address.namespace.len() + address.key.len();
                let usage = Arc::clone(&self.usage);
                let tail = Arc::new(Tail::load(self.bounds, usage, fixed, newest));
                index.tails.insert(address.clone(), Arc::clone(&tail));
                tail
            }
        };
        if !shared {
            return Ok(Some(tail));
        }
        let behind = want.after.is_some_and(|after| after > tail.position().last);
        if (own && !following) || behind {
            // Fed by this log's appends only (another node may have taken the address
            // over since), or a reader ahead of the follower (it read another node): read
            // what the store has past the cache first.
            catch_up(&*store, address, &tail)?;
        }
        if want.live {
            match index.followers.get_mut(address) {
                Some(following) => following.wanted = Instant::now(),
                None => {
                    let id = self.start_follower(address, &tail)?;
                    let wanted = Instant::now();
                    index.followers.insert(
                        address.clone(),
                        Following {
                            id,
                            wanted,
                            heard: wanted,
                        },
                    );
                }
            }
        }
        Ok(Some(tail))
    }

    /// The tail of `address` when it is loaded, fed, and has what `want` asks for: no store
    /// read needed, and no wait for an append in progress.
    fn fed_tail(&self, address: &Address, want: Want) -> Option<Arc<Tail>> {
        let mut index = lock(&self.index);
        let tail = Arc::clone(index.tails.to_back(address)?);
        if self.live.is_none() {
            return Some(tail);
        }
        let following = index.followers.get_mut(address)?;
        if want.after.is_some_and(|after| after > tail.position().last) {
            return None;
        }
        if want.live {
            following.wanted = Instant::now();
        }
        Some(tail)
    }

    /// The newest records of `address`, newest first, each with the seq before it: enough to
    /// fill the cache and to find the kept bases.
    fn newest(&self, store: &S, address: &Address) -> Result<Vec<(Record, u64)>> {
        let mut out: Vec<(Record, u64)> = Vec::new();
        let mut bases = 0;
        let mut kept = 0usize;
        let mut cursor = None;
        loop {
            let page = store.read_list(address, &ReadOptions::desc().cursor(cursor).limit(256))?;
            for mut record in page.records {
                if let Some(newer) = out.last_mut() {
                    newer.1 = record.seq;
                }
                let base = is_base_tag(record.tag.as_deref());
                // Beyond what the cache can hold, only the seqs and tags are needed: memory
                // stays bounded however far back the kept bases are.
                kept += record.batch.len();
                let newest = out.is_empty(); // kept whatever its size, as the cache keeps it
                if !newest && (out.len() >= self.bounds.records || kept > self.bounds.bytes) {
                    record.batch = String::new();
                }
                out.push((record, 0));
                if base {
                    bases += 1;
                }
            }
            let enough = bases >= self.bounds.bases;
            match page.next_cursor {
                Some(next) if !enough => cursor = Some(next),
                Some(_) => {
                    // One record more: the seq before the oldest base read.
                    let page = store.read_list(
                        address,
                        &ReadOptions::desc().cursor(cursor_of(&out)).limit(1),
                    )?;
                    if let (Some(last), Some(before)) = (out.last_mut(), page.records.first()) {
                        last.1 = before.seq;
                    }
                    return Ok(out);
                }
                None => return Ok(out),
            }
        }
    }

    /// `after`'s records from the store, oldest first, at most `max_bytes` of them (at least
    /// one); blocking. `None` when `after` is gone: before the tail's floor (which may have
    /// moved, and the store been compacted, since the caller looked at the cache), or in a
    /// range compacted by other means (no record of the address at or before it is left,
    /// and it is not the floor itself, the seq just before the oldest kept base): the records
    /// past it would not follow it, so the reader gets `410`, never a gap.
    pub(crate) fn read(
        &self,
        address: &Address,
        after: u64,
        max_bytes: usize,
    ) -> Result<Option<Vec<Record>>> {
        let store = lock(&self.store);
        let (floor, defers) = lock(&self.index)
            .tails
            .get(address)
            .map_or((None, false), |tail| {
                (Some(tail.position().floor), tail.defers_before_floor())
            });
        if floor.is_some_and(|floor| after < floor) && !defers {
            return Ok(None);
        }
        if after > 0 && floor != Some(after) {
            let at_or_before = ReadOptions::desc().cursor(after.checked_add(1)).limit(1);
            if store.read_list(address, &at_or_before)?.records.is_empty() {
                return Ok(None);
            }
        }
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut cursor = Some(after);
        loop {
            let page = store.read_list(address, &ReadOptions::asc().cursor(cursor).limit(64))?;
            for record in page.records {
                if !out.is_empty() && bytes + record.batch.len() > max_bytes {
                    return Ok(Some(out));
                }
                bytes += record.batch.len();
                out.push(record);
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(Some(out)),
            }
        }
    }
}

fn cursor_of(out: &[(Record, u64)]) -> Option<u64> {
    out.last().map(|(r, _)| r.seq)
}

/// Reads the store into `tail` from past its last record to the store's newest.
pub(super) fn catch_up<S: Store>(store: &S, address: &Address, tail: &Tail) -> Result<()> {
    let mut cursor = tail.position().last;
    loop {
        let options = ReadOptions::asc().cursor(Some(cursor)).limit(256);
        let page = store.read_list(address, &options)?;
        tail.extend(&page.records);
        match page.next_cursor {
            Some(next) => cursor = next,
            None => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::tests::{seqs, set, Db, LIVE};
    use super::*;
    use crate::live::tail::Found;
    use crate::store::BASE;
    use crate::store::{Durability, JsonlStore};
    use crate::streams::LogBuilder;

    #[test]
    fn a_reader_ahead_of_the_follower_is_caught_up_not_gone() {
        let db = Db::new();
        let mut other = db.clone();
        let a = Address::new("lanes", "main");
        other.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        let s1 = other.append(&a, &set(1), None).unwrap();
        let log = LogBuilder::new().build(db.clone());
        let tail = log.shared.tail(&a, LIVE).unwrap().unwrap();
        let _reader = tail.subscribe();
        db.0.frozen.store(true, Ordering::Release);
        let s2 = other.append(&a, &set(2), None).unwrap();
        let s3 = other.append(&a, &set(3), None).unwrap();
        assert_eq!(tail.position().last, s1, "the follower is behind");
        // A reader that saw s2 on another node.
        let want = Want {
            live: true,
            after: Some(s2),
        };
        let same = log.shared.tail(&a, want).unwrap().unwrap();
        assert!(Arc::ptr_eq(&same, &tail), "the fed cache, caught up");
        assert_eq!(seqs(&tail, s2), [s3]);
        // An offset nobody handed out is still beyond the tail.
        let beyond = Want {
            live: true,
            after: Some(s3 + 100),
        };
        let same = log.shared.tail(&a, beyond).unwrap().unwrap();
        assert!(matches!(same.read(s3 + 100, 1), Found::Gone));
    }

    #[test]
    fn the_caches_together_stay_within_their_bound_least_recently_read_out_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path().join("l"), Durability::default()).unwrap();
        let bound = 64 << 10;
        let mut log = LogBuilder::new().tail_cache_bytes(bound).build(store);
        let addr = |i: usize| Address::new("many", format!("a{i}"));
        // 40 addresses of about 8 KiB each: five times the bound in all.
        let text = format!(r#"[["r",{{"s":"{}"}}]]"#, "x".repeat(1000));
        let change = format!(r#"[["s",["s"],"{}"]]"#, "y".repeat(1000));
        for i in 0..40 {
            log.append(&addr(i), &text, Some(BASE)).unwrap();
            for _ in 1..8 {
                log.append(&addr(i), &change, None).unwrap();
            }
        }
        assert_eq!(log.cached_bytes(), 0, "nothing is cached before a read");
        let held = log.shared.tail(&addr(0), Want::default()).unwrap().unwrap();
        assert_eq!(seqs(&held, 0).len(), 8, "all of a0 is cached");
        let mut most = 0;
        for i in 1..40 {
            log.shared.tail(&addr(i), Want::default()).unwrap().unwrap();
            most = most.max(log.cached_bytes());
            // a1 is read again each time: the most recently used but one.
            if i > 1 {
                log.shared.tail(&addr(1), Want::default()).unwrap().unwrap();
            }
        }
        assert!(most <= bound, "{most} > {bound}");
        assert!(most > bound / 2, "the caches were used: {most}");
        let index = lock(&log.shared.index);
        let a1 = index.tails.get(&addr(1)).expect("a1 was read last but one");
        assert_eq!(seqs(a1, 0).len(), 8, "a1 keeps all its records");
        assert!(index.tails.contains_key(&addr(39)), "the last one read");
        for i in 2..20 {
            assert!(!index.tails.contains_key(&addr(i)), "a{i} was forgotten");
        }
        // a0's tail is held (as a reader would hold it): emptied, not forgotten.
        assert!(Arc::ptr_eq(index.tails.get(&addr(0)).unwrap(), &held));
        assert!(matches!(held.read(0, 1 << 20), Found::Miss));
        drop(index);
        // What the index forgot is no longer counted; what the held tail holds beside its
        // entries goes when it is dropped.
        let before = log.cached_bytes();
        drop(held);
        assert!(log.cached_bytes() == before, "a0 is still in the index");
        lock(&log.shared.index).tails.clear();
        assert_eq!(log.cached_bytes(), 0, "every byte counted is given back");
    }
}
