//! [`AgUi`]: the endpoint's configuration, and its router: a run's start, its events and its
//! state, each answered on the live layer (its headers, request metrics, bounds and drain).

use std::sync::Arc;

use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::config::{AgUi, RunRequest, RunRequestKind};
use super::events::{check_id, RunAgentInput};
use super::start::{self, Shared};
use crate::live::server::Draining;
use crate::live::{headers, refusal, requests, Access};
use crate::runs::id::EventId;
use crate::runs::serve::{blocking, json_body, refuse, state_answer, Runs};
use crate::store::{recover, Address, Store};
use crate::Tracked;

impl<T, S> AgUi<T, S>
where
    T: Tracked + Serialize + DeserializeOwned + Send + 'static,
    S: Store + Send + 'static,
{
    /// The router: `POST /`, `GET /runs/{threadId}/{runId}` and
    /// `GET /runs/{threadId}/{runId}/state`, with the headers every chord answer carries
    /// ([`live::headers`](crate::live::headers)) and its requests counted in the request
    /// metrics (kinds `ag_ui_run`, `ag_ui_events`, `ag_ui_state`). Nest it under a prefix
    /// with [`Router::nest`] as needed.
    pub fn router(self) -> Router {
        let runs = Runs::new(
            &self.log,
            self.checkpoint,
            (self.max_runs, self.max_readers),
            (self.lifetime, self.keep_alive),
        );
        let shared = Arc::new(Shared {
            runs: Arc::new(runs),
            app: self,
        });
        let router = Router::new()
            .route("/", post(post_run::<T, S>))
            .route("/runs/{thread}/{run}", get(get_events::<T, S>))
            .route("/runs/{thread}/{run}/state", get(get_state::<T, S>))
            .with_state(shared);
        requests::counted(headers(router), classify)
    }
}

/// The kind of a request to the AG-UI router, as the request metrics name it.
fn classify(request: &Request) -> &'static str {
    let path = request.uri().path();
    match *request.method() {
        Method::POST => "ag_ui_run",
        Method::GET | Method::HEAD if path.ends_with("/state") => "ag_ui_state",
        Method::GET | Method::HEAD if path.contains("/runs/") => "ag_ui_events",
        Method::OPTIONS => "options",
        _ => "other",
    }
}

impl<T: Tracked, S: Store> Shared<T, S> {
    /// The hook's refusal, if it refuses: the streams' answer to a refused request (the live
    /// layer closes the connection after it: the body was not read).
    fn refused(&self, request: &RunRequest<'_>) -> Option<Response> {
        let hook = self.app.authorize.as_ref()?;
        let access = hook(request);
        (access != Access::Allow).then(|| refusal(access))
    }

    /// The address of the run a request for `kind` names, or the answer to one that may not
    /// go on: the hook's refusal, or a `400` for an id that is not one.
    fn run_address(
        &self,
        kind: RunRequestKind,
        thread: &str,
        run: &str,
        parts: &axum::http::request::Parts,
    ) -> Result<Address, Box<Response>> {
        let asked = RunRequest {
            kind,
            run: Some((thread, run)),
            uri: &parts.uri,
            headers: &parts.headers,
        };
        if let Some(refused) = self.refused(&asked) {
            return Err(Box::new(refused));
        }
        check_id("threadId", thread)
            .and_then(|()| check_id("runId", run))
            .map_err(|e| Box::new(refuse(StatusCode::BAD_REQUEST, e)))?;
        Ok(self.address(thread, run))
    }

    /// The address of a run in the log.
    pub(crate) fn address(&self, thread_id: &str, run_id: &str) -> Address {
        Address::new(format!("{}{thread_id}", self.app.namespace), run_id)
    }
}

/// The state a client sent, as the run's state: `None` when it sent none (absent, `null` or
/// `{}`), an error naming the field when it is not a `T`.
fn client_state<T: DeserializeOwned>(state: &Value) -> Result<Option<T>, String> {
    let none = match state {
        Value::Null => true,
        Value::Object(members) => members.is_empty(),
        _ => false,
    };
    if none {
        return Ok(None);
    }
    serde_path_to_error::deserialize(state)
        .map(Some)
        .map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                "the state".to_owned()
            } else {
                format!("`state.{path}`")
            };
            format!(
                "the state does not fit this agent's state: {at}: {}",
                e.inner()
            )
        })
}

async fn post_run<T, S>(State(shared): State<Arc<Shared<T, S>>>, request: Request) -> Response
where
    T: Tracked + Serialize + DeserializeOwned + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, body) = request.into_parts();
    let asked = RunRequest {
        kind: RunRequestKind::Post,
        run: None,
        uri: &parts.uri,
        headers: &parts.headers,
    };
    if let Some(refused) = shared.refused(&asked) {
        return refused;
    }
    let last = match EventId::from_headers(&parts.headers) {
        Ok(last) => last,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let (limit, timeout) = (shared.app.body_limit, shared.app.body_timeout);
    let parsed = match json_body(&parts, body, limit, timeout, "a RunAgentInput").await {
        Ok(value) => serde_json::from_value::<RunAgentInput>(value).map_err(|e| e.to_string()),
        Err(refused) => return refused,
    };
    let input = match parsed {
        Ok(input) => input,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format_args!("not a RunAgentInput: {e}"),
            )
        }
    };
    if let Err(e) = input.check() {
        return refuse(
            StatusCode::BAD_REQUEST,
            format_args!("not a RunAgentInput: {e}"),
        );
    }
    let state = match client_state::<T>(&input.state) {
        Ok(state) => state,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    start::post(shared, input, state, last, draining).await
}

async fn get_events<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath((thread, run)): UrlPath<(String, String)>,
    request: Request,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let address = match shared.run_address(RunRequestKind::Events, &thread, &run, &parts) {
        Ok(address) => address,
        Err(refused) => return *refused,
    };
    let last = match EventId::from_headers(&parts.headers) {
        Ok(last) => last,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
    };
    let draining = parts.extensions.get::<Draining>().cloned();
    start::events(shared, address, last, draining).await
}

async fn get_state<T, S>(
    State(shared): State<Arc<Shared<T, S>>>,
    UrlPath((thread, run)): UrlPath<(String, String)>,
    request: Request,
) -> Response
where
    T: Tracked + Serialize + Send + 'static,
    S: Store + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let address = match shared.run_address(RunRequestKind::State, &thread, &run, &parts) {
        Ok(address) => address,
        Err(refused) => return *refused,
    };
    let log = shared.app.log.clone();
    let found = match blocking(move || recover(&log, &address)).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    match found {
        Ok(Some(envelope)) => state_answer(envelope),
        Ok(None) => refuse(StatusCode::NOT_FOUND, "no such run"),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_state_is_typed_and_a_misfit_names_its_field() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct S {
            plan: Vec<String>,
            n: u32,
        }
        for none in [Value::Null, serde_json::json!({})] {
            assert_eq!(client_state::<S>(&none), Ok(None));
        }
        assert_eq!(
            client_state::<S>(&serde_json::json!({"plan": ["a"], "n": 2})),
            Ok(Some(S {
                plan: vec!["a".into()],
                n: 2
            }))
        );
        let why = client_state::<S>(&serde_json::json!({"plan": ["a", 3], "n": 2})).unwrap_err();
        assert!(why.contains("`state.plan[1]`"), "{why}");
        let why = client_state::<S>(&serde_json::json!({"plan": []})).unwrap_err();
        assert!(why.contains("missing field `n`"), "{why}");
    }
}
