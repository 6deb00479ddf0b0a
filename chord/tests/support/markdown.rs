//! Code blocks of the repository's Markdown, for the tests that run them as a reader would.

/// The fenced blocks of `markdown` whose info string's first word is `lang`.
pub fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut found = Vec::new();
    // Outside a block: `None`; inside one: `Some(Some(text))` if it is wanted, else `Some(None)`.
    let mut inside: Option<Option<String>> = None;
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut inside, fence) {
            (None, Some(info)) => {
                let wanted = info.split_whitespace().next() == Some(lang);
                inside = Some(wanted.then(String::new));
            }
            (Some(block), Some(_)) => {
                found.extend(block.take());
                inside = None;
            }
            (Some(Some(block)), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (Some(None), None) | (None, None) => {}
        }
    }
    found
}
