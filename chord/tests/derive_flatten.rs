//! `#[serde(flatten)]` on a field whose type is a derived struct: its fields are members of
//! the parent's JSON object, so their paths are the parent's, and its proxy is reached as
//! `state.field` with the flattened struct's fields under it. Every flush is applied to a
//! replica, which must equal `serde_json::to_value(&state)`, the same JSON serde writes.

use chord::{apply, path, track, Decoder, Encoder, Op, Tracked, Tracker};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Lane {
    status: String,
    #[serde(flatten)]
    usage: Usage,
    log: Vec<String>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(flatten)]
    cost: Cost,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Cost {
    cents: u32,
    currency: String,
}

/// A tracker plus a replica fed with every flush, through the wire encoding.
struct Stream<T: Tracked> {
    t: Tracker<T>,
    enc: Encoder,
    dec: Decoder,
    replica: Option<Value>,
}

impl<T: Tracked + Serialize> Stream<T> {
    fn new(value: T) -> Self {
        let mut s = Stream {
            t: track(value),
            enc: Encoder::new(),
            dec: Decoder::new(),
            replica: None,
        };
        let base = s.flush();
        assert!(matches!(base.as_slice(), [Op::Replace(_)]));
        s
    }

    /// Flushes, sends, applies; the replica must equal the state. Returns the ops.
    fn flush(&mut self) -> Vec<Op> {
        let ops = self.t.flush().unwrap();
        let decoded = self
            .dec
            .decode_str(&self.enc.encode(&ops).to_json())
            .unwrap();
        assert_eq!(decoded, ops);
        apply(&mut self.replica, &ops).unwrap();
        assert_eq!(
            self.replica.as_ref(),
            Some(&serde_json::to_value(self.t.get()).unwrap()),
            "replica diverged after {ops:?}"
        );
        ops
    }
}

fn lane() -> Lane {
    Lane {
        status: "running".into(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 0,
            cost: Cost {
                cents: 1,
                currency: "US".into(),
            },
            model: None,
        },
        log: vec!["a".into()],
    }
}

#[test]
fn the_json_has_the_flattened_fields_among_the_parents() {
    // What serde writes, spelled out: the paths below are members of this object.
    assert_eq!(
        serde_json::to_value(lane()).unwrap(),
        json!({
            "status": "running",
            "inputTokens": 10,
            "outputTokens": 0,
            "cents": 1,
            "currency": "US",
            "log": ["a"],
        })
    );
}

#[test]
fn a_flattened_field_changes_at_the_parents_paths() {
    let mut s = Stream::new(lane());
    *s.t.state().usage.output_tokens += 3;
    assert_eq!(s.flush(), vec![Op::Set(path!["outputTokens"], json!(3))]);

    s.t.state().usage.cost.currency.push_str("D");
    *s.t.state().usage.cost.cents = 250;
    // (A struct's fields are flushed in declaration order.)
    assert_eq!(
        s.flush(),
        vec![
            Op::Set(path!["cents"], json!(250)),
            Op::Append(path!["currency"], "D".into()),
        ]
    );

    // A field serde may skip appears among the parent's members, and disappears.
    s.t.state().usage.model.set(Some("m1".into()));
    assert_eq!(s.flush(), vec![Op::Set(path!["model"], json!("m1"))]);
    s.t.state().usage.model.set(None);
    assert_eq!(s.flush(), vec![Op::Delete(path!["model"])]);
}

#[test]
fn setting_a_flattened_struct_sends_only_the_fields_that_differ() {
    let mut s = Stream::new(lane());
    let mut next = lane().usage;
    next.input_tokens = 11;
    next.cost.currency = "EU".into();
    s.t.state().usage.set(next);
    let ops = s.flush();
    assert_eq!(
        ops,
        vec![
            Op::Set(path!["inputTokens"], json!(11)),
            Op::Set(path!["currency"], json!("EU")),
        ]
    );
}

#[test]
fn a_flattened_struct_inside_an_array_element_has_the_elements_paths() {
    #[derive(Tracked, Serialize, Clone, Debug)]
    struct Board {
        lanes: Vec<Lane>,
    }
    let mut s = Stream::new(Board {
        lanes: vec![lane(), lane()],
    });
    let mut state = s.t.state();
    let mut second = state.lanes.get_mut(1).unwrap();
    *second.usage.input_tokens += 1;
    second.usage.cost.currency.push('!');
    assert_eq!(
        s.flush(),
        vec![
            Op::Set(path!["lanes", 1, "inputTokens"], json!(11)),
            Op::Append(path!["lanes", 1, "currency"], "!".into()),
        ]
    );
}

#[test]
fn a_flattened_field_of_an_enum_variant_has_the_variants_paths() {
    #[derive(Tracked, Serialize, Clone, Debug)]
    #[serde(tag = "kind")]
    enum Event {
        Call {
            id: u32,
            #[serde(flatten)]
            usage: Usage,
        },
        Idle,
    }
    let mut s = Stream::new(Event::Call {
        id: 1,
        usage: lane().usage,
    });
    if let EventMut::Call { usage, .. } = s.t.state().as_mut() {
        let mut usage = usage;
        *usage.output_tokens += 2;
    }
    assert_eq!(s.flush(), vec![Op::Set(path!["outputTokens"], json!(2))]);
    s.t.state().set(Event::Idle);
    s.flush();
}

#[test]
fn a_flattened_type_parameter_is_bounded_by_flatten() {
    #[derive(Tracked, Serialize, Clone, Debug)]
    struct Tagged<T> {
        tag: String,
        #[serde(flatten)]
        body: T,
    }
    let mut s = Stream::new(Tagged {
        tag: "t".into(),
        body: lane().usage.cost,
    });
    *s.t.state().body.cents += 1;
    assert_eq!(s.flush(), vec![Op::Set(path!["cents"], json!(2))]);
}

#[test]
fn the_typescript_declaration_intersects_the_flattened_types() {
    let decls = chord::typescript::declarations::<Lane>().unwrap();
    assert!(
        decls.contains("export type Lane = { status: string; log: string[] } & Usage;"),
        "{decls}"
    );
    assert!(
        decls.contains("  outputTokens: number;\n  model?: string;\n} & Cost;"),
        "{decls}"
    );
}

/// A member name that repeats across a flattened field is refused when the parent's flush
/// is compiled (`cargo build`; `cargo check` does not evaluate it): these types are never
/// flushed, so that this file builds, and their members are checked directly.
mod repeated_names {
    use chord::__private::Flatten;
    use chord::Tracked;
    use serde::Serialize;

    #[derive(Tracked, Serialize)]
    pub struct Usage {
        pub tokens: u64,
        pub status: String,
    }

    #[derive(Tracked, Serialize)]
    pub struct Clash {
        pub status: String,
        #[serde(flatten)]
        pub usage: Usage,
    }

    #[derive(Tracked, Serialize)]
    pub struct Outer {
        #[serde(rename = "tokens")]
        pub count: u32,
        #[serde(flatten)]
        pub inner: Wrapper,
    }

    #[derive(Tracked, Serialize)]
    pub struct Wrapper {
        pub label: String,
        #[serde(flatten)]
        pub usage: Usage,
    }

    #[derive(Tracked, Serialize)]
    pub struct Siblings {
        #[serde(flatten)]
        pub a: Usage,
        #[serde(flatten)]
        pub b: Usage,
    }

    #[derive(Tracked, Serialize)]
    #[serde(tag = "status")]
    pub struct Tagged {
        pub tokens_total: u64,
        #[serde(flatten)]
        pub usage: Usage,
    }

    #[test]
    fn a_repeated_member_name_is_found_at_any_depth() {
        assert!(!<super::Lane as Flatten>::MEMBERS.repeats());
        assert!(!<Wrapper as Flatten>::MEMBERS.repeats());
        // `status` in the parent and in the flattened `Usage`.
        assert!(<Clash as Flatten>::MEMBERS.repeats());
        // `tokens` (renamed) in the parent and two levels down.
        assert!(<Outer as Flatten>::MEMBERS.repeats());
        // Two flattened fields of one type.
        assert!(<Siblings as Flatten>::MEMBERS.repeats());
        // A struct's tag is a member too.
        assert!(<Tagged as Flatten>::MEMBERS.repeats());
    }
}

#[derive(Debug, Clone)]
enum Action {
    Flush,
    Status(String),
    Input(u64),
    Output(u64),
    Cents(u32),
    Currency(String),
    Model(Option<String>),
    SetUsage(Usage),
    SetCost(Cost),
    Push(String),
    Replace(Lane),
}

fn text() -> impl Strategy<Value = String> {
    "[a-zé😀\"]{0,4}"
}

fn cost() -> impl Strategy<Value = Cost> {
    (any::<u32>(), text()).prop_map(|(cents, currency)| Cost { cents, currency })
}

fn usage() -> impl Strategy<Value = Usage> {
    (
        0u64..1 << 40,
        0u64..1 << 40,
        cost(),
        proptest::option::of(text()),
    )
        .prop_map(|(input_tokens, output_tokens, cost, model)| Usage {
            input_tokens,
            output_tokens,
            cost,
            model,
        })
}

fn lane_value() -> impl Strategy<Value = Lane> {
    (text(), usage(), proptest::collection::vec(text(), 0..3))
        .prop_map(|(status, usage, log)| Lane { status, usage, log })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => Just(Action::Flush),
        1 => text().prop_map(Action::Status),
        1 => (0u64..1000).prop_map(Action::Input),
        1 => (0u64..1000).prop_map(Action::Output),
        1 => any::<u32>().prop_map(Action::Cents),
        1 => text().prop_map(Action::Currency),
        1 => proptest::option::of(text()).prop_map(Action::Model),
        1 => usage().prop_map(Action::SetUsage),
        1 => cost().prop_map(Action::SetCost),
        1 => text().prop_map(Action::Push),
        1 => lane_value().prop_map(Action::Replace),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn mutations_of_a_flattened_struct_replicate_exactly(
        start in lane_value(),
        actions in proptest::collection::vec(action(), 1..30),
    ) {
        let mut s = Stream::new(start);
        for a in actions {
            let mut st = s.t.state();
            match a {
                Action::Flush => {
                    s.flush();
                }
                Action::Status(t) => st.status.push_str(&t),
                Action::Input(n) => *st.usage.input_tokens += n,
                Action::Output(n) => st.usage.output_tokens.set(n),
                Action::Cents(n) => *st.usage.cost.cents = n,
                Action::Currency(t) => {
                    st.usage.cost.currency.truncate(0);
                    st.usage.cost.currency.push_str(&t);
                }
                Action::Model(m) => st.usage.model.set(m),
                Action::SetUsage(u) => st.usage.set(u),
                Action::SetCost(c) => st.usage.cost.set(c),
                Action::Push(t) => st.log.push(t),
                Action::Replace(l) => st.set(l),
            }
        }
        s.flush();
        prop_assert!(s.t.flush().unwrap().is_empty());
    }
}
