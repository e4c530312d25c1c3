//! Request statistics and metrics of the public port: each request is measured and, when
//! `stats.enabled`, its [`StatsRecord`] is built and pushed into the [`Ring`].
//!
//! The listener's common layer (`controlplane::http::layers::Common`) calls [`Capture::start`]
//! when a request arrives and [`Observation::finish`] when its answer is ready, inside its one
//! unboxed future: measuring costs no route layer of its own (which axum would wrap around each
//! route, a second boxed service and future per request), no allocation when statistics are off
//! (the metrics label is read from the request's own path), and with statistics on the record is
//! kept inline, not boxed. [`CaptureLayer`] is the same as a tower layer, for routers that are
//! not behind the common layer.
//!
//! Which requests count is what the federation routes answer: responses of the health checks
//! and the Admin API carry [`Unobserved`] (see [`unobserved`]), and with `server.cors` on a
//! preflight (`OPTIONS`) is answered by the CORS layer before any route, so it is not counted
//! either. A request the common layer answers itself (oversize body, time limit) is not counted.

use std::borrow::Cow;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use http::uri::PathAndQuery;
use http::{HeaderName, Method, header};
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::config::Settings;
use pharos_shared::time::{Clock, Stopwatch};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::metrics::RequestMetrics;
use pharos_runtime::stats_ring::{MAX_ENDPOINT, cut, normalise, normalised};

use super::{ClientEntitySlot, Ring, Served, StatsRecord, UNMATCHED, Unobserved, Unregistered};

/// Longest User-Agent kept (longer values are cut at a character boundary).
const MAX_USER_AGENT: usize = 512;

/// What measuring needs: the metrics always, the ring and capture switches when enabled.
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
    /// `server.cors.enabled`: the CORS layer then answers every `OPTIONS` itself.
    preflights_answered: bool,
    /// Normalised `stats.endpoints`; empty = every path outside the Admin API and health checks.
    endpoints: Vec<String>,
}

impl Capture {
    /// The measuring state from the configuration; `ring` is `None` when statistics are off.
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
            preflights_answered: settings.server.cors.enabled,
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

    /// Begins measuring `req` (called as it arrives) from `peer` (the connection's address,
    /// else the request's `ConnectInfo`); `None` when it is not counted at all (a preflight the
    /// CORS layer answers). Allocates only when statistics keep a record of it.
    pub fn start(
        self: &Arc<Self>,
        req: &mut Request,
        peer: Option<SocketAddr>,
    ) -> Option<Observation> {
        if self.preflights_answered && req.method() == Method::OPTIONS {
            return None;
        }
        let start = Stopwatch::start();
        let endpoint = match normalised(req.uri().path()) {
            Cow::Borrowed(_) => match req.uri().path_and_query() {
                // The label is read back from the path when the answer is ready: a reference
                // count, not a copy.
                Some(pq) => Endpoint::Path(pq.clone()),
                None => Endpoint::Owned(String::new()),
            },
            Cow::Owned(e) => Endpoint::Owned(e),
        };
        let record = self.record(req, peer, endpoint.as_str());
        let slot = record
            .as_ref()
            .and_then(|_| req.extensions().get::<ClientEntitySlot>().cloned());
        Some(Observation {
            start,
            endpoint,
            record,
            slot,
            capture: Arc::clone(self),
        })
    }

    /// The request's part of a record, when statistics are on and the path tracked.
    fn record(
        &self,
        req: &mut Request,
        peer: Option<SocketAddr>,
        endpoint: &str,
    ) -> Option<StatsRecord> {
        if self.ring.is_none() || !self.tracked(endpoint) {
            return None;
        }
        let headers = req.headers();
        let ip = (self.client_ip || self.geo_ip)
            .then(|| {
                let peer = match peer {
                    Some(p) => p.ip(),
                    None => req.extensions().get::<ConnectInfo<SocketAddr>>()?.0.ip(),
                };
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
        if self.client_entity_id && req.method() == Method::POST {
            req.extensions_mut().insert(ClientEntitySlot::default());
        }
        Some(StatsRecord {
            ts: self.clock.now(),
            endpoint: endpoint.to_owned(),
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
            entity: pharos_shared::hosted::EntityNo::DEFAULT.get(),
        })
    }
}

/// The endpoint of a request being measured: its normalised path, kept as the request's own
/// path bytes when normalising changes nothing but the leading `/`.
#[derive(Debug)]
enum Endpoint {
    Path(PathAndQuery),
    Owned(String),
}

impl Endpoint {
    fn as_str(&self) -> &str {
        match self {
            Self::Path(pq) => cut(pq.path().trim_start_matches('/'), MAX_ENDPOINT),
            Self::Owned(s) => s,
        }
    }
}

/// One request being measured: what [`Capture::start`] took from the request, until
/// [`Observation::finish`] sees its answer.
#[derive(Debug)]
pub struct Observation {
    start: Stopwatch,
    endpoint: Endpoint,
    record: Option<StatsRecord>,
    slot: Option<ClientEntitySlot>,
    capture: Arc<Capture>,
}

impl Observation {
    /// Counts the answer in the metrics and, with statistics on, pushes the request's record
    /// (unless the answer is marked [`Unobserved`]), filed under `served`.
    pub fn finish(self, response: &Response, served: Served) {
        if response.extensions().get::<Unobserved>().is_some() {
            return;
        }
        let elapsed = self.start.elapsed();
        let status = response.status().as_u16();
        let unregistered = response.extensions().get::<Unregistered>().is_some();
        // A scanned path is not an endpoint: one label for all of them keeps the metrics'
        // series and the statistics' endpoints bounded by the registry.
        let label = if unregistered {
            UNMATCHED
        } else {
            self.endpoint.as_str()
        };
        let capture = &self.capture;
        let seconds = elapsed.as_secs_f64();
        let counted = !unregistered
            && served
                .series
                .is_some_and(|known| capture.metrics.observe_known(known, status, seconds));
        if !counted {
            capture
                .metrics
                .observe(served.entity, label, status, seconds);
        }
        if let (Some(mut r), Some(ring)) = (self.record, capture.ring.as_ref()) {
            if unregistered {
                UNMATCHED.clone_into(&mut r.endpoint);
            }
            r.status = status;
            r.duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            r.response_size = response_size(response);
            r.client_entity_id = self.slot.and_then(|slot| slot.0.get().cloned());
            if let Some(entity) = served.entity {
                r.entity = entity.get();
            }
            ring.push(r);
        }
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

/// [`Capture`] as a tower layer, for a router that is not behind the common layer.
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
        let observation = self.capture.start(&mut req, None);
        CaptureFuture {
            inner: self.inner.call(req),
            observation,
        }
    }
}

pin_project! {
    /// Future of [`CaptureService`].
    #[derive(Debug)]
    pub struct CaptureFuture<F> {
        #[pin]
        inner: F,
        observation: Option<Observation>,
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
        if let Some(o) = this.observation.take() {
            // Routers measured here serve the default entity only.
            o.finish(&response, Served::default());
        }
        Poll::Ready(Ok(response))
    }
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
    #[tokio::test]
    async fn unobserved_answers_are_neither_counted_nor_recorded_and_labels_are_normalised() {
        let ring = Ring::new(8, 1.0);
        let metrics = RequestMetrics::default();
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        let capture = Capture::new(
            &settings(),
            metrics.clone(),
            Some(ring.clone()),
            ManualClock::new(1_700_000_000),
        );
        // As on the public port: the measured router has its own fallback, which merging
        // an unobserved router (with the default one) keeps.
        let app = Router::new()
            .route("/fetch", get(|| async { "x" }))
            .fallback(|| async { axum::http::StatusCode::NOT_FOUND })
            .merge(crate::stats::unobserved(
                Router::new().route("/healthz", get(|| async { "ok" })),
            ))
            .layer(CaptureLayer(capture));
        for uri in ["/healthz", "/Fetch", "/fetch"] {
            let mut req = Request::get(uri).body(Body::empty()).unwrap();
            req.extensions_mut().insert(from("192.0.2.1:1"));
            app.clone().oneshot(req).await.unwrap();
        }
        let records: Vec<(String, u16)> = ring
            .drain(10)
            .into_iter()
            .map(|r| (r.endpoint, r.status))
            .collect();
        // The mixed-case path has no route here (404) but the same label.
        assert_eq!(records, [("fetch".into(), 404), ("fetch".into(), 200)]);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains("healthz"), "{text}");
        assert!(
            text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="200"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"pharos_http_requests_total{endpoint="fetch",status="404"} 1"#),
            "{text}"
        );
    }
}
