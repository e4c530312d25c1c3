//! Layers every listener gets: request id, access log, request time limit, body size limit, and
//! JSON bodies for the limit errors; on the public port also the request metrics and statistics.
//!
//! The access log is a tracing event with target [`ACCESS_TARGET`]; `logging` routes that target
//! to the access-log outputs only. It records method, path (without the query, which can carry
//! client data), status, duration, peer and request id, never headers or bodies, so credentials
//! cannot end up in it.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use pharos_shared::time::{Stopwatch, seed_nanos};

use axum::Router;
use axum::body::Body;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::http::{self, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::Limited;
use pharos_dataplane::front::Front;
use pharos_dataplane::hosts::ServedBy;
use pharos_dataplane::stats::capture::{Capture, Observation};
use pharos_runtime::telemetry::{self, Trace};
use pharos_shared::config::ServerSettings;
use pharos_shared::spans::Unsampled;
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower::Service;

/// Tracing target of access-log lines.
pub const ACCESS_TARGET: &str = "pharos::access";

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps `router` in the common layers configured by `server.*`.
///
/// These run for every request of the public port, so they are kept cheap: request id, time
/// limit, access log and the JSON rewriting of limit errors are one hand-written service
/// ([`Common`]) with an unboxed future; the request id is a counter rendered in UUID form (no
/// random-number syscall per request); the time limit arms a timer only when the handler does
/// not answer on its first poll (cached answers never touch the timer wheel); nothing is
/// captured for the access log when it is off; the body limit refuses a declared oversize
/// body at once and wraps only bodies of unknown length (a bodiless GET is not touched, and
/// no response body is re-wrapped and boxed, as a separate limit layer would do).
///
/// The result wraps the router once, around its routing: `Router::layer` would wrap every
/// route instead, so each request would pass through two boxed route services (a clone of
/// each, and a future of each) instead of one.
///
/// `listener` names the listener in trace spans (`admin`, `redirect`).
pub fn common(router: Router, server: &ServerSettings, listener: &'static str) -> Served {
    common_front(Front::new(router), server, listener)
}

fn common_front(front: Front, server: &ServerSettings, listener: &'static str) -> Served {
    Common {
        inner: front,
        listener,
        ids: CounterRequestId::new(),
        timeout: server.request_timeout.into(),
        limit: server.body_limit,
        capture: None,
        peer: None,
    }
}

/// The public port: as [`common`] around `front` (the router with the data plane's ready
/// answers in front of it), also measuring each request for the request metrics and
/// statistics ([`Capture`]) in the same future. Routes that are not measured mark their
/// answers (see [`pharos_dataplane::stats::unobserved`]).
pub fn common_measured(front: Front, server: &ServerSettings, capture: Arc<Capture>) -> Served {
    Common {
        capture: Some(capture),
        ..common_front(front, server, "public")
    }
}

/// A router inside the common layers: what a listener serves.
pub type Served = Common<Front>;

/// The body limit for axum's body extractors (`Json`, `Bytes`, …), which otherwise stop at
/// 2 MB whatever `server.body_limit` says. Only routers that use such extractors need it (the
/// Admin API); the public port reads bodies with explicit limits, and leaving it out there
/// saves an extension insertion per request.
pub fn extractor_limit(router: Router, server: &ServerSettings) -> Router {
    let limit = usize::try_from(server.body_limit).unwrap_or(usize::MAX);
    router.layer(DefaultBodyLimit::max(limit))
}

/// Per request: answers with the client's `x-request-id`, or a new one when it sent none,
/// enforces `server.body_limit` (`413`), answers `408` when the inner service takes longer
/// than the time limit, turns plain limit errors into JSON, measures the inner service's
/// answer when `capture` is set, and writes the access-log line when that log is on.
#[derive(Clone, Debug)]
pub struct Common<S> {
    inner: S,
    ids: CounterRequestId,
    timeout: Duration,
    limit: u64,
    capture: Option<Arc<Capture>>,
    /// The connection's peer, when served through [`PerConnection`].
    peer: Option<SocketAddr>,
    /// The listener's name in trace spans.
    listener: &'static str,
}

impl Served {
    /// This service for one connection from `peer`.
    fn connected(&self, peer: SocketAddr) -> Self {
        Self {
            inner: self.inner.connected(peer),
            peer: Some(peer),
            ..self.clone()
        }
    }

    /// The service a listener makes for each connection (in place of axum's
    /// `into_make_service_with_connect_info`, which inserts the peer's address into every
    /// request's extensions: an allocation per request that a ready answer does not need).
    pub fn per_connection(self) -> PerConnection {
        PerConnection(self)
    }
}

/// Makes a [`Served`] per connection that knows its peer (see [`Served::per_connection`]);
/// for `axum::serve` and for `axum_server` alike.
#[derive(Clone, Debug)]
pub struct PerConnection(Served);

impl<T> Service<T> for PerConnection
where
    SocketAddr: Connected<T>,
{
    type Response = Served;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Served, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, target: T) -> Self::Future {
        std::future::ready(Ok(self.0.connected(SocketAddr::connect_info(target))))
    }
}

/// What the access log needs, captured only when it is on.
#[derive(Debug)]
struct AccessLine {
    start: Stopwatch,
    method: Method,
    path: String,
    peer: String,
}

impl<S, B, ReqBody> Service<http::Request<ReqBody>> for Common<S>
where
    S: Service<Request, Response = http::Response<B>, Error = Infallible>,
    S::Future: ServedBy,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
    ReqBody: http_body::Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CommonFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqBody>) -> Self::Future {
        // A no-op for axum's own body type (plain listener); the TLS listener hands hyper's.
        let req = req.map(Body::new);
        // Only the response carries it (no handler reads it from the request), which saves a
        // header insertion and a copy per request.
        let id = match req.headers().get(&REQUEST_ID) {
            Some(v) => v.clone(),
            None => self.ids.header_value(),
        };
        let access = tracing::enabled!(target: ACCESS_TARGET, tracing::Level::INFO).then(|| {
            Box::new(AccessLine {
                start: Stopwatch::start(),
                method: req.method().clone(),
                path: req.uri().path().to_string(),
                peer: self
                    .peer
                    .or_else(|| {
                        req.extensions()
                            .get::<ConnectInfo<SocketAddr>>()
                            .map(|c| c.0)
                    })
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            })
        });
        // `Off` unless traces are exported (see `pharos_runtime::telemetry`).
        let trace = telemetry::server_span(
            self.listener,
            req.method(),
            req.uri().path(),
            req.headers(),
            self.peer.map(|p| p.ip()),
        );
        let entered = Entered::new(&trace);
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let (inner, early, observation) = if declared.is_some_and(|n| n > self.limit) {
            (
                None,
                Some(StatusCode::PAYLOAD_TOO_LARGE.into_response()),
                None,
            )
        } else if declared.is_some() || http_body::Body::is_end_stream(req.body()) {
            let mut req = req;
            let observation = self
                .capture
                .as_ref()
                .and_then(|c| c.start(&mut req, self.peer));
            // hyper holds a declared length to its word: nothing to wrap.
            (Some(self.inner.call(req)), None, observation)
        } else {
            let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
            let mut req = req.map(|b| Body::new(Limited::new(b, limit)));
            let observation = self
                .capture
                .as_ref()
                .and_then(|c| c.start(&mut req, self.peer));
            (Some(self.inner.call(req)), None, observation)
        };
        drop(entered);
        CommonFuture {
            inner,
            early,
            sleep: None,
            timeout: self.timeout,
            id: Some(id),
            access,
            observation,
            trace,
        }
    }
}

pin_project! {
    /// Future of [`Common`].
    #[derive(Debug)]
    pub struct CommonFuture<F> {
        // `None` when the request was answered without calling the inner service (`early`).
        #[pin]
        inner: Option<F>,
        early: Option<Response>,
        sleep: Option<Pin<Box<Sleep>>>,
        timeout: Duration,
        id: Option<HeaderValue>,
        access: Option<Box<AccessLine>>,
        // Measured when the inner service answers (not the early 413 nor the 408, which no
        // route saw).
        observation: Option<Observation>,
        // The request's trace: its span, entered while the inner service runs, or the mark
        // of an unsampled request.
        trace: Trace,
    }
}

impl<F, B> Future for CommonFuture<F>
where
    F: Future<Output = Result<http::Response<B>, Infallible>> + ServedBy,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let trace: &Trace = this.trace;
        let _entered = Entered::new(trace);
        let served = this
            .inner
            .as_ref()
            .as_pin_ref()
            .map(|f| f.served_by())
            .unwrap_or_default();
        let response = match this.inner.as_pin_mut().map(|inner| inner.poll(cx)) {
            None => this
                .early
                .take()
                .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
            Some(Poll::Ready(Ok(r))) => {
                let r = r.map(Body::new);
                if let Some(o) = this.observation.take() {
                    o.finish(&r, served);
                }
                r
            }
            Some(Poll::Ready(Err(never))) => match never {},
            Some(Poll::Pending) => {
                let timeout = *this.timeout;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                StatusCode::REQUEST_TIMEOUT.into_response()
            }
        };
        let mut response = json_limit_errors(response);
        if let Some(id) = this.id.take() {
            response.headers_mut().entry(REQUEST_ID).or_insert(id);
        }
        security_headers(response.headers_mut());
        if let Trace::Span(span) = trace {
            telemetry::record_status(span, response.status().as_u16());
        }
        if let Some(a) = this.access.take() {
            tracing::info!(
                target: ACCESS_TARGET,
                method = %a.method,
                path = a.path,
                status = response.status().as_u16(),
                duration_ms = a.start.elapsed().as_secs_f64() * 1000.0,
                peer = a.peer,
                request_id = response
                    .headers()
                    .get(&REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default(),
                "request"
            );
        }
        Poll::Ready(Ok(response))
    }
}

/// A request's trace while the inner service runs: its span entered, or the thread marked
/// as serving an unsampled request.
/// (Held for their drops only.)
enum Entered<'a> {
    Off,
    Unsampled {
        _mark: Unsampled,
    },
    Span {
        _entered: tracing::span::Entered<'a>,
    },
}

impl<'a> Entered<'a> {
    fn new(trace: &'a Trace) -> Self {
        match trace {
            Trace::Off => Self::Off,
            Trace::Unsampled => Self::Unsampled {
                _mark: Unsampled::enter(),
            },
            Trace::Span(span) => Self::Span {
                _entered: span.enter(),
            },
        }
    }
}

/// Headers that keep browsers from misreading our answers: no MIME sniffing (a JWT or JSON
/// body is never run as script or HTML), no framing (the Admin API's documentation page cannot
/// be overlaid by another site), and no referrer carrying our URLs (with their query) to
/// other sites. Static values, so adding them costs a few map inserts per response.
fn security_headers(h: &mut http::HeaderMap) {
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

/// Request ids in UUID form (8-4-4-4-12 hex digits, version 4 and RFC 4122 variant bits),
/// unique within the process: the first half is random per process, the second a counter
/// masked with a random per-process value. Unlike `MakeRequestUuid` it needs no call into the
/// operating system's random source per request, and it is a zero-sized handle on process-wide
/// state, so the per-request clone of the service that holds it costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct CounterRequestId {
    state: &'static IdState,
}

#[derive(Debug)]
struct IdState {
    high: u64,
    mask: u64,
}

static ID_STATE: OnceLock<IdState> = OnceLock::new();

/// Counter values are handed to each thread in blocks, so that numbering requests costs one
/// atomic addition on a shared cache line per `ID_BLOCK` requests instead of one per request
/// (with two workers answering 100,000 requests a second that line would bounce constantly).
static NEXT_ID_BLOCK: AtomicU64 = AtomicU64::new(0);
const ID_BLOCK: u64 = 256;

thread_local! {
    /// This thread's current block: (next value, end of block).
    static ID_RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A process-wide unique counter value.
fn next_counter() -> u64 {
    ID_RANGE.with(|range| {
        let (next, end) = range.get();
        if next < end {
            range.set((next + 1, end));
            return next;
        }
        let start = NEXT_ID_BLOCK.fetch_add(ID_BLOCK, Ordering::Relaxed);
        range.set((start + 1, start + ID_BLOCK));
        start
    })
}

/// The low 62 bits of the second half; the top two carry the variant.
const LOW_BITS: u64 = (1 << 62) - 1;

impl CounterRequestId {
    /// The process's generator, seeded on first use from the standard library's randomly keyed
    /// hasher.
    pub fn new() -> Self {
        let state = ID_STATE.get_or_init(|| {
            let random = |salt: u64| {
                let mut h = RandomState::new().build_hasher();
                h.write_u64(salt);
                h.write_u128(seed_nanos());
                h.write_u32(std::process::id());
                h.finish()
            };
            IdState {
                // Version 4 in bits 12..16 of the third group.
                high: (random(1) & !0xF000) | 0x4000,
                mask: random(2) & LOW_BITS,
            }
        });
        Self { state }
    }

    fn header_value(&self) -> HeaderValue {
        HeaderValue::from_bytes(&self.next_id()).unwrap_or(HeaderValue::from_static("-"))
    }

    /// The next id, 36 characters.
    pub fn next_id(&self) -> [u8; 36] {
        let n = next_counter();
        let low = (1 << 63) | ((n ^ self.state.mask) & LOW_BITS);
        let (h, l) = (hex16(self.state.high), hex16(low));
        let mut out = [b'-'; 36];
        out[0..8].copy_from_slice(&h[0..8]);
        out[9..13].copy_from_slice(&h[8..12]);
        out[14..18].copy_from_slice(&h[12..16]);
        out[19..23].copy_from_slice(&l[0..4]);
        out[24..36].copy_from_slice(&l[4..16]);
        out
    }
}

/// The 16 lower-case hex digits of `x`, most significant first (a byte at a time: this runs
/// for every request).
fn hex16(x: u64) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0; 16];
    for (i, byte) in x.to_be_bytes().into_iter().enumerate() {
        out[2 * i] = HEX[usize::from(byte >> 4)];
        out[2 * i + 1] = HEX[usize::from(byte & 0xF)];
    }
    out
}

impl Default for CounterRequestId {
    fn default() -> Self {
        Self::new()
    }
}

/// The limit layers answer with empty or plain-text bodies; clients get the same
/// `{"error","error_description"}` shape as from every other error.
fn json_limit_errors(response: Response) -> Response {
    let status = response.status();
    let description = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "request body too large",
        StatusCode::REQUEST_TIMEOUT => "request took too long",
        _ => return response,
    };
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    if is_json {
        return response;
    }
    let mut r = pharos_runtime::error_body::json_error(status, "invalid_request", description);
    if let Some(id) = response.headers().get(&REQUEST_ID) {
        r.headers_mut().insert(REQUEST_ID, id.clone());
    }
    r
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::{get, post};
    use tower::ServiceExt as _;

    use super::*;

    fn app() -> Served {
        let mut server = ServerSettings {
            body_limit: 16,
            ..ServerSettings::default()
        };
        server.request_timeout = Duration::from_secs(1).into();
        let slow = || async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "late"
        };
        let echo = |b: axum::body::Bytes| async move { b };
        let routes = Router::new()
            .route("/slow", get(slow))
            .route("/echo", post(echo));
        common(extractor_limit(routes, &server), &server, "admin")
    }

    async fn json_error(r: Response) -> serde_json::Value {
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert!(r.headers().contains_key(&REQUEST_ID));
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn slow_requests_get_a_json_408() {
        let req = Request::get("/slow").body(Body::empty()).unwrap();
        let r = app().oneshot(req).await.unwrap();
        assert_eq!(r.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(json_error(r).await["error"], "invalid_request");
    }

    #[test]
    fn request_ids_are_uuid_shaped_and_unique() {
        let g = CounterRequestId::new();
        let ids: std::collections::HashSet<String> = (0..1000)
            .map(|_| String::from_utf8(g.next_id().to_vec()).unwrap())
            .collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(parts[2].starts_with('4'), "{id}");
            assert!(
                id.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()),
                "{id}"
            );
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
        }
    }

    #[test]
    fn hex_digits_most_significant_first() {
        assert_eq!(&hex16(0x0123_4567_89ab_cdef), b"0123456789abcdef");
        assert_eq!(&hex16(u64::MAX), b"ffffffffffffffff");
    }

    /// A handler of an unsampled request makes no trace span, with traces on and the span
    /// target wanted: its fetches, writes and signatures must not become traces of their own.
    #[tokio::test]
    async fn an_unsampled_request_makes_no_span_while_it_is_served() {
        use std::sync::atomic::AtomicBool;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::{Layer as _, filter::Targets};
        // No new trace is sampled in this process (the setting is process-wide, as in
        // `pharos serve`; no other unit test here turns traces on).
        telemetry::configure(Default::default(), 0.0, true);
        let exporter = tracing_subscriber::fmt::layer()
            .with_writer(std::io::sink)
            .with_filter(Targets::new().with_target(telemetry::TARGET, tracing::Level::INFO));
        let _on = tracing::subscriber::set_default(tracing_subscriber::registry().with(exporter));
        // Call sites another test's thread met first may have cached "nobody wants this".
        tracing::callsite::rebuild_interest_cache();
        let made = Arc::new(AtomicBool::new(false));
        let seen = made.clone();
        let handler = move || {
            let seen = seen.clone();
            async move {
                let span = pharos_shared::trace_span!("sign");
                let marked = pharos_shared::spans::unsampled();
                seen.store(!span.is_disabled() || !marked, Ordering::SeqCst);
                "ok"
            }
        };
        assert!(!pharos_shared::spans::unsampled());
        let served = common(
            Router::new().route("/x", get(handler)),
            &ServerSettings::default(),
            "public",
        );
        let r = served
            .oneshot(Request::get("/x").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            !made.load(Ordering::SeqCst),
            "a span was made inside an unsampled request"
        );
    }

    #[tokio::test]
    async fn large_bodies_get_a_json_413_and_small_ones_pass() {
        let req = Request::post("/echo")
            .body(Body::from("x".repeat(17)))
            .unwrap();
        let r = app().oneshot(req).await.unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            json_error(r).await["error_description"],
            "request body too large"
        );
        let req = Request::post("/echo").body(Body::from("small")).unwrap();
        assert_eq!(app().oneshot(req).await.unwrap().status(), StatusCode::OK);
        // A declared oversize body is refused before the handler runs.
        let req = Request::post("/echo")
            .header(header::CONTENT_LENGTH, "17")
            .body(Body::from("x".repeat(17)))
            .unwrap();
        let r = app().oneshot(req).await.unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(json_error(r).await["error"], "invalid_request");
        let req = Request::post("/echo")
            .header(header::CONTENT_LENGTH, "5")
            .body(Body::from("small"))
            .unwrap();
        assert_eq!(app().oneshot(req).await.unwrap().status(), StatusCode::OK);
    }
}
