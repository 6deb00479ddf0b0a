//! A run's records as a door's events: [`View`] keeps a mirror of the [`Envelope`] as the
//! records so far made it, and says what each next record changed through its [`Framing`],
//! the door's protocol (AG-UI's events, the AI SDK's chunks).
//!
//! The view is a pure function of the records: the same records give the same events, byte
//! for byte, whoever reads them and from wherever the view started (the run's first record,
//! or a base record later on: a checkpoint restates the value, and the mirror and decoder
//! are the same after it either way). That is what lets an event id name a place in the log
//! (`<offset>:<k>`, the `k`-th event of the record at `offset`) and a resumed client get
//! exactly the events after it.
//!
//! [`Envelope`]: super::Envelope

use serde_json::{Map, Value};

use super::id::EventId;
use crate::live::frames::Door;
use crate::path::Seg;
use crate::{Decoder, Op};

/// A door's protocol: what each change of a run is, as the door's events, and how an event
/// is written as an SSE frame. It holds the run's state as its events left it (a client's
/// copy), which [`View`] compares a checkpoint with.
pub(crate) trait Framing: Send + Unpin + 'static {
    /// One event of the protocol.
    type Event;

    /// The door: its slots in the tail cache's records, which no other framing reads.
    const DOOR: Door;

    /// Whether a client with nothing (no `Last-Event-ID`) is sent the run as it stands, its
    /// text so far in one event, then what follows ([`View::start_events`]); else the run
    /// from the oldest base kept, record by record, as a run's own response is.
    const COMPACT_START: bool;

    /// A framing before the run's start.
    fn new() -> Self;

    /// The run's start, as a reader with nothing is sent it: the ids, and the state.
    fn started(&mut self, thread_id: &str, run_id: &str, state: Value, out: &mut Vec<Self::Event>);

    /// The state as the events so far made it; `None` before the start.
    fn state(&self) -> Option<&Value>;

    /// Ops of the state (one record's, or what a checkpoint differs by), applied to the
    /// state it holds. An error says why they do not apply.
    fn state_ops(&mut self, ops: &[Op], out: &mut Vec<Self::Event>) -> Result<(), String>;

    /// A text message starts.
    fn text_start(&mut self, id: &str, role: &str, out: &mut Vec<Self::Event>);

    /// Text (never empty) appended to a message.
    fn text(&mut self, id: &str, delta: &str, out: &mut Vec<Self::Event>);

    /// A text message ends.
    fn text_end(&mut self, id: &str, out: &mut Vec<Self::Event>);

    /// The run ended: well when `failed` is `None`, else with its message and code (none in
    /// a log written before codes were stored).
    fn ended(
        &mut self,
        thread_id: &str,
        run_id: &str,
        failed: Option<(&str, Option<&str>)>,
        out: &mut Vec<Self::Event>,
    );

    /// The terminal event of a response whose run's log cannot be read on (`why`), sent,
    /// not stored.
    fn unreadable(why: &str) -> Self::Event;

    /// `event` as one SSE frame, its id `id` (none for an event that is no place in the
    /// log).
    fn write(out: &mut Vec<u8>, id: Option<EventId>, event: &Self::Event);

    /// `events`, those of record `seq` from the `k0`-th on, as SSE frames with their ids
    /// `<seq>:<k0 + k>`.
    fn frames(seq: u64, k0: usize, events: &[Self::Event]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, event) in events.iter().enumerate() {
            Self::write(&mut out, Some(EventId { seq, k: k0 + k }), event);
        }
        out
    }
}

/// Why a record does not give events: the log is not a run's, or is damaged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ViewError {
    /// The record does not decode, or its ops do not apply to the mirror.
    #[error("record does not decode or apply: {0}")]
    Ops(#[from] crate::Error),
    /// The state's ops do not apply to the state.
    #[error("the state's changes do not apply: {0}")]
    State(String),
    /// The first record is not a run's envelope.
    #[error("not a run's log: {0}")]
    NotARun(&'static str),
}

/// Where a run stands, as its events said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// No terminal event yet.
    Running,
    /// Ended well.
    Finished,
    /// Ended with an error (the agent's, or its producer gone).
    Failed,
}

/// The mirror of a run's envelope and what each record adds to it, as `F`'s events.
pub(crate) struct View<F> {
    /// The envelope without its state (which `framing` holds); `None` before the first
    /// record.
    rest: Option<Value>,
    framing: F,
    decoder: Decoder,
    /// The outcome was seen: later records give nothing.
    ended: bool,
}

impl<F: Framing> View<F> {
    pub(crate) fn new() -> View<F> {
        View {
            rest: None,
            framing: F::new(),
            decoder: Decoder::new(),
            ended: false,
        }
    }

    /// Whether the run's terminal event was given.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Where the run stands: running until its terminal event was given.
    pub(crate) fn end(&self) -> RunEnd {
        if !self.ended {
            RunEnd::Running
        } else if self.outcome().and_then(|o| o.get("status").cloned())
            == Some(Value::from("finished"))
        {
            RunEnd::Finished
        } else {
            RunEnd::Failed
        }
    }

    /// The run as it stands, as a reader with nothing is sent it: the start, the state whole,
    /// each message whole, and the terminal event of a run that ended. The same events a
    /// base record holding this envelope gives a view that starts at it: a pure function of
    /// the envelope, so an id among them names the same event whoever made them.
    pub(crate) fn start_events(&self) -> Result<Vec<F::Event>, ViewError> {
        let mut envelope = self.rest.clone().ok_or(ViewError::NotARun("no base"))?;
        let state = self.framing.state().cloned().unwrap_or(Value::Null);
        if let Some(map) = envelope.as_object_mut() {
            map.insert("state".to_owned(), state);
        }
        let mut fresh = View::<F>::new();
        let mut events = Vec::new();
        fresh.base(envelope, &mut events)?;
        fresh.terminal(None, &mut events);
        Ok(events)
    }

    /// The events of the next record (its stored batch text).
    pub(crate) fn record(&mut self, batch: &str) -> Result<Vec<F::Event>, ViewError> {
        let ops = self.decoder.decode_str(batch)?;
        if self.ended {
            return Ok(Vec::new());
        }
        let before = self.outcome();
        let mut events = Vec::new();
        let mut state_ops = Vec::new();
        let mut text = Vec::new();
        for op in ops {
            match op {
                Op::Replace(value) => {
                    // Changes before it (none from a tracker) go first.
                    self.state_delta(&mut state_ops, &mut events)?;
                    events.append(&mut text);
                    self.base(value, &mut events)?;
                }
                op => match first_key(&op) {
                    Some("state") => state_ops.push(strip_first(op)?),
                    Some("messages") => self.message_op(op, &mut text)?,
                    _ => {
                        let rest = self.rest.as_mut().ok_or(ViewError::NotARun("no base"))?;
                        let mut target = Some(std::mem::take(rest));
                        let applied = crate::apply(&mut target, [op]);
                        *rest = target.unwrap_or(Value::Null);
                        applied?;
                    }
                },
            }
        }
        self.state_delta(&mut state_ops, &mut events)?;
        events.append(&mut text);
        self.terminal(before, &mut events);
        Ok(events)
    }

    /// The state's ops gathered so far, as events (none if they change nothing).
    fn state_delta(
        &mut self,
        ops: &mut Vec<Op>,
        events: &mut Vec<F::Event>,
    ) -> Result<(), ViewError> {
        if ops.is_empty() {
            return Ok(());
        }
        if self.framing.state().is_none() {
            return Err(ViewError::NotARun("no base"));
        }
        self.framing
            .state_ops(ops, events)
            .map_err(ViewError::State)?;
        ops.clear();
        Ok(())
    }

    /// A whole envelope: the run's start when the view has none, else what differs from the
    /// mirror (a checkpoint equal to it gives nothing).
    fn base(&mut self, mut value: Value, events: &mut Vec<F::Event>) -> Result<(), ViewError> {
        let map = value
            .as_object_mut()
            .ok_or(ViewError::NotARun("the envelope is not an object"))?;
        let state = map.shift_remove("state").unwrap_or(Value::Null);
        let messages_of = |rest: &Value| -> Vec<Value> {
            rest.get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        match (self.rest.take(), self.framing.state()) {
            (Some(old), Some(held)) => {
                let ops = crate::diff(held, &state);
                if !ops.is_empty() {
                    self.framing
                        .state_ops(&ops, events)
                        .map_err(ViewError::State)?;
                }
                messages_changed(
                    &mut self.framing,
                    &messages_of(&old),
                    &messages_of(&value),
                    events,
                );
            }
            _ => {
                let (thread_id, run_id) = (text_of(&value, "threadId"), text_of(&value, "runId"));
                self.framing.started(&thread_id, &run_id, state, events);
                messages_changed(&mut self.framing, &[], &messages_of(&value), events);
            }
        }
        self.rest = Some(value);
        Ok(())
    }

    /// An op under `messages`: applied to the mirror, and the text events it says.
    fn message_op(&mut self, op: Op, events: &mut Vec<F::Event>) -> Result<(), ViewError> {
        let View { rest, framing, .. } = self;
        let rest = rest.as_mut().ok_or(ViewError::NotARun("no base"))?;
        let old = rest.get("messages").and_then(Value::as_array);
        let old_len = old.map_or(0, Vec::len);
        // What the run handle does, read from the op; anything else by comparing.
        let known = match (&op, op.path().map(|p| p.segments())) {
            (
                Op::Splice {
                    index,
                    remove: 0,
                    items,
                    ..
                },
                Some([_]),
            ) if *index == old_len => {
                for item in items {
                    new_message(framing, item, events);
                }
                true
            }
            (Op::Append(_, delta), Some([_, Seg::Index(i), Seg::Key(k)])) if k == "content" => {
                if let (Some(id), false) = (message_id(old, *i), delta.is_empty()) {
                    framing.text(&id, delta, events);
                }
                true
            }
            (Op::Set(_, Value::Bool(true)), Some([_, Seg::Index(i), Seg::Key(k)]))
                if k == "ended" =>
            {
                let was = old
                    .and_then(|m| m.get(*i))
                    .and_then(|m| m.get("ended"))
                    .and_then(Value::as_bool);
                if let (Some(id), Some(false)) = (message_id(old, *i), was) {
                    framing.text_end(&id, events);
                }
                true
            }
            _ => false,
        };
        let before = (!known).then(|| old.cloned().unwrap_or_default());
        let mut target = Some(std::mem::take(rest));
        let applied = crate::apply(&mut target, [op]);
        *rest = target.unwrap_or(Value::Null);
        applied?;
        if let Some(before) = before {
            let after = rest
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            messages_changed(framing, &before, &after, events);
        }
        Ok(())
    }

    fn outcome(&self) -> Option<Value> {
        self.rest.as_ref().and_then(|r| r.get("outcome")).cloned()
    }

    /// The terminal event, when this record ended the run.
    fn terminal(&mut self, before: Option<Value>, events: &mut Vec<F::Event>) {
        let Some(now) = self.outcome() else {
            return;
        };
        if Some(&now) == before.as_ref() && before.is_some() {
            return;
        }
        let Some(rest) = self.rest.as_ref() else {
            return;
        };
        let (thread_id, run_id) = (text_of(rest, "threadId"), text_of(rest, "runId"));
        match now.get("status").and_then(Value::as_str) {
            Some("finished") => self.framing.ended(&thread_id, &run_id, None, events),
            Some("error") => {
                let (message, code) = (text_of(&now, "message"), text_of(&now, "code"));
                // A log written before codes were stored has none.
                let code = Some(code.as_str()).filter(|c| !c.is_empty());
                let failed = Some((message.as_str(), code));
                self.framing.ended(&thread_id, &run_id, failed, events);
            }
            _ => return,
        }
        self.ended = true;
    }
}

/// A string member of an object, or empty.
fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn message_id(messages: Option<&Vec<Value>>, i: usize) -> Option<String> {
    messages?.get(i)?.get("id")?.as_str().map(str::to_owned)
}

/// The events of a message new to the client.
fn new_message<F: Framing>(framing: &mut F, message: &Value, events: &mut Vec<F::Event>) {
    let id = text_of(message, "id");
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("assistant");
    framing.text_start(&id, role, events);
    let content = text_of(message, "content");
    if !content.is_empty() {
        framing.text(&id, &content, events);
    }
    if message.get("ended").and_then(Value::as_bool) == Some(true) {
        framing.text_end(&id, events);
    }
}

/// The text events that take a client from messages `old` to `new`: new messages whole,
/// text added at the end of one it has, a message ended. What the protocols cannot say
/// (text rewritten, a message removed) is left out: the run handle never does it.
fn messages_changed<F: Framing>(
    framing: &mut F,
    old: &[Value],
    new: &[Value],
    events: &mut Vec<F::Event>,
) {
    let by_id: Map<String, Value> = old
        .iter()
        .filter_map(|m| Some((m.get("id")?.as_str()?.to_owned(), m.clone())))
        .collect();
    for message in new {
        let id = text_of(message, "id");
        let Some(was) = by_id.get(&id) else {
            new_message(framing, message, events);
            continue;
        };
        let (before, after) = (text_of(was, "content"), text_of(message, "content"));
        if after.len() > before.len() && after.starts_with(&before) {
            framing.text(&id, &after[before.len()..], events);
        }
        let ended = |m: &Value| m.get("ended").and_then(Value::as_bool) == Some(true);
        if ended(message) && !ended(was) {
            framing.text_end(&id, events);
        }
    }
}

/// The first segment of an op's path, when it is a key.
fn first_key(op: &Op) -> Option<&str> {
    match op.path()?.segments().first()? {
        Seg::Key(k) => Some(k),
        Seg::Index(_) => None,
    }
}

/// The op on the envelope's `state` as an op on the state ([`Op::rerooted`]): a `s` of the
/// whole state is an `r`; a `d`, `a` or `t` of it is an error.
fn strip_first(op: Op) -> Result<Op, ViewError> {
    const STATE: [Seg; 1] = [Seg::Key(std::borrow::Cow::Borrowed("state"))];
    op.rerooted(&STATE, &[])
        .ok_or(ViewError::NotARun("an op removes the state"))
}
