//! A small pull reader of XML tags and text: enough for spreadsheet parts (`xlsx.rs`), whose
//! structure (rows, cells, values) a tag-stripping regex would lose. No DTDs, no entities
//! beyond XML's own (decoded by the caller), namespace prefixes dropped from names.

/// One piece of an XML document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// `<name attrs>`, by its local name (no prefix).
    Open { name: &'a str, attrs: &'a str },
    /// `<name attrs/>`.
    Empty { name: &'a str, attrs: &'a str },
    /// `</name>`.
    Close { name: &'a str },
    /// Text between tags, its entities not yet decoded.
    Text(&'a str),
    /// A CDATA section's text, taken as it is.
    Raw(&'a str),
}

/// The tokens of `xml`, in order; an unterminated tag ends them.
pub(crate) fn tokens(xml: &str) -> Tokens<'_> {
    Tokens { rest: xml }
}

pub(crate) struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            if !self.rest.starts_with('<') {
                let end = self.rest.find('<').unwrap_or(self.rest.len());
                let (text, rest) = self.rest.split_at(end);
                self.rest = rest;
                return Some(Token::Text(text));
            }
            if let Some(after) = self.rest.strip_prefix("<![CDATA[") {
                let end = after.find("]]>")?;
                self.rest = &after[end + 3..];
                return Some(Token::Raw(&after[..end]));
            }
            if let Some(after) = self.rest.strip_prefix("<!--") {
                self.rest = &after[after.find("-->")? + 3..];
                continue;
            }
            let end = self.rest.find('>')?;
            let inner = &self.rest[1..end];
            self.rest = &self.rest[end + 1..];
            if inner.starts_with(['?', '!']) {
                continue;
            }
            if let Some(name) = inner.strip_prefix('/') {
                return Some(Token::Close { name: local(name.trim()) });
            }
            let (inner, empty) = match inner.strip_suffix('/') {
                Some(inner) => (inner, true),
                None => (inner, false),
            };
            let (name, attrs) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
            let name = local(name);
            return Some(if empty { Token::Empty { name, attrs } } else { Token::Open { name, attrs } });
        }
    }
}

/// A name without its namespace prefix.
pub(crate) fn local(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// The value of the attribute whose local name is `wanted`, entities decoded.
pub(crate) fn attr(attrs: &str, wanted: &str) -> Option<String> {
    let mut rest = attrs;
    loop {
        let eq = rest.find('=')?;
        let name = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start();
        let quote = after.chars().next().filter(|q| matches!(q, '"' | '\''))?;
        let value_end = after[1..].find(quote)? + 1;
        if local(name) == wanted {
            return Some(crate::office::unescape(&after[1..value_end]));
        }
        rest = &after[value_end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::{Token, attr, tokens};

    #[test]
    fn tags_text_and_attributes_come_out_without_prefixes_comments_or_declarations() {
        let xml =
            r#"<?xml version="1.0"?><!-- a > b --><x:row r="1"><c r='A1' t="s"/>a &amp; b<![CDATA[<raw>]]></x:row>"#;
        let got: Vec<Token<'_>> = tokens(xml).collect();
        assert_eq!(
            got,
            vec![
                Token::Open { name: "row", attrs: r#"r="1""# },
                Token::Empty { name: "c", attrs: r#"r='A1' t="s""# },
                Token::Text("a &amp; b"),
                Token::Raw("<raw>"),
                Token::Close { name: "row" },
            ]
        );
        assert_eq!(attr(r#"name="Q3 &amp; Q4" r:id="rId2""#, "id").as_deref(), Some("rId2"));
        assert_eq!(attr(r#"name="Q3 &amp; Q4" r:id="rId2""#, "name").as_deref(), Some("Q3 & Q4"));
        assert_eq!(attr(r#"sheetId="1""#, "id"), None, "sheetId is another attribute");
        assert_eq!(tokens("<a><b").count(), 1, "an unterminated tag ends the tokens");
    }
}
