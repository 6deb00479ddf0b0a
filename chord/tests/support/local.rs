//! What the tests that serve chord over HTTP in this process share: their runtime, and the
//! repository's JavaScript package with its installed development dependencies.
//!
//! Included by each such test as `mod local` (`#[path = "support/local.rs"]`).

#![allow(dead_code)]

use std::path::PathBuf;

/// The runtime a test serves on: two worker threads, timers and I/O.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The repository's root, once `js/node_modules` holds the package's development
/// dependencies (`scripts/test` installs them; a test that needs them fails without).
pub fn js_installed() -> PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert!(
        root.join("js/node_modules/@durable-streams/client")
            .exists(),
        "js/node_modules is missing: run scripts/test (it installs them)"
    );
    root
}
