//! The journal of protocol streams: each change of a stream written, durably, before it is
//! applied; read back in order when the journal is opened (see
//! [`Journaled`](super::Journaled), the backend that replays it).
//!
//! One journal per server, beside the chord store it serves (a file, or a table of a
//! PostgreSQL store's schema), never inside it: a chord log has one writer, often a producer
//! process, and the protocol streams are written by this server. Each record is one change of
//! one stream: its creation (with its first messages, a fork's inherited ones included), an
//! append (its messages, the producer and `Stream-Seq` it carried, a close), a delete. A change
//! is written (and, for a file, flushed to disk) before it is applied and answered, so a
//! stream a client was told about survives a crash; a change the journal refuses is answered
//! `503` and applied nowhere.

mod entry;
mod file;
#[cfg(feature = "postgres")]
mod postgres;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use axum::http::StatusCode;

use self::entry::Entry;
use crate::store::Error;

pub(crate) use self::entry::{Change, Record, Whole};

/// Where a journal's records are kept.
trait Medium: Send {
    /// Every record, in the order written.
    fn load(&mut self) -> Result<Vec<Vec<u8>>, Error>;
    /// Adds `record` at the end, durably, before it returns.
    fn write(&mut self, record: &[u8]) -> Result<(), Error>;
    /// Replaces every record by `records`, all or nothing.
    fn rewrite(&mut self, records: &[Vec<u8>]) -> Result<(), Error>;
    /// What errors name: the file or the database.
    fn name(&self) -> String;
}

/// The journal of a [`Journaled`](super::Journaled) backend: opaque, reached by the
/// protocol's writes through [`Backend::journal`](super::Backend::journal).
pub struct Journal {
    medium: Mutex<Box<dyn Medium>>,
    /// Held across a create or a delete, from the look at the address to the change applied:
    /// the journal's order of creations and deletions is the order they happened in.
    structure: Mutex<()>,
    name: String,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("at", &self.name).finish()
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Journal {
    /// The journal file at `path`, created if missing, locked while the journal lives.
    pub(crate) fn file(path: &Path) -> Result<Journal, Error> {
        Ok(Journal::of(Box::new(file::FileMedium::open(path)?)))
    }

    /// The table `chord_protocol_streams` in the schema of the PostgreSQL URL `url`, created
    /// if missing, under a session lock while the journal lives.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(url: &str) -> Result<Journal, Error> {
        Ok(Journal::of(Box::new(postgres::TableMedium::open(url)?)))
    }

    fn of(medium: Box<dyn Medium>) -> Journal {
        Journal {
            name: medium.name(),
            medium: Mutex::new(medium),
            structure: Mutex::new(()),
        }
    }

    /// Every record, in the order written. A record that is not one is
    /// [`Error::Corrupt`], naming its line.
    pub(crate) fn records(&self) -> Result<Vec<Record>, Error> {
        let records = blocking(|| lock(&self.medium).load())?;
        records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Entry::from_record(r)
                    .and_then(|e| e.decode())
                    .map_err(|why| self.corrupt(i, why))
            })
            .collect()
    }

    /// The error of record `index` (from 0), which cannot be what it says.
    pub(crate) fn corrupt(&self, index: usize, reason: String) -> Error {
        Error::Corrupt {
            path: self.name.clone().into(),
            line: index as u64 + 1,
            reason,
        }
    }

    /// Replaces every record by one creation each of `streams`, all or nothing.
    pub(crate) fn rewrite(&self, streams: &[Whole<'_>]) -> Result<(), Error> {
        let records: Vec<_> = streams
            .iter()
            .map(|w| Entry::whole(w).to_record())
            .collect();
        blocking(|| lock(&self.medium).rewrite(&records))
    }

    /// Holds creations and deletions back until the guard drops.
    pub(crate) fn structure(&self) -> MutexGuard<'_, ()> {
        lock(&self.structure)
    }

    /// Writes `change` durably. The answer to send instead of applying it, when it cannot be
    /// written.
    pub(crate) fn write(&self, change: &Change<'_>) -> Result<(), (StatusCode, String)> {
        let record = Entry::of(change).to_record();
        let written = blocking(|| lock(&self.medium).write(&record));
        written.map_err(|e| {
            tracing::error!(journal = %self.name, error = %super::health::chain(&e), "a protocol stream's change was not written");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the change could not be kept: {}\n", super::health::chain(&e)),
            )
        })
    }
}

/// Runs blocking `f` (a disk flush, a database round trip) without stalling the runtime's other
/// tasks where the runtime allows it (a multi-threaded tokio runtime); on a thread of its own
/// under another runtime (the PostgreSQL client runs a runtime of its own, which cannot start
/// on a thread driving one); in place outside any runtime.
fn blocking<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        Ok(_) => std::thread::scope(|s| match s.spawn(f).join() {
            Ok(t) => t,
            Err(panic) => std::panic::resume_unwind(panic),
        }),
        Err(_) => f(),
    }
}
