//! The body of every error answer, on the federation endpoints and the Admin API alike:
//! `{"error","error_description"}` (the specification's error response, §8.9), so that both
//! surfaces speak one shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Renders an error body. No cache
/// may keep an error (`no-store`): a CDN must not go on answering 404 for an entity that was
/// just enrolled, nor an error meant for one client to another.
pub fn json_error(status: StatusCode, code: &str, description: &str) -> Response {
    let body = serde_json::json!({ "error": code, "error_description": description });
    let mut resp = (status, body.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if status == StatusCode::SERVICE_UNAVAILABLE
        && !resp.headers().contains_key(header::RETRY_AFTER)
    {
        // Busy or a database outage: both pass within seconds. Without a hint, clients (an
        // enrolling entity among a hundred at once) retry at once and are refused again.
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}
