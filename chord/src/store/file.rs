//! What every file-backed store does to the files it writes.

use std::fs::File;
use std::path::Path;

use super::{Error, Result};

/// Flushes the directory entry of a newly created file at `path`, so that the file itself
/// survives a crash (on Unix; elsewhere a no-op).
pub(super) fn sync_parent(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                action: "flush the directory",
                source,
            })?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
