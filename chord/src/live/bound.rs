//! [`Bound`]: how many of something a door holds at once (runs in flight, open responses),
//! and the `503` with `Retry-After` past it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use super::headers::plain;

/// A count with a ceiling, shared by whatever it bounds.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    held: Arc<AtomicUsize>,
    max: usize,
}

/// One of a [`Bound`]'s places, given back when dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<AtomicUsize>);

impl Bound {
    pub(crate) fn new(max: usize) -> Bound {
        Bound {
            held: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// A place, unless all are held.
    pub(crate) fn take(&self) -> Option<Permit> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Permit(Arc::clone(&self.held)))
    }

    /// How many places are held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The answer past a bound: `503 Service Unavailable`, `Retry-After` in seconds, saying what
/// is full; nothing was started.
pub(crate) fn busy(what: &str, retry_after_secs: u64) -> Response {
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{what}: try again later\n"),
    );
    let h = r.headers_mut();
    h.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_gives_its_places_and_takes_them_back() {
        let bound = Bound::new(2);
        let a = bound.take().expect("a first place");
        let b = bound.take().expect("a second place");
        assert!(bound.take().is_none(), "a third place past a bound of 2");
        assert_eq!(bound.held(), 2);
        drop(a);
        let c = bound.take().expect("a place given back");
        assert_eq!(bound.held(), 2);
        drop((b, c));
        assert_eq!(bound.held(), 0);
    }
}
