//! A journal in a file: one record a line, `CRC32C-in-hex SPACE record`, each line flushed to
//! disk before its change is answered. Locked while open; rewritten by writing a new file
//! beside it and renaming it over.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::Medium;
use crate::store::Error;

pub(super) struct FileMedium {
    path: PathBuf,
    file: File,
}

fn io<'a>(path: &'a Path, action: &'static str) -> impl Fn(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// `record` as a line: its checksum, a space, the record, a line break.
fn line(record: &[u8]) -> Vec<u8> {
    let mut out = format!("{:08x} ", crc32c::crc32c(record)).into_bytes();
    out.extend_from_slice(record);
    out.push(b'\n');
    out
}

fn lock(path: &Path, file: &File) -> Result<(), Error> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(Error::Locked {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(io(path, "lock")(e)),
    }
}

impl FileMedium {
    pub(super) fn open(path: &Path) -> Result<FileMedium, Error> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io(path, "open"))?;
        lock(path, &file)?;
        Ok(FileMedium {
            path: path.to_path_buf(),
            file,
        })
    }
}

impl Medium for FileMedium {
    fn load(&mut self) -> Result<Vec<Vec<u8>>, Error> {
        let path = &self.path;
        let mut text = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_end(&mut text))
            .map_err(io(path, "read"))?;
        let mut records = Vec::new();
        let mut start = 0;
        let mut number = 0u64;
        while start < text.len() {
            number += 1;
            let Some(end) = text[start..].iter().position(|b| *b == b'\n') else {
                // A last line without its line break: a write a crash cut short, never
                // acknowledged. Dropped, so that the next record starts a line.
                self.file
                    .set_len(start as u64)
                    .and_then(|()| self.file.sync_data())
                    .map_err(io(path, "drop a torn last line"))?;
                break;
            };
            let row = &text[start..start + end];
            start += end + 1;
            let corrupt = |reason: &str| Error::Corrupt {
                path: path.clone(),
                line: number,
                reason: reason.to_owned(),
            };
            let (sum, record) = match row.get(..9) {
                Some([sum @ .., b' ']) => (sum, &row[9..]),
                _ => return Err(corrupt("no checksum")),
            };
            let sum = std::str::from_utf8(sum)
                .ok()
                .and_then(|s| u32::from_str_radix(s, 16).ok())
                .ok_or_else(|| corrupt("the checksum is not 8 hex digits"))?;
            if sum != crc32c::crc32c(record) {
                return Err(corrupt("the checksum does not match the record"));
            }
            records.push(record.to_vec());
        }
        Ok(records)
    }

    fn write(&mut self, record: &[u8]) -> Result<(), Error> {
        let path = &self.path;
        self.file
            .write_all(&line(record))
            .map_err(io(path, "append"))?;
        self.file.sync_data().map_err(io(path, "flush to disk"))
    }

    fn rewrite(&mut self, records: &[Vec<u8>]) -> Result<(), Error> {
        let path = &self.path;
        let mut name = path.as_os_str().to_owned();
        name.push(".new");
        let next = PathBuf::from(name);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .truncate(false)
            .open(&next)
            .map_err(io(&next, "create"))?;
        lock(&next, &file)?;
        file.set_len(0).map_err(io(&next, "truncate"))?;
        let mut text = Vec::new();
        for record in records {
            text.extend_from_slice(&line(record));
        }
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(io(&next, "write"))?;
        std::fs::rename(&next, path).map_err(io(path, "replace"))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The rename itself made durable.
            if let Ok(dir) = File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        self.file = file;
        Ok(())
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}
