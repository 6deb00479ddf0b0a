//! The plain-Rust producer of the tracking section: every statement of it, and exactly the
//! op each one emits (written out by hand from the wire format's rules).

use std::collections::BTreeMap;

use chord::{apply, path, track, Op, Tracked};
use serde::Serialize;
use serde_json::json;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct Lane {
    status: Status,
    answer: String,
    transcript: Vec<Entry>,
    tools: Vec<Tool>,
    calls: Vec<Call>,
    meta: BTreeMap<String, Meta>,
    notes: Vec<String>,
    usage: Usage,
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(tag = "state", rename_all = "camelCase")]
enum Status {
    #[default]
    Idle,
    Running {
        tool: String,
    },
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

#[derive(Tracked, Serialize, Clone, Debug)]
struct Entry {
    role: String,
    text: String,
}

#[derive(Tracked, Serialize, Clone, Debug)]
struct Tool {
    name: String,
    output: String,
}

#[derive(Tracked, Serialize, Clone, Debug)]
struct Call {
    id: String,
    done: bool,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Meta {
    calls: u32,
}

fn entry(role: &str, text: &str) -> Entry {
    Entry {
        role: role.into(),
        text: text.into(),
    }
}

fn start() -> Lane {
    Lane {
        usage: Usage {
            input_tokens: 10,
            output_tokens: 4,
        },
        answer: "Hello".into(),
        transcript: vec![entry("user", "hi")],
        tools: vec![Tool {
            name: "bash".into(),
            output: "x".repeat(10),
        }],
        calls: vec![
            Call {
                id: "c1".into(),
                done: false,
            },
            Call {
                id: "c2".into(),
                done: false,
            },
        ],
        notes: vec!["b".into(), "a".into()],
        ..Lane::default()
    }
}

/// Runs `step` on a tracker of `start()`, checks its batch against `expected`, and that the
/// batch takes a replica from before to after.
fn emits(step: impl FnOnce(&mut chord::Tracker<Lane>), expected: Vec<Op>) {
    let mut t = track(start());
    let mut replica = Some(t.flush().unwrap().remove(0).into_value());
    step(&mut t);
    let ops = t.flush().unwrap();
    assert_eq!(ops, expected);
    apply(&mut replica, &ops).unwrap();
    assert_eq!(replica, Some(serde_json::to_value(t.get()).unwrap()));
}

trait IntoValue {
    fn into_value(self) -> serde_json::Value;
}

impl IntoValue for Op {
    fn into_value(self) -> serde_json::Value {
        match self {
            Op::Replace(v) => v,
            other => panic!("not a base op: {other:?}"),
        }
    }
}

#[test]
fn counter() {
    emits(
        |t| t.state().usage.output_tokens += 1,
        vec![Op::Set(path!["usage", "outputTokens"], json!(5))],
    );
}

#[test]
fn append() {
    let token = " world";
    emits(
        |t| t.state().answer += token,
        vec![Op::Append(path!["answer"], " world".into())],
    );
}

#[test]
fn push_and_unshift() {
    emits(
        |t| t.state().transcript.push(entry("assistant", "yo")),
        vec![Op::Splice {
            path: path!["transcript"].into(),
            index: 1,
            remove: 0,
            items: vec![json!({"role": "assistant", "text": "yo"})],
        }],
    );
    emits(
        |t| t.state().transcript.insert(0, entry("system", "be brief")),
        vec![Op::Splice {
            path: path!["transcript"].into(),
            index: 0,
            remove: 0,
            items: vec![json!({"role": "system", "text": "be brief"})],
        }],
    );
}

#[test]
fn edit_inside_an_element() {
    emits(
        |t| {
            let mut lane = t.state();
            if let Some(mut tool) = lane.tools.get_mut(0) {
                tool.output.push_str("yy");
            }
        },
        vec![Op::Append(path!["tools", 0, "output"], "yy".into())],
    );
    emits(
        |t| t.state().tools.last_mut().unwrap().output.keep_last(4),
        vec![Op::Truncate(path!["tools", 0, "output"], 6)],
    );
}

#[test]
fn find_then_set() {
    let id = "c2";
    emits(
        |t| {
            let mut lane = t.state();
            if let Some(mut call) = lane.calls.iter_mut().find(|c| c.id == id) {
                call.done.set(true);
            };
        },
        vec![Op::Set(path!["calls", 1, "done"], json!(true))],
    );
}

#[test]
fn entry_or_default() {
    emits(
        |t| t.state().meta.entry("bash".into()).or_default().calls += 1,
        vec![Op::Set(path!["meta", "bash"], json!({"calls": 1}))],
    );
    // On a member the replica has, only the field changes.
    let mut t = track(start());
    t.flush().unwrap();
    t.state().meta.insert("bash".into(), Meta { calls: 1 });
    t.flush().unwrap();
    t.state().meta.entry("bash".into()).or_default().calls += 1;
    assert_eq!(
        t.flush().unwrap(),
        vec![Op::Set(path!["meta", "bash", "calls"], json!(2))]
    );
}

#[test]
fn enum_variant_change_is_one_set() {
    emits(
        |t| {
            t.state().status.set(Status::Running {
                tool: "bash".into(),
            })
        },
        vec![Op::Set(
            path!["status"],
            json!({"state": "running", "tool": "bash"}),
        )],
    );
}

#[test]
fn sort_through_the_fallback() {
    emits(
        |t| t.state().notes.sort(),
        // Two element sets would be larger than the whole two-element array.
        vec![Op::Set(path!["notes"], json!(["a", "b"]))],
    );
}

#[test]
fn disjoint_fields_at_once() {
    emits(
        |t| {
            let mut lane = t.state();
            let (status, usage) = (&mut lane.status, &mut lane.usage);
            usage.input_tokens += 2;
            if **status == Status::Idle {
                usage.output_tokens += 1;
            }
        },
        vec![
            Op::Set(path!["usage", "inputTokens"], json!(12)),
            Op::Set(path!["usage", "outputTokens"], json!(5)),
        ],
    );
}
