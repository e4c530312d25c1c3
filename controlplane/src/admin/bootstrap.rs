//! Who may use the Admin API before its first user exists.
//!
//! An empty `users` table cannot mean "open to everyone": whoever reached the port first would
//! create the first administrator and own the federation. Until a user exists, the Admin API
//! answers only clients on the same machine (the socket's peer address is loopback, and the
//! request carries no forwarding header: a reverse proxy on the same host connects from loopback
//! on behalf of anyone, so a proxied request is never "local") and holders of a bootstrap token
//! generated at start and written
//! to the log, which an operator of a container or remote host can read. The token is good for
//! one bootstrap: once a user exists it is spent, also if every user is deleted later (then
//! only loopback clients may create one again).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The start-up bootstrap token.
#[derive(Debug)]
pub struct Bootstrap {
    token: String,
    spent: AtomicBool,
}

impl Bootstrap {
    /// A fresh random token (256 bits), or `None` when the system has no randomness (then only
    /// loopback clients may bootstrap).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        let token = match getrandom::fill(&mut bytes) {
            Ok(()) => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
            Err(e) => {
                tracing::warn!(error = %e, "no randomness for an admin bootstrap token");
                String::new()
            }
        };
        Self {
            token,
            spent: AtomicBool::new(false),
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

    /// Whether a request from `peer` with `headers` may use the API while no user exists.
    pub fn admits(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> bool {
        let local = peer.is_some_and(is_loopback) && !proxied(headers);
        local || self.token().is_some_and(|t| bearer_matches(headers, t))
    }
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

    #[test]
    fn loopback_or_the_token_until_it_is_spent() {
        let b = Bootstrap::generate();
        let token = b.token().map(str::to_owned).unwrap_or_default();
        assert_eq!(token.len(), 43);
        let remote: IpAddr = [192, 0, 2, 7].into();
        let none = HeaderMap::new();
        assert!(b.admits(Some([127, 0, 0, 1].into()), &none));
        // Through a reverse proxy on this host: loopback peer, but not a local client.
        let mut proxied = HeaderMap::new();
        proxied.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.5"));
        assert!(!b.admits(Some([127, 0, 0, 1].into()), &proxied));
        let mut forwarded = HeaderMap::new();
        forwarded.insert("forwarded", HeaderValue::from_static("for=203.0.113.5"));
        assert!(!b.admits(Some([127, 0, 0, 1].into()), &forwarded));
        assert!(b.admits(Some("::ffff:127.0.0.1".parse().unwrap_or(remote)), &none));
        assert!(!b.admits(Some(remote), &none));
        assert!(!b.admits(None, &none));
        let mut with = HeaderMap::new();
        let bearer = HeaderValue::from_str(&format!("Bearer {token}"));
        with.insert(
            AUTHORIZATION,
            bearer.unwrap_or(HeaderValue::from_static("x")),
        );
        assert!(b.admits(Some(remote), &with));
        let mut wrong = HeaderMap::new();
        wrong.insert(AUTHORIZATION, HeaderValue::from_static("Bearer nope"));
        assert!(!b.admits(Some(remote), &wrong));
        b.spend();
        assert!(!b.admits(Some(remote), &with));
        assert!(b.admits(Some([127, 0, 0, 1].into()), &none));
        // Once spent, its holder is told so; others still miss credentials.
        assert!(
            b.missing_credentials(&with)
                .contains("bootstrap token is spent")
        );
        assert_eq!(b.missing_credentials(&wrong), "missing credentials");
        assert_eq!(b.missing_credentials(&none), "missing credentials");
    }
}
