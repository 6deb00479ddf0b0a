//! The routes of [`Streams`]: one handler per verb on one [`MethodRouter`], every answer through
//! the [`common`](crate::live::headers::common) headers.
//!
//! Which hook guards which request, and why a fork is a read of its source, is told once, in
//! the module docs' "Authorization" section; the handlers below call the hooks in that order,
//! before anything about a stream is looked at and before a body is read.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, MethodRouter};
use axum::Router;
use tower_service::Service;
use tracing::Instrument;

use super::kinds;
use super::names::{check_name, fork_source};
use super::read::{self, load, Reader};
use super::Streams;
use crate::live::cache_control;
use crate::live::headers;
use crate::live::headers::plain;
use crate::live::log::Want;
use crate::live::offset::Start;
use crate::live::requests;
use crate::live::server::Draining;
use crate::live::{refusal, Access};
use crate::store::Address;
use crate::streams::auth::{ReadKind, ReadRequest};
use crate::streams::generic;
use crate::streams::memory::MemoryStream;
use crate::streams::write::{self, StreamKind, WriteKind, WriteRequest};

/// What every route's handlers share: the configuration, and the namespace of a
/// [`namespace_router`](Streams::namespace_router).
#[derive(Clone)]
struct Served {
    streams: Arc<Streams>,
    namespace: Option<Arc<str>>,
}

/// The router of `streams` at `path` (`{namespace}` and `{key}`, or `{key}` alone with a fixed
/// `namespace`).
pub(super) fn router(path: &str, mut streams: Streams, namespace: Option<Arc<str>>) -> Router {
    streams.moving_cache_control = cache_control::capped(&streams.cache_control, streams.keep_for);
    let cors = streams.cors.clone();
    let writes = streams.write_hook.is_some();
    let served = Served {
        streams: Arc::new(streams),
        namespace,
    };
    // `get` serves `HEAD` too unless `head` is routed after it: it is, to its own answer.
    let mut route: MethodRouter<Served> = get(read).head(read).options(options);
    if writes {
        route = route.put(create).post(append).delete(delete);
    }
    let plain = Router::new().route(path, route).with_state(served);
    let mut router = plain.clone();
    if let Some(cors) = cors {
        // The policy answers every `OPTIONS` as a preflight (200, no `Allow`), also one no
        // browser sent; an `OPTIONS` that is not a preflight goes around it, to the methods.
        router =
            router
                .layer(cors)
                .layer(middleware::from_fn(move |request: Request, next: Next| {
                    let mut plain = plain.clone();
                    async move {
                        if request.method() == Method::OPTIONS && !is_preflight(request.headers()) {
                            let ready =
                                poll_fn(|cx| Service::<Request>::poll_ready(&mut plain, cx));
                            match ready.await {
                                Ok(()) => plain.call(request).await.unwrap_or_else(|e| match e {}),
                                Err(e) => match e {},
                            }
                        } else {
                            next.run(request).await
                        }
                    }
                }));
    }
    // Outermost: the cross-origin policy's own answers get the headers too, and every answer
    // is counted.
    requests::counted(headers(router), kinds::classify)
}

/// Whether a request is a CORS preflight: an `OPTIONS` from a page (`Origin`) asking for a
/// method (`Access-Control-Request-Method`), as the Fetch standard defines one.
fn is_preflight(headers: &HeaderMap) -> bool {
    headers.contains_key(header::ORIGIN)
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The stream a request names, with what its handlers read of the request line and headers.
struct Target {
    address: Address,
    uri: Uri,
    headers: HeaderMap,
    query: HashMap<String, String>,
    /// The server's drain signal, when a [`Server`](crate::streams::Server) serves the request.
    draining: Option<Draining>,
    /// The span of the request's handling (its response's body, an SSE stream, is polled
    /// outside it).
    span: tracing::Span,
}

impl FromRequestParts<Served> for Target {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, served: &Served) -> Result<Target, Response> {
        let malformed = || plain(StatusCode::BAD_REQUEST, "malformed stream address\n");
        let Path(mut names) = Path::<HashMap<String, String>>::from_request_parts(parts, served)
            .await
            .map_err(|_| malformed())?;
        let key = names.remove("key").ok_or_else(malformed)?;
        let namespace = match &served.namespace {
            Some(namespace) => namespace.to_string(),
            None => names.remove("namespace").ok_or_else(malformed)?,
        };
        check_name(&namespace)
            .and_then(|()| check_name(&key))
            .map_err(|why| plain(StatusCode::BAD_REQUEST, why))?;
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|e| plain(StatusCode::BAD_REQUEST, format!("malformed query: {e}\n")))?;
        let query = single_parameters(pairs).map_err(|name| {
            plain(
                StatusCode::BAD_REQUEST,
                format!("multiple {name} parameters not allowed\n"),
            )
        })?;
        let span = tracing::debug_span!(
            "chord.request",
            method = %parts.method,
            namespace = %namespace,
            key = %key
        );
        Ok(Target {
            address: Address::new(namespace, key),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
            query,
            draining: parts.extensions.get::<Draining>().cloned(),
            span,
        })
    }
}

/// The parameters the protocol reads, each of which a request may give once: a second
/// `offset` would leave the server and a cache in front of it reading different offsets from
/// one URL (the reference server refuses it too).
const SINGLE_PARAMETERS: [&str; 3] = ["offset", "live", "cursor"];

/// The query's parameters by name; `Err` names a protocol parameter given more than once.
fn single_parameters(pairs: Vec<(String, String)>) -> Result<HashMap<String, String>, String> {
    let mut query = HashMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        if SINGLE_PARAMETERS.contains(&name.as_str()) && query.contains_key(&name) {
            return Err(name);
        }
        query.insert(name, value);
    }
    Ok(query)
}

/// The read hook's refusal of `read` of `address` by the request `target`, if it refuses.
fn refused_read(
    streams: &Streams,
    read: ReadKind,
    address: &Address,
    target: &Target,
) -> Option<Response> {
    let authorize = streams.read_hook.as_ref()?;
    let access = authorize(&ReadRequest {
        read,
        address,
        uri: &target.uri,
        headers: &target.headers,
    });
    (access != Access::Allow).then(|| {
        let mut refused = refusal(access);
        vary_on_credentials(&mut refused);
        refused
    })
}

/// Marks an answer that depends on the read hook's verdict: a shared cache that stores it
/// keys it by the credential's usual carriers too, so that it never gives one reader's answer
/// to a request without that credential (one in the query is in the URL, the key already).
fn vary_on_credentials(response: &mut Response) {
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static(AUTHORIZED_VARY));
}

/// `OPTIONS` without a cross-origin preflight (the policy answers those): the methods served.
async fn options(State(served): State<Served>) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r.headers_mut()
        .insert(header::ALLOW, served.streams.allow());
    r
}

/// `GET` and `HEAD`.
async fn read(State(served): State<Served>, method: Method, target: Target) -> Response {
    let span = target.span.clone();
    let authorized = served.streams.read_hook.is_some();
    let mut response = serve_read(served.streams, method == Method::HEAD, target)
        .instrument(span)
        .await;
    // Whatever the cache policy (a refusal has it already).
    if authorized && !response.headers().contains_key(header::VARY) {
        vary_on_credentials(&mut response);
    }
    response
}

/// The `Vary` of every read once a read hook guards them.
const AUTHORIZED_VARY: &str = "authorization, cookie";

async fn serve_read(streams: Arc<Streams>, head: bool, target: Target) -> Response {
    let query = &target.query;
    let kind = if head {
        ReadKind::Head
    } else {
        match query.get("live").map(String::as_str) {
            None => ReadKind::CatchUp,
            Some("long-poll") => ReadKind::LongPoll,
            Some("sse") => ReadKind::Sse,
            Some(other) => return unknown_live(other),
        }
    };
    // Before the stream is looked up: a refused reader learns nothing of it.
    if let Some(refusal) = refused_read(&streams, kind, &target.address, &target) {
        return refusal;
    }
    if let Some(stream) = streams
        .backend
        .as_ref()
        .and_then(|b| b.get(&target.address))
    {
        return read_generic(&streams, stream, head, &target).await;
    }
    // What the read wants of the tail cache (the offset's errors are answered below, after
    // a missing stream's 404).
    let want = Want {
        live: !head && query.contains_key("live"),
        after: match Start::parse(query.get("offset").map(String::as_str)) {
            Ok(Start::At(offset) | Start::Base(offset)) => Some(offset.seq()),
            _ => None,
        },
    };
    let tail = match load(&streams, &target.address, want).await {
        Ok(Some(tail)) => tail,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "no such stream\n"),
        Err(response) => return *response,
    };
    if head {
        return read::head(&tail);
    }
    let start = match Start::parse(query.get("offset").map(String::as_str)) {
        Ok(start) => start,
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("{e}\n")),
    };
    // A cursor is only a cache key: an unknown one is no error.
    let cursor = query.get("cursor").and_then(|c| c.parse::<u64>().ok());
    let live = query.get("live").cloned();
    let has_offset = query.contains_key("offset");
    let reader = Reader {
        streams: Arc::clone(&streams),
        address: target.address,
        tail,
        draining: target.draining,
    };
    match live.as_deref() {
        None => reader.catch_up(start, &target.headers).await,
        Some("long-poll") if !has_offset => {
            plain(StatusCode::BAD_REQUEST, "live=long-poll needs an offset\n")
        }
        Some("long-poll") => reader.long_poll(start, cursor).await,
        Some("sse") => reader.sse(start, cursor).await,
        Some(other) => unknown_live(other),
    }
}

fn unknown_live(mode: &str) -> Response {
    plain(
        StatusCode::BAD_REQUEST,
        format!("unknown live mode {mode:?}: expected long-poll or sse\n"),
    )
}

/// A read of a stream the backend holds.
async fn read_generic(
    streams: &Streams,
    stream: Arc<MemoryStream>,
    head: bool,
    target: &Target,
) -> Response {
    if stream.lock().deleted {
        return generic::gone();
    }
    if head {
        return generic::head(&stream);
    }
    let query = &target.query;
    let start = match Start::parse(query.get("offset").map(String::as_str)) {
        Ok(start) => start,
        Err(e) => return plain(StatusCode::BAD_REQUEST, format!("{e}\n")),
    };
    let live = query.get("live").map(String::as_str);
    if live.is_some() && !query.contains_key("offset") {
        return plain(StatusCode::BAD_REQUEST, "live reads need an offset\n");
    }
    let cursor = query.get("cursor").and_then(|c| c.parse::<u64>().ok());
    let get = generic::Get {
        start,
        live,
        cursor,
        headers: &target.headers,
        cache_control: &streams.cache_control,
        long_poll: streams.long_poll,
        sse: streams.sse_timing(target.draining.clone()),
    };
    generic::get(stream, get).await
}

/// `PUT`.
async fn create(State(served): State<Served>, target: Target, body: Body) -> Response {
    let span = target.span.clone();
    serve_write(served.streams, WriteKind::Create, target, body)
        .instrument(span)
        .await
}

/// `POST`.
async fn append(State(served): State<Served>, target: Target, body: Body) -> Response {
    let span = target.span.clone();
    serve_write(served.streams, WriteKind::Append, target, body)
        .instrument(span)
        .await
}

/// `DELETE`.
async fn delete(State(served): State<Served>, target: Target, body: Body) -> Response {
    let span = target.span.clone();
    serve_write(served.streams, WriteKind::Delete, target, body)
        .instrument(span)
        .await
}

async fn serve_write(
    streams: Arc<Streams>,
    write: WriteKind,
    target: Target,
    body: Body,
) -> Response {
    let (address, headers, uri) = (&target.address, &target.headers, &target.uri);
    // Routed only with a write hook.
    let Some(authorize) = &streams.write_hook else {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "the write side is off\n");
        r.headers_mut().insert(header::ALLOW, streams.allow());
        return r;
    };
    // Authorized from the request line and headers alone: a refused request's body is never
    // read (and its connection closes after the answer).
    let access = authorize(&WriteRequest {
        write,
        address,
        uri,
        headers,
    });
    if access != Access::Allow {
        return refusal(access);
    }
    // A fork reads its source: the read hook decides on the source before anything about it
    // is looked at, whether it exists included.
    let fork = match (write, headers.get("stream-forked-from")) {
        (WriteKind::Create, Some(from)) => {
            let from = from
                .to_str()
                .ok()
                .and_then(|f| fork_source(uri.path(), address, f));
            let Some(from) = from else {
                return plain(StatusCode::BAD_REQUEST, "malformed Stream-Forked-From\n");
            };
            if let Some(refusal) = refused_read(&streams, ReadKind::Fork, &from, &target) {
                return refusal;
            }
            Some(from)
        }
        _ => None,
    };
    let body = match write::read_body(&streams.bodies, headers, body).await {
        Ok(body) => body,
        Err(why) => return why.response(),
    };
    let tail = match load(&streams, address, Want::default()).await {
        Ok(tail) => tail,
        Err(response) => return *response,
    };
    let asked = match write::asked_kind(headers) {
        Ok(asked) => asked,
        Err(why) => return plain(StatusCode::BAD_REQUEST, why),
    };
    if let Some(backend) = &streams.backend {
        let found = backend.get(address);
        let deleted = found.as_ref().is_some_and(|s| s.lock().deleted);
        // A new stream is a chord log when the `PUT` says so, or says nothing and sends a
        // base batch; any other is a protocol stream.
        let log_here = tail.is_some()
            || (found.is_none()
                && write == WriteKind::Create
                && fork.is_none()
                && asked.unwrap_or_else(|| write::kind_of(headers, &body)) == StreamKind::Log);
        if !log_here {
            if let Some(from) = fork.as_ref().filter(|from| backend.get(from).is_none()) {
                if let Ok(Some(_)) = load(&streams, from, Want::default()).await {
                    return not_forked();
                }
            }
            if write == WriteKind::Create && asked == Some(StreamKind::Log) {
                return plain(
                    StatusCode::CONFLICT,
                    "a protocol stream is at this address, not a chord log\n",
                );
            }
            return match (write, found) {
                (WriteKind::Create, _) => generic::create(
                    &**backend,
                    address,
                    fork.map(Some),
                    &location(uri, headers),
                    headers,
                    &body,
                ),
                (WriteKind::Append | WriteKind::Delete, Some(_)) if deleted => generic::gone(),
                (WriteKind::Append, Some(s)) => {
                    generic::append(&**backend, address, &s, headers, &body)
                }
                (WriteKind::Delete, _) => generic::delete(&**backend, address),
                (WriteKind::Append, None) => plain(StatusCode::NOT_FOUND, write::NO_SUCH_STREAM),
            };
        }
    } else if write == WriteKind::Create
        && tail.is_none()
        && (asked == Some(StreamKind::Stream) || (asked.is_none() && !write::is_json(headers)))
    {
        // Asked for a protocol stream, by name or by a content type a chord log never has.
        return plain(
            StatusCode::NOT_IMPLEMENTED,
            "this server keeps chord logs only: a protocol stream (Chord-Kind: stream) needs a \
             backend (Streams::backend; `chord serve` keeps them with --write-token-file)\n",
        );
    }
    if write == WriteKind::Create && asked == Some(StreamKind::Stream) {
        return plain(
            StatusCode::CONFLICT,
            "a chord log is at this address, not a protocol stream\n",
        );
    }
    if fork.is_some() {
        return not_forked();
    }
    let source = Arc::clone(&streams.source);
    write::handle(source, tail, write, address, headers, body).await
}

/// The answer to a fork of a chord log: only protocol streams fork, a chord log has one
/// writer, its producer.
fn not_forked() -> Response {
    plain(
        StatusCode::NOT_IMPLEMENTED,
        "a chord log is not forked (it has one writer, its producer): only protocol streams \
         are\n",
    )
}

/// The absolute URL of a request (for `Location`): `http://` and its `Host`, or else its path.
fn location(uri: &Uri, headers: &HeaderMap) -> String {
    match headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
        Some(host) => format!("http://{host}{}", uri.path()),
        None => uri.path().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::{stream_path, Log};
    use std::time::Duration;

    /// A status and body from `app`.
    async fn call(app: &Router, method: Method, uri: &str, fork: Option<&str>) -> (u16, String) {
        use http_body_util::BodyExt;
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header(header::CONTENT_TYPE, "text/plain");
        if let Some(from) = fork {
            request = request.header("stream-forked-from", from);
        }
        let request = request.body(Body::from("x")).unwrap();
        let response = tower_service::Service::call(&mut app.clone(), request)
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Streams over an empty log, with protocol streams in memory and every write allowed.
    fn memory_streams() -> (tempfile::TempDir, Streams) {
        let dir = tempfile::tempdir().unwrap();
        let store =
            crate::store::JsonlStore::open(dir.path().join("log.jsonl"), Default::default())
                .unwrap();
        let streams = Streams::new(&Log::new(store))
            .backend(crate::streams::Memory::new())
            .writes(|_| true);
        (dir, streams)
    }

    #[tokio::test]
    async fn a_memory_stream_is_read_over_the_same_sse_body_as_a_log() {
        let (_dir, streams) = memory_streams();
        let app = streams
            .keep_alive(Duration::from_millis(40))
            .sse_lifetime(Duration::from_millis(300))
            .router();
        assert_eq!(call(&app, Method::PUT, "/streams/ns/s", None).await.0, 201);
        let (status, body) =
            call(&app, Method::GET, "/streams/ns/s?offset=-1&live=sse", None).await;
        assert_eq!(status, 200);
        let data = "event: data\ndata:x\n\n";
        assert!(body.starts_with(data), "{body}");
        let control = body[data.len()..].split("\n\n").next().unwrap();
        assert!(
            control.starts_with("event: control\ndata:{\"streamNextOffset\":\"0000000000000001\""),
            "{body}"
        );
        // Keep-alives are sent (how many fit in the lifetime depends on the scheduler).
        assert!(body.contains(": keep-alive\n\n"), "{body:?}");
    }

    #[tokio::test]
    async fn a_plus_in_a_name_is_a_plus_in_the_path_and_in_a_fork_source() {
        let (_dir, streams) = memory_streams();
        let app = streams.router();
        let source = stream_path(&Address::new("ns", "a+b"));
        assert_eq!(source, "/streams/ns/a%2Bb");
        assert_eq!(call(&app, Method::PUT, &source, None).await.0, 201);
        // The literal `+` in the request path names the same stream as `%2B`.
        assert_eq!(
            call(&app, Method::GET, "/streams/ns/a+b", None).await,
            (200, "x".into())
        );
        for from in ["/streams/ns/a+b", "/streams/ns/a%2Bb", "/streams/ns/fork-0"] {
            let at = format!("/streams/ns/fork-{}", from.len());
            let (status, _) = call(&app, Method::PUT, &at, Some(from)).await;
            let expected = if from.ends_with("fork-0") { 404 } else { 201 };
            assert_eq!(status, expected, "forked from {from}");
        }
        for bad in ["/streams/ns/a%2", "/streams/ns/%FF", "/streams/ns/a%zzb"] {
            assert_eq!(
                call(&app, Method::PUT, "/streams/ns/bad", Some(bad)).await,
                (400, "malformed Stream-Forked-From\n".into()),
                "forked from {bad}"
            );
        }
    }
}
