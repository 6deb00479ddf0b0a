use std::collections::HashMap;

use chord::Tracked;
use serde::Serialize;

#[derive(Tracked, Serialize)]
struct Lane {
    status: String,
    #[serde(flatten)]
    extra: HashMap<String, f64>,
}

fn main() {
    let mut t = chord::track(Lane {
        status: String::new(),
        extra: HashMap::new(),
    });
    // No error here: only the field is reported.
    *t.state().status = "done".into();
    let _ = *t.get().extra.get("x").unwrap_or(&0.0) * 2.0;
}
