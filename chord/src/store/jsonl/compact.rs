//! Compaction of a JSONL log: the file rewritten without one address's oldest records.
//!
//! The new file is written beside the log (`<log>.compact`), with the same lines in the same
//! order except the removed records (and lease lines a later lease supersedes), each line's
//! checksum recomputed so the chain runs unbroken through the new file; every line of the old
//! file is verified on the way, so compaction never carries damage over into a fresh chain.
//! The new file is flushed to disk, renamed over the log, and the directory flushed: a crash
//! before the rename leaves the old log whole (and a stale `<log>.compact`, which the next
//! writer removes and a reader ignores); a crash after it leaves the new one. Seqs are kept
//! as they were, so nothing reads a removed record's seq as another record.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::line;
use super::{io_error, read_segment, JsonlStore, Segment, Writer};
use crate::store::file::sync_parent;
use crate::store::group::Syncer;
use crate::store::{Address, Compacted, Error, Result, MAX_RECORD_BYTES};

/// The file a compaction writes beside the log before renaming it over: `<log>.compact`.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".compact");
    path.with_file_name(name)
}

/// Removes the file of a compaction a crash interrupted before its rename: the log is whole
/// without it. Only a writer calls it, holding the log's lock, so no compaction is running.
pub(super) fn remove_stale(path: &Path) -> Result<()> {
    let temp = temp_path(path);
    match fs::remove_file(&temp) {
        Ok(()) => sync_parent(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(&temp, "remove a stale compaction file")(e)),
    }
}

impl JsonlStore {
    /// See [`Store::compact`](crate::store::Store::compact).
    pub(super) fn compact_address(
        &mut self,
        address: &Address,
        keep_bases: usize,
    ) -> Result<Compacted> {
        if keep_bases == 0 {
            return Err(Error::KeepsNoBase {
                address: address.clone(),
            });
        }
        self.writer()?.syncer.sync()?;
        let Some(list) = self.list(address) else {
            return Ok(Compacted::default());
        };
        let Some(first_kept) = list.bases.len().checked_sub(keep_bases) else {
            return Ok(Compacted::default());
        };
        let cut = list.bases[first_kept];
        let oldest_kept = Some(list.entries[cut].seq);
        if cut == 0 {
            return Ok(Compacted {
                removed: 0,
                oldest_kept,
            });
        }
        let removed: Vec<u64> = list.entries[..cut].iter().map(|e| e.offset).collect();
        let temp = temp_path(&self.path);
        let file = self.write_compacted(&temp, &removed)?;
        if let Err(e) = fs::rename(&temp, &self.path) {
            let _ = fs::remove_file(&temp);
            return Err(io_error(
                &self.path,
                "rename the compacted log over the log",
            )(e));
        }
        self.install(file)?;
        sync_parent(&self.path)?;
        Ok(Compacted {
            removed: removed.len() as u64,
            oldest_kept,
        })
    }

    /// Writes the compacted log to `temp` (locked, flushed to disk): every line but those
    /// starting at the `removed` offsets (ascending) and superseded leases, rechained.
    pub(super) fn write_compacted(&self, temp: &Path, removed: &[u64]) -> Result<File> {
        remove_stale(&self.path)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(temp)
            .map_err(io_error(temp, "create the compacted log"))?;
        let written = lock(temp, &file).and_then(|()| self.copy_kept(&file, temp, removed));
        if let Err(e) = written {
            let _ = fs::remove_file(temp);
            return Err(e);
        }
        Ok(file)
    }

    fn copy_kept(&self, out: &File, temp: &Path, removed: &[u64]) -> Result<()> {
        let source = File::open(&self.path).map_err(io_error(&self.path, "open"))?;
        let mut reader = BufReader::with_capacity(1 << 16, source.take(self.end));
        let mut writer = BufWriter::with_capacity(1 << 16, out);
        let mut buf = Vec::new();
        let mut line_out = Vec::new();
        let (mut offset, mut line_no) = (0u64, 0u64);
        let (mut old_seed, mut new_seed) = (0u32, 0u32);
        let mut next_removed = removed.iter().copied().peekable();
        let lease_prefix = b"{\"lease\":";
        loop {
            let (segment, n) = read_segment(&mut reader, &mut buf, MAX_RECORD_BYTES)
                .map_err(io_error(&self.path, "read"))?;
            line_no += 1;
            let corrupt = |reason: String| Error::Corrupt {
                path: self.path.clone(),
                line: line_no,
                reason,
            };
            match segment {
                Segment::End => break,
                Segment::Line => {}
                _ => return Err(corrupt("changed since it was opened".into())),
            }
            old_seed = line::verify(&buf, old_seed).map_err(corrupt)?;
            let at = offset;
            offset += n;
            if next_removed.peek() == Some(&at) {
                next_removed.next();
                continue;
            }
            if buf.starts_with(lease_prefix) {
                if let Ok(line::Line::Lease { end }) = line::Line::parse(&buf) {
                    if end < self.lease_end {
                        continue; // a later lease reserves more
                    }
                }
            }
            line_out.clear();
            new_seed = line::rechain(&buf, new_seed, &mut line_out);
            writer
                .write_all(&line_out)
                .map_err(io_error(temp, "write the compacted log"))?;
        }
        if let Some(at) = next_removed.next() {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                line: line_no,
                reason: format!("no line starts at byte {at} (changed since it was opened?)"),
            });
        }
        writer
            .flush()
            .map_err(io_error(temp, "write the compacted log"))?;
        drop(writer);
        out.sync_all()
            .map_err(io_error(temp, "flush the compacted log"))
    }

    /// Makes `file`, now at the log's path, the store's file: its index read afresh (every
    /// line verified again), a syncer flushing it.
    fn install(&mut self, mut file: File) -> Result<()> {
        let durability = self.writer()?.durability;
        let fresh = file
            .seek(SeekFrom::Start(0))
            .map_err(io_error(&self.path, "read"))
            .and_then(|_| JsonlStore::load(self.path.clone(), file, &mut |_, _| {}));
        let mut fresh = match fresh {
            Ok(fresh)
                if fresh.last_seq == self.last_seq
                    && fresh.lease_end == self.lease_end
                    && fresh.torn.is_none()
                    && fresh.unterminated.is_none() =>
            {
                fresh
            }
            Ok(_) => {
                let reason = format!(
                    "{}: the compacted log does not read back as written",
                    self.path.display()
                );
                return Err(self.poison(reason));
            }
            Err(e) => {
                let reason = format!("{}: the compacted log: {e}", self.path.display());
                return Err(self.poison(reason));
            }
        };
        // Reading the file continues after its lease, as a restart would; this writer goes
        // on inside the lease it holds, as it would have without compacting.
        fresh.next_seq = self.next_seq;
        let flush = super::flush_for(&fresh.path, &fresh.file)?;
        let mark = self.writer()?.syncer.take_mark();
        fresh.writer = Some(Writer {
            durability,
            syncer: Syncer::new(durability, fresh.last_seq, flush, mark),
        });
        // The old file's handle (and its lock on the old, unlinked file) goes with `old`.
        let old = std::mem::replace(self, fresh);
        drop(old);
        Ok(())
    }
}

/// Takes the exclusive lock on the new file before it is renamed over the log, so that the
/// log at its path is locked without a gap.
fn lock(path: &Path, file: &File) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(Error::Locked {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(io_error(path, "lock")(e)),
    }
}
