//! Integers a JavaScript number holds exactly: up to ±(2^53 − 1). Every count, index and id
//! in an op stays within it, so a Rust and a JavaScript replica accept exactly the same ops;
//! in JS-safe mode a tracker refuses integers beyond it in the values it sends too.

use serde_json::Number;

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`,
/// 2^53 − 1): the largest count, index or id an op may carry, and in
/// [JS-safe mode](crate::Tracker::set_js_safe) the bound of every integer a tracker sends.
///
/// ```
/// assert_eq!(chord::MAX_SAFE_INTEGER, 9_007_199_254_740_991);
/// ```
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `n` as a count, an index or an id: a non-negative integer up to [`MAX_SAFE_INTEGER`]
/// (beyond, a JavaScript replica would read another number); `None` for anything else.
pub(crate) fn to_usize(n: &Number) -> Option<usize> {
    n.as_u64()
        .filter(|&n| n <= MAX_SAFE_INTEGER)
        .and_then(|n| usize::try_from(n).ok())
}
