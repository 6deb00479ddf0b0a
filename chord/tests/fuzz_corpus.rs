//! Replays the fuzz targets' seed corpora (`fuzz/corpus/`) through the targets' own invariant
//! checks (`fuzz/src/lib.rs`, included here as a module), so the seeds and the invariants run
//! in every `cargo test`, without nightly or libFuzzer. See `fuzz/README.md`.
//!
//! The `roundtrip` corpus is left out: its files are raw bytes for the `arbitrary` crate,
//! which chord's tests do not depend on; `cargo fuzz run roundtrip` replays it.

use std::fs;
use std::path::{Path, PathBuf};

#[path = "../../fuzz/src/lib.rs"]
mod checks;

/// Every file of one target's corpus, sorted by name.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus")).join(target);
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "{}: only {} seeds",
        dir.display(),
        files.len()
    );
    files
}

/// Runs `check` on every seed of `target`; a failing seed is named in the test's output.
fn replay(target: &str, check: impl Fn(&[u8])) {
    for path in corpus(target) {
        eprintln!("{target}: {}", path.display());
        check(&fs::read(&path).expect("read a seed"));
    }
}

#[test]
fn decode_apply_seeds_keep_the_invariants() {
    replay("decode_apply", checks::decode_apply);
}

#[test]
fn parse_apply_seeds_keep_the_invariants() {
    replay("parse_apply", checks::parse_apply);
}

#[test]
fn store_open_seeds_keep_the_invariants() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("log.jsonl");
    replay("store_open", |data| checks::store_open(data, &log));
}
