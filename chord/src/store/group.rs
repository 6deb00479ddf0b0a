//! When appended batches reach the disk: the [`Durability`] policy, shared by both backends.
//!
//! A backend writes each batch to the operating system itself, then tells the [`Syncer`]; the
//! syncer runs the backend's flush (an `fdatasync`, a SQLite commit) at once under
//! [`Durability::EveryAppend`], or, under [`Durability::Grouped`], once `max_batches` batches
//! wait or from a background thread `max_delay` after the oldest waiting batch.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use super::mark::Mark;
use super::{Durability, Error, Result};

/// A backend's flush: makes everything written so far durable and returns the highest seq
/// now on disk (at least `target`, the last seq written when the flush was asked for).
pub(crate) type Flush = Arc<dyn Fn(u64) -> Result<u64> + Send + Sync>;

pub(crate) struct Syncer {
    policy: Durability,
    shared: Arc<Shared>,
    flush: Flush,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    /// Last seq written to the operating system (0: none).
    written: u64,
    /// Last seq known to be on disk (0: none).
    durable: u64,
    /// Batches written since the last flush was started.
    pending: usize,
    /// When the oldest pending batch must be flushed by.
    deadline: Option<Instant>,
    stop: bool,
    /// Set when a flush failed: nothing acknowledged after it can be trusted.
    poisoned: Option<String>,
    /// The store's acknowledged mark, advanced to `durable` after each flush.
    mark: Option<Mark>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Syncer {
    /// A syncer for a store whose records up to `durable` are already on disk, advancing
    /// the store's acknowledged `mark` after each flush.
    pub(crate) fn new(
        policy: Durability,
        durable: u64,
        flush: Flush,
        mark: Option<Mark>,
    ) -> Syncer {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                written: durable,
                durable,
                pending: 0,
                deadline: None,
                stop: false,
                poisoned: None,
                mark,
            }),
            wake: Condvar::new(),
        });
        let thread = match policy {
            Durability::EveryAppend => None,
            Durability::Grouped { max_delay, .. } => {
                let shared = Arc::clone(&shared);
                let flush = Arc::clone(&flush);
                Some(std::thread::spawn(move || {
                    background(&shared, &flush, Some(max_delay))
                }))
            }
        };
        Syncer {
            policy,
            shared,
            flush,
            thread,
        }
    }

    /// Refuses work once a flush has failed.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.shared.lock().poisoned {
            Some(reason) => Err(Error::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Refuses all further work, for a failure the backend found itself.
    pub(crate) fn poison(&self, reason: String) {
        self.shared.lock().poisoned.get_or_insert(reason);
    }

    /// Records that `seq` was written, and flushes as the policy says.
    ///
    /// # Errors
    ///
    /// The flush failed (the syncer is poisoned from then on).
    pub(crate) fn appended(&self, seq: u64) -> Result<()> {
        let mut state = self.shared.lock();
        state.written = seq;
        match self.policy {
            Durability::EveryAppend => {
                drop(state);
                self.flush_now(seq)
            }
            Durability::Grouped {
                max_batches,
                max_delay,
            } => {
                state.pending += 1;
                if state.pending >= max_batches {
                    state.pending = 0;
                    state.deadline = None;
                    drop(state);
                    return self.flush_now(seq);
                }
                if state.deadline.is_none() {
                    state.deadline = Some(Instant::now() + max_delay);
                    self.shared.wake.notify_all();
                }
                Ok(())
            }
        }
    }

    /// Flushes everything written so far.
    pub(crate) fn sync(&self) -> Result<Option<u64>> {
        self.check()?;
        let mut state = self.shared.lock();
        let target = state.written;
        state.pending = 0;
        state.deadline = None;
        drop(state);
        self.flush_now(target)?;
        Ok(self.durable())
    }

    /// Takes the acknowledged mark out, for a syncer that replaces this one.
    pub(crate) fn take_mark(&self) -> Option<Mark> {
        self.shared.lock().mark.take()
    }

    /// The last seq on disk.
    pub(crate) fn durable(&self) -> Option<u64> {
        Some(self.shared.lock().durable).filter(|&s| s > 0)
    }

    fn flush_now(&self, target: u64) -> Result<()> {
        let result = (self.flush)(target);
        finish(&self.shared, result, self.retry())
    }

    /// How long after a flush that failed with an error the backend resolves itself
    /// ([`Error::resendable`]) it is tried again: `max_delay` when grouped.
    fn retry(&self) -> Option<std::time::Duration> {
        match self.policy {
            Durability::EveryAppend => None,
            Durability::Grouped { max_delay, .. } => Some(max_delay),
        }
    }
}

/// Records a flush's outcome: the new durable seq, written to the acknowledged mark, or the
/// poison. A failure the backend resolves itself when it writes again (a PostgreSQL
/// connection that broke: [`Error::resendable`]) does not poison when there is a `retry`
/// delay: the background thread flushes again that long after.
fn finish(shared: &Shared, result: Result<u64>, retry: Option<std::time::Duration>) -> Result<()> {
    let mut state = shared.lock();
    let result = result.and_then(|seq| {
        state.durable = state.durable.max(seq);
        let durable = state.durable;
        state
            .mark
            .as_mut()
            .map_or(Ok(()), |mark| mark.advance(durable))
    });
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.resendable() && retry.is_some() => {
            if state.deadline.is_none() {
                state.deadline = retry.map(|delay| Instant::now() + delay);
                shared.wake.notify_all();
            }
            Err(e)
        }
        Err(e) => {
            state.poisoned.get_or_insert_with(|| e.to_string());
            Err(e)
        }
    }
}

/// The group-commit thread: flushes `max_delay` after the oldest pending batch, and once more
/// when the store is dropped.
fn background(shared: &Shared, flush: &Flush, retry: Option<std::time::Duration>) {
    let mut state = shared.lock();
    loop {
        if state.poisoned.is_some() {
            return;
        }
        match state.deadline {
            None if state.stop => return,
            None => {
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner)
            }
            Some(deadline) => {
                let now = Instant::now();
                if now < deadline && !state.stop {
                    state = shared
                        .wake
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    continue;
                }
                let target = state.written;
                state.pending = 0;
                state.deadline = None;
                drop(state);
                // A failure poisons the store; the foreground reports it on its next call.
                let _ = finish(shared, flush(target), retry);
                state = shared.lock();
                if state.stop {
                    // The last flush was tried: a failed one is not retried for ever.
                    return;
                }
            }
        }
    }
}

impl Drop for Syncer {
    /// Stops the group-commit thread after a last flush of anything pending.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
