//! [`State`]: what a replica holds.

use serde_json::Value;

/// What a replica holds, as seen through [`Replica::watch`](super::Replica::watch).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct State {
    /// The value, once a base batch has arrived. After a break it stays at the last value;
    /// the next connection resumes from it (or, on a restart, a base batch replaces it).
    pub value: Option<Value>,
    /// Whether the replica is following its stream now (from a connection's first event to
    /// its break).
    pub live: bool,
}
