//! The tail caches of a log, all of them together, stay within their bound however many
//! addresses are read, measured both by the caches' own accounting
//! ([`Log::cached_bytes`]) and by a counting global allocator (its own test binary, as a
//! global allocator applies to the whole binary).

#[path = "support/counting.rs"]
mod counting;

use std::sync::atomic::Ordering::Relaxed;

use counting::LIVE;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chord::store::{Address, JsonlStore, Store, BASE};
use chord::streams::{Log, LogBuilder, Streams};

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// Addresses in the log, each with `RECORDS` records of about `RECORD` bytes.
const ADDRESSES: usize = 60;
const RECORDS: usize = 32;
const RECORD: usize = 8 << 10;
/// The bound on all the caches together: an eighth of what the addresses hold.
const BOUND: usize = 2 << 20;

fn address(i: usize) -> Address {
    Address::new("many", format!("a{i}"))
}

/// `HEAD` of `address(i)`: loads its tail cache, as every read does.
async fn head(app: &axum::Router, i: usize) {
    let request = Request::builder()
        .method(Method::HEAD)
        .uri(format!("/streams/many/a{i}"))
        .body(Body::empty())
        .unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "HEAD a{i}");
}

/// Reads every address once, in order, through `log`'s router. The largest growth of the
/// live heap after a read (the response dropped) and the largest [`Log::cached_bytes`].
async fn read_all<S: Store + Send + 'static>(log: &Log<S>) -> (usize, usize) {
    let app = Streams::new(log).router();
    let before = LIVE.load(Relaxed);
    let (mut heap, mut cached) = (0, 0);
    for i in 0..ADDRESSES {
        head(&app, i).await;
        heap = heap.max(LIVE.load(Relaxed).saturating_sub(before));
        cached = cached.max(log.cached_bytes());
    }
    (heap, cached)
}

#[test]
fn every_cache_together_stays_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let mut store = JsonlStore::open(&path, Default::default()).unwrap();
    let base = format!(r#"[["r",{{"s":"{}"}}]]"#, "x".repeat(RECORD));
    let change = format!(r#"[["s",["s"],"{}"]]"#, "y".repeat(RECORD));
    for i in 0..ADDRESSES {
        store.append(&address(i), &base, Some(BASE)).unwrap();
        for _ in 1..RECORDS {
            store.append(&address(i), &change, None).unwrap();
        }
    }
    drop(store);
    let held = ADDRESSES * RECORDS * RECORD;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Unbounded in effect (the default bound is above what the addresses hold): what the
        // caches pin without a bound, and a check that the counting sees them.
        let store = JsonlStore::open(&path, Default::default()).unwrap();
        let (free_heap, free_cached) = read_all(&LogBuilder::new().build(store)).await;
        println!(
            "default bound: heap +{free_heap} B, cached {free_cached} B (addresses hold {held} B)"
        );
        assert!(free_cached >= held, "{free_cached} < {held}");
        assert!(free_heap >= held, "{free_heap} < {held}");

        let store = JsonlStore::open(&path, Default::default()).unwrap();
        let log = LogBuilder::new().tail_cache_bytes(BOUND).build(store);
        let (heap, cached) = read_all(&log).await;
        println!("bound {BOUND} B: heap +{heap} B, cached {cached} B");
        assert!(cached <= BOUND, "cached {cached} > {BOUND}");
        // The caches' accounting is what the heap holds, within an eighth, and the heap
        // beside them (the router, the store's handles) is small.
        assert!(heap <= BOUND + BOUND / 8, "heap +{heap} > {BOUND} + 1/8");
        assert!(
            cached >= BOUND - 2 * RECORDS * RECORD,
            "the caches were used: {cached}"
        );
    });
}
