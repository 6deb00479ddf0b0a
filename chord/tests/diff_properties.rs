//! Property tests of `chord::diff`: for random JSON `before` and `after` (most of the time a
//! random mutation of `before`, so that appends, rolling windows, splices and in-place edits
//! all run), the ops replay `before` into exactly `after`, equal values give no ops, and the
//! ops cross the wire unchanged.

use chord::{apply, diff, Decoder, Encoder, Op};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Text from a small alphabet, so that overlaps, repeats and budget exhaustion are common;
/// non-ASCII, astral and JSON-escaped characters included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[abé😀\"\\\n]{0,12}",
        2 => ("[ab😀]{1,3}", 0usize..40).prop_map(|(unit, n)| unit.repeat(n)),
        1 => "\\PC{0,8}",
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => "[a-e]",
        4 => "[0-9]|é|😀|two words",
        1 => prop::sample::select(vec!["__proto__", "constructor", "prototype"]).prop_map(String::from),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => (-3i64..1000).prop_map(Value::from),
        1 => (0i64..3).prop_map(Value::from),
        // Floats that print and parse back exactly.
        1 => prop::sample::select(vec![0.5, -1.25, 3.0, 1e300]).prop_map(Value::from),
        4 => text().prop_map(Value::String),
    ]
}

fn containers(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
        prop::collection::vec((key(), inner), 0..5)
            .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
    ]
}

fn json() -> BoxedStrategy<Value> {
    leaf().prop_recursive(4, 48, 6, containers).boxed()
}

/// A document: usually an object or an array (as tracked state is), sometimes a leaf.
fn document() -> impl Strategy<Value = Value> {
    prop_oneof![6 => containers(json()), 1 => leaf()]
}

/// One random mutation somewhere in a value: `descend` picks the way down (and where to
/// stop), `pick` the kind of mutation and its position, `text` and `value` what it writes.
#[derive(Clone, Debug)]
struct Mutation {
    descend: Vec<u8>,
    pick: u32,
    text: String,
    value: Value,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        prop::collection::vec(any::<u8>(), 1..6),
        any::<u32>(),
        text(),
        json(),
    )
        .prop_map(|(descend, pick, text, value)| Mutation {
            descend,
            pick,
            text,
            value,
        })
}

/// The char boundary of `s` after its first `n` characters (clamped).
fn after_chars(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(at, _)| at)
}

fn mutate(v: &mut Value, m: &Mutation, depth: usize) {
    // Go down while `descend` says so (a byte below 200, about 4 in 5) and there is a child.
    if let Some(&d) = m.descend.get(depth) {
        if d < 200 {
            let child = match v {
                Value::Array(items) if !items.is_empty() => {
                    let i = usize::from(d) % items.len();
                    Some(&mut items[i])
                }
                Value::Object(map) if !map.is_empty() => {
                    let i = usize::from(d) % map.len();
                    map.values_mut().nth(i)
                }
                _ => None,
            };
            if let Some(child) = child {
                return mutate(child, m, depth + 1);
            }
        }
    }
    let pick = m.pick as usize;
    let (kind, at) = (pick % 8, pick / 8);
    if kind == 7 {
        *v = m.value.clone(); // a replacement, often a change of type
        return;
    }
    match v {
        Value::String(s) => match kind % 4 {
            0 => s.push_str(&m.text),
            1 => {
                // A rolling window: drop from the front, append.
                let cut = after_chars(s, at % 6);
                s.drain(..cut);
                s.push_str(&m.text);
            }
            2 => {
                let cut = after_chars(s, at % 6);
                s.drain(..cut);
            }
            _ => *s = m.text.clone(),
        },
        Value::Array(items) => {
            let len = items.len();
            match kind {
                0 => items.insert(0, m.value.clone()),
                1 => items.push(m.value.clone()),
                2 => {
                    items.pop();
                }
                3 if len > 0 => {
                    items.remove(at % len);
                }
                4 => {
                    // A rolling window of elements.
                    items.drain(..(at % 3).min(len));
                    items.push(m.value.clone());
                }
                5 if len > 0 => items[at % len] = m.value.clone(),
                6 if len > 0 => {
                    // A copy of an element elsewhere: equal elements around the edit.
                    let copy = items[at % len].clone();
                    items.insert((at / 8) % (len + 1), copy);
                }
                _ => items.insert(at % (len + 1), m.value.clone()),
            }
        }
        Value::Object(map) => {
            let len = map.len();
            match kind % 3 {
                0 if len > 0 => {
                    let k = map.keys().nth(at % len).cloned().unwrap_or_default();
                    map.shift_remove(&k);
                }
                1 if len > 0 => {
                    if let Some(slot) = map.values_mut().nth(at % len) {
                        *slot = m.value.clone();
                    }
                }
                _ => {
                    map.insert(m.text.clone(), m.value.clone());
                }
            }
        }
        _ => *v = m.value.clone(),
    }
}

/// A `before` and an `after`: mostly one to four mutations of `before`, sometimes unrelated.
fn pair() -> impl Strategy<Value = (Value, Value)> {
    prop_oneof![
        8 => (document(), prop::collection::vec(mutation(), 1..5)).prop_map(|(before, ms)| {
            let mut after = before.clone();
            for m in &ms {
                mutate(&mut after, m, 0);
            }
            (before, after)
        }),
        1 => (document(), document()),
    ]
}

fn wire_round_trip(ops: &[Op]) -> Vec<Op> {
    let wire = Encoder::new().encode(ops).to_json();
    Decoder::new().decode_str(&wire).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn ops_replay_before_into_after((before, after) in pair()) {
        let ops = diff(&before, &after);
        let mut replica = Some(before.clone());
        apply(&mut replica, &ops).map_err(|e| TestCaseError::fail(format!("{e} in {ops:?}")))?;
        prop_assert_eq!(replica.as_ref(), Some(&after), "ops {:?}", ops);
        prop_assert_eq!(wire_round_trip(&ops), ops.clone());
        // A value replaced whole at the root is a lone `r`; a batch never holds one elsewhere.
        prop_assert!(ops.iter().skip(1).all(|op| !matches!(op, Op::Replace(_))));
        // No op for equal values, and none left over when the diff is replayed again.
        prop_assert!(diff(&before, &before).is_empty());
        prop_assert!(diff(&after, &after.clone()).is_empty());
    }

    #[test]
    fn nested_values_diff_the_same_way((before, after) in pair()) {
        // Under a member and inside an array the same rules apply, without `r`.
        let wrap = |v: &Value| serde_json::json!({"lane": [0, {"state": v}]});
        let (before, after) = (wrap(&before), wrap(&after));
        let ops = diff(&before, &after);
        prop_assert!(ops.iter().all(|op| !matches!(op, Op::Replace(_))));
        let mut replica = Some(before);
        apply(&mut replica, wire_round_trip(&ops)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(replica, Some(after));
    }
}
