//! Iterator adaptors over nested proxies: element proxies of nested sequences flatten,
//! `for x in &mut proxy` iterates, and consuming accessors chain through closures. Every
//! flush replays on a replica equal to `serde_json::to_value(&state)`.

use std::collections::VecDeque;

use chord::{apply, display_batch, track, Tracked, Tracker};
use serde::Serialize;
use serde_json::Value;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Step {
    name: String,
    done: bool,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Agent {
    plan: Vec<Vec<Step>>,
    queue: VecDeque<VecDeque<Step>>,
}

fn step(name: &str) -> Step {
    Step {
        name: name.into(),
        done: false,
    }
}

fn agent() -> (Tracker<Agent>, Option<Value>) {
    let mut t = track(Agent {
        plan: vec![vec![step("a"), step("b")], vec![step("c")]],
        queue: VecDeque::from([VecDeque::from([step("x")]), VecDeque::from([step("y")])]),
    });
    let mut replica = None;
    apply(&mut replica, t.flush().unwrap()).unwrap();
    (t, replica)
}

/// Flushes, applies, checks the replica, and returns the batch as text.
fn flushed(t: &mut Tracker<Agent>, replica: &mut Option<Value>) -> String {
    let ops = t.flush().unwrap();
    let text = display_batch(&ops).to_string();
    apply(replica, ops).unwrap();
    assert_eq!(
        replica.as_ref(),
        Some(&serde_json::to_value(t.get()).unwrap())
    );
    text
}

#[test]
fn nested_element_proxies_flatten() {
    let (mut t, mut replica) = agent();
    {
        let mut a = t.state();
        let mut found = a.plan.iter_mut().flatten().find(|s| s.name == "c").unwrap();
        *found.done = true;
    }
    assert_eq!(
        flushed(&mut t, &mut replica),
        "batch, 1 op\n  set plan[1][0].done = true"
    );
    let mut a = t.state();
    let count = a.queue.iter_mut().flatten().filter(|s| !*s.done).count();
    assert_eq!(count, 2);
    for mut s in a.queue.iter_mut().flatten() {
        s.name += "!";
    }
    assert_eq!(
        flushed(&mut t, &mut replica),
        "batch, 2 ops\n  append queue[0][0].name += \"!\"\n  append queue[1][0].name += \"!\""
    );
}

#[test]
fn a_for_loop_over_a_proxy_borrowed_mutably_iterates_its_elements() {
    let (mut t, mut replica) = agent();
    let mut a = t.state();
    for phase in &mut a.plan {
        for mut s in phase {
            *s.done = true;
        }
    }
    // The proxy is still usable after the loop borrowed it.
    a.plan.push(vec![step("d")]);
    // Every step changed and one phase added: one `s` of the plan is smaller than the
    // splice and the three sets.
    assert_eq!(
        flushed(&mut t, &mut replica),
        "batch, 1 op\n  set plan = [[{\"name\":\"a\",\"done\":true},{\"name\":\"b\",\"done\":true}],\
         [{\"name\":\"c\",\"done\"… (108 bytes)"
    );
    assert!(t.get().plan[..2].iter().flatten().all(|s| s.done));
    assert_eq!(t.get().plan[2][0].name, "d");
    assert_eq!(t.fallbacks().diffs(), 0);
}

#[test]
fn consuming_accessors_chain_through_closures() {
    let (mut t, mut replica) = agent();
    {
        let mut a = t.state();
        let first = a.plan.first_mut().and_then(|phase| phase.into_first_mut());
        *first.unwrap().done = true;
        let last = a.plan.last_mut().and_then(|phase| phase.into_last_mut());
        last.unwrap().name.push_str("?");
        let back = a.queue.back_mut().and_then(|q| q.into_front_mut());
        *back.unwrap().done = true;
        assert!(a.plan.get_mut(0).and_then(|p| p.into_get_mut(9)).is_none());
    }
    assert_eq!(
        flushed(&mut t, &mut replica),
        "batch, 3 ops\n  set plan[0][0].done = true\n  append plan[1][0].name += \"?\"\n  \
         set queue[1][0].done = true"
    );
}
