//! Durable Streams: every address's log served over HTTP, resumable from any offset.
//!
//! The [Durable Streams protocol] reads an append-only, offset-addressed stream at a URL by
//! catch-up, long-poll or Server-Sent Events. chord serves each address's durable log as one
//! such stream (`application/json`; each message is one wire batch, exactly as stored), at
//! [`ROUTE`]:
//!
//! - [`Log`] wraps a [`Store`](crate::store::Store): the producer writes through it (a
//!   [`LogWriter`](crate::store::LogWriter) or [`Durable`](crate::store::Durable) over a
//!   clone), the server reads through it. Its tail cache holds each address's newest records,
//!   their SSE events framed once: every reader at the tail is sent the same bytes, and no
//!   reader has an encoder of its own.
//! - [`Offset`]s are the log's seqs, 16 hexadecimal digits: opaque to clients, sorted as the
//!   log is.
//! - A fresh reader starts at the latest base batch: the offset named by
//!   [`BASE_OFFSET_HEADER`] (`Chord-Base-Offset`) on every response, `HEAD` included. A
//!   reader resuming from an offset it was handed gets the records after it, no base batch.
//! - [`Retention`] says how many base batches stay readable, and
//!   [`LogBuilder::keep_for`] for how long at least (6 minutes by default: what a cache may
//!   keep a joiner's answer under the default policy, to which those answers' `Cache-Control`
//!   is shortened); an offset before the oldest base kept answers `410 Gone`, and the client
//!   restarts from the latest base (the one the `410`'s `Chord-Base-Offset` names).
//! - [`Streams`] is the axum router: the read path for every backend, open to every reader
//!   unless a read authorization hook guards it ([`Streams::reads`]), and the write side,
//!   off unless enabled with a write authorization hook ([`Streams::writes`]). With a
//!   [`Backend`] it is a whole Durable Streams server for *protocol streams* beside the
//!   chord logs: any content type, close, `DELETE`, idempotent producers, TTL and expiry,
//!   forks ([`Streams::backend`](Streams::backend)); [`Memory`] holds them for the process's
//!   life, [`Journaled`] beyond it (see [Two kinds of stream](#two-kinds-of-stream)).
//!   [`serve`] (or a configured [`Server`]) runs it with each connection's kernel send
//!   buffer capped.
//!
//! [Durable Streams protocol]: https://github.com/durable-streams/durable-streams
//!
//! # Example
//!
//! ```no_run
//! use chord::store::{Checkpoint, JsonlStore, LogWriter};
//! use chord::streams::{serve, Log, Streams};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let log = Log::new(JsonlStore::open("agent.jsonl", Default::default())?);
//! let writer = LogWriter::new(log.clone(), Checkpoint::EveryBytes(256 * 1024));
//! // ... the producer appends through `writer` (or a `Durable` over it) ...
//! let app = Streams::new(&log).router(); // GET /streams/{namespace}/{key}?offset=..&live=sse
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(listener, app, std::future::pending()).await?;
//! # drop(writer);
//! # Ok(())
//! # }
//! ```
//!
//! # Two kinds of stream
//!
//! A *chord log* holds wire batches: it starts with a base, every batch is validated, it has
//! one writer (its producer, often another process) and is never deleted or forked. A
//! *protocol stream* holds messages of any content type, as the protocol describes them:
//! created empty or not, appended, closed, forked, expired and deleted, with idempotent
//! producers. Reads are the same for both. Protocol streams need a [`Backend`]; without
//! one, the router serves chord logs only.
//!
//! Which kind a `PUT` creates is the `Chord-Kind` header's choice: `Chord-Kind: log` or
//! `Chord-Kind: stream`. A `PUT` without it creates a chord log when its body is
//! `application/json` and starts as chord batches starting with a base do (`[["r", ...` or
//! `[[["r", ...`), and a protocol stream otherwise: a producer's first batch makes a chord
//! log as it always has, and any Durable Streams client makes protocol streams without
//! knowing of chord. A chord log asked for keeps its validation, and a body that is not
//! batches is refused with the reason (`message 0: invalid batch text: a batch must be a
//! JSON array`); a `PUT` of one kind where the other is answers 409; an append to an address
//! holding neither answers 404 saying how to create a stream.
//!
//! [`Journaled`] keeps protocol streams in a journal of their own, beside the chord store and
//! never inside it (a file, or a table of a PostgreSQL schema; `chord serve` keeps
//! `LOG.streams` next to a JSONL or SQLite log and the table `chord_protocol_streams` in a
//! PostgreSQL store's schema): each change is written (and a file flushed to disk) before it
//! is applied and answered, replayed when the journal is opened, and the journal rewritten
//! then with one record a live stream. One server holds a journal at a time. What a restart
//! does not keep: a TTL's idle countdown starts again at the open, and live readers
//! reconnect (from their offsets, which stay valid).
//!
//! # Catch-up reads
//!
//! A catch-up read (`GET ?offset=…`, no `live`) is answered with every record after the
//! offset up to the tail as the read found it, in one `200` response with
//! `Stream-Up-To-Date: true`: the first 256 KiB at once, the rest read from the cache or the
//! store a chunk at a time as the connection sends it (a reader holds one chunk, never the
//! whole catch-up). The protocol lets a server answer with any part of what follows the offset
//! and have the client read on from `Stream-Next-Offset` until it is up to date, and chord's
//! own clients do; the official client (`@durable-streams/client`) reading with
//! `live: false` does not: its documentation promises everything up to the tail ("catch-up
//! only, stop at first upToDate"), but it returns after its first response whatever that
//! says, so a paged answer would leave it short. Whole responses serve it within the
//! protocol. Behind a shared cache, a whole response is whole as of when the node sent it:
//! with a `public` [`cache_control`](Streams::cache_control), a `live: false` read can get a
//! cached prefix marked up to date, up to `max-age` (plus `stale-while-revalidate`) old.
//! chord's followers read on live from the answer's offset and miss nothing; readers that
//! rely on one read being the whole stream need chord's default (`private`) policy. A response whose records are compacted away while it is sent breaks off (the
//! client's next read gets its `410`); `ETag` and `If-None-Match` work as for any read. A
//! [`Backend`] stream's catch-up is whole too, sent a chunk at a time from its messages
//! (shared with the stream, not copied whole).
//!
//! **Joining through a cache.** Every joiner of a stream asks for the same URL,
//! `GET ?offset=base` (the latest base and everything after it, up to the tail), answered
//! with the [`cache_control`](Streams::cache_control) policy like any catch-up read, so a
//! cache in front (the nginx example) sends one request of many on to a node and answers
//! the rest. The joiner then reads live (SSE) from the answer's `Stream-Next-Offset`: from a
//! cached answer, that replays what was appended since, from the node's tail cache. No
//! `HEAD` is needed (a `HEAD` is never cached, as the protocol asks). The JavaScript
//! `follow` joins this way; `chord/tests/nginx_cache.rs` counts what 1,000 of them cost the
//! nodes. A `410` names the latest base in [`BASE_OFFSET_HEADER`], so a joiner handed a
//! cached answer older than what the node keeps starts from that base's own URL next.
//!
//! # Checkpoints
//!
//! A [`LogWriter`](crate::store::LogWriter) (or [`Durable`](crate::store::Durable)) with a
//! [`Checkpoint`](crate::store::Checkpoint) policy stores, at each checkpoint, the flush's
//! changes as any other batch, then the value after them, `["r", value]`, in a record tagged
//! [`CHECKPOINT`](crate::store::CHECKPOINT). Each reader reads what it needs:
//!
//! - **A reader that has the value**, resuming from an offset it was handed (every read from
//!   a `Stream-Next-Offset` or a `control` event's `streamNextOffset`: catch-up, long-poll and
//!   SSE alike), reads the changes and never a checkpoint. Nothing of the checkpoint crosses
//!   its wire, its replica applies no base (every part it did not change keeps its identity,
//!   so nothing re-renders), and its decoder goes on: the producer's encoder starts its path
//!   ids afresh at the checkpoint, as a decoder reading from it does, and every id is defined
//!   again before it is used, so a decoder that skipped the checkpoint decodes the same.
//! - **A reader with no value** starts at the latest base: [`BASE_OFFSET_HEADER`] names the
//!   offset before it, followed by `.base` when it is a checkpoint (`0000000000000041.base`),
//!   which reads that checkpoint, then the changes after it. `offset=base` (chord's own
//!   sentinel beside the protocol's `-1` and `now`) reads from the latest base without asking
//!   which it is first; `offset=-1` starts at the oldest base kept, checkpoint or not, and so
//!   does a read from an offset whose records were compacted away (it is given the checkpoint
//!   first, never a gap).
//! - **Recovery, retention and compaction** count a checkpoint as a base.
//!
//! The cost, against the log format before it (where a checkpoint was the flush itself,
//! written as a base, which every live reader then received whole and applied as a new
//! value): the log holds one batch of changes more per checkpoint interval; the server tells
//! a checkpoint by its record's tag and skips it, nothing per reader; a live reader's cost at
//! a checkpoint is zero, where it was parsing the whole value and re-rendering everything
//! that showed it. Comparing each base with the replica's value to keep its equal parts was
//! the other way considered: it keeps identities, but every live reader still receives and
//! parses the whole value at every checkpoint. Logs written before keep their checkpoints as
//! bases, and are read as before. `chord/tests/checkpoints.rs` holds the readers to this,
//! and `chord/tests/js_follow.rs` and `chord/tests/page_renders.rs` the JavaScript replica, a
//! subscription to a part no batch changes, and the React and framework-free pages.
//!
//! # Operations
//!
//! **Health and readiness.** [`Health`] (or [`Streams::health`]) serves [`HEALTH_ROUTE`]
//! (`/healthz`: the process answers) and [`READY_ROUTE`] (`/readyz`: the store answers a
//! probe read, and over a store other nodes write to the followers' lag
//! ([`Log::follower_lag`]) is under [`Health::max_follower_lag`]; else `503` with a JSON body
//! naming each failed check and why). Merge them into the application's router.
//!
//! **Shutdown.** [`Server::serve`] drains when its `shutdown` future resolves: it stops
//! accepting, ends every SSE response at its next event boundary (the client has the `control`
//! event of every `data` event it was sent, and resumes from its offset on the server that
//! takes over, with no error reaching the application), answers long-polls in flight with
//! `204`, lets catch-up reads in flight finish, and cuts what is still open after
//! [`Server::drain`] (default 10 s). `axum::serve` and other servers do not
//! drain the SSE responses: they never end on their own.
//!
//! **Metrics.** Recorded through the [`metrics`](::metrics) facade: the application installs
//! the recorder it wants (`metrics-exporter-prometheus` serving `/metrics`, a StatsD or
//! OpenTelemetry bridge); without one every call is a no-op. The facade rather than
//! OpenTelemetry because a library should not choose the exporter, its runtime or its
//! protocol: the facade is one small crate, and every exporter (OpenTelemetry's included)
//! plugs into it. The names are constants in [`streams::metrics`](metrics):
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `chord_appends_total` | counter | | batches appended through a [`Log`] (a producer's or the write side's) |
//! | `chord_append_seconds` | histogram | | each append's latency, the store's write included |
//! | `chord_append_bytes_total` | counter | | bytes of those batches |
//! | `chord_append_errors_total` | counter | | appends the store refused or failed |
//! | `chord_stream_readers` | gauge | `stream` | live readers (SSE responses, long-polls) per stream (one series per stream read live: mind the cardinality with many streams) |
//! | `chord_sse_open` | gauge | | SSE responses open |
//! | `chord_sse_ended_total` | counter | `reason`: `lifetime`, `drain`, `end`, `client` | SSE responses ended, and why; `client`: the client went first or its connection was cut (a slow reader cut by the network, or by the drain deadline) |
//! | `chord_cache_misses_total` | counter | | reads behind the tail cache that read the store (slow or resuming readers) |
//! | `chord_gone_total` | counter | | `410 Gone` answers |
//! | `chord_compactions_total` | counter | `result`: `ok`, `error` | compactions run |
//! | `chord_tail_cache_bytes` | gauge | | bytes the tail caches hold together ([`Log::cached_bytes`]) |
//! | `chord_follower_lag_seconds` | gauge | `stream` | how long ago a follower last heard from the store |
//! | `chord_read_errors_total` | counter | | store reads that failed |
//! | `chord_rejected_batches_total` | counter | | batches the write side refused as not decoding or applying |
//! | `chord_drain_cut_total` | counter | | connections cut at the drain deadline |
//! | `chord_not_ready_total` | counter | `check`: `store`, `follower` | failed readiness checks |
//! | `chord_fallbacks_total` | counter | | a tracker's whole-value fallback diffs ([`Tracker::fallbacks`](crate::Tracker::fallbacks)), in every build |
//! | `chord_requests_total` | counter | `kind` ([`REQUEST_KINDS`](metrics::REQUEST_KINDS): `catch_up`, `long_poll`, `sse`, `head`, `append`, `create`, `fork`, `delete`, `options`, `ag_ui_run`, `ag_ui_events`, `ag_ui_state`, `ai_sdk_chat`, `ai_sdk_stream`, `ai_sdk_state`, `other`), `status` (the HTTP code) | requests every door's routes answered (the streams', AG-UI's, the AI SDK's), refusals, 404s and the router's 405s included; an SSE response counts when it opens |
//! | `chord_request_seconds` | histogram | `kind` | seconds from a request's arrival to its response head: a catch-up read's first chunk, a long-poll's wait for a record, the opening of an SSE response (not how long it stays open) |
//!
//! The request metrics come from one middleware around every route of a [`Streams`] router
//! (not [`Health`]'s): the labels are a fixed set, no stream name, so their series stay
//! bounded however many streams there are. What an operator alerts on, in PromQL:
//!
//! - the request rate by kind, `sum by (kind) (rate(chord_requests_total[5m]))`;
//! - the share of server errors,
//!   `sum(rate(chord_requests_total{status=~"5.."}[5m])) / sum(rate(chord_requests_total[5m]))`;
//! - refused reads (a client with a stale credential),
//!   `sum(rate(chord_requests_total{status=~"401|403"}[5m]))`;
//! - the catch-up latency,
//!   `histogram_quantile(0.99, sum by (le) (rate(chord_request_seconds_bucket{kind="catch_up"}[5m])))`
//!   (not of `long_poll`, whose time is mostly the wait for a record);
//! - the tail cache's hit ratio, `1 - rate(chord_cache_misses_total[5m]) /
//!   sum(rate(chord_requests_total{kind=~"catch_up|long_poll|sse"}[5m]))` (a miss is a
//!   read of the store by a reader behind the cache; an SSE reader may miss more than once).
//!
//! **Help text and buckets.** [`describe_metrics`] gives every name above its help text and
//! unit (Prometheus's `# HELP`): an application that installs its own recorder calls it once,
//! after installing it. [`metrics::LATENCY_BUCKETS`] are the histograms' buckets (a
//! millisecond to 30 s), for an exporter that renders buckets (with
//! `metrics-exporter-prometheus`, `PrometheusBuilder::new().set_buckets(LATENCY_BUCKETS)`;
//! its default renders histograms as summaries). `chord serve` (the `chord` command) does
//! both, and serves `/metrics`. [`register_metrics`] records zero in every series whose
//! labels are known in advance, so that each family answers from the first scrape (`chord
//! serve` calls it too).
//!
//! A slow reader is not cut by chord: its connection's send buffer bounds what it holds, it
//! reads the store from its own offset once it falls behind the cache
//! (`chord_cache_misses_total`), and a connection the network cuts counts in
//! `chord_sse_ended_total{reason="client"}`.
//!
//! **Tracing.** `tracing` spans, at DEBUG: `chord.request` (method, namespace, key) around
//! each request's handling (an SSE body is polled after it), `chord.store.tail`,
//! `chord.store.read`, `chord.store.append` and `chord.store.probe` around the store's
//! work; events at target `chord::streams` for the drain (INFO, WARN when the deadline cuts),
//! for a follower's failed reads (DEBUG) and for each failed readiness check (WARN, with the
//! store's whole error, which `/readyz` does not show), and `chord::fallback` for the tracker.
//!
//! # Conformance
//!
//! `scripts/test` runs the protocol's official conformance suite
//! (`@durable-streams/server-conformance-tests`, the version `js/package.json` pins) through
//! `js/conformance/run`, four times at once: against `chord/examples/streams_server.rs`, a
//! server with the write side enabled for every request and [`Memory`] as its [`Backend`],
//! and against `chord serve` on a JSONL log, a SQLite log and a PostgreSQL store (with a write
//! token, protocol streams in its [`Journaled`] journal; the suite's `/v1/stream/NAME` paths
//! moved under `/streams/conformance/`, the only adaptations besides the token). Every test
//! listed in `js/conformance/expected.json` must pass: every test of the suite but its property
//! tests, which draw random inputs and are never listed; against `chord serve` no test may
//! fail at all. Of the suite's 338 tests, the 6 of the "Reserved subscription APIs" group are
//! skipped by the suite itself, and chord passes the other 332 on each server. Two choices
//! the suite depends on:
//!
//! - A fork offset of `-1` or of the form `0…0_0…0` means the start of the source stream.
//!   The suite sends the reference server's own offset format for that; the protocol leaves
//!   offsets a server did not issue undefined, so chord gives this one its obvious meaning.
//! - With the write side on, an authorized request body of up to 16 MiB (the default
//!   [`Streams::max_body`]) is read (the suite appends 10 MB at once).
//!
//! # Bounds on requests
//!
//! No request body is read before its request is authorized, and every number a request
//! carries is range-checked. The bounds, with their defaults:
//!
//! | bound | default | set by |
//! | --- | --- | --- |
//! | body of any request but an authorized write (reads, refused writes, write side off, methods not served) | never read; the answer has `Connection: close` | — |
//! | body of an authorized write | 16 MiB; a larger `Content-Length` answers 413 before a byte is read | [`Streams::max_body`] |
//! | bytes of request bodies held at once, all requests together | 64 MiB | [`Streams::body_budget`] |
//! | wait for room in that budget, then 503 with `Retry-After` | 5 s | [`Streams::body_wait`] |
//! | time a body may take to arrive, then 408 | 30 s | [`Streams::body_timeout`] |
//! | request headers arriving, per connection | 30 s | [`Server`] |
//! | bytes of messages a [`Memory`] holds, all its streams together | 1 GiB; a create or append beyond answers 507, refused whole | [`Memory::max_bytes`] |
//! | bytes a [`Journaled`] journal replays | its [`Memory`]'s bounds; a journal over them is refused when opened | [`Journaled::file`] |
//! | `Stream-TTL` | 36,500 days ([`MAX_TTL`]); more answers 400 | — |
//! | `Producer-Epoch`, `Producer-Seq` | 2^53 − 1; more answers 400 | — |
//! | namespace or key | [`MAX_NAME`] bytes | — |
//!
//! An authorized write's body is held whole (within the budget), then checked and split into
//! batches as it is read, never built into a JSON tree: besides the body, the server holds a
//! bit per batch while it checks them all, a copy of a batch sent over several lines (put on
//! one), and what the store and the tail cache keep of each record; each batch is stored as
//! the bytes it was sent as. An authorized 16 MB write peaks the server at 1.06x (refused) to
//! 3.00x (one batch of 2.8 million ops) its body above what it held before
//! (`chord/tests/write_memory.rs` holds every case to at most 4x).
//!
//! The write authorization hook ([`Streams::writes`]) sees the request line and headers
//! ([`WriteRequest`]); a request it refuses answers 401 or 403 with its body unread. An authorized
//! body's bytes are reserved in the budget before they are read (all of a `Content-Length` at
//! once; a body of unknown length 64 KiB first, then in doubling steps that never wait), so
//! the bodies buffered never hold more than the budget. A malformed or
//! out-of-range number in a header or the query (`Stream-TTL`, `Stream-Expires-At`, `offset`,
//! `Stream-Fork-Offset`, `Stream-Fork-Sub-Offset`, `Producer-Epoch`, `Producer-Seq`) answers
//! 400 naming it. A malformed `Content-Length` is answered 400 by the HTTP layer before
//! routing (and by the router, naming it, when driven in process). A `cursor` is only a cache
//! key: one that is not a number is ignored.
//!
//! # Answers
//!
//! The routes are one axum `MethodRouter`: `GET`, `HEAD` and `OPTIONS` always, `PUT`, `POST`
//! and `DELETE` once [`Streams::writes`] enables them; any other method answers 405 with
//! `Allow` naming the methods served (a chord log, which is never deleted, answers `DELETE`
//! 405 with its own `Allow`). One middleware puts the same headers on every answer of every
//! route, whatever its verb or status (errors, refusals, the router's 405s and the
//! cross-origin policy's answers included): `X-Content-Type-Options: nosniff` and
//! `Cross-Origin-Resource-Policy: cross-origin`, and `Connection: close` when the request's
//! body was left unread.
//!
//! # Authorization
//!
//! Reads are open by default: whoever reaches the server reads every stream, as from a
//! static file server. Two hooks, alike, guard the two sides:
//!
//! | hook | guards | sees | default |
//! | --- | --- | --- | --- |
//! | [`Streams::reads`] | catch-up `GET`, long-poll, SSE `GET`, `HEAD`, and the source of a fork ([`ReadKind`]) | [`ReadRequest`]: what it asks, address, URI, headers | none: every read served |
//! | [`Streams::writes`] | `PUT`, `POST`, `DELETE` ([`WriteKind`]) | [`WriteRequest`]: what it asks, address, URI, headers | none: the write side off (405) |
//!
//! Every request goes through the hook of each stream it names, before anything about that
//! stream is looked at and before a byte of its body is read:
//!
//! | request | hooks, in order |
//! | --- | --- |
//! | `GET` (catch-up, long-poll, SSE), `HEAD` | the read hook, on the stream |
//! | `PUT`, `POST`, `DELETE` | the write hook, on the stream |
//! | `PUT` with `Stream-Forked-From` (`Stream-Fork-Offset`, `-Sub-Offset`) | the write hook on the new stream, then the read hook on the source ([`ReadKind::Fork`], with the `PUT`'s URI and headers) |
//! | `OPTIONS` | none: the methods served, or the cross-origin policy's answer to a preflight |
//!
//! Only protocol streams fork: after both hooks, a fork of a chord log answers 501.
//!
//! `Stream-Forked-From` is the only header that names another stream. A fork copies its
//! source, so it is a read of it: a refused source answers exactly as a refused read of it
//! does, the same whether the source exists or not, copies nothing, and tells nothing of it
//! (neither its content type nor its length, which a `Stream-Fork-Offset` past its tail
//! would). A `Stream-Forked-From` that names no stream at all answers 400 before the hooks.
//! A fork the hook allows counts on its source: deleting the source then only marks it
//! deleted (410) until its last fork goes, as the protocol says.
//!
//! Each answers an [`Access`] (or a `bool`): [`Allow`](Access::Allow),
//! [`Unauthorized`](Access::Unauthorized) (401, with `WWW-Authenticate: Bearer`: no
//! credential it knows) or [`Forbidden`](Access::Forbidden) (403: a known credential, not
//! allowed this). A refusal has an empty body, `Cache-Control: no-store` and none of the
//! stream's headers; a read is refused before its stream is looked up (a refused reader
//! cannot tell whether it exists), a write before a byte of its body is read. Neither hook
//! sees a body. A hook is called on the runtime, once per request: it should answer from
//! memory (a session table, a signature check), not block on I/O. A long-poll or an SSE
//! response is authorized when it starts; an SSE response ends after
//! [`Streams::sse_lifetime`] (60 s by default) and its client reconnects through the hook
//! again, so a revoked reader stops within that. A browser's cache could answer a read
//! without asking the server: without a read hook catch-up reads are
//! `Cache-Control: private, max-age=60` (the default [`Streams::cache_control`]), and a
//! browser reuses
//! one for a minute; with one they are `private, no-cache`,
//! and a browser revalidates before each reuse (a conditional request, through the hook,
//! answered 304 when allowed and unchanged).
//!
//! # Credentials across origins
//!
//! A page on another origin than the server's reads with one of three kinds of credential;
//! the kind decides what it needs of the cross-origin policy ([`Streams::cors`]):
//!
//! | credential | the page sends it with | `fetch` | `EventSource` | policy |
//! | --- | --- | --- | --- | --- |
//! | a token in `Authorization` | `fetch(url, {headers: {Authorization: 'Bearer …'}})` | yes, after a preflight | no: it cannot set headers | [`default_cors`] (any origin; `authorization` is an allowed request header) |
//! | a cookie of the server's host | `fetch(url, {credentials: 'include'})`, `new EventSource(url, {withCredentials: true})` | yes | yes | the page's origin named, credentials allowed |
//! | a token in a query parameter (`?offset=…&live=sse&token=…`) | the URL | yes | yes | [`default_cors`] |
//!
//! - **`Authorization` header.** To the browser it is an ordinary request header, not a
//!   credential: the request's credentials mode stays the default, and a policy allowing
//!   any origin (`Access-Control-Allow-Origin: *`) serves it. It is not a CORS-safelisted
//!   header, so the browser first sends a preflight `OPTIONS` (answered by the policy,
//!   without the hook, and cached for the policy's `max_age`: a day by default, which
//!   browsers cap, Chromium at two hours), then the read, which the hook sees.
//!   `EventSource` cannot send it: SSE readers use a cookie or a query parameter, or read
//!   by long-poll with `fetch`.
//! - **Cookies.** Sent only when the page asks (`credentials: 'include'`,
//!   `withCredentials: true`), and the browser shows the response to the page only when
//!   the server answers `Access-Control-Allow-Credentials: true` and the page's exact
//!   origin in `Access-Control-Allow-Origin` (never `*`):
//!   `Streams::cors(Some(default_cors().allow_origin(origin).allow_credentials(true)))`,
//!   with one origin or a list. The cookie is the server's host's (set by it, or by the
//!   app for a domain covering both, `Domain=app.example`; ports do not count), and its
//!   `SameSite` decides whether it is sent at all.
//!   It is about *sites* (scheme and registrable domain), not origins: from
//!   `https://app.example` to `https://chord.app.example`, or from `http://127.0.0.1:3000`
//!   to `http://127.0.0.1:8080`, is the same site, and `Lax` and `Strict` cookies are sent.
//!   A page on another site needs the cookie set `SameSite=None; Secure` (so HTTPS), and
//!   a browser blocking third-party cookies still drops it: serve chord on the app's site
//!   (e.g. a subdomain). Set it `HttpOnly`, so that the page's scripts never see it.
//!   Cookies are sent by the browser on its own, so a write hook that accepts a cookie
//!   should also check the `Origin` header: a `POST` with `Content-Type: text/plain` is
//!   sent without a preflight, with the cookie, from any page its `SameSite` allows.
//! - **Query parameter.** The only way for an `EventSource` without cookies. The router
//!   ignores query parameters it does not know, and the hook sees them in
//!   [`ReadRequest::uri`]. A URL ends up in access logs, browser history and caches:
//!   give out short-lived, read-only tokens for one stream. A client must keep the
//!   parameter on every request it makes as it resumes from new offsets.
//!
//! The refusal of a read carries the policy's headers, so a page on an allowed origin
//! sees its status (`response.status` 401 or 403). An `EventSource` refused fires `error`
//! and closes (`readyState` 2) without reconnecting, and does not show the status; a
//! client that must tell a refusal from a broken connection asks again with `fetch`.
//! `chord/tests/cross_origin.rs` drives each of these in Chromium.

mod auth;
mod catchup;
mod config;
mod frame;
mod generic;
mod health;
mod journal;
mod journaled;
mod memory;
mod router;
mod write;

pub use self::auth::{ReadKind, ReadRequest};
pub use self::health::{Health, Readiness, HEALTH_ROUTE, READY_ROUTE};
pub use self::journal::Journal;
pub use self::journaled::Journaled;
pub use self::memory::{Backend, Memory, MemoryStream, TooManyBytes, TooManyStreams, MAX_TTL};
pub use self::router::{
    default_cors, stream_path, Streams, BASE_OFFSET_HEADER, EXPOSED_HEADERS, MAX_NAME, ROUTE,
};
pub use self::write::{WriteKind, WriteRequest};
#[doc(no_inline)]
pub use crate::live::{
    describe_metrics, metrics, register_metrics, serve, Access, BadOffset, Compaction, Log,
    LogBuilder, Offset, Retention, Server, DEFAULT_KEEP_FOR,
};
