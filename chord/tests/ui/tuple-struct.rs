use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Pair(String, u32);

fn main() {}
