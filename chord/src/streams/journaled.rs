//! Protocol streams kept beyond the process: [`Journaled`], a [`Backend`] that holds its streams
//! in a [`Memory`] and writes every change to its [`Journal`] first, replayed when it opens.
//!
//! Opening replays the journal's records in order and then rewrites the journal as one
//! creation a live stream (deleted and expired streams leave it). What a restart does not
//! keep: a TTL's idle countdown starts again when the journal is opened (a stream with
//! `Stream-TTL` lives at least its TTL after a restart), and live readers reconnect.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::generic;
use super::journal::{Journal, Record, Whole};
use super::memory::{Backend, Memory, MemoryStream, TooManyBytes, TooManyStreams};
use crate::store::{Address, Error};

/// A [`Backend`] whose streams outlive the process: held in a [`Memory`] (with its bounds),
/// every change written to a journal before it is applied, the journal replayed when opened.
///
/// [`Journaled::file`] keeps the journal in a file (one server at a time: it is locked while
/// open); `Journaled::postgres` (feature `postgres`) in a table of a PostgreSQL schema.
/// `chord serve` keeps it beside the store it serves (see its `--help`).
///
/// ```
/// use chord::streams::{Journaled, Memory};
/// # let dir = tempfile::tempdir()?;
/// let streams = Journaled::file(dir.path().join("log.jsonl.streams"), Memory::new())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Journaled {
    memory: Memory,
    journal: Journal,
}

impl Journaled {
    /// The streams of the journal file at `path` (created if missing), held in `memory`
    /// (whose bounds apply to the replay too). The file is locked while the backend lives:
    /// one server per journal.
    ///
    /// # Errors
    ///
    /// [`Error::Locked`] when another process has it open, [`Error::Io`] when it cannot be
    /// read or written, [`Error::Corrupt`] for a damaged record (a torn last record, left by a
    /// crash in the middle of a write, is dropped: it was never acknowledged), or when the
    /// streams it holds are over `memory`'s bounds.
    pub fn file(path: impl AsRef<Path>, memory: Memory) -> Result<Journaled, Error> {
        Journaled::open(Journal::file(path.as_ref())?, memory)
    }

    /// The streams of the table `chord_protocol_streams` in the schema of the PostgreSQL URL
    /// `url` (`?schema=name`, default `public`; created if missing), held in `memory`. One
    /// server writes a schema's protocol streams: the journal holds a session lock on it while
    /// open, and a second server's open fails with [`Error::Postgres`].
    ///
    /// # Errors
    ///
    /// As [`Journaled::file`], with [`Error::Postgres`] for the database's.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub fn postgres(url: &str, memory: Memory) -> Result<Journaled, Error> {
        Journaled::open(Journal::postgres(url)?, memory)
    }

    fn open(journal: Journal, memory: Memory) -> Result<Journaled, Error> {
        let records = journal.records()?;
        let mut order = Vec::new();
        for (i, record) in records.iter().enumerate() {
            replay(record, &memory, &mut order).map_err(|why| journal.corrupt(i, why))?;
        }
        // One creation a live stream, sources before their forks (the order they were made).
        let mut live = Vec::new();
        let mut seen = HashSet::new();
        for address in order {
            if seen.insert(address.clone()) {
                if let Some(stream) = memory.get(&address) {
                    live.push((address, stream));
                }
            }
        }
        if live.len() != records.len() {
            let states: Vec<_> = live.iter().map(|(_, s)| s.lock()).collect();
            let wholes: Vec<_> = live
                .iter()
                .zip(&states)
                .map(|((address, stream), state)| Whole {
                    address,
                    config: &stream.config,
                    messages: &state.messages,
                    closed: state.closed,
                    closed_by: state.closed_by.as_ref(),
                    producers: &state.producers,
                    seq: state.stream_seq.as_deref(),
                    deleted: state.deleted,
                })
                .collect();
            journal.rewrite(&wholes)?;
        }
        Ok(Journaled { memory, journal })
    }
}

/// Applies `record` to `memory`, as the write it records did; a creation's address is added
/// to `order`. A change of a stream the journal no longer holds (an append that raced a
/// delete) changes nothing.
fn replay(record: &Record, memory: &Memory, order: &mut Vec<Address>) -> Result<(), String> {
    let over = |e: &dyn std::fmt::Display| format!("{e}: the journal holds more than the bound");
    match record {
        Record::Create {
            address,
            config,
            messages,
            closed,
            closed_by,
            producers,
            seq,
            deleted,
        } => {
            let stream = MemoryStream::new(config.clone());
            let bytes = generic::cost(messages);
            {
                let mut state = stream.lock();
                state.bytes = bytes;
                state.messages.clone_from(messages);
                state.closed = *closed;
                state.closed_by.clone_from(closed_by);
                state.producers.clone_from(producers);
                state.stream_seq.clone_from(seq);
                state.deleted = *deleted;
            }
            // Written when the address was free: whatever replay holds there went (expired)
            // before this was made.
            memory.remove(address);
            memory.reserve(bytes).map_err(|e| over(&e))?;
            memory.insert(address, stream).map_err(|e| over(&e))?;
            if let Some((from, _, _)) = &config.fork_of {
                if let Some(source) = memory.get(from) {
                    source.lock().forks += 1;
                }
            }
            order.push(address.clone());
        }
        Record::Append {
            address,
            messages,
            producer,
            seq,
            close,
        } => {
            let Some(stream) = memory.get(address) else {
                return Ok(());
            };
            let mut state = stream.lock();
            let size = generic::cost(messages);
            memory.reserve(size).map_err(|e| over(&e))?;
            state.bytes += size;
            state.messages.extend(messages.iter().cloned());
            if let Some((id, epoch, seq)) = producer {
                state.producers.insert(id.clone(), (*epoch, *seq));
            }
            if seq.is_some() {
                state.stream_seq.clone_from(seq);
            }
            if *close {
                state.closed = true;
                state.closed_by.clone_from(producer);
            }
        }
        Record::Delete { address } => {
            generic::delete(memory, address);
        }
    }
    Ok(())
}

impl Backend for Journaled {
    fn get(&self, address: &Address) -> Option<Arc<MemoryStream>> {
        self.memory.get(address)
    }

    fn insert(
        &self,
        address: &Address,
        stream: MemoryStream,
    ) -> Result<(Arc<MemoryStream>, bool), TooManyStreams> {
        self.memory.insert(address, stream)
    }

    fn remove(&self, address: &Address) -> bool {
        self.memory.remove(address)
    }

    fn max_stream_bytes(&self) -> usize {
        Backend::max_stream_bytes(&self.memory)
    }

    fn reserve(&self, bytes: usize) -> Result<(), TooManyBytes> {
        self.memory.reserve(bytes)
    }

    fn release(&self, bytes: usize) {
        self.memory.release(bytes);
    }

    fn journal(&self) -> Option<&Journal> {
        Some(&self.journal)
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, StatusCode};

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        h
    }

    fn put(b: &dyn Backend, key: &str, pairs: &[(&'static str, &str)], body: &[u8]) -> u16 {
        let address = Address::new("t", key);
        generic::create(b, &address, None, "", &headers(pairs), body)
            .status()
            .as_u16()
    }

    fn post(b: &dyn Backend, key: &str, pairs: &[(&'static str, &str)], body: &[u8]) -> u16 {
        let address = Address::new("t", key);
        let stream = b.get(&address).expect("the stream");
        generic::append(b, &address, &stream, &headers(pairs), body)
            .status()
            .as_u16()
    }

    /// What a stream holds that a restart must keep.
    fn held(b: &dyn Backend, key: &str) -> Option<String> {
        let stream = b.get(&Address::new("t", key))?;
        let state = stream.lock();
        let mut producers: Vec<_> = state.producers.iter().collect();
        producers.sort();
        Some(format!(
            "{} ttl={:?} expires={:?} fork={:?} messages={:?} bytes={} closed={} by={:?} \
             producers={producers:?} seq={:?} deleted={} forks={}",
            stream.config.content_type,
            stream.config.ttl,
            stream.config.expires_at.as_ref().map(|e| &e.0),
            stream.config.fork_of,
            state.messages,
            state.bytes,
            state.closed,
            state.closed_by,
            state.stream_seq,
            state.deleted,
            state.forks,
        ))
    }

    fn lines(path: &Path) -> usize {
        std::fs::read_to_string(path).unwrap().lines().count()
    }

    const TEXT: (&str, &str) = ("content-type", "text/plain");
    const JSON: (&str, &str) = ("content-type", "application/json");
    const BYTES: (&str, &str) = ("content-type", "application/octet-stream");

    #[test]
    fn every_change_outlives_the_process_and_the_journal_keeps_only_live_streams() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl.streams");
        let keys = ["text", "json", "bytes", "fork", "gone", "source", "soon"];
        let before: Vec<_> = {
            let b = Journaled::file(&path, Memory::new()).unwrap();
            assert_eq!(
                put(&b, "text", &[TEXT, ("stream-ttl", "3600")], b"one"),
                201
            );
            let producer = [
                TEXT,
                ("producer-id", "p"),
                ("producer-epoch", "2"),
                ("producer-seq", "0"),
            ];
            assert_eq!(post(&b, "text", &producer, b" two"), 200);
            assert_eq!(
                post(&b, "text", &[TEXT, ("stream-seq", "0007")], b" three"),
                204
            );
            assert_eq!(put(&b, "json", &[JSON], br#"[{"a":1}, "two"]"#), 201);
            assert_eq!(
                post(&b, "json", &[JSON, ("stream-closed", "true")], b"[3]"),
                204
            );
            assert_eq!(put(&b, "bytes", &[BYTES], &[0, 159, 255, b'\n']), 201);
            assert_eq!(put(&b, "source", &[TEXT], b"abc"), 201);
            let fork = Address::new("t", "fork");
            let from = Some(Some(Address::new("t", "source")));
            let forked = [("stream-fork-offset", "0000000000000001")];
            let r = generic::create(&b, &fork, from, "", &headers(&forked), b"");
            assert_eq!(r.status(), StatusCode::CREATED);
            assert_eq!(post(&b, "fork", &[TEXT], b"d"), 204);
            // Deleted with a fork: kept, marked, until the fork goes.
            let deleted = generic::delete(&b, &Address::new("t", "source"));
            assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
            assert_eq!(put(&b, "gone", &[TEXT], b"x"), 201);
            let gone = generic::delete(&b, &Address::new("t", "gone"));
            assert_eq!(gone.status(), StatusCode::NO_CONTENT);
            let soon = [TEXT, ("stream-expires-at", "2000-01-01T00:00:00Z")];
            assert_eq!(put(&b, "soon", &soon, b"expired"), 201);
            keys.iter().map(|k| held(&b, k)).collect()
        };
        assert_eq!(before[4], None, "deleted");
        assert_eq!(before[6], None, "expired");
        assert!(before[5]
            .as_deref()
            .unwrap()
            .contains("deleted=true forks=1"));
        // Thirteen changes written; the reopened journal holds the five live streams.
        let b = Journaled::file(&path, Memory::new()).unwrap();
        let after: Vec<_> = keys.iter().map(|k| held(&b, k)).collect();
        assert_eq!(after, before);
        assert_eq!(lines(&path), 5);
        drop(b);
        // And again, from the rewritten journal.
        let b = Journaled::file(&path, Memory::new()).unwrap();
        assert_eq!(keys.iter().map(|k| held(&b, k)).collect::<Vec<_>>(), before);
        // Deleting the fork takes the deleted source with it, after a restart too.
        let r = generic::delete(&b, &Address::new("t", "fork"));
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        assert_eq!(held(&b, "source"), None);
        drop(b);
        let b = Journaled::file(&path, Memory::new()).unwrap();
        assert_eq!(held(&b, "fork"), None);
        assert_eq!(held(&b, "source"), None);
        assert_eq!(held(&b, "text"), before[0]);
        assert_eq!(lines(&path), 3);
    }

    #[test]
    fn a_producer_retry_after_a_restart_is_answered_as_a_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let producer = |seq: &'static str| {
            [
                TEXT,
                ("producer-id", "p"),
                ("producer-epoch", "0"),
                ("producer-seq", seq),
            ]
        };
        {
            let b = Journaled::file(&path, Memory::new()).unwrap();
            assert_eq!(put(&b, "s", &[TEXT], b""), 201);
            assert_eq!(post(&b, "s", &producer("0"), b"a"), 200);
            assert_eq!(post(&b, "s", &producer("1"), b"b"), 200);
        }
        let b = Journaled::file(&path, Memory::new()).unwrap();
        assert_eq!(post(&b, "s", &producer("1"), b"b"), 204, "a duplicate");
        assert_eq!(post(&b, "s", &producer("3"), b"d"), 409, "a gap");
        assert_eq!(post(&b, "s", &producer("2"), b"c"), 200);
        let stream = b.get(&Address::new("t", "s")).unwrap();
        assert_eq!(stream.lock().messages, [&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_a_damaged_one_is_refused_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        {
            let b = Journaled::file(&path, Memory::new()).unwrap();
            assert_eq!(put(&b, "s", &[TEXT], b"kept"), 201);
            assert_eq!(put(&b, "t", &[TEXT], b"also"), 201);
        }
        // A crash in the middle of the next write.
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(b"0badc0de {\"op\":\"app");
        std::fs::write(&path, &text).unwrap();
        let b = Journaled::file(&path, Memory::new()).unwrap();
        assert!(held(&b, "s").unwrap().contains("\"kept\""));
        assert_eq!(post(&b, "s", &[TEXT], b"!"), 204);
        drop(b);
        let b = Journaled::file(&path, Memory::new()).unwrap();
        assert!(held(&b, "s").unwrap().contains("[b\"kept\", b\"!\"]"));
        drop(b);
        // A complete line whose checksum fails: refused, naming the file and the line.
        let text = std::fs::read_to_string(&path).unwrap();
        let damaged = text.replacen("also", "alsO", 1);
        assert_ne!(damaged, text);
        std::fs::write(&path, damaged).unwrap();
        let e = Journaled::file(&path, Memory::new()).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.contains(&format!("{}:2: corrupt record", path.display()))
                && shown.contains("checksum"),
            "{shown}"
        );
    }

    #[test]
    fn one_server_at_a_time_holds_a_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let first = Journaled::file(&path, Memory::new()).unwrap();
        let second = Journaled::file(&path, Memory::new()).unwrap_err();
        assert!(matches!(second, Error::Locked { .. }), "{second}");
        drop(first);
        Journaled::file(&path, Memory::new()).unwrap();
    }

    #[test]
    fn a_journal_over_the_memory_bound_is_refused_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        {
            let b = Journaled::file(&path, Memory::new()).unwrap();
            assert_eq!(put(&b, "s", &[TEXT], &[b'x'; 1000]), 201);
        }
        let e = Journaled::file(&path, Memory::new().max_bytes(100)).unwrap_err();
        assert!(e.to_string().contains("more than the bound"), "{e}");
    }
}
