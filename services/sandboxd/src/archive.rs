//! Archives (zip, tar, tar.gz): what kind a file is, by its first bytes, and the listing
//! `read_file` gives of one: a line per entry (`path<TAB>size`, directories ending in `/`,
//! links with their target), at most [`MAX_LISTED`], then a summary. Listing runs only in the
//! extractor child (`extract.rs`); unpacking is `unpack.rs`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// An archive format sandboxd lists and unpacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Zip,
    Tar,
    TarGz,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Self::Zip => "zip",
            Self::Tar => "tar",
            Self::TarGz => "tar.gz",
        }
    }
}

/// How many bytes of a file [`format_of`] wants: a tar header's magic ends at 262.
pub const HEAD_BYTES: usize = 512;
/// The most entries listed; the rest are counted.
pub const MAX_LISTED: usize = 10_000;
/// The most bytes a tar.gz listing decompresses (its entries' data is read through to find
/// the next header); past it the listing says it stopped.
const MAX_SCANNED_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// The longest path shown in a listing, in characters.
const MAX_PATH_CHARS: usize = 1_000;

/// The archive format of the file at `path` whose first bytes are `head`, by magic bytes:
/// zip's local header, ustar's magic at 257, or a gzip stream whose first block has it.
pub fn format_of(path: &Path, head: &[u8]) -> Option<Format> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some(Format::Zip);
    }
    if is_tar_block(head) {
        return Some(Format::Tar);
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        // A first block is all it reads: a bomb costs nothing here.
        let mut block = Vec::with_capacity(HEAD_BYTES);
        let gz = flate2::read::GzDecoder::new(File::open(path).ok()?);
        gz.take(HEAD_BYTES as u64).read_to_end(&mut block).ok()?;
        return is_tar_block(&block).then_some(Format::TarGz);
    }
    None
}

fn is_tar_block(block: &[u8]) -> bool {
    block.get(257..262) == Some(b"ustar".as_slice())
}

/// The decompressed stream of a tar or tar.gz archive.
pub(crate) fn tar_stream(path: &Path, format: Format) -> std::io::Result<Box<dyn Read>> {
    let file = BufReader::new(File::open(path)?);
    Ok(match format {
        Format::TarGz => Box::new(flate2::read::MultiGzDecoder::new(file)),
        Format::Tar | Format::Zip => Box::new(file),
    })
}

/// A name fit for one line: control characters (a tab, a line break) shown as `?`, cut long.
pub(crate) fn shown_name(name: &str) -> String {
    let mut shown: String = name.chars().take(MAX_PATH_CHARS).map(|c| if c.is_control() { '?' } else { c }).collect();
    if name.chars().nth(MAX_PATH_CHARS).is_some() {
        shown.push_str("...");
    }
    shown
}

/// What a listing counts.
#[derive(Default)]
struct Tally {
    lines: String,
    entries: u64,
    files: u64,
    dirs: u64,
    bytes: u64,
}

impl Tally {
    fn add(&mut self, name: &str, what: Entry) {
        self.entries += 1;
        let line = match what {
            Entry::File(size) => {
                self.files += 1;
                self.bytes = self.bytes.saturating_add(size);
                format!("{}\t{size}", shown_name(name))
            }
            Entry::Dir => {
                self.dirs += 1;
                format!("{}/\tdirectory", shown_name(name.trim_end_matches('/')))
            }
            Entry::Other(what) => format!("{}\t{what}", shown_name(name)),
        };
        if self.entries <= MAX_LISTED as u64 {
            self.lines.push_str(&line);
            self.lines.push('\n');
        }
    }

    fn finish(self, format: Format, stopped: Option<&str>) -> String {
        let mut out =
            format!("# {} archive: its entries (path, size in bytes); unpack_archive unpacks it\n", format.name());
        out.push_str(&self.lines);
        if self.entries > MAX_LISTED as u64 {
            let _ = writeln!(out, "... and {} more", self.entries - MAX_LISTED as u64);
        }
        let others = self.entries - self.files - self.dirs;
        let _ = write!(
            out,
            "{} entries ({} files, {} directories, {others} other), {} bytes uncompressed in all",
            self.entries, self.files, self.dirs, self.bytes
        );
        if let Some(stopped) = stopped {
            let _ = write!(out, "; {stopped}");
        }
        out.push('\n');
        out
    }
}

/// One entry as a listing shows it.
enum Entry {
    File(u64),
    Dir,
    Other(String),
}

/// The listing of the archive at `path`; `None` when it cannot be read.
pub fn listing(path: &Path, format: Format) -> Option<String> {
    match format {
        Format::Zip => zip_listing(path),
        Format::Tar | Format::TarGz => tar_listing(path, format),
    }
}

fn zip_listing(path: &Path) -> Option<String> {
    let mut archive = zip::ZipArchive::new(BufReader::new(File::open(path).ok()?)).ok()?;
    let mut tally = Tally::default();
    for i in 0..archive.len() {
        let Ok(entry) = archive.by_index_raw(i) else {
            tally.add(&format!("(entry {i})"), Entry::Other("unreadable".into()));
            continue;
        };
        let name = entry.name().map(|n| n.into_owned()).unwrap_or_else(|_| format!("(entry {i})"));
        let what = if entry.is_symlink() {
            Entry::Other("symbolic link".into())
        } else if entry.is_dir() {
            Entry::Dir
        } else {
            Entry::File(entry.size())
        };
        tally.add(&name, what);
    }
    Some(tally.finish(Format::Zip, None))
}

fn tar_listing(path: &Path, format: Format) -> Option<String> {
    let mut archive = tar::Archive::new(tar_stream(path, format).ok()?);
    let mut tally = Tally::default();
    let mut stopped = None;
    for entry in archive.entries().ok()? {
        let Ok(entry) = entry else {
            stopped = Some("the rest could not be read (a damaged archive?)");
            break;
        };
        if entry.header().entry_type() == tar::EntryType::XGlobalHeader {
            continue; // pax metadata for the whole archive (`git archive` writes one)
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let link = || entry.link_name_bytes().map(|l| shown_name(&String::from_utf8_lossy(&l))).unwrap_or_default();
        let what = match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => Entry::File(entry.size()),
            tar::EntryType::Directory => Entry::Dir,
            tar::EntryType::Symlink => Entry::Other(format!("symbolic link -> {}", link())),
            tar::EntryType::Link => Entry::Other(format!("hard link -> {}", link())),
            other => Entry::Other(format!("special entry ({other:?})")),
        };
        tally.add(&name, what);
        // Checked before the next header is looked for, past this entry's data.
        if entry.raw_file_position().saturating_add(entry.size()) > MAX_SCANNED_BYTES {
            stopped = Some("the listing stopped after 4 GiB of data");
            break;
        }
    }
    Some(tally.finish(format, stopped))
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
