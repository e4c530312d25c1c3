//! The public endpoints that write or fetch, bounded per client and in total
//! (`server.rate_limits`, the table in [`pharos_shared::rate_limit`]).
//!
//! A handler spends its request at entry (`Call::over_limit`), before it parses,
//! authenticates or sends anything to the control plane, so a refused request costs a hash
//! lookup. The client is the address `server.trusted_proxies` resolve. The listeners always
//! attach the peer's address; a request without one (the in-process router tests) has no
//! client to count and meets the totals only.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::config::{RateLimit, RateLimits, ServerSettings};
use pharos_shared::rate_limit::{Bound, Limiter};
use tokio::time::Instant;

use crate::error::FedError;

/// The endpoint classes, each with its own rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// `trust_mark` (signs and records marks, runs checkers).
    TrustMark,
    /// `trust_mark_request` (stores a pending subject).
    TrustMarkRequest,
    /// `enroll` and `enroll_request` (fetch the subject, store it).
    Enroll,
    /// `jwks_update` pushes and triggers (fetch and store keys).
    JwksUpdate,
    /// `entity_collection` collected on demand (walks a federation).
    EntityCollection,
    /// `resolve` without a cached answer (walks towards an anchor).
    Resolve,
}

impl Limited {
    /// Every class, in the order of their rates in the limiter.
    pub const ALL: [Limited; 6] = [
        Limited::TrustMark,
        Limited::TrustMarkRequest,
        Limited::Enroll,
        Limited::JwksUpdate,
        Limited::EntityCollection,
        Limited::Resolve,
    ];

    /// The configuration key (`server.rate_limits.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Limited::TrustMark => "trust_mark",
            Limited::TrustMarkRequest => "trust_mark_request",
            Limited::Enroll => "enroll",
            Limited::JwksUpdate => "jwks_update",
            Limited::EntityCollection => "entity_collection",
            Limited::Resolve => "resolve",
        }
    }

    fn rate(self, r: &RateLimits) -> RateLimit {
        match self {
            Limited::TrustMark => r.trust_mark,
            Limited::TrustMarkRequest => r.trust_mark_request,
            Limited::Enroll => r.enroll,
            Limited::JwksUpdate => r.jwks_update,
            Limited::EntityCollection => r.entity_collection,
            Limited::Resolve => r.resolve,
        }
    }
}

/// The limiter of one data plane.
#[derive(Debug)]
pub struct RateLimiter {
    limiter: Option<Limiter>,
    rates: RateLimits,
    proxies: TrustedProxies,
    forwarded: Option<HeaderName>,
    /// Zero of the limiter's millisecond scale (tokio's clock: paused in tests).
    start: Instant,
    /// Refusals per class: per client, in total.
    refused: [[AtomicU64; 2]; 6],
}

impl RateLimiter {
    /// The limiter `server.rate_limits` describes, reading client addresses as
    /// `server.trusted_proxies` says.
    pub fn new(server: &ServerSettings) -> Self {
        let rates = server.rate_limits.clone();
        let limiter = rates.enabled.then(|| {
            let clients = usize::try_from(rates.clients).unwrap_or(usize::MAX);
            Limiter::new(clients, Limited::ALL.map(|c| c.rate(&rates)).to_vec())
        });
        Self {
            limiter,
            rates,
            proxies: TrustedProxies::parse(&server.trusted_proxies),
            forwarded: HeaderName::from_bytes(server.forwarded_ip_header.as_bytes()).ok(),
            start: Instant::now(),
            refused: Default::default(),
        }
    }

    /// Requests of `class` refused so far, by bound (`per_client`, `total`).
    pub fn refused(&self, class: Limited) -> [(&'static str, u64); 2] {
        let [c, t] = &self.refused[class as usize];
        [("per_client", c.load(Relaxed)), ("total", t.load(Relaxed))]
    }

    /// Clients remembered now (`pharos_rate_limiter_clients`).
    pub fn clients(&self) -> usize {
        self.limiter.as_ref().map_or(0, Limiter::clients)
    }

    /// Clients remembered at most (`pharos_rate_limiter_capacity`).
    pub fn capacity(&self) -> usize {
        self.limiter.as_ref().map_or(0, Limiter::capacity)
    }

    /// The client address of `req`, when it came through a listener.
    fn client(&self, req: &Request) -> Option<IpAddr> {
        let ConnectInfo(peer) = req.extensions().get::<ConnectInfo<SocketAddr>>()?;
        let fwd = self
            .forwarded
            .as_ref()
            .filter(|_| !self.proxies.is_empty())
            .and_then(|h| req.headers().get(h))
            .and_then(|v| v.to_str().ok());
        Some(self.proxies.client_ip(peer.ip(), fwd))
    }

    /// Counts `req` against `class`'s rates: `Err` is the `429` to answer.
    pub fn check(&self, class: Limited, req: &Request) -> Result<(), Box<Response>> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let now_ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let refused = match limiter.check(class as u8, self.client(req), now_ms) {
            Ok(()) => return Ok(()),
            Err(r) => r,
        };
        self.refused[class as usize][refused.bound as usize].fetch_add(1, Relaxed);
        let rate = class.rate(&self.rates);
        let key = format!("server.rate_limits.{}", class.name());
        let description = match refused.bound {
            Bound::PerClient => format!(
                "too many {} requests from this client: at most {} per minute \
                 ({} at once, {key}.per_client); retry in {} s",
                class.name(),
                rate.per_client,
                rate.burst.max(1),
                refused.retry_after
            ),
            Bound::Total => format!(
                "too many {} requests from all clients: at most {} per minute \
                 ({key}.total); retry in {} s",
                class.name(),
                rate.total,
                refused.retry_after
            ),
        };
        let mut resp = FedError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            description,
        )
        .into_response();
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(refused.retry_after));
        Err(Box::new(resp))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::body::Body;

    use super::*;

    fn request(peer: &str, forwarded: Option<&str>) -> Request {
        let mut req = Request::builder().uri("/tm");
        if let Some(f) = forwarded {
            req = req.header("x-forwarded-for", f);
        }
        let mut req = req.body(Body::empty()).unwrap();
        req.extensions_mut()
            .insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        req
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_names_its_bound_and_when_to_retry() {
        let mut server = ServerSettings {
            trusted_proxies: vec!["10.0.0.1".into()],
            ..ServerSettings::default()
        };
        server.rate_limits.trust_mark_request = RateLimit::new(6, 1, 0);
        let limiter = RateLimiter::new(&server);
        let from_proxy = |client| request("10.0.0.1:4000", Some(client));
        limiter
            .check(Limited::TrustMarkRequest, &from_proxy("192.0.2.1"))
            .unwrap();
        let resp = *limiter
            .check(Limited::TrustMarkRequest, &from_proxy("192.0.2.1"))
            .unwrap_err();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "10");
        let body = axum::body::to_bytes(resp.into_body(), 4096).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"], "temporarily_unavailable");
        let d = body["error_description"].as_str().unwrap();
        assert!(
            d.contains("server.rate_limits.trust_mark_request.per_client"),
            "{d}"
        );
        // Another client behind the same proxy, and the other classes, go on.
        limiter
            .check(Limited::TrustMarkRequest, &from_proxy("192.0.2.2"))
            .unwrap();
        limiter
            .check(Limited::Enroll, &from_proxy("192.0.2.1"))
            .unwrap();
        // An untrusted peer's header is not believed: it is its own client.
        let spoofed = request("203.0.113.5:1", Some("192.0.2.9"));
        limiter.check(Limited::TrustMarkRequest, &spoofed).unwrap();
        assert!(limiter.check(Limited::TrustMarkRequest, &spoofed).is_err());
        // Ten seconds later the first client has a request again.
        tokio::time::advance(std::time::Duration::from_secs(10)).await;
        limiter
            .check(Limited::TrustMarkRequest, &from_proxy("192.0.2.1"))
            .unwrap();
        assert_eq!(limiter.clients(), 4);
    }

    #[test]
    fn disabled_limits_refuse_nothing_and_remember_no_one() {
        let mut server = ServerSettings::default();
        server.rate_limits.enabled = false;
        server.rate_limits.enroll = RateLimit::new(1, 1, 1);
        let limiter = RateLimiter::new(&server);
        for _ in 0..10 {
            limiter
                .check(Limited::Enroll, &request("192.0.2.1:1", None))
                .unwrap();
        }
        assert_eq!((limiter.clients(), limiter.capacity()), (0, 0));
    }

    /// Every endpoint type that writes or fetches asks the limiter before anything else: over
    /// a per-client rate of one request, the second request from one address is refused.
    #[tokio::test]
    async fn every_endpoint_that_writes_or_fetches_is_limited() {
        use pharos_shared::endpoint::{EndpointType, http_method};
        use pharos_shared::snapshot::SnapshotPublisher;
        use pharos_shared::time::ManualClock;
        use tower::ServiceExt;

        use crate::DataPlane;
        use crate::test_support::SnapshotBuilder;
        use pharos_runtime::command::Commands;

        let limited = [
            EndpointType::TrustMark,
            EndpointType::TrustMarkRequest,
            EndpointType::Enroll,
            EndpointType::EnrollRequest,
            EndpointType::JwksUpdate,
            EndpointType::JwksUpdateTrigger,
            EndpointType::EntityCollection,
            EndpointType::Resolve,
        ];
        let mut snap = SnapshotBuilder::new();
        for kind in limited {
            snap = snap.endpoint(kind, &format!("/{kind}"));
        }
        let mut server = ServerSettings::default();
        let one = RateLimit::new(1, 1, 0);
        let r = &mut server.rate_limits;
        (r.trust_mark, r.trust_mark_request, r.enroll) = (one, one, one);
        (r.jwks_update, r.entity_collection, r.resolve) = (one, one, one);
        // No control plane: commands are refused at once (503), nothing waits for a reply.
        let (commands, rx) = Commands::channel();
        drop(rx);
        let dp = DataPlane::connected(
            SnapshotPublisher::new(snap.build()).reader(),
            ManualClock::new(0),
            std::sync::Arc::new(pharos_runtime::outbound::HttpFetcher::new(
                &Default::default(),
            )),
            commands,
            &Default::default(),
            &Default::default(),
            &server,
        );
        let app = crate::router(dp);
        for (n, kind) in limited.into_iter().enumerate() {
            // A client of its own for each endpoint (enroll and enroll_request share a class).
            let peer: SocketAddr = format!("192.0.2.{}:1", n + 1).parse().unwrap();
            let method = match kind.method(false) {
                http_method::Method::Get => "GET",
                http_method::Method::Post => "POST",
            };
            let send = || {
                let mut req = Request::builder()
                    .method(method)
                    .uri(format!("/{kind}?sub=https%3A%2F%2Frp.example"))
                    .body(Body::empty())
                    .unwrap();
                req.extensions_mut().insert(ConnectInfo(peer));
                app.clone().oneshot(req)
            };
            let patience = std::time::Duration::from_secs(10);
            let first = tokio::time::timeout(patience, send()).await;
            let first = first.unwrap().unwrap().status();
            assert_ne!(first, StatusCode::TOO_MANY_REQUESTS, "{kind}");
            let second = send().await.unwrap();
            assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS, "{kind}");
            assert!(second.headers().contains_key(header::RETRY_AFTER), "{kind}");
        }
    }
}
