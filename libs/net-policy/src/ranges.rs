//! The address ranges that are not the public internet. One list, used by the workers' egress
//! proxy (checked after DNS resolution), by the Kubernetes backend's NetworkPolicy (as
//! `ipBlock.except`) and by [`crate::outbound`], so all of them refuse the same ranges.

use std::net::IpAddr;

/// IPv4 ranges that are never the public internet: "this network", private, shared (CGNAT),
/// loopback, link-local (with the cloud metadata address 169.254.169.254), IETF protocol
/// assignments, documentation, benchmarking, multicast, reserved and broadcast.
pub const NON_PUBLIC_V4: [&str; 14] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// IPv6 ranges that are never the public internet: unspecified, loopback, IPv4-compatible and
/// IPv4-mapped, NAT64 (well-known and local-use), 6to4 and Teredo (each can wrap a private
/// IPv4), documentation, unique local, link-local and multicast.
pub const NON_PUBLIC_V6: [&str; 11] = [
    "::/96",
    "::1/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "2001::/32",
    "2001:db8::/32",
    "2002::/16",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// An address range written `a.b.c.d/n` or `x::y/n` (a bare address is a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    base: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Self> {
        let (addr, prefix) = s.split_once('/').unwrap_or((s, ""));
        let base: IpAddr = addr.trim().parse().ok()?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = if prefix.is_empty() { max } else { prefix.trim().parse().ok().filter(|p| *p <= max)? };
        Some(Self { base, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32u32),
            IpAddr::V6(v6) => (u128::from(v6), 128u32),
        };
        let ((base, width), (addr, addr_width)) = (bits(self.base), bits(ip));
        if width != addr_width {
            return false;
        }
        let shift = width - u32::from(self.prefix);
        shift >= width || (base >> shift) == (addr >> shift)
    }
}

/// The non-public ranges, parsed once (the proxy asks for every connection).
static NON_PUBLIC: std::sync::LazyLock<Vec<Cidr>> = std::sync::LazyLock::new(|| {
    NON_PUBLIC_V4.iter().chain(NON_PUBLIC_V6.iter()).filter_map(|r| Cidr::parse(r)).collect()
});

/// Whether `ip` is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    if let IpAddr::V6(v6) = ip
        && let Some(v4) = v6.to_ipv4_mapped()
    {
        return is_public(IpAddr::V4(v4));
    }
    // `contains` is false across address families, so one list serves both.
    !NON_PUBLIC.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_pass() {
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "169.254.169.254",
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "::a00:1",
            "2002:a00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "224.0.0.1",
            "ff02::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn every_listed_range_parses() {
        assert!(NON_PUBLIC_V4.iter().chain(NON_PUBLIC_V6.iter()).all(|r| Cidr::parse(r).is_some()));
    }

    #[test]
    fn ranges_parse_and_match() {
        let c = Cidr::parse("10.20.0.0/16").unwrap();
        assert!(c.contains("10.20.3.4".parse().unwrap()));
        assert!(!c.contains("10.21.0.1".parse().unwrap()));
        assert!(Cidr::parse("192.168.1.7").unwrap().contains("192.168.1.7".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(!c.contains("::1".parse().unwrap()));
    }
}
