//! The metrics the streams layer and the tracker record (`chord::streams::metrics`), read
//! through an in-process recorder (metrics-util's `DebuggingRecorder`) installed for this
//! test binary: each moves by exactly what was done; and the `tracing` spans, seen by a
//! subscriber counting them. One test, so that nothing else in the process records meanwhile.

#[path = "support/local.rs"]
mod local;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chord::replica::Replica;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store};
use chord::streams::metrics as m;
use chord::streams::{self, LogBuilder, Offset, Server, Streams};
use chord::{path, track, Op, Tracked};
use http_body_util::BodyExt;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PATIENCE: Duration = Duration::from_secs(60);

/// What the recorder holds, summed over its snapshots (a snapshot takes counters, gauges and
/// histograms and resets them, so increments add up here), with each set-gauge's last value.
struct Seen {
    snapshotter: Snapshotter,
    sums: HashMap<(String, Vec<(String, String)>), f64>,
    last: HashMap<(String, Vec<(String, String)>), f64>,
    samples: HashMap<String, usize>,
}

impl Seen {
    fn take(&mut self) {
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (_, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let id = (key.name().to_owned(), labels);
            match value {
                DebugValue::Counter(n) => *self.sums.entry(id).or_default() += n as f64,
                DebugValue::Gauge(g) => {
                    *self.sums.entry(id.clone()).or_default() += g.into_inner();
                    self.last.insert(id, g.into_inner());
                }
                DebugValue::Histogram(values) => {
                    *self.samples.entry(id.0).or_default() += values.len();
                }
            }
        }
    }

    /// A counter's total, or an incremented gauge's value now.
    fn sum(&mut self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.take();
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.sums
            .get(&(name.to_owned(), labels))
            .copied()
            .unwrap_or(0.0)
    }

    /// The value a gauge was last set to.
    fn last(&mut self, name: &str) -> f64 {
        self.take();
        self.last
            .get(&(name.to_owned(), Vec::new()))
            .copied()
            .unwrap_or(0.0)
    }

    /// How many values a histogram recorded.
    fn samples(&mut self, name: &str) -> usize {
        self.take();
        self.samples.get(name).copied().unwrap_or(0)
    }

    async fn wait(&mut self, what: &str, name: &str, labels: &[(&str, &str)], value: f64) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while self.sum(name, labels) != value {
            assert!(
                tokio::time::Instant::now() < deadline,
                "gave up waiting for {what}: {name} {labels:?} is {}",
                self.sum(name, labels)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// A `tracing` subscriber that counts the spans opened, by name.
#[derive(Clone, Default)]
struct Spans(Arc<(Mutex<HashMap<&'static str, usize>>, AtomicU64)>);

impl Spans {
    fn count(&self, name: &str) -> usize {
        self.0 .0.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

impl tracing::Subscriber for Spans {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        *self
            .0
             .0
            .lock()
            .unwrap()
            .entry(span.metadata().name())
            .or_default() += 1;
        tracing::span::Id::from_u64(self.0 .1.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Agent {
    log: VecDeque<String>,
}

/// A helper written for a plain `VecDeque`: each call through the proxy's `&mut` makes the
/// tracker fall back to a whole-value diff of the field.
fn log_plain(buf: &mut VecDeque<String>, line: &str) {
    buf.push_back(line.to_owned());
}

#[test]
fn each_metric_moves_by_what_was_done() {
    let recorder = DebuggingRecorder::new();
    let mut seen = Seen {
        snapshotter: recorder.snapshotter(),
        sums: HashMap::new(),
        last: HashMap::new(),
        samples: HashMap::new(),
    };
    recorder.install().unwrap();
    let spans = Spans::default();
    tracing::subscriber::set_global_default(spans.clone()).unwrap();
    let runtime = local::runtime();

    // Appends: a base (compacted at once, the log's first base) and 20 deltas.
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    // No time floor: the log compacts at its first base, as retention alone says.
    let log = LogBuilder::new()
        .tail_records(4)
        .keep_for(Duration::ZERO)
        .build(store);
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "main");
    let stream = lane.to_string();
    writer
        .append(&lane, &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    for n in 0..20 {
        let ops = [Op::Append(path!["text"], format!("piece {n} "))];
        writer.append(&lane, &ops).unwrap();
    }
    let stored = log.read_list(&lane, &ReadOptions::asc()).unwrap().records;
    assert_eq!(stored.len(), 21);
    let bytes: usize = stored.iter().map(|r| r.batch.len()).sum();
    assert_eq!(seen.sum(m::APPENDS, &[]), 21.0);
    assert_eq!(seen.sum(m::APPEND_BYTES, &[]), bytes as f64);
    assert_eq!(seen.samples(m::APPEND_SECONDS), 21);
    assert_eq!(seen.sum(m::COMPACTIONS, &[("result", "ok")]), 1.0);
    log.compact(&lane).unwrap();
    assert_eq!(seen.sum(m::COMPACTIONS, &[("result", "ok")]), 2.0);
    assert_eq!(spans.count("chord.store.append"), 21, "a span per append");

    // The tracker's fallbacks, as many as it counts itself.
    let mut agent = track(Agent::default());
    agent.flush().unwrap();
    for i in 0..7 {
        log_plain(&mut agent.state().log, &format!("line {i}"));
        agent.flush().unwrap();
    }
    assert_eq!(agent.fallbacks().diffs(), 7);
    assert_eq!(seen.sum(m::FALLBACKS, &[]), 7.0);

    let app = Streams::new(&log)
        .keep_alive(Duration::from_millis(20))
        .writes(|_| true)
        .router();
    let path = streams::stream_path(&lane);
    runtime.block_on(async {
        let call = |request: Request<Body>| {
            let mut app = app.clone();
            async move {
                let r = tower_service::Service::call(&mut app, request)
                    .await
                    .unwrap();
                let status = r.status();
                let _ = r.into_body().collect().await.unwrap();
                status
            }
        };
        // A catch-up from the start: the tail cache holds 4 records, so it reads the store.
        let status = call(
            Request::get(format!("{path}?offset=-1"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(seen.sum(m::CACHE_MISSES, &[]) >= 1.0);
        assert_eq!(spans.count("chord.request"), 1, "a span per request");
        assert_eq!(spans.count("chord.store.tail"), 1, "the tail loaded once");
        assert!(spans.count("chord.store.read") >= 1, "the store read");
        // The read loaded the lane's tail cache; an append feeds it, and the gauge follows.
        writer
            .append(&lane, &[Op::Append(path!["text"], "more".into())])
            .unwrap();
        assert!(log.cached_bytes() > 0);
        assert_eq!(seen.last(m::TAIL_CACHE_BYTES), log.cached_bytes() as f64);
        // Beyond the tail: 410.
        let beyond = Offset::from_seq(stored.last().unwrap().seq + 1000);
        let status = call(
            Request::get(format!("{path}?offset={beyond}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::GONE);
        assert_eq!(seen.sum(m::GONE, &[]), 1.0);
        // A batch that does not decode: refused.
        let status = call(
            Request::post(&path)
                .header("content-type", "application/json")
                .body(Body::from(r#"[["no such op", 1]]"#))
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(seen.sum(m::REJECTED_BATCHES, &[]), 1.0);
        // Each of the three requests counted under its kind and status, and timed.
        let requests = |kind, status| [("kind", kind), ("status", status)];
        assert_eq!(seen.sum(m::REQUESTS, &requests("catch_up", "200")), 1.0);
        assert_eq!(seen.sum(m::REQUESTS, &requests("catch_up", "410")), 1.0);
        assert_eq!(seen.sum(m::REQUESTS, &requests("append", "400")), 1.0);
        assert_eq!(seen.samples(m::REQUEST_SECONDS), 3);

        // Live readers over HTTP: two replicas.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(Server::new().drain(Duration::from_millis(300)).serve(
            listener,
            app.clone(),
            async move {
                let _ = stopped.await;
            },
        ));
        let url = format!("http://{addr}{path}");
        let first = Replica::connect(&url).unwrap();
        let second = Replica::connect(&url).unwrap();
        seen.wait("two SSE responses", m::SSE_OPEN, &[], 2.0).await;
        assert_eq!(seen.sum(m::STREAM_READERS, &[("stream", &stream)]), 2.0);
        // One goes: the server counts its response ended by the client.
        drop(first);
        seen.wait("the first replica gone", m::SSE_OPEN, &[], 1.0)
            .await;
        assert_eq!(seen.sum(m::SSE_ENDED, &[("reason", "client")]), 1.0);
        assert_eq!(seen.sum(m::STREAM_READERS, &[("stream", &stream)]), 1.0);

        // A client that reads only the head of its catch-up, then the drain: the SSE
        // response ends by the drain, the stalled catch-up is cut at the deadline. The lane
        // is made large enough first that its catch-up outlasts the send buffers.
        for n in 0..200 {
            let piece: String = std::iter::repeat_n('x', 5000).collect();
            let ops = [Op::Append(path!["text"], format!("{n}{piece}"))];
            writer.append(&lane, &ops).unwrap();
        }
        let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path}?offset=-1 HTTP/1.1\r\nhost: x\r\n\r\n");
        stalled.write_all(request.as_bytes()).await.unwrap();
        let mut head = [0u8; 12];
        stalled.read_exact(&mut head).await.unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
        let _ = stop.send(());
        tokio::time::timeout(PATIENCE, server)
            .await
            .expect("the drain ended")
            .unwrap()
            .unwrap();
        assert_eq!(seen.sum(m::SSE_ENDED, &[("reason", "drain")]), 1.0);
        assert_eq!(seen.sum(m::DRAIN_CUT, &[]), 1.0);
        seen.wait("no SSE response open", m::SSE_OPEN, &[], 0.0)
            .await;
        assert_eq!(seen.sum(m::STREAM_READERS, &[("stream", &stream)]), 0.0);
        drop(second);
    });
}
