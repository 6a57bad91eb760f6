//! How messages are indexed for `session_search` and how a query becomes a `tsquery`, the same
//! for every language. Postgres's own parser keeps a run of Chinese or Japanese characters as
//! one "word" (`使用rust写代码` is a single lexeme), so a search for `代码` finds nothing. Here
//! the text is tokenised in Rust instead and handed to Postgres as a ready `tsvector`:
//!
//! - letters and digits of space-separated scripts form lowercase words (`rate-limit` is
//!   `rate`, `limit`);
//! - a run of Han, kana or Hangul becomes overlapping bigrams plus its last character
//!   (`数据库` is `数据`, `据库`, `库`), as Elasticsearch's CJK analyser does.
//!
//! A query word in such a run becomes the phrase of its bigrams (`<->`), which matches exactly
//! that substring; a single character is a prefix match, which covers it at any position.
//! The index lives in a GIN index, so every operator stays indexed. No stemming: `deploy*`
//! finds `deploying`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Text beyond this many characters of a message is not indexed.
const MAX_INDEXED_CHARS: usize = 100_000;
/// Postgres's largest tsvector position.
const MAX_POSITION: usize = 16_383;
/// Postgres keeps at most this many positions per lexeme.
const MAX_POSITIONS_PER_LEXEME: usize = 256;
/// Longer "words" (base64, minified code) are not searchable, and Postgres refuses lexemes
/// over 2,047 bytes.
const MAX_WORD_BYTES: usize = 128;

fn push_word(word: &mut String, out: &mut Vec<String>) {
    let word = std::mem::take(word);
    if !word.is_empty() && word.len() <= MAX_WORD_BYTES {
        out.push(word);
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // hiragana, katakana
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF   // compatibility ideographs
        | 0x20000..=0x2FFFF) // extensions B and later
}

fn push_cjk_run(run: &[char], for_query: bool, out: &mut Vec<String>) {
    match run {
        [] => {}
        [one] => out.push(one.to_string()),
        _ => {
            out.extend(run.windows(2).map(|w| w.iter().collect::<String>()));
            if !for_query {
                out.extend(run.last().map(char::to_string));
            }
        }
    }
}

/// The tokens of `text` in order (see the module docs). For a query, a CJK run of two or more
/// characters gives only its bigrams.
pub(crate) fn tokens(text: &str, for_query: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    for c in text.chars().take(MAX_INDEXED_CHARS) {
        if is_cjk(c) {
            push_word(&mut word, &mut out);
            run.push(c);
        } else {
            push_cjk_run(&run, for_query, &mut out);
            run.clear();
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else {
                push_word(&mut word, &mut out);
            }
        }
    }
    push_cjk_run(&run, for_query, &mut out);
    push_word(&mut word, &mut out);
    out
}

/// A `tsvector` literal of `text` (empty when there is nothing to index).
pub fn index_vector(text: &str) -> String {
    let mut positions: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, token) in tokens(text, false).into_iter().enumerate() {
        let at = positions.entry(token).or_default();
        if at.len() < MAX_POSITIONS_PER_LEXEME {
            at.push((i + 1).min(MAX_POSITION));
        }
    }
    let mut out = String::new();
    for (lexeme, at) in positions {
        let at: Vec<String> = at.iter().map(usize::to_string).collect();
        // Tokens are letters and digits only, so quoting needs no escapes.
        let _ = write!(out, "{}'{lexeme}':{}", if out.is_empty() { "" } else { " " }, at.join(","));
    }
    out
}

/// One search term as a tsquery fragment: a word, or the phrase of its tokens.
fn term(text: &str, prefix: bool) -> Option<String> {
    let tokens = tokens(text, true);
    let last = tokens.len().checked_sub(1)?;
    let parts: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // A lone CJK character may sit anywhere in a run: match the bigram it starts.
            let single_cjk = t.chars().count() == 1 && t.chars().all(is_cjk);
            let star = (prefix && i == last) || single_cjk;
            format!("'{t}'{}", if star { ":*" } else { "" })
        })
        .collect();
    Some(if parts.len() == 1 { parts.concat() } else { format!("({})", parts.join(" <-> ")) })
}

enum Item {
    Term { query: String, negated: bool },
    Or,
}

/// Turns what a user or model typed into a `tsquery` literal; `None` when nothing searchable
/// is left. Words are ANDed; `"a phrase"`; `a OR b` (binds tighter than the implicit AND, as
/// in web search); `NOT word` or `-word`; `word*` for a prefix. Nothing is ever a syntax
/// error: an unbalanced quote closes at the end, and dangling operators are dropped.
pub fn parse_query(input: &str) -> Option<String> {
    let mut items = Vec::new();
    let mut negate_next = false;
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '"' || (c == '-' && negate_next_is_quote(&chars)) {
            let negated = std::mem::take(&mut negate_next) || c == '-';
            if c == '-' {
                chars.next();
            }
            chars.next();
            let phrase: String = chars.by_ref().take_while(|c| *c != '"').collect();
            if let Some(query) = term(&phrase, false) {
                items.push(Item::Term { query, negated });
            }
            continue;
        }
        let word: String = std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace() && *c != '"')).collect();
        match word.as_str() {
            "OR" | "|" => items.push(Item::Or),
            "AND" | "&" => {}
            "NOT" => negate_next = true,
            _ => {
                let (negated, word) = match word.strip_prefix('-') {
                    Some(rest) if !rest.is_empty() => (true, rest),
                    _ => (std::mem::take(&mut negate_next), word.as_str()),
                };
                let negated = negated || std::mem::take(&mut negate_next);
                let prefix = word.ends_with('*');
                if let Some(query) = term(word.trim_end_matches('*'), prefix) {
                    items.push(Item::Term { query, negated });
                }
            }
        }
    }
    // Group OR-alternatives; negations stand alone.
    let mut groups: Vec<(Vec<String>, bool)> = Vec::new();
    let mut joining = false;
    for item in items {
        match item {
            Item::Or => joining = groups.last().is_some_and(|(_, negated)| !negated),
            Item::Term { query, negated } => {
                match groups.last_mut() {
                    Some((alternatives, false)) if joining && !negated => alternatives.push(query),
                    _ => groups.push((vec![query], negated)),
                }
                joining = false;
            }
        }
    }
    if groups.iter().all(|(_, negated)| *negated) {
        return None;
    }
    let clauses: Vec<String> = groups
        .into_iter()
        .map(|(alternatives, negated)| {
            let body =
                if alternatives.len() == 1 { alternatives.concat() } else { format!("({})", alternatives.join(" | ")) };
            if negated { format!("!{body}") } else { body }
        })
        .collect();
    Some(clauses.join(" & "))
}

fn negate_next_is_quote(chars: &std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let mut ahead = chars.clone();
    ahead.next();
    ahead.peek() == Some(&'"')
}

/// The first place in `text` where one of `query`'s words occurs, as a window of about
/// `width` characters with ellipses where it was cut.
pub(crate) fn snippet(text: &str, query: &str, width: usize) -> String {
    let lower = text.to_lowercase();
    let positive: Vec<String> = query_words(query);
    let hit = positive.iter().filter_map(|w| lower.find(w.as_str())).min();
    let chars: Vec<char> = text.chars().collect();
    let at = hit.map_or(0, |byte| lower[..byte].chars().count()).min(chars.len());
    let start = at.saturating_sub(width / 3);
    let end = (start + width).min(chars.len());
    let mut out: String = chars[start..end].iter().collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// The words of a tsquery literal that are not negated, longest first.
fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut negated = false;
    let mut rest = query;
    while let Some(i) = rest.find(['\'', '!']) {
        if rest.as_bytes()[i] == b'!' {
            negated = true;
            rest = &rest[i + 1..];
            continue;
        }
        let after = &rest[i + 1..];
        let Some(end) = after.find('\'') else { break };
        if !negated {
            words.push(after[..end].to_owned());
        }
        rest = &after[end + 1..];
        // A negation covers one term; phrases inside it are rare enough to ignore.
        if !rest.starts_with(" <->") {
            negated = false;
        }
    }
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    words
}

#[cfg(test)]
#[path = "search_text_tests.rs"]
mod tests;
