//! The tracker's rules, one test each, on derived structs and on `serde_json::Value`.
//! Every test replays the flushed ops on a replica and compares it with
//! `serde_json::to_value(&state)`.

use std::collections::BTreeMap;

use chord::{apply, path, track, Op, Tracked, Tracker};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
struct LaneView {
    operation: Operation,
    transcript: Vec<Entry>,
    tools: Vec<ToolState>,
    config: Config,
    counter: u64,
    out: String,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
struct Operation {
    streaming_message: Option<Message>,
    status: String,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct Message {
    content: Vec<Part>,
    count: u32,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct Part {
    text: String,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct Entry {
    role: String,
    text: String,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct ToolState {
    name: String,
    details: Value,
}

#[derive(Tracked, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct Config {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    temperature: Option<f64>,
    #[serde(rename = "maxTokens")]
    max_tokens: u32,
    labels: BTreeMap<String, String>,
}

/// A tracker plus a replica fed with every flush.
struct Harness<T: Tracked> {
    t: Tracker<T>,
    replica: Option<Value>,
}

impl<T: Tracked + Serialize> Harness<T> {
    fn new(value: T) -> Self {
        let mut h = Harness {
            t: track(value),
            replica: None,
        };
        let base = h.flush();
        assert!(matches!(base.as_slice(), [Op::Replace(_)]));
        h
    }

    /// Flushes, applies to the replica, checks it equals the state, returns the ops.
    fn flush(&mut self) -> Vec<Op> {
        let ops = self.t.flush().unwrap();
        apply(&mut self.replica, &ops).unwrap();
        assert_eq!(
            self.replica.as_ref(),
            Some(&serde_json::to_value(self.t.get()).unwrap()),
            "replica diverged after {ops:?}"
        );
        ops
    }
}

fn lane() -> LaneView {
    LaneView {
        operation: Operation {
            streaming_message: Some(Message {
                content: vec![Part { text: "Hel".into() }],
                count: 0,
            }),
            status: "running".into(),
        },
        transcript: (0..3)
            .map(|i| Entry {
                role: "user".into(),
                text: format!("m{i}"),
            })
            .collect(),
        config: Config {
            model: Some("m1".into()),
            ..Config::default()
        },
        ..LaneView::default()
    }
}

#[test]
fn the_first_flush_is_a_base_batch_carrying_earlier_mutations() {
    let mut t = track(lane());
    t.state().counter.set(100);
    t.state().out.push_str("xyz");
    let ops = t.flush().unwrap();
    assert_eq!(
        ops,
        vec![Op::Replace(serde_json::to_value(t.get()).unwrap())]
    );
    t.state().counter.set(101);
    assert_eq!(
        t.flush().unwrap(),
        vec![Op::Set(path!["counter"], 101.into())]
    );
}

#[test]
fn intent_is_recorded_where_it_happens() {
    let mut h = Harness::new(lane());
    let mut s = h.t.state();
    s.operation
        .streaming_message
        .as_mut()
        .unwrap()
        .content
        .at(0)
        .text
        .push_str("lo");
    assert_eq!(
        h.flush(),
        vec![Op::Append(
            path!["operation", "streamingMessage", "content", 0, "text"],
            "lo".into()
        )]
    );

    let entry = Entry {
        role: "assistant".into(),
        text: "hi".into(),
    };
    h.t.state().transcript.push(entry.clone());
    assert_eq!(
        h.flush(),
        vec![Op::Splice {
            path: path!["transcript"].into(),
            index: 3,
            remove: 0,
            items: vec![serde_json::to_value(&entry).unwrap()]
        }]
    );

    h.t.state().transcript.insert(0, entry.clone());
    let ops = h.flush();
    assert_eq!(ops.len(), 1, "an unshift is one op: {ops:?}");
    assert!(matches!(&ops[0], Op::Splice { index: 0, remove: 0, items, .. } if items.len() == 1));

    h.t.state().config.model.set(None);
    assert_eq!(h.flush(), vec![Op::Delete(path!["config", "model"])]);

    // Without skip_serializing_if, None is a set of null.
    h.t.state().config.temperature.set(Some(0.5));
    h.flush();
    h.t.state().config.temperature.set(None);
    assert_eq!(
        h.flush(),
        vec![Op::Set(path!["config", "temperature"], Value::Null)]
    );

    h.t.state().config.max_tokens.set(10);
    assert_eq!(
        h.flush(),
        vec![Op::Set(path!["config", "maxTokens"], 10.into())]
    );
}

#[test]
fn repeated_and_alternating_writes_collapse() {
    let mut h = Harness::new(LaneView {
        out: "abcdefgh".repeat(100),
        ..LaneView::default()
    });
    for i in 0..1000u64 {
        if i % 2 == 0 {
            let next = format!("{}!!!!", &h.t.out[4..]);
            h.t.state().out.set(next);
        } else {
            h.t.state().counter.set(i);
        }
    }
    let ops = h.flush();
    assert!(ops.len() <= 3, "{ops:?}");
}

#[test]
fn a_deeply_equal_reassignment_emits_nothing() {
    let mut h = Harness::new(lane());
    let same = h.t.operation.clone();
    h.t.state().operation.set(same);
    h.t.state().counter.set(7);
    h.t.state().counter.set(0);
    assert_eq!(h.flush(), vec![]);
}

#[test]
fn non_json_values_are_refused_at_flush_with_their_path() {
    let mut h = Harness::new(lane());
    h.t.state().config.temperature.set(Some(f64::NAN));
    let err = h.t.flush().unwrap_err();
    assert_eq!(err.path(), Some(&path!["config", "temperature"].into()));
    assert!(err.to_string().contains("not finite"), "{err}");
    // Nothing was accepted: fixing the value sends the change (from the accepted `null`,
    // nothing at all when it is fixed back to it).
    h.t.state().config.temperature.set(Some(0.5));
    assert_eq!(
        h.flush(),
        vec![Op::Set(path!["config", "temperature"], json!(0.5))]
    );
}

#[test]
fn replace_rebase_and_discard() {
    let mut h = Harness::new(lane());
    h.t.state().counter.set(5);
    h.t.replace(LaneView::default());
    let ops = h.flush();
    assert!(matches!(ops.as_slice(), [Op::Replace(_)]));

    h.t.state().counter.set(6);
    h.t.rebase();
    assert!(matches!(h.flush().as_slice(), [Op::Replace(_)]));

    h.t.state().counter.set(7);
    h.t.discard();
    assert_eq!(h.t.flush().unwrap(), vec![]);
}

#[test]
fn rolling_window_through_the_proxy() {
    let mut h = Harness::new(LaneView {
        out: "0123".to_owned() + &"k".repeat(40),
        ..LaneView::default()
    });
    let out = h.t.state();
    let mut out = out.out;
    out.drop_front(4);
    out.push_str("abcd");
    assert_eq!(
        h.flush(),
        vec![
            Op::Truncate(path!["out"], 4),
            Op::Append(path!["out"], "abcd".into())
        ]
    );
}

#[test]
fn untyped_values_record_intent_too() {
    // A log long enough that its `a` is smaller than one `s` of `a`.
    let mut h = Harness::new(json!({"a": {"log": "x".repeat(60), "xs": [1, 2]}, "b": 1}));
    let mut s = h.t.state();
    let mut a = s.member("a").unwrap();
    a.member("log").unwrap().push_str("yz").unwrap();
    a.member("xs")
        .unwrap()
        .as_array()
        .unwrap()
        .insert(0, json!(0));
    s.remove("b").unwrap();
    s.insert("c", json!([1])).unwrap();
    let ops = h.flush();
    assert_eq!(ops.len(), 4, "{ops:?}");
}

#[test]
fn a_reassigned_nested_struct_is_deep_diffed() {
    let mut h = Harness::new(lane());
    // A message long enough that its diff is smaller than one `s` of it.
    let long = "Hel".to_owned() + &" ".repeat(200);
    h.t.state().operation.streaming_message.set(Some(Message {
        content: vec![Part { text: long }],
        count: 0,
    }));
    h.flush();
    let mut next = h.t.operation.streaming_message.clone().unwrap();
    next.content[0].text.push_str("lo world");
    next.count = 1;
    h.t.state().operation.streaming_message.set(Some(next));
    assert_eq!(
        h.flush(),
        vec![
            Op::Append(
                path!["operation", "streamingMessage", "content", 0, "text"],
                "lo world".into()
            ),
            Op::Set(path!["operation", "streamingMessage", "count"], 1.into()),
        ]
    );
}

#[test]
fn a_reassigned_small_struct_whose_diff_is_larger_is_one_set() {
    let mut h = Harness::new(lane());
    let mut next = h.t.operation.streaming_message.clone().unwrap();
    next.content[0].text.push_str("lo world");
    next.count = 1;
    h.t.state()
        .operation
        .streaming_message
        .set(Some(next.clone()));
    // The `a` and the `s` of the member take more bytes as JSON than one `s` of the message.
    assert_eq!(
        h.flush(),
        vec![Op::Set(
            path!["operation", "streamingMessage"],
            serde_json::to_value(&next).unwrap()
        )]
    );
}

#[test]
fn two_writes_to_one_address_flush_to_the_last() {
    let mut h = Harness::new(lane());
    h.t.state().operation.status.set("a");
    h.t.state().operation.status.set("b");
    assert_eq!(
        h.flush(),
        vec![Op::Set(path!["operation", "status"], "b".into())]
    );
}

#[test]
fn splices_interleaved_with_element_edits() {
    // Entries long enough that the ops are smaller than one `s` of the transcript.
    let mut start = lane();
    for entry in &mut start.transcript {
        entry.text.insert_str(0, &" ".repeat(60));
    }
    let mut h = Harness::new(start); // transcript m0 m1 m2
    let s = h.t.state();
    let mut tr = s.transcript;
    tr.at(2).text.push_str("!"); // edit m2
    tr.insert(0, Entry::default()); // new, m0, m1, m2!
    tr.at(3).text.push_str("?"); // m2 again, now at 3
    tr.at(0).text.push_str("new"); // inside a new element: sent whole
    drop(tr.remove(2)); // drop m1
    tr.at(1).role.set("system"); // m0, now at 1
    let ops = h.flush();
    // Current: [new, m0 (role system), m2!?]. Accepted: [m0, m1, m2].
    assert_eq!(
        ops,
        vec![
            Op::Splice {
                path: path!["transcript"].into(),
                index: 0,
                remove: 0,
                items: vec![json!({"role": "", "text": "new"})]
            },
            Op::Splice {
                path: path!["transcript"].into(),
                index: 2,
                remove: 1,
                items: vec![]
            },
            // Element edits follow, in the order the elements were first touched.
            Op::Append(path!["transcript", 2, "text"], "!?".into()),
            Op::Set(path!["transcript", 1, "role"], "system".into()),
        ]
    );
}

#[test]
fn length_like_shrink_and_grow() {
    let mut h = Harness::new(Page {
        items: vec![1, 2, 3, 4],
    });
    h.t.state().items.truncate(1);
    assert_eq!(
        h.flush(),
        vec![Op::Splice {
            path: path!["items"].into(),
            index: 1,
            remove: 3,
            items: vec![]
        }]
    );
    h.t.state().items.resize(3, 0);
    assert_eq!(
        h.flush(),
        vec![Op::Splice {
            path: path!["items"].into(),
            index: 1,
            remove: 0,
            items: vec![0.into(), 0.into()]
        }]
    );
    h.t.state().items.clear();
    assert_eq!(h.flush(), vec![Op::Set(path!["items"], json!([]))]);
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Page {
    items: Vec<i32>,
}

#[test]
fn root_splices_on_a_tracked_vec() {
    let mut h = Harness::new(vec![1, 2, 3]);
    h.t.state().insert(0, 0);
    h.t.state().pop();
    assert_eq!(
        h.flush(),
        vec![
            Op::Splice {
                path: path![],
                index: 0,
                remove: 0,
                items: vec![0.into()]
            },
            Op::Splice {
                path: path![],
                index: 3,
                remove: 1,
                items: vec![]
            }
        ]
    );
    // Covering the whole root: one `r`.
    h.t.state().splice(.., [7]);
    assert_eq!(h.flush(), vec![Op::Replace(json!([7]))]);
}

#[test]
fn swap_remove_and_retain() {
    let mut h = Harness::new(Page {
        items: (0..10).collect(),
    });
    let _removed = h.t.state().items.swap_remove(2);
    h.flush();
    h.t.state().items.retain(|x| x % 3 != 0);
    let ops = h.flush();
    assert!(
        ops.iter().all(|o| matches!(o, Op::Splice { .. })),
        "{ops:?}"
    );
}

#[test]
fn a_failed_flush_accepts_nothing() {
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Gauge {
        value: f64,
        label: String,
    }
    let mut h = Harness::new(Gauge::default());
    h.t.state().label.push_str("cpu");
    h.t.state().value.update(|v| *v = f64::NAN);
    let err = h.t.flush().unwrap_err();
    assert_eq!(err.path(), Some(&path!["value"].into()));
    // Fix the value: the next flush carries everything recorded, the label included.
    h.t.state().value.set(0.5);
    assert_eq!(
        h.flush(),
        // Fields in declaration order.
        vec![
            Op::Set(path!["value"], json!(0.5)),
            Op::Append(path!["label"], "cpu".into()),
        ]
    );
}

#[test]
fn a_failed_flush_into_writes_nothing_and_leaves_the_encoder_as_it_was() {
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Gauge {
        label: String,
        samples: Vec<f64>,
    }
    let mut t = track(Gauge::default());
    let mut enc = chord::Encoder::new();
    let mut wire = b"sent:".to_vec();
    t.flush_into(&mut enc, &mut wire).unwrap();
    wire.truncate(5);
    // The label's path is seen once, then a batch that would define its id fails on a NaN
    // pushed after it (a splice's item, written straight to bytes).
    t.state().label.push_str("c");
    assert_eq!(t.flush_into(&mut enc, &mut wire).unwrap(), 21);
    assert_eq!(&wire[5..], br#"[["a",["label"],"c"]]"#);
    wire.truncate(5);
    t.state().label.push_str("p");
    t.state().samples.push(f64::NAN);
    let err = t.flush_into(&mut enc, &mut wire).unwrap_err();
    assert_eq!(err.path(), Some(&path!["samples", 0].into()));
    assert_eq!(wire, b"sent:", "nothing appended");
    // Fixed: the retry defines the id (the failed batch's definition was undone, so a
    // decoder that never saw it is not asked for it) and carries both changes.
    t.state().samples[0] = 0.5;
    t.flush_into(&mut enc, &mut wire).unwrap();
    assert_eq!(
        std::str::from_utf8(&wire[5..]).unwrap(),
        r##"[["#",0,["label"]],["a",0,"p"],["p",["samples"],0,0,[0.5]]]"##
    );
    // Nothing changed: nothing written.
    assert_eq!(t.flush_into(&mut enc, &mut wire).unwrap(), 0);
}

/// A flush that cannot fail forgets each record as it writes it; one that may fail must not
/// (a failed flush accepts nothing). Every kind of record whose flush serializes a value is
/// tried here after an append that the walk writes first: the flush fails, and once the value
/// is fixed the next flush still starts with that append. A kind that did not count as one
/// that may fail would lose the append (the tracker would fall back to a base batch).
#[test]
fn a_failed_flush_keeps_what_it_wrote_before_the_failure() {
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    enum Mode {
        #[default]
        Idle,
        Busy {
            load: f64,
        },
    }
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Gauge {
        label: String,
        value: f64,
        maybe: Option<f64>,
        samples: Vec<f64>,
        by_name: BTreeMap<String, f64>,
        mode: Mode,
        // Absent while `None`: only an assignment makes it appear, and that counts.
        #[serde(skip_serializing_if = "Option::is_none")]
        extra: Option<f64>,
    }
    type Change<T> = fn(&mut Tracker<T>);
    let cases: [(&str, Change<Gauge>, Change<Gauge>); 7] = [
        (
            "a field set",
            |t| t.state().value.set(f64::NAN),
            |t| t.state().value.set(0.5),
        ),
        (
            "an option set",
            |t| t.state().maybe.set(Some(f64::NAN)),
            |t| t.state().maybe.set(Some(0.5)),
        ),
        (
            "a push",
            |t| t.state().samples.push(f64::NAN),
            |t| t.state().samples[0] = 0.5,
        ),
        (
            "a map insert",
            |t| {
                t.state().by_name.insert("a".into(), f64::NAN);
            },
            |t| {
                t.state().by_name.insert("a".into(), 0.5);
            },
        ),
        (
            "an enum's variant",
            |t| t.state().mode.set(Mode::Busy { load: f64::NAN }),
            |t| t.state().mode.set(Mode::Busy { load: 0.5 }),
        ),
        (
            "an edit",
            |t| t.edit(|g| g.value = f64::NAN),
            |t| t.edit(|g| g.value = 0.5),
        ),
        (
            "a skipped option appearing",
            |t| t.state().extra.set(Some(f64::NAN)),
            |t| t.state().extra.set(Some(0.5)),
        ),
    ];
    for (what, break_it, fix_it) in cases {
        keeps_the_append(
            what,
            Gauge::default(),
            |t| t.state().label.push_str("cpu"),
            break_it,
            fix_it,
        );
    }

    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Inner {
        note: String,
        x: f64,
    }
    impl Inner {
        fn is_quiet(&self) -> bool {
            self.note.is_empty()
        }
    }
    #[derive(Tracked, Serialize, Clone, Debug)]
    struct Panel {
        label: String,
        // Absent while quiet, so the NaN in it was never sent.
        #[serde(skip_serializing_if = "Inner::is_quiet")]
        inner: Inner,
    }
    let panel = Panel {
        label: String::new(),
        inner: Inner {
            note: String::new(),
            x: f64::NAN,
        },
    };
    keeps_the_append(
        "a skipped field appearing",
        panel,
        |t| t.state().label.push_str("cpu"),
        |t| t.state().inner.note.push_str("n"),
        |t| t.state().inner.x.set(0.5),
    );
}

/// `a_failed_flush_keeps_what_it_wrote_before_the_failure` for one kind of record, through
/// `flush` and through `flush_into`.
fn keeps_the_append<T: Tracked + Clone>(
    what: &str,
    initial: T,
    append: fn(&mut Tracker<T>),
    break_it: fn(&mut Tracker<T>),
    fix_it: fn(&mut Tracker<T>),
) {
    for into in [false, true] {
        let mut t = track(initial.clone());
        let mut enc = chord::Encoder::new();
        let mut dec = chord::Decoder::new();
        let mut wire = Vec::new();
        let mut flush = |t: &mut Tracker<T>| -> chord::Result<Vec<Op>> {
            if !into {
                return t.flush();
            }
            wire.clear();
            t.flush_into(&mut enc, &mut wire)?;
            Ok(match std::str::from_utf8(&wire).unwrap() {
                "" => Vec::new(),
                text => dec.decode_str(text).unwrap(),
            })
        };
        let mut replica = None;
        apply(&mut replica, flush(&mut t).unwrap()).unwrap();
        append(&mut t);
        break_it(&mut t);
        assert!(flush(&mut t).is_err(), "{what} (flush_into: {into})");
        fix_it(&mut t);
        let ops = flush(&mut t).unwrap();
        assert_eq!(
            ops.first(),
            Some(&Op::Append(path!["label"], "cpu".into())),
            "{what} (flush_into: {into}): {ops:?}"
        );
        apply(&mut replica, &ops).unwrap();
        let state = serde_json::to_value(t.get()).unwrap();
        assert_eq!(replica, Some(state), "{what} (flush_into: {into})");
    }
}

#[test]
fn maps_record_members() {
    let mut h = Harness::new(lane());
    let s = h.t.state();
    let config = s.config;
    let mut labels = config.labels;
    labels.insert("a".into(), "1".into());
    labels.insert("b".into(), "2".into());
    h.flush();
    let s = h.t.state();
    let config = s.config;
    let mut labels = config.labels;
    labels.get_mut("a").unwrap().push_str("1");
    drop(labels.remove("b"));
    labels.insert("__proto__".into(), "x".into());
    let ops = h.flush();
    // A reserved member name cannot be a path: the map is compared and sent whole.
    assert_eq!(
        ops,
        vec![Op::Set(
            path!["config", "labels"],
            json!({"__proto__": "x", "a": "11"})
        )]
    );
}

#[test]
fn hash_maps_are_objects_too() {
    use std::collections::HashMap;
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Lanes {
        by_id: HashMap<String, Entry>,
    }
    let mut h = Harness::new(Lanes::default());
    let s = h.t.state();
    let mut by_id = s.by_id;
    by_id.insert("a".into(), Entry::default());
    assert_eq!(
        h.flush(),
        vec![Op::Set(
            path!["by_id", "a"],
            json!({"role": "", "text": ""})
        )]
    );
    let s = h.t.state();
    let mut by_id = s.by_id;
    by_id.get_mut("a").unwrap().text.push_str("hi");
    assert_eq!(
        h.flush(),
        vec![Op::Append(path!["by_id", "a", "text"], "hi".into())]
    );
}

#[test]
fn reads_through_proxies_record_nothing() {
    let mut h = Harness::new(lane());
    let s = h.t.state();
    let op = s.operation;
    let mut msg = op.streaming_message;
    let text_len = msg.as_mut().unwrap().content.at(0).text.len();
    assert_eq!(text_len, 3);
    assert_eq!(s.transcript.len(), 3);
    assert!(!h.t.is_dirty());
    assert_eq!(h.flush(), vec![]);
}

#[test]
fn a_parent_replacement_subsumes_dirty_children() {
    let mut h = Harness::new(lane());
    h.t.state().operation.status.push_str("-and-more");
    let mut next = h.t.operation.clone();
    next.status = "running!".into();
    h.t.state().operation.set(next);
    assert_eq!(
        h.flush(),
        // The struct's `set` is its fields' `set`s: the status is compared with the
        // accepted "running" on its own, and the dead append is never sent.
        vec![Op::Append(path!["operation", "status"], "!".into())]
    );
}

#[test]
fn edits_then_a_reassignment_survive_splices_that_move_the_element() {
    let mut h = Harness::new(lane()); // transcript m0 m1 m2
    let s = h.t.state();
    let mut tr = s.transcript;
    tr.at(1).text.push_str("+");
    let mut next = tr[1].clone();
    next.role = "system".into();
    tr.at(1).set(next); // m1 edited, then reassigned
    tr.insert(0, Entry::default()); // m1 moves to index 2
    let ops = h.flush();
    assert_eq!(
        ops,
        vec![
            Op::Splice {
                path: path!["transcript"].into(),
                index: 0,
                remove: 0,
                items: vec![json!({"role": "", "text": ""})]
            },
            // Fields in declaration order.
            Op::Set(path!["transcript", 2, "role"], "system".into()),
            Op::Append(path!["transcript", 2, "text"], "+".into()),
        ]
    );
}

#[test]
fn reordering_is_compared_at_flush() {
    let mut h = Harness::new(Page {
        items: vec![3, 1, 2, 2, 5],
    });
    h.t.state().items.sort();
    h.t.state().items.dedup();
    let ops = h.flush();
    assert!(!ops.is_empty());
    assert_eq!(h.t.items, vec![1, 2, 3, 5]);
    // Sorting an already sorted list emits nothing.
    h.t.state().items.sort();
    assert_eq!(h.flush(), vec![]);
}

#[test]
fn many_dirty_children_in_one_flush() {
    // Past the point where children are looked up through an index rather than a scan.
    let mut start = lane();
    start.transcript = (0..1000)
        .map(|i| Entry {
            role: "user".into(),
            // Long enough that the ops are smaller than one `s` of the transcript.
            text: format!("{}m{i}", " ".repeat(60)),
        })
        .collect();
    let mut h = Harness::new(start);
    let s = h.t.state();
    let mut tr = s.transcript;
    for i in (0..1000).rev() {
        tr.at(i).text.push_str("!");
        if i % 100 == 0 {
            tr.at(i).role.set("system");
        }
    }
    tr.insert(0, Entry::default());
    for i in 0..1001 {
        tr.at(i).text.push_str("?");
    }
    let config = s.config;
    let mut labels = config.labels;
    for k in 0..40 {
        labels.insert(format!("k{k}"), "v".into());
    }
    let ops = h.flush();
    // One splice for the new entry, one append per old entry, ten role sets, and the forty
    // labels in one `s` of the map (smaller than forty `s` of its members).
    assert_eq!(ops.len(), 1 + 1000 + 10 + 1, "{}", ops.len());
}

#[test]
fn a_kept_element_node_moved_by_a_splice_does_not_reuse_its_path_id() {
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Message {
        content: String,
    }
    #[derive(Tracked, Serialize, Clone, Debug, Default)]
    struct Chat {
        messages: Vec<Message>,
    }
    // Content long enough that the ops are smaller than one `s` of the messages.
    let mut t = track(Chat {
        messages: vec![Message {
            content: " ".repeat(60),
        }],
    });
    let mut enc = chord::Encoder::new();
    let mut dec = chord::Decoder::new();
    let mut replica = None;
    let mut wire = Vec::new();
    let mut send = |t: &mut Tracker<Chat>, wire: &mut Vec<u8>| {
        wire.clear();
        t.flush_into(&mut enc, wire).unwrap();
        let text = std::str::from_utf8(wire).unwrap().to_owned();
        apply(&mut replica, dec.decode_str(&text).unwrap()).unwrap();
        assert_eq!(
            replica,
            Some(serde_json::to_value(t.get()).unwrap()),
            "{text}"
        );
        text
    };
    send(&mut t, &mut wire);
    // Three appends: the content's path gets an id, cached on the element's kept node.
    for token in ["a", "b", "c"] {
        t.state().messages.at(0).content.push_str(token);
        send(&mut t, &mut wire);
    }
    // A message unshifted, then the same (now second) message appended to: the node keyed
    // by its accepted index 0 now stands for messages[1].
    t.state().messages.insert(0, Message::default());
    t.state().messages.at(1).content.push_str("d");
    let text = send(&mut t, &mut wire);
    assert!(text.contains(r#"["messages",1,"content"]"#), "{text}");
    t.state().messages.at(0).content.push_str("e");
    send(&mut t, &mut wire);
}

#[test]
fn a_removed_member_is_a_d_and_one_inserted_again_is_one_s() {
    let mut h = Harness::new(lane());
    {
        let s = h.t.state();
        let config = s.config;
        let mut labels = config.labels;
        labels.insert("a".into(), "x".repeat(40));
        labels.insert("b".into(), "2".into());
    }
    h.flush();
    {
        let s = h.t.state();
        let config = s.config;
        let mut labels = config.labels;
        assert_eq!(labels.remove("b").as_deref(), Some("2"));
        assert_eq!(labels.remove("missing"), None);
    }
    assert_eq!(h.flush(), vec![Op::Delete(path!["config", "labels", "b"])]);
    {
        let s = h.t.state();
        let config = s.config;
        let mut labels = config.labels;
        // Removed and inserted again, nearly the same: sent whole, as one `s`.
        drop(labels.remove("a"));
        labels.insert("a".into(), "x".repeat(40) + "y");
    }
    assert_eq!(
        h.flush(),
        vec![Op::Set(
            path!["config", "labels", "a"],
            json!("x".repeat(40) + "y")
        )]
    );
    {
        let s = h.t.state();
        let config = s.config;
        let mut labels = config.labels;
        // Edited, then removed: only the `d`.
        labels.get_mut("a").unwrap().push_str("z");
        drop(labels.remove("a"));
    }
    assert_eq!(h.flush(), vec![Op::Delete(path!["config", "labels", "a"])]);
}
