use chord::Tracked;
use serde::{Serialize, Serializer};

fn upper<S: Serializer>(s: &str, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&s.to_uppercase())
}

#[derive(Tracked, Serialize)]
struct Lane {
    #[serde(serialize_with = "upper")]
    status: String,
}

fn main() {}
