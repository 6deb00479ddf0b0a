//! The body of a catch-up read that reaches past one chunk: every record up to the tail as
//! the read found it, in one response, read a chunk at a time as the connection sends it.
//!
//! The protocol lets a server answer a catch-up read with any part of what follows the
//! offset (`Stream-Up-To-Date` absent, the client reads on from `Stream-Next-Offset`), and
//! chord's clients do. The official client (`@durable-streams/client`) with `live: false`
//! does not: it returns after its first response whatever it says, although its documentation
//! promises everything up to the tail ("catch-up only, stop at first upToDate"). So a
//! catch-up read is answered with all of it, up to date: one response, no client left short.
//! Nothing is gathered first: the body holds one chunk at a time (the connection's
//! send buffer bounds how far it runs ahead of the client), so a stream of any size is served
//! in the memory of one chunk per reader.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use crate::live::cursor::{self, Read};
use crate::live::log::Source;
use crate::live::sse::Pending;
use crate::live::tail::Tail;
use crate::store::{Address, CHECKPOINT};

/// Records read from the store: seq, whether a checkpoint, and batch.
type Records = Vec<(u64, bool, String)>;

/// The records after `after` up to `until` as the rest of a JSON array whose `[` and first
/// messages were sent already.
pub(super) struct CatchUpBody {
    /// The first frame: `[` and the first chunk's messages.
    first: Option<Bytes>,
    source: Arc<dyn Source>,
    tail: Arc<Tail>,
    address: Address,
    /// The last seq sent.
    after: u64,
    /// The last seq to send: the tail when the read started (the response's
    /// `Stream-Next-Offset`).
    until: u64,
    max_bytes: usize,
    /// A store read in flight.
    read: Option<Pending<io::Result<Records>>>,
    done: bool,
}

impl CatchUpBody {
    pub(super) fn new(
        first: Vec<u8>,
        source: Arc<dyn Source>,
        tail: Arc<Tail>,
        address: Address,
        (after, until): (u64, u64),
        max_bytes: usize,
    ) -> CatchUpBody {
        CatchUpBody {
            first: Some(Bytes::from(first)),
            source,
            tail,
            address,
            after,
            until,
            max_bytes,
            read: None,
            done: false,
        }
    }

    /// The frame for `records` (those past `until` left out, and checkpoints: the reader has
    /// what they restate), or the array's end; `None` when every record read was a checkpoint
    /// and more follow.
    fn frame<'a>(
        &mut self,
        records: impl IntoIterator<Item = (u64, bool, &'a str)>,
    ) -> io::Result<Option<Frame<Bytes>>> {
        let mut out = Vec::with_capacity(self.max_bytes + 64);
        let before = self.after;
        for (seq, checkpoint, batch) in records {
            if seq > self.until {
                break;
            }
            self.after = seq;
            if checkpoint {
                continue;
            }
            out.push(b',');
            out.extend_from_slice(batch.as_bytes());
        }
        if self.after == before {
            // Nothing past `after` although the tail was at `until`: the records went
            // (compacted meanwhile). The response cannot say so any more, so it breaks off,
            // and the client's next read gets its 410.
            return Err(gone(&self.address, self.after));
        }
        if self.after >= self.until {
            out.push(b']');
            self.done = true;
        }
        Ok((!out.is_empty()).then(|| Frame::data(Bytes::from(out))))
    }

    /// What a read's frame makes of the body: the frame, an error that ends it, or `None`
    /// (only checkpoints were read) to read on.
    fn answer(
        &mut self,
        frame: io::Result<Option<Frame<Bytes>>>,
    ) -> Option<io::Result<Frame<Bytes>>> {
        match frame {
            Ok(frame) => frame.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn gone(address: &Address, after: u64) -> io::Error {
    io::Error::other(format!(
        "the records of {address} after seq {after} went while a catch-up read sent them"
    ))
}

impl http_body::Body for CatchUpBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(read) = this.read.as_mut() {
                let Poll::Ready(records) = read.as_mut().poll(cx) else {
                    return Poll::Pending;
                };
                this.read = None;
                let frame = records.and_then(|records| {
                    this.frame(
                        records
                            .iter()
                            .map(|(seq, c, batch)| (*seq, *c, batch.as_str())),
                    )
                });
                match this.answer(frame) {
                    Some(answer) => return Poll::Ready(Some(answer)),
                    None => continue,
                }
            }
            match cursor::read(
                &this.source,
                &this.address,
                &this.tail,
                this.after,
                this.max_bytes,
            ) {
                Read::Cached(entries) => {
                    let frame =
                        this.frame(entries.iter().map(|e| (e.seq, e.checkpoint, &*e.batch)));
                    match this.answer(frame) {
                        Some(answer) => return Poll::Ready(Some(answer)),
                        None => continue,
                    }
                }
                Read::Gone => {
                    this.done = true;
                    return Poll::Ready(Some(Err(gone(&this.address, this.after))));
                }
                Read::Stored(read) => {
                    let (address, after) = (this.address.clone(), this.after);
                    this.read = Some(Box::pin(async move {
                        match read.await {
                            Ok(Some(records)) => Ok(records
                                .into_iter()
                                .map(|r| (r.seq, r.tag.as_deref() == Some(CHECKPOINT), r.batch))
                                .collect::<Vec<_>>()),
                            Ok(None) => Err(gone(&address, after)),
                            Err(why) => Err(io::Error::other(why)),
                        }
                    }));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }
}
