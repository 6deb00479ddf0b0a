//! The plain-Rust producer of the tracking section: every statement of it, and exactly the
//! op each one emits (written out by hand from the wire format's rules).

#[path = "../examples/plain_rust.rs"]
mod example;

use chord::{apply, path, track, Op};
use serde_json::json;

use example::{entry, start, Lane, Meta, Status};

/// The tracked turn of the example emits exactly this batch (fields in declaration order),
/// and leaves the state the plain turn leaves.
#[test]
fn the_example_turn_emits_exactly_its_batch() {
    let mut t = track(start());
    t.flush().unwrap();
    example::turn_tracked(&mut t, " world", "yy", "c2");
    let ops = t.flush().unwrap();
    let wire = serde_json::to_value(&ops).unwrap();
    assert_eq!(
        wire,
        json!([
            ["s", ["status"], {"state": "running", "tool": "bash"}],
            ["a", ["answer"], " world"],
            ["p", ["transcript"], 0, 0, [{"role": "system", "text": "be brief"}]],
            ["p", ["transcript"], 2, 0, [{"role": "assistant", "text": " world"}]],
            ["a", ["tools", 0, "output"], "yy"],
            ["s", ["calls", 1, "done"], true],
            ["s", ["meta", "bash"], {"calls": 1}],
            ["s", ["notes"], ["a", "b"]],
            ["s", ["usage", "inputTokens"], 11],
            ["s", ["usage", "outputTokens"], 5],
        ])
    );
    let mut plain = start();
    example::turn_plain(&mut plain, " world", "yy", "c2");
    assert_eq!(&plain, t.get());
}

/// The lines between `// turn: NAME` and the next `// end` of the example.
fn lines_of(name: &str) -> usize {
    let src = include_str!("../examples/plain_rust.rs");
    let start = src.find(&format!("// turn: {name}\n")).expect("marker");
    let body = &src[start..];
    let end = body.find("// end").expect("end marker");
    body[..end].lines().count() - 1
}

#[test]
fn the_tracked_turn_is_as_long_as_the_plain_one() {
    let (tracked, plain) = (lines_of("tracked"), lines_of("plain"));
    assert!(tracked > 10 && plain > 10, "{tracked} {plain}");
    assert!(
        tracked * 10 <= plain * 11,
        "tracked {tracked} lines, plain {plain}: more than 10% longer"
    );
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
