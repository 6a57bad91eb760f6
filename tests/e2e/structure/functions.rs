//! Function lengths: a function starts at a line that reads
//! `[pub[(..)]] [const] [async] [unsafe] [extern ".."] fn name` (in impl and trait blocks
//! too) and ends at the line of the brace that closes its body; a declaration that ends in
//! `;` before any body has no length. Works on code through the lexer, so braces in strings,
//! chars and comments do not count.

use super::lexer::is_ident;

/// One function of the scanned code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub path: String,
    /// 1-based line of the `fn` line.
    pub line: usize,
    pub name: String,
    /// Lines from the `fn` line to the closing brace, both included.
    pub lines: usize,
}

/// `s` without the keyword `kw` and the whitespace after it, if it starts with both.
fn keyword<'a>(s: &'a str, kw: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(kw)?;
    rest.starts_with(char::is_whitespace).then(|| rest.trim_start())
}

/// The name of the function this line declares, if it starts with a function head.
pub fn fn_name(line: &str) -> Option<&str> {
    let mut s = line.trim_start();
    if let Some(rest) = s.strip_prefix("pub") {
        let rest = match rest.strip_prefix('(') {
            Some(scoped) => &scoped[scoped.find(')')? + 1..],
            None => rest,
        };
        s = keyword_space(rest)?;
    }
    for kw in ["const", "async", "unsafe"] {
        s = keyword(s, kw).unwrap_or(s);
    }
    if let Some(rest) = keyword(s, "extern") {
        // The ABI string is blanked by the lexer to `""`.
        s = keyword_space(rest.strip_prefix("\"\"")?)?;
    }
    let rest = keyword(s, "fn")?;
    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `s` without its leading whitespace, if it has some.
fn keyword_space(s: &str) -> Option<&str> {
    s.starts_with(char::is_whitespace).then(|| s.trim_start())
}

/// For each `{` (by byte offset), the byte offset of the `}` that closes it.
fn brace_pairs(code: &str) -> std::collections::HashMap<usize, usize> {
    let mut open = Vec::new();
    let mut pairs = std::collections::HashMap::new();
    for (at, c) in code.char_indices() {
        match c {
            '{' => open.push(at),
            '}' => {
                if let Some(start) = open.pop() {
                    pairs.insert(start, at);
                }
            }
            _ => {}
        }
    }
    pairs
}

/// The offset of the body's `{` for a head starting at `from`, or `None` when a `;` outside
/// any bracket (`[u8; 4]` is inside one) ends it first.
fn body_start(code: &str, from: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (at, c) in code[from..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' if depth == 0 => return Some(from + at),
            ';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// Every function with a body in `code` (lexed, test items blanked) of the file `path`.
pub fn functions(path: &str, code: &str) -> Vec<Function> {
    let pairs = brace_pairs(code);
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut offset = 0;
    for (index, line) in code.split('\n').enumerate() {
        if let Some(name) = fn_name(line) {
            let close = body_start(code, offset).and_then(|open| pairs.get(&open));
            if let Some(close) = close {
                let line = index + 1;
                found.push(Function {
                    path: path.to_owned(),
                    line,
                    name: name.to_owned(),
                    lines: line_of(*close) - line + 1,
                });
            }
        }
        offset += line.len() + 1;
    }
    found
}
