//! An event's place in a run's log: its SSE id, `<offset>:<k>` ([`EventId`]), and the SSE
//! frame that carries it.

use axum::http::HeaderMap;
use serde::Serialize;

use crate::live::sse::{self, Fields};
use crate::live::Offset;

/// Where the ids of a base record's events start when they are sent to a reader that starts
/// at it (with no value), for a base other than the run's first record: a checkpoint gives
/// such a reader `RUN_STARTED`, the snapshot and the text so far, and gives a reader that
/// had the record before it only what changed, so the two lists need ids of their own.
pub(crate) const START_K: usize = 500_000_000;

/// A parsed `Last-Event-ID`: after the `k`-th event of the record `seq` (`k` from
/// [`START_K`]: of its events as a start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) seq: u64,
    pub(crate) k: usize,
}

impl EventId {
    /// Where the ids of a base's start events begin, the record before it being `prev`: from
    /// 0 for the run's first record (it has no other list), else from [`START_K`].
    pub(crate) fn start_k(prev: u64) -> usize {
        if prev == 0 {
            0
        } else {
            START_K
        }
    }

    /// The `Last-Event-ID` header, if sent: `None` when absent, an error saying why when
    /// malformed.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Result<Option<EventId>, String> {
        let Some(value) = headers.get("last-event-id") else {
            return Ok(None);
        };
        let text = value
            .to_str()
            .map_err(|_| "Last-Event-ID is not visible ASCII".to_owned())?;
        if text.is_empty() {
            // What `EventSource` sends before it had an id: start from the beginning.
            return Ok(None);
        }
        EventId::parse(text).map(Some)
    }

    pub(crate) fn parse(text: &str) -> Result<EventId, String> {
        let shown: String = text.chars().take(64).collect();
        let malformed = || {
            format!(
                "malformed Last-Event-ID {shown:?}: expected <offset>:<k>, 16 lowercase \
                 hexadecimal digits, a colon and a decimal event index, as this server sent"
            )
        };
        let (offset, k) = text.split_once(':').ok_or_else(malformed)?;
        let offset: Offset = offset.parse().map_err(|_| malformed())?;
        if k.is_empty() || k.len() > 9 || !k.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let k = k.parse().map_err(|_| malformed())?;
        Ok(EventId {
            seq: offset.seq(),
            k,
        })
    }

    pub(crate) fn write(self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{}:{}", Offset::from_seq(self.seq), self.k);
    }
}

/// One SSE event: `id: <offset>:<k>` (none for an event that is no place in the log) and
/// the event's JSON, which must serialize (strings and JSON values only).
pub(crate) fn frame<E: Serialize>(out: &mut Vec<u8>, id: Option<EventId>, event: &E) {
    let mut text = String::new();
    if let Some(id) = id {
        id.write(&mut text);
    }
    let fields = Fields {
        event: None,
        id: id.map(|_| text.as_str()),
        compact: false,
    };
    sse::event(out, fields, |out| {
        let _ = serde_json::to_writer(&mut *out, event);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_as_sent_and_nothing_else() {
        let id = EventId { seq: 42, k: 3 };
        let mut text = String::new();
        id.write(&mut text);
        assert_eq!(text, "000000000000002a:3");
        assert_eq!(EventId::parse(&text), Ok(id));
        for bad in [
            "",
            "2a:3",
            "000000000000002a",
            "000000000000002a:",
            "000000000000002a:-1",
            "000000000000002a:+1",
            "000000000000002A:1",
            "000000000000002a:1:2",
            "000000000000002a:99999999999",
            "é",
        ] {
            let err = EventId::parse(bad).unwrap_err();
            assert!(err.contains("malformed Last-Event-ID"), "{bad}: {err}");
        }
    }
}
