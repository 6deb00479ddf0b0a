//! A struct with every field kind chord supports (enums of each serde representation, tuple
//! and newtype structs, `Box`, `VecDeque`, sets, maps, `u128`, opaque and `with` fields,
//! `Value`), and random steps that call every proxy method chord models on it, and the
//! fallbacks: the model of the property tests that replay a tracker's flushes
//! (`proxy_properties.rs`, `ag_ui_patch.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use chord::{Tracked, Tracker};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct All {
    pub text: String,
    pub count: i64,
    pub flag: bool,
    pub big: u128,
    pub items: Vec<Item>,
    pub queue: VecDeque<String>,
    pub maybe: Option<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub tags: BTreeMap<String, String>,
    // A fixed hasher: the twin stream's map iterates in the same order, so its bytes match.
    pub counts: HashMap<
        String,
        u32,
        std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>,
    >,
    pub set: BTreeSet<u8>,
    pub boxed: Box<Item>,
    pub ext: External,
    pub int: Internal,
    pub adj: Adjacent,
    pub untagged: Untagged,
    pub pair: Pair,
    pub id: Id,
    pub unit: Unit,
    #[chord(opaque)]
    pub opaque: Vec<(u8, u8)>,
    #[serde(with = "as_string")]
    pub when: u64,
    pub any: Value,
    #[serde(skip)]
    pub cache: u32,
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
pub struct Item {
    pub name: String,
    pub n: u32,
    pub tags: Vec<String>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
pub enum External {
    #[default]
    A,
    B {
        x: String,
        n: u32,
    },
    C(String, u32),
    D(Item),
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Internal {
    #[default]
    Idle,
    Busy {
        x: String,
    },
    Holding(Item),
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(tag = "t", content = "c", rename_all_fields = "camelCase")]
pub enum Adjacent {
    #[default]
    A,
    B {
        long_name: String,
    },
    C(String, u32),
    D(Item),
}

#[derive(Tracked, Serialize, Clone, Debug)]
#[serde(untagged)]
pub enum Untagged {
    B { x: String },
    C(String, u32),
}

impl Default for Untagged {
    fn default() -> Self {
        Untagged::C(String::new(), 0)
    }
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
pub struct Pair(pub String, pub u32);

#[derive(Tracked, Serialize, Clone, Debug, Default)]
pub struct Id(pub String);

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
pub struct Unit;

pub mod as_string {
    pub fn serialize<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }
}

/// One step: what to do, and arguments to do it with.
#[derive(Clone, Debug)]
pub struct Step {
    pub op: u8,
    pub a: usize,
    pub b: usize,
    pub s: String,
}

pub fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('b'),
            Just('é'),
            Just('😀'),
            Just('"'),
            Just('\n')
        ],
        0..5,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

pub fn step() -> impl Strategy<Value = Step> {
    (any::<u8>(), 0usize..8, 0usize..8, text()).prop_map(|(op, a, b, s)| Step { op, a, b, s })
}

pub fn item(s: &Step) -> Item {
    Item {
        name: s.s.clone(),
        n: s.b as u32,
        tags: vec![s.s.clone(); s.a % 3],
    }
}

/// A char boundary at or before `bytes`.
pub fn floor(s: &str, mut bytes: usize) -> usize {
    bytes = bytes.min(s.len());
    while !s.is_char_boundary(bytes) {
        bytes -= 1;
    }
    bytes
}

pub fn edit_item(mut p: chord::Proxy<'_, Item>, s: &Step) {
    match s.b % 5 {
        0 => p.name.push_str(&s.s),
        1 => p.n += 1,
        2 => p.tags.push(s.s.clone()),
        3 => p.set(item(s)),
        _ => p.tags.clear(),
    }
}

/// Runs one step on the proxy (the number of kinds is `KINDS`).
pub fn run(t: &mut Tracker<All>, s: &Step) {
    let mut v = t.state();
    let (a, b) = (s.a, s.b);
    match s.op % KINDS {
        // String: every modelled method, then the fallback.
        0 => v.text.push_str(&s.s),
        1 => v.text += s.s.as_str(),
        2 => write!(v.text, "{}{a}", s.s).unwrap(),
        3 => v.text.keep_last(a * 2),
        4 => {
            let cut = floor(&v.text, a);
            drop(v.text.drain(..cut));
        }
        5 => {
            let at = floor(&v.text, b);
            v.text.truncate(at);
        }
        6 => {
            let at = floor(&v.text, a);
            v.text.insert_str(at, &s.s);
        }
        7 => drop(v.text.pop()),
        8 => v.text.set(s.s.clone()),
        9 => *v.text = v.text.chars().rev().collect(), // fallback
        // Numbers and bools.
        10 => v.count += a as i64 - 3,
        11 => v.count *= 2,
        12 => v.count.set(b as i64),
        13 => *v.flag = !*v.flag,
        14 => v.big += (a as u128) << 40,
        // Vec of structs.
        15 => v.items.push(item(s)),
        16 => {
            let at = a.min(v.items.len());
            v.items.insert(at, item(s));
        }
        17 if !v.items.is_empty() => drop(v.items.remove(a % v.items.len())),
        18 if !v.items.is_empty() => drop(v.items.swap_remove(a % v.items.len())),
        19 => drop(v.items.pop()),
        20 => v.items.truncate(a),
        21 => {
            let (x, y) = (a.min(v.items.len()), b.min(v.items.len()));
            drop(v.items.drain(x.min(y)..x.max(y)));
        }
        22 => {
            let (x, y) = (a.min(v.items.len()), b.min(v.items.len()));
            drop(v.items.splice(x.min(y)..x.max(y), vec![item(s); a % 3]));
        }
        23 => v.items.retain(|it| it.n as usize % 3 != a % 3),
        24 => v.items.sort_by_key(|it| it.name.clone()),
        25 => v.items.reverse(),
        26 if !v.items.is_empty() => {
            let n = v.items.len();
            v.items.swap(a % n, b % n);
        }
        27 if !v.items.is_empty() => {
            let n = v.items.len();
            v.items[a % n] = item(s);
        }
        28 => {
            if let Some(p) = v.items.get_mut(a) {
                edit_item(p, s);
            }
        }
        29 => {
            for p in v.items.iter_mut().filter(|p| *p.n as usize % 2 == a % 2) {
                edit_item(p, s);
            }
        }
        30 => {
            if let Some(p) = v.items.last_mut() {
                edit_item(p, s);
            }
        }
        31 => {
            let k = a.min(v.items.len());
            v.items.rotate_left(k); // fallback
        }
        32 => v.items.extend([item(s)]),
        33 => v.items.set(vec![item(s); a % 3]),
        // VecDeque.
        34 => v.queue.push_back(s.s.clone()),
        35 => v.queue.push_front(s.s.clone()),
        36 => drop(v.queue.pop_front()),
        37 => drop(v.queue.pop_back()),
        38 => {
            if let Some(mut q) = v.queue.get_mut(a) {
                q.push_str(&s.s);
            }
        }
        39 => v.queue.make_contiguous().reverse(), // fallback
        // Options.
        40 => v.maybe.set((a % 2 == 0).then(|| item(s))),
        41 => {
            if let Some(p) = v.maybe.as_mut() {
                edit_item(p, s);
            }
        }
        42 => drop(v.maybe.take()),
        43 => edit_item(v.maybe.get_or_insert_with(|| item(s)), s),
        44 => v.note.set((a % 2 == 0).then(|| s.s.clone())),
        45 => {
            if let Some(mut n) = v.note.as_mut() {
                n.push_str(&s.s);
            }
        }
        46 => drop(v.note.replace(s.s.clone())),
        // Maps.
        47 => drop(v.tags.insert(format!("k{a}"), s.s.clone())),
        48 => drop(v.tags.remove(&format!("k{a}"))),
        49 => v.tags.entry(format!("k{a}")).or_default().push_str(&s.s),
        50 => {
            if let Some(mut t) = v.tags.get_mut(&format!("k{b}")) {
                t.push_str(&s.s);
            }
        }
        51 => v.tags.retain(|k, _| k.len() % 2 == a % 2),
        52 => {
            for (_, mut t) in v.tags.iter_mut() {
                t.push('x');
            }
        }
        53 => *v.counts.entry(format!("c{a}")).or_default() += 1,
        54 => drop(v.counts.remove(&format!("c{b}"))),
        55 => v.tags.clear(),
        // Sets, Box.
        56 => drop(v.set.insert(a as u8)), // fallback (a set is one value)
        57 => drop(v.set.remove(&(b as u8))),
        58 => edit_item(v.boxed, s),
        // Enums: variant changes and edits inside a variant.
        59 => v.ext.set(match a % 4 {
            0 => External::A,
            1 => External::B {
                x: s.s.clone(),
                n: b as u32,
            },
            2 => External::C(s.s.clone(), b as u32),
            _ => External::D(item(s)),
        }),
        60 => match v.ext.as_mut() {
            ExternalMut::B { mut x, mut n } => {
                x.push_str(&s.s);
                n += 1;
            }
            ExternalMut::C(mut x, _) => x.push_str(&s.s),
            ExternalMut::D(p) => edit_item(p, s),
            ExternalMut::A => {}
        },
        61 => v.int.set(match a % 3 {
            0 => Internal::Idle,
            1 => Internal::Busy { x: s.s.clone() },
            _ => Internal::Holding(item(s)),
        }),
        62 => match v.int.as_mut() {
            InternalMut::Busy { mut x } => x.push_str(&s.s),
            InternalMut::Holding(p) => edit_item(p, s),
            InternalMut::Idle => {}
        },
        63 => v.adj.set(match a % 4 {
            0 => Adjacent::A,
            1 => Adjacent::B {
                long_name: s.s.clone(),
            },
            2 => Adjacent::C(s.s.clone(), 1),
            _ => Adjacent::D(item(s)),
        }),
        64 => match v.adj.as_mut() {
            AdjacentMut::B { mut long_name } => long_name.push_str(&s.s),
            AdjacentMut::C(_, mut n) => n += 1,
            AdjacentMut::D(p) => edit_item(p, s),
            AdjacentMut::A => {}
        },
        65 => match v.untagged.as_mut() {
            UntaggedMut::B { mut x } => x.push_str(&s.s),
            UntaggedMut::C(mut x, mut n) => {
                x.push_str(&s.s);
                n += 1;
            }
        },
        66 => {
            *v.untagged = if a % 2 == 0 {
                Untagged::B { x: s.s.clone() }
            } else {
                Untagged::C(s.s.clone(), 2)
            }
        } // fallback
        67 => {
            if let External::C(x, _) = &mut *v.ext {
                x.push('!'); // fallback inside an enum
            }
        }
        // Tuple and newtype structs, unit, opaque, `with`, Value, skipped.
        68 => v.pair.0.push_str(&s.s),
        69 => v.pair.1 += 1,
        70 => v.id.0.push_str(&s.s),
        71 => v.unit.set(Unit),
        72 => v.opaque.update(|o| o.push((a as u8, b as u8))),
        73 => v.when += a as u64,
        74 => v.any.set(json!({"k": s.s, "n": [a, b]})),
        75 => {
            if let Some(mut n) = v.any.member("n") {
                let _ = n.push(json!(a));
            }
        }
        76 => {
            if let Some(mut k) = v.any.member("k") {
                let _ = k.push_str(&s.s);
            }
        }
        77 => *v.cache += 1,
        78 => {
            let mut lane = t.get().clone();
            lane.count += 1;
            lane.items.push(item(s));
            t.state().set(lane); // the whole struct, field by field
        }
        79 => t.edit(|all| all.text.push('~')), // the whole value's fallback
        80 => v.queue.retain(|q| q.len() % 2 == a % 2),
        _ => {}
    }
}

pub const KINDS: u8 = 81;
