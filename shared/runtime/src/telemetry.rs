//! Trace context across the federation (issue 41): the span of each incoming request, the
//! W3C `traceparent` continued from trusted peers, and the one sent with every outbound fetch,
//! so that a resolve through several Pharos instances is one trace.
//!
//! Spans carry [`TARGET`]; only the trace exporter wants that target, so with traces off each
//! span here is a disabled one, decided by tracing's per-call-site cache (see
//! [`pharos_shared::spans`]), and nothing else in this module runs. The propagator is the
//! process's global one, which the binary sets to W3C Trace Context when it turns traces on.

use std::net::IpAddr;
use std::sync::OnceLock;

use http::{HeaderMap, Method};
use opentelemetry::global;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use pharos_shared::client_ip::TrustedProxies;
pub use pharos_shared::spans::TARGET;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Peers whose `traceparent` is continued (`tracing.trusted_peers`), set once at start-up.
static TRUSTED_PEERS: OnceLock<TrustedProxies> = OnceLock::new();

/// Continues trace context from `peers` only; called by the binary when it turns traces on.
pub fn trust_peers(peers: TrustedProxies) {
    let _ = TRUSTED_PEERS.set(peers);
}

/// Whether a request from `peer` may continue the trace its headers name.
fn trusted(peer: Option<IpAddr>) -> bool {
    peer.is_some_and(|ip| TRUSTED_PEERS.get().is_some_and(|t| t.contains(ip)))
}

/// The span of a request on `listener` (`public` or `admin`), or `None` when traces are off.
///
/// Its parent is the caller's trace when `peer` is trusted and sent a `traceparent`; anyone
/// else's header is ignored, so the request starts a new trace under the sampler's ratio.
pub fn server_span(
    listener: &'static str,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
) -> Option<Span> {
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = %format_args!("{method} {path}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        url.path = path,
        http.response.status_code = tracing::field::Empty,
        pharos.listener = listener,
    );
    if span.is_disabled() {
        return None;
    }
    if trusted(peer) {
        let cx = global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
        // Fails only once the span has been entered, which it has not.
        let _ = span.set_parent(cx);
    }
    Some(span)
}

/// Records the answer's status on a request span; 5xx marks the span as an error.
pub fn record_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of an outbound `method` request to `url`; disabled when traces are off.
pub fn client_span(method: &str, url: &url::Url) -> Span {
    tracing::info_span!(
        target: TARGET,
        "fetch",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        url.full = %url,
        server.address = url.host_str().unwrap_or_default(),
        http.response.status_code = tracing::field::Empty,
    )
}

/// Writes `span`'s context as `traceparent` (and `tracestate`) into `headers`, so that the
/// peer's spans join this trace; nothing when the span is disabled.
pub fn inject(span: &Span, headers: &mut HeaderMap) {
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut HeaderInjector(headers)));
}
