//! A location reset to the value the replicas hold sends nothing, and a reassignment after
//! edits sends no more than the snapshot diff of what changed: each case flushed, replayed on
//! a replica, and its ops compared with `chord::diff` of the JSON before and after.

use std::collections::BTreeMap;

use chord::{apply, path, track, Op, Tracked, Tracker};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
struct Game {
    xs: Vec<u32>,
    title: String,
    round: u32,
    players: BTreeMap<String, Player>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
struct Player {
    name: String,
    score: i64,
    answers: Vec<String>,
}

fn player(name: &str, score: i64) -> Player {
    Player {
        name: name.into(),
        score,
        answers: vec!["a".into(), "b".into()],
    }
}

/// A tracker of `game` with its base batch sent, and the replica that holds it.
fn stream(game: Game) -> (Tracker<Game>, Option<Value>) {
    let mut t = track(game);
    let mut replica = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();
    (t, replica)
}

/// Flushes, checks that the replica follows and that the batch is no larger than the
/// snapshot diff of the same change (as JSON text with full paths), and returns the ops.
fn flush(t: &mut Tracker<Game>, replica: &mut Option<Value>) -> Vec<Op> {
    let before = replica.clone().unwrap();
    let ops = t.flush().unwrap();
    apply(replica, ops.clone()).unwrap();
    let after = serde_json::to_value(t.get()).unwrap();
    assert_eq!(replica.as_ref(), Some(&after), "after {ops:?}");
    let snapshot = chord::diff(&before, &after);
    let bytes = |ops: &[Op]| serde_json::to_string(ops).unwrap().len();
    assert!(
        bytes(&ops) <= bytes(&snapshot),
        "sent {ops:?}, the snapshot diff is {snapshot:?}"
    );
    ops
}

#[test]
fn a_push_then_a_set_back_to_the_accepted_empty_list_sends_nothing() {
    let (mut t, mut replica) = stream(Game::default());
    let mut s = t.state();
    s.xs.push(7);
    s.xs.set(vec![]);
    assert_eq!(flush(&mut t, &mut replica), []);
}

#[test]
fn a_push_then_a_set_back_to_the_accepted_list_sends_nothing() {
    let (mut t, mut replica) = stream(Game {
        xs: vec![1, 2],
        ..Game::default()
    });
    let mut s = t.state();
    s.xs.push(3);
    s.xs.insert(0, 9);
    s.xs.set(vec![1, 2]);
    assert_eq!(flush(&mut t, &mut replica), []);
}

#[test]
fn an_append_then_a_set_back_to_the_accepted_text_sends_nothing() {
    let (mut t, mut replica) = stream(Game {
        title: "quiz".into(),
        ..Game::default()
    });
    let mut s = t.state();
    s.title.push_str(" night");
    s.title.set("quiz".to_owned());
    assert_eq!(flush(&mut t, &mut replica), []);
}

#[test]
fn a_counter_moved_and_set_back_sends_nothing() {
    let (mut t, mut replica) = stream(Game {
        round: 3,
        ..Game::default()
    });
    let mut s = t.state();
    s.round += 1;
    s.round.set(3);
    assert_eq!(flush(&mut t, &mut replica), []);
}

#[test]
fn a_member_edited_then_inserted_fresh_sends_the_fields_that_differ() {
    let players = BTreeMap::from([("p3".to_owned(), player("Ann", 10))]);
    let (mut t, mut replica) = stream(Game {
        players,
        ..Game::default()
    });
    let mut s = t.state();
    if let Some(mut p) = s.players.get_mut("p3") {
        p.score += 5;
        p.answers.push("c".into());
    }
    s.players.insert("p3".into(), player("Ann", 11));
    assert_eq!(
        flush(&mut t, &mut replica),
        [Op::Set(path!["players", "p3", "score"], json!(11))]
    );
}

#[test]
fn a_member_edited_then_inserted_back_as_it_was_sends_nothing() {
    let players = BTreeMap::from([("p3".to_owned(), player("Ann", 10))]);
    let (mut t, mut replica) = stream(Game {
        players,
        ..Game::default()
    });
    let mut s = t.state();
    if let Some(mut p) = s.players.get_mut("p3") {
        p.name.push_str("e");
        p.score += 5;
    }
    s.players.insert("p3".into(), player("Ann", 10));
    assert_eq!(flush(&mut t, &mut replica), []);
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
struct Scalars {
    c: char,
    b: bool,
    i: i64,
    u: u64,
    small: i8,
    unit: (),
}

/// A reassigned `char`, `bool` or integer is compared and written typed (no `Value`): its
/// wire bytes are those of the encoded ops, with either number spelling, for negative
/// numbers, the ends of the JavaScript-safe range and characters that need escaping.
#[test]
fn reassigned_scalars_write_the_encoders_bytes() {
    use chord::wire::Numbers;
    use chord::Encoder;
    for numbers in [Numbers::Serde, Numbers::JavaScript] {
        let mut by_ops = track(Scalars::default());
        let mut straight = track(Scalars::default());
        let (mut enc_ops, mut enc_wire) = (
            Encoder::new().numbers(numbers),
            Encoder::new().numbers(numbers),
        );
        let cases: [(char, bool, i64, u64, i8); 4] = [
            ('"', true, -1, 0, i8::MIN),
            (
                'é',
                false,
                -9_007_199_254_740_991,
                9_007_199_254_740_991,
                -1,
            ),
            ('\n', true, 9_007_199_254_740_991, 10, i8::MAX),
            ('😀', true, 0, 99, 0),
        ];
        for (c, b, i, u, small) in cases {
            for t in [&mut by_ops, &mut straight] {
                let mut s = t.state();
                s.c.set(c);
                s.b.set(b);
                s.i.set(i);
                s.u.set(u);
                s.small.set(small);
                s.unit.set(());
            }
            let ops = by_ops.flush().unwrap();
            let mut wire = Vec::new();
            straight.flush_into(&mut enc_wire, &mut wire).unwrap();
            let want = if ops.is_empty() {
                String::new()
            } else {
                enc_ops.encode(&ops).to_json()
            };
            assert_eq!(String::from_utf8(wire).unwrap(), want, "{numbers:?}");
        }
    }
}
