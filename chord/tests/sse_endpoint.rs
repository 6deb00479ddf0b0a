//! The Server-Sent Events endpoint as a client sees it on the wire, and the Rust replica
//! following it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use chord::hub::{Address, Hub};
use chord::replica::{Break, Replica};
use chord::sse::{self, Sse};
use chord::{path, track, Op};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const PATIENCE: Duration = Duration::from_secs(30);

fn lane() -> Address {
    Address::new("lanes", "main")
}

struct Server {
    hub: Hub,
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(sse: impl FnOnce(Hub) -> Sse) -> Server {
    start_with(Hub::new(), sse).await
}

async fn start_with(hub: Hub, sse: impl FnOnce(Hub) -> Sse) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let app = sse(hub.clone()).router();
    tokio::spawn(sse::serve(listener, app, async {
        let _ = stopped.await;
    }));
    Server {
        hub,
        addr,
        _stop: stop,
    }
}

/// Sends `request` and reads the response until `enough` holds for what arrived, or the
/// server closes the connection.
async fn exchange(addr: SocketAddr, request: &str, enough: impl Fn(&str) -> bool) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    while !enough(&String::from_utf8_lossy(&text)) {
        let left = PATIENCE.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => text.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => panic!("reading the response: {e}"),
            Err(_) => panic!(
                "the response never had what was expected: {}",
                String::from_utf8_lossy(&text)
            ),
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n{extra}\r\n")
}

fn status(response: &str) -> &str {
    response.split("\r\n").next().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_batch_is_one_event_with_a_transport_id_and_no_resume() {
    let server = start(|hub| Sse::new(hub).keep_alive(Duration::from_millis(50))).await;
    let mut producer = track(json!({"text": ""}));
    server
        .hub
        .publish(&lane(), &producer.flush().unwrap())
        .unwrap();

    let hub = server.hub.clone();
    let publisher = tokio::spawn(async move {
        while hub.subscribers(&lane()) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for piece in ["x", "y"] {
            producer
                .state()
                .member("text")
                .unwrap()
                .push_str(piece)
                .unwrap();
            hub.publish(&lane(), &producer.flush().unwrap()).unwrap();
        }
    });
    // A Last-Event-ID is ignored: a reconnecting client starts from a base batch.
    let response = exchange(
        server.addr,
        &get("/streams/lanes/main", "Last-Event-ID: 57\r\n"),
        |t| t.contains(": keep-alive"),
    )
    .await;
    publisher.await.unwrap();
    let head = response.to_ascii_lowercase();
    assert_eq!(status(&response), "HTTP/1.1 200 OK");
    assert!(
        head.contains("content-type: text/event-stream\r\n"),
        "{response}"
    );
    assert!(head.contains("cache-control: no-cache\r\n"));
    assert!(head.contains("x-accel-buffering: no\r\n"));
    let base = "retry: 1000\nid: 1\ndata: [[\"r\",{\"text\":\"\"}]]\n\n";
    assert!(response.contains(base), "{response}");
    assert!(response.contains("id: 2\ndata: [[\"a\",[\"text\"],\"x\"]]\n\n"));
    assert!(
        response.contains("id: 3\ndata: [[\"#\",0,[\"text\"]],[\"a\",0,\"y\"]]\n\n"),
        "the connection's own encoder interned the path on its second use: {response}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_reach_nothing() {
    let server = start(Sse::new).await;
    server
        .hub
        .publish(&lane(), &[Op::Replace(json!({"text": "kept"}))])
        .unwrap();
    let long = "k".repeat(sse::MAX_NAME + 1);
    let cases = [
        (get("/streams/lanes/nowhere", ""), "HTTP/1.1 404 Not Found"),
        (get("/streams/lanes", ""), "HTTP/1.1 404 Not Found"),
        (get("/streams/lanes/main/more", ""), "HTTP/1.1 404 Not Found"),
        (get("/streams/lanes/a%0Ab", ""), "HTTP/1.1 400 Bad Request"),
        (get("/streams/lanes/%FF", ""), "HTTP/1.1 400 Bad Request"),
        (get(&format!("/streams/lanes/{long}"), ""), "HTTP/1.1 400 Bad Request"),
        (
            "POST /streams/lanes/main HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n[[\"r\",\"overwritten\"]]".into(),
            "HTTP/1.1 405 Method Not Allowed",
        ),
        ("GARBAGE\r\n\r\n".into(), "HTTP/1.1 400 Bad Request"),
    ];
    for (request, expected) in cases {
        let response = exchange(server.addr, &request, |t| t.contains("\r\n\r\n")).await;
        assert_eq!(status(&response), expected, "{request:?}");
    }
    assert_eq!(server.hub.get(&lane()), Some(json!({"text": "kept"})));
    assert_eq!(server.hub.stats().published, 1);
    assert_eq!(server.hub.stats().subscribers, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_address_is_reachable_through_its_percent_encoded_path() {
    let server = start(Sse::new).await;
    let odd = Address::new("sessions/42", "a b?c#d%é");
    server
        .hub
        .publish(&odd, &[Op::Replace(json!({"odd": true}))])
        .unwrap();
    let path = sse::stream_path(&odd);
    let response = exchange(server.addr, &get(&path, ""), |t| t.contains("\n\n")).await;
    assert_eq!(status(&response), "HTTP/1.1 200 OK", "{path}");
    assert!(response.contains(r#"data: [["r",{"odd":true}]]"#));
}

#[derive(Deserialize, Debug, PartialEq)]
struct Lane {
    text: String,
    n: u32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_waits_for_its_value_then_follows_it_typed() {
    let server = start(Sse::new).await;
    let url = format!("http://{}{}", server.addr, sse::stream_path(&lane()));
    let replica = Replica::builder(&url)
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
        .connect()
        .unwrap();
    // Not there yet: the replica keeps asking.
    let start = Instant::now();
    while replica.stats().breaks < 2 {
        assert!(start.elapsed() < PATIENCE);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(replica.stats().last_break, Some(Break::Status(404)));
    assert_eq!(replica.value(), None);
    assert!(!replica.is_live());

    let mut producer = track(json!({"text": "", "n": 0}));
    server
        .hub
        .publish(&lane(), &producer.flush().unwrap())
        .unwrap();
    for i in 1..=50u32 {
        let mut state = producer.state();
        state
            .member("text")
            .unwrap()
            .push_str(&format!("{i} "))
            .unwrap();
        state.member("n").unwrap().set(i);
        server
            .hub
            .publish(&lane(), &producer.flush().unwrap())
            .unwrap();
    }
    let expected = serde_json::to_value(producer.get()).unwrap();
    let state = tokio::time::timeout(
        PATIENCE,
        replica.wait_until(|s| s.value.as_ref() == Some(&expected)),
    )
    .await
    .unwrap();
    assert!(state.live);
    let typed: Lane = replica.value_as().unwrap().unwrap();
    assert_eq!(typed.n, 50);
    assert!(typed.text.starts_with("1 2 3 ") && typed.text.ends_with(" 50 "));
    assert!(replica.value_as::<Vec<u8>>().unwrap().is_err());
    let stats = replica.stats();
    assert_eq!(stats.subscriptions, 1);

    // The change notification fires for every applied batch.
    let mut changes = replica.watch();
    changes.borrow_and_update();
    server
        .hub
        .publish(&lane(), &[Op::Set(path!["n"], 51.into())])
        .unwrap();
    tokio::time::timeout(PATIENCE, changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changes.borrow().value.as_ref().unwrap()["n"], 51);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_only_on_disk_is_served_from_its_recovered_state() {
    let hub = Hub::builder()
        .loader(|address| (address.key == "archived").then(|| json!({"text": "from disk"})))
        .build();
    let server = start_with(hub, Sse::new).await;
    let response = exchange(server.addr, &get("/streams/lanes/archived", ""), |t| {
        t.contains("\n\n")
    })
    .await;
    assert_eq!(status(&response), "HTTP/1.1 200 OK");
    assert!(
        response.contains(r#"data: [["r",{"text":"from disk"}]]"#),
        "{response}"
    );
    let response = exchange(server.addr, &get("/streams/lanes/other", ""), |t| {
        t.contains("\r\n\r\n")
    })
    .await;
    assert_eq!(status(&response), "HTTP/1.1 404 Not Found");
}
