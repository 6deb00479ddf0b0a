//! The server's trust boundary as a client with write access to one namespace meets it, against
//! a read hook that refuses another (`secret`):
//!
//! - a fork is a read of its source: the read hook decides on the source before anything about
//!   it is looked at, and a refused fork answers exactly as a refused read of the source,
//!   whether the source exists or not, with nothing copied and nothing of it told (existence,
//!   content type, length);
//! - every answer of every verb carries the same security headers, and every `405` an `Allow`
//!   naming exactly the methods the route serves;
//! - an answer to a request whose body was left unread closes the connection.
//!
//! Called in process (`tower_service::Service::call` on the router).

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use chord::store::{Address, Durability, JsonlStore, LogWriter};
use chord::streams::{Access, Log, Memory, ReadKind, Streams};
use http_body_util::BodyExt;

const WRITER: &str = "Bearer writer";
/// Reads `lanes`, not `secret`.
const READER: &str = "Bearer reader";
/// Reads everything.
const ADMIN: &str = "Bearer admin";

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::from(body.to_owned())).unwrap();
    let response = tower_service::Service::call(&mut app.clone(), request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    // Every read here is a catch-up, whose body ends; the timeout only keeps a broken one
    // from hanging the test.
    let body = tokio::time::timeout(std::time::Duration::from_secs(20), body.collect())
        .await
        .expect("the body ends")
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// What the read hook was asked.
type Seen = Arc<Mutex<Vec<(ReadKind, Address, Option<String>)>>>;

struct Fixture {
    _dir: tempfile::TempDir,
    log: Log<JsonlStore>,
    seen: Seen,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store =
            JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
        Fixture {
            _dir: dir,
            log: Log::new(store),
            seen: Seen::default(),
        }
    }

    /// Writes for [`WRITER`] (and [`ADMIN`]); reads as the constants say, a `?token=admin`
    /// in the query as [`ADMIN`]; no credential is unauthorized.
    fn streams(&self) -> Streams {
        let seen = Arc::clone(&self.seen);
        Streams::new(&self.log)
            .backend(Memory::new())
            .writes(|r| {
                let auth = r.headers.get("authorization").and_then(|v| v.to_str().ok());
                matches!(auth, Some(WRITER) | Some(ADMIN))
            })
            .reads(move |r| {
                let auth = r.headers.get("authorization").and_then(|v| v.to_str().ok());
                seen.lock().unwrap().push((
                    r.read,
                    r.address.clone(),
                    r.uri.query().map(str::to_owned),
                ));
                let token = r
                    .uri
                    .query()
                    .is_some_and(|q| q.split('&').any(|p| p == "token=admin"));
                match auth {
                    _ if token => Access::Allow,
                    Some(ADMIN) => Access::Allow,
                    Some(READER) | Some(WRITER) if r.address.namespace != "secret" => Access::Allow,
                    Some(_) => Access::Forbidden,
                    None => Access::Unauthorized,
                }
            })
    }
}

/// The answer's headers that say something of a stream, or could differ between two refusals.
fn comparable(r: &Reply) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(n, _)| n.as_str() != "date")
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
        .collect();
    out.sort();
    out
}

/// `secret/p2`, a text stream holding `TOPSECRET2`, created by the admin.
async fn secret(app: &Router) {
    let auth = [("authorization", ADMIN), ("content-type", "text/plain")];
    assert_eq!(
        call(app, Method::PUT, "/streams/secret/p2", &auth, "")
            .await
            .status,
        StatusCode::CREATED
    );
    let r = call(app, Method::POST, "/streams/secret/p2", &auth, "TOPSECRET2").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
}

#[tokio::test]
async fn a_fork_of_a_refused_source_answers_as_its_refused_read_whether_it_exists_and_copies_nothing(
) {
    let f = Fixture::new();
    let app = f.streams().router();
    secret(&app).await;
    // The source read as the fork's requester would read it: refused.
    let read = |auth: Option<&'static str>| {
        let app = app.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                auth.map(|a| ("authorization", a)).into_iter().collect();
            call(
                &app,
                Method::GET,
                "/streams/secret/p2?offset=-1",
                &headers,
                "",
            )
            .await
        }
    };
    let refused_read = read(Some(WRITER)).await;
    assert_eq!(refused_read.status, StatusCode::FORBIDDEN);
    assert!(refused_read.body.is_empty());
    let unauthorized_read = read(None).await;
    assert_eq!(unauthorized_read.status, StatusCode::UNAUTHORIZED);

    // Every way of naming the source and its fork point, for a source that exists and one
    // that does not: what a difference would tell (existence 201/404, content type 409,
    // length: an offset past the tail 400).
    let sources = [
        "/streams/secret/p2",
        "/streams/secret/p%32",
        " /streams/secret/p2 ",
        "/streams/secret/none",
    ];
    let extras: [&[(&str, &str)]; 5] = [
        &[("content-type", "text/plain")],
        &[("content-type", "application/json")],
        &[
            ("content-type", "text/plain"),
            ("stream-fork-offset", "0000000000000001"),
        ],
        &[
            ("content-type", "text/plain"),
            ("stream-fork-offset", "00000000000000ff"),
        ],
        &[
            ("content-type", "text/plain"),
            ("stream-fork-offset", "-1"),
            ("stream-fork-sub-offset", "3"),
        ],
    ];
    let mut n = 0;
    let mut answers = Vec::new();
    for source in sources {
        for extra in extras {
            n += 1;
            let target = format!("/streams/lanes/stolen{n}");
            let mut headers = vec![("authorization", WRITER), ("stream-forked-from", source)];
            headers.extend_from_slice(extra);
            let r = call(&app, Method::PUT, &target, &headers, "").await;
            let what = format!("fork of {source:?} with {extra:?}");
            assert_eq!(r.status, StatusCode::FORBIDDEN, "{what}: {}", r.text());
            assert!(r.body.is_empty(), "{what}: {}", r.text());
            assert_eq!(r.header("cache-control"), Some("no-store"), "{what}");
            assert_eq!(r.header("location"), None, "{what}");
            assert_eq!(r.header("stream-next-offset"), None, "{what}");
            answers.push((what.clone(), comparable(&r)));
            // Nothing was created, for the requester or anyone.
            let admin = [("authorization", ADMIN)];
            let fork = call(
                &app,
                Method::GET,
                &format!("{target}?offset=-1"),
                &admin,
                "",
            )
            .await;
            assert_eq!(
                fork.status,
                StatusCode::NOT_FOUND,
                "{what}: {}",
                fork.text()
            );
            // Without a credential the write hook refuses first.
            let headers: Vec<(&str, &str)> = headers
                .into_iter()
                .filter(|h| h.0 != "authorization")
                .collect();
            let r = call(&app, Method::PUT, &target, &headers, "").await;
            // The write hook comes first and refuses a request without a credential.
            assert_eq!(
                r.status,
                StatusCode::FORBIDDEN,
                "{what} without a credential"
            );
        }
    }
    // One answer, whatever the source and the offsets: the same headers, byte for byte.
    let (first_what, first) = &answers[0];
    for (what, answer) in &answers[1..] {
        assert_eq!(answer, first, "{what} answered otherwise than {first_what}");
    }
    // And it is the refused read's answer, exactly (the PUT had no body: none was left unread).
    assert_eq!(
        first,
        &comparable(&refused_read),
        "a refused fork and a refused read differ"
    );

    // The hook was asked about the source, as a fork, with the PUT's query.
    let seen = f.seen.lock().unwrap().clone();
    let forks: Vec<_> = seen.iter().filter(|s| s.0 == ReadKind::Fork).collect();
    assert_eq!(forks.len(), sources.len() * extras.len());
    assert!(forks.iter().all(|s| s.1.namespace == "secret"), "{forks:?}");

    // The source is untouched: no fork counted on it, so its delete is a plain one (a
    // source with forks is only marked deleted, and answers 410 after).
    let admin = [("authorization", ADMIN)];
    let r = call(
        &app,
        Method::GET,
        "/streams/secret/p2?offset=-1",
        &admin,
        "",
    )
    .await;
    assert_eq!(r.text(), "TOPSECRET2");
    assert_eq!(
        call(&app, Method::DELETE, "/streams/secret/p2", &admin, "")
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call(
            &app,
            Method::GET,
            "/streams/secret/p2?offset=-1",
            &admin,
            ""
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_fork_the_hook_allows_is_served_and_the_hook_sees_the_requests_credential() {
    let f = Fixture::new();
    let app = f.streams().router();
    secret(&app).await;
    // A reader of `lanes` forks a `lanes` stream: allowed.
    let writer = [("authorization", WRITER), ("content-type", "text/plain")];
    assert_eq!(
        call(&app, Method::PUT, "/streams/lanes/a", &writer, "open")
            .await
            .status,
        StatusCode::CREATED
    );
    let fork = [
        ("authorization", WRITER),
        ("content-type", "text/plain"),
        ("stream-forked-from", "/streams/lanes/a"),
    ];
    let r = call(&app, Method::PUT, "/streams/lanes/b", &fork, "").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = call(
        &app,
        Method::GET,
        "/streams/lanes/b?offset=-1",
        &[("authorization", READER)],
        "",
    )
    .await;
    assert_eq!(r.text(), "open");
    // A token in the PUT's query is the credential the hook sees for the source.
    let fork = [
        ("authorization", WRITER),
        ("content-type", "text/plain"),
        ("stream-forked-from", "/streams/secret/p2"),
    ];
    let r = call(&app, Method::PUT, "/streams/lanes/c?token=admin", &fork, "").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = call(
        &app,
        Method::GET,
        "/streams/lanes/c?offset=-1",
        &[("authorization", READER)],
        "",
    )
    .await;
    assert_eq!(r.text(), "TOPSECRET2");
    let seen = f.seen.lock().unwrap().clone();
    assert!(
        seen.contains(&(
            ReadKind::Fork,
            Address::new("secret", "p2"),
            Some("token=admin".into())
        )),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(ReadKind::Fork, Address::new("lanes", "a"), None)),
        "{seen:?}"
    );
}

#[tokio::test]
async fn the_one_namespace_router_guards_a_fork_named_by_sibling_or_full_path() {
    let f = Fixture::new();
    let streams = f.streams();
    let full = streams.clone().router();
    let secret_ns = streams.namespace_router("/v1/stream", "secret");
    secret(&full).await;
    for from in ["/v1/stream/p2", "/streams/secret/p2"] {
        let fork = [
            ("authorization", WRITER),
            ("content-type", "text/plain"),
            ("stream-forked-from", from),
        ];
        let r = call(&secret_ns, Method::PUT, "/v1/stream/copy", &fork, "").await;
        // The write hook allows the writer anywhere; the read hook refuses `secret` to it.
        assert_eq!(r.status, StatusCode::FORBIDDEN, "from {from}: {}", r.text());
        let admin = [("authorization", ADMIN)];
        let r = call(&secret_ns, Method::HEAD, "/v1/stream/copy", &admin, "").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "from {from}");
    }
}

#[tokio::test]
async fn a_malformed_fork_source_is_400_before_any_hook_and_names_no_stream() {
    let f = Fixture::new();
    let app = f.streams().router();
    for from in ["/streams/secret/%FF", "/elsewhere/x", "/streams/a/b/c"] {
        let fork = [
            ("authorization", WRITER),
            ("content-type", "text/plain"),
            ("stream-forked-from", from),
        ];
        let r = call(&app, Method::PUT, "/streams/lanes/x", &fork, "").await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (StatusCode::BAD_REQUEST, "malformed Stream-Forked-From\n"),
            "{from}"
        );
    }
    assert!(
        f.seen.lock().unwrap().is_empty(),
        "no read hook call for a name that is no stream"
    );
}

/// The methods a route serves, as `Allow` lists them.
fn allowed(r: &Reply) -> Vec<String> {
    let mut out: Vec<String> = r
        .header("allow")
        .unwrap_or("")
        .split(',')
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn every_answer_of_every_verb_carries_the_security_headers_and_every_405_its_allow() {
    let f = Fixture::new();
    // A chord log at lanes/main.
    let mut writer = LogWriter::new(f.log.clone(), chord::store::Checkpoint::Never);
    writer
        .append(
            &Address::new("lanes", "main"),
            &[chord::Op::Replace(serde_json::json!({"n": 1}))],
        )
        .unwrap();
    let read_only = Streams::new(&f.log).router();
    let no_cors = f.streams().cors(None).router();
    let full = f.streams().router();
    let one_namespace = f.streams().namespace_router("/v1/stream", "lanes");
    let memory = [("authorization", ADMIN), ("content-type", "text/plain")];
    assert_eq!(
        call(&full, Method::PUT, "/streams/t/bytes", &memory, "x")
            .await
            .status,
        StatusCode::CREATED
    );
    let routers = [
        ("read-only", &read_only, "/streams"),
        ("without cors", &no_cors, "/streams"),
        ("full", &full, "/streams"),
        ("one namespace", &one_namespace, "/v1/stream"),
    ];
    let methods = [
        Method::GET,
        Method::HEAD,
        Method::PUT,
        Method::POST,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::TRACE,
        Method::from_bytes(b"BREW").unwrap(),
    ];
    let credentials: [&[(&str, &str)]; 4] = [
        &[],
        &[
            ("authorization", ADMIN),
            ("content-type", "application/json"),
        ],
        &[("authorization", "Bearer nobody")],
        &[
            ("origin", "https://page.example"),
            ("access-control-request-method", "PUT"),
        ],
    ];
    let mut answers = 0;
    let mut not_allowed = 0;
    for (name, app, prefix) in routers {
        let paths = if prefix == "/streams" {
            vec![
                "/streams/lanes/main",
                "/streams/t/bytes",
                "/streams/lanes/none",
                "/streams/a/%FF",
            ]
        } else {
            vec!["/v1/stream/main", "/v1/stream/none", "/v1/stream/%FF"]
        };
        for path in &paths {
            for method in &methods {
                for headers in credentials {
                    let r = call(
                        app,
                        method.clone(),
                        &format!("{path}?offset=-1"),
                        headers,
                        "[]",
                    )
                    .await;
                    let what = format!(
                        "{name}: {method} {path} with {headers:?} answered {}",
                        r.status
                    );
                    answers += 1;
                    assert_eq!(
                        r.header("x-content-type-options"),
                        Some("nosniff"),
                        "{what}"
                    );
                    assert_eq!(
                        r.header("cross-origin-resource-policy"),
                        Some("cross-origin"),
                        "{what}"
                    );
                    if r.status == StatusCode::METHOD_NOT_ALLOWED {
                        not_allowed += 1;
                        let allow = allowed(&r);
                        assert!(!allow.is_empty(), "{what}: no Allow");
                        assert!(
                            !allow.contains(&method.to_string()),
                            "{what}: Allow {allow:?}"
                        );
                        assert!(allow.contains(&"GET".to_owned()), "{what}: Allow {allow:?}");
                    }
                }
            }
        }
    }
    eprintln!("{answers} answers, {not_allowed} of them 405");
    assert!(not_allowed > 20, "the matrix reaches the 405s");

    // What `Allow` names is what the route serves: each method in it is routed (not a 405
    // from the router) on a stream of the backend, and on a chord log all but DELETE are.
    let admin = [("authorization", ADMIN), ("content-type", "text/plain")];
    let patch = call(&full, Method::PATCH, "/streams/t/bytes", &admin, "").await;
    assert_eq!(
        allowed(&patch),
        ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"],
        "a server that takes writes"
    );
    assert!(!patch.text().contains("read path only"), "{}", patch.text());
    let put = call(&read_only, Method::PUT, "/streams/lanes/main", &admin, "").await;
    assert_eq!(
        allowed(&put),
        ["GET", "HEAD", "OPTIONS"],
        "a read-only server"
    );
    let delete = call(&full, Method::DELETE, "/streams/lanes/main", &admin, "").await;
    assert_eq!(delete.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        allowed(&delete),
        ["GET", "HEAD", "OPTIONS", "POST", "PUT"],
        "a chord log"
    );
    let options = call(&no_cors, Method::OPTIONS, "/streams/t/bytes", &[], "").await;
    assert_eq!(options.status, StatusCode::NO_CONTENT);
    assert_eq!(
        allowed(&options),
        allowed(&patch),
        "OPTIONS says what a 405 says"
    );
}

/// What is sent, to which router, and the status expected.
type Case<'a> = (
    &'a str,
    &'a Router,
    Method,
    &'a [(&'a str, &'a str)],
    StatusCode,
);

#[tokio::test]
async fn an_answer_to_a_request_whose_body_was_not_read_closes_the_connection() {
    let f = Fixture::new();
    let app = f.streams().router();
    let read_only = Streams::new(&f.log).router();
    let body = "x".repeat(1000);
    let text = [("authorization", WRITER), ("content-type", "text/plain")];
    let cases: [Case; 5] = [
        (
            "a refused write",
            &app,
            Method::POST,
            &[("authorization", "Bearer nobody")],
            StatusCode::FORBIDDEN,
        ),
        (
            "a write to a read-only server",
            &read_only,
            Method::POST,
            &text,
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            "a method not served",
            &app,
            Method::PATCH,
            &text,
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            "a refused fork",
            &app,
            Method::PUT,
            &[
                ("authorization", WRITER),
                ("stream-forked-from", "/streams/secret/x"),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            "a GET with a body",
            &app,
            Method::GET,
            &[("authorization", READER)],
            StatusCode::NOT_FOUND,
        ),
    ];
    for (what, app, method, headers, status) in cases {
        let r = call(app, method, "/streams/lanes/x", headers, &body).await;
        assert_eq!(r.status, status, "{what}: {}", r.text());
        assert_eq!(r.header("connection"), Some("close"), "{what}");
    }
    // A body read to its end keeps the connection.
    let r = call(&app, Method::PUT, "/streams/lanes/kept", &text, &body).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.header("connection"), None);
    let r = call(
        &app,
        Method::GET,
        "/streams/lanes/kept?offset=-1",
        &[("authorization", READER)],
        "",
    )
    .await;
    assert_eq!((r.status, r.header("connection")), (StatusCode::OK, None));
}

#[tokio::test]
async fn the_health_routes_answer_with_the_same_headers() {
    let f = Fixture::new();
    let app = chord::streams::Health::new(&f.log).router();
    for path in ["/healthz", "/readyz"] {
        for method in [Method::GET, Method::HEAD, Method::POST, Method::DELETE] {
            let r = call(&app, method.clone(), path, &[], "").await;
            let what = format!("{method} {path} answered {}", r.status);
            assert_eq!(
                r.header("x-content-type-options"),
                Some("nosniff"),
                "{what}"
            );
            assert_eq!(
                r.header("cross-origin-resource-policy"),
                Some("cross-origin"),
                "{what}"
            );
            if r.status == StatusCode::METHOD_NOT_ALLOWED {
                assert_eq!(allowed(&r), ["GET", "HEAD"], "{what}");
            } else {
                assert!(r.status.is_success(), "{what}");
            }
        }
    }
}
