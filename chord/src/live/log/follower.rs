//! The followers: over a store other nodes write to, a thread per address with live readers
//! feeding its tail cache from the store's live source.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::{lock, Shared};
use crate::live::tail::Tail;
use crate::store::{Address, Error, LiveSource, LiveTail, Result, Store};

/// How long a follower waits on the store before it looks whether it is still wanted.
const FOLLOW_POLL: Duration = Duration::from_millis(500);

/// A running follower, as the log sees it.
pub(super) struct Following {
    /// Tells this follower from a later one of the same address.
    pub(super) id: u64,
    /// The last time a live reader asked for the address, or the follower saw one waiting.
    pub(super) wanted: Instant,
    /// The last time the follower heard from the store (records, or a wait that ended with
    /// none); its start until it first does.
    pub(super) heard: Instant,
}

impl<S: Store + Send + 'static> Shared<S> {
    /// Starts the thread that feeds `tail` from the store's live source. Its id.
    pub(super) fn start_follower(&self, address: &Address, tail: &Arc<Tail>) -> Result<u64> {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        let Some(source) = self.live.clone() else {
            return Ok(id); // only called for shared stores
        };
        let follower = Follower {
            log: self.me.clone(),
            source,
            address: address.clone(),
            tail: Arc::clone(tail),
            id,
            idle: self.follow_idle,
        };
        std::thread::Builder::new()
            .name("chord-follow".into())
            .spawn(move || follower.run())
            .map_err(|source| Error::Io {
                path: address.to_string().into(),
                action: "start a follower thread",
                source,
            })?;
        Ok(id)
    }
}

impl<S: Store> Shared<S> {
    /// See [`Log::follower_lag`](super::Log::follower_lag).
    pub(super) fn follower_lag(&self) -> Option<Duration> {
        let index = lock(&self.index);
        index
            .followers
            .iter()
            .map(|(address, f)| {
                let lag = f.heard.elapsed();
                crate::live::metrics::follower_lag(address, lag);
                lag
            })
            .max()
    }
}

/// A thread feeding one address's tail cache from the store's live source, until the log is
/// dropped or the address has had no live reader for `idle`.
struct Follower<S> {
    log: Weak<Shared<S>>,
    source: Arc<dyn LiveSource>,
    address: Address,
    tail: Arc<Tail>,
    id: u64,
    idle: Duration,
}

impl<S> Follower<S> {
    fn run(self) {
        let mut live: Option<Box<dyn LiveTail>> = None;
        let mut backoff = Duration::from_millis(10);
        while self.wanted() {
            let read = match &mut live {
                Some(live) => live.next(Some(FOLLOW_POLL)),
                None => match self
                    .source
                    .follow(&self.address, Some(self.tail.position().last))
                {
                    Ok(started) => {
                        live = Some(started);
                        continue;
                    }
                    Err(e) => Err(e),
                },
            };
            match read {
                Ok(records) => {
                    backoff = Duration::from_millis(10);
                    self.tail.extend(&records);
                    if let Some(log) = self.log.upgrade() {
                        let mut index = lock(&log.index);
                        if let Some(following) = self.following(&mut index.followers) {
                            following.heard = Instant::now();
                        }
                        crate::live::metrics::follower_lag(&self.address, Duration::ZERO);
                        log.trim(&mut index, Some(&self.address));
                    }
                }
                Err(e) => {
                    // The store is away (a restart, a cut connection): the tail keeps its
                    // place and reads again.
                    tracing::debug!(
                        target: "chord::streams",
                        stream = %self.address,
                        error = %e,
                        "the follower's read failed"
                    );
                    if let Some(log) = self.log.upgrade() {
                        let mut index = lock(&log.index);
                        if let Some(following) = self.following(&mut index.followers) {
                            crate::live::metrics::follower_lag(
                                &self.address,
                                following.heard.elapsed(),
                            );
                        }
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// This follower's entry in the log's list (`None` once a later one replaced it).
    fn following<'a>(
        &self,
        followers: &'a mut HashMap<Address, Following>,
    ) -> Option<&'a mut Following> {
        followers.get_mut(&self.address).filter(|f| f.id == self.id)
    }

    /// Whether to go on; when not, the follower is taken off the log's list.
    fn wanted(&self) -> bool {
        let Some(log) = self.log.upgrade() else {
            return false;
        };
        let mut index = lock(&log.index);
        let Some(following) = index
            .followers
            .get_mut(&self.address)
            .filter(|f| f.id == self.id)
        else {
            return false;
        };
        if self.tail.readers() > 0 {
            following.wanted = Instant::now();
            return true;
        }
        if following.wanted.elapsed() < self.idle {
            return true;
        }
        index.followers.remove(&self.address);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{seqs, set, wait_for, Db, LIVE};
    use super::super::{LogBuilder, Want};
    use super::*;
    use crate::store::BASE;

    #[test]
    fn a_follower_feeds_another_writers_records_and_stops_once_unwanted() {
        let db = Db::new();
        let mut other = db.clone(); // another node's writer
        let a = Address::new("lanes", "main");
        let s0 = other.append(&a, r#"[["r",{"n":0}]]"#, Some(BASE)).unwrap();
        let s1 = other.append(&a, &set(1), None).unwrap();
        let log = LogBuilder::new()
            .follow_idle(Duration::from_millis(20))
            .build(db.clone());
        let shared = &log.shared;
        let tail = shared.tail(&a, LIVE).unwrap().unwrap();
        let reader = tail.subscribe();
        assert!(lock(&shared.index).followers.contains_key(&a));
        let s2 = other.append(&a, &set(2), None).unwrap();
        wait_for("the follower", || tail.position().last == s2);
        assert_eq!(seqs(&tail, s0), [s1, s2]);
        // No reader left: the follower stops after its idle time.
        drop(reader);
        wait_for("the follower to stop", || {
            lock(&shared.index).followers.is_empty()
        });
        // Nobody feeds the cache now: a read loads it afresh.
        let s3 = other.append(&a, &set(3), None).unwrap();
        let fresh = shared.tail(&a, Want::default()).unwrap().unwrap();
        assert_eq!(fresh.position().last, s3);
        assert_eq!(seqs(&fresh, s0), [s1, s2, s3]);
    }
}
