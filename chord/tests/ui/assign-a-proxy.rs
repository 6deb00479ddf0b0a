use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Lane {
    status: String,
}

fn main() {
    let mut t = chord::track(Lane {
        status: String::new(),
    });
    t.state().status = "done".into();
}
