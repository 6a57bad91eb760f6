//! Placeholders: what a bound variable holds inside a sandbox. Each is an HMAC of the sandbox
//! and the secret under the installation's key, so every worker derives the same one without
//! storing it, one sandbox's placeholder means nothing in another's requests, and none says
//! anything about the value.

use ring::hmac;

/// Every placeholder starts so, which makes one easy to recognise in a log or a transcript.
pub const PLACEHOLDER_PREFIX: &str = "hermes_placeholder_";

/// The placeholder of `secret` (a credential's id) in the sandbox named `sandbox`.
pub fn placeholder(key: &[u8], sandbox: &str, secret: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut context = hmac::Context::with_key(&key);
    context.update(b"hermes secret placeholder\0");
    context.update(sandbox.as_bytes());
    context.update(b"\0");
    context.update(secret.as_bytes());
    let tag = context.sign();
    let hex: String = tag.as_ref()[..20].iter().map(|b| format!("{b:02x}")).collect();
    format!("{PLACEHOLDER_PREFIX}{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_is_stable_and_differs_by_sandbox_secret_and_key() {
        let one = placeholder(b"k", "sandbox-a", "cred-1");
        assert_eq!(one, placeholder(b"k", "sandbox-a", "cred-1"), "every worker derives the same");
        assert!(one.starts_with(PLACEHOLDER_PREFIX) && one.len() == PLACEHOLDER_PREFIX.len() + 40);
        assert!(one[PLACEHOLDER_PREFIX.len()..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(one, placeholder(b"k", "sandbox-b", "cred-1"));
        assert_ne!(one, placeholder(b"k", "sandbox-a", "cred-2"));
        assert_ne!(one, placeholder(b"other", "sandbox-a", "cred-1"));
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(placeholder(b"k", "ab", "c"), placeholder(b"k", "a", "bc"));
    }
}
