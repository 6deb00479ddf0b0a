//! Property tests for the tracker: random sequences of proxy mutations on typed structs and on
//! `serde_json::Value`, flushed at random points, encoded, sent as JSON text, decoded and
//! applied to a replica, which must equal `serde_json::to_value(&state)` after every flush.

use std::collections::BTreeMap;

use chord::{apply, track, Decoder, Encoder, Op, Tracked, Tracker};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct Doc {
    title_text: String,
    items: Vec<Item>,
    tags: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    maybe: Option<Item>,
    count: i64,
    meta: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sparse: Vec<u8>,
    #[serde(skip)]
    #[allow(dead_code)]
    local: u32,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Item {
    text: String,
    n: u32,
    sub: Vec<String>,
}

/// Text with ASCII, two-byte, three-byte and astral characters, quotes and newlines.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('b'),
            Just(' '),
            Just('é'),
            Just('€'),
            Just('😀'),
            Just('\u{10000}'),
            Just('"'),
            Just('\n'),
        ],
        0..6,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn item() -> impl Strategy<Value = Item> {
    (
        text(),
        any::<u32>(),
        proptest::collection::vec(text(), 0..3),
    )
        .prop_map(|(text, n, sub)| Item { text, n, sub })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A string edit: (kind, text, amount).
#[derive(Clone, Debug)]
enum TextEdit {
    Push(String),
    DropFront(usize),
    KeepLast(usize),
    Set(String),
    Window(usize, String),
    Insert(usize, String),
    Clear,
}

fn text_edit() -> impl Strategy<Value = TextEdit> {
    prop_oneof![
        3 => text().prop_map(TextEdit::Push),
        2 => (0usize..8).prop_map(TextEdit::DropFront),
        1 => (0usize..12).prop_map(TextEdit::KeepLast),
        2 => text().prop_map(TextEdit::Set),
        2 => (0usize..8, text()).prop_map(|(n, s)| TextEdit::Window(n, s)),
        1 => (0usize..8, text()).prop_map(|(n, s)| TextEdit::Insert(n, s)),
        1 => Just(TextEdit::Clear),
    ]
}

/// The byte offset of the `chars`-th character boundary, clamped.
fn boundary(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

fn edit_text(mut p: chord::proxy::TextProxy<'_>, e: &TextEdit) {
    match e {
        TextEdit::Push(s) => p.push_str(s),
        TextEdit::DropFront(n) => {
            let b = boundary(&p, *n);
            p.drop_front(b);
        }
        TextEdit::KeepLast(n) => p.keep_last(*n),
        TextEdit::Set(s) => p.set(s.clone()),
        TextEdit::Window(n, s) => {
            let b = boundary(&p, *n);
            let next = format!("{}{}", &p[b..], s);
            p.set(next);
        }
        TextEdit::Insert(n, s) => {
            let b = boundary(&p, *n);
            p.insert_str(b, s);
        }
        TextEdit::Clear => p.clear(),
    }
}

#[derive(Clone, Debug)]
enum Action {
    Title(TextEdit),
    Push(Item),
    Insert(usize, Item),
    Remove(usize),
    Pop,
    Truncate(usize),
    Drain(usize, usize),
    Splice(usize, usize, Vec<Item>),
    Retain(u8),
    SwapRemove(usize),
    Reverse,
    SetItems(Vec<Item>),
    ItemText(usize, TextEdit),
    ItemN(usize, u32),
    ItemSubPush(usize, String),
    ItemSubEdit(usize, usize, TextEdit),
    ItemSubRemove(usize, usize),
    SetItem(usize, Item),
    TagInsert(String, String),
    TagRemove(String),
    TagEdit(String, TextEdit),
    Note(Option<String>),
    NoteEdit(TextEdit),
    Maybe(Option<Item>),
    MaybeText(TextEdit),
    Count(i64),
    Meta(MetaAction),
    Sparse(Option<u8>),
    Flush,
    Rebase,
    Replace(Box<Doc>),
}

#[derive(Clone, Debug)]
enum MetaAction {
    Set(Value),
    Insert(String, Value),
    Remove(String),
    Push(Value),
    PushStr(String),
    MemberText(String, TextEdit),
    ElementSet(usize, Value),
    ArrayRemove(usize),
    ArrayInsert(usize, Value),
}

fn meta_action() -> impl Strategy<Value = MetaAction> {
    prop_oneof![
        1 => json_value().prop_map(MetaAction::Set),
        2 => ("[a-c]{1,2}", json_value()).prop_map(|(k, v)| MetaAction::Insert(k, v)),
        1 => "[a-c]{1,2}".prop_map(MetaAction::Remove),
        2 => json_value().prop_map(MetaAction::Push),
        1 => text().prop_map(MetaAction::PushStr),
        2 => ("[a-c]{1,2}", text_edit()).prop_map(|(k, e)| MetaAction::MemberText(k, e)),
        1 => (0usize..4, json_value()).prop_map(|(i, v)| MetaAction::ElementSet(i, v)),
        1 => (0usize..4).prop_map(MetaAction::ArrayRemove),
        1 => (0usize..4, json_value()).prop_map(|(i, v)| MetaAction::ArrayInsert(i, v)),
    ]
}

fn doc() -> impl Strategy<Value = Doc> {
    (
        text(),
        proptest::collection::vec(item(), 0..4),
        proptest::collection::btree_map("[a-c]", text(), 0..3),
        proptest::option::of(text()),
        proptest::option::of(item()),
        any::<i64>(),
        json_value(),
    )
        .prop_map(|(title_text, items, tags, note, maybe, count, meta)| Doc {
            title_text,
            items,
            tags,
            note,
            maybe,
            count,
            meta,
            sparse: Vec::new(),
            local: 0,
        })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => text_edit().prop_map(Action::Title),
        3 => item().prop_map(Action::Push),
        3 => (0usize..6, item()).prop_map(|(i, it)| Action::Insert(i, it)),
        2 => (0usize..6).prop_map(Action::Remove),
        1 => Just(Action::Pop),
        1 => (0usize..6).prop_map(Action::Truncate),
        1 => (0usize..6, 0usize..6).prop_map(|(a, b)| Action::Drain(a, b)),
        2 => (0usize..6, 0usize..6, proptest::collection::vec(item(), 0..3))
            .prop_map(|(a, b, v)| Action::Splice(a, b, v)),
        1 => any::<u8>().prop_map(Action::Retain),
        1 => (0usize..6).prop_map(Action::SwapRemove),
        1 => Just(Action::Reverse),
        1 => proptest::collection::vec(item(), 0..4).prop_map(Action::SetItems),
        4 => (0usize..6, text_edit()).prop_map(|(i, e)| Action::ItemText(i, e)),
        2 => (0usize..6, any::<u32>()).prop_map(|(i, n)| Action::ItemN(i, n)),
        2 => (0usize..6, text()).prop_map(|(i, s)| Action::ItemSubPush(i, s)),
        2 => (0usize..6, 0usize..4, text_edit()).prop_map(|(i, j, e)| Action::ItemSubEdit(i, j, e)),
        1 => (0usize..6, 0usize..4).prop_map(|(i, j)| Action::ItemSubRemove(i, j)),
        1 => (0usize..6, item()).prop_map(|(i, it)| Action::SetItem(i, it)),
        2 => ("[a-d]", text()).prop_map(|(k, v)| Action::TagInsert(k, v)),
        1 => "[a-d]".prop_map(Action::TagRemove),
        2 => ("[a-d]", text_edit()).prop_map(|(k, e)| Action::TagEdit(k, e)),
        2 => proptest::option::of(text()).prop_map(Action::Note),
        2 => text_edit().prop_map(Action::NoteEdit),
        1 => proptest::option::of(item()).prop_map(Action::Maybe),
        2 => text_edit().prop_map(Action::MaybeText),
        2 => any::<i64>().prop_map(Action::Count),
        4 => meta_action().prop_map(Action::Meta),
        1 => proptest::option::of(any::<u8>()).prop_map(Action::Sparse),
        5 => Just(Action::Flush),
        1 => Just(Action::Rebase),
        1 => doc().prop_map(|d| Action::Replace(Box::new(d))),
    ]
}

fn run_meta(mut meta: chord::proxy::ValueProxy<'_>, a: &MetaAction) {
    // Type mismatches are errors by design; the property is that the replica still agrees.
    match a {
        MetaAction::Set(v) => meta.set(v.clone()),
        MetaAction::Insert(k, v) => drop(meta.insert(k.clone(), v.clone())),
        MetaAction::Remove(k) => drop(meta.remove(k)),
        MetaAction::Push(v) => drop(meta.push(v.clone())),
        MetaAction::PushStr(s) => drop(meta.push_str(s)),
        MetaAction::MemberText(k, e) => {
            if let Some(mut m) = meta.member(k) {
                if let Some(t) = m.as_text() {
                    edit_text(t, e);
                }
            }
        }
        MetaAction::ElementSet(i, v) => {
            if let Some(mut el) = meta.element(*i) {
                el.set(v.clone());
            }
        }
        MetaAction::ArrayRemove(i) => {
            if let Some(mut arr) = meta.as_array() {
                if *i < arr.len() {
                    arr.remove(*i);
                }
            }
        }
        MetaAction::ArrayInsert(i, v) => {
            if let Some(mut arr) = meta.as_array() {
                let i = (*i).min(arr.len());
                arr.insert(i, v.clone());
            }
        }
    }
}

fn run(t: &mut Tracker<Doc>, a: &Action) {
    let len = t.items.len();
    let mut s = t.state();
    match a {
        Action::Title(e) => edit_text(s.title_text, e),
        Action::Push(it) => s.items.push(it.clone()),
        Action::Insert(i, it) => s.items.insert((*i).min(len), it.clone()),
        Action::Remove(i) if *i < len => drop(s.items.remove(*i)),
        Action::Pop => drop(s.items.pop()),
        Action::Truncate(n) => s.items.truncate(*n),
        Action::Drain(a, b) => {
            let (a, b) = ((*a).min(len), (*b).min(len));
            drop(s.items.drain(a.min(b)..a.max(b)));
        }
        Action::Splice(a, b, v) => {
            let (a, b) = ((*a).min(len), (*b).min(len));
            drop(s.items.splice(a.min(b)..a.max(b), v.clone()));
        }
        Action::Retain(mask) => {
            let mut k = 0;
            s.items.retain(|_| {
                k += 1;
                mask & (1 << (k % 8)) != 0
            });
        }
        Action::SwapRemove(i) if *i < len => drop(s.items.swap_remove(*i)),
        Action::Reverse => s.items.reverse(),
        Action::SetItems(v) => s.items.set(v.clone()),
        Action::ItemText(i, e) if *i < len => edit_text(s.items.at(*i).text, e),
        Action::ItemN(i, n) if *i < len => s.items.at(*i).n.set(*n),
        Action::ItemSubPush(i, x) if *i < len => s.items.at(*i).sub.push(x.clone()),
        Action::ItemSubEdit(i, j, e) if *i < len => {
            let mut items = s.items;
            let it = items.at(*i);
            let mut sub = it.sub;
            if let Some(p) = sub.get_mut(*j) {
                edit_text(p, e);
            }
        }
        Action::ItemSubRemove(i, j) if *i < len => {
            let mut items = s.items;
            let it = items.at(*i);
            let mut sub = it.sub;
            if *j < sub.len() {
                sub.remove(*j);
            }
        }
        Action::SetItem(i, it) if *i < len => s.items.at(*i).set(it.clone()),
        Action::TagInsert(k, v) => drop(s.tags.insert(k.clone(), v.clone())),
        Action::TagRemove(k) => drop(s.tags.remove(k)),
        Action::TagEdit(k, e) => {
            let mut tags = s.tags;
            if let Some(p) = tags.get_mut(k) {
                edit_text(p, e);
            }
        }
        Action::Note(n) => s.note.set(n.clone()),
        Action::NoteEdit(e) => {
            let mut note = s.note;
            if let Some(p) = note.as_mut() {
                edit_text(p, e);
            }
        }
        Action::Maybe(m) => s.maybe.set(m.clone()),
        Action::MaybeText(e) => {
            let mut maybe = s.maybe;
            if let Some(it) = maybe.as_mut() {
                edit_text(it.text, e);
            }
        }
        Action::Count(c) => s.count.set(*c),
        Action::Meta(m) => run_meta(s.meta, m),
        Action::Sparse(Some(x)) => s.sparse.push(*x),
        Action::Sparse(None) => s.sparse.clear(),
        Action::Flush | Action::Rebase | Action::Replace(_) => {
            unreachable!("handled by the caller")
        }
        _ => {} // an index out of range: nothing to do
    }
}

/// Producer and replica, joined by the wire codec and JSON text.
struct Stream<T: Tracked> {
    t: Tracker<T>,
    enc: Encoder,
    dec: Decoder,
    replica: Option<Value>,
    ops_total: usize,
}

impl<T: Tracked + Serialize> Stream<T> {
    fn new(value: T) -> Self {
        let mut t = track(value);
        // Integers span all of i64 here: this stream checks exact replication between Rust
        // replicas (JS-safe mode has its own property below).
        t.set_js_safe(false);
        Stream {
            t,
            enc: Encoder::new(),
            dec: Decoder::new(),
            replica: None,
            ops_total: 0,
        }
    }

    fn flush(&mut self) -> Result<(), TestCaseError> {
        let ops = self.t.flush().unwrap();
        if let Some(at) = ops.iter().position(|op| matches!(op, Op::Replace(_))) {
            prop_assert_eq!(at, 0, "r only at index 0: {:?}", ops);
            prop_assert_eq!(ops.len(), 1, "a base batch is one r: {:?}", ops);
        }
        let wire = self.enc.encode(&ops).to_json();
        let decoded = self.dec.decode_str(&wire).unwrap();
        prop_assert_eq!(&decoded, &ops);
        apply(&mut self.replica, decoded).unwrap();
        let want = serde_json::to_value(self.t.get()).unwrap();
        prop_assert_eq!(self.replica.as_ref(), Some(&want), "after {:?}", ops);
        self.ops_total += ops.len();
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn typed_mutations_replicate_exactly(
        start in doc(),
        actions in proptest::collection::vec(action(), 1..40),
    ) {
        let mut s = Stream::new(start);
        s.flush()?;
        for a in &actions {
            match a {
                Action::Flush => s.flush()?,
                Action::Rebase => s.t.rebase(),
                Action::Replace(d) => s.t.replace((**d).clone()),
                a => run(&mut s.t, a),
            }
        }
        s.flush()?;
        // Nothing left over: a second flush is empty.
        prop_assert!(s.t.flush().unwrap().is_empty());
    }
}

/// A path to a node of `v`, chosen by `pick`, with that node's type.
fn pick_path(v: &Value, pick: usize) -> Vec<PathStep> {
    let mut all = Vec::new();
    fn walk(v: &Value, at: &mut Vec<PathStep>, all: &mut Vec<Vec<PathStep>>) {
        all.push(at.clone());
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    at.push(PathStep::Key(k.clone()));
                    walk(c, at, all);
                    at.pop();
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate() {
                    at.push(PathStep::Index(i));
                    walk(c, at, all);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    walk(v, &mut Vec::new(), &mut all);
    all.swap_remove(pick % all.len())
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn run_dynamic(t: &mut Tracker<Value>, pick: usize, a: &MetaAction) {
    let steps = pick_path(t.get(), pick);
    let root = t.state();
    fn descend<'a>(p: chord::proxy::ValueProxy<'a>, steps: &'a [PathStep], a: &MetaAction) {
        match steps.split_first() {
            None => run_meta(p, a),
            Some((PathStep::Key(k), rest)) => {
                let mut p = p;
                if let Some(child) = p.member(k) {
                    descend(child, rest, a);
                }
            }
            Some((PathStep::Index(i), rest)) => {
                let mut p = p;
                if let Some(child) = p.element(*i) {
                    descend(child, rest, a);
                }
            }
        }
    }
    descend(root, &steps, a);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn untyped_mutations_replicate_exactly(
        start in json_value(),
        actions in proptest::collection::vec((any::<usize>(), meta_action(), 0u8..6), 1..30),
    ) {
        let mut s = Stream::new(start);
        s.flush()?;
        for (pick, a, flush) in &actions {
            run_dynamic(&mut s.t, *pick, a);
            if *flush == 0 {
                s.flush()?;
            }
        }
        s.flush()?;
        prop_assert!(s.t.flush().unwrap().is_empty());
    }
}

/// A feed with no field serde may skip: a flush interval of text edits and removals alone
/// records nothing that can fail, so its flush forgets each record as it writes it (one
/// walk). Inserts and sets, rarer here, make the next flush take the two walks; the property
/// covers both and the switches between them.
#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Feed {
    title: String,
    entries: Vec<Entry>,
    tags: BTreeMap<String, String>,
    seen: u32,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Entry {
    text: String,
    parts: Vec<String>,
}

fn entry() -> impl Strategy<Value = Entry> {
    (text(), proptest::collection::vec(text(), 0..3))
        .prop_map(|(text, parts)| Entry { text, parts })
}

#[derive(Clone, Debug)]
enum FeedAction {
    Title(TextEdit),
    EntryText(usize, TextEdit),
    PartText(usize, usize, TextEdit),
    TagText(String, TextEdit),
    Remove(usize),
    Pop,
    Truncate(usize),
    RemovePart(usize, usize),
    TagRemove(String),
    // May fail at flush (it serializes a value):
    Push(Entry),
    TagInsert(String, String),
    Seen(u32),
    Flush,
}

fn feed_action() -> impl Strategy<Value = FeedAction> {
    prop_oneof![
        4 => text_edit().prop_map(FeedAction::Title),
        4 => (0usize..5, text_edit()).prop_map(|(i, e)| FeedAction::EntryText(i, e)),
        3 => (0usize..5, 0usize..3, text_edit()).prop_map(|(i, j, e)| FeedAction::PartText(i, j, e)),
        2 => ("[a-c]", text_edit()).prop_map(|(k, e)| FeedAction::TagText(k, e)),
        1 => (0usize..5).prop_map(FeedAction::Remove),
        1 => Just(FeedAction::Pop),
        1 => (0usize..5).prop_map(FeedAction::Truncate),
        1 => (0usize..5, 0usize..3).prop_map(|(i, j)| FeedAction::RemovePart(i, j)),
        1 => "[a-c]".prop_map(FeedAction::TagRemove),
        1 => entry().prop_map(FeedAction::Push),
        1 => ("[a-c]", text()).prop_map(|(k, v)| FeedAction::TagInsert(k, v)),
        1 => any::<u32>().prop_map(FeedAction::Seen),
        6 => Just(FeedAction::Flush),
    ]
}

fn run_feed(t: &mut Tracker<Feed>, a: &FeedAction) {
    let len = t.entries.len();
    let mut s = t.state();
    match a {
        FeedAction::Title(e) => edit_text(s.title, e),
        FeedAction::EntryText(i, e) if *i < len => edit_text(s.entries.at(*i).text, e),
        FeedAction::PartText(i, j, e) if *i < len => {
            let mut entries = s.entries;
            let mut parts = entries.at(*i).parts;
            if let Some(p) = parts.get_mut(*j) {
                edit_text(p, e);
            }
        }
        FeedAction::TagText(k, e) => {
            if let Some(p) = s.tags.get_mut(k) {
                edit_text(p, e);
            }
        }
        FeedAction::Remove(i) if *i < len => drop(s.entries.remove(*i)),
        FeedAction::Pop => drop(s.entries.pop()),
        FeedAction::Truncate(n) => s.entries.truncate(*n),
        FeedAction::RemovePart(i, j) if *i < len => {
            let mut entries = s.entries;
            let mut parts = entries.at(*i).parts;
            if *j < parts.len() {
                parts.remove(*j);
            }
        }
        FeedAction::TagRemove(k) => drop(s.tags.remove(k)),
        FeedAction::Push(e) => s.entries.push(e.clone()),
        FeedAction::TagInsert(k, v) => drop(s.tags.insert(k.clone(), v.clone())),
        FeedAction::Seen(n) => s.seen.set(*n),
        FeedAction::Flush => unreachable!("handled by the caller"),
        _ => {} // an index out of range: nothing to do
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Every flush, through `flush` (then encoded) and, on a twin tracker fed the same
    /// actions, through `flush_into`: the same bytes, and a replica equal to the state.
    #[test]
    fn flushes_of_text_edits_and_removals_replicate_exactly(
        start in (text(), proptest::collection::vec(entry(), 0..5),
                  proptest::collection::btree_map("[a-c]", text(), 0..3))
            .prop_map(|(title, entries, tags)| Feed { title, entries, tags, seen: 0 }),
        actions in proptest::collection::vec(feed_action(), 1..60),
    ) {
        let mut s = Stream::new(start.clone());
        let mut twin = track(start);
        let mut twin_enc = Encoder::new();
        let mut wire = Vec::new();
        let mut check = |s: &mut Stream<Feed>, twin: &mut Tracker<Feed>| -> Result<(), TestCaseError> {
            let ops = s.t.flush().unwrap();
            let want = if ops.is_empty() { String::new() } else { s.enc.encode(&ops).to_json() };
            wire.clear();
            twin.flush_into(&mut twin_enc, &mut wire).unwrap();
            prop_assert_eq!(std::str::from_utf8(&wire).unwrap(), want.as_str());
            if !ops.is_empty() {
                apply(&mut s.replica, s.dec.decode_str(&want).unwrap()).unwrap();
            }
            let state = serde_json::to_value(s.t.get()).unwrap();
            prop_assert_eq!(s.replica.as_ref(), Some(&state), "after {:?}", ops);
            Ok(())
        };
        check(&mut s, &mut twin)?;
        for a in &actions {
            match a {
                FeedAction::Flush => check(&mut s, &mut twin)?,
                a => {
                    run_feed(&mut s.t, a);
                    run_feed(&mut twin, a);
                }
            }
        }
        check(&mut s, &mut twin)?;
        // Nothing left over on either: a second flush is empty.
        prop_assert!(s.t.flush().unwrap().is_empty());
        wire.clear();
        prop_assert_eq!(twin.flush_into(&mut twin_enc, &mut wire).unwrap(), 0);
    }
}

#[test]
fn a_root_array_splice_is_replayed() {
    // The design's classic hole: a splice on a root array.
    let mut s = Stream::new(json!([1, 2, 3]));
    s.flush().unwrap();
    s.t.state().as_array().unwrap().insert(0, json!(0));
    s.flush().unwrap();
    s.t.state().as_array().unwrap().clear();
    s.flush().unwrap();
    assert!(s.ops_total >= 3);
}
