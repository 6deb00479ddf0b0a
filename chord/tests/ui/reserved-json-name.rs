use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Config {
    #[serde(rename = "constructor")]
    builder: String,
}

fn main() {}
