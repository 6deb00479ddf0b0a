//! A test whose tool is missing (nginx, Chromium, tsc, React, ...) skips visibly: a
//! `SKIPPED <test>: <why>` line written past the test harness's output capture, so that it
//! shows in a plain `cargo test` of one file, not only with `--nocapture`. Under `CI=true`
//! (`.ci/run` sets it) a missing tool fails the test instead: `scripts/test` installs them
//! all, so a skip there would hide a broken setup.

#![allow(dead_code)]

use std::io::Write;

/// Whether this is a CI run (`CI=true`), where nothing may be skipped.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips `test` because of `why`: a `SKIPPED` line on the process's standard error (which
/// the harness does not capture), or, under `CI=true`, a failure.
pub fn skip(test: &str, why: &str) {
    assert!(
        !under_ci(),
        "{test}: {why} (under CI=true a missing tool is a failure)"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why}; under CI=true this fails"
    );
}
