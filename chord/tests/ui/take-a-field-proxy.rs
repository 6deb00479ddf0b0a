use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Lane {
    a: u32,
    b: u32,
}

fn main() {
    let mut t = chord::track(Lane { a: 1, b: 2 });
    let mut s = t.state();
    // A field proxy is a handle: there is no empty one to leave behind.
    let _a = std::mem::take(&mut s.a);
}
