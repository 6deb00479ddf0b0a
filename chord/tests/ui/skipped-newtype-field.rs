use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Secret(#[serde(skip)] String);

fn main() {}
