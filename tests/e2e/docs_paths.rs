//! The docs name only paths that exist. README.md, CONTRIBUTING.md, docs/**/*.md and
//! helm/README.md are read for two things: repository paths (a token that starts at a
//! top-level directory, `libs/...` or `tests/...`, and ends in a file extension or `/`), and
//! relative Markdown links, whose `#anchor` must also name a heading when the target is a
//! Markdown file. A doc that still names a moved or deleted file fails here with its line.
//! Tokens with `*`, `<`, `{` or `$` are patterns, not paths, and are skipped. No services.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The top-level directories a path in a doc may start at.
const TOP_DIRS: [&str; 11] = [
    "services/",
    "libs/",
    "deploy/",
    "helm/",
    "migrations/",
    "skills/",
    "loadtest/",
    "tests/",
    "docs/",
    ".ci/",
    "fuzz/",
];

/// Characters of a path-like token. The pattern characters are included so that a pattern
/// (`docs/features/*.md`, `tests/e2e/<name>.rs`) is read whole and then skipped, rather
/// than cut into a prefix that looks like a path.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./-*<>{}$".contains(c)
}

/// The repository paths `line` names, `:line` suffixes and sentence ends left off.
fn paths_in(line: &str) -> Vec<&str> {
    line.split(|c: char| !token_char(c))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| TOP_DIRS.iter().any(|d| t.starts_with(d)))
        .filter(|t| !t.contains(['*', '<', '>', '{', '}', '$']))
        .filter(|t| t.ends_with('/') || has_extension(t))
        .collect()
}

fn has_extension(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or(path);
    match last.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty() && (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// The relative targets of the Markdown links on `line` (`[text](target)`), without any
/// link title. Addresses with a scheme are left to the web.
fn links_in(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            found.push(target);
        }
        rest = &rest[end..];
    }
    found
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown text's headings (outside code blocks), with GitHub's `-1`,
/// `-2`, ... for repeated ones.
fn anchors_of(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if in_code || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = anchor(&line[hashes..]);
        let mut name = base.clone();
        let mut n = 0;
        while !anchors.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
    }
    anchors
}

/// The docs to check, relative to the repository root.
fn docs(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "helm/README.md"]
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| root.join(p).is_file())
        .collect();
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root.join(&dir)).unwrap().flatten() {
            let rel = dir.join(entry.file_name());
            if entry.path().is_dir() {
                dirs.push(rel);
            } else if rel.extension().is_some_and(|e| e == "md") {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}

/// What is wrong with one link of `doc` (in `root`), if anything.
fn broken_link(root: &Path, doc: &Path, doc_text: &str, target: &str) -> Option<String> {
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let path = if file.is_empty() { root.join(doc) } else { root.join(doc).parent()?.join(file) };
    if !path.exists() {
        return Some(format!("link to {target}: no such file"));
    }
    if fragment.is_empty() || path.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = if file.is_empty() { doc_text.to_owned() } else { std::fs::read_to_string(&path).ok()? };
    (!anchors_of(&text).contains(fragment)).then(|| format!("link to {target}: no heading with that anchor"))
}

#[test]
fn docs_name_only_paths_that_exist() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let docs = docs(root);
    assert!(docs.len() >= 4, "the docs were not found under {}: {docs:?}", root.display());
    let (mut checked, mut missing) = (0, Vec::new());
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let dir = root.join(doc).parent().unwrap().to_path_buf();
        for (n, line) in text.lines().enumerate() {
            for path in paths_in(line) {
                checked += 1;
                // A doc below the root may name paths from its own folder (helm/README.md).
                if !root.join(path).exists() && !dir.join(path).exists() {
                    missing.push(format!("{}:{}: {path}", doc.display(), n + 1));
                }
            }
            for target in links_in(line) {
                checked += 1;
                if let Some(why) = broken_link(root, doc, &text, target) {
                    missing.push(format!("{}:{}: {why}", doc.display(), n + 1));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} paths and links found in {docs:?}: is the scanner broken?");
    assert!(missing.is_empty(), "docs name paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_scanner_reads_paths_links_and_anchors_as_a_reader_would() {
    let line = "See `libs/core/src/kinds.rs:18`, tests/e2e/ and deploy/dev/test.sh. Not libs/core, \
                `tests/e2e/<name>.rs`, docs/features/*.md, /tmp/libs/x.rs or services/api/src/{a,b}.rs.";
    assert_eq!(paths_in(line), ["libs/core/src/kinds.rs", "tests/e2e/", "deploy/dev/test.sh"]);

    let line = "[a](features/chat.md#busy-agent), [b](https://example.com/x.md) and [c](#top \"title\")";
    assert_eq!(links_in(line), ["features/chat.md#busy-agent", "#top"]);

    let text = "# Top\n```sh\n# not a heading\n```\n## The second wall: row-level security\n## Top\n";
    let anchors: Vec<_> = anchors_of(text).into_iter().collect();
    assert_eq!(anchors, ["the-second-wall-row-level-security", "top", "top-1"]);
}
