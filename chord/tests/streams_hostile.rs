//! The router against hostile requests: numbers out of range in headers and the query answer
//! 400 naming them (never a panic), a refused writer is answered before a byte of its body is
//! read, and an authorized body that is too large, stalls, or finds no room in the server's
//! body budget answers 413, 408 or 503. Called in process, and over a real socket where the
//! connection itself is the point (a stalled body, a refused writer that sends nothing).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter};
use chord::streams::{serve, Log, Memory, Streams, MAX_TTL};
use chord::Op;
use http_body_util::BodyExt;
use proptest::prelude::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest any test waits for an answer: a request the server never answers fails the
/// test rather than hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

struct Fixture {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        Fixture {
            _dir: dir,
            log: Log::new(store),
        }
    }

    /// Streams with the memory backend and the write side on for `Bearer ok`.
    fn streams(&self) -> Streams {
        Streams::new(&self.log)
            .long_poll(Duration::from_millis(20))
            .writes(|r| {
                r.headers
                    .get("authorization")
                    .is_some_and(|v| v == "Bearer ok")
            })
            .backend(Memory::new())
    }
}

const AUTH: (&str, &str) = ("authorization", "Bearer ok");
const TEXT: (&str, &str) = ("content-type", "text/plain");

/// A status and body text from `app`, or a failure if no answer comes within [`PATIENCE`].
async fn send(app: &Router, request: Request<Body>) -> (StatusCode, String) {
    let mut app = app.clone();
    let answer = async move {
        let response = tower_service::Service::call(&mut app, request)
            .await
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    tokio::time::timeout(PATIENCE, answer)
        .await
        .expect("the router answers")
}

async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    send(app, request.body(Body::from(body.to_owned())).unwrap()).await
}

#[tokio::test]
async fn a_stream_ttl_out_of_range_is_400_naming_it_and_the_maximum_is_served() {
    let f = Fixture::new();
    let app = f.streams().router();
    let max = MAX_TTL.as_secs();
    for ttl in [
        u64::MAX.to_string(),
        "18446744073709551616".to_owned(),
        (max + 1).to_string(),
    ] {
        let (status, body) = call(
            &app,
            Method::PUT,
            "/streams/t/ttl",
            &[AUTH, TEXT, ("stream-ttl", &ttl)],
            "",
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "Stream-TTL: {ttl}");
        assert!(body.contains("Stream-TTL"), "{ttl}: {body}");
    }
    let max = max.to_string();
    let headers = [AUTH, TEXT, ("stream-ttl", max.as_str())];
    let (status, _) = call(&app, Method::PUT, "/streams/t/ttl", &headers, "x").await;
    assert_eq!(status, StatusCode::CREATED);
    // A read touches the stream, which moves its idle deadline by the TTL again.
    let (status, body) = call(&app, Method::GET, "/streams/t/ttl?offset=-1", &[], "").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "x"));
    let (status, _) = call(&app, Method::POST, "/streams/t/ttl", &[AUTH, TEXT], "y").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

/// A request (method, URI, headers) and the name its 400 must mention.
type Case<'a> = (Method, &'a str, Vec<(&'a str, &'a str)>, &'a str);

#[tokio::test]
async fn every_number_out_of_range_is_400_naming_what_was_wrong() {
    let f = Fixture::new();
    let app = f.streams().router();
    let created = call(&app, Method::PUT, "/streams/t/s", &[AUTH, TEXT], "abc").await;
    assert_eq!(created.0, StatusCode::CREATED);
    let beyond = (1u64 << 53).to_string();
    let cases: Vec<Case<'_>> = vec![
        (
            Method::PUT,
            "/streams/t/e",
            vec![("stream-expires-at", "99999-01-01T00:00:00Z")],
            "Stream-Expires-At",
        ),
        (
            Method::PUT,
            "/streams/t/e",
            vec![("stream-expires-at", "2026-13-01T00:00:00Z")],
            "Stream-Expires-At",
        ),
        (
            Method::PUT,
            "/streams/t/e",
            vec![("stream-expires-at", "2026-02-31T00:00:00Z")],
            "Stream-Expires-At",
        ),
        (
            Method::PUT,
            "/streams/t/e",
            vec![("stream-expires-at", "2026-01-01T00:00:00+99:99")],
            "Stream-Expires-At",
        ),
        (
            Method::PUT,
            "/streams/t/e",
            vec![("stream-expires-at", "2026-01-01T24:00:00Z")],
            "Stream-Expires-At",
        ),
        (
            Method::PUT,
            "/streams/t/f",
            vec![
                ("stream-forked-from", "/streams/t/s"),
                ("stream-fork-offset", "ffffffffffffffff"),
            ],
            "Stream-Fork-Offset",
        ),
        (
            Method::PUT,
            "/streams/t/f",
            vec![
                ("stream-forked-from", "/streams/t/s"),
                ("stream-fork-sub-offset", "18446744073709551615"),
            ],
            "Stream-Fork-Sub-Offset",
        ),
        (
            Method::POST,
            "/streams/t/s",
            vec![
                ("producer-id", "p"),
                ("producer-epoch", "0"),
                ("producer-seq", &beyond),
            ],
            "Producer-Seq",
        ),
        (
            Method::POST,
            "/streams/t/s",
            vec![
                ("producer-id", "p"),
                ("producer-epoch", "18446744073709551616"),
                ("producer-seq", "0"),
            ],
            "Producer-Epoch",
        ),
        (
            Method::POST,
            "/streams/t/s",
            vec![("content-length", "18446744073709551616")],
            "Content-Length",
        ),
        (
            Method::POST,
            "/streams/t/s",
            vec![("content-length", "-1")],
            "Content-Length",
        ),
        (
            Method::GET,
            "/streams/t/s?offset=1ffffffffffffffff",
            vec![],
            "offset",
        ),
        (
            Method::GET,
            "/streams/t/s?offset=-2&live=long-poll",
            vec![],
            "offset",
        ),
    ];
    for (method, uri, extra, named) in cases {
        let mut headers = vec![AUTH, TEXT];
        headers.extend(extra.iter().copied());
        let (status, body) = call(&app, method.clone(), uri, &headers, "d").await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{method} {uri} {extra:?}: {body}"
        );
        assert!(body.contains(named), "{method} {uri} {extra:?}: {body}");
    }
    // An offset in range but past the tail, on a stream and on a chord log, is no panic.
    let (status, _) = call(
        &app,
        Method::GET,
        "/streams/t/s?offset=ffffffffffffffff&live=long-poll",
        &[],
        "",
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    // The stream is as it was.
    let (status, body) = call(&app, Method::GET, "/streams/t/s?offset=-1", &[], "").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "abc"));
}

/// A body that counts how often it is polled and never yields a byte.
struct Watched {
    polls: Arc<AtomicUsize>,
    announced: u64,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        Poll::Pending
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.announced)
    }
}

/// A request with a `Content-Length` of `announced` and a [`Watched`] body.
fn watched(
    method: Method,
    uri: &str,
    auth: &str,
    announced: u64,
) -> (Request<Body>, Arc<AtomicUsize>) {
    let polls = Arc::new(AtomicUsize::new(0));
    let body = Body::new(Watched {
        polls: Arc::clone(&polls),
        announced,
    });
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .header("content-length", announced.to_string())
        .body(body)
        .unwrap();
    (request, polls)
}

#[tokio::test]
async fn a_refused_writer_is_answered_without_its_body_being_polled() {
    let f = Fixture::new();
    let app = f.streams().router();
    let read_only = Streams::new(&f.log).router();
    for (app, auth, expected) in [
        (&app, "Bearer no", StatusCode::FORBIDDEN),
        (&app, "", StatusCode::FORBIDDEN),
        (&read_only, "Bearer ok", StatusCode::METHOD_NOT_ALLOWED),
    ] {
        for method in [Method::PUT, Method::POST, Method::DELETE] {
            let (request, polls) = watched(method.clone(), "/streams/t/s", auth, 16 << 20);
            let (status, _) = send(app, request).await;
            assert_eq!(status, expected, "{method} {auth:?}");
            assert_eq!(polls.load(Ordering::SeqCst), 0, "{method} {auth:?}");
        }
    }
    // Reads never read a body either.
    let (request, polls) = watched(Method::GET, "/streams/t/none", "", 16 << 20);
    assert_eq!(send(&app, request).await.0, StatusCode::NOT_FOUND);
    assert_eq!(polls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_content_length_over_the_bound_is_413_before_a_byte_is_read() {
    let f = Fixture::new();
    let app = f.streams().router();
    let small = f.streams().max_body(1000).router();
    for (app, announced) in [(&app, (16 << 20) + 1), (&app, u64::MAX), (&small, 1001)] {
        let (request, polls) = watched(Method::POST, "/streams/t/s", "Bearer ok", announced);
        let (status, body) = send(app, request).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{announced}: {body}");
        assert_eq!(polls.load(Ordering::SeqCst), 0, "{announced}");
    }
    // A body of unknown length is refused once it passes the bound.
    let request = Request::builder()
        .method(Method::PUT)
        .uri("/streams/t/chunked")
        .header("authorization", "Bearer ok")
        .header("content-type", "text/plain")
        .body(Body::new(Chunks { left: 8, size: 200 }))
        .unwrap();
    assert_eq!(send(&small, request).await.0, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, _) = call(&small, Method::GET, "/streams/t/chunked", &[], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing was created");
}

/// A body of unknown length: `left` chunks of `size` bytes.
struct Chunks {
    left: usize,
    size: usize,
}

impl HttpBody for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        let chunk = Bytes::from(vec![b'x'; self.size]);
        Poll::Ready(Some(Ok(http_body::Frame::data(chunk))))
    }
}

#[tokio::test]
async fn a_request_that_finds_no_room_in_the_budget_is_503() {
    let f = Fixture::new();
    let app = f
        .streams()
        .body_budget(1000)
        .body_wait(Duration::from_millis(50))
        .body_timeout(Duration::from_secs(3600))
        .router();
    // The first request reserves the whole budget and never sends its body.
    let (request, polls) = watched(Method::POST, "/streams/t/s", "Bearer ok", 1000);
    let mut holder = app.clone();
    let held =
        tokio::spawn(async move { tower_service::Service::call(&mut holder, request).await });
    while polls.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let (status, body) = call(&app, Method::PUT, "/streams/t/s", &[AUTH, TEXT], "x").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    held.abort();
    let _ = held.await;
    // Its room is back once it is gone.
    let (status, body) = call(&app, Method::PUT, "/streams/t/s", &[AUTH, TEXT], "x").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// The status line and the rest of what a server sends on `socket` until it closes the
/// connection.
async fn answer(socket: &mut TcpStream) -> (String, String) {
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, socket.read_to_end(&mut out))
        .await
        .expect("the server answers and closes the connection")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (line, rest) = text.split_once("\r\n").unwrap_or((&text, ""));
    (line.to_owned(), rest.to_owned())
}

/// Serves `router` on a loopback port.
async fn listen(router: Router) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, router, std::future::pending()));
    addr
}

const HEAD_16_MIB: &str = "POST /streams/t/s HTTP/1.1\r\nHost: test\r\n\
     Content-Type: text/plain\r\nContent-Length: 16777216\r\n";

#[tokio::test]
async fn over_a_socket_a_refused_writer_that_sends_no_body_gets_403_and_the_connection_closes() {
    let f = Fixture::new();
    let addr = listen(f.streams().router()).await;
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let request = format!("{HEAD_16_MIB}Authorization: Bearer no\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let (status, rest) = answer(&mut socket).await;
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{rest}");
}

#[tokio::test]
async fn over_a_socket_a_stalled_body_gets_408_and_the_connection_closes() {
    let f = Fixture::new();
    let addr = listen(
        f.streams()
            .body_timeout(Duration::from_millis(200))
            .router(),
    )
    .await;
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let request = format!("{HEAD_16_MIB}Authorization: Bearer ok\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    socket.write_all(&[b'x'; 64 * 1024]).await.unwrap();
    let (status, rest) = answer(&mut socket).await;
    assert_eq!(status, "HTTP/1.1 408 Request Timeout", "{rest}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text in a numeric header or query parameter gets an answer below 500: the router
    /// neither panics nor fails on a number it was sent.
    #[test]
    fn numbers_in_requests_never_fail_the_router(
        name in prop::sample::select(vec![
            "stream-ttl", "stream-expires-at", "stream-fork-offset", "stream-fork-sub-offset",
            "producer-epoch", "producer-seq", "content-length", "stream-seq", "offset", "cursor",
        ]),
        value in prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            "[0-9]{1,25}",
            "-?[0-9a-f]{1,20}",
            "[0-9]{4,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,12})?(Z|[+-][0-9]{2}:[0-9]{2})",
            "[ -~]{0,12}",
        ],
        method in prop::sample::select(vec![Method::PUT, Method::POST, Method::GET]),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let status = runtime.block_on(async {
            let f = Fixture::new();
            let app = f.streams().router();
            let created = call(&app, Method::PUT, "/streams/t/s", &[AUTH, TEXT], "abc").await;
            assert_eq!(created.0, StatusCode::CREATED);
            let (uri, header) = match name {
                "offset" | "cursor" => {
                    let q: String =
                        url_escape(&value);
                    (format!("/streams/t/s?live=long-poll&offset=-1&{name}={q}"), None)
                }
                _ => ("/streams/t/s".to_owned(), Some((name, value.as_str()))),
            };
            let mut headers = vec![AUTH, TEXT, ("producer-id", "p"), ("stream-forked-from", "/streams/t/s")];
            if method != Method::PUT {
                headers.pop();
            }
            if let Some(h) = header {
                headers.retain(|(k, _)| *k != h.0);
                headers.push(h);
            }
            call(&app, method.clone(), &uri, &headers, "d").await.0
        });
        prop_assert!(status.as_u16() < 500, "{} {}: {:?} -> {}", method, name, value, status);
    }
}

/// `s` percent-encoded for a query string.
fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A batch whose object names a member twice is refused (400, naming the name), as every
/// replica refuses it: chord reads I-JSON, so no reader keeps a different member than another.
/// Nothing of the request is appended, the batches before it in the body included.
#[tokio::test]
async fn a_batch_naming_a_member_twice_is_400_and_nothing_is_appended() {
    let f = Fixture::new();
    // A chord log's stream (no backend: every stream is the log's).
    let app = Streams::new(&f.log).writes(|_| true).router();
    let mut writer = LogWriter::new(f.log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "twice");
    writer
        .append(&lane, &[Op::Replace(json!({"n": 0}))])
        .unwrap();
    const JSON: (&str, &str) = ("content-type", "application/json");
    let uri = "/streams/lanes/twice";
    for body in [
        r#"[[["s",["n"],1]],[["r",{"a":1,"a":2}]]]"#,
        r#"[[["s",["n"],{"\u006e":1,"n":2}]]]"#,
        r#"[[["p",[],0,0,[{"b":{"c":1,"c":1}}]]]]"#,
        r#"[[["r",{"a":1e400,"a":1}]]]"#,
    ] {
        let (status, text) = call(&app, Method::POST, uri, &[AUTH, JSON], body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        if !body.contains("1e400") {
            assert!(text.contains("duplicate member name"), "{body}: {text}");
        }
    }
    let (status, read) = call(&app, Method::GET, &format!("{uri}?offset=-1"), &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(read, r#"[[["r",{"n":0}]]]"#, "only the first batch");
}

/// A batch refused for a reason its error keeps in its causes (a reserved segment in a path:
/// the store's "recovery could not read back", caused by the decoder's rule) is answered 400
/// with the whole chain, so the writer reads which op and which segment; nothing is appended.
#[tokio::test]
async fn a_refused_batch_is_400_with_every_cause_of_its_error() {
    let f = Fixture::new();
    let app = Streams::new(&f.log).writes(|_| true).router();
    let mut writer = LogWriter::new(f.log.clone(), Checkpoint::Never);
    let lane = Address::new("lanes", "proto");
    writer
        .append(&lane, &[Op::Replace(json!({"n": 0}))])
        .unwrap();
    const JSON: (&str, &str) = ("content-type", "application/json");
    let uri = "/streams/lanes/proto";
    for (body, segment) in [
        (r#"[[["s",["__proto__"],1]]]"#, "__proto__"),
        (
            r#"[[["s",["n"],1]],[["s",["a","constructor","b"],1]]]"#,
            "constructor",
        ),
    ] {
        let (status, text) = call(&app, Method::POST, uri, &[AUTH, JSON], body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        let (what, why) = text
            .trim_end()
            .split_once("recovery could not read back: ")
            .unwrap_or_else(|| panic!("{body}: no cause after what was refused: {text}"));
        assert!(what.starts_with("message "), "{body}: {text}");
        assert!(why.contains(segment), "{body}: {text}");
    }
    let (status, read) = call(&app, Method::GET, &format!("{uri}?offset=-1"), &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(read, r#"[[["r",{"n":0}]]]"#, "nothing appended");
}
