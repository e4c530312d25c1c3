//! Cross-site request forgery protection of the Admin API.
//!
//! A browser attaches an operator's credentials (Basic auth it remembers, a loopback address)
//! to requests that any web page makes, and `text/plain` or form POSTs need no CORS preflight.
//! Two checks stop such writes: JSON bodies must be declared `application/json`
//! ([`crate::admin::extract`]), and a write whose `Origin` is neither this API's own origin nor an
//! origin the operator allowed (`api.admin.cors.allow_origins`, when CORS is on) is refused
//! here with 403. Scripts and CLIs send no `Origin` and are not affected; reads are protected by
//! the browser's same-origin policy (no CORS headers, no readable response).

use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use pharos_shared::config::CorsSettings;

use crate::admin::error::ApiError;

/// Whether `method` changes state (everything but GET, HEAD and OPTIONS).
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Refuses a write sent by a page of another origin.
pub fn check_origin(headers: &HeaderMap, cors: &CorsSettings) -> Result<(), ApiError> {
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").trim();
    if same_origin(origin, headers.get(HOST).and_then(|h| h.to_str().ok())) || allowed(origin, cors)
    {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "cross-origin write from {origin:?} refused; allow the origin in api.admin.cors.allow_origins"
    )))
}

/// The origin's host and port equal the `Host` the request was sent to. (`Origin: null`, sent
/// by sandboxed frames and some redirects, never matches.)
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let (Some(host), Ok(url)) = (host, url::Url::parse(origin)) else {
        return false;
    };
    let Some(origin_host) = url.host_str() else {
        return false;
    };
    let authority = match url.port() {
        Some(p) => format!("{origin_host}:{p}"),
        None => origin_host.to_owned(),
    };
    // `Host` omits the scheme's default port, as the serialised origin does.
    authority.eq_ignore_ascii_case(host.trim())
}

/// The origin is listed in the admin CORS configuration (a wildcard allows no writes: it is
/// meant for reads from dashboards, not for handing the API to every site).
fn allowed(origin: &str, cors: &CorsSettings) -> bool {
    cors.enabled
        && cors
            .allow_origins
            .items()
            .iter()
            .any(|o| o != "*" && o.eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(o) = origin {
            h.insert(
                ORIGIN,
                HeaderValue::from_str(o).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        h.insert(
            HOST,
            HeaderValue::from_str(host).unwrap_or(HeaderValue::from_static("x")),
        );
        h
    }

    #[test]
    fn scripts_and_same_origin_pages_may_write() {
        let cors = CorsSettings::admin();
        assert!(check_origin(&headers(None, "127.0.0.1:7672"), &cors).is_ok());
        let same = headers(Some("http://127.0.0.1:7672"), "127.0.0.1:7672");
        assert!(check_origin(&same, &cors).is_ok());
        let default_port = headers(Some("https://admin.example"), "admin.example");
        assert!(check_origin(&default_port, &cors).is_ok());
    }

    #[test]
    fn other_origins_are_refused_unless_listed() {
        let mut cors = CorsSettings::admin();
        let evil = headers(Some("https://evil.example"), "127.0.0.1:7672");
        assert!(matches!(
            check_origin(&evil, &cors),
            Err(ApiError::Forbidden(_))
        ));
        let null = headers(Some("null"), "127.0.0.1:7672");
        assert!(check_origin(&null, &cors).is_err());
        let other_port = headers(Some("http://127.0.0.1:8080"), "127.0.0.1:7672");
        assert!(check_origin(&other_port, &cors).is_err());
        // A wildcard never allows writes; a listed origin does, when CORS is on.
        cors.enabled = true;
        cors.allow_origins = "*".into();
        assert!(check_origin(&evil, &cors).is_err());
        cors.allow_origins = "https://console.example, https://evil.example".into();
        assert!(check_origin(&evil, &cors).is_ok());
        cors.enabled = false;
        assert!(check_origin(&evil, &cors).is_err());
    }
}
