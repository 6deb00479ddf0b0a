//! The task behind a replica: follows one subscription after another, rebuilding from each
//! base batch, with a jittered backoff between them.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::events::Parser;
use super::stats::Counters;
use super::target::Target;
use super::{Break, Builder, State};
use crate::{apply, is_base, Decoder};

/// The task behind a [`Replica`](super::Replica).
pub(super) struct Follower {
    pub(super) target: Target,
    pub(super) config: Builder,
    pub(super) state: watch::Sender<State>,
    pub(super) stats: Arc<Counters>,
}

impl Follower {
    /// Follows the stream until the task is aborted.
    pub(super) async fn run(self) {
        let mut backoff = self.config.backoff_min;
        let mut jitter = Jitter::new(Arc::as_ptr(&self.stats) as usize as u64);
        loop {
            let (why, delivered) = self.follow().await;
            // The reason first, then the count: whoever sees the count sees its reason.
            *self
                .stats
                .last_break
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(why);
            self.stats.breaks.fetch_add(1, Ordering::Relaxed);
            self.state
                .send_if_modified(|s| std::mem::replace(&mut s.live, false));
            if delivered {
                backoff = self.config.backoff_min;
            }
            tokio::time::sleep(jitter.spread(backoff)).await;
            backoff = (backoff * 2).min(self.config.backoff_max);
        }
    }

    /// Follows one subscription until it breaks. Whether it delivered its base batch.
    async fn follow(&self) -> (Break, bool) {
        // A server (or a proxy) that accepts and then says nothing counts as silent too.
        let mut body = match tokio::time::timeout(self.config.idle_timeout, self.open()).await {
            Ok(Ok(body)) => body,
            Ok(Err(why)) => return (why, false),
            Err(_) => return (Break::Idle, false),
        };
        let mut parser = Parser::new(self.config.max_event);
        let mut decoder = Decoder::new();
        let mut delivered = false;
        loop {
            let frame =
                match tokio::time::timeout(self.config.idle_timeout, body.body.frame()).await {
                    Err(_) => return (Break::Idle, delivered),
                    Ok(None) => return (Break::Ended, delivered),
                    Ok(Some(Err(e))) => return (Break::Connection(e.to_string()), delivered),
                    Ok(Some(Ok(frame))) => frame,
                };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            parser.push(&data);
            loop {
                let event = match parser.next_event() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) => return (Break::Events(e.to_string()), delivered),
                };
                if let Err(why) = self.batch(&mut decoder, &event, delivered) {
                    return (why, delivered);
                }
                delivered = true;
            }
        }
    }

    /// Decodes and applies one event: the first of a subscription must be a base batch.
    fn batch(&self, decoder: &mut Decoder, event: &str, following: bool) -> Result<(), Break> {
        let ops = decoder
            .decode_str(event)
            .map_err(|e| Break::Decode(e.to_string()))?;
        if !following {
            if !is_base(&ops) {
                return Err(Break::NotBase);
            }
            let mut fresh = None;
            apply(&mut fresh, ops).map_err(|e| Break::Apply(e.to_string()))?;
            // Counted before the new state is published: whoever sees the state change
            // also sees the counters that go with it.
            self.stats.subscriptions.fetch_add(1, Ordering::Relaxed);
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            self.state.send_modify(|s| {
                s.value = fresh;
                s.live = true;
            });
        } else {
            let mut failed = None;
            self.state
                .send_if_modified(|s| match apply(&mut s.value, ops) {
                    Ok(()) => {
                        // Inside the update, so before the watchers are told.
                        self.stats.batches.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                });
            if let Some(e) = failed {
                return Err(Break::Apply(e.to_string()));
            }
        }
        Ok(())
    }

    /// Connects and sends the request; the response body once it is an event stream.
    async fn open(&self) -> Result<Connection, Break> {
        let broken = |e: &dyn fmt::Display| Break::Connection(e.to_string());
        let stream = TcpStream::connect((self.target.host.as_str(), self.target.port))
            .await
            .map_err(|e| broken(&e))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| broken(&e))?;
        let driver = tokio::spawn(connection);
        let request = Request::get(self.target.path.as_str())
            .header(HOST, self.target.authority.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache")
            .body(Empty::<Bytes>::new())
            .map_err(|e| broken(&e))?;
        let response = sender.send_request(request).await.map_err(|e| broken(&e))?;
        let status = response.status();
        if status != StatusCode::OK {
            driver.abort();
            return Err(Break::Status(status.as_u16()));
        }
        let is_events = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !is_events {
            driver.abort();
            return Err(Break::NotEventStream);
        }
        Ok(Connection {
            body: response.into_body(),
            driver,
        })
    }
}

/// A response body and the task driving its connection, closed together.
struct Connection {
    body: hyper::body::Incoming,
    driver: JoinHandle<Result<(), hyper::Error>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A small xorshift generator spreading backoffs.
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Jitter((seed ^ u64::from(nanos)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// `d` scaled by a factor in [0.5, 1.5).
    fn spread(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        d.mul_f64(0.5 + unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_half_either_side() {
        let mut j = Jitter::new(7);
        for _ in 0..1000 {
            let d = j.spread(Duration::from_millis(100));
            assert!(d >= Duration::from_millis(50) && d < Duration::from_millis(150));
        }
    }
}
