//! Swapping two field proxies (`std::mem::swap(&mut s.a, &mut s.b)`) swaps the handles, not
//! the values, as the generated proxy documents: the value does not change, each handle goes
//! on recording for the field it points to, and the replicas stay exact.

use chord::{apply, path, track, Op, Tracked, Tracker};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize)]
struct Pair {
    a: u32,
    b: u32,
    name: String,
    alias: String,
}

/// The pair every test starts from, tracked: two numbers and two strings, all distinct.
fn pair() -> Tracker<Pair> {
    track(Pair {
        a: 1,
        b: 2,
        name: "n".into(),
        alias: "x".into(),
    })
}

#[test]
fn swapping_field_proxies_swaps_the_handles_and_changes_nothing() {
    let mut t = pair();
    let mut replica: Option<Value> = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();

    let mut s = t.state();
    std::mem::swap(&mut s.a, &mut s.b);
    std::mem::swap(&mut s.name, &mut s.alias);
    // The handles point where they were swapped to: `s.a` now writes to `b`.
    s.a += 5;
    s.name.push('!');
    assert_eq!((t.a, t.b), (1, 7));
    assert_eq!((t.name.as_str(), t.alias.as_str()), ("n", "x!"));

    let ops = t.flush().unwrap();
    assert_eq!(
        ops,
        vec![
            Op::Set(path!["b"], json!(7)),
            Op::Append(path!["alias"], "!".into()),
        ]
    );
    apply(&mut replica, &ops).unwrap();
    assert_eq!(replica, Some(serde_json::to_value(t.get()).unwrap()));
}

#[test]
fn exchanging_two_fields_values_is_a_set_of_each() {
    let mut t = pair();
    t.flush().unwrap();
    let mut s = t.state();
    let (a, b) = (*s.a, *s.b);
    s.a.set(b);
    s.b.set(a);
    assert_eq!(
        t.flush().unwrap(),
        vec![Op::Set(path!["a"], json!(2)), Op::Set(path!["b"], json!(1)),]
    );
}

/// Swapping through the handles (`&mut *s.a`, the value each points to) exchanges the values,
/// as `std::mem::swap` does on the plain struct; each field is sent whole.
#[test]
fn swapping_through_the_handles_exchanges_the_values() {
    let mut t = pair();
    let mut replica: Option<Value> = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();

    let mut s = t.state();
    std::mem::swap(&mut *s.a, &mut *s.b);
    std::mem::swap(&mut *s.name, &mut *s.alias);
    s.a += 5;
    assert_eq!((t.a, t.b), (7, 1));
    assert_eq!((t.name.as_str(), t.alias.as_str()), ("x", "n"));

    let ops = t.flush().unwrap();
    assert_eq!(
        ops,
        vec![
            Op::Set(path!["a"], json!(7)),
            Op::Set(path!["b"], json!(1)),
            Op::Set(path!["name"], json!("x")),
            Op::Set(path!["alias"], json!("n")),
        ]
    );
    apply(&mut replica, &ops).unwrap();
    assert_eq!(replica, Some(serde_json::to_value(t.get()).unwrap()));
}
