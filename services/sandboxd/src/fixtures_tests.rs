//! Archives made for tests, hostile ones included (names with `..`, absolute paths, links,
//! devices), written header by header so nothing sanitises them on the way.

use std::io::Write;

/// One entry of a test archive.
#[derive(Clone, Copy)]
pub enum Item<'a> {
    File(&'a str, &'a [u8]),
    Exec(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
    Fifo(&'a str),
}

pub fn zip_of(items: &[Item<'_>]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for item in items {
        match *item {
            Item::File(name, data) => {
                zip.start_file(name, options).unwrap();
                zip.write_all(data).unwrap();
            }
            Item::Exec(name, data) => {
                zip.start_file(name, options.unix_permissions(0o755)).unwrap();
                zip.write_all(data).unwrap();
            }
            Item::Dir(name) => zip.add_directory(name, options).unwrap(),
            Item::Symlink(name, target) => zip.add_symlink(name, target, options).unwrap(),
            Item::HardLink(..) | Item::Fifo(_) => panic!("zip has no such entries"),
        }
    }
    zip.finish().unwrap().into_inner()
}

pub fn tar_of(items: &[Item<'_>]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for item in items {
        let (name, kind, data, link): (&str, tar::EntryType, &[u8], &str) = match *item {
            Item::File(name, data) | Item::Exec(name, data) => (name, tar::EntryType::Regular, data, ""),
            Item::Dir(name) => (name, tar::EntryType::Directory, b"", ""),
            Item::Symlink(name, target) => (name, tar::EntryType::Symlink, b"", target),
            Item::HardLink(name, target) => (name, tar::EntryType::Link, b"", target),
            Item::Fifo(name) => (name, tar::EntryType::Fifo, b"", ""),
        };
        let mut header = tar::Header::new_ustar();
        // Raw names: `set_path` refuses `..` and absolute paths, which these tests need.
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(if matches!(item, Item::Exec(..)) { 0o755 } else { 0o644 });
        header.set_cksum();
        tar.append(&header, data).unwrap();
    }
    tar.into_inner().unwrap()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}
