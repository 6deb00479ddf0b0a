use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Config {
    prototype: String,
}

fn main() {}
