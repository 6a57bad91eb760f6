//! Writing an archive's entries under a destination directory, for `unpack.rs`: each path
//! checked (relative, no `..`), no directory passed through a symlink or a file, no file
//! written over (`O_EXCL`), and every byte counted as it is written, so a header that lies
//! about its size or a zip bomb stops at [`Limits`] whatever the archive claims.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How much one unpacking may do.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Entries in the archive (directories and links included).
    pub max_entries: u64,
    /// Bytes written in all.
    pub max_bytes: u64,
    /// Uncompressed bytes per compressed byte, of one entry and of the whole archive.
    pub max_ratio: u64,
    /// Below this many bytes the ratio is not held against an entry or an archive: a small
    /// file of one repeated byte is no bomb.
    pub ratio_grace: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_entries: 10_000, max_bytes: 1024 * 1024 * 1024, max_ratio: 100, ratio_grace: 1024 * 1024 }
    }
}

/// The most skipped entries named in a report (the rest are counted).
const MAX_SKIPS_NAMED: usize = 1_000;

/// What an unpacking did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub files: u64,
    pub directories: u64,
    pub bytes: u64,
    /// The first [`MAX_SKIPS_NAMED`] entries not unpacked, and why.
    pub skipped: Vec<Skipped>,
    pub skipped_count: u64,
    /// Why unpacking stopped before the archive's end, if it did.
    pub stopped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// Why one entry is not unpacked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error("its path is absolute")]
    Absolute,
    #[error("its path leads out of the destination (..)")]
    Escapes,
    #[error("it has no usable name")]
    NoName,
    #[error("a symbolic link (links are not made)")]
    Symlink,
    #[error("a hard link (links are not made)")]
    HardLink,
    #[error("a device, pipe or other special file (not made)")]
    Special,
    #[error("a file of that name exists (not overwritten)")]
    Exists,
    #[error("a file or symbolic link is in the way of its directory")]
    InTheWay,
    #[error("it is compressed more than {0}:1 (a zip bomb?)")]
    Ratio(u64),
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    #[error("it cannot be written: {0}")]
    Unwritable(String),
}

/// Why nothing is unpacked.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("it has {count} entries or more; at most {max} are unpacked")]
    TooManyEntries { count: u64, max: u64 },
    #[error("it holds {bytes} bytes or more uncompressed; at most {max} are unpacked")]
    TooLarge { bytes: u64, max: u64 },
    #[error("it would unpack to {bytes} bytes or more, over {ratio} times its own size (a zip bomb?)")]
    Ratio { bytes: u64, ratio: u64 },
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    #[error("the destination cannot be made: {0}")]
    Destination(String),
}

/// Whether to go on to the next entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Go,
    Stop,
}

/// Writes entries under `dest`, counting against the limits.
pub struct Writer<'a> {
    dest: &'a Path,
    limits: Limits,
    /// The most bytes written in all: the byte limit, or the whole-archive ratio's.
    max_total: u64,
    report: Report,
}

impl<'a> Writer<'a> {
    /// A writer into `dest` (made if missing) for an archive of `archive_len` bytes.
    pub fn new(dest: &'a Path, limits: Limits, archive_len: u64) -> Result<Self, Refusal> {
        std::fs::create_dir_all(dest).map_err(|e| Refusal::Destination(format!("{}: {e}", dest.display())))?;
        let by_ratio = limits.max_ratio.saturating_mul(archive_len).max(limits.ratio_grace);
        Ok(Self { dest, limits, max_total: limits.max_bytes.min(by_ratio), report: Report::default() })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Refuses an archive whose headers already say too much: `entries` and `bytes` so far.
    pub fn check_declared(&self, entries: u64, bytes: u64) -> Result<(), Refusal> {
        let limits = self.limits;
        if entries > limits.max_entries {
            return Err(Refusal::TooManyEntries { count: entries, max: limits.max_entries });
        }
        if bytes > limits.max_bytes {
            return Err(Refusal::TooLarge { bytes, max: limits.max_bytes });
        }
        if bytes > self.max_total {
            return Err(Refusal::Ratio { bytes, ratio: limits.max_ratio });
        }
        Ok(())
    }

    pub fn finish(self) -> Report {
        self.report
    }

    pub fn skip(&mut self, name: &[u8], why: Skip) {
        self.report.skipped_count += 1;
        if self.report.skipped.len() < MAX_SKIPS_NAMED {
            let path = crate::archive::shown_name(&String::from_utf8_lossy(name));
            self.report.skipped.push(Skipped { path, reason: why.to_string() });
        }
    }

    /// A directory entry.
    pub fn dir(&mut self, name: &[u8]) {
        if let Err(why) = entry_path(name).and_then(|rel| self.make_dirs(&rel)) {
            self.skip(name, why);
        }
    }

    /// A file entry: its bytes from `data`, at most `entry_cap` of them when the format knows
    /// its compressed size (zip), its mode's execute bits kept.
    pub fn file(&mut self, name: &[u8], data: &mut dyn Read, mode: u32, entry_cap: Option<u64>) -> Flow {
        let rel = match entry_path(name) {
            Ok(rel) => rel,
            Err(why) => {
                self.skip(name, why);
                return Flow::Go;
            }
        };
        if let Some(Err(why)) = rel.parent().map(|parent| self.make_dirs(parent)) {
            self.skip(name, why);
            return Flow::Go;
        }
        let left = self.max_total.saturating_sub(self.report.bytes);
        let cap = entry_cap.map_or(left, |c| c.min(left));
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        match write_new(&self.dest.join(&rel), data, cap, mode) {
            Ok(n) => {
                self.report.files += 1;
                self.report.bytes += n;
                Flow::Go
            }
            Err(Written::Over) if entry_cap.is_some_and(|c| c < left) => {
                self.skip(name, Skip::Ratio(self.limits.max_ratio));
                Flow::Go
            }
            Err(Written::Over) => {
                self.report.stopped = Some(self.stop_reason());
                Flow::Stop
            }
            Err(Written::Skipped(why)) => {
                self.skip(name, why);
                Flow::Go
            }
        }
    }

    fn stop_reason(&self) -> String {
        if self.max_total == self.limits.max_bytes {
            format!("its entries held more than their headers said, past {} bytes in all", self.max_total)
        } else {
            format!("it unpacked to more than {} times its own size (a zip bomb?)", self.limits.max_ratio)
        }
    }

    /// Makes the directories of `rel` under the destination, through none but directories.
    fn make_dirs(&mut self, rel: &Path) -> Result<(), Skip> {
        let mut at = self.dest.to_path_buf();
        for part in rel.components() {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_dir() => continue,
                Ok(_) => return Err(Skip::InTheWay),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Skip::Unwritable(e.to_string())),
            }
            match std::fs::create_dir(&at) {
                Ok(()) => self.report.directories += 1,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(Skip::InTheWay),
                Err(e) => return Err(Skip::Unwritable(e.to_string())),
            }
        }
        Ok(())
    }
}

/// An entry's path under the destination: relative, `.` and empty parts dropped, no `..`.
pub fn entry_path(name: &[u8]) -> Result<PathBuf, Skip> {
    if name.starts_with(b"/") {
        return Err(Skip::Absolute);
    }
    let mut rel = PathBuf::new();
    for part in name.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(Skip::Escapes),
            part if part.contains(&0) => return Err(Skip::NoName),
            part => rel.push(OsStr::from_bytes(part)),
        }
    }
    if rel.as_os_str().is_empty() { Err(Skip::NoName) } else { Ok(rel) }
}

/// Why a file was not written whole.
enum Written {
    /// It held more than its cap (the partial file is removed).
    Over,
    Skipped(Skip),
}

/// Writes `data` to a new file at `path` (never an existing one, nor through a symlink),
/// at most `cap` bytes; the bytes written.
fn write_new(path: &Path, data: &mut dyn Read, cap: u64, mode: u32) -> Result<u64, Written> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|e| {
        Written::Skipped(match e.kind() {
            std::io::ErrorKind::AlreadyExists => Skip::Exists,
            _ => Skip::Unwritable(e.to_string()),
        })
    })?;
    let copied = copy_capped(data, &mut file, cap);
    drop(file);
    if copied.is_err() {
        let _ = std::fs::remove_file(path);
    }
    copied
}

fn copy_capped(data: &mut dyn Read, file: &mut std::fs::File, cap: u64) -> Result<u64, Written> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        let n = match data.read(&mut buf) {
            Ok(0) => return Ok(written),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Written::Skipped(Skip::Unreadable(e.to_string()))),
        };
        written += n as u64;
        if written > cap {
            return Err(Written::Over);
        }
        file.write_all(&buf[..n]).map_err(|e| Written::Skipped(Skip::Unwritable(e.to_string())))?;
    }
}
