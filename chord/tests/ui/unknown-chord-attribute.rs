use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Lane {
    #[chord(opaqe)]
    status: String,
}

fn main() {}
