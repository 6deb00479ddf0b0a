use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
enum Reply {
    Text { body: String },
    #[serde(untagged)]
    Other(serde_json::Value),
}

fn main() {}
