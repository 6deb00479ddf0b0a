//! [`State`]: what a replica holds.

use serde_json::Value;

/// What a replica holds, as seen through [`Replica::watch`](super::Replica::watch).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct State {
    /// The value, once a base batch has arrived. After a break it stays at the last value
    /// until the next subscription's base batch replaces it.
    pub value: Option<Value>,
    /// Whether the replica is following its stream now (between a base batch and a break).
    pub live: bool,
}
