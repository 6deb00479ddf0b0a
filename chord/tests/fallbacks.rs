//! A tracker counts its whole-value fallbacks: a change that reached a container through a
//! plain `&mut` (a helper written for plain Rust, `(*x).iter_mut()`) is flushed by diffing
//! the whole value, and `Tracker::fallbacks` says where and how many bytes it cost.

use std::collections::VecDeque;

use chord::proxy::DequeProxy;
use chord::{apply, track, Tracked};
use serde::Serialize;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Agent {
    log: VecDeque<String>,
    plan: Vec<Vec<u32>>,
    steps: u64,
}

const CAP: usize = 40;

/// The helper as a Rust user writes it: a capped log on a plain `VecDeque`.
fn log_plain(buf: &mut VecDeque<String>, line: &str) {
    if buf.len() == CAP {
        buf.pop_front();
    }
    buf.push_back(line.to_owned());
}

/// The same helper on the field's proxy type.
fn log_proxy(buf: &mut DequeProxy<'_, String>, line: &str) {
    if buf.len() == CAP {
        buf.pop_front();
    }
    buf.push_back(line.to_owned());
}

#[test]
fn a_helper_on_a_plain_deque_is_counted_and_the_proxy_helper_is_not() {
    let mut plain = track(Agent::default());
    let mut proxied = track(Agent::default());
    let mut plain_replica = None;
    let mut proxied_replica = None;
    apply(&mut plain_replica, plain.flush().unwrap()).unwrap();
    apply(&mut proxied_replica, proxied.flush().unwrap()).unwrap();
    for i in 0..100 {
        let line = format!("step {i}: compiled the crate and ran its tests");
        log_plain(&mut plain.state().log, &line);
        log_proxy(&mut proxied.state().log, &line);
        *plain.state().steps += 1;
        *proxied.state().steps += 1;
        apply(&mut plain_replica, plain.flush().unwrap()).unwrap();
        apply(&mut proxied_replica, proxied.flush().unwrap()).unwrap();
    }
    // Both replicas are exact; only the plain helper fell back.
    assert_eq!(
        plain_replica,
        Some(serde_json::to_value(plain.get()).unwrap())
    );
    assert_eq!(proxied_replica, plain_replica);
    assert_eq!(proxied.fallbacks().diffs(), 0);
    assert_eq!(proxied.fallbacks().bytes(), 0);
    let counted = plain.fallbacks();
    assert_eq!(counted.diffs(), 100);
    let paths: Vec<_> = counted
        .paths()
        .map(|(p, d, _)| (p.to_string(), d))
        .collect();
    assert_eq!(paths, [("log".to_owned(), 100)]);
    assert!(counted.bytes() > 0);
    // Taken, the count starts afresh.
    let taken = plain.take_fallbacks();
    assert_eq!(taken.diffs(), 100);
    assert_eq!(plain.fallbacks().diffs(), 0);
}

#[test]
fn iterating_a_nested_vector_through_deref_is_counted_at_its_path() {
    let mut agent = track(Agent {
        plan: vec![vec![1, 2], vec![3]],
        ..Agent::default()
    });
    agent.flush().unwrap();
    for phase in (*agent.state().plan).iter_mut() {
        phase.push(0);
    }
    let ops = agent.flush().unwrap();
    assert!(!ops.is_empty());
    let paths: Vec<_> = agent
        .fallbacks()
        .paths()
        .map(|(p, d, b)| (p.to_string(), d, b > 0))
        .collect();
    assert_eq!(paths, [("plan".to_owned(), 1, true)]);
    // A flush with nothing reached through `&mut` adds nothing.
    agent.state().plan.push(vec![9]);
    agent.flush().unwrap();
    assert_eq!(agent.fallbacks().diffs(), 1);
}

#[test]
fn a_fallback_flushed_to_bytes_counts_the_bytes_written() {
    let mut agent = track(Agent::default());
    let mut encoder = chord::Encoder::new();
    let mut out = Vec::new();
    agent.flush_into(&mut encoder, &mut out).unwrap();
    log_plain(&mut agent.state().log, "one");
    out.clear();
    let written = agent.flush_into(&mut encoder, &mut out).unwrap();
    assert_eq!(agent.fallbacks().diffs(), 1);
    // The batch is the fallback's ops and its brackets.
    assert_eq!(agent.fallbacks().bytes() as usize, written - 2);
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Readings {
    values: Vec<f64>,
    ids: Vec<u64>,
}

/// Pushes through a plain `&mut Vec` (a fallback).
fn push_plain<T>(buf: &mut Vec<T>, v: T) {
    buf.push(v);
}

#[test]
fn a_refused_flush_counts_no_fallback_and_the_accepted_one_counts_it_once() {
    let mut t = track(Readings::default());
    t.flush().unwrap();
    push_plain(&mut t.state().values, f64::NAN);
    assert!(t.flush().is_err(), "a NaN is refused");
    assert!(t.flush().is_err(), "and stays refused");
    assert_eq!(t.fallbacks().diffs(), 0, "a refused flush counts nothing");
    t.state().values.set(vec![1.5]);
    let ops = t.flush().unwrap();
    assert!(!ops.is_empty());
    assert_eq!(t.fallbacks().diffs(), 1, "{:?}", t.fallbacks());
}

#[test]
fn a_flush_into_refused_for_an_unsafe_integer_counts_no_fallback() {
    let mut t = track(Readings::default());
    let mut encoder = chord::Encoder::new();
    let mut out = Vec::new();
    t.flush_into(&mut encoder, &mut out).unwrap();
    // Beyond 2^53: refused in JS-safe mode (the default), found by the checked re-flush.
    push_plain(&mut t.state().ids, 1 << 60);
    let start = out.len();
    assert!(t.flush_into(&mut encoder, &mut out).is_err());
    assert_eq!(out.len(), start, "nothing written");
    assert_eq!(t.fallbacks().diffs(), 0, "{:?}", t.fallbacks());
    t.state().ids.set(vec![7]);
    push_plain(&mut t.state().ids, 8);
    assert!(t.flush_into(&mut encoder, &mut out).unwrap() > 0);
    assert_eq!(t.fallbacks().diffs(), 1, "{:?}", t.fallbacks());
}

#[test]
fn a_fallback_flushed_again_after_an_unsafe_integer_elsewhere_counts_once() {
    let mut t = track(Readings::default());
    let mut encoder = chord::Encoder::new();
    let mut out = Vec::new();
    t.flush_into(&mut encoder, &mut out).unwrap();
    // Another tracker, not JS-safe, sends an integer beyond 2^53: this tracker's next
    // `flush_into` builds its ops again to look for one, and must count its fallback once.
    let mut other = track(Readings::default());
    other.set_js_safe(false);
    other.flush().unwrap();
    other.state().ids.push(1 << 60);
    other.flush().unwrap();
    push_plain(&mut t.state().ids, 8);
    assert!(t.flush_into(&mut encoder, &mut out).unwrap() > 0);
    assert_eq!(t.fallbacks().diffs(), 1, "{:?}", t.fallbacks());
}
