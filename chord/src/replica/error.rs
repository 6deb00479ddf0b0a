//! [`Error`]: why a replica could not start.

/// Why a replica could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not an absolute `http://` URL with a host.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`Replica::connect`](super::Replica::connect) was called outside a Tokio runtime.
    #[error("a replica must be started inside a Tokio runtime")]
    NoRuntime,
}
