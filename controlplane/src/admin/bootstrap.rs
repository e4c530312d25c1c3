//! Who may use the Admin API before its first user exists.
//!
//! An empty `users` table cannot mean "open to everyone": whoever reached the port first would
//! create the first administrator and own the federation. Until a user exists, the Admin API
//! answers only clients on the same machine and holders of a bootstrap token generated at start
//! and written to the log, which an operator of a container or remote host can read. The token
//! is good for one bootstrap: once a user exists it is spent, also if every user is deleted
//! later (then only local clients may create one again).
//!
//! "On the same machine" is more than a loopback peer:
//! - the request carries no forwarding header: a reverse proxy on the same host connects from
//!   loopback on behalf of anyone, so a proxied request is never "local";
//! - its `Host` is a loopback literal (`127.0.0.1`, `[::1]`, `localhost`, any port) or the host
//!   of our Entity Identifier: a web page whose name was rebound to 127.0.0.1 (DNS rebinding),
//!   or that reaches the port through an operator's `ssh -L`, is sent with its own name;
//! - it is not a browser's request made by a page (no `Origin`): a page on another local port
//!   is "local" by every other measure. A browser may still bootstrap with the token.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, ORIGIN};
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The start-up bootstrap token.
#[derive(Debug)]
pub struct Bootstrap {
    token: String,
    spent: AtomicBool,
    /// Host names (lowercase, no port) besides loopback literals that a local request may be
    /// addressed to.
    hosts: Vec<String>,
}

impl Bootstrap {
    /// A fresh random token (256 bits), or `None` when the system has no randomness (then only
    /// loopback clients may bootstrap). `entity_id`'s host is accepted as the `Host` of local
    /// requests besides the loopback literals.
    pub fn generate(entity_id: &str) -> Self {
        let mut bytes = [0u8; 32];
        let token = match getrandom::fill(&mut bytes) {
            Ok(()) => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
            Err(e) => {
                tracing::warn!(error = %e, "no randomness for an admin bootstrap token");
                String::new()
            }
        };
        let hosts = url::Url::parse(entity_id)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .into_iter()
            .collect();
        Self {
            token,
            spent: AtomicBool::new(false),
            hosts,
        }
    }

    /// The token, to print at start (`None` once spent or when none could be made).
    pub fn token(&self) -> Option<&str> {
        (!self.token.is_empty() && !self.spent.load(Ordering::Relaxed)).then_some(&*self.token)
    }

    /// Marks the token used (a user exists now).
    pub fn spend(&self) {
        self.spent.store(true, Ordering::Relaxed);
    }

    /// Why a request without Basic credentials is refused once a user exists: a client still
    /// presenting the bootstrap token is told that it is spent, not that credentials are
    /// missing (it sent some).
    pub fn missing_credentials(&self, headers: &HeaderMap) -> &'static str {
        if !self.token.is_empty() && bearer_matches(headers, &self.token) {
            "the bootstrap token is spent: it is no longer valid once an admin user exists; \
             sign in with an admin user's HTTP Basic credentials"
        } else {
            "missing credentials"
        }
    }

    /// Whether a request from `peer` with `headers`, addressed to `host` (the `Host` header, or
    /// an HTTP/2 request's authority), may use the API while no user exists.
    pub fn admits(&self, peer: Option<IpAddr>, headers: &HeaderMap, host: Option<&str>) -> bool {
        let local = peer.is_some_and(is_loopback)
            && !proxied(headers)
            && !headers.contains_key(ORIGIN)
            && host.is_some_and(|h| self.local_host(h));
        local || self.token().is_some_and(|t| bearer_matches(headers, t))
    }

    /// `host` (with or without a port) names this machine: a loopback literal, `localhost`, or
    /// our Entity Identifier's host.
    fn local_host(&self, host: &str) -> bool {
        let name = host_name(host.trim());
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        let literal = name.strip_prefix('[').and_then(|n| n.strip_suffix(']'));
        name == "localhost"
            || literal
                .unwrap_or(&name)
                .parse::<IpAddr>()
                .is_ok_and(is_loopback)
            || self.hosts.contains(&name)
    }
}

/// The host of a `Host` value: without its port (`[::1]:7672` → `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// The request passed a proxy: it carries one of the usual forwarding headers.
fn proxied(headers: &HeaderMap) -> bool {
    [
        "forwarded",
        "x-forwarded-for",
        "x-real-ip",
        "x-forwarded-host",
    ]
    .iter()
    .any(|h| headers.contains_key(*h))
}

/// Loopback, also as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1` on dual-stack sockets).
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// `Authorization: Bearer <token>`, compared through SHA-256 digests so that the time taken
/// does not depend on how much of a guess is right.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
    else {
        return false;
    };
    Sha256::digest(given.as_bytes()) == Sha256::digest(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    const LOCAL: Option<&str> = Some("127.0.0.1:7672");

    #[test]
    fn loopback_or_the_token_until_it_is_spent() {
        let b = Bootstrap::generate("https://ta.example.org");
        let token = b.token().map(str::to_owned).unwrap_or_default();
        assert_eq!(token.len(), 43);
        let remote: IpAddr = [192, 0, 2, 7].into();
        let none = HeaderMap::new();
        assert!(b.admits(Some([127, 0, 0, 1].into()), &none, LOCAL));
        // Through a reverse proxy on this host: loopback peer, but not a local client.
        let mut proxied = HeaderMap::new();
        proxied.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.5"));
        assert!(!b.admits(Some([127, 0, 0, 1].into()), &proxied, LOCAL));
        let mut forwarded = HeaderMap::new();
        forwarded.insert("forwarded", HeaderValue::from_static("for=203.0.113.5"));
        assert!(!b.admits(Some([127, 0, 0, 1].into()), &forwarded, LOCAL));
        assert!(b.admits(
            Some("::ffff:127.0.0.1".parse().unwrap_or(remote)),
            &none,
            LOCAL
        ));
        assert!(!b.admits(Some(remote), &none, LOCAL));
        assert!(!b.admits(None, &none, LOCAL));
        let mut with = HeaderMap::new();
        let bearer = HeaderValue::from_str(&format!("Bearer {token}"));
        with.insert(
            AUTHORIZATION,
            bearer.unwrap_or(HeaderValue::from_static("x")),
        );
        assert!(b.admits(Some(remote), &with, LOCAL));
        let mut wrong = HeaderMap::new();
        wrong.insert(AUTHORIZATION, HeaderValue::from_static("Bearer nope"));
        assert!(!b.admits(Some(remote), &wrong, LOCAL));
        b.spend();
        assert!(!b.admits(Some(remote), &with, LOCAL));
        assert!(b.admits(Some([127, 0, 0, 1].into()), &none, LOCAL));
        // Once spent, its holder is told so; others still miss credentials.
        assert!(
            b.missing_credentials(&with)
                .contains("bootstrap token is spent")
        );
        assert_eq!(b.missing_credentials(&wrong), "missing credentials");
        assert_eq!(b.missing_credentials(&none), "missing credentials");
    }

    /// DNS rebinding (issue 31): a page of evil.example whose name now resolves to 127.0.0.1, or
    /// that reaches the port through an operator's `ssh -L`, connects from loopback.
    #[test]
    fn a_page_rebound_to_loopback_is_not_local() {
        let b = Bootstrap::generate("https://TA.example.org/");
        let lo: Option<IpAddr> = Some([127, 0, 0, 1].into());
        let none = HeaderMap::new();
        for host in [
            "127.0.0.1",
            "127.0.0.1:7672",
            "127.1.2.3:80",
            "[::1]:7672",
            "[::1]",
            "localhost:7672",
            "LOCALHOST",
            "localhost.:7672",
            "ta.example.org:8443",
            "ta.example.org",
        ] {
            assert!(b.admits(lo, &none, Some(host)), "{host}");
        }
        for host in [
            "evil.example:7672",
            "evil.example",
            "localhost.evil.example:7672",
            "127.0.0.1.evil.example",
            "ta.example.org.evil.example",
            "[::2]:7672",
            "",
        ] {
            assert!(!b.admits(lo, &none, Some(host)), "{host}");
        }
        assert!(!b.admits(lo, &none, None));
        // A browser's request made by a page (it says where the page came from) needs the
        // token, whatever the page's origin.
        for origin in ["http://127.0.0.1:7672", "http://localhost:3000", "null"] {
            let mut page = HeaderMap::new();
            page.insert(ORIGIN, HeaderValue::from_static(origin));
            assert!(!b.admits(lo, &page, LOCAL), "{origin}");
            let token = b.token().unwrap_or_default();
            let bearer = HeaderValue::from_str(&format!("Bearer {token}"));
            page.insert(
                AUTHORIZATION,
                bearer.unwrap_or(HeaderValue::from_static("x")),
            );
            assert!(b.admits(lo, &page, Some("evil.example:7672")), "{origin}");
        }
    }
}
