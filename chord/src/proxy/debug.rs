//! The `Debug` form of every proxy: the JSON of the value it wraps (what the replicas hold),
//! which needs no `Debug` of the value's type. A derived struct's proxy calls it too
//! (through `chord::__private`).

/// Writes `value` as JSON, or `<not JSON>` when it cannot be serialized.
pub fn debug_json<T: serde::Serialize + ?Sized>(
    value: &T,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    match serde_json::to_string(value) {
        Ok(json) => f.write_str(&json),
        Err(_) => f.write_str("<not JSON>"),
    }
}
