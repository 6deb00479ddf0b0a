//! Structured mutations of a tracked struct (a String, a Vec<String>, an Option<String>, a
//! BTreeMap<String, u32> and a serde_json::Value), made through the tracker's proxies and
//! flushed at random points; every batch is encoded by one `Encoder`, sent as JSON text,
//! decoded by one `Decoder` and applied to a replica.
//!
//! Invariants, after every flush: the replica equals `serde_json::to_value(&state)`; the
//! decoded batch equals the flushed one; an `r` comes only alone, as a base batch; and after
//! the last flush, another one is empty. The run can start from a replica that holds other
//! JSON (`Tracker::resume_from`), so the first flush is then a structural diff.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use chord::{apply, track, Decoder, Encoder, Op, Tracked, Tracker};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde_json::Value;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct State {
    text: String,
    list: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    counts: BTreeMap<String, u32>,
    meta: Value,
}

/// A character: the interesting ones often, any other now and then.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Ch {
    A,
    B,
    Space,
    Acute,
    Euro,
    Emoji,
    Astral,
    Quote,
    Newline,
    Any(char),
}

#[derive(Arbitrary, Clone, Debug)]
struct Text(Vec<Ch>);

impl Text {
    fn string(&self) -> String {
        self.0
            .iter()
            .map(|c| match *c {
                Ch::A => 'a',
                Ch::B => 'b',
                Ch::Space => ' ',
                Ch::Acute => '\u{e9}',
                Ch::Euro => '\u{20ac}',
                Ch::Emoji => '\u{1F600}',
                Ch::Astral => '\u{10000}',
                Ch::Quote => '"',
                Ch::Newline => '\n',
                Ch::Any(c) => c,
            })
            .collect()
    }
}

/// A member name: a few plain ones, the reserved ones (no path may name them), digits (a
/// numeric segment on an object names the member spelled with them), or any.
#[derive(Arbitrary, Clone, Debug)]
enum Key {
    A,
    B,
    C,
    Proto,
    Constructor,
    Prototype,
    Zero,
    Ten,
    Empty,
    Any(String),
}

impl Key {
    fn string(&self) -> String {
        match self {
            Key::A => "a",
            Key::B => "b",
            Key::C => "c",
            Key::Proto => "__proto__",
            Key::Constructor => "constructor",
            Key::Prototype => "prototype",
            Key::Zero => "0",
            Key::Ten => "10",
            Key::Empty => "",
            Key::Any(s) => s,
        }
        .to_owned()
    }
}

#[derive(Arbitrary, Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Text),
    Arr(Vec<Json>),
    Obj(Vec<(Key, Json)>),
}

/// Values nest at most this deep (so that the document stays far within `Limits`' depth).
const MAX_JSON_DEPTH: usize = 5;

impl Json {
    fn value(&self) -> Value {
        self.value_at(0)
    }

    fn value_at(&self, depth: usize) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::Float(f) => Value::from(*f), // non-finite: null
            Json::Str(t) => Value::String(t.string()),
            _ if depth >= MAX_JSON_DEPTH => Value::Null,
            Json::Arr(items) => items.iter().map(|j| j.value_at(depth + 1)).collect(),
            Json::Obj(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, j)| (k.string(), j.value_at(depth + 1)))
                    .collect(),
            ),
        }
    }
}

#[derive(Arbitrary, Clone, Debug)]
struct Start {
    text: Text,
    list: Vec<Text>,
    note: Option<Text>,
    counts: Vec<(Key, u32)>,
    meta: Json,
}

impl Start {
    fn state(&self) -> State {
        State {
            text: self.text.string(),
            list: self.list.iter().map(Text::string).collect(),
            note: self.note.as_ref().map(Text::string),
            counts: self.counts.iter().map(|(k, n)| (k.string(), *n)).collect(),
            meta: self.meta.value(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum TextEdit {
    Push(Text),
    PushChar(char),
    /// Drops this many characters from the front.
    DropFront(u8),
    KeepLast(u8),
    Set(Text),
    Clear,
    /// Truncates to this many characters.
    Truncate(u8),
    InsertStr(u8, Text),
    /// A rolling window: drop this many characters, append the text, as one assignment.
    Window(u8, Text),
    Uppercase,
}

/// The byte offset of the `chars`-th character boundary, clamped to the end.
fn boundary(s: &str, chars: u8) -> usize {
    s.char_indices()
        .nth(usize::from(chars))
        .map_or(s.len(), |(i, _)| i)
}

fn edit_text(mut p: chord::proxy::TextProxy<'_>, e: &TextEdit) {
    match e {
        TextEdit::Push(t) => p.push_str(&t.string()),
        TextEdit::PushChar(c) => p.push(*c),
        TextEdit::DropFront(n) => {
            let b = boundary(&p, *n);
            p.drop_front(b);
        }
        TextEdit::KeepLast(n) => p.keep_last(usize::from(*n)),
        TextEdit::Set(t) => p.set(t.string()),
        TextEdit::Clear => p.clear(),
        TextEdit::Truncate(n) => {
            let b = boundary(&p, *n);
            p.truncate(b);
        }
        TextEdit::InsertStr(n, t) => {
            let b = boundary(&p, *n);
            p.insert_str(b, &t.string());
        }
        TextEdit::Window(n, t) => {
            let b = boundary(&p, *n);
            let next = format!("{}{}", &p[b..], t.string());
            p.set(next);
        }
        TextEdit::Uppercase => p.edit(|s| s.make_ascii_uppercase()),
    }
}

#[derive(Arbitrary, Debug)]
enum ListAction {
    Push(Text),
    Insert(u8, Text),
    Remove(u8),
    Pop,
    Truncate(u8),
    Drain(u8, u8),
    Splice(u8, u8, Vec<Text>),
    Retain(u8),
    SwapRemove(u8),
    Reverse,
    Set(Vec<Text>),
    Clear,
    Extend(Vec<Text>),
    Resize(u8, Text),
    Sort,
    Dedup,
    Edit(u8, TextEdit),
    EditLast(TextEdit),
}

fn run_list(mut l: chord::proxy::VecProxy<'_, String>, a: &ListAction) {
    let len = l.len();
    let at = |i: u8| usize::from(i).min(len);
    let texts = |v: &[Text]| v.iter().map(Text::string).collect::<Vec<_>>();
    match a {
        ListAction::Push(t) => l.push(t.string()),
        ListAction::Insert(i, t) => l.insert(at(*i), t.string()),
        ListAction::Remove(i) if usize::from(*i) < len => drop(l.remove(usize::from(*i))),
        ListAction::Pop => drop(l.pop()),
        ListAction::Truncate(n) => l.truncate(usize::from(*n)),
        ListAction::Drain(a, b) => {
            let (a, b) = (at(*a), at(*b));
            drop(l.drain(a.min(b)..a.max(b)));
        }
        ListAction::Splice(a, b, v) => {
            let (a, b) = (at(*a), at(*b));
            drop(l.splice(a.min(b)..a.max(b), texts(v)));
        }
        ListAction::Retain(mask) => {
            let mut k = 0;
            l.retain(|_| {
                k += 1;
                mask & (1 << (k % 8)) != 0
            });
        }
        ListAction::SwapRemove(i) if usize::from(*i) < len => {
            drop(l.swap_remove(usize::from(*i)));
        }
        ListAction::Reverse => l.reverse(),
        ListAction::Set(v) => l.set(texts(v)),
        ListAction::Clear => l.clear(),
        ListAction::Extend(v) => l.extend(texts(v)),
        ListAction::Resize(n, t) => l.resize(usize::from(*n % 16), t.string()),
        ListAction::Sort => l.sort(),
        ListAction::Dedup => l.dedup(),
        ListAction::Edit(i, e) => {
            if let Some(p) = l.get_mut(usize::from(*i)) {
                edit_text(p, e);
            }
        }
        ListAction::EditLast(e) => {
            if let Some(p) = l.last_mut() {
                edit_text(p, e);
            }
        }
        ListAction::Remove(_) | ListAction::SwapRemove(_) => {} // out of range
    }
}

#[derive(Arbitrary, Debug)]
enum NoteAction {
    Set(Option<Text>),
    Edit(TextEdit),
    Take,
    GetOrInsert(Text, TextEdit),
}

#[derive(Arbitrary, Debug)]
enum CountsAction {
    Insert(Key, u32),
    Remove(Key),
    Set(Key, u32),
    Add(Key, u32),
}

#[derive(Arbitrary, Debug)]
enum MetaAction {
    Set(Json),
    Insert(Key, Json),
    Remove(Key),
    Push(Json),
    PushStr(Text),
    Text(TextEdit),
    ArrayRemove(u8),
    ArrayInsert(u8, Json),
    ArraySplice(u8, u8, Vec<Json>),
    ArrayReverse,
    ObjectClear,
}

fn run_meta(mut meta: chord::proxy::ValueProxy<'_>, a: &MetaAction) {
    // A type mismatch is an error by design: the property is that the replica still agrees.
    match a {
        MetaAction::Set(j) => meta.set(j.value()),
        MetaAction::Insert(k, j) => drop(meta.insert(k.string(), j.value())),
        MetaAction::Remove(k) => drop(meta.remove(&k.string())),
        MetaAction::Push(j) => drop(meta.push(j.value())),
        MetaAction::PushStr(t) => drop(meta.push_str(&t.string())),
        MetaAction::Text(e) => {
            if let Some(t) = meta.as_text() {
                edit_text(t, e);
            }
        }
        MetaAction::ArrayRemove(i) => {
            if let Some(mut arr) = meta.as_array() {
                if usize::from(*i) < arr.len() {
                    arr.remove(usize::from(*i));
                }
            }
        }
        MetaAction::ArrayInsert(i, j) => {
            if let Some(mut arr) = meta.as_array() {
                let i = usize::from(*i).min(arr.len());
                arr.insert(i, j.value());
            }
        }
        MetaAction::ArraySplice(a, b, items) => {
            if let Some(mut arr) = meta.as_array() {
                let (a, b) = (
                    usize::from(*a).min(arr.len()),
                    usize::from(*b).min(arr.len()),
                );
                let items = items.iter().map(Json::value);
                drop(arr.splice(a.min(b)..a.max(b), items));
            }
        }
        MetaAction::ArrayReverse => {
            if let Some(mut arr) = meta.as_array() {
                arr.reverse();
            }
        }
        MetaAction::ObjectClear => {
            if let Some(mut obj) = meta.as_object() {
                let keys: Vec<String> = obj.keys().cloned().collect();
                for k in keys.iter().rev() {
                    obj.remove(k);
                }
            }
        }
    }
}

/// Walks into `meta` by `steps` (each picks a member or an element by position, modulo the
/// container's size; a scalar ends the walk early), then runs `a` there.
fn run_meta_at(p: chord::proxy::ValueProxy<'_>, steps: &[u8], a: &MetaAction) {
    let Some((&step, rest)) = steps.split_first() else {
        return run_meta(p, a);
    };
    let mut p = p;
    match &*p {
        Value::Object(m) if !m.is_empty() => {
            let key = m.keys().nth(usize::from(step) % m.len()).cloned().unwrap();
            match p.member(&key) {
                Some(child) => run_meta_at(child, rest, a),
                None => unreachable!("the key was just read"),
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = usize::from(step) % items.len();
            match p.element(i) {
                Some(child) => run_meta_at(child, rest, a),
                None => unreachable!("the index was just read"),
            }
        }
        _ => run_meta(p, a),
    }
}

#[derive(Arbitrary, Debug)]
enum Action {
    Text(TextEdit),
    List(ListAction),
    Note(NoteAction),
    Counts(CountsAction),
    Meta(Vec<u8>, MetaAction),
    Flush,
    Rebase,
    Replace(Start),
}

#[derive(Arbitrary, Debug)]
struct Input {
    start: Start,
    /// What the replica holds at the start, when it is not the start value
    /// (`Tracker::resume_from`); `None` starts with `track` and a base batch.
    held: Option<Json>,
    actions: Vec<Action>,
}

fn run(t: &mut Tracker<State>, a: &Action) {
    let s = t.state();
    match a {
        Action::Text(e) => edit_text(s.text, e),
        Action::List(l) => run_list(s.list, l),
        Action::Note(n) => {
            let mut note = s.note;
            match n {
                NoteAction::Set(v) => note.set(v.as_ref().map(Text::string)),
                NoteAction::Edit(e) => {
                    if let Some(p) = note.as_mut() {
                        edit_text(p, e);
                    }
                }
                NoteAction::Take => drop(note.take()),
                NoteAction::GetOrInsert(t, e) => {
                    let p = note.get_or_insert_with(|| t.string());
                    edit_text(p, e);
                }
            }
        }
        Action::Counts(c) => {
            let mut counts = s.counts;
            match c {
                CountsAction::Insert(k, n) => drop(counts.insert(k.string(), *n)),
                CountsAction::Remove(k) => drop(counts.remove(&k.string())),
                CountsAction::Set(k, n) => {
                    let k = k.string();
                    if let Some(mut p) = counts.get_mut(&k) {
                        p.set(*n);
                    }
                }
                CountsAction::Add(k, n) => {
                    let k = k.string();
                    if let Some(mut p) = counts.get_mut(&k) {
                        p.update(|v| *v = v.wrapping_add(*n));
                    }
                }
            }
        }
        Action::Meta(steps, m) => run_meta_at(s.meta, steps, m),
        Action::Flush | Action::Rebase | Action::Replace(_) => unreachable!("the caller's"),
    }
}

/// Producer and replica, joined by the wire codec and JSON text.
struct Stream {
    t: Tracker<State>,
    enc: Encoder,
    dec: Decoder,
    replica: Option<Value>,
}

impl Stream {
    fn flush(&mut self) {
        let ops = self.t.flush().expect("a JSON-faithful state flushes");
        if let Some(at) = ops.iter().position(|op| matches!(op, Op::Replace(_))) {
            assert_eq!(at, 0, "an r only at index 0: {ops:?}");
            assert_eq!(ops.len(), 1, "a base batch is one r: {ops:?}");
        }
        let wire = self.enc.encode(&ops).to_json();
        let decoded = self
            .dec
            .decode_str(&wire)
            .expect("the decoder takes what the encoder gives");
        assert_eq!(decoded, ops, "decoded from {wire}");
        if let Err(e) = apply(&mut self.replica, decoded) {
            panic!("the replica refused {wire}: {e}");
        }
        let want = serde_json::to_value(self.t.get()).unwrap();
        assert_eq!(self.replica.as_ref(), Some(&want), "after {wire}");
    }
}

fuzz_target!(|input: Input| {
    let state = input.start.state();
    let (mut t, replica) = match &input.held {
        None => (track(state), None),
        Some(held) => {
            let held = held.value();
            (Tracker::resume_from(state, held.clone()), Some(held))
        }
    };
    // Exact replication between Rust replicas: integers span all of u64/i64 here.
    t.set_js_safe(false);
    let mut s = Stream {
        t,
        enc: Encoder::new(),
        dec: Decoder::new(),
        replica,
    };
    for a in &input.actions {
        match a {
            Action::Flush => s.flush(),
            Action::Rebase => s.t.rebase(),
            Action::Replace(start) => s.t.replace(start.state()),
            a => run(&mut s.t, a),
        }
    }
    s.flush();
    assert!(s.t.flush().unwrap().is_empty(), "a second flush is empty");
});
