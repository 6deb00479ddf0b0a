//! `chord serve`: a log's streams over HTTP, with health and readiness routes, `/metrics`,
//! a cross-origin policy, a cache policy, bearer tokens for readers (and writers), and a
//! graceful drain on `SIGTERM` or Ctrl-C. Everything an operator needs to run chord without
//! writing Rust.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chord::store::{Durability, JsonlStore, PostgresStore, Store};
use chord::streams::{self, default_cors, Access, Health, Journaled, Log, Memory, Server, Streams};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::failure::with_causes;
use crate::listen::{self, ListenAddr, ListenError};
use crate::location::{postgres_url, Kind, Location, LocationError};
use crate::tokens::{TokenError, Tokens};

/// The route of the Prometheus scrape.
pub(crate) const METRICS_ROUTE: &str = "/metrics";

/// Serve a log's streams over HTTP (Durable Streams: catch-up, long-poll, SSE), with
/// `/healthz`, `/readyz` and `/metrics`, until SIGTERM or Ctrl-C, then drain.
///
/// Who may read must be chosen: `--read-token-file` (readers send a token of the file) or
/// `--public` (anyone who reaches the address reads every stream).
#[derive(clap::Args, Debug)]
#[command(group(
    clap::ArgGroup::new("readers")
        .required(true)
        .args(["public", "read_token_file"]),
))]
pub(crate) struct Args {
    /// The log: a JSONL file, a SQLite database (with the `sqlite` feature), or a PostgreSQL
    /// URL (`postgres://...?schema=name`). A JSONL file is served as it is when opened
    /// (read-only) unless `--write-token-file` enables writes; a SQLite database is opened
    /// with its writer's lock (appends come through this server); a PostgreSQL store is
    /// followed live, whoever writes to it. A file that does not exist is created when
    /// writes are on, as the kind its name says: `.jsonl` a JSONL log; `.sqlite`, `.sqlite3`,
    /// `.db` a SQLite database; any other name needs `--store jsonl` or `--store sqlite`.
    log: PathBuf,
    /// Make an existing empty SQLite database (0 bytes, or no table) a chord store. Never
    /// done unasked: a database whose schema is damaged looks the same. A database with
    /// other applications' tables is refused all the same.
    #[arg(long)]
    create: bool,
    /// The host and port to listen on: an IP address (`0.0.0.0:8080`, `[::1]:8080`) or a
    /// name (`localhost:8080`), whose first address that can be bound is taken; port 0
    /// takes a free one. The address taken is printed on stdout as
    /// `listening on http://ADDR`.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    listen: ListenAddr,
    /// Serve every stream, and `/metrics`, to whoever reaches the address, without a
    /// credential.
    #[arg(long)]
    public: bool,
    /// Serve reads (and `/metrics`) only to requests carrying one of the tokens in this file
    /// (one a line; blank lines and lines starting with `#` are skipped), as
    /// `Authorization: Bearer TOKEN` or, for an EventSource, a `token=TOKEN` query
    /// parameter; others are answered 401.
    #[arg(long, value_name = "PATH")]
    read_token_file: Option<PathBuf>,
    /// Enable the write side (`PUT`, `POST`, `DELETE`) for requests carrying one of the
    /// tokens in this file as `Authorization: Bearer TOKEN`. A JSONL file is then opened for
    /// writing (created if missing; one writer per file). Without it, writes answer 405.
    ///
    /// With writes on, the server is a whole Durable Streams server: beside the chord logs
    /// it keeps protocol streams of any content type (created, appended, closed, forked,
    /// expired, deleted, with idempotent producers), durably, in a journal of their own: the
    /// file `LOG.streams` next to a JSONL or SQLite log, the table `chord_protocol_streams`
    /// in a PostgreSQL store's schema (one server at a time holds either; over PostgreSQL the
    /// other nodes serve the chord logs only). A `PUT` creates a
    /// chord log when it sends `Chord-Kind: log`, or no `Chord-Kind` and an
    /// `application/json` body of chord batches starting with a base; any other `PUT`
    /// (`Chord-Kind: stream`) creates a protocol stream. A fork's token must also be a read
    /// token (or it answers 401); a chord log is not forked (501).
    #[arg(long, value_name = "PATH")]
    write_token_file: Option<PathBuf>,
    /// The `Cache-Control` of catch-up and long-poll reads, e.g. `public, max-age=60,
    /// stale-while-revalidate=300` for streams every reader may see, behind a shared cache.
    /// Default: `private, max-age=60, stale-while-revalidate=300` with `--public`, `private,
    /// no-cache` with `--read-token-file` (which accepts only a policy that keeps shared
    /// caches out: one with `private`, `no-store` or `no-cache`). A joiner's answers
    /// (`offset=base`, `offset=-1`) are sent with it shortened to the 6 minutes of records
    /// the server keeps readable.
    #[arg(long, value_name = "VALUE")]
    cache_control: Option<String>,
    /// Let pages on this origin (`https://app.example`) read across origins; repeat for more.
    /// Default: pages on any origin, without cookies.
    #[arg(
        long = "cors-origin",
        value_name = "ORIGIN",
        conflicts_with = "no_cors"
    )]
    cors_origins: Vec<String>,
    /// Answer no cross-origin request: only pages on the server's own origin read.
    #[arg(long)]
    no_cors: bool,
    /// Seconds a shutdown waits for the responses in flight before it cuts them (SSE
    /// responses and long-polls end at once; catch-up reads finish).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    drain: u64,
}

/// Why `chord serve` could not start or went on serving: each names the flag or the log.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeError {
    /// `--read-token-file` or `--write-token-file` names no usable file of tokens.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// `--cache-control` is not a header value.
    #[error("--cache-control {0:?}: not a valid header value (visible ASCII)")]
    CacheControl(String),
    /// `--cache-control` lets shared caches store reads that need a token.
    #[error(
        "--cache-control {0:?} lets a shared cache store reads, but --read-token-file guards \
         them: a cache would answer anyone asking for a stream's URL with what it stored for \
         a reader with a token. Add `private` (or `no-cache`, or `no-store`), or use --public"
    )]
    SharedWithTokens(String),
    /// `--cors-origin` is not an origin.
    #[error("--cors-origin {0:?}: not an origin (scheme://host or scheme://host:port)")]
    Origin(String),
    /// The log could not be opened.
    #[error("opening the log to serve: {}", with_causes(.0))]
    Open(#[source] chord::store::Error),
    /// The protocol streams' journal could not be opened.
    #[error("opening the protocol streams' journal: {}", with_causes(.0))]
    Journal(#[source] chord::store::Error),
    /// The log names no store to serve, or one of another kind than its name says.
    #[error(transparent)]
    Location(#[from] LocationError),
    /// The listen address could not be resolved or bound.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The Prometheus recorder could not be installed.
    #[error("installing the metrics recorder: {0}")]
    Metrics(String),
    /// The runtime could not start, or serving failed.
    #[error("serving on {addr}: {source}")]
    Serve {
        /// The address served.
        addr: String,
        /// Why.
        source: io::Error,
    },
}

/// What the flags say, checked.
struct Config {
    read: Option<Arc<Tokens>>,
    write: Option<Arc<Tokens>>,
    cache_control: Option<HeaderValue>,
    cors: Cors,
    drain: Duration,
}

/// The cross-origin policy asked for.
enum Cors {
    /// [`default_cors`]: any origin, no credentials.
    Any,
    /// [`default_cors`] for these origins only.
    Origins(Vec<HeaderValue>),
    /// No cross-origin request answered.
    Off,
}

impl Config {
    fn new(args: &Args) -> Result<Config, ServeError> {
        let read = match &args.read_token_file {
            Some(path) => Some(Arc::new(Tokens::read("--read-token-file", path)?)),
            None => None,
        };
        let write = match &args.write_token_file {
            Some(path) => Some(Arc::new(Tokens::read("--write-token-file", path)?)),
            None => None,
        };
        let cache_control = match &args.cache_control {
            Some(value) => {
                let header = HeaderValue::from_str(value)
                    .map_err(|_| ServeError::CacheControl(value.clone()))?;
                if read.is_some() && !keeps_shared_caches_out(value) {
                    return Err(ServeError::SharedWithTokens(value.clone()));
                }
                Some(header)
            }
            None => None,
        };
        let cors = if args.no_cors {
            Cors::Off
        } else if args.cors_origins.is_empty() {
            Cors::Any
        } else {
            let origins = args
                .cors_origins
                .iter()
                .map(|o| origin(o).ok_or_else(|| ServeError::Origin(o.clone())))
                .collect::<Result<_, _>>()?;
            Cors::Origins(origins)
        };
        Ok(Config {
            read,
            write,
            cache_control,
            cors,
            drain: Duration::from_secs(args.drain),
        })
    }

    /// The routes: the streams of `log`, `/healthz`, `/readyz`, and `/metrics` from `scrape`.
    fn router<S: Store + Send + 'static>(
        &self,
        log: &Log<S>,
        scrape: PrometheusHandle,
        protocol: Option<Journaled>,
    ) -> Router {
        let mut streams = Streams::new(log).cors(match &self.cors {
            Cors::Any => Some(default_cors()),
            Cors::Origins(origins) => Some(default_cors().allow_origin(origins.clone())),
            Cors::Off => None,
        });
        if let Some(tokens) = &self.read {
            let tokens = Arc::clone(tokens);
            streams = streams.reads(move |r| {
                if tokens.allow(r.headers, Some(r.uri)) {
                    Access::Allow
                } else {
                    Access::Unauthorized
                }
            });
        }
        if let Some(tokens) = &self.write {
            let tokens = Arc::clone(tokens);
            streams = streams.writes(move |w| {
                if tokens.allow(w.headers, None) {
                    Access::Allow
                } else {
                    Access::Unauthorized
                }
            });
        }
        if let Some(value) = &self.cache_control {
            streams = streams.cache_control(value.clone());
        }
        if let Some(protocol) = protocol {
            streams = streams.backend(protocol);
        }
        let metrics = Router::new()
            .route(METRICS_ROUTE, get(metrics))
            .with_state(Arc::new(Scrape {
                handle: scrape,
                tokens: self.read.clone(),
            }));
        // The headers every chord answer carries, on `/metrics` and on unrouted paths too.
        chord::live::headers(
            streams
                .router()
                .merge(Health::new(log).router())
                .merge(metrics)
                .layer(axum::middleware::from_fn(one_token)),
        )
    }
}

/// Whether a `Cache-Control` policy keeps every answer out of shared caches: a bare
/// `private`, `no-store` or `no-cache` (one with an argument, `private="x"`, restricts only
/// the fields it names).
fn keeps_shared_caches_out(policy: &str) -> bool {
    policy.split(',').any(|directive| {
        let directive = directive.trim();
        ["private", "no-store", "no-cache"]
            .iter()
            .any(|name| directive.eq_ignore_ascii_case(name))
    })
}

/// A request giving `token` more than once is refused before any hook reads it: which of two
/// tokens authorizes it would depend on who reads the query.
async fn one_token(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let tokens = request.uri().query().map_or(0, |query| {
        query
            .split('&')
            .filter(|pair| pair.split('=').next() == Some("token"))
            .count()
    });
    if tokens > 1 {
        return (
            StatusCode::BAD_REQUEST,
            "multiple token parameters not allowed\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// `text` as a `scheme://host[:port]` origin.
fn origin(text: &str) -> Option<HeaderValue> {
    let uri: Uri = text.parse().ok()?;
    let bare = uri.scheme().is_some()
        && uri.authority().is_some()
        && !text.ends_with('/')
        && uri.path_and_query().is_none_or(|p| p.as_str() == "/");
    bare.then(|| HeaderValue::from_str(text).ok()).flatten()
}

/// What `/metrics` needs.
struct Scrape {
    handle: PrometheusHandle,
    /// The readers' tokens, when reads need one: the scrape does too (the metrics name
    /// streams that have live readers).
    tokens: Option<Arc<Tokens>>,
}

/// `GET /metrics`: the Prometheus text exposition.
async fn metrics(State(scrape): State<Arc<Scrape>>, headers: HeaderMap) -> Response {
    if let Some(tokens) = &scrape.tokens {
        if !tokens.allow(&headers, None) {
            return (
                StatusCode::UNAUTHORIZED,
                [
                    (header::WWW_AUTHENTICATE, "Bearer"),
                    (header::CACHE_CONTROL, "no-store"),
                ],
            )
                .into_response();
        }
    }
    (
        [
            (
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        scrape.handle.render(),
    )
        .into_response()
}

/// The log to serve.
enum Opened {
    Jsonl(Log<JsonlStore>),
    Postgres(Log<PostgresStore>),
    #[cfg(feature = "sqlite")]
    Sqlite(Log<chord::store::SqliteStore>),
}

/// Opens `log` to serve: for writing when writes are on, else read-only. A file that does
/// not exist is created, when writes are on, as the kind its name (or `store`) says; an
/// empty SQLite database becomes a store only when `create` asks.
fn open(
    log: &Path,
    store: Option<Kind>,
    writes: bool,
    create: bool,
) -> Result<(Opened, String), ServeError> {
    let (path, kind) = match Location::of(log, store)? {
        Location::Postgres(url) => {
            let store = if writes {
                PostgresStore::open(url, Durability::default())
            } else {
                PostgresStore::open_read_only(url)
            }
            .map_err(ServeError::Open)?;
            let name = store.database().to_owned();
            return Ok((Opened::Postgres(Log::new(store)), name));
        }
        Location::File { path, kind } => (path, kind),
    };
    let name = path.display().to_string();
    let missing = !path.exists();
    if writes && missing {
        Location::kind_to_create(path, kind)?;
    }
    if kind == Some(Kind::Sqlite) {
        return open_sqlite(path, missing && writes, create).map(|opened| (opened, name));
    }
    let store = if writes {
        JsonlStore::open(path, Durability::default())
    } else {
        JsonlStore::open_read_only(path)
    }
    .map_err(ServeError::Open)?;
    if let Some(torn) = store.torn_tail() {
        eprintln!(
            "chord: warning: {}:{}: ignoring an incomplete last line ({} bytes): a writer is \
             appending, or died in the middle of a write",
            path.display(),
            torn.line,
            torn.len
        );
    }
    Ok((Opened::Jsonl(Log::new(store)), name))
}

/// Opens a SQLite database to serve, with its writer's lock (a producer must append through
/// this server, or not run meanwhile): one that holds a chord store; a new one (`new`); an
/// empty one when `create` asks. Another application's database is refused.
#[cfg(feature = "sqlite")]
fn open_sqlite(path: &Path, new: bool, create: bool) -> Result<Opened, ServeError> {
    use chord::store::{SqliteContents, SqliteStore};
    let contents = if new {
        SqliteContents::Empty { pages: 0 }
    } else {
        SqliteStore::contents(path).map_err(ServeError::Open)?
    };
    let store = match contents {
        SqliteContents::Chord => SqliteStore::open(path, Durability::default()),
        SqliteContents::Empty { .. } if new || create => {
            SqliteStore::create(path, Durability::default())
        }
        SqliteContents::Empty { pages } => {
            return Err(LocationError::Empty {
                path: path.to_path_buf(),
                pages,
            }
            .into())
        }
        SqliteContents::Other { tables } => {
            return Err(LocationError::Other {
                path: path.to_path_buf(),
                tables,
            }
            .into())
        }
        other => {
            unreachable!("SqliteStore::contents of a kind this build does not know: {other:?}")
        }
    }
    .map_err(ServeError::Open)?;
    Ok(Opened::Sqlite(Log::new(store)))
}

/// A build without SQLite names the feature it lacks.
#[cfg(not(feature = "sqlite"))]
fn open_sqlite(path: &Path, _new: bool, _create: bool) -> Result<Opened, ServeError> {
    Err(LocationError::NoSqlite {
        path: path.to_path_buf(),
    }
    .into())
}

/// The protocol streams served beside the log at `log` (see [`JOURNAL_SUFFIX`]).
fn protocol_streams(log: &Path) -> Result<Journaled, chord::store::Error> {
    match postgres_url(log) {
        Some(url) => Journaled::postgres(url, Memory::new()),
        None => {
            let mut path = log.as_os_str().to_owned();
            path.push(JOURNAL_SUFFIX);
            Journaled::file(PathBuf::from(path), Memory::new())
        }
    }
}

/// What a file log's protocol streams' journal adds to its name: `lanes.jsonl` keeps them in
/// `lanes.jsonl.streams`.
pub(crate) const JOURNAL_SUFFIX: &str = ".streams";

/// Resolves at the first `SIGTERM` or `SIGINT` (Ctrl-C). The handlers are installed when
/// this is called, before the server says it listens, so that a signal sent as soon as it
/// does is never the default one (which would kill the process without a drain).
fn stop_signal() -> io::Result<impl std::future::Future<Output = ()> + Send> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

/// Runs `chord serve`.
pub(crate) fn run(args: &Args, store: Option<Kind>) -> Result<(), ServeError> {
    let config = Config::new(args)?;
    let writes = config.write.is_some();
    // Opened before the runtime starts, and dropped after it has stopped: the PostgreSQL
    // client blocks on a runtime of its own, which cannot start (or stop) on a thread of
    // another. The router's handles to the log go with the runtime; this one goes last.
    let (log, name) = open(&args.log, store, writes, args.create)?;
    let protocol = match writes.then(|| protocol_streams(&args.log)) {
        None => None,
        Some(Ok(journal)) => Some(journal),
        // Over PostgreSQL, another node with writes holds the schema's protocol streams:
        // this one takes the chord logs' writes and serves no protocol stream.
        Some(Err(chord::store::Error::Locked { path })) if postgres_url(&args.log).is_some() => {
            eprintln!(
                "chord: warning: {}: another node holds the protocol streams; this one serves \
                 and takes writes for the chord logs only",
                path.display()
            );
            None
        }
        Some(Err(e)) => return Err(ServeError::Journal(e)),
    };
    if let (Opened::Jsonl(_), false) = (&log, writes) {
        eprintln!(
            "chord: serving {name} as it is now, read-only: records another process appends \
             later are not served (serve a PostgreSQL store to follow its producers, or take \
             appends here with --write-token-file)"
        );
    }
    let _ = tracing_subscriber::fmt()
        .with_writer(io::stderr)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .try_init();
    let serving = |source| ServeError::Serve {
        addr: args.listen.to_string(),
        source,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(serving)?;
    let served = runtime.block_on(async {
        let scrape = PrometheusBuilder::new()
            .set_buckets(streams::metrics::LATENCY_BUCKETS)
            .map_err(|e| ServeError::Metrics(e.to_string()))?
            .install_recorder()
            .map_err(|e| ServeError::Metrics(e.to_string()))?;
        streams::describe_metrics();
        // Every family answers from the first scrape, not only once something happened.
        streams::register_metrics();
        let upkeep = scrape.clone();
        tokio::spawn(async move {
            // Histograms' samples are folded into their buckets here, not at each record.
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                upkeep.run_upkeep();
            }
        });
        let app = match &log {
            Opened::Jsonl(log) => config.router(log, scrape, protocol),
            Opened::Postgres(log) => config.router(log, scrape, protocol),
            #[cfg(feature = "sqlite")]
            Opened::Sqlite(log) => config.router(log, scrape, protocol),
        };
        let listener = listen::bind(&args.listen).await?;
        let addr = listener.local_addr().map_err(serving)?;
        let stop = stop_signal().map_err(serving)?;
        let reads = match &config.read {
            Some(tokens) => format!("{} read token(s)", tokens.len()),
            None => "public reads".to_owned(),
        };
        let writes = match &config.write {
            Some(tokens) => format!("{} write token(s)", tokens.len()),
            None => "no writes".to_owned(),
        };
        eprintln!("chord: serving {name} ({reads}, {writes})");
        let mut stdout = io::stdout();
        let _ = writeln!(stdout, "listening on http://{addr}");
        let _ = stdout.flush();
        Server::new()
            .drain(config.drain)
            .serve(listener, app, stop)
            .await
            .map_err(|source| ServeError::Serve {
                addr: addr.to_string(),
                source,
            })?;
        eprintln!("chord: drained, exiting");
        Ok(())
    });
    drop(runtime);
    drop(log);
    served
}
