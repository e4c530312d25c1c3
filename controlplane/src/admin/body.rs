//! Request-body extractors of the Admin API.
//!
//! axum's own `Json` answers malformed input with plain-text 4xx bodies; operators' scripts get
//! the federation error shape instead, and a missing `Content-Type` is tolerated (curl users).

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
        let bytes = Bytes::from_request(req, state).await.map_err(unreadable)?;
        let s = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::BadRequest("body is not UTF-8 text".into()))?;
        Ok(Text(s.trim().to_string()))
    }
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

/// Checks an entity identifier: an http(s) URL without query or fragment (spec §1.2).
pub fn entity_id(what: &str, s: &str) -> Result<(), ApiError> {
    http_url(what, s)?;
    match url::Url::parse(s) {
        Ok(u) if u.query().is_none() && u.fragment().is_none() => Ok(()),
        _ => Err(ApiError::BadRequest(format!(
            "{what} must not contain a query or fragment"
        ))),
    }
}
