//! The acknowledged mark: the highest seq a store reported durable, kept in a small file
//! beside it, so that a store found to end before it is an error at open rather than an
//! older state.
//!
//! Checksums and links find a record that is damaged or missing *between* records. What they
//! cannot find is a clean cut at the end: a JSONL log that lost its last complete lines, or a
//! SQLite database whose WAL lost a frame (SQLite then drops that frame and every later one,
//! and the database reads as a consistent older one). The mark sees it: the store ends before
//! a seq it acknowledged.
//!
//! # File
//!
//! `<store path>-ack`, one line of 40 bytes, rewritten in place:
//!
//! ```text
//! chord ack <seq, 20 decimal digits> <checksum>\n
//! ```
//!
//! `<checksum>` is the CRC-32C (as the record format's) of the text before the space that
//! precedes it, in 8 lowercase hex digits. Seq 0 means none. An empty file is no mark (what
//! a crash can leave of a file just created); anything else that does not read so is
//! [`Error::CorruptMark`].
//!
//! # When it is written, and what that costs
//!
//! The mark is written after the store's own flush ([`Syncer`](super::group::Syncer)), with
//! the seq that flush made durable: once per append under
//! [`Durability::EveryAppend`](super::Durability::EveryAppend), once per group under
//! [`Durability::Grouped`](super::Durability::Grouped). It is one positioned write of 40 bytes
//! to the operating system, not flushed to disk (it would double the cost of an append), so:
//!
//! - it survives the *process* dying at once (SIGKILL), the case where the store's own files
//!   are the ones that can be found cut;
//! - it is flushed to disk when it is created and when the store is dropped; after a power
//!   loss before that it may hold an older seq (detection then starts from that seq), never a
//!   newer one than the store holds, because it is written only after the store's flush.
//!
//! A mark is never ahead of the store it describes, so the check has no false alarm: a store
//! ending before its mark lost records it acknowledged.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use super::{Error, Result};

/// Length of the mark's line, `\n` included.
const LEN: usize = 40;

/// The mark's path for a store at `store`: `<store>-ack`.
pub(crate) fn path_for(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-ack");
    PathBuf::from(name)
}

/// The text of a mark holding `seq`.
fn text(seq: u64) -> String {
    let body = format!("chord ack {seq:020}");
    format!("{body} {:08x}\n", crc32c::crc32c(body.as_bytes()))
}

/// Reads the mark beside `store`: `None` when there is none (no file, or an empty one).
///
/// A reader may read the line while a writer rewrites it (the operating system does not make
/// the two atomic for each other), so a line that does not verify is read again, up to
/// three times, before it is an error.
///
/// # Errors
///
/// [`Error::CorruptMark`] for a file that does not read as a mark; [`Error::Io`] when it
/// cannot be read.
pub(crate) fn read(store: &Path) -> Result<Option<u64>> {
    let mut attempt = 0;
    loop {
        match read_once(store) {
            Err(Error::CorruptMark { .. }) if attempt < 2 => attempt += 1,
            read => return read,
        }
    }
}

fn read_once(store: &Path) -> Result<Option<u64>> {
    let path = path_for(store);
    let mut bytes = Vec::with_capacity(LEN);
    match File::open(&path) {
        Ok(file) => file
            .take(LEN as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| Error::Io {
                path: path.clone(),
                action: "read the acknowledged mark",
                source,
            })?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                path,
                action: "open the acknowledged mark",
                source,
            })
        }
    };
    if bytes.is_empty() {
        return Ok(None);
    }
    let seq = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.get(10..30).filter(|_| s.len() == LEN))
        .and_then(|digits| digits.parse::<u64>().ok())
        .filter(|&seq| text(seq).as_bytes() == bytes);
    match seq {
        Some(seq) => Ok(Some(seq).filter(|&s| s > 0)),
        None => Err(Error::CorruptMark {
            path,
            reason: format!(
                "{} bytes that are not `chord ack <20 digits> <checksum>` with a matching \
                 checksum",
                bytes.len()
            ),
        }),
    }
}

/// Checks that a store at `store` whose last record is `found` holds every seq up to
/// `acknowledged`, the mark read before the store was.
///
/// # Errors
///
/// [`Error::RolledBack`] when it ends before.
pub(crate) fn check(store: &Path, acknowledged: Option<u64>, found: Option<u64>) -> Result<()> {
    match acknowledged {
        Some(acknowledged) if found.is_none_or(|found| found < acknowledged) => {
            Err(Error::RolledBack {
                path: store.to_path_buf(),
                acknowledged,
                found,
                mark: path_for(store),
            })
        }
        _ => Ok(()),
    }
}

/// The mark of a store open for writing.
#[derive(Debug)]
pub(crate) struct Mark {
    path: PathBuf,
    file: File,
    /// The seq the file holds.
    seq: u64,
}

impl Mark {
    /// Opens the mark beside `store` for writing; `held` is what [`read`] found there. A store
    /// without one gets one holding `found`, its last seq, flushed to disk with its directory
    /// entry.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be opened, written or flushed.
    pub(crate) fn open(store: &Path, held: Option<u64>, found: Option<u64>) -> Result<Mark> {
        let path = path_for(store);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| Error::Io {
                path: path.clone(),
                action: "open the acknowledged mark",
                source,
            })?;
        let mut mark = Mark {
            path,
            file,
            seq: held.unwrap_or(0),
        };
        if held.is_none() {
            mark.write(found.unwrap_or(0))?;
            mark.flush()?;
            super::file::sync_parent(&mark.path)?;
        }
        Ok(mark)
    }

    /// Records that every seq up to `seq` is durable: one positioned write, not flushed (see
    /// the module documentation). Nothing is written when the mark already holds `seq` or a
    /// later one.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the write fails.
    pub(crate) fn advance(&mut self, seq: u64) -> Result<()> {
        if seq <= self.seq {
            return Ok(());
        }
        self.write(seq)
    }

    fn write(&mut self, seq: u64) -> Result<()> {
        write_at(&self.file, text(seq).as_bytes(), 0).map_err(|source| Error::Io {
            path: self.path.clone(),
            action: "write the acknowledged mark",
            source,
        })?;
        self.seq = seq;
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.file.sync_data().map_err(|source| Error::Io {
            path: self.path.clone(),
            action: "flush the acknowledged mark",
            source,
        })
    }
}

impl Drop for Mark {
    /// Flushes the mark to disk, so that after a clean close it survives a power loss too.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(windows)]
fn write_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_forty_bytes_with_its_checksum() {
        let line = text(2341);
        assert_eq!(line.len(), LEN);
        assert!(
            line.starts_with("chord ack 00000000000000002341 "),
            "{line}"
        );
        let body = "chord ack 00000000000000002341";
        let crc = format!("{:08x}", crc32c::crc32c(body.as_bytes()));
        assert_eq!(line, format!("{body} {crc}\n"));
    }

    #[test]
    fn a_mark_reads_back_and_a_changed_byte_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("log.db");
        assert_eq!(read(&store).unwrap(), None);
        let mut mark = Mark::open(&store, None, Some(7)).unwrap();
        assert_eq!(read(&store).unwrap(), Some(7));
        mark.advance(12).unwrap();
        mark.advance(9).unwrap();
        assert_eq!(read(&store).unwrap(), Some(12));
        drop(mark);
        let mut bytes = std::fs::read(path_for(&store)).unwrap();
        bytes[25] ^= 0x01;
        std::fs::write(path_for(&store), &bytes).unwrap();
        assert!(matches!(read(&store), Err(Error::CorruptMark { .. })));
        std::fs::write(path_for(&store), b"").unwrap();
        assert_eq!(read(&store).unwrap(), None);
    }

    #[test]
    fn a_store_ending_before_its_mark_is_rolled_back() {
        let at = Path::new("log.db");
        assert!(check(at, Some(5), Some(5)).is_ok());
        assert!(check(at, Some(5), Some(9)).is_ok());
        assert!(check(at, None, None).is_ok());
        let err = check(at, Some(2341), Some(2314)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RolledBack {
                    acknowledged: 2341,
                    found: Some(2314),
                    ..
                }
            ),
            "{err}"
        );
        assert!(matches!(
            check(at, Some(1), None),
            Err(Error::RolledBack { found: None, .. })
        ));
    }
}
