//! Which public types cross threads: everything a service shares between request handlers
//! (behind an `Arc`, an `RwLock` or a channel) is `Send + Sync`, the tracker included, and a
//! tracker shared the way an axum service shares it works from several threads.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, RwLock};

use chord::{apply, track, Decoder, Encoder, Tracked, Tracker};
use serde::Serialize;
use serde_json::Value;

fn send_sync<T: Send + Sync>() {}

/// A state with a field of every kind the tracker models, so that each kind's node is in it.
#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Lane {
    answer: String,
    transcript: Vec<Entry>,
    log: VecDeque<String>,
    agents: HashMap<String, Entry>,
    tags: BTreeSet<String>,
    ordered: BTreeMap<String, u64>,
    current: Option<Box<Entry>>,
    scratch: Value,
    plan: Vec<Vec<Entry>>,
    phase: Phase,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Entry {
    role: String,
    tokens: u64,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(tag = "kind")]
enum Phase {
    #[default]
    Idle,
    Running {
        step: u32,
    },
}

#[test]
fn public_types_are_send_and_sync() {
    send_sync::<Tracker<Lane>>();
    send_sync::<Tracker<Value>>();
    send_sync::<Encoder>();
    send_sync::<Decoder>();
    send_sync::<chord::Op>();
    send_sync::<chord::WireOp>();
    send_sync::<chord::Path>();
    send_sync::<chord::NonEmptyPath>();
    send_sync::<chord::Limits>();
    send_sync::<chord::Error>();
    send_sync::<chord::Applied>();
    send_sync::<chord::store::Address>();
    send_sync::<chord::store::Record>();
    send_sync::<chord::store::Error>();
    send_sync::<chord::store::JsonlStore>();
    send_sync::<chord::store::LogWriter<chord::store::JsonlStore>>();
    send_sync::<chord::store::Durable<Lane, chord::store::JsonlStore>>();
    #[cfg(feature = "streams")]
    {
        send_sync::<chord::streams::Streams>();
        send_sync::<chord::streams::Log<chord::store::JsonlStore>>();
        send_sync::<chord::streams::Memory>();
        send_sync::<chord::streams::Offset>();
    }
    #[cfg(feature = "replica")]
    {
        send_sync::<chord::replica::Replica>();
        send_sync::<chord::replica::State>();
        send_sync::<chord::replica::Error>();
    }
}

#[test]
fn a_tracker_behind_an_rwlock_serves_several_threads() {
    let lane = Arc::new(RwLock::new(track(Lane::default())));
    let mut replica = None;
    let first = lane.write().unwrap().flush().unwrap();
    apply(&mut replica, first).unwrap();
    // Writers append under the write lock while readers serialize under the read lock.
    std::thread::scope(|scope| {
        for w in 0..4 {
            let lane = Arc::clone(&lane);
            scope.spawn(move || {
                for i in 0..50 {
                    let mut guard = lane.write().unwrap();
                    let mut state = guard.state();
                    state.answer += "x";
                    state.transcript.push(Entry {
                        role: format!("w{w}"),
                        tokens: i,
                    });
                }
            });
        }
        for _ in 0..2 {
            let lane = Arc::clone(&lane);
            scope.spawn(move || {
                for _ in 0..50 {
                    let guard = lane.read().unwrap();
                    serde_json::to_value(guard.get()).unwrap();
                }
            });
        }
    });
    let ops = lane.write().unwrap().flush().unwrap();
    apply(&mut replica, ops).unwrap();
    let guard = lane.read().unwrap();
    assert_eq!(guard.get().answer.len(), 200);
    assert_eq!(guard.get().transcript.len(), 200);
    assert_eq!(replica, Some(serde_json::to_value(guard.get()).unwrap()));
    // The encoder's cached ids, kept on the tracker's nodes, work across threads too.
    drop(guard);
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    let mut copy = replica.clone();
    for _ in 0..3 {
        let text = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut guard = lane.write().unwrap();
                    let mut state = guard.state();
                    state.answer += "y";
                    *state.phase = Phase::Running { step: 1 };
                    let mut out = Vec::new();
                    guard.flush_into(&mut encoder, &mut out).unwrap();
                    String::from_utf8(out).unwrap()
                })
                .join()
                .unwrap()
        });
        decoder
            .apply_str(&text, &mut copy, &chord::Limits::default())
            .unwrap();
    }
    let guard = lane.read().unwrap();
    assert!(guard.get().answer.ends_with("yyy"));
    assert_eq!(copy, Some(serde_json::to_value(guard.get()).unwrap()));
}
