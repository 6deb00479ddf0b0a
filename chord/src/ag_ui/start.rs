//! AG-UI's runs on the shared run layer ([`crate::runs`]): what the handlers share, a
//! `POST /`'s run started (or joined), and a run's events, each framed as AG-UI events.

use std::sync::Arc;

use axum::response::Response;
use serde::Serialize;

use super::config::AgUi;
use super::events::RunAgentInput;
use super::framing::AgUiFraming;
use crate::live::server::Draining;
use crate::runs::id::EventId;
use crate::runs::serve::{self, NewRun, Runs};
use crate::store::{Address, Store};
use crate::Tracked;

/// What the handlers share.
pub(crate) struct Shared<T: Tracked, S: Store> {
    pub(crate) app: AgUi<T, S>,
    pub(crate) runs: Arc<Runs<S>>,
}

/// A `POST /` with a checked input: starts the run unless it exists, and answers its events.
pub(crate) async fn post<T, S>(
    shared: Arc<Shared<T, S>>,
    input: RunAgentInput,
    state: Option<T>,
    last: Option<EventId>,
    draining: Option<Draining>,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let address = shared.address(&input.thread_id, &input.run_id);
    let (thread_id, run_id) = (input.thread_id.clone(), input.run_id.clone());
    let input = Arc::new(input);
    let init = Arc::clone(&shared.app.init);
    let agent = Arc::clone(&shared.app.agent);
    let for_state = Arc::clone(&input);
    let new = NewRun {
        address,
        thread_id,
        run_id,
        state: Box::new(move || state.unwrap_or_else(|| init(&for_state))),
        agent: Box::new(move |run| agent(&input, run)),
    };
    serve::post::<T, S, AgUiFraming>(Arc::clone(&shared.runs), new, last, draining).await
}

/// The SSE response of a run's events, from its start or after `last`.
pub(crate) async fn events<T, S>(
    shared: Arc<Shared<T, S>>,
    address: Address,
    last: Option<EventId>,
    draining: Option<Draining>,
) -> Response
where
    T: Tracked + Send + 'static,
    S: Store + Send + 'static,
{
    serve::events::<S, AgUiFraming>(
        Arc::clone(&shared.runs),
        address,
        last,
        serve::Ended::Send,
        draining,
    )
    .await
}
