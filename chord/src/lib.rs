//! chord turns mutations of typed application state into the smallest honest description of
//! what changed: a batch of ops that any replica can apply to stay equal to the producer,
//! streamed live, written to a durable log, and recovered after a crash.
//!
//! # Example
//!
//! ```
//! use chord::{apply, Decoder, Encoder, Tracked};
//! use serde::Serialize;
//!
//! #[derive(Tracked, Serialize, Default)]
//! struct Lane {
//!     text: String,
//!     transcript: Vec<Entry>,
//! }
//!
//! #[derive(Tracked, Serialize, Clone)]
//! struct Entry {
//!     role: String,
//! }
//!
//! // The producer mutates normally, through the tracker's proxies...
//! let mut lane = chord::track(Lane::default());
//! let mut encoder = Encoder::new(); // one per stream
//! let mut decoder = Decoder::new(); // on the replica's side
//! let mut replica = None;
//! for step in 0..3 {
//!     let mut state = lane.state();
//!     state.text += "tok ";                                      // ["a", ["text"], "tok "]
//!     state.transcript.insert(0, Entry { role: "user".into() }); // ["p", ["transcript"], 0, 0, [..]]
//!     // ...and each flush is the smallest batch of ops since the last one
//!     // (the first is a base batch, `["r", value]`).
//!     let ops = lane.flush()?;
//!     let wire = encoder.encode(&ops).to_json();
//!     apply(&mut replica, decoder.decode_str(&wire)?)?;
//!     assert_eq!(replica, Some(serde_json::to_value(lane.get())?));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # A tour of chord
//!
//! A change travels from the code that makes it to every replica that follows it. The tour
//! takes the same road:
//!
//! 1. [Tracking typed state](#tracking-typed-state): the producer mutates its own types; the
//!    tracker records what it meant.
//! 2. [The format](#the-format): six verbs, paths, counts.
//! 3. [The wire and the applier](#the-wire-and-the-applier): the per-stream codec and the
//!    strict, atomic applier.
//! 4. [Storage and recovery](#storage-and-recovery): durable logs in a JSONL file, SQLite or
//!    PostgreSQL.
//! 5. [Streams](#streams): every log served over HTTP as a Durable Stream.
//! 6. [Replicas](#replicas): following a stream from Rust or JavaScript.
//! 7. [The cluster](#the-cluster): several nodes over one PostgreSQL.
//! 8. [Deployment](#deployment): health, metrics, a rolling restart, TLS and a cache at a
//!    proxy, readers in browsers.
//! 9. [Limits and reliability](#limits-and-reliability): every bound and its default.
//! 10. [The cost of each verb](#the-cost-of-each-verb).
//! 11. [Where chord differs from the TypeScript reference](#where-chord-differs-from-the-typescript-reference).
//!
//! The [feature flags](#feature-flags), the [dependencies](#dependencies) and a
//! [map of the crate](#map-of-the-crate) close it.
//!
//! ## Tracking typed state
//!
//! Derive [`Tracked`] (beside `serde::Serialize`) on plain structs and enums, wrap a value with
//! [`track`], mutate it through the proxy that [`Tracker::state`] hands out, and
//! [`Tracker::flush`] returns the smallest batch of ops since the last flush. The first flush of
//! a tracker is a *base batch*, `["r", value]`: a stream starts with the whole value.
//!
//! ```
//! use std::collections::BTreeMap;
//! use chord::{display_batch, track, Tracked};
//! use serde::Serialize;
//!
//! #[derive(Tracked, Serialize, Default)]
//! #[serde(rename_all = "camelCase")]
//! struct Lane {
//!     status: Status,
//!     answer: String,
//!     #[serde(skip_serializing_if = "Option::is_none")]
//!     draft: Option<String>,
//!     tools: Vec<Tool>,
//!     meta: BTreeMap<String, Meta>,
//!     output_tokens: u64,
//! }
//!
//! #[derive(Tracked, Serialize, Default)]
//! #[serde(tag = "state", rename_all = "camelCase")]
//! enum Status {
//!     #[default]
//!     Idle,
//!     Running { tool: String },
//! }
//!
//! #[derive(Tracked, Serialize)]
//! struct Tool {
//!     id: String,
//!     output: String,
//!     done: bool,
//! }
//!
//! #[derive(Tracked, Serialize, Default)]
//! struct Meta {
//!     calls: u32,
//! }
//!
//! let mut t = track(Lane::default());
//! assert!(chord::is_base(&t.flush()?)); // [["r", {...}]]
//!
//! let mut lane = t.state();
//! lane.output_tokens += 1;                                  // s: a field assignment
//! lane.answer += "Hel";                                     // a: an append
//! lane.status.set(Status::Running { tool: "bash".into() }); // s: a new variant
//! lane.tools.push(Tool { id: "t1".into(), output: String::new(), done: false }); // p
//! lane.meta.entry("bash".into()).or_default().calls += 1;  // s: a new member
//! lane.draft.set(Some("x".into()));                         // s: the field appears
//! let ops = t.flush()?;
//! assert_eq!(
//!     display_batch(&ops).to_string(),
//!     "batch, 6 ops\n  \
//!      set status = {\"state\":\"running\",\"tool\":\"bash\"}\n  \
//!      append answer += \"Hel\"\n  \
//!      set draft = \"x\"\n  \
//!      splice tools at 0: remove 0, insert 1 [{\"id\":\"t1\",\"output\":\"\",\"done\":false}]\n  \
//!      set meta.bash = {\"calls\":1}\n  \
//!      set outputTokens = 1"
//! );
//!
//! let mut lane = t.state();
//! if let Some(mut tool) = lane.tools.iter_mut().find(|tool| tool.id == "t1") {
//!     tool.output.push_str("[ 12%] Building\n"); // a
//!     tool.done.set(true);                        // s
//! }
//! lane.draft.set(None);                           // d: a skipped field disappears
//! let ops = t.flush()?;
//! assert_eq!(
//!     display_batch(&ops).to_string(),
//!     "batch, 3 ops\n  \
//!      delete draft\n  \
//!      append tools[0].output += \"[ 12%] Building\\n\"\n  \
//!      set tools[0].done = true"
//! );
//! assert!(t.draft.is_none()); // reads go through `Deref` and record nothing
//!
//! // A change chord does not model goes through `DerefMut`: the location is compared with
//! // the accepted value at flush, and the difference is sent, or one `s` of the location
//! // when that is smaller (here: the two tools swapped places, every member changed).
//! t.state().tools.push(Tool { id: "t0".into(), output: String::new(), done: true });
//! t.flush()?;
//! t.state().tools.sort_by(|a, b| a.id.cmp(&b.id));
//! let ops = t.flush()?;
//! assert_eq!(
//!     display_batch(&ops).to_string(),
//!     "batch, 1 op\n  \
//!      set tools = [{\"id\":\"t0\",\"output\":\"\",\"done\":true},{\"id\":\"t1\",\"output\":\"[ 12%] Buildin… (90 bytes)"
//! );
//! # Ok::<(), chord::Error>(())
//! ```
//!
//! - **Proxies mirror the types.** A derived struct's proxy is a struct of its fields' proxies,
//!   so `lane.answer += token`, `lane.output_tokens += 1` and two fields borrowed at once work
//!   as they do on the struct. `Vec` and `VecDeque`, `String`, `Option`, `BTreeMap` and
//!   `HashMap` with string keys, and the numbers have the std methods (`push`, `insert`,
//!   `remove`, `drain`, `retain`, `get_mut`, `iter_mut`, `entry`, `take`, `write!`, `+=`,
//!   ...), returning what std returns. See [`proxy`].
//! - **An element is edited through its proxy**: a `Vec`'s [`at(i)`](proxy::VecProxy::at)
//!   (which panics out of bounds, as indexing does) and
//!   [`get_mut(i)`](proxy::VecProxy::get_mut) (an `Option`), a `VecDeque`'s `get_mut(i)`, a
//!   map's `get_mut(key)`, and `iter_mut` hand out the element's proxy, so its fields have the
//!   proxy methods and each edit is its own op. Indexing (`plan.stages[i]`, through `Index`
//!   and `IndexMut`) hands out the plain element instead: `plan.stages[i].done = true`
//!   compiles, but `plan.stages[i].done.set(true)` does not (there is no `set` on a `bool`),
//!   and the element is marked reassigned: compared whole with its accepted value at flush,
//!   like any change chord does not model (below).
//!
//!   ```
//!   use chord::{display_batch, track, Tracked};
//!   use serde::Serialize;
//!
//!   #[derive(Tracked, Serialize)]
//!   struct Plan {
//!       stages: Vec<Stage>,
//!   }
//!
//!   #[derive(Tracked, Serialize)]
//!   struct Stage {
//!       name: String,
//!       done: bool,
//!   }
//!
//!   let stage = |name: &str| Stage { name: name.into(), done: false };
//!   let mut t = track(Plan { stages: vec![stage("build"), stage("test")] });
//!   t.flush()?;
//!   let mut plan = t.state();
//!   plan.stages.at(1).done.set(true);        // the element's proxy: its field's `set`
//!   plan.stages.at(0).name += " (cached)";   // and its `+=`
//!   if let Some(mut stage) = plan.stages.get_mut(2) {
//!       stage.done.set(true);                // no third stage: not reached
//!   }
//!   assert_eq!(
//!       display_batch(&t.flush()?).to_string(),
//!       "batch, 2 ops\n  \
//!        set stages[1].done = true\n  \
//!        append stages[0].name += \" (cached)\""
//!   );
//!   t.state().stages[0].done = true;         // the plain element, compared at flush
//!   assert_eq!(
//!       display_batch(&t.flush()?).to_string(),
//!       "batch, 1 op\n  set stages[0].done = true"
//!   );
//!   # Ok::<(), chord::Error>(())
//!   ```
//! - **Intent is recorded where it happens.** Pushes, inserts, removals, truncations, drains
//!   and retains of a `Vec` are splices (`p`); `String` appends are `a`, drops from the front
//!   (`drain(..n)`, `keep_last(n)`) are `t`; an assignment is `s` (nothing when the new value is
//!   equal); `None` on a `skip_serializing_if` field is `d`, and so is a map's `remove` (a
//!   member removed and inserted again before the flush is one `s` of it: what was removed is
//!   not kept to be compared); an enum's change of variant is one `s`, and edits inside the
//!   current variant are field-level ops.
//! - **Anything else still works.** Every proxy but a struct's derefs mutably to its value. A
//!   change chord does not model (`sort`, `rotate_left`, a method of your own) marks the location
//!   reassigned: its JSON is taken once, and the flush sends the difference from the accepted
//!   value, by [`diff`]'s rules, or one `s` of the location when that is smaller (and, in an
//!   object, no more than one `s` of each member it changed). [`Tracker::edit`] does the same
//!   for the whole value. Edits made before the reassignment are sent first, what it
//!   overwrote dropped, splices of one stretch composed (an insertion removed again is
//!   nothing). The same cap holds for an array or a map whose recorded edits reach a good part
//!   of it.
//! - **Write helpers on the proxy types.** A helper written for plain Rust,
//!   `fn log(buf: &mut VecDeque<String>, line: &str)`, compiles when given a field (through
//!   `DerefMut`) and takes that fallback: the whole deque is serialized and diffed at each
//!   flush, and its batch may be larger than the ops. The same helper on the proxy type,
//!   `fn log(buf: &mut DequeProxy<'_, String>, line: &str)`, has the same methods and records
//!   a push and a pop. The fallback stays implicit (any std API keeps working, and the batch is
//!   still exact), but it is visible: [`Tracker::fallbacks`] counts each container flushed this
//!   way by path, with the bytes its ops took, and each is a `tracing` event at `DEBUG`
//!   (target `chord::fallback`). An intended whole reassignment is [`proxy::VecProxy::set`],
//!   [`proxy::DequeProxy::set`] or [`proxy::MapProxy::set`], which are not counted.
//! - **The flush works from a dirty tree**, not a log of mutations: repeated writes collapse, an
//!   op a later reassignment overwrites is never sent, a deeply equal reassignment sends
//!   nothing. There is no baseline copy of the state. Ops come out field by field, in
//!   declaration order.
//! - **What JSON cannot carry is refused at flush**, with its path: a non-finite float, a map
//!   key that is not a string, an integer beyond 64 bits. A failed flush accepts nothing: the
//!   changes stay pending. In *JS-safe mode* (on by default) integers beyond ±(2^53 − 1)
//!   ([`MAX_SAFE_INTEGER`]) are refused too, since a JavaScript replica would round them;
//!   [`Tracker::set_js_safe`]`(false)` when every replica is a Rust one.
//! - **The derive** takes structs (named, tuple, newtype, unit) and enums in every serde
//!   representation (external, `tag`, `tag` + `content`, `untagged`), with `rename`,
//!   `rename_all`, `rename_all_fields`, `skip`, `skip_serializing_if` and `with` on a field.
//!   `Box<T>`, `BTreeSet`/`HashSet`, `u128`/`i128` and [`serde_json::Value`] (a dynamic proxy)
//!   are built in; `#[chord(opaque)]` tracks any other `Serialize` field as one value. What
//!   would make paths lie about the JSON (`flatten`, `transparent`, ...) is a compile error at
//!   the attribute.
//! - [`Tracker::replace`] sends `["r", next]`, [`Tracker::rebase`] makes the next flush a base
//!   batch, [`Tracker::discard`] accepts pending changes unsent. [`diff`] applies the same rules
//!   to two JSON snapshots.
//! - **Straight to bytes.** [`Tracker::flush_into`] writes exactly the bytes of
//!   `encoder.encode(&tracker.flush()?).to_json()` into a reused buffer, without building ops.
//!
//! **Costs.** A struct's proxy is built field by field at each `state()` call. Flush and reset
//! visit only the nodes touched since the last flush. The dirty tree keeps a struct's field
//! nodes across flushes, and a few element nodes per array that no splice moved (a streaming
//! element keeps its node). `iter_mut` prepares a slot for every element it hands out
//! (`O(len)`). The fallback serializes the location once per flush interval.
//!
//! ## The format
//!
//! A change is a batch of [`Op`]s. Six verbs, always JSON tuples, the same in memory, on the
//! wire and on disk:
//!
//! | op | meaning |
//! | --- | --- |
//! | `["r", v]` | replace the whole value (a batch starting with `r` is a *base batch*, [`is_base`]) |
//! | `["s", path, v]` | set a member, an existing element, or the element one past the end |
//! | `["d", path]` | delete a member, or remove an element |
//! | `["a", path, text]` | append text to a string |
//! | `["t", path, n]` | drop `n` UTF-16 code units from the front of a string |
//! | `["p", path, index, remove, items]` | splice an array (the root included: an empty path) |
//!
//! A [`Path`] is an array of strings (members) and non-negative integers (elements); [`path!`]
//! builds one. Only `p` takes the empty path (the root); the other verbs take a
//! [`NonEmptyPath`], so `["s", [], v]` cannot be built. The segments `__proto__`,
//! `constructor` and `prototype` ([`RESERVED`]) are refused everywhere, so a JavaScript replica
//! cannot be walked into its prototype chain (they are fine as keys inside values). A path has
//! at most [`MAX_PATH_SEGMENTS`] (128) segments.
//!
//! Counts and indices are those JavaScript sees: `t` counts UTF-16 code units ([`utf16_len`]),
//! and refuses to cut a surrogate pair in half. Counts, indices and ids stop at
//! [`MAX_SAFE_INTEGER`], so a Rust and a JavaScript replica accept exactly the same ops.
//!
//! Batch text is I-JSON (RFC 7493), read alike by every replica: an object that names a
//! member twice (`{"a":1,"a":2}`, or `"a"` and `"\u0061"`) is refused as invalid JSON,
//! where serde_json and `JSON.parse` would each keep the last member (and so could disagree
//! on whether a batch with `{"a":1e400,"a":1}` is valid); a count, an index or an id is
//! written as an integer (`1`, never `1.0` or `1e0`, which serde_json reads as a float and
//! `JSON.parse` as an integer). The stream server refuses such a batch with `400` before it
//! is stored, and the JavaScript replica refuses it as chord's decoder does
//! (`chord/tests/js_replica.rs` replays hostile batches through both: the same outcome for
//! each).
//!
//! Parsing is validation. [`parse_batch`] (and `Deserialize` for [`Op`]) refuses unknown
//! verbs, wrong arity, bad paths and counts, and reserved segments, naming the op:
//!
//! ```
//! use chord::{display_batch, parse_batch, Category};
//!
//! let ops = parse_batch(r#"[["a",["answer"],"lo"],["t",["log"],3]]"#)?;
//! assert_eq!(
//!     display_batch(&ops).to_string(),
//!     "batch, 2 ops\n  append answer += \"lo\"\n  truncate log by 3"
//! );
//!
//! let err = parse_batch(r#"[["a",["answer"],"lo"],["s",["__proto__"],1]]"#).unwrap_err();
//! assert_eq!(err.kind().category(), Category::Parse);
//! assert!(err.to_string().contains("op 1"), "{err}");
//! # Ok::<(), chord::Error>(())
//! ```
//!
//! ## The wire and the applier
//!
//! Between a producer and a replica, batches travel encoded: one [`Encoder`] per stream on the
//! producer's side, one [`Decoder`] on each reader's. The encoder interns a path on its
//! *second* use (`["#", id, path]`, then the bare id), omits a path equal to the previous op's
//! within a batch, and resets at every `r`, so a reader that starts at a base batch decodes
//! with a fresh decoder. The tables are bounded at both ends whatever the stream: ids are
//! below [`wire::MAX_IDS`] (1,024; when all are taken the encoder redefines one not used
//! lately), only paths with at most [`wire::MAX_ID_PATH_UNITS`] (256) UTF-16 units of key
//! text get one, and a decoder (Rust or JavaScript) refuses a definition that breaks either
//! rule. The detail is in [`wire`].
//!
//! [`apply`] applies a batch to an `Option<serde_json::Value>` (`None` before the first base
//! batch). It is strict (a missing parent, a wrong type or an index past the end is an error,
//! never a guess) and atomic: if any op fails, the target is left exactly as it was.
//! [`apply_with`] takes explicit [`Limits`]. A reader of untrusted text does both at once with
//! [`Decoder::apply_str`]: each op is decoded, applied and dropped as the text is read, with
//! the same outcome as decoding first, so a batch's ops are never all held (the Rust
//! replica, recovery and the stores read batches this way).
//!
//! ```
//! use chord::{apply, path, Category, Decoder, Encoder, Op};
//! use serde_json::json;
//!
//! let mut encoder = Encoder::new();
//! let mut decoder = Decoder::new();
//! let mut replica = None;
//! let batches = [
//!     vec![Op::Replace(json!({"out": ""}))],
//!     vec![Op::Append(path!["out"], "a".into())],
//!     vec![Op::Append(path!["out"], "b".into()), Op::Append(path!["out"], "c".into())],
//! ];
//! let wire: Vec<String> = batches.iter().map(|b| encoder.encode(b).to_json()).collect();
//! // Second use: the path gets id 0; the next op omits it.
//! assert_eq!(wire[2], r##"[["#",0,["out"]],["a",0,"b"],["a","c"]]"##);
//! for text in &wire {
//!     apply(&mut replica, decoder.decode_str(text)?)?;
//! }
//! assert_eq!(replica, Some(json!({"out": "abc"})));
//!
//! // A batch whose second op fails changes nothing.
//! let bad = [Op::Append(path!["out"], "d".into()), Op::Append(path!["missing"], "e".into())];
//! let err = apply(&mut replica, bad).unwrap_err();
//! assert_eq!(err.kind().category(), Category::Apply);
//! assert_eq!(replica, Some(json!({"out": "abc"})));
//! # Ok::<(), chord::Error>(())
//! ```
//!
//! A decoder that failed on a batch is poisoned: later batches may use ids the failed one
//! defined, so the reader must start again from a base batch with a fresh decoder. Every error
//! names the op (its index in the batch), the path and what was wrong, and
//! [`ErrorKind::category`] says what a caller can do about it: [`Category::Parse`] (bad input),
//! [`Category::Decode`] (restart from a base), [`Category::Apply`] (the replica and the
//! producer disagree: resynchronise), [`Category::Limit`], [`Category::Track`] (the value
//! cannot be carried as JSON).
//!
//! ## Storage and recovery
//!
//! A tracked value lives at an [`Address`](store::Address) (a namespace and a key) in an
//! append-only log of encoded batches ([`store`]). A batch that starts with `r` is stored with
//! the tag `base`; recovery reads back to the last base and applies forward with a fresh
//! decoder, so its cost is bounded by the distance to the last base, not by the length of the
//! history. [`Durable`](store::Durable) ties a tracker, an encoder and a store together and
//! answers a [`Checkpoint`](store::Checkpoint) policy with checkpoints: the flush's changes,
//! then the value after them as a base tagged `checkpoint`, which recovery and readers with
//! no value start from and readers that have the value never receive:
//!
//! ```
//! use chord::store::{Address, Checkpoint, Durability, Durable, JsonlStore, LogWriter};
//!
//! #[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default)]
//! struct Lane {
//!     text: String,
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("agent.jsonl");
//! let lane = Address::new("lanes", "main");
//!
//! let store = JsonlStore::open(&path, Durability::EveryAppend)?; // one writer per log (a lock)
//! let writer = LogWriter::new(store, Checkpoint::EveryBatches(50)); // at most 50 to replay
//! let mut durable = Durable::open(writer, lane.clone(), Lane::default)?; // recovers, or starts
//! durable.state().text.push_str("Hello");
//! durable.flush()?; // on disk when it returns
//! drop(durable);
//!
//! // Later, perhaps after a crash: the same call recovers the typed value.
//! let store = JsonlStore::open(&path, Durability::EveryAppend)?;
//! let durable = Durable::open(LogWriter::new(store, Checkpoint::EveryBatches(50)), lane, Lane::default)?;
//! assert_eq!(durable.get().text, "Hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - **Backends.** [`JsonlStore`](store::JsonlStore): the embedded default, one record per
//!   line, addresses interned per file. `SqliteStore` (feature `sqlite`, SQLite bundled) and
//!   `PostgresStore` (feature `postgres`, [the cluster](#the-cluster)): a table keyed by
//!   (address, seq). All three pass one conformance suite and implement
//!   [`Store`](store::Store).
//! - **Durability is explicit.** [`Durability::EveryAppend`](store::Durability) syncs each
//!   append; `Durability::Grouped { max_batches, max_delay }` syncs groups, and
//!   [`Store::durable_seq`](store::Store::durable_seq) says what has reached the disk.
//! - **Acknowledged means recoverable.** An append that returns `Ok` stored a batch recovery
//!   can read back: the store parses it as recovery will and checks it against the wire grammar
//!   and the bounds that hold whatever the state; a record over
//!   [`MAX_RECORD_BYTES`](store::MAX_RECORD_BYTES) (64 MiB, lower with
//!   [`LogWriter::max_record_bytes`](store::LogWriter::max_record_bytes)) is refused
//!   ([`store::Error::RecordTooLarge`]).
//! - **Damage is never silent.** Every JSONL line ends with a CRC-32C chained from the previous
//!   line's; SQLite and PostgreSQL records carry a CRC-32C and a link to their address's
//!   previous record. A flipped bit, a missing, duplicated or moved record is an error naming
//!   where it is, never another state. A torn last line (never acknowledged) is cut off on open.
//!   What no checksum can see, a clean cut at the end (a JSONL log that lost its last lines, a
//!   SQLite WAL that lost a frame), the *acknowledged mark* does: a small `<path>-ack` file
//!   beside a JSONL or SQLite store holds the highest seq reported durable, and a store that
//!   ends before it is [`store::Error::RolledBack`] at open. PostgreSQL's own durability
//!   decides what survives there. Not detected: a store restored together with its mark, or a
//!   power loss that took the mark's latest write with the data's (the `store` module docs say
//!   what each store detects, and the trials behind it).
//! - **Compaction.** [`Store::compact`](store::Store::compact) removes an address's records
//!   before its n-th newest base batch. JSONL rewrites the file crash-safely (a temporary file,
//!   fsync, rename, directory fsync; seqs unchanged), so it costs `O(file size)`; SQLite and
//!   PostgreSQL delete rows in one transaction. [`streams::Log`](#streams) runs it by policy.
//! - **Typed recovery.** `Durable::open` compares the recovered JSON with what the typed value
//!   serializes to; when the type changed (a new `#[serde(default)]` field), the next flush
//!   carries the difference, so the log and every reader come to the typed value.
//! - **Inspection.** The `chord` command (package `chord-delta-cli`) prints a log's addresses,
//!   its ops in readable form, a recovered value at any seq, and statistics, for a JSONL file or
//!   a PostgreSQL URL.
//!
//! ## Streams
//!
//! With the feature `streams`, `streams::Streams` serves every address's log as a
//! [Durable Stream](https://github.com/durable-streams/durable-streams) at
//! `/streams/{namespace}/{key}` (`streams::ROUTE`): an append-only, offset-addressed stream of
//! `application/json` messages, each one wire batch exactly as the log holds it. The producer
//! writes through a `streams::Log` (a `Store` shared with the server); the server reads through
//! the same `Log`.
//!
//! A complete program (`chord/examples/guide_server.rs`, which `chord/tests/guide_server.rs`
//! starts on a free port, reads with a client and stops), with these dependencies:
//!
//! ```toml
//! [dependencies]
//! chord-delta = { path = "../chord/chord", features = ["streams"] } # a checkout of chord
//! serde = { version = "1", features = ["derive"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "net", "signal"] }
//! ```
//!
// Shown in every build of the docs; compiled (not run: it serves until the process is
// stopped) where the feature it needs is on.
#![cfg_attr(feature = "streams", doc = "```no_run")]
#![cfg_attr(not(feature = "streams"), doc = "```ignore")]
#![doc = concat!(include_str!("../examples/guide_server.rs"), "```")]
//!
//! - **Offsets** are the log's seqs as 16 lowercase hexadecimal digits: opaque to clients,
//!   ordered as the log is. Reading from an offset returns the records after it.
//! - **A fresh reader** starts at the latest base batch: every response, `HEAD` included,
//!   carries `Chord-Base-Offset`, the offset just before it (followed by `.base` when that
//!   base is a checkpoint). A reader that reconnects with the `streamNextOffset` it was last
//!   given receives only what followed, checkpoints left out, and keeps its decoder.
//! - **Read modes**: catch-up (`GET ?offset=`), `live=long-poll` (20 s by default), and
//!   `live=sse`: `data` events holding a JSON array of batches, each followed by a `control`
//!   event with `streamNextOffset`, `streamCursor` and `upToDate`. The server ends an SSE
//!   response after 60 s and the client resumes. `ETag`/`If-None-Match` and `Cache-Control` as
//!   the protocol says; 400 for a malformed request, 404 for an address with no records.
//! - **Retention**: `streams::Retention::Bases(4)` by default keeps the last four base batches
//!   readable, and `streams::LogBuilder::keep_for` (6 minutes by default) every record
//!   appended within it, however many bases came since, so that an answer a cache may give out
//!   under the default policy never points past what the log keeps (a joiner's answers,
//!   `offset=base` and `offset=-1`, are sent with their `Cache-Control` shortened to it); an
//!   offset before the oldest base kept answers `410 Gone` and the client starts again from
//!   the latest base. The `Log` compacts the store to match (`streams::Compaction`, by default
//!   at the first base after it starts, then at every fourth); a reader in a compacted range
//!   gets 410, never a gap.
//! - **Fan-out encodes once.** Each append lands in its address's *tail cache* (1,024 records
//!   and 8 MiB by default) with its SSE events already framed; every reader at the tail is
//!   sent the same bytes. Nothing is queued per reader: one that falls behind reads the store
//!   from its own offset, and a stalled one holds only its socket buffers (64 KiB each by
//!   default, `streams::Server`).
//! - **Coalescing**: `Streams::coalesce(window)` sends at most one `data` event per window on
//!   each connection, with every batch appended meanwhile: one write and one wake per window
//!   instead of one per batch, for at most `window` of extra latency. The default sends each
//!   batch at once.
//! - **Pages on other origins** may read by default: `streams::default_cors()` (tower-http's
//!   CORS layer) grants any origin without credentials and exposes `Stream-Next-Offset` and the
//!   protocol's other headers. `Streams::cors(Some(policy))` names origins (required for
//!   cookies: a credentialed request needs an exact origin, never `*`); `Streams::cors(None)`
//!   leaves only same-origin pages. A bearer token in `Authorization` needs no credentials mode.
//! - **The write side** is off by default (405). `Streams::writes(authorize)` enables `PUT` and
//!   `POST` of wire batches, each request passed to the application's hook first. With
//!   `Streams::backend(streams::Memory::new())`, addresses that hold no chord log become full
//!   Durable Streams (any content type, close, `DELETE`, idempotent producers, TTL, forks): the
//!   example server `chord/examples/streams_server.rs` passes the protocol's conformance suite
//!   that way.
//!
//! ## Replicas
//!
//! A replica starts at the latest base batch, applies each `data` event together with the
//! `control` event after it, and keeps that offset. After any break it reconnects and resumes
//! from the offset with the same decoder; it starts over from the latest base only on `410`,
//! `404`, or a batch that does not decode or apply.
//!
//! - **Rust**: `replica::Replica` (feature `replica`) follows a stream over plain HTTP/1 on a
//!   tokio runtime; read the value at any time, or wait for changes on a `watch` channel.
//! - **JavaScript**: the `chord-replica` package in the repository's `js/` folder (one
//!   dependency-free ES module for browsers and Node 18+, with TypeScript declarations): the
//!   same decoder and applier rules, and `follow()`, which does what `Replica` does. Its
//!   README is the JavaScript quickstart.
//! - **TypeScript types**: [`typescript::declarations`]`::<Lane>()` is the `.d.ts` text of a
//!   tracked type's JSON, emitted by the derive from the serde attributes its paths follow,
//!   so a page types the replica's value (`/** @type {import('./lane').Lane} */`) with
//!   declarations generated from the Rust types, not re-typed by hand; the main example's are
//!   `demo/src/agent_lane/lane.d.ts`.
//!
// Shown in every build of the docs; compiled (not run: it needs a server to follow) where
// the feature it needs is on.
#![cfg_attr(feature = "replica", doc = "```no_run")]
#![cfg_attr(not(feature = "replica"), doc = "```ignore")]
#![doc = r####"
use chord::replica::Replica;

#[derive(serde::Deserialize, Debug)]
struct Lane {
    text: String,
}

# async fn run() -> Result<(), Box<dyn std::error::Error>> {
let replica = Replica::connect("http://127.0.0.1:8080/streams/lanes/main")?;
let mut changes = replica.watch();
while changes.changed().await.is_ok() {
    if let Some(lane) = replica.value_as::<Lane>() {
        println!("{}", lane?.text);
    }
}
# Ok(())
# }
```
"####]
//!
//! ## The cluster
//!
//! With the feature `postgres`, `store::PostgresStore` keeps the log in PostgreSQL, so that
//! several stateless chord nodes behind a load balancer share it: an address's producer runs
//! on one node, its readers on any.
//!
//! - **One writer per address.** The first append, or `PostgresStore::claim(address, wait)`,
//!   takes a session-level advisory lock on the address; a second writer gets an
//!   `AddressLocked` error naming the holder. When the writer's process or connection dies,
//!   PostgreSQL frees the lock, a standby's `claim` gets it, and `Durable::open` recovers the
//!   value and continues with deltas (readers keep their decoders). Every write moves the
//!   address's last seq by compare-and-set, so a writer cut off while another took over is
//!   refused for good (`Fenced`).
//! - **A live tail across nodes.** Each write notifies at commit (`LISTEN`/`NOTIFY`);
//!   `PostgresStore::tail` follows an address from a cursor without polling.
//! - **Any node serves any stream.** A `streams::Log` over a `PostgresStore` feeds the tail
//!   cache of each address with live readers from that tail, so every node serves every
//!   address, with the same offsets everywhere. A reader whose node dies reconnects to another
//!   and resumes from its offset. `chord/examples/cluster_node.rs` is such a node.
//! - **Schema and connections.** The store creates its tables in the URL's `schema` (default
//!   `public`) and versions their layout; reads use a small pool (4 connections by default),
//!   the writer a connection of its own; TLS comes from any `postgres` connector.
//!
//! **Deployment.** N stateless chord nodes and one PostgreSQL. PostgreSQL holds everything
//! durable: records, addresses, seqs, and which node writes which address (its advisory
//! locks). The producing node holds its tracked values, their encoders and the locks'
//! connection; any node holds, per address with live readers, a tail cache and a follower
//! thread, and nothing per reader but its connection. A reader node that dies loses nothing:
//! its readers reconnect anywhere and resume. A producer node that dies frees its locks as
//! soon as PostgreSQL sees its connection close (at once for a dead process; for a vanished
//! machine, when the TCP keepalives the writer's session sets give up, within about 20 s);
//! a standby's `claim` takes over and recovers, and batches not yet acknowledged are the
//! producer's to redo. PostgreSQL itself is the one stateful part: its own replication and
//! failover apply.
//!
// Shown in every build of the docs; compiled (not run: it needs a PostgreSQL server) where
// the feature it needs is on.
#![cfg_attr(feature = "postgres", doc = "```no_run")]
#![cfg_attr(not(feature = "postgres"), doc = "```ignore")]
#![doc = r####"
use std::time::Duration;
use chord::store::{Address, Checkpoint, Durability, Durable, LogWriter, PostgresStore};

#[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default)]
struct Lane {
    text: String,
}

let url = "postgres://app@db:5432/app?schema=agents";
let lane = Address::new("lanes", "main");

// The producer's node: claim the address (waiting while another node holds it), recover, go on.
let mut store = PostgresStore::open(url, Durability::EveryAppend)?;
store.claim(&lane, Duration::from_secs(30))?;
let writer = LogWriter::new(store, Checkpoint::EveryBatches(100));
let mut producer = Durable::open(writer, lane.clone(), Lane::default)?;
producer.state().text.push_str("Hello");
producer.flush()?;

// Any node: follow the address from the start, woken by each commit.
let reader = PostgresStore::open_read_only(url)?;
let mut tail = reader.tail(&lane, None)?;
let records = tail.next(Some(Duration::from_secs(30)))?;
# let _ = records;
# Ok::<(), chord::store::Error>(())
```
"####]
//!
//! ## Deployment
//!
//! A node is an axum router (`streams::Streams`) served by `streams::Server`; several
//! nodes share one PostgreSQL store, behind a load balancer or a cache. The `chord` command
//! (the `chord-delta-cli` package) runs such a node without Rust: `chord serve <LOG>` with
//! health, readiness, Prometheus metrics, a cache and cross-origin policy, read tokens and
//! the drain below (`docs/deployment.md` in the repository). What an operator wires up in a
//! server of their own, each described where it lives:
//!
//! - **Health and readiness**: `streams::Health` serves `/healthz` and `/readyz` (the store
//!   answers a probe, a follower's lag is under its threshold); merge it into the router and
//!   point the load balancer's checks at it. The cluster example does.
//! - **Metrics and traces**: counters, gauges and histograms through the `metrics` facade
//!   (install the exporter you want, Prometheus's for one, then call
//!   `streams::describe_metrics` for their help text), requests counted by kind and status
//!   and timed, `tracing` spans for requests and store work; the names are in the `streams`
//!   module's *Operations*.
//! - **A rolling restart**: `Server::serve` drains when its shutdown future resolves (SSE
//!   responses end at an event boundary, so readers resume on another node from their
//!   offsets; catch-up reads finish), within `Server::drain`.
//! - **A database blip**: a failed append is retried as the same records, so readers see no
//!   base batch and no duplicate (the `store` module's PostgreSQL section).
//! - **TLS, HTTP/2 and a cache at a proxy**: chord serves plain HTTP/1.1; `docs/deployment.md`
//!   in the repository and `examples/nginx/nginx.conf` put nginx in front, with request
//!   collapsing for catch-up reads (the nodes then send a `public` `Cache-Control`).
//! - **Readers in browsers**: cross-origin policy (`Streams::cors`), read authorization
//!   (`Streams::reads`, over every read route) and the credentials a page sends are in the
//!   `streams` module's *Authorization* and *Credentials across origins*; the JavaScript
//!   package (`js/` in the repository) sends headers or cookies on every request and
//!   reconnect. [`typescript`] writes the TypeScript types of the state a page receives.
//! - **Capacity**: `BENCHMARKS.md` in the repository measures how many lanes, flushes and
//!   readers one node serves, and what runs out first.
//!
//! ## Limits and reliability
//!
//! Bad input never panics and never half-applies. Every bound, with its default:
//!
//! | bound | default | where |
//! | --- | --- | --- |
//! | depth of an applied document | 120 | [`Limits::max_depth`] |
//! | elements of an array | 2^24 | [`Limits::max_array_len`] |
//! | bytes of a string | 256 MiB | [`Limits::max_string_len`] |
//! | work per batch (see [the cost of each verb](#the-cost-of-each-verb)) | 2^24 units | [`Limits::max_work`] |
//! | segments of a path | 128 | [`MAX_PATH_SEGMENTS`] |
//! | counts, indices, ids; integers in JS-safe mode | 2^53 − 1 | [`MAX_SAFE_INTEGER`] |
//! | ids in the wire's path table | 1,024 | [`wire::MAX_IDS`] |
//! | key text of a path that gets an id | 256 UTF-16 units | [`wire::MAX_ID_PATH_UNITS`] |
//! | bytes of a stored record | 64 MiB | [`store::MAX_RECORD_BYTES`] |
//! | records / bytes in an address's tail cache | 1,024 / 8 MiB | `streams::LogBuilder::tail_records`, `tail_bytes` |
//! | bytes of all of a log's tail caches together (least recently used out first) | 64 MiB | `streams::LogBuilder::tail_cache_bytes` |
//! | base batches readable | 4 | `streams::Retention` |
//! | records readable however many bases came since (the time floor) | 6 min | `streams::LogBuilder::keep_for` |
//! | long-poll wait | 20 s | `streams::Streams::long_poll` |
//! | an SSE response's lifetime | 60 s | `streams::Streams::sse_lifetime` |
//! | SSE keep-alive comment | every 15 s | `streams::Streams::keep_alive` |
//! | kernel send buffer per connection | 64 KiB | `streams::Server::send_buffer` |
//! | namespace or key in a URL | 1,024 bytes | `streams::MAX_NAME` |
//! | body of an authorized write (a larger `Content-Length` is a 413 before reading; a refused write's body is never read) | 16 MiB | `streams::Streams::max_body` |
//! | request bodies held at once, all requests together | 64 MiB | `streams::Streams::body_budget` |
//! | wait for room in that budget, then 503 | 5 s | `streams::Streams::body_wait` |
//! | time a body may take to arrive, then 408 | 30 s | `streams::Streams::body_timeout` |
//! | `Stream-TTL` of a protocol stream | 36,500 days | `streams::MAX_TTL` |
//! | protocol streams in memory / bytes each | 10,000 / 64 MiB | `streams::Memory::max_streams`, `max_stream_bytes` |
//! | a follower thread idle without live readers | 30 s | `streams::LogBuilder::follow_idle` |
//! | replica reconnect backoff | 50 ms to 2 s | `replica::Builder::backoff` |
//! | replica silence before reconnecting | 45 s | `replica::Builder::idle_timeout` |
//! | bytes of one SSE event a replica reads | 64 MiB | `replica::Builder::max_event` |
//! | PostgreSQL read pool | 4 connections | `PostgresBuilder::pool_size` |
//!
//! - **Untrusted batches** cost memory in proportion to what they add to the document, not to
//!   their length: [`Decoder::apply_str`] holds one op at a time and an undo log with one
//!   entry per location the batch changes. At a million ops of any verb (path in full, by id
//!   or omitted) its peak stays under 0.11x of the batch's bytes, and a store's check of a
//!   batch under 0.01x (`chord/tests/decode_memory.rs`, a counting allocator);
//!   [`Decoder::decode_str`], which returns every op, costs 6-18x, most of it the ops
//!   themselves (80 bytes each). A path reused by id or by omission is shared, not copied.
//!   The default depth leaves room under serde_json's parser limit for the batch and op
//!   around a document, so anything `apply` accepts can cross the wire.
//! - **Acknowledged means recoverable**, and **damage is never silent**
//!   ([storage](#storage-and-recovery)). A crash test kills a writer with `SIGKILL` at random
//!   moments and recovers exactly the last acknowledged flush.
//! - **Fuzzing.** The repository's `fuzz/` folder holds cargo-fuzz targets for the decoder, the
//!   parser, the applier, the tracker's round trip and opening a log; their seed corpora are
//!   replayed by `cargo test`.
//!
//! ## The cost of each verb
//!
//! `apply` counts work in units and refuses a batch over [`Limits::max_work`]
//! (`LimitExceeded { limit: "max_work" }`), rolling it back at most at the cost the batch
//! already had. Beyond reading its own payload, each op costs:
//!
//! | verb | cost |
//! | --- | --- |
//! | every op but `r` | walking its path: one per segment plus the length of each key |
//! | `s`, `a`, `r` | nothing more |
//! | `d` of an element | the elements after it (they shift down) |
//! | `d` of a member | the members after it (key order is kept); a run of 16 or more deletes under one object is one ordered pass costing the object's size once; a missing member costs nothing |
//! | `t` | the characters left after the cut (they shift to the front) |
//! | `p` | the items removed and inserted, plus the tail when the length changes |
//!
//! The JavaScript replica counts the same way (characters in UTF-16 units). On the producer's
//! side, recording an op costs `O(change)`: an append copies its text, a splice records its
//! range (an insert at the front is one op), an assignment is compared with the accepted value
//! at flush; only the [fallback](#tracking-typed-state) serializes a whole location.
//!
//! ## Where chord differs from the TypeScript reference
//!
//! The format is that of the TypeScript reference implementation, whose conformance vectors
//! chord replays. The differences:
//!
//! - A batch applies atomically: if any op fails, the target is left as it was.
//! - `t` refuses to cut a surrogate pair in half (the reference leaves a lone surrogate, which
//!   no Rust `String` or strict JSON parser can hold).
//! - `["s", [], v]` cannot be built: `Set` takes a non-empty path by type.
//! - A decoder that failed is poisoned: the reader restarts from a base batch.
//! - Counts, indices and ids are refused above 2^53 − 1; paths have at most 128 segments, and a
//!   batch has a work budget. The reference has neither bound.
//! - The default depth limit is 120, under serde_json's parser limit.
//! - The string overlap probe finds rolling windows over repetitive text (a build log) that the
//!   reference gives up on and sends whole.
//! - A rolling window (a string that lost its front and grew at its end) is sent as one `s`
//!   of the new string when that is smaller as JSON than `t` + `a`; the reference always
//!   sends `t` + `a`, and its rolling-window scenarios expect them.
//! - A change to an array element's place made through the array (an insert, a removal, a
//!   `splice`) is sent as a `p`, with the items it inserts, where the reference's tracker may
//!   send `["s", ["xs", 0], 9]` for the element; a plain assignment of an element is an `s`
//!   in both. Both apply to the same array.
//! - Encoded payloads match the reference byte for byte on every conformance vector, but not
//!   always: by default floats are spelled as serde_json spells them (`1.0`, `-0.0`, `1e-6`,
//!   `1e+20` where JavaScript writes `1`, `0`, `0.000001`, `100000000000000000000`): each
//!   parses to the same number on both sides, and a Rust replica decodes exactly the `Value`
//!   the producer serialized. An encoder set to [`wire::Numbers::JavaScript`] (and a
//!   [`store::LogWriter`] set so) writes them as `JSON.stringify` does, checked against Node
//!   on random floats. Objects keep insertion order (serde_json's `preserve_order`), while a
//!   JavaScript object lists integer-like keys first: the members agree, `JSON.stringify` of a
//!   JavaScript replica may order them differently.
//!
//! # Feature flags
//!
//! None is on by default.
//!
//! | feature | what it adds | dependencies it turns on |
//! | --- | --- | --- |
//! | `sqlite` | `store::SqliteStore`, the SQLite backend of the durable log | rusqlite (bundled SQLite) |
//! | `postgres` | `store::PostgresStore`, the PostgreSQL backend: shared by a cluster, one writer per address, a live tail across nodes | postgres (the synchronous client) |
//! | `streams` | `streams::Streams`: every address's log served as a Durable Stream (catch-up, long-poll, SSE), with `streams::Log`'s tail cache | tokio runtime, axum, hyper (server), hyper-util, http-body, bytes, tower-service, tower-http (CORS), socket2, hashlink, time, base64 |
//! | `replica` | `replica::Replica`: a Rust replica following a stream over plain HTTP/1, resuming from its offset | tokio runtime, hyper (client), hyper-util, http-body-util, bytes |
//! | `live` | `streams` + `replica` | |
//! | `test-util` | for testing programs built on chord, not for production: with `postgres`, `PostgresStore::cut_next_write` (the server ends the writer's session during a write) | |
//! | `ag-ui` | `ag_ui`: a run of a Rust agent served to [AG-UI](https://docs.ag-ui.com) clients from a chord log (state patches, text deltas, resumable event ids), and `ag_ui::Patcher` | `ag-ui-patch`, `streams`, serde_path_to_error |
//! | `ag-ui-patch` | `ag_ui` without the server stack: `ag_ui::Patcher` (a flush's ops as an RFC 6902 patch), the events, the input, and `ag_ui::Run` over any store | json-patch |
//! | `ai-sdk` | `ai_sdk`: a run of a Rust agent served to the Vercel AI SDK's `useChat` (its UI message stream: text parts, the state as data parts, resumable event ids), on the AG-UI door's run layer | `ag-ui` |
//!
//! # Dependencies
//!
//! Every dependency, with what chord uses it for. The core (tracking, the format, the codec,
//! the applier, JSONL logs and recovery) takes these:
//!
//! - **chord-derive**: `#[derive(Tracked)]`, the proxies, flush walks and TypeScript
//!   declarations of a user's types.
//! - **serde**: every value chord tracks is `Serialize`, and ops, paths and records are
//!   serialized and deserialized through it.
//! - **serde_json**: the JSON values ops carry and the text batches are read from and written
//!   to, with `preserve_order` (object members keep their order, as in JavaScript),
//!   `float_roundtrip` and `raw_value`.
//! - **hashbrown**: the hash tables whose hashes chord supplies (`HashTable`): the wire
//!   encoder's path table and the tracker's index of a node's children.
//! - **foldhash**: the hash of those two tables, cheaper than SipHash on short keys, with a
//!   random seed per table.
//! - **itoa**: integers written into JSON text without the formatting machinery.
//! - **smallvec**: an array's splice runs with room for two inline, so a streaming push
//!   records its run without allocating.
//! - **ryu-js**: floats spelled as JavaScript's `Number.prototype.toString` spells them, for
//!   an encoder set to [`wire::Numbers::JavaScript`].
//! - **tracing**: events for what a user may want to know without handling it (a tracker's
//!   whole-value fallbacks, target `chord::fallback`), and the streams layer's spans around
//!   requests and store work.
//! - **thiserror**: the `Display` and `source` of every error type.
//! - **crc32c**: the per-record checksums of the durable logs (CRC-32C, hardware-accelerated
//!   where the CPU has it).
//! - **percent-encoding**: stream names in URL paths, the `schema` parameter of a PostgreSQL
//!   URL, and the offsets a replica sends.
//! - **metrics**: counters, gauges and histograms of the tracker's fallbacks and the streams
//!   layer, through the `metrics` facade (without a recorder installed, every call is a
//!   no-op).
//!
//! The features add these (see the table above for which feature takes which):
//!
//! - **rusqlite** (`sqlite`): the SQLite backend, with SQLite bundled so nothing needs
//!   installing.
//! - **postgres** (`postgres`): the PostgreSQL backend, through the synchronous client; TLS
//!   comes from a connector the caller brings.
//! - **tokio** (`streams`, `replica`): the runtime the server and the replica run on.
//! - **axum** (`streams`): the router of the streams endpoints.
//! - **hyper** (`streams`, `replica`): HTTP/1, the server's connections and the replica's
//!   client.
//! - **hyper-util** (`streams`, `replica`): hyper's tokio glue (I/O and executor).
//! - **http-body** (`streams`): the bodies the server streams (catch-up pages, SSE).
//! - **http-body-util** (`replica`): reading the replica's response bodies.
//! - **bytes** (`streams`, `replica`): the buffers bodies and framed events are sent and read
//!   in, shared between readers without copies.
//! - **tower-service** (`streams`): calling the router per connection in the server.
//! - **socket2** (`streams`): the kernel send buffer of each connection
//!   (`streams::Server::send_buffer`).
//! - **hashlink** (`streams`): the least-recently-used order of `streams::Log`'s tail caches.
//! - **time** (`streams`): RFC 3339 timestamps of `Stream-Expires-At`, every field
//!   range-checked.
//! - **tower-http** (`streams`): the CORS layer of cross-origin reads (`Streams::cors`).
//! - **base64** (`streams`): the bytes of a protocol stream's message that are not UTF-8, in
//!   the journal of `streams::Journaled`.
//! - **json-patch** (`ag-ui-patch`): the RFC 6902 operation types of AG-UI's `STATE_DELTA`
//!   events, which `ag_ui::Patcher` builds from ops.
//! - **serde_path_to_error** (`ag-ui`): an AG-UI client's `state` read into the run's state
//!   type, a misfit refused naming the field it is at (`state.plan[1]`).
//!
//! # Map of the crate
//!
//! - [`Tracked`] (derive and trait), [`track`], [`Tracker`], the proxies in [`proxy`].
//! - [`Op`], [`Path`], [`path!`], [`is_base`], [`display_batch`], [`utf16_len`]: the format.
//! - [`parse_batch`], [`batch_from_value`] and `Deserialize`: validation where JSON enters.
//! - [`apply`], [`apply_with`], [`Limits`]: the applier. [`diff`]: the ops between two
//!   snapshots.
//! - [`Encoder`], [`Decoder`], [`wire`]: the per-stream codec.
//! - [`store`]: durable logs, recovery, [`store::LogWriter`] and [`store::Durable`].
//! - `live` (feature `streams`): the layer every protocol door stands on (the log and its
//!   tail cache, the cursor, shared frames, the SSE body, headers, request metrics, the
//!   server that drains).
//! - `streams` (feature `streams`) and `replica` (feature `replica`): live replication.
//! - `ag_ui` (feature `ag-ui`): AG-UI frontends, a chapter of its own.
//! - `ai_sdk` (feature `ai-sdk`): the AI SDK's `useChat`, a chapter of its own.
//! - [`Error`], [`ErrorKind`], [`Category`]: one error type, categorised.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

// The derive's generated code names `::chord`: so may this crate's own derived types.
extern crate self as chord;

#[cfg(feature = "ag-ui-patch")]
#[cfg_attr(docsrs, doc(cfg(feature = "ag-ui-patch")))]
pub mod ag_ui;
#[cfg(feature = "ai-sdk")]
#[cfg_attr(docsrs, doc(cfg(feature = "ai-sdk")))]
pub mod ai_sdk;
mod apply;
mod batch;
mod diff;
mod error;
mod json;
mod json_write;
#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
pub mod live;
mod op;
mod overlap;
mod path;
pub mod proxy;
#[cfg(feature = "replica")]
#[cfg_attr(docsrs, doc(cfg(feature = "replica")))]
pub mod replica;
#[cfg(feature = "ag-ui-patch")]
mod runs;
mod safe_integer;
pub mod store;
#[cfg(feature = "streams")]
#[cfg_attr(docsrs, doc(cfg(feature = "streams")))]
pub mod streams;
mod tracker;
pub mod typescript;
mod utf16;
mod validate;
pub mod wire;

pub use crate::apply::{apply, apply_with, IntoOp, Limits};
pub use crate::batch::{display_batch, is_base};
pub use crate::diff::diff;
pub use crate::error::{Category, Error, ErrorKind, Result};
pub use crate::op::Op;
pub use crate::path::{NonEmptyPath, Path, Seg, MAX_PATH_SEGMENTS, RESERVED};
pub use crate::safe_integer::MAX_SAFE_INTEGER;
pub use crate::tracker::{track, Fallbacks, Proxy, Tracked, Tracker, FALLBACK_PATHS};
pub use crate::utf16::utf16_len;
pub use crate::validate::{batch_from_value, parse_batch};
pub use crate::wire::{Applied, Decoder, Encoder, PathRef, WireBatch, WireOp};
pub use chord_derive::Tracked;

#[doc(hidden)]
pub mod __private;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    /// The names in a bulleted list of the crate docs' `# Dependencies` (`- **name**`).
    fn documented() -> Vec<&'static str> {
        let docs = include_str!("lib.rs");
        let start = docs
            .find("//! # Dependencies")
            .expect("a Dependencies section");
        let end = start + docs[start..].find("//! # Map").expect("a section after it");
        docs[start..end]
            .lines()
            .filter_map(|l| l.strip_prefix("//! - **")?.split("**").next())
            .collect()
    }

    /// The names under `[dependencies]` in `Cargo.toml`.
    fn declared() -> Vec<&'static str> {
        let manifest = include_str!("../Cargo.toml");
        let start = manifest.find("\n[dependencies]\n").expect("[dependencies]");
        manifest[start..]
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.split([' ', '=']).next())
            .collect()
    }

    #[test]
    fn the_docs_list_every_dependency_once() {
        let mut documented = documented();
        let mut declared = declared();
        assert!(declared.contains(&"serde_json"), "{declared:?}");
        documented.sort_unstable();
        declared.sort_unstable();
        assert_eq!(documented, declared);
    }
}
