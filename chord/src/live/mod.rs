//! The live layer every protocol door stands on: the log and its tail cache, the cursor
//! that follows an address's log, the SSE body and writer, the frames each door makes of a
//! record once for all its readers, the headers every answer carries, the request metrics,
//! authorization's answer, and the server that drains.
//!
//! A door ([`streams`](crate::streams) for Durable Streams, [`ag_ui`](crate::ag_ui) for
//! AG-UI) is a framing on this layer: a function from a record (and the reader's position)
//! to its protocol's events, and the routes that name its resources. What every door needs
//! is written here once, so a door added later inherits it without knowing it exists:
//!
//! - **[`Log`]**: a [`Store`](crate::store::Store) with a tail cache per address (its newest
//!   records, shared by every reader), a signal when a record arrives, [`Retention`] and
//!   [`Compaction`]. [`Offset`]s name records on every door's wire.
//! - **The cursor**: one reader's position in one address's log. It reads the tail cache,
//!   falls back to the store when the reader is behind it (counted in
//!   `chord_cache_misses_total`, traced as `chord.store.read`, a failure in
//!   `chord_read_errors_total`), says when the position was compacted away (`410` on the
//!   next request), and waits for the next record when the reader is at the tail. Each door
//!   only maps what it yields.
//! - **Frames**: each cached record carries one slot per framing, filled the first time any
//!   reader asks and shared by every later one (a thousand readers at the tail of a run are
//!   sent the same bytes, made once), counted in the tail cache's byte bound.
//! - **The SSE body** ends a response after its lifetime or at the server's drain, at an
//!   event boundary, sends keep-alive comments, and counts open responses; **one SSE
//!   writer** writes every `event:`, `id:`, `data:`, comment and `retry:` line, and refuses a
//!   line break inside a field.
//! - **[`headers`]**: the headers every answer of every door carries, whatever its route,
//!   verb or status: `X-Content-Type-Options: nosniff`, `Cross-Origin-Resource-Policy:
//!   cross-origin`, and `Connection: close` when a request's body was left unread.
//! - **Request metrics**: one middleware per router, each door naming its requests' kinds
//!   ([`metrics::REQUEST_KINDS`]).
//! - **[`Access`]**: what every door's authorization hook answers, and one refusal.
//! - **[`Server`]** / [`serve`]: the HTTP/1 server whose shutdown drains every door's SSE
//!   responses at an event boundary.
//!
//! Nothing in this module imports a door.

mod access;
// What only some doors use (the AG-UI door's bounds, its cursor moves and frame slots) is
// left unused by a build with no such door.
#[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
pub(crate) mod bound;
pub(crate) mod cache_control;
mod compaction;
#[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
pub(crate) mod cursor;
#[cfg_attr(not(feature = "ag-ui"), allow(dead_code))]
pub(crate) mod frames;
pub(crate) mod headers;
pub(crate) mod log;
pub mod metrics;
pub(crate) mod offset;
pub(crate) mod requests;
mod retention;
pub(crate) mod server;
pub(crate) mod sse;
pub(crate) mod tail;

pub(crate) use self::access::refusal;
pub use self::access::Access;
pub use self::compaction::Compaction;
pub use self::headers::headers;
pub use self::log::{Log, LogBuilder, DEFAULT_KEEP_FOR};
pub use self::metrics::{describe_metrics, register_metrics};
pub use self::offset::{BadOffset, Offset};
pub use self::retention::Retention;
pub use self::server::{serve, Server};
