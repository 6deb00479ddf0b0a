//! The settings a [`Builder`](super::Builder) collects and the follower runs with: backoff,
//! idle timeout, event size bound.

use std::time::Duration;

/// The default backoff before the first resubscription after a break.
pub(crate) const DEFAULT_BACKOFF_MIN: Duration = Duration::from_millis(50);
/// The default longest backoff between resubscriptions.
pub(crate) const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(2);
/// The default time without a byte (events or keep-alive comments) after which a stream
/// counts as broken: three of the endpoint's default keep-alive intervals.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(45);
/// The default largest event accepted.
pub(crate) const DEFAULT_MAX_EVENT: usize = 64 << 20;

/// How a replica follows its stream, whatever the stream.
#[derive(Clone, Copy, Debug)]
pub(super) struct Settings {
    pub(super) backoff_min: Duration,
    pub(super) backoff_max: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) max_event: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            backoff_min: DEFAULT_BACKOFF_MIN,
            backoff_max: DEFAULT_BACKOFF_MAX,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_event: DEFAULT_MAX_EVENT,
        }
    }
}
