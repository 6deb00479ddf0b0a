//! Bytes as a JSONL log: opened read-only and for writing, every address recovered. See
//! `chord_fuzz::store_open` for the invariants.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// One file per fuzzing process, rewritten for every input: in /dev/shm when there is one
/// (the writer's fsync costs nothing there), else in the temporary directory.
fn log_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("chord-fuzz-store-{}.jsonl", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| chord_fuzz::store_open(data, log_path()));
