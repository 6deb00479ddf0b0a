//! The agent lane served live (the `live` feature): the lane's durable log served as a
//! Durable Stream, a web page that renders it with `js/chord-replica.mjs`, and a Rust replica
//! following it over HTTP.
//!
//! - `GET /`: the page (streaming text, tool output window, transcript, status).
//! - `GET /chord-replica.mjs`: the JavaScript replica the page imports, which a page on any
//!   origin may import too (`Access-Control-Allow-Origin: *`), and `GET /src/*.mjs`: the
//!   modules it imports, served beside it where a browser resolves its relative imports.
//! - `GET /streams/lanes/main?offset=..&live=sse` (and `HEAD`, catch-up, `live=long-poll`):
//!   the lane's stream.

use std::error::Error;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use chord::replica::Replica;
use chord::store::{Address, JsonlStore};
use chord::streams::{self, Log, Streams};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use serde_json::Value;

use super::{run_agent, Args, LaneView, Stream};

impl Stream {
    /// The producer's state as JSON.
    pub(crate) fn state(&self) -> Value {
        serde_json::to_value(self.lane.get()).unwrap_or(Value::Null)
    }

    /// Starts the lane over: flushes a base batch with an empty lane.
    pub(crate) fn restart(&mut self) -> Result<(), Box<dyn Error>> {
        self.lane.replace(LaneView::default());
        self.flush("new turn (base batch)")
    }

    /// The log the lane is written to, which the server serves.
    pub(crate) fn log(&self) -> Log<JsonlStore> {
        self.log.store().clone()
    }

    /// Makes sure the log holds the lane (a base batch now if it holds nothing yet), then
    /// pauses `pace` after each batch so that a person (or a browser) can watch.
    pub(crate) fn serve(&mut self, pace: Duration) -> Result<(), Box<dyn Error>> {
        if self.log.wants_base(&self.address) {
            self.lane.rebase();
            self.flush("the lane's first base batch")?;
        }
        self.pace = pace;
        Ok(())
    }

    /// Stops printing each batch.
    pub(crate) fn quiet(&mut self) {
        self.output = super::Output::Quiet;
    }
}

/// The page, which imports the module below and follows [`lane`]'s stream.
const PAGE: &str = include_str!("page.html");

/// The dependency-free JavaScript replica: its entry, which the page imports.
const MODULE: &str = include_str!("chord-replica.mjs");

/// The modules the entry imports (`./src/*.mjs`, each importing others beside it), served at
/// the paths a browser resolves those relative imports to. `js/test/served.test.mjs` fails if
/// a module the entry reaches is missing here.
const MODULES: &[(&str, &str)] = &[
    ("/src/apply.mjs", include_str!("src/apply.mjs")),
    ("/src/batch-text.mjs", include_str!("src/batch-text.mjs")),
    ("/src/errors.mjs", include_str!("src/errors.mjs")),
    ("/src/follow.mjs", include_str!("src/follow.mjs")),
    ("/src/grammar.mjs", include_str!("src/grammar.mjs")),
    ("/src/http.mjs", include_str!("src/http.mjs")),
    ("/src/replica.mjs", include_str!("src/replica.mjs")),
    ("/src/sse.mjs", include_str!("src/sse.mjs")),
    ("/src/transports.mjs", include_str!("src/transports.mjs")),
    ("/src/wait.mjs", include_str!("src/wait.mjs")),
    ("/src/wire.mjs", include_str!("src/wire.mjs")),
];

/// Where the lane lives in the durable log.
pub(crate) fn lane() -> Address {
    Address::new("lanes", "main")
}

/// The page, the module (its entry and the modules beside it) and the streams.
pub(crate) fn router(streams: Streams) -> Router {
    let router = streams
        .router()
        .route("/", get(page))
        .route("/chord-replica.mjs", get(|| module(MODULE)));
    MODULES.iter().fold(router, |router, &(path, text)| {
        router.route(path, get(move || module(text)))
    })
}

async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
}

/// One JavaScript module file, entry or not: each must load where the entry loads.
async fn module(text: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            // A module script from another origin loads only with CORS: js/README.md's
            // browser quickstart, pasted into a page of the reader's own origin, imports it
            // from here (the streams allow any origin already, `Streams::cors`).
            // The modules the entry imports are fetched the same way, so they need it too.
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        text,
    )
}

/// A running server: where it listens.
pub(crate) struct LaneServer {
    pub(crate) addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

impl LaneServer {
    /// Serves `streams`, the page and the module on 127.0.0.1:`port` (0 picks a free port).
    pub(crate) async fn start(port: u16, streams: Streams) -> io::Result<LaneServer> {
        LaneServer::start_app(port, router(streams)).await
    }

    /// Serves `app` (the [`router`], maybe with more routes) on 127.0.0.1:`port`.
    pub(crate) async fn start_app(port: u16, app: Router) -> io::Result<LaneServer> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(streams::serve(listener, app, async {
            let _ = stopped.await;
        }));
        Ok(LaneServer {
            addr,
            stop: Some(stop),
            task,
        })
    }

    /// The page's URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The lane's stream's URL.
    pub(crate) fn stream_url(&self) -> String {
        format!("http://{}{}", self.addr, streams::stream_path(&lane()))
    }

    /// Closes every connection and stops listening.
    pub(crate) async fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

/// The example's `main` with the `live` feature: the agent's turn as without it, also served
/// on loopback and checked against a Rust replica over HTTP; `--serve` then keeps going.
/// A stop asked for: Ctrl-C (SIGINT) or, on Unix, SIGTERM; resolves to the exit code a shell
/// reports for it (130, 143). Call within the runtime: the handlers are installed at once,
/// not when the future is first polled.
fn stop_signal() -> io::Result<impl std::future::Future<Output = i32>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => 130,
                _ = terminate.recv() => 143,
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            130
        })
    }
}

pub(crate) fn main(mut s: Stream, args: &Args) -> Result<(), Box<dyn Error>> {
    let port = match args.port {
        Some(port) => port,
        None => match std::env::var("CHORD_PORT") {
            Ok(port) => port
                .parse()
                .map_err(|e| format!("CHORD_PORT={port}: {e}"))?,
            Err(_) => 0,
        },
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let pace = Duration::from_millis(if args.serve { 60 } else { 2 });
    s.serve(pace)?;
    let server = runtime
        .block_on(LaneServer::start(port, Streams::new(&s.log())))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    if args.serve {
        // Ctrl-C or SIGTERM (a service manager's stop, `kill`) ends the process from here:
        // the temporary log goes first. Listened for before the URL is printed, so a stop
        // sent as soon as the demo says it serves is already handled.
        let stopped = {
            let _entered = runtime.enter();
            stop_signal()?
        };
        let temporary = s.log_file.temporary_dir().map(|d| d.to_path_buf());
        println!(
            "serving the lane: open {} (stream: {}); Ctrl-C stops\nthe lane's log: {}{}\n",
            server.url(),
            server.stream_url(),
            s.log_file.path().display(),
            if temporary.is_some() {
                " (temporary: removed when the demo stops)"
            } else {
                ""
            }
        );
        runtime.spawn(async move {
            let code = stopped.await;
            if let Some(dir) = temporary {
                let _ = std::fs::remove_dir_all(dir);
            }
            std::process::exit(code);
        });
    }
    let replica = {
        let _entered = runtime.enter();
        Replica::connect(&server.stream_url())?
    };
    runtime
        .block_on(async {
            let live = replica.wait_until(|r| r.live);
            tokio::time::timeout(Duration::from_secs(10), live).await
        })
        .map_err(|_| format!("the HTTP replica did not subscribe: {:?}", replica.stats()))?;

    // The agent runs on this thread; the server and the replica on the runtime's.
    run_agent(&mut s)?;
    s.summary()?;
    let expected = s.state();
    let reached = runtime.block_on(async {
        let wait = replica.wait_until(|r| r.value.as_ref() == Some(&expected));
        tokio::time::timeout(Duration::from_secs(10), wait).await
    });
    if reached.is_err() {
        return Err(format!(
            "the HTTP replica did not reach the producer's state: {:?}",
            replica.stats()
        )
        .into());
    }
    let stats = replica.stats();
    println!(
        "a Rust replica following the stream over HTTP equals the producer too: {} batches, {} start(s) from a base batch, {} resume(s)",
        stats.batches, stats.subscriptions, stats.resumes
    );

    if args.serve {
        println!(
            "--serve: the agent starts over every few seconds; open {} (Ctrl-C stops)",
            server.url()
        );
        s.quiet();
        loop {
            std::thread::sleep(Duration::from_secs(3));
            s.restart()?;
            run_agent(&mut s)?;
        }
    }
    drop(replica);
    runtime.block_on(server.stop())?;
    Ok(())
}
