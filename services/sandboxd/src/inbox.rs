//! Files people send, kept in the workspace (`PutFile`): under a name of their own (the sender
//! chose it: no path, no control characters, no hidden file), never over another file. The
//! same bytes under the same name are the same file, so a turn resumed after a crash does not
//! keep a second copy.

use std::io::Write;
use std::path::{Path, PathBuf};

use tonic::Status;

/// The longest name kept, in characters (the extension included).
const MAX_NAME_CHARS: usize = 100;
/// How many `name-N.ext` are tried before giving up.
const MAX_TRIES: u32 = 1000;

/// `name` made safe to keep: its last path component, letters, digits and `._-` kept, spaces
/// and anything else made `_`, no leading dot, at most [`MAX_NAME_CHARS`] with its extension.
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let kept: String =
        last.chars().map(|c| if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    let kept = kept.trim_start_matches(['.', '_']);
    let (stem, ext) = match kept.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.chars().count() <= 10 => (stem, format!(".{ext}")),
        _ => (kept, String::new()),
    };
    let room = MAX_NAME_CHARS.saturating_sub(ext.chars().count());
    let stem: String = stem.chars().take(room).collect();
    if stem.is_empty() { format!("file{ext}") } else { format!("{stem}{ext}") }
}

/// `name` with `-n` before its extension.
fn numbered(name: &str, n: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}-{n}.{ext}"),
        None => format!("{name}-{n}"),
    }
}

/// Keeps `data` in `dir` (made if missing) under [`safe_name`]`(name)`, or `name-2.ext`, ...
/// when that is taken by other bytes. Returns the path and whether the same bytes were there
/// already. The file is linked into place only once written whole, and a name someone holds
/// (a file, a directory, a planted symlink) is never replaced.
pub fn put_file(dir: &Path, name: &str, data: &[u8]) -> Result<(PathBuf, bool), Status> {
    std::fs::create_dir_all(dir).map_err(|e| io_status(dir, &e))?;
    let name = safe_name(name);
    let tmp = dir.join(format!(".{}.hermes-put", uuid_like()));
    let written = write_new(&tmp, data);
    let result = written.and_then(|()| link_first_free(dir, &name, &tmp, data));
    let _ = std::fs::remove_file(&tmp);
    result
}

/// The bytes of the regular files directly in `dir` (the inbox is flat: nothing nests there),
/// counting at most the first 10,000 entries.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .take(10_000)
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

fn write_new(tmp: &Path, data: &[u8]) -> Result<(), Status> {
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).open(tmp).map_err(|e| io_status(tmp, &e))?;
    file.write_all(data).map_err(|e| io_status(tmp, &e))?;
    file.sync_all().map_err(|e| io_status(tmp, &e))
}

fn link_first_free(dir: &Path, name: &str, tmp: &Path, data: &[u8]) -> Result<(PathBuf, bool), Status> {
    for n in 1..=MAX_TRIES {
        let candidate = dir.join(if n == 1 { name.to_owned() } else { numbered(name, n) });
        match std::fs::hard_link(tmp, &candidate) {
            Ok(()) => return Ok((candidate, false)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if same_bytes(&candidate, data) {
                    return Ok((candidate, true));
                }
            }
            Err(e) => return Err(io_status(&candidate, &e)),
        }
    }
    Err(Status::resource_exhausted(format!("{MAX_TRIES} files named like {name} are kept already")))
}

/// Whether `path` is a regular file (not a symlink) holding exactly `data`.
fn same_bytes(path: &Path, data: &[u8]) -> bool {
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == data.len() as u64);
    regular && std::fs::read(path).is_ok_and(|held| held == data)
}

/// A name for the temporary file no other call picks at the same time.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

fn io_status(path: &Path, e: &std::io::Error) -> Status {
    Status::failed_precondition(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{put_file, safe_name};

    #[test]
    fn a_senders_name_loses_its_path_hidden_dot_and_odd_characters() {
        assert_eq!(safe_name("../../Q3 report.pdf"), "Q3_report.pdf");
        assert_eq!(safe_name("..\\..\\etc\\passwd"), "passwd");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("a\nb\u{0}c.txt"), "a_b_c.txt");
        assert_eq!(safe_name("季度报告.docx"), "季度报告.docx", "letters of any script stay");
        assert_eq!(safe_name(""), "file");
        assert_eq!(safe_name("/"), "file");
        let long = format!("{}.pdf", "x".repeat(300));
        assert_eq!(safe_name(&long).chars().count(), 100);
        assert!(safe_name(&long).ends_with(".pdf"), "the extension survives the cut");
    }

    #[test]
    fn a_file_is_never_written_over_and_the_same_bytes_are_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("inbox");
        let (first, existed) = put_file(&inbox, "report.pdf", b"one").unwrap();
        assert_eq!((first.file_name().unwrap().to_str().unwrap(), existed), ("report.pdf", false));
        let (again, existed) = put_file(&inbox, "report.pdf", b"one").unwrap();
        assert_eq!((again, existed), (first.clone(), true), "a resumed turn finds its file");
        let (second, _) = put_file(&inbox, "report.pdf", b"two").unwrap();
        assert_eq!(second.file_name().unwrap(), "report-2.pdf");
        assert_eq!(std::fs::read(&first).unwrap(), b"one", "the first file is untouched");
        let leftovers: Vec<_> = std::fs::read_dir(&inbox)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "no temporary file is left: {leftovers:?}");
        assert_eq!(super::dir_bytes(&inbox), 6, "what the quota counts: one + two, the same bytes once");
    }

    #[test]
    fn a_planted_symlink_under_the_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, b"keep me").unwrap();
        let inbox = dir.path().join("inbox");
        std::fs::create_dir_all(&inbox).unwrap();
        std::os::unix::fs::symlink(&outside, inbox.join("note.txt")).unwrap();
        let (kept, existed) = put_file(&inbox, "note.txt", b"keep me").unwrap();
        assert_eq!((kept.file_name().unwrap().to_str().unwrap(), existed), ("note-2.txt", false));
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me", "the link's target is untouched");
    }
}
