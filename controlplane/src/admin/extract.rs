//! Request-body extractors of the Admin API.
//!
//! axum's own `Json` answers malformed input with plain-text 4xx bodies; operators' scripts get
//! the federation error shape instead.
//!
//! A JSON body must be declared `application/json` (or a `+json` type): a web page can send
//! `text/plain` or form bodies to any address without a CORS preflight, so accepting them would
//! let any site an operator visits write to the Admin API (cross-site request forgery). The
//! `Origin` check in [`crate::admin::guard`] is the second line of the same defence.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::admin::error::ApiError;

/// A body that could not be read: too large (the configured limit) or broken off.
fn unreadable(e: axum::extract::rejection::BytesRejection) -> ApiError {
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge("request body too large".into())
    } else {
        ApiError::BadRequest(format!("could not read body: {e}"))
    }
}

/// A JSON body; any parse failure is `400 invalid_request`.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(media_type(&req).as_deref()) {
            return Err(ApiError::UnsupportedMediaType(
                "the body must be sent as Content-Type: application/json".into(),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        serde_json::from_slice(&bytes)
            .map(Json)
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))
    }
}

/// A plain-text body (e.g. a status word or an integer), trimmed.
#[derive(Debug)]
pub struct Text(pub String);

impl<S: Send + Sync> FromRequest<S> for Text {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // A status word or a number, given bare (`text/plain`, or no type from a script) or as
        // JSON; cross-site `text/plain` writes are stopped by the `Origin` check.
        match media_type(&req).as_deref() {
            None | Some("text/plain") => {}
            m if is_json(m) => {}
            Some(other) => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "the body must be text/plain or application/json, not {other}"
                )));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        let s = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::BadRequest("body is not UTF-8 text".into()))?;
        Ok(Text(s.trim().to_string()))
    }
}

/// The request's media type, lower-cased and without parameters (`None` when not sent).
fn media_type(req: &Request) -> Option<String> {
    let v = req.headers().get(axum::http::header::CONTENT_TYPE)?;
    let v = v.to_str().unwrap_or("invalid");
    Some(
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

/// `application/json` or a structured `+json` type.
fn is_json(media_type: Option<&str>) -> bool {
    media_type.is_some_and(|m| {
        m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
    })
}

/// Parses an integer given as raw text or as a JSON number/string.
pub fn integer(text: &str) -> Result<i64, ApiError> {
    let t = text.trim().trim_matches('"');
    t.parse::<i64>()
        .map_err(|_| ApiError::BadRequest(format!("expected an integer, got {text:?}")))
}

/// Checks that `s` is an absolute http(s) URL, as entity identifiers and endpoint URLs must be.
pub fn http_url(what: &str, s: &str) -> Result<(), ApiError> {
    match url::Url::parse(s) {
        Ok(u) if (u.scheme() == "https" || u.scheme() == "http") && u.host().is_some() => Ok(()),
        _ => Err(ApiError::BadRequest(format!(
            "{what} must be an absolute http(s) URL, got {s:?}"
        ))),
    }
}

/// Checks an entity identifier: an `https` URL without query or fragment (spec §1.2); plain
/// `http` only for loopback hosts — the rule chain validation applies
/// ([`pharos_shared::chain::is_entity_identifier`]), so that nothing is stored (a trust anchor,
/// a subordinate) that could never validate, or that would be fetched without TLS from
/// another host.
pub fn entity_id(what: &str, s: &str) -> Result<(), ApiError> {
    http_url(what, s)?;
    let u = url::Url::parse(s).map_err(|_| ApiError::BadRequest(format!("{what} is not a URL")))?;
    if u.query().is_some() || u.fragment().is_some() {
        return Err(ApiError::BadRequest(format!(
            "{what} must not contain a query or fragment"
        )));
    }
    if !pharos_shared::chain::is_entity_identifier(&u) {
        return Err(ApiError::BadRequest(format!(
            "{what} must be an https URL (http is accepted for loopback hosts only)"
        )));
    }
    Ok(())
}
