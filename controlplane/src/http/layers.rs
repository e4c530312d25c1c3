//! Layers every listener gets: request id, access log, request time limit, body size limit, and
//! JSON bodies for the limit errors.
//!
//! The access log is a tracing event with target [`ACCESS_TARGET`]; `logging` routes that target
//! to the access-log outputs only. It records method, path (without the query, which can carry
//! client data), status, duration, peer and request id, never headers or bodies, so credentials
//! cannot end up in it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::http::{HeaderName, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use pharos_shared::config::ServerSettings;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;

/// Tracing target of access-log lines.
pub const ACCESS_TARGET: &str = "pharos::access";

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wraps `router` in the common layers configured by `server.*`.
pub fn common(router: Router, server: &ServerSettings) -> Router {
    let limit = usize::try_from(server.body_limit).unwrap_or(usize::MAX);
    let timeout: Duration = server.request_timeout.into();
    router.layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
            .layer(PropagateRequestIdLayer::new(REQUEST_ID))
            .layer(middleware::from_fn(access_log))
            .layer(middleware::from_fn(json_limit_errors))
            .layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                timeout,
            ))
            .layer(RequestBodyLimitLayer::new(limit))
            .layer(DefaultBodyLimit::max(limit)),
    )
}

async fn access_log(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        .unwrap_or_default();
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let response = next.run(req).await;
    tracing::info!(
        target: ACCESS_TARGET,
        %method,
        path,
        status = response.status().as_u16(),
        duration_ms = start.elapsed().as_secs_f64() * 1000.0,
        peer,
        request_id = id,
        "request"
    );
    response
}

/// The limit layers answer with empty or plain-text bodies; clients get the same
/// `{"error","error_description"}` shape as from every other error.
async fn json_limit_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    let description = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "request body too large",
        StatusCode::REQUEST_TIMEOUT => "request took too long",
        _ => return response,
    };
    if is_json {
        return response;
    }
    let mut r = pharos_dataplane::error::json_error(status, "invalid_request", description);
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

    fn app() -> Router {
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
        common(
            Router::new()
                .route("/slow", get(slow))
                .route("/echo", post(echo)),
            &server,
        )
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
    }
}
