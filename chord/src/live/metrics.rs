//! What the streams layer records through the [`metrics`] facade: the names, and small
//! helpers so that each place records with the same name and labels.
//!
//! The facade, not OpenTelemetry: a library records through it, and the application decides
//! where it goes by installing one recorder (`metrics-exporter-prometheus` serving
//! `/metrics`, a StatsD or OpenTelemetry bridge, a test's in-process recorder). Without a
//! recorder every call is a no-op costing an atomic load, and chord pulls in no exporter,
//! runtime or protocol of its own. The table of names is in the [`streams`](super) docs.
//!
//! [`describe_metrics`] gives every name its help text and unit, once, for exporters that
//! show them (Prometheus's `# HELP`); [`LATENCY_BUCKETS`] are the histogram buckets chord's
//! own server (`chord serve`) gives its exporter.

use std::time::Duration;

use metrics::Unit;

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
/// Requests the streams routes answered, labels `kind` (what was asked, see
/// [`REQUEST_KINDS`]) and `status` (the HTTP status code, e.g. `200`, `401`, `404`)
/// (counter). Counted when the response head is ready, so an SSE response counts when it
/// opens.
pub const REQUESTS: &str = "chord_requests_total";
/// Seconds from a request's arrival at the streams routes to its response head, label
/// `kind` (histogram). For a catch-up read that is the time to read and send its first
/// chunk (the rest follows as the client takes it); for a long-poll, the wait for a record
/// (up to [`Streams::long_poll`](crate::streams::Streams::long_poll)); for an SSE response, the time
/// to open it, not how long it stays open.
pub const REQUEST_SECONDS: &str = "chord_request_seconds";
/// A tracker's whole-value fallback diffs, as [`Tracker::fallbacks`](crate::Tracker::fallbacks)
/// counts them (counter; recorded by the tracker, in every build).
pub const FALLBACKS: &str = "chord_fallbacks_total";

/// The values of the `kind` label of [`REQUESTS`] and [`REQUEST_SECONDS`], a fixed set:
///
/// | kind | request |
/// | --- | --- |
/// | `catch_up` | `GET` without `live` |
/// | `long_poll` | `GET ...&live=long-poll` |
/// | `sse` | `GET ...&live=sse` |
/// | `head` | `HEAD` |
/// | `append` | `POST` |
/// | `create` | `PUT` without `Stream-Forked-From` |
/// | `fork` | `PUT` with `Stream-Forked-From` |
/// | `delete` | `DELETE` |
/// | `options` | `OPTIONS` (a cross-origin preflight, or the methods served) |
/// | `ag_ui_run` | AG-UI: `POST /`, a run started or resumed |
/// | `ag_ui_events` | AG-UI: `GET /runs/{threadId}/{runId}`, a run's events |
/// | `ag_ui_state` | AG-UI: `GET /runs/{threadId}/{runId}/state`, a run's state |
/// | `ai_sdk_chat` | AI SDK: `POST /`, a chat's next run started |
/// | `ai_sdk_stream` | AI SDK: `GET /{chatId}/stream`, a chat's run resumed |
/// | `ai_sdk_state` | AI SDK: `GET /{chatId}/state`, a chat's state |
/// | `other` | any other method, or a `GET` with an unknown `live` mode |
pub const REQUEST_KINDS: &[&str] = &[
    "catch_up",
    "long_poll",
    "sse",
    "head",
    "append",
    "create",
    "fork",
    "delete",
    "options",
    "ag_ui_run",
    "ag_ui_events",
    "ag_ui_state",
    "ai_sdk_chat",
    "ai_sdk_stream",
    "ai_sdk_state",
    "other",
];

/// Histogram buckets, in seconds, for chord's latencies ([`REQUEST_SECONDS`],
/// [`APPEND_SECONDS`]): from a millisecond (a catch-up read from the tail cache, an append
/// to a file) to 30 s (past a long-poll's default wait of 20 s, so that waits show apart
/// from slow answers).
///
/// An exporter that renders histograms with buckets needs them set; for
/// `metrics-exporter-prometheus`, `PrometheusBuilder::new().set_buckets(LATENCY_BUCKETS)`.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Gives every metric chord records its help text and unit, through the [`metrics`] facade's
/// `describe_*` macros: an exporter shows them (Prometheus's `# HELP` line; without it
/// `promtool check metrics` reports "no help text" for each metric).
///
/// Call it once, after installing the recorder (a description goes to the recorder installed
/// when it is made, and is lost without one). Calling it again describes the same names again,
/// which recorders accept. `chord serve` calls it; an application that installs its own
/// recorder calls it too.
///
/// ```
/// use chord::streams::{describe_metrics, metrics::LATENCY_BUCKETS};
/// // With metrics-exporter-prometheus, first:
/// // let handle = PrometheusBuilder::new().set_buckets(LATENCY_BUCKETS)?.install_recorder()?;
/// describe_metrics();
/// // then serve `handle.render()` at `/metrics`, and call `handle.run_upkeep()` every few
/// // seconds (it folds the histograms' samples into their buckets).
/// # assert_eq!(LATENCY_BUCKETS.len(), 14);
/// ```
pub fn describe_metrics() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        APPENDS,
        Unit::Count,
        "Batches appended through a log (a producer's or the write side's)."
    );
    describe_histogram!(
        APPEND_SECONDS,
        Unit::Seconds,
        "Seconds each append through a log took, the store's write included."
    );
    describe_counter!(
        APPEND_BYTES,
        Unit::Bytes,
        "Bytes of the batches appended through a log."
    );
    describe_counter!(
        APPEND_ERRORS,
        Unit::Count,
        "Appends the store refused or failed."
    );
    describe_gauge!(
        STREAM_READERS,
        Unit::Count,
        "Live readers (SSE responses and long-polls) of each stream, by stream."
    );
    describe_gauge!(SSE_OPEN, Unit::Count, "SSE responses open now.");
    describe_counter!(
        SSE_ENDED,
        Unit::Count,
        "SSE responses ended, by reason: lifetime (the server's limit), drain (shutdown), \
         end (the stream closed or went, or a read failed), client (the client went first \
         or its connection was cut)."
    );
    describe_counter!(
        CACHE_MISSES,
        Unit::Count,
        "Reads that fell behind the tail cache and read the store (slow or resuming readers)."
    );
    describe_counter!(
        GONE,
        Unit::Count,
        "410 Gone answers: reads from an offset no longer kept."
    );
    describe_counter!(
        COMPACTIONS,
        Unit::Count,
        "Compactions run, by result (ok, error)."
    );
    describe_gauge!(
        TAIL_CACHE_BYTES,
        Unit::Bytes,
        "Bytes the tail caches of a log hold together."
    );
    describe_gauge!(
        FOLLOWER_LAG,
        Unit::Seconds,
        "Seconds since the follower of each stream last heard from the store; a healthy \
         follower hears at least once a second."
    );
    describe_counter!(READ_ERRORS, Unit::Count, "Store reads that failed.");
    describe_counter!(
        REJECTED_BATCHES,
        Unit::Count,
        "Batches the write side refused as not decodable or not applicable."
    );
    describe_counter!(
        DRAIN_CUT,
        Unit::Count,
        "Connections cut at the drain deadline of a shutdown."
    );
    describe_counter!(
        NOT_READY,
        Unit::Count,
        "Readiness checks that failed, by check (store, follower)."
    );
    describe_counter!(
        FALLBACKS,
        Unit::Count,
        "A tracker's whole-value fallback diffs."
    );
    describe_counter!(
        REQUESTS,
        Unit::Count,
        "Requests the streams routes answered, by kind (catch_up, long_poll, sse, head, \
         append, create, fork, delete, options, other) and HTTP status code; an SSE \
         response counts when it opens."
    );
    describe_histogram!(
        REQUEST_SECONDS,
        Unit::Seconds,
        "Seconds from a request's arrival to its response head, by kind: for a catch-up \
         read its first chunk, for a long-poll the wait for a record, for SSE the time to \
         open the response (not how long it stays open)."
    );
}

/// The status each kind of request answers when it does what was asked, for the zero series
/// of [`register_metrics`] (`other` has none: it is a refusal).
const ANSWERED: &[(&str, &str)] = &[
    ("catch_up", "200"),
    ("long_poll", "200"),
    ("sse", "200"),
    ("head", "200"),
    ("append", "204"),
    ("create", "201"),
    ("fork", "201"),
    ("delete", "204"),
    ("options", "200"),
    ("ag_ui_run", "200"),
    ("ag_ui_events", "200"),
    ("ag_ui_state", "200"),
    ("ai_sdk_chat", "200"),
    ("ai_sdk_stream", "200"),
    ("ai_sdk_state", "200"),
];

/// Records zero in every series whose labels are known before anything happens, so that
/// each family answers from the first scrape: a dashboard's `rate()` has a series to start
/// from, and an `absent()` alert does not fire on a server that has only been idle. The
/// counters and gauges without labels; each `reason` of [`SSE_ENDED`], `result` of
/// [`COMPACTIONS`] and `check` of [`NOT_READY`]; [`REQUEST_SECONDS`] for each of
/// [`REQUEST_KINDS`], and [`REQUESTS`] for each kind with the status it answers when it
/// does what was asked (`200`, `201` for a `create` or `fork`, `204` for an `append` or
/// `delete`). The families labeled by `stream` ([`STREAM_READERS`], [`FOLLOWER_LAG`]) have
/// no series before a stream is read.
///
/// Call it once, after installing the recorder, as [`describe_metrics`]. Calling it again
/// changes nothing (it adds zero, and sets no gauge). `chord serve` calls it.
pub fn register_metrics() {
    for name in [
        APPENDS,
        APPEND_BYTES,
        APPEND_ERRORS,
        CACHE_MISSES,
        GONE,
        READ_ERRORS,
        REJECTED_BATCHES,
        DRAIN_CUT,
        FALLBACKS,
    ] {
        metrics::counter!(name).increment(0);
    }
    for name in [SSE_OPEN, TAIL_CACHE_BYTES] {
        metrics::gauge!(name).increment(0.0);
    }
    let _ = metrics::histogram!(APPEND_SECONDS);
    for reason in ["lifetime", "drain", "end", "client"] {
        metrics::counter!(SSE_ENDED, "reason" => reason).increment(0);
    }
    for result in ["ok", "error"] {
        metrics::counter!(COMPACTIONS, "result" => result).increment(0);
    }
    for check in ["store", "follower"] {
        metrics::counter!(NOT_READY, "check" => check).increment(0);
    }
    for &kind in REQUEST_KINDS {
        let _ = metrics::histogram!(REQUEST_SECONDS, "kind" => kind);
    }
    for &(kind, status) in ANSWERED {
        metrics::counter!(REQUESTS, "kind" => kind, "status" => status).increment(0);
    }
}

/// One request answered: counted by kind and status, its time to the response head in the
/// histogram.
pub(crate) fn answered(kind: &'static str, status: axum::http::StatusCode, took: Duration) {
    metrics::counter!(REQUESTS, "kind" => kind, "status" => status_label(status)).increment(1);
    metrics::histogram!(REQUEST_SECONDS, "kind" => kind).record(took.as_secs_f64());
}

/// The `status` label: the code, without an allocation for the codes chord answers.
fn status_label(status: axum::http::StatusCode) -> metrics::SharedString {
    const CODES: &[&str] = &[
        "200", "201", "204", "206", "304", "400", "401", "403", "404", "405", "408", "409", "410",
        "412", "413", "415", "429", "500", "503", "507",
    ];
    let code = status.as_str();
    match CODES.iter().find(|&&c| c == code) {
        Some(&c) => metrics::SharedString::const_str(c),
        None => metrics::SharedString::from_owned(code.to_owned()),
    }
}

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };

    /// What a recorder is told of a name: its kind, unit and help text.
    type Described = (&'static str, Option<Unit>, String);

    /// A recorder that keeps what it is told of each name.
    #[derive(Default)]
    struct Descriptions(Mutex<BTreeMap<String, Described>>);

    impl Descriptions {
        fn keep(&self, kind: &'static str, key: KeyName, unit: Option<Unit>, help: SharedString) {
            let before = self
                .0
                .lock()
                .unwrap()
                .insert(key.as_str().to_owned(), (kind, unit, help.into_owned()));
            assert!(before.is_none(), "{} described twice", key.as_str());
        }
    }

    impl Recorder for Descriptions {
        fn describe_counter(&self, key: KeyName, unit: Option<Unit>, help: SharedString) {
            self.keep("counter", key, unit, help);
        }
        fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, help: SharedString) {
            self.keep("gauge", key, unit, help);
        }
        fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, help: SharedString) {
            self.keep("histogram", key, unit, help);
        }
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            Counter::noop()
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// Every name this module defines (each `pub const ...: &str = "chord_..."` of its
    /// source), so that a name added without its description fails here.
    fn names() -> Vec<String> {
        include_str!("metrics.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| l.split_once(": &str = \"chord_"))
            .map(|(_, rest)| format!("chord_{}", rest.trim_end_matches("\";")))
            .collect()
    }

    #[test]
    fn every_metric_has_its_help_text_and_unit() {
        let recorder = Descriptions::default();
        metrics::with_local_recorder(&recorder, super::describe_metrics);
        let described = recorder.0.into_inner().unwrap();
        let names = names();
        assert_eq!(names.len(), 19, "{names:?}");
        assert_eq!(
            described.keys().cloned().collect::<Vec<_>>(),
            {
                let mut sorted = names.clone();
                sorted.sort();
                sorted
            },
            "described, and defined"
        );
        for (name, (kind, unit, help)) in &described {
            assert!(help.ends_with('.') && help.len() > 20, "{name}: {help:?}");
            let expected = match name.as_str() {
                n if n.ends_with("_seconds") => Unit::Seconds,
                n if n.ends_with("_bytes") || n.ends_with("_bytes_total") => Unit::Bytes,
                _ => Unit::Count,
            };
            assert_eq!(*unit, Some(expected), "{name}");
            let counter = name.ends_with("_total");
            assert_eq!(*kind == "counter", counter, "{name} is a {kind}");
            if name.ends_with("_seconds") && *kind == "histogram" {
                assert!(
                    name == super::APPEND_SECONDS || name == super::REQUEST_SECONDS,
                    "{name}: a histogram LATENCY_BUCKETS was not chosen for"
                );
            }
        }
    }

    #[test]
    fn latency_buckets_rise() {
        assert!(super::LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        assert!(
            super::LATENCY_BUCKETS.last() > Some(&20.0),
            "past a long-poll's wait"
        );
    }
}
