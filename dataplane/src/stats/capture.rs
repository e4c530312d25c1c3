//! The statistics layer of the public port: measures each request and, when `stats.enabled`,
//! builds its [`StatsRecord`] and pushes it into the [`Ring`].
//!
//! A hand-written service with an unboxed future (like the common layers): it runs for every
//! request, so it allocates only what a record keeps and never awaits anything of its own.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use http::{HeaderName, header};
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::config::Settings;
use pharos_shared::time::Clock;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::metrics::RequestMetrics;
use super::{ClientEntitySlot, Ring, StatsRecord, UNMATCHED, Unregistered};

/// Longest endpoint and User-Agent kept (longer values are cut at a character boundary).
const MAX_ENDPOINT: usize = 255;
const MAX_USER_AGENT: usize = 512;

/// What the layer needs: the metrics always, the ring and capture switches when enabled.
#[derive(Debug)]
pub struct Capture {
    metrics: RequestMetrics,
    ring: Option<Arc<Ring>>,
    clock: Arc<dyn Clock>,
    proxies: TrustedProxies,
    forwarded: Option<HeaderName>,
    client_ip: bool,
    geo_ip: bool,
    user_agent: bool,
    query_params: bool,
    client_entity_id: bool,
    /// Normalised `stats.endpoints`; empty = every path outside the Admin API and health checks.
    endpoints: Vec<String>,
}

impl Capture {
    /// The layer's state from the configuration; `ring` is `None` when statistics are off.
    pub fn new(
        settings: &Settings,
        metrics: RequestMetrics,
        ring: Option<Arc<Ring>>,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let c = &settings.stats.capture;
        Arc::new(Self {
            metrics,
            ring,
            clock,
            proxies: TrustedProxies::parse(&settings.server.trusted_proxies),
            forwarded: HeaderName::from_bytes(settings.server.forwarded_ip_header.as_bytes()).ok(),
            client_ip: c.client_ip,
            geo_ip: c.geo_ip.enabled,
            user_agent: c.user_agent,
            query_params: c.query_params,
            client_entity_id: c.client_entity_id,
            endpoints: settings
                .stats
                .endpoints
                .iter()
                .map(|e| normalise(e))
                .collect(),
        })
    }

    fn tracked(&self, endpoint: &str) -> bool {
        if self.endpoints.is_empty() {
            !(endpoint.starts_with("api/")
                || endpoint == "api"
                || endpoint == "healthz"
                || endpoint == "readyz"
                || endpoint == "metrics")
        } else {
            self.endpoints.iter().any(|e| e == endpoint)
        }
    }

    /// The request's part of a record, which takes `endpoint`; or, when statistics are off or
    /// the path untracked, no record and `endpoint` back.
    fn begin(
        &self,
        req: &mut Request,
        endpoint: String,
    ) -> (Option<Box<StatsRecord>>, Option<String>) {
        if self.ring.is_none() || !self.tracked(&endpoint) {
            return (None, Some(endpoint));
        }
        let headers = req.headers();
        let ip = (self.client_ip || self.geo_ip)
            .then(|| {
                let peer = req.extensions().get::<ConnectInfo<SocketAddr>>()?.0.ip();
                let fwd = self
                    .forwarded
                    .as_ref()
                    .filter(|_| !self.proxies.is_empty())
                    .and_then(|h| headers.get(h))
                    .and_then(|v| v.to_str().ok());
                Some(self.proxies.client_ip(peer, fwd))
            })
            .flatten();
        let user_agent = self
            .user_agent
            .then(|| headers.get(header::USER_AGENT)?.to_str().ok())
            .flatten()
            .map(|ua| cut(ua, MAX_USER_AGENT).to_owned());
        let request_size = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let query = self
            .query_params
            .then(|| req.uri().query().filter(|q| !q.is_empty()))
            .flatten()
            .map(str::to_owned);
        // Only endpoints with `auth_enabled` authenticate clients, and they answer POST only:
        // other requests are spared the extension.
        if self.client_entity_id && req.method() == http::Method::POST {
            req.extensions_mut().insert(ClientEntitySlot::default());
        }
        let record = Box::new(StatsRecord {
            ts: self.clock.now(),
            endpoint,
            method: req.method().clone(),
            status: 0,
            duration_us: 0,
            ip,
            store_ip: self.client_ip,
            user_agent,
            client_entity_id: None,
            query,
            request_size,
            response_size: 0,
        });
        (Some(record), None)
    }
}

/// `/Fetch` → `fetch`: the path without leading `/`, lower-cased, cut to the column size.
pub fn normalise(path: &str) -> String {
    cut(path.trim_start_matches('/'), MAX_ENDPOINT).to_ascii_lowercase()
}

fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The layer.
#[derive(Debug, Clone)]
pub struct CaptureLayer(pub Arc<Capture>);

impl<S> Layer<S> for CaptureLayer {
    type Service = CaptureService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CaptureService {
            inner,
            capture: self.0.clone(),
        }
    }
}

/// The service of [`CaptureLayer`].
#[derive(Debug, Clone)]
pub struct CaptureService<S> {
    inner: S,
    capture: Arc<Capture>,
}

impl<S> Service<Request> for CaptureService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CaptureFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let start = Instant::now();
        let endpoint = normalise(req.uri().path());
        // The endpoint goes into the record when there is one (the metrics label is read from
        // it), else it stays here for the label: one copy of the path per request.
        let (record, endpoint) = self.capture.begin(&mut req, endpoint);
        let slot = record
            .as_ref()
            .and_then(|_| req.extensions().get::<ClientEntitySlot>().cloned());
        CaptureFuture {
            inner: self.inner.call(req),
            state: Some(State {
                start,
                endpoint,
                record,
                slot,
                capture: self.capture.clone(),
            }),
        }
    }
}

#[derive(Debug)]
struct State {
    start: Instant,
    /// The endpoint when there is no record (else it is the record's).
    endpoint: Option<String>,
    record: Option<Box<StatsRecord>>,
    slot: Option<ClientEntitySlot>,
    capture: Arc<Capture>,
}

pin_project! {
    /// Future of [`CaptureService`].
    #[derive(Debug)]
    pub struct CaptureFuture<F> {
        #[pin]
        inner: F,
        state: Option<State>,
    }
}

impl<F> Future for CaptureFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match this.inner.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(r)) => r,
            Poll::Ready(Err(never)) => match never {},
        };
        if let Some(s) = this.state.take() {
            let elapsed = s.start.elapsed();
            let status = response.status().as_u16();
            let unregistered = response.extensions().get::<Unregistered>().is_some();
            let label = if unregistered {
                UNMATCHED
            } else {
                match (&s.record, &s.endpoint) {
                    (Some(r), _) => r.endpoint.as_str(),
                    (None, Some(e)) => e.as_str(),
                    (None, None) => UNMATCHED,
                }
            };
            s.capture
                .metrics
                .observe(label, status, elapsed.as_secs_f64());
            if let (Some(mut r), Some(ring)) = (s.record, s.capture.ring.as_ref()) {
                if unregistered {
                    // A scanned path is not an endpoint: one label for all of them keeps the
                    // statistics' endpoints bounded by the registry.
                    r.endpoint = UNMATCHED.to_owned();
                }
                r.status = status;
                r.duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
                r.response_size = response_size(&response);
                r.client_entity_id = s.slot.and_then(|slot| slot.0.get().cloned());
                ring.push(*r);
            }
        }
        Poll::Ready(Ok(response))
    }
}

/// The body's exact length when known (every federation answer is a complete buffer), else
/// the declared `Content-Length`, else 0.
fn response_size(response: &Response) -> u64 {
    let hint = http_body::Body::size_hint(response.body());
    hint.exact().unwrap_or_else(|| {
        response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::response::IntoResponse as _;
    use axum::routing::get;
    use pharos_shared::time::ManualClock;
    use tower::ServiceExt as _;

    use super::*;

    fn settings() -> Settings {
        let mut s = Settings::default();
        s.stats.enabled = true;
        s.server.trusted_proxies = vec!["10.0.0.0/8".into()];
        s
    }

    async fn run(s: &Settings, req: Request) -> (Arc<Ring>, RequestMetrics) {
        let ring = Ring::new(8, 1.0);
        let metrics = RequestMetrics::default();
        let capture = Capture::new(
            s,
            metrics.clone(),
            Some(ring.clone()),
            ManualClock::new(1_700_000_000),
        );
        let app = Router::new()
            .route("/fetch", get(|| async { "0123456789" }))
            .route("/api/v1/admin/x", get(|| async { "admin" }))
            .layer(CaptureLayer(capture));
        let r = app.oneshot(req).await.unwrap();
        assert!(r.status().is_success());
        (ring, metrics)
    }

    fn from(peer: &str) -> ConnectInfo<SocketAddr> {
        ConnectInfo(peer.parse().unwrap())
    }

    #[tokio::test]
    async fn a_request_becomes_one_record() {
        let mut req = Request::get("/fetch?sub=https%3A%2F%2Fa&x=1")
            .header("user-agent", "probe/1")
            .header("x-forwarded-for", "203.0.113.5")
            .body(Body::empty())
            .unwrap();
        req.extensions_mut().insert(from("10.1.1.1:5000"));
        let (ring, _) = run(&settings(), req).await;
        let r = ring.drain(10).pop().unwrap();
        assert_eq!(r.endpoint, "fetch");
        assert_eq!(r.ts, 1_700_000_000);
        assert_eq!(r.status, 200);
        assert_eq!(r.ip, Some("203.0.113.5".parse().unwrap()));
        assert_eq!(r.user_agent.as_deref(), Some("probe/1"));
        assert_eq!(r.query.as_deref(), Some("sub=https%3A%2F%2Fa&x=1"));
        assert_eq!(r.response_size, 10);
        assert_eq!(normalise("/Fetch"), "fetch");
    }

    #[tokio::test]
    async fn switches_and_untracked_paths() {
        let mut s = settings();
        s.stats.capture.user_agent = false;
        s.stats.capture.query_params = false;
        s.stats.capture.client_ip = false;
        let mut req = Request::get("/fetch?x=1")
            .header("user-agent", "probe/1")
            .body(Body::empty())
            .unwrap();
        req.extensions_mut().insert(from("192.0.2.1:1"));
        let (ring, _) = run(&s, req).await;
        let r = ring.drain(10).pop().unwrap();
        assert_eq!((r.ip, r.user_agent, r.query), (None, None, None));
        let req = Request::get("/api/v1/admin/x").body(Body::empty()).unwrap();
        let (ring, _) = run(&settings(), req).await;
        assert!(ring.is_empty());
    }

    #[tokio::test]
    async fn an_unregistered_path_is_recorded_as_unmatched_not_as_an_endpoint() {
        let ring = Ring::new(8, 1.0);
        let capture = Capture::new(
            &settings(),
            RequestMetrics::default(),
            Some(ring.clone()),
            ManualClock::new(1_700_000_000),
        );
        let app = Router::new()
            .fallback(|| async {
                let mut r = axum::http::StatusCode::NOT_FOUND.into_response();
                r.extensions_mut().insert(Unregistered);
                r
            })
            .layer(CaptureLayer(capture));
        let mut req = Request::get("/nothing-here").body(Body::empty()).unwrap();
        req.extensions_mut().insert(from("192.0.2.1:1"));
        let r = app.oneshot(req).await.unwrap();
        assert_eq!(r.status(), 404);
        let rec = ring.drain(10).pop().unwrap();
        assert_eq!((rec.endpoint.as_str(), rec.status), ("unmatched", 404));
    }
}
