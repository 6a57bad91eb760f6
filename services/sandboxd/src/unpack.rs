//! Unpacking an archive on request (`Unpack`, the `unpack_archive` tool): a zip, tar or
//! tar.gz, told by its first bytes, into a directory (by default next to the archive, named
//! after it). Nothing is unpacked from an archive of more than 10,000 entries, more than
//! 1 GiB uncompressed, or more than 100 times its own size, as its headers say; while
//! writing, the bytes are counted (headers can lie), so an entry compressed more than 100:1
//! is dropped and the whole stops at the limits. Links, devices, paths out of the
//! destination and files that exist already are skipped and reported (`safe_write.rs`).
//! A tar.gz has no per-entry compressed size: only the whole archive's ratio holds there.
//!
//! Like text extraction it runs in a child process as the sandbox user (`hermes-sandboxd
//! --unpack ARCHIVE --unpack-into DEST`, see `child.rs`), killed after [`TIMEOUT`] (what it
//! wrote by then stays).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_sandbox_proto::v1::{UnpackResponse, UnpackSkip};
use serde::{Deserialize, Serialize};
use tonic::Status;

use crate::archive::{self, Format};
use crate::safe_write::{Flow, Limits, Refusal, Report, Writer};

/// How long one unpacking may take.
const TIMEOUT: Duration = Duration::from_secs(120);
/// The unpacking child's address space (it streams; the zip directory and tar's long names
/// are what it holds).
const MAX_MEMORY: u64 = 1024 * 1024 * 1024;
/// The longest answer read from the child (the report names at most 1,000 skipped entries).
const MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes of tar headers, padding and long names read beyond the data limit before the
/// stream is judged endless.
const TAR_OVERHEAD_BYTES: u64 = 64 * 1024 * 1024;

/// The child's answer.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Done(Report),
    Refused(String),
}

/// Where an archive unpacks when no destination is given: next to it, in a directory named
/// after it (`a/data.tar.gz` -> `a/data`).
pub fn default_dest(archive: &Path) -> PathBuf {
    let name = archive.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let stem = [".tar.gz", ".tgz", ".tar", ".zip"]
        .iter()
        .find(|ext| lower.ends_with(*ext) && lower.len() > ext.len())
        .map(|ext| name[..name.len() - ext.len()].to_owned())
        .or_else(|| archive.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|stem| !stem.is_empty() && *stem != name)
        .unwrap_or_else(|| format!("{name}-unpacked"));
    archive.with_file_name(stem)
}

/// Unpacks `archive` into `dest` in a child process as the sandbox user.
pub async fn run(archive: &Path, dest: &Path) -> Result<UnpackResponse, Status> {
    let args = [
        std::ffi::OsStr::new("--unpack"),
        archive.as_os_str(),
        std::ffi::OsStr::new("--unpack-into"),
        dest.as_os_str(),
    ];
    let shown = archive.display();
    let answer = crate::child::run(&args, TIMEOUT, MAX_ANSWER_BYTES).await.map_err(|e| match e {
        crate::child::ChildError::TimedOut(t) => Status::deadline_exceeded(format!(
            "{shown}: unpacking took over {t:?} and was stopped; what it wrote is in {}",
            dest.display()
        )),
        crate::child::ChildError::NoAnswer => {
            Status::invalid_argument(format!("{shown}: it could not be unpacked (a damaged archive?)"))
        }
        other => Status::internal(format!("the unpacker failed: {other}")),
    })?;
    match serde_json::from_str(&answer) {
        Ok(Answer::Done(report)) => Ok(response(dest, report)),
        Ok(Answer::Refused(why)) => Err(Status::failed_precondition(format!("{shown} is not unpacked: {why}"))),
        Err(e) => Err(Status::internal(format!("the unpacker's answer is unreadable: {e}"))),
    }
}

fn response(dest: &Path, report: Report) -> UnpackResponse {
    UnpackResponse {
        dest: dest.display().to_string(),
        files: report.files,
        directories: report.directories,
        bytes: report.bytes,
        skipped: report.skipped.into_iter().map(|s| UnpackSkip { path: s.path, reason: s.reason }).collect(),
        skipped_count: report.skipped_count,
        stopped: report.stopped.unwrap_or_default(),
    }
}

/// The child's side: unpacks `archive` into `dest` and prints the report; exit code 0 when
/// it could answer.
pub fn child(archive: &Path, dest: &Path) -> i32 {
    crate::child::limit_memory(MAX_MEMORY);
    let answer = match unpack(archive, dest, Limits::default()) {
        Ok(report) => Answer::Done(report),
        Err(refusal) => Answer::Refused(refusal.to_string()),
    };
    match serde_json::to_string(&answer) {
        Ok(json) => crate::child::answer(&json),
        Err(_) => 3,
    }
}

/// Unpacks `archive` into `dest` (made if missing) within `limits`.
pub fn unpack(archive: &Path, dest: &Path, limits: Limits) -> Result<Report, Refusal> {
    let unreadable = |e: std::io::Error| Refusal::Unreadable(e.to_string());
    let mut head = Vec::with_capacity(archive::HEAD_BYTES);
    File::open(archive).and_then(|f| f.take(archive::HEAD_BYTES as u64).read_to_end(&mut head)).map_err(unreadable)?;
    let format = archive::format_of(archive, &head)
        .ok_or_else(|| Refusal::Unreadable("it is not a zip, tar or tar.gz archive".into()))?;
    let archive_len = std::fs::metadata(archive).map_err(unreadable)?.len();
    let existed = dest.exists();
    let mut writer = Writer::new(dest, limits, archive_len)?;
    let unpacked = match format {
        Format::Zip => unpack_zip(archive, &mut writer),
        Format::Tar | Format::TarGz => {
            scan_tar(archive, format, &writer).and_then(|()| unpack_tar(archive, format, &mut writer))
        }
    };
    if unpacked.is_err() && !existed {
        // A refused archive leaves nothing behind, not even an empty destination.
        let _ = std::fs::remove_dir(dest);
    }
    unpacked.map(|()| writer.finish())
}

fn unpack_zip(path: &Path, writer: &mut Writer<'_>) -> Result<(), Refusal> {
    let file = File::open(path).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    writer.check_declared(zip.len() as u64, 0)?;
    let declared =
        (0..zip.len()).filter_map(|i| zip.by_index_raw(i).ok().map(|e| e.size())).fold(0u64, u64::saturating_add);
    writer.check_declared(zip.len() as u64, declared)?;
    let limits = writer.limits();
    for i in 0..zip.len() {
        let fallback = format!("(entry {})", i + 1);
        let name = zip.name_for_index(i).and_then(Result::ok).map_or(fallback.clone(), |n| n.into_owned());
        let mut entry = match zip.by_index(i) {
            Ok(entry) => entry,
            Err(e) => {
                writer.skip(name.as_bytes(), crate::safe_write::Skip::Unreadable(e.to_string()));
                continue;
            }
        };
        let kind = entry.unix_mode().map_or(0, |m| m & 0o170_000);
        if entry.is_symlink() {
            writer.skip(name.as_bytes(), crate::safe_write::Skip::Symlink);
        } else if entry.is_dir() {
            writer.dir(name.as_bytes());
        } else if !matches!(kind, 0 | 0o100_000) {
            writer.skip(name.as_bytes(), crate::safe_write::Skip::Special);
        } else {
            let cap = limits.max_ratio.saturating_mul(entry.compressed_size()).max(limits.ratio_grace);
            let mode = entry.unix_mode().unwrap_or(0o644);
            if writer.file(name.as_bytes(), &mut entry, mode, Some(cap)) == Flow::Stop {
                break;
            }
        }
    }
    Ok(())
}

/// A tar stream that fails past `left` bytes: tar reads long names and pax headers whole.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("the archive goes on past the unpacking limit"));
        }
        let room = usize::try_from(self.left).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..room])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn tar_archive(path: &Path, format: Format, limits: Limits) -> Result<tar::Archive<Capped<Box<dyn Read>>>, Refusal> {
    let stream = archive::tar_stream(path, format).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let left = limits.max_bytes.saturating_add(TAR_OVERHEAD_BYTES);
    Ok(tar::Archive::new(Capped { inner: stream, left }))
}

/// Counts a tar's entries and sums their sizes (exact in tar), refusing before anything is
/// written; stops reading as soon as a limit is passed.
fn scan_tar(path: &Path, format: Format, writer: &Writer<'_>) -> Result<(), Refusal> {
    let mut archive = tar_archive(path, format, writer.limits())?;
    let (mut entries, mut bytes) = (0u64, 0u64);
    for entry in archive.entries().map_err(|e| Refusal::Unreadable(e.to_string()))? {
        let entry = entry.map_err(|e| Refusal::Unreadable(e.to_string()))?;
        if entry.header().entry_type() == tar::EntryType::XGlobalHeader {
            continue;
        }
        entries += 1;
        if entry.header().entry_type().is_file() {
            bytes = bytes.saturating_add(entry.size());
        }
        writer.check_declared(entries, bytes)?;
    }
    Ok(())
}

fn unpack_tar(path: &Path, format: Format, writer: &mut Writer<'_>) -> Result<(), Refusal> {
    use crate::safe_write::Skip;
    let mut archive = tar_archive(path, format, writer.limits())?;
    for entry in archive.entries().map_err(|e| Refusal::Unreadable(e.to_string()))? {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                writer.skip(b"(the rest of the archive)", Skip::Unreadable(e.to_string()));
                break;
            }
        };
        let name = entry.path_bytes().into_owned();
        let flow = match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644);
                writer.file(&name, &mut entry, mode, None)
            }
            tar::EntryType::Directory => {
                writer.dir(&name);
                Flow::Go
            }
            tar::EntryType::XGlobalHeader => Flow::Go,
            kind => {
                let why = match kind {
                    tar::EntryType::Symlink => Skip::Symlink,
                    tar::EntryType::Link => Skip::HardLink,
                    tar::EntryType::GNUSparse => Skip::Unreadable("a sparse file".into()),
                    _ => Skip::Special,
                };
                writer.skip(&name, why);
                Flow::Go
            }
        };
        if flow == Flow::Stop {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "unpack_tests.rs"]
mod tests;
