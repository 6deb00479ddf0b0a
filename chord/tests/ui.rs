//! Compile errors of `#[derive(Tracked)]`: one mistake a file, each error under the
//! offending tokens with a message that says what to do.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
