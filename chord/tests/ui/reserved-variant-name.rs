use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
enum Node {
    #[serde(rename = "constructor")]
    Build { steps: Vec<String> },
}

fn main() {}
