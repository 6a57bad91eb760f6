//! What every tool does to sandbox output before the model sees it: terminal escape codes
//! stripped, anything that looks like a secret redacted, and long text cut in the middle.

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
    hermes_sandbox::cap_middle(&redact(&strip_ansi(text), &[]), max_chars)
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
}
