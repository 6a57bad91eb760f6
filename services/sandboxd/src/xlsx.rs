//! The text of XLSX workbooks: each sheet, in the workbook's order, as `## Sheet: NAME` and
//! its rows as CSV lines (quoted where a cell needs it, empty trailing cells dropped, empty
//! rows left out). Shared and inline strings, numbers (shortest form) and booleans come out as
//! text; a date stays the serial number Excel stores (its format lives in the styles, which
//! are not read). Runs only in the extractor child (`extract.rs`). Parts are read through
//! `office::part` (at most 32 MiB each) and sheets are cut at [`MAX_ROWS`] rows,
//! [`MAX_COLUMNS`] columns and [`MAX_CELLS`] cells in all, so a hostile workbook cannot
//! make the child hold more than a few of its parts.
//!
//! Parsed by hand (zip + a small XML reader) rather than with `calamine`: calamine 0.38 opens
//! the archive itself, so no part could be read with a size limit, and it would bring
//! quick-xml, zopfli and four more crates for the one format.

use std::collections::HashMap;
use std::io::Cursor;

use crate::office::{part, unescape};
use crate::xml::{Token, attr, tokens};

/// The most sheets read.
const MAX_SHEETS: usize = 100;
/// The most rows kept from one sheet.
const MAX_ROWS: usize = 100_000;
/// The most columns kept from one row.
const MAX_COLUMNS: usize = 1_000;
/// The most cells kept from the whole workbook.
const MAX_CELLS: usize = 2_000_000;

/// A workbook's sheets as text; `None` when it cannot be read.
pub fn xlsx_text(bytes: &[u8]) -> Option<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    let strings = part(&mut archive, "xl/sharedStrings.xml").map(|x| shared_strings(&x)).unwrap_or_default();
    let sheets = sheets(&mut archive)?;
    let mut out = String::new();
    let mut cells_left = MAX_CELLS;
    for (name, path) in sheets.into_iter().take(MAX_SHEETS) {
        out.push_str(&format!("## Sheet: {name}\n"));
        match part(&mut archive, &path) {
            Some(xml) => sheet_rows(&xml, &strings, &mut cells_left, &mut out),
            None => out.push_str("[this sheet could not be read]\n"),
        }
    }
    Some(out)
}

/// The workbook's worksheets in order: their names and the parts holding them.
fn sheets(archive: &mut zip::ZipArchive<Cursor<&[u8]>>) -> Option<Vec<(String, String)>> {
    let workbook = part(archive, "xl/workbook.xml")?;
    let targets = part(archive, "xl/_rels/workbook.xml.rels").map(|x| relationships(&x)).unwrap_or_default();
    let mut sheets = Vec::new();
    for token in tokens(&workbook) {
        let (Token::Empty { name: "sheet", attrs } | Token::Open { name: "sheet", attrs }) = token else { continue };
        let name = attr(attrs, "name").unwrap_or_default();
        // Without relationships, the conventional part name.
        let path = match attr(attrs, "id").and_then(|id| targets.get(&id).cloned()) {
            Some(target) => target,
            None => format!("xl/worksheets/sheet{}.xml", sheets.len() + 1),
        };
        // Chart sheets have no cells.
        if path.contains("worksheets/") {
            sheets.push((name, path));
        }
    }
    Some(sheets)
}

/// Relationship ids to part names (targets are relative to `xl/`, or absolute).
fn relationships(xml: &str) -> HashMap<String, String> {
    let mut targets = HashMap::new();
    for token in tokens(xml) {
        let (Token::Empty { name: "Relationship", attrs } | Token::Open { name: "Relationship", attrs }) = token else {
            continue;
        };
        if let (Some(id), Some(target)) = (attr(attrs, "Id"), attr(attrs, "Target")) {
            let path = match target.strip_prefix('/') {
                Some(absolute) => absolute.to_owned(),
                None => format!("xl/{target}"),
            };
            targets.insert(id, path);
        }
    }
    targets
}

/// The text of each `<si>` of the shared strings part (rich text runs joined, phonetic
/// guides left out).
fn shared_strings(xml: &str) -> Vec<String> {
    let mut strings = Vec::new();
    let mut text = TextCollector::default();
    for token in tokens(xml) {
        match token {
            Token::Open { name: "si", .. } => text = TextCollector::default(),
            Token::Empty { name: "si", .. } => strings.push(String::new()),
            Token::Close { name: "si" } => strings.push(std::mem::take(&mut text.text)),
            other => text.feed(other),
        }
    }
    strings
}

/// Gathers the text of `<t>` elements (not those of phonetic guides, `<rPh>`).
#[derive(Default)]
struct TextCollector {
    text: String,
    in_t: bool,
    in_phonetic: bool,
}

impl TextCollector {
    fn feed(&mut self, token: Token<'_>) {
        match token {
            Token::Open { name: "t", .. } => self.in_t = true,
            Token::Close { name: "t" } => self.in_t = false,
            Token::Open { name: "rPh", .. } => self.in_phonetic = true,
            Token::Close { name: "rPh" } => self.in_phonetic = false,
            Token::Text(text) if self.in_t && !self.in_phonetic => self.text.push_str(&unescape(text)),
            Token::Raw(text) if self.in_t && !self.in_phonetic => self.text.push_str(text),
            _ => {}
        }
    }
}

/// One cell being read.
#[derive(Default)]
struct Cell {
    column: usize,
    kind: String,
    value: String,
    inline: TextCollector,
    in_v: bool,
}

impl Cell {
    fn text(self, strings: &[String]) -> String {
        match self.kind.as_str() {
            "s" => self.value.trim().parse::<usize>().ok().and_then(|i| strings.get(i).cloned()).unwrap_or_default(),
            "inlineStr" => self.inline.text,
            "b" => if self.value.trim() == "1" { "TRUE" } else { "FALSE" }.to_owned(),
            "" | "n" => number(&self.value),
            _ => self.value,
        }
    }
}

/// Appends a sheet's rows to `out` as CSV lines, within the row, column and cell limits.
fn sheet_rows(xml: &str, strings: &[String], cells_left: &mut usize, out: &mut String) {
    let (mut row, mut cell): (Vec<String>, Option<Cell>) = (Vec::new(), None);
    let mut rows = 0;
    for token in tokens(xml) {
        match token {
            Token::Open { name: "row", .. } => row.clear(),
            Token::Close { name: "row" } | Token::Empty { name: "row", .. } => {
                if rows == MAX_ROWS || *cells_left == 0 {
                    out.push_str(&format!(
                        "[the sheet is cut here: at most {MAX_ROWS} rows and {MAX_CELLS} cells are shown]\n"
                    ));
                    return;
                }
                rows += push_row(&mut row, out);
            }
            Token::Open { name: "c", attrs } | Token::Empty { name: "c", attrs } => {
                let column = attr(attrs, "r").and_then(|r| column_of(&r)).unwrap_or(row.len());
                let kind = attr(attrs, "t").unwrap_or_default();
                let started = Cell { column, kind, ..Cell::default() };
                if matches!(token, Token::Empty { .. }) {
                    place(&mut row, started, strings, cells_left);
                } else {
                    cell = Some(started);
                }
            }
            Token::Close { name: "c" } => {
                if let Some(done) = cell.take() {
                    place(&mut row, done, strings, cells_left);
                }
            }
            other => {
                if let Some(cell) = cell.as_mut() {
                    match other {
                        Token::Open { name: "v", .. } => cell.in_v = true,
                        Token::Close { name: "v" } => cell.in_v = false,
                        Token::Text(text) if cell.in_v => cell.value.push_str(&unescape(text)),
                        other => cell.inline.feed(other),
                    }
                }
            }
        }
    }
}

/// Puts a finished cell at its column (within [`MAX_COLUMNS`] and the cell budget).
fn place(row: &mut Vec<String>, cell: Cell, strings: &[String], cells_left: &mut usize) {
    if cell.column >= MAX_COLUMNS || *cells_left == 0 {
        return;
    }
    *cells_left -= 1;
    let column = cell.column;
    if row.len() <= column {
        row.resize(column + 1, String::new());
    }
    row[column] = cell.text(strings);
}

/// Appends `row` as a CSV line (trailing empty cells dropped); 1 when it had any text.
fn push_row(row: &mut Vec<String>, out: &mut String) -> usize {
    while row.last().is_some_and(String::is_empty) {
        row.pop();
    }
    if row.is_empty() {
        return 0;
    }
    let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
    out.push_str(&fields.join(","));
    out.push('\n');
    row.clear();
    1
}

/// A CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}

/// The 0-based column of a cell reference (`B7` -> 1).
fn column_of(reference: &str) -> Option<usize> {
    let letters: Vec<u8> = reference.bytes().take_while(u8::is_ascii_alphabetic).collect();
    if letters.is_empty() || letters.len() > 3 {
        return None;
    }
    let n = letters.iter().fold(0usize, |n, b| n * 26 + usize::from(b.to_ascii_uppercase() - b'A' + 1));
    Some(n - 1)
}

/// A stored number in its shortest form (`0.30000000000000004` stays, `3.0` is `3`), or the
/// text as stored when it is not one.
fn number(stored: &str) -> String {
    let stored = stored.trim();
    match stored.parse::<f64>() {
        Ok(n) if n.is_finite() && n != 0.0 && !(1e-6..1e16).contains(&n.abs()) => format!("{n:e}"),
        Ok(n) if n.is_finite() => format!("{n}"),
        _ => stored.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{column_of, number, xlsx_text};

    fn workbook(sheets: &[(&str, &str)], shared: &str) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        let mut book = String::from(r#"<workbook xmlns:r="r"><sheets>"#);
        let mut rels = String::from("<Relationships>");
        for (i, (name, _)) in sheets.iter().enumerate() {
            let name = name.replace('&', "&amp;");
            book.push_str(&format!(r#"<sheet name="{name}" sheetId="{}" r:id="rId{i}"/>"#, i + 1));
            // Listed in the other order than the part names, as Excel may.
            let part = sheets.len() - i;
            rels.push_str(&format!(r#"<Relationship Id="rId{i}" Target="worksheets/sheet{part}.xml"/>"#));
        }
        book.push_str("</sheets></workbook>");
        rels.push_str("</Relationships>");
        let mut parts = vec![
            ("xl/workbook.xml".to_owned(), book),
            ("xl/_rels/workbook.xml.rels".to_owned(), rels),
            ("xl/sharedStrings.xml".to_owned(), shared.to_owned()),
        ];
        for (i, (_, body)) in sheets.iter().enumerate() {
            parts.push((format!("xl/worksheets/sheet{}.xml", sheets.len() - i), (*body).to_owned()));
        }
        for (name, body) in parts {
            zip.start_file(name, options).unwrap();
            zip.write_all(body.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn sheets_come_out_in_order_as_csv_rows_with_every_kind_of_cell() {
        let shared = r#"<sst><si><t>Name</t></si><si><r><t>Smith, </t></r><r><t>"Jo"</t></r><rPh><t>スミス</t></rPh></si><si><t>two
lines</t></si></sst>"#;
        let first = r#"<worksheet><sheetData>
            <row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="inlineStr"><is><t>Paid &amp; due</t></is></c></row>
            <row r="2"><c r="A2" t="s"><v>1</v></c><c r="B2"><v>1234.5000000000002</v></c><c r="D2" t="b"><v>1</v></c><c r="E2"/><c r="F2" t="s"/></row>
            <row r="3"/>
            <row r="4"><c r="A4" t="s"><v>2</v></c><c r="B4"><f>SUM(B2)</f><v>45292</v></c><c r="C4" t="e"><v>#DIV/0!</v></c><c r="D4" t="str"><v>=x</v></c></row>
        </sheetData></worksheet>"#;
        let second = r#"<x:worksheet><x:sheetData><x:row><x:c t="n"><x:v>3.0</x:v></x:c><x:c t="b"><x:v>0</x:v></x:c></x:row></x:sheetData></x:worksheet>"#;
        let book = workbook(&[("People & pay", first), ("Other", second)], shared);
        assert_eq!(
            xlsx_text(&book).unwrap(),
            "## Sheet: People & pay\n\
             Name,Paid & due\n\
             \"Smith, \"\"Jo\"\"\",1234.5000000000002,,TRUE\n\
             \"two\nlines\",45292,#DIV/0!,=x\n\
             ## Sheet: Other\n\
             3,FALSE\n"
        );
        assert_eq!(xlsx_text(b"PK\x03\x04 not a zip"), None);
    }

    #[test]
    fn a_huge_sheet_is_cut_at_the_row_limit() {
        let mut rows = String::from("<worksheet><sheetData>");
        for i in 0..super::MAX_ROWS + 10 {
            rows.push_str(&format!("<row><c><v>{i}</v></c></row>"));
        }
        rows.push_str("</sheetData></worksheet>");
        let text = xlsx_text(&workbook(&[("Big", &rows)], "<sst/>")).unwrap();
        assert_eq!(text.lines().count(), super::MAX_ROWS + 2, "the header, the rows kept and the note");
        assert!(text.ends_with("cells are shown]\n"), "{}", &text[text.len() - 100..]);
        let wide = "<worksheet><sheetData><row><c r=\"A1\"><v>1</v></c><c r=\"ZZZ1\"><v>2</v></c></row></sheetData></worksheet>";
        assert_eq!(
            xlsx_text(&workbook(&[("Wide", wide)], "<sst/>")).unwrap(),
            "## Sheet: Wide\n1\n",
            "far columns dropped"
        );
    }

    #[test]
    fn columns_and_numbers_read_as_excel_means_them() {
        assert_eq!(
            (column_of("A1"), column_of("Z9"), column_of("AA3"), column_of("XFD1")),
            (Some(0), Some(25), Some(26), Some(16383))
        );
        assert_eq!(column_of("12"), None);
        assert_eq!(
            (number("42"), number("0.1"), number("-2.50"), number("1E+20"), number("abc")),
            ("42".into(), "0.1".into(), "-2.5".into(), "1e20".into(), "abc".into())
        );
    }
}
