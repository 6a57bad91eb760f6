//! Import edges between the files of one crate. A file's module path comes from where it
//! lies under `src/` (`lib.rs`/`main.rs` the root, `a.rs` and `a/mod.rs` are `a`, `a/b.rs`
//! is `a::b`). Every path that starts at `crate::`, `super::` or `self::`, in a `use` (with
//! its `{..}` groups) or inline in code, points at the longest module path that is a file of
//! the crate; that gives an edge from the file to that file, with the names it uses.
//! Edges into the crate root are left out: most of what a file takes from `lib.rs` is a
//! re-export of a sibling, and telling those from what `lib.rs` defines would need name
//! resolution. Bare paths into a child module (`child::f()` without `self::`) are not read.
//! Inline modules count as the file they are in (a `super::` inside one is read as if from
//! the file's own module; the few non-test inline modules reach up only to their own file).

use std::collections::{BTreeMap, BTreeSet};

use super::lexer::is_ident;

/// `(from file, to file)` -> the names the one takes from the other.
pub type Edges = BTreeMap<(String, String), BTreeSet<String>>;

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if is_ident(s[i]) {
            let end = s[i..].iter().position(|c| !is_ident(*c)).map_or(s.len(), |p| i + p);
            out.push(Token::Ident(s[i..end].iter().collect()));
            i = end;
        } else if s[i] == ':' && s.get(i + 1) == Some(&':') {
            out.push(Token::Path);
            i += 2;
        } else {
            if !s[i].is_whitespace() {
                out.push(Token::Punct(s[i]));
            }
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The paths of a use tree starting at `toks[*i]`, each prefixed with `prefix`; `*` for a
/// glob. Leaves `*i` after the tree (and its `as` alias).
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Token::Ident(s)) => path.push(s.clone()),
            Some(Token::Punct('*')) => path.push("*".into()),
            Some(Token::Punct('{')) => return use_group(toks, i, path, out),
            _ => break,
        }
        *i += 1;
        if toks.get(*i) != Some(&Token::Path) {
            break;
        }
        *i += 1;
    }
    if ident(toks.get(*i)) == Some("as") {
        *i += 2;
    }
    out.push(path);
}

/// `{a, b::c, self}` after `prefix::`, with `toks[*i]` at the `{`.
fn use_group(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    *i += 1;
    while let Some(t) = toks.get(*i) {
        match t {
            Token::Punct('}') => {
                *i += 1;
                return;
            }
            Token::Punct(',') => *i += 1,
            Token::Ident(_) | Token::Punct('{' | '*') => use_tree(toks, i, prefix.clone(), out),
            _ => *i += 1,
        }
    }
}

/// Every path in `code` that starts at `crate`, `super` or `self` (in `use` or inline).
fn local_paths(code: &str) -> Vec<Vec<String>> {
    let toks = tokens(code);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let word = ident(toks.get(i));
        if word == Some("use") {
            i += 1;
            use_tree(&toks, &mut i, Vec::new(), &mut paths);
        } else if matches!(word, Some("crate" | "super" | "self"))
            && toks.get(i + 1) == Some(&Token::Path)
            && (i == 0 || toks[i - 1] != Token::Path)
        {
            let mut path = vec![word.unwrap_or_default().to_owned()];
            while toks.get(i + 1) == Some(&Token::Path) && ident(toks.get(i + 2)).is_some() {
                path.push(ident(toks.get(i + 2)).unwrap_or_default().to_owned());
                i += 2;
            }
            paths.push(path);
            i += 1;
        } else {
            i += 1;
        }
    }
    paths
}

/// The module path of a file under a crate's `src/`: `lib.rs` -> [], `a/mod.rs` -> [a].
pub fn module_of(in_src: &str) -> Vec<String> {
    let stem = in_src.strip_suffix(".rs").unwrap_or(in_src);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    // Each file under `bin/` is the root of a binary crate of its own.
    if parts.first().is_some_and(|p| p == "bin") {
        return Vec::new();
    }
    if matches!(parts.last().map(String::as_str), Some("mod")) || matches!(stem, "lib" | "main") {
        parts.pop();
    }
    parts
}

/// `path` as a path from the crate root, seen from the module `here`; `None` when it does
/// not start at `crate`, `super` or `self`.
fn absolute(path: &[String], here: &[String]) -> Option<Vec<String>> {
    let (mut base, rest) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (here.to_vec(), &path[1..]),
        "super" => (here.to_vec(), path),
        _ => return None,
    };
    let mut rest = rest.iter().peekable();
    while rest.next_if(|s| *s == "super").is_some() {
        base.pop();
    }
    base.extend(rest.filter(|s| *s != "self").cloned());
    Some(base)
}

/// A file of a crate, ready for [`crate_edges`].
pub struct CrateFile {
    /// Repository path.
    pub path: String,
    pub module: Vec<String>,
    /// The text through the lexer, test items blanked.
    pub code: String,
}

/// The edges between the files of one crate.
pub fn crate_edges(files: &[CrateFile]) -> Edges {
    let by_module: BTreeMap<&[String], &str> = files.iter().map(|f| (f.module.as_slice(), f.path.as_str())).collect();
    let mut edges = Edges::new();
    for CrateFile { path: from, module: here, code } in files {
        for path in local_paths(code) {
            let Some(abs) = absolute(&path, here) else { continue };
            let Some(k) = (1..=abs.len()).rev().find(|k| by_module.contains_key(&abs[..*k])) else { continue };
            let to = by_module[&abs[..k]];
            if to == from {
                continue;
            }
            let name = if k == abs.len() { abs[k - 1].clone() } else { abs[k..].join("::") };
            edges.entry((from.clone(), to.to_owned())).or_default().insert(name);
        }
    }
    edges
}
