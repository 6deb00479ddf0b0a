use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Usage {
    tokens: u64,
}

#[derive(Tracked, Serialize)]
struct Lane {
    #[serde(flatten)]
    #[chord(opaque)]
    usage: Usage,
    status: String,
}

fn main() {
    let mut t = chord::track(Lane {
        usage: Usage { tokens: 0 },
        status: String::new(),
    });
    // Still compiles: only the attribute is reported.
    *t.state().usage.tokens += 1;
    t.state().status.push_str("done");
}
