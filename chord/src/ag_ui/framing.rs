//! AG-UI's framing of a run: `RUN_STARTED`, the state as a `STATE_SNAPSHOT` then
//! `STATE_DELTA`s (RFC 6902 patches from each record's ops, by a [`Patcher`]), the text as
//! `TEXT_MESSAGE_*` events, `RUN_FINISHED` or `RUN_ERROR`; each an SSE `data:` line of JSON.

use serde_json::Value;

use super::events::Event;
use super::patch::Patcher;
use crate::live::frames::Door;
use crate::runs::codes;
use crate::runs::id::{frame, EventId};
use crate::runs::view::Framing;
use crate::Op;

/// The AG-UI events of a run; the state as the client holds it, in its [`Patcher`].
pub(crate) struct AgUiFraming {
    patcher: Option<Patcher>,
}

impl Framing for AgUiFraming {
    type Event = Event;
    const DOOR: Door = Door::AgUi;
    const COMPACT_START: bool = false;

    fn new() -> AgUiFraming {
        AgUiFraming { patcher: None }
    }

    fn started(&mut self, thread_id: &str, run_id: &str, state: Value, out: &mut Vec<Event>) {
        out.push(Event::RunStarted {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
        });
        out.push(Event::StateSnapshot {
            snapshot: state.clone(),
        });
        self.patcher = Some(Patcher::new(state));
    }

    fn state(&self) -> Option<&Value> {
        self.patcher.as_ref().map(Patcher::value)
    }

    fn state_ops(&mut self, ops: &[Op], out: &mut Vec<Event>) -> Result<(), String> {
        let patcher = self.patcher.as_mut().ok_or("no state yet")?;
        let delta = patcher.patch(ops).map_err(|e| e.to_string())?;
        if !delta.is_empty() {
            out.push(Event::StateDelta { delta });
        }
        Ok(())
    }

    fn text_start(&mut self, id: &str, role: &str, out: &mut Vec<Event>) {
        out.push(Event::TextMessageStart {
            message_id: id.to_owned(),
            role: role.to_owned(),
        });
    }

    fn text(&mut self, id: &str, delta: &str, out: &mut Vec<Event>) {
        out.push(Event::TextMessageContent {
            message_id: id.to_owned(),
            delta: delta.to_owned(),
        });
    }

    fn text_end(&mut self, id: &str, out: &mut Vec<Event>) {
        out.push(Event::TextMessageEnd {
            message_id: id.to_owned(),
        });
    }

    fn ended(
        &mut self,
        thread_id: &str,
        run_id: &str,
        failed: Option<(&str, Option<&str>)>,
        out: &mut Vec<Event>,
    ) {
        out.push(match failed {
            None => Event::RunFinished {
                thread_id: thread_id.to_owned(),
                run_id: run_id.to_owned(),
            },
            Some((message, code)) => Event::RunError {
                message: message.to_owned(),
                code: code.map(str::to_owned),
            },
        });
    }

    fn unreadable(why: &str) -> Event {
        Event::RunError {
            message: format!("the run's log cannot be read: {why}"),
            code: Some(codes::LOG_UNREADABLE.to_owned()),
        }
    }

    fn write(out: &mut Vec<u8>, id: Option<EventId>, event: &Event) {
        frame(out, id, event);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::runs::view::View;
    use crate::{Encoder, Op};

    fn view_of(batches: &[Vec<Op>]) -> (View<AgUiFraming>, Vec<Vec<Event>>) {
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
