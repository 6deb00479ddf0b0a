//! The embedded default backend: one JSONL file, one record per line.

mod compact;
mod line;

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::line::{Line, RecordLine};
use super::file::sync_parent;
use super::group::Flush;
use super::group::Syncer;
use super::mark::{self, Mark};
use super::{is_base_tag, ReadOptions, Record, Result, Store, LEASE, MAX_RECORD_BYTES};
use super::{regular_file, Address, CheckedBatch, Compacted, Durability, Error, Order, Page};

/// A log in one JSONL file: no server, no dependency beyond `serde_json` and a CRC.
///
/// The file holds one JSON object per line, format version 2. Addresses are interned within
/// the file: the first record of an address is preceded by a definition line giving it a short
/// id, and every record names the id, so a long namespace and key are not repeated on every
/// line. Sequence numbers are global to the file.
///
/// ```
/// # use chord::store::{Address, Durability, JsonlStore, Store, BASE};
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("log.jsonl");
/// # let mut log = JsonlStore::open(&path, Durability::EveryAppend)?;
/// # let lane = Address::new("lanes", "main");
/// # log.append(&lane, r#"[["r",{"text":""}]]"#, Some(BASE))?;
/// # log.append(&lane, r#"[["a",["text"],"Hello"]]"#, None)?;
/// // The file after a base and an append to lanes/main:
/// let expected = r#"{"chord":2,"c":"ad243606"}
/// {"def":0,"ns":"lanes","key":"main","c":"4ad08b96"}
/// {"s":1,"a":0,"t":"base","b":[["r",{"text":""}]],"c":"fa4b2c00"}
/// {"s":2,"a":0,"b":[["a",["text"],"Hello"]],"c":"9eecc7da"}
/// "#;
/// assert_eq!(std::fs::read_to_string(&path)?, expected);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **Checksums.** Every line ends with `,"c":"<8 lowercase hex digits>"}`: the CRC-32C of the
/// line's bytes before that suffix (seq, address, tag and batch exactly as stored, field names
/// and punctuation included), continued from the previous line's checksum (the header's
/// starts from 0). A changed bit anywhere fails that line's checksum; a missing, duplicated or
/// moved line fails the next line's. Either is [`Error::Corrupt`], naming the file, the line
/// and what is wrong: a damaged log is never read as a different state. One loss cannot be
/// seen in the file itself: lines cut off the end look like appends that never happened (a
/// cut at a line boundary) or a torn write (a cut inside the last line). The acknowledged
/// mark beside the log (`<path>-ack`, see
/// [what each store detects](crate::store#what-each-store-detects)) sees it: a log ending
/// before the seq it acknowledged is [`Error::RolledBack`] at open.
///
/// **Torn tail.** What a process that died in the middle of a write left behind is the last
/// line without its `\n`. An append is acknowledged only once its whole line, `\n` included,
/// was written, so:
///
/// - a last line without `\n` whose checksum does not verify was never completely written,
///   hence never acknowledged: it is discarded and cut off the file by a writer
///   ([`torn_tail`](JsonlStore::torn_tail) reports it), and so is an unterminated last line
///   longer than [`MAX_RECORD_BYTES`] (no append writes one), without ever being held in
///   memory;
/// - a last line whose content verifies but whose `\n` is missing, or is another byte (a
///   damaged terminator), is a complete record: it is kept, and a writer restores the `\n`
///   ([`unterminated_line`](JsonlStore::unterminated_line) reports it);
/// - a `\n`-terminated line that does not verify is damage, never a torn write: an error.
///
/// **Opening** checks that the path is a regular file (a FIFO, a device or a directory is
/// [`Error::NotAFile`], refused before anything is read), reads the whole file once, verifying
/// every checksum, and keeps a small index in memory (per address: each record's seq, byte
/// offset and tag, and where the base records are), so reads never rescan the file: a page
/// costs one positioned read per record, whose checksum is verified again. A log of another
/// format version is [`Error::Version`], and nothing is changed.
///
/// **One writer per log.** [`open`](JsonlStore::open) takes an exclusive operating-system
/// lock on the file; a second writer, in this process or another, gets [`Error::Locked`].
/// [`open_read_only`](JsonlStore::open_read_only) takes no lock and never changes the file,
/// so tools can look inside a log a producer is writing.
///
/// **Sequence numbers are never reused**, also across restarts: under
/// [`Durability::Grouped`] the writer reserves seqs in blocks of 1,024 with a `{"lease":N}`
/// line flushed to disk before any of them is handed out, and a reopened log continues after
/// the last lease. Seqs therefore have gaps after a restart. Once seq `u64::MAX` is handed out
/// the log takes no more records ([`Error::SeqsExhausted`]).
///
/// **Compaction** ([`Store::compact`]) rewrites the file without the removed records: the
/// kept lines, in order, their checksums recomputed into a fresh chain (every old line is
/// verified on the way: damage is an error, never rechained), seqs unchanged, one lease line
/// (the last), written to `<log>.compact` beside the log, flushed, locked, renamed over the
/// log, the directory flushed, and the index read back from the new file. A crash before the
/// rename leaves the old log whole and a stale `<log>.compact`, which the next writer removes
/// and readers ignore; after it, the new log. A reader that opened the log before keeps
/// reading the file it opened. A writer that locked the old file just as it was replaced
/// opens the new one instead.
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
    /// The checksum of the last complete line: the seed of the next line's.
    crc: u32,
    addresses: Vec<Address>,
    ids: HashMap<Address, u32>,
    lists: Vec<List>,
    tags: Vec<String>,
    last_seq: u64,
    /// Every seq handed out so far is at most this (see the lease lines).
    lease_end: u64,
    /// The seq the next append gets: past every seq in the file and every lease. `None` once
    /// `u64::MAX` was handed out or reserved.
    next_seq: Option<u64>,
    torn: Option<TornTail>,
    unterminated: Option<Unterminated>,
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
    /// Positions in `entries` of the base records ([`is_base_tag`]).
    bases: Vec<usize>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    seq: u64,
    offset: u64,
    line: u64,
    /// Line length without its newline.
    len: u32,
    /// 0: no tag; otherwise an index into `tags`, plus one.
    tag: u32,
    /// The previous line's checksum, which this line's continues.
    seed: u32,
}

/// A last line found complete but without its `\n`.
#[derive(Clone, Copy, Debug)]
struct Unterminated {
    line: u64,
    /// Where its `\n` belongs.
    offset: u64,
    /// Whether a byte stands there instead (a damaged terminator) rather than nothing.
    damaged: bool,
}

/// A torn final line found when a log was opened: what a process that died in the middle of
/// a write left behind (a last line without `\n` whose checksum does not verify, or that is
/// longer than [`MAX_RECORD_BYTES`]). A writer discards it (the file is cut back to
/// `offset`); a reader ignores it.
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

/// What [`read_segment`] found.
enum Segment {
    /// The end of the file.
    End,
    /// A line and its `\n` (`buf` holds the line without it).
    Line,
    /// The last bytes of the file, with no `\n` (`buf` holds them).
    Unterminated,
    /// More than the maximum line length: `len` bytes besides a `\n`, not held.
    TooLong { len: u64, terminated: bool },
}

/// Reads up to the next `\n`, holding at most `max` bytes: a longer line is skipped through
/// (to learn whether it ends with a `\n`), never held whole. Returns what it found and how
/// many bytes it consumed.
fn read_segment(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<(Segment, u64)> {
    buf.clear();
    // `read_until` finds the `\n` with the standard library's fast search; `take` bounds
    // what it may hold.
    let n = reader
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok((Segment::End, 0));
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok((Segment::Line, n as u64));
    }
    if n <= max {
        return Ok((Segment::Unterminated, n as u64));
    }
    // Longer than the maximum: skip to the `\n` or the end, a block at a time.
    *buf = Vec::new();
    let mut len = n as u64;
    let mut block = Vec::new();
    loop {
        block.clear();
        let k = reader
            .by_ref()
            .take(1 << 16)
            .read_until(b'\n', &mut block)?;
        if k == 0 {
            return Ok((
                Segment::TooLong {
                    len,
                    terminated: false,
                },
                len,
            ));
        }
        if block.last() == Some(&b'\n') {
            let segment = Segment::TooLong {
                len: len + k as u64 - 1,
                terminated: true,
            };
            return Ok((segment, len + k as u64));
        }
        len += k as u64;
    }
}

impl JsonlStore {
    /// Opens (or creates) a log for writing, with the given durability.
    ///
    /// Takes an exclusive lock on the file, reads it once to build the index (verifying every
    /// checksum), repairs the tail (cuts off a torn final line, or restores the `\n` of a
    /// complete one), and flushes the file so that everything in it is durable.
    ///
    /// Cost: `O(file size)`, once.
    ///
    /// # Errors
    ///
    /// [`Error::NotAFile`] when the path is a FIFO, device or directory; [`Error::Locked`]
    /// when another writer has the log open; [`Error::Version`] for a log of another format
    /// version; [`Error::Corrupt`] for a damaged or missing line (file, line and reason), or a
    /// file that is not a chord log; [`Error::RolledBack`] when the log ends before the seq its
    /// acknowledged mark holds, [`Error::CorruptMark`] when the mark does not read as one;
    /// [`Error::Io`] when the file cannot be opened, read, repaired or flushed, or the mark
    /// cannot be read or written. A failed open changes nothing.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<JsonlStore> {
        let path = path.as_ref().to_path_buf();
        let (file, existed) = open_locked(&path)?;
        compact::remove_stale(&path)?;
        let acknowledged = mark::read(&path)?;
        let mut store = JsonlStore::load(path, file, &mut |_, _| {})?;
        let found = Some(store.last_seq).filter(|&s| s > 0);
        mark::check(&store.path, acknowledged, found)?;
        if let Some(torn) = store.torn {
            store
                .file
                .set_len(torn.offset)
                .map_err(io_error(&store.path, "repair a torn tail"))?;
        }
        if let Some(u) = store.unterminated {
            if u.damaged {
                store
                    .file
                    .set_len(u.offset)
                    .map_err(io_error(&store.path, "repair a line terminator"))?;
            }
            (&store.file)
                .write_all(b"\n")
                .map_err(io_error(&store.path, "repair a line terminator"))?;
        }
        if store.end == 0 {
            let header = line::header();
            (&store.file)
                .write_all(header.text.as_bytes())
                .map_err(io_error(&store.path, "write the header"))?;
            store.end = header.text.len() as u64;
            store.lines = 1;
            store.crc = header.crc;
        }
        store
            .file
            .sync_all()
            .map_err(io_error(&store.path, "flush"))?;
        if !existed {
            sync_parent(&store.path)?;
        }
        let flush = flush_for(&store.path, &store.file)?;
        let mark = Mark::open(&store.path, acknowledged, found)?;
        store.writer = Some(Writer {
            durability,
            syncer: Syncer::new(durability, store.last_seq, flush, Some(mark)),
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
    /// [`Error::NotAFile`] when the path is a FIFO, device or directory (refused before it is
    /// opened, so a FIFO never blocks); [`Error::Version`], [`Error::Corrupt`],
    /// [`Error::RolledBack`], [`Error::CorruptMark`] as [`open`](JsonlStore::open);
    /// [`Error::Io`] when the file or its mark cannot be opened or read.
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
        // Nothing there: opening fails below with the operating system's own words.
        regular_file(&path)?;
        let file = File::open(&path).map_err(io_error(&path, "open"))?;
        check_opened(&path, &file)?;
        // The mark first: a writer advances it only after its records are durable, so what
        // is read after it holds at least that much.
        let acknowledged = mark::read(&path)?;
        let store = JsonlStore::load(path, file, &mut progress)?;
        mark::check(
            &store.path,
            acknowledged,
            Some(store.last_seq).filter(|&s| s > 0),
        )?;
        Ok(store)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The torn final line found at open, if any (discarded by a writer, ignored by a reader).
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// The line number of the last line when it was found complete (its checksum verifies)
    /// but without its `\n`: missing (a write that stopped just short of it) or another byte
    /// in its place (a damaged terminator). Its record counts; a writer restored the `\n` at
    /// open, a reader leaves the file alone.
    pub fn unterminated_line(&self) -> Option<u64> {
        self.unterminated.map(|u| u.line)
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

    /// Bytes in the log's complete lines (counting the `\n` of an
    /// [`unterminated_line`](JsonlStore::unterminated_line)).
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

    /// Reads the file once, verifying every line and building the index.
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
            crc: 0,
            addresses: Vec::new(),
            ids: HashMap::new(),
            lists: Vec::new(),
            tags: Vec::new(),
            last_seq: 0,
            lease_end: 0,
            next_seq: Some(1),
            torn: None,
            unterminated: None,
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
            let (segment, n) = read_segment(&mut reader, &mut buf, MAX_RECORD_BYTES)
                .map_err(io_error(&store.path, "read"))?;
            let line = store.lines + 1;
            match segment {
                Segment::End => break,
                Segment::Line => {
                    store.crc = store.index_line(&buf, line)?;
                    store.lines = line;
                    store.end += n;
                }
                Segment::TooLong {
                    len,
                    terminated: true,
                } => {
                    return Err(Error::Corrupt {
                        path: store.path.clone(),
                        line,
                        reason: format!(
                            "the line is {len} bytes long; a line holds at most \
                             {MAX_RECORD_BYTES}"
                        ),
                    })
                }
                Segment::TooLong {
                    len,
                    terminated: false,
                } => {
                    store.not_a_log(line, &[])?;
                    store.torn = Some(TornTail {
                        line,
                        offset: store.end,
                        len,
                    });
                    break;
                }
                Segment::Unterminated => {
                    store.last_line(&buf, line)?;
                    break;
                }
            }
            if store.end >= next_report {
                progress(store.end, total);
                next_report = store.end + PROGRESS_STEP;
            }
        }
        drop(reader);
        progress(total, total);
        store.next_seq = store.last_seq.max(store.lease_end).checked_add(1);
        Ok(store)
    }

    /// The last bytes of the file, with no `\n`: a complete line whose terminator is missing or
    /// damaged (kept), or a torn write (discarded).
    fn last_line(&mut self, text: &[u8], line: u64) -> Result<()> {
        let n = text.len();
        let complete = if line::verify(text, self.crc).is_ok() {
            Some((n, false))
        } else if n > 1 && line::verify(&text[..n - 1], self.crc).is_ok() {
            Some((n - 1, true))
        } else {
            None
        };
        if let Some((len, damaged)) = complete {
            self.crc = self.index_line(&text[..len], line)?;
            self.lines = line;
            self.unterminated = Some(Unterminated {
                line,
                offset: self.end + len as u64,
                damaged,
            });
            self.end += len as u64 + 1;
            return Ok(());
        }
        if let Some(len) = line::embedded_line(text, self.crc) {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                line,
                reason: format!(
                    "a complete line of {len} bytes is followed by {} bytes instead of its \
                     `\\n`: its terminator is damaged",
                    n - len
                ),
            });
        }
        self.not_a_log(line, text)?;
        self.torn = Some(TornTail {
            line,
            offset: self.end,
            len: n as u64,
        });
        Ok(())
    }

    /// Refuses to take an unterminated first line for a torn header unless it is the start
    /// of one (the header is always the same bytes): a writer would cut it off, and the file
    /// may be something else entirely.
    fn not_a_log(&self, line: u64, text: &[u8]) -> Result<()> {
        let header = line::header();
        if line == 1 && (text.is_empty() || !header.text.as_bytes().starts_with(text)) {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                line,
                reason: "not a chord log: its first line is not a chord header, and has no \
                         `\n`"
                    .into(),
            });
        }
        Ok(())
    }

    /// Verifies and indexes one complete line (without its `\n`); returns its checksum.
    fn index_line(&mut self, text: &[u8], line: u64) -> Result<u32> {
        let corrupt = |reason: String| Error::Corrupt {
            path: self.path.clone(),
            line,
            reason,
        };
        let seed = self.crc;
        if line == 1 {
            match line::declared_version(text) {
                Some(line::VERSION) => {}
                Some(found) => {
                    return Err(Error::Version {
                        path: self.path.clone(),
                        found,
                        supported: line::VERSION,
                    })
                }
                None => {
                    let why = line::verify(text, seed).err().unwrap_or_default();
                    return Err(corrupt(format!(
                        "not a chord log, or its header is damaged (the first line must be the \
                         header {{\"chord\":{},\"c\":\"…\"}}): {why}",
                        line::VERSION
                    )));
                }
            }
        }
        let crc = line::verify(text, seed).map_err(corrupt)?;
        let parsed = Line::parse(text).map_err(corrupt)?;
        if line == 1 {
            return match parsed {
                Line::Header {
                    version: line::VERSION,
                } => Ok(crc),
                Line::Header { version } => Err(Error::Version {
                    path: self.path.clone(),
                    found: version,
                    supported: line::VERSION,
                }),
                _ => Err(corrupt(
                    "not a chord log: the first line must be the header".into(),
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
                Ok(crc)
            }
            Line::Lease { end } => {
                self.lease_end = self.lease_end.max(end);
                Ok(crc)
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
                // At most MAX_RECORD_BYTES, which fits.
                let len = text.len() as u32;
                let entry = Entry {
                    seq,
                    offset: self.end,
                    line,
                    len,
                    tag: 0,
                    seed,
                };
                self.push(address as u32, entry, tag.as_deref());
                Ok(crc)
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

    fn push(&mut self, id: u32, mut entry: Entry, tag: Option<&str>) {
        entry.tag = self.tag_id(tag);
        let list = &mut self.lists[id as usize];
        if entry.tag != 0 && is_base_tag(Some(&self.tags[entry.tag as usize - 1])) {
            list.bases.push(list.entries.len());
        }
        list.entries.push(entry);
        self.last_seq = entry.seq;
    }

    fn read_record(&self, entry: &Entry) -> Result<Record> {
        let mut buf = vec![0; entry.len as usize];
        read_exact_at(&self.file, &mut buf, entry.offset).map_err(io_error(&self.path, "read"))?;
        let corrupt = |reason: String| Error::Corrupt {
            path: self.path.clone(),
            line: entry.line,
            reason,
        };
        let changed = |e: String| corrupt(format!("{e} (changed since it was opened?)"));
        line::verify(&buf, entry.seed).map_err(changed)?;
        match Line::parse(&buf).map_err(changed)? {
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

    /// The line(s) appending `batch` writes, continuing the checksum `seed`: the address's
    /// definition when it is new, then the record.
    fn lines_for(
        &self,
        seed: u32,
        address: &Address,
        seq: u64,
        tag: Option<&str>,
        batch: &str,
    ) -> Result<Lines> {
        let mut text = String::new();
        let mut seed = seed;
        let id = match self.ids.get(address) {
            Some(&id) => id,
            None => {
                let id = self.addresses.len() as u32;
                let define = line::define(seed, u64::from(id), &address.namespace, &address.key);
                check_line_len(&define.text, "the address definition")?;
                seed = define.crc;
                text = define.text;
                id
            }
        };
        let defines = !text.is_empty();
        let record = line::record(seed, seq, u64::from(id), tag, batch);
        check_line_len(&record.text, "the record")?;
        text.push_str(&record.text);
        Ok(Lines {
            text,
            id,
            defines,
            seed,
            record: RecordWritten {
                // At most MAX_RECORD_BYTES, which fits.
                len: (record.text.len() - 1) as u32,
                crc: record.crc,
            },
        })
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

/// What one append writes.
struct Lines {
    /// The definition line (for a new address) and the record line.
    text: String,
    id: u32,
    defines: bool,
    /// The checksum the record line continues.
    seed: u32,
    record: RecordWritten,
}

struct RecordWritten {
    /// Without the `\n`.
    len: u32,
    crc: u32,
}

/// Refuses a line longer than [`MAX_RECORD_BYTES`] (its `\n` aside).
fn check_line_len(text: &str, what: &str) -> Result<()> {
    let len = text.len() - 1;
    if len > MAX_RECORD_BYTES {
        return Err(Error::InvalidBatch {
            reason: format!("{what} would be {len} bytes; a line holds at most {MAX_RECORD_BYTES}"),
        });
    }
    Ok(())
}

/// Opens (or creates) the log at `path` for writing and takes its exclusive lock; whether it
/// existed. A compaction renames a new file over the log: a handle locked after that names
/// a file no longer at the path, so the open is tried again on the file now there.
fn open_locked(path: &Path) -> Result<(File, bool)> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let existed = regular_file(path)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_error(path, "open"))?;
        check_opened(path, &file)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    path: path.to_path_buf(),
                })
            }
            Err(TryLockError::Error(e)) => return Err(io_error(path, "lock")(e)),
        }
        if still_at(path, &file)? {
            return Ok((file, existed));
        }
        if attempts >= 3 {
            // Replaced again and again: another writer is compacting it.
            return Err(Error::Locked {
                path: path.to_path_buf(),
            });
        }
    }
}

/// Whether the open `file` is still the file at `path`.
fn still_at(path: &Path, file: &File) -> Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata().map_err(io_error(path, "read metadata"))?;
        match std::fs::metadata(path) {
            Ok(there) => Ok(open.dev() == there.dev() && open.ino() == there.ino()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io_error(path, "read metadata")(e)),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        Ok(true)
    }
}

/// The syncer's flush of a log's file: `fdatasync` on a handle of its own.
fn flush_for(path: &Path, file: &File) -> Result<Flush> {
    let file = file.try_clone().map_err(io_error(path, "open"))?;
    let flush_path = path.to_path_buf();
    Ok(Arc::new(move |target: u64| {
        file.sync_data()
            .map(|()| target)
            .map_err(io_error(&flush_path, "flush"))
    }))
}

/// Re-checks, on the open handle, that the file is a regular file (it may have been replaced
/// since the path was checked).
fn check_opened(path: &Path, file: &File) -> Result<()> {
    let meta = file.metadata().map_err(io_error(path, "read metadata"))?;
    if !meta.is_file() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            found: super::file_kind(&meta.file_type()),
        });
    }
    Ok(())
}

impl Store for JsonlStore {
    fn append_checked(&mut self, address: &Address, batch: CheckedBatch<'_>) -> Result<u64> {
        let (batch, tag) = (batch.text(), batch.tag());
        let writer = self.writer()?;
        writer.syncer.check()?;
        let grouped = matches!(writer.durability, Durability::Grouped { .. });
        let seq = self.next_seq.ok_or_else(|| Error::SeqsExhausted {
            path: self.path.clone(),
            last: u64::MAX,
        })?;
        let mut lines = self.lines_for(self.crc, address, seq, tag, batch)?;
        if grouped && seq > self.lease_end {
            // Reserve seqs on disk before handing any out, so a restart never reuses one
            // that a crashed writer acknowledged.
            let end = seq.saturating_add(LEASE - 1);
            let lease = line::lease(self.crc, end);
            self.write_lines(&lease.text)?;
            self.end += lease.text.len() as u64;
            self.lines += 1;
            self.crc = lease.crc;
            self.lease_end = end;
            self.writer()?.syncer.sync()?;
            // The lines after the lease continue its checksum.
            lines = self.lines_for(self.crc, address, seq, tag, batch)?;
        }
        let Lines {
            text,
            id,
            defines,
            seed,
            record,
        } = lines;
        let record_at = self.end + (text.len() - record.len as usize - 1) as u64;
        let entry = Entry {
            seq,
            offset: record_at,
            line: self.lines + 1 + u64::from(defines),
            len: record.len,
            tag: 0,
            seed,
        };
        self.write_lines(&text)?;
        if defines {
            self.define(address.clone());
        }
        self.lines = entry.line;
        self.end += text.len() as u64;
        self.crc = record.crc;
        self.push(id, entry, tag);
        self.next_seq = seq.checked_add(1);
        self.writer()?.syncer.appended(seq)?;
        Ok(seq)
    }

    fn read_list(&self, address: &Address, options: &ReadOptions) -> Result<Page> {
        options.check()?;
        let Some(list) = self.list(address) else {
            return Ok(Page::default());
        };
        // The tag ids that end the page (none: no record carries a tag the log never saw).
        let stops: Vec<u32> = (1..=self.tags.len() as u32)
            .filter(|&i| options.stops_at(Some(&self.tags[i as usize - 1])))
            .collect();
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
            if stops.contains(&entry.tag) {
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

    /// Rewrites the file without the removed records (see the module `compact`): written
    /// beside the log as `<log>.compact`, flushed, renamed over the log, the directory
    /// flushed, the index read back from the new file. `O(file size)` when anything is
    /// removed; `O(1)` when nothing is.
    fn compact(&mut self, address: &Address, keep_bases: usize) -> Result<Compacted> {
        self.compact_address(address, keep_bases)
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
