//! The operator's outbound [`Policy`]: which hosts may be reached although they are not
//! public, and how far a name is trusted ([`NameTrust`]). Its own file because both halves of
//! the check read it, the request-time half (`outbound.rs`: URLs, redirects) and the
//! connection-time half (`connecting.rs`: resolver, port check), and the first builds on the
//! second.

use std::collections::HashSet;
use std::net::IpAddr;

/// Which hosts may be reached although they are not public: the operator's list of `host` or
/// `host:port` entries. Everything else must be a public address.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    trusted: HashSet<String>,
}

impl Policy {
    /// Trusts `hosts` (`name`, `name:port`, `10.0.0.5` or `[fd00::1]:8080`), case-insensitively.
    pub fn trusting<I: IntoIterator<Item = S>, S: AsRef<str>>(hosts: I) -> Self {
        let trusted = hosts.into_iter().map(|h| h.as_ref().trim().to_ascii_lowercase()).filter(|h| !h.is_empty());
        Self { trusted: trusted.collect() }
    }

    /// Whether the operator trusts `host` (on any port, or on `port`).
    pub fn trusts(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.to_ascii_lowercase();
        self.trusted.contains(&host) || port.is_some_and(|p| self.trusted.contains(&format!("{host}:{p}")))
    }

    /// How far the operator trusts the name `host` (lowercase): on every port, on some, or not.
    pub(crate) fn name_trust(&self, host: &str) -> NameTrust {
        if self.trusted.contains(host) {
            return NameTrust::AllPorts;
        }
        let on_a_port = |entry: &String| {
            entry.rsplit_once(':').is_some_and(|(name, port)| name == host && port.parse::<u16>().is_ok())
        };
        if self.trusted.iter().any(on_a_port) { NameTrust::SomePorts } else { NameTrust::Untrusted }
    }

    /// Why `url` may not be fetched (`None`: it may, names are checked when connecting): not
    /// http(s), no host, or an address literal that is neither public nor trusted.
    pub fn refuse(&self, url: &reqwest::Url) -> Option<String> {
        if !matches!(url.scheme(), "https" | "http") {
            return Some(format!("only http(s) URLs are fetched, not {}:", url.scheme()));
        }
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else { return Some("the URL has no host".into()) };
        if self.trusts(host, url.port_or_known_default()) {
            return None;
        }
        match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) if !crate::is_public(ip) => Some(format!("{ip} is not a public address")),
            _ => None,
        }
    }
}

/// How far the operator trusts a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTrust {
    /// Listed bare (`vllm.internal`): its private addresses on every port.
    AllPorts,
    /// Listed with ports only (`vllm.internal:8000`): its private addresses on those ports.
    SomePorts,
    Untrusted,
}

#[cfg(test)]
mod tests {
    use super::{NameTrust, Policy};

    #[test]
    fn the_operator_trusts_named_hosts_on_a_port_or_on_all() {
        let policy = Policy::trusting(["vllm.internal", "127.0.0.1:8080", " Bot-API.local:8081 "]);
        let refused = |url: &str| policy.refuse(&reqwest::Url::parse(url).unwrap());
        assert_eq!(refused("http://127.0.0.1:8080/v1"), None);
        assert!(refused("http://127.0.0.1:8081/v1").is_some(), "another port of a trusted address");
        assert!(refused("http://169.254.169.254/latest/meta-data").is_some());
        assert!(refused("http://[fd00::1]/").is_some());
        assert!(policy.trusts("VLLM.internal", Some(443)) && policy.trusts("bot-api.local", Some(8081)));
        assert!(!policy.trusts("bot-api.local", Some(80)));
        assert_eq!(refused("https://files.slack.com/x"), None, "names are checked when connecting");
        assert!(refused("file:///etc/passwd").is_some());
        // What the resolver admits for each name: the port is checked once connected.
        assert_eq!(policy.name_trust("vllm.internal"), NameTrust::AllPorts);
        assert_eq!(policy.name_trust("bot-api.local"), NameTrust::SomePorts);
        assert_eq!(policy.name_trust("bot-api"), NameTrust::Untrusted);
    }
}
