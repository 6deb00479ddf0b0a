//! The benchmark workloads of `testdata/bench/README.md` (W1–W7, W4r, W4L, W5big,
//! W6big), each written once per library so that chord, muon and json-patch do exactly the
//! same work on the same inputs. Shared by `benches/workloads.rs` (timing, and the size table
//! it prints) and `tests/workload_sizes.rs` (chord's structural targets).
//!
//! One *step* is what a producer does per update: mutate, flush, encode, serialize to the
//! wire text. Building the initial state and draining its first base batch is not a step.
#![allow(dead_code)]

use std::sync::LazyLock;

use chord::{track, Encoder, Op, Tracked, Tracker};
use muon::adapter::Json;
use muon::{observe, Mutation, MutationKind, PathSegment};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Inputs

fn bench_data(name: &str) -> String {
    let path = format!("{}/../testdata/bench/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// `text40k.txt`: English-like ASCII with newlines and quotes.
pub static TEXT40K: LazyLock<String> = LazyLock::new(|| bench_data("text40k.txt"));

/// W1's initial text: `text40k` with room to grow, as a string that is being streamed into
/// has (otherwise a fresh copy's first append copies 40 KB, and whether the allocator can grow
/// it in place decides the figure, not the library).
pub fn w1_text() -> String {
    let mut text = String::with_capacity(TEXT40K.len() + 4096);
    text.push_str(&TEXT40K);
    text
}
/// `text50k.txt`.
pub static TEXT50K: LazyLock<String> = LazyLock::new(|| {
    let t = bench_data("text50k.txt");
    assert!(t.is_ascii() && t.len() >= 50_000, "text50k.txt is ASCII");
    t
});
/// `w6_entries.json`: 1,000 transcript entries `{role, text}`.
pub static W6_ENTRIES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let v: Vec<Value> = serde_json::from_str(&bench_data("w6_entries.json")).unwrap();
    assert_eq!(v.len(), 1000);
    v
});

/// W4L's build log: line `k` of an endless, repetitive log.
pub fn log_line(k: usize) -> String {
    format!("[{:3}%] Building CXX object src/foo{}.o\n", k % 100, k % 10)
}

/// Lines in W4L's initial 50 KB log.
pub static W4L_LINES: LazyLock<usize> = LazyLock::new(|| {
    let (mut bytes, mut k) = (0, 0);
    while bytes < 50_000 {
        bytes += log_line(k).len();
        k += 1;
    }
    k
});

/// W4L's initial value.
pub fn w4l_initial() -> String {
    (0..*W4L_LINES).map(log_line).collect()
}

/// W4L step `i`: the bytes of the 10 lines dropped from the front of `out`, and the 10 lines
/// appended.
pub fn w4l_step(out: &str, i: usize) -> (usize, String) {
    let cut = out
        .match_indices('\n')
        .nth(9)
        .map_or(out.len(), |(at, _)| at + 1);
    let first = *W4L_LINES + 10 * i;
    (cut, (first..first + 10).map(log_line).collect())
}

/// W4/W4r by assignment: `out[4..] + "!!!!"`.
pub fn w4_next(out: &str) -> String {
    let mut next = String::with_capacity(out.len());
    next.push_str(&out[4..]);
    next.push_str("!!!!");
    next
}

/// Bytes of text in W5big's message.
pub const W5BIG_BYTES: usize = 10_000_000;

/// W5big's 10 MB message: `text50k` repeated. Built with room to grow, as a string that has
/// been streamed into for a while has (so the first append does not copy 10 MB).
pub fn w5big_text() -> String {
    w5big_text_of(W5BIG_BYTES)
}

/// `bytes` bytes of `text50k` repeated, with room for 25% more (at least 1 MB: 10,000 steps
/// of 100 bytes).
pub fn w5big_text_of(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + (bytes / 4).max(1_000_000));
    while s.len() < bytes {
        let take = (bytes - s.len()).min(50_000);
        s.push_str(&TEXT50K[..take]);
    }
    s
}

/// W5big step `i`: 100 characters of `text50k`.
pub fn w5big_chunk(i: usize) -> &'static str {
    let at = (i * 100) % (50_000 - 100);
    &TEXT50K[at..at + 100]
}

/// Entries in W6big's initial transcript.
pub const W6BIG_ENTRIES: usize = 10_000;

/// Steps before W5's window of the last 500.
pub const W5_TAIL_FROM: usize = 4_500;

// ---------------------------------------------------------------------------------------------
// State types: one set per library (each derive wants its own)

/// chord's state types: `#[derive(Tracked, Serialize)]`.
pub mod ch {
    use chord::Tracked;
    use serde::{Deserialize, Serialize};

    #[derive(Tracked, Serialize)]
    pub struct Text {
        pub text: String,
    }

    #[derive(Tracked, Serialize, Clone)]
    pub struct Item {
        pub id: i64,
        pub name: String,
    }

    #[derive(Tracked, Serialize)]
    pub struct Items {
        pub items: Vec<Item>,
    }

    #[derive(Tracked, Serialize)]
    pub struct Out {
        pub out: String,
    }

    #[derive(Tracked, Serialize)]
    pub struct Message {
        pub role: String,
        pub content: String,
    }

    #[derive(Tracked, Serialize)]
    pub struct Messages {
        pub messages: Vec<Message>,
    }

    #[derive(Tracked, Serialize, Deserialize, Clone)]
    pub struct Entry {
        pub role: String,
        pub text: String,
    }

    #[derive(Tracked, Serialize)]
    pub struct Transcript {
        pub transcript: Vec<Entry>,
    }

    #[derive(Tracked, Serialize)]
    pub struct Arr {
        pub arr: Vec<i64>,
    }
}

/// muon's state types: `#[derive(Observe, Serialize)]`.
pub mod mu {
    use muon::Observe;
    use serde::{Deserialize, Serialize};

    #[derive(Observe, Serialize)]
    pub struct Text {
        pub text: String,
    }

    #[derive(Observe, Serialize, Clone)]
    pub struct Item {
        pub id: i64,
        pub name: String,
    }

    #[derive(Observe, Serialize)]
    pub struct Items {
        pub items: Vec<Item>,
    }

    #[derive(Observe, Serialize)]
    pub struct Out {
        pub out: String,
    }

    #[derive(Observe, Serialize)]
    pub struct Message {
        pub role: String,
        pub content: String,
    }

    #[derive(Observe, Serialize)]
    pub struct Messages {
        pub messages: Vec<Message>,
    }

    #[derive(Observe, Serialize, Deserialize, Clone)]
    pub struct Entry {
        pub role: String,
        pub text: String,
    }

    #[derive(Observe, Serialize)]
    pub struct Transcript {
        pub transcript: Vec<Entry>,
    }

    #[derive(Observe, Serialize)]
    pub struct Arr {
        pub arr: Vec<i64>,
    }
}

fn entries<T: serde::de::DeserializeOwned>(n: usize) -> Vec<T> {
    W6_ENTRIES
        .iter()
        .cycle()
        .take(n)
        .map(|e| serde_json::from_value(e.clone()).unwrap())
        .collect()
}

/// W6's entries as chord and muon values (cloned into the state at each push).
pub static CH_ENTRIES: LazyLock<Vec<ch::Entry>> = LazyLock::new(|| entries(1000));
pub static MU_ENTRIES: LazyLock<Vec<mu::Entry>> = LazyLock::new(|| entries(1000));

// ---------------------------------------------------------------------------------------------
// Running a stream

/// What one step put on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    /// Ops (chord ops, muon leaf mutations, JSON Patch operations).
    pub ops: usize,
    /// Length of the wire JSON text (0 when nothing was sent).
    pub bytes: usize,
}

/// A stream of one workload in one library: its state, its encoder, and the step.
pub trait Run {
    /// Performs step `i`: mutate, flush, encode, serialize.
    fn step(&mut self, i: usize) -> Emitted;

    /// Step `i` with its ops counted (what the size table prints); may cost more than `step`.
    fn sizes(&mut self, i: usize) -> Emitted {
        self.step(i)
    }
}

/// chord: a tracker, the stream's encoder, and the buffer the wire text is written into
/// (reused, as a server's send buffer is).
pub struct ChordRun<T: Tracked> {
    /// The tracked state.
    pub t: Tracker<T>,
    enc: Encoder,
    wire: Vec<u8>,
    mutate: fn(&mut Tracker<T>, usize),
}

impl<T: Tracked> ChordRun<T> {
    /// Tracks `value` and drains the base batch (encoded, so the encoder is where a real
    /// stream's would be).
    pub fn new(value: T, mutate: fn(&mut Tracker<T>, usize)) -> Self {
        let mut t = track(value);
        let mut enc = Encoder::new();
        let base = t.flush().unwrap();
        assert!(chord::is_base(&base));
        std::hint::black_box(enc.encode(&base).to_json());
        ChordRun {
            t,
            enc,
            wire: Vec::new(),
            mutate,
        }
    }

    /// Makes and flushes each of `changes` (untimed), so that the timed steps run on a
    /// stream that has sent ops on their path before: the steady state.
    pub fn warmed(mut self, changes: &[fn(&mut Tracker<T>)]) -> Self {
        for change in changes {
            change(&mut self.t);
            self.wire.clear();
            self.t.flush_into(&mut self.enc, &mut self.wire).unwrap();
        }
        self
    }

    /// Step `i`, returning the ops and the wire text.
    pub fn step_ops(&mut self, i: usize) -> (Vec<Op>, String) {
        (self.mutate)(&mut self.t, i);
        let ops = self.t.flush().unwrap();
        let wire = self.enc.encode(&ops).to_json();
        (ops, wire)
    }
}

impl<T: Tracked> Run for ChordRun<T> {
    /// Mutate, then `flush_into` the reused buffer: the wire bytes without building ops.
    fn step(&mut self, i: usize) -> Emitted {
        (self.mutate)(&mut self.t, i);
        self.wire.clear();
        let bytes = self.t.flush_into(&mut self.enc, &mut self.wire).unwrap();
        Emitted { ops: 0, bytes }
    }

    /// The same bytes through `flush` and `encode` (equal: `tests/proxy_properties.rs`),
    /// counting the ops.
    fn sizes(&mut self, i: usize) -> Emitted {
        let (ops, wire) = self.step_ops(i);
        Emitted {
            ops: ops.len(),
            bytes: if ops.is_empty() { 0 } else { wire.len() },
        }
    }
}

/// The floor: the token pushed onto a plain `String` and the one op it makes written into a
/// reused buffer with serde_json's string escaping; nothing else (no tracking, no table).
pub struct FloorRun {
    text: String,
    token: &'static str,
    /// The op's opening, path included (`[["a",0,` with an id, `[["a",["text"],` inline).
    head: &'static [u8],
    wire: Vec<u8>,
}

impl Run for FloorRun {
    fn step(&mut self, _: usize) -> Emitted {
        self.text.push_str(self.token);
        self.wire.clear();
        self.wire.extend_from_slice(self.head);
        serde_json::to_writer(&mut self.wire, self.token).unwrap();
        self.wire.extend_from_slice(b"]]");
        Emitted {
            ops: 1,
            bytes: self.wire.len(),
        }
    }
}

/// W1's floor: `"x"` onto 40 KB of text; `steady` writes the id form, else the path inline.
pub fn floor_w1(steady: bool) -> FloorRun {
    FloorRun {
        text: w1_text(),
        token: "x",
        head: if steady {
            br#"[["a",0,"#
        } else {
            br#"[["a",["text"],"#
        },
        wire: Vec::new(),
    }
}

/// W5's floor: `"tok "` onto the message, the id form.
pub fn floor_w5(after: usize) -> FloorRun {
    FloorRun {
        text: w5_content(after),
        token: "tok ",
        head: br#"[["a",0,"#,
        wire: Vec::new(),
    }
}

/// muon: the plain value, observed for each step with `observe!`.
pub struct MuonRun<T> {
    /// The state.
    pub v: T,
    mutate: fn(&mut T, usize) -> Json,
    /// The wire text's buffer, reused as chord's is.
    wire: Vec<u8>,
}

impl<T> MuonRun<T> {
    /// Step `i`, returning the mutation and its wire text (`None` when nothing changed).
    pub fn step_mutation(&mut self, i: usize) -> (Option<Mutation<Value>>, Option<String>) {
        let Json(m) = (self.mutate)(&mut self.v, i);
        let wire = m
            .as_ref()
            .map(|m| serde_json::to_string(&MuonWire(m)).unwrap());
        (m, wire)
    }
}

impl<T> Run for MuonRun<T> {
    /// Observe, then write the mutation into the reused buffer.
    fn step(&mut self, i: usize) -> Emitted {
        let Json(m) = (self.mutate)(&mut self.v, i);
        self.wire.clear();
        let Some(m) = m else {
            return Emitted::default();
        };
        serde_json::to_writer(&mut self.wire, &MuonWire(&m)).unwrap();
        Emitted {
            ops: 0,
            bytes: self.wire.len(),
        }
    }

    fn sizes(&mut self, i: usize) -> Emitted {
        let (m, wire) = self.step_mutation(i);
        Emitted {
            ops: m.as_ref().map_or(0, muon_leaves),
            bytes: wire.map_or(0, |w| w.len()),
        }
    }
}

/// json-patch: a JSON value, cloned before each step and diffed after it.
pub struct PatchRun {
    /// The state.
    pub v: Value,
    mutate: fn(&mut Value, usize),
}

impl PatchRun {
    /// Step `i`, returning the patch and its wire text.
    pub fn step_patch(&mut self, i: usize) -> (json_patch::Patch, String) {
        let before = self.v.clone();
        (self.mutate)(&mut self.v, i);
        let patch = json_patch::diff(&before, &self.v);
        let wire = serde_json::to_string(&patch).unwrap();
        (patch, wire)
    }
}

impl Run for PatchRun {
    fn step(&mut self, i: usize) -> Emitted {
        let (patch, wire) = self.step_patch(i);
        Emitted {
            ops: patch.0.len(),
            bytes: if patch.0.is_empty() { 0 } else { wire.len() },
        }
    }
}

/// Leaf mutations in a muon mutation (a batch counts its members).
pub fn muon_leaves(m: &Mutation<Value>) -> usize {
    match &m.kind {
        MutationKind::Batch(b) => b.iter().map(muon_leaves).sum(),
        _ => 1,
    }
}

/// muon's `Mutation` in the form `#[derive(Serialize)]` would give it:
/// `{"path":[...],"kind":{"Append":"x"}}` (path root first, negative indices as negative
/// integers). muon has no wire form of its own; this is the one its figures were measured in.
pub struct MuonWire<'a>(pub &'a Mutation<Value>);

struct MuonPath<'a>(&'a [PathSegment]);
struct MuonKind<'a>(&'a MutationKind<Value>);

impl Serialize for MuonWire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("path", &MuonPath(&self.0.path))?;
        m.serialize_entry("kind", &MuonKind(&self.0.kind))?;
        m.end()
    }
}

impl Serialize for MuonPath<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        // Stored leaf first.
        for seg in self.0.iter().rev() {
            match seg {
                PathSegment::String(k) => seq.serialize_element(&**k)?,
                PathSegment::Positive(i) => seq.serialize_element(i)?,
                PathSegment::Negative(i) => seq.serialize_element(&-(*i as i64))?,
            }
        }
        seq.end()
    }
}

impl Serialize for MuonKind<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn tagged<S: Serializer, T: Serialize + ?Sized>(
            s: S,
            tag: &str,
            value: &T,
        ) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry(tag, value)?;
            m.end()
        }
        match self.0 {
            MutationKind::Replace(v) => tagged(s, "Replace", v),
            MutationKind::Append(v) => tagged(s, "Append", v),
            MutationKind::Truncate(n) => tagged(s, "Truncate", n),
            MutationKind::Delete => s.serialize_str("Delete"),
            MutationKind::Batch(b) => {
                tagged(s, "Batch", &b.iter().map(MuonWire).collect::<Vec<_>>())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The workloads, per library

fn text_mut(v: &mut Value) -> &mut String {
    match v {
        Value::String(s) => s,
        other => panic!("expected a string, found {other}"),
    }
}

fn array_mut(v: &mut Value) -> &mut Vec<Value> {
    v.as_array_mut().expect("an array")
}

fn items<T>(item: impl Fn(i64, String) -> T) -> Vec<T> {
    (0..100).map(|i| item(i, format!("item{i}"))).collect()
}

fn items_json() -> Value {
    json!({ "items": (0..100).map(|i| json!({"id": i, "name": format!("item{i}")})).collect::<Vec<_>>() })
}

// W1: append "x" to a 40 KB text.

pub fn chord_w1() -> ChordRun<ch::Text> {
    let text = w1_text();
    ChordRun::new(ch::Text { text }, |t, _| t.state().text.push_str("x"))
}

pub fn muon_w1() -> MuonRun<mu::Text> {
    fn step(v: &mut mu::Text, _: usize) -> Json {
        observe!(v => { v.text.push_str("x"); }).unwrap()
    }
    let text = w1_text();
    MuonRun {
        v: mu::Text { text },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w1() -> PatchRun {
    PatchRun {
        v: json!({ "text": *TEXT40K }),
        mutate: |v, _| text_mut(&mut v["text"]).push('x'),
    }
}

// W2: insert at the front of 100 items.

pub fn chord_w2() -> ChordRun<ch::Items> {
    let items = items(|id, name| ch::Item { id, name });
    ChordRun::new(ch::Items { items }, |t, _| {
        let new = ch::Item {
            id: -1,
            name: "new".into(),
        };
        t.state().items.insert(0, new);
    })
}

pub fn muon_w2() -> MuonRun<mu::Items> {
    fn step(v: &mut mu::Items, _: usize) -> Json {
        observe!(v => {
            v.items.insert(0, mu::Item { id: -1, name: "new".into() });
        })
        .unwrap()
    }
    let items = items(|id, name| mu::Item { id, name });
    MuonRun {
        v: mu::Items { items },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w2() -> PatchRun {
    PatchRun {
        v: items_json(),
        mutate: |v, _| array_mut(&mut v["items"]).insert(0, json!({"id": -1, "name": "new"})),
    }
}

// W3: pop the last of 100 items.

fn w3_pop(t: &mut Tracker<ch::Items>) {
    t.state().items.pop();
}

fn w7_push(t: &mut Tracker<ch::Arr>) {
    t.state().arr.push(10);
}

fn w7_pop(t: &mut Tracker<ch::Arr>) {
    t.state().arr.pop();
}

pub fn chord_w3() -> ChordRun<ch::Items> {
    let items = items(|id, name| ch::Item { id, name });
    ChordRun::new(ch::Items { items }, |t, _| {
        t.state().items.pop();
    })
}

pub fn muon_w3() -> MuonRun<mu::Items> {
    fn step(v: &mut mu::Items, _: usize) -> Json {
        observe!(v => { v.items.pop(); }).unwrap()
    }
    let items = items(|id, name| mu::Item { id, name });
    MuonRun {
        v: mu::Items { items },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w3() -> PatchRun {
    PatchRun {
        v: items_json(),
        mutate: |v, _| {
            array_mut(&mut v["items"]).pop();
        },
    }
}

// W4, W4r: a 50 KB rolling window, `out = out[4..] + "!!!!"`.

fn w4_text(repetitive: bool) -> String {
    if repetitive {
        "a".repeat(50_000)
    } else {
        TEXT50K[..50_000].to_owned()
    }
}

pub fn chord_w4_assign(repetitive: bool) -> ChordRun<ch::Out> {
    ChordRun::new(
        ch::Out {
            out: w4_text(repetitive),
        },
        |t, _| {
            let next = w4_next(&t.out);
            t.state().out.set(next);
        },
    )
}

pub fn chord_w4_window(repetitive: bool) -> ChordRun<ch::Out> {
    ChordRun::new(
        ch::Out {
            out: w4_text(repetitive),
        },
        |t, _| {
            let s = t.state();
            let mut out = s.out;
            out.drop_front(4);
            out.push_str("!!!!");
        },
    )
}

pub fn muon_w4(repetitive: bool) -> MuonRun<mu::Out> {
    fn step(v: &mut mu::Out, _: usize) -> Json {
        observe!(v => {
            let next = w4_next(&v.out);
            v.out = next;
        })
        .unwrap()
    }
    MuonRun {
        v: mu::Out {
            out: w4_text(repetitive),
        },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w4(repetitive: bool) -> PatchRun {
    PatchRun {
        v: json!({ "out": w4_text(repetitive) }),
        mutate: |v, _| {
            let next = w4_next(v["out"].as_str().unwrap());
            v["out"] = Value::String(next);
        },
    }
}

// W4L: a 50 KB build log, 10 lines dropped and 10 appended per step.

fn w4l_assigned(out: &str, i: usize) -> String {
    let (cut, add) = w4l_step(out, i);
    let mut next = String::with_capacity(out.len() - cut + add.len());
    next.push_str(&out[cut..]);
    next.push_str(&add);
    next
}

pub fn chord_w4l_assign() -> ChordRun<ch::Out> {
    ChordRun::new(ch::Out { out: w4l_initial() }, |t, i| {
        let next = w4l_assigned(&t.out, i);
        t.state().out.set(next);
    })
}

pub fn chord_w4l_window() -> ChordRun<ch::Out> {
    ChordRun::new(ch::Out { out: w4l_initial() }, |t, i| {
        let (cut, add) = w4l_step(&t.out, i);
        let s = t.state();
        let mut out = s.out;
        out.drop_front(cut);
        out.push_str(&add);
    })
}

pub fn muon_w4l() -> MuonRun<mu::Out> {
    fn step(v: &mut mu::Out, i: usize) -> Json {
        observe!(v => {
            let next = w4l_assigned(&v.out, i);
            v.out = next;
        })
        .unwrap()
    }
    MuonRun {
        v: mu::Out { out: w4l_initial() },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w4l() -> PatchRun {
    PatchRun {
        v: json!({ "out": w4l_initial() }),
        mutate: |v, i| {
            let next = w4l_assigned(v["out"].as_str().unwrap(), i);
            v["out"] = Value::String(next);
        },
    }
}

// W5, W5big: streaming into one message.

fn ch_messages(content: String) -> ch::Messages {
    ch::Messages {
        messages: vec![ch::Message {
            role: "assistant".into(),
            content,
        }],
    }
}

fn mu_messages(content: String) -> mu::Messages {
    mu::Messages {
        messages: vec![mu::Message {
            role: "assistant".into(),
            content,
        }],
    }
}

fn json_messages(content: String) -> Value {
    json!({ "messages": [{ "role": "assistant", "content": content }] })
}

/// W5's message after `steps` steps.
pub fn w5_content(steps: usize) -> String {
    "tok ".repeat(steps)
}

pub fn chord_w5(after: usize) -> ChordRun<ch::Messages> {
    ChordRun::new(ch_messages(w5_content(after)), |t, _| {
        t.state().messages.at(0).content.push_str("tok ");
    })
}

pub fn muon_w5(after: usize) -> MuonRun<mu::Messages> {
    fn step(v: &mut mu::Messages, _: usize) -> Json {
        observe!(v => { v.messages[0].content.push_str("tok "); }).unwrap()
    }
    MuonRun {
        v: mu_messages(w5_content(after)),
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w5(after: usize) -> PatchRun {
    PatchRun {
        v: json_messages(w5_content(after)),
        mutate: |v, _| text_mut(&mut v["messages"][0]["content"]).push_str("tok "),
    }
}

pub fn chord_w5big() -> ChordRun<ch::Messages> {
    chord_w5big_on(W5BIG_BYTES)
}

/// W5big's steps on a message of `bytes` bytes.
pub fn chord_w5big_on(bytes: usize) -> ChordRun<ch::Messages> {
    ChordRun::new(ch_messages(w5big_text_of(bytes)), |t, i| {
        t.state().messages.at(0).content.push_str(w5big_chunk(i));
    })
}

pub fn muon_w5big() -> MuonRun<mu::Messages> {
    muon_w5big_on(W5BIG_BYTES)
}

/// W5big's steps on a message of `bytes` bytes.
pub fn muon_w5big_on(bytes: usize) -> MuonRun<mu::Messages> {
    fn step(v: &mut mu::Messages, i: usize) -> Json {
        observe!(v => { v.messages[0].content.push_str(w5big_chunk(i)); }).unwrap()
    }
    MuonRun {
        v: mu_messages(w5big_text_of(bytes)),
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w5big() -> PatchRun {
    PatchRun {
        v: json_messages(w5big_text()),
        mutate: |v, i| text_mut(&mut v["messages"][0]["content"]).push_str(w5big_chunk(i)),
    }
}

// W6, W6big: transcript pushes.

pub fn chord_w6(initial: usize) -> ChordRun<ch::Transcript> {
    let transcript = entries(initial);
    ChordRun::new(ch::Transcript { transcript }, |t, i| {
        let entry = CH_ENTRIES[i % 1000].clone();
        t.state().transcript.push(entry);
    })
}

pub fn muon_w6(initial: usize) -> MuonRun<mu::Transcript> {
    fn step(v: &mut mu::Transcript, i: usize) -> Json {
        observe!(v => { v.transcript.push(MU_ENTRIES[i % 1000].clone()); }).unwrap()
    }
    let transcript = entries(initial);
    MuonRun {
        v: mu::Transcript { transcript },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w6(initial: usize) -> PatchRun {
    let transcript: Vec<Value> = W6_ENTRIES.iter().cycle().take(initial).cloned().collect();
    PatchRun {
        v: json!({ "transcript": transcript }),
        mutate: |v, i| array_mut(&mut v["transcript"]).push(W6_ENTRIES[i % 1000].clone()),
    }
}

// W7: clear a list of 10.

pub fn chord_w7() -> ChordRun<ch::Arr> {
    ChordRun::new(
        ch::Arr {
            arr: (0..10).collect(),
        },
        |t, _| t.state().arr.clear(),
    )
}

pub fn muon_w7() -> MuonRun<mu::Arr> {
    fn step(v: &mut mu::Arr, _: usize) -> Json {
        observe!(v => { v.arr.clear(); }).unwrap()
    }
    MuonRun {
        v: mu::Arr {
            arr: (0..10).collect(),
        },
        mutate: step,
        wire: Vec::new(),
    }
}

pub fn patch_w7() -> PatchRun {
    PatchRun {
        v: json!({ "arr": (0..10).collect::<Vec<i64>>() }),
        mutate: |v, _| array_mut(&mut v["arr"]).clear(),
    }
}

// ---------------------------------------------------------------------------------------------
// The cases

/// One workload in one library, as the benchmark runs it.
pub struct Case {
    /// `W1` ... `W7`, `W4r`, `W4L`, `W5big`, `W6big`, `W5-last500`.
    pub workload: &'static str,
    /// `chord`, `chord-assign`, `chord-window`, `muon`, `json-patch`.
    pub lib: &'static str,
    /// Steps in the workload.
    pub steps: usize,
    /// Timing: steps run on one copy before a fresh copy is made (untimed). Equal to `steps`
    /// except for W1 (1,000 appends per fresh 40 KB copy: the step does not depend on the
    /// 1,000 bytes added), W5big (10,000 steps per copy: the text has room for them) and
    /// W6big (10,000 steps per copy: making and freeing 10,000 entries between every 1,000
    /// steps would leave the allocator's clean-up inside the timed steps).
    pub reuse: usize,
    /// Sizes: steps actually run when counting ops and bytes; fewer than `steps` only where
    /// one step takes tens of milliseconds (json-patch on W5big), and then extrapolated.
    pub size_steps: usize,
    /// A fresh stream, its base batch drained.
    pub make: fn() -> Box<dyn Run>,
}

/// Every workload in every library, in the order of the README's table.
pub fn cases() -> Vec<Case> {
    fn case(
        workload: &'static str,
        lib: &'static str,
        steps: usize,
        make: fn() -> Box<dyn Run>,
    ) -> Case {
        Case {
            workload,
            lib,
            steps,
            reuse: steps,
            size_steps: steps,
            make,
        }
    }
    let reuse = |mut c: Case, reuse: usize| {
        c.reuse = reuse;
        c
    };
    let sample = |mut c: Case, size_steps: usize| {
        c.size_steps = size_steps;
        c
    };
    vec![
        // W1 as the spec has it (one step on a fresh copy: the path goes inline) and in the
        // steady state (1,000 steps on one copy: the path has an id).
        case("W1-fresh", "floor", 1, || Box::new(floor_w1(false))),
        case("W1-fresh", "chord", 1, || Box::new(chord_w1())),
        case("W1-fresh", "muon", 1, || Box::new(muon_w1())),
        reuse(case("W1", "floor", 1, || Box::new(floor_w1(true))), 1000),
        reuse(case("W1", "chord", 1, || Box::new(chord_w1())), 1000),
        reuse(case("W1", "muon", 1, || Box::new(muon_w1())), 1000),
        reuse(case("W1", "json-patch", 1, || Box::new(patch_w1())), 1000),
        case("W2", "chord", 1, || Box::new(chord_w2())),
        case("W2", "muon", 1, || Box::new(muon_w2())),
        case("W2", "json-patch", 1, || Box::new(patch_w2())),
        case("W3", "chord", 1, || Box::new(chord_w3())),
        case("W3", "muon", 1, || Box::new(muon_w3())),
        case("W3", "json-patch", 1, || Box::new(patch_w3())),
        // Steady: a copy whose stream popped before (the path has an id), 50 pops a copy.
        reuse(
            case("W3-steady", "chord", 1, || {
                Box::new(chord_w3().warmed(&[w3_pop, w3_pop]))
            }),
            50,
        ),
        reuse(case("W3-steady", "muon", 1, || Box::new(muon_w3())), 50),
        case("W4", "chord-window", 2000, || {
            Box::new(chord_w4_window(false))
        }),
        case("W4", "chord-assign", 2000, || {
            Box::new(chord_w4_assign(false))
        }),
        case("W4", "muon", 2000, || Box::new(muon_w4(false))),
        case("W4", "json-patch", 2000, || Box::new(patch_w4(false))),
        case("W4r", "chord-window", 2000, || {
            Box::new(chord_w4_window(true))
        }),
        case("W4r", "chord-assign", 2000, || {
            Box::new(chord_w4_assign(true))
        }),
        case("W4r", "muon", 2000, || Box::new(muon_w4(true))),
        case("W4r", "json-patch", 2000, || Box::new(patch_w4(true))),
        case("W4L", "chord-window", 50, || Box::new(chord_w4l_window())),
        case("W4L", "chord-assign", 50, || Box::new(chord_w4l_assign())),
        case("W4L", "muon", 50, || Box::new(muon_w4l())),
        case("W4L", "json-patch", 50, || Box::new(patch_w4l())),
        case("W5", "floor", 5000, || Box::new(floor_w5(0))),
        case("W5", "chord", 5000, || Box::new(chord_w5(0))),
        case("W5", "muon", 5000, || Box::new(muon_w5(0))),
        case("W5", "json-patch", 5000, || Box::new(patch_w5(0))),
        case("W5-last500", "floor", 500, || {
            Box::new(floor_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "chord", 500, || {
            Box::new(chord_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "muon", 500, || {
            Box::new(muon_w5(W5_TAIL_FROM))
        }),
        case("W5-last500", "json-patch", 500, || {
            Box::new(patch_w5(W5_TAIL_FROM))
        }),
        reuse(
            case("W5big", "chord", 1000, || Box::new(chord_w5big())),
            10_000,
        ),
        reuse(
            case("W5big", "muon", 1000, || Box::new(muon_w5big())),
            10_000,
        ),
        sample(
            reuse(
                case("W5big", "json-patch", 1000, || Box::new(patch_w5big())),
                10_000,
            ),
            20,
        ),
        // W5big's step on a 50 KB message: what W5big's cost per step is compared with.
        reuse(
            case("W5big-50KB", "chord", 1000, || {
                Box::new(chord_w5big_on(50_000))
            }),
            10_000,
        ),
        reuse(
            case("W5big-50KB", "muon", 1000, || {
                Box::new(muon_w5big_on(50_000))
            }),
            10_000,
        ),
        case("W6", "chord", 1000, || Box::new(chord_w6(0))),
        case("W6", "muon", 1000, || Box::new(muon_w6(0))),
        case("W6", "json-patch", 1000, || Box::new(patch_w6(0))),
        reuse(
            case("W6big", "chord", 1000, || Box::new(chord_w6(W6BIG_ENTRIES))),
            10_000,
        ),
        reuse(
            case("W6big", "muon", 1000, || Box::new(muon_w6(W6BIG_ENTRIES))),
            10_000,
        ),
        case("W6big", "json-patch", 1000, || {
            Box::new(patch_w6(W6BIG_ENTRIES))
        }),
        case("W7", "chord", 1, || Box::new(chord_w7())),
        case("W7", "muon", 1, || Box::new(muon_w7())),
        case("W7", "json-patch", 1, || Box::new(patch_w7())),
        // Steady: the list's path has an id (a push and a pop sent before the clear).
        case("W7-steady", "chord", 1, || {
            Box::new(chord_w7().warmed(&[w7_push, w7_pop]))
        }),
        case("W7-steady", "muon", 1, || Box::new(muon_w7())),
    ]
}

/// Ops and bytes over a whole workload.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    /// Ops emitted, all steps.
    pub ops: usize,
    /// Wire bytes, all steps.
    pub bytes: usize,
    /// Whether the totals were extrapolated from `size_steps` steps.
    pub extrapolated: bool,
}

/// Runs `case` once from a fresh copy and adds up what it emitted.
pub fn totals(case: &Case) -> Totals {
    let mut run = (case.make)();
    let mut t = Totals::default();
    for i in 0..case.size_steps {
        let e = run.sizes(i);
        t.ops += e.ops;
        t.bytes += e.bytes;
    }
    if case.size_steps < case.steps {
        t.ops = t.ops * case.steps / case.size_steps;
        t.bytes = (t.bytes as u128 * case.steps as u128 / case.size_steps as u128) as usize;
        t.extrapolated = true;
    }
    t
}
