//! Which hosts a key may be sent to: a credential's `allowed_hosts`, each a host name or a
//! `*.suffix` for its subdomains, compared without case.

/// Whether `host` is one of `allowed`.
pub fn allowed(allowed: &[String], host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    allowed.iter().any(|allowed| {
        let allowed = allowed.to_ascii_lowercase();
        match allowed.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => host == allowed,
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_host_is_allowed_by_name_or_by_its_parents_wildcard() {
        let hosts = ["api.openai.com".to_owned(), "*.fal.run".to_owned()];
        assert!(super::allowed(&hosts, "API.openai.com"));
        assert!(super::allowed(&hosts, "queue.fal.run"));
        assert!(!super::allowed(&hosts, "fal.run"), "the wildcard is for subdomains");
        assert!(!super::allowed(&hosts, "api.openai.com.evil.example"));
    }
}
