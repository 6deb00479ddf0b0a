//! What a `useChat` request asks ([`ChatInput`]), read from the body `DefaultChatTransport`
//! sends, and the chat's index in the log: which run of a chat is its latest.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::{Address, Durable, LogWriter, Store};
use crate::Tracked;

/// The most bytes of a chat id.
pub const MAX_CHAT_ID_BYTES: usize = 256;

/// What a `POST` asks of the agent: the chat, the run it starts, what the user said.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ChatInput {
    /// The chat's id (`useChat`'s `id`).
    pub chat_id: String,
    /// The run this request starts: the assistant message's id (`t1`, `t2`, ... by turn).
    pub run_id: String,
    /// `submit-message`, or `regenerate-message` (answer the same user message again).
    pub trigger: Trigger,
    /// The text of the last user message (its text parts, joined).
    pub text: String,
    /// The last user message as sent (its id, parts, metadata).
    pub message: Value,
}

/// Why the run is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trigger {
    /// A new user message.
    Submit,
    /// The last assistant message again.
    Regenerate,
}

/// The body a `POST` sends, as far as the door reads it.
#[derive(Debug)]
pub(crate) struct Posted {
    pub(crate) chat_id: String,
    pub(crate) trigger: Trigger,
    pub(crate) message: Value,
}

/// Reads a `useChat` body: `id`, `trigger`, and the last message of `messages` (only it is
/// kept: the history is the log's). The error says what is wrong, and where.
pub(crate) fn parse_request(body: &Value) -> Result<Posted, String> {
    let object = body.as_object().ok_or("the body is not a JSON object")?;
    let chat_id = match object.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err("`id` is not a string".into()),
        None => return Err("no `id`: the chat's id".into()),
    };
    check_chat_id(&chat_id)?;
    let trigger = match object.get("trigger").and_then(Value::as_str) {
        None | Some("submit-message") => Trigger::Submit,
        Some("regenerate-message") => Trigger::Regenerate,
        Some(other) => {
            return Err(format!(
                "unknown `trigger` {:?}: submit-message or regenerate-message",
                other.chars().take(64).collect::<String>()
            ))
        }
    };
    let messages = match object.get("messages") {
        Some(Value::Array(m)) => m,
        Some(_) => return Err("`messages` is not an array".into()),
        None => return Err("no `messages`".into()),
    };
    let (i, message) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.get("role").and_then(Value::as_str) == Some("user"))
        .ok_or("`messages` holds no user message")?;
    match message.get("parts") {
        Some(Value::Array(_)) => {}
        _ => return Err(format!("`messages[{i}]`: no array `parts`")),
    }
    Ok(Posted {
        chat_id,
        trigger,
        message: message.clone(),
    })
}

/// The text parts of a message, joined.
pub(crate) fn text_of(message: &Value) -> String {
    let parts = message.get("parts").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// A chat id: not empty, at most [`MAX_CHAT_ID_BYTES`], no control character.
pub(crate) fn check_chat_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("the chat id is empty".into());
    }
    if id.len() > MAX_CHAT_ID_BYTES {
        return Err(format!(
            "the chat id is {} bytes, over {MAX_CHAT_ID_BYTES}",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("the chat id holds a control character".into());
    }
    Ok(())
}

/// A chat's index, one tracked value at its own address: how many runs the chat has had, and
/// which is its latest. Every node reads it to find a chat's run; the node starting a run
/// writes it first (the store's one writer per address orders two nodes' starts).
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub(crate) struct Index {
    /// The runs started, the latest being `t<turns>`.
    pub(crate) turns: u64,
}

/// The run id of turn `n`.
pub(crate) fn run_id(turn: u64) -> String {
    format!("t{turn}")
}

/// Counts one more run in the chat's index at `address`: the new run's id.
pub(crate) fn next_run<S: Store>(
    writer: LogWriter<S>,
    address: Address,
) -> crate::store::Result<String> {
    let mut index = Durable::open(writer, address, Index::default)?;
    let turn = index.get().turns + 1;
    index.state().turns.set(turn);
    index.flush()?;
    Ok(run_id(turn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_gives_its_chat_trigger_and_last_user_message_or_says_what_is_wrong() {
        let body = json!({"id": "c1", "trigger": "submit-message", "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "old"}]},
            {"id": "a1", "role": "assistant", "parts": []},
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Hi "}, {"type": "file"}, {"type": "text", "text": "there"}]},
        ]});
        let r = parse_request(&body).unwrap();
        assert_eq!(r.chat_id, "c1");
        assert_eq!(r.trigger, Trigger::Submit);
        assert_eq!(r.message["id"], "u2");
        assert_eq!(text_of(&r.message), "Hi there");
        let regenerate = json!({"id": "c1", "trigger": "regenerate-message", "messageId": "a1",
            "messages": [{"id": "u1", "role": "user", "parts": []}]});
        assert_eq!(
            parse_request(&regenerate).unwrap().trigger,
            Trigger::Regenerate
        );
        for (bad, says) in [
            (json!([]), "not a JSON object"),
            (json!({"messages": []}), "no `id`"),
            (json!({"id": 3, "messages": []}), "`id` is not a string"),
            (json!({"id": "", "messages": []}), "empty"),
            (json!({"id": "c\u{7}", "messages": []}), "control character"),
            (
                json!({"id": "c", "trigger": "x", "messages": []}),
                "unknown `trigger`",
            ),
            (json!({"id": "c"}), "no `messages`"),
            (json!({"id": "c", "messages": {}}), "not an array"),
            (
                json!({"id": "c", "messages": [{"role": "assistant", "parts": []}]}),
                "no user message",
            ),
            (
                json!({"id": "c", "messages": [{"role": "user"}]}),
                "`messages[0]`: no array `parts`",
            ),
        ] {
            let why = parse_request(&bad).unwrap_err();
            assert!(why.contains(says), "{bad}: {why}");
        }
        let long = "x".repeat(MAX_CHAT_ID_BYTES + 1);
        assert!(check_chat_id(&long).unwrap_err().contains("over 256"));
    }
}
