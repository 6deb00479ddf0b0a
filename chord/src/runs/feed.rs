//! One response's events: the run's log as a [`Cursor`] yields it, each record framed as the
//! events it gives ([`View`], in its door's [`Framing`]), made once for every reader of the
//! run.
//!
//! The events of a record depend on the records before it (a text append names its message;
//! a string's append is a whole `replace` in a JSON Patch). The run's tail cache carries one
//! [`Mirror`] (a view positioned after some record), shared by the run's readers: the first
//! reader to reach a record the mirror is just before advances the mirror and fills the
//! record's frames; every other reader sends those bytes. A reader holds a view of its own
//! only while it cannot use the shared frames: behind the cache, resuming, or where the
//! mirror is elsewhere; it gives the view up (or hands it to the mirror) as soon as it can,
//! so a reader at the tail holds no copy of the state.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;

use super::id::EventId;
use super::view::{Framing, RunEnd, View};
use crate::live::cursor::{Cursor, Step};
use crate::live::frames::Slot;
use crate::live::sse::{Feed, Next, Pending};
use crate::live::tail::{Entry, Tail};

/// What a run's readers share, carried by its tail cache: the mirror (a view after some
/// record), and where the run ended, once a reader knows.
pub(crate) struct Shared<F> {
    mirror: Mutex<Option<Mirror<F>>>,
    /// The seq of the record with the run's terminal event, once a reader framed it (0: not
    /// yet); read at every record, without the mirror's lock.
    terminal: AtomicU64,
    /// The run is known to have ended (its terminal event framed, or its outcome read).
    ended: AtomicBool,
    /// The terminal event at `terminal` is an error (written before `terminal`).
    failed: AtomicBool,
}

impl<F> Default for Shared<F> {
    fn default() -> Shared<F> {
        Shared {
            mirror: Mutex::new(None),
            terminal: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            failed: AtomicBool::new(false),
        }
    }
}

impl<F> Shared<F> {
    fn mirror(&self) -> MutexGuard<'_, Option<Mirror<F>>> {
        self.mirror.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that record `seq` holds the run's terminal event, which ended it as `end`.
    fn terminal_at(&self, seq: u64, end: RunEnd) {
        if end == RunEnd::Failed {
            self.failed.store(true, Ordering::Relaxed);
        }
        self.terminal.store(seq, Ordering::Release);
    }

    /// How the run stood after record `seq`, as far as its readers framed it.
    fn end_by(&self, seq: u64) -> RunEnd {
        let terminal = self.terminal.load(Ordering::Acquire);
        if terminal == 0 || terminal > seq {
            RunEnd::Running
        } else if self.failed.load(Ordering::Relaxed) {
            RunEnd::Failed
        } else {
            RunEnd::Finished
        }
    }
}

/// Whether the run of `tail` is known to have ended: a run never starts again, so a reader
/// need not read its log to find out.
pub(crate) fn known_ended<F: Framing>(tail: &Tail) -> bool {
    let shared = carry::<F>(tail);
    shared.ended.load(Ordering::Acquire) || shared.terminal.load(Ordering::Acquire) != 0
}

/// Records that the run of `tail` ended.
pub(crate) fn mark_ended<F: Framing>(tail: &Tail) {
    carry::<F>(tail).ended.store(true, Ordering::Release);
}

/// A view after record `at`.
pub(crate) struct Mirror<F> {
    view: View<F>,
    at: u64,
}

/// The run as it stands after the cached record `entry`, for a reader that starts there with
/// nothing ([`View::start_events`], their ids' `k` from [`EventId::start_k`]): frames every
/// such reader shares, made once, from the mirror when it is just after `entry`, from `built`
/// (a view after `entry` the caller read from the log, then kept as the mirror when the
/// mirror is behind it), or from `entry` alone when it is a base. With them, where the run
/// stands; `None` when none of these can make them (the caller reads the log and calls again
/// with `built`); an error for a log that gives no events.
pub(crate) fn start_after<F: Framing>(
    tail: &Tail,
    entry: &Arc<Entry>,
    built: Option<View<F>>,
) -> Result<Option<(Bytes, RunEnd)>, String> {
    let shared = carry::<F>(tail);
    if let Some(frames) = entry.frame(Slot::start(F::DOOR)) {
        return Ok(Some((frames, shared.end_by(entry.seq))));
    }
    let mut held = shared.mirror();
    if let Some(frames) = entry.frame(Slot::start(F::DOOR)) {
        return Ok(Some((frames, shared.end_by(entry.seq))));
    }
    let (events, end, adopt) = match (held.as_mut(), built) {
        (Some(mirror), _) if mirror.at == entry.seq => {
            let events = mirror.view.start_events().map_err(|e| e.to_string())?;
            (events, mirror.view.end(), None)
        }
        (_, Some(view)) => {
            let events = view.start_events().map_err(|e| e.to_string())?;
            (events, view.end(), Some(view))
        }
        (_, None) if entry.base => {
            let mut view = View::new();
            let events = view.record(&entry.batch).map_err(|e| e.to_string())?;
            (events, view.end(), Some(view))
        }
        (_, None) => return Ok(None),
    };
    if let Some(view) = adopt {
        if held.as_ref().is_none_or(|m| m.at < entry.seq) {
            *held = Some(Mirror {
                view,
                at: entry.seq,
            });
        }
    }
    if end != RunEnd::Running {
        shared.terminal_at(entry.seq, end);
    }
    let out = F::frames(entry.seq, EventId::start_k(entry.prev), &events);
    Ok(Some((
        tail.set_frame(entry, Slot::start(F::DOOR), out),
        end,
    )))
}

/// What `tail`'s run's readers share.
fn carry<F: Framing>(tail: &Tail) -> Arc<Shared<F>> {
    tail.carry::<Shared<F>>(Slot::passing(F::DOOR))
}

/// Builds a view after a record of the run, from the log (reads the store: it runs off the
/// runtime's workers).
pub(crate) type Rebuild<F> = Arc<dyn Fn(u64) -> Result<View<F>, String> + Send + Sync>;

/// The reader's own view, when it has one.
pub(crate) enum Own<F> {
    /// None: the reader reads the shared frames.
    Shared,
    /// A view after the reader's position.
    View(View<F>),
    /// The reader starts at a base with no value: the base's start frames.
    Fresh,
}

/// The events of one response.
pub(crate) struct RunFeed<F> {
    cursor: Cursor,
    carry: Arc<Shared<F>>,
    own: Own<F>,
    rebuild: Rebuild<F>,
    /// A view being built after the reader's position.
    building: Option<Pending<Result<View<F>, String>>>,
    /// Frames to send, in order: each record's as made (a shared record's frames are the
    /// bytes every reader is sent, not a copy).
    queue: VecDeque<Bytes>,
    /// Ended: the terminal event went, or the log cannot be read on.
    done: bool,
    /// Whether any event was sent.
    sent: bool,
    /// The response started with no `Last-Event-ID`: a client that has nothing yet, which
    /// may be started over at a later base.
    fresh_start: bool,
    /// Counts the response among the endpoint's readers while it lives.
    _slot: crate::live::bound::Permit,
}

/// Why a record gave no frames.
enum Stuck {
    /// The reader needs a view after its position.
    NoView,
    /// The record gives no events: the log is not a run's, or is damaged.
    Broken(String),
}

impl<F: Framing> RunFeed<F> {
    /// A response after record `cursor.after()`: `own` is what the reader reads the next
    /// records with; `first` goes before anything else, and `ended`: it holds the run's
    /// terminal event (nothing follows).
    pub(crate) fn new(
        cursor: Cursor,
        own: Own<F>,
        ended: bool,
        first: Option<Bytes>,
        rebuild: Rebuild<F>,
        slot: crate::live::bound::Permit,
    ) -> RunFeed<F> {
        RunFeed {
            carry: carry(cursor.tail()),
            cursor,
            done: ended,
            fresh_start: matches!(own, Own::Fresh),
            own,
            rebuild,
            building: None,
            queue: first.into_iter().collect(),
            sent: false,
            _slot: slot,
        }
    }

    /// The frames of record `seq` (the reader's next), from its view, their ids' `k` from
    /// `k0`: with the frames, where the run stands after it.
    fn framed(
        view: &mut View<F>,
        seq: u64,
        batch: &str,
        k0: usize,
    ) -> Result<(Vec<u8>, RunEnd), Stuck> {
        let events = view
            .record(batch)
            .map_err(|e| Stuck::Broken(e.to_string()))?;
        Ok((F::frames(seq, k0, &events), view.end()))
    }

    /// The frames of a cached record, shared when any reader made them already.
    fn entry(&mut self, entry: &Arc<Entry>) -> Result<Bytes, Stuck> {
        let tail = Arc::clone(self.cursor.tail());
        if matches!(self.own, Own::Fresh) && entry.base {
            if let Some(frames) = entry.frame(Slot::start(F::DOOR)) {
                self.own = Own::Shared;
                return Ok(frames);
            }
            let mut view = View::new();
            let k0 = EventId::start_k(entry.prev);
            let (frames, end) = Self::framed(&mut view, entry.seq, &entry.batch, k0)?;
            let shared = Arc::clone(&self.carry);
            if end != RunEnd::Running {
                shared.terminal_at(entry.seq, end);
            }
            self.settle(&mut shared.mirror(), view, entry.seq);
            return Ok(tail.set_frame(entry, Slot::start(F::DOOR), frames));
        }
        if let Some(frames) = entry.frame(Slot::passing(F::DOOR)) {
            self.own = Own::Shared; // a view of its own would be stale now
            return Ok(frames);
        }
        let shared = Arc::clone(&self.carry);
        let mut held = shared.mirror();
        if let Some(frames) = entry.frame(Slot::passing(F::DOOR)) {
            self.own = Own::Shared;
            return Ok(frames);
        }
        let own = std::mem::replace(&mut self.own, Own::Shared);
        let (frames, end) = match (held.as_mut(), own) {
            (Some(mirror), _) if mirror.at == entry.prev => {
                match Self::framed(&mut mirror.view, entry.seq, &entry.batch, 0) {
                    Ok(framed) => {
                        mirror.at = entry.seq;
                        framed
                    }
                    Err(e) => {
                        // A record that gives no events may have left the view half-changed.
                        *held = None;
                        return Err(e);
                    }
                }
            }
            (_, Own::View(mut view)) => {
                let framed = Self::framed(&mut view, entry.seq, &entry.batch, 0)?;
                self.settle(&mut held, view, entry.seq);
                framed
            }
            (_, own) => {
                self.own = own;
                return Err(Stuck::NoView);
            }
        };
        if end != RunEnd::Running {
            shared.terminal_at(entry.seq, end);
        }
        Ok(tail.set_frame(entry, Slot::passing(F::DOOR), frames))
    }

    /// Gives the reader's view, after record `at`, to the mirror when the mirror is behind it
    /// (or there is none yet): the reader reads the shared frames from here, and holds no
    /// copy of the state. A mirror ahead of it is left where it is.
    fn settle(&mut self, mirror: &mut Option<Mirror<F>>, view: View<F>, at: u64) {
        if mirror.as_ref().is_none_or(|m| m.at < at) {
            *mirror = Some(Mirror { view, at });
            self.own = Own::Shared;
        } else {
            self.own = Own::View(view);
        }
    }

    /// Whether the run's terminal event is at or before record `seq`.
    fn ended_by(&self, seq: u64) -> bool {
        let terminal = self.carry.terminal.load(Ordering::Acquire);
        terminal != 0 && terminal <= seq
    }

    /// Queues the frames of `records` (from the cache or the store, the first after record
    /// `after`), up to the run's terminal event. When the reader must first get a view, the
    /// cursor goes back to the last record framed, to read the rest again once it has one.
    fn frames(&mut self, records: Records<'_>, after: u64) -> Result<(), Stuck> {
        let mut at = after;
        let framed = self.frame_each(records, &mut at);
        if matches!(framed, Err(Stuck::NoView)) {
            self.cursor.seek(at);
        }
        framed
    }

    /// [`frames`](RunFeed::frames), `at` following the last record framed.
    fn frame_each(&mut self, records: Records<'_>, at: &mut u64) -> Result<(), Stuck> {
        match records {
            Records::Entries(entries) => {
                for entry in entries {
                    let frames = self.entry(entry)?;
                    // A checkpoint equal to what the reader has gives nothing.
                    if !frames.is_empty() {
                        self.queue.push_back(frames);
                    }
                    *at = entry.seq;
                    if self.ended_by(entry.seq) {
                        self.done = true;
                        break;
                    }
                }
            }
            Records::Store(records) => {
                for record in records {
                    // A reader with no value starts at a base: its start's events.
                    let k0 = match self.own {
                        Own::Fresh => {
                            self.own = Own::View(View::new());
                            EventId::start_k(*at)
                        }
                        _ => 0,
                    };
                    let Own::View(view) = &mut self.own else {
                        return Err(Stuck::NoView);
                    };
                    let (frames, end) = Self::framed(view, record.seq, &record.batch, k0)?;
                    if !frames.is_empty() {
                        self.queue.push_back(Bytes::from(frames));
                    }
                    *at = record.seq;
                    if end != RunEnd::Running {
                        self.done = true;
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The framing's terminal event for a log the feed cannot read on (no id: it is no
    /// place in the log), after what is queued; nothing follows it.
    fn broken(&mut self, why: &str) {
        tracing::warn!(target: "chord::ag_ui", run = %self.cursor.address(), after = self.cursor.after(), error = why, "a run's log gives no events");
        self.done = true;
        let mut out = Vec::new();
        F::write(&mut out, None, &F::unreadable(why));
        self.queue.push_back(Bytes::from(out));
    }
}

/// Records a cursor yielded.
enum Records<'a> {
    Entries(&'a [Arc<Entry>]),
    Store(&'a [crate::store::Record]),
}

impl<F: Framing> Feed for RunFeed<F> {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        loop {
            if let Some(frames) = self.queue.pop_front() {
                self.sent = true;
                return Poll::Ready(Next::Data(frames));
            }
            if self.done {
                return Poll::Ready(Next::End);
            }
            if let Some(building) = self.building.as_mut() {
                let Poll::Ready(built) = building.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                self.building = None;
                match built {
                    Ok(view) => self.own = Own::View(view),
                    Err(why) => {
                        self.broken(&why);
                        continue;
                    }
                }
            }
            let after = self.cursor.after();
            let step = match self.cursor.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(step) => step,
            };
            let framed = match &step {
                Step::Entries(entries) => self.frames(Records::Entries(entries), after),
                Step::Records(records) => self.frames(Records::Store(records), after),
                Step::Idle => continue,
                // Compacted away before anything was sent to a client that has nothing (an
                // agent that ran ahead of its client, past what retention keeps): the response
                // starts where a reader with no id starts, at the oldest base kept, rather
                // than send nothing. A resumed client has the run so far: it is not sent the
                // start again (its next request is answered `410`).
                Step::Gone if self.fresh_start && !self.sent => {
                    let floor = self.cursor.tail().position().floor;
                    self.cursor.seek(floor);
                    self.own = Own::Fresh;
                    continue;
                }
                // Compacted away meanwhile: the client's next request says so.
                Step::Gone | Step::End => return Poll::Ready(Next::End),
                Step::Failed(why) => {
                    let why = why.clone();
                    self.broken(&why);
                    continue;
                }
            };
            match framed {
                Ok(()) => {}
                Err(Stuck::NoView) => {
                    let rebuild = Arc::clone(&self.rebuild);
                    let at = self.cursor.after();
                    let built = tokio::task::spawn_blocking(move || rebuild(at));
                    self.building = Some(Box::pin(async move {
                        built
                            .await
                            .unwrap_or_else(|_| Err("the read was cancelled".to_owned()))
                    }));
                }
                // What was framed goes first, then the error.
                Err(Stuck::Broken(why)) => self.broken(&why),
            }
        }
    }
}
