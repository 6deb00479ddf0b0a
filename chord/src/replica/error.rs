//! [`Error`]: why a replica could not start.

use std::fmt;

/// Why a replica could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not an absolute `http://` URL with a host.
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`Replica::connect`](super::Replica::connect) was called outside a Tokio runtime.
    NoRuntime,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidUrl { url, reason } => write!(f, "invalid URL {url:?}: {reason}"),
            Error::NoRuntime => f.write_str("a replica must be started inside a Tokio runtime"),
        }
    }
}

impl std::error::Error for Error {}
