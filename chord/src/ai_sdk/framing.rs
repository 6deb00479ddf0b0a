//! The AI SDK's framing of a run: the UI message stream's chunks, each an SSE `data:` line of
//! JSON with the event's `id:`, and `data: [DONE]` after the last.
//!
//! - the start: `start` with the run's id as the `messageId`, then the state whole as the
//!   persistent data part `data-state` (id `state`);
//! - each record's state ops: one transient `data-chord` part whose `data` is the ops as
//!   chord's wire batch (`[["a", ["answer"], "tok"]]`), what a replica applies;
//! - the text: `text-start`, `text-delta` (exactly the appended text), `text-end`, by the
//!   message's id;
//! - the end: `data-state` again with the final state (the part with the same id replaces
//!   the first in the message), then `finish`; or `error` saying what failed.

use serde_json::{json, Value};

use crate::live::frames::Door;
use crate::runs::id::{frame, EventId};
use crate::runs::view::Framing;
use crate::Op;

/// The id of the persistent data part holding the state.
pub(crate) const STATE_PART: &str = "state";

/// The AI SDK chunks of a run; the state as the client's message holds it.
pub(crate) struct AiSdkFraming {
    state: Option<Value>,
}

impl AiSdkFraming {
    fn state_part(&self) -> Value {
        json!({"type": "data-state", "id": STATE_PART, "data": self.state.clone().unwrap_or(Value::Null)})
    }
}

/// Whether `chunk` ends the stream.
fn terminal(chunk: &Value) -> bool {
    matches!(
        chunk.get("type").and_then(Value::as_str),
        Some("finish" | "error" | "abort")
    )
}

impl Framing for AiSdkFraming {
    type Event = Value;
    const DOOR: Door = Door::AiSdk;
    const COMPACT_START: bool = true;

    fn new() -> AiSdkFraming {
        AiSdkFraming { state: None }
    }

    fn started(&mut self, _thread_id: &str, run_id: &str, state: Value, out: &mut Vec<Value>) {
        out.push(json!({"type": "start", "messageId": run_id}));
        self.state = Some(state);
        out.push(self.state_part());
    }

    fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    fn state_ops(&mut self, ops: &[Op], out: &mut Vec<Value>) -> Result<(), String> {
        crate::apply(&mut self.state, ops.iter().cloned()).map_err(|e| e.to_string())?;
        let batch = serde_json::to_value(ops).map_err(|e| e.to_string())?;
        out.push(json!({"type": "data-chord", "data": batch, "transient": true}));
        Ok(())
    }

    fn text_start(&mut self, id: &str, _role: &str, out: &mut Vec<Value>) {
        out.push(json!({"type": "text-start", "id": id}));
    }

    fn text(&mut self, id: &str, delta: &str, out: &mut Vec<Value>) {
        out.push(json!({"type": "text-delta", "id": id, "delta": delta}));
    }

    fn text_end(&mut self, id: &str, out: &mut Vec<Value>) {
        out.push(json!({"type": "text-end", "id": id}));
    }

    fn ended(
        &mut self,
        _thread_id: &str,
        _run_id: &str,
        failed: Option<(&str, Option<&str>)>,
        out: &mut Vec<Value>,
    ) {
        match failed {
            None => {
                out.push(self.state_part());
                out.push(json!({"type": "finish"}));
            }
            Some((message, code)) => {
                let text = match code {
                    Some(code) => format!("{code}: {message}"),
                    None => message.to_owned(),
                };
                out.push(json!({"type": "error", "errorText": text}));
            }
        }
    }

    fn unreadable(why: &str) -> Value {
        json!({"type": "error", "errorText": format!("LOG_UNREADABLE: the run's log cannot be read: {why}")})
    }

    fn write(out: &mut Vec<u8>, id: Option<EventId>, chunk: &Value) {
        frame(out, id, chunk);
        if terminal(chunk) {
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
    }
}
