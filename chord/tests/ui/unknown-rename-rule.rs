use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
#[serde(rename_all = "camel")]
struct Lane {
    tool_name: String,
}

fn main() {}
