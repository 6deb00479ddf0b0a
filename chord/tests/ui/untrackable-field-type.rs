use chord::Tracked;
use serde::Serialize;

#[derive(Serialize)]
struct Usage {
    tokens: u64,
}

#[derive(Tracked, Serialize)]
struct Lane {
    usage: Usage,
}

fn main() {}
