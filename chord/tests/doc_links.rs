//! Every relative link of the repository's Markdown documents names a file or folder that
//! exists: a reader who follows one from the README, the JavaScript README, the deployment
//! guide, CONTRIBUTING or the changelog lands somewhere.

use std::path::{Path, PathBuf};

/// The link targets of `markdown`: what `](...)` holds, without a title or an anchor.
fn targets(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or_default();
        found.push(target.to_owned());
        rest = &rest[end..];
    }
    found
}

fn relative(target: &str) -> Option<&str> {
    let external = target.contains("://") || target.starts_with("mailto:");
    let path = target.split('#').next().unwrap_or_default();
    (!external && !path.is_empty()).then_some(path)
}

#[test]
fn every_relative_link_of_the_documents_names_a_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut documents: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "BENCHMARKS.md",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    for folder in ["docs", "js"] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                documents.push(path);
            }
        }
    }
    let mut links = 0;
    let mut broken = Vec::new();
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        let base = document.parent().unwrap();
        for target in targets(&text) {
            let Some(path) = relative(&target) else {
                continue;
            };
            links += 1;
            if !base.join(path).exists() {
                broken.push(format!("{}: {target}", document.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
    assert!(
        links > 10,
        "only {links} relative links found: the scan is broken"
    );
    // The README links the guide's AG-UI chapter.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(targets(&readme)
        .iter()
        .any(|t| t == "chord/src/ag_ui/mod.rs"));
}

#[test]
fn the_scan_finds_links_and_tells_relative_from_external() {
    let text =
        "see [a](docs/a.md), [b](https://x.y/z) and [c](#anchor) or [d](js/README.md#x \"t\")";
    let found = targets(text);
    assert_eq!(
        found,
        ["docs/a.md", "https://x.y/z", "#anchor", "js/README.md#x"]
    );
    let relative: Vec<&str> = found.iter().filter_map(|t| relative(t)).collect();
    assert_eq!(relative, ["docs/a.md", "js/README.md"]);
}

/// The `N` of every `Retention::Bases(N)` in `text`.
fn bases_kept(text: &str) -> Vec<u32> {
    text.split("Retention::Bases(")
        .skip(1)
        .filter_map(|rest| rest.split(')').next()?.parse().ok())
        .collect()
}

#[test]
fn the_ag_ui_guide_keeps_as_many_checkpoints_as_the_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let example = bases_kept(&read("chord/examples/ag_ui_agent.rs"));
    let guide = bases_kept(&read("chord/src/ag_ui/mod.rs"));
    assert_eq!(
        example.len(),
        1,
        "the example sets its retention once: {example:?}"
    );
    assert!(!guide.is_empty(), "the guide's setup sets a retention");
    assert!(
        guide.iter().all(|&n| n == example[0]),
        "the guide keeps {guide:?} bases of a run, the example {}",
        example[0]
    );
}
