//! The AG-UI events of a run's records: [`View`] keeps a mirror of the [`Envelope`] as the
//! records so far made it, and says what each next record changed, as events.
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

use super::events::Event;
use super::patch::{PatchError, Patcher};
use crate::path::Seg;
use crate::{Decoder, Op};

/// Why a record does not give events: the log is not a run's, or is damaged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ViewError {
    /// The record does not decode, or its ops do not apply to the mirror.
    #[error("record does not decode or apply: {0}")]
    Ops(#[from] crate::Error),
    /// The state's ops do not apply to the state.
    #[error("the state's changes do not apply: {0}")]
    State(#[from] PatchError),
    /// The first record is not a run's envelope.
    #[error("not a run's log: {0}")]
    NotARun(&'static str),
}

/// The mirror of a run's envelope and what each record adds to it, as events.
pub(crate) struct View {
    /// The envelope without its state (which `patcher` holds); `None` before the first
    /// record.
    rest: Option<Value>,
    patcher: Option<Patcher>,
    decoder: Decoder,
    /// The outcome was seen: later records give nothing.
    ended: bool,
}

impl View {
    pub(crate) fn new() -> View {
        View {
            rest: None,
            patcher: None,
            decoder: Decoder::new(),
            ended: false,
        }
    }

    /// Whether the run's terminal event was given.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// The events of the next record (its stored batch text).
    pub(crate) fn record(&mut self, batch: &str) -> Result<Vec<Event>, ViewError> {
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
        if let Some(end) = self.terminal(before) {
            events.push(end);
        }
        Ok(events)
    }

    /// One `STATE_DELTA` for the state's ops gathered so far (none if they change nothing).
    fn state_delta(&mut self, ops: &mut Vec<Op>, events: &mut Vec<Event>) -> Result<(), ViewError> {
        if ops.is_empty() {
            return Ok(());
        }
        let patcher = self.patcher.as_mut().ok_or(ViewError::NotARun("no base"))?;
        let delta = patcher.patch(ops)?;
        ops.clear();
        if !delta.is_empty() {
            events.push(Event::StateDelta { delta });
        }
        Ok(())
    }

    /// A whole envelope: the run's start when the view has none, else what differs from the
    /// mirror (a checkpoint equal to it gives nothing).
    fn base(&mut self, mut value: Value, events: &mut Vec<Event>) -> Result<(), ViewError> {
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
        match (self.rest.take(), self.patcher.as_mut()) {
            (Some(old), Some(patcher)) => {
                let ops = crate::diff(patcher.value(), &state);
                if !ops.is_empty() {
                    let delta = patcher.patch(&ops)?;
                    if !delta.is_empty() {
                        events.push(Event::StateDelta { delta });
                    }
                }
                messages_changed(&messages_of(&old), &messages_of(&value), events);
            }
            _ => {
                events.push(Event::RunStarted {
                    thread_id: text_of(&value, "threadId"),
                    run_id: text_of(&value, "runId"),
                });
                events.push(Event::StateSnapshot {
                    snapshot: state.clone(),
                });
                messages_changed(&[], &messages_of(&value), events);
                self.patcher = Some(Patcher::new(state));
            }
        }
        self.rest = Some(value);
        Ok(())
    }

    /// An op under `messages`: applied to the mirror, and the text events it says.
    fn message_op(&mut self, op: Op, events: &mut Vec<Event>) -> Result<(), ViewError> {
        let rest = self.rest.as_mut().ok_or(ViewError::NotARun("no base"))?;
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
                    new_message(item, events);
                }
                true
            }
            (Op::Append(_, delta), Some([_, Seg::Index(i), Seg::Key(k)])) if k == "content" => {
                if let (Some(id), false) = (message_id(old, *i), delta.is_empty()) {
                    events.push(Event::TextMessageContent {
                        message_id: id,
                        delta: delta.clone(),
                    });
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
                    events.push(Event::TextMessageEnd { message_id: id });
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
            messages_changed(&before, &after, events);
        }
        Ok(())
    }

    fn outcome(&self) -> Option<Value> {
        self.rest.as_ref().and_then(|r| r.get("outcome")).cloned()
    }

    /// The terminal event, when this record ended the run.
    fn terminal(&mut self, before: Option<Value>) -> Option<Event> {
        let now = self.outcome()?;
        if Some(&now) == before.as_ref() && before.is_some() {
            return None;
        }
        let rest = self.rest.as_ref()?;
        let event = match now.get("status").and_then(Value::as_str) {
            Some("finished") => Event::RunFinished {
                thread_id: text_of(rest, "threadId"),
                run_id: text_of(rest, "runId"),
            },
            Some("error") => Event::RunError {
                message: text_of(&now, "message"),
                // A log written before codes were stored has none.
                code: Some(text_of(&now, "code")).filter(|c| !c.is_empty()),
            },
            _ => return None,
        };
        self.ended = true;
        Some(event)
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
fn new_message(message: &Value, events: &mut Vec<Event>) {
    let id = text_of(message, "id");
    let role = match message.get("role").and_then(Value::as_str) {
        Some(role) => role.to_owned(),
        None => "assistant".to_owned(),
    };
    events.push(Event::TextMessageStart {
        message_id: id.clone(),
        role,
    });
    let content = text_of(message, "content");
    if !content.is_empty() {
        events.push(Event::TextMessageContent {
            message_id: id.clone(),
            delta: content,
        });
    }
    if message.get("ended").and_then(Value::as_bool) == Some(true) {
        events.push(Event::TextMessageEnd { message_id: id });
    }
}

/// The text events that take a client from messages `old` to `new`: new messages whole,
/// text added at the end of one it has, a message ended. What AG-UI cannot say (text
/// rewritten, a message removed) is left out: the run handle never does it.
fn messages_changed(old: &[Value], new: &[Value], events: &mut Vec<Event>) {
    let by_id: Map<String, Value> = old
        .iter()
        .filter_map(|m| Some((m.get("id")?.as_str()?.to_owned(), m.clone())))
        .collect();
    for message in new {
        let id = text_of(message, "id");
        let Some(was) = by_id.get(&id) else {
            new_message(message, events);
            continue;
        };
        let (before, after) = (text_of(was, "content"), text_of(message, "content"));
        if after.len() > before.len() && after.starts_with(&before) {
            events.push(Event::TextMessageContent {
                message_id: id.clone(),
                delta: after[before.len()..].to_owned(),
            });
        }
        let ended = |m: &Value| m.get("ended").and_then(Value::as_bool) == Some(true);
        if ended(message) && !ended(was) {
            events.push(Event::TextMessageEnd { message_id: id });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoder;
    use serde_json::json;

    fn view_of(batches: &[Vec<Op>]) -> (View, Vec<Vec<Event>>) {
        let mut encoder = Encoder::new();
        let mut view = View::new();
        let events = batches
            .iter()
            .map(|b| view.record(&encoder.encode(b).to_json()).unwrap())
            .collect();
        (view, events)
    }

    #[test]
    fn a_base_then_changes_give_the_runs_events() {
        let base = json!({"threadId": "t", "runId": "r", "state": {"n": 1},
            "messages": [], "outcome": {"status": "running"}});
        let (_, events) = view_of(&[
            vec![Op::Replace(base.clone())],
            vec![
                Op::Set(crate::path!["state", "n"], json!(2)),
                Op::Splice {
                    path: crate::path!["messages"].into(),
                    index: 0,
                    remove: 0,
                    items: vec![
                        json!({"id": "m", "role": "assistant", "content": "He", "ended": false}),
                    ],
                },
            ],
            vec![Op::Append(
                crate::path!["messages", 0, "content"],
                "llo".into(),
            )],
            vec![
                Op::Set(crate::path!["messages", 0, "ended"], json!(true)),
                Op::Set(crate::path!["outcome"], json!({"status": "finished"})),
            ],
            // A checkpoint equal to the mirror: nothing.
            vec![Op::Set(crate::path!["state", "n"], json!(2))],
        ]);
        let types: Vec<Vec<String>> = events
            .iter()
            .map(|r| {
                r.iter()
                    .map(|e| {
                        serde_json::to_value(e).unwrap()["type"]
                            .as_str()
                            .unwrap()
                            .to_owned()
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            types,
            [
                vec!["RUN_STARTED", "STATE_SNAPSHOT"],
                vec!["STATE_DELTA", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"],
                vec!["TEXT_MESSAGE_CONTENT"],
                vec!["TEXT_MESSAGE_END", "RUN_FINISHED"],
                vec![],
            ]
        );
    }

    #[test]
    fn a_checkpoint_gives_only_what_differs() {
        let base = |n: u64, text: &str| {
            json!({"threadId": "t", "runId": "r", "state": {"n": n},
            "messages": [{"id": "m", "role": "assistant", "content": text, "ended": false}],
            "outcome": {"status": "running"}})
        };
        let (_, events) = view_of(&[
            vec![Op::Replace(base(1, "a"))],
            vec![Op::Replace(base(1, "a"))],
            vec![Op::Replace(base(2, "ab"))],
        ]);
        assert!(events[1].is_empty(), "{:?}", events[1]);
        assert_eq!(
            serde_json::to_value(&events[2]).unwrap(),
            json!([
                {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "b"},
            ])
        );
    }
}
