//! Project context files from the agent's workspace, as Hermes picks them: the first of
//! `.hermes.md`/`HERMES.md` (walking up to the git root), `AGENTS.md`, `CLAUDE.md`,
//! `.cursorrules`/`.cursor/rules/*.mdc` wins; it is truncated to 20,000 characters (70 % head,
//! 20 % tail, a marker between) and scanned for prompt injection.

use std::future::Future;

use hermes_threats as threats;

/// Longest context file kept in the prompt.
pub const MAX_CONTEXT_CHARS: usize = 20_000;

/// Reads files of the agent's workspace (implemented over the sandbox by the worker, where
/// every call is a round trip: discovery makes as few as it can).
pub trait WorkspaceFiles: Send + Sync {
    /// Whether there is a workspace to look at (a sandbox that is not running has none).
    fn available(&self) -> impl Future<Output = bool> + Send {
        async { true }
    }
    /// The content of `path` (relative to the workspace root), if it is a readable file.
    fn read(&self, path: &str) -> impl Future<Output = Option<String>> + Send;
    /// The first of `paths` that is a readable file, with its content.
    fn read_first(&self, paths: &[String]) -> impl Future<Output = Option<(String, String)>> + Send {
        async move {
            for path in paths {
                if let Some(text) = self.read(path).await {
                    return Some((path.clone(), text));
                }
            }
            None
        }
    }
    /// File names in directory `dir` (relative), if it exists.
    fn list(&self, dir: &str) -> impl Future<Output = Vec<String>> + Send;
}

/// The chosen context file, ready for the prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextFile {
    /// The name shown in the prompt (`AGENTS.md`, `.cursor/rules/style.mdc`, ...).
    pub name: String,
    pub content: String,
    /// What the scan blocked, for logs.
    pub blocked: Vec<&'static str>,
}

/// `cwd` and its parents up to and including the first one holding `.git` (or the root).
async fn up_to_git_root<F: WorkspaceFiles>(files: &F, cwd: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut dir = cwd.trim_matches('/').to_owned();
    loop {
        dirs.push(dir.clone());
        // The workspace root is the top either way: no need to look for `.git` there.
        if dir.is_empty() || files.list(&dir).await.iter().any(|n| n == ".git") {
            return dirs;
        }
        dir = match dir.rfind('/') {
            Some(i) => dir[..i].to_owned(),
            None => String::new(),
        };
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_owned() } else { format!("{dir}/{name}") }
}

/// Strips a leading YAML front matter block (`---` ... `---`).
fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else { return text };
    match rest.find("\n---") {
        Some(end) => rest[end + 4..].trim_start_matches(['\r', '\n']),
        None => text,
    }
}

/// Keeps the first 70 % and the last 20 % of `max` characters, with a marker between.
pub fn truncate_head_tail(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let head = max * 7 / 10;
    let tail = max * 2 / 10;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n\n[... {} characters of this file were left out ...]\n\n{}",
        &text[..head_end],
        total - head - tail,
        &text[tail_start..]
    )
}

fn finish(name: String, raw: &str) -> ContextFile {
    let truncated = truncate_head_tail(raw.trim(), MAX_CONTEXT_CHARS);
    let (content, findings) = threats::sanitize(&truncated);
    ContextFile { name, content, blocked: findings.into_iter().map(|f| f.reason).collect() }
}

/// Finds the context file for a workspace whose working directory is `cwd`.
pub async fn discover<F: WorkspaceFiles>(files: &F, cwd: &str) -> Option<ContextFile> {
    if !files.available().await {
        return None;
    }
    let cwd = cwd.trim_matches('/');
    // Every candidate in priority order, asked for in one read: the first that exists wins.
    let mut candidates: Vec<String> = Vec::new();
    for dir in up_to_git_root(files, cwd).await {
        candidates.extend([".hermes.md", "HERMES.md"].map(|name| join(&dir, name)));
    }
    let hermes_kinds = candidates.len();
    candidates.extend(["AGENTS.md", "CLAUDE.md", ".cursorrules"].map(|name| join(cwd, name)));
    if let Some((path, text)) = files.read_first(&candidates).await {
        let is_hermes = candidates.iter().position(|c| *c == path).is_some_and(|i| i < hermes_kinds);
        let text = if is_hermes { strip_front_matter(&text) } else { &text };
        return Some(finish(path, text));
    }
    let rules_dir = join(cwd, ".cursor/rules");
    let mut rules: Vec<String> = files.list(&rules_dir).await.into_iter().filter(|n| n.ends_with(".mdc")).collect();
    rules.sort();
    let mut combined = String::new();
    for name in &rules {
        if let Some(text) = files.read(&join(&rules_dir, name)).await {
            combined.push_str(&format!("## {name}\n{}\n\n", strip_front_matter(&text).trim()));
        }
    }
    (!combined.is_empty()).then(|| finish(rules_dir, &combined))
}

#[cfg(test)]
#[path = "context_files_tests.rs"]
mod tests;
