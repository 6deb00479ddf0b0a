//! The orchestrator example (`chord/examples/orchestrator.rs`): plain Rust state of every
//! shape a multi-agent service has, tracked with no whole-value fallback (the example's
//! `run` checks that, and every replica, itself), and each batch the one its change needs.

#[allow(dead_code)]
#[path = "../examples/orchestrator.rs"]
mod orchestrator;

#[test]
fn every_batch_says_only_what_changed() {
    let batches = orchestrator::run();
    let shown: Vec<&str> = batches.iter().map(|b| b.shown.as_str()).collect();
    assert_eq!(shown.len(), 8);
    assert!(
        shown[0].starts_with("base batch, 1 op\n  replace "),
        "{}",
        shown[0]
    );
    // (The agents map is a `HashMap`: the order of its members in `set agents` varies.)
    assert!(
        shown[1].starts_with("batch, 2 ops\n  set agents = ")
            && shown[1].ends_with("\n  splice tags at 0: remove 0, insert 1 [\"nightly\"]"),
        "{}",
        shown[1]
    );
    let expected = [
        "batch, 5 ops\n  \
         set phase = {\"Executing\":1}\n  \
         set agents.coder.status = {\"state\":\"working\",\"on\":\"edit\"}\n  \
         splice agents.coder.log at 0: remove 0, insert 1 [\"opened src/lib.rs\"]\n  \
         set agents.coder.current = {\"name\":\"edit\",\"done\":false}\n  \
         set agents.coder.lastEvent = {\"kind\":\"started\",\"data\":\"edit\"}",
        "batch, 3 ops\n  \
         splice agents.coder.log at 1: remove 0, insert 1 [\"25% of the edit\"]\n  \
         set agents.coder.lastEvent = {\"kind\":\"progress\",\"data\":{\"pct\":25}}\n  \
         set agents.coder.tokens = 120",
        // Within one variant, only the member that changed.
        "batch, 3 ops\n  \
         splice agents.coder.log at 2: remove 0, insert 1 [\"50% of the edit\"]\n  \
         set agents.coder.lastEvent.data.pct = 50\n  \
         set agents.coder.tokens = 240",
        "batch, 3 ops\n  \
         splice agents.coder.log at 3: remove 0, insert 1 [\"75% of the edit\"]\n  \
         set agents.coder.lastEvent.data.pct = 75\n  \
         set agents.coder.tokens = 360",
        // The capped log drops its first line and adds one: two splices, not the deque.
        "batch, 7 ops\n  \
         splice agents.coder.plan at 1: remove 0, insert 1 [[{\"name\":\"review\",\"done\":false}]]\n  \
         set agents.coder.plan[0][0].done = true\n  \
         splice agents.coder.log at 0: remove 1\n  \
         splice agents.coder.log at 3: remove 0, insert 1 [\"tests pass\"]\n  \
         append agents.coder.current.name += \" (done)\"\n  \
         set scratch = {\"retries\":1}\n  \
         splice findings.items at 0: remove 0, insert 1 [{\"title\":\"flaky test\",\"score\":3}]",
        "batch, 4 ops\n  \
         set phase = {\"Reviewing\":{\"round\":1}}\n  \
         set agents.planner.status = {\"state\":\"done\"}\n  \
         set scratch.retries = 2\n  \
         set findings.next = \"page-2\"",
    ];
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(shown[i + 2], *want, "batch {}", i + 2);
    }
    // A streaming step on the wire: its paths by id, well under a hundred and fifty bytes.
    assert!(batches[5].wire.len() < 150, "{}", batches[5].wire);
}
