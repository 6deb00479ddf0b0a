//! A run of an agent, as every protocol door serves it: one tracked value (its
//! [`Envelope`]: the ids, the user's state, the assistant's text messages, the outcome) at one
//! address of a durable log, written through the producer's [`Run`] handle.
//!
//! A door (AG-UI's, in [`ag_ui`](crate::ag_ui)) is a [`Framing`](view::Framing) of that log:
//! what each record changed, said as the door's events. Everything else is shared: where a
//! response starts (a run's start, a checkpoint, or after a `Last-Event-ID` naming
//! `<offset>:<k>`), the events of each record made once for all of a run's readers, the bounds
//! on runs and responses, and a run whose producer is gone ended in the log.

#[cfg(feature = "ag-ui")]
pub(crate) mod feed;
#[cfg(feature = "ag-ui")]
pub(crate) mod id;
mod run;
#[cfg(feature = "ag-ui")]
pub(crate) mod serve;
#[cfg(feature = "ag-ui")]
pub(crate) mod view;

pub use self::run::{codes, Envelope, MessageId, Outcome, Run, TextMessage};
#[cfg(feature = "ag-ui")]
pub use self::serve::AgentError;
