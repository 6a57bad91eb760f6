//! Search: file contents by regular expression, or file names by glob, honouring
//! `.gitignore` (with or without a git repository) and skipping hidden files and the
//! daemon's state, like ripgrep.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::{Glob, GlobMatcher};
use hermes_sandbox_proto::v1::{SearchHit, SearchRequest, SearchResponse};
use regex::Regex;
use tonic::Status;

/// Hits returned when the request sets no limit.
pub const DEFAULT_LIMIT: u32 = 50;
/// Files looked at per search, and the largest file whose content is searched.
const MAX_FILES: usize = 50_000;
const MAX_SEARCH_BYTES: u64 = 4 * 1024 * 1024;
const MAX_HIT_CHARS: usize = 500;

fn glob(pattern: &str) -> Result<GlobMatcher, Status> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| Status::invalid_argument(format!("bad glob {pattern:?}: {e}")))
}

fn clip(line: &str) -> String {
    if line.chars().count() > MAX_HIT_CHARS {
        let cut: String = line.chars().take(MAX_HIT_CHARS).collect();
        format!("{cut}...")
    } else {
        line.to_owned()
    }
}

/// Runs a search under `root` (already resolved), skipping `state_dir`.
pub fn search(req: &SearchRequest, root: &Path, state_dir: &Path) -> Result<SearchResponse, Status> {
    if req.pattern.is_empty() {
        return Err(Status::invalid_argument("pattern is empty"));
    }
    let page =
        Page { offset: req.offset as usize, limit: if req.limit == 0 { DEFAULT_LIMIT } else { req.limit } as usize };
    let file_glob = if req.file_glob.is_empty() { None } else { Some(glob(&req.file_glob)?) };
    let (files, truncated) = candidates(root, state_dir, file_glob.as_ref());
    if req.files {
        return by_name(req, &files, root, page, truncated);
    }
    by_content(req, files, root, page, truncated)
}

/// Which hits of all found a request asks for.
#[derive(Clone, Copy)]
struct Page {
    offset: usize,
    limit: usize,
}

/// The files under `root` a search looks at (those `file_glob` takes, if given), and whether
/// there were more than [`MAX_FILES`].
fn candidates(root: &Path, state_dir: &Path, file_glob: Option<&GlobMatcher>) -> (Vec<PathBuf>, bool) {
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .hidden(true)
        .filter_entry({
            let state = state_dir.to_path_buf();
            move |e| !e.path().starts_with(&state)
        })
        .build();
    let mut files = Vec::new();
    let mut truncated = false;
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if files.len() >= MAX_FILES {
            truncated = true;
            break;
        }
        let name_ok = file_glob.is_none_or(|g| g.is_match(entry.file_name()) || g.is_match(entry.path()));
        if name_ok {
            files.push(entry.into_path());
        }
    }
    (files, truncated)
}

/// `p` relative to `root`, as hits name files.
fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string())
}

/// The files whose name (or relative path) matches the request's glob, newest first.
fn by_name(
    req: &SearchRequest,
    files: &[PathBuf],
    root: &Path,
    page: Page,
    truncated: bool,
) -> Result<SearchResponse, Status> {
    let rel = |p: &Path| relative(root, p);
    let matcher = glob(&req.pattern)?;
    let mut found: Vec<(SystemTime, String)> = files
        .iter()
        .filter(|p| matcher.is_match(p.file_name().unwrap_or_default()) || matcher.is_match(rel(p)))
        .map(|p| (std::fs::metadata(p).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH), rel(p)))
        .collect();
    // Newest first, as upstream sorts file results.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len() as u64;
    let hits = found
        .into_iter()
        .skip(page.offset)
        .take(page.limit)
        .map(|(_, path)| SearchHit { path, line: 0, text: String::new(), count: 0 })
        .collect();
    Ok(SearchResponse { hits, total, truncated })
}

/// The lines matching the request's regular expression (or, when it asks for counts or
/// files only, one hit per file), in path order.
fn by_content(
    req: &SearchRequest,
    mut files: Vec<PathBuf>,
    root: &Path,
    page: Page,
    truncated: bool,
) -> Result<SearchResponse, Status> {
    let re = Regex::new(&req.pattern).map_err(|e| Status::invalid_argument(format!("bad regular expression: {e}")))?;
    let context = req.context as usize;
    let mut hits = Vec::new();
    let mut total = 0u64;
    files.sort();
    for path in &files {
        let Some(text) = searchable_text(path) else { continue };
        let lines: Vec<&str> = text.lines().collect();
        let matching: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| re.is_match(l)).map(|(i, _)| i).collect();
        if matching.is_empty() {
            continue;
        }
        if req.count_only || req.files_only {
            total += 1;
            if total as usize > page.offset && hits.len() < page.limit {
                let count = matching.len() as u64;
                hits.push(SearchHit { path: relative(root, path), line: 0, text: String::new(), count });
            }
            continue;
        }
        for i in matching {
            total += 1;
            if (total as usize) <= page.offset || hits.len() >= page.limit {
                continue;
            }
            let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
            hits.push(SearchHit { path: relative(root, path), line, text: hit_text(&lines, i, context), count: 0 });
        }
    }
    Ok(SearchResponse { hits, total, truncated })
}

/// A file's text, unless it is too large, unreadable or binary (a NUL in its first 8 KiB).
fn searchable_text(path: &Path) -> Option<String> {
    if std::fs::metadata(path).map(|m| m.len() > MAX_SEARCH_BYTES).unwrap_or(true) {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Line `i` clipped, or with `context` numbered lines either side (`N:` the hit, `N-` the rest).
fn hit_text(lines: &[&str], i: usize, context: usize) -> String {
    if context == 0 {
        return clip(lines[i]);
    }
    let from = i.saturating_sub(context);
    let to = (i + context + 1).min(lines.len());
    (from..to)
        .map(|j| format!("{}{}{}", j + 1, if j == i { ":" } else { "-" }, clip(lines[j])))
        .collect::<Vec<_>>()
        .join("\n")
}
