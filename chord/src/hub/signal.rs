//! [`Signal`]: how a cut reaches a subscription, and the SSE connection serving it.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A one-way flag with a waker: set once, awaited by anyone.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    fired: AtomicBool,
    notify: Notify,
}

impl Signal {
    pub(crate) fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Resolves once the signal has fired.
    #[cfg(feature = "sse")]
    pub(crate) async fn fired(&self) {
        loop {
            let mut notified = std::pin::pin!(self.notify.notified());
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}
