use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
#[chord(opaq)]
struct Lane {
    status: String,
}

fn main() {}
