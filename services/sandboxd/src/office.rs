//! The text of office documents (zip archives of XML): DOCX paragraphs, PPTX slides in order,
//! ODT paragraphs and headings. Runs only in the extractor child (`extract.rs`). Each XML part
//! is read up to [`MAX_PART_BYTES`] however small the archive claims it is, so a zip bomb
//! stops there.

use std::io::{Cursor, Read};
use std::sync::LazyLock;

use regex::Regex;

/// The most bytes read out of one part of an archive.
const MAX_PART_BYTES: u64 = 32 * 1024 * 1024;
/// The most slides read.
const MAX_SLIDES: usize = 500;

/// A DOCX's paragraphs; `None` when it cannot be read.
pub fn docx_text(bytes: &[u8]) -> Option<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    Some(xml_text(&part(&mut archive, "word/document.xml")?, "w:p"))
}

/// An ODT's paragraphs and headings; `None` when it cannot be read.
pub fn odt_text(bytes: &[u8]) -> Option<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    Some(xml_text(&part(&mut archive, "content.xml")?, "text:p"))
}

/// A PPTX's slides in their order, each headed `Slide N:`; `None` when it cannot be read.
pub fn pptx_text(bytes: &[u8]) -> Option<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    let mut slides: Vec<(u32, String)> = archive
        .file_names()
        .filter_map(|name| {
            let name = name.ok()?;
            let n = name.strip_prefix("ppt/slides/slide")?.strip_suffix(".xml")?.parse().ok()?;
            Some((n, name.to_string()))
        })
        .collect();
    slides.sort();
    let mut text = String::new();
    for (n, name) in slides.into_iter().take(MAX_SLIDES) {
        text.push_str(&format!("Slide {n}:\n{}\n", xml_text(&part(&mut archive, &name)?, "a:p")));
    }
    Some(text)
}

/// One part of the archive as text, at most [`MAX_PART_BYTES`].
pub(crate) fn part(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str) -> Option<String> {
    let entry = archive.by_name(name).ok()?;
    let mut xml = Vec::new();
    entry.take(MAX_PART_BYTES).read_to_end(&mut xml).ok()?;
    Some(String::from_utf8_lossy(&xml).into_owned())
}

static TAG: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"<[^>]*>").ok());

/// The text of an XML part: a line per `paragraph` element (and per heading in ODT), tabs
/// and line breaks kept, every other tag dropped, entities decoded.
fn xml_text(xml: &str, paragraph: &str) -> String {
    let marked = xml
        .replace(&format!("</{paragraph}>"), "\n")
        .replace("</text:h>", "\n")
        .replace("<w:tab/>", "\t")
        .replace("<text:tab/>", "\t")
        .replace("<w:br/>", "\n")
        .replace("<text:line-break/>", "\n")
        .replace("<a:br/>", "\n");
    let bare = match TAG.as_ref() {
        Some(tag) => tag.replace_all(&marked, "").into_owned(),
        None => marked,
    };
    let text = unescape(&bare);
    text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n")
}

/// XML's five entities and numeric character references.
pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let decoded = match &rest[1..end] {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            num => num
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16).ok())
                .unwrap_or_else(|| num.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{docx_text, odt_text, pptx_text, unescape};

    fn archive(parts: &[(&str, &str)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, body) in parts {
            zip.start_file(*name, options).unwrap();
            zip.write_all(body.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn docx_paragraphs_pptx_slides_and_odt_text_come_out_in_order() {
        let docx = archive(&[(
            "word/document.xml",
            r#"<w:document><w:body><w:p><w:r><w:t>Q3 &amp; Q4</w:t></w:r></w:p><w:p><w:r><w:t>a</w:t><w:tab/><w:t>b &#x4e2d;</w:t></w:r></w:p></w:body></w:document>"#,
        )]);
        assert_eq!(docx_text(&docx).unwrap(), "Q3 & Q4\na\tb 中");
        let pptx = archive(&[
            ("ppt/slides/slide10.xml", "<p:sld><a:p><a:r><a:t>last</a:t></a:r></a:p></p:sld>"),
            ("ppt/slides/slide2.xml", "<p:sld><a:p><a:r><a:t>second</a:t></a:r></a:p></p:sld>"),
        ]);
        assert_eq!(pptx_text(&pptx).unwrap(), "Slide 2:\nsecond\nSlide 10:\nlast\n");
        let odt = archive(&[(
            "content.xml",
            "<office:text><text:h>Title</text:h><text:p>Body &lt;1&gt;</text:p></office:text>",
        )]);
        assert_eq!(odt_text(&odt).unwrap(), "Title\nBody <1>");
        assert_eq!(docx_text(b"PK\x03\x04 not really a zip"), None);
        assert_eq!(docx_text(&archive(&[("other.xml", "<x/>")])), None, "no document part");
        assert_eq!(unescape("a & b &bogus; &#99999999;"), "a & b &bogus; &#99999999;");
    }

    #[test]
    fn a_zip_bomb_is_read_only_up_to_the_part_limit() {
        // 64 MiB of one letter deflates to a few tens of KiB.
        let big = format!("<w:p><w:t>{}</w:t></w:p>", "x".repeat(64 * 1024 * 1024));
        let bomb = archive(&[("word/document.xml", &big)]);
        assert!(bomb.len() < 1024 * 1024, "the archive is small: {}", bomb.len());
        let text = docx_text(&bomb).unwrap();
        assert!(text.len() <= super::MAX_PART_BYTES as usize, "read up to the limit: {}", text.len());
    }
}
