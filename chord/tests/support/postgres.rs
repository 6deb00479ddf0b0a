//! The PostgreSQL server the tests run against, and a fresh schema for each test.
//!
//! The server's URL comes from `CHORD_TEST_POSTGRES_URL` (`scripts/test` sets it for the
//! development machine: `postgres://postgres@127.0.0.1:5432/test`). Without it, or with a
//! server that does not answer, a test is skipped with a `SKIPPED <test>: <why>` line that
//! says how to run it, written past the test harness's output capture so that it shows in a
//! plain `cargo test` run, except under `CI=true` (`.ci/run` sets it), where either is a
//! failure.
//!
//! Every test works in its own schema (`chord_test_<label>_<pid>_<n>_<time>`), so tests run
//! in parallel, in several processes, and again without any cleanup. Schemas older than an
//! hour, left by earlier runs, are dropped once per process.

#![allow(dead_code)] // each test binary uses part of it

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The variable holding the server's URL.
pub const URL_VAR: &str = "CHORD_TEST_POSTGRES_URL";

/// The server's URL, or why there is no server to test against (looked up once a process).
fn found() -> &'static Result<String, String> {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    URL.get_or_init(|| {
        let url = std::env::var(URL_VAR).map_err(|_| format!("{URL_VAR} is not set"))?;
        let mut client = postgres::Client::connect(&url, postgres::NoTls)
            .map_err(|e| format!("{url} does not answer: {e}"))?;
        sweep(&mut client);
        Ok(url)
    })
}

/// The server's URL for a test that only runs when asked for: panics saying why when there
/// is no server to test against.
pub fn required(test: &str) -> String {
    found()
        .clone()
        .unwrap_or_else(|why| panic!("{test} needs a PostgreSQL server, but {why}"))
}

/// The server's URL, when there is a server to test against. Under `CI=true`, a missing URL
/// or an unreachable server panics.
pub fn url() -> Option<String> {
    match found() {
        Ok(url) => Some(url.clone()),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true, so the PostgreSQL tests must run, but {why}")
        }
        Err(why) => {
            // The harness captures `print!` and `eprint!` of a passing test, not writes to
            // the stderr handle, so this line shows without `--nocapture`.
            let test = std::thread::current()
                .name()
                .unwrap_or("a PostgreSQL test")
                .to_owned();
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {why}. To run it, start PostgreSQL and set \
                 {URL_VAR}=postgres://postgres@127.0.0.1:5432/test (scripts/test does)"
            );
            None
        }
    }
}

/// Whether the PostgreSQL tests run (see [`url`]).
pub fn available() -> bool {
    url().is_some()
}

/// A connection for a test's own SQL (faults, inspection).
pub fn client() -> postgres::Client {
    postgres::Client::connect(&url().expect("checked by the caller"), postgres::NoTls)
        .expect("connect")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A new schema, named after `label`, created and marked with its creation time.
pub fn fresh_schema(label: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let label: String = label
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(20)
        .collect::<String>()
        .to_ascii_lowercase();
    let name = format!("chord_test_{label}_{}_{n}_{nanos}", std::process::id());
    create_schema(&name);
    name
}

/// Creates `name` (if new) with the mark [`sweep`] reads.
pub fn create_schema(name: &str) {
    let mut client = client();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{name}\";
             COMMENT ON SCHEMA \"{name}\" IS 'chord test {}'",
            now()
        ))
        .expect("create the test schema");
}

/// The URL of a fresh schema of its own ([`fresh_schema`] then [`schema_url`]).
pub fn fresh_url(label: &str) -> String {
    schema_url(&fresh_schema(label))
}

/// The URL of a schema.
pub fn schema_url(schema: &str) -> String {
    let url = url().expect("checked by the caller");
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}schema={schema}")
}

/// Drops the test schemas that earlier runs left, once they are an hour old.
fn sweep(client: &mut postgres::Client) {
    let Ok(rows) = client.query(
        "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace
         WHERE nspname LIKE 'chord\\_test\\_%'",
        &[],
    ) else {
        return;
    };
    for row in rows {
        let (name, mark): (String, Option<String>) = (row.get(0), row.get(1));
        let created = mark
            .as_deref()
            .and_then(|m| m.strip_prefix("chord test "))
            .and_then(|t| t.parse::<u64>().ok());
        if created.is_some_and(|t| t + 3600 < now()) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"));
        }
    }
}
