//! The benchmark workloads of `testdata/bench/README.md` (W1–W7, W4r, W4L, W5big,
//! W6big): their inputs and chord's side of each, with the floor of W1 and W5. Shared by
//! `tests/workload_sizes.rs` (chord's structural targets), `tests/memory.rs` (heap cost) and
//! the benchmark member `chord-bench` (`benches/` at the repository's root), whose
//! `alternatives` module writes the same workloads for muon and json-patch on these inputs
//! and helpers, so every library does exactly the same work. It names neither muon nor
//! json-patch, so the tests of `chord-delta` build without them.
//!
//! One *step* is what a producer does per update: mutate, flush, encode, serialize to the
//! wire text. Building the initial state and draining its first base batch is not a step.
#![allow(dead_code)]

use std::sync::LazyLock;

use chord::{track, Encoder, Op, Tracked, Tracker};
use serde_json::Value;

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

/// chord's state types: `#[derive(Tracked, Serialize)]`. Their fields are the JSON of
/// `testdata/bench/README.md`'s table, which documents them.
#[allow(missing_docs)]
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

/// The first `n` of W6's entries, cycling through the 1,000, as values of any library's type.
pub fn entries<T: serde::de::DeserializeOwned>(n: usize) -> Vec<T> {
    W6_ENTRIES
        .iter()
        .cycle()
        .take(n)
        .map(|e| serde_json::from_value(e.clone()).unwrap())
        .collect()
}

/// W6's entries as chord values (cloned into the state at each push).
pub static CH_ENTRIES: LazyLock<Vec<ch::Entry>> = LazyLock::new(|| entries(1000));

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

// ---------------------------------------------------------------------------------------------
// chord's side of the workloads

/// W2's and W3's 100 items `{id: i, name: "item<i>"}`, as values of any library's type.
pub fn items<T>(item: impl Fn(i64, String) -> T) -> Vec<T> {
    (0..100).map(|i| item(i, format!("item{i}"))).collect()
}

// W1: append "x" to a 40 KB text.

/// W1 in chord.
pub fn chord_w1() -> ChordRun<ch::Text> {
    let text = w1_text();
    ChordRun::new(ch::Text { text }, |t, _| t.state().text.push_str("x"))
}

// W2: insert at the front of 100 items.

/// W2 in chord.
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

// W3: pop the last of 100 items.

/// W3's step, as a change that warms a stream up.
pub fn w3_pop(t: &mut Tracker<ch::Items>) {
    t.state().items.pop();
}

/// A push onto W7's list, as a change that warms a stream up.
pub fn w7_push(t: &mut Tracker<ch::Arr>) {
    t.state().arr.push(10);
}

/// A pop off W7's list, as a change that warms a stream up.
pub fn w7_pop(t: &mut Tracker<ch::Arr>) {
    t.state().arr.pop();
}

/// W3 in chord.
pub fn chord_w3() -> ChordRun<ch::Items> {
    let items = items(|id, name| ch::Item { id, name });
    ChordRun::new(ch::Items { items }, |t, _| {
        t.state().items.pop();
    })
}

// W4, W4r: a 50 KB rolling window, `out = out[4..] + "!!!!"`.

/// W4's initial 50 KB (`text50k`), or W4r's (`"a"` × 50,000) when `repetitive`.
pub fn w4_text(repetitive: bool) -> String {
    if repetitive {
        "a".repeat(50_000)
    } else {
        TEXT50K[..50_000].to_owned()
    }
}

/// W4 (W4r when `repetitive`) in chord, by whole assignment (`set`).
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

/// W4 (W4r when `repetitive`) in chord, by `drop_front` and `push_str`.
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

// W4L: a 50 KB build log, 10 lines dropped and 10 appended per step.

/// W4L's next log after step `i`, built whole (what an assignment sets).
pub fn w4l_assigned(out: &str, i: usize) -> String {
    let (cut, add) = w4l_step(out, i);
    let mut next = String::with_capacity(out.len() - cut + add.len());
    next.push_str(&out[cut..]);
    next.push_str(&add);
    next
}

/// W4L in chord, by whole assignment (`set`).
pub fn chord_w4l_assign() -> ChordRun<ch::Out> {
    ChordRun::new(ch::Out { out: w4l_initial() }, |t, i| {
        let next = w4l_assigned(&t.out, i);
        t.state().out.set(next);
    })
}

/// W4L in chord, by `drop_front` and `push_str`.
pub fn chord_w4l_window() -> ChordRun<ch::Out> {
    ChordRun::new(ch::Out { out: w4l_initial() }, |t, i| {
        let (cut, add) = w4l_step(&t.out, i);
        let s = t.state();
        let mut out = s.out;
        out.drop_front(cut);
        out.push_str(&add);
    })
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

/// W5's message after `steps` steps.
pub fn w5_content(steps: usize) -> String {
    "tok ".repeat(steps)
}

/// W5 in chord, its message as it is after `after` steps.
pub fn chord_w5(after: usize) -> ChordRun<ch::Messages> {
    ChordRun::new(ch_messages(w5_content(after)), |t, _| {
        t.state().messages.at(0).content.push_str("tok ");
    })
}

/// W5big in chord.
pub fn chord_w5big() -> ChordRun<ch::Messages> {
    chord_w5big_on(W5BIG_BYTES)
}

/// W5big's steps on a message of `bytes` bytes.
pub fn chord_w5big_on(bytes: usize) -> ChordRun<ch::Messages> {
    ChordRun::new(ch_messages(w5big_text_of(bytes)), |t, i| {
        t.state().messages.at(0).content.push_str(w5big_chunk(i));
    })
}

// W6, W6big: transcript pushes.

/// W6 in chord, the transcript starting with `initial` entries (W6big: 10,000).
pub fn chord_w6(initial: usize) -> ChordRun<ch::Transcript> {
    let transcript = entries(initial);
    ChordRun::new(ch::Transcript { transcript }, |t, i| {
        let entry = CH_ENTRIES[i % 1000].clone();
        t.state().transcript.push(entry);
    })
}

// W7: clear a list of 10.

/// W7 in chord.
pub fn chord_w7() -> ChordRun<ch::Arr> {
    ChordRun::new(
        ch::Arr {
            arr: (0..10).collect(),
        },
        |t, _| t.state().arr.clear(),
    )
}
