//! The conformance vectors generated from the TypeScript reference implementation,
//! `testdata/conformance/vectors.jsonl` (format in its README): reading them, selecting the
//! cases of a command, and comparing an answer with a case's expectation.
//!
//! Shared by `tests/conformance.rs` (the core's commands) and `tests/conformance_tracker.rs`
//! (`diff`, and `overlap` through `diff`), each including it as `mod vectors`. The overlap
//! detector's own replay of the `overlap` cases is a unit test in `src/overlap.rs`.
// Each test uses part of it.
#![allow(dead_code)]

use serde_json::Value;

/// Where deliberate differences from the reference are listed: `(case name, reason)`.
pub type Deviations = [(&'static str, &'static str)];

/// Every case of the file, in order.
pub struct Vectors {
    /// The cases serde_json reads.
    pub cases: Vec<Value>,
    /// The lines it cannot read (a lone surrogate is not a Unicode scalar value), verbatim.
    pub unparsable: Vec<String>,
}

/// Reads `testdata/conformance/vectors.jsonl`; blank lines are skipped.
pub fn read() -> Vectors {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/conformance/vectors.jsonl");
    let text = std::fs::read_to_string(path).expect("conformance vectors readable");
    let mut vectors = Vectors {
        cases: Vec::new(),
        unparsable: Vec::new(),
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(case) => vectors.cases.push(case),
            Err(_) => vectors.unparsable.push(line.to_owned()),
        }
    }
    vectors
}

impl Vectors {
    /// The cases of command `cmd`, in file order.
    pub fn of<'a>(&'a self, cmd: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.cases.iter().filter(move |case| self::cmd(case) == cmd)
    }
}

/// A case's name.
pub fn name(case: &Value) -> &str {
    case["name"].as_str().expect("every case has a name")
}

/// A case's command.
pub fn cmd(case: &Value) -> &str {
    case["cmd"].as_str().expect("every case has a command")
}

/// The value a case expects, or `None` where it expects an error.
pub fn expect_ok(case: &Value) -> Option<&Value> {
    case["expect"].get("ok")
}

/// The count at `key` of `case`, if present.
pub fn count(case: &Value, key: &str) -> Option<usize> {
    case.get(key).map(|v| {
        let n = v
            .as_u64()
            .unwrap_or_else(|| panic!("{key} is a count: {v}"));
        usize::try_from(n).unwrap()
    })
}

/// Whether `name` is listed in `deviations`.
pub fn deviates(deviations: &Deviations, name: &str) -> bool {
    deviations.iter().any(|(n, _)| *n == name)
}

/// Compares an answer with what `case` expects: the `ok` value exactly, or an error where the
/// reference errs (error messages are not compared).
pub fn assert_expected(case: &Value, got: Result<Value, String>) {
    let name = name(case);
    match (expect_ok(case), got) {
        (Some(want), Ok(got)) => assert_eq!(&got, want, "case {name:?}"),
        (Some(want), Err(e)) => panic!("case {name:?}: expected {want}, got error {e}"),
        (None, Ok(got)) => panic!("case {name:?}: expected an error, got {got}"),
        (None, Err(_)) => {}
    }
}
