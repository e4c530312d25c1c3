//! Responses carrying a signed JWT with the exact media type the specification names, and the
//! HTTP caching headers of federation answers (see [`pharos_shared::http_cache`]).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::http_cache::{self, Tagged};

/// A `200` response whose body is a compact JWS of media type `content_type` (no parameters:
/// strict clients reject `; charset=...`).
pub fn jwt(content_type: &'static str, body: Bytes) -> Response {
    jwt_with_status(StatusCode::OK, content_type, body)
}

/// A `200` JSON answer (the listings), `application/json` as the specification names it.
pub fn json(body: Bytes) -> Response {
    jwt_with_status(StatusCode::OK, "application/json", body)
}

/// As [`jwt`] with another success status (e.g. `201` for enrollment).
pub fn jwt_with_status(status: StatusCode, content_type: &'static str, body: Bytes) -> Response {
    let mut resp = Response::new(axum::body::Body::from(body));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    // Room for every header the answer gets on its way out (type, validators, request id,
    // security headers): an empty map allocates room for six and then grows and rehashes at
    // the seventh, ~1,500 of the ~24,000 instructions of a cached answer (callgrind).
    headers.reserve(RESPONSE_HEADERS);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Headers a federation answer carries when it leaves: `Content-Type`, `ETag`,
/// `Cache-Control`, `X-Request-Id`, three security headers, and room for `Vary`/CORS.
const RESPONSE_HEADERS: usize = 12;

/// A cacheable `200` answer: `tagged`'s body with its `ETag` and `Cache-Control: public,
/// max-age` up to its freshness limit, or a bodiless `304` when `if_none_match` (the
/// request's header) names that tag. Only anonymous GETs are answered this way: an
/// authenticated answer is meant for one client and is `no-store` (see [`no_store`]).
pub fn cacheable(
    content_type: &'static str,
    tagged: Tagged,
    now: i64,
    if_none_match: Option<&HeaderValue>,
) -> Response {
    let not_modified =
        if_none_match.is_some_and(|v| http_cache::none_match(v.as_bytes(), tagged.etag_bytes()));
    let max_age = tagged.max_age(now);
    let (body, etag) = tagged.into_parts();
    let mut resp = if not_modified {
        let mut resp = StatusCode::NOT_MODIFIED.into_response();
        resp.headers_mut().reserve(RESPONSE_HEADERS);
        resp
    } else {
        jwt(content_type, body)
    };
    validators(resp.headers_mut(), etag, max_age);
    resp
}

/// Adds `ETag` and `Cache-Control` to a cacheable answer's headers: the tag made when the body
/// was tagged, and the `Cache-Control` value of `max_age` from the per-thread table (see
/// [`http_cache::cache_control_header`]); neither is formatted per answer.
pub fn validators(headers: &mut HeaderMap, etag: HeaderValue, max_age: u64) {
    headers.insert(header::ETAG, etag);
    headers.insert(
        header::CACHE_CONTROL,
        http_cache::cache_control_header(max_age),
    );
}

/// Marks `resp` as not to be kept by any cache (errors, authenticated answers, answers whose
/// lifetime nothing bounds).
pub fn no_store(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}
