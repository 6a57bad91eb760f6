//! The text of documents people send (PDF, DOCX, PPTX, ODT), for `read_file`. Parsing a stranger's file
//! is the riskiest thing sandboxd does, so it happens in a child process (`hermes-sandboxd
//! --extract-text PATH`) running as the sandbox user, killed after [`TIMEOUT`], its output
//! capped: a hostile file can at worst crash or stall that child, never the daemon.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tonic::Status;

/// How long one extraction may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The most text kept from one document.
const MAX_TEXT_BYTES: u64 = 8 * 1024 * 1024;
/// Printed by the child just before the text: anything a parser printed before it is dropped.
const MARKER: &str = "\u{1}hermes-extracted-text\n";

/// A document kind whose text `read_file` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pdf,
    /// Office documents: zip archives of XML, told apart by their names.
    Docx,
    Pptx,
    Odt,
}

/// The kind of document at `path`, by its first bytes (and, for zip archives, its name's
/// extension: the daemon opens no archive); `None` for anything else.
pub fn kind_of(path: &Path) -> Option<Kind> {
    let mut head = [0u8; 5];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut head).ok()?;
    if &head == b"%PDF-" {
        return Some(Kind::Pdf);
    }
    if !head.starts_with(b"PK\x03\x04") {
        return None;
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "docx" => Some(Kind::Docx),
        "pptx" => Some(Kind::Pptx),
        "odt" => Some(Kind::Odt),
        _ => None,
    }
}

/// The text of the document at `path`, from a child process as the sandbox user.
pub async fn text_of(path: &Path) -> Result<String, Status> {
    let exe = std::env::current_exe().map_err(|e| Status::internal(format!("cannot find sandboxd: {e}")))?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--extract-text").arg(path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.kill_on_drop(true);
    crate::identity::apply(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| Status::internal(format!("cannot start the text extractor: {e}")))?;
    let Some(stdout) = child.stdout.take() else {
        return Err(Status::internal("the text extractor has no output"));
    };
    let read = async {
        let mut out = Vec::new();
        stdout.take(MAX_TEXT_BYTES).read_to_end(&mut out).await?;
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((status, out))
    };
    let (status, out) = tokio::time::timeout(TIMEOUT, read)
        .await
        .map_err(|_| Status::deadline_exceeded(format!("{}: reading its text took over {TIMEOUT:?}", path.display())))?
        .map_err(|e| Status::internal(format!("the text extractor failed: {e}")))?;
    let out = String::from_utf8_lossy(&out);
    match out.split_once(MARKER) {
        Some((_, text)) if status.success() => Ok(text.to_owned()),
        _ => Err(Status::invalid_argument(format!("{}: its text could not be read (a damaged file?)", path.display()))),
    }
}

/// The child's side: prints [`MARKER`] and the text of the document at `path`; exit code 0
/// when it could be read.
pub fn child(path: &Path) -> i32 {
    let Ok(bytes) = std::fs::read(path) else { return 2 };
    let text = match kind_of(path) {
        Some(Kind::Pdf) => pdf_extract::extract_text_from_mem(&bytes).map(|t| tidy(&t)).ok(),
        Some(Kind::Docx) => crate::office::docx_text(&bytes),
        Some(Kind::Pptx) => crate::office::pptx_text(&bytes),
        Some(Kind::Odt) => crate::office::odt_text(&bytes),
        None => None,
    };
    let Some(text) = text else { return 1 };
    let mut out = std::io::stdout().lock();
    let written = std::io::Write::write_all(&mut out, MARKER.as_bytes())
        .and_then(|()| std::io::Write::write_all(&mut out, text.as_bytes()))
        .and_then(|()| std::io::Write::flush(&mut out));
    if written.is_ok() { 0 } else { 3 }
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
