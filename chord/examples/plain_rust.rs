//! One turn of an agent lane written twice: against chord's proxies, and against the plain
//! structs. The two read alike; only the first can say what changed.
//!
//! ```text
//! cargo run --example plain_rust
//! ```
//!
//! `chord/tests/producer.rs` checks that the tracked turn emits exactly the batch printed
//! below, that both turns leave the same state, and that the two functions' line counts stay
//! within 10% of each other.

use std::collections::BTreeMap;

use chord::{Encoder, Tracked, Tracker};
use serde::Serialize;

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    pub status: Status,
    pub answer: String,
    pub transcript: Vec<Entry>,
    pub tools: Vec<Tool>,
    pub calls: Vec<Call>,
    pub meta: BTreeMap<String, Meta>,
    pub notes: Vec<String>,
    pub usage: Usage,
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Status {
    #[default]
    Idle,
    Running {
        tool: String,
    },
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Tracked, Serialize, Clone, Debug, PartialEq)]
pub struct Entry {
    pub role: String,
    pub text: String,
}

#[derive(Tracked, Serialize, Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub output: String,
}

#[derive(Tracked, Serialize, Clone, Debug, PartialEq)]
pub struct Call {
    pub id: String,
    pub done: bool,
}

#[derive(Tracked, Serialize, Clone, Debug, Default, PartialEq)]
pub struct Meta {
    pub calls: u32,
}

pub fn entry(role: &str, text: &str) -> Entry {
    Entry {
        role: role.into(),
        text: text.into(),
    }
}

/// The lane before the turn.
pub fn start() -> Lane {
    Lane {
        answer: "Hello".into(),
        transcript: vec![entry("user", "hi")],
        tools: vec![Tool {
            name: "bash".into(),
            output: "x".repeat(10),
        }],
        calls: ["c1", "c2"]
            .map(|id| Call {
                id: id.into(),
                done: false,
            })
            .into(),
        notes: vec!["b".into(), "a".into()],
        usage: Usage {
            input_tokens: 10,
            output_tokens: 4,
        },
        ..Lane::default()
    }
}

// turn: tracked
pub fn turn_tracked(t: &mut Tracker<Lane>, token: &str, chunk: &str, id: &str) {
    let mut lane = t.state();
    lane.status.set(Status::Running {
        tool: "bash".into(),
    });
    lane.usage.output_tokens += 1;
    lane.answer += token;
    lane.transcript.push(entry("assistant", token));
    lane.transcript.insert(0, entry("system", "be brief"));
    if let Some(mut tool) = lane.tools.get_mut(0) {
        tool.output.push_str(chunk);
    }
    lane.tools.last_mut().unwrap().output.keep_last(50_000);
    if let Some(mut call) = lane.calls.iter_mut().find(|c| c.id == id) {
        call.done.set(true);
    }
    lane.meta.entry("bash".into()).or_default().calls += 1;
    lane.notes.sort();
    let (status, usage) = (&mut lane.status, &mut lane.usage);
    if matches!(**status, Status::Running { .. }) {
        usage.input_tokens += 1;
    }
}
// end

// turn: plain
pub fn turn_plain(lane: &mut Lane, token: &str, chunk: &str, id: &str) {
    lane.status = Status::Running {
        tool: "bash".into(),
    };
    lane.usage.output_tokens += 1;
    lane.answer += token;
    lane.transcript.push(entry("assistant", token));
    lane.transcript.insert(0, entry("system", "be brief"));
    if let Some(tool) = lane.tools.get_mut(0) {
        tool.output.push_str(chunk);
    }
    let output = &mut lane.tools.last_mut().unwrap().output;
    output.drain(..output.len().saturating_sub(50_000));
    if let Some(call) = lane.calls.iter_mut().find(|c| c.id == id) {
        call.done = true;
    }
    lane.meta.entry("bash".into()).or_default().calls += 1;
    lane.notes.sort();
    let (status, usage) = (&mut lane.status, &mut lane.usage);
    if matches!(status, Status::Running { .. }) {
        usage.input_tokens += 1;
    }
}
// end

#[allow(dead_code)]
fn main() -> Result<(), chord::Error> {
    let mut tracker = chord::track(start());
    let mut encoder = Encoder::new();
    let base = tracker.flush()?;
    println!("base: {} bytes", encoder.encode(&base).to_json().len());
    turn_tracked(&mut tracker, " world", "yy", "c2");
    let ops = tracker.flush()?;
    println!("{}", chord::display_batch(&ops));
    println!("wire: {}", encoder.encode(&ops).to_json());
    let mut plain = start();
    turn_plain(&mut plain, " world", "yy", "c2");
    assert_eq!(&plain, tracker.get());
    Ok(())
}
