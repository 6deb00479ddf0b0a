//! The model for `tests/properties.rs`: what each valid op must do, written independently
//! of chord's applier, so that the round trip compares chord against it.
//!
//! Included by `tests/properties.rs` as `mod model`.

use chord::{Op, Seg};
use serde_json::Value;

pub fn key_name(seg: &Seg) -> String {
    match seg {
        Seg::Key(k) => k.to_string(),
        Seg::Index(i) => i.to_string(),
    }
}

pub fn index(seg: &Seg) -> usize {
    match seg {
        Seg::Index(i) => *i,
        Seg::Key(k) => panic!("the generator put key {k:?} on an array"),
    }
}

pub fn node<'v>(root: &'v Value, segs: &[Seg]) -> Option<&'v Value> {
    let mut at = root;
    for seg in segs {
        at = match (at, seg) {
            (Value::Object(m), seg) => m.get(&key_name(seg))?,
            (Value::Array(a), Seg::Index(i)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

fn node_mut<'v>(root: &'v mut Value, segs: &[Seg]) -> &'v mut Value {
    let mut at = root;
    for seg in segs {
        at = match at {
            Value::Object(m) => m.get_mut(&key_name(seg)).expect("generated parent exists"),
            Value::Array(a) => &mut a[index(seg)],
            other => panic!("the generator walked into {other}"),
        };
    }
    at
}

fn string_mut<'v>(root: &'v mut Value, segs: &[Seg]) -> &'v mut String {
    match node_mut(root, segs) {
        Value::String(s) => s,
        other => panic!("the generator appended to {other}"),
    }
}

/// Applies one op the generator promised is valid.
pub fn model_apply(doc: &mut Option<Value>, op: &Op) {
    if let Op::Replace(v) = op {
        *doc = Some(v.clone());
        return;
    }
    let root = doc
        .as_mut()
        .expect("generated ops other than r have a value");
    match op {
        Op::Replace(_) => {}
        Op::Set(p, v) => {
            let (parent, last) = p.split_last();
            match node_mut(root, parent) {
                Value::Object(m) => {
                    m.insert(key_name(last), v.clone());
                }
                Value::Array(a) => {
                    let i = index(last);
                    if i == a.len() {
                        a.push(v.clone());
                    } else {
                        a[i] = v.clone();
                    }
                }
                other => panic!("the generator set into {other}"),
            }
        }
        Op::Delete(p) => {
            let (parent, last) = p.split_last();
            match node_mut(root, parent) {
                Value::Object(m) => {
                    m.shift_remove(&key_name(last));
                }
                Value::Array(a) => {
                    a.remove(index(last));
                }
                other => panic!("the generator deleted from {other}"),
            }
        }
        Op::Append(p, t) => string_mut(root, p).push_str(t),
        Op::Truncate(p, n) => {
            let s = string_mut(root, p);
            let units: Vec<u16> = s.encode_utf16().collect();
            let rest = &units[(*n).min(units.len())..];
            *s = String::from_utf16(rest).expect("generated counts fall between characters");
        }
        Op::Splice {
            path,
            index,
            remove,
            items,
        } => {
            let Value::Array(a) = node_mut(root, path) else {
                panic!("the generator spliced a non-array");
            };
            let at = (*index).min(a.len());
            let remove = (*remove).min(a.len() - at);
            a.splice(at..at + remove, items.iter().cloned());
        }
    }
}

/// A document as JSON text, key order included.
pub fn text_of(doc: &Option<Value>) -> String {
    serde_json::to_string(doc).expect("a Value serializes")
}
