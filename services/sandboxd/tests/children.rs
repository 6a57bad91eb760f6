//! The children sandboxd starts for a stranger's file, run as the daemon runs them: the
//! real binary with `--extract-text` or `--unpack`, its answer after the marker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::io::Write;
use std::path::Path;
use std::process::Command;

const MARKER: &str = "\u{1}hermes-child-answer\n";

/// The answer of `hermes-sandboxd ARGS`, or `None` when it gave none (a non-zero exit).
fn child(args: &[&Path]) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_hermes-sandboxd")).args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    out.status.success().then(|| stdout.split_once(MARKER).unwrap().1.to_owned())
}

fn zip(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in parts {
        zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(body.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn the_extractor_reads_a_workbook_and_a_notebook_and_lists_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("pay.xlsx");
    std::fs::write(
        &book,
        zip(&[
            ("xl/workbook.xml", r#"<workbook><sheets><sheet name="Q3" sheetId="1"/></sheets></workbook>"#),
            ("xl/worksheets/sheet1.xml", r#"<worksheet><sheetData><row><c t="inlineStr"><is><t>total</t></is></c><c><v>12.5</v></c></row></sheetData></worksheet>"#),
        ]),
    )
    .unwrap();
    assert_eq!(child(&[Path::new("--extract-text"), &book]).unwrap(), "## Sheet: Q3\ntotal,12.5\n");

    let notebook = dir.path().join("a.ipynb");
    std::fs::write(&notebook, r##"{"cells": [{"cell_type": "markdown", "source": "# Title"}]}"##).unwrap();
    assert_eq!(child(&[Path::new("--extract-text"), &notebook]).unwrap(), "# [markdown]\n# Title\n\n");

    let archive = dir.path().join("a.zip");
    std::fs::write(&archive, zip(&[("x/y.txt", "hello")])).unwrap();
    let listing = child(&[Path::new("--extract-text"), &archive]).unwrap();
    assert!(listing.contains("\nx/y.txt\t5\n1 entries (1 files"), "{listing}");

    let damaged = dir.path().join("b.xlsx");
    std::fs::write(&damaged, b"PK\x03\x04 torn off").unwrap();
    assert_eq!(child(&[Path::new("--extract-text"), &damaged]), None, "a damaged file gives no answer");
}

#[test]
fn the_unpacker_answers_with_what_it_wrote_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.zip");
    std::fs::write(&archive, zip(&[("x/y.txt", "hello"), ("../evil.txt", "no")])).unwrap();
    let dest = dir.path().join("a");
    let answer = child(&[Path::new("--unpack"), &archive, Path::new("--unpack-into"), &dest]).unwrap();
    let report: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(report["Done"]["files"], 1, "{report}");
    assert_eq!(report["Done"]["skipped"][0]["path"], "../evil.txt", "{report}");
    assert_eq!(std::fs::read_to_string(dest.join("x/y.txt")).unwrap(), "hello");
    assert!(!dir.path().join("evil.txt").exists());

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not an archive").unwrap();
    let answer = child(&[Path::new("--unpack"), &text, Path::new("--unpack-into"), &dest]).unwrap();
    assert!(answer.contains("Refused") && answer.contains("not a zip, tar or tar.gz archive"), "{answer}");
}
