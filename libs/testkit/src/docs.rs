//! Office documents for tests: a DOCX with the given paragraphs, as a word processor saves it
//! (a deflated zip with the content types and the document part).

use std::io::Write;

/// A DOCX whose body is `paragraphs`, one `w:p` each (text XML-escaped).
pub fn docx(paragraphs: &[&str]) -> zip::result::ZipResult<Vec<u8>> {
    let body: String = paragraphs
        .iter()
        .map(|p| {
            let text = p.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
            format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
        })
        .collect();
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, part) in [("[Content_Types].xml", types), ("word/document.xml", document.as_str())] {
        zip.start_file(name, options)?;
        zip.write_all(part.as_bytes())?;
    }
    Ok(zip.finish()?.into_inner())
}
