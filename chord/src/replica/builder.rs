//! Configuring a replica: backoff, idle timeout, event size bound; and starting it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::follower::Follower;
use super::handle::Replica;
use super::settings::Settings;
use super::stats::Counters;
use super::target::Target;
use super::{Error, State};

/// Configures a [`Replica`]: backoff, idle timeout, event size bound. The defaults: a
/// backoff of 50 ms to 2 s, 45 s of silence before a stream counts as broken, events of up
/// to 64 MiB.
///
/// ```no_run
/// use std::time::Duration;
/// use chord::replica::Replica;
/// # async fn run() -> Result<(), chord::replica::Error> {
/// let replica = Replica::builder("http://127.0.0.1:8080/streams/lanes/main")
///     .backoff(Duration::from_millis(20), Duration::from_secs(1))
///     .idle_timeout(Duration::from_secs(20))
///     .connect()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Builder {
    url: String,
    settings: Settings,
}

impl Replica {
    /// Follows the stream at `url` (e.g. `http://127.0.0.1:8080/streams/lanes/main`) with the
    /// default settings.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`]; [`Error::NoRuntime`] outside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Replica, Error> {
        Replica::builder(url).connect()
    }

    /// Configures a replica of the stream at `url`.
    pub fn builder(url: &str) -> Builder {
        Builder {
            url: url.to_owned(),
            settings: Settings::default(),
        }
    }
}

impl Builder {
    /// The backoff before resubscribing: `min` after a subscription that delivered its base
    /// batch, doubling on each failed attempt up to `max`, each spread by ±50% so that many
    /// replicas broken at once do not return at once. Default: 50 ms to 2 s.
    pub fn backoff(mut self, min: Duration, max: Duration) -> Builder {
        self.settings.backoff_min = min;
        self.settings.backoff_max = max.max(min);
        self
    }

    /// How long a stream may stay silent (no event, no keep-alive comment) before it counts
    /// as broken (default 45 s: three of the server's default 15 s keep-alive intervals); keep
    /// it above the server's keep-alive interval.
    pub fn idle_timeout(mut self, timeout: Duration) -> Builder {
        self.settings.idle_timeout = timeout;
        self
    }

    /// The largest event accepted, in bytes (default 64 MiB); a larger one breaks the
    /// subscription.
    pub fn max_event(mut self, bytes: usize) -> Builder {
        self.settings.max_event = bytes;
        self
    }

    /// Starts following the stream.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`]; [`Error::NoRuntime`] outside a Tokio runtime.
    pub fn connect(self) -> Result<Replica, Error> {
        let target = Target::parse(&self.url)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let (tx, rx) = watch::channel(State::default());
        let stats = Arc::new(Counters::default());
        let follower = Follower {
            target,
            config: self.settings,
            state: tx,
            stats: Arc::clone(&stats),
        };
        let task = runtime.spawn(follower.run());
        Ok(Replica {
            state: rx,
            stats,
            task,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connecting_outside_a_runtime_is_an_error() {
        assert_eq!(
            Replica::connect("http://127.0.0.1:1/").unwrap_err(),
            Error::NoRuntime
        );
    }
}
