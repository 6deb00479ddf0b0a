//! A derived struct generic over a tracked field's type: its proxy compiles, records through
//! the parameter's own proxy, and is `Debug` when that proxy is.

use chord::{apply, path, track, Op, Tracked};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize)]
struct Slot<T> {
    value: T,
    count: u32,
}

#[derive(Tracked, Serialize)]
struct Pair<A, B>(A, Vec<B>);

/// A derived struct, whose proxy is `Debug`.
#[derive(Tracked, Serialize)]
struct Inner {
    n: u64,
}

#[test]
fn a_tracked_field_of_a_type_parameter_records_through_its_proxy() {
    let mut t = track(Slot {
        value: String::from("a"),
        count: 0,
    });
    t.flush().unwrap();
    t.state().value.push_str("bc");
    *t.state().count += 2;
    assert_eq!(
        t.flush().unwrap(),
        vec![
            Op::Append(path!["value"], "bc".into()),
            Op::Set(path!["count"], json!(2)),
        ]
    );
}

#[test]
fn a_generic_proxy_is_debug_when_its_parameters_proxies_are() {
    let mut t = track(Slot {
        value: Inner { n: 7 },
        count: 1,
    });
    let shown = format!("{:?}", t.state());
    assert_eq!(
        shown,
        "SlotProxy { value: InnerProxy { n: 7, .. }, count: 1, .. }"
    );
}

#[test]
fn a_generic_tuple_struct_round_trips() {
    let mut t = track(Pair(Inner { n: 1 }, vec![String::from("x")]));
    let mut replica: Option<Value> = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();
    *t.state().0.n += 4;
    t.state().1.push(String::from("y"));
    t.state().1.get_mut(0).unwrap().push('!');
    apply(&mut replica, t.flush().unwrap()).unwrap();
    assert_eq!(replica, Some(json!([{"n": 5}, ["x!", "y"]])));
    assert_eq!(replica, Some(serde_json::to_value(t.get()).unwrap()));
}

/// A proxy's bounds name its fields' types; a public proxy of a field of a crate-private type
/// must not trip `private_bounds` (denied here).
#[deny(private_bounds, private_interfaces)]
pub mod visibility {
    use chord::Tracked;
    use serde::Serialize;

    #[derive(Tracked, Serialize)]
    pub(crate) struct Usage {
        pub(crate) tokens: u64,
    }

    #[derive(Tracked, Serialize)]
    pub struct Lane {
        pub(crate) usage: Usage,
    }
}

#[derive(Tracked, Serialize)]
struct Tree {
    label: String,
    kids: Vec<Tree>,
}

#[test]
fn a_recursive_struct_is_set_field_by_field() {
    let mut t = track(Tree {
        label: "root".into(),
        kids: vec![],
    });
    t.flush().unwrap();
    t.state().kids.push(Tree {
        label: "a".into(),
        kids: vec![],
    });
    t.flush().unwrap();
    t.state().kids.get_mut(0).unwrap().set(Tree {
        label: "b".into(),
        kids: vec![],
    });
    assert_eq!(
        t.flush().unwrap(),
        vec![Op::Set(path!["kids", 0, "label"], json!("b"))]
    );
    let mut lane = track(visibility::Lane {
        usage: visibility::Usage { tokens: 1 },
    });
    lane.flush().unwrap();
    *lane.state().usage.tokens += 1;
    assert_eq!(
        lane.flush().unwrap(),
        vec![Op::Set(path!["usage", "tokens"], json!(2))]
    );
}
