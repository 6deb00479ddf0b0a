use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Lane {
    #[chord(skip)]
    a: String,
    #[serde(flatten)]
    b: std::collections::BTreeMap<String, String>,
    __proto__: u32,
}

fn main() {}
