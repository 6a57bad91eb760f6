//! A small Rust lexer for the structure scan: it blanks what is not code (comments, the
//! contents of string and char literals, raw strings included, and `#[cfg(test)]` items)
//! and keeps every newline, so that braces and paths can be counted on what is left and line
//! numbers still point at the source.

/// `text` with comments and literal contents removed; the quotes of a literal stay (`""`,
/// `''`) so that no two tokens run together, and every newline stays where it was.
pub fn code_only(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        i = if c == '/' && next == Some('/') {
            skip_line_comment(&s, i)
        } else if c == '/' && next == Some('*') {
            skip_block_comment(&s, i, &mut out)
        } else if c == '"' {
            out.push_str("\"\"");
            skip_string(&s, i + 1, &mut out)
        } else if c == '\'' {
            char_or_lifetime(&s, i, &mut out)
        } else if is_ident_start(c) && !s[..i].last().is_some_and(|p| is_ident(*p)) {
            word(&s, i, &mut out)
        } else {
            out.push(c);
            i + 1
        };
    }
    out
}

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn keep_newlines(chars: &[char], out: &mut String) {
    out.extend(chars.iter().filter(|c| **c == '\n'));
}

/// Index of the newline that ends the comment (kept, since it is code's line break).
fn skip_line_comment(s: &[char], i: usize) -> usize {
    s[i..].iter().position(|c| *c == '\n').map_or(s.len(), |p| i + p)
}

/// Block comments nest in Rust.
fn skip_block_comment(s: &[char], start: usize, out: &mut String) -> usize {
    let (mut depth, mut i) = (0usize, start);
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    keep_newlines(&s[start..i.min(s.len())], out);
    i
}

/// From just after an opening `"` to just after its closing one.
fn skip_string(s: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start;
    while i < s.len() && s[i] != '"' {
        i += if s[i] == '\\' { 2 } else { 1 };
    }
    keep_newlines(&s[start..i.min(s.len())], out);
    i + 1
}

/// `r"..."`, `r#"..."#`: from the first `#` or `"` after the prefix to after the closing
/// quote and as many `#` as opened it.
fn skip_raw_string(s: &[char], start: usize, out: &mut String) -> usize {
    let hashes = s[start..].iter().take_while(|c| **c == '#').count();
    let body = start + hashes + 1;
    let mut i = body;
    while i < s.len() {
        if s[i] == '"' && s[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            break;
        }
        i += 1;
    }
    out.push_str("\"\"");
    keep_newlines(&s[body.min(s.len())..i.min(s.len())], out);
    i + 1 + hashes
}

/// `'x'`, `'\n'`, `'\u{7b}'` are char literals; `'a` and `'static` are lifetimes or labels.
fn char_or_lifetime(s: &[char], i: usize, out: &mut String) -> usize {
    if s.get(i + 1) == Some(&'\\') {
        // The escaped character itself may be a quote (`'\''`), so the search starts after it.
        let close = s[(i + 3).min(s.len())..].iter().position(|c| *c == '\'').map_or(s.len(), |p| i + 3 + p);
        out.push_str("''");
        close + 1
    } else if s.get(i + 2) == Some(&'\'') {
        out.push_str("''");
        i + 3
    } else {
        out.push('\'');
        i + 1
    }
}

/// An identifier, or the prefix of a byte, C or raw string (`b"`, `br#"`, `c"`, `r"`) or of
/// a byte char (`b'x'`). `r#name` is a raw identifier, not a string.
fn word(s: &[char], start: usize, out: &mut String) -> usize {
    let end = s[start..].iter().position(|c| !is_ident(*c)).map_or(s.len(), |p| start + p);
    let w: String = s[start..end].iter().collect();
    let next = s.get(end).copied();
    let hashes_then_quote = s[end..].iter().find(|c| **c != '#') == Some(&'"');
    match (w.as_str(), next) {
        ("r" | "br" | "cr", Some('"' | '#')) if hashes_then_quote => skip_raw_string(s, end, out),
        ("b" | "c", Some('"')) => {
            out.push_str("\"\"");
            skip_string(s, end + 1, out)
        }
        ("b", Some('\'')) => char_or_lifetime(s, end, out),
        _ => {
            out.push_str(&w);
            end
        }
    }
}

/// `code` (already through [`code_only`]) with every item marked `#[cfg(test)]` blanked,
/// from the attribute to the `;` or the closing brace that ends the item; newlines stay.
pub fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let end = at + MARK.len() + item_end(&rest[at + MARK.len()..]);
        keep_newlines(&rest[at..end].chars().collect::<Vec<_>>(), &mut out);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Byte length of the item at the start of `code`, its further attributes included: up to
/// and with the first `;` outside any bracket, or the `}` that closes its first `{`.
fn item_end(code: &str) -> usize {
    let (mut parens, mut braces) = (0i32, 0i32);
    for (at, c) in code.char_indices() {
        match c {
            '(' | '[' => parens += 1,
            ')' | ']' => parens -= 1,
            '{' => braces += 1,
            '}' => {
                braces -= 1;
                if braces == 0 && parens == 0 {
                    return at + 1;
                }
            }
            ';' if braces == 0 && parens == 0 => return at + 1,
            _ => {}
        }
    }
    code.len()
}
