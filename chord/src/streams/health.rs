//! [`Health`]: the liveness and readiness routes a deployment probes (`/healthz`, `/readyz`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::Log;
use crate::live::log::Source;
use crate::store::Store;

/// The liveness route: `200` while the process answers.
pub const HEALTH_ROUTE: &str = "/healthz";

/// The readiness route: `200` while the store answers and the followers keep up, else `503`.
pub const READY_ROUTE: &str = "/readyz";

/// The default [`Health::max_follower_lag`].
pub(crate) const DEFAULT_MAX_FOLLOWER_LAG: Duration = Duration::from_secs(5);

/// The default [`Health::probe_timeout`].
pub(crate) const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The liveness and readiness routes of a node serving a [`Log`]:
///
/// - [`HEALTH_ROUTE`] (`/healthz`) answers `200` with `{"status":"ok"}` as long as the
///   process answers requests at all: a failing one means restart the process.
/// - [`READY_ROUTE`] (`/readyz`) answers `200` with `{"status":"ready", "checks": ...}` when
///   every check passes, else `503` with `{"status":"not ready", "checks": ...}`, each
///   failed check with `"ok": false` and an `error` saying in words what is not ready:
///   take the node out of the load balancer until it passes again (its readers resume on
///   another node). The checks:
///   - `store`: one read of one record through the [`Store`] (the newest of an address
///     nobody writes, `chord.health/probe`), under the log's store lock, answered within
///     [`probe_timeout`](Health::probe_timeout). A PostgreSQL store sends one indexed query;
///     a file store reads its index in memory (it has nothing to reach). While a probe that
///     timed out is still stuck, later probes fail at once rather than stack up.
///   - `follower` (a store other nodes write to, with live readers):
///     [`Log::follower_lag`], under [`max_follower_lag`](Health::max_follower_lag).
///
/// The body is for whoever can reach the route, so it names no part of the store: a failed
/// probe read is `"the store is unreachable: its probe read failed"`, a slow one `"the store
/// did not answer within N ms"`, a follower `"a follower is behind by N ms ..."`. The store's
/// own error, which for PostgreSQL names its host, user, database and schema, goes to the
/// log instead: a `tracing` event at WARN, target `chord::streams`, for each failed check.
///
/// Both answer `Cache-Control: no-store`. Each failed check counts in
/// `chord_not_ready_total{check}` (see the [metrics](super#operations)).
///
/// ```
/// use chord::store::JsonlStore;
/// use chord::streams::{Health, Log, Streams};
/// # let dir = tempfile::tempdir()?;
/// let log = Log::new(JsonlStore::open(dir.path().join("log.jsonl"), Default::default())?);
/// let app: axum::Router = Streams::new(&log)
///     .router()
///     .merge(Health::new(&log).max_follower_lag(std::time::Duration::from_secs(2)).router());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct Health {
    source: Arc<dyn Source>,
    max_follower_lag: Duration,
    probe_timeout: Duration,
    /// A store probe that outlived its timeout, perhaps still running.
    stuck: Arc<Mutex<Option<JoinHandle<crate::store::Result<()>>>>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("max_follower_lag", &self.max_follower_lag)
            .field("probe_timeout", &self.probe_timeout)
            .finish_non_exhaustive()
    }
}

/// What [`Health::check`] found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Readiness {
    /// Whether every check passed.
    pub ready: bool,
    /// The body `/readyz` answers: `status` and each check's result (each failure in words,
    /// naming no part of the store; see [`Health`]).
    pub body: Value,
}

impl Health {
    /// The routes for `log`, with the defaults: ready while the followers lag at most 5 s
    /// and the store probe answers within 2 s.
    pub fn new<S: Store + Send + 'static>(log: &Log<S>) -> Health {
        Health::of(log.source())
    }

    pub(crate) fn of(source: Arc<dyn Source>) -> Health {
        Health {
            source,
            max_follower_lag: DEFAULT_MAX_FOLLOWER_LAG,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            stuck: Arc::default(),
        }
    }

    /// The longest [`Log::follower_lag`] a ready node may have (default 5 s). A follower hears from the store at least twice a
    /// second while the store answers; keep this well above that.
    pub fn max_follower_lag(mut self, lag: Duration) -> Health {
        self.max_follower_lag = lag;
        self
    }

    /// How long the store probe may take before the node counts as not ready (default 2 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Health {
        self.probe_timeout = timeout;
        self
    }

    /// Runs the readiness checks (what `/readyz` answers), for an application serving them
    /// its own way.
    pub async fn check(&self) -> Readiness {
        let store = self.probe().await;
        let lag = self.source.follower_lag();
        let mut ready = true;
        let store = match store {
            Ok(()) => json!({"ok": true}),
            Err(error) => {
                ready = false;
                crate::live::metrics::not_ready("store");
                json!({"ok": false, "error": error})
            }
        };
        let max_ms = millis(self.max_follower_lag);
        let follower = match lag {
            None => json!({"ok": true, "lag_ms": null, "max_lag_ms": max_ms}),
            Some(lag) if lag <= self.max_follower_lag => {
                json!({"ok": true, "lag_ms": millis(lag), "max_lag_ms": max_ms})
            }
            Some(lag) => {
                ready = false;
                crate::live::metrics::not_ready("follower");
                let lag_ms = millis(lag);
                tracing::warn!(
                    target: "chord::streams",
                    lag_ms,
                    max_lag_ms = max_ms,
                    "not ready: a follower last heard from the store {lag_ms} ms ago"
                );
                json!({
                    "ok": false,
                    "lag_ms": lag_ms,
                    "max_lag_ms": max_ms,
                    "error": format!(
                        "a follower is behind by {lag_ms} ms (at most {max_ms} ms): it last \
                         heard from the store that long ago"
                    ),
                })
            }
        };
        let status = if ready { "ready" } else { "not ready" };
        Readiness {
            ready,
            body: json!({"status": status, "checks": {"store": store, "follower": follower}}),
        }
    }

    /// The store probe: `Err` says in words what failed, for the body; the store's error,
    /// which may name its host, user, database and schema, goes to the log only.
    async fn probe(&self) -> Result<(), String> {
        {
            let mut stuck = self.stuck.lock().unwrap_or_else(PoisonError::into_inner);
            if stuck.as_ref().is_some_and(|probe| !probe.is_finished()) {
                let why = format!(
                    "an earlier probe of the store has not finished, {} ms after it started",
                    millis(self.probe_timeout)
                );
                tracing::warn!(target: "chord::streams", "not ready: {why}");
                return Err(why);
            }
            *stuck = None;
        }
        let source = Arc::clone(&self.source);
        let mut probe = tokio::task::spawn_blocking(move || {
            let _span = tracing::debug_span!("chord.store.probe").entered();
            source.probe()
        });
        let why = match tokio::time::timeout(self.probe_timeout, &mut probe).await {
            Ok(Ok(Ok(()))) => return Ok(()),
            Ok(Ok(Err(e))) => {
                tracing::warn!(
                    target: "chord::streams",
                    error = %chain(&e),
                    "not ready: the store's probe read failed"
                );
                return Err("the store is unreachable: its probe read failed".into());
            }
            Ok(Err(_)) => "the store probe panicked".to_owned(),
            Err(_) => {
                *self.stuck.lock().unwrap_or_else(PoisonError::into_inner) = Some(probe);
                format!(
                    "the store did not answer within {} ms",
                    millis(self.probe_timeout)
                )
            }
        };
        tracing::warn!(target: "chord::streams", "not ready: {why}");
        Err(why)
    }

    /// [`HEALTH_ROUTE`] and [`READY_ROUTE`], to merge into the application's router.
    pub fn router(self) -> Router {
        Router::new()
            .route(HEALTH_ROUTE, get(healthz))
            .route(READY_ROUTE, get(readyz))
            .with_state(Arc::new(self))
            // The doors' headers: the same on every answer, a 405 included.
            .layer(axum::middleware::from_fn(crate::live::headers::common))
    }
}

/// `e` and each of its sources, joined by `: `.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    out
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut r = Response::new(Body::from(format!("{body}\n")));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let readiness = health.check().await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, &readiness.body)
}
