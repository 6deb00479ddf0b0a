//! The embedded default backend: one JSONL file, one record per line.

mod line;

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::line::{Line, RecordLine};
use super::group::Syncer;
use super::{check_batch, Address, Durability, Error, Order, Page, ReadOptions, Record, Result};
use super::{Store, BASE, LEASE};

/// A log in one JSONL file: no server, no dependency beyond `serde_json`.
///
/// The file holds one JSON object per line (the format is described below). Addresses are
/// interned within the file: the first record of an address is preceded by a definition line
/// giving it a short id, and every record names the id, so a long namespace and key are not
/// repeated on every line. Sequence numbers are global to the file.
///
/// ```text
/// {"chord":1}
/// {"def":0,"ns":"lanes","key":"main"}
/// {"s":1,"a":0,"t":"base","b":[["r",{"text":""}]]}
/// {"s":2,"a":0,"b":[["a",["text"],"Hello"]]}
/// ```
///
/// **Opening** reads the whole file once and keeps a small index in memory (per address: each
/// record's seq, byte offset and tag, and where the base records are), so reads never rescan
/// the file: a page costs one positioned read per record. A torn final line, left by a
/// process that died in the middle of a write, is detected, discarded whole and cut off the
/// file ([`torn_tail`](JsonlStore::torn_tail) reports it); every earlier record survives. A
/// damaged complete line anywhere is [`Error::Corrupt`], naming the file, the line and what is
/// wrong: never skipped.
///
/// **One writer per log.** [`open`](JsonlStore::open) takes an exclusive operating-system
/// lock on the file; a second writer, in this process or another, gets [`Error::Locked`].
/// [`open_read_only`](JsonlStore::open_read_only) takes no lock and never changes the file,
/// so tools can look inside a log a producer is writing.
///
/// **Sequence numbers are never reused**, also across restarts: under
/// [`Durability::Grouped`] the writer reserves seqs in blocks of 1,024 with a `{"lease":N}`
/// line flushed to disk before any of them is handed out, and a reopened log continues after
/// the last lease. Seqs therefore have gaps after a restart.
///
/// # Examples
///
/// ```
/// use chord::store::{Address, Durability, JsonlStore, ReadOptions, Store, BASE};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("log.jsonl");
/// let lane = Address::new("lanes", "main");
///
/// let mut log = JsonlStore::open(&path, Durability::EveryAppend)?;
/// let first = log.append(&lane, r#"[["r",{"n":0}]]"#, Some(BASE))?;
/// let second = log.append(&lane, r#"[["s",["n"],1]]"#, None)?;
/// assert!(second > first);
/// assert_eq!(log.durable_seq(), Some(second)); // EveryAppend: on disk when append returns
///
/// // A second writer is refused while the first holds the log.
/// assert!(JsonlStore::open(&path, Durability::EveryAppend).is_err());
///
/// let page = log.read_list(&lane, &ReadOptions::desc().stop_at_tag(BASE))?;
/// let seqs: Vec<u64> = page.records.iter().map(|r| r.seq).collect();
/// assert_eq!(seqs, [second, first]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JsonlStore {
    path: PathBuf,
    file: File,
    /// `None` when opened read-only.
    writer: Option<Writer>,
    /// Byte length of the complete lines: where the next line goes.
    end: u64,
    lines: u64,
    addresses: Vec<Address>,
    ids: HashMap<Address, u32>,
    lists: Vec<List>,
    tags: Vec<String>,
    last_seq: u64,
    /// Every seq handed out so far is at most this (see the lease lines).
    lease_end: u64,
    /// The seq the next append gets: past every seq in the file and every lease.
    next_seq: u64,
    torn: Option<TornTail>,
}

struct Writer {
    durability: Durability,
    syncer: Syncer,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

/// One address's records, in seq order.
#[derive(Debug, Default)]
struct List {
    entries: Vec<Entry>,
    /// Positions in `entries` of the records tagged [`BASE`].
    bases: Vec<usize>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    seq: u64,
    offset: u64,
    /// Line length without its newline.
    len: u32,
    /// 0: no tag; otherwise an index into `tags`, plus one.
    tag: u32,
    line: u64,
}

/// A torn final line found when a log was opened: what a process that died in the middle of
/// a write left behind. A writer discards it (the file is cut back to `offset`); a reader
/// ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Its line number (1-based).
    pub line: u64,
    /// Byte offset where it starts, which is the file's length after the repair.
    pub offset: u64,
    /// How many bytes it had.
    pub len: u64,
}

/// Bytes between two progress reports while a log is read at open.
const PROGRESS_STEP: u64 = 1 << 20;

impl JsonlStore {
    /// Opens (or creates) a log for writing, with the given durability.
    ///
    /// Takes an exclusive lock on the file, reads it once to build the index, repairs a torn
    /// final line, and flushes the file so that everything in it is durable.
    ///
    /// Cost: `O(file size)`, once.
    ///
    /// # Errors
    ///
    /// [`Error::Locked`] when another writer has the log open; [`Error::Corrupt`] for a
    /// damaged complete line (file, line and reason), or a file that is not a chord log;
    /// [`Error::Io`] when the file cannot be opened, read, repaired or flushed.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<JsonlStore> {
        let path = path.as_ref().to_path_buf();
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_error(&path, "open"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::Locked { path }),
            Err(TryLockError::Error(e)) => return Err(io_error(&path, "lock")(e)),
        }
        let mut store = JsonlStore::load(path, file, &mut |_, _| {})?;
        if let Some(torn) = store.torn {
            store
                .file
                .set_len(torn.offset)
                .map_err(io_error(&store.path, "repair a torn tail"))?;
        }
        if store.end == 0 {
            (&store.file)
                .write_all(line::header().as_bytes())
                .map_err(io_error(&store.path, "write the header"))?;
            store.end = line::header().len() as u64;
            store.lines = 1;
        }
        store
            .file
            .sync_all()
            .map_err(io_error(&store.path, "flush"))?;
        if !existed {
            sync_parent(&store.path)?;
        }
        let file = store
            .file
            .try_clone()
            .map_err(io_error(&store.path, "open"))?;
        let flush_path = store.path.clone();
        let flush = Arc::new(move |target: u64| {
            file.sync_data()
                .map(|()| target)
                .map_err(io_error(&flush_path, "flush"))
        });
        store.writer = Some(Writer {
            durability,
            syncer: Syncer::new(durability, store.last_seq, flush),
        });
        Ok(store)
    }

    /// Opens a log for reading only: no lock, no repair, no writes.
    ///
    /// Safe while a writer is appending: a final line still being written is ignored (and
    /// reported by [`torn_tail`](JsonlStore::torn_tail)). The store sees the records present
    /// when it was opened.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a damaged complete line; [`Error::Io`] when the file cannot be
    /// opened or read.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<JsonlStore> {
        JsonlStore::open_read_only_with_progress(path, |_, _| {})
    }

    /// As [`open_read_only`](JsonlStore::open_read_only), calling `progress(bytes_read,
    /// total_bytes)` about every mebibyte while the file is read, for a progress bar.
    ///
    /// # Errors
    ///
    /// As [`open_read_only`](JsonlStore::open_read_only).
    pub fn open_read_only_with_progress(
        path: impl AsRef<Path>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<JsonlStore> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(io_error(&path, "open"))?;
        JsonlStore::load(path, file, &mut progress)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The torn final line found at open, if any (discarded by a writer, ignored by a reader).
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// The log's durability, `None` when it was opened read-only.
    pub fn durability(&self) -> Option<Durability> {
        self.writer.as_ref().map(|w| w.durability)
    }

    /// How many records the log holds, over all addresses.
    pub fn len(&self) -> usize {
        self.lists.iter().map(|l| l.entries.len()).sum()
    }

    /// How many records `address` has.
    pub fn count(&self, address: &Address) -> usize {
        self.list(address).map_or(0, |l| l.entries.len())
    }

    /// Whether the log holds no record.
    pub fn is_empty(&self) -> bool {
        self.lists.iter().all(|l| l.entries.is_empty())
    }

    /// Bytes in the log's complete lines.
    pub fn size(&self) -> u64 {
        self.end
    }

    /// How many records recovering `address` replays: those from its last base record
    /// (included) to its end, or to `at` when given (all of them if there is no base).
    ///
    /// Cost: `O(log n)` from the index, nothing read.
    pub fn replay_len(&self, address: &Address, at: Option<u64>) -> usize {
        let Some(list) = self.list(address) else {
            return 0;
        };
        let end = match at {
            Some(at) => list.entries.partition_point(|e| e.seq <= at),
            None => list.entries.len(),
        };
        let bases_before = list.bases.partition_point(|&i| i < end);
        match bases_before.checked_sub(1) {
            Some(b) => end - list.bases[b],
            None => end,
        }
    }

    fn list(&self, address: &Address) -> Option<&List> {
        self.ids.get(address).map(|&id| &self.lists[id as usize])
    }

    /// Reads the file once, building the index.
    fn load(path: PathBuf, file: File, progress: &mut dyn FnMut(u64, u64)) -> Result<JsonlStore> {
        let total = file
            .metadata()
            .map_err(io_error(&path, "read metadata"))?
            .len();
        let mut store = JsonlStore {
            path,
            file,
            writer: None,
            end: 0,
            lines: 0,
            addresses: Vec::new(),
            ids: HashMap::new(),
            lists: Vec::new(),
            tags: Vec::new(),
            last_seq: 0,
            lease_end: 0,
            next_seq: 1,
            torn: None,
        };
        // A second handle to read through, so the index can grow while it reads.
        let handle = store
            .file
            .try_clone()
            .map_err(io_error(&store.path, "open"))?;
        let mut reader = BufReader::with_capacity(1 << 16, handle);
        let mut buf = Vec::new();
        let mut next_report = 0;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(io_error(&store.path, "read"))?;
            if n == 0 {
                break;
            }
            let line = store.lines + 1;
            if buf.last() != Some(&b'\n') {
                store.torn = Some(TornTail {
                    line,
                    offset: store.end,
                    len: n as u64,
                });
                break;
            }
            store.index_line(&buf[..n - 1], line)?;
            store.lines = line;
            store.end += n as u64;
            if store.end >= next_report {
                progress(store.end, total);
                next_report = store.end + PROGRESS_STEP;
            }
        }
        drop(reader);
        progress(total, total);
        store.next_seq = store.last_seq.max(store.lease_end) + 1;
        Ok(store)
    }

    fn index_line(&mut self, text: &[u8], line: u64) -> Result<()> {
        let corrupt = |reason: String| Error::Corrupt {
            path: self.path.clone(),
            line,
            reason,
        };
        let parsed = Line::parse(text).map_err(corrupt)?;
        if line == 1 {
            return match parsed {
                Line::Header {
                    version: line::VERSION,
                } => Ok(()),
                Line::Header { version } => Err(corrupt(format!(
                    "format version {version} is not supported (this build reads version {})",
                    line::VERSION
                ))),
                _ => Err(corrupt(
                    "not a chord log: the first line must be the header {\"chord\":1}".into(),
                )),
            };
        }
        match parsed {
            Line::Header { .. } => Err(corrupt("a header in the middle of the log".into())),
            Line::Define { id, namespace, key } => {
                if id != self.addresses.len() as u64 {
                    return Err(corrupt(format!(
                        "address id {id} defined out of order (expected {})",
                        self.addresses.len()
                    )));
                }
                let address = Address { namespace, key };
                if self.ids.contains_key(&address) {
                    return Err(corrupt(format!("address {address} defined twice")));
                }
                self.define(address);
                Ok(())
            }
            Line::Lease { end } => {
                self.lease_end = self.lease_end.max(end);
                Ok(())
            }
            Line::Record(RecordLine {
                seq, address, tag, ..
            }) => {
                if address >= self.addresses.len() as u64 {
                    return Err(corrupt(format!("address id {address} is not defined")));
                }
                if seq <= self.last_seq {
                    return Err(corrupt(format!(
                        "seq {seq} is not greater than the previous seq {}",
                        self.last_seq
                    )));
                }
                let len = u32::try_from(text.len())
                    .map_err(|_| corrupt("a record longer than 4 GiB".into()))?;
                self.push(address as u32, seq, self.end, len, tag.as_deref(), line);
                Ok(())
            }
        }
    }

    fn define(&mut self, address: Address) -> u32 {
        let id = self.addresses.len() as u32;
        self.ids.insert(address.clone(), id);
        self.addresses.push(address);
        self.lists.push(List::default());
        id
    }

    fn tag_id(&mut self, tag: Option<&str>) -> u32 {
        let Some(tag) = tag else { return 0 };
        match self.tags.iter().position(|t| t == tag) {
            Some(i) => i as u32 + 1,
            None => {
                self.tags.push(tag.to_owned());
                self.tags.len() as u32
            }
        }
    }

    fn push(&mut self, id: u32, seq: u64, offset: u64, len: u32, tag: Option<&str>, line: u64) {
        let tag = self.tag_id(tag);
        let list = &mut self.lists[id as usize];
        if tag != 0 && self.tags[tag as usize - 1] == BASE {
            list.bases.push(list.entries.len());
        }
        list.entries.push(Entry {
            seq,
            offset,
            len,
            tag,
            line,
        });
        self.last_seq = seq;
    }

    fn read_record(&self, entry: &Entry) -> Result<Record> {
        let mut buf = vec![0; entry.len as usize];
        read_exact_at(&self.file, &mut buf, entry.offset).map_err(io_error(&self.path, "read"))?;
        let corrupt = |reason: String| Error::Corrupt {
            path: self.path.clone(),
            line: entry.line,
            reason,
        };
        match Line::parse(&buf)
            .map_err(|e| corrupt(format!("{e} (changed since it was opened?)")))?
        {
            Line::Record(r) if r.seq == entry.seq => Ok(Record {
                seq: r.seq,
                batch: r.batch.get().to_owned(),
                tag: r.tag,
            }),
            _ => Err(corrupt(format!(
                "record {} is no longer there (the file changed since it was opened)",
                entry.seq
            ))),
        }
    }

    fn writer(&self) -> Result<&Writer> {
        self.writer.as_ref().ok_or_else(|| Error::ReadOnly {
            path: self.path.clone(),
        })
    }

    /// Writes `text` at the end of the file, all or nothing.
    fn write_lines(&mut self, text: &str) -> Result<()> {
        if let Err(e) = (&self.file).write_all(text.as_bytes()) {
            // Cut off whatever part was written, so no torn line sits before later records.
            if self.file.set_len(self.end).is_err() {
                let reason = format!("a failed append could not be undone: {e}");
                return Err(self.poison(reason));
            }
            return Err(io_error(&self.path, "append")(e));
        }
        Ok(())
    }

    fn poison(&mut self, reason: String) -> Error {
        if let Some(writer) = &self.writer {
            writer.syncer.poison(reason.clone());
        }
        Error::Poisoned { reason }
    }
}

impl Store for JsonlStore {
    fn append(&mut self, address: &Address, batch: &str, tag: Option<&str>) -> Result<u64> {
        let writer = self.writer()?;
        writer.syncer.check()?;
        let grouped = matches!(writer.durability, Durability::Grouped { .. });
        check_batch(batch)?;
        let seq = self.next_seq;
        if grouped && seq > self.lease_end {
            // Reserve seqs on disk before handing any out, so a restart never reuses one
            // that a crashed writer acknowledged.
            let end = seq + LEASE - 1;
            let text = line::lease(end);
            self.write_lines(&text)?;
            self.end += text.len() as u64;
            self.lines += 1;
            self.lease_end = end;
            self.writer()?.syncer.sync()?;
        }
        let mut text = String::new();
        let id = match self.ids.get(address) {
            Some(&id) => id,
            None => {
                text = line::define(
                    self.addresses.len() as u64,
                    &address.namespace,
                    &address.key,
                );
                self.addresses.len() as u32
            }
        };
        let record_at = self.end + text.len() as u64;
        let record = line::record(seq, u64::from(id), tag, batch);
        let len = u32::try_from(record.len() - 1).map_err(|_| Error::InvalidBatch {
            reason: "a record longer than 4 GiB".into(),
        })?;
        let defines = !text.is_empty();
        text.push_str(&record);
        self.write_lines(&text)?;
        if defines {
            self.define(address.clone());
            self.lines += 1;
        }
        self.lines += 1;
        self.end += text.len() as u64;
        self.push(id, seq, record_at, len, tag, self.lines);
        self.next_seq = seq + 1;
        self.writer()?.syncer.appended(seq)?;
        Ok(seq)
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        let Some(list) = self.list(address) else {
            return Ok(Page::default());
        };
        let stop = match &options.stop_at_tag {
            Some(tag) => match self.tags.iter().position(|t| t == tag) {
                Some(i) => i as u32 + 1,
                // No record carries a tag the log has never seen.
                None => u32::MAX,
            },
            None => u32::MAX,
        };
        let entries = &list.entries;
        let mut records = Vec::new();
        let (range, more): (Box<dyn Iterator<Item = &Entry>>, _) = match options.order {
            Order::Asc => {
                let start = match options.cursor {
                    Some(c) => entries.partition_point(|e| e.seq <= c),
                    None => 0,
                };
                (Box::new(entries[start..].iter()), entries.len() - start)
            }
            Order::Desc => {
                let end = match options.cursor {
                    Some(c) => entries.partition_point(|e| e.seq < c),
                    None => entries.len(),
                };
                (Box::new(entries[..end].iter().rev()), end)
            }
        };
        for entry in range.take(options.limit) {
            debug_assert!(options.after_cursor(entry.seq));
            records.push(self.read_record(entry)?);
            if entry.tag == stop {
                break;
            }
        }
        let next_cursor = if records.len() < more {
            records.last().map(|r| r.seq)
        } else {
            None
        };
        Ok(Page {
            records,
            next_cursor,
        })
    }

    fn addresses(&self) -> Result<Vec<Address>> {
        let mut out: Vec<Address> = self
            .addresses
            .iter()
            .zip(&self.lists)
            .filter(|(_, l)| !l.entries.is_empty())
            .map(|(a, _)| a.clone())
            .collect();
        out.sort();
        Ok(out)
    }

    fn sync(&mut self) -> Result<Option<u64>> {
        self.writer()?.syncer.sync()
    }

    fn durable_seq(&self) -> Option<u64> {
        match &self.writer {
            Some(w) => w.syncer.durable(),
            None => Some(self.last_seq).filter(|&s| s > 0),
        }
    }
}

fn io_error<'a>(path: &'a Path, action: &'static str) -> impl Fn(io::Error) -> Error + 'a {
    move |source| Error::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// Flushes the directory entry of a newly created file.
fn sync_parent(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io_error(path, "flush the directory"))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
