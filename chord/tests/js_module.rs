//! Runs the JavaScript replica's own suites (`js/test/`, Node's built-in test runner): the
//! conformance vectors and the module's unit tests, so the README's one test command covers
//! the JavaScript replica too.

use std::process::Command;

#[test]
fn javascript_replica_suites_pass() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = match Command::new("node")
        .args(["--test", "js/test/"])
        .current_dir(&root)
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("`node` (Node.js 20 or later) is needed to test js/: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "node --test js/test/ failed:\n{stdout}\n{stderr}"
    );
    // The runner's TAP summary (stdout is not a terminal): the suites ran, none failed.
    let count = |label: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(label)?.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    assert!(
        count("# pass") >= 250,
        "too few JavaScript tests ran:\n{stdout}"
    );
    assert_eq!(count("# fail"), 0, "{stdout}");
}
