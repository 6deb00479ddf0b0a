//! `/healthz` and `/readyz` (`streams::Health`): the store cut (its reads failing, or stuck)
//! answers 503 saying what failed in words, none of the store's error (which goes to the log),
//! restored answers 200 again; over PostgreSQL, a schema gone fails the store probe and the
//! follower's lag, and both pass once it is back, the body naming no part of the URL.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use chord::store::{
    Address, CheckedBatch, Compacted, Durability, Error, JsonlStore, LiveSource, Page, ReadOptions,
    Result, Store,
};
use chord::streams::{Health, Log, Streams};
use http_body_util::BodyExt;
use serde_json::{json, Value};

/// What the cut store's error says: none of it may reach a body.
const CUT_PATH: &str = "the test's store";
const CUT_ERROR: &str = "the store is cut";

/// A store whose reads can be cut (they fail) or stuck (they wait until released).
struct Cuttable<S> {
    inner: S,
    switch: Switch,
}

const OK: u8 = 0;
const CUT: u8 = 1;
const STUCK: u8 = 2;

#[derive(Clone, Default)]
struct Switch(Arc<(AtomicU8, Mutex<()>, Condvar)>);

impl Switch {
    fn set(&self, to: u8) {
        let (state, lock, wake) = &*self.0;
        let _held = lock.lock().unwrap();
        state.store(to, Ordering::SeqCst);
        wake.notify_all();
    }

    /// `Err` while cut; waits while stuck.
    fn pass(&self) -> Result<()> {
        let (state, lock, wake) = &*self.0;
        let mut held = lock.lock().unwrap();
        while state.load(Ordering::SeqCst) == STUCK {
            held = wake.wait(held).unwrap();
        }
        if state.load(Ordering::SeqCst) == CUT {
            return Err(Error::Io {
                path: CUT_PATH.into(),
                action: "read",
                source: std::io::Error::other(CUT_ERROR),
            });
        }
        Ok(())
    }
}

impl<S: Store> Store for Cuttable<S> {
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        self.switch.pass()?;
        self.inner.append_checked(address, batch)
    }
    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        self.switch.pass()?;
        self.inner.read_list(address, options)
    }
    fn addresses(&self) -> Result<Vec<Address>> {
        self.switch.pass()?;
        self.inner.addresses()
    }
    fn sync(&mut self) -> Result<Option<u64>> {
        self.inner.sync()
    }
    fn durable_seq(&self) -> Option<u64> {
        self.inner.durable_seq()
    }
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        self.inner.compact(address, keep_bases)
    }
    fn live_source(&self) -> Option<Arc<dyn LiveSource>> {
        self.inner.live_source()
    }
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    let status = response.status();
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_store_and_liveness_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let switch = Switch::default();
    let store = Cuttable {
        inner: JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap(),
        switch: switch.clone(),
    };
    let log = Log::new(store);
    let app = Streams::new(&log).router().merge(
        Health::new(&log)
            .probe_timeout(Duration::from_millis(200))
            .router(),
    );

    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["store"]["ok"], true);
    assert_eq!(body["checks"]["follower"]["lag_ms"], Value::Null);

    // Cut: reads fail.
    switch.set(CUT);
    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "not ready");
    assert_eq!(body["checks"]["store"]["ok"], false);
    let error = body["checks"]["store"]["error"].as_str().unwrap();
    assert_eq!(error, "the store is unreachable: its probe read failed");
    let text = body.to_string();
    for secret in [CUT_PATH, CUT_ERROR] {
        assert!(!text.contains(secret), "{secret:?} in {text}");
    }
    assert_eq!(
        body["checks"]["follower"]["ok"], true,
        "only the store failed"
    );
    let (status, body) = get(&app, "/healthz").await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "ok"})),
        "the process still answers"
    );

    // Restored.
    switch.set(OK);
    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Stuck: the probe times out, and while it is stuck the next fails at once (no probe
    // piles up behind it).
    switch.set(STUCK);
    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let error = body["checks"]["store"]["error"].as_str().unwrap();
    assert!(error.contains("did not answer within 200 ms"), "{error}");
    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let error = body["checks"]["store"]["error"].as_str().unwrap();
    assert!(error.contains("earlier probe"), "{error}");
    switch.set(OK);
    let mut status = StatusCode::SERVICE_UNAVAILABLE;
    for _ in 0..1000 {
        // The stuck probe finishes on its own thread once released.
        (status, _) = get(&app, "/readyz").await;
        if status == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status, StatusCode::OK, "ready again once the store answers");
}

/// Every `tracing` event, as `LEVEL target field=value ...`.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                let _ = write!(self.0, " {}={value:?}", field.name());
            }
        }
        let meta = event.metadata();
        let mut fields = Fields(format!("{} {}", meta.level(), meta.target()));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The store's error goes to the log, at WARN, target `chord::streams`; the body says only
/// that the store is unreachable.
#[test]
fn a_failed_probe_logs_the_stores_error_and_the_body_holds_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let switch = Switch::default();
    let store = Cuttable {
        inner: JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap(),
        switch: switch.clone(),
    };
    let log = Log::new(store);
    let health = Health::new(&log);
    switch.set(CUT);
    // One thread: the check's events reach the subscriber set for it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let capture = Capture::default();
    let warned = |events: &[String]| {
        events
            .iter()
            .find(|e| e.starts_with("WARN chord::streams") && e.contains(CUT_ERROR))
            .cloned()
    };
    let mut warning = None;
    // A few tries: the other tests, on their own threads, may register the event's callsite
    // while this one's subscriber is set, and leave it cached as wanted by nobody; the
    // rebuild clears that.
    for _ in 0..5 {
        let readiness = tracing::subscriber::with_default(capture.clone(), || {
            tracing::callsite::rebuild_interest_cache();
            runtime.block_on(health.check())
        });
        assert!(!readiness.ready);
        let body = readiness.body.to_string();
        for secret in [CUT_PATH, CUT_ERROR] {
            assert!(!body.contains(secret), "{secret:?} in {body}");
        }
        warning = warned(&capture.0.lock().unwrap());
        if warning.is_some() {
            break;
        }
    }
    let events = capture.0.lock().unwrap();
    let warning =
        warning.unwrap_or_else(|| panic!("no warning with the store's error: {events:?}"));
    assert!(warning.contains(CUT_PATH), "{warning}");
}

#[tokio::test]
async fn streams_health_serves_the_same_routes() {
    let dir = tempfile::tempdir().unwrap();
    let log =
        Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap());
    let streams = Streams::new(&log);
    let app = streams.health().merge(streams.router());
    assert_eq!(get(&app, "/healthz").await.0, StatusCode::OK);
    let (status, body) = get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[cfg(feature = "postgres")]
#[path = "support/local.rs"]
mod local;
#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

/// Over PostgreSQL with a live reader (so the log runs a follower): the schema renamed away
/// fails the store probe and, once its lag passes the bound, the follower; renamed back, both
/// pass.
#[cfg(feature = "postgres")]
#[test]
fn over_postgres_a_schema_gone_fails_the_probe_and_the_follower() {
    use chord::store::{Checkpoint, LogWriter, PostgresStore};
    use chord::Op;

    if !pg::available() {
        return;
    }
    let runtime = local::runtime();
    let schema = pg::fresh_schema("readyz");
    let url = pg::schema_url(&schema);
    let lane = Address::new("lanes", "main");
    // Another node writes the lane; this one serves it.
    let writer_store = PostgresStore::open(&url, Durability::EveryAppend).unwrap();
    let mut writer = LogWriter::new(writer_store, Checkpoint::Never);
    writer
        .append(&lane, &[Op::Replace(json!({"n": 0}))])
        .unwrap();
    let log = Log::new(PostgresStore::open(&url, Durability::EveryAppend).unwrap());
    let app = Streams::new(&log).router().merge(
        Health::new(&log)
            .max_follower_lag(Duration::from_millis(300))
            .probe_timeout(Duration::from_secs(5))
            .router(),
    );
    let ready = |app: &Router| runtime.block_on(get(app, "/readyz"));
    // A live reader, held open: the log follows the lane.
    let uri = format!("{}?offset=-1&live=sse", chord::streams::stream_path(&lane));
    let sse = runtime.block_on(async {
        let request = Request::get(&uri).body(Body::empty()).unwrap();
        tower_service::Service::call(&mut app.clone(), request)
            .await
            .unwrap()
    });
    assert_eq!(sse.status(), StatusCode::OK);
    let mut lag = None;
    for _ in 0..2000 {
        lag = log.follower_lag();
        if lag.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(lag.is_some(), "a follower runs");
    let (status, body) = ready(&app);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["checks"]["follower"]["lag_ms"].is_u64(), "{body}");

    let mut admin = pg::client();
    let away = format!("{schema}_away");
    admin
        .batch_execute(&format!("ALTER SCHEMA \"{schema}\" RENAME TO \"{away}\""))
        .unwrap();
    // What the URL names: none of it may reach a body (the store's errors name the schema).
    let (userinfo, rest) = url
        .split_once("://")
        .unwrap()
        .1
        .split_once('@')
        .unwrap_or(("", url.split_once("://").unwrap().1));
    let user = userinfo.split(':').next().unwrap();
    let (host, database) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let database = database.split('?').next().unwrap();
    let named = [user, host, database, schema.as_str(), away.as_str()];
    let mut body = Value::Null;
    for _ in 0..2000 {
        let status;
        (status, body) = ready(&app);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["checks"]["store"]["ok"], false, "{body}");
        let error = body["checks"]["store"]["error"].as_str().unwrap();
        assert_eq!(
            error, "the store is unreachable: its probe read failed",
            "{body}"
        );
        let text = body.to_string();
        for name in named.iter().filter(|n| !n.is_empty()) {
            assert!(!text.contains(name), "{name:?} in {text}");
        }
        if body["checks"]["follower"]["ok"] == false {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("schema away: {body}");
    assert_eq!(body["checks"]["follower"]["ok"], false, "{body}");
    // Over the bound: more than 300 ms, which whole milliseconds may spell 300.
    assert!(body["checks"]["follower"]["lag_ms"].as_u64().unwrap() >= 300);
    let error = body["checks"]["follower"]["error"].as_str().unwrap();
    assert!(error.starts_with("a follower is behind by "), "{error}");

    admin
        .batch_execute(&format!("ALTER SCHEMA \"{away}\" RENAME TO \"{schema}\""))
        .unwrap();
    let mut status = StatusCode::SERVICE_UNAVAILABLE;
    for _ in 0..2000 {
        (status, body) = ready(&app);
        if status == StatusCode::OK {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(status, StatusCode::OK, "ready again: {body}");
    drop(sse);
}
