//! The JavaScript quickstart, run as a reader copies it: every ```js block of `js/README.md`
//! (and of the root `README.md`, if it has any) runs in Node against the demo's server, with
//! only the address `http://127.0.0.1:8080` replaced by the server's, while the agent runs.
//! Each block must follow the lane to the producer's final state and report no error.
//!
//! A block ends up in a module of its own, followed by a check that reads the block's
//! `follower` (each block names its follower so): the check waits until
//! `follower.replica.value` equals the producer's state, then stops it. The module sits in a
//! temporary directory whose `node_modules` links `chord-replica` to `js/` and
//! `@durable-streams` to `js/node_modules/`, so the blocks' imports resolve as in a project
//! that installed the package.

#[allow(dead_code)]
#[path = "../../demo/src/main.rs"]
mod agent_lane;
#[path = "support/local.rs"]
mod local;
#[path = "support/markdown.rs"]
mod markdown;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_lane::server::LaneServer;
use agent_lane::{run_agent, LogFile, Output, Stream};
use chord::streams::Streams;

/// The address the README's blocks use, which the test replaces with its server's.
const README_ADDRESS: &str = "http://127.0.0.1:8080";

/// Appended to every block: waits for the producer's state, then stops the follower.
const CHECK: &str = r#"
// ---- appended by chord/tests/js_quickstart.rs ----
{
  const { isDeepStrictEqual } = await import('node:util');
  const expected = JSON.parse(process.env.CHORD_QUICKSTART_EXPECTED);
  const deadline = Date.now() + 60_000;
  while (!isDeepStrictEqual(follower.replica.value, expected)) {
    if (Date.now() > deadline) {
      console.error('QUICKSTART: never reached the state', JSON.stringify(follower.stats), JSON.stringify(follower.replica.value));
      process.exit(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  follower.stop();
  await follower.done;
  process.stdout.write(`QUICKSTART: reached ${JSON.stringify(follower.stats)}\n`);
  process.exit(0);
}
"#;

#[test]
fn fenced_blocks_are_found_by_language() {
    let text =
        "text\n```sh\nls\n```\n```js\na();\n```\n```html\n<p>\n```\n```js title\nb();\nc();\n```\n";
    assert_eq!(markdown::blocks(text, "js"), ["a();\n", "b();\nc();\n"]);
    assert_eq!(markdown::blocks(text, "html"), ["<p>\n"]);
    assert_eq!(markdown::blocks(text, "sh"), ["ls\n"]);
}

/// The `js` blocks of the two READMEs, each with where it came from.
fn quickstart_blocks(root: &Path) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for readme in ["js/README.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(readme))
            .unwrap_or_else(|e| panic!("reading {readme}: {e}"));
        for (i, block) in markdown::blocks(&text, "js").into_iter().enumerate() {
            all.push((format!("{readme}, js block {}", i + 1), block));
        }
    }
    all
}

/// A directory where `import 'chord-replica'` and `import '@durable-streams/client'` resolve
/// to this checkout's package and its installed development dependencies.
fn project(root: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("node_modules");
    std::fs::create_dir(&modules).unwrap();
    let link = |target: PathBuf, name: &str| {
        std::os::unix::fs::symlink(&target, modules.join(name))
            .unwrap_or_else(|e| panic!("linking {name} to {}: {e}", target.display()));
    };
    link(root.join("js"), "chord-replica");
    let durable = root.join("js/node_modules/@durable-streams");
    if durable.exists() {
        link(durable, "@durable-streams");
    }
    dir
}

#[test]
fn the_readme_javascript_blocks_follow_the_demo_lane() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let blocks = quickstart_blocks(&root);
    assert!(
        blocks.iter().any(|(_, b)| b.contains(README_ADDRESS)),
        "js/README.md has no quickstart block using {README_ADDRESS}"
    );
    for (from, block) in &blocks {
        assert!(
            block.contains(README_ADDRESS),
            "{from} does not use {README_ADDRESS}, so this test cannot point it at its server:\n{block}"
        );
        assert!(
            block.contains("const follower"),
            "{from} names no `follower`, which this test's check reads:\n{block}"
        );
        if block.contains("@durable-streams/") {
            assert!(
                root.join("js/node_modules/@durable-streams/client")
                    .exists(),
                "{from} imports @durable-streams/client and js/node_modules is missing: run \
                 scripts/test (it installs them)"
            );
        }
    }

    let runtime = local::runtime();
    let mut s = Stream::new(Output::Quiet, LogFile::new(None).unwrap()).unwrap();
    s.serve(Duration::from_millis(2)).unwrap();
    let server = runtime
        .block_on(LaneServer::start(0, Streams::new(&s.log())))
        .unwrap();
    let address = format!("http://{}", server.addr);

    // The producer's state at the end of its turn, computed by a second, unserved run of the
    // same turn: the followers are started before the served one runs, so they join it live.
    let expected = {
        let mut alone = Stream::new(Output::Quiet, LogFile::new(None).unwrap()).unwrap();
        alone.serve(Duration::ZERO).unwrap();
        run_agent(&mut alone).unwrap();
        alone.state()
    };

    let dir = project(&root);
    let children: Vec<_> = blocks
        .iter()
        .enumerate()
        .map(|(i, (from, block))| {
            let file = dir.path().join(format!("block-{}.mjs", i + 1));
            let code = block.replace(README_ADDRESS, &address);
            std::fs::write(&file, format!("{code}{CHECK}")).unwrap();
            let child = Command::new("node")
                .arg(&file)
                .current_dir(dir.path())
                .env("CHORD_QUICKSTART_EXPECTED", expected.to_string())
                .env_remove("CHORD_STREAM")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("`node` (Node.js 18 or later) is needed: {e}"));
            (from, child)
        })
        .collect();
    run_agent(&mut s).unwrap();
    assert_eq!(
        s.state(),
        expected,
        "the served turn ends where the other did"
    );

    for (from, child) in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{from} did not reach the producer's state:\n{stderr}\n{stdout}"
        );
        let reached = stdout
            .lines()
            .find_map(|l| l.strip_prefix("QUICKSTART: reached "))
            .unwrap_or_else(|| panic!("{from}: no report from the check:\n{stdout}"));
        println!("{from}: {reached}");
        assert!(
            stderr.trim().is_empty(),
            "{from} reported errors while following:\n{stderr}"
        );
    }
    runtime.block_on(server.stop()).unwrap();
}
