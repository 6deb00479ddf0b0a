use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
enum Role {
    User,
    Assistant,
}

fn main() {}
