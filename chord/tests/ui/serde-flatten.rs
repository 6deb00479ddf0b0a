use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Inner {
    a: u32,
}

#[derive(Tracked, Serialize)]
struct Lane {
    #[serde(flatten)]
    inner: Inner,
}

fn main() {}
