use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Flags {
    set: bool,
}

fn main() {}
