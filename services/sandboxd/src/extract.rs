//! The text of documents people send, for `read_file`: PDF, DOCX, PPTX, ODT (`office.rs`),
//! XLSX (`xlsx.rs`), Jupyter notebooks (`notebook.rs`), and the listing of a zip, tar or
//! tar.gz archive (`archive.rs`). Parsing a stranger's file is the riskiest thing sandboxd
//! does, so it happens in a child process (`hermes-sandboxd --extract-text PATH`, see
//! `child.rs`) running as the sandbox user, killed after [`TIMEOUT`], its output capped at
//! [`MAX_TEXT_BYTES`] (longer text is cut, and says so), its memory at [`MAX_MEMORY`]: a
//! hostile file can at worst crash or stall that child, never the daemon.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use tonic::Status;

use crate::archive::{self, Format};

/// How long one extraction may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The most text kept from one document.
const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;
/// The extractor child's address space (a PDF parser holds the whole document and more).
const MAX_MEMORY: u64 = 2 * 1024 * 1024 * 1024;
/// Said where the text is cut.
const CUT_NOTE: &str = "\n[the text is cut here: at most 8 MiB of it is read]\n";

/// A document kind whose text `read_file` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pdf,
    /// Office documents: zip archives of XML, told apart by their names.
    Docx,
    Pptx,
    Odt,
    Xlsx,
    /// A Jupyter notebook: JSON under an `.ipynb` name.
    Notebook,
    /// Any other zip, a tar or a tar.gz: listed.
    Archive(Format),
}

/// The kind of document at `path`, by its first bytes (and, for zip archives and notebooks,
/// its name's extension: the daemon parses no document); `None` for anything else.
pub fn kind_of(path: &Path) -> Option<Kind> {
    let mut head = Vec::with_capacity(archive::HEAD_BYTES);
    let file = std::fs::File::open(path).ok()?;
    file.take(archive::HEAD_BYTES as u64).read_to_end(&mut head).ok()?;
    if head.starts_with(b"%PDF-") {
        return Some(Kind::Pdf);
    }
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let format = archive::format_of(path, &head);
    if format == Some(Format::Zip) {
        match ext.as_str() {
            "docx" => return Some(Kind::Docx),
            "pptx" => return Some(Kind::Pptx),
            "odt" => return Some(Kind::Odt),
            "xlsx" | "xlsm" => return Some(Kind::Xlsx),
            _ => {}
        }
    }
    let json = head.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&head);
    if ext == "ipynb" && json.trim_ascii_start().starts_with(b"{") {
        return Some(Kind::Notebook);
    }
    format.map(Kind::Archive)
}

/// The text of the document at `path`, from a child process as the sandbox user.
pub async fn text_of(path: &Path) -> Result<String, Status> {
    let args = [std::ffi::OsStr::new("--extract-text"), path.as_os_str()];
    // The cap leaves room for the marker and the cut note.
    crate::child::run(&args, TIMEOUT, MAX_TEXT_BYTES as u64 + 1024).await.map_err(|e| match e {
        crate::child::ChildError::TimedOut(t) => {
            Status::deadline_exceeded(format!("{}: reading its text took over {t:?}", path.display()))
        }
        crate::child::ChildError::NoAnswer => {
            Status::invalid_argument(format!("{}: its text could not be read (a damaged file?)", path.display()))
        }
        other => Status::internal(format!("the text extractor failed: {other}")),
    })
}

/// The child's side: prints the text of the document at `path`; exit code 0 when it could be
/// read.
pub fn child(path: &Path) -> i32 {
    crate::child::limit_memory(MAX_MEMORY);
    let Some(kind) = kind_of(path) else { return 1 };
    let text = match kind {
        Kind::Archive(format) => archive::listing(path, format),
        _ => std::fs::read(path).ok().and_then(|bytes| document_text(kind, &bytes)),
    };
    let Some(text) = text else { return 1 };
    crate::child::answer(&cut(&text))
}

/// The text of a document held in memory.
fn document_text(kind: Kind, bytes: &[u8]) -> Option<String> {
    match kind {
        Kind::Pdf => pdf_extract::extract_text_from_mem(bytes).map(|t| tidy(&t)).ok(),
        Kind::Docx => crate::office::docx_text(bytes),
        Kind::Pptx => crate::office::pptx_text(bytes),
        Kind::Odt => crate::office::odt_text(bytes),
        Kind::Xlsx => crate::xlsx::xlsx_text(bytes),
        Kind::Notebook => crate::notebook::notebook_text(bytes),
        Kind::Archive(_) => None,
    }
}

/// `text` within [`MAX_TEXT_BYTES`], with a note where it is cut.
fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_TEXT_BYTES {
        return text.into();
    }
    let mut at = MAX_TEXT_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}{CUT_NOTE}", &text[..at]).into()
}

/// PDF text without the runs of blank lines its layout leaves.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = 0;
    for line in text.lines().map(str::trim_end) {
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank <= 1 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_start_matches('\n').to_owned()
}

#[cfg(test)]
mod tests {
    use super::{Kind, MAX_TEXT_BYTES, cut, kind_of};
    use crate::archive::Format;
    use crate::fixtures::{Item, gzip, tar_of, zip_of};

    #[test]
    fn documents_notebooks_and_archives_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let zip = zip_of(&[Item::File("a.txt", b"a")]);
        let cases: [(&str, &[u8], Option<Kind>); 11] = [
            ("r.pdf", b"%PDF-1.7 ...", Some(Kind::Pdf)),
            ("r.DOCX", &zip, Some(Kind::Docx)),
            ("s.xlsx", &zip, Some(Kind::Xlsx)),
            ("nb.ipynb", b"\xEF\xBB\xBF\n  {\"cells\": []}", Some(Kind::Notebook)),
            ("nb.ipynb", b"not json", None),
            ("data.json", b"{\"cells\": []}", None),
            ("photos.zip", &zip, Some(Kind::Archive(Format::Zip))),
            ("app.jar", &zip, Some(Kind::Archive(Format::Zip))),
            ("src.tar", &tar_of(&[Item::File("a", b"a")]), Some(Kind::Archive(Format::Tar))),
            ("src.tgz", &gzip(&tar_of(&[Item::File("a", b"a")])), Some(Kind::Archive(Format::TarGz))),
            ("notes.txt", b"plain text", None),
        ];
        for (name, bytes, kind) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(kind_of(&path), kind, "{name}");
        }
    }

    #[test]
    fn text_past_the_cap_is_cut_on_a_character_and_says_so() {
        let long = "é".repeat(MAX_TEXT_BYTES / 2 + 10);
        let shown = cut(&long);
        assert!(shown.len() <= MAX_TEXT_BYTES + 100);
        assert!(shown.ends_with("[the text is cut here: at most 8 MiB of it is read]\n"));
        assert_eq!(cut("short"), "short");
    }
}
