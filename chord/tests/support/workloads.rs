//! The benchmark workloads of `testdata/bench/README.md` (W1–W7, W4r, W4L, W5big,
//! W6big) and the shapes S1-S5: their inputs and chord's side of each, with the floors of W1,
//! W5 and the shapes (what a step costs at least on plain data, no library). Shared by
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

    // The shapes S1-S5 (`BENCHMARKS.md`'s workload table).

    /// S2's map of 10,000 items by key.
    #[derive(Tracked, Serialize)]
    pub struct Table {
        pub rows: std::collections::HashMap<String, Item>,
    }

    macro_rules! wide {
        ($($f:ident $k:literal),*) => {
            /// S3's struct of 60 counters.
            #[derive(Tracked, Serialize)]
            pub struct Wide {
                $(pub $f: i64,)*
            }

            impl Wide {
                /// Field `k` set to `k * 1,000`.
                pub fn initial() -> Self {
                    let start = |k: i64| k * 1000;
                    Wide { $($f: start($k),)* }
                }
            }

            /// Adds 1 to field `k` (0..60) through the proxy.
            pub fn wide_bump(w: &mut chord::Proxy<'_, Wide>, k: usize) {
                match k {
                    $($k => w.$f += 1,)*
                    _ => panic!("S3 has 60 fields, not field {k}"),
                }
            }

            /// Adds 1 to field `k` (0..60) of the plain struct, returning the new value (the
            /// floor's mutation).
            pub fn wide_bump_plain(w: &mut Wide, k: usize) -> i64 {
                match k {
                    $($k => {
                        w.$f += 1;
                        w.$f
                    })*
                    _ => panic!("S3 has 60 fields, not field {k}"),
                }
            }
        };
    }
    super::s3_fields!(wide);

    /// S4's levels, the counter at the bottom (level 8).
    #[derive(Tracked, Serialize)]
    pub struct Deep1 {
        pub label: String,
        pub inner: Deep2,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep2 {
        pub label: String,
        pub inner: Deep3,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep3 {
        pub label: String,
        pub inner: Deep4,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep4 {
        pub label: String,
        pub inner: Deep5,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep5 {
        pub label: String,
        pub inner: Deep6,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep6 {
        pub label: String,
        pub inner: Deep7,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep7 {
        pub label: String,
        pub inner: Deep8,
    }

    #[derive(Tracked, Serialize)]
    pub struct Deep8 {
        pub label: String,
        pub count: i64,
    }

    impl Deep1 {
        /// Every level labelled `level <n>`, the count 0.
        pub fn initial() -> Self {
            let l = |n: u8| format!("level {n}");
            Deep1 {
                label: l(1),
                inner: Deep2 {
                    label: l(2),
                    inner: Deep3 {
                        label: l(3),
                        inner: Deep4 {
                            label: l(4),
                            inner: Deep5 {
                                label: l(5),
                                inner: Deep6 {
                                    label: l(6),
                                    inner: Deep7 {
                                        label: l(7),
                                        inner: Deep8 {
                                            label: l(8),
                                            count: 0,
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            }
        }
    }

    /// S5's agent: a status and its log lines.
    #[derive(Tracked, Serialize)]
    pub struct Agent {
        pub status: String,
        pub log: Vec<String>,
    }

    /// S5's 1,000 agents by id.
    #[derive(Tracked, Serialize)]
    pub struct Agents {
        pub agents: std::collections::BTreeMap<String, Agent>,
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

// ---------------------------------------------------------------------------------------------
// The shapes S1-S5: where a step touches little of a large or deep state. Their inputs are
// built once (forced by `chord_bench::cases::cases`), outside any step.

/// A seeded splitmix64 step: S3's reproducible choice of fields.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Entries in S1's transcript.
pub const S1_ENTRIES: usize = 10_000;
/// Steps in S1 (each on a different element).
pub const S1_STEPS: usize = 1_000;

/// S1's element at step `i`: a stride coprime with 10,000, so steps `0..10,000` each touch a
/// different element.
pub fn s1_index(i: usize) -> usize {
    (i * 7_919) % S1_ENTRIES
}

/// S1's 40-byte text of entry `n`: `original` in the initial state, `replaced` after its step.
pub fn s1_text(n: usize, replaced: bool) -> String {
    let tag = if replaced { "replaced" } else { "original" };
    let text = format!("{tag} text of transcript entry {n:05}.");
    debug_assert_eq!(text.len(), 40);
    text
}

/// S1's initial transcript, as values of any library's entry type.
pub fn s1_entries<T>(entry: impl Fn(String, String) -> T) -> Vec<T> {
    (0..S1_ENTRIES)
        .map(|n| {
            let role = if n % 2 == 0 { "user" } else { "assistant" };
            entry(role.into(), s1_text(n, false))
        })
        .collect()
}

/// S1's new text at step `i` (cloned into the state).
pub static S1_TEXTS: LazyLock<Vec<String>> =
    LazyLock::new(|| (0..S1_STEPS).map(|i| s1_text(s1_index(i), true)).collect());

/// Items in S2's map.
pub const S2_ROWS: usize = 10_000;
/// Keys S2 removes and inserts per step (1% of the map each).
pub const S2_CHURN: usize = 100;
/// Steps in S2.
pub const S2_STEPS: usize = 100;

/// S2's keys: `0..10,000` are the initial map; step `i` removes `i * 100..` (the oldest 100)
/// and inserts `10,000 + i * 100..` (100 new ones).
pub static S2_KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    (0..S2_ROWS + S2_STEPS * S2_CHURN)
        .map(|n| format!("row-{n:06}"))
        .collect()
});

/// S2's item of key `n`, as a value of any library's item type.
pub fn s2_item<T>(n: usize, item: impl Fn(i64, String) -> T) -> T {
    item(n as i64, S2_KEYS[n].clone())
}

/// S2 step `i`'s keys removed and inserted (`i < S2_STEPS`: a copy runs at most that many).
pub fn s2_step(i: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let removed = i * S2_CHURN;
    let inserted = S2_ROWS + removed;
    (removed..removed + S2_CHURN, inserted..inserted + S2_CHURN)
}

/// Calls `$m!` with S3's 60 field names and their indices, so that each library's struct and
/// its field-by-index match are written from one list.
macro_rules! s3_fields {
    ($m:ident) => {
        $m! {
            f00 0, f01 1, f02 2, f03 3, f04 4, f05 5, f06 6, f07 7, f08 8, f09 9,
            f10 10, f11 11, f12 12, f13 13, f14 14, f15 15, f16 16, f17 17, f18 18, f19 19,
            f20 20, f21 21, f22 22, f23 23, f24 24, f25 25, f26 26, f27 27, f28 28, f29 29,
            f30 30, f31 31, f32 32, f33 33, f34 34, f35 35, f36 36, f37 37, f38 38, f39 39,
            f40 40, f41 41, f42 42, f43 43, f44 44, f45 45, f46 46, f47 47, f48 48, f49 49,
            f50 50, f51 51, f52 52, f53 53, f54 54, f55 55, f56 56, f57 57, f58 58, f59 59
        }
    };
}
#[allow(unused_imports)]
pub(crate) use s3_fields;

/// Steps in S3.
pub const S3_STEPS: usize = 1_000;

/// S3's fields changed at each step: 3 different fields of the 60, seeded.
pub static S3_PICKS: LazyLock<Vec<[usize; 3]>> = LazyLock::new(|| {
    let mut seed = 0x5eed_0003;
    (0..S3_STEPS)
        .map(|_| {
            let mut picks = [usize::MAX; 3];
            let mut n = 0;
            while n < 3 {
                let k = (splitmix64(&mut seed) % 60) as usize;
                if !picks.contains(&k) {
                    picks[n] = k;
                    n += 1;
                }
            }
            picks
        })
        .collect()
});

/// Steps in S4.
pub const S4_STEPS: usize = 1_000;

/// Agents in S5's map.
pub const S5_AGENTS: usize = 1_000;
/// Lines in each S5 agent's initial log.
pub const S5_LOG: usize = 10;
/// Steps in S5.
pub const S5_STEPS: usize = 1_000;

/// S5's agent ids.
pub static S5_KEYS: LazyLock<Vec<String>> =
    LazyLock::new(|| (0..S5_AGENTS).map(|n| format!("agent-{n:04}")).collect());

/// S5's log line `k`.
pub fn s5_line(k: usize) -> String {
    format!("[step {k:05}] tool call finished: exit 0, 12 lines of output")
}

/// S5's lines appended, step `i` the line at `i` (cloned into the state).
pub static S5_LINES: LazyLock<Vec<String>> =
    LazyLock::new(|| (0..S5_STEPS).map(|i| s5_line(S5_LOG + i)).collect());

/// S5's agent at step `i`: a stride coprime with 1,000, so 1,000 steps each touch a different
/// agent.
pub fn s5_agent(i: usize) -> &'static str {
    &S5_KEYS[(i * 389) % S5_AGENTS]
}

/// S5's initial agents, as entries of any library's agent type.
pub fn s5_agents<T>(agent: impl Fn(String, Vec<String>) -> T) -> Vec<(String, T)> {
    S5_KEYS
        .iter()
        .map(|id| {
            (
                id.clone(),
                agent("running".into(), (0..S5_LOG).map(s5_line).collect()),
            )
        })
        .collect()
}

/// Entries in S6's transcript.
pub const S6_ENTRIES: usize = 10_000;
/// Steps in S6.
pub const S6_STEPS: usize = 1_000;
/// The bytes of each of S6's new texts.
pub const S6_TEXT_BYTES: usize = 40;

/// S6's steps: the entry whose text step `i` sets (4,000 + a seeded number below 2,000) and
/// the new text, 40 bytes of `text50k` at an offset that moves by 41 bytes a step (an
/// unrelated short text, not an edit of the entry's own).
pub static S6_STEPS_DATA: LazyLock<Vec<(usize, String)>> = LazyLock::new(|| {
    let mut seed = 0x5eed_0006;
    (0..S6_STEPS)
        .map(|i| {
            let k = 4_000 + (splitmix64(&mut seed) % 2_000) as usize;
            let at = (i * 41) % (50_000 - S6_TEXT_BYTES);
            (k, TEXT50K[at..at + S6_TEXT_BYTES].to_owned())
        })
        .collect()
});

/// S6's initial transcript: W6's 1,000 entries cycled to 10,000.
pub fn s6_entries<T: serde::de::DeserializeOwned>() -> Vec<T> {
    entries(S6_ENTRIES)
}

// S1: reassign one element's 40-byte text in a 10,000-entry transcript.

/// S1 in chord, by `set`.
pub fn chord_s1() -> ChordRun<ch::Transcript> {
    let transcript = s1_entries(|role, text| ch::Entry { role, text });
    ChordRun::new(ch::Transcript { transcript }, |t, i| {
        let text = S1_TEXTS[i % S1_STEPS].clone();
        t.state().transcript.at(s1_index(i)).text.set(text);
    })
}

/// S1 in chord, by assignment through `DerefMut` (`*text = new`).
pub fn chord_s1_deref() -> ChordRun<ch::Transcript> {
    let transcript = s1_entries(|role, text| ch::Entry { role, text });
    ChordRun::new(ch::Transcript { transcript }, |t, i| {
        let text = S1_TEXTS[i % S1_STEPS].clone();
        *t.state().transcript.at(s1_index(i)).text = text;
    })
}

// S6: `set` an unrelated 40-byte text on one entry of a 10,000-entry transcript.

/// S6 in chord, by `set`.
pub fn chord_s6() -> ChordRun<ch::Transcript> {
    ChordRun::new(
        ch::Transcript {
            transcript: s6_entries(),
        },
        |t, i| {
            let (k, text) = &S6_STEPS_DATA[i % S6_STEPS];
            t.state().transcript.at(*k).text.set(text.clone());
        },
    )
}

// S2: a map of 10,000, 100 removed and 100 inserted per step.

/// S2's initial map, as chord's state type.
pub fn ch_s2_table() -> ch::Table {
    let rows = (0..S2_ROWS)
        .map(|n| {
            (
                S2_KEYS[n].clone(),
                s2_item(n, |id, name| ch::Item { id, name }),
            )
        })
        .collect();
    ch::Table { rows }
}

/// S2 in chord.
pub fn chord_s2() -> ChordRun<ch::Table> {
    ChordRun::new(ch_s2_table(), |t, i| {
        let (removed, inserted) = s2_step(i);
        let mut s = t.state();
        for n in removed {
            s.rows.remove(&S2_KEYS[n]);
        }
        for n in inserted {
            let item = s2_item(n, |id, name| ch::Item { id, name });
            s.rows.insert(S2_KEYS[n].clone(), item);
        }
    })
}

// S3: a struct of 60 fields, 3 of them changed per step.

/// S3 in chord.
pub fn chord_s3() -> ChordRun<ch::Wide> {
    ChordRun::new(ch::Wide::initial(), |t, i| {
        let mut s = t.state();
        for &k in &S3_PICKS[i % S3_STEPS] {
            ch::wide_bump(&mut s, k);
        }
    })
}

// S4: a counter 8 struct levels down.

/// S4 in chord.
pub fn chord_s4() -> ChordRun<ch::Deep1> {
    ChordRun::new(ch::Deep1::initial(), |t, _| {
        t.state().inner.inner.inner.inner.inner.inner.inner.count += 1;
    })
}

// S5: 1,000 agents, one agent's log pushed onto per step.

/// S5's initial agents, as chord's state type.
pub fn ch_s5_agents() -> ch::Agents {
    let agents = s5_agents(|status, log| ch::Agent { status, log })
        .into_iter()
        .collect();
    ch::Agents { agents }
}

/// S5 in chord.
pub fn chord_s5() -> ChordRun<ch::Agents> {
    ChordRun::new(ch_s5_agents(), |t, i| {
        let line = S5_LINES[i % S5_STEPS].clone();
        let mut s = t.state();
        let mut agent = s
            .agents
            .get_mut(s5_agent(i))
            .expect("S5's agents are all present");
        agent.log.push(line);
    })
}

// ---------------------------------------------------------------------------------------------
// The floors of the shapes: each step's mutation on the same state types used as plain data
// (untracked: no proxy, no tracker), and the ops chord sends for the step written into a
// reused buffer, the values through serde_json (its string escaping and `Serialize`), with
// nothing else: no table of paths, no record of what changed. What any library must do at
// least to send the same update.

/// A shape's floor: the plain state and the reused wire buffer.
pub struct ShapeFloor<S> {
    state: S,
    wire: Vec<u8>,
    /// Mutates the state for step `i` and writes the step's ops into the (cleared) buffer,
    /// returning how many.
    step: fn(&mut S, &mut Vec<u8>, usize) -> usize,
}

impl<S> ShapeFloor<S> {
    /// The wire text of the last step.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }
}

impl<S> Run for ShapeFloor<S> {
    fn step(&mut self, i: usize) -> Emitted {
        self.wire.clear();
        let ops = (self.step)(&mut self.state, &mut self.wire, i);
        Emitted {
            ops,
            bytes: self.wire.len(),
        }
    }
}

/// Writes `value`'s JSON (serde_json: strings escaped, integers by `itoa`).
fn put<V: serde::Serialize + ?Sized>(wire: &mut Vec<u8>, value: &V) {
    serde_json::to_writer(&mut *wire, value).unwrap();
}

/// S1's floor: the element's text assigned, and the `s` op chord sends (each step touches an
/// element whose path was not sent before, so the path goes inline):
/// `[["s",["transcript",k,"text"],"<text>"]]`.
pub fn floor_s1() -> ShapeFloor<ch::Transcript> {
    let transcript = s1_entries(|role, text| ch::Entry { role, text });
    ShapeFloor {
        state: ch::Transcript { transcript },
        wire: Vec::new(),
        step: |s, wire, i| {
            let k = s1_index(i);
            let entry = &mut s.transcript[k];
            entry.text = S1_TEXTS[i % S1_STEPS].clone();
            wire.extend_from_slice(br#"[["s",["transcript","#);
            put(wire, &k);
            wire.extend_from_slice(br#","text"],"#);
            put(wire, entry.text.as_str());
            wire.extend_from_slice(b"]]");
            1
        },
    }
}

/// S6's floor: the entry's text assigned, and the `s` op chord sends, the path inline (a
/// path sent before has an id only when the same entry comes up again, which the floor
/// leaves to chord): `[["s",["transcript",k,"text"],"<text>"]]`.
pub fn floor_s6() -> ShapeFloor<ch::Transcript> {
    ShapeFloor {
        state: ch::Transcript {
            transcript: s6_entries(),
        },
        wire: Vec::new(),
        step: |s, wire, i| {
            let (k, text) = &S6_STEPS_DATA[i % S6_STEPS];
            let entry = &mut s.transcript[*k];
            entry.text = text.clone();
            wire.extend_from_slice(br#"[["s",["transcript","#);
            put(wire, k);
            wire.extend_from_slice(br#","text"],"#);
            put(wire, entry.text.as_str());
            wire.extend_from_slice(b"]]");
            1
        },
    }
}

/// S2's floor: the 100 oldest keys removed from the map and 100 new items inserted, with a
/// `d` per removed key (`["d",["rows","<key>"]]`) and an `s` per inserted one
/// (`["s",["rows","<key>"],{"id":n,"name":"<key>"}]`), the paths inline as chord's (every
/// key is new to the stream).
pub fn floor_s2() -> ShapeFloor<ch::Table> {
    ShapeFloor {
        state: ch_s2_table(),
        wire: Vec::new(),
        step: |s, wire, i| {
            let (removed, inserted) = s2_step(i);
            let ops = removed.len() + inserted.len();
            wire.push(b'[');
            for n in removed {
                s.rows.remove(&S2_KEYS[n]);
                wire.extend_from_slice(br#"["d",["rows","#);
                put(wire, S2_KEYS[n].as_str());
                wire.extend_from_slice(b"]],");
            }
            for n in inserted {
                let item = s2_item(n, |id, name| ch::Item { id, name });
                wire.extend_from_slice(br#"["s",["rows","#);
                put(wire, S2_KEYS[n].as_str());
                wire.extend_from_slice(b"],");
                put(wire, &item);
                wire.extend_from_slice(b"],");
                s.rows.insert(S2_KEYS[n].clone(), item);
            }
            // The last op's comma closes the batch.
            *wire.last_mut().expect("S2 steps send ops") = b']';
            ops
        },
    }
}

/// S3's floor: the 3 fields bumped on the plain struct, and chord's steady `s` ops, a field's
/// path as an id (`[["s",id,v],["s",id,v],["s",id,v]]`). The id written is the field's index:
/// once a stream has sent every field twice, chord's ids are the same 60 numbers, given in
/// the order the fields first repeated.
pub fn floor_s3() -> ShapeFloor<ch::Wide> {
    ShapeFloor {
        state: ch::Wide::initial(),
        wire: Vec::new(),
        step: |s, wire, i| {
            let picks = &S3_PICKS[i % S3_STEPS];
            wire.push(b'[');
            for &k in picks {
                let value = ch::wide_bump_plain(s, k);
                wire.extend_from_slice(br#"["s","#);
                put(wire, &k);
                wire.push(b',');
                put(wire, &value);
                wire.extend_from_slice(b"],");
            }
            *wire.last_mut().expect("S3 steps send ops") = b']';
            picks.len()
        },
    }
}

/// S4's floor: the counter 8 levels down bumped, and chord's steady `s` op, the path as an id
/// (`[["s",0,n]]`).
pub fn floor_s4() -> ShapeFloor<ch::Deep1> {
    ShapeFloor {
        state: ch::Deep1::initial(),
        wire: Vec::new(),
        step: |s, wire, _| {
            let count = &mut s.inner.inner.inner.inner.inner.inner.inner.count;
            *count += 1;
            wire.extend_from_slice(br#"[["s",0,"#);
            put(wire, count);
            wire.extend_from_slice(b"]]");
            1
        },
    }
}

/// S5's floor: the line pushed onto the agent's log, and the op chord sends for a push, a
/// splice at the log's end with the path inline (each step's agent is new to the stream):
/// `[["p",["agents","<id>","log"],<index>,0,["<line>"]]]`.
pub fn floor_s5() -> ShapeFloor<ch::Agents> {
    ShapeFloor {
        state: ch_s5_agents(),
        wire: Vec::new(),
        step: |s, wire, i| {
            let id = s5_agent(i);
            let log = &mut s
                .agents
                .get_mut(id)
                .expect("S5's agents are all present")
                .log;
            log.push(S5_LINES[i % S5_STEPS].clone());
            wire.extend_from_slice(br#"[["p",["agents","#);
            put(wire, id);
            wire.extend_from_slice(br#","log"],"#);
            put(wire, &(log.len() - 1));
            wire.extend_from_slice(b",0,[");
            put(wire, log[log.len() - 1].as_str());
            wire.extend_from_slice(b"]]]");
            1
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The shapes at any size: each shape's own step on a container of `n` (`benches/tests/
// scaling.rs` compares a step's cost at two sizes). The step reads the size off the state, so
// it stays a plain `fn`; what a step formats or clones it does at every size alike.

impl<T: Tracked> ChordRun<T> {
    /// [`new`](ChordRun::new) with the base batch drained by `flush_into`, which builds no
    /// ops: a 100,000-entry state's base costs a fraction of what its `Value` does.
    pub fn drained(value: T, mutate: fn(&mut Tracker<T>, usize)) -> Self {
        let mut t = track(value);
        let mut enc = Encoder::new();
        let mut wire = Vec::new();
        assert!(
            t.flush_into(&mut enc, &mut wire).unwrap() > 0,
            "a base batch"
        );
        wire.clear();
        ChordRun {
            t,
            enc,
            wire,
            mutate,
        }
    }
}

/// S1 on a transcript of `n` entries: step `i` reassigns entry `(i * 7,919) % n` (a stride
/// coprime with any power of ten) to one of S1's 40-byte texts.
pub fn chord_s1_sized(n: usize) -> ChordRun<ch::Transcript> {
    let transcript = (0..n)
        .map(|k| ch::Entry {
            role: if k % 2 == 0 { "user" } else { "assistant" }.into(),
            text: s1_text(k, false),
        })
        .collect();
    ChordRun::drained(ch::Transcript { transcript }, |t, i| {
        let at = (i * 7_919) % t.transcript.len();
        let text = S1_TEXTS[i % S1_STEPS].clone();
        t.state().transcript.at(at).text.set(text);
    })
}

/// Keys S2 at any size removes and inserts per step: the same count at every size, so that a
/// step's work does not grow with the map.
pub const S2_SIZED_CHURN: usize = 1;

/// S2's key `n` at any size (`row-000042`).
pub fn s2_key(n: usize) -> String {
    format!("row-{n:06}")
}

/// S2 on a map of `n` items: step `i` removes the oldest [`S2_SIZED_CHURN`] keys and inserts
/// as many new ones, so the map keeps `n` items.
pub fn chord_s2_sized(n: usize) -> ChordRun<ch::Table> {
    let item = |k: usize| ch::Item {
        id: k as i64,
        name: s2_key(k),
    };
    let rows = (0..n).map(|k| (s2_key(k), item(k))).collect();
    ChordRun::drained(ch::Table { rows }, |t, i| {
        let first = i * S2_SIZED_CHURN;
        let next = first + t.rows.len();
        let mut s = t.state();
        for k in first..first + S2_SIZED_CHURN {
            s.rows.remove(&s2_key(k));
        }
        for k in next..next + S2_SIZED_CHURN {
            let name = s2_key(k);
            s.rows.insert(name.clone(), ch::Item { id: k as i64, name });
        }
    })
}

/// S3's choice of fields for a struct of `width` fields: at each of `steps` steps, 3 different
/// fields, seeded as S3's own.
pub fn s3_picks_of(width: usize, steps: usize) -> Vec<[usize; 3]> {
    assert!(width >= 3, "S3 changes 3 fields a step");
    let mut seed = 0x5eed_0003;
    (0..steps)
        .map(|_| {
            let mut picks = [usize::MAX; 3];
            let mut n = 0;
            while n < 3 {
                let k = (splitmix64(&mut seed) % width as u64) as usize;
                if !picks.contains(&k) {
                    picks[n] = k;
                    n += 1;
                }
            }
            picks
        })
        .collect()
}

impl ch::Deep1 {
    /// Every level labelled with `bytes` bytes (`level <n>` repeated), the count 0: S4 with
    /// siblings of any size beside the path to the counter.
    pub fn labelled(bytes: usize) -> Self {
        let mut s = Self::initial();
        let l = |n: u8| {
            let unit = format!("level {n} ");
            unit.repeat(bytes / unit.len() + 1)[..bytes].to_owned()
        };
        s.label = l(1);
        s.inner.label = l(2);
        s.inner.inner.label = l(3);
        s.inner.inner.inner.label = l(4);
        s.inner.inner.inner.inner.label = l(5);
        s.inner.inner.inner.inner.inner.label = l(6);
        s.inner.inner.inner.inner.inner.inner.label = l(7);
        s.inner.inner.inner.inner.inner.inner.inner.label = l(8);
        s
    }
}

/// S4 with every level's label `bytes` bytes long: step `i` adds 1 to the counter.
pub fn chord_s4_sized(bytes: usize) -> ChordRun<ch::Deep1> {
    ChordRun::drained(ch::Deep1::labelled(bytes), |t, _| {
        t.state().inner.inner.inner.inner.inner.inner.inner.count += 1;
    })
}

/// S5's agent id `n` at any size (`agent-000042`).
pub fn s5_key(n: usize) -> String {
    format!("agent-{n:06}")
}

/// Lines of room in the log of each agent of S5 at any size: as many pushes as an agent
/// takes without its log growing, so that whether a push reallocates does not depend on how
/// many agents share the steps.
pub const S5_SIZED_ROOM: usize = 32;

/// S5's `n` agents at any size, each with a one-line log (the log's length is not what is
/// scaled; a short one keeps 100,000 agents cheap to build) with room for
/// [`S5_SIZED_ROOM`] more.
pub fn s5_sized_agents(n: usize) -> std::collections::BTreeMap<String, ch::Agent> {
    (0..n)
        .map(|k| {
            let mut log = Vec::with_capacity(1 + S5_SIZED_ROOM);
            log.push(s5_line(0));
            let status = "running".into();
            (s5_key(k), ch::Agent { status, log })
        })
        .collect()
}

/// S5 on [`s5_sized_agents`]`(n)`: step `i` pushes one of S5's lines onto agent
/// `(i * 389) % n`'s log (a stride coprime with any power of ten).
pub fn chord_s5_sized(n: usize) -> ChordRun<ch::Agents> {
    let agents = s5_sized_agents(n);
    ChordRun::drained(ch::Agents { agents }, |t, i| {
        let key = s5_key((i * 389) % t.agents.len());
        let line = S5_LINES[i % S5_STEPS].clone();
        let mut s = t.state();
        let mut agent = s.agents.get_mut(&key).expect("every agent is present");
        agent.log.push(line);
    })
}
