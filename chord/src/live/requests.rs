//! The request metrics: one middleware around every route of a door that tells what a
//! request asks (the door's classifier names its kind), and records its answer's status and its time to the response head
//! ([`metrics::REQUESTS`](super::metrics::REQUESTS),
//! [`metrics::REQUEST_SECONDS`](super::metrics::REQUEST_SECONDS)).
//!
//! One place rather than a line in each handler: every answer is counted, the router's own
//! `405`s, the cross-origin policy's preflights and the answers a handler never sees (a
//! malformed name, a refusal) included, and the labels cannot drift between handlers. The
//! labels are a fixed set (the kinds, the status codes): no stream name, so the number of
//! series stays bounded whatever the number of streams.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;

/// What a door says of each request it is asked: its `kind` label, one of
/// [`REQUEST_KINDS`](super::metrics::REQUEST_KINDS).
pub(crate) type Classify = fn(&Request) -> &'static str;

/// `router` with every request it answers counted under the kind `classify` names.
pub(crate) fn counted<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    classify: Classify,
) -> Router<S> {
    router.layer(middleware::from_fn(move |request: Request, next: Next| {
        record(classify, request, next)
    }))
}

/// Records the request's kind, status and time to its response head.
async fn record(classify: Classify, request: Request, next: Next) -> Response {
    let kind = classify(&request);
    let start = Instant::now();
    let response = next.run(request).await;
    super::metrics::answered(kind, response.status(), start.elapsed());
    response
}
