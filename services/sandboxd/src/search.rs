//! Search: file contents by regular expression, or file names by glob, honouring
//! `.gitignore` (with or without a git repository) and skipping hidden files and the
//! daemon's state, like ripgrep.

use std::path::Path;
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
    let limit = if req.limit == 0 { DEFAULT_LIMIT } else { req.limit } as usize;
    let offset = req.offset as usize;
    let file_glob = if req.file_glob.is_empty() { None } else { Some(glob(&req.file_glob)?) };
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
        let name_ok = file_glob.as_ref().is_none_or(|g| g.is_match(entry.file_name()) || g.is_match(entry.path()));
        if name_ok {
            files.push(entry.into_path());
        }
    }
    let rel =
        |p: &Path| p.strip_prefix(root).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string());

    if req.files {
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
            .skip(offset)
            .take(limit)
            .map(|(_, path)| SearchHit { path, line: 0, text: String::new(), count: 0 })
            .collect();
        return Ok(SearchResponse { hits, total, truncated });
    }

    let re = Regex::new(&req.pattern).map_err(|e| Status::invalid_argument(format!("bad regular expression: {e}")))?;
    let context = req.context as usize;
    let mut hits = Vec::new();
    let mut total = 0u64;
    files.sort();
    for path in &files {
        if std::fs::metadata(path).map(|m| m.len() > MAX_SEARCH_BYTES).unwrap_or(true) {
            continue;
        }
        let Ok(bytes) = std::fs::read(path) else { continue };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let matching: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| re.is_match(l)).map(|(i, _)| i).collect();
        if matching.is_empty() {
            continue;
        }
        if req.count_only || req.files_only {
            total += 1;
            if total as usize > offset && hits.len() < limit {
                hits.push(SearchHit { path: rel(path), line: 0, text: String::new(), count: matching.len() as u64 });
            }
            continue;
        }
        for i in matching {
            total += 1;
            if (total as usize) <= offset || hits.len() >= limit {
                continue;
            }
            let text = if context == 0 {
                clip(lines[i])
            } else {
                let from = i.saturating_sub(context);
                let to = (i + context + 1).min(lines.len());
                (from..to)
                    .map(|j| format!("{}{}{}", j + 1, if j == i { ":" } else { "-" }, clip(lines[j])))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            hits.push(SearchHit { path: rel(path), line: u32::try_from(i + 1).unwrap_or(u32::MAX), text, count: 0 });
        }
    }
    Ok(SearchResponse { hits, total, truncated })
}
