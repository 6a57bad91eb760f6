//! What tools do to text before the model sees it: terminal escape codes stripped, anything
//! that looks like a secret redacted, and long command output cut in the middle (keeping the
//! start and the usually more telling end, as upstream Hermes does: 40 % head, 60 % tail).

use std::sync::LazyLock;

use regex::Regex;

/// ANSI/VT escape sequences (CSI, OSC, charset designations and the two-byte ones).
static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\-_]").ok()
});

/// Secret shapes: provider keys, cloud keys, tokens, private keys, credentials in URLs and
/// `NAME=value` assignments whose name says secret.
static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)", "[REDACTED PRIVATE KEY]"),
        (r"\b(?:sk|rk|pk)-(?:proj-|ant-|or-v1-)?[A-Za-z0-9_\-]{20,}", "[REDACTED]"),
        (r"\bgh[pousr]_[A-Za-z0-9]{30,}\b", "[REDACTED]"),
        (r"\bgithub_pat_[A-Za-z0-9_]{40,}\b", "[REDACTED]"),
        (r"\bxox[abpsr]-[A-Za-z0-9-]{10,}\b", "[REDACTED]"),
        (r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", "[REDACTED]"),
        (r"\bAIza[0-9A-Za-z_\-]{35}\b", "[REDACTED]"),
        (r"\b\d{8,10}:[A-Za-z0-9_-]{35}\b", "[REDACTED]"),
        (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}", "$1 [REDACTED]"),
        (r"(?i)(\b[a-z][a-z0-9+.-]*://[^:/\s@]+:)[^@\s]+@", "$1[REDACTED]@"),
        (
            r#"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)[A-Z0-9_]*)(\s*[=:]\s*)("?)[^\s"']{6,}"#,
            "$1$2$3[REDACTED]",
        ),
    ]
    .into_iter()
    .filter_map(|(re, with)| Regex::new(re).ok().map(|r| (r, with)))
    .collect()
});

/// Removes terminal escape sequences.
pub fn strip_ansi(text: &str) -> String {
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

/// Replaces anything shaped like a secret, and every value in `known` (the agent's own
/// secrets), by a marker.
pub fn redact(text: &str, known: &[String]) -> String {
    let mut out = text.to_owned();
    for value in known.iter().filter(|v| v.len() >= 6) {
        out = out.replace(value.as_str(), "[REDACTED]");
    }
    for (re, with) in SECRETS.iter() {
        out = re.replace_all(&out, *with).into_owned();
    }
    out
}

/// Strips, redacts and caps a piece of sandbox output for the model.
pub fn for_model(text: &str, max_chars: usize) -> String {
    cap_middle(&redact(&strip_ansi(text), &[]), max_chars)
}

/// Returns `text` if it has at most `max_chars` characters; otherwise its first 40 % and last
/// 60 % around a marker that says how much was left out.
pub fn cap_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let head = max_chars * 2 / 5;
    let tail = max_chars - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    format!("{}\n\n[... {} characters omitted ...]\n\n{}", &text[..head_end], total - head - tail, &text[tail_start..])
}

/// A call id as a file-name stem: its first 24 ASCII letters and digits (the model's ids are
/// opaque strings).
pub fn call_stem(call_id: &str) -> String {
    call_id.chars().filter(char::is_ascii_alphanumeric).take(24).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_codes_go_and_text_stays() {
        assert_eq!(strip_ansi("\x1b[1;31merror\x1b[0m: bad\x1b]0;title\x07 done\x1b(B"), "error: bad done");
    }

    #[test]
    fn secrets_are_redacted_but_ordinary_text_is_not() {
        let out = redact(
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\n\
             token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n\
             aws AKIAABCDEFGHIJKLMNOP\n\
             curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'\n\
             postgres://app:hunter2secret@db:5432/x\n\
             DB_PASSWORD: \"s3cr3t-value\"\n\
             the key to success is practice; token count: 12",
            &["my-own-secret-value".into()],
        );
        for leaked in ["sk-proj-abc", "ghp_abc", "AKIAABCD", "abcdefghijklmnopqrstuvwxyz'", "hunter2", "s3cr3t"] {
            assert!(!out.contains(leaked), "{leaked} leaked in {out}");
        }
        assert!(out.contains("OPENAI_API_KEY=[REDACTED]"));
        assert!(out.contains("postgres://app:[REDACTED]@db"));
        assert!(out.contains("the key to success is practice; token count: 12"), "{out}");
        assert_eq!(redact("x my-own-secret-value y", &["my-own-secret-value".into()]), "x [REDACTED] y");
    }

    #[test]
    fn keeps_short_text_and_cuts_the_middle_of_long_text() {
        assert_eq!(cap_middle("short", 10), "short");
        let long: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = cap_middle(&long, 100);
        assert!(out.starts_with(&long[..40]));
        assert!(out.ends_with(&long[940..]));
        assert!(out.contains("900 characters omitted"));
        // multi-byte characters are never split
        let wide = "é".repeat(500);
        assert!(cap_middle(&wide, 50).contains("450 characters omitted"));
    }

    #[test]
    fn a_call_stem_is_the_ids_first_letters_and_digits() {
        assert_eq!(call_stem("call_ab-C9"), "callabC9");
        assert_eq!(call_stem(&"x".repeat(40)), "x".repeat(24));
    }
}
