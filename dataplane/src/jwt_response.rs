//! Responses carrying a signed JWT with the exact media type the specification names.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// A `200` response whose body is a compact JWS of media type `content_type` (no parameters:
/// strict clients reject `; charset=...`).
pub fn jwt(content_type: &'static str, body: Bytes) -> Response {
    jwt_with_status(StatusCode::OK, content_type, body)
}

/// As [`jwt`] with another success status (e.g. `201` for enrollment).
pub fn jwt_with_status(status: StatusCode, content_type: &'static str, body: Bytes) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}
