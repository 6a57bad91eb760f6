use std::path::{Path, PathBuf};

use super::{Format, HEAD_BYTES, MAX_LISTED, format_of, listing};
use crate::fixtures::{Item, gzip, tar_of, zip_of};

fn saved(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn format(path: &Path) -> Option<Format> {
    let bytes = std::fs::read(path).unwrap();
    format_of(path, &bytes[..bytes.len().min(HEAD_BYTES)])
}

#[test]
fn archives_are_told_by_their_bytes_not_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let items = [Item::File("a.txt", b"a")];
    assert_eq!(format(&saved(dir.path(), "photos", &zip_of(&items))), Some(Format::Zip));
    assert_eq!(format(&saved(dir.path(), "x.zip", &tar_of(&items))), Some(Format::Tar));
    assert_eq!(format(&saved(dir.path(), "x.bin", &gzip(&tar_of(&items)))), Some(Format::TarGz));
    assert_eq!(format(&saved(dir.path(), "notes.txt.gz", &gzip(b"just text"))), None, "a gzip of no tar");
    assert_eq!(format(&saved(dir.path(), "x.tar", b"plain text, not a tar")), None);
}

#[test]
fn a_zip_lists_its_files_directories_and_links_then_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let zip = zip_of(&[
        Item::Dir("docs/"),
        Item::File("docs/a.txt", b"hello"),
        Item::File("tab\there.txt", b"xy"),
        Item::Symlink("link", "/etc/passwd"),
    ]);
    let text = listing(&saved(dir.path(), "a.zip", &zip), Format::Zip).unwrap();
    assert_eq!(
        text,
        "# zip archive: its entries (path, size in bytes); unpack_archive unpacks it\n\
         docs/\tdirectory\n\
         docs/a.txt\t5\n\
         tab?here.txt\t2\n\
         link\tsymbolic link\n\
         4 entries (2 files, 1 directories, 1 other), 7 bytes uncompressed in all\n"
    );
}

#[test]
fn a_tar_gz_lists_links_with_their_targets_and_a_long_one_is_cut_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let tgz = gzip(&tar_of(&[
        Item::File("src/main.rs", b"fn main() {}"),
        Item::Symlink("latest", "src/main.rs"),
        Item::HardLink("again", "src/main.rs"),
        Item::Fifo("pipe"),
    ]));
    let text = listing(&saved(dir.path(), "a.tgz", &tgz), Format::TarGz).unwrap();
    assert!(text.starts_with("# tar.gz archive"), "{text}");
    assert!(
        text.contains("\nsrc/main.rs\t12\nlatest\tsymbolic link -> src/main.rs\nagain\thard link -> src/main.rs\n"),
        "{text}"
    );
    assert!(text.contains("pipe\tspecial entry (Fifo)\n"), "{text}");
    assert!(text.ends_with("4 entries (1 files, 0 directories, 3 other), 12 bytes uncompressed in all\n"), "{text}");

    let names: Vec<String> = (0..MAX_LISTED + 5).map(|i| format!("f{i}")).collect();
    let items: Vec<Item<'_>> = names.iter().map(|n| Item::File(n, b"")).collect();
    let text = listing(&saved(dir.path(), "many.tar", &tar_of(&items)), Format::Tar).unwrap();
    assert_eq!(text.lines().count(), 1 + MAX_LISTED + 2, "header, the listed entries, the rest counted, the summary");
    assert!(text.contains("\n... and 5 more\n10005 entries"), "{}", &text[text.len() - 200..]);
    assert_eq!(listing(&saved(dir.path(), "bad.zip", b"PK\x03\x04 broken"), Format::Zip), None);
}
