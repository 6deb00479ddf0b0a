//! A multi-agent orchestrator written as plain Rust state, tracked by chord: a `HashMap` of
//! agents, enums in three serde representations, nested plans (`Vec<Vec<_>>`), an
//! `Option<Box<_>>`, a capped `VecDeque` log, a `BTreeSet` of tags, a `u128` id, a
//! `serde_json::Value` scratch area and a generic page type. Its helpers take the fields'
//! proxy types, so no change falls back to diffing a whole value.
//!
//! ```text
//! cargo run --example orchestrator
//! ```
//!
//! It prints every batch with its size on the wire, replays each on a replica that must equal
//! the state, and checks that the tracker diffed nothing whole. `chord/tests/orchestrator.rs`
//! checks the batches themselves.

use std::collections::{BTreeSet, HashMap, VecDeque};

use chord::proxy::{DequeProxy, VecProxy};
use chord::{display_batch, Decoder, Encoder, Limits, Tracked, Tracker};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct Orchestrator {
    pub run_id: u128,
    pub phase: Phase,
    pub agents: HashMap<String, Agent>,
    pub tags: BTreeSet<String>,
    pub scratch: Value,
    pub findings: Page<Finding>,
}

/// Externally tagged (serde's default).
#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
pub enum Phase {
    #[default]
    Planning,
    Executing(u32),
    Reviewing {
        round: u32,
    },
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub status: Status,
    pub plan: Vec<Vec<Step>>,
    pub log: VecDeque<String>,
    pub current: Option<Box<Step>>,
    pub last_event: Event,
    pub tokens: u64,
}

/// Internally tagged.
#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Status {
    #[default]
    Idle,
    Working {
        on: String,
    },
    Done,
}

/// Adjacently tagged.
#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(tag = "kind", content = "data", rename_all = "camelCase")]
pub enum Event {
    #[default]
    None,
    Started(String),
    Progress {
        pct: u8,
    },
}

#[derive(Tracked, Serialize, Clone, Debug, PartialEq)]
pub struct Step {
    pub name: String,
    pub done: bool,
}

/// A page of results, of any item type.
#[derive(Tracked, Serialize, Clone, Debug, Default)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
pub struct Finding {
    pub title: String,
    pub score: u32,
}

/// Lines an agent's log keeps.
pub const LOG_LINES: usize = 4;

/// A capped log, on the field's proxy type: a push and a pop, never the whole deque.
pub fn log(buf: &mut DequeProxy<'_, String>, line: &str) {
    if buf.len() == LOG_LINES {
        buf.pop_front();
    }
    buf.push_back(line.to_owned());
}

/// Marks the first step not done, wherever it is in the plan, as done.
pub fn finish_next(plan: &mut VecProxy<'_, Vec<Step>>) -> Option<String> {
    let mut step = plan.iter_mut().flatten().find(|s| !*s.done)?;
    *step.done = true;
    Some(step.name.clone())
}

fn step(name: &str) -> Step {
    Step {
        name: name.into(),
        done: false,
    }
}

/// One flushed batch: its readable form and its bytes on the wire.
pub struct Flushed {
    pub shown: String,
    pub wire: String,
}

/// Runs the orchestration, flushing after every step straight to wire bytes and replaying
/// each batch on a replica.
///
/// # Panics
///
/// If a replica differs from the state, or a flush fell back to diffing a whole value.
pub fn run() -> Vec<Flushed> {
    let mut t = chord::track(Orchestrator {
        run_id: 7_000_000_000_001,
        ..Orchestrator::default()
    });
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::new();
    let mut replica = None;
    let mut batches = Vec::new();
    let mut flush = |t: &mut Tracker<Orchestrator>| {
        let ops = t.flush().expect("the state is JSON");
        let shown = display_batch(&ops).to_string();
        let wire = encoder.encode(&ops).to_json();
        decoder
            .apply_str(&wire, &mut replica, &Limits::default())
            .expect("the batch applies");
        assert_eq!(
            replica.as_ref(),
            Some(&serde_json::to_value(t.get()).unwrap()),
            "after {shown}"
        );
        batches.push(Flushed { shown, wire });
    };
    flush(&mut t); // the base batch

    // Two agents join with a plan each; the run is tagged.
    {
        let mut o = t.state();
        for (name, steps) in [("planner", ["scope", "split"]), ("coder", ["edit", "test"])] {
            o.agents.insert(
                name.into(),
                Agent {
                    plan: vec![steps.iter().map(|s| step(s)).collect()],
                    ..Agent::default()
                },
            );
        }
        o.tags.insert("nightly".into());
    }
    flush(&mut t);

    // The coder starts: its status, an event, a log line, its current step.
    {
        let mut o = t.state();
        o.phase.set(Phase::Executing(1));
        let mut coder = o.agents.get_mut("coder").unwrap();
        coder.status.set(Status::Working { on: "edit".into() });
        coder.last_event.set(Event::Started("edit".into()));
        log(&mut coder.log, "opened src/lib.rs");
        coder.current.set(Some(Box::new(step("edit"))));
    }
    flush(&mut t);

    // Streaming work: log lines past the cap, progress, tokens.
    for pct in [25u8, 50, 75] {
        {
            let mut o = t.state();
            let mut coder = o.agents.get_mut("coder").unwrap();
            log(&mut coder.log, &format!("{pct}% of the edit"));
            coder.last_event.set(Event::Progress { pct });
            *coder.tokens += 120;
        }
        flush(&mut t);
    }

    // The coder finishes its first step; the plan grows a phase; a finding is paged in.
    {
        let mut o = t.state();
        {
            let mut coder = o.agents.get_mut("coder").unwrap();
            log(&mut coder.log, "tests pass"); // the fifth line: the first goes
            let done = finish_next(&mut coder.plan);
            assert_eq!(done.as_deref(), Some("edit"));
            coder.plan.push(vec![step("review")]);
            if let Some(mut current) = coder.current.as_mut() {
                current.name.push_str(" (done)");
            }
        }
        o.findings.items.push(Finding {
            title: "flaky test".into(),
            score: 3,
        });
        o.scratch.set(json!({"retries": 1}));
    }
    flush(&mut t);

    // Review: the planner is done, the phase changes variant, the scratch area is edited.
    {
        let mut o = t.state();
        o.agents
            .get_mut("planner")
            .unwrap()
            .status
            .set(Status::Done);
        o.phase.set(Phase::Reviewing { round: 1 });
        if let Some(mut retries) = o.scratch.member("retries") {
            retries.set(2);
        }
        o.findings.next.set(Some("page-2".into()));
    }
    flush(&mut t);

    assert_eq!(t.fallbacks().diffs(), 0, "{:?}", t.fallbacks());
    batches
}

fn main() {
    for (i, batch) in run().iter().enumerate() {
        println!("batch {i}: {} bytes\n{}\n", batch.wire.len(), batch.shown);
    }
}
