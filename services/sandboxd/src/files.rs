//! Files: reads with line numbers and paging, whole-file writes, exact or unified-diff edits.
//! Writes go only under the writable roots (the workspace and `/tmp`), checked after
//! resolving symlinks, and replace files atomically (a new file renamed over the old one).

use std::path::{Component, Path, PathBuf};

use hermes_sandbox_proto::v1::{EditResponse, ReadFileResponse, Replace};
use tonic::Status;

/// Lines returned when the request sets no limit, and at most.
pub const DEFAULT_LINES: u32 = 500;
pub const MAX_LINES: u32 = 2_000;
/// Longest line returned (longer ones are cut with a marker).
pub const MAX_LINE_CHARS: usize = 2_000;
/// A read returning more than this is refused (ask for fewer lines).
pub const MAX_READ_CHARS: usize = 100_000;
/// Files larger than this are not read or edited whole.
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// Where paths resolve and where writes may go.
#[derive(Debug, Clone)]
pub struct Paths {
    pub workspace: PathBuf,
    pub writable: Vec<PathBuf>,
    /// The daemon's own state (never written through the file tools).
    pub state_dir: PathBuf,
}

/// `path` made absolute (relative to the workspace) and `.`/`..` resolved lexically.
pub fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { workspace.join(path) };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

impl Paths {
    /// A path to read.
    pub fn readable(&self, path: &str) -> Result<PathBuf, Status> {
        if path.trim().is_empty() {
            return Err(Status::invalid_argument("path is empty"));
        }
        Ok(absolute(&self.workspace, path))
    }

    /// A path to write: under a writable root once symlinks are resolved, and not the daemon's state.
    pub fn writable(&self, path: &str) -> Result<PathBuf, Status> {
        let target = self.readable(path)?;
        // Resolve the deepest part that exists, so a symlink cannot lead the write elsewhere.
        let mut existing = target.as_path();
        let mut rest = Vec::new();
        while !existing.exists() {
            let Some(parent) = existing.parent() else { break };
            if let Some(name) = existing.file_name() {
                rest.push(name.to_owned());
            }
            existing = parent;
        }
        let mut real = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
        for name in rest.iter().rev() {
            real.push(name);
        }
        let roots: Vec<PathBuf> =
            self.writable.iter().map(|r| r.canonicalize().unwrap_or_else(|_| r.clone())).collect();
        let state = self.state_dir.canonicalize().unwrap_or_else(|_| self.state_dir.clone());
        if !roots.iter().any(|r| real.starts_with(r)) {
            return Err(Status::permission_denied(format!(
                "{} is outside the writable places ({})",
                target.display(),
                self.writable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        if real.starts_with(&state) {
            return Err(Status::permission_denied("that directory belongs to the sandbox daemon"));
        }
        Ok(real)
    }
}

fn io_status(path: &Path, e: &std::io::Error) -> Status {
    match e.kind() {
        std::io::ErrorKind::NotFound => Status::not_found(format!("{} does not exist", path.display())),
        std::io::ErrorKind::PermissionDenied => {
            Status::permission_denied(format!("{}: permission denied", path.display()))
        }
        _ => Status::failed_precondition(format!("{}: {e}", path.display())),
    }
}

/// A file's text, refusing directories, huge files and binary content.
pub fn read_text(path: &Path) -> Result<String, Status> {
    let meta = std::fs::metadata(path).map_err(|e| io_status(path, &e))?;
    if meta.is_dir() {
        return Err(Status::invalid_argument(format!("{} is a directory", path.display())));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Status::invalid_argument(format!("{} is larger than 50 MiB", path.display())));
    }
    let bytes = std::fs::read(path).map_err(|e| io_status(path, &e))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Status::invalid_argument(format!("{} is a binary file", path.display())));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A whole file, if it is at most `max_bytes`.
pub fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, Status> {
    let meta = std::fs::metadata(path).map_err(|e| io_status(path, &e))?;
    if !meta.is_file() {
        return Err(Status::invalid_argument(format!("{} is not a file", path.display())));
    }
    if meta.len() > max_bytes {
        return Err(Status::out_of_range(format!(
            "{} is {} bytes; at most {max_bytes} can be sent",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| io_status(path, &e))
}

/// Lines `offset..offset+limit` (1-based) of the file as `LINE|TEXT`.
pub fn read_lines(path: &Path, offset: u32, limit: u32) -> Result<ReadFileResponse, Status> {
    page(&read_text(path)?, offset, limit)
}

/// Lines `offset..offset+limit` (1-based) of `text` as `LINE|TEXT`.
pub fn page(text: &str, offset: u32, limit: u32) -> Result<ReadFileResponse, Status> {
    let size_bytes = text.len() as u64;
    let lines: Vec<&str> = text.lines().collect();
    let total = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let first = offset.max(1);
    let limit = if limit == 0 { DEFAULT_LINES } else { limit.min(MAX_LINES) };
    if first > total.max(1) {
        return Err(Status::out_of_range(format!("the file has {total} lines; offset {first} is past its end")));
    }
    let mut content = String::new();
    let mut last = first.saturating_sub(1);
    for (i, line) in lines.iter().enumerate().skip(first as usize - 1).take(limit as usize) {
        let shown: String = if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{cut}... [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            (*line).to_owned()
        };
        content.push_str(&format!("{}|{shown}\n", i + 1));
        last = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if content.len() > MAX_READ_CHARS {
            return Err(Status::out_of_range(format!(
                "lines {first}..{last} are over {MAX_READ_CHARS} characters; read fewer lines at a time"
            )));
        }
    }
    Ok(ReadFileResponse { content, first_line: first, last_line: last, total_lines: total, size_bytes })
}

/// Writes `content` atomically, creating parent directories.
fn write_atomic(path: &Path, content: &str) -> Result<(), Status> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_status(parent, &e))?;
    }
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.hermes-tmp"));
    std::fs::write(&tmp, content).map_err(|e| io_status(&tmp, &e))?;
    if let Some(mode) = mode {
        let _ = std::fs::set_permissions(&tmp, mode);
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_status(path, &e)
    })
}

fn diff(path: &Path, old: &str, new: &str) -> String {
    let patch = diffy::create_patch(old, new);
    let name = path.display().to_string();
    // diffy writes `original`/`modified` headers; name the file instead.
    patch.to_string().replacen("--- original", &format!("--- {name}"), 1).replacen(
        "+++ modified",
        &format!("+++ {name}"),
        1,
    )
}

/// Replaces the whole file.
pub fn write_file(path: &Path, content: &str) -> Result<EditResponse, Status> {
    let old = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(Status::invalid_argument(format!("{} is a directory", path.display()))),
        Ok(_) => Some(read_text(path).unwrap_or_default()),
        Err(_) => None,
    };
    write_atomic(path, content)?;
    Ok(EditResponse {
        path: path.display().to_string(),
        diff: diff(path, old.as_deref().unwrap_or(""), content),
        replacements: 0,
        created: old.is_none(),
    })
}

/// Replaces `old_string` by `new_string`: exactly once unless `replace_all`.
pub fn replace(path: &Path, edit: &Replace) -> Result<EditResponse, Status> {
    if edit.old_string.is_empty() {
        return Err(Status::invalid_argument("old_string is empty; use write_file to create a file"));
    }
    if edit.old_string == edit.new_string {
        return Err(Status::invalid_argument("old_string and new_string are the same"));
    }
    let old = read_text(path)?;
    let found = old.matches(edit.old_string.as_str()).count();
    if found == 0 {
        return Err(Status::not_found(format!(
            "old_string was not found in {}; read the file again and copy the text exactly",
            path.display()
        )));
    }
    if found > 1 && !edit.replace_all {
        return Err(Status::failed_precondition(format!(
            "old_string was found {found} times in {}; add surrounding lines to make it unique, or set replace_all",
            path.display()
        )));
    }
    let new = if edit.replace_all {
        old.replace(edit.old_string.as_str(), &edit.new_string)
    } else {
        old.replacen(edit.old_string.as_str(), &edit.new_string, 1)
    };
    write_atomic(path, &new)?;
    Ok(EditResponse {
        path: path.display().to_string(),
        diff: diff(path, &old, &new),
        replacements: u32::try_from(found).unwrap_or(u32::MAX),
        created: false,
    })
}

/// Applies a unified diff to the file (a missing file counts as empty).
pub fn apply_unified(path: &Path, patch_text: &str) -> Result<EditResponse, Status> {
    let exists = path.exists();
    let old = if exists { read_text(path)? } else { String::new() };
    let patch =
        diffy::Patch::from_str(patch_text).map_err(|e| Status::invalid_argument(format!("not a unified diff: {e}")))?;
    let new = diffy::apply(&old, &patch).map_err(|e| {
        Status::failed_precondition(format!(
            "the diff does not apply to {} ({e}); read the file again and make the diff from its current text",
            path.display()
        ))
    })?;
    write_atomic(path, &new)?;
    Ok(EditResponse {
        path: path.display().to_string(),
        diff: diff(path, &old, &new),
        replacements: 0,
        created: !exists,
    })
}

/// The first of `paths` that is a readable regular file, at most `max` bytes of it.
pub fn read_first(workspace: &Path, paths: &[String], max: u64) -> (String, String) {
    for p in paths {
        let abs = absolute(workspace, p);
        let Ok(meta) = std::fs::metadata(&abs) else { continue };
        if !meta.is_file() {
            continue;
        }
        let Ok(bytes) = std::fs::read(&abs) else { continue };
        let cut = &bytes[..bytes.len().min(usize::try_from(max).unwrap_or(usize::MAX))];
        return (p.clone(), String::from_utf8_lossy(cut).into_owned());
    }
    (String::new(), String::new())
}

/// The names in a directory (empty if it does not exist).
pub fn list_dir(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}
