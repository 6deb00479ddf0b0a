//! Writes to a [`Backend`](crate::streams::Backend) stream: create (with its config, TTL
//! and expiry), append (with idempotent producers), close, delete.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use serde::de::{Deserializer as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::read::is_start;
use super::{empty, gone, header_str, is_true, meta, text, Refusal, MESSAGE_COST};
use crate::safe_integer::MAX_SAFE_INTEGER as MAX_SAFE;
use crate::store::Address;
use crate::streams::config::{parse_rfc3339, Config};
use crate::streams::journal::{Change, Journal};
use crate::streams::memory::{Backend, MemoryStream, State, MAX_TTL};
use crate::streams::Offset;

/// The media type of a `Content-Type`, lower case, without parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = header_str(headers, header::CONTENT_TYPE.as_str())?;
    let t = v.split(';').next()?.trim().to_ascii_lowercase();
    (!t.is_empty()).then_some(t)
}

/// Parses `Stream-TTL`: a decimal integer without sign or leading zeros.
fn parse_ttl(v: &str) -> Option<u64> {
    let ok =
        !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0'));
    ok.then(|| v.parse().ok()).flatten()
}

/// What messages cost a stream: their bytes, each with [`MESSAGE_COST`].
pub(crate) fn cost(messages: &[Bytes]) -> usize {
    messages.iter().map(|m| m.len() + MESSAGE_COST).sum()
}

/// A body's messages, counted before any is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Measured {
    count: usize,
    bytes: usize,
}

impl Measured {
    /// What the messages will cost the stream.
    fn cost(self) -> usize {
        self.bytes
            .saturating_add(self.count.saturating_mul(MESSAGE_COST))
    }
}

/// Counts and checks the messages of a body: one for bytes; for JSON, the value, or each
/// element of an array. Read as it goes: nothing is built, so a body refused for what its
/// messages would cost never costs more than itself.
fn measure(json: bool, body: &[u8], creating: bool) -> Result<Measured, Refusal> {
    if body.is_empty() {
        return Ok(Measured::default());
    }
    if !json {
        return Ok(Measured {
            count: 1,
            bytes: body.len(),
        });
    }
    let mut measured = Measured::default();
    each_json(body, &mut |m| {
        measured.count += 1;
        measured.bytes += m.len();
    })
    .map_err(|e| Refusal::new(StatusCode::BAD_REQUEST, format!("invalid JSON: {e}\n")))?;
    if measured.count == 0 && !creating {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "an empty JSON array appends nothing\n",
        ));
    }
    Ok(measured)
}

/// The messages of a body [`measure`] accepted, their bytes copied into one buffer that they
/// share (no allocation per message).
fn build(json: bool, body: &[u8], measured: Measured) -> Vec<Bytes> {
    if body.is_empty() {
        return Vec::new();
    }
    if !json {
        return vec![Bytes::copy_from_slice(body)];
    }
    let mut out = Vec::with_capacity(measured.count);
    let mut buffer = BytesMut::with_capacity(measured.bytes);
    // Cannot fail: `measure` parsed the same body.
    let _ = each_json(body, &mut |m| {
        buffer.extend_from_slice(m.as_bytes());
        out.push(buffer.split().freeze());
    });
    out
}

/// `messages` in a buffer of their own: a fork's copy of its source's, which must not keep
/// the rest of the source's buffers alive once the source goes (a fork is charged for its own
/// messages only).
fn copied(messages: &[Bytes]) -> Vec<Bytes> {
    let mut buffer = BytesMut::with_capacity(messages.iter().map(Bytes::len).sum());
    messages
        .iter()
        .map(|m| {
            buffer.extend_from_slice(m);
            buffer.split().freeze()
        })
        .collect()
}

/// Calls `each` with every message of a JSON body, in order, as its text: each element of an
/// array, or the one value. Parsed as it goes, never into a tree or a list.
fn each_json(body: &[u8], each: &mut dyn FnMut(&str)) -> Result<(), serde_json::Error> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_some_and(|i| body[i] == b'[') {
        let mut de = serde_json::Deserializer::from_slice(body);
        de.deserialize_seq(Each(each))?;
        return de.end();
    }
    let value: &RawValue = serde_json::from_slice(body)?;
    each(value.get().trim());
    Ok(())
}

/// Walks a JSON array one element at a time, each borrowed from the body.
struct Each<'a>(&'a mut dyn FnMut(&str));

impl<'de> Visitor<'de> for Each<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(m) = seq.next_element::<&'de RawValue>()? {
            (self.0)(m.get());
        }
        Ok(())
    }
}

/// `PUT` on an address no chord log holds.
pub(crate) fn create(
    backend: &dyn Backend,
    address: &Address,
    fork: Option<Option<Address>>,
    location: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let mut content_type = media_type(headers).unwrap_or_else(|| "application/octet-stream".into());
    let mut ttl = match header_str(headers, "stream-ttl") {
        None => None,
        Some(v) => match parse_ttl(v.trim()) {
            Some(t) if t <= MAX_TTL.as_secs() => Some(t),
            Some(_) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("Stream-TTL over the maximum of {} s\n", MAX_TTL.as_secs()),
                )
            }
            None => return text(StatusCode::BAD_REQUEST, "malformed Stream-TTL\n"),
        },
    };
    let mut expires_at = match header_str(headers, "stream-expires-at") {
        None => None,
        Some(v) => match parse_rfc3339(v.trim()) {
            Ok(at) => Some((v.trim().to_owned(), at)),
            Err(why) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("malformed Stream-Expires-At: {why}\n"),
                )
            }
        },
    };
    if ttl.is_some() && expires_at.is_some() {
        return text(
            StatusCode::BAD_REQUEST,
            "Stream-TTL and Stream-Expires-At exclude each other\n",
        );
    }
    let closing = is_true(headers, "stream-closed");
    let fork_headers = ["stream-fork-offset", "stream-fork-sub-offset"];
    if fork.is_none() && fork_headers.iter().any(|h| headers.contains_key(*h)) {
        return text(
            StatusCode::BAD_REQUEST,
            "Stream-Fork-Offset and -Sub-Offset need Stream-Forked-From\n",
        );
    }
    // A fork copies the source's messages up to its fork point (copy-on-fork).
    let mut inherited = Vec::new();
    let mut fork_of = None;
    if let Some(from) = fork {
        let Some(from) = from else {
            return text(StatusCode::BAD_REQUEST, "malformed Stream-Forked-From\n");
        };
        let Some(source) = backend.get(&from) else {
            return text(StatusCode::NOT_FOUND, "no such source stream\n");
        };
        let state = source.lock();
        if state.deleted {
            return text(StatusCode::CONFLICT, "the source stream is deleted\n");
        }
        if media_type(headers).is_some_and(|t| t != source.config.content_type) {
            return text(
                StatusCode::CONFLICT,
                "the source stream has another content type\n",
            );
        }
        content_type.clone_from(&source.config.content_type);
        let tail = state.messages.len() as u64;
        let at = match header_str(headers, "stream-fork-offset") {
            None => tail,
            // The start of the stream may also be named by `-1` or by an all-zero offset of
            // the form `0…0_0…0` (the reference server's, which its conformance suite sends
            // as "from the start"); the protocol leaves offsets a server did not issue
            // undefined, and these have one sensible meaning.
            Some(v) if is_start(v.trim()) => 0,
            Some(v) => match v.trim().parse::<Offset>() {
                Ok(o) if o.seq() <= tail => o.seq(),
                _ => return text(StatusCode::BAD_REQUEST, "bad Stream-Fork-Offset\n"),
            },
        };
        let sub = match header_str(headers, "stream-fork-sub-offset") {
            None => 0,
            Some(v) => match parse_ttl(v.trim()) {
                Some(n) => n,
                None => return text(StatusCode::BAD_REQUEST, "bad Stream-Fork-Sub-Offset\n"),
            },
        };
        let upto = usize::try_from(at).unwrap_or(usize::MAX);
        inherited.extend_from_slice(&state.messages[..upto]);
        if sub > 0 {
            let sub = usize::try_from(sub).unwrap_or(usize::MAX);
            let json = source.config.content_type == "application/json";
            match state.messages.get(upto..) {
                Some(rest) if json && sub <= rest.len() => {
                    inherited.extend_from_slice(&rest[..sub]);
                }
                Some([next, ..]) if !json && sub <= next.len() => {
                    inherited.push(next.slice(..sub));
                }
                _ => {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "Stream-Fork-Sub-Offset is past the next data boundary\n",
                    )
                }
            }
        }
        inherited = copied(&inherited);
        if ttl.is_none() && expires_at.is_none() {
            ttl = source.config.ttl;
            expires_at.clone_from(&source.config.expires_at);
        }
        fork_of = Some((from, at, sub));
    }
    let config = Config {
        content_type,
        ttl,
        expires_at,
        fork_of,
    };
    let json = config.content_type == "application/json";
    let measured = match measure(json, body, true) {
        Ok(m) => m,
        Err(r) => return r.into(),
    };
    let size = cost(&inherited).saturating_add(measured.cost());
    if size > backend.max_stream_bytes() {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the stream would be too large\n",
        );
    }
    let mut initial = inherited;
    initial.append(&mut build(json, body, measured));
    // With a journal, a stream new at its address is written there before it is made:
    // creations and deletions hold the journal's order until applied.
    let journal = backend.journal();
    let _structure = journal.map(Journal::structure);
    let new_here = journal.is_some() && backend.get(address).is_none();
    // The new stream's bytes are reserved before it is inserted, so that no reader sees a
    // stream the bound then refuses; given back when it is not inserted after all.
    let reserved = backend.reserve(size);
    if let (Some(journal), true, Ok(())) = (journal, new_here, &reserved) {
        let change = Change::Create {
            address,
            config: &config,
            messages: &initial,
            closed: closing,
        };
        if let Err((code, why)) = journal.write(&change) {
            backend.release(size);
            return text(code, why);
        }
    }
    let fresh = MemoryStream::new(config.clone());
    {
        let mut state = fresh.lock();
        state.bytes = size;
        state.messages = initial;
        state.closed = closing;
    }
    let (stream, created) = match reserved {
        Ok(()) => match backend.insert(address, fresh) {
            Ok((stream, created)) => {
                if !created {
                    backend.release(size);
                }
                (stream, created)
            }
            Err(full) => {
                backend.release(size);
                if let (Some(journal), true) = (journal, new_here) {
                    // The creation written above did not happen: the journal says so too.
                    if let Err((code, why)) = journal.write(&Change::Delete { address }) {
                        return text(code, why);
                    }
                }
                return text(StatusCode::INSUFFICIENT_STORAGE, format!("{full}\n"));
            }
        },
        // No room for the new stream's bytes: a `PUT` of a stream already there creates
        // nothing, and is answered as ever.
        Err(full) => match backend.get(address) {
            Some(stream) => (stream, false),
            None => return text(StatusCode::INSUFFICIENT_STORAGE, format!("{full}\n")),
        },
    };
    if created {
        if let Some(source) = config.fork_of.as_ref().and_then(|f| backend.get(&f.0)) {
            source.lock().forks += 1;
        }
    }
    let state = stream.lock();
    if !created {
        if state.deleted {
            return text(StatusCode::CONFLICT, "the stream is deleted\n");
        }
        let same = stream.config.content_type == config.content_type
            && stream.config.fork_of == config.fork_of
            && stream.config.ttl == config.ttl
            && stream.config.expires_at.as_ref().map(|e| &e.0)
                == config.expires_at.as_ref().map(|e| &e.0)
            && state.closed == closing;
        if !same {
            return text(
                StatusCode::CONFLICT,
                "the stream exists with another configuration\n",
            );
        }
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    meta(r.headers_mut(), &stream, &state);
    if created {
        if let Ok(v) = HeaderValue::from_str(location) {
            r.headers_mut().insert(header::LOCATION, v);
        }
    }
    r
}

/// The producer headers of a request, all or none.
struct Producer {
    id: String,
    epoch: u64,
    seq: u64,
}

fn producer(headers: &HeaderMap) -> Result<Option<Producer>, Refusal> {
    let id = header_str(headers, "producer-id");
    let epoch = header_str(headers, "producer-epoch");
    let seq = header_str(headers, "producer-seq");
    let bad = |why: &str| Refusal::new(StatusCode::BAD_REQUEST, format!("{why}\n"));
    match (id, epoch, seq) {
        (None, None, None) => Ok(None),
        (Some(id), Some(epoch), Some(seq)) => {
            if id.is_empty() {
                return Err(bad("Producer-Id must not be empty"));
            }
            let int = |v: &str| {
                v.bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| v.parse::<u64>().ok())
                    .flatten()
                    .filter(|n| *n <= MAX_SAFE)
            };
            let (Some(epoch), Some(seq)) = (int(epoch), int(seq)) else {
                return Err(bad("Producer-Epoch and Producer-Seq are integers"));
            };
            Ok(Some(Producer {
                id: id.to_owned(),
                epoch,
                seq,
            }))
        }
        _ => Err(bad(
            "Producer-Id, Producer-Epoch and Producer-Seq go together",
        )),
    }
}

/// `POST` (append, close) on a stream the backend holds.
pub(crate) fn append(
    backend: &dyn Backend,
    address: &Address,
    stream: &Arc<MemoryStream>,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let closing = is_true(headers, "stream-closed");
    let producer = match producer(headers) {
        Ok(p) => p,
        Err(r) => return r.into(),
    };
    if body.is_empty() && !closing {
        return text(StatusCode::BAD_REQUEST, "an empty body appends nothing\n");
    }
    let mut state = stream.lock();
    if state.retired {
        // Deleted (or dropped as expired) since the router found it.
        return text(StatusCode::NOT_FOUND, "no such stream\n");
    }
    let respond = |code: StatusCode, state: &State| {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = code;
        meta(r.headers_mut(), stream, state);
        r
    };
    if state.closed {
        let same = producer
            .as_ref()
            .is_some_and(|p| state.closed_by.as_ref() == Some(&(p.id.clone(), p.epoch, p.seq)));
        if same || (closing && body.is_empty()) {
            let mut r = respond(StatusCode::NO_CONTENT, &state);
            if let Some(p) = &producer {
                r.headers_mut()
                    .insert("producer-epoch", HeaderValue::from(p.epoch));
                r.headers_mut()
                    .insert("producer-seq", HeaderValue::from(p.seq));
            }
            return r;
        }
        return respond(StatusCode::CONFLICT, &state);
    }
    if !body.is_empty() {
        match media_type(headers) {
            None => return text(StatusCode::BAD_REQUEST, "Content-Type is missing\n"),
            Some(t) if t != stream.config.content_type => {
                return text(
                    StatusCode::CONFLICT,
                    format!("the stream is {}\n", stream.config.content_type),
                )
            }
            Some(_) => {}
        }
    }
    let measured = match measure(stream.json(), body, false) {
        Ok(m) => m,
        Err(r) => return r.into(),
    };
    // Producer validation (the stream's lock serializes it with the append).
    let mut accepted = None;
    if let Some(p) = &producer {
        match state.producers.get(&p.id).copied() {
            Some((epoch, _)) if p.epoch < epoch => {
                let mut r = text(StatusCode::FORBIDDEN, "stale producer epoch\n");
                r.headers_mut()
                    .insert("producer-epoch", HeaderValue::from(epoch));
                return r;
            }
            Some((epoch, last)) if p.epoch == epoch => {
                if p.seq <= last {
                    let mut r = respond(StatusCode::NO_CONTENT, &state);
                    r.headers_mut()
                        .insert("producer-epoch", HeaderValue::from(epoch));
                    r.headers_mut()
                        .insert("producer-seq", HeaderValue::from(last));
                    return r;
                }
                if p.seq > last + 1 {
                    let mut r = text(StatusCode::CONFLICT, "producer sequence gap\n");
                    let h = r.headers_mut();
                    h.insert("producer-expected-seq", HeaderValue::from(last + 1));
                    h.insert("producer-received-seq", HeaderValue::from(p.seq));
                    return r;
                }
            }
            _ => {
                if p.seq != 0 {
                    let mut r = text(
                        StatusCode::BAD_REQUEST,
                        "a new producer epoch starts at seq 0\n",
                    );
                    if let Some((epoch, _)) = state.producers.get(&p.id) {
                        r.headers_mut()
                            .insert("producer-epoch", HeaderValue::from(*epoch));
                    }
                    return r;
                }
            }
        }
        accepted = Some((p.id.clone(), p.epoch, p.seq));
    }
    if let Some(seq) = header_str(headers, "stream-seq") {
        if state.stream_seq.as_deref().is_some_and(|last| seq <= last) {
            return text(StatusCode::CONFLICT, "Stream-Seq does not increase\n");
        }
    }
    let size = measured.cost();
    if state.bytes.saturating_add(size) > backend.max_stream_bytes() {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the stream would be too large\n",
        );
    }
    // The last refusal: once reserved, the bytes are appended (under the stream's lock, so
    // a backend dropping the stream meanwhile waits, then gives them back with the rest).
    if let Err(full) = backend.reserve(size) {
        return text(StatusCode::INSUFFICIENT_STORAGE, format!("{full}\n"));
    }
    let messages = build(stream.json(), body, measured);
    let stream_seq = header_str(headers, "stream-seq");
    if let Some(journal) = backend.journal() {
        let change = Change::Append {
            address,
            messages: &messages,
            producer: accepted.as_ref(),
            stream_seq,
            close: closing,
        };
        if let Err((code, why)) = journal.write(&change) {
            backend.release(size);
            return text(code, why);
        }
    }
    if let Some(seq) = stream_seq {
        state.stream_seq = Some(seq.to_owned());
    }
    state.bytes += size;
    state.messages.extend(messages);
    if let Some((id, epoch, seq)) = &accepted {
        state.producers.insert(id.clone(), (*epoch, *seq));
    }
    if closing {
        state.closed = true;
        state.closed_by = accepted.clone();
    }
    drop(state);
    stream.touch();
    stream.changed();
    let state = stream.lock();
    let code = if accepted.is_some() && !body.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::NO_CONTENT
    };
    let mut r = respond(code, &state);
    if let Some((_, epoch, seq)) = accepted {
        r.headers_mut()
            .insert("producer-epoch", HeaderValue::from(epoch));
        r.headers_mut()
            .insert("producer-seq", HeaderValue::from(seq));
    }
    r
}

/// `DELETE`.
///
/// A stream with forks is only marked deleted (soft delete: 410, its path not reusable) until
/// its last fork goes; deleting a fork may so remove its source, and so on up the chain.
pub(crate) fn delete(backend: &dyn Backend, address: &Address) -> Response {
    let journal = backend.journal();
    let _structure = journal.map(Journal::structure);
    let Some(stream) = backend.get(address) else {
        return text(StatusCode::NOT_FOUND, "no such stream\n");
    };
    {
        let mut state = stream.lock();
        if state.deleted {
            return gone();
        }
        if let Some(journal) = journal {
            if let Err((code, why)) = journal.write(&Change::Delete { address }) {
                return text(code, why);
            }
        }
        if state.forks > 0 {
            state.deleted = true;
            drop(state);
            stream.changed();
            return empty(StatusCode::NO_CONTENT);
        }
    }
    backend.remove(address);
    stream.changed();
    let mut up = stream.config.fork_of.clone();
    while let Some((from, _, _)) = up.take() {
        let Some(source) = backend.get(&from) else {
            break;
        };
        let mut state = source.lock();
        state.forks = state.forks.saturating_sub(1);
        if state.deleted && state.forks == 0 {
            drop(state);
            backend.remove(&from);
            up.clone_from(&source.config.fork_of);
        }
    }
    empty(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls() {
        assert_eq!(parse_ttl("3600"), Some(3600));
        assert_eq!(parse_ttl("0"), Some(0));
        for bad in ["+3600", "03600", "3600.0", "3.6e3", "", "-1"] {
            assert_eq!(parse_ttl(bad), None, "{bad}");
        }
    }

    /// A body's messages as a write stores them.
    fn messages(json: bool, body: &[u8], creating: bool) -> Result<Vec<Bytes>, Refusal> {
        measure(json, body, creating).map(|m| build(json, body, m))
    }

    #[test]
    fn a_body_is_measured_before_it_is_built_each_message_with_its_handle() {
        let body = b" [1, \"two\" ,{\"3\": [3]}] ";
        let measured = measure(true, body, false).unwrap();
        assert_eq!(
            measured,
            Measured {
                count: 3,
                bytes: 1 + 5 + 10
            }
        );
        assert_eq!(measured.cost(), 16 + 3 * MESSAGE_COST);
        let built = build(true, body, measured);
        assert_eq!(cost(&built), measured.cost());
        assert_eq!(built, [&b"1"[..], b"\"two\"", br#"{"3": [3]}"#]);
        // Bytes are one message, whatever they hold.
        let bytes = measure(false, body, false).unwrap();
        assert_eq!(
            bytes,
            Measured {
                count: 1,
                bytes: body.len()
            }
        );
        assert_eq!(cost(&build(false, body, bytes)), bytes.cost());
        assert_eq!(measure(false, b"", false).unwrap().cost(), 0);
        // A fork's copy holds the same messages in a buffer of its own.
        let copy = copied(&built);
        assert_eq!(copy, built);
        assert!(copy
            .iter()
            .zip(&built)
            .all(|(a, b)| a.as_ptr() != b.as_ptr()));
    }

    #[test]
    fn json_bodies_are_framed_as_messages() {
        let m = messages(true, br#"[{"a":1}, 2]"#, false).unwrap();
        assert_eq!(
            m,
            [Bytes::from_static(br#"{"a":1}"#), Bytes::from_static(b"2")]
        );
        assert_eq!(messages(true, br#"{"a":1}"#, false).unwrap().len(), 1);
        assert!(messages(true, b"[]", false).is_err());
        assert!(messages(true, b"[]", true).unwrap().is_empty());
        assert!(messages(true, b"{", false).is_err());
    }
}
