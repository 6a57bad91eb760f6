use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{default_dest, unpack};
use crate::fixtures::{Item, gzip, tar_of, zip_of};
use crate::safe_write::{Limits, Refusal, Report, Skipped};

/// A workspace holding `archive` as `name`, and the destination inside it.
fn setup(name: &str, archive: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, archive).unwrap();
    let dest = dir.path().join("out");
    (dir, path, dest)
}

/// Bytes no compressor shrinks.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

fn skipped(report: &Report) -> Vec<(&str, &str)> {
    report.skipped.iter().map(|Skipped { path, reason }| (path.as_str(), reason.as_str())).collect()
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_zip_and_a_tar_gz_unpack_whole_with_their_directories_and_execute_bits() {
    let items = [
        Item::Dir("proj/"),
        Item::File("proj/README.md", b"# hi\n"),
        Item::Exec("proj/bin/run.sh", b"#!/bin/sh\necho hi\n"),
        Item::File("./top.txt", b"top"),
    ];
    for (name, archive) in [("a.zip", zip_of(&items)), ("a.tar.gz", gzip(&tar_of(&items)))] {
        let (_dir, path, dest) = setup(name, &archive);
        let report = unpack(&path, &dest, Limits::default()).unwrap();
        assert_eq!((report.files, report.directories, report.bytes), (3, 2, 5 + 18 + 3), "{name}: {report:?}");
        assert!(report.skipped.is_empty() && report.stopped.is_none(), "{name}: {report:?}");
        assert_eq!(tree(&dest), ["proj", "proj/README.md", "proj/bin", "proj/bin/run.sh", "top.txt"], "{name}");
        assert_eq!(std::fs::read(dest.join("proj/bin/run.sh")).unwrap(), b"#!/bin/sh\necho hi\n");
        let mode = |p: &str| std::fs::metadata(dest.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("proj/bin/run.sh") & 0o111, 0o111, "{name}: the script stays runnable");
        assert_eq!(mode("proj/README.md") & 0o111, 0, "{name}: a document does not become runnable");
    }
}

#[test]
fn paths_out_of_the_destination_are_skipped_and_nothing_lands_outside() {
    let items = [
        Item::File("../escaped.txt", b"x"),
        Item::File("a/../../escaped2.txt", b"x"),
        Item::File("/tmp/absolute.txt", b"x"),
        Item::File("fine.txt", b"ok"),
    ];
    for (name, archive) in [("t.zip", zip_of(&items)), ("t.tar", tar_of(&items))] {
        let (dir, path, dest) = setup(name, &archive);
        let report = unpack(&path, &dest, Limits::default()).unwrap();
        assert_eq!(
            skipped(&report),
            [
                ("../escaped.txt", "its path leads out of the destination (..)"),
                ("a/../../escaped2.txt", "its path leads out of the destination (..)"),
                ("/tmp/absolute.txt", "its path is absolute"),
            ],
            "{name}"
        );
        assert_eq!((report.files, report.skipped_count), (1, 3), "{name}");
        assert_eq!(tree(dir.path()), ["out", "out/fine.txt", name], "{name}: nothing beside the destination");
        assert!(!Path::new("/tmp/absolute.txt").exists());
    }
}

#[test]
fn links_and_devices_are_not_made() {
    let tar = tar_of(&[
        Item::Symlink("passwd", "/etc/passwd"),
        Item::HardLink("shadow", "/etc/shadow"),
        Item::Fifo("pipe"),
        Item::File("real.txt", b"r"),
    ]);
    let (_dir, path, dest) = setup("l.tar", &tar);
    let report = unpack(&path, &dest, Limits::default()).unwrap();
    assert_eq!(
        skipped(&report),
        [
            ("passwd", "a symbolic link (links are not made)"),
            ("shadow", "a hard link (links are not made)"),
            ("pipe", "a device, pipe or other special file (not made)"),
        ]
    );
    assert_eq!(tree(&dest), ["real.txt"]);
    let zip = zip_of(&[Item::Symlink("passwd", "/etc/passwd")]);
    let (_dir, path, dest) = setup("l.zip", &zip);
    let report = unpack(&path, &dest, Limits::default()).unwrap();
    assert_eq!(skipped(&report), [("passwd", "a symbolic link (links are not made)")]);
    assert!(tree(&dest).is_empty());
}

#[test]
fn an_existing_file_is_never_overwritten_nor_a_planted_link_followed() {
    let zip = zip_of(&[Item::File("notes.txt", b"from the archive"), Item::File("docs/a.txt", b"a")]);
    let (dir, path, dest) = setup("e.zip", &zip);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::write(dest.join("notes.txt"), b"mine").unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("docs")).unwrap();
    let report = unpack(&path, &dest, Limits::default()).unwrap();
    assert_eq!(
        skipped(&report),
        [
            ("notes.txt", "a file of that name exists (not overwritten)"),
            ("docs/a.txt", "a file or symbolic link is in the way of its directory"),
        ]
    );
    assert_eq!(std::fs::read(dest.join("notes.txt")).unwrap(), b"mine");
    assert!(tree(&outside).is_empty(), "nothing went through the link");
}

#[test]
fn an_archive_over_the_entry_or_size_limit_is_refused_whole() {
    let items = [Item::File("a", b"1"), Item::File("b", b"2"), Item::Dir("c/"), Item::File("d", b"3")];
    let few = Limits { max_entries: 3, ..Limits::default() };
    for (name, archive) in [("n.zip", zip_of(&items)), ("n.tgz", gzip(&tar_of(&items)))] {
        let (_dir, path, dest) = setup(name, &archive);
        let refused = unpack(&path, &dest, few).unwrap_err();
        assert!(matches!(refused, Refusal::TooManyEntries { max: 3, .. }), "{name}: {refused}");
        assert!(!dest.exists(), "{name}: nothing written, not even the destination");
    }
    let data = noise(5000);
    let small = Limits { max_bytes: 4000, ..Limits::default() };
    for (name, archive) in
        [("s.zip", zip_of(&[Item::File("big", &data)])), ("s.tar", tar_of(&[Item::File("big", &data)]))]
    {
        let (_dir, path, dest) = setup(name, &archive);
        let refused = unpack(&path, &dest, small).unwrap_err();
        assert!(matches!(refused, Refusal::TooLarge { max: 4000, .. }), "{name}: {refused}");
        assert!(!dest.exists(), "{name}: nothing written, not even the destination");
    }
}

#[test]
fn a_bomb_is_refused_whole_and_one_bombed_entry_is_dropped() {
    // 50 MB of zeros gzip to about 50 KB: a thousand to one.
    let zeros = vec![0u8; 50 * 1024 * 1024];
    let (_dir, path, dest) = setup("bomb.tar.gz", &gzip(&tar_of(&[Item::File("zeros", &zeros)])));
    let refused = unpack(&path, &dest, Limits::default()).unwrap_err();
    assert!(matches!(refused, Refusal::Ratio { ratio: 100, .. }), "{refused}");
    assert!(!dest.exists());

    // Enough honest bytes keep the whole under 100:1; the one entry is far over it.
    let honest = noise(200_000);
    let zeros = vec![0u8; 4 * 1024 * 1024];
    let zip = zip_of(&[Item::File("data.bin", &honest), Item::File("zeros", &zeros)]);
    let (_dir, path, dest) = setup("mixed.zip", &zip);
    let report = unpack(&path, &dest, Limits::default()).unwrap();
    assert_eq!(skipped(&report), [("zeros", "it is compressed more than 100:1 (a zip bomb?)")]);
    assert_eq!(tree(&dest), ["data.bin"], "the partial file is removed");
    assert_eq!(report.bytes, 200_000);

    // Below the grace a small file of one repeated byte is no bomb.
    let (_dir, path, dest) = setup("small.zip", &zip_of(&[Item::File("blank", &[b' '; 100_000])]));
    assert_eq!(unpack(&path, &dest, Limits::default()).unwrap().files, 1);
}

#[test]
fn what_is_not_an_archive_is_refused() {
    let (_dir, path, dest) = setup("notes.zip", b"just some text");
    let refused = unpack(&path, &dest, Limits::default()).unwrap_err();
    assert_eq!(refused.to_string(), "it cannot be read: it is not a zip, tar or tar.gz archive");
}

#[test]
fn an_archive_unpacks_next_to_itself_by_default() {
    let at = |p: &str| default_dest(Path::new(p)).display().to_string();
    assert_eq!(at("/workspace/inbox/data.tar.gz"), "/workspace/inbox/data");
    assert_eq!(at("/workspace/inbox/Photos.ZIP"), "/workspace/inbox/Photos");
    assert_eq!(at("/workspace/inbox/site.tgz"), "/workspace/inbox/site");
    assert_eq!(at("/workspace/inbox/app.jar"), "/workspace/inbox/app");
    assert_eq!(at("/workspace/inbox/backup"), "/workspace/inbox/backup-unpacked", "never the archive itself");
    assert_eq!(at("/workspace/.tar"), "/workspace/.tar-unpacked");
}

#[test]
fn bytes_are_counted_as_written_whatever_a_header_claims() {
    use crate::safe_write::{Flow, Writer};
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_bytes: 10_000, ratio_grace: 0, ..Limits::default() };
    let mut writer = Writer::new(dir.path(), limits, 1_000_000).unwrap();
    // An entry whose header said 10 compressed bytes (a cap of 1,000) gives 5,000.
    let flow = writer.file(b"liar", &mut &[7u8; 5_000][..], 0o644, Some(1_000));
    assert_eq!(flow, Flow::Go, "one bombed entry is dropped, the rest go on");
    assert_eq!(writer.file(b"ok", &mut &[1u8; 6_000][..], 0o644, None), Flow::Go);
    // Past the total, whatever the headers said, unpacking stops.
    assert_eq!(writer.file(b"over", &mut &[2u8; 6_000][..], 0o644, None), Flow::Stop);
    let report = writer.finish();
    assert_eq!((report.files, report.bytes), (1, 6_000));
    assert_eq!(skipped(&report), [("liar", "it is compressed more than 100:1 (a zip bomb?)")]);
    assert!(report.stopped.unwrap().contains("past 10000 bytes in all"));
    assert_eq!(tree(dir.path()), ["ok"], "no partial file is left");
}
