//! The bytes of the protocol's responses: JSON-mode bodies, SSE `data` and `control` events,
//! and the cursor.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::live::sse::{self, Fields};
use crate::live::Offset;

/// The body of a catch-up or long-poll read: the messages as one JSON array. Each message is
/// a wire batch exactly as the log holds it.
pub(crate) fn json_array<'a>(batches: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_array(&mut out, batches);
    out
}

/// One SSE `data` event carrying `batches` as one JSON array (wire JSON is one line: serde_json
/// escapes every control character inside strings).
pub(crate) fn data_event<'a>(out: &mut Vec<u8>, batches: impl IntoIterator<Item = &'a str>) {
    let fields = Fields {
        event: Some("data"),
        id: None,
        compact: false,
    };
    sse::event(out, fields, |out| write_array(out, batches));
}

/// `batches` as one JSON array, appended to `out`.
fn write_array<'a>(out: &mut Vec<u8>, batches: impl IntoIterator<Item = &'a str>) {
    out.push(b'[');
    for (i, batch) in batches.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(batch.as_bytes());
    }
    out.push(b']');
}

/// One SSE `control` event.
pub(crate) fn control_event(out: &mut Vec<u8>, next: Offset, cursor: u64, up_to_date: bool) {
    let up = if up_to_date { ",\"upToDate\":true" } else { "" };
    let fields = Fields {
        event: Some("control"),
        id: None,
        compact: false,
    };
    sse::event(out, fields, |out| {
        let json = format!("{{\"streamNextOffset\":\"{next}\",\"streamCursor\":\"{cursor}\"{up}}}");
        out.extend_from_slice(json.as_bytes());
    });
}

/// The protocol's cursor epoch: 2024-10-09T00:00:00Z, in seconds since the Unix epoch.
const CURSOR_EPOCH: u64 = 1_728_432_000;

/// The protocol's cursor interval.
const CURSOR_INTERVAL: Duration = Duration::from_secs(20);

/// The cursor for a live response now, strictly greater than `echoed` when the client echoed
/// one at or beyond the current interval (the protocol's rule against cache cycles; the
/// jitter is one interval, deterministic).
pub(crate) fn cursor(echoed: Option<u64>) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let interval = now.saturating_sub(CURSOR_EPOCH) / CURSOR_INTERVAL.as_secs();
    match echoed {
        Some(c) if c >= interval => c.saturating_add(1),
        _ => interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_the_protocols() {
        let mut out = Vec::new();
        data_event(&mut out, [r#"[["r",{}]]"#, r#"[["s",["a"],1]]"#]);
        control_event(&mut out, Offset::from_seq(3), 7, true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "event: data\ndata: [[[\"r\",{}]],[[\"s\",[\"a\"],1]]]\n\n\
             event: control\ndata: {\"streamNextOffset\":\"0000000000000003\",\"streamCursor\":\"7\",\"upToDate\":true}\n\n"
        );
        assert_eq!(json_array([]), b"[]");
    }

    #[test]
    fn cursors_move_forward() {
        let now = cursor(None);
        assert!(now > 0);
        assert_eq!(cursor(Some(now)), now + 1);
        assert_eq!(cursor(Some(now + 100)), now + 101);
        assert_eq!(cursor(Some(3)), now);
    }
}
