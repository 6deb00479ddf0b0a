//! chord state for [AG-UI](https://docs.ag-ui.com) frontends.
//!
//! AG-UI carries an agent's shared state as one `STATE_SNAPSHOT` event followed by
//! `STATE_DELTA` events, each an [RFC 6902](https://www.rfc-editor.org/rfc/rfc6902) JSON
//! Patch that the client applies to the state it holds. A [`Tracker`](crate::Tracker)
//! already knows each change as an op when it is made; [`Patcher`] turns each flush's ops
//! into the JSON Patch of a `STATE_DELTA`, with no diffing of snapshots, and a patch that
//! applies strictly to what the client holds.
//!
//! The operations are the [`json_patch`] crate's ([`json_patch::PatchOperation`]): the types
//! Rust's JSON Patch users share (and the ones AG-UI SDKs in Rust build on), which also apply
//! patches strictly. Serialized, a `Vec` of them is the RFC's JSON array.
//!
//! ```
//! use chord::{ag_ui::Patcher, track};
//! use serde_json::json;
//!
//! let mut tracker = track(json!({"plan": ["search"], "answer": ""}));
//! let snapshot = match tracker.flush().unwrap().remove(0) {
//!     chord::Op::Replace(v) => v, // the first flush is a base batch: the STATE_SNAPSHOT
//!     _ => unreachable!(),
//! };
//! let mut patcher = Patcher::new(snapshot.clone());
//! tracker.edit(|v| v["plan"].as_array_mut().unwrap().push(json!("answer")));
//! let delta = patcher.patch(&tracker.flush().unwrap()).unwrap();
//! assert_eq!(
//!     serde_json::to_string(&delta).unwrap(),
//!     r#"[{"op":"add","path":"/plan/-","value":"answer"}]"#,
//! );
//! // What a client does with the STATE_DELTA:
//! let mut client = snapshot;
//! json_patch::patch(&mut client, &delta).unwrap();
//! assert_eq!(&client, patcher.value());
//! ```

mod endpoint;
mod events;
mod patch;
mod pointer;
mod run;
mod view;

pub use self::endpoint::{
    AgUi, AgentError, RunRequest, RunRequestKind, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT,
    DEFAULT_CHECKPOINT, DEFAULT_LIFETIME, DEFAULT_NAMESPACE,
};
pub use self::events::{
    Context, Event, InputError, InputMessage, RunAgentInput, Tool, MAX_ID_BYTES,
};
pub use self::patch::{PatchError, Patcher};
pub use self::run::{Envelope, MessageId, Outcome, Run, TextMessage};
