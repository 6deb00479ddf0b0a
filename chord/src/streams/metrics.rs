//! What the streams layer records through the [`metrics`] facade: the names, and small
//! helpers so that each place records with the same name and labels.
//!
//! The facade, not OpenTelemetry: a library records through it, and the application decides
//! where it goes by installing one recorder (`metrics-exporter-prometheus` serving
//! `/metrics`, a StatsD or OpenTelemetry bridge, a test's in-process recorder). Without a
//! recorder every call is a no-op costing an atomic load, and chord pulls in no exporter,
//! runtime or protocol of its own. The table of names is in the [`streams`](super) docs.

use std::time::Duration;

use crate::store::Address;

/// Batches appended through a [`Log`](super::Log) (counter).
pub const APPENDS: &str = "chord_appends_total";
/// Seconds each append through a [`Log`](super::Log) took, the store's write included
/// (histogram).
pub const APPEND_SECONDS: &str = "chord_append_seconds";
/// Bytes of batches appended through a [`Log`](super::Log) (counter).
pub const APPEND_BYTES: &str = "chord_append_bytes_total";
/// Appends the store refused or failed (counter).
pub const APPEND_ERRORS: &str = "chord_append_errors_total";
/// Live readers (SSE responses and long-polls) of each stream, label `stream` (gauge).
pub const STREAM_READERS: &str = "chord_stream_readers";
/// SSE responses open now (gauge).
pub const SSE_OPEN: &str = "chord_sse_open";
/// SSE responses ended, label `reason`: `lifetime`, `drain`, `end` (the stream closed or
/// went, or a read failed) or `client` (the client went first, or its connection was cut)
/// (counter).
pub const SSE_ENDED: &str = "chord_sse_ended_total";
/// Reads that fell behind the tail cache and read the store (slow or resuming readers)
/// (counter).
pub const CACHE_MISSES: &str = "chord_cache_misses_total";
/// `410 Gone` answers (counter).
pub const GONE: &str = "chord_gone_total";
/// Compactions run, label `result`: `ok` or `error` (counter).
pub const COMPACTIONS: &str = "chord_compactions_total";
/// Bytes the tail caches of a log hold together (gauge).
pub const TAIL_CACHE_BYTES: &str = "chord_tail_cache_bytes";
/// Seconds since the follower of a stream last heard from the store, label `stream`; a
/// healthy follower hears at least once a second (gauge).
pub const FOLLOWER_LAG: &str = "chord_follower_lag_seconds";
/// Store reads that failed (counter).
pub const READ_ERRORS: &str = "chord_read_errors_total";
/// Batches the write side refused as not decodable or not applicable (counter).
pub const REJECTED_BATCHES: &str = "chord_rejected_batches_total";
/// Connections cut at a [`Server`](super::Server)'s drain deadline (counter).
pub const DRAIN_CUT: &str = "chord_drain_cut_total";
/// Readiness probes that failed, label `check`: `store` or `follower` (counter).
pub const NOT_READY: &str = "chord_not_ready_total";
/// A tracker's whole-value fallback diffs, as [`Tracker::fallbacks`](crate::Tracker::fallbacks)
/// counts them (counter; recorded by the tracker, in every build).
pub const FALLBACKS: &str = "chord_fallbacks_total";

/// One append through a log.
pub(crate) fn appended(bytes: usize, took: Duration) {
    metrics::counter!(APPENDS).increment(1);
    metrics::counter!(APPEND_BYTES).increment(bytes as u64);
    metrics::histogram!(APPEND_SECONDS).record(took.as_secs_f64());
}

pub(crate) fn append_failed() {
    metrics::counter!(APPEND_ERRORS).increment(1);
}

pub(crate) fn cache_miss() {
    metrics::counter!(CACHE_MISSES).increment(1);
}

pub(crate) fn gone() {
    metrics::counter!(GONE).increment(1);
}

pub(crate) fn compacted(ok: bool) {
    let result = if ok { "ok" } else { "error" };
    metrics::counter!(COMPACTIONS, "result" => result).increment(1);
}

pub(crate) fn tail_cache_bytes(bytes: usize) {
    metrics::gauge!(TAIL_CACHE_BYTES).set(bytes as f64);
}

pub(crate) fn follower_lag(address: &Address, lag: Duration) {
    metrics::gauge!(FOLLOWER_LAG, "stream" => address.to_string()).set(lag.as_secs_f64());
}

pub(crate) fn read_failed() {
    metrics::counter!(READ_ERRORS).increment(1);
}

pub(crate) fn rejected_batch() {
    metrics::counter!(REJECTED_BATCHES).increment(1);
}

pub(crate) fn drain_cut(connections: usize) {
    if connections > 0 {
        metrics::counter!(DRAIN_CUT).increment(connections as u64);
    }
}

pub(crate) fn not_ready(check: &'static str) {
    metrics::counter!(NOT_READY, "check" => check).increment(1);
}

/// Why an SSE response ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Lifetime,
    Drain,
    End,
}

/// One SSE response open, from its first poll to its drop: counts it in [`SSE_OPEN`], and
/// its end in [`SSE_ENDED`] (`client` when it is dropped before it ended).
#[derive(Debug)]
pub(crate) struct SseOpen {
    ended: Option<Ended>,
}

impl SseOpen {
    pub(crate) fn new() -> SseOpen {
        metrics::gauge!(SSE_OPEN).increment(1.0);
        SseOpen { ended: None }
    }

    pub(crate) fn ended(&mut self, why: Ended) {
        self.ended.get_or_insert(why);
    }
}

impl Drop for SseOpen {
    fn drop(&mut self) {
        metrics::gauge!(SSE_OPEN).decrement(1.0);
        let reason = match self.ended {
            Some(Ended::Lifetime) => "lifetime",
            Some(Ended::Drain) => "drain",
            Some(Ended::End) => "end",
            None => "client",
        };
        metrics::counter!(SSE_ENDED, "reason" => reason).increment(1);
    }
}

/// One live reader of a stream, counted in [`STREAM_READERS`] while it lives.
#[derive(Debug)]
pub(crate) struct Reading {
    stream: String,
}

impl Reading {
    pub(crate) fn new(address: &Address) -> Reading {
        let stream = address.to_string();
        metrics::gauge!(STREAM_READERS, "stream" => stream.clone()).increment(1.0);
        Reading { stream }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        metrics::gauge!(STREAM_READERS, "stream" => std::mem::take(&mut self.stream))
            .decrement(1.0);
    }
}
