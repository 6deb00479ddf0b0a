//! The AG-UI 1.0 types chord speaks: the [`RunAgentInput`] a client posts and the [`Event`]s
//! the endpoint answers.
//!
//! **Why not the `ag-ui` crate.** The Rust SDK on crates.io (`ag-ui`, 0.4/0.5, alpha) holds
//! the whole protocol with a client and a server runtime, and pulls in `reqwest`, `chrono`
//! and their trees. chord needs eight event shapes and one input type, whose fields are
//! fixed by the 1.0 JSON Schema; written here they are a few dozen lines, checked by the
//! tests against the official JavaScript schemas (`@ag-ui/core`) and the Python validator, and
//! cost no dependency. The state deltas use the [`json_patch`] crate's operations, which the
//! Rust AG-UI SDKs share.
//!
//! **Exact shapes.** Each event serializes with its `type` and the protocol's camelCase
//! fields, no other property (the schema refuses extra ones). The input is read leniently
//! where the protocol grows (fields chord does not use are ignored, so a newer client is not
//! refused), strictly where chord relies on it: `threadId` and `runId` must be non-empty
//! strings, and each list must hold objects of its kind.

use json_patch::PatchOperation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most bytes of a `threadId` or a `runId` (they name the run's log).
pub const MAX_ID_BYTES: usize = 256;

/// What a client posts to start a run (or, for chord, to resume one): AG-UI 1.0's
/// `RunAgentInput`.
///
/// ```
/// use chord::ag_ui::RunAgentInput;
/// let input: RunAgentInput = serde_json::from_str(
///     r#"{"threadId":"t1","runId":"r1","state":{},"messages":[
///         {"id":"u1","role":"user","content":"Hi"}],"tools":[],"context":[],"forwardedProps":{}}"#,
/// )?;
/// assert_eq!((input.thread_id.as_str(), input.run_id.as_str()), ("t1", "r1"));
/// assert_eq!(input.messages[0].content.as_ref().and_then(|c| c.as_str()), Some("Hi"));
/// input.check()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation.
    pub thread_id: String,
    /// This run.
    pub run_id: String,
    /// The run that started this one, for nested agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The state the client holds.
    #[serde(default)]
    pub state: Value,
    /// The conversation so far, oldest first.
    #[serde(default)]
    pub messages: Vec<InputMessage>,
    /// The tools the client offers.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Context entries.
    #[serde(default)]
    pub context: Vec<Context>,
    /// Whatever the client forwards, untouched.
    #[serde(default)]
    pub forwarded_props: Value,
}

/// Why a [`RunAgentInput`] that parsed is still refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// `threadId` or `runId` is empty.
    #[error("`{field}` is empty")]
    EmptyId {
        /// `threadId` or `runId`.
        field: &'static str,
    },
    /// `threadId` or `runId` is longer than [`MAX_ID_BYTES`].
    #[error("`{field}` is {len} bytes long, more than {MAX_ID_BYTES}")]
    LongId {
        /// `threadId` or `runId`.
        field: &'static str,
        /// Its length.
        len: usize,
    },
    /// `threadId` or `runId` holds a control character.
    #[error("`{field}` holds a control character")]
    ControlInId {
        /// `threadId` or `runId`.
        field: &'static str,
    },
}

impl RunAgentInput {
    /// Checks what parsing alone does not: the ids are non-empty, at most [`MAX_ID_BYTES`],
    /// without control characters.
    ///
    /// # Errors
    ///
    /// The first id that is not so.
    pub fn check(&self) -> Result<(), InputError> {
        check_id("threadId", &self.thread_id)?;
        check_id("runId", &self.run_id)
    }
}

/// Checks one id of a run (see [`RunAgentInput::check`]).
pub(crate) fn check_id(field: &'static str, id: &str) -> Result<(), InputError> {
    if id.is_empty() {
        return Err(InputError::EmptyId { field });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(InputError::LongId {
            field,
            len: id.len(),
        });
    }
    if id.chars().any(char::is_control) {
        return Err(InputError::ControlInId { field });
    }
    Ok(())
}

/// A message of the conversation a client sends: its `id` and `role`, its `content` (text,
/// or a list of parts for a user message), and whatever else its role carries
/// (`toolCalls`, `toolCallId`, `name`, ...) as it was sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InputMessage {
    /// The message's id.
    pub id: String,
    /// `developer`, `system`, `assistant`, `user`, `tool`, or a role a later protocol adds.
    pub role: String,
    /// The content, when the message has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A tool the client offers: its name, what it does, and its parameters' JSON Schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments.
    #[serde(default)]
    pub parameters: Value,
}

/// A context entry: a description and a value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    /// What the value is.
    pub description: String,
    /// The value.
    pub value: String,
}

/// One AG-UI event, as the endpoint sends it: `{"type": "RUN_STARTED", ...}`.
///
/// ```
/// use chord::ag_ui::Event;
/// let e = Event::TextMessageContent { message_id: "m1".into(), delta: "Hel".into() };
/// assert_eq!(
///     serde_json::to_string(&e)?,
///     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hel"}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
#[non_exhaustive]
pub enum Event {
    /// The run started: the first event of a run.
    RunStarted {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
    },
    /// The run ended well: its last event.
    RunFinished {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
    },
    /// The run failed: its last event.
    RunError {
        /// Why.
        message: String,
        /// What failed: one of [`codes`](super::codes) (AG-UI's optional `code`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// The whole state: the client's state becomes this.
    StateSnapshot {
        /// The state.
        snapshot: Value,
    },
    /// A change of the state: an RFC 6902 JSON Patch the client applies to its state.
    StateDelta {
        /// The patch.
        delta: Vec<PatchOperation>,
    },
    /// A text message starts.
    TextMessageStart {
        /// Its id, unique in the conversation.
        message_id: String,
        /// Its author (`assistant`).
        role: String,
    },
    /// Text appended to a message (never empty).
    TextMessageContent {
        /// The message.
        message_id: String,
        /// The text.
        delta: String,
    },
    /// A message ends.
    TextMessageEnd {
        /// The message.
        message_id: String,
    },
}

impl Event {
    /// Whether the event ends its run: `RUN_FINISHED` or `RUN_ERROR`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::RunFinished { .. } | Event::RunError { .. })
    }
}
