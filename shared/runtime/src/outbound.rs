//! Outbound HTTP: the reqwest implementation of [`pharos_shared::chain::Fetcher`].
//!
//! Every fetch of another Entity's statement is bounded: `federation.http_timeout` per
//! request, `federation.max_response_bytes` (the body is streamed and cut off, never buffered
//! whole first), only `http`/`https`, at most [`MAX_REDIRECTS`] redirects, and the response
//! must be `application/entity-statement+jwt`. With `federation.block_private_addresses` the
//! host is resolved and refused when *any* of its addresses is loopback, private, link-local
//! or otherwise non-public (SSRF protection: a resolver fetches URLs chosen by whoever
//! publishes `authority_hints`). That switch is on by default; federations on one machine
//! (tests, demos) turn it off explicitly.
//!
//! Coalescing (one in-flight fetch per URL) happens one layer up, in the statement cache,
//! through moka's `try_get_with`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pharos_shared::chain::Fetcher;
use pharos_shared::config::FederationSettings;
use pharos_shared::{Error, Result};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;
use tracing::Instrument as _;

use crate::telemetry;

use pharos_shared::entity_configuration::ENTITY_STATEMENT_MEDIA_TYPE as CONTENT_TYPE;

/// Redirects followed per fetch; more is a misconfigured (or hostile) server.
pub const MAX_REDIRECTS: usize = 5;

/// Fetches statements over HTTP(S) with the limits of `federation.*`.
#[derive(Debug, Clone)]
pub struct HttpFetcher {
    /// The client, or why it could not be built (reported by every fetch, so that building
    /// the data plane stays infallible).
    client: std::result::Result<reqwest::Client, String>,
    max_bytes: u64,
    block_private: bool,
    /// Fetches started through this fetcher and its clones, for `/metrics`: one instance's
    /// count (a process may hold several Pharos instances, as the tests do).
    started: Arc<AtomicU64>,
}

impl HttpFetcher {
    /// A client configured from `federation.*`; rustls, no proxy from the environment.
    pub fn new(settings: &FederationSettings) -> Self {
        let block = settings.block_private_addresses;
        let policy = redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match check_url(attempt.url(), block) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e.to_string()),
            }
        });
        let mut builder = reqwest::Client::builder()
            .timeout(settings.http_timeout.get())
            .connect_timeout(settings.http_timeout.get())
            .redirect(policy)
            .no_proxy()
            .user_agent(concat!("pharos/", env!("CARGO_PKG_VERSION")));
        if block {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"));
        Self {
            client,
            max_bytes: settings.max_response_bytes,
            block_private: block,
            started: Arc::default(),
        }
    }

    /// Fetches started so far through this fetcher and its clones.
    pub fn fetches(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// GET `url` and return the body as text, enforcing status, content type (entity
    /// statements) and size.
    pub async fn get(&self, url: &str) -> Result<String> {
        self.get_typed(url, CONTENT_TYPE).await
    }

    /// [`Self::get`] for a response of media type `media` (sent as `Accept` and required).
    pub async fn get_typed(&self, url: &str, media_type: &str) -> Result<String> {
        self.typed(url, media_type, None).await
    }

    /// POST `form` to `url` (a form body), under the rules of [`Self::get_typed`].
    pub async fn post_form_typed(
        &self,
        url: &str,
        form: &[(&str, &str)],
        media_type: &str,
    ) -> Result<String> {
        self.typed(url, media_type, Some(form)).await
    }

    async fn typed(
        &self,
        url: &str,
        media_type: &str,
        form: Option<&[(&str, &str)]>,
    ) -> Result<String> {
        let parsed =
            url::Url::parse(url).map_err(|e| Error::Fetch(format!("{url}: bad URL: {e}")))?;
        check_url(&parsed, self.block_private)?;
        let fail = |e: reqwest::Error| Error::Fetch(transport_failure(url, &e));
        let client = self.client.as_ref().map_err(|e| Error::Fetch(e.clone()))?;
        self.started.fetch_add(1, Ordering::Relaxed);
        let span = telemetry::client_span(if form.is_some() { "POST" } else { "GET" }, &parsed);
        let mut trace_headers = reqwest::header::HeaderMap::new();
        telemetry::inject(&span, &mut trace_headers);
        let request = match form {
            Some(f) => client.post(parsed).form(f),
            None => client.get(parsed),
        };
        let answer = async {
            let resp = request
                .header(reqwest::header::ACCEPT, media_type)
                .headers(trace_headers)
                .send()
                .await
                .map_err(fail)?;
            span.record("http.response.status_code", resp.status().as_u16());
            self.body(url, media_type, resp).await
        };
        let result = answer.instrument(span.clone()).await;
        if result.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        result
    }

    /// The checked body of `resp`, the answer to `url`.
    async fn body(
        &self,
        url: &str,
        media_type: &str,
        mut resp: reqwest::Response,
    ) -> Result<String> {
        let fail = |e: reqwest::Error| Error::Fetch(transport_failure(url, &e));
        if resp.status() != reqwest::StatusCode::OK {
            return Err(Error::Fetch(format!("{url}: HTTP {}", resp.status())));
        }
        let ct = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let media = ct.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case(media_type) {
            return Err(Error::Fetch(format!(
                "{url}: content type {ct:?}, expected {media_type}"
            )));
        }
        if resp.content_length().is_some_and(|n| n > self.max_bytes) {
            return Err(self.too_large(url));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(fail)? {
            if (body.len() + chunk.len()) as u64 > self.max_bytes {
                return Err(self.too_large(url));
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(body)
            .map_err(|_| Error::Fetch(format!("{url}: body is not UTF-8")))?;
        Ok(text.trim().to_owned())
    }

    fn too_large(&self, url: &str) -> Error {
        Error::Fetch(format!(
            "{url}: response larger than {} bytes",
            self.max_bytes
        ))
    }
}

impl Fetcher for HttpFetcher {
    async fn entity_configuration(&self, entity_id: &str) -> Result<String> {
        self.get(&configuration_url(entity_id)).await
    }

    async fn subordinate_statement(&self, fetch_endpoint: &str, sub: &str) -> Result<String> {
        self.get(&fetch_url(fetch_endpoint, sub)?).await
    }

    async fn trust_mark(&self, endpoint: &str, trust_mark_type: &str, sub: &str) -> Result<String> {
        let url = trust_mark_url(endpoint, trust_mark_type, sub)?;
        self.get_typed(&url, TRUST_MARK_CONTENT_TYPE).await
    }

    async fn trust_mark_status(&self, endpoint: &str, trust_mark: &str) -> Result<String> {
        let form = [("trust_mark", trust_mark)];
        self.post_form_typed(endpoint, &form, TRUST_MARK_STATUS_CONTENT_TYPE)
            .await
    }

    async fn trust_mark_listing(
        &self,
        endpoint: &str,
        trust_mark_type: &str,
        sub: &str,
    ) -> Result<String> {
        let url = trust_mark_url(endpoint, trust_mark_type, sub)?;
        self.get_typed(&url, "application/json").await
    }

    fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl std::future::Future<Output = Option<T>> + Send {
        off_the_workers(work)
    }
}

/// Runs CPU-bound verification on the blocking pool, so that the async workers keep serving
/// while a large federation's chains are checked (see [`Fetcher::run_blocking`]).
pub async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

/// Media type of a trust mark status response (§8.4.2).
const TRUST_MARK_STATUS_CONTENT_TYPE: &str = "application/trust-mark-status-response+jwt";

/// Media type of a trust mark response (§8.6.2).
const TRUST_MARK_CONTENT_TYPE: &str = "application/trust-mark+jwt";

/// `<trust_mark_endpoint>?trust_mark_type=<type>&sub=<sub>` (also the listing endpoint's
/// query), keeping any query it has.
pub fn trust_mark_url(endpoint: &str, trust_mark_type: &str, sub: &str) -> Result<String> {
    let mut u = url::Url::parse(endpoint)
        .map_err(|e| Error::Fetch(format!("bad trust mark endpoint {endpoint}: {e}")))?;
    u.query_pairs_mut()
        .append_pair("trust_mark_type", trust_mark_type)
        .append_pair("sub", sub);
    Ok(u.into())
}

/// What a caller learns of a transport failure: that the URL gave no answer, or that its name
/// resolves to a refused address, never the cause chain (refused, reset, timed out, TLS alert),
/// which would let a resolver's caller map ports behind it. The whole chain goes to the log.
/// Shared with the control plane's outbound calls (entity checks) for the same reason.
pub fn transport_failure(url: &str, e: &reqwest::Error) -> String {
    let detail = with_sources(e);
    tracing::debug!(url, error = %detail, "outbound request failed");
    if e.is_redirect() {
        format!("{url}: too many redirects")
    } else if detail.contains("non-public address") {
        format!("{url}: resolves to a non-public address, refused")
    } else {
        format!("{url}: no answer")
    }
}

/// An error and its causes on one line: reqwest's own message omits them ("error sending
/// request"), and the cause is what an operator needs (DNS, refused address, TLS, timeout).
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        cur = s.source();
    }
    msg
}

/// `<entity_id without trailing "/">/.well-known/openid-federation` (§9).
pub fn configuration_url(entity_id: &str) -> String {
    format!(
        "{}/.well-known/openid-federation",
        entity_id.trim_end_matches('/')
    )
}

/// `<fetch_endpoint>?sub=<sub>`, keeping any query the endpoint URL already has.
pub fn fetch_url(fetch_endpoint: &str, sub: &str) -> Result<String> {
    let mut u = url::Url::parse(fetch_endpoint)
        .map_err(|e| Error::Fetch(format!("bad fetch endpoint {fetch_endpoint}: {e}")))?;
    u.query_pairs_mut().append_pair("sub", sub);
    Ok(u.into())
}

/// Only `http`/`https`; with blocking on, an IP-literal host must be public (names are
/// checked by [`PublicOnly`] when they are resolved).
fn check_url(url: &url::Url, block_private: bool) -> Result<()> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::Fetch(format!(
            "{url}: only http(s) URLs are fetched"
        )));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
        None => return Err(Error::Fetch(format!("{url}: no host"))),
    };
    if block_private && ip.is_some_and(is_non_public) {
        return Err(Error::Fetch(format!("{url}: non-public address refused")));
    }
    Ok(())
}

/// A DNS resolver that fails when any address of a name is non-public, so that a name with
/// one public and one private record cannot be used to reach the private one.
#[derive(Debug)]
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| is_non_public(a.ip())) {
                let msg = format!("{host} resolves to the non-public address {}", bad.ip());
                return Err(msg.into());
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Loopback, private, link-local, CGNAT, unspecified, multicast, broadcast, documentation,
/// benchmarking (198.18.0.0/15), IETF-reserved (192.0.0.0/24, 240.0.0.0/4) and unique-local
/// addresses. IPv6 forms that carry an IPv4 address — IPv4-mapped, IPv4-compatible (::/96),
/// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) — are judged by that IPv4 address, since they
/// reach it; local-use NAT64 (64:ff9b:1::/48), Teredo (2001::/32) and documentation
/// (2001:db8::/32) prefixes are refused outright.
pub fn is_non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0 && c == 0)
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_non_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                let [a, b] = hi.to_be_bytes();
                let [c, d] = lo.to_be_bytes();
                is_non_public(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)))
            };
            if v6.is_loopback() || v6.is_unspecified() {
                return true;
            }
            // ::/96 (IPv4-compatible) and 64:ff9b::/96 (NAT64): the last 32 bits.
            if s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return embedded(s[6], s[7]);
            }
            // 2002::/16 (6to4): bits 16..48.
            if s[0] == 0x2002 {
                return embedded(s[1], s[2]);
            }
            v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
                || (s[0] == 0x2001 && s[1] == 0)
                || (s[0] == 0x2001 && s[1] == 0xdb8)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "outbound_tests.rs"]
mod tests;
