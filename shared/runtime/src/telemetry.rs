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
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use pharos_shared::client_ip::TrustedProxies;
pub use pharos_shared::spans::TARGET;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// What the process samples, set once at start-up when traces are turned on.
#[derive(Debug)]
struct Sampling {
    /// Peers whose `traceparent` is continued (`tracing.trusted_peers`).
    trusted: TrustedProxies,
    /// New traces are sampled when a random `u64` is below this.
    threshold: u64,
    /// A trusted parent's decision stands (`parentbased_*`).
    parent_based: bool,
}

static SAMPLING: OnceLock<Sampling> = OnceLock::new();

/// The attribute that tells the exporter's sampler a request was sampled here already.
pub const SAMPLED_HERE: &str = "pharos.sampled";

/// Turns the request decisions on: new traces at `ratio` (0 to 1), a `traceparent` continued
/// only from `trusted` peers, their decision standing when `parent_based`. Called by the
/// binary when it turns traces on.
pub fn configure(trusted: TrustedProxies, ratio: f64, parent_based: bool) {
    // u64::MAX stands for "always" (see `draw`); below 1 the float-to-int `as` saturates.
    let threshold = if ratio >= 1.0 {
        u64::MAX
    } else {
        (ratio.max(0.0) * u64::MAX as f64) as u64
    };
    let _ = SAMPLING.set(Sampling {
        trusted,
        threshold,
        parent_based,
    });
}

/// Whether a new trace is sampled: a draw from a per-thread xorshift generator, seeded from
/// the standard library's randomly keyed hasher (sampling needs spread, not secrecy).
fn draw(threshold: u64) -> bool {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x5eed);
            h.finish() | 1
        });
    }
    if threshold == u64::MAX {
        return true;
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x < threshold
    })
}

/// A request's part in tracing.
#[derive(Debug)]
pub enum Trace {
    /// Traces are off.
    Off,
    /// Traced, and this trace is not sampled: no span, and none made while serving it
    /// ([`pharos_shared::spans::Unsampled`]).
    Unsampled,
    /// The request's span.
    Span(Span),
}

/// The trace of a request on `listener` (`public` or `admin`).
///
/// A request from a trusted peer that sent a `traceparent` continues that trace (and, when
/// parent-based, follows its sampling decision); anyone else's header is ignored and the
/// request starts a new trace, sampled at the configured ratio. The decision is made here,
/// before any span exists, because a tracing span costs its allocations even when the
/// exporter's sampler would drop it.
pub fn server_span(
    listener: &'static str,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
) -> Trace {
    // Set only when the binary turned traces on: one load when they are off.
    let Some(sampling) = SAMPLING.get() else {
        return Trace::Off;
    };
    let parent = peer
        .filter(|ip| sampling.trusted.contains(*ip))
        .map(|_| global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers))))
        .filter(|cx| cx.span().span_context().is_valid());
    let sampled_here = match &parent {
        Some(cx) if sampling.parent_based => {
            if !cx.span().span_context().is_sampled() {
                return Trace::Unsampled;
            }
            false
        }
        _ => {
            if !draw(sampling.threshold) {
                return Trace::Unsampled;
            }
            true
        }
    };
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
        pharos.sampled = tracing::field::Empty,
    );
    if sampled_here {
        span.record(SAMPLED_HERE, true);
    }
    if let Some(cx) = parent {
        // Fails only once the span has been entered, which it has not.
        let _ = span.set_parent(cx);
    }
    Trace::Span(span)
}

/// Records the answer's status on a request span; 5xx marks the span as an error.
pub fn record_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of an outbound `method` request to `url`; disabled when traces are off or the
/// request it serves is not sampled.
pub fn client_span(method: &str, url: &url::Url) -> Span {
    pharos_shared::trace_span!(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_sample_at_the_ratio() {
        assert!((0..1_000).all(|_| draw(u64::MAX)), "ratio 1 is always");
        assert!((0..1_000).all(|_| !draw(0)), "ratio 0 is never");
        let one_percent = (0.01 * u64::MAX as f64) as u64;
        let sampled = (0..100_000).filter(|_| draw(one_percent)).count();
        // 1,000 expected; the standard deviation is about 31.
        assert!((800..1_200).contains(&sampled), "{sampled} of 100,000");
    }
}
