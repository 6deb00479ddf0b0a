//! AG-UI's framing of a run: `RUN_STARTED`, the state as a `STATE_SNAPSHOT` then
//! `STATE_DELTA`s (RFC 6902 patches from each record's ops, by a [`Patcher`]), the text as
//! `TEXT_MESSAGE_*` events, `RUN_FINISHED` or `RUN_ERROR`; each an SSE `data:` line of JSON.

use serde_json::Value;

use super::events::{codes, Event};
use super::id::{frame, EventId};
use super::patch::Patcher;
use super::view::Framing;
use crate::Op;

/// The AG-UI events of a run; the state as the client holds it, in its [`Patcher`].
pub(crate) struct AgUiFraming {
    patcher: Option<Patcher>,
}

impl Framing for AgUiFraming {
    type Event = Event;

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
