//! The alternatives a Rust user would pick, on the same workloads and inputs as chord's side
//! (`crate::workloads`): muon 0.20 (derive `Observe`, one `observe!` per step) and json-patch
//! 5 (`diff` of a clone taken before the step).

use std::sync::LazyLock;

use muon::adapter::Json;
use muon::{observe, Mutation, MutationKind, PathSegment};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use crate::workloads::{
    entries, items, s1_entries, s1_index, s2_item, s2_step, s5_agent, s5_agents, w1_text, w4_next,
    w4_text, w4l_assigned, w4l_initial, w5_content, w5big_chunk, w5big_text, w5big_text_of,
    Emitted, Run, S1_STEPS, S1_TEXTS, S2_KEYS, S2_ROWS, S3_PICKS, S3_STEPS, S5_LINES, S5_STEPS,
    S6_STEPS, S6_STEPS_DATA, TEXT40K, W5BIG_BYTES, W6_ENTRIES,
};

/// muon's state types: `#[derive(Observe, Serialize)]`, the same JSON as `workloads::ch`'s.
#[allow(missing_docs)] // The fields are the JSON of `testdata/bench/README.md`'s table.
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

    // The shapes S1-S5, as `workloads::ch` has them.

    #[derive(Observe, Serialize)]
    pub struct Table {
        pub rows: std::collections::HashMap<String, Item>,
    }

    macro_rules! wide {
        ($($f:ident $k:literal),*) => {
            #[derive(Observe, Serialize)]
            pub struct Wide {
                $(pub $f: i64,)*
            }

            impl Wide {
                /// Field `k` set to `k * 1,000`, as chord's.
                pub fn initial() -> Self {
                    let start = |k: i64| k * 1000;
                    Wide { $($f: start($k),)* }
                }
            }

            /// S3's step: 1 added to each field of `picks`, observed.
            pub fn wide_step(v: &mut Wide, picks: &[usize; 3]) -> muon::adapter::Json {
                muon::observe!(v => {
                    for &k in picks {
                        match k {
                            $($k => v.$f += 1,)*
                            _ => panic!("S3 has 60 fields, not field {k}"),
                        }
                    }
                })
                .unwrap()
            }
        };
    }
    crate::workloads::s3_fields!(wide);

    #[derive(Observe, Serialize)]
    pub struct Deep1 {
        pub label: String,
        pub inner: Deep2,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep2 {
        pub label: String,
        pub inner: Deep3,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep3 {
        pub label: String,
        pub inner: Deep4,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep4 {
        pub label: String,
        pub inner: Deep5,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep5 {
        pub label: String,
        pub inner: Deep6,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep6 {
        pub label: String,
        pub inner: Deep7,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep7 {
        pub label: String,
        pub inner: Deep8,
    }

    #[derive(Observe, Serialize)]
    pub struct Deep8 {
        pub label: String,
        pub count: i64,
    }

    impl Deep1 {
        /// As chord's: every level labelled `level <n>`, the count 0.
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

    #[derive(Observe, Serialize)]
    pub struct Agent {
        pub status: String,
        pub log: Vec<String>,
    }

    #[derive(Observe, Serialize)]
    pub struct Agents {
        pub agents: std::collections::BTreeMap<String, Agent>,
    }
}

/// W6's entries as muon values (cloned into the state at each push).
pub static MU_ENTRIES: LazyLock<Vec<mu::Entry>> = LazyLock::new(|| entries(1000));

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

fn text_mut(v: &mut Value) -> &mut String {
    match v {
        Value::String(s) => s,
        other => panic!("expected a string, found {other}"),
    }
}

fn array_mut(v: &mut Value) -> &mut Vec<Value> {
    v.as_array_mut().expect("an array")
}

fn items_json() -> Value {
    json!({ "items": (0..100).map(|i| json!({"id": i, "name": format!("item{i}")})).collect::<Vec<_>>() })
}

/// W1 in muon.
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

/// W1 in json-patch.
pub fn patch_w1() -> PatchRun {
    PatchRun {
        v: json!({ "text": *TEXT40K }),
        mutate: |v, _| text_mut(&mut v["text"]).push('x'),
    }
}

/// W2 in muon.
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

/// W2 in json-patch.
pub fn patch_w2() -> PatchRun {
    PatchRun {
        v: items_json(),
        mutate: |v, _| array_mut(&mut v["items"]).insert(0, json!({"id": -1, "name": "new"})),
    }
}

/// W3 in muon.
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

/// W3 in json-patch.
pub fn patch_w3() -> PatchRun {
    PatchRun {
        v: items_json(),
        mutate: |v, _| {
            array_mut(&mut v["items"]).pop();
        },
    }
}

/// W4 (W4r when `repetitive`) in muon, by whole assignment (muon has no other form).
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

/// W4 (W4r when `repetitive`) in json-patch.
pub fn patch_w4(repetitive: bool) -> PatchRun {
    PatchRun {
        v: json!({ "out": w4_text(repetitive) }),
        mutate: |v, _| {
            let next = w4_next(v["out"].as_str().unwrap());
            v["out"] = Value::String(next);
        },
    }
}

/// W4L in muon, by whole assignment.
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

/// W4L in json-patch.
pub fn patch_w4l() -> PatchRun {
    PatchRun {
        v: json!({ "out": w4l_initial() }),
        mutate: |v, i| {
            let next = w4l_assigned(v["out"].as_str().unwrap(), i);
            v["out"] = Value::String(next);
        },
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

/// W5 in muon, its message as it is after `after` steps.
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

/// W5 in json-patch, its message as it is after `after` steps.
pub fn patch_w5(after: usize) -> PatchRun {
    PatchRun {
        v: json_messages(w5_content(after)),
        mutate: |v, _| text_mut(&mut v["messages"][0]["content"]).push_str("tok "),
    }
}

/// W5big in muon.
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

/// W5big in json-patch.
pub fn patch_w5big() -> PatchRun {
    PatchRun {
        v: json_messages(w5big_text()),
        mutate: |v, i| text_mut(&mut v["messages"][0]["content"]).push_str(w5big_chunk(i)),
    }
}

/// W6 in muon, the transcript starting with `initial` entries (W6big: 10,000).
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

/// W6 in json-patch, the transcript starting with `initial` entries.
pub fn patch_w6(initial: usize) -> PatchRun {
    let transcript: Vec<Value> = W6_ENTRIES.iter().cycle().take(initial).cloned().collect();
    PatchRun {
        v: json!({ "transcript": transcript }),
        mutate: |v, i| array_mut(&mut v["transcript"]).push(W6_ENTRIES[i % 1000].clone()),
    }
}

/// W7 in muon.
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

/// W7 in json-patch.
pub fn patch_w7() -> PatchRun {
    PatchRun {
        v: json!({ "arr": (0..10).collect::<Vec<i64>>() }),
        mutate: |v, _| array_mut(&mut v["arr"]).clear(),
    }
}

/// S1 in muon: one element's text reassigned.
pub fn muon_s1() -> MuonRun<mu::Transcript> {
    fn step(v: &mut mu::Transcript, i: usize) -> Json {
        let text = S1_TEXTS[i % S1_STEPS].clone();
        observe!(v => { v.transcript[s1_index(i)].text = text; }).unwrap()
    }
    let transcript = s1_entries(|role, text| mu::Entry { role, text });
    MuonRun {
        v: mu::Transcript { transcript },
        mutate: step,
        wire: Vec::new(),
    }
}

/// S6 in muon: one entry's text set to an unrelated 40-byte text.
pub fn muon_s6() -> MuonRun<mu::Transcript> {
    fn step(v: &mut mu::Transcript, i: usize) -> Json {
        let (k, text) = &S6_STEPS_DATA[i % S6_STEPS];
        let text = text.clone();
        observe!(v => { v.transcript[*k].text = text; }).unwrap()
    }
    MuonRun {
        v: mu::Transcript {
            transcript: crate::workloads::s6_entries(),
        },
        mutate: step,
        wire: Vec::new(),
    }
}

/// S2 in muon: 100 keys removed and 100 inserted.
pub fn muon_s2() -> MuonRun<mu::Table> {
    fn step(v: &mut mu::Table, i: usize) -> Json {
        let (removed, inserted) = s2_step(i);
        observe!(v => {
            for n in removed {
                v.rows.remove(&S2_KEYS[n]);
            }
            for n in inserted {
                let item = s2_item(n, |id, name| mu::Item { id, name });
                v.rows.insert(S2_KEYS[n].clone(), item);
            }
        })
        .unwrap()
    }
    let rows = (0..S2_ROWS)
        .map(|n| {
            let item = s2_item(n, |id, name| mu::Item { id, name });
            (S2_KEYS[n].clone(), item)
        })
        .collect();
    MuonRun {
        v: mu::Table { rows },
        mutate: step,
        wire: Vec::new(),
    }
}

/// S3 in muon: 3 of 60 fields changed.
pub fn muon_s3() -> MuonRun<mu::Wide> {
    MuonRun {
        v: mu::Wide::initial(),
        mutate: |v, i| mu::wide_step(v, &S3_PICKS[i % S3_STEPS]),
        wire: Vec::new(),
    }
}

/// S4 in muon: the counter 8 levels down.
pub fn muon_s4() -> MuonRun<mu::Deep1> {
    fn step(v: &mut mu::Deep1, _: usize) -> Json {
        observe!(v => { v.inner.inner.inner.inner.inner.inner.inner.count += 1; }).unwrap()
    }
    MuonRun {
        v: mu::Deep1::initial(),
        mutate: step,
        wire: Vec::new(),
    }
}

/// S5 in muon: a line pushed onto one agent's log.
pub fn muon_s5() -> MuonRun<mu::Agents> {
    fn step(v: &mut mu::Agents, i: usize) -> Json {
        let line = S5_LINES[i % S5_STEPS].clone();
        observe!(v => {
            let agent = v.agents.get_mut(s5_agent(i)).expect("S5's agents are all present");
            agent.log.push(line);
        })
        .unwrap()
    }
    let agents = s5_agents(|status, log| mu::Agent { status, log })
        .into_iter()
        .collect();
    MuonRun {
        v: mu::Agents { agents },
        mutate: step,
        wire: Vec::new(),
    }
}

/// S1 in json-patch.
pub fn patch_s1() -> PatchRun {
    let transcript = s1_entries(|role, text| json!({ "role": role, "text": text }));
    PatchRun {
        v: json!({ "transcript": transcript }),
        mutate: |v, i| {
            v["transcript"][s1_index(i)]["text"] = Value::String(S1_TEXTS[i % S1_STEPS].clone())
        },
    }
}

/// S6 in json-patch.
pub fn patch_s6() -> PatchRun {
    let transcript: Vec<Value> = crate::workloads::s6_entries();
    PatchRun {
        v: json!({ "transcript": transcript }),
        mutate: |v, i| {
            let (k, text) = &S6_STEPS_DATA[i % S6_STEPS];
            v["transcript"][*k]["text"] = Value::String(text.clone())
        },
    }
}

/// S2 in json-patch.
pub fn patch_s2() -> PatchRun {
    let item = |id, name| json!({ "id": id, "name": name });
    let rows: serde_json::Map<String, Value> = (0..S2_ROWS)
        .map(|n| (S2_KEYS[n].clone(), s2_item(n, item)))
        .collect();
    PatchRun {
        v: json!({ "rows": rows }),
        mutate: |v, i| {
            let rows = v["rows"].as_object_mut().expect("an object");
            let (removed, inserted) = s2_step(i);
            for n in removed {
                rows.remove(&S2_KEYS[n]);
            }
            for n in inserted {
                let item = s2_item(n, |id, name| json!({ "id": id, "name": name }));
                rows.insert(S2_KEYS[n].clone(), item);
            }
        },
    }
}

/// S3 in json-patch.
pub fn patch_s3() -> PatchRun {
    PatchRun {
        v: serde_json::to_value(mu::Wide::initial()).unwrap(),
        mutate: |v, i| {
            for &k in &S3_PICKS[i % S3_STEPS] {
                let field = &mut v[format!("f{k:02}")];
                *field = json!(field.as_i64().expect("an integer") + 1);
            }
        },
    }
}

/// S4 in json-patch.
pub fn patch_s4() -> PatchRun {
    PatchRun {
        v: serde_json::to_value(mu::Deep1::initial()).unwrap(),
        mutate: |v, _| {
            let inner = "inner";
            let count = &mut v[inner][inner][inner][inner][inner][inner][inner]["count"];
            *count = json!(count.as_i64().expect("an integer") + 1);
        },
    }
}

/// S5 in json-patch.
pub fn patch_s5() -> PatchRun {
    let agents: serde_json::Map<String, Value> =
        s5_agents(|status, log| json!({ "status": status, "log": log }))
            .into_iter()
            .collect();
    PatchRun {
        v: json!({ "agents": agents }),
        mutate: |v, i| {
            let line = Value::String(S5_LINES[i % S5_STEPS].clone());
            array_mut(&mut v["agents"][s5_agent(i)]["log"]).push(line);
        },
    }
}
