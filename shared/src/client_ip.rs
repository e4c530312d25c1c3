//! Which address a request came from: the peer, or — when the peer is one of
//! `server.trusted_proxies` — the address its forwarded-IP header names.
//!
//! Only trusted proxies may speak for the client: any other peer could write whatever it likes
//! into `X-Forwarded-For`. The header is read from the right (the hop nearest to us), skipping
//! addresses that are themselves trusted proxies, so a client cannot spoof its address by
//! sending a header of its own that the proxy appends to.

use std::net::IpAddr;

/// The parsed `server.trusted_proxies` list.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    nets: Vec<(IpAddr, u8)>,
}

impl TrustedProxies {
    /// Parses IPs and CIDRs; entries that do not parse are skipped (configuration checking has
    /// already refused them at start-up).
    pub fn parse(entries: &[String]) -> Self {
        let nets = entries
            .iter()
            .filter_map(|e| {
                let (addr, prefix) = e.trim().split_once('/').unwrap_or((e.trim(), ""));
                let ip: IpAddr = addr.parse().ok()?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let prefix = if prefix.is_empty() {
                    max
                } else {
                    prefix.parse::<u8>().ok().filter(|p| *p <= max)?
                };
                Some((ip, prefix))
            })
            .collect();
        Self { nets }
    }

    /// Whether no proxy is trusted (then the peer is always the client).
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// Whether `ip` is a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets
            .iter()
            .any(|(net, prefix)| in_net(ip, *net, *prefix))
    }

    /// The client address of a request from `peer` carrying `forwarded` (the configured header's
    /// value, if present).
    pub fn client_ip(&self, peer: IpAddr, forwarded: Option<&str>) -> IpAddr {
        let peer = canonical(peer);
        let Some(header) = forwarded.filter(|_| self.contains(peer)) else {
            return peer;
        };
        let mut client = peer;
        for hop in header.rsplit(',') {
            let Some(ip) = parse_hop(hop) else {
                // Garbage from further out cannot be trusted: stop at the last good hop.
                break;
            };
            client = ip;
            if !self.contains(ip) {
                break;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5`, `[::1]:5`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(sa) = hop.parse::<std::net::SocketAddr>() {
        return Some(canonical(sa.ip()));
    }
    None
}

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`, what a dual-stack listener reports) are
/// compared as the IPv4 address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn untrusted_peers_speak_only_for_themselves() {
        let p = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            p.client_ip(ip("192.0.2.7"), Some("1.1.1.1")),
            ip("192.0.2.7")
        );
        assert_eq!(
            proxies(&[]).client_ip(ip("10.0.0.1"), Some("1.1.1.1")),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn trusted_proxies_name_the_nearest_untrusted_hop() {
        let p = proxies(&["10.0.0.0/8", "::1"]);
        assert_eq!(
            p.client_ip(ip("10.1.2.3"), Some("203.0.113.9")),
            ip("203.0.113.9")
        );
        // The client sent a spoofed first entry; the proxy chain appended the real one.
        let h = "6.6.6.6, 203.0.113.9, 10.0.0.2";
        assert_eq!(p.client_ip(ip("10.1.2.3"), Some(h)), ip("203.0.113.9"));
        assert_eq!(
            p.client_ip(ip("::1"), Some("[2001:db8::1]:443")),
            ip("2001:db8::1")
        );
        // No header, or nothing usable in it: the peer.
        assert_eq!(p.client_ip(ip("10.1.2.3"), None), ip("10.1.2.3"));
        assert_eq!(p.client_ip(ip("10.1.2.3"), Some("junk")), ip("10.1.2.3"));
    }

    #[test]
    fn mapped_addresses_and_prefixes() {
        let p = proxies(&["192.168.0.0/16", "fd00::/8", "bad", "10.0.0.0/40"]);
        assert!(p.contains(ip("::ffff:192.168.4.4")));
        assert!(p.contains(ip("fd12::1")));
        assert!(!p.contains(ip("fe80::1")));
        assert!(!p.contains(ip("10.0.0.1")));
        assert!(proxies(&["0.0.0.0/0"]).contains(ip("8.8.8.8")));
    }
}
