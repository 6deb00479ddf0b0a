//! A page on one origin (`http://127.0.0.1:A`) reads chord streams served on others
//! (`http://127.0.0.1:B`), in headless Chromium: what the browser itself allows or refuses
//! under each cross-origin policy, and what the read authorization hook decides with and
//! without a credential.
//!
//! - The default policy ([`default_cors`] as `Streams::new` sets it): a catch-up `fetch`, a
//!   `HEAD` reading `Stream-Next-Offset`, a `fetch` with an `Authorization` header (which the
//!   browser preflights) and an `EventSource` all succeed.
//! - A policy naming only other origins: the browser refuses each (the server answered; the
//!   page is not shown the answer), and never sends the preflighted read.
//! - The page's origin named with credentials, and a read hook: without a credential the
//!   page sees 401, with a wrong token 403, with a bearer token, a token in the query (an
//!   `EventSource`) or the session cookie (set by the server's origin, sent with
//!   `credentials: 'include'` and `withCredentials`) the stream.
//!
//! 127.0.0.1 on two ports is two origins of one site, as `app.example` and
//! `chord.app.example` are, so a `SameSite=Strict` cookie of the server is sent.
//!
//! Chromium is Debian's `chromium` (or `$CHROMIUM`); without it the test prints a
//! `SKIPPED` line, and fails under `CI=true`.

#[path = "support/browser.rs"]
mod browser;
#[path = "support/local.rs"]
mod local;
#[path = "support/skip.rs"]
mod skip;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::Router;
use browser::{Browser, PATIENCE};
use chord::store::{Address, Checkpoint, Durability, JsonlStore, LogWriter, ReadOptions, Store};
use chord::streams::{default_cors, serve, Access, Log, Offset, ReadKind, Streams};
use chord::{apply, path, Decoder, Op};
use serde_json::{json, Value};

/// The page: a read by `fetch` and one by `EventSource`, each answering what the page is
/// shown (or that the browser refused).
const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>another origin</title></head><body>
<script>
async function probe(url, init) {
  try {
    const r = await fetch(url, init);
    return {
      status: r.status,
      next: r.headers.get('Stream-Next-Offset'),
      base: r.headers.get('Chord-Base-Offset'),
      body: await r.text(),
    };
  } catch (e) {
    return { refused: String(e) };
  }
}
function listen(url, init) {
  return new Promise((resolve) => {
    const es = new EventSource(url, init);
    const data = [];
    const done = (result) => { clearTimeout(timer); es.close(); resolve({ data, ...result }); };
    const timer = setTimeout(() => done({ timeout: true }), 20000);
    es.addEventListener('data', (e) => data.push(e.data));
    es.addEventListener('control', (e) => done({ control: JSON.parse(e.data) }));
    // Refused (a status other than 200, or by the policy): CLOSED, no reconnection.
    es.onerror = () => done({ error: true, readyState: es.readyState });
  });
}
</script>
</body></html>
"#;

/// A request as it reached a server, before its cross-origin policy.
#[derive(Clone, Debug)]
struct Arrived {
    method: Method,
    uri: String,
    authorization: Option<String>,
}

type Ledger = Arc<Mutex<Vec<Arrived>>>;

/// What the read hook was asked, with the request's `Cookie` header.
type Asked = (ReadKind, Option<String>);

/// `app` with every request it is sent written down in `ledger`.
fn recorded(app: Router, ledger: &Ledger) -> Router {
    let ledger = Arc::clone(ledger);
    app.layer(from_fn(move |request: Request, next: Next| {
        let ledger = Arc::clone(&ledger);
        async move {
            ledger.lock().unwrap().push(Arrived {
                method: request.method().clone(),
                uri: request.uri().to_string(),
                authorization: request
                    .headers()
                    .get(AUTHORIZATION)
                    .map(|v| v.to_str().unwrap().to_owned()),
            });
            next.run(request).await
        }
    }))
}

async fn start(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, std::future::pending()));
    addr
}

/// The bearer token and session cookie the hook accepts.
const TOKEN: &str = "page-token";
const SESSION: &str = "s3ssion";

/// The stream's value, decoded from `bodies`, each a JSON array of batches (a catch-up's
/// body, or the `data` events of an `EventSource`), in order.
fn decoded<'a>(bodies: impl IntoIterator<Item = &'a str>) -> Option<Value> {
    let (mut decoder, mut value) = (Decoder::new(), None);
    for body in bodies {
        let batches: Vec<Value> =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        for batch in batches {
            apply(&mut value, decoder.decode_str(&batch.to_string()).unwrap()).unwrap();
        }
    }
    value
}

/// The value an `EventSource`'s `data` events decode to.
fn decoded_events(listened: &Value) -> Option<Value> {
    let events = listened["data"].as_array().expect("a list of data events");
    decoded(events.iter().map(|e| e.as_str().unwrap()))
}

#[test]
fn a_page_on_another_origin_reads_as_the_policy_and_the_read_hook_allow() {
    let Some(mut browser) = Browser::launch_or_skip("cross_origin") else {
        return;
    };
    let runtime = local::runtime();

    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend).unwrap();
    let log = Log::new(store);
    let lane = Address::new("lanes", "main");
    let mut writer = LogWriter::new(log.clone(), Checkpoint::Never);
    writer
        .append(&lane, &[Op::Replace(json!({"text": "hello"}))])
        .unwrap();
    writer
        .append(&lane, &[Op::Append(path!["text"], " world".into())])
        .unwrap();
    let expected = json!({"text": "hello world"});
    let records = log.read_list(&lane, &ReadOptions::asc()).unwrap().records;
    let next = Offset::from_seq(records.last().unwrap().seq).to_string();

    let page = runtime.block_on(start(Router::new().route(
        "/",
        axum::routing::get(|| async { axum::response::Html(PAGE) }),
    )));
    let page_origin = format!("http://{page}");
    let streams = || Streams::new(&log).sse_lifetime(Duration::from_secs(5));

    // The default policy.
    let open_ledger = Ledger::default();
    let open = runtime.block_on(start(recorded(streams().router(), &open_ledger)));
    // A policy naming other origins only.
    let closed_ledger = Ledger::default();
    let elsewhere = HeaderValue::from_static("http://elsewhere.example");
    let closed = runtime.block_on(start(recorded(
        streams()
            .cors(Some(default_cors().allow_origin(elsewhere)))
            .router(),
        &closed_ledger,
    )));
    // The page's origin, with credentials; a read hook; a login setting the session cookie.
    let seen: Arc<Mutex<Vec<Asked>>> = Arc::default();
    let credentialed = {
        let cors = default_cors()
            .allow_origin(HeaderValue::from_str(&page_origin).unwrap())
            .allow_credentials(true);
        let seen = Arc::clone(&seen);
        let reads = streams().cors(Some(cors.clone())).reads(move |r| {
            let cookie = r
                .headers
                .get(COOKIE)
                .map(|v| v.to_str().unwrap().to_owned());
            seen.lock().unwrap().push((r.read, cookie.clone()));
            let bearer = r.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
            let session = cookie
                .as_deref()
                .unwrap_or("")
                .split(';')
                .any(|c| c.trim() == format!("session={SESSION}"));
            let query = r.uri.query().unwrap_or("");
            let token = query.split('&').any(|p| p == format!("token={TOKEN}"));
            match bearer {
                _ if session || token => Access::Allow,
                Some(b) if b == format!("Bearer {TOKEN}") => Access::Allow,
                Some(_) => Access::Forbidden,
                None => Access::Unauthorized,
            }
        });
        let login = Router::new()
            .route(
                "/login",
                axum::routing::post(|| async {
                    let cookie = format!("session={SESSION}; Path=/; HttpOnly; SameSite=Strict");
                    (StatusCode::NO_CONTENT, [(SET_COOKIE, cookie)])
                }),
            )
            .layer(cors);
        runtime.block_on(start(reads.router().merge(login)))
    };

    let tab = browser.open(&format!("{page_origin}/"));
    let loaded = std::time::Instant::now();
    while browser.evaluate(&tab, "typeof listen") != "function" {
        assert!(loaded.elapsed() < PATIENCE, "the page never loaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut run = |expression: String| -> Value {
        let value = browser.evaluate_async(&tab, &expression);
        println!("{expression}\n  -> {value}");
        value
    };
    let catch_up = |at: SocketAddr| format!("http://{at}/streams/lanes/main?offset=-1");
    let sse = |at: SocketAddr| format!("http://{at}/streams/lanes/main?offset=-1&live=sse");
    let bearer = format!("{{headers: {{Authorization: 'Bearer {TOKEN}'}}}}");
    // Without a read hook a catch-up read may be kept a minute, and the browser would answer
    // the HEAD and the read with a header from its cache: these reads go to the server.
    let fresh = format!("{{cache: 'no-store', headers: {{Authorization: 'Bearer {TOKEN}'}}}}");

    // Under the default policy every read succeeds and shows the protocol's headers.
    let r = run(format!(
        "probe('{}', {{cache: 'no-store'}})",
        catch_up(open)
    ));
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(decoded(r["body"].as_str()), Some(expected.clone()));
    assert_eq!(r["next"], next.as_str(), "Stream-Next-Offset exposed: {r}");
    assert!(r["base"].is_string(), "Chord-Base-Offset exposed: {r}");
    let r = run(format!(
        "probe('{}', {{method: 'HEAD', cache: 'no-store'}})",
        catch_up(open)
    ));
    assert_eq!(
        (r["status"].clone(), r["next"].clone()),
        (json!(200), json!(next)),
        "{r}"
    );
    let r = run(format!("probe('{}', {fresh})", catch_up(open)));
    assert_eq!(r["status"], 200, "{r}");
    {
        let ledger = open_ledger.lock().unwrap();
        let preflight = ledger
            .iter()
            .position(|a| a.method == Method::OPTIONS)
            .expect("the Authorization header is preflighted");
        assert!(
            ledger[preflight..].iter().any(|a| a.method == Method::GET
                && a.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"))),
            "the read after the preflight carries the header: {ledger:?}"
        );
    }
    let r = run(format!("listen('{}')", sse(open)));
    assert_eq!(r["control"]["streamNextOffset"], next.as_str(), "{r}");
    assert_eq!(decoded_events(&r), Some(expected.clone()), "{r}");

    // A policy naming other origins: the browser refuses each read.
    for init in ["{}", "{method: 'HEAD'}", bearer.as_str()] {
        let r = run(format!("probe('{}', {init})", catch_up(closed)));
        assert!(
            r["refused"]
                .as_str()
                .is_some_and(|e| e.contains("TypeError")),
            "{init}: {r}"
        );
    }
    let r = run(format!("listen('{}')", sse(closed)));
    assert_eq!(
        (r["error"].clone(), r["readyState"].clone()),
        (json!(true), json!(2)),
        "{r}"
    );
    assert_eq!(r["data"], json!([]), "{r}");
    {
        let ledger = closed_ledger.lock().unwrap();
        // The simple reads reached the server, which answered: the browser hid the answers.
        let gets: Vec<&str> = ledger
            .iter()
            .filter(|a| a.method == Method::GET)
            .map(|a| a.uri.as_str())
            .collect();
        assert_eq!(
            gets,
            [
                "/streams/lanes/main?offset=-1",
                "/streams/lanes/main?offset=-1&live=sse"
            ],
            "the catch-up and the EventSource: {ledger:?}"
        );
        assert_eq!(
            ledger.iter().filter(|a| a.method == Method::HEAD).count(),
            1
        );
        // The preflighted one was never sent.
        assert!(
            ledger.iter().any(|a| a.method == Method::OPTIONS),
            "{ledger:?}"
        );
        assert!(
            ledger.iter().all(|a| a.authorization.is_none()),
            "{ledger:?}"
        );
    }

    // The page's origin with credentials, and the read hook.
    let r = run(format!("probe('{}')", catch_up(credentialed)));
    assert_eq!(r["status"], 401, "no credential: {r}");
    assert_eq!(
        (r["body"].clone(), r["next"].clone()),
        (json!(""), Value::Null),
        "{r}"
    );
    let r = run(format!(
        "probe('{}', {{headers: {{Authorization: 'Bearer wrong'}}}})",
        catch_up(credentialed)
    ));
    assert_eq!(r["status"], 403, "a wrong token: {r}");
    assert_eq!(
        (r["body"].clone(), r["next"].clone()),
        (json!(""), Value::Null),
        "{r}"
    );
    let r = run(format!("probe('{}', {bearer})", catch_up(credentialed)));
    assert_eq!(r["status"], 200, "the token: {r}");
    assert_eq!(decoded(r["body"].as_str()), Some(expected.clone()));
    let r = run(format!(
        "listen('{}', {{withCredentials: true}})",
        sse(credentialed)
    ));
    assert_eq!(
        (r["error"].clone(), r["readyState"].clone()),
        (json!(true), json!(2)),
        "no cookie yet: {r}"
    );
    assert_eq!(r["data"], json!([]), "{r}");

    // What an EventSource can send without cookies: a token in the query.
    let r = run(format!("listen('{}&token={TOKEN}')", sse(credentialed)));
    assert_eq!(
        r["control"]["streamNextOffset"],
        next.as_str(),
        "the query token: {r}"
    );
    assert_eq!(decoded_events(&r), Some(expected.clone()), "{r}");

    let r = run(format!(
        "probe('http://{credentialed}/login', {{method: 'POST', credentials: 'include'}})"
    ));
    assert_eq!(r["status"], 204, "{r}");
    let r = run("document.cookie".to_owned());
    assert_eq!(
        r, "",
        "the session cookie is the server's origin's, HttpOnly"
    );
    let r = run(format!(
        "probe('{}', {{credentials: 'include'}})",
        catch_up(credentialed)
    ));
    assert_eq!(r["status"], 200, "the cookie: {r}");
    assert_eq!(decoded(r["body"].as_str()), Some(expected.clone()));
    assert_eq!(r["next"], next.as_str(), "{r}");
    let r = run(format!(
        "probe('{}', {{method: 'HEAD', credentials: 'include'}})",
        catch_up(credentialed)
    ));
    assert_eq!(
        (r["status"].clone(), r["next"].clone()),
        (json!(200), json!(next)),
        "{r}"
    );
    let r = run(format!(
        "listen('{}', {{withCredentials: true}})",
        sse(credentialed)
    ));
    assert_eq!(
        r["control"]["streamNextOffset"],
        next.as_str(),
        "the cookie, to SSE: {r}"
    );
    assert_eq!(decoded_events(&r), Some(expected.clone()), "{r}");
    // Without `credentials: 'include'` the browser does not send the cookie across origins.
    let r = run(format!("probe('{}')", catch_up(credentialed)));
    assert_eq!(r["status"], 401, "the cookie left out: {r}");

    let session = format!("session={SESSION}");
    let seen = seen.lock().unwrap().clone();
    let expected_seen = [
        (ReadKind::CatchUp, None),
        (ReadKind::CatchUp, None),
        (ReadKind::CatchUp, None),
        (ReadKind::Sse, None),
        (ReadKind::Sse, None),
        (ReadKind::CatchUp, Some(session.clone())),
        (ReadKind::Head, Some(session.clone())),
        (ReadKind::Sse, Some(session)),
        (ReadKind::CatchUp, None),
    ];
    assert_eq!(
        seen, expected_seen,
        "what the hook was asked, with which cookie"
    );

    browser.close();
}
