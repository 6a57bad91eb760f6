//! Which address a request comes from, for sign-in limits and the audit log. The connection's
//! peer, unless the peer is one of the operator's reverse proxies (`admin.trusted_proxies`):
//! then the right-most `X-Forwarded-For` hop that is not itself a trusted proxy, since only the
//! hops the proxies appended can be believed. A client's own `X-Forwarded-For` never picks the
//! address its sign-ins are counted against (security review 2026-12, M2).

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The operator's reverse proxies.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedProxies(Vec<IpNet>);

/// A `trusted_proxies` entry that is neither a CIDR nor an address.
#[derive(Debug, thiserror::Error)]
#[error("admin.trusted_proxies: {0:?} is neither a CIDR (10.0.0.0/8) nor an address")]
pub struct BadProxy(String);

impl TrustedProxies {
    pub(crate) fn parse(entries: &[String]) -> Result<Self, BadProxy> {
        entries
            .iter()
            .map(|raw| {
                let raw = raw.trim();
                raw.parse::<IpNet>()
                    .or_else(|_| raw.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| BadProxy(raw.to_owned()))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer, or behind trusted proxies the hop they vouch for.
    pub(crate) fn client(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip().to_canonical();
        if !self.trusts(peer) {
            return Some(peer);
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|hop| hop.trim().parse::<IpAddr>().map(|ip| ip.to_canonical()))
            .collect::<Vec<_>>();
        // Right to left: past the proxies; an unreadable hop ends the trail there.
        let mut client = peer;
        for hop in hops.into_iter().rev() {
            match hop {
                Ok(ip) if self.trusts(client) => client = ip,
                _ => break,
            }
        }
        Some(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forwarded(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", value.parse().unwrap());
        headers
    }

    fn peer(ip: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(ip.parse().unwrap(), 40_000))
    }

    #[test]
    fn a_clients_own_header_is_ignored_without_a_trusted_proxy() {
        let none = TrustedProxies::default();
        let ip = none.client(peer("203.0.113.9"), &forwarded("198.51.100.1"));
        assert_eq!(ip, Some("203.0.113.9".parse().unwrap()));
    }

    #[test]
    fn behind_trusted_proxies_the_right_most_untrusted_hop_is_the_client() {
        let proxies = TrustedProxies::parse(&["10.0.0.0/8".into(), "192.0.2.7".into()]).unwrap();
        // The client forged the left-most hop; the proxies appended the rest.
        let headers = forwarded("1.2.3.4, 198.51.100.20, 192.0.2.7");
        assert_eq!(proxies.client(peer("10.1.2.3"), &headers), Some("198.51.100.20".parse().unwrap()));
        // Straight from the internet, the same header counts for nothing.
        assert_eq!(proxies.client(peer("203.0.113.9"), &headers), Some("203.0.113.9".parse().unwrap()));
        // Only proxies in the trail (or no header): the last proxy is the client as far as we know.
        assert_eq!(proxies.client(peer("10.1.2.3"), &forwarded("10.9.9.9")), Some("10.9.9.9".parse().unwrap()));
        assert_eq!(proxies.client(peer("10.1.2.3"), &HeaderMap::new()), Some("10.1.2.3".parse().unwrap()));
        // Garbage in a hop stops the trail at the last trusted proxy.
        assert_eq!(proxies.client(peer("10.1.2.3"), &forwarded("1.2.3.4, junk")), Some("10.1.2.3".parse().unwrap()));
        // IPv4-mapped peers count as their IPv4 address.
        assert_eq!(
            proxies.client(peer("::ffff:10.0.0.5"), &forwarded("198.51.100.1")),
            Some("198.51.100.1".parse().unwrap())
        );
    }

    #[test]
    fn a_bad_entry_is_named() {
        let err = TrustedProxies::parse(&["10.0.0.0/8".into(), "proxy.internal".into()]).unwrap_err();
        assert!(err.to_string().contains("proxy.internal"), "{err}");
    }
}
