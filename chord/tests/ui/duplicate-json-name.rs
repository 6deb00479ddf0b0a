use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
#[serde(rename_all = "camelCase")]
struct Lane {
    tool_name: String,
    #[serde(rename = "toolName")]
    other: String,
}

fn main() {}
