//! A run as it is stored: the tracked [`Envelope`] at one address of a durable log, and the
//! producer's handle on it, [`Run`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::store::{Address, Durable, LogWriter, Store};
use crate::{Proxy, Tracked};

/// One run, as its log stores it: the ids, the user's state `T` (what `STATE_SNAPSHOT` and
/// `STATE_DELTA` carry), the assistant's text messages, and how the run ended.
///
/// It is a tracked value like any other, so a message's text is stored as appends (one `a`
/// op per token) and sent as `TEXT_MESSAGE_CONTENT` deltas, never inside a state delta. As
/// JSON: `{"threadId", "runId", "state", "messages": [{"id", "role", "content", "ended"}],
/// "outcome": {"status": "running" | "finished" | "error", "message"?}}`.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T> {
    /// The conversation.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// The user's state.
    pub state: T,
    /// The text messages of the run, in the order they started.
    pub messages: Vec<TextMessage>,
    /// How the run ended, if it has.
    pub outcome: Outcome,
}

/// A text message of a run.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct TextMessage {
    /// Its id, unique in the conversation.
    pub id: String,
    /// Its author: `assistant`.
    pub role: String,
    /// Its text so far.
    pub content: String,
    /// Whether it is complete.
    pub ended: bool,
}

/// How a run ended, if it has.
#[derive(Tracked, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum Outcome {
    /// Not yet ended.
    #[default]
    Running,
    /// Ended well: `RUN_FINISHED`.
    Finished,
    /// Failed: `RUN_ERROR`.
    Error {
        /// Why.
        message: String,
        /// What failed, as `RUN_ERROR`'s `code` says it (one of [`codes`]);
        /// empty in logs written before codes were stored.
        #[serde(default)]
        code: String,
    },
}

impl Outcome {
    /// A failure: `RUN_ERROR` with `code` (one of [`codes`]) and `message`.
    pub fn error(code: &str, message: impl Into<String>) -> Outcome {
        Outcome::Error {
            message: message.into(),
            code: code.to_owned(),
        }
    }
}

/// A text message's id, as [`Run::start_message`] hands it out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageId(String);

impl MessageId {
    /// The id as the events carry it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The producer's handle on a run: mutate the state through [`state`](Run::state), stream
/// text with [`start_message`](Run::start_message), [`append`](Run::append) and
/// [`end_message`](Run::end_message), and [`flush`](Run::flush) to store what changed as
/// one record of the run's log, which every client of the run is then sent as events.
///
/// The endpoint ([`AgUi`](crate::ag_ui::AgUi)) writes the run's first record (`RUN_STARTED`, the
/// first `STATE_SNAPSHOT`) before the agent is called, and its last (the outcome:
/// `RUN_FINISHED`, or `RUN_ERROR` when the agent returns an error or panics) after it
/// returns; messages still open are ended then.
///
/// A run needs no router: over any store's [`LogWriter`], [`new`](Run::new) starts one and
/// [`finish`](Run::finish) or [`fail`](Run::fail) ends it, for an agent's tests or another
/// server. An agent written generic over the store serves both:
///
/// ```
/// use chord::ag_ui::{Outcome, Run};
/// use chord::store::{Address, Checkpoint, JsonlStore, LogWriter, Store};
/// # use chord::Tracked;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Tracked, Serialize, Deserialize, Default)]
/// # struct Research { plan: Vec<String> }
///
/// fn agent<S: Store>(run: &mut Run<Research, S>) -> chord::store::Result<()> {
///     run.state().plan.push("search".into());
///     run.flush()?;
///     Ok(())
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let store = JsonlStore::open(dir.path().join("runs.jsonl"), Default::default())?;
/// let writer = LogWriter::new(store, Checkpoint::Never);
/// let mut run = Run::new(writer, Address::new("ag-ui/t1", "r1"), "t1", "r1", Research::default());
/// run.flush()?; // the run's first record: RUN_STARTED, STATE_SNAPSHOT
/// agent(&mut run)?;
/// run.finish()?; // RUN_FINISHED
/// assert_eq!(run.envelope().outcome, Outcome::Finished);
/// # Ok(())
/// # }
/// ```
pub struct Run<T: Tracked, S: Store> {
    durable: Durable<Envelope<T>, S>,
    /// Each message's index in the envelope, by id.
    index: HashMap<MessageId, usize>,
}

impl<T: Tracked + Serialize, S: Store> Run<T, S> {
    /// A new run at `address` of the log `writer` writes, its state `state`, not stored yet:
    /// its first [`flush`](Run::flush) writes it whole.
    pub fn new(
        writer: LogWriter<S>,
        address: Address,
        thread_id: &str,
        run_id: &str,
        state: T,
    ) -> Run<T, S> {
        let envelope = Envelope {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            state,
            messages: Vec::new(),
            outcome: Outcome::Running,
        };
        Run {
            durable: Durable::new(envelope, writer, address),
            index: HashMap::new(),
        }
    }

    /// The proxy through which to change the state (see [`Tracker::state`](crate::Tracker::state)).
    pub fn state(&mut self) -> Proxy<'_, T> {
        self.durable.state().state
    }

    /// The state, for reading.
    pub fn get(&self) -> &T {
        &self.durable.get().state
    }

    /// The whole envelope, for reading.
    pub fn envelope(&self) -> &Envelope<T> {
        self.durable.get()
    }

    /// The conversation's id.
    pub fn thread_id(&self) -> &str {
        &self.durable.get().thread_id
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.durable.get().run_id
    }

    /// The address of the run's log.
    pub fn address(&self) -> &Address {
        self.durable.address()
    }

    /// Starts an assistant text message (`TEXT_MESSAGE_START` at the next flush) and returns
    /// its id: `<runId>-<n>`, unique in the conversation as the run id is.
    pub fn start_message(&mut self) -> MessageId {
        let n = self.durable.get().messages.len();
        let id = MessageId(format!("{}-{}", self.run_id(), n + 1));
        self.durable.state().messages.push(TextMessage {
            id: id.0.clone(),
            role: "assistant".to_owned(),
            content: String::new(),
            ended: false,
        });
        self.index.insert(id.clone(), n);
        id
    }

    /// Appends text to a message (`TEXT_MESSAGE_CONTENT` at the next flush, all of a flush's
    /// appends together). Text appended to an ended message, or to an id this run did not
    /// hand out, is dropped, and so is empty text.
    pub fn append(&mut self, id: &MessageId, text: &str) {
        if text.is_empty() {
            return;
        }
        let Some(&i) = self.index.get(id) else {
            return;
        };
        if self.durable.get().messages[i].ended {
            return;
        }
        let mut envelope = self.durable.state();
        if let Some(mut message) = envelope.messages.get_mut(i) {
            message.content.push_str(text);
        }
    }

    /// Ends a message (`TEXT_MESSAGE_END` at the next flush).
    pub fn end_message(&mut self, id: &MessageId) {
        let Some(&i) = self.index.get(id) else {
            return;
        };
        let mut envelope = self.durable.state();
        if let Some(mut message) = envelope.messages.get_mut(i) {
            message.ended.set(true);
        }
    }

    /// Stores what changed since the last flush as one record of the run's log: the events
    /// its clients are sent next. Returns the record's seq, `None` when nothing changed.
    ///
    /// # Errors
    ///
    /// As [`Durable::flush`].
    pub fn flush(&mut self) -> crate::store::Result<Option<u64>> {
        self.durable.flush()
    }

    /// Ends the run well: every open message ended, `RUN_FINISHED`; flushed, the run's last
    /// record.
    ///
    /// # Errors
    ///
    /// As [`Durable::flush`].
    pub fn finish(&mut self) -> crate::store::Result<Option<u64>> {
        self.end(Outcome::Finished)
    }

    /// Ends the run as failed: every open message ended, `RUN_ERROR` with
    /// [`codes::AGENT_FAILED`] and `message`; flushed, the run's last record.
    ///
    /// # Errors
    ///
    /// As [`Durable::flush`].
    pub fn fail(&mut self, message: impl Into<String>) -> crate::store::Result<Option<u64>> {
        self.end(Outcome::error(codes::AGENT_FAILED, message))
    }

    /// Ends every open message and sets the outcome, then flushes: the run's last record.
    pub(crate) fn end(&mut self, outcome: Outcome) -> crate::store::Result<Option<u64>> {
        let open: Vec<usize> = (self.durable.get().messages.iter().enumerate())
            .filter(|(_, m)| !m.ended)
            .map(|(i, _)| i)
            .collect();
        {
            let mut envelope = self.durable.state();
            for i in open {
                if let Some(mut message) = envelope.messages.get_mut(i) {
                    message.ended.set(true);
                }
            }
            envelope.outcome.set(outcome);
        }
        self.durable.flush()
    }
}

/// What failed, when a run ends in error: the `code` of AG-UI's `RUN_ERROR`, stored in the
/// run's [`Outcome`](crate::ag_ui::Outcome).
pub mod codes {
    /// The agent returned an error ([`Run::fail`](crate::ag_ui::Run::fail) too).
    pub const AGENT_FAILED: &str = "AGENT_FAILED";
    /// The agent panicked.
    pub const AGENT_PANICKED: &str = "AGENT_PANICKED";
    /// The run's producer is gone: the server that ran the agent stopped before the run
    /// ended (a restart), or the run's start could not be read back.
    pub const PRODUCER_GONE: &str = "PRODUCER_GONE";
    /// The run's log cannot be read (the store failed, or a record does not decode): sent to
    /// the reader, not stored.
    pub const LOG_UNREADABLE: &str = "LOG_UNREADABLE";
}
