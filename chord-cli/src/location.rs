//! What a command's `<LOG>` names: a PostgreSQL store by its URL, or a file holding one
//! kind of store, a JSONL log or a SQLite database. A file that has contents is the kind
//! its first bytes say; one that does not (missing, or 0 bytes) is the kind its name says
//! (`.jsonl`; `.sqlite`, `.sqlite3`, `.db`) or `--store` says, so that a store is never
//! created as another kind than its name promises (a `lanes.sqlite` holding a JSONL log).

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// A kind of store kept in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kind {
    /// A JSONL log: one record a line.
    Jsonl,
    /// A SQLite database (needs a `chord` built with the `sqlite` feature).
    Sqlite,
}

impl Kind {
    /// The kind a file's name says, by its extension.
    fn named(path: &Path) -> Option<Kind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" => Some(Kind::Jsonl),
            "sqlite" | "sqlite3" | "db" => Some(Kind::Sqlite),
            _ => None,
        }
    }

    /// The kind as people say it.
    fn name(self) -> &'static str {
        match self {
            Kind::Jsonl => "a JSONL log",
            Kind::Sqlite => "a SQLite database",
        }
    }
}

/// What `<LOG>` names.
#[derive(Debug)]
pub(crate) enum Location<'a> {
    /// A PostgreSQL store, by its URL.
    Postgres(&'a str),
    /// A file.
    File {
        /// The path as given.
        path: &'a Path,
        /// Its kind; `None` when nothing says it (no contents, a name of no known kind, no
        /// `--store`): such a file is read as a JSONL log, which it may become, but no store
        /// is created in it.
        kind: Option<Kind>,
    },
}

/// Whether the argument names a PostgreSQL store rather than a file.
pub(crate) fn postgres_url(log: &Path) -> Option<&str> {
    log.to_str()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// Why `<LOG>` names no store chord can open: each names the path (or the URL) and the
/// choices.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocationError {
    /// A URL of a scheme chord does not read.
    #[error(
        "{log}: unknown scheme `{scheme}://`: chord reads PostgreSQL URLs (postgres://, \
         postgresql://), JSONL files and SQLite databases (a path)"
    )]
    Scheme {
        /// The argument as given.
        log: String,
        /// Its scheme.
        scheme: String,
    },
    /// A store would be created, but nothing says of which kind.
    #[error(
        "{}: cannot tell which kind of store to create: name it `.jsonl` (a JSONL log) or \
         `.sqlite`, `.sqlite3`, `.db` (a SQLite database), or say `--store jsonl` or \
         `--store sqlite`",
        path.display()
    )]
    Unnamed {
        /// The file.
        path: PathBuf,
    },
    /// The file's name (or `--store`) says one kind, its contents another.
    #[error(
        "{}: {said} says {}, but it is {}{}",
        path.display(),
        named.name(),
        found.name(),
        if *found == Kind::Jsonl { " (its first bytes are not SQLite's header)" } else { "" }
    )]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What said the kind: `its name` or `--store`.
        said: &'static str,
        /// The kind said.
        named: Kind,
        /// The kind its contents are.
        found: Kind,
    },
    /// A SQLite database, and this build cannot read one.
    #[cfg_attr(feature = "sqlite", allow(dead_code))]
    #[error(
        "{}: a SQLite database, and this build has no SQLite support: install with \
         --features sqlite (`cargo install --locked --path chord-cli --features sqlite` from \
         a clone)",
        path.display()
    )]
    NoSqlite {
        /// The file.
        path: PathBuf,
    },
    /// An existing SQLite database without any table, and no `--create`.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    #[error(
        "{}: an empty SQLite database ({}, no table), not a chord store yet: `chord serve \
         --create` makes it one (never done unasked: a database whose schema is damaged \
         looks the same)",
        path.display(),
        if *pages == 0 { "0 bytes".to_owned() } else { format!("{pages} pages") }
    )]
    Empty {
        /// The file.
        path: PathBuf,
        /// Its size in pages.
        pages: u64,
    },
    /// A SQLite database of another application.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    #[error(
        "{}: a SQLite database with other tables ({}) and none of chord's: not a chord store",
        path.display(),
        tables.join(", ")
    )]
    Other {
        /// The file.
        path: PathBuf,
        /// Its tables.
        tables: Vec<String>,
    },
}

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

impl<'a> Location<'a> {
    /// What `log` names, with `store` the kind `--store` says, if it was given.
    pub(crate) fn of(log: &'a Path, store: Option<Kind>) -> Result<Location<'a>, LocationError> {
        if let Some(url) = postgres_url(log) {
            return Ok(Location::Postgres(url));
        }
        if let Some(scheme) = log.to_str().and_then(scheme) {
            return Err(LocationError::Scheme {
                log: log.display().to_string(),
                scheme: scheme.to_owned(),
            });
        }
        let (said, named) = match (store, Kind::named(log)) {
            (Some(kind), _) => ("--store", Some(kind)),
            (None, kind) => ("its name", kind),
        };
        let kind = match (contents(log), named) {
            (Some(found), Some(named)) if found != named => {
                return Err(LocationError::Mismatch {
                    path: log.to_path_buf(),
                    said,
                    named,
                    found,
                })
            }
            (Some(found), _) => Some(found),
            (None, named) => named,
        };
        Ok(Location::File { path: log, kind })
    }

    /// The kind of store to create in a file that has no contents yet: refused when
    /// nothing says it.
    pub(crate) fn kind_to_create(path: &Path, kind: Option<Kind>) -> Result<Kind, LocationError> {
        kind.ok_or_else(|| LocationError::Unnamed {
            path: path.to_path_buf(),
        })
    }
}

/// The scheme of `text` when it is a URL (`mysql://...`): letters, digits, `+`, `-`, `.`,
/// starting with a letter, at least two characters (not a drive letter), then `://`.
fn scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let valid = scheme.len() >= 2
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// The kind a file's contents are: `None` when it has none to tell (missing, 0 bytes, or
/// not a regular file, which is never read: a FIFO would block).
fn contents(path: &Path) -> Option<Kind> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    let mut head = Vec::with_capacity(SQLITE_MAGIC.len());
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(SQLITE_MAGIC.len() as u64).read_to_end(&mut head));
    match read {
        Ok(_) if head == SQLITE_MAGIC => Some(Kind::Sqlite),
        Ok(_) => Some(Kind::Jsonl),
        // Unreadable: opening it says why.
        Err(_) => None,
    }
}

/// Checks that a SQLite file holds a chord store, for a command that reads it: one that is
/// empty or another application's is refused.
#[cfg(feature = "sqlite")]
pub(crate) fn chord_sqlite(path: &Path) -> Result<(), crate::failure::Failure> {
    use chord::store::{SqliteContents, SqliteStore};
    match SqliteStore::contents(path)? {
        SqliteContents::Chord => Ok(()),
        SqliteContents::Empty { pages } => Err(LocationError::Empty {
            path: path.to_path_buf(),
            pages,
        }
        .into()),
        SqliteContents::Other { tables } => Err(LocationError::Other {
            path: path.to_path_buf(),
            tables,
        }
        .into()),
        other => Err(format!("{}: {other:?}: not a chord store", path.display()).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_told_from_paths() {
        assert_eq!(scheme("mysql://me@db/app"), Some("mysql"));
        assert_eq!(scheme("sqlite+file://x"), Some("sqlite+file"));
        assert_eq!(scheme("C://logs/a.jsonl"), None);
        assert_eq!(scheme("logs/a.jsonl"), None);
        assert_eq!(scheme("./odd://name"), None);
    }

    #[test]
    fn names_say_kinds() {
        for (name, kind) in [
            ("a.jsonl", Some(Kind::Jsonl)),
            ("a.JSONL", Some(Kind::Jsonl)),
            ("a.sqlite", Some(Kind::Sqlite)),
            ("a.sqlite3", Some(Kind::Sqlite)),
            ("dir/a.db", Some(Kind::Sqlite)),
            ("a.log", None),
            ("a", None),
        ] {
            assert_eq!(Kind::named(Path::new(name)), kind, "{name}");
        }
    }
}
