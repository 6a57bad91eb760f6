//! Curated memory, as Hermes keeps it: MEMORY (the agent's notes) and USER (what it knows
//! about the person it talks to), each a short list of entries under a character cap. This
//! module holds the rules: what an action does to a list of entries, what is refused and why,
//! and how a document is shown in the stable prompt. Storage is `hermes_store::memory`; the
//! tool is the worker's.

use hermes_threats as threats;

/// Entries are separated by this when a document is shown or measured.
pub const ENTRY_DELIMITER: &str = "\n§\n";
pub const DEFAULT_MEMORY_CHARS: usize = 2_200;
pub const DEFAULT_USER_CHARS: usize = 1_375;
/// Usage above which the tool suggests consolidating.
const CONSOLIDATE_PERCENT: usize = 80;

/// What the model asked the memory tool to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Add {
        content: String,
    },
    /// Replaces the one entry containing `old_text`.
    Replace {
        old_text: String,
        content: String,
    },
    /// Removes the one entry containing `old_text`.
    Remove {
        old_text: String,
    },
}

/// Why an action was refused; the message tells the model what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Invalid(String),
    #[error("no entry contains {0:?}; use a short exact substring of the entry you mean")]
    NotFound(String),
    #[error("{count} entries contain {old_text:?}; use a longer substring that matches only one of them")]
    Ambiguous { old_text: String, count: usize },
    #[error(
        "Memory at {}/{}. Adding this entry ({} chars) would exceed the limit. Replace or remove existing entries first (consolidate related ones with replace).",
        thousands(*.used), thousands(*.limit), thousands(*.adding)
    )]
    OverLimit { used: usize, adding: usize, limit: usize },
    #[error(
        "refused: the entry looks like {0}; memory is shown to the agent in every session, so it may not carry that"
    )]
    Blocked(&'static str),
}

/// What an accepted action did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Changed {
        entries: Vec<String>,
        message: &'static str,
    },
    /// The entry was there already.
    Unchanged {
        message: &'static str,
    },
}

/// `1474` as `1,474`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Characters a document uses, counted as shown (entries joined by the delimiter).
pub fn usage(entries: &[String]) -> usize {
    let text: usize = entries.iter().map(|e| e.chars().count()).sum();
    text + ENTRY_DELIMITER.chars().count() * entries.len().saturating_sub(1)
}

/// `1,474/2,200`.
pub fn usage_label(entries: &[String], limit: usize) -> String {
    format!("{}/{}", thousands(usage(entries)), thousands(limit))
}

/// Whether the document is full enough that the model should consolidate.
pub fn should_consolidate(entries: &[String], limit: usize) -> bool {
    limit > 0 && usage(entries) * 100 > limit * CONSOLIDATE_PERCENT
}

fn clean(text: &str, what: &str) -> Result<String, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Refusal::Invalid(format!("{what} is empty")));
    }
    if text.contains(ENTRY_DELIMITER.trim()) {
        return Err(Refusal::Invalid(format!("{what} may not contain '§' (it separates entries)")));
    }
    if text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(Refusal::Invalid(format!("{what} contains control characters")));
    }
    Ok(text.to_owned())
}

fn checked(content: &str) -> Result<String, Refusal> {
    let content = clean(content, "content")?;
    match threats::scan_strict(&content).first() {
        Some(finding) => Err(Refusal::Blocked(finding.reason)),
        None => Ok(content),
    }
}

/// The one entry containing `old_text`.
fn find_one(entries: &[String], old_text: &str) -> Result<usize, Refusal> {
    let needle = clean(old_text, "old_text")?;
    let matches: Vec<usize> = entries.iter().enumerate().filter(|(_, e)| e.contains(&needle)).map(|(i, _)| i).collect();
    match matches.as_slice() {
        [] => Err(Refusal::NotFound(needle)),
        [one] => Ok(*one),
        // Identical entries are one fact written twice: the first stands for them.
        [first, rest @ ..] if rest.iter().all(|i| entries[*i] == entries[*first]) => Ok(*first),
        _ => Err(Refusal::Ambiguous { old_text: needle, count: matches.len() }),
    }
}

fn within(entries: Vec<String>, adding: usize, before: &[String], limit: usize) -> Result<Vec<String>, Refusal> {
    if usage(&entries) > limit {
        return Err(Refusal::OverLimit { used: usage(before), adding, limit });
    }
    Ok(entries)
}

/// What `action` makes of `entries` under `limit` characters.
pub fn apply(entries: &[String], action: &Action, limit: usize) -> Result<Applied, Refusal> {
    match action {
        Action::Add { content } => {
            let content = checked(content)?;
            if entries.contains(&content) {
                return Ok(Applied::Unchanged { message: "This entry is already saved; no duplicate added." });
            }
            let adding = content.chars().count();
            let mut next = entries.to_vec();
            next.push(content);
            Ok(Applied::Changed { entries: within(next, adding, entries, limit)?, message: "Entry added." })
        }
        Action::Replace { old_text, content } => {
            let content = checked(content)?;
            let at = find_one(entries, old_text)?;
            let adding = content.chars().count();
            let mut replaced = entries.to_vec();
            replaced[at] = content;
            // The replacement may now duplicate another entry: keep one.
            let mut next: Vec<String> = Vec::with_capacity(replaced.len());
            for entry in replaced {
                if !next.contains(&entry) {
                    next.push(entry);
                }
            }
            Ok(Applied::Changed { entries: within(next, adding, entries, limit)?, message: "Entry replaced." })
        }
        Action::Remove { old_text } => {
            let at = find_one(entries, old_text)?;
            let removed = entries[at].clone();
            let next = entries.iter().filter(|e| **e != removed).cloned().collect();
            Ok(Applied::Changed { entries: next, message: "Entry removed." })
        }
    }
}

/// Which document, as the prompt names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    Memory,
    User,
}

const RULE: &str = "══════════════════════════════════════════════";

/// A document as it appears in the stable prompt: a header with its usage between two rules,
/// then its entries. Entries are scanned again as they are loaded, so one that got in some
/// other way (an older rule set, a database edit) is shown blocked. `None` when it is empty.
pub fn render_block(document: Document, entries: &[String], limit: usize) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let shown: Vec<String> = entries.iter().map(|e| threats::sanitize_strict(e).0).collect();
    let used = usage(entries);
    let percent = (used * 100).checked_div(limit).unwrap_or(100).min(100);
    let title = match document {
        Document::Memory => "MEMORY (your personal notes)",
        Document::User => "USER PROFILE (who the user is)",
    };
    Some(format!(
        "{RULE}\n{title} [{percent}% — {}/{} chars]\n{RULE}\n{}",
        thousands(used),
        thousands(limit),
        shown.join(ENTRY_DELIMITER)
    ))
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
